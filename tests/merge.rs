//! Cross-node reads through the gateway where the merge's own rules show: Mycat's auto-LIMIT
//! (`sqlMaxLimit`), collation-aware ordering of strings, and what is refused. The broad proof
//! that merged answers equal an unsharded database's is `tests/differential.rs`.

mod common;

use common::{Extra, Fixture, server_error};
use mysql_async::prelude::Queryable;

/// A schema `LIM` over the fixture's three nodes with `sqlMaxLimit="2"`.
fn limited() -> Extra {
    Extra {
        schema_xml: r#"<schema name="LIM" sqlMaxLimit="2">
            <table name="travelrecord" primaryKey="id" dataNode="dn1,dn2,dn3" rule="auto-sharding-long" />
            <table name="hotnews" primaryKey="id" needAddLimit="false" dataNode="dn1,dn2,dn3" rule="mod-long" />
            <table name="company" primaryKey="id" type="global" dataNode="dn1,dn2,dn3" />
        </schema>"#
            .to_string(),
        users_xml: r#"<user name="lim"><property name="password">lim</property><property name="schemas">LIM</property></user>"#
            .to_string(),
        ..Extra::default()
    }
}

#[tokio::test]
async fn sql_max_limit_caps_single_table_selects_as_mycat_does() {
    let f = Fixture::start("lim", limited()).await;
    let mut c = mysql_async::Conn::new(common::opts(f.port, "lim", "lim", Some("LIM")))
        .await
        .unwrap();
    // Ids on all three nodes (auto-sharding-long: 0-5M dn1, 5M-10M dn2, 10M-15M dn3).
    c.query_drop(
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (2, 'b'), (5000001, 'c'), (10000001, 'd'), (10000002, 'e')",
    )
    .await
    .unwrap();
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (1, 'x'), (2, 'y'), (3, 'z')")
        .await
        .unwrap();
    c.query_drop("INSERT INTO company (id, name) VALUES (1, 'p'), (2, 'q'), (3, 'r')")
        .await
        .unwrap();

    let ids: Vec<i64> = c.query("SELECT id FROM travelrecord").await.unwrap();
    assert_eq!(
        ids.len(),
        2,
        "sqlMaxLimit caps a SELECT without LIMIT: {ids:?}"
    );
    let ids: Vec<i64> = c
        .query("SELECT id FROM travelrecord ORDER BY id DESC")
        .await
        .unwrap();
    assert_eq!(ids, [10000002, 10000001], "the cap applies after the merge");
    let ids: Vec<i64> = c
        .query("SELECT id FROM travelrecord LIMIT 4")
        .await
        .unwrap();
    assert_eq!(ids.len(), 4, "the client's own LIMIT wins");
    // A condition on the primaryKey: no cap (Mycat: the query is already selective).
    let ids: Vec<i64> = c
        .query("SELECT id FROM travelrecord WHERE id > 0 ORDER BY id")
        .await
        .unwrap();
    assert_eq!(ids, [1, 2, 5000001, 10000001, 10000002]);
    // A condition on another column: capped.
    let ids: Vec<i64> = c
        .query("SELECT id FROM travelrecord WHERE user_id <> 'zz'")
        .await
        .unwrap();
    assert_eq!(ids.len(), 2);
    // An aggregate is one row however many rows it counts.
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM travelrecord")
        .await
        .unwrap();
    assert_eq!(n, Some(5));
    // needAddLimit="false": no cap.
    let ids: Vec<i64> = c.query("SELECT id FROM hotnews").await.unwrap();
    assert_eq!(ids.len(), 3);
    // A global table is capped too, and so is a single-node read.
    let ids: Vec<i64> = c.query("SELECT id FROM company").await.unwrap();
    assert_eq!(ids.len(), 2);
    let ids: Vec<i64> = c
        .query("SELECT id FROM travelrecord WHERE user_id IS NOT NULL AND id BETWEEN 1 AND 2 OR id = 1")
        .await
        .unwrap();
    assert_eq!(ids.len(), 2);
    // Joins are never capped (Mycat: multi-table SELECTs are left alone).
    let rows: Vec<(i64, i64)> = c
        .query("SELECT t.id, h.id FROM travelrecord t JOIN company h ON h.id = 1")
        .await
        .unwrap();
    assert_eq!(rows.len(), 5);
}

#[tokio::test]
async fn strings_merge_in_the_column_collation_and_unmergeable_reads_are_refused() {
    let f = Fixture::start("mrg", Extra::default()).await;
    let mut c = f.client().await;
    // user_id is utf8mb4_general_ci: case and accents do not count, trailing spaces neither.
    c.query_drop(
        "INSERT INTO travelrecord (id, user_id, fee) VALUES (1, 'b', 1.50), (2, 'A', 2.25), (5000001, 'a ', NULL), (5000002, 'Ä', 4.00), (10000001, 'B', 0.10), (10000002, 'c', 7.00)",
    )
    .await
    .unwrap();
    // Groups span nodes: 'a ' / 'A' / 'Ä' are one group, 'b' / 'B' another.
    let groups: Vec<(i64, Option<String>)> = c
        .query("SELECT COUNT(*), SUM(fee) FROM travelrecord GROUP BY user_id")
        .await
        .unwrap();
    assert_eq!(
        groups,
        [
            (3, Some("6.25".to_string())),
            (2, Some("1.60".to_string())),
            (1, Some("7.00".to_string()))
        ]
    );
    // HAVING on merged groups: per node no group has 2 rows, merged two do.
    let groups: Vec<(i64, Option<String>)> = c
        .query(
            "SELECT COUNT(*) AS n, SUM(fee) FROM travelrecord GROUP BY user_id HAVING n > 1 AND NOT SUM(fee) < 1.6 ORDER BY 2 DESC",
        )
        .await
        .unwrap();
    assert_eq!(
        groups,
        [(3, Some("6.25".to_string())), (2, Some("1.60".to_string()))]
    );
    let groups: Vec<i64> = c
        .query("SELECT COUNT(*) FROM travelrecord GROUP BY user_id HAVING MAX(fee) IS NULL OR AVG(fee) > 5")
        .await
        .unwrap();
    assert_eq!(groups, [1]);
    let distinct: Vec<String> = c
        .query("SELECT DISTINCT LOWER(TRIM(user_id)) FROM travelrecord ORDER BY 1 DESC")
        .await
        .unwrap();
    // 'ä' equals 'a' in utf8mb4_general_ci: one value for both, as one server gives.
    assert_eq!(distinct.len(), 3, "{distinct:?}");
    assert_eq!(distinct[..2], ["c", "b"]);
    assert!(["a", "ä"].contains(&distinct[2].as_str()), "{distinct:?}");
    let avg: Option<String> = c
        .query_first("SELECT AVG(fee) FROM travelrecord")
        .await
        .unwrap();
    // (1.50 + 2.25 + 4.00 + 0.10 + 7.00) / 5 = 2.97 with MySQL's 4 extra decimals.
    assert_eq!(avg.as_deref(), Some("2.970000"));
    let (first, last): (String, String) = c
        .query_first("SELECT MIN(user_id), MAX(user_id) FROM travelrecord")
        .await
        .unwrap()
        .unwrap();
    assert!(
        first.trim().eq_ignore_ascii_case("a") || first == "Ä",
        "{first}"
    );
    assert_eq!(last, "c");

    for (sql, text) in [
        (
            "SELECT GROUP_CONCAT(user_id) FROM travelrecord",
            "GROUP_CONCAT",
        ),
        (
            "SELECT SUM(fee) / COUNT(*) FROM travelrecord",
            "aggregate inside an expression",
        ),
        (
            "SELECT user_id, ROW_NUMBER() OVER (ORDER BY id) FROM travelrecord",
            "window functions",
        ),
        (
            "SELECT id FROM travelrecord UNION SELECT id FROM travelrecord",
            "UNION",
        ),
    ] {
        let (code, state, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        assert_eq!((code, state.as_str()), (1064, "42000"), "{sql}: {msg}");
        assert!(msg.contains(text), "{sql}: {msg}");
    }
}

#[tokio::test]
async fn insert_select_runs_where_its_rows_are_read_or_is_refused() {
    let f = Fixture::start(
        "insel",
        Extra {
            schema_xml: r#"<schema name="INS">
                <table name="a" dataNode="dn1,dn2,dn3" rule="mod-long" />
                <table name="b" dataNode="dn1,dn2,dn3" rule="mod-long" />
                <table name="solo" dataNode="dn2" />
            </schema>"#
                .to_string(),
            users_xml: r#"<user name="ins"><property name="password">ins</property><property name="schemas">INS</property></user>"#
                .to_string(),
            ..Extra::default()
        },
    )
    .await;
    let mut c = mysql_async::Conn::new(common::opts(f.port, "ins", "ins", Some("INS")))
        .await
        .unwrap();
    for t in ["a", "b", "solo"] {
        c.query_drop(format!("CREATE TABLE {t} (id INT PRIMARY KEY, v INT)"))
            .await
            .unwrap();
    }
    c.query_drop("INSERT INTO a (id, v) VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)")
        .await
        .unwrap();
    // Co-located: b's sharding column comes from a's, same function and nodes.
    c.query_drop("INSERT INTO b (id, v) SELECT id, v * 10 FROM a WHERE v > 1")
        .await
        .unwrap();
    for n in 1..=3 {
        let a: Vec<i64> = f.ids_on(n, "a").await;
        let b: Vec<i64> = f.ids_on(n, "b").await;
        assert_eq!(
            b,
            a.into_iter().filter(|id| *id > 1).collect::<Vec<_>>(),
            "dn{n}"
        );
    }
    // One node both sides: a's id 4 is on dn2 (4 % 3 = 1), where solo lives.
    c.query_drop("INSERT INTO solo (id, v) SELECT id, v FROM a WHERE id = 4")
        .await
        .unwrap();
    assert_eq!(f.ids_on(2, "solo").await, [4]);
    for sql in [
        "INSERT INTO solo (id, v) SELECT id, v FROM a WHERE id = 3",
        "INSERT INTO b (id, v) SELECT v + 100, id FROM a",
        "INSERT INTO b (id, v) SELECT id, v FROM a ORDER BY id LIMIT 2",
        "INSERT INTO solo (id, v) SELECT id, v FROM a",
    ] {
        let (code, _, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        assert_eq!(code, 1064, "{sql}: {msg}");
        assert!(msg.contains("INSERT ... SELECT into"), "{sql}: {msg}");
    }
    assert_eq!(
        f.ids_on(2, "solo").await,
        [4],
        "refused statements wrote nothing"
    );
}

/// A table sharded by a text hash on a `_ci` column: 'a', 'A' and 'ä' are one group for
/// MySQL but may be stored on different nodes, so GROUP BY / DISTINCT on the sharding column
/// must merge across nodes, and a self-join on it must not be pushed down.
#[tokio::test]
async fn groups_on_a_text_hashed_sharding_column_are_merged_across_nodes() {
    let rule = std::fs::read_to_string(common::repo().join("rule.xml"))
        .unwrap()
        .replace(
            "</mycat:rule>",
            r#"<tableRule name="code-murmur"><rule><columns>code</columns><algorithm>murmur3</algorithm></rule></tableRule>
            <function name="murmur3" class="io.mycat.route.function.PartitionByMurmurHash">
                <property name="seed">0</property><property name="count">3</property><property name="virtualBucketTimes">160</property>
            </function></mycat:rule>"#,
        );
    let f = Fixture::start(
        "cicode",
        Extra {
            schema_xml: r#"<schema name="CI"><table name="m" dataNode="dn1,dn2,dn3" rule="code-murmur" /></schema>"#.to_string(),
            users_xml: r#"<user name="ci"><property name="password">ci</property><property name="schemas">CI</property></user>"#.to_string(),
            files: vec![("rule.xml".to_string(), rule)],
        },
    )
    .await;
    let mut c = mysql_async::Conn::new(common::opts(f.port, "ci", "ci", Some("CI")))
        .await
        .unwrap();
    c.query_drop("CREATE TABLE m (id INT PRIMARY KEY, code VARCHAR(8)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci")
        .await
        .unwrap();
    let variants = ["a", "A", "ä", "Ä", "b", "B", "bb", "BB"];
    let values: Vec<String> = variants
        .iter()
        .enumerate()
        .map(|(i, v)| format!("({i}, '{v}')"))
        .collect();
    c.query_drop(format!(
        "INSERT INTO m (id, code) VALUES {}",
        values.join(", ")
    ))
    .await
    .unwrap();
    let mut nodes = 0;
    for n in 1..=3 {
        nodes += usize::from(!f.ids_on(n, "m").await.is_empty());
    }
    assert!(nodes > 1, "the variants are spread over several nodes");
    let groups: Vec<(String, i64)> = c
        .query("SELECT LOWER(code), COUNT(*) FROM m GROUP BY code ORDER BY 1")
        .await
        .unwrap();
    let groups: Vec<(String, i64)> = groups
        .into_iter()
        .map(|(k, n)| (k.replace('ä', "a"), n))
        .collect();
    assert_eq!(
        groups,
        [
            ("a".to_string(), 4),
            ("b".to_string(), 2),
            ("bb".to_string(), 2)
        ]
    );
    let distinct: Vec<String> = c.query("SELECT DISTINCT code FROM m").await.unwrap();
    assert_eq!(distinct.len(), 3, "{distinct:?}");
    let pairs: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM m x JOIN m y ON x.code = y.code")
        .await
        .map_or(None, |n| n);
    // 4x4 + 2x2 + 2x2 = 24 pairs, or a clear refusal, never a partial count.
    assert!(pairs.is_none_or(|n| n == 24), "{pairs:?}");
}

#[tokio::test]
async fn lock_in_share_mode_reads_route_like_any_read() {
    let f = Fixture::start("lockshare", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000001, 'b')")
        .await
        .unwrap();
    c.query_drop("BEGIN").await.unwrap();
    let one: Vec<i64> = c
        .query("SELECT id FROM travelrecord WHERE id = 1 LOCK IN SHARE MODE")
        .await
        .unwrap();
    assert_eq!(one, [1]);
    let all: Vec<i64> = c
        .query("SELECT id FROM travelrecord ORDER BY id DESC LOCK IN SHARE MODE")
        .await
        .unwrap();
    assert_eq!(all, [5000001, 1]);
    c.query_drop("COMMIT").await.unwrap();
}
