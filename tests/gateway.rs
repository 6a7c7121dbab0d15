//! The gateway end to end: real MariaDB sandbox, gateway in-process, real client library.

mod common;

use std::time::{Duration, Instant};

use common::{Extra, Fixture, closed_port, opts, server_error};
use mysql_async::Row;
use mysql_async::prelude::Queryable;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_and_schema_visibility() {
    let f = Fixture::start(
        "auth",
        Extra {
            schema_xml: r#"<schema name="OTHER" dataNode="dn1"></schema>"#.to_string(),
            users_xml: r#"<user name="other"><property name="password">pw</property><property name="schemas">OTHER</property></user>"#.to_string(),
            ..Extra::default()
        },
    )
    .await;
    // Right password.
    let mut c = f.client().await;
    let dbs: Vec<String> = c.query("SHOW DATABASES").await.unwrap();
    assert_eq!(dbs, ["TESTDB"]);
    let db: Option<String> = c.query_first("SELECT DATABASE()").await.unwrap().unwrap();
    assert_eq!(db.as_deref(), Some("TESTDB"));
    // A schema the user may not use, and one that does not exist.
    let (code, state, msg) = server_error(c.query_drop("USE OTHER").await.unwrap_err());
    assert_eq!((code, state.as_str()), (1044, "42000"), "{msg}");
    let (code, _, msg) = server_error(c.query_drop("USE nosuch").await.unwrap_err());
    assert_eq!(code, 1049, "{msg}");
    // Schema names are case-sensitive, as in Mycat.
    let (code, _, _) = server_error(c.query_drop("USE testdb").await.unwrap_err());
    assert_eq!(code, 1049);
    c.query_drop("USE TESTDB").await.unwrap();

    // The other user sees only its schema, and cannot log in to TESTDB.
    let mut o = mysql_async::Conn::new(opts(f.port, "other", "pw", None))
        .await
        .unwrap();
    let dbs: Vec<String> = o.query("SHOW DATABASES").await.unwrap();
    assert_eq!(dbs, ["OTHER"]);
    let e = mysql_async::Conn::new(opts(f.port, "other", "pw", Some("TESTDB")))
        .await
        .unwrap_err();
    assert_eq!(server_error(e).0, 1044);

    // Wrong password and unknown user: MySQL's 1045 / 28000.
    for (user, pass) in [("root", "wrong"), ("nobody", "123456"), ("root", "")] {
        let e = mysql_async::Conn::new(opts(f.port, user, pass, Some("TESTDB")))
            .await
            .unwrap_err();
        let (code, state, msg) = server_error(e);
        assert_eq!(
            (code, state.as_str()),
            (1045, "28000"),
            "{user}/{pass}: {msg}"
        );
        assert!(
            msg.contains(&format!("Access denied for user '{user}'")),
            "{msg}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_tables_lists_the_schema_tables() {
    let f = Fixture::start("show", Extra::default()).await;
    let mut c = f.client().await;
    let tables: Vec<String> = c.query("SHOW TABLES").await.unwrap();
    assert_eq!(
        tables,
        ["company", "employee", "goods", "hotnews", "travelrecord"]
    );
    let tables: Vec<String> = c.query("show tables like 'h%'").await.unwrap();
    assert_eq!(tables, ["hotnews"]);
    let full: Vec<(String, String)> = c
        .query("SHOW FULL TABLES FROM TESTDB LIKE '%s'")
        .await
        .unwrap();
    assert_eq!(full.len(), 2);
    assert!(full.iter().all(|(_, t)| t == "BASE TABLE"));
    // Column metadata of a table comes from its first dataNode.
    let cols: Vec<Row> = c.query("SHOW COLUMNS FROM travelrecord").await.unwrap();
    assert_eq!(cols.len(), 5);
    let cols: Vec<Row> = c.query("DESC TESTDB.hotnews").await.unwrap();
    assert_eq!(cols.len(), 3);
    let create: Vec<(String, String)> = c.query("SHOW CREATE TABLE employee").await.unwrap();
    assert!(create[0].1.contains("sharding_id"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_land_on_the_nodes_mycat_puts_them() {
    let f = Fixture::start("place", Extra::default()).await;
    let mut c = f.client().await;
    // auto-sharding-long: 0..=5M on dn1, ..10M on dn2, ..15M on dn3 (first matching line wins).
    for id in [
        0i64, 1, 5_000_000, 5_000_001, 10_000_000, 10_000_001, 15_000_000,
    ] {
        // Half through a prepared statement: the bound value places the row the same way.
        if id % 2 == 0 {
            c.exec_drop(
                "INSERT INTO travelrecord (id, user_id, fee) VALUES (?, 'u', 1.25)",
                (id,),
            )
            .await
            .unwrap();
        } else {
            c.query_drop(format!(
                "INSERT INTO travelrecord (id, user_id, fee) VALUES ({id}, 'u', 1.25)"
            ))
            .await
            .unwrap();
        }
    }
    assert_eq!(f.ids_on(1, "travelrecord").await, [0, 1, 5_000_000]);
    assert_eq!(f.ids_on(2, "travelrecord").await, [5_000_001, 10_000_000]);
    assert_eq!(f.ids_on(3, "travelrecord").await, [10_000_001, 15_000_000]);
    // A multi-row INSERT is split by node.
    c.query_drop(
        "INSERT INTO hotnews (id, title) VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d'),(-5,'e'),('6','f')",
    )
    .await
    .unwrap();
    assert_eq!(c.affected_rows(), 6);
    assert_eq!(f.ids_on(1, "hotnews").await, [3, 6]);
    assert_eq!(f.ids_on(2, "hotnews").await, [1, 4]);
    assert_eq!(f.ids_on(3, "hotnews").await, [-5, 2]);
    // sharding-by-intfile on sharding_id; the column order does not matter.
    c.query_drop(
        "INSERT INTO employee (name, sharding_id, id) VALUES ('x', 10000, 1), ('y', 10010, 2)",
    )
    .await
    .unwrap();
    assert_eq!(f.ids_on(1, "employee").await, [1]);
    assert_eq!(f.ids_on(2, "employee").await, [2]);
    // Schema-qualified names reach the node's physical database.
    c.query_drop("INSERT INTO TESTDB.travelrecord (id, user_id) VALUES (7, 'q')")
        .await
        .unwrap();
    assert_eq!(f.ids_on(1, "travelrecord").await, [0, 1, 7, 5_000_000]);
    // What the gateway reads back is what was written, from every node.
    let mut all: Vec<i64> = c.query("SELECT id FROM travelrecord").await.unwrap();
    all.sort();
    assert_eq!(
        all,
        [
            0, 1, 7, 5_000_000, 5_000_001, 10_000_000, 10_000_001, 15_000_000
        ]
    );
    let row: Option<(i64, String, String)> = c
        .query_first("SELECT id, user_id, fee FROM TESTDB.travelrecord WHERE id = 10000001")
        .await
        .unwrap();
    assert_eq!(row, Some((10_000_001, "u".to_string(), "1.25".to_string())));
}

/// Plants a copy of each id on every physical database, marked with the database it is on
/// (`on1`, `on2`, `on3`): which markers a query returns tells which dataNodes it was sent to.
async fn plant_markers(f: &Fixture, table: &str, column: &str, ids: &[i64]) {
    for n in 1..=3 {
        let mut b = f.backend(n).await;
        for id in ids {
            b.query_drop(format!(
                "INSERT INTO {table} (id, {column}) VALUES ({id}, 'on{n}')"
            ))
            .await
            .unwrap();
        }
    }
}

/// The distinct markers (see [`plant_markers`]) a query returns, sorted.
async fn nodes_hit(c: &mut mysql_async::Conn, sql: &str) -> Vec<String> {
    let rows: Vec<String> = c.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut v: Vec<String> = rows;
    v.sort();
    v.dedup();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditions_pick_the_nodes() {
    let f = Fixture::start("route", Extra::default()).await;
    plant_markers(
        &f,
        "travelrecord",
        "user_id",
        &[1, 901, 5_000_001, 10_000_001],
    )
    .await;
    plant_markers(&f, "hotnews", "title", &[901, 902]).await;
    let mut c = f.client().await;
    let cases: &[(&str, &[&str])] = &[
        // No condition on the rule column: every node.
        ("SELECT user_id FROM travelrecord", &["on1", "on2", "on3"]),
        (
            "SELECT user_id FROM travelrecord WHERE id > 900",
            &["on1", "on2", "on3"],
        ),
        (
            "SELECT user_id FROM travelrecord WHERE id + 0 = 1",
            &["on1", "on2", "on3"],
        ),
        // = and IN pick the nodes of their values.
        ("SELECT user_id FROM travelrecord WHERE id = 1", &["on1"]),
        (
            "SELECT user_id FROM travelrecord WHERE id IN (1, 10000001)",
            &["on1", "on3"],
        ),
        (
            "SELECT user_id FROM `travelrecord` WHERE `id` IN ('1', \"10000001\")",
            &["on1", "on3"],
        ),
        (
            "SELECT t.user_id FROM travelrecord t WHERE t.id = '5000001'",
            &["on2"],
        ),
        (
            "SELECT user_id FROM TESTDB.TravelRecord WHERE 5000001 = ID",
            &["on2"],
        ),
        (
            "/* comment */ select user_id from travelrecord where id = 0001;",
            &["on1"],
        ),
        // OR unites, AND intersects; other conditions do not narrow.
        (
            "SELECT user_id FROM travelrecord WHERE id = 1 OR id = 10000001",
            &["on1", "on3"],
        ),
        (
            "SELECT user_id FROM travelrecord WHERE id IN (1, 10000001) OR user_id = 'x'",
            &["on1", "on2", "on3"],
        ),
        (
            "SELECT user_id FROM travelrecord WHERE (id = 1 OR id = 10000001) AND user_id LIKE 'on%'",
            &["on1", "on3"],
        ),
        (
            "SELECT user_id FROM travelrecord WHERE id IN (1, 5000001) AND id IN (5000001, 10000001)",
            &["on2"],
        ),
        // BETWEEN asks the function for its range.
        (
            "SELECT user_id FROM travelrecord WHERE id BETWEEN 0 AND 1000",
            &["on1"],
        ),
        (
            "SELECT user_id FROM travelrecord WHERE id BETWEEN 1 AND 5000001",
            &["on1", "on2"],
        ),
        // PartitionByMod: 901 mod 3 = 1 (dn2), 902 mod 3 = 2 (dn3).
        ("SELECT title FROM hotnews WHERE id = 901", &["on2"]),
        (
            "SELECT title FROM hotnews WHERE id IN (901, 902)",
            &["on2", "on3"],
        ),
    ];
    for (sql, expected) in cases {
        assert_eq!(nodes_hit(&mut c, sql).await, *expected, "{sql}");
    }
    // LIMIT without ORDER BY over several nodes: the right number of rows.
    let rows: Vec<String> = c
        .query("SELECT user_id FROM travelrecord LIMIT 5")
        .await
        .unwrap();
    assert_eq!(rows.len(), 5);
    let rows: Vec<String> = c
        .query("SELECT user_id FROM travelrecord LIMIT 10, 5")
        .await
        .unwrap();
    assert_eq!(rows.len(), 2, "12 rows in all, 10 skipped");
    let rows: Vec<String> = c
        .query("SELECT user_id FROM travelrecord LIMIT 5 OFFSET 11")
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    // UPDATE and DELETE are routed the same way; affected rows are summed.
    c.query_drop("UPDATE travelrecord SET days = 3")
        .await
        .unwrap();
    assert_eq!(c.affected_rows(), 12);
    c.query_drop("UPDATE travelrecord SET days = 4 WHERE id IN (1, 901)")
        .await
        .unwrap();
    assert_eq!(c.affected_rows(), 2, "1 and 901 route to dn1 only");
    c.query_drop("DELETE FROM hotnews WHERE id = 902")
        .await
        .unwrap();
    assert_eq!(c.affected_rows(), 1);
    c.query_drop("DELETE FROM hotnews").await.unwrap();
    assert_eq!(c.affected_rows(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_tables_write_everywhere_and_read_once() {
    let f = Fixture::start("global", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("INSERT INTO company (id, name) VALUES (1, 'acme'), (2, 'initech')")
        .await
        .unwrap();
    assert_eq!(
        c.affected_rows(),
        2,
        "a global write reports one copy's rows"
    );
    for n in 1..=3 {
        assert_eq!(f.ids_on(n, "company").await, [1, 2]);
    }
    for _ in 0..5 {
        let mut rows: Vec<(i64, String)> = c.query("SELECT id, name FROM company").await.unwrap();
        rows.sort();
        assert_eq!(rows, [(1, "acme".to_string()), (2, "initech".to_string())]);
    }
    c.query_drop("UPDATE company SET name = 'ACME' WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(c.affected_rows(), 1);
    for n in 1..=3 {
        let mut b = f.backend(n).await;
        let name: Option<String> = b
            .query_first("SELECT name FROM company WHERE id = 1")
            .await
            .unwrap();
        assert_eq!(name.as_deref(), Some("ACME"));
    }
    // A join of a sharded table with a global table runs where the sharded rows are.
    c.query_drop(
        "INSERT INTO employee (id, name, sharding_id) VALUES (1, 'e1', 10000), (2, 'e2', 10010)",
    )
    .await
    .unwrap();
    let mut rows: Vec<(String, String)> = c
        .query("SELECT e.name, c.name FROM employee e JOIN company c ON c.id = e.id")
        .await
        .unwrap();
    rows.sort();
    assert_eq!(
        rows,
        [
            ("e1".to_string(), "ACME".to_string()),
            ("e2".to_string(), "initech".to_string())
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_statements_get_clear_errors_and_nothing_is_sent() {
    let f = Fixture::start("errors", Extra::default()).await;
    let mut c = f.client().await;
    let cases = [
        (
            "INSERT INTO travelrecord (user_id) VALUES ('x')",
            1064,
            "sharding column:ID not provided",
        ),
        (
            "SELECT * FROM nosuchtable",
            1064,
            "NOSUCHTABLE is not defined in schema TESTDB",
        ),
        ("SELEC 1", 1064, "Expected"),
        (
            "INSERT INTO travelrecord (id) VALUES (-1)",
            1064,
            "can't find datanode for sharding column:ID val:-1",
        ),
        (
            "SELECT * FROM travelrecord WHERE id = 'abc'",
            1064,
            "columnValue:abc Please eliminate any quote",
        ),
        (
            "UPDATE travelrecord SET id = 2 WHERE id = 1",
            1064,
            "Sharding column can't be updated TRAVELRECORD->ID",
        ),
        (
            "SELECT COUNT(DISTINCT user_id), COUNT(DISTINCT days) FROM travelrecord",
            1064,
            "DISTINCT aggregates over different expressions",
        ),
        (
            "SELECT user_id FROM travelrecord GROUP BY user_id HAVING user_id LIKE 'a%'",
            1064,
            "this HAVING over groups that span several dataNodes",
        ),
        (
            "SELECT * FROM travelrecord a JOIN hotnews b ON a.id = b.id",
            1064,
            "cross-node join of TRAVELRECORD and HOTNEWS",
        ),
        ("", 1065, "Query was empty"),
    ];
    for (sql, code, text) in cases {
        let (got, state, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        assert_eq!(got, code, "{sql}: {msg}");
        assert_eq!(state, "42000", "{sql}");
        assert!(msg.contains(text), "{sql}: {msg}");
    }
    // Nothing was written by the refused statements, and the session still works.
    for n in 1..=3 {
        assert_eq!(f.ids_on(n, "travelrecord").await, Vec::<i64>::new());
    }
    let one: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    // A statement needing a schema without one: 1046.
    let mut n = mysql_async::Conn::new(opts(f.port, "root", "123456", None))
        .await
        .unwrap();
    let (code, state, _) = server_error(
        n.query_drop("SELECT * FROM travelrecord")
            .await
            .unwrap_err(),
    );
    assert_eq!((code, state.as_str()), (1046, "3D000"));
    // The backend's own errors pass through with its errno and SQLSTATE.
    let (code, state, msg) = server_error(
        c.query_drop("INSERT INTO hotnews (id, title, nosuch) VALUES (1, 'x', 2)")
            .await
            .unwrap_err(),
    );
    assert_eq!((code, state.as_str()), (1054, "42S22"), "{msg}");
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (1, 'x')")
        .await
        .unwrap();
    let (code, state, _) = server_error(
        c.query_drop("INSERT INTO hotnews (id, title) VALUES (1, 'x')")
            .await
            .unwrap_err(),
    );
    assert_eq!((code, state.as_str()), (1062, "23000"));
    // A read-only user may read but not write.
    let mut ro = mysql_async::Conn::new(opts(f.port, "user", "user", Some("TESTDB")))
        .await
        .unwrap();
    let _: Vec<Row> = ro.query("SELECT * FROM hotnews").await.unwrap();
    let (code, _, _) = server_error(ro.query_drop("DELETE FROM hotnews").await.unwrap_err());
    assert_eq!(code, 1495);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_goes_to_every_node_of_the_table() {
    let f = Fixture::start("ddl", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("DROP TABLE hotnews").await.unwrap();
    for n in 1..=3 {
        let mut b = f.backend(n).await;
        let t: Vec<String> = b.query("SHOW TABLES LIKE 'hotnews'").await.unwrap();
        assert!(t.is_empty(), "hotnews still on node {n}");
    }
    c.query_drop("CREATE TABLE hotnews (id BIGINT PRIMARY KEY, title VARCHAR(20), Extra INT)")
        .await
        .unwrap();
    c.query_drop("ALTER TABLE hotnews ADD COLUMN more INT")
        .await
        .unwrap();
    for n in 1..=3 {
        let mut b = f.backend(n).await;
        let cols: Vec<Row> = b.query("SHOW COLUMNS FROM hotnews").await.unwrap();
        assert_eq!(cols.len(), 4, "node {n}");
    }
    // employee lives on dn1 and dn2 only.
    c.query_drop("TRUNCATE TABLE employee").await.unwrap();
    let (code, _, msg) = server_error(
        c.query_drop("CREATE TABLE unknown_t (id INT)")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1064, "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_pin_connections_and_roll_back() {
    let f = Fixture::start("tx", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        .await
        .unwrap();
    let mut seen: Vec<i64> = c.query("SELECT id FROM hotnews").await.unwrap();
    seen.sort();
    assert_eq!(seen, [1, 2, 3], "the transaction sees its own writes");
    assert_eq!(
        f.ids_on(1, "hotnews").await,
        Vec::<i64>::new(),
        "others do not"
    );
    c.query_drop("ROLLBACK").await.unwrap();
    let seen: Vec<i64> = c.query("SELECT id FROM hotnews").await.unwrap();
    assert!(seen.is_empty());
    // autocommit=0: a transaction until COMMIT.
    c.query_drop("SET autocommit = 0").await.unwrap();
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (4, 'd'), (5, 'e')")
        .await
        .unwrap();
    assert_eq!(f.ids_on(2, "hotnews").await, Vec::<i64>::new());
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(f.ids_on(2, "hotnews").await, [4]);
    assert_eq!(f.ids_on(3, "hotnews").await, [5]);
    // A client that disconnects mid-transaction loses its writes.
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (6, 'f')")
        .await
        .unwrap();
    drop(c);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut d = f.client().await;
    let seen: Vec<i64> = d
        .query("SELECT id FROM hotnews WHERE id = 6")
        .await
        .unwrap();
    assert!(seen.is_empty());
    assert_eq!(f.ids_on(1, "hotnews").await, Vec::<i64>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_begins_no_later_than_its_first_statement_on_each_node() {
    // The MySQL backend sends START TRANSACTION in the first statement's own packet: that
    // statement must run inside the transaction (its snapshot, its rollback), its error must
    // come back as its own, and a transaction with no statement on a node ends cleanly.
    let f = Fixture::start("txbegin", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (1, 'a'), (2, 'b')")
        .await
        .unwrap();
    // hotnews is mod-long over dn1..dn3: id 1 lives on the second database.
    let mut direct = f.backend(2).await;

    c.query_drop("BEGIN").await.unwrap();
    let first: Option<String> = c
        .query_first("SELECT title FROM hotnews WHERE id = 1;")
        .await
        .unwrap();
    assert_eq!(first.as_deref(), Some("a"));
    direct
        .query_drop("UPDATE hotnews SET title = 'z' WHERE id = 1")
        .await
        .unwrap();
    let again: Option<String> = c
        .query_first("SELECT title FROM hotnews WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(
        again.as_deref(),
        Some("a"),
        "the first read took the snapshot"
    );
    c.query_drop("COMMIT").await.unwrap();
    let after: Option<String> = c
        .query_first("SELECT title FROM hotnews WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(after.as_deref(), Some("z"));

    // A failing first statement: its own error, and the transaction goes on.
    c.query_drop("START TRANSACTION").await.unwrap();
    let (code, _, msg) = server_error(
        c.query_drop("SELECT nosuchcolumn FROM hotnews WHERE id = 1")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1054, "{msg}");
    c.query_drop("UPDATE hotnews SET title = 'y' WHERE id = 1")
        .await
        .unwrap();
    let seen: Option<String> = direct
        .query_first("SELECT title FROM hotnews WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(seen.as_deref(), Some("z"), "not committed yet");
    c.query_drop("ROLLBACK").await.unwrap();
    let seen: Option<String> = direct
        .query_first("SELECT title FROM hotnews WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(seen.as_deref(), Some("z"), "rolled back");

    // Empty transactions, and a write as the first statement.
    for end in ["COMMIT", "ROLLBACK"] {
        c.query_drop("BEGIN").await.unwrap();
        c.query_drop(end).await.unwrap();
    }
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("DELETE FROM hotnews WHERE id = 2")
        .await
        .unwrap();
    assert_eq!(f.ids_on(3, "hotnews").await, [2], "not committed yet");
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(f.ids_on(3, "hotnews").await, Vec::<i64>::new());
    let one: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_by_item_named_like_a_direction_is_an_error_not_a_dropped_connection() {
    // Found by the `route` fuzz target: `ORDER BY a, DESC` parses (a column named DESC), and
    // the merge planner cut the direction word off an item that had nothing else: a panic
    // that dropped the client's connection.
    let f = Fixture::start("orderdesc", Extra::default()).await;
    let mut c = f.client().await;
    for sql in [
        "SELECT user_id, COUNT(*) FROM travelrecord GROUP BY user_id ORDER BY user_id, DESC",
        "SELECT usSELECT user_id, COUNT(*), SUM(fee), AVGr_id, COUNT(*),(-ays) FROM travelrecord GROUP BY user_id ORDER BY 4 = 200 OR id0 OR id = 7 OR id =er_id, COUNT(*), SUM(fee), AVGr_id, DESC",
    ] {
        let (code, _, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        assert!(code == 1064 || code == 1054, "{code} {msg}");
    }
    let one: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_that_is_down_fails_fast_and_others_still_serve() {
    // dn4 on a port nothing listens on; dn5 on a server that accepts but never answers.
    let blackhole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = blackhole.local_addr().unwrap().port();
    let extra = format!(
        r#"<schema name="DOWN" checkSQLschema="false">
            <table name="refused" dataNode="dn4" />
            <table name="silent" dataNode="dn5" />
            <table name="mixed" dataNode="dn1,dn4" />
        </schema>
        <dataNode name="dn4" dataHost="down" database="db1" />
        <dataNode name="dn5" dataHost="silent" database="db1" />
        <dataHost name="down" maxCon="5" minCon="1" balance="0" dbType="mysql" dbDriver="native">
            <heartbeat>select 1</heartbeat>
            <writeHost host="deadM1" url="127.0.0.1:{}" user="manx" password="manx" />
        </dataHost>
        <dataHost name="silent" maxCon="5" minCon="1" balance="0" dbType="mysql" dbDriver="native">
            <heartbeat>select 1</heartbeat>
            <writeHost host="silentM1" url="127.0.0.1:{silent_port}" user="manx" password="manx" />
        </dataHost>"#,
        closed_port()
    );
    let f = Fixture::start(
        "down",
        Extra {
            schema_xml: extra,
            users_xml: r#"<user name="d"><property name="password">d</property><property name="schemas">DOWN,TESTDB</property></user>"#
                .to_string(),
            ..Extra::default()
        },
    )
    .await;
    let mut c = mysql_async::Conn::new(opts(f.port, "d", "d", Some("DOWN")))
        .await
        .unwrap();
    for (sql, node) in [
        ("SELECT * FROM refused", "dn4"),
        ("SELECT * FROM silent", "dn5"),
        ("SELECT * FROM mixed", "dn4"),
    ] {
        let started = Instant::now();
        let (code, state, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        let took = started.elapsed();
        assert_eq!((code, state.as_str()), (1105, "HY000"), "{sql}: {msg}");
        assert!(msg.contains(&format!("dataNode {node}")), "{sql}: {msg}");
        assert!(took < Duration::from_secs(5), "{sql} took {took:?}");
    }
    // The healthy nodes keep serving, on the same session and on new ones.
    c.query_drop("USE TESTDB").await.unwrap();
    c.query_drop("INSERT INTO travelrecord (id) VALUES (1)")
        .await
        .unwrap();
    let ids: Vec<i64> = c.query("SELECT id FROM travelrecord").await.unwrap();
    assert_eq!(ids, [1]);
    drop(blackhole);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_con_connections_are_opened_at_start() {
    // A backend user of its own, so its connections can be counted on the shared server.
    let mut p = common::primary(None).await;
    p.query_drop("CREATE USER IF NOT EXISTS 'warmup'@'%' IDENTIFIED BY 'w'")
        .await
        .unwrap();
    p.query_drop("GRANT ALL ON *.* TO 'warmup'@'%'")
        .await
        .unwrap();
    let extra = r#"<schema name="WARM" dataNode="dn6"></schema>
        <dataNode name="dn6" dataHost="warm" database="mysql" />
        <dataHost name="warm" maxCon="10" minCon="3" balance="0" dbType="mysql" dbDriver="native">
            <heartbeat>select 1</heartbeat>
            <writeHost host="warmM1" url="127.0.0.1:13306" user="warmup" password="w" />
        </dataHost>"#;
    let _f = Fixture::start(
        "warm",
        Extra {
            schema_xml: extra.to_string(),
            ..Extra::default()
        },
    )
    .await;
    let started = Instant::now();
    let count = loop {
        let n: Option<i64> = p
            .query_first(
                "SELECT COUNT(*) FROM information_schema.processlist WHERE user = 'warmup'",
            )
            .await
            .unwrap();
        let n = n.unwrap_or(0);
        if n >= 3 || started.elapsed() > Duration::from_secs(10) {
            break n;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        count >= 3,
        "minCon=3 connections opened without any client, found {count}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_shows_the_statement_per_data_node() {
    let f = Fixture::start("explain", Extra::default()).await;
    let mut c = f.client().await;
    let rows: Vec<(String, String)> = c
        .query("EXPLAIN SELECT * FROM travelrecord WHERE id IN (1, 10000001)")
        .await
        .unwrap();
    let sql = "SELECT * FROM travelrecord WHERE id IN (1, 10000001)".to_string();
    assert_eq!(
        rows,
        [("dn1".to_string(), sql.clone()), ("dn3".to_string(), sql)]
    );
    // Ranges: only the nodes that can hold a value in them.
    for (sql, nodes) in [
        ("SELECT * FROM travelrecord WHERE id < 100", vec!["dn1"]),
        (
            "SELECT * FROM travelrecord WHERE 10000001 <= id",
            vec!["dn3"],
        ),
        (
            "SELECT * FROM travelrecord WHERE id > 4999999 AND id <= 5000001",
            vec!["dn1", "dn2"],
        ),
        (
            "SELECT * FROM hotnews WHERE id BETWEEN 4 AND 5",
            vec!["dn2", "dn3"],
        ),
        (
            "SELECT * FROM hotnews WHERE id >= 4",
            vec!["dn1", "dn2", "dn3"],
        ),
        (
            "SELECT * FROM travelrecord WHERE id > 'x'",
            vec!["dn1", "dn2", "dn3"],
        ),
    ] {
        let rows: Vec<(String, String)> = c.query(format!("EXPLAIN {sql}")).await.unwrap();
        let got: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(got, nodes, "{sql}");
    }
    let rows: Vec<(String, String)> = c
        .query("explain INSERT INTO TESTDB.hotnews (id, title) VALUES (1, 'a'), (2, 'b')")
        .await
        .unwrap();
    let db2 = &f.databases[1];
    let db3 = &f.databases[2];
    assert_eq!(
        rows,
        [
            (
                "dn2".to_string(),
                format!("INSERT INTO `{db2}`.hotnews (id, title) VALUES (1, 'a')")
            ),
            (
                "dn3".to_string(),
                format!("INSERT INTO `{db3}`.hotnews (id, title) VALUES (2, 'b')")
            ),
        ]
    );
    let rows: Vec<(String, String)> = c
        .query("EXPLAIN SELECT * FROM travelrecord LIMIT 2, 3")
        .await
        .unwrap();
    assert_eq!(rows.len(), 3);
    assert!(
        rows.iter()
            .all(|(_, sql)| sql == "SELECT * FROM travelrecord LIMIT 5"),
        "{rows:?}"
    );
    // Nothing was executed.
    assert!(f.ids_on(2, "hotnews").await.is_empty());
    // A merge shows what each node is asked for: its sort key and the key's collation weight
    // as extra columns, and enough rows for the offset.
    let rows: Vec<(String, String)> = c
        .query("EXPLAIN SELECT id FROM travelrecord ORDER BY user_id LIMIT 2, 3")
        .await
        .unwrap();
    assert_eq!(rows.len(), 3);
    assert!(
        rows.iter().all(|(_, sql)| sql
            == "SELECT id, user_id AS `__manx_0`, WEIGHT_STRING(RTRIM(user_id)) AS `__manx_1` FROM travelrecord ORDER BY user_id LIMIT 5"),
        "{rows:?}"
    );
    let (code, _, msg) = server_error(
        c.query_drop("EXPLAIN SELECT BIT_OR(id) FROM travelrecord")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1064, "{msg}");
}

/// A dataHost whose first writeHost is dead and whose second is the sandbox primary. The schema
/// also has a node on the live sandbox, so clients can always connect (their connect-time
/// `SELECT @@...` may go to any node).
fn pair_xml(prefix: &str, switch_type: i32) -> String {
    format!(
        r#"<schema name="PAIR" dataNode="dn7"><table name="company" type="global" dataNode="dn1" /></schema>
        <dataNode name="dn7" dataHost="pair" database="t_{prefix}_db1" />
        <dataHost name="pair" maxCon="5" minCon="0" balance="0" switchType="{switch_type}" dbType="mysql" dbDriver="native">
            <heartbeat>select 1</heartbeat>
            <writeHost host="hostA" url="127.0.0.1:{}" user="manx" password="manx" />
            <writeHost host="hostB" url="127.0.0.1:13306" user="manx" password="manx" />
        </dataHost>"#,
        closed_port()
    )
}

fn pair_user() -> String {
    r#"<user name="p"><property name="password">p</property><property name="schemas">PAIR</property></user>"#.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dnindex_properties_choose_the_active_write_host() {
    // Stored index 1: the live second writeHost serves.
    let f = Fixture::start(
        "dnidx1",
        Extra {
            schema_xml: pair_xml("dnidx1", 1),
            users_xml: pair_user(),
            files: vec![(
                "dnindex.properties".into(),
                "#update\n#Tue Mar 10 10:00:00 CST 2020\npair=1\n".into(),
            )],
        },
    )
    .await;
    let mut c = mysql_async::Conn::new(opts(f.port, "p", "p", Some("PAIR")))
        .await
        .unwrap();
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM travelrecord")
        .await
        .unwrap();
    assert_eq!(n, Some(0));
    let text = std::fs::read_to_string(f.dir.path().join("dnindex.properties")).unwrap();
    assert!(
        text.contains("pair=1\n") && text.contains("localhost1=0\n"),
        "the file gains the missing dataHost: {text}"
    );

    // No file: index 0, the dead writeHost; the file is created with every dataHost at 0.
    let g = Fixture::start(
        "dnidx0",
        Extra {
            schema_xml: pair_xml("dnidx0", 1),
            users_xml: pair_user(),
            ..Extra::default()
        },
    )
    .await;
    let text = std::fs::read_to_string(g.dir.path().join("dnindex.properties")).unwrap();
    assert!(
        text.starts_with("#update\n")
            && text.contains("pair=0\n")
            && text.contains("localhost1=0\n"),
        "{text}"
    );
    let mut c = mysql_async::Conn::new(opts(g.port, "p", "p", Some("PAIR")))
        .await
        .unwrap();
    let (code, _, msg) = server_error(
        c.query_drop("SELECT COUNT(*) FROM travelrecord")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1105, "{msg}");
    assert!(msg.contains("hostA"), "{msg}");

    // switchType=-1 with a stored index other than 0: start-up refuses, naming why.
    let dir = tempfile::tempdir().unwrap();
    common::write_config(
        dir.path(),
        &g.databases,
        &Extra {
            schema_xml: pair_xml("dnidx0", -1),
            users_xml: pair_user(),
            ..Extra::default()
        },
    );
    std::fs::write(dir.path().join("dnindex.properties"), "pair=1\n").unwrap();
    let config = manx::config::Config::load(dir.path()).unwrap();
    let e = manx::frontend::Server::new(config, manx::datahost::Timeouts::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("dnindex.properties") && e.contains("switchType=-1 only allows writeHost 0"),
        "{e}"
    );
}

/// The column definitions a client sees carry the backend's collation, length and decimals,
/// exactly as a direct connection shows them (binary columns stay binary, DECIMAL keeps its scale).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn column_metadata_is_the_backends() {
    let f = Fixture::start("colmeta", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("INSERT INTO travelrecord (id, user_id, fee, traveldate) VALUES (1, 'é', 1.5, '2024-01-02'), (5000001, 'b', 2, NULL)")
        .await
        .unwrap();
    let meta = |cols: &[mysql_async::Column]| -> Vec<(String, u16, u32, u8)> {
        cols.iter()
            .map(|c| {
                (
                    c.name_str().into_owned(),
                    c.character_set(),
                    c.column_length(),
                    c.decimals(),
                )
            })
            .collect()
    };
    for sql in [
        "SELECT id, user_id, fee, traveldate, x'FF00' AS b, 1.25 AS d FROM travelrecord WHERE id = 1",
        "SELECT id, user_id, fee, traveldate, x'FF00' AS b, 1.25 AS d FROM travelrecord",
    ] {
        let mut r = c.query_iter(sql).await.unwrap();
        let via_gateway = meta(r.columns_ref());
        let rows: Vec<Row> = r.collect().await.unwrap();
        assert!(!rows.is_empty());
        let mut b = f.backend(1).await;
        let r = b.query_iter(sql).await.unwrap();
        let direct = meta(r.columns_ref());
        r.drop_result().await.unwrap();
        assert_eq!(via_gateway, direct, "{sql}");
        assert_eq!(direct[4].1, 63, "x'FF00' is binary");
        assert_eq!(direct[2].3, 2, "DECIMAL(10,2) has 2 decimals");
    }
}

/// INSERT / REPLACE without a column list (what mysqldump and bulk loaders write): the column
/// order comes from the table's definition on its dataNodes, so each row goes where the same
/// INSERT with the list written out sends it (Mycat refuses the form); nodes that define the
/// table differently make it an error that inserts nothing; DDL through manx is seen at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inserts_without_a_column_list_land_where_the_listed_form_would() {
    let f = Fixture::start("nolist", Extra::default()).await;
    let mut c = f.client().await;
    // The nodes disagree on hotnews's columns: refused, nothing written anywhere.
    f.backend(2)
        .await
        .query_drop("ALTER TABLE hotnews ADD COLUMN extra INT")
        .await
        .unwrap();
    let e = server_error(
        c.query_drop("INSERT INTO hotnews VALUES (1, 'a', 'x'), (2, 'b', 'y')")
            .await
            .unwrap_err(),
    );
    assert_eq!(e.0, 1105, "{e:?}");
    assert!(
        e.2.contains("hotnews") && e.2.contains("dn2") && e.2.contains("extra"),
        "{e:?}"
    );
    for n in 1..=3 {
        assert!(f.ids_on(n, "hotnews").await.is_empty());
    }
    f.backend(2)
        .await
        .query_drop("ALTER TABLE hotnews DROP COLUMN extra")
        .await
        .unwrap();

    // auto-sharding-long on id (first column), several rows split by node.
    c.query_drop(
        "INSERT INTO travelrecord VALUES (1, 'u', '2024-01-02', 1.25, 3), \
         (5000001, 'v', NULL, NULL, NULL), (10000001, 'w', NULL, 2.5, 1)",
    )
    .await
    .unwrap();
    assert_eq!(c.affected_rows(), 3);
    assert_eq!(f.ids_on(1, "travelrecord").await, [1]);
    assert_eq!(f.ids_on(2, "travelrecord").await, [5_000_001]);
    assert_eq!(f.ids_on(3, "travelrecord").await, [10_000_001]);
    let row: Option<(String, String, String, i64)> = f
        .backend(3)
        .await
        .query_first("SELECT user_id, traveldate IS NULL, fee, days FROM travelrecord")
        .await
        .unwrap();
    assert_eq!(
        row,
        Some(("w".into(), "1".into(), "2.50".into(), 1)),
        "values in the table's column order"
    );
    // The same rows with the list written out go to the same nodes (hotnews: mod on id).
    c.query_drop("REPLACE INTO hotnews VALUES (1,'a','x'),(2,'b','y'),(3,'c','z')")
        .await
        .unwrap();
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (4,'d'),(5,'e'),(6,'f')")
        .await
        .unwrap();
    assert_eq!(f.ids_on(1, "hotnews").await, [3, 6]);
    assert_eq!(f.ids_on(2, "hotnews").await, [1, 4]);
    assert_eq!(f.ids_on(3, "hotnews").await, [2, 5]);
    // sharding-by-intfile on the third column.
    c.query_drop("INSERT INTO employee VALUES (1, 'x', 10000), (2, 'y', 10010)")
        .await
        .unwrap();
    assert_eq!(f.ids_on(1, "employee").await, [1]);
    assert_eq!(f.ids_on(2, "employee").await, [2]);
    // MySQL's error for a row of the wrong length; nothing written.
    let e = server_error(
        c.query_drop("INSERT INTO employee VALUES (3, 'z', 10000), (4, 'q')")
            .await
            .unwrap_err(),
    );
    assert_eq!((e.0, e.1.as_str()), (1136, "21S01"), "{e:?}");
    assert_eq!(f.ids_on(1, "employee").await, [1]);
    // DDL through manx: the next INSERT sees the new column order.
    c.query_drop("ALTER TABLE employee ADD COLUMN grade INT FIRST")
        .await
        .unwrap();
    c.query_drop("INSERT INTO employee VALUES (7, 3, 'z', 10010)")
        .await
        .unwrap();
    assert_eq!(f.ids_on(2, "employee").await, [2, 3]);
    let grade: Option<i64> = f
        .backend(2)
        .await
        .query_first("SELECT grade FROM employee WHERE id = 3")
        .await
        .unwrap();
    assert_eq!(grade, Some(7));
    // The nodes reorder the columns behind manx's back: the INSERT still stores each value in
    // the column it was placed by (the list manx read goes with it), so the row is where its
    // sharding_id belongs.
    for n in 1..=2 {
        f.backend(n)
            .await
            .query_drop("ALTER TABLE employee MODIFY name VARCHAR(100) FIRST")
            .await
            .unwrap();
    }
    c.query_drop("INSERT INTO employee VALUES (8, 4, 'w', 10000)")
        .await
        .unwrap();
    let placed: Option<(i64, i64)> = f
        .backend(1)
        .await
        .query_first("SELECT id, sharding_id FROM employee WHERE name = 'w'")
        .await
        .unwrap();
    assert_eq!(placed, Some((4, 10000)));
}

/// SHOW TABLES lists a schema's tables as schema.xml spells them; `fakeMySQLVersion` is the
/// version the greeting, `SELECT VERSION()` and `SELECT @@version` give; the labels of the
/// SELECTs the gateway answers are the expressions as the client wrote them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_spelling_version_and_labels_are_what_the_client_expects() {
    let f = Fixture::start(
        "spell",
        Extra {
            schema_xml: r#"<schema name="SPELL"><table name="T_Bill_Item" dataNode="dn1" /><table name="lower_one" dataNode="dn1,dn2" type="global" /></schema>"#.into(),
            users_xml: format!(
                r#"<user name="sp"><property name="password">sp</property><property name="schemas">SPELL</property></user>{}"#,
                common::system_xml(&[("fakeMySQLVersion", "8.0.33")])
            ),
            ..Extra::default()
        },
    )
    .await;
    let mut c = mysql_async::Conn::new(common::opts(f.port, "sp", "sp", Some("SPELL")))
        .await
        .unwrap();
    let tables: Vec<String> = c.query("SHOW TABLES").await.unwrap();
    assert_eq!(tables, ["lower_one", "T_Bill_Item"]);
    assert_eq!(c.server_version(), (8, 0, 33));
    let mut result = c.query_iter("SELECT VERSION()").await.unwrap();
    let label = result.columns().unwrap()[0].name_str().into_owned();
    let version: Vec<String> = result.collect().await.unwrap();
    assert_eq!(label, "VERSION()");
    assert!(version[0].starts_with("8.0.33-manx-"), "{version:?}");
    let via_variable: Option<String> = c.query_first("select @@version").await.unwrap();
    assert_eq!(via_variable.as_deref(), Some(version[0].as_str()));
    let mut result = c.query_iter("select Database()").await.unwrap();
    let label = result.columns().unwrap()[0].name_str().into_owned();
    let schema: Vec<String> = result.collect().await.unwrap();
    assert_eq!(
        (label.as_str(), schema[0].as_str()),
        ("Database()", "SPELL")
    );
}

/// A multi-table UPDATE with its tables separated by commas (`UPDATE a, b SET ... WHERE`, as
/// SQLAlchemy writes an UPDATE..FROM) runs as the JOIN form does, here on a schema's default
/// dataNode, derived tables included. An INSERT reading other undeclared tables runs on the
/// default dataNode too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comma_separated_tables_in_an_update_run_as_a_join() {
    let f = Fixture::start(
        "updcomma",
        Extra {
            schema_xml: r#"<schema name="LOOSE" dataNode="dn2" />"#.into(),
            users_xml: r#"<user name="lo"><property name="password">lo</property><property name="schemas">LOOSE</property></user>"#.into(),
            ..Extra::default()
        },
    )
    .await;
    let mut c = mysql_async::Conn::new(opts(f.port, "lo", "lo", Some("LOOSE")))
        .await
        .unwrap();
    for sql in [
        "CREATE TABLE uc_a (id INT PRIMARY KEY, name VARCHAR(10))",
        "CREATE TABLE uc_b (id INT PRIMARY KEY, name VARCHAR(10), price INT)",
        "INSERT INTO uc_a (id, name) VALUES (1, 'a'), (2, 'b')",
        "INSERT INTO uc_b (id, name, price) VALUES (1, 'x', 1), (2, 'y', 2)",
    ] {
        c.query_drop(sql).await.unwrap();
    }
    c.query_drop(
        "UPDATE uc_a, uc_b AS g SET uc_a.name = g.name WHERE uc_a.id = g.id AND g.price > 1",
    )
    .await
    .unwrap();
    assert_eq!(c.affected_rows(), 1);
    // The rows of uc_a on the default dataNode's database, from `from` on.
    let fx = &f;
    let rows_from = |from: i64| async move {
        let rows: Vec<(i64, String)> = fx
            .backend(2)
            .await
            .query(format!(
                "SELECT id, name FROM uc_a WHERE id >= {from} ORDER BY id"
            ))
            .await
            .unwrap();
        rows
    };
    assert_eq!(rows_from(0).await, [(1, "a".into()), (2, "y".into())]);
    // A derived table in the list is read as MariaDB reads it (module `route::forms`): its
    // SELECT is checked like any other, and the statement runs on the default dataNode.
    c.query_drop("UPDATE uc_a, (SELECT 1 AS id) d SET uc_a.name = 'z' WHERE uc_a.id = d.id")
        .await
        .unwrap();
    assert_eq!(rows_from(0).await, [(1, "z".into()), (2, "y".into())]);
    // Undeclared tables all live on the default dataNode: an INSERT reading another of them
    // (a subquery in VALUES, INSERT ... SELECT) runs there too.
    c.query_drop("INSERT INTO uc_a (id, name) VALUES (3, (SELECT name FROM uc_b WHERE id = 1))")
        .await
        .unwrap();
    c.query_drop("INSERT INTO uc_a (id, name) SELECT id + 10, name FROM uc_b")
        .await
        .unwrap();
    assert_eq!(
        rows_from(3).await,
        [(3, "x".into()), (11, "x".into()), (12, "y".into())]
    );
}

/// MariaDB's JSON functions are built-ins the gateway lets through (SQLAlchemy's JSON type
/// calls `JSON_UNQUOTE(JSON_EXTRACT(...))`; a `json` column's CHECK is `JSON_VALID`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_functions_are_builtins() {
    let f = Fixture::start("jsonfn", Extra::default()).await;
    let mut c = f.client().await;
    let row: Option<(String, i64, String)> = c
        .query_first(
            r#"SELECT JSON_UNQUOTE(JSON_EXTRACT('{"a": "x"}', '$.a')), JSON_VALID('{}'), JSON_SET('{}', '$.b', 1)"#,
        )
        .await
        .unwrap();
    assert_eq!(row, Some(("x".into(), 1, r#"{"b": 1}"#.into())));
}

/// A `fakeMySQLVersion` that is a whole server version, as MariaDB announces itself
/// (`5.5.5-10.11.6-MariaDB-log`), is announced the way MariaDB does: the greeting carries it, and
/// `VERSION()`, `@@version` and `SHOW VARIABLES LIKE 'version'` answer it without the `5.5.5-`
/// greeting prefix, whether the gateway answers the statement itself or a dataNode runs it;
/// `@@version_comment` is the gateway's everywhere. (A gateway process of its own: the
/// announced version is the process's, and this binary's in-process gateways announce others.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mariadb_fake_version_is_announced_consistently() {
    let f = Fixture::start("mariaver", Extra::default()).await;
    let server_xml = f.dir.path().join("server.xml");
    let text = std::fs::read_to_string(&server_xml).unwrap();
    let text = text.replacen(
        "<system>",
        "<system><property name=\"fakeMySQLVersion\">5.5.5-10.11.6-MariaDB-log</property>",
        1,
    );
    std::fs::write(&server_xml, text).unwrap();
    let (_gateway, mut c) =
        common::GatewayProcess::start(f.dir.path(), "root", "123456", "TESTDB").await;
    let expected = format!("10.11.6-MariaDB-log-manx-{}", env!("CARGO_PKG_VERSION"));
    // The greeting: the client library reads MariaDB's prefix as MariaDB does.
    assert_eq!(c.server_version(), (10, 11, 6));
    let alone: Option<String> = c.query_first("SELECT VERSION()").await.unwrap();
    assert_eq!(alone.as_deref(), Some(expected.as_str()));
    let alone: Option<String> = c.query_first("SELECT @@version").await.unwrap();
    assert_eq!(alone.as_deref(), Some(expected.as_str()));
    // Forwarded to a dataNode (more than one expression): the same answers.
    let forwarded: Option<(String, String, String, i64)> = c
        .query_first(
            "SELECT VERSION(), @@version, @@global.version_comment, VERSION() LIKE '%MariaDB%'",
        )
        .await
        .unwrap();
    let comment: Option<String> = c.query_first("SELECT @@version_comment").await.unwrap();
    let comment = comment.unwrap();
    assert!(comment.starts_with("manx "), "{comment}");
    assert_eq!(
        forwarded,
        Some((expected.clone(), expected.clone(), comment.clone(), 1))
    );
    let variables: Vec<(String, String)> = c.query("SHOW VARIABLES LIKE 'version%'").await.unwrap();
    let value = |name: &str| {
        variables
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(value("version").as_deref(), Some(expected.as_str()));
    assert_eq!(value("version_comment"), Some(comment));
    // The other rows are the dataNode's.
    assert!(value("version_compile_os").is_some(), "{variables:?}");
}

/// A statement whose tables are all qualified with another logical schema the user may use is
/// routed by that schema's rules (SQLAlchemy's `test_schema`); mixing the two is refused by
/// name; DATABASE() still answers the session's schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_logical_schema_named_in_a_statement_routes_by_its_rules() {
    let f = Fixture::start(
        "otherschema",
        Extra {
            schema_xml: r#"<schema name="OTHER" dataNode="dn3"><table name="split" dataNode="dn1,dn2,dn3" rule="mod-long" /></schema>"#.into(),
            users_xml: r#"<user name="two"><property name="password">two</property><property name="schemas">TESTDB,OTHER</property></user><user name="one"><property name="password">one</property><property name="schemas">TESTDB</property></user>"#.into(),
            ..Extra::default()
        },
    )
    .await;
    let mut c = mysql_async::Conn::new(opts(f.port, "two", "two", Some("TESTDB")))
        .await
        .unwrap();
    // An undeclared table of OTHER: its default dataNode (dn3).
    c.query_drop("CREATE TABLE OTHER.loose (id INT PRIMARY KEY, v VARCHAR(10))")
        .await
        .unwrap();
    c.query_drop("INSERT INTO OTHER.loose (id, v) VALUES (1, 'a'), (2, 'b')")
        .await
        .unwrap();
    assert_eq!(f.ids_on(3, "loose").await, [1, 2]);
    let rows: Vec<(String, i64)> = c
        .query("SELECT DATABASE(), id FROM OTHER.loose ORDER BY id")
        .await
        .unwrap();
    assert_eq!(rows, [("TESTDB".into(), 1), ("TESTDB".into(), 2)]);
    // A sharded table of OTHER: placed by OTHER's rule (mod-long on id over dn1..dn3).
    for n in 1..=3 {
        f.backend(n)
            .await
            .query_drop("CREATE TABLE split (id BIGINT PRIMARY KEY)")
            .await
            .unwrap();
    }
    c.query_drop("INSERT INTO OTHER.split (id) VALUES (3), (4), (5)")
        .await
        .unwrap();
    assert_eq!(f.ids_on(1, "split").await, [3]);
    assert_eq!(f.ids_on(2, "split").await, [4]);
    assert_eq!(f.ids_on(3, "split").await, [5]);
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM OTHER.split WHERE id > 3")
        .await
        .unwrap();
    assert_eq!(n, Some(2));
    // Tables of both schemas in one statement: refused, naming the schemas.
    let e = server_error(
        c.query_drop("SELECT * FROM travelrecord t JOIN OTHER.loose l ON l.id = t.id")
            .await
            .unwrap_err(),
    );
    assert!(
        e.2.contains("several schemas") && e.2.contains("OTHER"),
        "{e:?}"
    );
    // A user without OTHER cannot reach it this way.
    let mut one = mysql_async::Conn::new(opts(f.port, "one", "one", Some("TESTDB")))
        .await
        .unwrap();
    let e = server_error(
        one.query_drop("SELECT * FROM OTHER.loose")
            .await
            .unwrap_err(),
    );
    assert_eq!(e.0, 1044, "{e:?}");
}

/// SHOW GRANTS answers the user's rights at the gateway (server.xml), never the backend
/// account's; another user's grants are MySQL's 1044; SHOW LOCAL STATUS and SHOW CREATE VIEW
/// (a view on a schema's default dataNode) work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_grants_local_status_and_create_view() {
    let f = Fixture::start(
        "grants",
        Extra {
            schema_xml: r#"<schema name="VIEWS" dataNode="dn2"></schema>"#.into(),
            users_xml: r#"<user name="ro"><property name="password">ro</property><property name="schemas">TESTDB,VIEWS</property><property name="readOnly">true</property></user>"#.into(),
            ..Extra::default()
        },
    )
    .await;
    let mut c = f.client().await;
    let grants: Vec<String> = c.query("SHOW GRANTS").await.unwrap();
    assert_eq!(
        grants,
        [
            "GRANT USAGE ON *.* TO 'root'@'%'",
            "GRANT ALL PRIVILEGES ON `TESTDB`.* TO 'root'@'%'"
        ]
    );
    let same: Vec<String> = c.query("SHOW GRANTS FOR CURRENT_USER()").await.unwrap();
    assert_eq!(same, grants);
    let e = server_error(c.query_drop("SHOW GRANTS FOR ro").await.unwrap_err());
    assert_eq!((e.0, e.1.as_str()), (1044, "42000"), "{e:?}");
    let mut ro = mysql_async::Conn::new(opts(f.port, "ro", "ro", Some("VIEWS")))
        .await
        .unwrap();
    let grants: Vec<String> = ro.query("SHOW GRANTS FOR 'ro'@'%'").await.unwrap();
    assert_eq!(
        grants,
        [
            "GRANT USAGE ON *.* TO 'ro'@'%'",
            "GRANT SELECT ON `TESTDB`.* TO 'ro'@'%'",
            "GRANT SELECT ON `VIEWS`.* TO 'ro'@'%'"
        ]
    );
    let status: Vec<(String, String)> = c
        .query("SHOW LOCAL STATUS LIKE 'Com_select'")
        .await
        .unwrap();
    assert_eq!(status.len(), 1);
    f.backend(2)
        .await
        .query_drop("CREATE TABLE base (id INT); CREATE VIEW v AS SELECT id FROM base")
        .await
        .unwrap();
    let create: Vec<(String, String, String, String)> =
        ro.query("SHOW CREATE VIEW v").await.unwrap();
    assert_eq!(create[0].0, "v");
    assert!(create[0].1.contains("select `base`.`id`"), "{create:?}");
}
