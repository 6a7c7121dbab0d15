//! Cross-node reads through the gateway where the merge's own rules show: Mycat's auto-LIMIT
//! (`sqlMaxLimit`), collation-aware ordering of strings, and what is refused. The broad proof
//! that merged answers equal an unsharded database's is `tests/differential.rs`.

mod common;

use common::run_all;
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
    run_all(&mut c, &["INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (2, 'b'), (5000001, 'c'), (10000001, 'd'), (10000002, 'e')", "INSERT INTO hotnews (id, title) VALUES (1, 'x'), (2, 'y'), (3, 'z')", "INSERT INTO company (id, name) VALUES (1, 'p'), (2, 'q'), (3, 'r')"]).await;

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
        ("SELECT STDDEV_POP(fee) FROM travelrecord", "statistical"),
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
                <table name="w" dataNode="dn1,dn2,dn3" rule="mod-long" />
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
    for t in ["a", "b", "w", "solo"] {
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
        // Values computed across rows: each node would compute them over its own rows only
        // (COUNT(*) OVER () gave 2 where MariaDB stores 6).
        "INSERT INTO w (id, v) SELECT id, COUNT(*) OVER () FROM a",
        "INSERT INTO w (id, v) SELECT id, ROW_NUMBER() OVER (ORDER BY id) FROM a",
        "INSERT INTO w (id, v) SELECT id, (@n := @n + 1) FROM a",
        "INSERT INTO w (id, v) SELECT id, COUNT(*) FROM a",
        "INSERT INTO w (id, v) SELECT id, v + SUM(v) OVER w1 FROM a WINDOW w1 AS ()",
    ] {
        let (code, _, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        assert_eq!(code, 1064, "{sql}: {msg}");
        assert!(msg.contains("INSERT ... SELECT into"), "{sql}: {msg}");
    }
    for n in 1..=3 {
        assert_eq!(
            f.ids_on(n, "w").await,
            Vec::<i64>::new(),
            "dn{n}: w written"
        );
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
    // The same values counted once across the nodes, in the column's collation.
    let n: Option<i64> = c
        .query_first("SELECT COUNT(DISTINCT code) FROM m")
        .await
        .unwrap();
    assert_eq!(n, Some(3));
    let concat: Option<String> = c
        .query_first("SELECT GROUP_CONCAT(DISTINCT LOWER(code) ORDER BY LOWER(code) DESC) FROM m")
        .await
        .unwrap();
    assert!(
        matches!(concat.as_deref(), Some("bb,b,a" | "bb,b,ä")),
        "{concat:?}"
    );
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
    run_all(
        &mut c,
        &[
            "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000001, 'b')",
            "BEGIN",
        ],
    )
    .await;
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

/// A reference database on the sandbox primary holding the same travelrecord rows unsharded.
async fn reference(db: &str, rows: &str) -> mysql_async::Conn {
    common::fresh_database(db).await;
    let mut c = common::primary(Some(db)).await;
    for stmt in common::sample_statements() {
        c.query_drop(stmt).await.unwrap();
    }
    c.query_drop(rows).await.unwrap();
    c
}

/// A result as text: column (name, type, decimals) and rows.
type Answer = (Vec<(String, u8, u8)>, Vec<Vec<Option<String>>>);

async fn answer(c: &mut mysql_async::Conn, sql: &str) -> Answer {
    let r = c
        .query_iter(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let columns = r
        .columns_ref()
        .iter()
        .map(|c| {
            (
                c.name_str().into_owned(),
                c.column_type() as u8,
                c.decimals(),
            )
        })
        .collect();
    let rows: Vec<mysql_async::Row> = r.collect_and_drop().await.unwrap();
    let rows = rows.into_iter().map(common::text_row).collect();
    (columns, rows)
}

/// Equal under utf8mb4_general_ci for these rows: case, trailing spaces, é / e.
fn fold(s: &str) -> String {
    s.to_lowercase()
        .replace('é', "e")
        .split(',')
        .map(|p| p.trim_end().to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// SUM and AVG of `DOUBLE(M,D)` / `FLOAT(M,D)` merged over several dataNodes print the
/// column's decimals as MariaDB does (SUM: D places, AVG: D + 4), a plain DOUBLE as before
/// (the merge printed 2.25 where MariaDB prints 2.250000).
#[tokio::test]
async fn double_aggregates_print_the_column_decimals() {
    let f = Fixture::start("dbldec", Extra::default()).await;
    let mut c = f.client().await;
    let mut rf = reference("t_dbldec_ref", "SELECT 1").await;
    let alter = "ALTER TABLE travelrecord ADD COLUMN dd DOUBLE(10,2), ADD COLUMN ff FLOAT(7,3), ADD COLUMN pd DOUBLE";
    let rows = "INSERT INTO travelrecord (id, user_id, dd, ff, pd) VALUES \
        (1, 'a', 1.5, 1.5, 1.5), (2, 'b', 2.25, 2.25, 2.25), (5000001, 'c', 3, 3, 3), \
        (10000001, 'd', 4.125, 0.5, 0.5), (10000002, 'e', NULL, NULL, NULL)";
    for conn in [&mut c, &mut rf] {
        conn.query_drop(alter).await.unwrap();
        conn.query_drop(rows).await.unwrap();
    }
    for sql in [
        "SELECT AVG(dd), SUM(dd), AVG(ff), SUM(ff), AVG(pd), SUM(pd) FROM travelrecord",
        "SELECT user_id > 'b' AS g, AVG(dd), SUM(dd), AVG(ff) FROM travelrecord GROUP BY g ORDER BY g",
        "SELECT AVG(DISTINCT dd), SUM(DISTINCT dd) FROM travelrecord",
    ] {
        assert_eq!(
            answer(&mut c, sql).await,
            answer(&mut rf, sql).await,
            "{sql}"
        );
    }
}

/// Issue 18: COUNT / SUM / AVG (DISTINCT) and GROUP_CONCAT over three dataNodes answer what
/// one database holding the same rows answers: NULLs ignored, a value on several nodes counted
/// once, 'a' / 'A' / 'a ' / 'é' / 'e' equal as utf8mb4_general_ci makes them, empty tables
/// and groups, HAVING and ORDER BY / LIMIT on the merged groups, group_concat_max_len.
#[tokio::test]
async fn distinct_aggregates_and_group_concat_equal_one_database() {
    let f = Fixture::start("dagg", Extra::default()).await;
    let mut c = f.client().await;
    let mut rf = reference("t_dagg_ref", "SELECT 1").await;
    // Nothing yet: the implicit group of no rows.
    for sql in [
        "SELECT COUNT(DISTINCT fee), SUM(DISTINCT fee), AVG(DISTINCT fee), GROUP_CONCAT(DISTINCT fee ORDER BY fee), MIN(user_id), COUNT(*) FROM travelrecord",
        "SELECT GROUP_CONCAT(DISTINCT user_id ORDER BY user_id) FROM travelrecord",
        "SELECT COUNT(DISTINCT user_id), COUNT(*) FROM travelrecord",
        "SELECT days, COUNT(DISTINCT user_id) FROM travelrecord GROUP BY days",
    ] {
        assert_eq!(
            answer(&mut c, sql).await,
            answer(&mut rf, sql).await,
            "{sql}"
        );
    }
    let rows = "INSERT INTO travelrecord (id, user_id, fee, days) VALUES \
        (1, 'a', 1.50, 1), (2, 'A', 2.00, 2), (3, NULL, NULL, 3), (4, 'b', 1.50, 1), (5, '\u{e9}', 3.00, NULL), \
        (5000001, 'a ', 1.50, 2), (5000002, 'B', NULL, 2), (5000003, 'c', 2.00, 1), (5000004, 'e', 3.00, 1), \
        (10000001, 'A', 4.25, 3), (10000002, 'c', 1.50, NULL), (10000003, NULL, 2.00, 3), (10000004, 'd', -1.00, 3)";
    c.query_drop(rows).await.unwrap();
    rf.query_drop(rows).await.unwrap();
    for n in 1..=3 {
        assert_eq!(f.ids_on(n, "travelrecord").await.len(), [5, 4, 4][n - 1]);
    }
    // (query, compare strings folded)
    let queries: &[(&str, bool)] = &[
        ("SELECT COUNT(DISTINCT user_id) FROM travelrecord", false),
        // One string MAX twice: the copies share a hidden weight column.
        (
            "SELECT MAX(user_id) a, COUNT(DISTINCT fee), MAX(user_id) b FROM travelrecord WHERE days IS NOT NULL",
            false,
        ),
        (
            "SELECT days, MAX(user_id) a, MAX(user_id) b FROM travelrecord WHERE days IS NOT NULL GROUP BY days ORDER BY days",
            false,
        ),
        (
            "SELECT COUNT(DISTINCT user_id, days) FROM travelrecord",
            false,
        ),
        (
            "SELECT COUNT(DISTINCT days, user_id) AS n, COUNT(*), SUM(fee), MIN(fee), MAX(days), AVG(fee) FROM travelrecord",
            false,
        ),
        (
            "SELECT SUM(DISTINCT fee), AVG(DISTINCT fee), COUNT(DISTINCT fee), COUNT(fee) FROM travelrecord",
            false,
        ),
        (
            "SELECT SUM(DISTINCT days), AVG(DISTINCT days) FROM travelrecord WHERE fee > 0",
            false,
        ),
        (
            "SELECT days, COUNT(DISTINCT user_id), COUNT(*), SUM(fee), MAX(user_id) FROM travelrecord GROUP BY days ORDER BY days",
            true,
        ),
        (
            "SELECT days, COUNT(DISTINCT fee) AS n, SUM(DISTINCT fee), AVG(DISTINCT fee), MIN(fee) FROM travelrecord GROUP BY days ORDER BY days DESC",
            false,
        ),
        (
            "SELECT days, COUNT(DISTINCT user_id) AS n FROM travelrecord GROUP BY days HAVING n > 1 ORDER BY n DESC, days LIMIT 2",
            false,
        ),
        (
            "SELECT days, COUNT(DISTINCT user_id) FROM travelrecord GROUP BY days HAVING COUNT(DISTINCT user_id) >= 2 AND SUM(fee) > 1 ORDER BY COUNT(DISTINCT user_id), days",
            false,
        ),
        (
            "SELECT LOWER(user_id) AS u, COUNT(DISTINCT days) FROM travelrecord GROUP BY u ORDER BY u LIMIT 1, 3",
            true,
        ),
        (
            "SELECT COUNT(DISTINCT user_id) FROM travelrecord WHERE id > 20000000",
            false,
        ),
        (
            "SELECT days, SUM(DISTINCT fee) FROM travelrecord WHERE user_id IS NULL GROUP BY days ORDER BY days",
            false,
        ),
        (
            "SELECT days, GROUP_CONCAT(fee ORDER BY fee DESC SEPARATOR '|') FROM travelrecord GROUP BY days ORDER BY days",
            false,
        ),
        (
            "SELECT days, GROUP_CONCAT(id ORDER BY id) AS ids, COUNT(*) FROM travelrecord GROUP BY days ORDER BY days",
            false,
        ),
        (
            "SELECT GROUP_CONCAT(DISTINCT fee ORDER BY fee) FROM travelrecord",
            false,
        ),
        (
            "SELECT GROUP_CONCAT(DISTINCT fee ORDER BY fee DESC SEPARATOR ''), COUNT(DISTINCT fee), SUM(DISTINCT fee) FROM travelrecord",
            false,
        ),
        (
            "SELECT GROUP_CONCAT(DISTINCT user_id ORDER BY user_id) FROM travelrecord",
            true,
        ),
        (
            "SELECT GROUP_CONCAT(DISTINCT days, '-', fee ORDER BY days, fee) FROM travelrecord",
            false,
        ),
        (
            "SELECT days, GROUP_CONCAT(DISTINCT user_id ORDER BY user_id DESC SEPARATOR ', ') FROM travelrecord GROUP BY days ORDER BY days",
            true,
        ),
        (
            "SELECT GROUP_CONCAT(id ORDER BY id) FROM travelrecord WHERE id > 20000000",
            false,
        ),
    ];
    for (sql, folded) in queries {
        let (gc, gr) = answer(&mut c, sql).await;
        let (rc, rr) = answer(&mut rf, sql).await;
        assert_eq!(gc, rc, "{sql}: columns");
        let norm = |rows: Vec<Vec<Option<String>>>| -> Vec<Vec<Option<String>>> {
            rows.into_iter()
                .map(|r| {
                    r.into_iter()
                        .map(|v| v.map(|s| if *folded { fold(&s) } else { s }))
                        .collect()
                })
                .collect()
        };
        assert_eq!(norm(gr), norm(rr), "{sql}");
    }
    // Without ORDER BY the concatenation's order is the server's choice: compare as sets.
    let sql = "SELECT days, GROUP_CONCAT(id) FROM travelrecord GROUP BY days ORDER BY days";
    let sorted = |rows: Vec<Vec<Option<String>>>| -> Vec<(Option<String>, Vec<String>)> {
        rows.into_iter()
            .map(|r| {
                let mut ids: Vec<String> = r[1]
                    .as_deref()
                    .unwrap_or_default()
                    .split(',')
                    .map(String::from)
                    .collect();
                ids.sort();
                (r[0].clone(), ids)
            })
            .collect()
    };
    assert_eq!(
        sorted(answer(&mut c, sql).await.1),
        sorted(answer(&mut rf, sql).await.1)
    );

    // group_concat_max_len, the session's: cut at the same byte, and past the bound of
    // maxPacketSize (16 MiB) it would be refused rather than held.
    for conn in [&mut c, &mut rf] {
        conn.query_drop("SET SESSION group_concat_max_len = 7")
            .await
            .unwrap();
    }
    for sql in [
        "SELECT GROUP_CONCAT(fee ORDER BY fee) FROM travelrecord",
        "SELECT days, GROUP_CONCAT(id ORDER BY id DESC) FROM travelrecord GROUP BY days ORDER BY days",
        "SELECT GROUP_CONCAT(DISTINCT user_id ORDER BY user_id SEPARATOR '\u{e9}') FROM travelrecord WHERE user_id <> 'a'",
    ] {
        let (gc, gr) = answer(&mut c, sql).await;
        let (rc, rr) = answer(&mut rf, sql).await;
        assert_eq!(gc, rc, "{sql}: columns");
        assert_eq!(gr, rr, "{sql}");
    }

    // EXPLAIN shows the pushed-down grouping of each node.
    let rows: Vec<(String, String)> = c
        .query("EXPLAIN SELECT COUNT(DISTINCT user_id) FROM travelrecord")
        .await
        .unwrap();
    assert_eq!(rows.len(), 3);
    assert!(
        rows.iter().all(|(_, sql)| sql
            == "SELECT COUNT(DISTINCT user_id), user_id AS `__manx_0`, WEIGHT_STRING(RTRIM(user_id)) AS `__manx_1` FROM travelrecord GROUP BY user_id ORDER BY `__manx_0` "),
        "{rows:?}"
    );

    for (sql, text) in [
        (
            "SELECT COUNT(DISTINCT user_id), COUNT(DISTINCT days) FROM travelrecord",
            "DISTINCT aggregates over different expressions",
        ),
        (
            "SELECT id, COUNT(DISTINCT user_id) FROM travelrecord",
            "beside DISTINCT aggregates or GROUP_CONCAT without GROUP BY",
        ),
        (
            "SELECT days, GROUP_CONCAT(user_id) AS g FROM travelrecord GROUP BY days ORDER BY g",
            "ordering by a GROUP_CONCAT",
        ),
    ] {
        let (code, state, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        assert_eq!((code, state.as_str()), (1064, "42000"), "{sql}: {msg}");
        assert!(msg.contains(text), "{sql}: {msg}");
    }
    // MySQL tells SUM(DISTINCT)'s string values apart as numbers ('1' = '1.0'): refused when
    // the merge sees the column's type.
    let (code, state, msg) = server_error(
        c.query_drop("SELECT SUM(DISTINCT user_id) FROM travelrecord")
            .await
            .unwrap_err(),
    );
    assert_eq!((code, state.as_str()), (1235, "42000"), "{msg}");
    assert!(msg.contains("SUM/AVG(DISTINCT) of string column"), "{msg}");
}

/// A refusal the merge makes while rows stream (a GROUP_CONCAT growing past `maxPacketSize`)
/// reaches the client with its own errno and SQLSTATE, as a refusal before the rows does: it is
/// the gateway's answer (`BackendError::Refused`), not a broken dataNode (1105).
#[tokio::test]
async fn a_refusal_while_rows_stream_keeps_its_errno() {
    let f = Fixture::start(
        "merge_refuse",
        Extra {
            users_xml: common::system_xml(&[("maxPacketSize", "1024")]),
            ..Extra::default()
        },
    )
    .await;
    let mut c = f.client().await;
    // hotnews is sharded by mod-long: two rows of 300 bytes on each of dn1..dn3.
    for id in 1..=6 {
        c.query_drop(format!(
            "INSERT INTO hotnews (id, content) VALUES ({id}, '{}')",
            "x".repeat(300)
        ))
        .await
        .unwrap();
    }
    c.query_drop("SET SESSION group_concat_max_len = 100000")
        .await
        .unwrap();
    let (code, state, msg) = server_error(
        c.query_drop("SELECT GROUP_CONCAT(content) FROM hotnews")
            .await
            .unwrap_err(),
    );
    assert_eq!((code, state.as_str()), (1235, "42000"), "{msg}");
    assert!(msg.contains("1024 bytes"), "{msg}");
}

/// `EXPLAIN FORMAT=TREE` through a client: one row, one column `EXPLAIN`, the whole plan with
/// its merge steps (MySQL 8's tree layout, Vitess's step names); plain `EXPLAIN` stays
/// Mycat's (`DATA_NODE`, `SQL`); formats manx does not print are refused by name.
#[tokio::test]
async fn explain_format_tree_shows_the_merge_steps() {
    let f = Fixture::start("explain_tree", Extra::default()).await;
    let mut c = f.client().await;
    let sql = "SELECT user_id, COUNT(*) AS n FROM travelrecord GROUP BY user_id HAVING n > 1 ORDER BY n DESC LIMIT 3";
    let node = "SELECT user_id, COUNT(*) AS n, WEIGHT_STRING(RTRIM(user_id)) AS `__manx_0` FROM travelrecord GROUP BY user_id  ORDER BY user_id ";

    let result = c
        .query_iter(format!("EXPLAIN FORMAT=TREE {sql}"))
        .await
        .unwrap();
    let names: Vec<String> = result
        .columns_ref()
        .iter()
        .map(|c| c.name_str().into_owned())
        .collect();
    assert_eq!(names, ["EXPLAIN"]);
    let rows: Vec<String> = result.collect_and_drop().await.unwrap();
    let want = [
        "-> SimpleProjection: drop __manx_0".to_string(),
        "    -> Limit: count 3".to_string(),
        "        -> MemorySort: #2 DESC".to_string(),
        "            -> Filter: #2 > 1".to_string(),
        "                -> OrderedAggregate: group by #1 (weight __manx_0); sum_count(#2)"
            .to_string(),
        "                    -> MergeSort: #1 (weight __manx_0)".to_string(),
        format!("                        -> Route on dn1: {node}"),
        format!("                        -> Route on dn2: {node}"),
        format!("                        -> Route on dn3: {node}"),
    ]
    .join("\n");
    assert_eq!(rows, [want]);
    // Any spelling MySQL accepts; the same plan as the statement would run with.
    let again: Vec<String> = c
        .query(format!("explain format = 'tree' {sql}"))
        .await
        .unwrap();
    assert_eq!(again, rows);

    // Mycat's EXPLAIN, and MySQL's TRADITIONAL, unchanged: a row per dataNode.
    for explain in ["EXPLAIN", "EXPLAIN FORMAT=TRADITIONAL"] {
        let routes: Vec<(String, String)> = c.query(format!("{explain} {sql}")).await.unwrap();
        assert_eq!(
            routes,
            ["dn1", "dn2", "dn3"].map(|n| (n.to_string(), node.to_string())),
            "{explain}"
        );
    }

    let (code, state, msg) = server_error(
        c.query_drop(format!("EXPLAIN FORMAT=JSON {sql}"))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, state.as_str()), (1235, "42000"), "{msg}");
    assert!(msg.contains("FORMAT=JSON"), "{msg}");
    let (code, _, msg) = server_error(
        c.query_drop(format!("EXPLAIN FORMAT=yaml {sql}"))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1791, "{msg}");
    assert_eq!(msg, "Unknown EXPLAIN format name: 'yaml'");
    // The inner statement is routed as if it ran: a refused one stays refused.
    let (code, _, msg) = server_error(
        c.query_drop("EXPLAIN FORMAT=TREE INSERT INTO travelrecord (user_id) VALUES ('x')")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1064, "{msg}");
    assert!(msg.contains("sharding column:ID not provided"), "{msg}");
}

/// A schema `PLC` over the fixture's three nodes, default dataNode dn2: `a` and `b` sharded
/// by `mod-long` (id % 3), `sh2` sharded and `gl`, `gl2` global (the last two of each never
/// created before a test creates them), `solo` on dn2 alone, `one1` on dn1 alone.
fn placement() -> Extra {
    Extra {
        schema_xml: r#"<schema name="PLC" dataNode="dn2">
                <table name="a" dataNode="dn1,dn2,dn3" rule="mod-long" />
                <table name="b" dataNode="dn1,dn2,dn3" rule="mod-long" />
                <table name="sh2" dataNode="dn1,dn2,dn3" rule="mod-long" />
                <table name="gl" type="global" dataNode="dn1,dn2,dn3" />
                <table name="gl2" type="global" dataNode="dn1,dn2,dn3" />
                <table name="gl13" type="global" dataNode="dn1,dn3" />
                <table name="solo" dataNode="dn2" />
                <table name="one1" dataNode="dn1" />
            </schema>"#
            .to_string(),
        users_xml: r#"<user name="plc"><property name="password">plc</property><property name="schemas">PLC</property></user>"#
            .to_string(),
        ..Extra::default()
    }
}

async fn placement_client(f: &Fixture) -> mysql_async::Conn {
    mysql_async::Conn::new(common::opts(f.port, "plc", "plc", Some("PLC")))
        .await
        .unwrap()
}

/// The tables of physical database `n` of `f`, sorted, lower-cased.
async fn tables_on(f: &Fixture, n: usize) -> Vec<String> {
    let mut c = f.backend(n).await;
    let mut t: Vec<String> = c
        .exec(
            "SELECT LOWER(table_name) FROM information_schema.tables WHERE table_schema = ?",
            (f.databases[n - 1].clone(),),
        )
        .await
        .unwrap();
    t.sort();
    t
}

/// `INSERT ... SELECT ... ON DUPLICATE KEY UPDATE <sharding column> = ..` is refused as the
/// VALUES form is (Mycat: "Sharding column can't be updated"): run where the rows are read, the
/// update moved a row's id to another node's value and left it where it was (a hunt found it).
#[tokio::test]
async fn insert_select_may_not_update_the_sharding_column_on_duplicate_key() {
    let f = Fixture::start("odkusel", placement()).await;
    let mut c = placement_client(&f).await;
    for t in ["a", "b"] {
        c.query_drop(format!("CREATE TABLE {t} (id INT PRIMARY KEY, v INT)"))
            .await
            .unwrap();
    }
    c.query_drop("INSERT INTO a (id, v) VALUES (1, 1), (2, 2), (3, 3), (4, 4)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO b (id, v) SELECT id, v FROM a")
        .await
        .unwrap();
    for sql in [
        "INSERT INTO b (id, v) SELECT id, v FROM a ON DUPLICATE KEY UPDATE id = b.id + 10",
        "INSERT INTO b (id, v) SELECT id, v FROM a ON DUPLICATE KEY UPDATE b.ID = 100, v = 1",
        "INSERT INTO b (id, v) SELECT id, v FROM a WHERE id = 4 ON DUPLICATE KEY UPDATE id = 7",
        "INSERT INTO b (id, v) VALUES (4, 4) ON DUPLICATE KEY UPDATE id = 14",
        "INSERT INTO b SET id = 4, v = 4 ON DUPLICATE KEY UPDATE id = 14",
    ] {
        let (code, state, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        assert_eq!((code, state.as_str()), (1064, "42000"), "{sql}: {msg}");
        assert!(
            msg.contains("Sharding column can't be updated: B -> ID"),
            "{sql}: {msg}"
        );
    }
    // Every row still on the node its id places it on (id % 3: 0 → dn1, 1 → dn2, 2 → dn3).
    assert_eq!(f.ids_on(1, "b").await, [3]);
    assert_eq!(f.ids_on(2, "b").await, [1, 4]);
    assert_eq!(f.ids_on(3, "b").await, [2]);
    // Updating another column on a duplicate key stays allowed.
    c.query_drop("INSERT INTO b (id, v) SELECT id, v FROM a ON DUPLICATE KEY UPDATE v = b.v + 10")
        .await
        .unwrap();
    let v: Vec<(i64, i64)> = c.query("SELECT id, v FROM b ORDER BY id").await.unwrap();
    assert_eq!(v, [(1, 11), (2, 12), (3, 13), (4, 14)]);
}

/// `CREATE TABLE t .. SELECT ..` runs only where one node holds the table and every row the
/// query reads: for a sharded or global table every node got every row read (a hunt found it).
#[tokio::test]
async fn create_table_select_runs_only_where_one_node_holds_the_table_and_its_rows() {
    let f = Fixture::start("ctsel", placement()).await;
    let mut c = placement_client(&f).await;
    for t in ["a", "gl", "one1"] {
        c.query_drop(format!("CREATE TABLE {t} (id INT PRIMARY KEY, v INT)"))
            .await
            .unwrap();
    }
    for t in ["a", "gl", "one1"] {
        c.query_drop(format!(
            "INSERT INTO {t} (id, v) VALUES (1, 1), (2, 2), (3, 3)"
        ))
        .await
        .unwrap();
    }
    let before: Vec<Vec<String>> = vec![
        tables_on(&f, 1).await,
        tables_on(&f, 2).await,
        tables_on(&f, 3).await,
    ];
    for (sql, names) in [
        (
            "CREATE TABLE sh2 AS SELECT id, v FROM a",
            ["SH2", "sharded"],
        ),
        ("CREATE TABLE sh2 SELECT 1 AS id", ["SH2", "sharded"]),
        ("CREATE TABLE gl2 SELECT id, v FROM gl", ["GL2", "global"]),
        (
            "CREATE TABLE gl2 (id INT PRIMARY KEY) WITH w AS (SELECT 1 AS id) SELECT id FROM w",
            ["GL2", "global"],
        ),
        ("CREATE TABLE copy1 SELECT id, v FROM a", ["COPY1", "A"]),
        (
            "CREATE TABLE copy1 SELECT id FROM gl WHERE id IN (SELECT id FROM one1)",
            ["COPY1", "ONE1"],
        ),
        ("CREATE TABLE solo SELECT id FROM one1", ["SOLO", "ONE1"]),
    ] {
        let (code, state, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        assert_eq!((code, state.as_str()), (1064, "42000"), "{sql}: {msg}");
        assert!(msg.contains("CREATE TABLE ... SELECT"), "{sql}: {msg}");
        for name in names {
            assert!(msg.contains(name), "{sql}: {msg}");
        }
    }
    for n in 1..=3 {
        assert_eq!(
            tables_on(&f, n).await,
            before[n - 1],
            "dn{n}: nothing created"
        );
    }
    // One node holds the table and the rows: an undeclared table (default dataNode dn2) or
    // `solo` (dn2) from a global table and from undeclared tables.
    c.query_drop("CREATE TABLE copy1 SELECT id, v FROM gl WHERE id > 1")
        .await
        .unwrap();
    // The query's `alias.column` names are columns, not tables of another database (they
    // were refused as one: 1044 for database 'x').
    c.query_drop(
        "CREATE TABLE solo AS SELECT x.id FROM copy1 x WHERE x.id IN (SELECT g.id FROM gl g)",
    )
    .await
    .unwrap();
    assert_eq!(f.ids_on(2, "copy1").await, [2, 3]);
    assert_eq!(f.ids_on(2, "solo").await, [2, 3]);
    // The query's tables are still checked as any query's.
    let (code, _, msg) = server_error(
        c.query_drop("CREATE TABLE solo2 AS SELECT u.user FROM mysql.user u")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1044, "{msg}");
    assert!(!tables_on(&f, 2).await.contains(&"solo2".to_string()));
    // A target named like the query's first word is still a qualified table name.
    for sql in [
        "CREATE TABLE mysql.select SELECT 1 AS a",
        "CREATE TABLE mysql.`values` (a INT) WITH w AS (SELECT 1 AS a) SELECT a FROM w",
    ] {
        let (code, _, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        assert_eq!(code, 1044, "{sql}: {msg}");
        assert!(msg.contains("'mysql'"), "{sql}: {msg}");
    }
    for n in [1, 3] {
        let t = tables_on(&f, n).await;
        assert!(
            !t.contains(&"copy1".to_string()) && !t.contains(&"solo".to_string()),
            "dn{n}: {t:?}"
        );
    }
    // LIKE copies a definition, no rows: fine on every node of a global table.
    c.query_drop("CREATE TABLE gl2 LIKE gl").await.unwrap();
    for n in 1..=3 {
        assert!(tables_on(&f, n).await.contains(&"gl2".to_string()), "dn{n}");
        assert!(f.ids_on(n, "gl2").await.is_empty(), "dn{n}");
    }
}

/// `SELECT .. PROCEDURE ANALYSE()` describes the whole result's columns: admitted only where the
/// statement runs on one dataNode as written (over several, each node described its own rows
/// and the merge's extra columns took the clause into their text: a hunt found it).
#[tokio::test]
async fn procedure_analyse_runs_on_one_data_node_only() {
    let f = Fixture::start("procan", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop(
        "INSERT INTO travelrecord (id, user_id, days) VALUES (1, 'a', 1), (2, 'b', 2), (5000001, 'c', 3)",
    )
    .await
    .unwrap();
    for sql in [
        "SELECT id FROM travelrecord PROCEDURE ANALYSE()",
        "SELECT id FROM travelrecord ORDER BY id PROCEDURE ANALYSE()",
        "SELECT user_id FROM travelrecord ORDER BY user_id LIMIT 2 PROCEDURE ANALYSE(10, 20)",
        "SELECT days, COUNT(*) FROM travelrecord GROUP BY days PROCEDURE ANALYSE()",
    ] {
        let (code, state, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        assert_eq!((code, state.as_str()), (1064, "42000"), "{sql}: {msg}");
        assert!(
            msg.contains("PROCEDURE ANALYSE") && msg.contains("one dataNode"),
            "{sql}: {msg}"
        );
    }
    // On one node: the node's own answer, as written.
    let sql = "SELECT id, user_id FROM travelrecord WHERE id IN (1, 2) PROCEDURE ANALYSE()";
    let got: Vec<mysql_async::Row> = c.query(sql).await.unwrap();
    let want: Vec<mysql_async::Row> = f.backend(1).await.query(sql).await.unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(
        got.into_iter().map(|r| r.unwrap()).collect::<Vec<_>>(),
        want.into_iter().map(|r| r.unwrap()).collect::<Vec<_>>()
    );
}

/// A select-list alias that starts with digits and then `e` (`1Ea`, one name to MariaDB) used
/// as a merged ORDER BY / GROUP BY key: the nodes' extra columns took `id AS 1` for the
/// expression (a hunt found it). Answers equal one unsharded table's.
#[tokio::test]
async fn a_digit_led_alias_orders_and_groups_merged_rows() {
    let f = Fixture::start("digalias", Extra::default()).await;
    let reference = "t_digalias_ref";
    common::fresh_database(reference).await;
    let mut r = common::primary(Some(reference)).await;
    r.query_drop(&common::sample_statements()[0]).await.unwrap();
    let rows = "(1, 'b', 2), (2, 'a', 1), (5000001, 'B', 2), (5000002, 'c', 3), (10000001, 'a', 1)";
    let insert = format!("INSERT INTO travelrecord (id, user_id, days) VALUES {rows}");
    let mut c = f.client().await;
    c.query_drop(&insert).await.unwrap();
    r.query_drop(&insert).await.unwrap();
    for sql in [
        "SELECT id AS 1Ea FROM travelrecord ORDER BY 1Ea",
        "SELECT id AS 1Ea FROM travelrecord ORDER BY 1Ea DESC",
        "SELECT id AS 1Ea FROM travelrecord GROUP BY 1Ea",
        "SELECT days 2e, COUNT(*) FROM travelrecord GROUP BY 2e ORDER BY 2e DESC",
        "SELECT LOWER(user_id) AS 1Eq, SUM(days) AS s FROM travelrecord GROUP BY 1Eq ORDER BY 1Eq",
        "SELECT id 1E, days FROM travelrecord ORDER BY days, 1E LIMIT 3",
    ] {
        let got: Vec<mysql_async::Row> =
            c.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        let want: Vec<mysql_async::Row> = r.query(sql).await.unwrap();
        assert_eq!(
            got.into_iter().map(|r| r.unwrap()).collect::<Vec<_>>(),
            want.into_iter().map(|r| r.unwrap()).collect::<Vec<_>>(),
            "{sql}"
        );
    }
}

/// MariaDB reads an unqualified GROUP BY name as a column of the FROM tables before a select
/// alias of that name (warning 1052), unless no table or several have such a column; HAVING
/// then reads it as that group column, ORDER BY as the alias. Over three dataNodes the merge
/// grouped by the alias (a wrong-result hunt found it). The gateway reads the tables' columns
/// (once per table, again after a DDL) and answers what one unsharded table answers.
#[tokio::test]
async fn a_group_by_name_that_is_an_alias_and_a_column_reads_as_mariadb_reads_it() {
    let f = Fixture::start("gbalias", Extra::default()).await;
    let mut c = f.client().await;
    let mut rf = reference("t_gbalias_ref", "SELECT 1").await;
    // EXPLAIN first, while the gateway has read no table's columns: it reads them too.
    let explained: Vec<(String, String)> = c
        .query("EXPLAIN SELECT days DIV 2 AS days, COUNT(*) FROM travelrecord GROUP BY days")
        .await
        .unwrap();
    assert_eq!(explained.len(), 3, "{explained:?}");
    assert!(
        explained
            .iter()
            .all(|(_, sql)| sql.contains("days AS `__manx_0`")
                && sql.contains("GROUP BY days ORDER BY `__manx_0`")),
        "{explained:?}"
    );
    let rows = "INSERT INTO travelrecord (id, user_id, traveldate, fee, days) VALUES \
        (1, 'a', '2024-01-02', 1.50, 1), (2, 'b', '2025-03-04', 2.00, 2), (3, 'c', NULL, NULL, 3), \
        (5000001, 'a', '2024-05-06', 3.00, 2), (5000002, 'd', '2023-07-08', 4.00, 3), \
        (5000003, 'e', '2025-09-10', 1.00, 4), (10000001, 'b', '2024-11-12', 2.00, 1), \
        (10000002, 'f', NULL, NULL, 5), (10000003, 'g', '2023-01-01', 7.00, 4)";
    let companies = "INSERT INTO company (id, name) VALUES (1, 'x'), (2, 'y'), (3, 'z'), (4, 'w')";
    for conn in [&mut c, &mut rf] {
        conn.query_drop(rows).await.unwrap();
        conn.query_drop(companies).await.unwrap();
    }
    let same = async |c: &mut mysql_async::Conn, rf: &mut mysql_async::Conn, sql: &str| {
        assert_eq!(answer(c, sql).await, answer(rf, sql).await, "{sql}");
    };
    for sql in [
        // Grouped by the column `days`, shown as `days DIV 2` (the alias would join 2 and 3).
        "SELECT days DIV 2 AS days, COUNT(*) FROM travelrecord GROUP BY days",
        "SELECT days DIV 2 AS days, COUNT(*), SUM(fee) FROM travelrecord GROUP BY days HAVING days > 2",
        "SELECT days DIV 2 AS days, COUNT(*) FROM travelrecord GROUP BY travelrecord.days HAVING days <= 2",
        "SELECT days DIV 2 AS days, COUNT(*) FROM travelrecord GROUP BY days HAVING days IS NOT NULL AND COUNT(*) > 1",
        // ORDER BY reads the alias: grouped by the column, ordered by `-days`.
        "SELECT -days AS days, COUNT(*) FROM travelrecord GROUP BY days ORDER BY days",
        "SELECT -days AS days, COUNT(*) FROM travelrecord GROUP BY days ORDER BY days LIMIT 1, 2",
        // HAVING without the name in GROUP BY reads the alias.
        "SELECT days DIV 2 AS fee, COUNT(*) FROM travelrecord GROUP BY days DIV 2 HAVING fee > 0",
        // The sharding column: its groups stay on their nodes, in the column's order.
        "SELECT -id AS id, days FROM travelrecord GROUP BY id",
        "SELECT -id AS id, days FROM travelrecord GROUP BY id LIMIT 4",
        // No column of the name: the alias.
        "SELECT days DIV 2 AS half, COUNT(*) FROM travelrecord GROUP BY half",
        "SELECT days DIV 2 AS half, COUNT(*) FROM travelrecord GROUP BY half HAVING half > 0 ORDER BY half DESC",
        "SELECT YEAR(traveldate) AS y, COUNT(*), SUM(fee) FROM travelrecord GROUP BY y ORDER BY y",
        // `id` is a column of both tables: MariaDB passes the ambiguous column over for the
        // alias (so the groups span nodes although `id` names the sharding column).
        "SELECT t.days DIV 2 AS id, COUNT(*) FROM travelrecord t JOIN company c ON c.id = t.days GROUP BY id",
        "SELECT t.days DIV 2 AS name, COUNT(*) FROM travelrecord t JOIN company c ON c.id = t.days GROUP BY name",
    ] {
        same(&mut c, &mut rf, sql).await;
    }
    // The column wins with MariaDB's warning, which the nodes give (they group as written).
    c.query_drop("SELECT days DIV 2 AS days, COUNT(*) FROM travelrecord GROUP BY days")
        .await
        .unwrap();
    let warnings: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert!(
        warnings.contains(&(
            "Warning".to_string(),
            1052,
            "Column 'days' in GROUP BY is ambiguous".to_string()
        )),
        "{warnings:?}"
    );
    // Prepared, with the binary protocol.
    let sql = "SELECT days DIV 2 AS days, COUNT(*) FROM travelrecord WHERE id > ? GROUP BY days";
    let got: Vec<(Option<i64>, i64)> = c.exec(sql, (1,)).await.unwrap();
    let want: Vec<(Option<i64>, i64)> = rf.exec(sql, (1,)).await.unwrap();
    assert_eq!(got, want, "{sql}");
    // A FROM table whose columns the gateway cannot know: refused by name, never guessed.
    let (code, state, msg) = server_error(
        c.query_drop(
            "SELECT days DIV 2 AS days, COUNT(*) FROM travelrecord t JOIN (SELECT id, name FROM company) d ON d.id = t.days GROUP BY days",
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((code, state.as_str()), (1235, "42000"), "{msg}");
    assert!(
        msg.contains("Column 'days' in GROUP BY") && msg.contains("derived table d"),
        "{msg}"
    );

    // A column of the alias's name added later (a DDL through the gateway): the columns are
    // read again, and the plan of a range select (which the session keeps for statements of
    // its shape, with only the two bounds for literals) is not reused.
    let ranged = "SELECT -days AS half, COUNT(*) FROM travelrecord WHERE id BETWEEN 1 AND 20000000 GROUP BY half";
    for _ in 0..2 {
        same(&mut c, &mut rf, ranged).await;
    }
    for conn in [&mut c, &mut rf] {
        conn.query_drop("ALTER TABLE travelrecord ADD COLUMN half INT")
            .await
            .unwrap();
        conn.query_drop("UPDATE travelrecord SET half = id")
            .await
            .unwrap();
    }
    for sql in [
        ranged,
        "SELECT -days AS half, COUNT(*) FROM travelrecord GROUP BY half",
    ] {
        same(&mut c, &mut rf, sql).await;
    }
}

/// A statement whose first table is undeclared goes whole to the schema's default dataNode
/// (SPEC §5.4) only when every table it reads has all its rows there: a sharded table or one on
/// another node named beside it was read from whatever copy that node held (a hunt found a
/// stale copy answering, and a write deciding its rows from it).
#[tokio::test]
async fn an_undeclared_table_s_statement_reads_only_tables_whose_rows_are_on_the_default_node() {
    let f = Fixture::start("undecl", placement()).await;
    let mut c = placement_client(&f).await;
    for t in ["u", "a", "gl", "gl13", "one1", "solo"] {
        c.query_drop(format!("CREATE TABLE {t} (id INT PRIMARY KEY)"))
            .await
            .unwrap();
        c.query_drop(format!("INSERT INTO {t} (id) VALUES (1), (2), (3)"))
            .await
            .unwrap();
    }
    // Stale copies on the default dataNode dn2 of tables whose rows are elsewhere.
    let mut dn2 = f.backend(2).await;
    dn2.query_drop("CREATE TABLE one1 (id INT PRIMARY KEY)")
        .await
        .unwrap();
    dn2.query_drop("INSERT INTO one1 VALUES (1), (2), (3), (7)")
        .await
        .unwrap();
    dn2.query_drop("INSERT INTO a VALUES (7)").await.unwrap();
    for sql in [
        "SELECT COUNT(*) FROM u JOIN a USING (id)",
        "SELECT COUNT(*) FROM u WHERE id IN (SELECT id FROM one1)",
        "SELECT COUNT(*) FROM u, (SELECT id FROM a) x WHERE x.id = u.id",
        "SELECT id FROM u WHERE id = 1 UNION SELECT id FROM one1 WHERE id = 7",
        "DELETE FROM u WHERE id IN (SELECT id FROM one1)",
        "UPDATE u SET id = id + 10 WHERE EXISTS (SELECT 1 FROM a WHERE a.id = u.id)",
        // A global table that is not on dn2.
        "SELECT COUNT(*) FROM u JOIN gl13 USING (id)",
        "DELETE FROM u WHERE id IN (SELECT id FROM gl13)",
        "INSERT INTO u (id) SELECT id + 10 FROM gl13",
    ] {
        let (code, _, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        assert_eq!(code, 1064, "{sql}: {msg}");
        assert!(
            ["ONE1", "A ", "GL13"].iter().any(|t| msg.contains(t)),
            "{sql}: {msg}"
        );
    }
    assert_eq!(f.ids_on(2, "u").await, [1, 2, 3], "nothing written");
    // Tables whose rows are all on dn2: a global table, a table on dn2 alone.
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM u JOIN gl USING (id) JOIN solo USING (id)")
        .await
        .unwrap();
    assert_eq!(n, Some(3));
    c.query_drop("DELETE FROM u WHERE id IN (SELECT id FROM gl WHERE id = 1)")
        .await
        .unwrap();
    assert_eq!(f.ids_on(2, "u").await, [2, 3]);
}

/// A schema whose default dataNode's database also holds another schema's tables (here dn1,
/// which holds a shard of TESTDB's `hotnews` and `travelrecord`): an undeclared name there
/// that is such a table is refused, not read or written past TESTDB's rules (the breaker read
/// a masked table's shard and wrote a row on a node its id does not belong to).
#[tokio::test]
async fn a_default_node_does_not_reach_another_schema_s_tables_in_its_database() {
    let f = Fixture::start(
        "shadow",
        Extra {
            schema_xml: r#"<schema name="DEF" dataNode="dn1" />"#.to_string(),
            users_xml: r#"<user name="def"><property name="password">def</property><property name="schemas">DEF,TESTDB</property></user>"#
                .to_string(),
            ..Extra::default()
        },
    )
    .await;
    let mut t = f.client().await;
    t.query_drop("INSERT INTO hotnews (id, title) VALUES (3, 'dn1 row')")
        .await
        .unwrap();
    let mut c = mysql_async::Conn::new(common::opts(f.port, "def", "def", Some("DEF")))
        .await
        .unwrap();
    for sql in [
        "SELECT * FROM hotnews",
        "SELECT COUNT(*) FROM Travelrecord",
        "INSERT INTO hotnews (id, title) VALUES (4, 'misplaced')",
        "DELETE FROM hotnews",
        "DROP TABLE hotnews",
        "TRUNCATE TABLE hotnews",
        "ALTER TABLE hotnews ADD COLUMN x INT",
        "CREATE TABLE hotnews (id INT)",
        "CREATE TABLE copy SELECT * FROM hotnews",
        "SELECT * FROM (SELECT id FROM hotnews) x",
        "LOCK TABLES hotnews WRITE",
        "OPTIMIZE TABLE hotnews",
        "SHOW CREATE TABLE hotnews",
    ] {
        let e = c.query_drop(sql).await.expect_err(sql);
        let (code, _, msg) = server_error(e);
        assert_eq!(code, 1064, "{sql}: {msg}");
        assert!(msg.contains("schema TESTDB's table"), "{sql}: {msg}");
    }
    let ids: Vec<i64> = t.query("SELECT id FROM hotnews").await.unwrap();
    assert_eq!(ids, [3], "nothing changed");
    // Its own undeclared tables, and TESTDB's named as TESTDB's, still work.
    c.query_drop("CREATE TABLE mine (id INT PRIMARY KEY)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO mine VALUES (1)").await.unwrap();
    let n: Option<i64> = c.query_first("SELECT COUNT(*) FROM mine").await.unwrap();
    assert_eq!(n, Some(1));
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM TESTDB.hotnews")
        .await
        .unwrap();
    assert_eq!(n, Some(1));
    c.query_drop("DROP TABLE mine").await.unwrap();
}
