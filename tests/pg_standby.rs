//! PostgreSQL dataHosts with a streaming-replication standby, against throwaway PostgreSQL
//! servers (tests/common/postgres.rs) that the tests kill with SIGKILL and promote with
//! `pg_ctl promote` (never the shared sandbox): the heartbeat's `pg_is_in_recovery()` keeps
//! writes off standbys, `balance` sends reads to them, and with switchType 1 the gateway fails
//! over only to a writeHost that has been promoted.

mod common;

use std::time::{Duration, Instant};

use common::postgres::PgServer;
use common::run_all;
use common::standby::{self, PERIOD_MS, client, dnindex, writes_resume};
use common::{GatewayProcess, server_error, start_gateway, xml};
use mysql_async::prelude::Queryable;

/// A config directory for the FO world ([`common::standby::config`]) on PostgreSQL servers:
/// database `h6fo`, dataHost `fo` with `attrs`, heartbeat `select 1` and body `hosts`.
fn config(attrs: &str, hosts: &str) -> tempfile::TempDir {
    standby::config(
        "postgresql",
        "h6fo",
        attrs,
        &format!("<heartbeat>select 1</heartbeat>\n        {hosts}"),
    )
}

fn host(kind: &str, name: &str, s: &PgServer) -> String {
    xml::postgres_host(kind, name, s.port)
}

/// A primary with database `h6fo` and table `t`, and a standby of it that has caught up.
async fn pair(name: &str) -> (PgServer, PgServer) {
    let a = PgServer::primary(&format!("{name}a")).await;
    a.admin()
        .await
        .batch_execute("CREATE DATABASE h6fo OWNER manx")
        .await
        .unwrap();
    a.db("h6fo")
        .await
        .batch_execute("CREATE TABLE t (id int PRIMARY KEY); ALTER TABLE t OWNER TO manx")
        .await
        .unwrap();
    let b = PgServer::standby_of(&a, &format!("{name}b")).await;
    b.catch_up(&a).await;
    assert!(b.in_recovery().await && !a.in_recovery().await);
    (a, b)
}

/// The port of the server that answered a read through the gateway (`inet_server_port()`
/// passes the MySQL→PostgreSQL translation unchanged).
async fn read_port(c: &mut mysql_async::Conn) -> Result<u16, mysql_async::Error> {
    let p: Option<u16> = c.query_first("SELECT inet_server_port()").await?;
    Ok(p.expect("one row"))
}

/// Reads until `port` answers, within `limit`.
async fn wait_reads_on(c: &mut mysql_async::Conn, port: u16, limit: Duration) {
    let start = Instant::now();
    loop {
        if read_port(c).await.ok() == Some(port) {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "reads did not reach port {port} within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the gateway's heartbeat has seen every server once (statements before that may
/// go anywhere the configuration allows).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(3 * PERIOD_MS)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balance_1_reads_go_to_the_standby_and_writes_to_the_primary() {
    let (a, b) = pair("rw").await;
    let dir = config(
        r#"balance="1" switchType="1""#,
        &xml::write_host_with("a", a.port, &host("readHost", "b", &b)),
    );
    let port = start_gateway(dir.path()).await;
    let mut c = client(port).await;
    wait_reads_on(&mut c, b.port, Duration::from_secs(10)).await;
    for _ in 0..20 {
        assert_eq!(read_port(&mut c).await.unwrap(), b.port);
        let r: Option<i64> = c.query_first("SELECT pg_is_in_recovery()").await.unwrap();
        assert_eq!(r, Some(1), "reads are answered by the standby");
    }
    for id in 1..=10 {
        c.query_drop(format!("INSERT INTO t (id) VALUES ({id})"))
            .await
            .unwrap();
    }
    assert_eq!(a.ids("h6fo").await, (1..=10).collect::<Vec<_>>());
    // A transaction pins the writeHost, reads included.
    c.query_drop("BEGIN").await.unwrap();
    assert_eq!(read_port(&mut c).await.unwrap(), a.port);
    run_all(
        &mut c,
        &["UPDATE t SET id = id + 100 WHERE id = 1", "COMMIT"],
    )
    .await;
    b.catch_up(&a).await;
    let n: Option<i64> = c
        .query_first("SELECT count(*) FROM t WHERE id = 101")
        .await
        .unwrap();
    assert_eq!(n, Some(1), "the standby replayed the commit");
    // balance 0: everything on the writeHost.
    drop(c);
    let dir0 = config(
        r#"balance="0" switchType="1""#,
        &xml::write_host_with("a", a.port, &host("readHost", "b", &b)),
    );
    let mut c = client(start_gateway(dir0.path()).await).await;
    settle().await;
    for _ in 0..20 {
        assert_eq!(read_port(&mut c).await.unwrap(), a.port);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_host_in_recovery_never_takes_writes() {
    let (a, b) = pair("ro").await;
    // The standby is the only writeHost (switchType -1): writes fail with a clear error naming
    // the dataHost and the server; reads work.
    let dir = config(
        r#"balance="0" switchType="-1""#,
        &host("writeHost", "b", &b),
    );
    let mut c = client(start_gateway(dir.path()).await).await;
    settle().await;
    let e = c
        .query_drop("INSERT INTO t (id) VALUES (1)")
        .await
        .unwrap_err();
    let (code, state, message) = server_error(e);
    assert_eq!((code, state.as_str()), (1290, "HY000"), "{message}");
    assert!(
        message.contains("dataHost fo")
            && message.contains("writeHost b")
            && message.contains(&format!("127.0.0.1:{}", b.port))
            && message.contains("standby"),
        "{message}"
    );
    assert_eq!(read_port(&mut c).await.unwrap(), b.port);
    assert!(a.ids("h6fo").await.is_empty());
    drop(c);

    // writeHost 0 is the standby, writeHost 1 the primary, switchType 1: the gateway makes the
    // primary active as soon as the heartbeat shows writeHost 0 is in recovery, and records it.
    let dir = config(
        r#"balance="0" switchType="1""#,
        &format!(
            "{}{}",
            host("writeHost", "b", &b),
            host("writeHost", "a", &a)
        ),
    );
    let log = dir.path().join("manx.log");
    let (_gateway, mut c) =
        GatewayProcess::start_logging(dir.path(), "fo", "fo", "FO", Some(&log)).await;
    let start = Instant::now();
    loop {
        match c.query_drop("INSERT INTO t (id) VALUES (2)").await {
            Ok(()) => break,
            Err(e) => {
                let (code, _, message) = server_error(e);
                assert!(code == 1290 || code == 1792, "{code} {message}");
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "never switched to the primary"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(a.ids("h6fo").await, vec![2]);
    assert!(
        dnindex(dir.path()).contains("fo=1\n"),
        "{}",
        dnindex(dir.path())
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        standby::logged_error(
            &text,
            "[Host=fo,result=[0->1],reason=writeHost in recovery]"
        ),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_type_1_waits_for_the_standby_to_be_promoted() {
    let (mut a, b) = pair("sw").await;
    let dir = config(
        r#"balance="0" switchType="1""#,
        &format!(
            "{}{}",
            host("writeHost", "a", &a),
            host("writeHost", "b", &b)
        ),
    );
    let log = dir.path().join("manx.log");
    let (gateway, mut c) =
        GatewayProcess::start_logging(dir.path(), "fo", "fo", "FO", Some(&log)).await;
    settle().await;
    assert!(dnindex(dir.path()).contains("fo=0\n"));
    for id in 1..=20 {
        c.query_drop(format!("INSERT INTO t (id) VALUES ({id})"))
            .await
            .unwrap();
    }
    b.catch_up(&a).await;
    a.kill();
    // The primary is marked down; the standby is alive but read-only, so nothing switches and
    // writes fail (naming the dataHost) instead of reaching the standby.
    let killed = Instant::now();
    loop {
        let e = c
            .query_drop("INSERT INTO t (id) VALUES (100)")
            .await
            .unwrap_err();
        let (_, _, message) = server_error(e);
        assert!(message.contains("dataHost fo"), "{message}");
        if message.contains("marked down") {
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(10),
            "never marked down: {message}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(5 * PERIOD_MS)).await;
    let e = c
        .query_drop("INSERT INTO t (id) VALUES (101)")
        .await
        .unwrap_err();
    let (_, _, message) = server_error(e);
    assert!(message.contains("marked down"), "{message}");
    assert!(
        dnindex(dir.path()).contains("fo=0\n"),
        "no switch to a standby"
    );
    assert!(b.in_recovery().await);
    assert_eq!(b.ids("h6fo").await, (1..=20).collect::<Vec<_>>());

    // An operator promotes the standby: writes resume within 3 heartbeat periods.
    b.promote();
    let promoted = Instant::now();
    let failed = writes_resume(&mut c, promoted, "the promotion", || {
        "INSERT INTO t (id) VALUES (200)".to_string()
    })
    .await;
    let took = promoted.elapsed();
    eprintln!(
        "PostgreSQL failover: writes succeed {took:?} after pg_ctl promote returned ({failed} INSERTs failed meanwhile; heartbeat {PERIOD_MS} ms)"
    );
    // 3 periods; the slack covers a loaded CI machine.
    assert!(
        took <= Duration::from_millis(3 * PERIOD_MS + 1_000),
        "switch after promotion took {took:?}"
    );
    assert!(
        dnindex(dir.path()).contains("fo=1\n"),
        "{}",
        dnindex(dir.path())
    );
    let on_b = b.ids("h6fo").await;
    assert!(on_b.contains(&200) && !on_b.contains(&100), "{on_b:?}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        standby::logged_error(&text, "[Host=fo,result=[0->1],reason=heartbeat error]"),
        "{text}"
    );
    assert!(
        standby::logged_error(&text, "no other writeHost is alive and writable"),
        "{text}"
    );
    // A restarted gateway starts on the promoted server.
    drop(c);
    drop(gateway);
    let (_gateway, mut c) = GatewayProcess::start(dir.path(), "fo", "fo", "FO").await;
    c.query_drop("INSERT INTO t (id) VALUES (300)")
        .await
        .unwrap();
    assert!(b.ids("h6fo").await.contains(&300));
}
