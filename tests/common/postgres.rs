//! Throwaway PostgreSQL servers for tests that kill or promote a server: a primary (its own
//! `initdb`) and streaming-replication standbys of it (`pg_basebackup -R`), each with its own
//! data directory under `target/h6-pg/` and a free port, the postmaster a child process of the
//! test (SIGKILLed by [`PgServer::kill`], shut down immediately on drop) — never the shared
//! sandbox.
//!
//! PostgreSQL refuses to run as root: as root every PostgreSQL program runs as the OS user
//! `postgres` (`setpriv`, which execs, so the child process is the postmaster itself), the way
//! `scripts/sandbox.sh` runs the sandbox's server. Accounts: `postgres` (trusted over TCP, also
//! for replication) and `manx`/`manx` (superuser, SCRAM-SHA-256).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{closed_port, repo};

/// The newest `/usr/lib/postgresql/<major>/bin` holding the server programs, else the
/// directory of `initdb` in `PATH`.
fn bindir() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return bin;
    }
    let out = Command::new("sh")
        .args(["-c", "command -v initdb"])
        .output()
        .expect("run sh");
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        !path.is_empty(),
        "PostgreSQL server programs not found (scripts/sandbox.sh installs postgresql)"
    );
    Path::new(&path).parent().unwrap().to_path_buf()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false)
}

/// `program` from the PostgreSQL bin directory, run as `postgres` when we are root.
fn pg_command(program: &str) -> Command {
    let path = bindir().join(program);
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=postgres",
            "--regid=postgres",
            "--init-groups",
            "--",
        ])
        .arg(path);
        c
    } else {
        Command::new(path)
    }
}

/// Runs a PostgreSQL program to completion; panics with its output when it fails.
fn run(mut c: Command, what: &str) {
    c.current_dir("/").stdin(Stdio::null());
    super::checked(c, what);
}

/// `target/h6-pg`, owned by `postgres` when we are root (it creates the data directories).
fn base() -> PathBuf {
    let dir = repo().join("target/h6-pg");
    std::fs::create_dir_all(&dir).unwrap();
    if is_root() {
        run(
            {
                let mut c = Command::new("chown");
                c.arg("postgres:postgres").arg(&dir);
                c
            },
            "chown target/h6-pg",
        );
    }
    dir
}

/// Sends `signal` (a `kill -s` name) to `pid`.
fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args(["-s", signal, &pid.to_string()])
        .status();
}

/// One throwaway PostgreSQL server.
pub struct PgServer {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
}

impl PgServer {
    /// A new primary named `name` (fresh `initdb`), started, with role `manx`.
    pub async fn primary(name: &str) -> PgServer {
        let dir = base().join(format!("{name}-{}", std::process::id()));
        remove(&dir);
        let mut c = pg_command("initdb");
        c.arg("-D").arg(&dir).args([
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-locale",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--no-sync",
            "--no-instructions",
        ]);
        run(c, "initdb");
        let hba = "host all postgres 127.0.0.1/32 trust\n\
                   host replication postgres 127.0.0.1/32 trust\n\
                   host all all 127.0.0.1/32 scram-sha-256\n";
        write_as_server(&dir.join("pg_hba.conf"), hba);
        let server = PgServer::started(dir).await;
        server
            .admin()
            .await
            .batch_execute("CREATE ROLE manx LOGIN SUPERUSER PASSWORD 'manx'")
            .await
            .unwrap();
        server
    }

    /// A streaming-replication standby of `primary` named `name` (`pg_basebackup -R`: it
    /// connects to the primary as `postgres` and stays in recovery until promoted), started. The
    /// checkpoint it starts from is taken at once (`-c fast`; a spread one takes minutes).
    pub async fn standby_of(primary: &PgServer, name: &str) -> PgServer {
        let dir = base().join(format!("{name}-{}", std::process::id()));
        remove(&dir);
        let mut c = pg_command("pg_basebackup");
        c.arg("-D")
            .arg(&dir)
            .args(["-h", "127.0.0.1", "-p", &primary.port.to_string()])
            .args([
                "-U",
                "postgres",
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "--no-sync",
            ]);
        run(c, "pg_basebackup");
        PgServer::started(dir).await
    }

    /// The server of data directory `dir`, started on a free port.
    async fn started(dir: PathBuf) -> PgServer {
        let mut server = PgServer {
            port: closed_port(),
            dir,
            child: None,
        };
        server.start().await;
        server
    }

    /// Starts the postmaster as a child process and waits until it accepts connections.
    pub async fn start(&mut self) {
        let child = pg_command("postgres")
            .arg("-D")
            .arg(&self.dir)
            .args(["-c", &format!("port={}", self.port)])
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", "unix_socket_directories="])
            .args(["-c", "max_connections=60"])
            .args(["-c", "shared_buffers=16MB"])
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off"])
            .args(["-c", "wal_receiver_status_interval=1"])
            .args(["-c", "wal_retrieve_retry_interval=200ms"])
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(self.log_path()).expect("create the server log"),
            ))
            .spawn()
            .expect("start postgres");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if self.try_admin().await.is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "PostgreSQL on port {} did not answer:\n{}",
                self.port,
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.with_extension("log")
    }

    /// The server's log (stderr), for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    async fn try_admin(&self) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
        let (client, connection) = tokio_postgres::Config::new()
            .host("127.0.0.1")
            .port(self.port)
            .user("postgres")
            .dbname("postgres")
            .connect_timeout(Duration::from_secs(3))
            .connect(tokio_postgres::NoTls)
            .await?;
        tokio::spawn(connection);
        Ok(client)
    }

    /// A connection to database `postgres` as the superuser `postgres`.
    pub async fn admin(&self) -> tokio_postgres::Client {
        self.try_admin()
            .await
            .unwrap_or_else(|e| panic!("connect to PostgreSQL on {}: {e}", self.port))
    }

    /// A connection to database `db` as `postgres`.
    pub async fn db(&self, db: &str) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::Config::new()
            .host("127.0.0.1")
            .port(self.port)
            .user("postgres")
            .dbname(db)
            .connect(tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("connect to {db} on {}: {e}", self.port));
        tokio::spawn(connection);
        client
    }

    /// The `id` column of table `t` in database `db`, in order (the tests' rows).
    pub async fn ids(&self, db: &str) -> Vec<i32> {
        self.db(db)
            .await
            .query("SELECT id FROM t ORDER BY id", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    }

    /// Whether the server is in recovery (a standby not promoted).
    pub async fn in_recovery(&self) -> bool {
        self.admin()
            .await
            .query_one("SELECT pg_is_in_recovery()", &[])
            .await
            .unwrap()
            .get(0)
    }

    /// Waits until this standby has replayed everything `primary` has written so far (its WAL
    /// insert position: with `synchronous_commit=off` a commit can be ahead of the written WAL).
    pub async fn catch_up(&self, primary: &PgServer) {
        let lsn: String = primary
            .admin()
            .await
            .query_one("SELECT pg_current_wal_insert_lsn()::text", &[])
            .await
            .unwrap()
            .get(0);
        let me = self.admin().await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let done: bool = me
                .query_one(
                    &format!("SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn"),
                    &[],
                )
                .await
                .unwrap()
                .get::<_, Option<bool>>(0)
                .unwrap_or(false);
            if done {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "standby on {} did not replay up to {lsn}:\n{}",
                self.port,
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Promotes this standby (`pg_ctl promote -w`: returns once it accepts writes).
    pub fn promote(&self) {
        let mut c = pg_command("pg_ctl");
        c.arg("-D")
            .arg(&self.dir)
            .args(["-w", "-t", "60", "promote"]);
        run(c, "pg_ctl promote");
    }

    /// A fast shutdown (SIGINT: sessions ended, WAL flushed, no checkpoint wait for clients);
    /// returns once the postmaster exited. [`PgServer::start`] starts it again.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            signal(c.id(), "INT");
            let _ = c.wait();
        }
    }

    /// SIGKILL to the postmaster, as a crash would (its backends exit when they notice).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Writes a file into a data directory, owned by the server's user.
fn write_as_server(path: &Path, content: &str) {
    std::fs::write(path, content).unwrap();
    if is_root() {
        run(
            {
                let mut c = Command::new("chown");
                c.arg("postgres:postgres").arg(path);
                c
            },
            "chown pg_hba.conf",
        );
    }
}

fn remove(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_file(dir.with_extension("log"));
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // Immediate shutdown: the postmaster stops its children and releases its shared
            // memory (a SIGKILL would leave both behind).
            signal(c.id(), "QUIT");
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(c.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        remove(&self.dir);
    }
}

// The shared sandbox's PostgreSQL server (scripts/sandbox.sh), for tests that only need
// databases on it.

/// The sandbox PostgreSQL's port.
pub const PG_PORT: u16 = 15432;

/// A direct connection to database `db` of the sandbox PostgreSQL as `manx`.
pub async fn pg(db: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::Config::new()
        .host("127.0.0.1")
        .port(PG_PORT)
        .user("manx")
        .password("manx")
        .dbname(db)
        .connect(tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect to the sandbox PostgreSQL database {db}: {e}"));
    tokio::spawn(connection);
    client
}

/// Fresh PostgreSQL databases `t_<prefix>_pg1..=n` (byte-order collation `C`, as manx's
/// merge expects), dropping leftovers of an earlier run.
pub async fn pg_databases(prefix: &str, n: usize) -> Vec<String> {
    let admin = pg("postgres").await;
    let names: Vec<String> = (1..=n).map(|i| format!("t_{prefix}_pg{i}")).collect();
    for db in &names {
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
            .await
            .unwrap();
        admin
            .batch_execute(&format!(
                "CREATE DATABASE {db} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'"
            ))
            .await
            .unwrap();
    }
    names
}

/// dataNodes `pgdn1..3` on `databases` (three) of the sandbox PostgreSQL, dataHost `pghost`
/// (account `manx`), as schema.xml text.
pub fn pg_nodes_xml(databases: &[String]) -> String {
    format!(
        r#"<dataNode name="pgdn1" dataHost="pghost" database="{}" />
<dataNode name="pgdn2" dataHost="pghost" database="{}" />
<dataNode name="pgdn3" dataHost="pghost" database="{}" />
<dataHost name="pghost" maxCon="20" minCon="1" balance="0" writeType="0" dbType="postgresql" dbDriver="native" switchType="-1">
  <heartbeat>select 1</heartbeat>
  <writeHost host="pgM1" url="jdbc:postgresql://127.0.0.1:{PG_PORT}/postgres" user="manx" password="manx" />
</dataHost>"#,
        databases[0], databases[1], databases[2]
    )
}

/// Runs the statements `sql` (a batch) in each of the sandbox PostgreSQL's `databases`.
pub async fn pg_each(databases: &[String], sql: &str) {
    for db in databases {
        pg(db)
            .await
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{db}: {sql}: {e}"));
    }
}
