//! A client that goes away while its statement runs on the backends: the statement must not
//! run on there without it (judged on the sandbox primary's processlist), whether the gateway
//! was waiting for one node's first packet, for a merge of several nodes, or inside a
//! transaction; and a client that only pipelines its next command is not taken for gone.

mod common;

use std::time::{Duration, Instant};

use common::raw::{self, read_packet, write_packet};
use common::{Extra, Fixture};
use mysql_async::prelude::Queryable;
use tokio::net::TcpStream;

/// How long the backends may take to drop a statement whose client left.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// A raw client of `f`, logged in as root into TESTDB.
async fn raw_client(f: &Fixture) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", f.port)).await.unwrap();
    raw::login(&mut s, "root", "123456", "TESTDB")
        .await
        .expect("login");
    s
}

/// Sends `sql` as a COM_QUERY without waiting for its answer.
async fn send_query(s: &mut TcpStream, sql: &str) {
    let mut payload = vec![0x03];
    payload.extend_from_slice(sql.as_bytes());
    write_packet(s, 0, &payload).await;
}

/// Reads one answer (classic EOF framing): the rows' payloads of a result set, or panics on
/// an ERR packet; an OK packet gives no rows.
async fn read_answer(s: &mut TcpStream) -> Vec<Vec<u8>> {
    let (_, first) = read_packet(s).await;
    match first[0] {
        0xFF => panic!("error: {:?}", raw::err_packet(&first)),
        0x00 => return Vec::new(),
        _ => {}
    }
    let columns = first[0] as usize;
    for _ in 0..columns {
        read_packet(s).await;
    }
    let (_, eof) = read_packet(s).await;
    assert_eq!(eof[0], 0xFE, "EOF after the column definitions");
    let mut rows = Vec::new();
    loop {
        let (_, p) = read_packet(s).await;
        if p[0] == 0xFE && p.len() < 9 {
            return rows;
        }
        assert_ne!(p[0], 0xFF, "error mid-result: {:?}", raw::err_packet(&p));
        rows.push(p);
    }
}

/// Statements of any connection but this one running on the sandbox primary whose text holds
/// `marker`.
async fn running(primary: &mut mysql_async::Conn, marker: &str) -> i64 {
    primary
        .exec_first(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE CONCAT('%', ?, '%') AND ID <> CONNECTION_ID()",
            (marker,),
        )
        .await
        .unwrap()
        .unwrap_or(0)
}

/// Waits until `n` statements holding `marker` run on the primary.
async fn until_running(primary: &mut mysql_async::Conn, marker: &str, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while running(primary, marker).await < n {
        assert!(
            Instant::now() < deadline,
            "{marker}: {n} statements never ran on the backends"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Asserts that no statement holding `marker` runs on the primary within [`GONE_WITHIN`].
async fn until_gone(primary: &mut mysql_async::Conn, marker: &str) {
    let deadline = Instant::now() + GONE_WITHIN;
    loop {
        let n = running(primary, marker).await;
        if n == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{marker}: {n} statements still run on the backends {GONE_WITHIN:?} after their client left"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One row of travelrecord on each dataNode (ids 61, 5000061, 10000061: dn1, dn2, dn3).
async fn one_row_per_node(f: &Fixture) {
    let mut c = f.client().await;
    c.query_drop(
        "INSERT INTO travelrecord (id, user_id, fee) VALUES (61, 'a', 1), (5000061, 'b', 2), (10000061, 'c', 3)",
    )
    .await
    .unwrap();
    for n in 1..=3 {
        assert_eq!(f.ids_on(n, "travelrecord").await.len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_while_one_node_runs_its_statement_stops_it() {
    let f = Fixture::start("cancel1", Extra::default()).await;
    one_row_per_node(&f).await;
    let mut primary = common::primary(None).await;
    let mut s = raw_client(&f).await;
    send_query(
        &mut s,
        "SELECT SLEEP(30) AS cancel_single FROM travelrecord WHERE id = 61",
    )
    .await;
    until_running(&mut primary, "cancel_single", 1).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    drop(s);
    until_gone(&mut primary, "cancel_single").await;
    // The gateway goes on, its pool whole.
    let mut c = f.client().await;
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM travelrecord")
        .await
        .unwrap();
    assert_eq!(n, Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_while_a_merge_waits_stops_every_node() {
    let f = Fixture::start("cancel2", Extra::default()).await;
    one_row_per_node(&f).await;
    let mut primary = common::primary(None).await;
    let mut s = raw_client(&f).await;
    send_query(
        &mut s,
        "SELECT id, SLEEP(30) AS cancel_merge FROM travelrecord ORDER BY id",
    )
    .await;
    until_running(&mut primary, "cancel_merge", 3).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    drop(s);
    until_gone(&mut primary, "cancel_merge").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_transaction_stops_its_statement_and_nothing_commits() {
    let f = Fixture::start("cancel3", Extra::default()).await;
    one_row_per_node(&f).await;
    let mut primary = common::primary(None).await;
    let mut s = raw_client(&f).await;
    for sql in [
        "BEGIN",
        "UPDATE travelrecord SET fee = 99 WHERE id = 61",
        "UPDATE travelrecord SET fee = 99 WHERE id = 5000061",
    ] {
        send_query(&mut s, sql).await;
        read_answer(&mut s).await;
    }
    send_query(
        &mut s,
        "SELECT SLEEP(30) AS cancel_tx FROM travelrecord WHERE id = 61",
    )
    .await;
    until_running(&mut primary, "cancel_tx", 1).await;
    drop(s);
    until_gone(&mut primary, "cancel_tx").await;
    // Rolled back: the rows are free and unchanged (a lock still held would time out).
    let mut b = f.backend(1).await;
    b.query_drop("SET SESSION innodb_lock_wait_timeout = 3")
        .await
        .unwrap();
    b.query_drop("UPDATE travelrecord SET user_id = 'free' WHERE id = 61")
        .await
        .expect("the transaction's row lock is released");
    let fee: Option<String> = b
        .query_first("SELECT fee FROM travelrecord WHERE id = 61")
        .await
        .unwrap();
    assert_eq!(fee.as_deref(), Some("1.00"));
    let fee: Option<String> = f
        .backend(2)
        .await
        .query_first("SELECT fee FROM travelrecord WHERE id = 5000061")
        .await
        .unwrap();
    assert_eq!(fee.as_deref(), Some("2.00"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipelined_command_is_not_a_client_gone() {
    let f = Fixture::start("cancel4", Extra::default()).await;
    one_row_per_node(&f).await;
    let mut primary = common::primary(None).await;
    let mut s = raw_client(&f).await;
    send_query(
        &mut s,
        "SELECT SLEEP(2) AS cancel_pipe FROM travelrecord WHERE id = 61",
    )
    .await;
    until_running(&mut primary, "cancel_pipe", 1).await;
    // The next command arrives while the first runs: kept for after it, in order.
    send_query(&mut s, "SELECT id FROM travelrecord WHERE id = 5000061").await;
    let first = read_answer(&mut s).await;
    assert_eq!(first, vec![b"\x010".to_vec()], "SLEEP ran to its end");
    let second = read_answer(&mut s).await;
    assert_eq!(second, vec![b"\x075000061".to_vec()]);
    // COM_QUIT while a statement runs, then the end of the stream: gone.
    send_query(
        &mut s,
        "SELECT SLEEP(30) AS cancel_quit FROM travelrecord WHERE id = 61",
    )
    .await;
    until_running(&mut primary, "cancel_quit", 1).await;
    write_packet(&mut s, 0, &[0x01]).await;
    drop(s);
    until_gone(&mut primary, "cancel_quit").await;
}

/// The breaker's case: clients that leave while their statements hold (or wait for) every
/// connection of the dataHost's pool. Their statements end on the backends, those that were
/// waiting for a connection are stopped as soon as they get one, and the pool serves others
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_leave_do_not_hold_the_pool() {
    let databases = common::sample_databases("cancel5").await;
    let dir = tempfile::tempdir().unwrap();
    common::write_config(dir.path(), &databases, &Extra::default());
    let schema = dir.path().join("schema.xml");
    let xml = std::fs::read_to_string(&schema).unwrap();
    assert!(xml.contains(r#"maxCon="100" minCon="2""#));
    std::fs::write(
        &schema,
        xml.replace(r#"maxCon="100" minCon="2""#, r#"maxCon="4" minCon="1""#),
    )
    .unwrap();
    let port = common::start_gateway(dir.path()).await;
    let f = Fixture {
        dir,
        databases,
        port,
    };
    one_row_per_node(&f).await;
    let mut primary = common::primary(None).await;
    let mut clients = Vec::new();
    for _ in 0..6 {
        let mut s = raw_client(&f).await;
        send_query(
            &mut s,
            "SELECT SLEEP(30) AS cancel_pool FROM travelrecord WHERE id = 61",
        )
        .await;
        clients.push(s);
    }
    until_running(&mut primary, "cancel_pool", 4).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        running(&mut primary, "cancel_pool").await,
        4,
        "the pool's 4 connections run 4 statements, 2 wait"
    );
    drop(clients);
    until_gone(&mut primary, "cancel_pool").await;
    // The two that waited got connections and were stopped too: nothing comes back.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(running(&mut primary, "cancel_pool").await, 0);
    let mut c = f.client().await;
    let n: Option<i64> = tokio::time::timeout(
        Duration::from_secs(5),
        c.query_first("SELECT COUNT(*) FROM travelrecord WHERE id = 61"),
    )
    .await
    .expect("the pool serves another client")
    .unwrap();
    assert_eq!(n, Some(1));
}
