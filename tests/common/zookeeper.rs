//! Throwaway standalone ZooKeeper servers for the cluster-mode tests, from Debian's `zookeeper`
//! package (which `scripts/sandbox.sh` installs when missing): each has its own directory under
//! `target/h5-zookeeper/<name>-<pid>` (`zoo.cfg`, `data/`, `zookeeper.log`), a free port of
//! 127.0.0.1, and runs as a child JVM, SIGKILLed on drop.
//!
//! The classpath is Debian's own (`/etc/zookeeper/conf/environment`: `zookeeper.jar`, whose
//! manifest `Class-Path` names its dependencies in `/usr/share/java`: jute, netty, slf4j-api,
//! commons-*, jetty, ...) plus `slf4j-simple.jar` (package libslf4j-java, a dependency of
//! libzookeeper-java), so that the server logs to stderr, which goes to `zookeeper.log`. The
//! package's own config directory is left out: its log4j.properties is for a binding this
//! classpath does not have.
//!
//! Sessions: the server negotiates a client's requested session timeout into
//! [`MIN_SESSION_TIMEOUT_MS`]..=[`MAX_SESSION_TIMEOUT_MS`] and expires sessions in buckets of
//! [`TICK_MS`], so a session ends between its timeout and one tick later after the last thing the
//! server heard from its client.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{closed_port, ensure_sandbox, repo};

/// The server's `tickTime`, in milliseconds: its heartbeat and session-expiry granularity.
pub const TICK_MS: u64 = 500;
/// The shortest session timeout the server grants, in milliseconds (`minSessionTimeout`; shorter
/// requests are raised to it). ZooKeeper's default would be two ticks.
pub const MIN_SESSION_TIMEOUT_MS: u64 = 1_000;
/// The longest session timeout the server grants, in milliseconds (`maxSessionTimeout`; longer
/// requests are lowered to it).
pub const MAX_SESSION_TIMEOUT_MS: u64 = 20_000;

const JAVA: &str = "/usr/bin/java";
/// Debian's server classpath (`/etc/zookeeper/conf/environment`), without its config directory.
const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
/// An SLF4J binding that logs to stderr (Debian's classpath has none: its server logs nothing).
const SLF4J_SIMPLE_JAR: &str = "/usr/share/java/slf4j-simple.jar";
/// How long [`ZkServer::start`] and [`ZkServer::restart`] wait for the server to serve.
const START_TIMEOUT: Duration = Duration::from_secs(60);

fn base() -> PathBuf {
    repo().join("target/h5-zookeeper")
}

/// `-cp` for the server. Missing files start the sandbox once, which installs the missing
/// Debian packages when we are root, and otherwise fails naming them.
fn classpath() -> String {
    let missing = || {
        [JAVA, ZOOKEEPER_JAR, SLF4J_SIMPLE_JAR]
            .into_iter()
            .filter(|f| !Path::new(f).exists())
            .collect::<Vec<_>>()
    };
    if !missing().is_empty() {
        ensure_sandbox();
    }
    let still = missing();
    assert!(
        still.is_empty(),
        "{still:?} missing: install the Debian package zookeeper (scripts/sandbox.sh start does \
         as root)"
    );
    format!("{ZOOKEEPER_JAR}:{SLF4J_SIMPLE_JAR}")
}

fn zoo_cfg(dir: &Path, port: u16) -> String {
    format!(
        "tickTime={TICK_MS}\ninitLimit=10\nsyncLimit=5\ndataDir={data}\nclientPort={port}\n\
         clientPortAddress=127.0.0.1\nminSessionTimeout={MIN_SESSION_TIMEOUT_MS}\n\
         maxSessionTimeout={MAX_SESSION_TIMEOUT_MS}\nadmin.enableServer=false\n\
         4lw.commands.whitelist=*\nautopurge.purgeInterval=0\n",
        data = dir.join("data").display()
    )
}

/// One throwaway standalone ZooKeeper server.
pub struct ZkServer {
    /// Its client port on 127.0.0.1 (kept across [`ZkServer::restart`]).
    pub port: u16,
    /// Its directory: `zoo.cfg`, `data/`, `zookeeper.log`. Removed on drop, unless the thread
    /// is panicking (a failed test keeps it for a look at the log).
    pub dir: PathBuf,
    child: Option<Child>,
}

impl ZkServer {
    /// A new server named `name` (the directory `target/h5-zookeeper/<name>-<pid>`, leftovers of
    /// an earlier run removed) on a free port, started and serving clients.
    ///
    /// Panics when the package is missing (see the module docs) or the server does not serve
    /// within 60 s, with its log.
    pub async fn start(name: &str) -> ZkServer {
        let dir = base().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let port = closed_port();
        std::fs::write(dir.join("zoo.cfg"), zoo_cfg(&dir, port)).unwrap();
        let mut server = ZkServer {
            port,
            dir,
            child: None,
        };
        server.restart().await;
        server
    }

    /// "127.0.0.1:<port>", a connect string for clients.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// What the server has logged so far (all its runs; empty if there is no log yet).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("zookeeper.log")).unwrap_or_default()
    }

    fn launch(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("zookeeper.log"))
            .unwrap();
        let child = Command::new(JAVA)
            .args([
                // Small, with one GC thread: tests run several servers at once.
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-Dzookeeper.jmx.log4j.disable=true",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                "-cp",
                &classpath(),
                "org.apache.zookeeper.server.ZooKeeperServerMain",
            ])
            .arg(self.dir.join("zoo.cfg"))
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {JAVA}: {e}"));
        self.child = Some(child);
    }

    /// Starts the server again on the same port and data (after [`ZkServer::kill`]; a running
    /// server is killed first) and waits until it serves clients: its `srvr` command reports
    /// standalone mode, which it only does once its database is loaded.
    ///
    /// Panics if it exits or does not serve within 60 s, with its log.
    pub async fn restart(&mut self) {
        self.kill();
        self.launch();
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().unwrap()) {
                panic!(
                    "ZooKeeper in {} exited ({status}):\n{}",
                    self.dir.display(),
                    self.log()
                );
            }
            let srvr = self.four_letter_word("srvr").await;
            if srvr.is_ok_and(|r| r.contains("Mode: standalone")) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "ZooKeeper on port {} did not serve within {START_TIMEOUT:?}:\n{}",
                self.port,
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends a four-letter-word command (`ruok`, `srvr`, `mntr`, `cons`, `stat`, ...: all are
    /// enabled) and returns the server's whole reply. Errors if the server does not accept, or
    /// does not reply and close within 2 s.
    pub async fn four_letter_word(&self, command: &str) -> std::io::Result<String> {
        let exchange = async {
            let mut s = tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await?;
            s.write_all(command.as_bytes()).await?;
            let mut reply = String::new();
            s.read_to_string(&mut reply).await?;
            Ok(reply)
        };
        tokio::time::timeout(Duration::from_secs(2), exchange)
            .await
            .unwrap_or_else(|_| {
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no reply to {command}"),
                ))
            })
    }

    /// A client session with the server (the client's default 6 s session timeout; build one with
    /// [`zookeeper_client::Client::connector`] for others).
    ///
    /// Panics if no session is established within 15 s, with the server's log.
    pub async fn client(&self) -> zookeeper_client::Client {
        let address = self.address();
        let connect = zookeeper_client::Client::connect(&address);
        match tokio::time::timeout(Duration::from_secs(15), connect).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => panic!("connect to ZooKeeper at {address}: {e}\n{}", self.log()),
            Err(_) => panic!(
                "connect to ZooKeeper at {address}: no session within 15 s\n{}",
                self.log()
            ),
        }
    }

    /// SIGKILL, as a crash would (no clean shutdown); a no-op when it is not running.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        self.kill();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
