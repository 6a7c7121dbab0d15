//! Throwaway MariaDB servers for tests that kill a server: each has its own data directory under
//! `target/h5-mariadb/`, a free port, and is started as a child process (SIGKILLed on drop), the
//! way `scripts/sandbox.sh` runs the shared sandbox — which tests must never stop.
//!
//! `mariadb-install-db` runs once per test process into a template directory; every server
//! copies it. Accounts: `manx`/`manx` (all privileges) and `repl`/`repl` (replication).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;

use super::{closed_port, opts, repo};

fn find(names: &[&str]) -> PathBuf {
    for n in names {
        for d in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"] {
            let p = Path::new(d).join(n);
            if p.exists() {
                return p;
            }
        }
    }
    panic!("none of {names:?} is installed (scripts/sandbox.sh installs mariadb-server)");
}

fn base() -> PathBuf {
    repo().join("target/h5-mariadb")
}

fn cnf(dir: &Path, port: u16, server_id: u32) -> String {
    let user = if unsafe_is_root() {
        "user = root\n"
    } else {
        ""
    };
    format!(
        "[mysqld]\n{user}datadir = {d}/data\nsocket = {d}/s.sock\npid-file = {d}/m.pid\nlog-error = {d}/error.log\n\
         tmpdir = {d}/tmp\nport = {port}\nbind-address = 127.0.0.1\nskip-name-resolve\nserver_id = {server_id}\n\
         log_bin = {d}/data/bin\nrelay_log = {d}/data/relay\nbinlog_format = ROW\nlog_slave_updates = ON\n\
         slave_net_timeout = 5\nlower_case_table_names = 1\ncharacter-set-server = utf8mb4\n\
         performance_schema = OFF\ninnodb_buffer_pool_size = 16M\ninnodb_log_file_size = 8M\n\
         innodb_flush_log_at_trx_commit = 2\ninnodb_doublewrite = 0\nmax_connections = 200\n",
        d = dir.display()
    )
}

fn unsafe_is_root() -> bool {
    // `id -u` rather than libc: the crate forbids unsafe code.
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false)
}

/// The installed template data directory, kept between runs. Built in a directory of this
/// process and renamed into place, so test processes running at once (nextest) never see half a
/// template: the first rename wins, the others discard theirs.
fn template() -> &'static Path {
    static T: OnceLock<PathBuf> = OnceLock::new();
    T.get_or_init(|| {
        let ready = base().join("template");
        if ready.join(".ready").exists() {
            return ready;
        }
        let dir = base().join(format!("template.build-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        std::fs::write(dir.join("my.cnf"), cnf(&dir, closed_port(), 1)).unwrap();
        let mut args = vec![
            format!("--defaults-file={}", dir.join("my.cnf").display()),
            format!("--datadir={}", dir.join("data").display()),
            "--auth-root-authentication-method=socket".to_string(),
            "--skip-test-db".to_string(),
            "--skip-name-resolve".to_string(),
        ];
        if unsafe_is_root() {
            args.push("--user=root".to_string());
        }
        let mut c = Command::new(find(&["mariadb-install-db", "mysql_install_db"]));
        c.args(&args).current_dir(&dir).stdin(Stdio::null());
        super::checked(c, "mariadb-install-db");
        // Accounts, created with the server running once on the template.
        let mut t = Throwaway::from_dir(dir.clone(), 1);
        t.launch();
        t.wait_socket();
        t.admin(
            "CREATE USER 'manx'@'127.0.0.1' IDENTIFIED BY 'manx';
             GRANT ALL PRIVILEGES ON *.* TO 'manx'@'127.0.0.1' WITH GRANT OPTION;
             CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY 'repl';
             GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1';
             RESET MASTER;",
        );
        t.shutdown();
        t.owned = false;
        std::fs::write(dir.join(".ready"), "").unwrap();
        for f in ["s.sock", "m.pid"] {
            let _ = std::fs::remove_file(dir.join(f));
        }
        // The binary log index holds absolute paths into this directory: every copy starts a
        // binary log of its own instead.
        for entry in std::fs::read_dir(dir.join("data")).unwrap().flatten() {
            if entry.file_name().to_string_lossy().starts_with("bin.") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        if std::fs::rename(&dir, &ready).is_err() {
            assert!(
                ready.join(".ready").exists(),
                "cannot install the MariaDB template at {}",
                ready.display()
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
        ready
    })
}

/// One throwaway MariaDB server.
pub struct Throwaway {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    /// The directory is deleted on drop.
    owned: bool,
}

impl Throwaway {
    fn from_dir(dir: PathBuf, server_id: u32) -> Throwaway {
        let port = closed_port();
        std::fs::write(dir.join("my.cnf"), cnf(&dir, port, server_id)).unwrap();
        Throwaway {
            port,
            dir,
            child: None,
            owned: true,
        }
    }

    /// A new server (copy of the template) named `name`, with `server_id`, started and
    /// answering on its port.
    pub async fn start(name: &str, server_id: u32) -> Throwaway {
        let template = template();
        let dir = base().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let status = Command::new("cp")
            .arg("-a")
            .arg(template)
            .arg(&dir)
            .status()
            .unwrap();
        assert!(status.success());
        for f in ["error.log", "s.sock", "m.pid", ".ready"] {
            let _ = std::fs::remove_file(dir.join(f));
        }
        let mut t = Throwaway::from_dir(dir, server_id);
        t.restart().await;
        t
    }

    /// [`Throwaway::start`] for a one-node Galera cluster of its own (`wsrep_cluster_address =
    /// gcomm://` bootstraps it; the Debian package galera-4 comes with mariadb-server): its
    /// `SHOW STATUS LIKE 'wsrep%'` reports connected, ready and Primary.
    pub async fn start_galera(name: &str, server_id: u32) -> Throwaway {
        let provider = [
            "/usr/lib/galera/libgalera_smm.so",
            "/usr/lib/libgalera_smm.so",
        ]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("the Galera provider (Debian package galera-4) is not installed");
        let mut t = Throwaway::start(name, server_id).await;
        t.kill();
        let (gcomm, ist) = (closed_port(), closed_port());
        let mut cnf = std::fs::read_to_string(t.dir.join("my.cnf")).unwrap();
        cnf.push_str(&format!(
            "innodb_autoinc_lock_mode = 2\nwsrep_on = ON\nwsrep_provider = {provider}\n\
             wsrep_cluster_address = gcomm://\nwsrep_cluster_name = {name}\n\
             wsrep_node_address = 127.0.0.1\n\
             wsrep_provider_options = \"gmcast.listen_addr=tcp://127.0.0.1:{gcomm};ist.recv_addr=127.0.0.1:{ist}\"\n"
        ));
        std::fs::write(t.dir.join("my.cnf"), cnf).unwrap();
        t.restart().await;
        t
    }

    fn launch(&mut self) {
        let child = Command::new(find(&["mariadbd", "mysqld"]))
            .arg(format!(
                "--defaults-file={}",
                self.dir.join("my.cnf").display()
            ))
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start mariadbd");
        self.child = Some(child);
    }

    fn wait_socket(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.dir.join("s.sock").exists() {
            assert!(
                Instant::now() < deadline,
                "mariadbd in {} did not start: {}",
                self.dir.display(),
                std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts the server again (after [`Throwaway::kill`]) and waits until it answers.
    pub async fn restart(&mut self) {
        self.launch();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(c) = mysql_async::Conn::new(self.opts(None)).await {
                drop(c);
                return;
            }
            assert!(
                Instant::now() < deadline,
                "mariadbd on port {} did not answer: {}",
                self.port,
                std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Runs SQL as root over the unix socket (the template's set-up).
    fn admin(&self, sql: &str) {
        let out = Command::new("mariadb")
            .args(["--no-defaults", "-uroot", "--socket"])
            .arg(self.dir.join("s.sock"))
            .args(["-e", sql])
            .output()
            .expect("run the mariadb client");
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn shutdown(&mut self) {
        self.admin("SHUTDOWN");
        if let Some(mut c) = self.child.take() {
            let _ = c.wait();
        }
    }

    /// SIGKILL, as a crash would (no clean shutdown).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn opts(&self, db: Option<&str>) -> mysql_async::Opts {
        opts(self.port, "manx", "manx", db)
    }

    pub async fn conn(&self, db: Option<&str>) -> mysql_async::Conn {
        mysql_async::Conn::new(self.opts(db))
            .await
            .unwrap_or_else(|e| panic!("connect to 127.0.0.1:{}: {e}", self.port))
    }

    /// Makes this server a GTID replica of `primary` (from the start of its binlog).
    pub async fn replicate_from(&self, primary: &Throwaway) {
        let mut c = self.conn(None).await;
        c.query_drop(format!(
            "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={}, MASTER_USER='repl', \
             MASTER_PASSWORD='repl', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
            primary.port
        ))
        .await
        .unwrap();
        c.query_drop("START SLAVE").await.unwrap();
    }

    /// Waits until this replica has applied everything `primary` has logged.
    pub async fn catch_up(&self, primary: &Throwaway) {
        let mut p = primary.conn(None).await;
        let pos: Option<String> = p.query_first("SELECT @@gtid_binlog_pos").await.unwrap();
        let mut c = self.conn(None).await;
        let waited: Option<i64> = c
            .query_first(format!(
                "SELECT MASTER_GTID_WAIT('{}', 30)",
                pos.unwrap_or_default()
            ))
            .await
            .unwrap();
        assert_eq!(waited, Some(0), "replica on {} did not catch up", self.port);
    }
}

impl Drop for Throwaway {
    fn drop(&mut self) {
        self.kill();
        if self.owned {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
