//! The datahost layer end to end: read/write splitting over the sandbox's real replication
//! (primary 13306, GTID replica 13307), master forcing, heartbeats. Which server answered is read
//! from `@@port` through the gateway.

mod common;

use std::time::{Duration, Instant};

use common::{Extra, Fixture, closed_port, opts, server_error};
use mysql_async::prelude::Queryable;

const REPLICA_PORT: u16 = 13307;
const PRIMARY_PORT: u16 = common::PRIMARY_PORT;

/// A schema `RW` on one dataNode of a dataHost `rw` with the given attributes, its writeHost the
/// sandbox primary with `readHosts` (XML) inside, a 200 ms heartbeat, and a user `rw`/`rw`.
fn rw_extra(prefix: &str, attrs: &str, write_host_attrs: &str, read_hosts: &str) -> Extra {
    Extra {
        schema_xml: format!(
            r#"<schema name="RW" dataNode="dnrw"></schema>
            <dataNode name="dnrw" dataHost="rw" database="t_{prefix}_db1" />
            <dataHost name="rw" maxCon="5" minCon="0" {attrs} dbType="mysql" dbDriver="native">
                <heartbeat>select user()</heartbeat>
                <writeHost host="m" url="127.0.0.1:{PRIMARY_PORT}" user="manx" password="manx" {write_host_attrs}>
                    {read_hosts}
                </writeHost>
            </dataHost>"#
        ),
        users_xml: r#"<system><property name="dataNodeHeartbeatPeriod">200</property></system>
            <user name="rw"><property name="password">rw</property><property name="schemas">RW</property></user>"#
            .to_string(),
        ..Extra::default()
    }
}

fn replica_xml(weight: u32) -> String {
    format!(
        r#"<readHost host="s" url="127.0.0.1:{REPLICA_PORT}" user="manx" password="manx" weight="{weight}" />"#
    )
}

/// Waits until the sandbox replica has applied everything the primary logged so far (the
/// fixture's databases and tables included).
async fn replica_caught_up() {
    let mut p = common::primary(None).await;
    let pos: Option<String> = p.query_first("SELECT @@gtid_binlog_pos").await.unwrap();
    let mut r = mysql_async::Conn::new(opts(REPLICA_PORT, "manx", "manx", None))
        .await
        .unwrap();
    let waited: Option<i64> = r
        .query_first(format!(
            "SELECT MASTER_GTID_WAIT('{}', 30)",
            pos.unwrap_or_default()
        ))
        .await
        .unwrap();
    assert_eq!(waited, Some(0), "the replica did not catch up within 30 s");
}

/// A client of schema `RW`, once the replica has the fixture's databases.
async fn rw_client(f: &Fixture) -> mysql_async::Conn {
    replica_caught_up().await;
    mysql_async::Conn::new(opts(f.port, "rw", "rw", Some("RW")))
        .await
        .expect("connect to the gateway as rw")
}

async fn port_of(c: &mut mysql_async::Conn) -> u16 {
    c.query_first::<u16, _>("SELECT @@port")
        .await
        .unwrap()
        .unwrap()
}

/// The ports that answer `n` reads.
async fn ports(c: &mut mysql_async::Conn, n: usize) -> Vec<u16> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(port_of(c).await);
    }
    v
}

/// Reads until `port` answers one (the replica becomes a candidate after its first heartbeat).
async fn wait_for_port(c: &mut mysql_async::Conn, port: u16) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while port_of(c).await != port {
        assert!(
            Instant::now() < deadline,
            "no read reached port {port} within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balance_0_reads_on_the_write_host() {
    let f = Fixture::start(
        "h5b0",
        rw_extra("h5b0", r#"balance="0""#, "", &replica_xml(1)),
    )
    .await;
    let mut c = rw_client(&f).await;
    // Give the heartbeat time to see the replica alive; balance 0 must still not use it.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(ports(&mut c, 20).await.iter().all(|p| *p == PRIMARY_PORT));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balance_1_reads_on_the_replica_writes_and_transactions_on_the_master() {
    let f = Fixture::start(
        "h5b1",
        rw_extra("h5b1", r#"balance="1""#, "", &replica_xml(1)),
    )
    .await;
    let mut c = rw_client(&f).await;
    wait_for_port(&mut c, REPLICA_PORT).await;
    // The only candidate of balance 1 is the replica (the active writeHost is excluded).
    assert!(ports(&mut c, 20).await.iter().all(|p| *p == REPLICA_PORT));
    // Inside a transaction every statement is on the master, reads included.
    c.query_drop("BEGIN").await.unwrap();
    assert!(ports(&mut c, 5).await.iter().all(|p| *p == PRIMARY_PORT));
    c.query_drop("INSERT INTO company (id, name) VALUES (1, 'tx')")
        .await
        .unwrap();
    let seen: Vec<i64> = c.query("SELECT id FROM company").await.unwrap();
    assert_eq!(seen, [1], "the transaction reads its own write");
    c.query_drop("ROLLBACK").await.unwrap();
    // With autocommit off too.
    c.query_drop("SET autocommit = 0").await.unwrap();
    assert_eq!(port_of(&mut c).await, PRIMARY_PORT);
    c.query_drop("SET autocommit = 1").await.unwrap();
    assert_eq!(port_of(&mut c).await, REPLICA_PORT);
    // A write outside a transaction goes to the master (the replica is read-only and would
    // refuse it): it succeeds and lands on the primary.
    c.query_drop("INSERT INTO company (id, name) VALUES (2, 'w')")
        .await
        .unwrap();
    let mut b = f.backend(1).await;
    let on_primary: Vec<i64> = b.query("SELECT id FROM company").await.unwrap();
    assert_eq!(on_primary, [2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balance_2_spreads_reads_over_master_and_replica() {
    let f = Fixture::start(
        "h5b2",
        rw_extra("h5b2", r#"balance="2""#, "", &replica_xml(0)),
    )
    .await;
    let mut c = rw_client(&f).await;
    wait_for_port(&mut c, REPLICA_PORT).await;
    // Equal weights (0 and 0): uniform over both; 60 reads all on one side has odds 2^-59.
    let seen = ports(&mut c, 60).await;
    assert!(
        seen.contains(&PRIMARY_PORT) && seen.contains(&REPLICA_PORT),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balance_2_weights_steer_reads() {
    // writeHost weight 0, readHost weight 5: weighted random never picks a weight-0 server.
    let f = Fixture::start(
        "h5bw",
        rw_extra("h5bw", r#"balance="2""#, r#"weight="0""#, &replica_xml(5)),
    )
    .await;
    let mut c = rw_client(&f).await;
    wait_for_port(&mut c, REPLICA_PORT).await;
    assert!(ports(&mut c, 30).await.iter().all(|p| *p == REPLICA_PORT));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balance_3_reads_on_read_hosts_and_falls_back_to_the_master_when_they_are_down() {
    let f = Fixture::start(
        "h5b3",
        rw_extra("h5b3", r#"balance="3""#, "", &replica_xml(1)),
    )
    .await;
    let mut c = rw_client(&f).await;
    wait_for_port(&mut c, REPLICA_PORT).await;
    assert!(ports(&mut c, 20).await.iter().all(|p| *p == REPLICA_PORT));

    // A readHost that never answers its heartbeat is never a candidate: reads stay on the
    // master and succeed.
    let dead = format!(
        r#"<readHost host="s" url="127.0.0.1:{}" user="manx" password="manx" />"#,
        closed_port()
    );
    let g = Fixture::start("h5b3d", rw_extra("h5b3d", r#"balance="3""#, "", &dead)).await;
    let mut c = rw_client(&g).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(ports(&mut c, 20).await.iter().all(|p| *p == PRIMARY_PORT));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_host_marked_down_gets_no_statement() {
    // The only writeHost is dead; after maxRetryCount (1) failed heartbeats it is marked down
    // and statements fail at once with a message that says so, without a connect attempt.
    let f = Fixture::start(
        "h5down",
        Extra {
            schema_xml: format!(
                r#"<schema name="ZDOWN" dataNode="dnrw"></schema>
                <dataNode name="dnrw" dataHost="rw" database="t_h5down_db1" />
                <dataHost name="rw" maxCon="5" minCon="0" balance="0" maxRetryCount="1" dbType="mysql" dbDriver="native">
                    <heartbeat>select 1</heartbeat>
                    <writeHost host="dead" url="127.0.0.1:{}" user="manx" password="manx" />
                </dataHost>"#,
                closed_port()
            ),
            users_xml: r#"<system><property name="dataNodeHeartbeatPeriod">200</property></system>
                <user name="d"><property name="password">d</property><property name="schemas">ZDOWN,TESTDB</property></user>"#
                .to_string(),
            ..Extra::default()
        },
    )
    .await;
    // The client logs in to TESTDB (a live node answers its connect-time queries).
    let mut c = mysql_async::Conn::new(opts(f.port, "d", "d", Some("TESTDB")))
        .await
        .unwrap();
    c.query_drop("USE ZDOWN").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (code, _, msg) = server_error(c.query_drop("SELECT 1 FROM x").await.unwrap_err());
        if msg.contains("marked down") {
            assert_eq!(code, 1105, "{msg}");
            assert!(msg.contains("dead"), "names the server: {msg}");
            break;
        }
        assert!(Instant::now() < deadline, "never marked down: {msg}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Inserts a row on the primary only (`sql_log_bin=0`: it never reaches the replica), so a read
/// that sees it was answered by the primary.
async fn primary_only_row(f: &Fixture, id: i64) {
    let mut b = f.backend(1).await;
    b.query_drop("SET sql_log_bin = 0").await.unwrap();
    b.query_drop(format!(
        "INSERT INTO company (id, name) VALUES ({id}, 'primary only')"
    ))
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balance_hint_and_db_type_master_force_the_write_host() {
    let f = Fixture::start(
        "h5mf",
        rw_extra("h5mf", r#"balance="1""#, "", &replica_xml(1)),
    )
    .await;
    let mut c = rw_client(&f).await;
    wait_for_port(&mut c, REPLICA_PORT).await;
    primary_only_row(&f, 42).await;
    let count = "SELECT COUNT(*) FROM company WHERE id = 42";
    for _ in 0..5 {
        // Plain reads: the replica, which never got the row.
        let n: Option<i64> = c.query_first(count).await.unwrap();
        assert_eq!(n, Some(0));
        for hint in [
            "/*balance*/",
            "/*#mycat:db_type=master*/",
            "/*!mycat:db_type=master*/",
            "/* mycat:db_type=MASTER */",
        ] {
            let n: Option<i64> = c.query_first(format!("{hint} {count}")).await.unwrap();
            assert_eq!(n, Some(1), "{hint} reads the master");
            let p: Option<u16> = c
                .query_first(format!("{hint} SELECT @@port"))
                .await
                .unwrap();
            assert_eq!(p, Some(PRIMARY_PORT), "{hint}");
        }
    }
    // EXPLAIN of a hinted statement shows the route, hint stripped.
    let rows: Vec<(String, String)> = c
        .query(format!("EXPLAIN /*balance*/ {count}"))
        .await
        .unwrap();
    assert_eq!(rows, [("dnrw".to_string(), count.to_string())]);
    // A bad db_type value is refused, not ignored.
    let (code, _, msg) = server_error(
        c.query_drop("/*#mycat:db_type=replica*/ SELECT 1")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1064, "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn db_type_slave_reads_a_read_host_outside_transactions_only() {
    // balance 0: plain reads stay on the master; db_type=slave asks for the readHost.
    let f = Fixture::start(
        "h5sl",
        rw_extra("h5sl", r#"balance="0""#, "", &replica_xml(1)),
    )
    .await;
    let mut c = rw_client(&f).await;
    let slave = "/*#mycat:db_type=slave*/ SELECT @@port";
    let deadline = Instant::now() + Duration::from_secs(15);
    while c.query_first::<u16, _>(slave).await.unwrap() != Some(REPLICA_PORT) {
        assert!(
            Instant::now() < deadline,
            "db_type=slave never reached the replica"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ports(&mut c, 10).await.iter().all(|p| *p == PRIMARY_PORT));
    // In a transaction the hint is served on the transaction's writeHost connection
    // (DECISIONS.md item 12): the transaction's own write is visible.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("INSERT INTO company (id, name) VALUES (5, 'tx')")
        .await
        .unwrap();
    let p: Option<u16> = c.query_first(slave).await.unwrap();
    assert_eq!(p, Some(PRIMARY_PORT));
    let n: Option<i64> = c
        .query_first("/*#mycat:db_type=slave*/ SELECT COUNT(*) FROM company WHERE id = 5")
        .await
        .unwrap();
    assert_eq!(n, Some(1));
    c.query_drop("ROLLBACK").await.unwrap();
    // A write with db_type=slave still goes to the master (Mycat ignores the hint for writes).
    c.query_drop("/*#mycat:db_type=slave*/ INSERT INTO company (id, name) VALUES (6, 'w')")
        .await
        .unwrap();
    let mut b = f.backend(1).await;
    let ids: Vec<i64> = b.query("SELECT id FROM company").await.unwrap();
    assert_eq!(ids, [6]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_node_and_sql_annotations_route_the_statement_unchanged() {
    let f = Fixture::start("h5dn", Extra::default()).await;
    let mut c = f.client().await;
    // hotnews is id mod 3: id 3 belongs on dn1, but the annotation puts it on dn2.
    c.query_drop("/*!mycat:dataNode=dn2*/ INSERT INTO hotnews (id, title) VALUES (3, 'x')")
        .await
        .unwrap();
    assert_eq!(f.ids_on(2, "hotnews").await, [3]);
    assert!(f.ids_on(1, "hotnews").await.is_empty());
    let n: Option<i64> = c
        .query_first("/*#mycat:dataNode=dn2*/ SELECT COUNT(*) FROM hotnews")
        .await
        .unwrap();
    assert_eq!(n, Some(1));
    let n: Option<i64> = c
        .query_first("/*#mycat:dataNode=dn1*/ SELECT COUNT(*) FROM hotnews")
        .await
        .unwrap();
    assert_eq!(n, Some(0));
    // sql=: the real statement goes to the nodes the routing statement names.
    c.query_drop(
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000001, 'b'), (5000002, 'c')",
    )
    .await
    .unwrap();
    let n: Option<i64> = c
        .query_first(
            "/*!mycat:sql=select * from travelrecord where id = 5000001*/ SELECT COUNT(*) FROM travelrecord",
        )
        .await
        .unwrap();
    assert_eq!(n, Some(2), "only dn2's rows");
    // A node outside the current schema, and session statements, are refused.
    let (code, _, msg) = server_error(
        c.query_drop("/*!mycat:dataNode=dn9*/ SELECT 1")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1064, "{msg}");
    // Session statements are the gateway's (1064); account management and views are not
    // available through it at all (1227, or 1064 where the parser cannot read the statement).
    for (refused, errnos) in [
        ("/*!mycat:dataNode=dn1*/ SET autocommit = 0", &[1064][..]),
        (
            "/*!mycat:dataNode=dn1*/ GRANT ALL ON *.* TO 'x'@'%'",
            &[1227, 1064],
        ),
        ("/*!mycat:dataNode=dn1*/ CREATE USER 'x'@'%'", &[1227, 1064]),
        ("/*!mycat:dataNode=dn1*/ CREATE VIEW v AS SELECT 1", &[1227]),
    ] {
        let (code, _, msg) = server_error(c.query_drop(refused).await.unwrap_err());
        assert!(errnos.contains(&code), "{refused}: {code} {msg}");
    }
    // A read-only user cannot write through an annotation.
    let mut ro = mysql_async::Conn::new(opts(f.port, "user", "user", Some("TESTDB")))
        .await
        .unwrap();
    let (code, _, _) = server_error(
        ro.query_drop("/*!mycat:sql=select * from hotnews where id = 3*/ DELETE FROM hotnews")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1495);
    assert_eq!(f.ids_on(2, "hotnews").await, [3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_behind_a_select_annotation_stays_on_the_master() {
    // Mycat would let `sql=select ...` make an UPDATE read-eligible and send it to a readHost;
    // manx decides by the real statement.
    let f = Fixture::start(
        "h5sw",
        rw_extra("h5sw", r#"balance="3""#, "", &replica_xml(1)),
    )
    .await;
    let mut c = rw_client(&f).await;
    wait_for_port(&mut c, REPLICA_PORT).await;
    c.query_drop(
        "/*!mycat:sql=select 1 from company*/ INSERT INTO company (id, name) VALUES (7, 'h')",
    )
    .await
    .unwrap();
    let mut b = f.backend(1).await;
    let ids: Vec<i64> = b.query("SELECT id FROM company").await.unwrap();
    assert_eq!(ids, [7], "the write reached the primary");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_con_exhausted_by_transactions_gives_an_error_after_the_wait_not_a_hang() {
    let extra = Extra {
        schema_xml: r#"<schema name="RW" dataNode="dnrw"></schema>
            <dataNode name="dnrw" dataHost="rw" database="t_h5pool_db1" />
            <dataHost name="rw" maxCon="2" minCon="0" balance="0" dbType="mysql" dbDriver="native">
                <heartbeat>select 1</heartbeat>
                <writeHost host="m" url="127.0.0.1:13306" user="manx" password="manx" />
            </dataHost>"#
            .to_string(),
        ..rw_extra("h5pool", "", "", "")
    };
    // The fixture's databases, then a gateway of our own with a short pool wait.
    let f = Fixture::start("h5pool", extra).await;
    let config = manx::config::Config::load(f.dir.path()).unwrap();
    let timeouts = manx::datahost::Timeouts {
        pool_wait: Duration::from_millis(300),
        ..manx::datahost::Timeouts::default()
    };
    let server = std::sync::Arc::new(manx::frontend::Server::new(config, timeouts).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(server.serve(listener, std::future::pending()));
    let connect = || mysql_async::Conn::new(opts(port, "rw", "rw", Some("RW")));
    let (mut t1, mut t2, mut c3) = (
        connect().await.unwrap(),
        connect().await.unwrap(),
        connect().await.unwrap(),
    );
    for (t, id) in [(&mut t1, 1), (&mut t2, 2)] {
        t.query_drop("BEGIN").await.unwrap();
        t.query_drop(format!(
            "INSERT INTO company (id, name) VALUES ({id}, 'held')"
        ))
        .await
        .unwrap();
    }
    // Both pooled connections are pinned: the third client waits 300 ms, then gets an error.
    let started = Instant::now();
    let answer = tokio::time::timeout(Duration::from_secs(5), c3.query_drop("SELECT 1"))
        .await
        .expect("the statement hung instead of failing");
    let (code, _, msg) = server_error(answer.unwrap_err());
    assert_eq!(code, 1105, "{msg}");
    assert!(msg.contains("pool exhausted"), "{msg}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    // A transaction ends, its connection returns, and the next statement runs.
    t1.query_drop("COMMIT").await.unwrap();
    c3.query_drop("SELECT 1").await.unwrap();
    t2.query_drop("ROLLBACK").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balance_type_1_is_a_smooth_weighted_round_robin() {
    // balance 2 over the writeHost (weight 1) and the readHost (weight 2): every 3 reads, one on
    // the master and two on the replica, never two on the master in a row. (Weighted random
    // gives exactly 10 of 30 on the master about one time in seven.)
    let f = Fixture::start(
        "h5rr",
        rw_extra(
            "h5rr",
            r#"balance="2" balanceType="1""#,
            r#"weight="1""#,
            &replica_xml(2),
        ),
    )
    .await;
    let mut c = rw_client(&f).await;
    wait_for_port(&mut c, REPLICA_PORT).await;
    wait_for_port(&mut c, PRIMARY_PORT).await;
    let seen = ports(&mut c, 30).await;
    let on_primary = seen.iter().filter(|p| **p == PRIMARY_PORT).count();
    assert_eq!(on_primary, 10, "{seen:?}");
    assert!(
        seen.windows(2)
            .all(|w| !(w[0] == PRIMARY_PORT && w[1] == PRIMARY_PORT)),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balance_type_2_reads_the_server_with_the_fewest_connections_in_use() {
    // Equal weights (a weight-0 server never gets a read under balanceType 1 or 2).
    let f = Fixture::start(
        "h5la",
        rw_extra(
            "h5la",
            r#"balance="2" balanceType="2""#,
            r#"weight="1""#,
            &replica_xml(1),
        ),
    )
    .await;
    let mut c = rw_client(&f).await;
    wait_for_port(&mut c, REPLICA_PORT).await;
    wait_for_port(&mut c, PRIMARY_PORT).await;
    // A transaction holds a connection to the master: reads go to the replica.
    let mut holder = rw_client(&f).await;
    holder.query_drop("BEGIN").await.unwrap();
    holder
        .query_drop("SELECT COUNT(*) FROM company")
        .await
        .unwrap();
    assert!(ports(&mut c, 20).await.iter().all(|p| *p == REPLICA_PORT));
    holder.query_drop("COMMIT").await.unwrap();
    // A long read held on the replica (db_type=slave): reads go to the master meanwhile.
    let long = holder.query_drop("/*#mycat:db_type=slave*/ SELECT SLEEP(2)");
    let reads = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        ports(&mut c, 10).await
    };
    let (held, seen) = tokio::join!(long, reads);
    held.unwrap();
    assert!(seen.iter().all(|p| *p == PRIMARY_PORT), "{seen:?}");
}

/// A read of a global table that any of its dataNodes can answer moves on to the next node when
/// the chosen node's server cannot be reached (the engine's [`manx::engine::cursor::connect`]
/// through the session's seam): every read is answered, by the live node.
#[tokio::test]
async fn a_global_read_moves_past_a_data_node_whose_server_is_unreachable() {
    let dead = closed_port();
    let extra = Extra {
        schema_xml: format!(
            r#"<schema name="GLOB" checkSQLschema="false">
                <table name="company" primaryKey="id" type="global" dataNode="gdn1,gdn2" />
            </schema>
            <dataNode name="gdn1" dataHost="deadhost" database="t_globfb_db1" />
            <dataNode name="gdn2" dataHost="localhost1" database="t_globfb_db2" />
            <dataHost name="deadhost" maxCon="5" minCon="0" balance="0" dbType="mysql" dbDriver="native" switchType="-1">
                <heartbeat>select user()</heartbeat>
                <writeHost host="d" url="127.0.0.1:{dead}" user="manx" password="manx" />
            </dataHost>"#
        ),
        users_xml: r#"<user name="g"><property name="password">g</property><property name="schemas">GLOB</property></user>"#
            .to_string(),
        ..Extra::default()
    };
    let f = Fixture::start("globfb", extra).await;
    f.backend(2)
        .await
        .query_drop("INSERT INTO company (id, name) VALUES (7, 'live')")
        .await
        .unwrap();
    let mut c = mysql_async::Conn::new(opts(f.port, "g", "g", Some("GLOB")))
        .await
        .unwrap();
    for _ in 0..12 {
        let names: Vec<String> = c
            .query("SELECT name FROM company WHERE id = 7")
            .await
            .unwrap();
        assert_eq!(names, ["live"]);
    }
    // A write needs every node: it names the unreachable one.
    let (code, _, msg) = server_error(
        c.query_drop("UPDATE company SET name = 'x' WHERE id = 7")
            .await
            .unwrap_err(),
    );
    assert!(msg.contains("gdn1"), "{code} {msg}");
}
