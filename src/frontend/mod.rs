//! The MySQL front end: the listener, one [`session::Session`] per client connection (the only
//! user of `opensrv-mysql`), authentication against `server.xml` users, and the answers given
//! without a backend (`SHOW DATABASES`, `USE`, ...).

mod auth;
pub mod cluster;
mod error;
mod limits;
pub mod manager;
pub mod metrics;
mod prepared;
mod registry;
pub mod reload;
mod session;
pub mod wire;

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio::net::TcpListener;

use crate::config::{Config, ConfigError, ConfigErrors, Origin};
use crate::datahost::Timeouts;
use crate::sequence::Sequences;
use wire::tls;

pub use error::{MysqlError, refusal_code};

/// Column names of `information_schema` views, by (dataNode, upper-cased view name).
type ViewColumns = std::collections::HashMap<(String, String), Arc<[String]>>;

/// The next client of `listener`. A failed accept (out of file descriptors and the like) is
/// logged naming `port` and retried after 50 ms: the clients already served keep going.
async fn accept(
    listener: &TcpListener,
    port: &str,
) -> (tokio::net::TcpStream, std::net::SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(a) => return a,
            Err(e) => {
                tracing::warn!(error = %e, port, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

/// The TLS settings of `config.system`, loaded; `None` when no certificate is configured.
///
/// Errors: a certificate without a key (or the reverse), `requireSecureTransport` without a
/// certificate, PEM files that do not load or do not match; each names the property.
fn load_tls(config: &Config) -> Result<Option<tls::TlsSettings>, ConfigErrors> {
    let system = &config.system;
    let server_xml = config.dir.join("server.xml");
    let fail = |name: &str, message: String| {
        let origin = system
            .properties
            .get(name)
            .map(|(_, o)| o.clone())
            .unwrap_or_else(|| Origin::new(&server_xml, 0));
        ConfigErrors(vec![ConfigError {
            origin,
            element: format!("property name=\"{name}\""),
            message,
        }])
    };
    match (&system.ssl_cert_file, &system.ssl_key_file) {
        (None, None) if system.require_secure_transport => Err(fail(
            "requireSecureTransport",
            "requireSecureTransport is true but no sslCertFile / sslKeyFile (or --tls-cert / --tls-key) is set".to_string(),
        )),
        (None, None) => Ok(None),
        (Some(_), None) => Err(fail(
            "sslCertFile",
            "sslCertFile is set without sslKeyFile (--tls-key)".to_string(),
        )),
        (None, Some(_)) => Err(fail(
            "sslKeyFile",
            "sslKeyFile is set without sslCertFile (--tls-cert)".to_string(),
        )),
        (Some(cert), Some(key)) => {
            tls::TlsSettings::load(cert, key, system.require_secure_transport)
                .map(Some)
                .map_err(|e| {
                    let name = match &e {
                        tls::TlsError::Pem { what: "private key", .. } => "sslKeyFile",
                        _ => "sslCertFile",
                    };
                    fail(name, e.to_string())
                })
        }
    }
}

/// The statement recorder `config.system` asks for (`useSqlStat`, `sqlRecordCount`,
/// `sqlSlowTime`, `enableSlowLog`, `slowLogFile`, `slowLogMaxBytes`).
///
/// Errors: the slow log file cannot be opened (naming `slowLogFile`).
fn recorder(config: &Config) -> Result<crate::stats::Recorder, ConfigErrors> {
    let system = &config.system;
    let path = config.dir.join(&system.slow_log_file);
    crate::stats::Recorder::new(crate::stats::Settings {
        use_sql_stat: system.use_sql_stat,
        slow_ms: system.sql_slow_time_ms,
        record_count: system.sql_record_count,
        slow_log: system
            .enable_slow_log
            .then(|| crate::stats::slowlog::Settings {
                path: path.clone(),
                max_bytes: system.slow_log_max_bytes,
            }),
    })
    .map_err(|e| {
        let origin = system
            .properties
            .get("slowLogFile")
            .or_else(|| system.properties.get("enableSlowLog"))
            .map(|(_, o)| o.clone())
            .unwrap_or_else(|| Origin::new(&config.dir.join("server.xml"), 0));
        ConfigErrors(vec![ConfigError {
            origin,
            element: "property name=\"slowLogFile\"".to_string(),
            message: format!("cannot open the slow log {}: {e}", path.display()),
        }])
    })
}

/// The XA coordinator `config.system` asks for (`instanceId`, `xaLogDir`,
/// `xaLogSegmentBytes`, `xaRecoveryPeriod`); without `instanceId`, the id kept in the log
/// directory (module [`crate::xa`]).
///
/// Errors: the coordinator log cannot be opened or is damaged (naming `xaLogDir`).
fn coordinator(config: &Config) -> Result<crate::xa::Coordinator, ConfigErrors> {
    let system = &config.system;
    let log_dir = config.dir.join(&system.xa_log_dir);
    crate::xa::Coordinator::open(crate::xa::Settings {
        instance: system.instance_id.clone(),
        log_dir: log_dir.clone(),
        segment_bytes: system.xa_log_segment_bytes,
        recovery_period: std::time::Duration::from_millis(system.xa_recovery_period_ms),
    })
    .map_err(|e| {
        let origin = system
            .properties
            .get("xaLogDir")
            .map(|(_, o)| o.clone())
            .unwrap_or_else(|| Origin::new(&config.dir.join("server.xml"), 0));
        ConfigErrors(vec![ConfigError {
            origin,
            element: "property name=\"xaLogDir\"".to_string(),
            message: e.to_string(),
        }])
    })
}

/// Runs an XA recovery pass every `xaRecoveryPeriod` (sooner when a commit left a branch to
/// it) over the dataNodes in force while there is something to resolve, until the server is
/// gone.
async fn xa_recovery(server: std::sync::Weak<Server>) {
    loop {
        let Some(xa) = server.upgrade().map(|s| s.xa.clone()) else {
            return;
        };
        xa.next_pass().await;
        if !xa.has_work() {
            continue;
        }
        let Some(s) = server.upgrade() else {
            return;
        };
        let targets = s.current().cluster.write_targets();
        drop(s);
        let report = xa.recover(&targets).await;
        if report.committed + report.rolled_back > 0 || !report.in_doubt.is_empty() {
            tracing::info!(
                committed = report.committed,
                rolled_back = report.rolled_back,
                in_doubt = report.in_doubt.len(),
                "XA recovery pass"
            );
        }
    }
}

/// Everything a session needs, shared by all sessions.
#[derive(Debug)]
pub struct Server {
    /// The configuration in force and its reloads ([`Server::current`], module [`reload`]).
    reloads: reload::Reloads,
    /// Global sequences (SPEC §5.17); they outlive reloads.
    pub sequences: Sequences,
    /// Connected sessions by connection id (`KILL`), and the COM_STATISTICS counters.
    registry: registry::Registry,
    /// TLS for clients (`sslCertFile` / `sslKeyFile` / `requireSecureTransport`), when set.
    pub tls: Option<tls::TlsSettings>,
    /// Client connections open now, capped at `maxConnections` (module [`limits`]).
    connections: limits::Connections,
    next_connection_id: AtomicU32,
    /// `offline` on the manager port: load-balancer probes on the server port answer 1053 and
    /// new clients are refused (module [`manager`]).
    pub offline: std::sync::atomic::AtomicBool,
    /// When the gateway started (`show @@time.startup`, `show @@server`).
    pub started_at: std::time::SystemTime,
    /// Rollbacks of transactions whose client left, still running ([`Pending`]).
    pending_rollbacks: std::sync::atomic::AtomicUsize,
    /// Every statement's statistics (module [`crate::stats`]).
    pub stats: crate::stats::Recorder,
    /// The XA coordinator: two-phase commit and its recovery (module [`crate::xa`]).
    pub xa: Arc<crate::xa::Coordinator>,
    /// `myid.properties` with `loadZk=true` (ZooKeeper cluster mode), when present.
    pub myid: Option<crate::config::myid::MyId>,
    /// Coordinated failover, started by [`Server::serve`] in cluster mode with `useZKSwitch`
    /// (module [`crate::datahost::coordinated`]).
    pub coordination: std::sync::OnceLock<Arc<crate::datahost::coordinated::Coordination>>,
    /// The version of the cluster-wide configuration in force here (module [`cluster`]): 0
    /// outside cluster mode or before any was published.
    pub config_version: std::sync::atomic::AtomicU64,
}

/// Counts one task a graceful shutdown must wait for (a rollback after a client left) while
/// it lives.
#[derive(Debug)]
struct Pending(Arc<Server>);

impl Pending {
    fn new(server: &Arc<Server>) -> Pending {
        server.pending_rollbacks.fetch_add(1, Ordering::AcqRel);
        Pending(server.clone())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.pending_rollbacks.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Server {
    /// Validates routing (partition functions, map files) and builds the dataHost pools.
    ///
    /// Errors: every routing configuration problem, with file and line; TLS settings that are
    /// incomplete or whose files do not load.
    pub fn new(config: Config, timeouts: Timeouts) -> Result<Server, ConfigErrors> {
        let tls = load_tls(&config)?;
        let stats = recorder(&config)?;
        let xa = Arc::new(coordinator(&config)?);
        let myid = crate::config::myid::load(&config.dir).map_err(|e| {
            let path = config.dir.join(crate::config::myid::FILE);
            // The origin names the file: not twice.
            let message = match e {
                crate::config::myid::MyIdError::InFile { source, .. } => source.to_string(),
                e => e.to_string(),
            };
            ConfigErrors(vec![ConfigError {
                origin: Origin::new(&path, 0),
                element: String::new(),
                message,
            }])
        })?;
        let sequences = Sequences::new(&config);
        let connections = limits::Connections::new(config.system.max_connections);
        crate::version::announce(config.system.fake_mysql_version.as_deref());
        let first = reload::Generation::first(config, timeouts)?;
        Ok(Server {
            reloads: reload::Reloads::new(first, timeouts),
            sequences,
            registry: registry::Registry::default(),
            tls,
            connections,
            next_connection_id: AtomicU32::new(1),
            offline: std::sync::atomic::AtomicBool::new(false),
            started_at: std::time::SystemTime::now(),
            pending_rollbacks: std::sync::atomic::AtomicUsize::new(0),
            stats,
            xa,
            myid,
            coordination: std::sync::OnceLock::new(),
            config_version: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Graceful shutdown, once the listeners stopped accepting: goes offline (probes answer
    /// 1053, logins are refused), waits up to `deadline` for the statements in progress and
    /// the open transactions to end, then ends every session (a statement still running has
    /// its backend connections closed, which rolls it back; a transaction still open is rolled
    /// back on its backends), waits (at most 5 s more) for those rollbacks, and closes the
    /// pools' idle connections. Returns the number of sessions that were ended while a
    /// statement or a transaction was still in progress.
    pub async fn drain(&self, deadline: std::time::Duration) -> usize {
        use std::time::{Duration, Instant};
        self.offline.store(true, Ordering::SeqCst);
        let started = Instant::now();
        let busy = || {
            self.registry
                .sessions()
                .iter()
                .filter(|(_, h)| h.in_flight())
                .count()
        };
        while busy() > 0 && started.elapsed() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let interrupted = busy();
        if interrupted > 0 {
            tracing::warn!(
                sessions = interrupted,
                ?deadline,
                "shutdown: statements or transactions still in progress after the deadline: rolled back"
            );
        }
        for (_, h) in self.registry.sessions() {
            h.kill();
            h.cancel_running(true).await;
        }
        let cleanup = Instant::now();
        while (!self.registry.is_empty() || self.pending_rollbacks.load(Ordering::Acquire) > 0)
            && cleanup.elapsed() < Duration::from_secs(5)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.current().cluster.close_idle();
        interrupted
    }

    /// Starts coordinated failover when `myid.properties` has `loadZk=true` and `server.xml`
    /// `useZKSwitch=true` (module [`crate::datahost::coordinated`]); otherwise failover stays
    /// local, as without ZooKeeper.
    fn start_coordination(self: &Arc<Self>, config: &Config) {
        let Some(myid) = self.myid.clone() else {
            if config.system.use_zk_switch {
                tracing::error!(
                    "server.xml has useZKSwitch=true but there is no myid.properties with loadZk=true in the configuration directory: this instance fails over on its own, as without ZooKeeper"
                );
            }
            return;
        };
        let system = &config.system;
        if !system.use_zk_switch {
            tracing::info!(myid = %myid.myid, "myid.properties has loadZk=true but useZKSwitch is false: the configuration is shared through ZooKeeper, failovers stay local");
        }
        let settings = crate::datahost::coordinated::Settings {
            myid,
            session_timeout: std::time::Duration::from_millis(system.zk_session_timeout_ms),
            period: std::time::Duration::from_millis(system.heartbeat_period_ms.min(10_000)),
            catch_up_timeout: std::time::Duration::from_millis(system.failover_catch_up_timeout_ms),
            failover: system.use_zk_switch,
            write_lease: std::time::Duration::from_millis(system.zk_write_lease_ms),
        };
        let period = settings.period;
        let weak = Arc::downgrade(self);
        let current = move || weak.upgrade().map(|s| s.current().cluster.clone());
        let _ = self
            .coordination
            .set(crate::datahost::coordinated::Coordination::spawn(
                settings, current,
            ));
        tokio::spawn(cluster::sync(Arc::downgrade(self), period));
    }

    /// Accepts manager-port clients (module [`manager`]) on `listener` until `shutdown`
    /// completes. They are not counted against `maxConnections` and not listed by `show
    /// @@connection`; their connection ids come from the same sequence as the server port's.
    pub async fn serve_manager(
        self: Arc<Self>,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<()> {
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                _ = &mut shutdown => return Ok(()),
                accepted = accept(&listener, "manager port") => accepted,
            };
            let _ = stream.set_nodelay(true);
            let id = self.next_connection_id.fetch_add(1, Ordering::Relaxed);
            let server = self.clone();
            tokio::spawn(async move {
                if let Err(e) = session::run(server, stream, peer, id, true).await {
                    tracing::debug!(connection = id, %peer, error = %e, "manager connection ended with an error");
                }
            });
        }
    }

    /// Accepts clients on `listener` until `shutdown` completes; each client runs in its own
    /// task, at most `maxConnections` at once (one more is answered 1040 and closed). Returns when `shutdown` resolves (sessions in progress keep running until their
    /// clients leave or the runtime stops).
    pub async fn serve(
        self: Arc<Self>,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<()> {
        tokio::pin!(shutdown);
        self.reloads.serving.store(true, Ordering::Release);
        let running = self.current();
        self.start_coordination(&running.config);
        running.cluster.start_heartbeats();
        tokio::spawn(running.cluster.warm_up());
        drop(running);
        // Prepared branches a crash left behind are resolved before the first client comes
        // (bounded: an unreachable server must not hold start-up), then periodically.
        let current = self.current();
        // What recovery needs of the dataNodes, without holding the configuration (a reload
        // may replace it meanwhile).
        let targets = current.cluster.write_targets();
        let two_phase = current.config.system.two_phase_commit;
        drop(current);
        // With `twoPhaseCommit`, every dataNode must be able to prepare: refused otherwise.
        if two_phase {
            let unready = self.xa.unready(&targets).await;
            if !unready.is_empty() {
                let list: Vec<String> = unready
                    .iter()
                    .map(|(node, reason)| format!("dataNode {node} ({reason})"))
                    .collect();
                return Err(io::Error::other(format!(
                    "twoPhaseCommit is on but these dataNodes cannot prepare XA branches: {}",
                    list.join("; ")
                )));
            }
        }
        let first_pass = self.xa.recover(&targets);
        if tokio::time::timeout(std::time::Duration::from_secs(15), first_pass)
            .await
            .is_err()
        {
            tracing::warn!("XA recovery at start-up took over 15 s; the periodic passes go on");
        }
        tokio::spawn(xa_recovery(Arc::downgrade(&self)));
        loop {
            let (stream, peer) = tokio::select! {
                _ = &mut shutdown => return Ok(()),
                accepted = accept(&listener, "server port") => accepted,
            };
            if self.offline.load(Ordering::Relaxed) {
                // Offline: an ERR in place of the greeting, which HAProxy's mysql-check (and
                // any client) reads as a failure; sessions already open keep working.
                let e = manager::shut_down();
                limits::refuse_with(stream, e.code, &e.message);
                continue;
            }
            let Some(slot) = self.connections.open() else {
                tracing::info!(%peer, max = self.connections.max(), "too many connections: refused");
                limits::refuse_connection(stream);
                continue;
            };
            let _ = stream.set_nodelay(true);
            let id = self.next_connection_id.fetch_add(1, Ordering::Relaxed);
            let server = self.clone();
            tokio::spawn(async move {
                let _slot = slot;
                if let Err(e) = session::run(server, stream, peer, id, false).await {
                    tracing::debug!(connection = id, %peer, error = %e, "client connection ended with an error");
                }
            });
        }
    }
}
