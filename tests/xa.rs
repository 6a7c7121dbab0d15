//! Multi-node writes that are all or nothing (issue 24): Mycat's `SET XA = ON` session rules,
//! `twoPhaseCommit`, the coordinator log, and recovery after the gateway dies at every step
//! of a two-phase commit. Every verdict is read on the backends: the rows of each dataNode's
//! database, the copies of a global table, and `XA RECOVER` on the server.

mod common;

use std::time::{Duration, Instant};

use common::postgres::{pg, pg_databases};
use common::{
    Extra, GatewayProcess, closed_port, ensure_sandbox, opts, primary, refused, run_all,
    server_error, start_gateway_with_manager, system_xml, write_config,
};
use mysql_async::Conn;
use mysql_async::prelude::Queryable;

/// Physical databases `t_<prefix>_db1..3` with the sample tables, and a config directory
/// pointing TESTDB's dn1..dn3 at them with `properties` added to server.xml.
async fn setup(prefix: &str, properties: &[(&str, &str)]) -> (tempfile::TempDir, Vec<String>) {
    setup_with(prefix, properties, "", "").await
}

/// [`setup`] with more schema.xml and more server.xml (users) text.
async fn setup_with(
    prefix: &str,
    properties: &[(&str, &str)],
    schema_xml: &str,
    users_xml: &str,
) -> (tempfile::TempDir, Vec<String>) {
    ensure_sandbox();
    // Branches an earlier failed run of the same test left prepared hold locks that would
    // stop DROP DATABASE: roll them back (each test has its own instanceId).
    if let Some((_, id)) = properties.iter().find(|(k, _)| *k == "instanceId") {
        let mut c = primary(None).await;
        for b in prepared(id).await {
            let (g, q) = b.split_once('/').unwrap();
            c.query_drop(format!("XA ROLLBACK '{g}','{q}'"))
                .await
                .unwrap();
        }
    }
    let databases = common::sample_databases(prefix).await;
    let dir = tempfile::tempdir().unwrap();
    let extra = Extra {
        users_xml: format!("{}{users_xml}", system_xml(properties)),
        schema_xml: schema_xml.to_string(),
        ..Extra::default()
    };
    write_config(dir.path(), &databases, &extra);
    (dir, databases)
}

/// `SET autocommit = 0; SET XA = ON` on `c`: the next statements form an XA transaction.
async fn xa_on(c: &mut Conn) {
    run_all(c, &["SET autocommit = 0", "SET XA = ON"]).await;
}

/// The server.xml properties of a test of two-phase commit: `twoPhaseCommit`, `instanceId`
/// `instance` and `xaRecoveryPeriod` `period` (ms).
fn two_phase<'a>(instance: &'a str, period: &'a str) -> [(&'a str, &'a str); 3] {
    [
        ("twoPhaseCommit", "true"),
        ("instanceId", instance),
        ("xaRecoveryPeriod", period),
    ]
}

/// Panics, naming them, when instance `instance` has prepared branches on the primary.
async fn assert_none_prepared(instance: &str) {
    let left = prepared(instance).await;
    assert!(left.is_empty(), "left prepared: {left:?}");
}

/// Waits (at most `limit`) until instance `instance` has no prepared branch on the primary.
async fn wait_none_prepared(instance: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    while !prepared(instance).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "branches left: {:?}",
            prepared(instance).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Ends the primary's connection `thread` (a branch's backend connection) and gives the
/// gateway 200 ms to notice.
async fn kill_backend_thread(thread: u64) {
    let mut admin = primary(None).await;
    admin
        .query_drop(format!("KILL CONNECTION {thread}"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// The `manx` binary on `dir` and `ports` with the crash hook `MANX_XA_FAULT` at `point`
/// (it exits with 86 there), logged in as `login`.
async fn start_faulty(
    dir: &std::path::Path,
    login: (&str, &str, &str),
    ports: (u16, u16),
    point: &str,
) -> (GatewayProcess, Conn) {
    GatewayProcess::start_env(dir, login, None, ports, &[("MANX_XA_FAULT", point)]).await
}

/// [`setup`] with `instanceId` `instance`, served by an in-process gateway: the config
/// directory, the databases, the (server, manager) ports and a client of TESTDB.
async fn served(
    prefix: &str,
    instance: &str,
) -> (tempfile::TempDir, Vec<String>, (u16, u16), Conn) {
    let (dir, databases) = setup(prefix, &[("instanceId", instance)]).await;
    let ports = start_gateway_with_manager(dir.path()).await;
    let c = client(ports.0).await;
    (dir, databases, ports, c)
}

/// No row on any of the three databases.
const NONE: [&[i64]; 3] = [&[], &[], &[]];

async fn client(port: u16) -> Conn {
    Conn::new(opts(port, "root", "123456", Some("TESTDB")))
        .await
        .unwrap()
}

/// The ids of `table` in each physical database, in database order.
async fn ids(databases: &[String], table: &str) -> Vec<Vec<i64>> {
    let mut out = Vec::new();
    for db in databases {
        let mut c = primary(Some(db)).await;
        out.push(
            c.query(format!("SELECT id FROM {table} ORDER BY id"))
                .await
                .unwrap(),
        );
    }
    out
}

/// The prepared XA branches of instance `instance` on the sandbox primary, as
/// `gtrid/bqual`.
async fn prepared(instance: &str) -> Vec<String> {
    prepared_at(common::PRIMARY_PORT, instance).await
}

/// `show @@xa_session` rows (FRONT_ID, XA_ID, XA_STATE, SHARDING_NODES).
async fn xa_sessions(manager_port: u16) -> Vec<(String, String, String, String)> {
    let mut m = Conn::new(opts(manager_port, "root", "123456", None))
        .await
        .unwrap();
    m.query("show @@xa_session").await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_xa_keeps_mycat_rules_and_commits_on_every_node() {
    let (_dir, databases, (_, mport), mut c) = served("xa_rules", "xarules").await;

    // Mycat's rules and texts (SPEC §7.4): not in autocommit, never OFF.
    let e = refused(&mut c, "SET XA = ON").await;
    assert_eq!(
        (e.0, e.2.as_str()),
        (3012, "set xa cmd on can't used in autocommit connection ")
    );
    // XA statements are the gateway's own: a client's are refused, never forwarded.
    for sql in [
        "XA START 'c1'",
        "XA RECOVER",
        "XA COMMIT 'manx.xarules.1.1','dn1'",
    ] {
        assert!(c.query_drop(sql).await.is_err(), "{sql} was accepted");
    }
    c.query_drop("SET autocommit = 0").await.unwrap();
    let e = refused(&mut c, "set xa=off").await;
    assert_eq!(
        (e.0, e.2.as_str()),
        (3012, "set xa cmd off not for external use ")
    );

    // An XA transaction over dn1 and dn2, seen by the manager while it is open.
    run_all(
        &mut c,
        &[
            "set xa=on",
            "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000001, 'b')",
        ],
    )
    .await;
    let rows = xa_sessions(mport).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0].1.starts_with("manx.xarules."), "{rows:?}");
    assert_eq!(
        (rows[0].2.as_str(), rows[0].3.as_str()),
        ("ACTIVE", "dn1 dn2")
    );
    // Nothing is visible outside before COMMIT.
    assert_eq!(ids(&databases, "travelrecord").await, NONE);
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(
        ids(&databases, "travelrecord").await,
        vec![vec![1], vec![5000001], vec![]]
    );
    assert!(xa_sessions(mport).await.is_empty());
    assert!(prepared("xarules").await.is_empty());

    // The mode lasted one transaction (Mycat): the next one is a plain one.
    c.query_drop("INSERT INTO travelrecord (id) VALUES (2), (5000002)")
        .await
        .unwrap();
    assert!(xa_sessions(mport).await.is_empty());
    c.query_drop("ROLLBACK").await.unwrap();

    // SET XA = ON once the transaction ran statements: refused.
    c.query_drop("INSERT INTO travelrecord (id) VALUES (3)")
        .await
        .unwrap();
    let e = refused(&mut c, "SET XA = ON").await;
    assert_eq!(e.0, 3012, "{e:?}");
    c.query_drop("ROLLBACK").await.unwrap();

    // ROLLBACK of an XA transaction leaves nothing, and no branch behind.
    run_all(
        &mut c,
        &[
            "SET XA = ON",
            "INSERT INTO company (id, name) VALUES (7, 'x')",
            "ROLLBACK",
        ],
    )
    .await;
    assert_eq!(ids(&databases, "company").await, NONE);
    // BEGIN after SET XA = ON keeps it; a global table's three copies commit together.
    run_all(
        &mut c,
        &[
            "SET autocommit = 1",
            "BEGIN",
            "SET XA = ON",
            "INSERT INTO company (id, name) VALUES (8, 'y')",
        ],
    )
    .await;
    assert_eq!(xa_sessions(mport).await[0].3, "dn1 dn2 dn3");
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(
        ids(&databases, "company").await,
        vec![vec![8], vec![8], vec![8]]
    );
    assert!(prepared("xarules").await.is_empty());
}

/// The gateway, with `twoPhaseCommit` and the crash hook at `point`, dies while committing an
/// INSERT into a global table (three dataNodes) and a transaction over two shards; restarted
/// without the hook, its recovery must leave each all-or-nothing: committed everywhere when
/// the decision was on disk, nowhere otherwise, and no branch left prepared.
async fn crash_at(point: &str, decided: bool) {
    let instance = format!("crash{}", point.replace('_', ""));
    let (dir, databases) = setup(&format!("xa_{point}"), &two_phase(&instance, "500")).await;
    let ports = (closed_port(), closed_port());
    let login = ("root", "123456", "TESTDB");
    let log = dir.path().join("manx.log");
    for statement in [
        "INSERT INTO company (id, name) VALUES (1, 'global')",
        "TRANSACTION",
    ] {
        let (mut gateway, mut c) = GatewayProcess::start_env(
            dir.path(),
            login,
            Some(&log),
            ports,
            &[("MANX_XA_FAULT", point)],
        )
        .await;
        let result = if statement == "TRANSACTION" {
            run_all(
                &mut c,
                &[
                    "BEGIN",
                    "INSERT INTO travelrecord (id) VALUES (1), (5000001)",
                ],
            )
            .await;
            c.query_drop("COMMIT").await
        } else {
            c.query_drop(statement).await
        };
        assert!(
            result.is_err(),
            "{point}: the gateway answered although it died ({statement})"
        );
        let status = gateway.child.wait().unwrap();
        assert_eq!(status.code(), Some(86), "{point}: {status:?}");
        let left = prepared(&instance).await;
        let expected_prepared = if point == "before_prepare" {
            0
        } else if statement == "TRANSACTION" {
            if point == "between_commits" { 1 } else { 2 }
        } else if point == "between_commits" {
            2
        } else {
            3
        };
        assert_eq!(left.len(), expected_prepared, "{point}: {left:?}");
        // Restarted without the hook: recovery resolves the branches before clients come.
        let (_gateway, _c) =
            GatewayProcess::start_env(dir.path(), login, Some(&log), ports, &[]).await;
        assert!(
            prepared(&instance).await.is_empty(),
            "{point}: branches left after recovery: {:?}\n{}",
            prepared(&instance).await,
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }
    let company = ids(&databases, "company").await;
    let travel = ids(&databases, "travelrecord").await;
    if decided {
        assert_eq!(company, vec![vec![1], vec![1], vec![1]], "{point}");
        assert_eq!(travel, vec![vec![1], vec![5000001], vec![]], "{point}");
    } else {
        assert_eq!(company, NONE, "{point}");
        assert_eq!(travel, NONE, "{point}");
    }
}

/// One test per crash point: `name: point, decided;` runs [`crash_at`]`(point, decided)`.
macro_rules! crash_tests {
    ($($name:ident: $point:literal, $decided:literal;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            crash_at($point, $decided).await;
        }
    )*};
}

crash_tests! {
    crash_before_prepare_commits_nothing: "before_prepare", false;
    crash_after_prepare_before_the_decision_rolls_back_everywhere: "after_prepare", false;
    crash_after_the_decision_commits_everywhere: "after_decision", true;
    crash_between_two_commits_completes_the_others: "between_commits", true;
}

/// DBLE #1192's lesson: a commit whose decision cannot be made durable must not commit. The
/// log directory is replaced by a file (segments of one byte: every append needs a new
/// segment file); the multi-node write is refused with 1402 and applied nowhere; once the
/// directory is back, writes commit again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dble_1192_a_decision_that_cannot_be_written_commits_nothing() {
    let (dir, databases) = setup(
        "xa_logfail",
        &[
            ("twoPhaseCommit", "true"),
            ("instanceId", "xalogfail"),
            ("xaLogSegmentBytes", "1"),
        ],
    )
    .await;
    let config = manx::config::Config::load(dir.path()).unwrap();
    let server = std::sync::Arc::new(
        manx::frontend::Server::new(config, manx::datahost::Timeouts::default()).unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(server.clone().serve(listener, std::future::pending()));
    let mut c = client(port).await;
    c.query_drop("INSERT INTO company (id) VALUES (1)")
        .await
        .unwrap();
    let logdir = dir.path().join("xalog");
    let moved = dir.path().join("xalog.moved");
    std::fs::rename(&logdir, &moved).unwrap();
    std::fs::write(&logdir, b"in the way").unwrap();
    let e = refused(&mut c, "INSERT INTO company (id) VALUES (2)").await;
    assert_eq!((e.0, e.1.as_str()), (1402, "XA100"), "{e:?}");
    assert!(e.2.contains("coordinator log"), "{e:?}");
    // In a transaction too.
    run_all(
        &mut c,
        &[
            "BEGIN",
            "INSERT INTO travelrecord (id) VALUES (1), (5000001)",
        ],
    )
    .await;
    let e = refused(&mut c, "COMMIT").await;
    assert_eq!(e.0, 1402, "{e:?}");
    assert_eq!(
        ids(&databases, "company").await,
        vec![vec![1], vec![1], vec![1]]
    );
    assert_eq!(ids(&databases, "travelrecord").await, NONE);
    assert!(prepared("xalogfail").await.is_empty());
    std::fs::remove_file(&logdir).unwrap();
    std::fs::rename(&moved, &logdir).unwrap();
    c.query_drop("INSERT INTO company (id) VALUES (3)")
        .await
        .unwrap();
    assert_eq!(
        ids(&databases, "company").await,
        vec![vec![1, 3], vec![1, 3], vec![1, 3]]
    );
    // The metrics count both outcomes, and the log's appends and flushes.
    let text = manx::frontend::metrics::exposition(&server);
    let value = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
    };
    assert_eq!(value("manx_xa_commits_total{kind=\"two_phase\"}"), 2.0);
    assert_eq!(value("manx_xa_commits_total{kind=\"rolled_back\"}"), 2.0);
    // Prepare and decision of the two commits; the refused commits' intents never reached disk.
    assert_eq!(value("manx_xa_log_appends_total"), 4.0);
    assert!(value("manx_xa_log_flushes_total") >= 4.0);
    assert_eq!(value("manx_xa_in_doubt_branches"), 0.0);
}

/// A prepared branch named as this instance's but unknown to its log (the log was lost) is
/// in doubt: recovery leaves it prepared, `show @@xa_session` lists it, and a write to its row
/// waits on its lock and fails rather than overwriting it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_the_log_does_not_know_is_left_in_doubt() {
    let (dir, databases) = setup(
        "xa_doubt",
        &[("instanceId", "xadoubt"), ("xaRecoveryPeriod", "300")],
    )
    .await;
    // A branch prepared as if by this instance, on dn1's database.
    let gtrid = "manx.xadoubt.1.1";
    {
        let mut d = primary(Some(&databases[0])).await;
        d.query_drop(format!("XA START '{gtrid}','dn1'"))
            .await
            .unwrap();
        d.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (9, 'doubt')")
            .await
            .unwrap();
        d.query_drop(format!("XA END '{gtrid}','dn1'"))
            .await
            .unwrap();
        d.query_drop(format!("XA PREPARE '{gtrid}','dn1'"))
            .await
            .unwrap();
    }
    let (port, mport) = start_gateway_with_manager(dir.path()).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let rows = loop {
        let rows = xa_sessions(mport).await;
        if !rows.is_empty() || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        rows,
        vec![(
            "0".to_string(),
            gtrid.to_string(),
            "IN_DOUBT".to_string(),
            "dn1".to_string()
        )]
    );
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(prepared("xadoubt").await, vec![format!("{gtrid}/dn1")]);
    let mut c = client(port).await;
    c.query_drop("SET innodb_lock_wait_timeout = 1")
        .await
        .unwrap();
    let e = refused(
        &mut c,
        "UPDATE travelrecord SET user_id = 'over' WHERE id = 9",
    )
    .await;
    assert_eq!(e.0, 1205, "{e:?}");
    // The operator resolves it; the gateway then lists nothing.
    let mut d = primary(None).await;
    d.query_drop(format!("XA ROLLBACK '{gtrid}','dn1'"))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !xa_sessions(mport).await.is_empty() {
        assert!(Instant::now() < deadline, "still listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(ids(&databases, "travelrecord").await, NONE);
}

/// Ends every connection the gateway's account holds to `database` on the primary (a
/// backend connection cut mid-transaction). Returns how many.
async fn cut_connections_to(database: &str) -> usize {
    let mut root = primary(None).await;
    let ids: Vec<u64> = root
        .exec(
            "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ? AND DB = ?",
            (common::GATEWAY_USER, database),
        )
        .await
        .unwrap();
    for id in &ids {
        let _ = root.query_drop(format!("KILL CONNECTION {id}")).await;
    }
    ids.len()
}

/// DBLE #1077's case: a branch's connection is cut after the commit decision, before its
/// `XA COMMIT`. The decision is on disk, so the transaction is committed: the client gets its
/// OK, and recovery (woken by the failed commit) commits the branch left prepared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dble_1077_a_branch_cut_off_after_the_decision_is_committed_by_recovery() {
    let (dir, databases) = setup("xa_blip", &two_phase("xablip", "60000")).await;
    let (_gateway, mut c) = GatewayProcess::start_env(
        dir.path(),
        ("root", "123456", "TESTDB"),
        None,
        (closed_port(), closed_port()),
        &[("MANX_XA_PAUSE", "after_decision:2000")],
    )
    .await;
    let write = tokio::spawn(async move {
        let r = c
            .query_drop("INSERT INTO company (id, name) VALUES (5, 'blip')")
            .await;
        (r, c)
    });
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        prepared("xablip").await.len(),
        3,
        "the three branches are prepared during the pause"
    );
    assert!(cut_connections_to(&databases[1]).await > 0);
    let (result, _c) = write.await.unwrap();
    result.expect("the decision was on disk: the client gets its OK");
    // Recovery runs at once (not after the 60 s period) and commits dn2's branch.
    wait_none_prepared("xablip", Duration::from_secs(10)).await;
    assert_eq!(
        ids(&databases, "company").await,
        vec![vec![5], vec![5], vec![5]]
    );
}

/// A branch whose connection is lost before COMMIT cannot prepare: every branch is rolled
/// back and the client gets 1402 naming the dataNode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_lost_before_commit_rolls_back_everywhere() {
    let (dir, databases) = setup(
        "xa_lost",
        &[("twoPhaseCommit", "true"), ("instanceId", "xalost")],
    )
    .await;
    let (port, _) = start_gateway_with_manager(dir.path()).await;
    let mut c = client(port).await;
    run_all(
        &mut c,
        &[
            "BEGIN",
            "INSERT INTO travelrecord (id) VALUES (1), (5000001)",
        ],
    )
    .await;
    assert!(cut_connections_to(&databases[1]).await > 0);
    let e = refused(&mut c, "COMMIT").await;
    assert_eq!((e.0, e.1.as_str()), (1402, "XA100"), "{e:?}");
    assert!(e.2.contains("dn2"), "{e:?}");
    assert_eq!(ids(&databases, "travelrecord").await, NONE);
    assert!(prepared("xalost").await.is_empty());
    // The session goes on.
    c.query_drop("INSERT INTO travelrecord (id) VALUES (2), (5000002)")
        .await
        .unwrap();
    assert_eq!(
        ids(&databases, "travelrecord").await,
        vec![vec![2], vec![5000002], vec![]]
    );
}

/// PostgreSQL dataNodes: branches are `PREPARE TRANSACTION` / `COMMIT PREPARED`. An XA
/// transaction over two PostgreSQL databases commits on both; the gateway dying after the
/// decision leaves both prepared (`pg_prepared_xacts`), and the restarted gateway commits
/// them; dying before it, rolls them back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_branches_commit_prepared_and_recover() {
    let (dir, pgdbs) = pg_setup("xa_pgrec", &two_phase("xapg", "500")).await;
    let ports = (closed_port(), closed_port());
    let login = ("pg", "pg", "PGDB");
    // mod-long over three nodes: ids 0 and 1 land on pgdn1 and pgdn2.
    {
        let (_g, mut c) = GatewayProcess::start_env(dir.path(), login, None, ports, &[]).await;
        run_all(
            &mut c,
            &[
                "BEGIN",
                "INSERT INTO orders (id, v) VALUES (0, 'a'), (1, 'b')",
                "COMMIT",
            ],
        )
        .await;
    }
    assert_eq!(pg_ids(&pgdbs).await.0, vec![vec![0], vec![1], vec![]]);
    for (point, id_a, id_b, committed) in [
        ("after_decision", 3, 4, true),
        ("after_prepare", 6, 7, false),
    ] {
        let (mut g, mut c) = start_faulty(dir.path(), login, ports, point).await;
        // An autocommit write over both dataNodes: an implicit XA transaction.
        let sql = format!("INSERT INTO orders (id, v) VALUES ({id_a}, 'x'), ({id_b}, 'y')");
        assert!(c.query_drop(sql).await.is_err());
        assert_eq!(g.child.wait().unwrap().code(), Some(86));
        assert_eq!(
            pg_ids(&pgdbs).await.1.len(),
            2,
            "{point}: both branches prepared"
        );
        let (_g, _c) = GatewayProcess::start_env(dir.path(), login, None, ports, &[]).await;
        let (rows, gids) = pg_ids(&pgdbs).await;
        assert!(gids.is_empty(), "{point}: recovery resolved them: {gids:?}");
        assert_eq!(rows[0].contains(&id_a), committed, "{point}: {rows:?}");
        assert_eq!(rows[1].contains(&id_b), committed, "{point}: {rows:?}");
    }
}

/// With `twoPhaseCommit`, a PostgreSQL writeHost that cannot prepare
/// (`max_prepared_transactions = 0`, PostgreSQL's default) stops start-up, naming the dataNode
/// and the setting, instead of failing every multi-node commit later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_refuses_a_postgres_server_that_cannot_prepare() {
    let server = common::postgres::PgServer::primary("xanoprep").await;
    let (dir, _) = setup("xa_noprep", &[]).await;
    let extra = Extra {
        schema_xml: format!(
            r#"<schema name="PGNP" checkSQLschema="false" dataNode="pgnp"></schema>
<dataNode name="pgnp" dataHost="pgnp" database="postgres" />
<dataHost name="pgnp" maxCon="5" minCon="1" balance="0" writeType="0" dbType="postgresql" dbDriver="native" switchType="-1">
  <heartbeat>select 1</heartbeat>
  <writeHost host="pgM1" url="jdbc:postgresql://127.0.0.1:{}/postgres" user="manx" password="manx" />
</dataHost>"#,
            server.port
        ),
        users_xml: system_xml(&[("twoPhaseCommit", "true")]),
        ..Extra::default()
    };
    let mysql_dbs: Vec<String> = (1..=3).map(|i| format!("t_xa_noprep_db{i}")).collect();
    write_config(dir.path(), &mysql_dbs, &extra);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_manx"))
        .args(["--conf", dir.path().to_str().unwrap()])
        .args(["--port", &closed_port().to_string(), "--bind", "127.0.0.1"])
        .args(["--manager-port", &closed_port().to_string()])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the gateway started although pgnp cannot prepare");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success());
    assert!(
        stderr.contains("dataNode pgnp") && stderr.contains("max_prepared_transactions is 0"),
        "{stderr}"
    );
}

/// Adds `tables` (schema.xml `<table>` elements) to TESTDB in `dir`, and table rule `mod2`.
fn add_tables(dir: &std::path::Path, tables: &str) {
    let schema = dir.join("schema.xml");
    let text = std::fs::read_to_string(&schema).unwrap().replace(
        r#"<table name="travelrecord""#,
        &format!("{tables}\n\t\t<table name=\"travelrecord\""),
    );
    std::fs::write(&schema, text).unwrap();
    add_mod2_rule(dir);
}

/// Adds table rule `mod2` (`PartitionByMod`, count 2: dn1, dn2) to the rule.xml in `dir`.
fn add_mod2_rule(dir: &std::path::Path) {
    let path = dir.join("rule.xml");
    let rules = std::fs::read_to_string(&path).unwrap().replace(
        "</mycat:rule>",
        r#"<tableRule name="mod2"><rule><columns>id</columns><algorithm>mod-2</algorithm></rule></tableRule>
<function name="mod-2" class="io.mycat.route.function.PartitionByMod"><property name="count">2</property></function>
</mycat:rule>"#,
    );
    std::fs::write(path, rules).unwrap();
}

/// Bank transfers under `twoPhaseCommit` from 6 clients, each transaction moving an amount
/// between an account on dn1 and one on dn2 and appending to a global ledger (dn1..dn3), with
/// the gateway SIGKILLed five times mid-load and restarted on the same log. After the last
/// restart (recovery done): the balances still sum to the initial total, the ledger's three
/// copies are identical, and no branch is left prepared. (A transaction cut in two by a kill
/// would show as a changed sum or copies that differ: with `twoPhaseCommit` off this test
/// fails about every other run.) Slow: about 15 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_killed_five_times_stay_all_or_nothing() {
    let (dir, databases) = setup("xa_bank", &two_phase("xabank", "500")).await;
    add_tables(
        dir.path(),
        r#"<table name="acct" dataNode="dn1,dn2" rule="mod2" />
		<table name="ledger" type="global" dataNode="dn1,dn2,dn3" />"#,
    );
    for (i, db) in databases.iter().enumerate() {
        let mut c = primary(Some(db)).await;
        c.query_drop(
            "CREATE TABLE acct (id INT PRIMARY KEY, bal BIGINT NOT NULL) ENGINE=InnoDB;
             CREATE TABLE ledger (id BIGINT PRIMARY KEY, amount INT) ENGINE=InnoDB",
        )
        .await
        .unwrap();
        if i < 2 {
            // 100 accounts per node, ids of that node's parity, 1000 each.
            let values: Vec<String> = (0..100).map(|k| format!("({}, 1000)", 2 * k + i)).collect();
            c.query_drop(format!("INSERT INTO acct VALUES {}", values.join(",")))
                .await
                .unwrap();
        }
    }
    let ports = (closed_port(), closed_port());
    let login = ("root", "123456", "TESTDB");
    let log = dir.path().join("manx.log");
    let next_ledger = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(1));
    let mut committed_total = 0u64;
    for round in 0..6 {
        let (mut gateway, _c) =
            GatewayProcess::start_env(dir.path(), login, Some(&log), ports, &[]).await;
        if round == 5 {
            break;
        }
        let committed = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut workers = Vec::new();
        for w in 0..6u64 {
            let port = gateway.port;
            let next_ledger = next_ledger.clone();
            let committed = committed.clone();
            workers.push(tokio::spawn(async move {
                let Ok(mut c) = Conn::new(opts(port, "root", "123456", Some("TESTDB"))).await
                else {
                    return;
                };
                let mut k = w * 7919 + round * 104_729;
                loop {
                    k = k
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let from = (k >> 33) % 100 * 2; // an even id: dn1
                    let to = (k >> 13) % 100 * 2 + 1; // an odd id: dn2
                    let amount = (k >> 50) % 50 + 1;
                    let entry = next_ledger.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let tx = async {
                        c.query_drop("BEGIN").await?;
                        c.query_drop(format!(
                            "UPDATE acct SET bal = bal - {amount} WHERE id = {from}"
                        ))
                        .await?;
                        c.query_drop(format!(
                            "UPDATE acct SET bal = bal + {amount} WHERE id = {to}"
                        ))
                        .await?;
                        c.query_drop(format!("INSERT INTO ledger VALUES ({entry}, {amount})"))
                            .await?;
                        c.query_drop("COMMIT").await
                    };
                    match tx.await {
                        Ok(()) => {
                            committed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        Err(mysql_async::Error::Server(_)) => {
                            let _ = c.query_drop("ROLLBACK").await;
                        }
                        Err(_) => return, // the gateway is gone
                    }
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let _ = gateway.child.kill(); // SIGKILL
        let _ = gateway.child.wait();
        for w in workers {
            let _ = w.await;
        }
        committed_total += committed.load(std::sync::atomic::Ordering::Relaxed);
    }
    assert!(
        committed_total > 30,
        "{committed_total} transfers committed"
    );
    assert_none_prepared("xabank").await;
    let mut b = primary(None).await;
    let mut sum = 0i64;
    for db in &databases[..2] {
        let s: Option<i64> = b
            .query_first(format!("SELECT CAST(SUM(bal) AS SIGNED) FROM {db}.acct"))
            .await
            .unwrap();
        sum += s.unwrap();
    }
    assert_eq!(
        sum,
        200 * 1000,
        "money created or destroyed by a half-committed transfer"
    );
    let copies = ids(&databases, "ledger").await;
    assert_eq!(copies[0], copies[1], "ledger copies differ");
    assert_eq!(copies[1], copies[2], "ledger copies differ");
    assert!(
        copies[0].len() as u64 >= committed_total,
        "acknowledged transfers lost"
    );
    println!(
        "transfers: {committed_total} acknowledged over 5 kills, {} in the ledger, balances sum to {sum}",
        copies[0].len()
    );
}

/// DBLE #1114's case: sysbench 1.0 `oltp_read_write` (4 threads, `sbtest1` over dn1 and dn2)
/// with `twoPhaseCommit`, the gateway SIGKILLed three times mid-run and restarted: afterwards
/// `XA RECOVER` holds none of its branches, all 3,000 rows are there, each on its node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dble_1114_sysbench_read_write_with_xa_killed_and_restarted_leaves_nothing_prepared() {
    let tools = common::clients::clients();
    let (dir, databases) = setup("xa_sb", &two_phase("xasb", "500")).await;
    add_tables(
        dir.path(),
        r#"<table name="sbtest1" dataNode="dn1,dn2" rule="mod2" />"#,
    );
    let ports = (closed_port(), closed_port());
    let login = ("root", "123456", "TESTDB");
    let args = |port: u16| -> Vec<String> {
        let mut a: Vec<String> = [
            "oltp_read_write",
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            "--mysql-user=root",
            "--mysql-password=123456",
            "--mysql-db=TESTDB",
            "--tables=1",
            "--table-size=3000",
            "--auto_inc=off",
        ]
        .map(String::from)
        .to_vec();
        a.push(format!("--mysql-port={port}"));
        a
    };
    let mut transactions = 0;
    let mut last_output = String::new();
    for round in 0..4 {
        let (mut gateway, _c) =
            GatewayProcess::start_env(dir.path(), login, None, ports, &[]).await;
        if round == 0 {
            let mut prepare = args(gateway.port);
            prepare.push("prepare".into());
            let (ok, out, err) = common::clients::run(&tools.sysbench, prepare, vec![]).await;
            assert!(ok, "sysbench prepare failed:\n{out}\n{err}");
        }
        if round == 3 {
            break;
        }
        let mut run = args(gateway.port);
        run.extend(["--threads=4", "--time=30", "--report-interval=1", "run"].map(String::from));
        let load = tokio::spawn(common::clients::run(&tools.sysbench, run, vec![]));
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let _ = gateway.child.kill();
        let _ = gateway.child.wait();
        let (_, out, err) = load.await.unwrap();
        last_output = format!("{out}\n{err}");
        // The last per-second report before the kill counts the transactions so far.
        transactions += out
            .lines()
            .filter(|l| l.contains(" tps: "))
            .filter_map(|l| {
                l.split("tps: ")
                    .nth(1)?
                    .split_whitespace()
                    .next()?
                    .parse::<f64>()
                    .ok()
            })
            .sum::<f64>() as u64;
    }
    assert!(
        transactions > 20,
        "{transactions} transactions ran; the last run said:\n{last_output}"
    );
    assert_none_prepared("xasb").await;
    let mut b = primary(None).await;
    let mut total = 0;
    for (n, db) in databases[..2].iter().enumerate() {
        let (rows, wrong): (i64, i64) = b
            .query_first(format!(
                "SELECT COUNT(*), COALESCE(SUM(id % 2 <> {n}), 0) FROM {db}.sbtest1"
            ))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(wrong, 0, "rows of {db} on the wrong node");
        total += rows;
    }
    assert_eq!(total, 3_000);
    println!("sysbench oltp_read_write with XA: about {transactions} transactions over 3 kills");
}

/// A writeHost failover between PREPARE and COMMIT: the gateway dies after the commit decision
/// with both branches prepared on writeHost M1; MariaDB replicates prepared XA branches, so M2
/// holds them prepared too. M1 is SIGKILLed and the dataHost switched to M2 (dnindex); the
/// restarted gateway's recovery asks the *current* writeHost (M2) and commits both branches
/// there (Mycat looks for the old master's address and never resolves them, OPERATIONS.md §3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_follows_a_failover_between_prepare_and_commit() {
    use common::mariadb::Throwaway;
    let mut m1 = Throwaway::start("xafo1", 1).await;
    let m2 = Throwaway::start("xafo2", 2).await;
    m2.replicate_from(&m1).await;
    {
        let mut c = m1.conn(None).await;
        for db in ["xafo1", "xafo2"] {
            c.query_drop(format!(
                "CREATE DATABASE {db}; CREATE TABLE {db}.acct (id INT PRIMARY KEY, bal INT)"
            ))
            .await
            .unwrap();
        }
    }
    m2.catch_up(&m1).await;
    let dir = tempfile::tempdir().unwrap();
    let mysql_dbs: Vec<String> = (1..=3).map(|i| format!("t_xa_fo_db{i}")).collect();
    let (cfg, _) = setup("xa_fo", &[]).await;
    let extra = Extra {
        schema_xml: format!(
            r#"<schema name="FO" checkSQLschema="false">
  <table name="acct" dataNode="fo1,fo2" rule="mod2" />
</schema>
<dataNode name="fo1" dataHost="fo" database="xafo1" />
<dataNode name="fo2" dataHost="fo" database="xafo2" />
<dataHost name="fo" maxCon="10" minCon="1" balance="0" writeType="0" dbType="mysql" dbDriver="native" switchType="1">
  <heartbeat>select user()</heartbeat>
  <writeHost host="M1" url="127.0.0.1:{}" user="manx" password="manx" />
  <writeHost host="M2" url="127.0.0.1:{}" user="manx" password="manx" />
</dataHost>"#,
            m1.port, m2.port
        ),
        users_xml: format!(
            r#"<user name="fo"><property name="password">fo</property><property name="schemas">FO</property></user>{}"#,
            system_xml(&[
                ("twoPhaseCommit", "true"),
                ("instanceId", "xafo"),
                ("xaRecoveryPeriod", "500"),
            ])
        ),
        ..Extra::default()
    };
    drop(cfg);
    write_config(dir.path(), &mysql_dbs, &extra);
    add_mod2_rule(dir.path());
    let ports = (closed_port(), closed_port());
    let login = ("fo", "fo", "FO");
    let (mut g, mut c) = start_faulty(dir.path(), login, ports, "after_decision").await;
    let e = c
        .query_drop("INSERT INTO acct (id, bal) VALUES (0, 10), (1, 20)")
        .await
        .unwrap_err();
    assert!(
        !matches!(e, mysql_async::Error::Server(_)),
        "the gateway answered instead of dying: {e}"
    );
    assert_eq!(g.child.wait().unwrap().code(), Some(86));
    m2.catch_up(&m1).await;
    let xa_recover = |s: &Throwaway| {
        let opts = s.opts(None);
        async move {
            let mut c = Conn::new(opts).await.unwrap();
            let rows: Vec<(i64, i64, i64, Vec<u8>)> = c.query("XA RECOVER").await.unwrap();
            rows.len()
        }
    };
    assert_eq!(xa_recover(&m1).await, 2, "both branches prepared on M1");
    assert_eq!(xa_recover(&m2).await, 2, "and replicated to M2 as prepared");
    m1.kill();
    std::fs::write(dir.path().join("dnindex.properties"), "fo=1\n").unwrap();
    let (_g, _c) = GatewayProcess::start_env(dir.path(), login, None, ports, &[]).await;
    assert_eq!(xa_recover(&m2).await, 0, "recovery resolved them on M2");
    let mut d = m2.conn(None).await;
    let rows: Vec<(i64, i64)> = d
        .query(
            "SELECT id, bal FROM xafo1.acct UNION ALL SELECT id, bal FROM xafo2.acct ORDER BY id",
        )
        .await
        .unwrap();
    assert_eq!(rows, vec![(0, 10), (1, 20)]);
}

// ---------------------------------------------------------------------------------------------
// Hunt for inconsistencies (xahunt): every verdict below is read on the backends.
// ---------------------------------------------------------------------------------------------

/// The MariaDB thread id of the gateway's backend connection that holds an open transaction
/// on physical database `db` (the only one there: the test's own XA branch).
async fn backend_thread_in_transaction(db: &str) -> u64 {
    let mut admin = primary(None).await;
    let ids: Vec<u64> = admin
        .query(format!(
            "SELECT p.ID FROM information_schema.PROCESSLIST p \
             JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID \
             WHERE p.DB = '{db}' AND p.USER = '{}'",
            common::GATEWAY_USER
        ))
        .await
        .unwrap();
    assert_eq!(
        ids.len(),
        1,
        "backend threads in a transaction on {db}: {ids:?}"
    );
    ids[0]
}

/// Waits until `show @@xa_session` lists a row in state `state` (bounded).
async fn wait_for_xa_state(mport: u16, state: &str) -> Vec<(String, String, String, String)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let rows = xa_sessions(mport).await;
        if rows.iter().any(|r| r.2 == state) {
            return rows;
        }
        assert!(Instant::now() < deadline, "never {state}: {rows:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Probe: the backend connection of one branch is killed (on MariaDB) after the transaction's
/// statements, and the client runs more statements on the broken branch's dataNode before COMMIT (a write that fails, then another). Whatever the gateway answers,
/// the transaction must be all or nothing: row 1 (dn1, before the kill) and 5000001 (dn2)
/// together or not at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_after_a_branch_connection_died_do_not_split_the_transaction() {
    let (_dir, databases, _, mut c) = served("xa_bkill2", "xabkill2").await;
    xa_on(&mut c).await;
    c.query_drop("INSERT INTO travelrecord (id) VALUES (1), (5000001)")
        .await
        .unwrap();
    kill_backend_thread(backend_thread_in_transaction(&databases[0]).await).await;
    let r2 = c
        .query_drop("INSERT INTO travelrecord (id) VALUES (2)")
        .await;
    let r3 = c
        .query_drop("INSERT INTO travelrecord (id) VALUES (3)")
        .await;
    let committed = c.query_drop("COMMIT").await;
    let travel = ids(&databases, "travelrecord").await;
    let left = prepared("xabkill2").await;
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(
        travel[0].contains(&1),
        travel[1].contains(&5000001),
        "split transaction: {travel:?}; after-kill inserts {r2:?} {r3:?}; COMMIT {committed:?}"
    );
    if committed.is_ok() {
        assert_eq!(
            travel,
            vec![vec![1, 2, 3], vec![5000001], vec![]],
            "{r2:?} {r3:?}"
        );
    }
}

/// Probe: statements run through COM_STMT_PREPARE/EXECUTE inside an XA transaction are branches
/// that wrote: when one branch cannot prepare (its connection killed), the other is rolled
/// back, never committed in one phase as if it had only read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_in_an_xa_transaction_are_written_branches() {
    let (_dir, databases, (_, mport), mut c) = served("xa_ps", "xaps").await;
    xa_on(&mut c).await;
    let stmt = c
        .prep("INSERT INTO travelrecord (id, user_id) VALUES (?, ?)")
        .await
        .unwrap();
    c.exec_drop(&stmt, (1, "a")).await.unwrap();
    c.exec_drop(&stmt, (5000001, "b")).await.unwrap();
    let rows = xa_sessions(mport).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].3, "dn1 dn2", "{rows:?}");
    assert_eq!(ids(&databases, "travelrecord").await, NONE);
    kill_backend_thread(backend_thread_in_transaction(&databases[1]).await).await;
    let committed = c.query_drop("COMMIT").await;
    let travel = ids(&databases, "travelrecord").await;
    assert!(committed.is_err(), "{travel:?}");
    assert_eq!(travel, NONE);
    assert!(prepared("xaps").await.is_empty());
}

/// Probe: with `twoPhaseCommit`, a multi-row INSERT over two shards, or a global-table INSERT,
/// that fails on one dataNode (duplicate key there) leaves nothing on the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_phase_commit_autocommit_write_failing_on_one_node_leaves_nothing() {
    let (dir, databases) = setup(
        "xa_dup",
        &[("instanceId", "xadup"), ("twoPhaseCommit", "true")],
    )
    .await;
    let mut d2 = primary(Some(&databases[1])).await;
    run_all(
        &mut d2,
        &[
            "INSERT INTO travelrecord (id) VALUES (5000001)",
            "INSERT INTO company (id, name) VALUES (5, 'only dn2')",
        ],
    )
    .await;
    let (port, _) = start_gateway_with_manager(dir.path()).await;
    let mut c = client(port).await;
    let e = refused(
        &mut c,
        "INSERT INTO travelrecord (id) VALUES (1), (5000001), (10000001)",
    )
    .await;
    assert_eq!(e.0, 1062, "{e:?}");
    assert_eq!(
        ids(&databases, "travelrecord").await,
        vec![vec![], vec![5000001], vec![]]
    );
    let e = refused(&mut c, "INSERT INTO company (id, name) VALUES (5, 'x')").await;
    assert_eq!(e.0, 1062, "{e:?}");
    assert_eq!(
        ids(&databases, "company").await,
        vec![vec![], vec![5], vec![]]
    );
    // In an explicit transaction: the failed statement interrupts it; COMMIT rolls it back.
    run_all(
        &mut c,
        &["BEGIN", "INSERT INTO travelrecord (id) VALUES (2)"],
    )
    .await;
    assert!(
        c.query_drop("INSERT INTO company (id, name) VALUES (5, 'x')")
            .await
            .is_err()
    );
    let committed = c.query_drop("COMMIT").await;
    assert_eq!(
        ids(&databases, "company").await,
        vec![vec![], vec![5], vec![]],
        "COMMIT: {committed:?}"
    );
    assert_eq!(
        ids(&databases, "travelrecord").await,
        vec![vec![], vec![5000001], vec![]],
        "COMMIT: {committed:?}"
    );
    assert!(prepared("xadup").await.is_empty());
}

/// Probe: `SET autocommit = 1` inside an XA transaction commits it through the coordinator
/// (both rows, no branch left), and a DDL statement inside one commits it first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autocommit_on_and_ddl_inside_an_xa_transaction_commit_it_whole() {
    let (_dir, databases, _, mut c) = served("xa_ac", "xaac").await;
    xa_on(&mut c).await;
    run_all(
        &mut c,
        &[
            "INSERT INTO travelrecord (id) VALUES (1), (5000001)",
            "SET autocommit = 1",
        ],
    )
    .await;
    assert_eq!(
        ids(&databases, "travelrecord").await,
        vec![vec![1], vec![5000001], vec![]]
    );
    xa_on(&mut c).await;
    c.query_drop("INSERT INTO travelrecord (id) VALUES (2), (5000002)")
        .await
        .unwrap();
    let ddl = c
        .query_drop("ALTER TABLE travelrecord ADD COLUMN extra INT")
        .await;
    c.query_drop("ROLLBACK").await.unwrap();
    let travel = ids(&databases, "travelrecord").await;
    assert!(
        travel == vec![vec![1, 2], vec![5000001, 5000002], vec![]]
            || travel == vec![vec![1], vec![5000001], vec![]],
        "DDL {ddl:?}: {travel:?}"
    );
    assert!(prepared("xaac").await.is_empty());
}

/// PostgreSQL databases `t_<prefix>_pg1..3` with table `orders`, and a config whose schema
/// PGDB shards `orders` (mod-long on id) over pgdn1..3 on them, user `pg`/`pg`.
async fn pg_setup(prefix: &str, properties: &[(&str, &str)]) -> (tempfile::TempDir, Vec<String>) {
    let admin = pg("postgres").await;
    let names: Vec<String> = (1..=3).map(|i| format!("t_{prefix}_pg{i}")).collect();
    for db in &names {
        // Prepared transactions of an earlier run would keep DROP DATABASE from working.
        let left = admin
            .query(
                "SELECT gid FROM pg_prepared_xacts WHERE database = $1",
                &[db],
            )
            .await
            .unwrap();
        if !left.is_empty() {
            let c = pg(db).await;
            for r in left {
                let gid: String = r.get(0);
                let _ = c.batch_execute(&format!("ROLLBACK PREPARED '{gid}'")).await;
            }
        }
    }
    let names = pg_databases(prefix, 3).await;
    common::postgres::pg_each(
        &names,
        "CREATE TABLE orders (id BIGINT PRIMARY KEY, v VARCHAR(20))",
    )
    .await;
    let schema_xml = format!(
        r#"<schema name="PGDB" checkSQLschema="false">
  <table name="orders" primaryKey="id" dataNode="pgdn1,pgdn2,pgdn3" rule="mod-long" />
</schema>
{}"#,
        common::postgres::pg_nodes_xml(&names)
    );
    let users = r#"<user name="pg"><property name="password">pg</property><property name="schemas">PGDB</property></user>"#;
    let (dir, _) = setup_with(prefix, properties, &schema_xml, users).await;
    (dir, names)
}

/// [`pg_setup`] served by an in-process gateway, and a client of schema PGDB in an XA
/// transaction (`SET autocommit = 0; SET XA = ON`).
async fn pg_xa_session(prefix: &str, instance: &str) -> (tempfile::TempDir, Vec<String>, Conn) {
    let (dir, databases) = pg_setup(prefix, &[("instanceId", instance)]).await;
    let (port, _) = start_gateway_with_manager(dir.path()).await;
    let mut c = pg_client(port).await;
    xa_on(&mut c).await;
    (dir, databases, c)
}

/// A client of the gateway on `port` as `pg`, schema PGDB.
async fn pg_client(port: u16) -> Conn {
    Conn::new(opts(port, "pg", "pg", Some("PGDB")))
        .await
        .unwrap()
}

/// The ids of `orders` in each PostgreSQL database, and the prepared transactions there.
async fn pg_ids(databases: &[String]) -> (Vec<Vec<i64>>, Vec<String>) {
    let mut out = Vec::new();
    let mut gids = Vec::new();
    for db in databases {
        let c = pg(db).await;
        let rows = c
            .query("SELECT id FROM orders ORDER BY id", &[])
            .await
            .unwrap();
        out.push(rows.iter().map(|r| r.get::<_, i64>(0)).collect());
        for r in c
            .query(
                "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()",
                &[],
            )
            .await
            .unwrap()
        {
            gids.push(r.get::<_, String>(0));
        }
    }
    (out, gids)
}

/// Finding candidate (PostgreSQL): a statement error on a PostgreSQL branch aborts that
/// branch's whole transaction (PostgreSQL's rule, unlike MySQL's statement rollback).
/// `PREPARE TRANSACTION` on an aborted transaction does not fail: it rolls back and answers
/// with the command tag ROLLBACK. The coordinator must not take that for a prepared branch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_branch_aborted_by_a_statement_error_is_not_committed_as_prepared() {
    let (_dir, databases, mut c) = pg_xa_session("xa_pgabort", "xapgabort").await;
    // 3 → pgdn1, 1 → pgdn2 (mod-long over three nodes).
    run_all(
        &mut c,
        &[
            "INSERT INTO orders (id, v) VALUES (3, 'a')",
            "INSERT INTO orders (id, v) VALUES (1, 'b')",
        ],
    )
    .await;
    let dup = c
        .query_drop("INSERT INTO orders (id, v) VALUES (3, 'dup')")
        .await;
    assert!(dup.is_err(), "duplicate key accepted");
    let committed = c.query_drop("COMMIT").await;
    let (rows, gids) = pg_ids(&databases).await;
    assert!(gids.is_empty(), "prepared left: {gids:?}");
    assert!(
        rows == vec![Vec::<i64>::new(), vec![], vec![]] || rows == vec![vec![3], vec![1], vec![]],
        "split transaction on PostgreSQL: {rows:?}; COMMIT answered {committed:?}"
    );
}

/// Same, with `twoPhaseCommit` and a multi-row autocommit INSERT that fails on one PostgreSQL
/// shard.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_two_phase_multi_row_insert_failing_on_one_shard_leaves_nothing() {
    let (dir, databases) = pg_setup(
        "xa_pgdup",
        &[("instanceId", "xapgdup"), ("twoPhaseCommit", "true")],
    )
    .await;
    pg(&databases[1])
        .await
        .batch_execute("INSERT INTO orders (id, v) VALUES (1, 'there')")
        .await
        .unwrap();
    let (port, _) = start_gateway_with_manager(dir.path()).await;
    let mut c = pg_client(port).await;
    let r = c
        .query_drop("INSERT INTO orders (id, v) VALUES (3, 'a'), (1, 'b'), (5, 'c')")
        .await;
    let (rows, gids) = pg_ids(&databases).await;
    assert!(r.is_err(), "{rows:?}");
    assert!(gids.is_empty(), "prepared left: {gids:?}");
    assert_eq!(rows, vec![vec![], vec![1], vec![]]);
}

/// The prepared XA branches of `instance` on the MariaDB server at `port`.
async fn prepared_at(port: u16, instance: &str) -> Vec<String> {
    let mut c = Conn::new(opts(port, "manx", "manx", None)).await.unwrap();
    let rows: Vec<(i64, i64, i64, Vec<u8>)> = c.query("XA RECOVER").await.unwrap();
    let prefix = format!("manx.{instance}.");
    let mut out: Vec<String> = rows
        .into_iter()
        .filter_map(|(_, g, _, data)| {
            let data = String::from_utf8(data).ok()?;
            let (gtrid, bqual) = data.split_at(g as usize);
            gtrid
                .starts_with(&prefix)
                .then(|| format!("{gtrid}/{bqual}"))
        })
        .collect();
    out.sort();
    out
}

/// A session ended while its COMMIT waits for one branch's `XA PREPARE` (the others
/// prepared): the commit runs in a task of its own and finishes, all or nothing, with no
/// branch left prepared and no row lock left behind (found by the hunt: the dropped commit
/// stayed PREPARING for ever, its branches prepared, and the reset of their pooled
/// connections left InnoDB transactions holding locks until the server restarted). dn3 is
/// a database on a throwaway MariaDB server whose global read lock holds its XA PREPARE;
/// `kill @@xa_session` (which ends only ACTIVE ones) and then the client's own `KILL`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_killed_while_one_branch_prepares_commits_all_or_nothing() {
    let instance = "xakillprep2";
    let (dir, databases) = setup(
        "xa_kp",
        &[("instanceId", instance), ("xaRecoveryPeriod", "300")],
    )
    .await;
    // dn3 on a server of its own, whose global read lock holds dn3's XA PREPARE.
    let dn3 = common::mariadb::Throwaway::start("xakp3", 3).await;
    let mut s = dn3.conn(None).await;
    s.query_drop(format!("CREATE DATABASE {}", databases[2]))
        .await
        .unwrap();
    s.query_drop(format!(
        "CREATE TABLE {}.company (id INT NOT NULL PRIMARY KEY, name VARCHAR(100))",
        databases[2]
    ))
    .await
    .unwrap();
    let schema = std::fs::read_to_string(dir.path().join("schema.xml")).unwrap();
    let schema = schema
        .replace(
            "<dataNode name=\"dn3\" dataHost=\"localhost1\"",
            "<dataNode name=\"dn3\" dataHost=\"standbyhost\"",
        )
        .replace(
            "</mycat:schema>",
            &format!(
                r#"<dataHost name="standbyhost" maxCon="20" minCon="1" balance="0" writeType="0" dbType="mysql" dbDriver="native" switchType="-1">
  <heartbeat>select user()</heartbeat>
  <writeHost host="sb" url="127.0.0.1:{}" user="manx" password="manx" />
</dataHost>
</mycat:schema>"#,
                dn3.port
            ),
        );
    assert!(schema.contains("standbyhost\""), "schema.xml changed shape");
    std::fs::write(dir.path().join("schema.xml"), schema).unwrap();
    let (port, mport) = start_gateway_with_manager(dir.path()).await;
    let mut c = client(port).await;
    let front: u64 = c
        .query_first("SELECT CONNECTION_ID()")
        .await
        .unwrap()
        .unwrap();
    xa_on(&mut c).await;
    c.query_drop("INSERT INTO company (id, name) VALUES (1, 'x')")
        .await
        .unwrap();
    assert_eq!(xa_sessions(mport).await[0].3, "dn1 dn2 dn3");
    s.query_drop("FLUSH TABLES WITH READ LOCK").await.unwrap();
    let commit = tokio::spawn(async move {
        let r = c.query_drop("COMMIT").await;
        (c, r)
    });
    wait_for_xa_state(mport, "PREPARING").await;
    // dn1 and dn2 prepare at once; dn3 waits for the lock.
    let deadline = Instant::now() + Duration::from_secs(10);
    while prepared(instance).await.len() < 2 {
        assert!(Instant::now() < deadline, "dn1/dn2 never prepared");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut m = Conn::new(opts(mport, "root", "123456", None))
        .await
        .unwrap();
    m.query_drop(format!("kill @@xa_session {front}"))
        .await
        .unwrap();
    assert_eq!(m.affected_rows(), 0, "a committing session is not killed");
    let mut other = client(port).await;
    other.query_drop(format!("KILL {front}")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    s.query_drop("UNLOCK TABLES").await.unwrap();
    let answered = tokio::time::timeout(Duration::from_secs(10), commit)
        .await
        .map(|r| r.map(|(_, r)| r));
    // Many recovery periods later.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut left = prepared(instance).await;
    left.extend(prepared_at(dn3.port, instance).await);
    let sessions = xa_sessions(mport).await;
    let mut company = ids(&databases[..2], "company").await;
    company.push(
        s.query(format!(
            "SELECT id FROM {}.company ORDER BY id",
            databases[2]
        ))
        .await
        .unwrap(),
    );
    // Clean up by hand (roll back: nothing was decided), then judge.
    let mut admin = primary(None).await;
    for b in &left {
        let (g, q) = b.split_once('/').unwrap();
        let sql = format!("XA ROLLBACK '{g}','{q}'");
        if q == "dn3" {
            let _ = s.query_drop(sql).await;
        } else {
            let _ = admin.query_drop(sql).await;
        }
    }
    assert!(
        left.is_empty(),
        "branches still prepared 4 s after the session was killed (recovery period 300 ms): {left:?}\nshow @@xa_session: {sessions:?}\nCOMMIT answered: {answered:?}\ncompany copies: {company:?}"
    );
    assert!(
        company == vec![Vec::<i64>::new(), vec![], vec![]]
            || company == vec![vec![1], vec![1], vec![1]],
        "{company:?}"
    );
}

/// Probe: with `twoPhaseCommit`, four clients write a global table (three dataNodes) and
/// two-shard transactions while the gateway binary is SIGKILLed, three times; after a restart
/// and its recovery, no branch is left prepared, the three copies of `company` are identical
/// and every travelrecord pair (k on dn1, 5000000+k on dn2) is whole or absent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_leaves_every_transaction_whole() {
    let instance = "xaload";
    let (dir, databases) = setup("xa_load", &two_phase(instance, "500")).await;
    let ports = (closed_port(), closed_port());
    let login = ("root", "123456", "TESTDB");
    let log = dir.path().join("manx.log");
    for round in 0..3i64 {
        let (mut gw, _c) =
            GatewayProcess::start_env(dir.path(), login, Some(&log), ports, &[]).await;
        let port = gw.port;
        let mut tasks = Vec::new();
        for w in 0..4i64 {
            tasks.push(tokio::spawn(async move {
                let Ok(mut c) = Conn::new(opts(port, "root", "123456", Some("TESTDB"))).await
                else {
                    return;
                };
                for i in 0..10_000i64 {
                    let k = round * 100_000 + w * 10_000 + i + 1;
                    if c.query_drop(format!("INSERT INTO company (id, name) VALUES ({k}, 'x')"))
                        .await
                        .is_err()
                    {
                        break;
                    }
                    if c.query_drop("BEGIN").await.is_err() {
                        break;
                    }
                    if c.query_drop(format!(
                        "INSERT INTO travelrecord (id) VALUES ({k}), ({})",
                        5_000_000 + k
                    ))
                    .await
                    .is_err()
                    {
                        break;
                    }
                    if c.query_drop("COMMIT").await.is_err() {
                        break;
                    }
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(1500 + 137 * round as u64)).await;
        gw.child.kill().unwrap();
        let _ = gw.child.wait();
        for t in tasks {
            let _ = t.await;
        }
    }
    let (_gw, _c) = GatewayProcess::start_env(dir.path(), login, Some(&log), ports, &[]).await;
    wait_none_prepared(instance, Duration::from_secs(15)).await;
    let company = ids(&databases, "company").await;
    assert!(!company[0].is_empty(), "nothing was written");
    assert_eq!(company[0], company[1], "dn1 vs dn2 copies differ");
    assert_eq!(company[0], company[2], "dn1 vs dn3 copies differ");
    let travel = ids(&databases, "travelrecord").await;
    let low: Vec<i64> = travel[0].clone();
    let high: Vec<i64> = travel[1].iter().map(|k| k - 5_000_000).collect();
    assert_eq!(low, high, "split two-shard transactions");
    eprintln!("{} global rows, {} pairs", company[0].len(), low.len());
}

/// Finding candidate (PostgreSQL, one written branch): the same aborted branch committed in one
/// phase (`COMMIT` on an aborted PostgreSQL transaction answers ROLLBACK, not an error): the
/// client is told its transaction committed while the backend kept none of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_single_aborted_branch_is_not_reported_committed() {
    let (_dir, databases, mut c) = pg_xa_session("xa_pgone", "xapgone").await;
    c.query_drop("INSERT INTO orders (id, v) VALUES (3, 'a')")
        .await
        .unwrap();
    assert!(
        c.query_drop("INSERT INTO orders (id, v) VALUES (3, 'dup')")
            .await
            .is_err()
    );
    let committed = c.query_drop("COMMIT").await;
    let (rows, gids) = pg_ids(&databases).await;
    assert!(gids.is_empty(), "{gids:?}");
    assert!(
        committed.is_err() || rows == vec![vec![3], vec![], vec![]],
        "COMMIT answered OK but the backend holds {rows:?}"
    );
}

/// The same without XA: a statement error in a plain transaction on a PostgreSQL dataNode
/// undoes that statement only, as MySQL does (PostgreSQL alone would abort the whole
/// transaction and answer COMMIT with a silent ROLLBACK): the transaction goes on, and COMMIT
/// keeps what succeeded — the same rows a MariaDB-backed schema keeps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_statement_error_in_a_transaction_undoes_that_statement_only() {
    let (dir, databases) = pg_setup("xa_pgplain", &[]).await;
    let (port, _) = start_gateway_with_manager(dir.path()).await;
    let mut c = pg_client(port).await;
    run_all(
        &mut c,
        &["BEGIN", "INSERT INTO orders (id, v) VALUES (3, 'a')"],
    )
    .await;
    assert!(
        c.query_drop("INSERT INTO orders (id, v) VALUES (3, 'dup')")
            .await
            .is_err()
    );
    // A statement whose rows fail after they begin (division by zero) is undone too.
    assert!(
        c.query_drop("SELECT 1 / (id - 3) FROM orders WHERE id = 3")
            .await
            .is_err()
    );
    run_all(
        &mut c,
        &["INSERT INTO orders (id, v) VALUES (6, 'b')", "COMMIT"],
    )
    .await;
    let (rows, _) = pg_ids(&databases).await;
    assert_eq!(rows, vec![vec![3, 6], vec![], vec![]]);
}

/// A deadlock victim's transaction is rolled back on every dataNode, as MySQL rolls back the
/// whole transaction: its write on the other dataNode is not committed by the client's next
/// BEGIN (found by the new-user trial: without XA that BEGIN committed the victim's other
/// half; with `twoPhaseCommit` it answered 1402 and sysbench stopped), and BEGIN answers OK.
async fn deadlock_victim(two_phase: bool) {
    let instance = if two_phase { "xadl2" } else { "xadl1" };
    let (dir, databases) = setup(
        &format!("xa_dl{}", u8::from(two_phase)),
        &[
            ("twoPhaseCommit", if two_phase { "true" } else { "false" }),
            ("instanceId", instance),
        ],
    )
    .await;
    let (port, _) = start_gateway_with_manager(dir.path()).await;
    let mut setup_conn = client(port).await;
    setup_conn
        .query_drop(
            "INSERT INTO travelrecord (id, days) VALUES (1, 0), (2, 0), (5000001, 0), (5000002, 0)",
        )
        .await
        .unwrap();
    let (mut a, mut b) = (client(port).await, client(port).await);
    for (c, row) in [(&mut a, 5000001), (&mut b, 5000002)] {
        c.query_drop("BEGIN").await.unwrap();
        c.query_drop(format!("UPDATE travelrecord SET days = 9 WHERE id = {row}"))
            .await
            .unwrap();
    }
    a.query_drop("UPDATE travelrecord SET days = 9 WHERE id = 1")
        .await
        .unwrap();
    b.query_drop("UPDATE travelrecord SET days = 9 WHERE id = 2")
        .await
        .unwrap();
    // Each now waits for the other's row on dn1: MariaDB picks a victim.
    let wait_a = tokio::spawn(async move {
        let r = a
            .query_drop("UPDATE travelrecord SET days = 9 WHERE id = 2")
            .await;
        (a, r)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rb = b
        .query_drop("UPDATE travelrecord SET days = 9 WHERE id = 1")
        .await;
    let (a, ra) = wait_a.await.unwrap();
    let (mut victim, mut winner, victim_row, winner_row) = match (ra, rb) {
        (Err(e), Ok(())) => {
            assert_eq!(server_error(e).0, 1213);
            (a, b, 5000001, 5000002)
        }
        (Ok(()), Err(e)) => {
            assert_eq!(server_error(e).0, 1213);
            (b, a, 5000002, 5000001)
        }
        other => panic!("expected one deadlock victim: {other:?}"),
    };
    victim
        .query_drop("BEGIN")
        .await
        .expect("the victim's next BEGIN starts afresh");
    victim.query_drop("COMMIT").await.unwrap();
    winner.query_drop("COMMIT").await.unwrap();
    let mut d = primary(Some(&databases[1])).await;
    let days: Vec<(i64, i64)> = d
        .query("SELECT id, days FROM travelrecord ORDER BY id")
        .await
        .unwrap();
    assert_eq!(
        days,
        vec![
            (
                victim_row.min(winner_row),
                if winner_row < victim_row { 9 } else { 0 }
            ),
            (
                victim_row.max(winner_row),
                if winner_row > victim_row { 9 } else { 0 }
            )
        ],
        "the victim's write on dn2 must be rolled back, the winner's committed"
    );
    assert!(prepared(instance).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadlock_victim_is_rolled_back_on_every_datanode() {
    deadlock_victim(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadlock_victim_of_an_xa_transaction_is_rolled_back_and_begins_again() {
    deadlock_victim(true).await;
}

/// Found by the new-user trial: restarted under another instanceId (the old default changed
/// with the port), the gateway ignored its own log's prepared branches (their ids carry the
/// old name), marked them done and deleted the segment. Now recovery resolves every branch
/// the log knows, whatever its instance part: the decided transaction commits everywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn branches_logged_under_an_earlier_instance_id_are_still_resolved() {
    let (dir, databases) = setup("xa_rename", &[("instanceId", "xaold")]).await;
    let ports = (closed_port(), closed_port());
    let login = ("root", "123456", "TESTDB");
    let (mut g, mut c) = start_faulty(dir.path(), login, ports, "after_decision").await;
    xa_on(&mut c).await;
    c.query_drop("INSERT INTO company (id) VALUES (4)")
        .await
        .unwrap();
    assert!(c.query_drop("COMMIT").await.is_err());
    assert_eq!(g.child.wait().unwrap().code(), Some(86));
    assert_eq!(prepared("xaold").await.len(), 3);
    let server = dir.path().join("server.xml");
    let text = std::fs::read_to_string(&server)
        .unwrap()
        .replace(">xaold<", ">xanew<");
    std::fs::write(&server, text).unwrap();
    let (_g, _c) = GatewayProcess::start_env(dir.path(), login, None, ports, &[]).await;
    assert!(
        prepared("xaold").await.is_empty(),
        "{:?}",
        prepared("xaold").await
    );
    assert_eq!(
        ids(&databases, "company").await,
        vec![vec![4], vec![4], vec![4]]
    );
}

/// Without `instanceId`, the id is made once and kept in the log directory (`INSTANCE`), so
/// it survives restarts on another port or host name; `show @@sysparam` shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_instance_id_is_kept_in_the_log_directory() {
    let (dir, _) = setup("xa_defid", &[]).await;
    let login = ("root", "123456", "TESTDB");
    let mut seen = Vec::new();
    for _ in 0..2 {
        let (g, _c) =
            GatewayProcess::start_env(dir.path(), login, None, (closed_port(), closed_port()), &[])
                .await;
        let mut m = Conn::new(opts(g.manager_port, "root", "123456", None))
            .await
            .unwrap();
        let params: Vec<(String, String, String)> = m.query("show @@sysparam").await.unwrap();
        let id = params
            .into_iter()
            .find(|p| p.0 == "instanceId")
            .map(|p| p.1)
            .unwrap();
        seen.push(id);
    }
    let kept = std::fs::read_to_string(dir.path().join("xalog/INSTANCE")).unwrap();
    assert_eq!(seen[0], seen[1], "the id changed with the port");
    assert_eq!(seen[0], kept.trim());
    assert!(
        seen[0].len() <= 32
            && seen[0]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-'),
        "{seen:?}"
    );
}
