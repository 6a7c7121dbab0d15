//! Regression tests for what a hunt for wrong results and crashes found: each case failed (a
//! crash, a leak, a wrong answer or a silent misplacement) before its fix.

mod common;

use common::{Extra, Fixture, GatewayProcess, opts, server_error};
use mysql_async::Row;
use mysql_async::prelude::Queryable;

async fn err(c: &mut mysql_async::Conn, sql: &str) -> (u16, String) {
    let (code, _, msg) = server_error(c.query_drop(sql).await.expect_err(sql));
    (code, msg)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_is_sent_byte_for_byte_when_statements_are_split_or_rewritten() {
    let f = Fixture::start("bytes", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop(r"INSERT INTO travelrecord (id, user_id, fee) VALUES (61, 'x\\y', 0x10), (5000061, 'C:\\new\\table', 1), (10000061, 'a\'b', 2)")
        .await
        .unwrap();
    let mut b = f.backend(2).await;
    let v: Option<String> = b
        .query_first("SELECT user_id FROM travelrecord WHERE id = 5000061")
        .await
        .unwrap();
    assert_eq!(v.as_deref(), Some(r"C:\new\table"));
    let mut b = f.backend(1).await;
    let v: Option<(String, String)> = b
        .query_first("SELECT user_id, fee FROM travelrecord WHERE id = 61")
        .await
        .unwrap();
    assert_eq!(v, Some((r"x\y".to_string(), "16.00".to_string())));
    // A multi-node LIMIT with an offset is rewritten in the text, escapes intact.
    let rows: Vec<String> = c
        .query(r"SELECT user_id FROM travelrecord WHERE user_id LIKE '%\\\\%' OR user_id = 'a\'b' LIMIT 1, 100")
        .await
        .unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    // LIMIT offset + count past u64 saturates (MySQL's 'all rows').
    let rows: Vec<i64> = c
        .query("SELECT id FROM travelrecord LIMIT 1, 18446744073709551615")
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    // DATABASE() answers the logical schema, not the node's database.
    let d: Option<String> = c.query_first("SELECT DATABASE() AS d").await.unwrap();
    assert_eq!(d.as_deref(), Some("TESTDB"));
    let d: Option<(i64, String)> = c
        .query_first("SELECT id, database() FROM travelrecord WHERE id = 61")
        .await
        .unwrap();
    assert_eq!(d, Some((61, "TESTDB".to_string())));
    // Integral decimals route like the integer MySQL stores.
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (103.0, 'dec'), (7, 'seven')")
        .await
        .unwrap();
    assert_eq!(f.ids_on(2, "hotnews").await, [7, 103]);
    let t: Option<String> = c
        .query_first("SELECT title FROM hotnews WHERE id = 7.0")
        .await
        .unwrap();
    assert_eq!(t.as_deref(), Some("seven"));
    c.query_drop("UPDATE hotnews SET title = 'x' WHERE id = 1e2 + 0 OR id = 103.00")
        .await
        .unwrap();
    assert_eq!(c.affected_rows(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_statements_and_backend_schemas_are_refused() {
    let f = Fixture::start("sec", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        .await
        .unwrap();
    let mut ro = mysql_async::Conn::new(opts(f.port, "user", "user", Some("TESTDB")))
        .await
        .unwrap();
    for sql in [
        "SHOW TABLES; DELETE FROM hotnews WHERE id = 1",
        "DESC hotnews ;DELETE FROM hotnews WHERE id = 2",
        "SHOW COLUMNS FROM hotnews LIKE 'id'; DELETE FROM hotnews",
        "SET @a = 1; DELETE FROM hotnews",
    ] {
        // The client set CLIENT_MULTI_STATEMENTS: each statement is routed and checked on its
        // own, so the read-only user's DELETE is refused after the first one's answer.
        let (code, msg) = err(&mut ro, sql).await;
        assert_eq!(code, 1495, "{sql}: {msg}");
    }
    let (code, _) = err(&mut ro, "USE TESTDB; DELETE FROM hotnews").await;
    assert_eq!(code, 1495);
    let mut left: Vec<i64> = c.query("SELECT id FROM hotnews").await.unwrap();
    left.sort();
    assert_eq!(left, [1, 2, 3]);
    let (code, msg) = err(&mut ro, "SELECT user, password FROM mysql.user").await;
    assert_eq!(code, 1044, "{msg}");
    // SHOW GRANTS answers the gateway user's own rights (server.xml), never the backend
    // account's.
    let grants: Vec<String> = ro.query("SHOW GRANTS").await.unwrap();
    assert!(
        grants
            .iter()
            .all(|g| g.contains("TO 'user'@'%'") && !g.contains("manx")),
        "{grants:?}"
    );
    let (code, _) = err(&mut ro, "SHOW PROCESSLIST").await;
    assert_eq!(code, 1227);
    let physical = format!("SELECT * FROM {}.travelrecord", f.databases[0]);
    let (code, msg) = err(&mut ro, &physical).await;
    assert_eq!(code, 1049, "{msg}");
    let (code, _) = err(
        &mut c,
        &format!("INSERT INTO {}.hotnews (id) VALUES (9)", f.databases[0]),
    )
    .await;
    assert_eq!(code, 1049);
    // Mycat annotations are honoured, but what they carry passes the same reachability checks,
    // and unknown or unsupported types are refused by name rather than ignored.
    let (code, msg) = err(&mut c, "/*#mycat:dataNode=dn1*/ SELECT * FROM mysql.user").await;
    assert_eq!(code, 1044, "{msg}");
    let (code, msg) = err(
        &mut c,
        &format!(
            "/*#mycat:dataNode=dn1*/ SELECT * FROM {}.travelrecord",
            f.databases[1]
        ),
    )
    .await;
    assert_eq!(code, 1049, "{msg}");
    let (code, msg) = err(
        &mut c,
        "/*#mycat:dataNode=dn1*/ SELECT LOAD_FILE('/etc/passwd')",
    )
    .await;
    assert_eq!(code, 1227, "{msg}");
    let (code, msg) = err(
        &mut c,
        "/*!mycat:catlet=io.mycat.catlets.ShareJoin*/ SELECT 1",
    )
    .await;
    assert_eq!(code, 1064);
    assert!(
        msg.contains("catlet") && msg.contains("not supported"),
        "{msg}"
    );
    let (code, msg) = err(&mut c, "/*!mycat:nosuch=1*/ SELECT 1").await;
    assert_eq!(code, 1064);
    assert!(
        msg.contains("unknown Mycat annotation type 'nosuch'"),
        "{msg}"
    );
    let n: Option<i64> = c
        .query_first("/*balance*/ SELECT COUNT(*) FROM hotnews WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(n, Some(1));
    // Small things that were wrong.
    let one: Option<i64> = c.query_first("SELECT 1 FROM DUAL").await.unwrap();
    assert_eq!(one, Some(1));
    let dbs: Vec<String> = c.query("SHOW DATABASES LIKE 'x%'").await.unwrap();
    assert!(dbs.is_empty());
    let create: Vec<(String, String)> = c.query("SHOW CREATE DATABASE TESTDB").await.unwrap();
    assert_eq!(create[0].0, "TESTDB");
    c.query_drop("/*!40101 SET NAMES utf8mb4 */").await.unwrap();
    c.query_drop("/*!40000 DELETE FROM hotnews WHERE id = 3 */")
        .await
        .unwrap();
    assert_eq!(c.affected_rows(), 1, "a version comment's statement runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_would_need_a_cross_node_merge_are_refused() {
    let f = Fixture::start("merge", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop(
        "INSERT INTO travelrecord (id, user_id, days) VALUES (1, 'a', 1), (5000001, 'b', 2)",
    )
    .await
    .unwrap();
    c.query_drop("INSERT INTO company (id, name) VALUES (1, 'acme'), (2, 'initech')")
        .await
        .unwrap();
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (1, 'a'), (2, 'b')")
        .await
        .unwrap();
    for (sql, text) in [
        (
            "SELECT * FROM company c LEFT JOIN travelrecord t ON t.id = c.id",
            "outer join with a global table",
        ),
        (
            "SELECT * FROM company c WHERE NOT EXISTS (SELECT 1 FROM travelrecord t WHERE t.id = c.id)",
            "TRAVELRECORD inside a subquery",
        ),
        (
            "SELECT * FROM (SELECT COUNT(*) c FROM travelrecord) t",
            "TRAVELRECORD inside a subquery",
        ),
        (
            "SELECT (SELECT id FROM travelrecord ORDER BY id LIMIT 1) AS c",
            "TRAVELRECORD",
        ),
        (
            "UPDATE travelrecord SET days = 12 WHERE id IN (SELECT id FROM hotnews)",
            "subquery on table HOTNEWS",
        ),
        (
            "DELETE FROM company WHERE id NOT IN (SELECT id FROM travelrecord)",
            "global table COMPANY",
        ),
        (
            "UPDATE company SET name = (SELECT MAX(user_id) FROM travelrecord) WHERE id = 1",
            "global table COMPANY",
        ),
        (
            "INSERT INTO goods (id, name) SELECT id, user_id FROM travelrecord",
            "INSERT ... SELECT into GOODS reading table TRAVELRECORD is not supported",
        ),
        (
            "INSERT INTO travelrecord (id, user_id) VALUES (42, (SELECT MAX(title) FROM hotnews))",
            "reading table HOTNEWS is not supported: a subquery in VALUES",
        ),
        (
            "INSERT INTO company (id, name) VALUES (30, UUID())",
            "UUID in a write to global table COMPANY",
        ),
        (
            "UPDATE goods SET price = ROUND(RAND() * 100, 2) WHERE id = 1",
            "RAND in a write to global table GOODS",
        ),
        (
            "UPDATE travelrecord SET days = 4 LIMIT 1",
            "LIMIT on table TRAVELRECORD over several dataNodes",
        ),
        (
            "DELETE FROM company LIMIT 1",
            "LIMIT on global table COMPANY",
        ),
        (
            "UPDATE travelrecord t JOIN employee e ON e.id = t.days SET e.sharding_id = 10010 WHERE t.id = 1",
            "Sharding column can't be updated EMPLOYEE->SHARDING_ID",
        ),
    ] {
        let (code, msg) = err(&mut c, sql).await;
        assert_eq!(code, 1064, "{sql}: {msg}");
        assert!(msg.contains(text), "{sql}: {msg}");
    }
    // Still fine: an inner join with a global table, and single-node statements.
    let rows: Vec<(String, String)> = c
        .query("SELECT t.user_id, c.name FROM travelrecord t JOIN company c ON c.id = t.days")
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    c.query_drop("UPDATE travelrecord SET days = 4 WHERE id = 1 LIMIT 1")
        .await
        .unwrap();
    assert_eq!(c.affected_rows(), 1);
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM company WHERE id IN (SELECT id FROM company)")
        .await
        .unwrap();
    assert_eq!(n, Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_node_writes_are_all_or_nothing() {
    let f = Fixture::start("atomic", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (1, 'first')")
        .await
        .unwrap();
    // Outside a transaction: the duplicate on dn1 undoes the dn2 row too.
    let (code, _) = err(
        &mut c,
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'dupe'), (5000032, 'partial')",
    )
    .await;
    assert_eq!(code, 1062);
    assert!(
        f.ids_on(2, "travelrecord").await.is_empty(),
        "the other node's row was rolled back"
    );
    // Inside a transaction: once a node applied a write that another refused, the transaction
    // can only be rolled back (nodes run in dataNode order: dn1 applies 812, dn2 refuses).
    c.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (5000001, 'first')")
        .await
        .unwrap();
    c.query_drop("BEGIN").await.unwrap();
    let (code, _) = err(
        &mut c,
        "INSERT INTO travelrecord (id, user_id) VALUES (812, 'x'), (5000001, 'dup')",
    )
    .await;
    assert_eq!(code, 1062);
    let (code, msg) = err(&mut c, "SELECT * FROM travelrecord").await;
    assert_eq!(code, 1003, "{msg}");
    let (code, msg) = err(&mut c, "COMMIT").await;
    assert_eq!(code, 1003, "{msg}");
    assert!(msg.contains("rolled back"), "{msg}");
    assert_eq!(f.ids_on(1, "travelrecord").await, [1]);
    assert_eq!(f.ids_on(2, "travelrecord").await, [5_000_001]);
    // The session works again.
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM travelrecord WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(n, Some(1));
    // DDL commits an open transaction, as MySQL does.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (10000820, 'a'), (820, 'b')")
        .await
        .unwrap();
    c.query_drop("CREATE INDEX hunt_idx ON employee (name)")
        .await
        .unwrap();
    c.query_drop("ROLLBACK").await.unwrap();
    assert_eq!(f.ids_on(1, "travelrecord").await, [1, 820]);
    assert_eq!(f.ids_on(3, "travelrecord").await, [10_000_820]);
    // Transaction statements with comments and optional words.
    c.query_drop("BEGIN /* x */").await.unwrap();
    c.query_drop("INSERT INTO travelrecord (id) VALUES (821)")
        .await
        .unwrap();
    c.query_drop("ROLLBACK AND NO CHAIN -- undo").await.unwrap();
    c.query_drop("START TRANSACTION").await.unwrap();
    c.query_drop("INSERT INTO travelrecord (id) VALUES (822)")
        .await
        .unwrap();
    c.query_drop("COMMIT /* done */").await.unwrap();
    assert_eq!(f.ids_on(1, "travelrecord").await, [1, 820, 822]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_leaks_between_clients_through_pooled_connections() {
    let f = Fixture::start("leak", Extra::default()).await;
    for i in 0..10 {
        let mut a = f.client().await;
        let _: Vec<Row> = a
            .query(format!(
                "SELECT @secret := 'alice-{i}', GET_LOCK('manx_leak_lock', 0)"
            ))
            .await
            .unwrap();
        a.disconnect().await.unwrap();
        let mut b = f.client().await;
        let seen: Option<Option<String>> = b.query_first("SELECT @secret").await.unwrap();
        assert_eq!(
            seen,
            Some(None),
            "round {i}: another client's user variable is visible"
        );
        // The gateway ends a's session (and resets the connection that holds the lock) after
        // its COM_QUIT, concurrently with b's statements: the lock goes within moments, never
        // stays with a pooled connection.
        let mut free = None;
        for _ in 0..50 {
            free = b
                .query_first("SELECT IS_FREE_LOCK('manx_leak_lock')")
                .await
                .unwrap();
            if free == Some(1) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(
            free,
            Some(1),
            "round {i}: a departed client's GET_LOCK is still held 5 s later"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_with_different_columns_give_an_error_not_a_dropped_connection() {
    let f = Fixture::start("drift", Extra::default()).await;
    let mut b = f.backend(3).await;
    b.query_drop("ALTER TABLE goods ADD COLUMN drift INT")
        .await
        .unwrap();
    let mut c = f.client().await;
    c.query_drop("INSERT INTO travelrecord (id, days) VALUES (1, 1), (10000001, 1)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO goods (id, name) VALUES (1, 'g')")
        .await
        .unwrap();
    let (code, msg) = err(
        &mut c,
        "SELECT * FROM goods g JOIN travelrecord t ON t.days = g.id WHERE t.id IN (1, 10000001)",
    )
    .await;
    assert_eq!(code, 1105, "{msg}");
    let one: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
}

/// A very long OR chain: within the limit it routes correctly; past it, a clear error; the
/// gateway process (16 MiB worker stacks) survives both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_condition_chains_neither_crash_nor_misroute() {
    let f = Fixture::start("chain", Extra::default()).await;
    let (mut gateway, mut c) =
        GatewayProcess::start(f.dir.path(), "root", "123456", "TESTDB").await;
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (3, 'a'), (6, 'b'), (7, 'c')")
        .await
        .unwrap();
    // 1,900 operators: `id = 3 OR id = 6 OR ...` all on dn1 (multiples of 3).
    let chain: Vec<String> = (1..=950).map(|i| format!("id = {}", i * 3)).collect();
    let sql = format!("SELECT id FROM hotnews WHERE {}", chain.join(" OR "));
    let mut ids: Vec<i64> = c.query(&sql).await.unwrap();
    ids.sort();
    assert_eq!(ids, [3, 6]);
    let chain: Vec<String> = (1..=6000).map(|i| format!("id = {i}")).collect();
    let sql = format!("SELECT id FROM hotnews WHERE {}", chain.join(" OR "));
    let (code, _, msg) = server_error(c.query_drop(&sql).await.unwrap_err());
    assert_eq!(code, 1064);
    assert!(msg.contains("statement too complex"), "{msg}");
    // Word operators chain as deep as symbols do.
    let sql = format!("select 1 from company where 1{}", " DIV 1".repeat(5000));
    let (code, _, msg) = server_error(c.query_drop(&sql).await.unwrap_err());
    assert!(
        code == 1064 && msg.contains("statement too complex"),
        "{msg}"
    );
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM hotnews WHERE id = 7")
        .await
        .unwrap();
    assert_eq!(n, Some(1));
    assert!(gateway.alive(), "the gateway process died");
}

/// Deeply nested function calls, parentheses and subqueries, in every clause of a sharded
/// table's statements and up to past the parser's limit: each gets an answer (MariaDB's, or the
/// gateway's 1436), and the gateway process (16 MiB worker stacks) survives every one. (300
/// nested `IF(1, .., 0)` over a sharded table aborted the process: one level of a function
/// call in the parser took more than the stack it kept free.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_calls_never_crash_the_gateway() {
    let f = Fixture::start("deepcall", Extra::default()).await;
    let (mut gateway, mut c) =
        GatewayProcess::start(f.dir.path(), "root", "123456", "TESTDB").await;
    let nest = |open: &str, inner: &str, close: &str, n: usize| {
        format!("{}{inner}{}", open.repeat(n), close.repeat(n))
    };
    for n in [300, 700, 1600] {
        let shapes = [
            format!(
                "SELECT * FROM travelrecord WHERE id = {}",
                nest("IF(1, ", "1", ", 0)", n)
            ),
            format!(
                "SELECT * FROM travelrecord WHERE id = {}",
                nest("ABS(", "1", ")", n)
            ),
            format!("SELECT {} FROM travelrecord", nest("ABS(", "id", ")", n)),
            format!(
                "SELECT id FROM travelrecord ORDER BY {}",
                nest("ABS(", "id", ")", n)
            ),
            format!(
                "SELECT {} FROM travelrecord",
                nest("JSON_ARRAY(1, ", "id", ")", n)
            ),
            format!(
                "SELECT {} FROM company",
                nest("CONCAT('a', ", "name", ")", n)
            ),
            format!(
                "INSERT INTO travelrecord (id, days) VALUES (77, {})",
                nest("ABS(", "1", ")", n)
            ),
            format!(
                "UPDATE travelrecord SET days = {} WHERE id = 77",
                nest("IF(1, ", "1", ", 0)", n)
            ),
            format!("SELECT {}", nest("(SELECT ", "1", ")", n / 5)),
        ];
        for sql in &shapes {
            // An answer of any kind: a result or an error, never a lost connection.
            if let Err(e) = c.query_drop(sql).await {
                assert!(
                    matches!(e, mysql_async::Error::Server(_)),
                    "{n} deep: {}: {e}",
                    &sql[..60]
                );
            }
            assert!(
                gateway.alive(),
                "{n} deep: {} killed the gateway",
                &sql[..60]
            );
        }
    }
    // Past the parser's limit: 1436.
    let sql = format!("SELECT {} FROM travelrecord", nest("ABS(", "id", ")", 1600));
    let (code, _, msg) = server_error(c.query_drop(&sql).await.unwrap_err());
    assert_eq!(code, 1436, "{msg}");
    let one: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
}

/// The second hunt: bypasses of the first round's fixes and new cases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_hunt_bypasses_are_closed() {
    let f = Fixture::start("hunt2", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (3, 'a'), (4, 'b'), (5, 'c')")
        .await
        .unwrap();
    c.query_drop(
        "INSERT INTO travelrecord (id, user_id, days) VALUES (1, 'a', 1), (5000002, 'b', 5000002)",
    )
    .await
    .unwrap();
    c.query_drop("INSERT INTO company (id, name) VALUES (1, 'acme'), (2, 'initech')")
        .await
        .unwrap();
    let mut ro = mysql_async::Conn::new(opts(f.port, "user", "user", Some("TESTDB")))
        .await
        .unwrap();
    for (sql, code, text) in [
        (
            "select 1 /*M!100000 , (select count(*) from mysql.user) */",
            1235,
            "MariaDB executable comments",
        ),
        ("SHOW BINLOG EVENTS", 1227, "SHOW BINLOG EVENTS"),
        ("SHOW CREATE USER manx", 1227, "SHOW CREATE USER"),
        ("SHOW TABLE STATUS FROM mysql", 1227, "SHOW TABLE STATUS"),
        (
            "show status where (select 1 from dual) = 1",
            1227,
            "SHOW status",
        ),
        (
            "select load_file('/etc/hostname')",
            1227,
            "function load_file",
        ),
        (
            "select sys.sys_get_config('x', 'y')",
            1227,
            "function sys.sys_get_config",
        ),
        (
            // The parser does not read INTO after FROM; the gateway's own refusal answers.
            "select * from company into outfile '/tmp/manx_hunt'",
            1227,
            "SELECT ... INTO",
        ),
        (
            "select * from information_schema.processlist",
            1044,
            "PROCESSLIST",
        ),
        (
            "select * from information_schema.user_privileges",
            1044,
            "USER_PRIVILEGES",
        ),
        (
            "/*mycat:dataNode=dn9*/ select * from travelrecord",
            1064,
            "can't find hint datanode:dn9",
        ),
        ("EXPLAIN EXPLAIN select 1", 1064, "EXPLAIN of EXPLAIN"),
    ] {
        let (got, msg) = err(&mut ro, sql).await;
        assert_eq!(got, code, "{sql}: {msg}");
        assert!(msg.contains(text), "{sql}: {msg}");
    }
    for (sql, text) in [
        (
            "select * from hotnews where exists (with hotnews as (select 1) select 1 from hotnews)",
            "named like a WITH query",
        ),
        (
            "select c.id, t.id from (company c left join travelrecord t on t.id = c.id)",
            "outer join",
        ),
        (
            "select d.k from (select 1 as k union all select 5000001) d left join travelrecord t on t.id = d.k",
            "outer join",
        ),
        (
            "select id, row_number() over () from travelrecord",
            "window functions",
        ),
        (
            "update travelrecord set days = 2, id = days where id = days",
            "Sharding column can't be updated",
        ),
        (
            "delete from travelrecord where id in (1, 5000002) returning id",
            "RETURNING",
        ),
        (
            "insert into company (id, name) values (82, @@timestamp)",
            "@@TIMESTAMP in a write",
        ),
        (
            "insert into company (id, name) values (83, sys_guid())",
            "SYS_GUID in a write",
        ),
    ] {
        let (code, msg) = err(&mut c, sql).await;
        assert_eq!(code, 1064, "{sql}: {msg}");
        assert!(msg.contains(text), "{sql}: {msg}");
    }
    // A quoted function name is refused before any other check: MariaDB may read `rand`() as a
    // stored function of the database.
    let (code, msg) = err(
        &mut c,
        "insert into company (id, name) values (81, `rand`())",
    )
    .await;
    assert_eq!(code, 1235, "{msg}");
    assert!(msg.contains("unquoted"), "{msg}");
    // A sharded table on the preserved side of a LEFT JOIN is fine.
    let rows: Vec<(i64, Option<String>)> = c
        .query("select t.id, c.name from travelrecord t left join company c on c.id = t.days")
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    // Strings MySQL reads as numbers are looked for everywhere.
    let t: Option<String> = c
        .query_first("select title from hotnews where id = '4.0'")
        .await
        .unwrap();
    assert_eq!(t.as_deref(), Some("b"));
    // SHOW ... LIKE with many wildcards answers at once.
    let tables: Vec<String> = c
        .query("show tables like '%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%zz'")
        .await
        .unwrap();
    assert!(tables.is_empty());
    // A write that failed before any node applied it leaves the transaction usable.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("INSERT INTO travelrecord (id) VALUES (13)")
        .await
        .unwrap();
    let (code, _) = err(&mut c, "INSERT INTO company (id, name) VALUES (1, 'dup')").await;
    assert_eq!(code, 1062);
    c.query_drop("COMMIT/*done*/").await.unwrap();
    assert!(f.ids_on(1, "travelrecord").await.contains(&13));
    // Writes to every copy of a global table from several clients at once do not deadlock.
    let mut tasks = Vec::new();
    for k in 0..4 {
        let mut cc = f.client().await;
        tasks.push(tokio::spawn(async move {
            for i in 0..10 {
                cc.query_drop(format!("UPDATE company SET name = 'c{k}-{i}' WHERE id = 1"))
                    .await
                    .unwrap();
            }
        }));
    }
    let started = std::time::Instant::now();
    for t in tasks {
        t.await.unwrap();
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "global writes stalled"
    );
    // More than 250 columns: the column count is length-encoded; metadata still patched.
    let cols: Vec<String> = (0..260).map(|i| format!("{i} AS c{i}")).collect();
    let sql = format!(
        "SELECT x'FF00' AS b, {} FROM company WHERE id = 1",
        cols.join(", ")
    );
    let r = c.query_iter(sql).await.unwrap();
    assert_eq!(r.columns_ref()[0].character_set(), 63);
    r.drop_result().await.unwrap();
}

/// COM_RESET_CONNECTION really resets the session; COM_CHANGE_USER, which opensrv would answer
/// OK without checking anything, closes the connection instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_connection_resets_and_change_user_is_refused() {
    let f = Fixture::start("reset", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (1, 'uncommitted')")
        .await
        .unwrap();
    assert!(c.reset().await.unwrap(), "COM_RESET_CONNECTION is sent");
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (2, 'after')")
        .await
        .unwrap();
    c.query_drop("COMMIT").await.unwrap();
    assert!(
        f.ids_on(2, "hotnews").await.is_empty(),
        "the reset rolled the transaction back"
    );
    assert_eq!(f.ids_on(3, "hotnews").await, [2]);
    let opts = mysql_async::ChangeUserOpts::default()
        .with_user(Some("user".to_string()))
        .with_pass(Some("wrong".to_string()));
    assert!(
        c.change_user(opts).await.is_err(),
        "change user must not succeed"
    );
    // Other clients are unaffected.
    let mut d = f.client().await;
    let t: Option<String> = d
        .query_first("SELECT title FROM hotnews WHERE id = 2")
        .await
        .unwrap();
    assert_eq!(t.as_deref(), Some("after"));
}
