//! Hot reload (issue 20 item 2; OPERATIONS.md §1): `reload @@config_all` under a write load
//! (no failed statement, every acknowledged commit on the backends), a transaction that
//! spans a reload, Mycat's refusal while the previous reload drains, invalid configurations
//! refused with their errors, `reload @@config` / `reload @@user` / `rollback @@config`,
//! dnindex.properties for new dataHosts, and SIGHUP on the binary. Judged on the backends
//! (rows) and on what the manager port reports.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::run_all;
use common::{
    GATEWAY_PASSWORD, GATEWAY_USER, GatewayProcess, PRIMARY_PORT, closed_port, ensure_sandbox,
    opts, primary, server_error, start_gateway_with_manager, xml,
};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row};

/// Physical databases `t_<prefix>_db1..3` on the sandbox primary, each with `orders` and
/// `extra`, emptied.
async fn databases(prefix: &str) -> Vec<String> {
    ensure_sandbox();
    let mut c = primary(None).await;
    let mut out = Vec::new();
    for i in 1..=3 {
        let db = format!("t_{prefix}_db{i}");
        c.query_drop(format!("DROP DATABASE IF EXISTS {db}"))
            .await
            .unwrap();
        c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
        c.query_drop(format!(
            "CREATE TABLE {db}.orders (id BIGINT PRIMARY KEY, v INT NOT NULL)"
        ))
        .await
        .unwrap();
        c.query_drop(format!("CREATE TABLE {db}.extra (id INT PRIMARY KEY)"))
            .await
            .unwrap();
        out.push(db);
    }
    out
}

/// One version of a test's configuration.
struct Version<'a> {
    /// `<table>` elements of schema RL besides `orders`.
    tables: &'a str,
    /// dataHost h1's `maxCon`.
    max_con: u32,
    /// More `<dataNode>` / `<dataHost>` XML.
    more: &'a str,
    /// `<user>` elements besides `rl` (the manager user).
    users: &'a str,
}

impl Default for Version<'_> {
    fn default() -> Self {
        Version {
            tables: "",
            max_con: 10,
            more: "",
            users: "",
        }
    }
}

/// Writes server.xml, schema.xml and rule.xml for `dbs` into `dir`: schema RL, table `orders`
/// sharded by `mod-long` over dn1..dn3 on dataHost h1 (the sandbox primary).
fn write(dir: &Path, dbs: &[String], v: &Version) {
    xml::write_dir(
        dir,
        &format!(
            r#"    <schema name="RL">
        <table name="orders" dataNode="dn1,dn2,dn3" rule="mod-long" />
        {tables}
    </schema>
    <dataNode name="dn1" dataHost="h1" database="{d1}" />
    <dataNode name="dn2" dataHost="h1" database="{d2}" />
    <dataNode name="dn3" dataHost="h1" database="{d3}" />
    {more}
    <dataHost name="h1" maxCon="{max_con}" minCon="1" balance="0" writeType="0" switchType="1" dbType="mysql" dbDriver="native">
        <heartbeat>select user()</heartbeat>
        <writeHost host="m1" url="127.0.0.1:{PRIMARY_PORT}" user="{GATEWAY_USER}" password="{GATEWAY_PASSWORD}" />
    </dataHost>"#,
            tables = v.tables,
            d1 = dbs[0],
            d2 = dbs[1],
            d3 = dbs[2],
            more = v.more,
            max_con = v.max_con,
        ),
        &format!("    {}\n    {}", xml::user("rl", "rl", "RL"), v.users),
    );
}

/// Databases for `prefix` ([`databases`]), a config directory for them ([`Version::default`]),
/// a gateway serving it in-process: (databases, directory, server port, a manager client).
async fn served(prefix: &str) -> (Vec<String>, tempfile::TempDir, u16, Conn) {
    let dbs = databases(prefix).await;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &dbs, &Version::default());
    let (port, mport) = start_gateway_with_manager(dir.path()).await;
    let m = manager(mport).await;
    (dbs, dir, port, m)
}

/// The ids of table `extra` in physical database `db`, in the server's order.
async fn extra_ids(db: &str) -> Vec<i64> {
    primary(None)
        .await
        .query(format!("SELECT id FROM {db}.extra"))
        .await
        .unwrap()
}

async fn client(port: u16, user: &str) -> Conn {
    Conn::new(opts(port, user, user, Some("RL")))
        .await
        .unwrap_or_else(|e| panic!("log in as {user}: {e}"))
}

async fn manager(mport: u16) -> Conn {
    Conn::new(opts(mport, "rl", "rl", None)).await.unwrap()
}

/// `sql` on the manager port: `Ok(message)` of its OK packet, or the server error.
async fn command(m: &mut Conn, sql: &str) -> Result<String, (u16, String)> {
    match m.query_drop(sql).await {
        Ok(()) => Ok(m.info().into_owned()),
        Err(e) => {
            let (code, _, message) = server_error(e);
            Err((code, message))
        }
    }
}

/// The ids of `orders` over the three physical databases, sorted.
async fn ids_on_backends(dbs: &[String]) -> Vec<i64> {
    let mut c = primary(None).await;
    let mut out = Vec::new();
    for db in dbs {
        let ids: Vec<i64> = c
            .query(format!("SELECT id FROM {db}.orders"))
            .await
            .unwrap();
        out.extend(ids);
    }
    out.sort();
    out
}

/// SIZE of the first `show @@datasource` row of dataNode `dn`.
async fn pool_size(m: &mut Conn, dn: &str) -> i64 {
    let rows: Vec<Row> = m
        .query(format!("show @@datasource where dataNode = {dn}"))
        .await
        .unwrap();
    let i = rows[0]
        .columns_ref()
        .iter()
        .position(|c| c.name_str() == "SIZE")
        .unwrap();
    rows[0].get::<i64, _>(i).unwrap()
}

/// Writes `v` and runs `reload @@config_all` until it is taken ([`reload_all`]).
async fn apply(m: &mut Conn, dir: &Path, dbs: &[String], v: Version<'_>) -> usize {
    write(dir, dbs, &v);
    reload_all(m).await
}

/// dnindex.properties in `dir` lists h1 at writeHost 0 and no h2.
fn assert_lists_only_h1(dir: &Path) {
    let dnindex = std::fs::read_to_string(dir.join("dnindex.properties")).unwrap();
    assert!(
        dnindex.contains("h1=0") && !dnindex.contains("h2"),
        "{dnindex}"
    );
}

/// RELOAD_TIME and ROLLBACK_TIME of `show @@server`.
async fn server_times(m: &mut Conn) -> (i64, i64) {
    let rows: Vec<Row> = m.query("show @@server").await.unwrap();
    let col = |name: &str| {
        let i = rows[0]
            .columns_ref()
            .iter()
            .position(|c| c.name_str() == name)
            .unwrap();
        rows[0].get::<i64, _>(i).unwrap()
    };
    (col("RELOAD_TIME"), col("ROLLBACK_TIME"))
}

const MYCAT_DRAINING: &str = "The are several unfinished db transactions before executing \"reload @@config_all\", therefore the execution is terminated for logical integrity and please try again later.";

/// Retries `reload @@config_all` while Mycat's "unfinished transactions" refusal answers
/// (bounded: a transaction of the load may wait up to InnoDB's 50 s lock wait timeout on a
/// cross-node lock cycle, holding the old dataHost meanwhile); the number of refusals.
async fn reload_all(m: &mut Conn) -> usize {
    let started = Instant::now();
    let mut refused = 0;
    loop {
        match command(m, "reload @@config_all").await {
            Ok(message) => {
                assert_eq!(message, "Reload config success");
                assert_eq!(m.affected_rows(), 1);
                return refused;
            }
            Err((1003, message)) if message == MYCAT_DRAINING => {
                refused += 1;
                assert!(
                    started.elapsed() < Duration::from_secs(70),
                    "still refused after 70 s"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("reload @@config_all: {e:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reload_config_all_under_load_adds_a_table_and_changes_a_datahost_losing_nothing() {
    let (dbs, dir, port, mut m) = served("rl_load").await;
    assert_eq!(pool_size(&mut m, "dn1").await, 10);

    // Writers: each transaction inserts two rows (on two dataNodes), reads them back inside
    // the transaction and commits; an id counts as acknowledged once COMMIT answered OK.
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let commits = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    for w in 0..6i64 {
        let (stop, acked, failures, commits) = (
            stop.clone(),
            acked.clone(),
            failures.clone(),
            commits.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut c = client(port, "rl").await;
            let mut n = 0i64;
            while !stop.load(Ordering::Relaxed) {
                let (a, b) = (w * 1_000_000 + n * 2, w * 1_000_000 + n * 2 + 1);
                n += 1;
                let run = async {
                    c.query_drop("BEGIN").await?;
                    c.query_drop(format!("INSERT INTO orders (id, v) VALUES ({a}, {w})"))
                        .await?;
                    c.query_drop(format!("INSERT INTO orders (id, v) VALUES ({b}, {w})"))
                        .await?;
                    let seen: Option<i64> = c
                        .query_first(format!(
                            "SELECT COUNT(*) FROM orders WHERE id IN ({a}, {b})"
                        ))
                        .await?;
                    c.query_drop("COMMIT").await?;
                    Ok::<_, mysql_async::Error>(seen)
                };
                match run.await {
                    Ok(Some(2)) => {
                        acked.lock().unwrap().extend([a, b]);
                        commits.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(seen) => failures
                        .lock()
                        .unwrap()
                        .push(format!("{a},{b}: the transaction saw {seen:?} rows")),
                    Err(e) => failures.lock().unwrap().push(format!("{a},{b}: {e}")),
                }
            }
        }));
    }
    // Readers outside transactions.
    for _ in 0..2 {
        let (stop, failures) = (stop.clone(), failures.clone());
        workers.push(tokio::spawn(async move {
            let mut c = client(port, "rl").await;
            let mut i = 0i64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                if let Err(e) = c
                    .query_drop(format!("SELECT v FROM orders WHERE id = {}", i % 5000))
                    .await
                {
                    failures.lock().unwrap().push(format!("read: {e}"));
                }
            }
        }));
    }
    let wait_commits = |more: u64| {
        let commits = commits.clone();
        async move {
            let target = commits.load(Ordering::Relaxed) + more;
            let started = Instant::now();
            while commits.load(Ordering::Relaxed) < target {
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "the load stalled"
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    wait_commits(200).await;

    // A new table and a changed dataHost (maxCon 10 -> 20: h1 is rebuilt, its old pool drains).
    let extra = r#"<table name="extra" dataNode="dn1,dn2,dn3" type="global" />"#;
    let with = |max_con| Version {
        tables: extra,
        max_con,
        ..Version::default()
    };
    apply(&mut m, dir.path(), &dbs, with(20)).await;
    assert_eq!(pool_size(&mut m, "dn1").await, 20);
    let mut c = client(port, "rl").await;
    c.query_drop("INSERT INTO extra (id) VALUES (7)")
        .await
        .unwrap();
    for db in &dbs {
        let on: Vec<i64> = extra_ids(db).await;
        assert_eq!(on, [7], "the new global table's copy in {db}");
    }
    wait_commits(200).await;

    // Again, while transactions begun before the first reload may still hold the old dataHost:
    // Mycat's refusal, then success once they ended.
    apply(&mut m, dir.path(), &dbs, with(15)).await;
    assert_eq!(pool_size(&mut m, "dn2").await, 15);
    wait_commits(200).await;

    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.unwrap();
    }
    let failures = failures.lock().unwrap().clone();
    assert!(
        failures.is_empty(),
        "{} failed: {failures:?}",
        failures.len()
    );
    let acked: Vec<i64> = acked.lock().unwrap().iter().copied().collect();
    assert!(acked.len() >= 1200, "{} rows", acked.len());
    assert_eq!(
        ids_on_backends(&dbs).await,
        acked,
        "the backends hold exactly the acknowledged rows"
    );
}

/// sysbench 1.0 `oltp_read_write` (4 threads, 12 s, sbtest1 sharded by id mod 3) while two
/// `reload @@config_all` add a table and change the dataHost: sysbench stops a thread with FATAL
/// on any error it does not retry, so a clean exit means no statement failed; every one of the
/// 10,000 rows is still there, on its node (each transaction deletes a row and inserts it
/// again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sysbench_oltp_read_write_runs_through_two_reloads() {
    let c = common::clients::clients();
    let dbs = databases("rl_sb").await;
    let dir = tempfile::tempdir().unwrap();
    let sbtest = r#"<table name="sbtest1" dataNode="dn1,dn2,dn3" rule="mod-long" />"#;
    write(
        dir.path(),
        &dbs,
        &Version {
            tables: sbtest,
            ..Version::default()
        },
    );
    let (port, mport) = start_gateway_with_manager(dir.path()).await;
    let mut args: Vec<String> = [
        "oltp_read_write",
        "--db-driver=mysql",
        "--mysql-host=127.0.0.1",
        "--mysql-user=rl",
        "--mysql-password=rl",
        "--mysql-db=RL",
        "--tables=1",
        "--table-size=10000",
        "--auto_inc=off",
    ]
    .map(String::from)
    .to_vec();
    args.push(format!("--mysql-port={port}"));
    let mut prepare = args.clone();
    prepare.push("prepare".into());
    let (ok, out, err) = common::clients::run(&c.sysbench, prepare, vec![]).await;
    assert!(ok, "sysbench prepare failed:\n{out}\n{err}");
    args.extend(["--threads=4", "--time=12", "--report-interval=0", "run"].map(String::from));
    let load = tokio::spawn(common::clients::run(&c.sysbench, args, vec![]));

    let mut m = manager(mport).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let with_extra =
        format!(r#"{sbtest}<table name="extra" dataNode="dn1,dn2,dn3" type="global" />"#);
    let with = |max_con| Version {
        tables: &with_extra,
        max_con,
        ..Version::default()
    };
    apply(&mut m, dir.path(), &dbs, with(20)).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let refused = apply(&mut m, dir.path(), &dbs, with(15)).await;
    assert_eq!(pool_size(&mut m, "dn3").await, 15);

    let (ok, out, err) = load.await.unwrap();
    let fatal: Vec<&str> = out
        .lines()
        .chain(err.lines())
        .filter(|l| l.contains("FATAL"))
        .collect();
    assert!(ok && fatal.is_empty(), "sysbench run failed:\n{out}\n{err}");
    let number = |label: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(label))
            .and_then(|l| {
                l.split_whitespace()
                    .nth(if label == "ignored errors:" { 2 } else { 1 })
            })
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no `{label}` in:\n{out}"))
    };
    let transactions = number("transactions:");
    assert!(transactions > 100, "{transactions} transactions:\n{out}");
    println!(
        "sysbench oltp_read_write across 2 reloads: {transactions} transactions, {} ignored (retried) errors, the second reload refused {refused} time(s) while the first one's dataHost drained",
        number("ignored errors:")
    );
    let mut b = primary(None).await;
    let mut total = 0;
    for (n, db) in dbs.iter().enumerate() {
        let (rows, wrong): (i64, i64) = b
            .query_first(format!(
                "SELECT COUNT(*), COALESCE(SUM(id % 3 <> {n}), 0) FROM {db}.sbtest1"
            ))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(wrong, 0, "rows of {db} on the wrong node");
        total += rows;
    }
    assert_eq!(total, 10_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_spanning_a_reload_finishes_on_the_old_config_and_holds_off_the_next() {
    let (dbs, dir, port, mut m) = served("rl_tx").await;
    let mut tx = client(port, "rl").await;
    run_all(
        &mut tx,
        &["BEGIN", "INSERT INTO orders (id, v) VALUES (3, 1)"],
    )
    .await;

    write(
        dir.path(),
        &dbs,
        &Version {
            max_con: 20,
            ..Version::default()
        },
    );
    assert_eq!(
        command(&mut m, "reload @@config_all").await,
        Ok("Reload config success".to_string())
    );
    // The open transaction goes on, on the dataHost it began with: a dataNode it had not
    // touched yet included (id 4 is on dn2).
    tx.query_drop("INSERT INTO orders (id, v) VALUES (4, 1)")
        .await
        .unwrap();
    // Another session sees the new configuration and none of the uncommitted rows.
    let mut other = client(port, "rl").await;
    let n: Option<i64> = other
        .query_first("SELECT COUNT(*) FROM orders")
        .await
        .unwrap();
    assert_eq!(n, Some(0));
    // The replaced dataHost is still held: the next reload is refused with Mycat's message.
    let refused = command(&mut m, "reload @@config_all").await;
    assert_eq!(refused, Err((1003, MYCAT_DRAINING.to_string())));
    // reload @@config does not touch dataHosts: it is not held off.
    assert_eq!(
        command(&mut m, "reload @@config").await,
        Ok("Reload config success".to_string())
    );
    tx.query_drop("COMMIT").await.unwrap();
    assert_eq!(ids_on_backends(&dbs).await, [3, 4]);
    assert_eq!(
        reload_all(&mut m).await,
        0,
        "refused after the transaction ended"
    );
    // An idle session outside a transaction holds nothing.
    assert_eq!(reload_all(&mut m).await, 0);
    let n: Option<i64> = tx.query_first("SELECT COUNT(*) FROM orders").await.unwrap();
    assert_eq!(n, Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_configs_are_refused_with_their_errors_and_the_running_one_keeps_serving() {
    let (dbs, dir, port, mut m) = served("rl_bad").await;
    let mut c = client(port, "rl").await;
    c.query_drop("INSERT INTO orders (id, v) VALUES (1, 1)")
        .await
        .unwrap();
    let (reloaded_at, rolled_back_at) = server_times(&mut m).await;
    assert_eq!(rolled_back_at, -1);

    // Two errors in one load: both reported, with file and line.
    write(
        dir.path(),
        &dbs,
        &Version {
            tables: r#"<table name="extra" dataNode="dn9" type="global" />
        <table name="more" dataNode="dn1,dn2" rule="no-such-rule" />"#,
            ..Version::default()
        },
    );
    let (code, message) = command(&mut m, "reload @@config_all").await.unwrap_err();
    assert_eq!(code, 1003);
    assert!(
        message.starts_with("Reload config failure: 2 error(s)"),
        "{message}"
    );
    assert!(message.contains("dataNode 'dn9' is not found"), "{message}");
    assert!(message.contains("no-such-rule"), "{message}");
    assert!(message.contains("schema.xml:"), "{message}");
    // A new dataHost whose writeHost does not answer: refused before anything is swapped.
    let unreachable = format!(
        r#"<dataNode name="dn4" dataHost="h2" database="{}" />
    <dataHost name="h2" maxCon="5" minCon="1" balance="0" dbType="mysql" dbDriver="native">
        <heartbeat>select user()</heartbeat>
        <writeHost host="gone" url="127.0.0.1:{}" user="x" password="x" />
    </dataHost>"#,
        dbs[0],
        closed_port()
    );
    write(
        dir.path(),
        &dbs,
        &Version {
            tables: r#"<table name="extra" dataNode="dn4" type="global" />"#,
            more: &unreachable,
            ..Version::default()
        },
    );
    let (code, message) = command(&mut m, "reload @@config_all").await.unwrap_err();
    assert_eq!(code, 1003);
    assert!(
        message.contains("dataHost h2: its active writeHost 0 gone")
            && message.contains("cannot be reached"),
        "{message}"
    );
    // reload @@config keeps the running dataNodes: a table on a new one is refused, with a hint.
    let (code, message) = command(&mut m, "reload @@config").await.unwrap_err();
    assert_eq!(code, 1003);
    assert!(message.contains("dataNode 'dn4' is not found"), "{message}");
    assert!(message.contains("reload @@config_all"), "{message}");

    // Nothing changed: the old configuration serves, the dataNodes are the old ones, no reload
    // time recorded.
    let (code, _, message) = server_error(
        c.query_drop("INSERT INTO extra (id) VALUES (1)")
            .await
            .unwrap_err(),
    );
    assert!(message.to_lowercase().contains("extra"), "{code} {message}");
    let n: Option<i64> = c.query_first("SELECT COUNT(*) FROM orders").await.unwrap();
    assert_eq!(n, Some(1));
    let nodes: Vec<Row> = m.query("show @@datanode").await.unwrap();
    assert_eq!(nodes.len(), 3);
    assert_eq!(server_times(&mut m).await, (reloaded_at, -1));
    // dnindex.properties still lists only h1.
    assert_lists_only_h1(dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_config_user_and_rollback_apply_what_they_name() {
    let dbs = databases("rl_user").await;
    let dir = tempfile::tempdir().unwrap();
    let bob = r#"<user name="bob"><property name="password">bob</property><property name="schemas">RL</property></user>
    <user name="ro"><property name="password">ro</property><property name="schemas">RL</property></user>"#;
    write(
        dir.path(),
        &dbs,
        &Version {
            users: bob,
            ..Version::default()
        },
    );
    let (port, mport) = start_gateway_with_manager(dir.path()).await;
    let mut m = manager(mport).await;
    let mut b = client(port, "bob").await;
    let mut ro = client(port, "ro").await;
    run_all(
        &mut ro,
        &["BEGIN", "INSERT INTO orders (id, v) VALUES (1, 1)"],
    )
    .await;

    // reload @@user: bob removed, carol added, ro made readOnly; a table added to schema.xml
    // at the same time is not taken (users only).
    let carol = r#"<user name="carol"><property name="password">carol</property><property name="schemas">RL</property></user>
    <user name="ro"><property name="password">ro</property><property name="schemas">RL</property><property name="readOnly">true</property></user>"#;
    write(
        dir.path(),
        &dbs,
        &Version {
            users: carol,
            tables: r#"<table name="extra" dataNode="dn1,dn2,dn3" type="global" />"#,
            ..Version::default()
        },
    );
    assert_eq!(
        command(&mut m, "reload @@user").await,
        Ok("Reload userConfig success".to_string())
    );
    // bob's open session ends at its next command, told why; bob can no longer log in.
    let (code, _, message) = server_error(b.query_drop("SELECT 1").await.unwrap_err());
    assert_eq!(code, 1045);
    assert!(message.contains("removed"), "{message}");
    assert!(
        b.query_drop("SELECT 1").await.is_err(),
        "the connection is closed"
    );
    let (code, _, _) = server_error(
        Conn::new(opts(port, "bob", "bob", Some("RL")))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1045);
    let mut carol_conn = client(port, "carol").await;
    let n: Option<i64> = carol_conn
        .query_first("SELECT COUNT(*) FROM orders")
        .await
        .unwrap();
    assert_eq!(n, Some(0), "ro's transaction is not committed yet");
    // ro is readOnly from its next statement on, inside the transaction it had open (which
    // still routes on the configuration it began with), as MariaDB applies a REVOKE.
    let (code, _, _) = server_error(
        ro.query_drop("INSERT INTO orders (id, v) VALUES (2, 1)")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1495);
    ro.query_drop("COMMIT").await.unwrap();
    assert_eq!(ids_on_backends(&dbs).await, [1]);
    // The table was not taken.
    assert!(carol_conn.query_drop("SELECT * FROM extra").await.is_err());

    // reload @@config takes schema.xml's tables.
    assert_eq!(
        command(&mut m, "reload @@config").await,
        Ok("Reload config success".to_string())
    );
    carol_conn
        .query_drop("INSERT INTO extra (id) VALUES (5)")
        .await
        .unwrap();
    for db in &dbs {
        let on: Vec<i64> = extra_ids(db).await;
        assert_eq!(on, [5]);
    }

    // rollback @@config: back to the configuration the last reload replaced (users of the
    // reload @@user, no table extra); ROLLBACK_TIME recorded.
    assert_eq!(
        command(&mut m, "rollback @@config").await,
        Ok("Rollback config success".to_string())
    );
    let (code, _, message) = server_error(
        carol_conn
            .query_drop("INSERT INTO extra (id) VALUES (6)")
            .await
            .unwrap_err(),
    );
    assert!(message.to_lowercase().contains("extra"), "{code} {message}");
    let (reloaded_at, rolled_back_at) = server_times(&mut m).await;
    assert!(rolled_back_at >= reloaded_at && reloaded_at > 0);
    // A second rollback goes forward again.
    assert_eq!(
        command(&mut m, "rollback @@config").await,
        Ok("Rollback config success".to_string())
    );
    carol_conn
        .query_drop("INSERT INTO extra (id) VALUES (6)")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_datahost_added_by_a_reload_starts_where_dnindex_says_and_removed_ones_leave_it() {
    let (dbs, dir, port, mut m) = served("rl_dn").await;
    // h2: two writeHosts on the same server; dnindex.properties (as an operator or another
    // instance left it) makes writeHost 1 active.
    let h2 = format!(
        r#"<dataNode name="dn4" dataHost="h2" database="{}" />
    <dataHost name="h2" maxCon="5" minCon="1" balance="0" writeType="0" switchType="1" dbType="mysql" dbDriver="native">
        <heartbeat>select user()</heartbeat>
        <writeHost host="a" url="127.0.0.1:{closed}" user="{GATEWAY_USER}" password="{GATEWAY_PASSWORD}" />
        <writeHost host="b" url="127.0.0.1:{PRIMARY_PORT}" user="{GATEWAY_USER}" password="{GATEWAY_PASSWORD}" />
    </dataHost>"#,
        dbs[0],
        closed = closed_port(),
    );
    write(
        dir.path(),
        &dbs,
        &Version {
            tables: r#"<table name="extra" dataNode="dn4" />"#,
            more: &h2,
            ..Version::default()
        },
    );
    let path = dir.path().join("dnindex.properties");
    let before = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{before}h2=1\n")).unwrap();
    reload_all(&mut m).await;
    let nodes: Vec<Row> = m.query("show @@datanode").await.unwrap();
    let dn4 = nodes
        .iter()
        .find(|r| r.get::<String, _>(0).as_deref() == Some("dn4"))
        .expect("dn4 listed");
    let index_col = dn4
        .columns_ref()
        .iter()
        .position(|c| c.name_str() == "INDEX")
        .unwrap();
    assert_eq!(dn4.get::<i64, _>(index_col), Some(1));
    let mut c = client(port, "rl").await;
    c.query_drop("INSERT INTO extra (id) VALUES (9)")
        .await
        .unwrap();
    let on: Vec<i64> = extra_ids(&dbs[0]).await;
    assert_eq!(on, [9]);

    // Removing h2 again: dnindex.properties no longer lists it; h1 kept its entry.
    write(dir.path(), &dbs, &Version::default());
    reload_all(&mut m).await;
    assert_lists_only_h1(dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_and_a_bad_config_leaves_the_process_serving() {
    let dbs = databases("rl_hup").await;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &dbs, &Version::default());
    let log = dir.path().join("manx.log");
    let (mut g, mut c) =
        GatewayProcess::start_logging(dir.path(), "rl", "rl", "RL", Some(&log)).await;
    let hup = |pid: u32| {
        let ok = std::process::Command::new("kill")
            .args(["-HUP", &pid.to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    };

    // A broken schema.xml: the process logs the errors and goes on serving the old config.
    std::fs::write(dir.path().join("schema.xml"), "<mycat:schema").unwrap();
    hup(g.pid());
    let started = Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap()
        .contains("SIGHUP: Reload config failure")
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no SIGHUP outcome logged"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(g.alive());
    c.query_drop("INSERT INTO orders (id, v) VALUES (1, 1)")
        .await
        .unwrap();

    write(
        dir.path(),
        &dbs,
        &Version {
            tables: r#"<table name="extra" dataNode="dn1,dn2,dn3" type="global" />"#,
            ..Version::default()
        },
    );
    hup(g.pid());
    let started = Instant::now();
    loop {
        match c.query_drop("INSERT INTO extra (id) VALUES (2)").await {
            Ok(()) => break,
            Err(_) if started.elapsed() < Duration::from_secs(10) => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => panic!("the table of the reloaded config: {e}"),
        }
    }
    let on: Vec<i64> = extra_ids(&dbs[2]).await;
    assert_eq!(on, [2]);
    assert!(g.alive());
}

/// `information_schema.schemata` as `c` sees it.
async fn schemata(c: &mut Conn) -> Vec<String> {
    c.query("SELECT schema_name FROM information_schema.schemata")
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoke_reaches_cached_plans_and_metadata_inside_an_open_transaction() {
    let dbs = databases("rl_revoke").await;
    let dir = tempfile::tempdir().unwrap();
    let rl2 = r#"<schema name="RL2" dataNode="dn3"></schema>"#;
    let open = r#"<user name="app"><property name="password">app</property><property name="schemas">RL,RL2</property></user>"#;
    let revoked = r#"<user name="app"><property name="password">app</property><property name="schemas">RL</property>
        <privileges check="true"><schema name="RL" dml="1111"><table name="orders" dml="0000" /></schema></privileges></user>"#;
    let version = |users| Version {
        more: rl2,
        users,
        ..Version::default()
    };
    write(dir.path(), &dbs, &version(open));
    let (port, mport) = start_gateway_with_manager(dir.path()).await;
    let mut m = manager(mport).await;
    primary(None)
        .await
        .query_drop(format!("INSERT INTO {}.orders VALUES (3, 30)", dbs[0]))
        .await
        .unwrap();
    let mut app = client(port, "app").await;
    app.query_drop("BEGIN").await.unwrap();
    // The shape is planned (and cached) while orders is readable.
    let v: Option<i64> = app
        .query_first("SELECT v FROM orders WHERE id = 0")
        .await
        .unwrap();
    assert_eq!(v, None);
    assert!(schemata(&mut app).await.contains(&"RL2".to_string()));

    write(dir.path(), &dbs, &version(revoked));
    assert_eq!(
        command(&mut m, "reload @@user").await,
        Ok("Reload userConfig success".to_string())
    );
    // Same shape, same open transaction: refused, the row is not read.
    let e = app
        .query_first::<i64, _>("SELECT v FROM orders WHERE id = 3")
        .await
        .unwrap_err();
    let (code, _, message) = server_error(e);
    assert!(message.contains("orders"), "{code} {message}");
    // The removed schema is gone from the metadata at once.
    assert!(!schemata(&mut app).await.contains(&"RL2".to_string()));
    let databases: Vec<String> = app.query("SHOW DATABASES").await.unwrap();
    assert!(!databases.contains(&"RL2".to_string()), "{databases:?}");
    app.query_drop("COMMIT").await.unwrap();
}

/// A TCP proxy to the sandbox primary on a free port: each client is connected through after
/// `delay`, or (None) held without an answer.
async fn slow_proxy(delay: Option<Duration>) -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut client, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let Some(delay) = delay else {
                    // Held: nothing is ever answered.
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    drop(client);
                    return;
                };
                tokio::time::sleep(delay).await;
                if let Ok(mut server) =
                    tokio::net::TcpStream::connect(("127.0.0.1", PRIMARY_PORT)).await
                {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    port
}

/// A dataHost `name` with writeHosts at `ports` (the gateway account), for [`Version::more`].
fn data_host(name: &str, max_con: u32, ports: &[u16]) -> String {
    let writes: String = ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            format!(
                r#"<writeHost host="{name}w{i}" url="127.0.0.1:{p}" user="{GATEWAY_USER}" password="{GATEWAY_PASSWORD}" />"#
            )
        })
        .collect();
    format!(
        r#"<dataHost name="{name}" maxCon="{max_con}" minCon="1" balance="0" writeType="0" switchType="1" dbType="mysql" dbDriver="native"><heartbeat>select user()</heartbeat>{writes}</dataHost>"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switch_during_a_reload_is_not_lost() {
    let dbs = databases("rl_race").await;
    let dir = tempfile::tempdir().unwrap();
    let sw = |max_con| {
        format!(
            r#"<dataNode name="dnsw" dataHost="sw" database="{}" />{}"#,
            dbs[0],
            data_host("sw", max_con, &[PRIMARY_PORT, PRIMARY_PORT])
        )
    };
    write(
        dir.path(),
        &dbs,
        &Version {
            more: &sw(5),
            ..Version::default()
        },
    );
    let (_, mport) = start_gateway_with_manager(dir.path()).await;
    // The reload rebuilds sw (maxCon) and tests a new dataHost that answers only after 1.5 s.
    let slow = slow_proxy(Some(Duration::from_millis(1500))).await;
    let both = format!(
        r#"{}<dataNode name="dnslow" dataHost="slow" database="{}" />{}"#,
        sw(6),
        dbs[1],
        data_host("slow", 5, &[slow])
    );
    write(
        dir.path(),
        &dbs,
        &Version {
            more: &both,
            ..Version::default()
        },
    );
    let mut m = manager(mport).await;
    let reload = tokio::spawn(async move {
        let done = command(&mut m, "reload @@config_all").await;
        (m, done)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut m2 = manager(mport).await;
    m2.query_drop("switch @@datasource sw:1").await.unwrap();
    assert_eq!(m2.affected_rows(), 1);
    let (_, done) = reload.await.unwrap();
    assert_eq!(done, Ok("Reload config success".to_string()));
    let nodes: Vec<Row> = m2.query("show @@datanode").await.unwrap();
    let dnsw = nodes
        .iter()
        .find(|r| r.get::<String, _>(0).as_deref() == Some("dnsw"))
        .unwrap();
    assert_eq!(dnsw.get::<i64, _>(2), Some(1), "INDEX: the switch held");
    let dnindex = std::fs::read_to_string(dir.path().join("dnindex.properties")).unwrap();
    assert!(dnindex.contains("sw=1"), "{dnindex}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_hanging_on_a_replaced_datahost_does_not_hold_off_the_next_reload() {
    let dbs = databases("rl_hb").await;
    let dir = tempfile::tempdir().unwrap();
    let frozen = slow_proxy(None).await;
    let hz = |port: u16, max_con| {
        format!(
            r#"<dataNode name="dnhz" dataHost="hz" database="{}" />{}"#,
            dbs[0],
            data_host("hz", max_con, &[port])
        )
    };
    let users = r#"<system><property name="dataNodeHeartbeatPeriod">100</property></system>"#;
    write(
        dir.path(),
        &dbs,
        &Version {
            more: &hz(frozen, 5),
            users,
            ..Version::default()
        },
    );
    let (_, mport) = start_gateway_with_manager(dir.path()).await;
    // The heartbeat of hz is stuck in its connect.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut m = manager(mport).await;
    for max_con in [6, 7] {
        write(
            dir.path(),
            &dbs,
            &Version {
                more: &hz(PRIMARY_PORT, max_con),
                users,
                ..Version::default()
            },
        );
        assert_eq!(
            command(&mut m, "reload @@config_all").await,
            Ok("Reload config success".to_string()),
            "maxCon {max_con}: nothing but a heartbeat held the replaced dataHost"
        );
    }
}

/// A writeHost that does not answer after a reload (a typo in its url) refuses the reload:
/// the writes are not moved to the next writeHost (found by a new user: they went to the
/// replica, and fixing the typo did not bring them back).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_whose_active_writehost_does_not_answer_is_refused_and_moves_no_writes() {
    let dbs = databases("rl_typo").await;
    let dir = tempfile::tempdir().unwrap();
    let wr = |first: u16| {
        format!(
            r#"<dataNode name="dnw" dataHost="wr" database="{}" />{}"#,
            dbs[0],
            data_host("wr", 5, &[first, PRIMARY_PORT])
        )
    };
    let v = |more| Version {
        tables: r#"<table name="extra" dataNode="dnw" />"#,
        more,
        ..Version::default()
    };
    let good = wr(PRIMARY_PORT);
    write(dir.path(), &dbs, &v(&good));
    let (port, mport) = start_gateway_with_manager(dir.path()).await;
    let mut m = manager(mport).await;
    let typo = wr(closed_port());
    write(dir.path(), &dbs, &v(&typo));
    let (code, message) = command(&mut m, "reload @@config_all").await.unwrap_err();
    assert_eq!(code, 1003);
    assert!(
        message.contains("dataHost wr: its active writeHost 0")
            && message.contains("switch @@datasource"),
        "{message}"
    );
    let dnindex = std::fs::read_to_string(dir.path().join("dnindex.properties")).unwrap();
    assert!(dnindex.contains("wr=0"), "{dnindex}");
    client(port, "rl")
        .await
        .query_drop("INSERT INTO extra (id) VALUES (4)")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_holding_a_replaced_datahost_past_sqlexecutetimeout_is_ended() {
    let dbs = databases("rl_reap").await;
    let dir = tempfile::tempdir().unwrap();
    let users = r#"<system><property name="sqlExecuteTimeout">2</property></system>"#;
    let version = |max_con| Version {
        max_con,
        users,
        ..Version::default()
    };
    write(dir.path(), &dbs, &version(10));
    let (port, mport) = start_gateway_with_manager(dir.path()).await;
    let mut m = manager(mport).await;
    // A bare BEGIN holds nothing.
    let mut idle = client(port, "rl").await;
    idle.query_drop("BEGIN").await.unwrap();
    let mut tx = client(port, "rl").await;
    run_all(
        &mut tx,
        &["BEGIN", "INSERT INTO orders (id, v) VALUES (3, 1)"],
    )
    .await;
    write(dir.path(), &dbs, &version(11));
    assert_eq!(reload_all(&mut m).await, 0);
    write(dir.path(), &dbs, &version(12));
    assert_eq!(
        command(&mut m, "reload @@config_all").await,
        Err((1003, MYCAT_DRAINING.to_string()))
    );
    // sqlExecuteTimeout (2 s) after the reload the session holding h1's old pool is ended
    // and its transaction rolled back; the reload goes through.
    let refused = reload_all(&mut m).await;
    assert!(refused > 0);
    assert!(
        tx.query_drop("COMMIT").await.is_err(),
        "the session was ended"
    );
    assert_eq!(ids_on_backends(&dbs).await, Vec::<i64>::new());
    run_all(
        &mut idle,
        &["INSERT INTO orders (id, v) VALUES (4, 1)", "COMMIT"],
    )
    .await;
    assert_eq!(ids_on_backends(&dbs).await, [4]);
}
