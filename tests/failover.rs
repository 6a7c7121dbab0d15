//! Heartbeats and failover against throwaway MariaDB servers that the tests kill with SIGKILL
//! (never the shared sandbox): readHosts leaving and rejoining the rotation, switchType 2's
//! replication filter, and switchType 1 / -1 when the active writeHost dies.

mod common;

use std::time::{Duration, Instant};

use common::mariadb::Throwaway;
use common::run_all;
use common::standby::{self, PERIOD_MS, client, dnindex, dnindex_with, writes_resume};
use common::{GatewayProcess, server_error, start_gateway, xml};
use mysql_async::prelude::Queryable;

/// A config directory for the FO world ([`common::standby::config`]) on MariaDB servers: the
/// dataHost `fo` with `attrs` and body `hosts`.
fn config(attrs: &str, hosts: &str) -> tempfile::TempDir {
    standby::config("mysql", "h5fo", attrs, hosts)
}

fn host(kind: &str, name: &str, s: &Throwaway) -> String {
    xml::host(kind, name, s.port)
}

/// The body of dataHost `fo`: heartbeat `heartbeat`, writeHost `a` holding readHost `b`.
fn read_host_of(heartbeat: &str, a: &Throwaway, b: &Throwaway) -> String {
    format!(
        "<heartbeat>{heartbeat}</heartbeat>{}",
        xml::write_host_with("a", a.port, &host("readHost", "b", b))
    )
}

/// The body of dataHost `fo`: heartbeat `heartbeat`, writeHosts `a` and `b`.
fn two_write_hosts(heartbeat: &str, a: &Throwaway, b: &Throwaway) -> String {
    format!(
        "<heartbeat>{heartbeat}</heartbeat>{}{}",
        host("writeHost", "a", a),
        host("writeHost", "b", b)
    )
}

/// A primary with database `h5fo` and table `t`, and a replica of it that has caught up.
async fn pair(name: &str) -> (Throwaway, Throwaway) {
    let a = Throwaway::start(&format!("{name}a"), 1).await;
    let b = Throwaway::start(&format!("{name}b"), 2).await;
    b.replicate_from(&a).await;
    create_table(&a).await;
    b.catch_up(&a).await;
    (a, b)
}

/// Creates database `h5fo` and its table `t` on `s`.
async fn create_table(s: &Throwaway) {
    let mut c = s.conn(None).await;
    run_all(
        &mut c,
        &[
            "CREATE DATABASE h5fo",
            "CREATE TABLE h5fo.t (id INT PRIMARY KEY)",
        ],
    )
    .await;
}

async fn ids(s: &Throwaway) -> Vec<i64> {
    let mut c = s.conn(Some("h5fo")).await;
    c.query("SELECT id FROM t ORDER BY id").await.unwrap()
}

/// Reads `SELECT @@port` until `port` answers (errors allowed meanwhile: a server that just died
/// fails reads until its heartbeat marks it down), within `limit`.
async fn wait_reads_on(c: &mut mysql_async::Conn, port: u16, limit: Duration) -> Duration {
    let start = Instant::now();
    loop {
        if let Ok(Some(p)) = c.query_first::<u16, _>("SELECT @@port").await
            && p == port
        {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit,
            "reads did not reach port {port} within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn all_reads_on(c: &mut mysql_async::Conn, port: u16) {
    for _ in 0..20 {
        let p: Option<u16> = c.query_first("SELECT @@port").await.unwrap();
        assert_eq!(p, Some(port));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_host_that_dies_leaves_the_rotation_and_returns_when_it_recovers() {
    let (a, mut b) = pair("rh").await;
    let dir = config(r#"balance="1""#, &read_host_of("select user()", &a, &b));
    let port = start_gateway(dir.path()).await;
    let mut c = client(port).await;
    wait_reads_on(&mut c, b.port, Duration::from_secs(10)).await;
    all_reads_on(&mut c, b.port).await;
    b.kill();
    // Marked down after maxRetryCount (3) failed heartbeats; from then on no read tries it.
    // Before that, a read that cannot reach it is retried once on the writeHost: no read fails.
    let killed = Instant::now();
    let mut on_a = 0;
    let mut reads = 0;
    while on_a < 20 {
        let p: Option<u16> = c.query_first("SELECT @@port").await.unwrap();
        reads += 1;
        on_a = if p == Some(a.port) { on_a + 1 } else { 0 };
        assert!(killed.elapsed() < Duration::from_secs(10));
    }
    // Keep reading until the heartbeat has marked it down, so both phases were exercised.
    while killed.elapsed() < Duration::from_millis(4 * PERIOD_MS) {
        let p: Option<u16> = c.query_first("SELECT @@port").await.unwrap();
        assert_eq!(p, Some(a.port));
        reads += 1;
    }
    eprintln!("{reads} reads after the readHost's SIGKILL, none failed");
    all_reads_on(&mut c, a.port).await;
    b.restart().await;
    wait_reads_on(&mut c, b.port, Duration::from_secs(10)).await;
    all_reads_on(&mut c, b.port).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_type_2_takes_reads_off_a_replica_whose_replication_stopped() {
    let (a, b) = pair("lag").await;
    let dir = config(
        r#"balance="1" switchType="2" slaveThreshold="10""#,
        &read_host_of("show slave status", &a, &b),
    );
    let port = start_gateway(dir.path()).await;
    let mut c = client(port).await;
    wait_reads_on(&mut c, b.port, Duration::from_secs(10)).await;
    all_reads_on(&mut c, b.port).await;
    let mut admin = b.conn(None).await;
    admin.query_drop("STOP SLAVE").await.unwrap();
    wait_reads_on(&mut c, a.port, Duration::from_secs(10)).await;
    all_reads_on(&mut c, a.port).await;
    admin.query_drop("START SLAVE").await.unwrap();
    wait_reads_on(&mut c, b.port, Duration::from_secs(10)).await;
    all_reads_on(&mut c, b.port).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_type_1_fails_over_to_the_standby_and_a_restart_keeps_it() {
    let (mut a, b) = pair("sw1").await;
    let dir = config(
        r#"balance="0" switchType="1""#,
        &two_write_hosts("select 1", &a, &b),
    );
    let log = dir.path().join("manx.log");
    let (gateway, mut c) =
        GatewayProcess::start_logging(dir.path(), "fo", "fo", "FO", Some(&log)).await;
    assert!(dnindex(dir.path()).contains("fo=0\n"));
    let mut acknowledged = Vec::new();
    for id in 1..=20 {
        c.query_drop(format!("INSERT INTO t (id) VALUES ({id})"))
            .await
            .unwrap();
        acknowledged.push(id);
    }
    b.catch_up(&a).await;
    // Kill the active writeHost under a stream of INSERTs.
    a.kill();
    let killed = Instant::now();
    let mut id = 100;
    let failed = writes_resume(&mut c, killed, "the kill", || {
        id += 1;
        format!("INSERT INTO t (id) VALUES ({id})")
    })
    .await;
    acknowledged.push(id);
    let took = killed.elapsed();
    eprintln!(
        "failover: writes succeed again {took:?} after SIGKILL ({failed} INSERTs failed meanwhile; heartbeat {PERIOD_MS} ms x maxRetryCount 3)"
    );
    // Detection takes maxRetryCount (3) periods; the switch itself is immediate. The slack
    // covers a loaded CI machine (scripts/failover-times.sh measures it quiet: ~0.8 s).
    assert!(
        took <= Duration::from_millis(3 * PERIOD_MS + 3_000),
        "failover took {took:?}"
    );
    let index = dnindex_with(dir.path(), "fo=1\n").await;
    assert!(index.contains("fo=1\n"), "{index}");
    // The log tells the story: the master marked down (warn), the switch with its reason
    // (error level, Mycat's wording).
    let text = std::fs::read_to_string(&log).unwrap();
    let down = text
        .lines()
        .find(|l| l.contains("WARN") && l.contains("marked down") && l.contains("host=a"));
    assert!(down.is_some(), "{text}");
    assert!(
        standby::logged_error(&text, "[Host=fo,result=[0->1],reason=heartbeat error]"),
        "{text}"
    );
    // Every acknowledged INSERT is on the new master (replication had delivered the first 20
    // before the kill; the later ones were written to it).
    let on_b = ids(&b).await;
    for id in &acknowledged {
        assert!(
            on_b.contains(id),
            "acknowledged id {id} missing on the new master: {on_b:?}"
        );
    }
    // The old master comes back: nothing switches back, and a restarted gateway keeps using
    // the standby (dnindex.properties).
    a.restart().await;
    drop(c);
    drop(gateway);
    let (_gateway, mut c) = GatewayProcess::start(dir.path(), "fo", "fo", "FO").await;
    c.query_drop("INSERT INTO t (id) VALUES (1000)")
        .await
        .unwrap();
    assert!(ids(&b).await.contains(&1000));
    assert!(!ids(&a).await.contains(&1000));
    let p: Option<u16> = c.query_first("SELECT @@port").await.unwrap();
    assert_eq!(p, Some(b.port));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_type_minus_1_never_switches() {
    let (mut a, b) = pair("swn").await;
    let dir = config(
        r#"balance="0" switchType="-1""#,
        &two_write_hosts("select 1", &a, &b),
    );
    let port = start_gateway(dir.path()).await;
    let mut c = client(port).await;
    c.query_drop("INSERT INTO t (id) VALUES (1)").await.unwrap();
    a.kill();
    // The dead master is marked down (statements fail at once, naming it), and stays active.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let e = c
            .query_drop("INSERT INTO t (id) VALUES (2)")
            .await
            .unwrap_err();
        let (_, _, msg) = server_error(e);
        if msg.contains("marked down") {
            assert!(msg.contains(", a 127.0.0.1:"), "names the server: {msg}");
            break;
        }
        assert!(Instant::now() < deadline, "never marked down: {msg}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(3 * PERIOD_MS)).await;
    let e = c
        .query_drop("INSERT INTO t (id) VALUES (3)")
        .await
        .unwrap_err();
    assert!(server_error(e).2.contains("marked down"));
    assert!(dnindex(dir.path()).contains("fo=0\n"));
    assert!(!ids(&b).await.contains(&2));
}

/// Polls `sql` until it fails with a "marked down" error (the heartbeat declared the server
/// dead), within 10 s.
async fn wait_marked_down(c: &mut mysql_async::Conn, sql: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Err(e) = c.query_drop(sql).await
            && server_error(e).2.contains("marked down")
        {
            return;
        }
        assert!(Instant::now() < deadline, "{sql}: never marked down");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temp_read_host_available_keeps_read_hosts_of_a_dead_master_readable() {
    let (mut a, b) = pair("tmp").await;
    let hosts = read_host_of("select 1", &a, &b);
    let with = config(r#"balance="3" tempReadHostAvailable="1""#, &hosts);
    let without = config(r#"balance="3""#, &hosts);
    let mut c1 = client(start_gateway(with.path()).await).await;
    let mut c0 = client(start_gateway(without.path()).await).await;
    wait_reads_on(&mut c1, b.port, Duration::from_secs(10)).await;
    wait_reads_on(&mut c0, b.port, Duration::from_secs(10)).await;
    a.kill();
    wait_marked_down(&mut c1, "INSERT INTO t (id) VALUES (1)").await;
    wait_marked_down(&mut c0, "INSERT INTO t (id) VALUES (1)").await;
    // tempReadHostAvailable: the readHost keeps serving reads while its writeHost is down.
    all_reads_on(&mut c1, b.port).await;
    // Without it the readHost leaves with its writeHost, and the read has nowhere to go.
    let (_, _, msg) = server_error(c0.query_drop("SELECT @@port").await.unwrap_err());
    assert!(msg.contains("marked down"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_type_1_spreads_writes_over_the_write_hosts() {
    let (a, b) = pair("wt1").await;
    let dir = config(
        r#"balance="0" writeType="1""#,
        &two_write_hosts("select 1", &a, &b),
    );
    let mut c = client(start_gateway(dir.path()).await).await;
    for id in 1..=40 {
        c.query_drop(format!("INSERT INTO t (id) VALUES ({id})"))
            .await
            .unwrap();
    }
    b.catch_up(&a).await;
    // Rows written on a replicate to b; rows written on b stay there.
    let (on_a, on_b) = (ids(&a).await, ids(&b).await);
    assert_eq!(on_b, (1..=40).collect::<Vec<i64>>());
    assert!(
        !on_a.is_empty() && on_a.len() < 40,
        "2^-39 odds of all on one side: {on_a:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_type_2_takes_reads_off_a_replica_past_slave_threshold() {
    let (a, b) = pair("thr").await;
    let dir = config(
        r#"balance="1" switchType="2" slaveThreshold="2""#,
        &read_host_of("show slave status", &a, &b),
    );
    let mut c = client(start_gateway(dir.path()).await).await;
    wait_reads_on(&mut c, b.port, Duration::from_secs(10)).await;
    // Replication keeps running but applies events 30 s late: Seconds_Behind_Master grows past
    // the threshold of 2.
    let mut admin = b.conn(None).await;
    run_all(
        &mut admin,
        &[
            "STOP SLAVE",
            "CHANGE MASTER TO MASTER_DELAY = 30",
            "START SLAVE",
        ],
    )
    .await;
    let mut p = a.conn(Some("h5fo")).await;
    p.query_drop("INSERT INTO t (id) VALUES (1)").await.unwrap();
    wait_reads_on(&mut c, a.port, Duration::from_secs(15)).await;
    all_reads_on(&mut c, a.port).await;
    let lag: Vec<mysql_async::Row> = admin.query("SHOW SLAVE STATUS").await.unwrap();
    let lag: Option<i64> = lag[0].get("Seconds_Behind_Master").flatten();
    assert!(lag.is_some_and(|l| l >= 2), "lag {lag:?}");
    // Caught up: reads come back.
    run_all(
        &mut admin,
        &[
            "STOP SLAVE",
            "CHANGE MASTER TO MASTER_DELAY = 0",
            "START SLAVE",
        ],
    )
    .await;
    wait_reads_on(&mut c, b.port, Duration::from_secs(15)).await;
    all_reads_on(&mut c, b.port).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_type_2_fails_over_to_a_synchronized_standby() {
    let (mut a, b) = pair("sw2").await;
    let dir = config(
        r#"balance="0" switchType="2""#,
        &two_write_hosts("show slave status", &a, &b),
    );
    let mut c = client(start_gateway(dir.path()).await).await;
    c.query_drop("INSERT INTO t (id) VALUES (1)").await.unwrap();
    b.catch_up(&a).await;
    // Let a heartbeat record the standby's lag (0) after the catch-up.
    tokio::time::sleep(Duration::from_millis(2 * PERIOD_MS)).await;
    a.kill();
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.query_drop("INSERT INTO t (id) VALUES (2)").await.is_err() {
        assert!(Instant::now() < deadline, "no failover to the standby");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(ids(&b).await, [1, 2]);
    let index = dnindex_with(dir.path(), "fo=1\n").await;
    assert!(index.contains("fo=1\n"), "{index}");
}

/// Repeated failovers back and forth: each SIGKILL of the active writeHost (switchType 1,
/// heartbeat [`PERIOD_MS`] ms, maxRetryCount 3) is followed by a working INSERT within three
/// heartbeat periods plus three seconds (slack for a loaded CI machine); the killed server is restarted and becomes the standby for
/// the next round. Two rounds in the suite; `scripts/failover-times.sh` runs 10
/// (`MANX_FAILOVER_ROUNDS`) and prints min/median/max, from the kill to the first INSERT that
/// succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn measure_failover_times() {
    let rounds: usize = std::env::var("MANX_FAILOVER_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let (a, b) = pair("meas").await;
    let dir = config(
        r#"balance="0" switchType="1""#,
        &two_write_hosts("select 1", &a, &b),
    );
    let mut c = client(start_gateway(dir.path()).await).await;
    let mut servers = [a, b];
    let mut active = 0;
    let mut id = 0;
    let mut times = Vec::new();
    for round in 0..rounds {
        id += 1;
        c.query_drop(format!("INSERT INTO t (id) VALUES ({id})"))
            .await
            .unwrap();
        servers[active].kill();
        let killed = Instant::now();
        loop {
            id += 1;
            if c.query_drop(format!("INSERT INTO t (id) VALUES ({id})"))
                .await
                .is_ok()
            {
                break;
            }
            assert!(
                killed.elapsed() < Duration::from_secs(30),
                "round {round}: no failover"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let took = killed.elapsed();
        eprintln!("round {round}: {took:?}");
        assert!(
            took < Duration::from_millis(3 * PERIOD_MS + 3000),
            "round {round}: failover took {took:?}"
        );
        times.push(took);
        servers[active].restart().await;
        active = 1 - active;
        // Let the restarted server's heartbeat see it alive before it is needed as the standby.
        tokio::time::sleep(Duration::from_millis(3 * PERIOD_MS)).await;
    }
    times.sort();
    println!(
        "failover over {} kills (heartbeat {PERIOD_MS} ms, maxRetryCount 3): min {:?} median {:?} max {:?}",
        times.len(),
        times[0],
        times[times.len() / 2],
        times[times.len() - 1]
    );
}

/// Waits until one of `servers` runs a statement containing `marker` (its processlist shows it),
/// then kills that server with SIGKILL; returns its port.
async fn kill_the_one_running(servers: &mut [&mut Throwaway], marker: &str) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        for s in servers.iter_mut() {
            let mut c = s.conn(None).await;
            let n: Option<i64> = c
                .query_first(format!(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%{marker}%' AND ID <> CONNECTION_ID()"
                ))
                .await
                .unwrap();
            drop(c);
            if n.unwrap_or(0) > 0 {
                let port = s.port;
                s.kill();
                return port;
            }
        }
        assert!(Instant::now() < deadline, "no server ran {marker}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_whose_server_dies_mid_statement_is_retried_on_another_host() {
    let (a, mut b) = pair("mid").await;
    // A heartbeat too slow to notice the kill: only the statement's own failure can.
    let dir = config(r#"balance="1""#, &read_host_of("select user()", &a, &b));
    let port = start_gateway(dir.path()).await;
    let mut c = client(port).await;
    wait_reads_on(&mut c, b.port, Duration::from_secs(10)).await;
    // The readHost dies while it runs the read; the client sees the writeHost's answer, no error.
    let read = c.query_first::<(i64, u16), _>("SELECT SLEEP(1.5) AS h5mid_marker, @@port");
    let mut servers = [&mut b];
    let (answer, killed) = tokio::join!(read, kill_the_one_running(&mut servers, "h5mid_marker"));
    assert_eq!(killed, b.port);
    assert_eq!(answer.unwrap(), Some((0, a.port)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_or_a_transaction_whose_server_dies_mid_statement_is_not_retried() {
    // writeType 1: both servers take writes, so a retried write would land on the survivor.
    let (mut a, mut b) = pair("nort").await;
    let dir = config(
        r#"balance="0" writeType="1""#,
        &two_write_hosts("select 1", &a, &b),
    );
    let port = start_gateway(dir.path()).await;
    let mut c = client(port).await;
    let write =
        c.query_drop("INSERT INTO t (id) SELECT 7 FROM DUAL WHERE SLEEP(1.5) = 0 /* h5nort_w */");
    let mut servers = [&mut a, &mut b];
    let (result, killed) = tokio::join!(write, kill_the_one_running(&mut servers, "h5nort_w"));
    let e = result.expect_err("a write whose server died must fail, not run again elsewhere");
    eprintln!("write on {killed} failed: {e}");
    let survivor = if killed == a.port { &b } else { &a };
    assert!(
        !ids(survivor).await.contains(&7),
        "the write was retried on the survivor"
    );

    if killed == a.port {
        a.restart().await;
    } else {
        b.restart().await;
    }

    // In a transaction, a read whose server dies fails too: a retry elsewhere would read outside
    // the transaction. (balance 2 would send a retried read to the other server.)
    let dir = config(
        r#"balance="2" writeType="1""#,
        &two_write_hosts("select 1", &a, &b),
    );
    let port = start_gateway(dir.path()).await;
    let mut c = client(port).await;
    c.query_drop("BEGIN").await.unwrap();
    let read = c.query_first::<(i64, u16), _>("SELECT SLEEP(1.5) AS h5nort_t, @@port");
    let mut servers = [&mut a, &mut b];
    let (result, killed) = tokio::join!(read, kill_the_one_running(&mut servers, "h5nort_t"));
    let e = result.expect_err("a read in a transaction whose server died must fail");
    eprintln!("read in a transaction on {killed} failed: {e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_type_3_leaves_a_galera_node_that_is_not_ready() {
    // Two one-node Galera clusters as the writeHosts. A node that leaves its cluster still
    // answers queries (a plain heartbeat would keep it), but its wsrep status says it must not
    // take statements: Mycat's switchType 3 heartbeat marks it down and fails over.
    let mut a = Throwaway::start_galera("gala", 1).await;
    let b = Throwaway::start_galera("galb", 2).await;
    for s in [&a, &b] {
        create_table(s).await;
    }
    let dir = config(
        r#"balance="0" switchType="3""#,
        &two_write_hosts("show status like 'wsrep%'", &a, &b),
    );
    let mut c = client(start_gateway(dir.path()).await).await;
    // Healthy Galera nodes pass the check: statements stay on a.
    tokio::time::sleep(Duration::from_millis(5 * PERIOD_MS)).await;
    all_reads_on(&mut c, a.port).await;
    c.query_drop("INSERT INTO t (id) VALUES (1)").await.unwrap();
    assert_eq!(ids(&a).await, [1]);

    let mut admin = a.conn(None).await;
    admin
        .query_drop("SET GLOBAL wsrep_cluster_address = ''")
        .await
        .unwrap();
    let ready: Option<(String, String)> = admin
        .query_first("SHOW STATUS LIKE 'wsrep_ready'")
        .await
        .unwrap();
    assert_eq!(ready.map(|r| r.1).as_deref(), Some("OFF"));
    let took = wait_reads_on(&mut c, b.port, Duration::from_secs(10)).await;
    eprintln!("switched to b {took:?} after a left its cluster");
    c.query_drop("INSERT INTO t (id) VALUES (2)").await.unwrap();
    assert_eq!(ids(&b).await, [2]);
    let index = dnindex_with(dir.path(), "fo=1\n").await;
    assert!(index.contains("fo=1\n"), "{index}");
    a.kill();
}
