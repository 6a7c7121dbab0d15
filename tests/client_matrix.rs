//! The client matrix (issue 7, item 7): real client libraries of other languages against a gateway
//! with sharded tables, each with its default settings. The clients are installed by
//! `scripts/clients.sh` (Debian packages, a Python venv under `target/clients-venv`, npm packages
//! under `target/clients-node`, a Java class under `target/clients-java`), run once per test
//! binary.
//!
//! Each client runs a helper program from `tests/clients/` that performs the same steps on
//! `TESTDB.travelrecord` (sharded by id range: dn1 below 5,000,000, dn2 below 10,000,000, dn3
//! above) and prints one `step=value` line per step — the observed value, or `step=ERROR ...` —
//! so that the test compares a whole transcript and reports every differing step at once. The
//! rows are then checked on the physical databases.

mod common;

use std::path::PathBuf;

use common::clients::{clients, run};
use common::{Extra, Fixture, GatewayProcess};
use mysql_async::prelude::Queryable;

/// The utf8mb4 text of the `unicode` step (4-byte emoji, CJK, Hangul, Latin-1).
const UNICODE: &str = "emoji 🐬🎉 CJK 中文字符 日本語 한국어 ñ";

/// A fixture's databases and configuration, served by the `manx` binary as its own process: a
/// gateway that crashes fails only its own test, and its log says why.
struct World {
    f: Fixture,
    gateway: GatewayProcess,
    log: PathBuf,
}

impl World {
    async fn start(prefix: &str, extra: Extra, user: &str, password: &str, db: &str) -> World {
        let f = Fixture::start(prefix, extra).await;
        let log = f.dir.path().join("manx.log");
        let (gateway, conn) =
            GatewayProcess::start_logging(f.dir.path(), user, password, db, Some(&log)).await;
        drop(conn);
        World { f, gateway, log }
    }

    fn port(&self) -> u16 {
        self.gateway.port
    }

    /// The gateway's warnings, errors and panics (the last 20), and whether it is still running.
    fn log_tail(&mut self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.contains("WARN")
                    || l.contains("ERROR")
                    || l.contains("panicked")
                    || l.contains("precondition")
            })
            .collect();
        format!(
            "--- gateway log (warnings, errors, panics; process {}) ---\n{}",
            if self.gateway.alive() {
                "still running"
            } else {
                "DEAD"
            },
            lines[lines.len().saturating_sub(20)..].join("\n")
        )
    }
}

fn helper(name: &str) -> PathBuf {
    common::repo().join("tests/clients").join(name)
}

/// The transcript every client must print (the DB-API spelling of the duplicate-key step; the
/// helpers name the exception class their library raises).
fn expected(duplicate: &str) -> Vec<(String, String)> {
    [
        ("connect", "ok".to_string()),
        ("insert", "4".to_string()),
        (
            "by_key",
            "5000001|bob 中文|20.25|2;10000001|carol 🐬|30.00|3".to_string(),
        ),
        (
            "order_limit",
            "10000002|dave;10000001|carol 🐬;5000001|bob 中文".to_string(),
        ),
        ("aggregate", "4|100.75|10".to_string()),
        ("tx_commit", "6".to_string()),
        // inside the transaction: 8 rows and the update seen; after ROLLBACK: neither
        ("tx_rollback", "8|changed|6|alice".to_string()),
        // the text, equal to what was sent, 27 characters in 54 bytes on the node
        ("unicode", format!("{UNICODE}|same|27|54")),
        ("duplicate", duplicate.to_string()),
        ("after_error", "carol 🐬".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Compares a client's transcript with the expected steps (in order, then `done`), panicking
/// with every difference and the client's stderr.
fn check_transcript(
    w: &mut World,
    client: &str,
    result: (bool, String, String),
    expected: &[(String, String)],
) {
    let (ok, out, err) = result;
    let got: Vec<(String, String)> = out
        .lines()
        .map(|l| match l.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect();
    let mut want: Vec<(String, String)> = expected.to_vec();
    want.push(("done".to_string(), String::new()));
    let mut problems = Vec::new();
    if !ok {
        problems.push("the client program exited with a failure status".to_string());
    }
    for (i, (k, v)) in want.iter().enumerate() {
        match got.get(i) {
            Some((gk, gv)) if gk == k && gv == v => {}
            Some((gk, gv)) => {
                problems.push(format!("step {k}: expected `{v}`\n      got {gk}=`{gv}`"))
            }
            None => problems.push(format!("step {k}: missing (expected `{v}`)")),
        }
    }
    if got.len() > want.len() {
        problems.push(format!("unexpected extra output: {:?}", &got[want.len()..]));
    }
    let tail: String = {
        let lines: Vec<&str> = err.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    };
    assert!(
        problems.is_empty(),
        "{client}: {} step(s) differ:\n  {}\n--- stdout ---\n{out}--- stderr (tail) ---\n{tail}\n{}",
        problems.len(),
        problems.join("\n  "),
        w.log_tail()
    );
}

/// The rows each physical database holds after the standard steps: every node got its rows.
async fn check_nodes(f: &Fixture, dn1: &[i64], dn2: &[i64], dn3: &[i64]) {
    assert_eq!(f.ids_on(1, "travelrecord").await, dn1, "rows on dn1");
    assert_eq!(f.ids_on(2, "travelrecord").await, dn2, "rows on dn2");
    assert_eq!(f.ids_on(3, "travelrecord").await, dn3, "rows on dn3");
    // the utf8mb4 text arrived intact on its node (5000007 is on dn2)
    let mut c = f.backend(2).await;
    let text: Option<String> = c
        .query_first("SELECT user_id FROM travelrecord WHERE id = 5000007")
        .await
        .unwrap();
    assert_eq!(text.as_deref(), Some(UNICODE), "the unicode row on dn2");
}

const DN1: &[i64] = &[1, 2];
const DN2: &[i64] = &[5_000_001, 5_000_002, 5_000_007];
const DN3: &[i64] = &[10_000_001, 10_000_002];

async fn python_dbapi(
    prefix: &str,
    driver: &str,
    extra_args: &[&str],
    extra_steps: &[(&str, &str)],
) {
    let c = clients();
    let mut w = World::start(prefix, Extra::default(), "root", "123456", "TESTDB").await;
    let mut args = vec![
        helper("dbapi_check.py").display().to_string(),
        driver.to_string(),
        w.port().to_string(),
    ];
    args.extend(extra_args.iter().map(|s| s.to_string()));
    let result = run(&c.python, args, vec![]).await;
    let mut want = expected("IntegrityError 1062");
    want.extend(
        extra_steps
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    check_transcript(&mut w, &format!("{driver} {extra_args:?}"), result, &want);
    check_nodes(&w.f, DN1, DN2, DN3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pymysql() {
    python_dbapi("cm_pymysql", "pymysql", &[], &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysqlclient() {
    python_dbapi("cm_mysqlclient", "mysqlclient", &[], &[]).await;
}

/// mysql-connector-python with its defaults (the C extension, which answers with the plugin the
/// server's handshake names), plus a cursor with server-side prepared statements.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_connector_python() {
    python_dbapi(
        "cm_connector",
        "connector",
        &[],
        &[(
            "prepared",
            "1|alice|10.50;5000007|emoji 🐬🎉 CJK 中文字符 日本語 한국어 ñ|NULL;10000002|dave|40.00",
        )],
    )
    .await;
}

/// mysql-connector-python asking for caching_sha2_password, as MySQL 8+ clients do by default
/// (the pure-Python implementation, `use_pure=True`): the server must switch it to
/// mysql_native_password (AuthSwitchRequest) and log it in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_connector_python_asking_for_caching_sha2_password() {
    python_dbapi(
        "cm_connector_sha2",
        "connector",
        &["auth_plugin=caching_sha2_password", "use_pure=True"],
        &[(
            "prepared",
            "1|alice|10.50;5000007|emoji 🐬🎉 CJK 中文字符 日本語 한국어 ñ|NULL;10000002|dave|40.00",
        )],
    )
    .await;
}

/// SQLAlchemy 2 ORM over PyMySQL: a declarative model, Session add/commit/rollback, queries on
/// the shard key, get(), update and delete, reflection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlalchemy_orm() {
    let c = clients();
    let mut w = World::start(
        "cm_sqlalchemy",
        Extra::default(),
        "root",
        "123456",
        "TESTDB",
    )
    .await;
    let result = run(
        &c.python,
        vec![
            helper("sqlalchemy_check.py").display().to_string(),
            w.port().to_string(),
        ],
        vec![],
    )
    .await;
    let mut want = expected("IntegrityError 1062");
    for (k, v) in want.iter_mut() {
        match k.as_str() {
            "by_key" => v.push_str(";get:10000002|dave|40.00|4"),
            "unicode" => *v = format!("{UNICODE}|same"),
            _ => {}
        }
    }
    want.push(("update_delete".into(), "44|None|6".into()));
    want.push((
        "reflect".into(),
        "id,user_id,traveldate,fee,days|pk=id|tables=company,employee,goods,hotnews,travelrecord"
            .into(),
    ));
    check_transcript(&mut w, "SQLAlchemy ORM", result, &want);
    check_nodes(&w.f, &[1], DN2, DN3).await;
}

async fn connector_j(prefix: &str, url_options: &str) {
    let c = clients();
    let mut w = World::start(prefix, Extra::default(), "root", "123456", "TESTDB").await;
    let mut args = vec![
        "-cp".to_string(),
        c.java_cp.clone(),
        "ConnJ".to_string(),
        w.port().to_string(),
    ];
    if !url_options.is_empty() {
        args.push(url_options.to_string());
    }
    let result = run("java", args, vec![]).await;
    let mut want = expected("IntegrityError 1062");
    want.push((
        "typed".into(),
        "1|10.50|1|alice;10000002|40.00|4|dave".into(),
    ));
    want.push((
        "reuse".into(),
        "10000002|dave;1|alice;5000001|bob 中文|batch=3|1|100;5000001|101;10000001|102".into(),
    ));
    check_transcript(&mut w, &format!("Connector/J {url_options}"), result, &want);
    check_nodes(&w.f, DN1, DN2, DN3).await;
}

/// MariaDB Connector/J (Debian's libmariadb-java) with its defaults: client-side prepared
/// statements, text protocol.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_connector_j() {
    connector_j("cm_connj", "").await;
}

/// MariaDB Connector/J with server-side prepared statements: COM_STMT_PREPARE/EXECUTE, binary
/// rows, statements executed again and in batches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_connector_j_server_prepared() {
    connector_j("cm_connj_ps", "useServerPrepStmts=true").await;
}

async fn node_mysql2(prefix: &str, mode: &str) {
    let c = clients();
    let mut w = World::start(prefix, Extra::default(), "root", "123456", "TESTDB").await;
    let result = run(
        "node",
        vec![
            helper("node/check.js").display().to_string(),
            w.port().to_string(),
            mode.to_string(),
        ],
        vec![(
            "NODE_PATH".to_string(),
            format!("{}/node_modules", c.node_dir),
        )],
    )
    .await;
    check_transcript(
        &mut w,
        &format!("node mysql2 {mode}"),
        result,
        &expected("ER_DUP_ENTRY 1062"),
    );
    check_nodes(&w.f, DN1, DN2, DN3).await;
}

/// Node mysql2 `query()`: text protocol, parameters interpolated by the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_mysql2_query() {
    node_mysql2("cm_node_q", "query").await;
}

/// Node mysql2 `execute()`: server-side prepared statements, binary rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_mysql2_execute() {
    node_mysql2("cm_node_x", "execute").await;
}

/// The SBTEST schema for sysbench: sbtest1..2 sharded by id mod 3 over dn1..dn3.
fn sysbench_extra() -> Extra {
    Extra {
        schema_xml: r#"
	<schema name="SBTEST" checkSQLschema="false">
		<table name="sbtest1" dataNode="dn1,dn2,dn3" rule="mod-long" />
		<table name="sbtest2" dataNode="dn1,dn2,dn3" rule="mod-long" />
	</schema>"#
            .to_string(),
        users_xml: r#"
	<user name="sb">
		<property name="password">sbpass</property>
		<property name="schemas">SBTEST</property>
	</user>"#
            .to_string(),
        files: vec![],
    }
}

/// sysbench 1.0 `oltp_read_write`: prepare (CREATE TABLE and index on every node, bulk INSERT of
/// 2 x 10,000 rows) and 10 s with 4 threads. 10,000 rows per table (sysbench's default) keep
/// deadlocks across two nodes unlikely: no single InnoDB sees such a cycle, so it lasts until
/// the 50 s lock wait timeout (seen with 1,000 rows: 2 in 150 transactions). `--auto_inc=off`: sysbench's default lets the database number the
/// rows, and a row without its sharding column cannot be routed (Mycat needs a sequence for
/// that, which this config does not define).
async fn sysbench(prefix: &str, ps_mode: Option<&str>) {
    let c = clients();
    let mut w = World::start(prefix, sysbench_extra(), "sb", "sbpass", "SBTEST").await;
    let mut common_args = vec![
        "oltp_read_write".to_string(),
        "--db-driver=mysql".to_string(),
        "--mysql-host=127.0.0.1".to_string(),
        format!("--mysql-port={}", w.port()),
        "--mysql-user=sb".to_string(),
        "--mysql-password=sbpass".to_string(),
        "--mysql-db=SBTEST".to_string(),
        "--tables=2".to_string(),
        "--table-size=10000".to_string(),
        "--auto_inc=off".to_string(),
        "--db-ps-mode=".to_string() + ps_mode.unwrap_or("auto"),
    ];
    let mut prepare = common_args.clone();
    prepare.push("prepare".into());
    let (ok, out, err) = run(&c.sysbench, prepare, vec![]).await;
    assert!(
        ok,
        "sysbench prepare failed:\n{out}\n{err}\n{}",
        w.log_tail()
    );
    // the rows are spread over the three nodes by id mod 3
    for n in 1..=3 {
        let mut b = w.f.backend(n).await;
        for t in ["sbtest1", "sbtest2"] {
            let (rows, wrong): (i64, i64) = b
                .query_first(format!(
                    "SELECT COUNT(*), COALESCE(SUM(id % 3 <> {}), 0) FROM {t}",
                    n - 1
                ))
                .await
                .unwrap()
                .unwrap();
            assert!(
                (3330..=3340).contains(&rows) && wrong == 0,
                "{t} on dn{n}: {rows} rows, {wrong} on the wrong node"
            );
        }
    }
    common_args.extend([
        "--threads=4".to_string(),
        "--time=10".to_string(),
        "--report-interval=0".to_string(),
        "run".to_string(),
    ]);
    let (ok, out, err) = run(&c.sysbench, common_args, vec![]).await;
    // sysbench 1.0 stops a thread with FATAL on any error but the ones it retries (deadlock
    // 1213, lock wait timeout 1205, 1020), which it counts as `ignored errors`: those happen on
    // a single MariaDB too, so they are reported, not failed on.
    let ignored = out
        .lines()
        .find(|l| l.trim_start().starts_with("ignored errors:"))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|n| n.parse::<u64>().ok());
    let fatal: Vec<&str> = out
        .lines()
        .chain(err.lines())
        .filter(|l| l.contains("FATAL"))
        .take(10)
        .collect();
    assert!(
        ok && fatal.is_empty() && ignored.is_some(),
        "sysbench run (db-ps-mode {}) failed:\n{}\n--- stdout ---\n{out}\n--- stderr ---\n{err}\n{}",
        ps_mode.unwrap_or("auto"),
        fatal.join("\n"),
        w.log_tail()
    );
    let transactions = out
        .lines()
        .find(|l| l.trim_start().starts_with("transactions:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    assert!(transactions > 0, "no transaction completed:\n{out}");
    println!(
        "sysbench oltp_read_write (db-ps-mode {}): {transactions} transactions in 10 s, {} \
         ignored (retried) errors",
        ps_mode.unwrap_or("auto"),
        ignored.unwrap_or(0)
    );
    // every row still on the node its id belongs to, and none lost or added (each transaction
    // deletes one row per table and inserts it again, with an id of 1..=10000)
    let mut total = [0i64; 2];
    for n in 1..=3 {
        let mut b = w.f.backend(n).await;
        for (i, t) in ["sbtest1", "sbtest2"].into_iter().enumerate() {
            let (rows, wrong, outside): (i64, i64, i64) = b
                .query_first(format!(
                    "SELECT COUNT(*), COALESCE(SUM(id % 3 <> {}), 0), \
                     COALESCE(SUM(id NOT BETWEEN 1 AND 10000), 0) FROM {t}",
                    n - 1
                ))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                (wrong, outside),
                (0, 0),
                "{t} on dn{n}: rows on the wrong node, rows with ids sysbench never uses"
            );
            total[i] += rows;
        }
    }
    assert_eq!(
        total,
        [10_000, 10_000],
        "rows of sbtest1, sbtest2 after the run"
    );
}

/// sysbench with its default `--db-ps-mode=auto`: server-side prepared statements, executed
/// again and again on the same statement ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sysbench_oltp_read_write_prepared() {
    sysbench("cm_sb_ps", None).await;
}

/// sysbench with `--db-ps-mode=disable`: every statement as text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sysbench_oltp_read_write_text() {
    sysbench("cm_sb_text", Some("disable")).await;
}

/// Pipelining (PyMySQL's connection, driven by hand): three COM_QUERY packets in one TCP send,
/// then the three answers read. MariaDB Connector/J does this on every connect (its `set
/// autocommit=1, sql_mode=...` and `SELECT @@max_allowed_packet,...` go out together); each
/// query must get its own result set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_queries_are_each_answered() {
    let c = clients();
    let mut w = World::start("cm_pipeline", Extra::default(), "root", "123456", "TESTDB").await;
    let result = run(
        &c.python,
        vec![
            helper("pipelining_check.py").display().to_string(),
            w.port().to_string(),
            "20".to_string(),
        ],
        vec![],
    )
    .await;
    check_transcript(
        &mut w,
        "pipelined COM_QUERY",
        result,
        &[("pipelined".to_string(), "20/20".to_string())],
    );
}

/// A JDBC application (MariaDB Connector/J, `tests/clients/JdbcTypes.java`) against a
/// PostgreSQL-backed schema answers exactly as against a MySQL-backed one: the official
/// drivers' start-up probes, every common type through prepared statements (bytes 0-255,
/// TINYINT(1) as Boolean, YEAR, BIT, unsigned integers, fractional seconds), batches over the
/// shards, transactions, generated keys and `DatabaseMetaData` — for a user who also has a
/// MySQL schema (information_schema answered by MariaDB, the PostgreSQL rows carried in) and
/// for one who has only the PostgreSQL schema (answered from PostgreSQL's catalog).
async fn jdbc_on_postgresql(prefix: &str, url_options: &str) {
    let c = clients();
    let dbs = common::postgres::pg_databases(prefix, 3).await;
    let schema_xml = format!(
        r#"<schema name="MYJ" dataNode="dn1"><table name="jorders" primaryKey="id" dataNode="dn1,dn2,dn3" rule="mod-long" /></schema>
<schema name="PGJ" dataNode="pgdn1"><table name="jorders" primaryKey="id" dataNode="pgdn1,pgdn2,pgdn3" rule="mod-long" /></schema>
{}"#,
        common::postgres::pg_nodes_xml(&dbs)
    );
    let users_xml = r#"<user name="both"><property name="password">both</property><property name="schemas">MYJ,PGJ</property></user>
<user name="pgonly"><property name="password">pgonly</property><property name="schemas">PGJ</property></user>"#
        .to_string();
    let mut w = World::start(
        prefix,
        Extra {
            schema_xml,
            users_xml,
            ..Extra::default()
        },
        "both",
        "both",
        "MYJ",
    )
    .await;
    let port = w.port();
    let transcript = |user: &str, schema: &str| {
        let mut args = vec![
            "-cp".to_string(),
            c.java_cp.clone(),
            "JdbcTypes".to_string(),
            port.to_string(),
            user.to_string(),
            user.to_string(),
            schema.to_string(),
        ];
        if !url_options.is_empty() {
            args.push(url_options.to_string());
        }
        run("java", args, vec![])
    };
    let (ok, mysql, err) = transcript("both", "MYJ").await;
    assert!(
        ok,
        "JdbcTypes on MYJ failed:\n{mysql}\n{err}\n{}",
        w.log_tail()
    );
    // The reference run itself went through: no step failed on MariaDB.
    assert!(
        !mysql.contains("=ERROR"),
        "a step failed on the MySQL-backed schema:\n{mysql}\n{}",
        w.log_tail()
    );
    for line in [
        "probe_connector_j_5_1=22 columns",
        "probe_connector_j_8_0=21 columns",
        "bytes_round_trip=true",
        "meta_tables=jorders|TABLE;jt|TABLE",
    ] {
        assert!(mysql.lines().any(|l| l == line), "{line} missing:\n{mysql}");
    }
    // ENUM / SET: a non-member is MySQL's 1265 on both (and the differential compares the rest).
    assert!(
        mysql
            .lines()
            .any(|l| l.starts_with("enum_set=")
                && l.contains("/refused 1265 01000/refused 1265 01000/")),
        "{mysql}"
    );
    let expected: Vec<(String, String)> = mysql
        .lines()
        .map(|l| match l.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (l.to_string(), String::new()),
        })
        .filter(|(k, _)| k != "done")
        .collect();
    for user in ["both", "pgonly"] {
        let result = transcript(user, "PGJ").await;
        check_transcript(
            &mut w,
            &format!("Connector/J {url_options} on PostgreSQL as {user}"),
            result,
            &expected,
        );
    }
    // The sharded rows are where mod-long puts them, on PostgreSQL as on MariaDB.
    for (i, db) in dbs.iter().enumerate() {
        let pg = common::postgres::pg(db).await;
        let ids: Vec<i64> = pg
            .query("SELECT id FROM jorders ORDER BY id", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let want: Vec<i64> = (1..=9).filter(|id| id % 3 == i as i64).collect();
        assert_eq!(ids, want, "jorders on {db}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jdbc_on_postgresql_answers_as_on_mysql() {
    jdbc_on_postgresql("cm_jdbc_pg", "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jdbc_on_postgresql_answers_as_on_mysql_server_prepared() {
    jdbc_on_postgresql("cm_jdbc_pg_ps", "useServerPrepStmts=true").await;
}

/// An SQLAlchemy ORM program (`tests/clients/sqlalchemy_orm.py`: create_all, a relationship
/// between a global and a sharded table, lazy and eager loading, joins, aggregates, booleans,
/// a rolled-back unit of work, bytes, reflection, drop_all) answers the same on a
/// PostgreSQL-backed schema as on a MySQL-backed one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlalchemy_on_postgresql_answers_as_on_mysql() {
    let c = clients();
    let dbs = common::postgres::pg_databases("cm_sa_pg", 3).await;
    let tables = |nodes: &str| {
        format!(
            r#"<table name="sa_customers" primaryKey="id" type="global" dataNode="{nodes}" /><table name="sa_orders" primaryKey="id" dataNode="{nodes}" rule="mod-long" />"#
        )
    };
    let schema_xml = format!(
        r#"<schema name="MYSA" dataNode="dn1">{}</schema>
<schema name="PGSA" dataNode="pgdn1">{}</schema>
{}"#,
        tables("dn1,dn2,dn3"),
        tables("pgdn1,pgdn2,pgdn3"),
        common::postgres::pg_nodes_xml(&dbs)
    );
    let users_xml = r#"<user name="sa"><property name="password">sa</property><property name="schemas">MYSA,PGSA</property></user>"#.to_string();
    let mut w = World::start(
        "cm_sa_pg",
        Extra {
            schema_xml,
            users_xml,
            ..Extra::default()
        },
        "sa",
        "sa",
        "MYSA",
    )
    .await;
    let run_on = |schema: &str| {
        run(
            &c.python,
            vec![
                helper("sqlalchemy_orm.py").display().to_string(),
                w.port().to_string(),
                "sa".into(),
                "sa".into(),
                schema.into(),
            ],
            vec![],
        )
    };
    let (ok, mysql, err) = run_on("MYSA").await;
    assert!(
        ok && !mysql.contains("=ERROR"),
        "on MariaDB:\n{mysql}\n{err}"
    );
    assert!(mysql.contains("eager_load=Ann:1,2,3,4;Bob:5,6"), "{mysql}");
    let expected: Vec<(String, String)> = mysql
        .lines()
        .filter(|l| *l != "done")
        .map(|l| match l.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect();
    let result = run_on("PGSA").await;
    check_transcript(&mut w, "SQLAlchemy ORM on PostgreSQL", result, &expected);
}
