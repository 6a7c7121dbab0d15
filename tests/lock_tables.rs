//! `LOCK TABLES` / `UNLOCK TABLES` through the gateway (SPEC §7.6), session affinity (a
//! session that made state in its backend connection keeps it), and the mysqldump round trip
//! of issue 18: every check is made on the backends (a direct connection finds the locks, the
//! rows and their placement), and a differential check runs one statement sequence on plain
//! MariaDB and through the gateway.

mod common;

use common::run_all;
use common::{Extra, Fixture, fails, primary, server_error};
use mysql_async::prelude::Queryable;

/// Whether another session can write `table` of database `db` right now: an INSERT with a
/// 1-second lock wait (rolled back), on a direct connection to the primary.
async fn writable(db: &str, table: &str) -> bool {
    let mut c = primary(Some(db)).await;
    run_all(
        &mut c,
        &[
            "SET SESSION lock_wait_timeout = 1, innodb_lock_wait_timeout = 1",
            "START TRANSACTION",
        ],
    )
    .await;
    let insert = match table {
        "travelrecord" => "INSERT INTO travelrecord (id, user_id) VALUES (999999999, 'probe')",
        "company" => "INSERT INTO company (id, name) VALUES (999999, 'probe')",
        "hotnews" => "INSERT INTO hotnews (id, title) VALUES (999999, 'probe')",
        other => panic!("no probe for {other}"),
    };
    let done = c.query_drop(insert).await;
    let _ = c.query_drop("ROLLBACK").await;
    match done {
        Ok(()) => true,
        Err(e) => {
            let (code, _, message) = server_error(e);
            assert_eq!(code, 1205, "{db}.{table}: {message}");
            false
        }
    }
}

/// Whether another session can read `table` of `db` (a 1-second lock wait).
async fn readable(db: &str, table: &str) -> bool {
    let mut c = primary(Some(db)).await;
    c.query_drop("SET SESSION lock_wait_timeout = 1")
        .await
        .unwrap();
    match c.query_drop(format!("SELECT COUNT(*) FROM {table}")).await {
        Ok(()) => true,
        Err(e) => {
            let (code, _, message) = server_error(e);
            assert_eq!(code, 1205, "{db}.{table}: {message}");
            false
        }
    }
}

/// Every database of the fixture has `table` writable (`true`) or locked (`false`).
async fn all_writable(f: &Fixture, table: &str) -> Vec<bool> {
    let mut out = Vec::new();
    for db in &f.databases {
        out.push(writable(db, table).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_tables_locks_every_node_of_each_table_until_unlock() {
    let f = Fixture::start("lkbasic", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop(
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000001, 'b'), (10000001, 'c')",
    )
    .await
    .unwrap();

    c.query_drop("LOCK TABLES travelrecord READ LOCAL, TESTDB.company AS c LOW_PRIORITY WRITE")
        .await
        .unwrap();
    // Judged on the backends: every node of both tables is locked, READ lets others read.
    assert_eq!(all_writable(&f, "travelrecord").await, [false; 3]);
    assert_eq!(all_writable(&f, "company").await, [false; 3]);
    assert!(readable(&f.databases[1], "travelrecord").await);
    assert!(!readable(&f.databases[2], "company").await);
    // hotnews is not locked: others write it, the session may not touch it (1100, from the
    // gateway: no backend is asked).
    assert_eq!(all_writable(&f, "hotnews").await, [true; 3]);
    let m = fails(&mut c, "SELECT * FROM hotnews", 1100, "HY000").await;
    assert_eq!(m, "Table 'hotnews' was not locked with LOCK TABLES");
    fails(&mut c, "SELECT * FROM HotNews WHERE id = 1", 1100, "HY000").await;
    // The locked tables are read on the pinned connections (a READ LOCAL lock on a table
    // that another session could write would otherwise not be what the session reads).
    let n: i64 = c
        .query_first("SELECT COUNT(*) FROM travelrecord")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 3);
    // A write to the READ-locked table: the node's own 1099.
    let m = fails(
        &mut c,
        "INSERT INTO travelrecord (id, user_id) VALUES (2, 'x')",
        1099,
        "HY000",
    )
    .await;
    assert!(m.contains("READ lock"), "{m}");
    // company was locked as `c`: MySQL wants the alias (the node's own 1100).
    fails(
        &mut c,
        "INSERT INTO company (id, name) VALUES (1, 'x')",
        1100,
        "HY000",
    )
    .await;
    c.query_drop("SELECT c.id FROM company AS c")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // Mycat's refusal of a second LOCK TABLES.
    let m = fails(&mut c, "LOCK TABLES hotnews READ", 1003, "HY000").await;
    assert_eq!(m, "can't lock multi-table");
    run_all(
        &mut c,
        &[
            "UNLOCK TABLES",
            "LOCK TABLES company WRITE, travelrecord READ",
        ],
    )
    .await;
    c.query_drop("INSERT INTO company (id, name) VALUES (1, 'x')")
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    // COMMIT / ROLLBACK do not release table locks.
    run_all(
        &mut c,
        &[
            "SET autocommit = 0",
            "INSERT INTO company (id, name) VALUES (2, 'y')",
            "COMMIT",
            "INSERT INTO company (id, name) VALUES (3, 'z')",
            "ROLLBACK",
            "SET autocommit = 1",
        ],
    )
    .await;
    assert_eq!(all_writable(&f, "company").await, [false; 3]);
    assert_eq!(all_writable(&f, "travelrecord").await, [false; 3]);

    c.query_drop("UNLOCK TABLES").await.unwrap();
    assert_eq!(all_writable(&f, "company").await, [true; 3]);
    assert_eq!(all_writable(&f, "travelrecord").await, [true; 3]);
    for n in 1..=3 {
        assert_eq!(f.ids_on(n, "company").await, [1, 2], "node {n}");
    }
    // Unlocked: every table again, and UNLOCK TABLES without locks is OK.
    run_all(&mut c, &["SELECT * FROM hotnews", "UNLOCK TABLES"]).await;

    // Refused inside a transaction (Mycat's text).
    c.query_drop("BEGIN").await.unwrap();
    let m = fails(&mut c, "LOCK TABLES company READ", 1003, "HY000").await;
    assert_eq!(m, "can't lock table in transaction!");
    c.query_drop("ROLLBACK").await.unwrap();
    // With autocommit off, once the transaction ran a statement (before any, LOCK TABLES is
    // MySQL's own pattern and works: see the differential test).
    run_all(&mut c, &["SET autocommit = 0", "SELECT * FROM company"]).await;
    fails(&mut c, "LOCK TABLES company READ", 1003, "HY000").await;
    run_all(&mut c, &["ROLLBACK", "SET autocommit = 1"]).await;

    // BEGIN releases the locks, as in MySQL.
    c.query_drop("LOCK TABLES company WRITE").await.unwrap();
    assert_eq!(all_writable(&f, "company").await, [false; 3]);
    c.query_drop("BEGIN").await.unwrap();
    assert_eq!(all_writable(&f, "company").await, [true; 3]);
    run_all(&mut c, &["SELECT * FROM hotnews", "COMMIT"]).await;

    // UNLOCK TABLES with locks held commits the open transaction.
    run_all(
        &mut c,
        &[
            "LOCK TABLES company WRITE",
            "SET autocommit = 0",
            "INSERT INTO company (id, name) VALUES (4, 'w')",
            "UNLOCK TABLES",
            "ROLLBACK",
            "SET autocommit = 1",
        ],
    )
    .await;
    for n in 1..=3 {
        assert_eq!(f.ids_on(n, "company").await, [1, 2, 4], "node {n}");
    }

    // COM_RESET_CONNECTION releases them.
    c.query_drop("LOCK TABLES company WRITE").await.unwrap();
    c.reset().await.unwrap();
    assert_eq!(all_writable(&f, "company").await, [true; 3]);
    c.query_drop("SELECT * FROM hotnews").await.unwrap();

    // So does the client's disconnect (the gateway unlocks before the connections are
    // pooled again).
    c.query_drop("LOCK TABLES company WRITE, travelrecord WRITE")
        .await
        .unwrap();
    // ... here in the middle of a transaction (no XA under table locks).
    c.query_drop("SET autocommit = 0").await.unwrap();
    fails(&mut c, "SET XA = ON", 3012, "HY000").await;
    c.query_drop("INSERT INTO company (id, name) VALUES (50, 'uncommitted')")
        .await
        .unwrap();
    drop(c);
    let mut freed = false;
    for _ in 0..50 {
        if all_writable(&f, "company").await == [true; 3] {
            freed = true;
            break;
        }
    }
    assert!(freed, "the locks of a client that left were not released");
    assert_eq!(all_writable(&f, "travelrecord").await, [true; 3]);
    for n in 1..=3 {
        assert_eq!(
            f.ids_on(n, "company").await,
            [1, 2, 4],
            "node {n}: rolled back"
        );
    }
    // Every pooled connection is free of locks: many clients write both tables.
    for i in 0..8 {
        let mut c = f.client().await;
        c.query_drop(format!(
            "INSERT INTO company (id, name) VALUES ({}, 'p')",
            100 + i
        ))
        .await
        .unwrap();
        c.query_drop("SELECT * FROM travelrecord").await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_tables_text_never_reaches_a_backend_as_written() {
    let f = Fixture::start(
        "lktext",
        Extra {
            users_xml: r#"<user name="masked"><property name="password">masked</property><property name="schemas">TESTDB</property>
        <privileges check="true">
            <schema name="TESTDB" dml="1111">
                <table name="hotnews" dml="0000" />
                <table name="company" dml="0010" />
            </schema>
        </privileges></user>"#
                .to_string(),
            ..Extra::default()
        },
    )
    .await;
    // `<privileges>` govern it as a read (READ) or an update (WRITE) of each table.
    let mut masked =
        mysql_async::Conn::new(common::opts(f.port, "masked", "masked", Some("TESTDB")))
            .await
            .unwrap();
    fails(
        &mut masked,
        "LOCK TABLES travelrecord READ, hotnews READ",
        3012,
        "HY000",
    )
    .await;
    fails(&mut masked, "LOCK TABLES company WRITE", 3012, "HY000").await;
    assert_eq!(all_writable(&f, "travelrecord").await, [true; 3]);
    masked
        .query_drop("LOCK TABLES company READ, travelrecord WRITE")
        .await
        .unwrap();
    assert_eq!(all_writable(&f, "travelrecord").await, [false; 3]);
    masked.query_drop("UNLOCK TABLES").await.unwrap();
    let mut c = f.client().await;
    // Outside the grammar, other databases, unknown tables.
    fails(&mut c, "LOCK TABLES travelrecord", 1064, "42000").await;
    fails(
        &mut c,
        "LOCK TABLES travelrecord READ, mysql.user READ",
        1049,
        "42000",
    )
    .await;
    fails(&mut c, "LOCK TABLES nosuch READ", 1146, "42S02").await;
    fails(&mut c, "LOCK INSTANCE FOR BACKUP", 1064, "42000").await;
    // A read-only user may not take a WRITE lock; a READ one is fine.
    let mut ro = mysql_async::Conn::new(common::opts(f.port, "user", "user", Some("TESTDB")))
        .await
        .unwrap();
    fails(&mut ro, "LOCK TABLES company WRITE", 1495, "HY000").await;
    run_all(&mut ro, &["LOCK TABLES company READ", "UNLOCK TABLES"]).await;
    // UNLOCK must be those two words (Mycat's rule): anything else is not UNLOCK TABLES.
    fails(&mut c, "UNLOCK TABLES company", 1064, "42000").await;
}

/// One sequence of statements, on a plain MariaDB database and through the gateway: the same
/// errors (code and SQLSTATE) and the same rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_tables_answers_as_mariadb_does() {
    let f = Fixture::start("lkdiff", Extra::default()).await;
    let plain_db = "t_lkdiff_plain";
    common::sample_database(plain_db).await;
    let sequence = [
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000001, 'b')",
        "LOCK TABLES travelrecord READ, company AS c WRITE, hotnews h READ",
        "SELECT id, user_id FROM travelrecord ORDER BY id",
        "SELECT * FROM goods",
        "INSERT INTO travelrecord (id, user_id) VALUES (2, 'x')",
        "UPDATE travelrecord SET user_id = 'y' WHERE id = 1",
        "INSERT INTO company (id, name) VALUES (1, 'x')",
        "INSERT INTO company AS c (id, name) VALUES (1, 'x')",
        "SELECT id, name FROM company AS c ORDER BY id",
        "SELECT id FROM hotnews",
        "SELECT id FROM hotnews AS h",
        "SELECT 1 + 1",
        "UNLOCK TABLES",
        "SELECT id FROM hotnews",
        "UNLOCK TABLES",
        "LOCK TABLES company WRITE",
        "DELETE FROM company WHERE id = 1",
        "SET autocommit = 0",
        "INSERT INTO company (id, name) VALUES (5, 'e')",
        "COMMIT",
        "SELECT id FROM travelrecord",
        "SET autocommit = 1",
        "UNLOCK TABLES",
        "SELECT id, name FROM company ORDER BY id",
        "SELECT id, user_id FROM travelrecord ORDER BY id",
        // mysqldump --no-autocommit's restore: LOCK TABLES with autocommit off and nothing
        // run yet, UNLOCK TABLES commits, autocommit restored from a user variable.
        "SET autocommit = 0",
        "SET @OLD_AUTOCOMMIT=@@AUTOCOMMIT, @@AUTOCOMMIT=0",
        "LOCK TABLES company WRITE",
        "INSERT INTO company (id, name) VALUES (6, 'f')",
        "UNLOCK TABLES",
        "ROLLBACK",
        "SELECT @OLD_AUTOCOMMIT",
        "SET AUTOCOMMIT=@OLD_AUTOCOMMIT",
        "SELECT @@autocommit",
        "SET autocommit = 1",
        "SET autocommit = @no_such_variable",
        "SELECT id, name FROM company ORDER BY id",
    ];
    let mut plain = primary(Some(plain_db)).await;
    let mut gw = f.client().await;
    for sql in sequence {
        let a: Result<Vec<mysql_async::Row>, _> = plain.query(sql).await;
        let b: Result<Vec<mysql_async::Row>, _> = gw.query(sql).await;
        match (a, b) {
            (Ok(a), Ok(b)) => {
                let show = |rows: Vec<mysql_async::Row>| -> Vec<Vec<Option<String>>> {
                    rows.into_iter().map(common::text_row).collect()
                };
                assert_eq!(show(a), show(b), "{sql}");
            }
            (Err(a), Err(b)) => {
                let (ca, sa, ma) = server_error(a);
                let (cb, sb, mb) = server_error(b);
                assert_eq!((ca, sa), (cb, sb), "{sql}: MariaDB {ma} / gateway {mb}");
            }
            (a, b) => panic!("{sql}: MariaDB {a:?} / gateway {b:?}"),
        }
    }
}

/// PostgreSQL dataNodes: `LOCK TABLE` there holds only until the end of a transaction, so
/// MySQL's session-long locks have no faithful translation: refused with 1235 naming the
/// construct, nothing locked on any node (the MySQL ones included), the session usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_tables_on_postgresql_data_nodes_is_refused_by_name() {
    use common::postgres::{pg_databases, pg_nodes_xml};
    let dbs = pg_databases("lkpg", 3).await;
    common::postgres::pg_each(
        &dbs,
        "CREATE TABLE orders (id int PRIMARY KEY, cust varchar(20))",
    )
    .await;
    let f = Fixture::start(
        "lkpg",
        Extra {
            schema_xml: format!(
                r#"<schema name="PGDB" checkSQLschema="false">
  <table name="orders" primaryKey="id" dataNode="pgdn1,pgdn2,pgdn3" rule="mod-long" />
  <table name="company" primaryKey="id" type="global" dataNode="dn1,dn2,dn3" />
</schema>
{}"#,
                pg_nodes_xml(&dbs)
            ),
            users_xml: r#"<user name="pg"><property name="password">pg</property><property name="schemas">PGDB</property></user>"#
                .to_string(),
            ..Extra::default()
        },
    )
    .await;
    let mut c = mysql_async::Conn::new(common::opts(f.port, "pg", "pg", Some("PGDB")))
        .await
        .unwrap();
    let m = fails(
        &mut c,
        "LOCK TABLES company WRITE, orders READ",
        1235,
        "42000",
    )
    .await;
    assert!(m.contains("LOCK TABLES") && m.contains("PostgreSQL"), "{m}");
    // Nothing was locked: the MySQL table's nodes are free, the session reads anything.
    assert_eq!(all_writable(&f, "company").await, [true; 3]);
    run_all(
        &mut c,
        &["SELECT * FROM orders", "LOCK TABLES company WRITE"],
    )
    .await;
    assert_eq!(all_writable(&f, "company").await, [false; 3]);
    c.query_drop("UNLOCK TABLES").await.unwrap();
    assert_eq!(all_writable(&f, "company").await, [true; 3]);
}

/// MariaDB's `WAIT n` / `NOWAIT` after the last item (mysql-test `timeout`) reaches every
/// dataNode's statement: a table another session holds locked is answered 1205 at once,
/// not after the session's `lock_wait_timeout`; free tables are locked as without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_tables_wait_and_nowait_reach_every_node() {
    let f = Fixture::start("lkwait", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("LOCK TABLES company WRITE, travelrecord READ WAIT 5")
        .await
        .unwrap();
    assert_eq!(all_writable(&f, "company").await, [false; 3]);
    assert_eq!(all_writable(&f, "travelrecord").await, [false; 3]);
    c.query_drop("UNLOCK TABLES").await.unwrap();
    c.query_drop("LOCK TABLE company WRITE NOWAIT")
        .await
        .unwrap();
    assert_eq!(all_writable(&f, "company").await, [false; 3]);
    c.query_drop("UNLOCK TABLES").await.unwrap();
    assert_eq!(all_writable(&f, "company").await, [true; 3]);

    // Another session holds company locked on the second node: NOWAIT and WAIT 0 give up.
    let mut other = primary(Some(&f.databases[1])).await;
    other.query_drop("LOCK TABLES company WRITE").await.unwrap();
    for sql in [
        "LOCK TABLES company READ NOWAIT",
        "LOCK TABLES company READ WAIT 0",
    ] {
        let started = std::time::Instant::now();
        fails(&mut c, sql, 1205, "HY000").await;
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{sql}"
        );
        c.query_drop("UNLOCK TABLES").await.unwrap();
    }
    other.query_drop("UNLOCK TABLES").await.unwrap();

    // Anything else after the items stays outside the grammar.
    for sql in [
        "LOCK TABLES company READ WAIT",
        "LOCK TABLES company READ WAIT 1.5",
        "LOCK TABLES company READ WAIT 1, travelrecord READ",
        "LOCK TABLES company READ NOWAIT NOWAIT",
    ] {
        fails(&mut c, sql, 1064, "42000").await;
    }
}
