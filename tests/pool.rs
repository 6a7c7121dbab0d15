//! Backend connections go back to their pool clean after the statements the gateway sends most,
//! so the next checkout needs no `COM_RESET_CONNECTION` round trip, and a checkout for a dataNode
//! takes a connection already on its database, so it needs no `USE` round trip. Counted on a
//! throwaway MariaDB server of the test's own (`Com_admin_commands` and `Com_change_db` are
//! server-wide: the shared sandbox's counters move with other tests).

mod common;

use common::mariadb::Throwaway;
use common::{opts, start_gateway};
use mysql_async::prelude::Queryable;

/// Schema `PL` with `t` sharded by `mod-long` on `id` over three databases of `server`, their
/// dataHost's pool `max_con` connections at most.
fn config(server: &Throwaway, max_con: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_rule_files(dir.path());
    std::fs::write(
        dir.path().join("schema.xml"),
        format!(
            r#"<?xml version="1.0"?>
<mycat:schema xmlns:mycat="http://io.mycat/">
    <schema name="PL"><table name="t" dataNode="dn$1-3" rule="mod-long" /></schema>
    <dataNode name="dn$1-3" dataHost="h" database="pl$1-3" />
    <dataHost name="h" maxCon="{max_con}" minCon="0" balance="0" dbType="mysql" dbDriver="native">
        <heartbeat>select 1</heartbeat>
        <writeHost host="m" url="127.0.0.1:{}" user="manx" password="manx" />
    </dataHost>
</mycat:schema>"#,
            server.port
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("server.xml"),
        r#"<?xml version="1.0"?>
<mycat:server xmlns:mycat="http://io.mycat/">
    <user name="pl"><property name="password">pl</property><property name="schemas">PL</property></user>
</mycat:server>"#,
    )
    .unwrap();
    dir
}

async fn status(server: &Throwaway, counter: &str) -> u64 {
    let mut c = server.conn(None).await;
    let row: Option<(String, u64)> = c
        .query_first(format!("SHOW GLOBAL STATUS LIKE '{counter}'"))
        .await
        .unwrap();
    row.unwrap().1
}

async fn resets(server: &Throwaway) -> u64 {
    status(server, "Com_admin_commands").await
}

/// Creates `pl1..pl3` with table `t` on `server`, starts a gateway on [`config`] (10
/// connections) and connects to it as `pl`: the config directory, the gateway's port and the
/// connection.
async fn gateway(server: &Throwaway) -> (tempfile::TempDir, u16, mysql_async::Conn) {
    gateway_with_pool(server, 10).await
}

async fn gateway_with_pool(
    server: &Throwaway,
    max_con: usize,
) -> (tempfile::TempDir, u16, mysql_async::Conn) {
    let mut admin = server.conn(None).await;
    for i in 1..=3 {
        admin
            .query_drop(format!(
                "CREATE DATABASE pl{i}; CREATE TABLE pl{i}.t (id INT PRIMARY KEY, v VARCHAR(10))"
            ))
            .await
            .unwrap();
    }
    drop(admin);
    let dir = config(server, max_con);
    let port = start_gateway(dir.path()).await;
    let c = mysql_async::Conn::new(opts(port, "pl", "pl", Some("PL")))
        .await
        .unwrap();
    (dir, port, c)
}

/// Inserts rows 1, 2, 3 with `v` 'a', 'b', 'c' (one statement each: a statement takes all its
/// dataNodes' connections at once, and some tests give the pool a single one).
async fn insert_rows(c: &mut mysql_async::Conn) {
    for (id, v) in [(1, "a"), (2, "b"), (3, "c")] {
        c.query_drop(format!("INSERT INTO t (id, v) VALUES ({id}, '{v}')"))
            .await
            .unwrap();
    }
}

/// Reads `v` of each id (rows 1, 2, 3 hold 'a', 'b', 'c') and checks it.
async fn read_each(c: &mut mysql_async::Conn, ids: &[usize]) {
    for &id in ids {
        let v: Option<String> = c
            .query_first(format!("SELECT v FROM t WHERE id = {id}"))
            .await
            .unwrap();
        assert_eq!(v.as_deref(), Some(["a", "b", "c"][id - 1]), "id {id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merged_order_by_limit_leaves_its_connections_clean() {
    let server = Throwaway::start("pool", 1).await;
    let (_dir, _, mut c) = gateway(&server).await;
    let values: Vec<String> = (1..=90).map(|id| format!("({id}, 'v{id}')")).collect();
    c.query_drop(format!(
        "INSERT INTO t (id, v) VALUES {}",
        values.join(", ")
    ))
    .await
    .unwrap();
    // Warm: every node's connection has served a merged read once (the INSERT's connections
    // are reset after it, as any write's are).
    let _: Vec<i64> = c
        .query("SELECT id FROM t ORDER BY v DESC LIMIT 10")
        .await
        .unwrap();
    let before = resets(&server).await;
    for _ in 0..20 {
        // Each node returns 10 rows and the merge needs 10 in all: the nodes' results are cut,
        // and the string key is compared by WEIGHT_STRING(RTRIM(v)).
        let ids: Vec<i64> = c
            .query("SELECT id FROM t ORDER BY v DESC LIMIT 10")
            .await
            .unwrap();
        assert_eq!(ids, [90, 9, 89, 88, 87, 86, 85, 84, 83, 82]);
    }
    let after = resets(&server).await;
    // The counter also counts this test's own admin connection's commands (none) — a reset
    // per node statement would add 40 or more.
    assert!(
        after - before <= 1,
        "{} COM_RESET_CONNECTIONs for 20 merged reads",
        after - before
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_takes_a_connection_already_on_its_data_nodes_database() {
    // The three dataNodes share one dataHost, hence one pool: without the per-database idle
    // lists, a connection that last served pl1 is handed to a statement for pl2 about two times
    // in three, and each such checkout costs a `USE` round trip.
    let server = Throwaway::start("pool-db", 1).await;
    let (_dir, _, mut c) = gateway(&server).await;
    insert_rows(&mut c).await;
    // Warm: every database has had a connection (a merged read takes three at once).
    let _: Vec<i64> = c.query("SELECT id FROM t ORDER BY id").await.unwrap();
    let before = status(&server, "Com_change_db").await;
    for _ in 0..10 {
        read_each(&mut c, &[1, 2, 3, 3, 1, 2]).await;
        let ids: Vec<i64> = c.query("SELECT id FROM t ORDER BY id").await.unwrap();
        assert_eq!(ids, [1, 2, 3]);
    }
    let uses = status(&server, "Com_change_db").await - before;
    assert_eq!(
        uses, 0,
        "{uses} USE statements for 60 point reads and 10 merged reads"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_on_another_database_is_repointed_in_the_statements_own_packet() {
    // One connection for the three dataNodes: every statement for another node than the last
    // needs `USE`. It travels in front of the statement (one COM_QUERY, as Mycat's preamble),
    // which the server's general log shows: it logs a packet's whole text as one entry.
    let server = Throwaway::start("pool-use", 1).await;
    let (_dir, _, mut c) = gateway_with_pool(&server, 1).await;
    insert_rows(&mut c).await;
    let mut admin = server.conn(None).await;
    admin
        .query_drop("SET GLOBAL log_output = 'TABLE'; TRUNCATE mysql.general_log; SET GLOBAL general_log = 1")
        .await
        .unwrap();
    // Each id twice in a row: the second statement finds the connection on its database.
    for _ in 0..5 {
        read_each(&mut c, &[1, 1, 2, 2, 3, 3]).await;
    }
    admin
        .query_drop("SET GLOBAL general_log = 0")
        .await
        .unwrap();
    let sent: Vec<String> = admin
        .query(
            "SELECT CONVERT(argument USING utf8mb4) FROM mysql.general_log \
             WHERE command_type = 'Query' AND argument LIKE '%FROM t WHERE id%'",
        )
        .await
        .unwrap();
    let alone: Vec<String> = admin
        .query(
            "SELECT CONVERT(argument USING utf8mb4) FROM mysql.general_log \
             WHERE command_type IN ('Query', 'Init DB') AND argument LIKE 'USE%' AND argument NOT LIKE '%;%'",
        )
        .await
        .unwrap();
    assert_eq!(sent.len(), 30, "{sent:#?}");
    assert!(alone.is_empty(), "USE sent on its own: {alone:#?}");
    // Every second statement changes database: USE goes with exactly those.
    let repointed: Vec<bool> = sent.iter().map(|q| q.starts_with("USE `pl")).collect();
    let expected: Vec<bool> = (0..30).map(|i| i % 2 == 0).collect();
    assert_eq!(repointed, expected, "{sent:#?}");

    // A statement that fails after its USE ran leaves the connection on the new database, and
    // the pool knows it: the next statement for the old one is re-pointed (ids 1, 2, 3 are on
    // pl2, pl3, pl1; were the connection still filed under pl2, id 1 would be looked up in pl1
    // and not found).
    let v: Option<String> = c.query_first("SELECT v FROM t WHERE id = 1").await.unwrap();
    assert_eq!(v.as_deref(), Some("a"));
    let e = c
        .query_first::<String, _>("SELECT nosuch FROM t WHERE id = 3")
        .await
        .unwrap_err();
    match e {
        mysql_async::Error::Server(e) => assert_eq!(e.code, 1054, "{}", e.message),
        other => panic!("{other}"),
    }
    let v: Option<String> = c.query_first("SELECT v FROM t WHERE id = 1").await.unwrap();
    assert_eq!(v.as_deref(), Some("a"));
    // In a transaction: USE, START TRANSACTION and the statement in one packet; the write is
    // rolled back, the connection stays usable.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE t SET v = 'x' WHERE id = 2")
        .await
        .unwrap();
    let v: Option<String> = c.query_first("SELECT v FROM t WHERE id = 2").await.unwrap();
    assert_eq!(v.as_deref(), Some("x"));
    c.query_drop("ROLLBACK").await.unwrap();
    read_each(&mut c, &[1, 2, 3]).await;

    // A dataNode whose database is gone (mod-long puts id 2 on dn3, database pl3): its
    // statement fails with the server's error; the connection, on pl2 then, still serves the
    // other dataNodes.
    let v: Option<String> = c.query_first("SELECT v FROM t WHERE id = 1").await.unwrap();
    assert_eq!(v.as_deref(), Some("a"));
    admin.query_drop("DROP DATABASE pl3").await.unwrap();
    let e = c
        .query_first::<String, _>("SELECT v FROM t WHERE id = 2")
        .await
        .unwrap_err();
    match e {
        mysql_async::Error::Server(e) => assert_eq!(e.code, 1049, "{}", e.message),
        other => panic!("{other}"),
    }
    read_each(&mut c, &[1, 3, 1]).await;
}

/// `BEGIN`, a point read on each of the three dataNodes, `COMMIT`: the values read.
async fn read_tx(c: &mut mysql_async::Conn) -> Vec<String> {
    c.query_drop("BEGIN").await.unwrap();
    let mut seen = Vec::new();
    for id in [1, 2, 3] {
        let v: Option<String> = c
            .query_first(format!("SELECT v FROM t WHERE id = {id}"))
            .await
            .unwrap();
        seen.push(v.unwrap());
    }
    c.query_drop("COMMIT").await.unwrap();
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_transactions_leave_their_connections_clean() {
    // START TRANSACTION and COMMIT leave nothing on a connection once the transaction ended:
    // a transaction of plain SELECTs needs no COM_RESET_CONNECTION before or after it. One that
    // left state (a GET_LOCK) stays with the session, and is reset at once when the client
    // resets.
    let server = Throwaway::start("pool-tx", 1).await;
    let (_dir, _, mut c) = gateway(&server).await;
    insert_rows(&mut c).await;
    // Warm: the INSERT's connections (a write) are reset once.
    read_tx(&mut c).await;
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let before = resets(&server).await;
    for _ in 0..10 {
        assert_eq!(read_tx(&mut c).await, ["a", "b", "c"]);
    }
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let after = resets(&server).await;
    assert!(
        after - before <= 1,
        "{} COM_RESET_CONNECTIONs for 10 read-only transactions over three dataNodes",
        after - before
    );

    c.query_drop("BEGIN").await.unwrap();
    let got: Option<i64> = c
        .query_first("SELECT GET_LOCK('manx_tx_lock', 0) FROM t WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(got, Some(1));
    c.query_drop("COMMIT").await.unwrap();
    let mut direct = server.conn(None).await;
    // A named lock outlives the transaction, as on MySQL (the session keeps the connection
    // that holds it: session affinity), until the client's COM_RESET_CONNECTION.
    let held: Option<i64> = direct
        .query_first("SELECT IS_FREE_LOCK('manx_tx_lock')")
        .await
        .unwrap();
    assert_eq!(
        held,
        Some(0),
        "the session's GET_LOCK ended with its transaction"
    );
    c.reset().await.unwrap();
    let mut free = None;
    for _ in 0..50 {
        free = direct
            .query_first("SELECT IS_FREE_LOCK('manx_tx_lock')")
            .await
            .unwrap();
        if free == Some(1) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        free,
        Some(1),
        "the session's GET_LOCK outlived COM_RESET_CONNECTION"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_connection_shows_nothing_its_last_holder_left() {
    // A connection that only served plain SELECTs goes to the next client without a reset; a
    // statement that could read what they left gets one first (outside a transaction: inside,
    // it would roll the transaction back). FOUND_ROWS() survives even a reset on MariaDB, so a
    // statement that names it is preceded by an empty SELECT in its own packet, in or out of
    // a transaction, after SET NAMES or not.
    let server = Throwaway::start("pool-found", 1).await;
    let (_dir, port, mut a) = gateway(&server).await;
    let values: Vec<String> = (1..=30).map(|id| format!("({id}, 'v{id}')")).collect();
    a.query_drop(format!(
        "INSERT INTO t (id, v) VALUES {}",
        values.join(", ")
    ))
    .await
    .unwrap();
    for round in 0..4 {
        for (names, transaction) in [(false, false), (false, true), (true, false), (true, true)] {
            // Ten rows on each node: each node's connection last found 10 rows.
            let all: Vec<String> = a.query("SELECT v FROM t").await.unwrap();
            assert_eq!(all.len(), 30);
            let case = format!("round {round}, SET NAMES {names}, transaction {transaction}");
            let mut b = mysql_async::Conn::new(opts(port, "pl", "pl", Some("PL")))
                .await
                .unwrap();
            if names {
                b.query_drop("SET NAMES utf8mb4").await.unwrap();
            }
            if transaction {
                b.query_drop("BEGIN").await.unwrap();
            }
            let (found, count): (i64, i64) = b
                .query_first("SELECT FOUND_ROWS(), ROW_COUNT() FROM t WHERE id = 1")
                .await
                .unwrap()
                .unwrap();
            // Client a's SELECT found 10 rows on each node; a new or cleared connection says 0
            // or 1 (mysql_async's own connect query).
            assert!(
                matches!(found, 0 | 1),
                "{case}: FOUND_ROWS() {found} is another client's"
            );
            // ROW_COUNT() is the session's, as on one MariaDB: 0 after SET NAMES or BEGIN,
            // -1 after the client's connect-time SELECT (never the pooled connection's).
            let want = if names || transaction { 0 } else { -1 };
            assert_eq!(count, want, "{case}");
            if transaction {
                b.query_drop("UPDATE t SET v = 'w' WHERE id = 1")
                    .await
                    .unwrap();
                b.query_drop("ROLLBACK").await.unwrap();
                let v: Option<String> =
                    b.query_first("SELECT v FROM t WHERE id = 1").await.unwrap();
                assert_eq!(v.as_deref(), Some("v1"), "{case}: the rollback lost");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_count_after_begin_is_what_mariadb_says() {
    // START TRANSACTION sets ROW_COUNT() to 0; nothing the gateway puts in front of the first
    // statement may change that when the statement does not name FOUND_ROWS().
    let server = Throwaway::start("pool-rowcount", 1).await;
    let (_dir, port, mut a) = gateway(&server).await;
    insert_rows(&mut a).await;
    for round in 0..5 {
        let _: Vec<String> = a.query("SELECT v FROM t WHERE id = 1").await.unwrap();
        let mut b = mysql_async::Conn::new(opts(port, "pl", "pl", Some("PL")))
            .await
            .unwrap();
        b.query_drop("BEGIN").await.unwrap();
        let count: Option<i64> = b
            .query_first("SELECT ROW_COUNT() FROM t WHERE id = 1")
            .await
            .unwrap();
        assert_eq!(count, Some(0), "round {round}");
        b.query_drop("COMMIT").await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_fails_on_one_node_names_where_it_did_and_did_not_commit() {
    // DECISIONS.md item 16: every node of the transaction is asked to COMMIT (at once); the
    // client gets an error naming the dataNodes that committed and those that did not.
    let server = Throwaway::start("pool-commit", 1).await;
    let (_dir, _, mut c) = gateway(&server).await;
    c.query_drop("BEGIN").await.unwrap();
    // mod-long over three dataNodes: id 1 on dn2 (pl2), id 2 on dn3 (pl3).
    c.query_drop("INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b')")
        .await
        .unwrap();
    // The server drops every connection on pl3, the transaction's among them.
    let mut admin = server.conn(None).await;
    let threads: Vec<u64> = admin
        .query("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = 'pl3'")
        .await
        .unwrap();
    assert!(!threads.is_empty());
    for id in threads {
        let _ = admin.query_drop(format!("KILL CONNECTION {id}")).await;
    }
    let (code, _, msg) = common::server_error(c.query_drop("COMMIT").await.unwrap_err());
    assert_eq!(code, 1180, "{msg}");
    assert!(
        msg.contains("failed on dataNode dn3") && msg.contains("succeeded on [dn2]"),
        "{msg}"
    );
    let on_pl2: Vec<i64> = admin.query("SELECT id FROM pl2.t").await.unwrap();
    let on_pl3: Vec<i64> = admin.query("SELECT id FROM pl3.t").await.unwrap();
    assert_eq!((on_pl2, on_pl3), (vec![1], vec![]));
    // The session goes on.
    let v: Option<String> = c.query_first("SELECT v FROM t WHERE id = 1").await.unwrap();
    assert_eq!(v.as_deref(), Some("a"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_killed_mid_statement_leaves_no_connection_out_of_step() {
    // KILL of a session whose autocommit read is running: the gateway kills the backend
    // statement, the read is retried on another connection, and the session ends while that
    // retry is on its way. The retry's connection must not go back to the pool: its answer is
    // still coming, and the next holder would read it as its own (another statement's rows,
    // an OK instead of rows). Readers on other sessions meanwhile take every connection there
    // is, many of them re-pointed to another database (USE in the statement's packet).
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let server = Throwaway::start("pool-kill", 1).await;
    let (_dir, port, mut c) = gateway(&server).await;
    insert_rows(&mut c).await;
    let stop = Arc::new(AtomicBool::new(false));
    let checked = Arc::new(AtomicUsize::new(0));
    let wrong = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut readers = Vec::new();
    for k in 0..6usize {
        let (stop, checked, wrong) = (stop.clone(), checked.clone(), wrong.clone());
        readers.push(tokio::spawn(async move {
            let mut r = mysql_async::Conn::new(opts(port, "pl", "pl", Some("PL")))
                .await
                .unwrap();
            let mut n = k;
            while !stop.load(Ordering::Relaxed) {
                let id = n % 3 + 1;
                n += 1;
                let got: Result<Vec<(i64, String)>, _> = r
                    .query(format!("SELECT id, v FROM t WHERE id = {id}"))
                    .await;
                checked.fetch_add(1, Ordering::Relaxed);
                let want = vec![(id as i64, ["a", "b", "c"][id - 1].to_string())];
                match got {
                    Ok(rows) if rows == want => {}
                    other => wrong.lock().unwrap().push(format!("id {id}: {other:?}")),
                }
            }
        }));
    }
    for round in 0..4 {
        let mut a = mysql_async::Conn::new(opts(port, "pl", "pl", Some("PL")))
            .await
            .unwrap();
        let id = a.id();
        let sql = format!("SELECT v, SLEEP(0.8) FROM t WHERE id = {}", round % 3 + 1);
        let sleeper = tokio::spawn(async move { a.query_drop(sql).await });
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        c.query_drop(format!("KILL {id}")).await.unwrap();
        let _ = sleeper.await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.await.unwrap();
    }
    let wrong = wrong.lock().unwrap();
    assert!(
        wrong.is_empty(),
        "{} wrong answers of {}: {:?}",
        wrong.len(),
        checked.load(Ordering::Relaxed),
        &wrong[..wrong.len().min(10)]
    );
    assert!(checked.load(Ordering::Relaxed) > 100);
}
