//! ZooKeeper cluster mode (issue 22): three manx processes, a real ZooKeeper (Debian's
//! package) and a throwaway MariaDB primary with a GTID replica, killed with SIGKILL. One
//! dataHost `dh` with writeHosts `m1` (index 0) and `m2` (index 1).
//!
//! Slow suite: each test starts its own servers and three gateways (15-40 s each).

mod common;

use std::time::{Duration, Instant};

use common::mariadb::Throwaway;
use common::postgres::PgServer;
use common::proxy::FaultProxy;
use common::run_all;
use common::zookeeper::ZkServer;
use common::{GatewayProcess, closed_port, opts, xml};
use mysql_async::prelude::Queryable;

/// Heartbeat period (and coordination period) of these tests, in milliseconds.
const PERIOD_MS: u64 = 300;
/// The ZooKeeper session timeout asked for, in milliseconds.
const SESSION_MS: u64 = 2_000;
const CLUSTER_ID: &str = "manx-test";

/// A primary (semi-synchronous, lossless `AFTER_SYNC`) with database `cl` and table `t`, and a
/// GTID replica that acknowledges every transaction before the primary commits it.
async fn pair(name: &str) -> (Throwaway, Throwaway) {
    pair_with(name, true).await
}

/// [`pair`], with asynchronous replication unless `semi_sync`.
async fn pair_with(name: &str, semi_sync: bool) -> (Throwaway, Throwaway) {
    let m1 = Throwaway::start(&format!("{name}1"), 1).await;
    let m2 = Throwaway::start(&format!("{name}2"), 2).await;
    let mut c = m1.conn(None).await;
    if semi_sync {
        c.query_drop(
            "SET GLOBAL rpl_semi_sync_master_enabled = ON;
             SET GLOBAL rpl_semi_sync_master_wait_point = AFTER_SYNC;
             SET GLOBAL rpl_semi_sync_master_timeout = 60000",
        )
        .await
        .unwrap();
        let mut r = m2.conn(None).await;
        r.query_drop("SET GLOBAL rpl_semi_sync_slave_enabled = ON")
            .await
            .unwrap();
    }
    m2.replicate_from(&m1).await;
    run_all(
        &mut c,
        &[
            "CREATE DATABASE cl",
            "CREATE TABLE cl.t (id INT PRIMARY KEY, via VARCHAR(8))",
        ],
    )
    .await;
    m2.catch_up(&m1).await;
    (m1, m2)
}

/// One instance's configuration directory: schema `CL` on dataNode `dn` of dataHost `dh`
/// (`m1`, `m2`), user `cl`/`cl`, `myid.properties` naming `myid` and ZooKeeper at `zk`.
fn config(myid: &str, zk: &str, m1: &Throwaway, m2: &Throwaway) -> tempfile::TempDir {
    let host = |name: &str, s: &Throwaway| xml::host("writeHost", name, s.port);
    config_with(
        myid,
        zk,
        &format!(
            r#"<dataHost name="dh" maxCon="20" minCon="1" balance="0" switchType="1" dbType="mysql" dbDriver="native">
        <heartbeat>select 1</heartbeat>
        {}{}
    </dataHost>"#,
            host("m1", m1),
            host("m2", m2)
        ),
    )
}

/// [`config`] with the dataHost `dh` given as XML.
fn config_with(myid: &str, zk: &str, data_host: &str) -> tempfile::TempDir {
    let dir = xml::config_dir(
        &format!(
            r#"<schema name="CL" dataNode="dn"></schema>
    <dataNode name="dn" dataHost="dh" database="cl" />
    {data_host}"#
        ),
        &format!(
            r#"<system>
        <property name="dataNodeHeartbeatPeriod">{PERIOD_MS}</property>
        <property name="heartbeatTimeout">1000</property>
        <property name="useZKSwitch">true</property>
        <property name="zkSessionTimeout">{SESSION_MS}</property>
        <property name="failoverCatchUpTimeout">1500</property>
    </system>
    {}"#,
            xml::user("cl", "cl", "CL")
        ),
    );
    std::fs::write(
        dir.path().join("myid.properties"),
        format!(
            "loadZk=true\nzkURL={zk}\nclusterId={CLUSTER_ID}\nmyid={myid}\nclusterSize=3\nclusterNodes=manx1,manx2,manx3\n"
        ),
    )
    .unwrap();
    dir
}

/// A running instance: its process, config directory and log.
struct Instance {
    process: GatewayProcess,
    dir: tempfile::TempDir,
    name: String,
}

impl Instance {
    /// [`Instance::start`] over a given configuration directory.
    async fn start_in(name: &str, dir: tempfile::TempDir) -> Instance {
        Self::start_in_env(name, dir, &[]).await
    }

    /// [`Instance::start_in`] with more environment variables for the process.
    async fn start_in_env(name: &str, dir: tempfile::TempDir, env: &[(&str, &str)]) -> Instance {
        let log = dir.path().join("manx.log");
        let (process, _) = GatewayProcess::start_env(
            dir.path(),
            ("cl", "cl", "CL"),
            Some(&log),
            (closed_port(), closed_port()),
            env,
        )
        .await;
        Instance {
            process,
            dir,
            name: name.to_string(),
        }
    }

    /// Instance `name` (its myid) over a [`config`] for ZooKeeper at `zk` and the servers
    /// `pair`, with more environment variables `env`.
    async fn start(
        name: &str,
        zk: &str,
        pair: (&Throwaway, &Throwaway),
        env: &[(&str, &str)],
    ) -> Instance {
        Self::start_in_env(name, config(name, zk, pair.0, pair.1), env).await
    }

    async fn client(&self) -> mysql_async::Conn {
        mysql_async::Conn::new(opts(self.process.port, "cl", "cl", Some("CL")))
            .await
            .unwrap_or_else(|e| panic!("connect to {}: {e}", self.name))
    }

    /// Runs `sql` on a new connection to schema `CL`.
    ///
    /// Errors: the login or the statement fails (the message).
    async fn write(&self, sql: &str) -> Result<(), String> {
        let mut c = mysql_async::Conn::new(opts(self.process.port, "cl", "cl", Some("CL")))
            .await
            .map_err(|e| e.to_string())?;
        c.query_drop(sql).await.map_err(|e| e.to_string())
    }

    /// A connection to its manager port, as `cl`.
    async fn manager(&self) -> mysql_async::Conn {
        mysql_async::Conn::new(opts(self.process.manager_port, "cl", "cl", None))
            .await
            .unwrap()
    }

    /// Runs `sql` ([`Instance::write`]) every 100 ms until it succeeds; panics with the log
    /// when it has not within `limit`.
    async fn write_within(&self, sql: &str, limit: Duration) {
        let start = Instant::now();
        while self.write(sql).await.is_err() {
            assert!(start.elapsed() < limit, "{}", self.log());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `show @@cluster`'s row for `dh`: (ZK, LEADER, EPOCH, INDEX, POSITION, NOTE).
    async fn cluster_row(&self) -> (String, String, u64, usize, String, String) {
        let mut m = self.manager().await;
        let rows: Vec<mysql_async::Row> = m.query("show @@cluster").await.unwrap();
        let row = rows
            .into_iter()
            .find(|r| r.get::<String, _>("DATAHOST").as_deref() == Some("dh"))
            .expect("show @@cluster has a row for dh");
        let get = |name: &str| {
            row.get::<Option<String>, _>(name)
                .flatten()
                .unwrap_or_default()
        };
        (
            get("ZK"),
            get("LEADER"),
            get("EPOCH").parse().unwrap(),
            get("INDEX").parse().unwrap(),
            get("POSITION"),
            get("NOTE"),
        )
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("manx.log")).unwrap_or_default()
    }

    fn dnindex(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("dnindex.properties")).unwrap_or_default()
    }
}

/// Waits (at most `limit`) until `check` holds for every instance's `show @@cluster` row.
async fn wait_all(
    instances: &[&Instance],
    limit: Duration,
    what: &str,
    check: impl Fn(&(String, String, u64, usize, String, String)) -> bool,
) {
    let start = Instant::now();
    loop {
        let mut rows = Vec::new();
        for i in instances {
            rows.push((i.name.clone(), i.cluster_row().await));
        }
        if rows.iter().all(|(_, r)| check(r)) {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "{what}: not within {limit:?}: {rows:?}\n{}",
            instances
                .iter()
                .map(|i| format!("--- {} ---\n{}", i.name, i.log()))
                .collect::<String>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits (at most `limit`) until every instance's dataHost `dh` is on writeHost 1.
async fn switched(instances: &[&Instance], limit: Duration, what: &str) {
    wait_all(instances, limit, what, |r| r.3 == 1).await;
}

/// A ZooKeeper named `cl-<tag>`, a semi-synchronous pair ([`pair`]) and `N` instances
/// `manx1`... over them, started in that order (manx1 leads), every one connected.
async fn rig<const N: usize>(tag: &str) -> (ZkServer, Throwaway, Throwaway, [Instance; N]) {
    let zk = ZkServer::start(&format!("cl-{tag}")).await;
    let (m1, m2) = pair(&format!("cl{tag}")).await;
    let instances = instances::<N>(&zk.address(), &m1, &m2).await;
    let refs: Vec<&Instance> = instances.iter().collect();
    connected(&refs).await;
    (zk, m1, m2, instances)
}

/// `N` instances `manx1`... over ZooKeeper at `zk` and the servers `m1`, `m2`, started in that
/// order (manx1 leads once they connect).
async fn instances<const N: usize>(zk: &str, m1: &Throwaway, m2: &Throwaway) -> [Instance; N] {
    let mut instances = Vec::new();
    for i in 1..=N {
        instances.push(Instance::start(&format!("manx{i}"), zk, (m1, m2), &[]).await);
    }
    let Ok(instances) = <[Instance; N]>::try_from(instances) else {
        unreachable!("N instances were started")
    };
    instances
}

/// Waits (at most 20 s) until every instance has its ZooKeeper session and sees manx1 lead (the
/// first started; every test starts manx1 first).
async fn connected(instances: &[&Instance]) {
    wait_all(
        instances,
        Duration::from_secs(20),
        "connected with manx1 leading",
        |r| r.0 == "connected" && r.1 == "manx1",
    )
    .await;
}

/// The index document in ZooKeeper (text), read directly.
async fn znode(zk: &ZkServer) -> String {
    let client = zk.client().await;
    let (data, _) = client
        .get_data(&format!("/mycat/{CLUSTER_ID}/bindata/dnindex.properties"))
        .await
        .unwrap();
    String::from_utf8(data).unwrap()
}

async fn ids_on(s: &Throwaway) -> Vec<i64> {
    let mut c = s.conn(Some("cl")).await;
    c.query("SELECT id FROM t ORDER BY id").await.unwrap()
}

/// INSERTs through `instance` with ids `start`, `start + 2`, ... until `stop` is set, then
/// until `after` more succeeded (or 30 s); returns the acknowledged ids and when the first
/// write succeeded after `killed` was set.
async fn write_load(
    instance_port: u16,
    start: i64,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    killed: std::sync::Arc<std::sync::Mutex<Option<Instant>>>,
    after: usize,
) -> (Vec<i64>, Option<Duration>) {
    let mut c = mysql_async::Conn::new(opts(instance_port, "cl", "cl", Some("CL")))
        .await
        .unwrap();
    let mut acked = Vec::new();
    let mut id = start;
    let mut since_stop = 0;
    let mut resumed = None;
    let began = Instant::now();
    while since_stop < after && began.elapsed() < Duration::from_secs(45) {
        let sent = Instant::now();
        let r = c
            .query_drop(format!("INSERT INTO t (id, via) VALUES ({id}, 'load')"))
            .await;
        match r {
            Ok(()) => {
                acked.push(id);
                let k = *killed.lock().unwrap();
                if let Some(k) = k
                    && sent > k
                {
                    resumed.get_or_insert(k.elapsed());
                }
                if stop.load(std::sync::atomic::Ordering::Acquire) {
                    since_stop += 1;
                }
            }
            Err(mysql_async::Error::Server(_)) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(_) => {
                // The gateway closed a connection whose backend died mid-statement: the write
                // may or may not have happened; it was not acknowledged.
                tokio::time::sleep(Duration::from_millis(20)).await;
                c = mysql_async::Conn::new(opts(instance_port, "cl", "cl", Some("CL")))
                    .await
                    .unwrap();
            }
        }
        id += 2;
    }
    (acked, resumed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_of_the_primary_under_load_switches_every_instance_to_the_same_standby() {
    let zk = ZkServer::start("cl-kill").await;
    let (mut m1, m2) = pair("clk").await;
    let [a, b, c] = instances(&zk.address(), &m1, &m2).await;
    let all = [&a, &b, &c];
    wait_all(
        &all,
        Duration::from_secs(20),
        "every instance connected with the leader known",
        |r| r.0 == "connected" && r.1 == "manx1" && r.3 == 0,
    )
    .await;
    assert!(znode(&zk).await.contains("dh=0\n"), "{}", znode(&zk).await);

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let killed = std::sync::Arc::new(std::sync::Mutex::new(None));
    let load_a = tokio::spawn(write_load(
        a.process.port,
        1,
        stop.clone(),
        killed.clone(),
        20,
    ));
    let load_b = tokio::spawn(write_load(
        b.process.port,
        2,
        stop.clone(),
        killed.clone(),
        20,
    ));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    m1.kill();
    *killed.lock().unwrap() = Some(Instant::now());
    stop.store(true, std::sync::atomic::Ordering::Release);
    let (acked_a, resumed_a) = load_a.await.unwrap();
    let (acked_b, resumed_b) = load_b.await.unwrap();
    eprintln!(
        "3 instances: writes resumed {resumed_a:?} (manx1) / {resumed_b:?} (manx2) after SIGKILL of the primary; acknowledged {} + {} INSERTs",
        acked_a.len(),
        acked_b.len()
    );
    assert!(
        resumed_a.is_some() && resumed_b.is_some(),
        "writes did not resume"
    );
    // Every instance on the standby, at the same epoch, decided once.
    wait_all(
        &all,
        Duration::from_secs(10),
        "every instance on writeHost 1 at epoch 1",
        |r| r.3 == 1 && r.2 == 1,
    )
    .await;
    let doc = znode(&zk).await;
    assert!(
        doc.contains("dh=1\n") && doc.starts_with("#manx epoch=1 leader=manx1"),
        "{doc}"
    );
    for i in all {
        assert!(
            i.dnindex().contains("dh=1\n"),
            "{}: {}",
            i.name,
            i.dnindex()
        );
    }
    let decided: usize = all
        .iter()
        .map(|i| i.log().matches("failover decided").count())
        .sum();
    assert_eq!(decided, 1, "exactly one decision");
    // No instance switched on its own.
    for i in all {
        assert!(!i.log().contains("reason=heartbeat error"), "{}", i.log());
    }
    // Every acknowledged write is on the new primary.
    let on_m2 = ids_on(&m2).await;
    let mut missing = Vec::new();
    for id in acked_a.iter().chain(&acked_b) {
        if on_m2.binary_search(id).is_err() {
            missing.push(*id);
        }
    }
    eprintln!(
        "acknowledged writes checked on the new primary: {} (missing: {})",
        acked_a.len() + acked_b.len(),
        missing.len()
    );
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    // The third instance, which carried no load, writes to the standby too.
    c.write("INSERT INTO t (id, via) VALUES (1000000, 'manx3')")
        .await
        .unwrap();
    assert!(ids_on(&m2).await.contains(&1_000_000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_instance_cut_off_from_zookeeper_never_switches_alone() {
    let zk = ZkServer::start("cl-cut").await;
    let (mut m1, m2) = pair("clc").await;
    let proxy = FaultProxy::start(([127, 0, 0, 1], zk.port)).await;
    let a = Instance::start("manx1", &zk.address(), (&m1, &m2), &[]).await;
    let b = Instance::start("manx2", &zk.address(), (&m1, &m2), &[]).await;
    let c = Instance::start("manx3", &proxy.address(), (&m1, &m2), &[]).await;
    wait_all(
        &[&a, &b, &c],
        Duration::from_secs(20),
        "every instance connected",
        |r| r.0 == "connected" && r.1 == "manx1",
    )
    .await;
    // manx3 is partitioned from ZooKeeper (TCP stays up, nothing gets through), then the
    // primary dies: its own heartbeat sees it, but it must not switch.
    proxy.blackhole();
    m1.kill();
    switched(
        &[&a, &b],
        Duration::from_secs(15),
        "manx1 and manx2 switched",
    )
    .await;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        let (_, _, epoch, index, _, _) = c.cluster_row().await;
        assert_eq!((epoch, index), (0, 0), "the cut-off instance switched");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Its writes (and logins to the schema, whose dataNode it checks) fail: they go nowhere.
    assert!(
        c.write("INSERT INTO t (id, via) VALUES (1, 'manx3')")
            .await
            .is_err(),
        "a write through the cut-off instance went somewhere"
    );
    assert!(c.dnindex().contains("dh=0\n"), "{}", c.dnindex());
    // Healed: it follows the decision it missed.
    proxy.heal();
    wait_all(
        &[&c],
        Duration::from_secs(20),
        "manx3 follows after the partition",
        |r| r.0 == "connected" && r.3 == 1 && r.2 == 1,
    )
    .await;
    c.write("INSERT INTO t (id, via) VALUES (2, 'manx3')")
        .await
        .unwrap();
    assert!(ids_on(&m2).await.contains(&2));
    assert!(!ids_on(&m2).await.contains(&1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn zookeeper_down_means_no_switch_and_writes_go_on() {
    let (mut zk, mut m1, m2, [a, b]) = rig("down").await;
    zk.kill();
    let mut ca = a.client().await;
    for id in 1..=20 {
        ca.query_drop(format!("INSERT INTO t (id, via) VALUES ({id}, 'nozk')"))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    m2.catch_up(&m1).await;
    assert_eq!(ids_on(&m1).await.len(), 20);
    // The primary dies while ZooKeeper is down: nobody switches.
    m1.kill();
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    for i in [&a, &b] {
        let (_, _, _, index, _, _) = i.cluster_row().await;
        assert_eq!(index, 0, "{} switched without ZooKeeper", i.name);
        assert!(i.dnindex().contains("dh=0\n"));
    }
    // ZooKeeper back: the decision is made once, and both follow.
    zk.restart().await;
    wait_all(
        &[&a, &b],
        Duration::from_secs(30),
        "switched once ZooKeeper is back",
        |r| r.0 == "connected" && r.3 == 1,
    )
    .await;
    a.write("INSERT INTO t (id, via) VALUES (100, 'back')")
        .await
        .unwrap();
    assert!(ids_on(&m2).await.contains(&100));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lagging_standby_is_not_promoted_while_acknowledged_writes_are_missing() {
    let (_zk, mut m1, m2, [a, b]) = rig("lag").await;
    // The standby receives (semi-sync acknowledges) but does not apply.
    let mut r = m2.conn(None).await;
    r.query_drop("STOP SLAVE SQL_THREAD").await.unwrap();
    let mut cb = b.client().await;
    for id in 1..=10 {
        cb.query_drop(format!("INSERT INTO t (id, via) VALUES ({id}, 'lag')"))
            .await
            .unwrap();
    }
    let (_, _, _, _, position, _) = b.cluster_row().await;
    assert!(!position.is_empty(), "manx2 tracked no GTID");
    m1.kill();
    // Down for everyone, but the standby lacks acknowledged writes: no switch, and the leader
    // says why.
    wait_all(
        &[&a],
        Duration::from_secs(15),
        "the refusal is explained",
        |r| r.5.contains("has not applied the acknowledged writes"),
    )
    .await;
    let (_, _, epoch, index, _, note) = a.cluster_row().await;
    assert_eq!((epoch, index), (0, 0), "{note}");
    assert!(note.contains(&position) || note.contains("0-1-"), "{note}");
    assert!(ids_on(&m2).await.is_empty());
    assert!(a.log().contains("failover refused"));
    // The standby catches up: the switch follows, with every acknowledged write on it.
    r.query_drop("START SLAVE SQL_THREAD").await.unwrap();
    switched(
        &[&a, &b],
        Duration::from_secs(20),
        "switched after catch-up",
    )
    .await;
    assert_eq!(ids_on(&m2).await, (1..=10).collect::<Vec<i64>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leader_killed_mid_failover_is_replaced_and_the_switch_happens_once() {
    let zk = ZkServer::start("cl-lead").await;
    let (mut m1, m2) = pair("cll2").await;
    // manx1 leads (first in the election) and pauses 30 s between its decision and its write.
    let mut a = Instance::start(
        "manx1",
        &zk.address(),
        (&m1, &m2),
        &[("MANX_COORD_PAUSE_MS", "30000")],
    )
    .await;
    let b = Instance::start("manx2", &zk.address(), (&m1, &m2), &[]).await;
    let c = Instance::start("manx3", &zk.address(), (&m1, &m2), &[]).await;
    connected(&[&a, &b, &c]).await;
    m1.kill();
    // Wait until the leader is inside its decision, then kill it.
    let start = Instant::now();
    while !a.log().contains("MANX_COORD_PAUSE_MS") {
        assert!(start.elapsed() < Duration::from_secs(15), "{}", a.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = a.process.child.kill();
    let _ = a.process.child.wait();
    wait_all(
        &[&b, &c],
        Duration::from_secs(20),
        "the new leader switched",
        |r| r.1 == "manx2" && r.3 == 1,
    )
    .await;
    let doc = znode(&zk).await;
    assert!(doc.starts_with("#manx epoch=1 leader=manx2"), "{doc}");
    let decided =
        b.log().matches("failover decided").count() + c.log().matches("failover decided").count();
    assert_eq!(decided, 1);
    b.write("INSERT INTO t (id, via) VALUES (7, 'new')")
        .await
        .unwrap();
    assert!(ids_on(&m2).await.contains(&7));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn switch_datasource_in_cluster_mode_fences_the_old_writer_and_every_instance_follows() {
    let zk = ZkServer::start("cl-switch").await;
    let (m1, m2) = pair("cls").await;
    // An application account on the old primary without READ_ONLY ADMIN: what read_only
    // stops.
    let mut admin = m1.conn(None).await;
    admin
        .query_drop(
            "CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY 'app';
             GRANT INSERT, SELECT ON cl.* TO 'app'@'127.0.0.1'",
        )
        .await
        .unwrap();
    let [a, b, c] = instances(&zk.address(), &m1, &m2).await;
    connected(&[&a, &b, &c]).await;
    a.write("INSERT INTO t (id, via) VALUES (1, 'before')")
        .await
        .unwrap();
    // A transaction of manx3 left open on the old primary.
    let mut open = open_transaction(&c).await;
    // The operator switches through manx2, which does not lead.
    let mut manager = b.manager().await;
    manager
        .query_drop("switch @@datasource dh:1")
        .await
        .unwrap();
    assert_eq!(manager.affected_rows(), 1);
    wait_all(
        &[&a, &b, &c],
        Duration::from_secs(10),
        "every instance follows",
        |r| r.3 == 1 && r.2 == 1,
    )
    .await;
    assert!(znode(&zk).await.starts_with("#manx epoch=1 leader=manx2"));
    // Fenced on the server: read_only, and the connections of the gateway's account (this
    // test's admin one included) are gone.
    assert!(admin.query_drop("SELECT 1").await.is_err());
    let mut admin = m1.conn(None).await;
    let ro: Option<i64> = admin
        .query_first("SELECT @@global.read_only")
        .await
        .unwrap();
    assert_eq!(ro, Some(1));
    let mut app = mysql_async::Conn::new(opts(m1.port, "app", "app", Some("cl")))
        .await
        .unwrap();
    let e = app
        .query_drop("INSERT INTO t (id, via) VALUES (3, 'app')")
        .await
        .unwrap_err();
    assert_eq!(common::server_error(e).0, 1290);
    assert!(
        open.query_drop("COMMIT").await.is_err(),
        "the fenced transaction committed"
    );
    let on_m1: Vec<i64> = admin
        .query("SELECT id FROM cl.t ORDER BY id")
        .await
        .unwrap();
    assert_eq!(on_m1, vec![1]);
    // Writes through every instance go to the new primary.
    for (i, instance) in [&a, &b, &c].iter().enumerate() {
        instance
            .write(&format!(
                "INSERT INTO t (id, via) VALUES ({}, 'after')",
                10 + i
            ))
            .await
            .unwrap();
    }
    let on_m2 = ids_on(&m2).await;
    assert!(
        [10, 11, 12].iter().all(|id| on_m2.contains(id)),
        "{on_m2:?}"
    );
    assert!(!on_m1.contains(&10));
}

/// Runs `manx zk publish --conf dir`: (exit success, stdout + stderr).
fn publish(dir: &std::path::Path) -> (bool, String) {
    let (code, said) = common::manx_command(&[
        "--conf",
        dir.to_str().unwrap(),
        "zk",
        "publish",
        "--wait",
        "60",
    ]);
    (code == Some(0), said)
}

async fn logs_in(port: u16, user: &str, db: &str) -> bool {
    mysql_async::Conn::new(opts(port, user, user, Some(db)))
        .await
        .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_published_configuration_reaches_every_instance_or_none() {
    let zk = ZkServer::start("cl-conf").await;
    let (m1, m2) = pair("clp").await;
    let [a, b, c] = instances(&zk.address(), &m1, &m2).await;
    let all = [&a, &b, &c];
    connected(&all).await;
    // The operator's directory: manx1's files with one more user.
    let staged = config("publisher", &zk.address(), &m1, &m2);
    let server_xml = std::fs::read_to_string(staged.path().join("server.xml")).unwrap();
    let with_user = server_xml.replace(
        "</mycat:server>",
        r#"<user name="cl2"><property name="password">cl2</property><property name="schemas">CL</property></user>
</mycat:server>"#,
    );
    std::fs::write(staged.path().join("server.xml"), &with_user).unwrap();
    let (ok, said) = publish(staged.path());
    assert!(ok, "{said}");
    assert!(
        said.contains("committed") && said.contains("manx3: ok"),
        "{said}"
    );
    let version = |r: &mysql_async::Row| r.get::<u64, _>("CONFIG_VERSION").unwrap();
    let mut versions = Vec::new();
    for i in all {
        // Committed means installed or about to be on every instance: within a few periods.
        let start = Instant::now();
        while !logs_in(i.process.port, "cl2", "CL").await {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{}: cl2 cannot log in\n{}",
                i.name,
                i.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut m = i.manager().await;
        let rows: Vec<mysql_async::Row> = m.query("show @@cluster").await.unwrap();
        versions.push(version(&rows[0]));
        assert!(
            std::fs::read_to_string(i.dir.path().join("server.xml"))
                .unwrap()
                .contains("cl2"),
            "{}: the file was not written",
            i.name
        );
    }
    assert!(
        versions[0] > 0 && versions.iter().all(|v| *v == versions[0]),
        "{versions:?}"
    );

    // A configuration that loads but that no instance can install (a new dataHost whose
    // writeHost does not answer): refused by every vote, installed nowhere.
    let schema = std::fs::read_to_string(staged.path().join("schema.xml")).unwrap();
    let broken = schema.replace(
        "</mycat:schema>",
        &format!(
            r#"<schema name="CL2" dataNode="dn2"></schema>
    <dataNode name="dn2" dataHost="dh2" database="cl" />
    <dataHost name="dh2" maxCon="5" minCon="1" balance="0" dbType="mysql" dbDriver="native">
        <heartbeat>select 1</heartbeat>
        <writeHost host="gone" url="127.0.0.1:{}" user="manx" password="manx" />
    </dataHost>
</mycat:schema>"#,
            closed_port()
        ),
    );
    std::fs::write(staged.path().join("schema.xml"), broken).unwrap();
    std::fs::write(
        staged.path().join("server.xml"),
        with_user.replace(
            r#"<property name="schemas">CL</property></user>
</mycat:server>"#,
            r#"<property name="schemas">CL,CL2</property></user>
</mycat:server>"#,
        ),
    )
    .unwrap();
    let (ok, said) = publish(staged.path());
    assert!(!ok, "{said}");
    assert!(said.contains("abort") && said.contains("gone"), "{said}");
    tokio::time::sleep(Duration::from_millis(5 * PERIOD_MS)).await;
    for i in all {
        assert!(!logs_in(i.process.port, "cl2", "CL2").await, "{}", i.name);
        assert!(logs_in(i.process.port, "cl2", "CL").await, "{}", i.name);
        assert!(
            !std::fs::read_to_string(i.dir.path().join("schema.xml"))
                .unwrap()
                .contains("dh2"),
            "{}: a refused file was written",
            i.name
        );
        let (_, _, _, _, _, _) = i.cluster_row().await;
    }

    // Two operators publish at once over the same version: a change is never lost without a
    // word — each publish that says committed is in force.
    std::fs::write(staged.path().join("schema.xml"), &schema).unwrap();
    let mut dirs = Vec::new();
    for user in ["cl3", "cl4"] {
        let dir = config("publisher", &zk.address(), &m1, &m2);
        std::fs::write(
            dir.path().join("server.xml"),
            with_user.replace(
                "</mycat:server>",
                &format!(
                    r#"<user name="{user}"><property name="password">{user}</property><property name="schemas">CL</property></user>
</mycat:server>"#
                ),
            ),
        )
        .unwrap();
        dirs.push(dir);
    }
    let handles: Vec<_> = dirs
        .iter()
        .map(|d| {
            let path = d.path().to_path_buf();
            std::thread::spawn(move || publish(&path))
        })
        .collect();
    let outcomes: Vec<(bool, String)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    eprintln!("concurrent publishes: {outcomes:?}");
    let committed: Vec<&str> = ["cl3", "cl4"]
        .into_iter()
        .zip(&outcomes)
        .filter(|(_, (ok, _))| *ok)
        .map(|(u, _)| u)
        .collect();
    // Both read the published version before either could be voted on (a vote takes a
    // period): exactly one commits.
    assert_eq!(committed.len(), 1, "{outcomes:?}");
    for (ok, said) in &outcomes {
        assert!(*ok || said.contains("was committed since"), "{said}");
    }
    // The newest committed version is in force everywhere.
    let version_of = |said: &str| -> u64 {
        said.split("configuration version ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let (newest, _) = ["cl3", "cl4"]
        .into_iter()
        .zip(&outcomes)
        .filter(|(_, (ok, _))| *ok)
        .max_by_key(|(_, (_, said))| version_of(said))
        .unwrap();
    for i in all {
        let start = Instant::now();
        while !logs_in(i.process.port, newest, "CL").await {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{}: {newest}",
                i.name
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    // An instance started later from stale files takes the published configuration.
    let d = Instance::start("manx4", &zk.address(), (&m1, &m2), &[]).await;
    assert!(logs_in(d.process.port, "cl2", "CL").await, "{}", d.log());
}

/// A PostgreSQL primary with database `cl` and table `t`, and a streaming standby that has
/// replayed it.
async fn pg_pair(name: &str) -> (PgServer, PgServer) {
    let p = PgServer::primary(&format!("{name}p")).await;
    p.admin()
        .await
        .batch_execute("CREATE DATABASE cl")
        .await
        .unwrap();
    p.db("cl")
        .await
        .batch_execute(
            "CREATE TABLE t (id INT PRIMARY KEY, via VARCHAR(8)); GRANT ALL ON t TO manx",
        )
        .await
        .unwrap();
    let s = PgServer::standby_of(&p, &format!("{name}s")).await;
    s.catch_up(&p).await;
    (p, s)
}

fn pg_config(myid: &str, zk: &str, p: &PgServer, s: &PgServer) -> tempfile::TempDir {
    config_with(
        myid,
        zk,
        &format!(
            r#"<dataHost name="dh" maxCon="10" minCon="1" balance="0" switchType="1" dbType="postgresql" dbDriver="native">
        <heartbeat>select 1</heartbeat>
        {}
        {}
    </dataHost>"#,
            xml::host("writeHost", "p", p.port),
            xml::host("writeHost", "s", s.port)
        ),
    )
}

/// Instances manx1 and manx2 over [`pg_config`], both connected with manx1 leading.
async fn pg_instances(zk: &ZkServer, p: &PgServer, s: &PgServer) -> [Instance; 2] {
    let a = Instance::start_in("manx1", pg_config("manx1", &zk.address(), p, s)).await;
    let b = Instance::start_in("manx2", pg_config("manx2", &zk.address(), p, s)).await;
    connected(&[&a, &b]).await;
    [a, b]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_promoted_postgresql_standby_takes_over_with_every_acknowledged_write() {
    let zk = ZkServer::start("cl-pg").await;
    let (mut p, s) = pg_pair("clpg").await;
    let [a, b] = pg_instances(&zk, &p, &s).await;
    for id in 1..=10 {
        b.write(&format!("INSERT INTO t (id, via) VALUES ({id}, 'pg')"))
            .await
            .unwrap();
    }
    let (_, _, _, _, position, _) = b.cluster_row().await;
    assert!(position.contains('/'), "no LSN tracked: {position:?}");
    s.catch_up(&p).await;
    p.kill();
    s.promote();
    wait_all(
        &[&a, &b],
        Duration::from_secs(20),
        "switched to the promoted standby",
        |r| r.3 == 1 && r.2 == 1,
    )
    .await;
    assert_eq!(s.ids("cl").await, (1..=10).collect::<Vec<i32>>());
    a.write("INSERT INTO t (id, via) VALUES (11, 'after')")
        .await
        .unwrap();
    assert!(s.ids("cl").await.contains(&11));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_promoted_postgresql_standby_missing_acknowledged_writes_is_not_switched_to() {
    let zk = ZkServer::start("cl-pglag").await;
    let (mut p, s) = pg_pair("clpl").await;
    let [a, b] = pg_instances(&zk, &p, &s).await;
    for id in 1..=5 {
        a.write(&format!("INSERT INTO t (id, via) VALUES ({id}, 'pg')"))
            .await
            .unwrap();
    }
    s.catch_up(&p).await;
    // The standby stops receiving WAL; five more acknowledged INSERTs exist only on the
    // primary when it dies.
    let admin = s.admin().await;
    admin
        .batch_execute(&format!(
            "ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 port={} user=postgres'",
            closed_port()
        ))
        .await
        .unwrap();
    admin
        .batch_execute("SELECT pg_reload_conf()")
        .await
        .unwrap();
    let start = Instant::now();
    loop {
        let n: i64 = admin
            .query_one("SELECT count(*) FROM pg_stat_wal_receiver", &[])
            .await
            .unwrap()
            .get(0);
        if n == 0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the WAL receiver did not stop"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for id in 6..=10 {
        b.write(&format!("INSERT INTO t (id, via) VALUES ({id}, 'lost?')"))
            .await
            .unwrap();
    }
    // The primary goes down (a fast shutdown: the throwaway servers run with
    // synchronous_commit=off, so a SIGKILL would lose its own last commits too).
    p.stop();
    s.promote();
    wait_all(
        &[&a],
        Duration::from_secs(15),
        "the refusal is explained",
        |r| r.5.contains("short of"),
    )
    .await;
    for i in [&a, &b] {
        let (_, _, epoch, index, _, note) = i.cluster_row().await;
        assert_eq!((epoch, index), (0, 0), "{}: {note}", i.name);
    }
    assert_eq!(s.ids("cl").await, (1..=5).collect::<Vec<i32>>());
    // The old primary comes back: nothing was lost, writes go on there.
    p.start().await;
    a.write_within(
        "INSERT INTO t (id, via) VALUES (11, 'back')",
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(p.ids("cl").await, (1..=11).collect::<Vec<i32>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn switch_datasource_fences_a_postgresql_primary() {
    let zk = ZkServer::start("cl-pgsw").await;
    let (p, s) = pg_pair("clps").await;
    let [a, b] = pg_instances(&zk, &p, &s).await;
    a.write("INSERT INTO t (id, via) VALUES (1, 'p')")
        .await
        .unwrap();
    s.catch_up(&p).await;
    s.promote();
    let mut manager = b.manager().await;
    manager
        .query_drop("switch @@datasource dh:1")
        .await
        .unwrap();
    switched(&[&a, &b], Duration::from_secs(10), "both follow").await;
    // The old primary refuses writes in new transactions, whoever asks.
    let e = p
        .db("cl")
        .await
        .batch_execute("INSERT INTO t (id, via) VALUES (2, 'p')")
        .await
        .unwrap_err();
    assert!(format!("{e:?}").contains("read-only transaction"), "{e:?}");
    b.write("INSERT INTO t (id, via) VALUES (3, 's')")
        .await
        .unwrap();
    assert_eq!(s.ids("cl").await, vec![1, 3]);
    assert_eq!(p.ids("cl").await, vec![1]);
}

/// Asynchronous replication with the replica's IO thread stopped (nothing shipped), one
/// acknowledged `write` through the gateway, then the primary dies: the write must not be lost
/// — the leader refuses the switch, since the gateway tracked the write's GTID.
async fn refused_after(tag: &str, write: &str) {
    let zk = ZkServer::start(&format!("cl-{tag}")).await;
    let (mut m1, m2) = pair_with(&format!("cl{tag}"), false).await;
    let a = Instance::start("manx1", &zk.address(), (&m1, &m2), &[]).await;
    connected(&[&a]).await;
    a.write("INSERT INTO t (id, via) VALUES (1, 'base')")
        .await
        .unwrap();
    m2.catch_up(&m1).await;
    let mut r = m2.conn(None).await;
    r.query_drop("STOP SLAVE IO_THREAD").await.unwrap();
    let mut c = a.client().await;
    let mut result = c.query_iter(write).await.unwrap();
    while result.next().await.unwrap().is_some() {}
    drop(result);
    drop(c);
    let mut p = m1.conn(None).await;
    let binlog: Option<String> = p.query_first("SELECT @@gtid_binlog_pos").await.unwrap();
    drop(p);
    // The gateway tracked exactly the primary's last GTID.
    let start = Instant::now();
    loop {
        let (_, _, _, _, position, _) = a.cluster_row().await;
        if Some(&position) == binlog.as_ref() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{tag}: tracked {position:?}, the primary is at {binlog:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    m1.kill();
    wait_all(&[&a], Duration::from_secs(15), "refused", |r| {
        r.5.contains("has not applied")
    })
    .await;
    assert_eq!(a.cluster_row().await.3, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_returning_rows_is_tracked() {
    refused_after(
        "ret",
        "INSERT INTO t (id, via) VALUES (2, 'ret') RETURNING id",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ddl_is_tracked() {
    refused_after("ddl", "TRUNCATE TABLE t").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn switching_back_turns_read_only_off_on_the_writer_in_force() {
    let (_zk, m1, m2, [a, b]) = rig("back").await;
    let mut m = a.manager().await;
    m.query_drop("switch @@datasource dh:1").await.unwrap();
    wait_all(&[&a, &b], Duration::from_secs(10), "on m2", |r| r.3 == 1).await;
    m.query_drop("switch @@datasource dh:0").await.unwrap();
    wait_all(&[&a, &b], Duration::from_secs(10), "back on m1", |r| {
        r.3 == 0 && r.2 == 2
    })
    .await;
    let read_only = |s: &Throwaway| {
        let opts = s.opts(None);
        async move {
            let mut c = mysql_async::Conn::new(opts).await.unwrap();
            c.query_first::<i64, _>("SELECT @@global.read_only")
                .await
                .unwrap()
        }
    };
    assert_eq!(
        read_only(&m1).await,
        Some(0),
        "the writer in force is read-only"
    );
    assert_eq!(read_only(&m2).await, Some(1), "the one left is not fenced");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn junk_in_the_dnindex_znode_neither_switches_nor_stops_failover() {
    let (zk, mut m1, m2, [a, b]) = rig("junk").await;
    let client = zk.client().await;
    let path = format!("/mycat/{CLUSTER_ID}/bindata/dnindex.properties");
    for junk in [
        &b"\xff\xfe\x00garbage=\n=1\ndh=\ndh=-1\n"[..],
        b"#manx epoch=99999999999999999999999 leader=\ndh=7\n",
        b"dh=18446744073709551616\n",
    ] {
        client.set_data(&path, junk, None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(3 * PERIOD_MS)).await;
        for i in [&a, &b] {
            assert_eq!(i.cluster_row().await.3, 0, "{} switched on junk", i.name);
            i.write("INSERT INTO t (id, via) VALUES (NULL, 'junk')")
                .await
                .ok();
        }
    }
    // The leader put the index back; a real failure still fails over.
    let doc = znode(&zk).await;
    assert!(doc.contains("dh=0\n"), "{doc}");
    m1.kill();
    switched(&[&a, &b], Duration::from_secs(15), "failed over").await;
    a.write("INSERT INTO t (id, via) VALUES (500, 'after')")
        .await
        .unwrap();
    assert!(ids_on(&m2).await.contains(&500));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fencing_ends_the_gateway_accounts_connections_without_the_right_to_set_read_only() {
    let zk = ZkServer::start("cl-gw").await;
    let (m1, m2) = pair("clg").await;
    // The least-privileged account README's "Deployment: the backend account" recommends: it
    // may not set read_only (MariaDB 10.11 wants READ_ONLY ADMIN).
    let mut admin = m1.conn(None).await;
    admin
        .query_drop(
            "CREATE USER 'gw'@'127.0.0.1' IDENTIFIED BY 'gw';
             GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX ON cl.* TO 'gw'@'127.0.0.1'",
        )
        .await
        .unwrap();
    m2.catch_up(&m1).await;
    let dh = format!(
        r#"<dataHost name="dh" maxCon="20" minCon="1" balance="0" switchType="1" dbType="mysql" dbDriver="native">
        <heartbeat>select 1</heartbeat>
        <writeHost host="m1" url="127.0.0.1:{}" user="gw" password="gw" />
        <writeHost host="m2" url="127.0.0.1:{}" user="gw" password="gw" />
    </dataHost>"#,
        m1.port, m2.port
    );
    let a = Instance::start_in("manx1", config_with("manx1", &zk.address(), &dh)).await;
    let b = Instance::start_in("manx2", config_with("manx2", &zk.address(), &dh)).await;
    connected(&[&a, &b]).await;
    let mut open = open_transaction(&b).await;
    let mut m = a.manager().await;
    m.query_drop("switch @@datasource dh:1").await.unwrap();
    switched(&[&a, &b], Duration::from_secs(10), "both follow").await;
    assert!(
        open.query_drop("COMMIT").await.is_err(),
        "the old primary took the commit"
    );
    let on_m1: Vec<i64> = admin.query("SELECT id FROM cl.t").await.unwrap();
    assert!(on_m1.is_empty(), "{on_m1:?}");
    assert!(
        a.log().contains("refused to become read-only"),
        "{}",
        a.log()
    );
}

/// A client of `instance` in a transaction that has inserted row 2 (`via` 'open').
async fn open_transaction(instance: &Instance) -> mysql_async::Conn {
    let mut open = instance.client().await;
    run_all(
        &mut open,
        &["BEGIN", "INSERT INTO t (id, via) VALUES (2, 'open')"],
    )
    .await;
    open
}

/// Adds `<property name="name">value</property>` to `dir`'s server.xml `<system>`.
fn set_property(dir: &std::path::Path, name: &str, value: &str) {
    let path = dir.join("server.xml");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "<system>",
        &format!(r#"<system><property name="{name}">{value}</property>"#),
    );
    std::fs::write(path, text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_lease_stops_an_instance_cut_off_from_zookeeper_from_writing() {
    let zk = ZkServer::start("cl-lease").await;
    let (m1, m2) = pair("clls").await;
    let proxy = FaultProxy::start(([127, 0, 0, 1], zk.port)).await;
    let mut started = Vec::new();
    for (name, address) in [("manx1", zk.address()), ("manx2", proxy.address())] {
        let dir = config(name, &address, &m1, &m2);
        set_property(dir.path(), "zkWriteLease", "800");
        started.push(Instance::start_in(name, dir).await);
    }
    let [a, c] = <[Instance; 2]>::try_from(started).ok().unwrap();
    connected(&[&a, &c]).await;
    c.write("INSERT INTO t (id, via) VALUES (1, 'before')")
        .await
        .unwrap();
    // Cut off (TCP up, nothing through): within the lease and the client's notice, its
    // writes are refused, while the primary is alive and takes manx1's.
    proxy.blackhole();
    let start = Instant::now();
    let refused = loop {
        match c
            .write("INSERT INTO t (id, via) VALUES (NULL, 'cut')")
            .await
        {
            Err(e) if e.contains("1290") && e.contains("zkWriteLease") => break start.elapsed(),
            _ => {}
        }
        assert!(start.elapsed() < Duration::from_secs(5), "{}", c.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    eprintln!("writes through the cut-off instance refused {refused:?} after the partition");
    a.write("INSERT INTO t (id, via) VALUES (2, 'manx1')")
        .await
        .unwrap();
    // Reads are not refused.
    let mut cc = c.client().await;
    let n: Option<i64> = cc.query_first("SELECT COUNT(*) FROM t").await.unwrap();
    assert!(n.is_some());
    // Healed: writes again.
    proxy.heal();
    c.write_within(
        "INSERT INTO t (id, via) VALUES (3, 'healed')",
        Duration::from_secs(15),
    )
    .await;
    assert_eq!(ids_on(&m1).await, vec![1, 2, 3]);
}

/// `manx check` over `dir`: (exit success, stdout + stderr).
fn check(dir: &std::path::Path) -> (bool, String) {
    let (code, said) = common::manx_command(&["--conf", dir.to_str().unwrap(), "check"]);
    (code == Some(0), said)
}

#[test]
fn manx_check_reads_myid_properties_and_the_lease_rule() {
    let dh = format!(
        r#"<dataHost name="dh" maxCon="5" minCon="1" balance="0" dbType="mysql" dbDriver="native">
        <heartbeat>select 1</heartbeat>
        <writeHost host="m1" url="127.0.0.1:{}" user="manx" password="manx" />
    </dataHost>"#,
        closed_port()
    );
    let dir = config_with("manx1", "127.0.0.1:2181", &dh);
    let (ok, said) = check(dir.path());
    assert!(ok, "{said}");
    assert!(
        said.contains("cluster mode: myid manx1 in cluster manx-test at ZooKeeper 127.0.0.1:2181"),
        "{said}"
    );
    // The lease must run out before the session does.
    set_property(dir.path(), "zkWriteLease", "1000");
    let (ok, said) = check(dir.path());
    assert!(!ok, "{said}");
    assert!(
        said.contains("server.xml")
            && said
                .contains("zkWriteLease 1000 ms must be under half of zkSessionTimeout (2000 ms)"),
        "{said}"
    );
    // A myid.properties with loadZk=true and no myid names the file and the key.
    let dir = config_with("manx1", "127.0.0.1:2181", &dh);
    let path = dir.path().join("myid.properties");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("myid=manx1\n", "");
    std::fs::write(&path, text).unwrap();
    let (ok, said) = check(dir.path());
    assert!(!ok, "{said}");
    assert!(
        said.contains("myid.properties") && said.contains("loadZk=true but myid is missing"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_second_instance_with_the_same_myid_is_refused_and_pushes_nobody_out() {
    let (zk, m1, m2, [a, b]) = rig("dup").await;
    let dup = Instance::start("manx2", &zk.address(), (&m1, &m2), &[]).await;
    let start = Instant::now();
    while !dup.log().contains("another live instance holds this myid") {
        assert!(
            start.elapsed() < Duration::from_millis(SESSION_MS + 8_000),
            "{}",
            dup.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let client = zk.client().await;
    let election = client
        .list_children(&format!("/mycat/{CLUSTER_ID}/manx/election"))
        .await
        .unwrap();
    assert_eq!(election.len(), 2, "{election:?}");
    assert!(
        client
            .check_stat(&format!("/mycat/{CLUSTER_ID}/line/manx2"))
            .await
            .unwrap()
            .is_some()
    );
    for i in [&a, &b] {
        let (zk_state, leader, ..) = i.cluster_row().await;
        assert_eq!((zk_state.as_str(), leader.as_str()), ("connected", "manx1"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_ending_in_a_comment_is_tracked() {
    refused_after(
        "cmt",
        "INSERT INTO t (id, via) VALUES (2, 'cmt') -- the client's note",
    )
    .await;
}
