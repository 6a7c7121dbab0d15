//! Test harness: real MariaDB servers from `scripts/sandbox.sh`, a gateway started in-process on
//! a free port over a configuration written for the test, and real client connections.
#![allow(dead_code)]

pub mod clients;
pub mod mariadb;
pub mod mirror;
pub mod postgres;
pub mod proxy;
pub mod raw;
pub mod standby;
pub mod xml;
pub mod zookeeper;

use std::net::TcpListener as StdListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use manx::config::Config;
use manx::datahost::Timeouts;
use manx::frontend::Server;
use mysql_async::prelude::Queryable;

pub const PRIMARY_PORT: u16 = 13306;

/// The sandbox's least-privileged gateway account (`scripts/sandbox.sh`): what the bundled
/// schema.xml, and so every [`write_config`] fixture, connects to the backends with. Tests set
/// their databases up with the admin account `manx` ([`primary`]).
pub const GATEWAY_USER: &str = "manx_gw";
/// The password of [`GATEWAY_USER`].
pub const GATEWAY_PASSWORD: &str = "manx_gw";

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Copies the bundled rule.xml and the map files it names into a test's configuration
/// directory `dir`.
pub fn copy_rule_files(dir: &Path) {
    for f in xml::RULE_FILES {
        std::fs::copy(repo().join(f), dir.join(f)).unwrap();
    }
}

/// Starts the sandbox servers once per test process (the script itself is idempotent and
/// serialises concurrent callers).
pub fn ensure_sandbox() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(sandbox_start);
}

/// Runs `scripts/sandbox.sh start` (starts whatever sandbox server is not running; panics with
/// the script's output when it fails). [`ensure_sandbox`] runs it once per test process.
pub fn sandbox_start() {
    let mut c = Command::new("bash");
    c.arg(repo().join("scripts/sandbox.sh")).arg("start");
    checked(c, "scripts/sandbox.sh start");
}

/// Runs `command` to its end and returns its output; panics, with `what` and the command's
/// stdout and stderr, when it cannot start or exits unsuccessfully.
pub fn checked(mut command: Command, what: &str) -> std::process::Output {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let l = StdListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

pub fn opts(port: u16, user: &str, password: &str, db: Option<&str>) -> mysql_async::Opts {
    mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some(user))
        .pass(Some(password))
        .db_name(db)
        .prefer_socket(false)
        .into()
}

/// A direct connection to the sandbox primary.
pub async fn primary(db: Option<&str>) -> mysql_async::Conn {
    mysql_async::Conn::new(opts(PRIMARY_PORT, "manx", "manx", db))
        .await
        .expect("connect to the sandbox primary")
}

/// The sample tables of the bundled config, created on each physical database of a fixture.
pub const SAMPLE_TABLES: &str = include_str!("../../scripts/sandbox-sample.sql");

/// The CREATE TABLE statements of [`SAMPLE_TABLES`], comments removed.
pub fn sample_statements() -> Vec<String> {
    let text: String = SAMPLE_TABLES
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    text.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// Three physical databases `t_<prefix>_db1..3` on the sandbox primary (started when needed)
/// with the sample tables, dropping leftovers of an earlier run.
pub async fn sample_databases(prefix: &str) -> Vec<String> {
    ensure_sandbox();
    let databases: Vec<String> = (1..=3).map(|i| format!("t_{prefix}_db{i}")).collect();
    for db in &databases {
        sample_database(db).await;
    }
    databases
}

/// Database `db` on the sandbox primary made afresh (dropped first) with the sample tables;
/// returns a connection to it.
pub async fn sample_database(db: &str) -> mysql_async::Conn {
    let mut c = primary(None).await;
    c.query_drop(format!("DROP DATABASE IF EXISTS {db}"))
        .await
        .unwrap();
    c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
    c.query_drop(format!("USE {db}")).await.unwrap();
    for stmt in sample_statements() {
        c.query_drop(stmt).await.unwrap();
    }
    c
}

/// Database `db` on the sandbox primary made afresh (dropped first), empty, in utf8mb4 with
/// `utf8mb4_general_ci` (the collation a reference for the gateway's merges compares in).
pub async fn fresh_database(db: &str) {
    let mut admin = primary(None).await;
    admin
        .query_drop(format!("DROP DATABASE IF EXISTS {db}"))
        .await
        .unwrap();
    admin
        .query_drop(format!(
            "CREATE DATABASE {db} DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
        ))
        .await
        .unwrap();
}

/// `sql` on `c` fails with the server error `code` / `state`; returns its message.
pub async fn fails(c: &mut mysql_async::Conn, sql: &str, code: u16, state: &str) -> String {
    let e = c
        .query_drop(sql)
        .await
        .expect_err(&format!("{sql} should fail"));
    let (got, got_state, message) = server_error(e);
    assert_eq!((got, got_state.as_str()), (code, state), "{sql}: {message}");
    message
}

/// One test's world: three physical databases `<prefix>_db1..3` on the primary, a config
/// directory pointing TESTDB's dn1..dn3 at them, and a gateway serving it.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub databases: Vec<String>,
    pub port: u16,
}

/// Options for [`Fixture::start`].
#[derive(Default)]
pub struct Extra {
    /// More `<schema>`, `<dataNode>` and `<dataHost>` XML inserted into schema.xml.
    pub schema_xml: String,
    /// More `<user>` XML inserted into server.xml.
    pub users_xml: String,
    /// Other files to put in the config directory before the gateway starts (name, content).
    pub files: Vec<(String, String)>,
}

impl Extra {
    /// Only a `<system>` element with `properties` in server.xml ([`system_xml`]).
    pub fn system(properties: &[(&str, &str)]) -> Extra {
        Extra {
            users_xml: system_xml(properties),
            ..Extra::default()
        }
    }
}

impl Fixture {
    /// Creates the databases (dropping leftovers of an earlier run) with the sample tables and
    /// starts a gateway.
    pub async fn start(prefix: &str, extra: Extra) -> Fixture {
        let databases = sample_databases(prefix).await;
        let dir = tempfile::tempdir().unwrap();
        write_config(dir.path(), &databases, &extra);
        for (name, content) in &extra.files {
            std::fs::write(dir.path().join(name), content).unwrap();
        }
        let port = start_gateway(dir.path()).await;
        Fixture {
            dir,
            databases,
            port,
        }
    }

    pub async fn client(&self) -> mysql_async::Conn {
        mysql_async::Conn::new(opts(self.port, "root", "123456", Some("TESTDB")))
            .await
            .expect("connect to the gateway")
    }

    /// A direct connection to physical database `n` (1-based) of this fixture.
    pub async fn backend(&self, n: usize) -> mysql_async::Conn {
        primary(Some(&self.databases[n - 1])).await
    }

    /// The ids in `table` of physical database `n`, sorted.
    pub async fn ids_on(&self, n: usize, table: &str) -> Vec<i64> {
        let mut c = self.backend(n).await;
        c.query(format!("SELECT id FROM {table} ORDER BY id"))
            .await
            .unwrap()
    }
}

/// A `<system>` element with `properties` (name, value), for [`Extra::users_xml`]: server.xml
/// may hold several, all are read.
pub fn system_xml(properties: &[(&str, &str)]) -> String {
    let props: String = properties
        .iter()
        .map(|(n, v)| format!("<property name=\"{n}\">{v}</property>"))
        .collect();
    format!("<system>{props}</system>")
}

/// Writes server.xml, schema.xml, rule.xml and the map files of the bundled config, with the
/// dataNodes pointed at `databases` (which [`GATEWAY_USER`] may use when they match the
/// sandbox's `t\_%` grant, as `t_<prefix>_...` names do). Its dataHost `localhost1` connects as
/// [`GATEWAY_USER`], as the bundled config does; `extra`'s own dataHosts choose their account.
pub fn write_config(dir: &Path, databases: &[String], extra: &Extra) {
    let repo = repo();
    copy_rule_files(dir);
    let schema = std::fs::read_to_string(repo.join("schema.xml")).unwrap();
    let schema = schema
        .replace(
            r#"<dataNode name="dn$1-3" dataHost="localhost1" database="db$1-3" />"#,
            &format!(
                "<dataNode name=\"dn1\" dataHost=\"localhost1\" database=\"{}\" />\n\t<dataNode name=\"dn2\" dataHost=\"localhost1\" database=\"{}\" />\n\t<dataNode name=\"dn3\" dataHost=\"localhost1\" database=\"{}\" />\n{}",
                databases[0], databases[1], databases[2], extra.schema_xml
            ),
        );
    assert!(
        schema.contains(&databases[0])
            && schema.contains(&format!(
                r#"user="{GATEWAY_USER}" password="{GATEWAY_PASSWORD}""#
            )),
        "bundled schema.xml changed shape"
    );
    std::fs::write(dir.join("schema.xml"), schema).unwrap();
    let server = std::fs::read_to_string(repo.join("server.xml")).unwrap();
    let server = server.replace(
        "</mycat:server>",
        &format!("{}\n</mycat:server>", extra.users_xml),
    );
    std::fs::write(dir.join("server.xml"), server).unwrap();
}

/// Starts a gateway for the config in `dir` on a free port of 127.0.0.1 and returns the port.
pub async fn start_gateway(dir: &Path) -> u16 {
    start_gateway_with_manager(dir).await.0
}

/// [`start_gateway`], with the manager port also served on a free port: (server port,
/// manager port).
pub async fn start_gateway_with_manager(dir: &Path) -> (u16, u16) {
    let mut config =
        Config::load(dir).unwrap_or_else(|e| panic!("test config does not load:\n{e}"));
    own_xa_log(&mut config);
    let server =
        Arc::new(Server::new(config, Timeouts::default()).unwrap_or_else(|e| panic!("{e}")));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let manager = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let manager_port = manager.local_addr().unwrap().port();
    tokio::spawn(
        server
            .clone()
            .serve_manager(manager, std::future::pending()),
    );
    tokio::spawn(server.serve(listener, std::future::pending()));
    (port, manager_port)
}

/// Gives an in-process gateway an XA coordinator log of its own (`xalog-inproc-<n>` in its
/// config directory) unless its server.xml names one: the log's directory is locked by the
/// gateway that opens it, and tests start several gateways on one config directory (an
/// in-process one beside the `manx` binary, two in-process ones).
pub fn own_xa_log(config: &mut Config) {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    if !config.system.properties.contains_key("xaLogDir") {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        config.system.xa_log_dir = PathBuf::from(format!("xalog-inproc-{n}"));
    }
}

/// The server error of a failed client call: (errno, SQLSTATE, message).
pub fn server_error(e: mysql_async::Error) -> (u16, String, String) {
    match e {
        mysql_async::Error::Server(s) => (s.code, s.state, s.message),
        other => panic!("expected a server error, got {other:?}"),
    }
}

/// The `manx` binary serving a config directory, as its own process (killed on drop).
pub struct GatewayProcess {
    pub child: std::process::Child,
    pub port: u16,
    /// Its manager port.
    pub manager_port: u16,
}

impl GatewayProcess {
    /// Starts `manx --conf dir` on a free port and returns once a client logged in as
    /// `user`/`password` to `db` can connect (bounded wait), with that connection.
    pub async fn start(
        dir: &Path,
        user: &str,
        password: &str,
        db: &str,
    ) -> (GatewayProcess, mysql_async::Conn) {
        Self::start_logging(dir, user, password, db, None).await
    }

    /// [`GatewayProcess::start`], with the log (`MANX_LOG=info`) written to `log` when given.
    pub async fn start_logging(
        dir: &Path,
        user: &str,
        password: &str,
        db: &str,
        log: Option<&Path>,
    ) -> (GatewayProcess, mysql_async::Conn) {
        Self::start_at(dir, user, password, db, log, (closed_port(), closed_port())).await
    }

    /// [`GatewayProcess::start_logging`] on the given (server, manager) ports (a restart on the
    /// ports a load balancer knows); the log is appended to.
    pub async fn start_at(
        dir: &Path,
        user: &str,
        password: &str,
        db: &str,
        log: Option<&Path>,
        ports: (u16, u16),
    ) -> (GatewayProcess, mysql_async::Conn) {
        Self::start_env(dir, (user, password, db), log, ports, &[]).await
    }

    /// [`GatewayProcess::start_at`] with more environment variables for the process (the
    /// `MANX_XA_FAULT` crash hook of debug builds).
    pub async fn start_env(
        dir: &Path,
        (user, password, db): (&str, &str, &str),
        log: Option<&Path>,
        (port, manager_port): (u16, u16),
        env: &[(&str, &str)],
    ) -> (GatewayProcess, mysql_async::Conn) {
        let (level, stderr) = match log {
            Some(path) => (
                "info",
                std::process::Stdio::from(
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(path)
                        .unwrap(),
                ),
            ),
            None => ("error", std::process::Stdio::null()),
        };
        let child = Command::new(env!("CARGO_BIN_EXE_manx"))
            .args([
                "--conf",
                dir.to_str().unwrap(),
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--manager-port",
                &manager_port.to_string(),
            ])
            .env("MANX_LOG", level)
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("start the manx binary");
        let gateway = GatewayProcess {
            child,
            port,
            manager_port,
        };
        let started = std::time::Instant::now();
        loop {
            match mysql_async::Conn::new(opts(port, user, password, Some(db))).await {
                Ok(c) => return (gateway, c),
                Err(_) if started.elapsed() < std::time::Duration::from_secs(30) => {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await
                }
                Err(e) => panic!("the gateway did not start: {e}"),
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its resident memory now (`VmRSS`), in KiB.
    pub fn rss_kib(&self) -> u64 {
        status_kib(self.pid(), "VmRSS:")
    }

    /// The peak of its resident memory so far (`VmHWM`, the kernel's high-water mark), in KiB.
    pub fn peak_kib(&self) -> u64 {
        status_kib(self.pid(), "VmHWM:")
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().map(|s| s.is_none()).unwrap_or(false)
    }
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the `manx` binary with `args` (`MANX_LOG=error`) to its end: (exit code, stdout then
/// stderr as text).
pub fn manx_command(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_manx"))
        .args(args)
        .env("MANX_LOG", "error")
        .output()
        .expect("run the manx binary");
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Runs `sql` on `c`, which must fail with a server error: (errno, SQLSTATE, message).
/// Panics when it succeeds or fails otherwise (see [`server_error`]).
pub async fn refused(c: &mut mysql_async::Conn, sql: &str) -> (u16, String, String) {
    match c.query_drop(sql).await {
        Ok(()) => panic!("{sql}: accepted, expected a server error"),
        Err(e) => server_error(e),
    }
}

/// Runs the statements `sqls` on `c` in order, each of which must succeed (panics naming the
/// one that fails, with the error).
pub async fn run_all(c: &mut mysql_async::Conn, sqls: &[&str]) {
    for sql in sqls {
        c.query_drop(*sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

/// A field of `/proc/PID/status` in KiB (`VmRSS:` now, `VmHWM:` the peak so far).
pub fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A row of a result as text: NULL as `None`, bytes as (lossy) UTF-8, any other value (the
/// binary protocol's) in its debug form.
pub fn text_row(row: mysql_async::Row) -> Vec<Option<String>> {
    row.unwrap()
        .into_iter()
        .map(|v| match v {
            mysql_async::Value::NULL => None,
            mysql_async::Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
            other => Some(format!("{other:?}")),
        })
        .collect()
}

/// The rows `sql` returns on `c`, as text ([`text_row`]); panics naming `sql` when it fails.
pub async fn text_rows(c: &mut mysql_async::Conn, sql: &str) -> Vec<Vec<Option<String>>> {
    let rows: Vec<mysql_async::Row> = c.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.into_iter().map(text_row).collect()
}
