//! The running configuration and its hot reload (issue 20 item 2): the manager's `reload
//! @@config_all`, `reload @@config`, `reload @@user` and `rollback @@config`
//! (`../shared/mycat-compat/OPERATIONS.md` §1), and SIGHUP (the binary), which reloads all.
//!
//! The configuration in force is a [`Generation`]: the configuration, its router and its
//! cluster. A session takes the current generation when a command begins and keeps it until the
//! command ends, or, while a transaction is open or connections are pinned to it, until that
//! ends: work in flight finishes on the configuration it began with, and the next statement
//! outside a transaction runs on the newest one.
//!
//! A reload reads the three files again and validates them whole (every error is reported and
//! the running configuration is kept on any of them), then swaps the generation at once:
//! - `reload @@config_all` takes everything but the restart-only `server.xml` system
//!   properties (ports, limits, TLS, sequence handler, timeouts: a change to one is logged and
//!   waits for a restart). dataHosts whose settings, servers and databases are unchanged keep
//!   their pools, health, heartbeats and active writeHost; new and changed ones start on the
//!   writeHost `dnindex.properties` names, and their writeHosts must accept a connection before
//!   the swap (Mycat tests the new pools the same way). The replaced dataHosts drain: their
//!   pools and heartbeats end when the last statement or transaction that holds them ends.
//!   While some do, another `reload @@config_all` is refused with Mycat's message.
//! - `reload @@config` takes users, schemas, tables, rules and the firewall, and keeps the
//!   running dataNodes and dataHosts (Mycat applies no dataNode/dataHost change here): a schema
//!   that names a dataNode the running configuration lacks is an error.
//! - `reload @@user` takes the users and the firewall (`<firewall>`, `managerUsers`) only.
//! - `rollback @@config` installs the configuration the last reload replaced (as
//!   `reload @@config_all` would; twice in a row goes back and forth).
//!
//! Sessions whose user a reload removed are ended at their next command: manx never runs a
//! statement for a user the configuration no longer names.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use super::{MysqlError, Server, ViewColumns};
use crate::config::{Config, ConfigErrors};
use crate::datahost::{Cluster, ClusterError, Retired, Timeouts};
use crate::route::Router;

/// One configuration in force: what a statement is routed and executed with.
#[derive(Debug)]
pub struct Generation {
    /// 0 for the configuration loaded at start-up, one more for each reload or rollback.
    pub number: u64,
    pub config: Arc<Config>,
    pub router: Router,
    pub cluster: Arc<Cluster>,
    /// Column names of `information_schema` views, by (dataNode, upper-cased view name): the
    /// derived tables that answer metadata queries for the logical schemas list them (they
    /// differ between MySQL versions and MariaDB, never while a server runs).
    pub(super) view_columns: Mutex<ViewColumns>,
    /// Tables' column orders, read for INSERTs without a column list (emptied after DDL).
    pub column_orders: crate::route::ColumnOrders,
}

impl Generation {
    /// Generation 0: `config` as loaded at start-up.
    ///
    /// Errors: every routing configuration problem (partition functions, map files), with
    /// file and line; `dnindex.properties` that cannot be read, written or used.
    pub(super) fn first(config: Config, timeouts: Timeouts) -> Result<Generation, ConfigErrors> {
        let router = Router::new(&config)?;
        let cluster =
            Cluster::new(&config, timeouts).map_err(|e| dnindex_error(&config, e.to_string()))?;
        Ok(Generation {
            number: 0,
            config: Arc::new(config),
            router,
            cluster: Arc::new(cluster),
            view_columns: Mutex::default(),
            column_orders: Default::default(),
        })
    }
}

fn dnindex_error(config: &Config, message: String) -> ConfigErrors {
    ConfigErrors(vec![crate::config::ConfigError {
        origin: crate::config::Origin::new(&config.dir.join(crate::config::dnindex::FILE), 0),
        element: String::new(),
        message,
    }])
}

/// What a reload takes from the files it reads (module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `reload @@user`: users and firewall.
    User,
    /// `reload @@config`: users, firewall, schemas, tables and rules.
    Config,
    /// `reload @@config_all` and SIGHUP: everything but the restart-only system properties.
    All,
}

impl Scope {
    /// The failure message's prefix, as Mycat words it.
    fn failure(self) -> &'static str {
        match self {
            Scope::User => "Reload userConfig failure",
            Scope::Config | Scope::All => "Reload config failure",
        }
    }

    /// The OK message, as Mycat words it.
    fn success(self) -> &'static str {
        match self {
            Scope::User => "Reload userConfig success",
            Scope::Config | Scope::All => "Reload config success",
        }
    }
}

/// The server's configuration state across reloads.
#[derive(Debug)]
pub(super) struct Reloads {
    current: RwLock<Arc<Generation>>,
    /// The configuration the last reload or rollback replaced (`rollback @@config`).
    previous: Mutex<Option<Arc<Config>>>,
    /// dataHosts earlier reloads took out of service, until they are no longer held.
    retired: Mutex<Vec<Retired>>,
    /// One reload at a time.
    running: tokio::sync::Mutex<()>,
    /// When the last reload / rollback happened, in ms since the Unix epoch; -1 before any
    /// (`show @@server` shows the start-up time for RELOAD_TIME then, as Mycat, and -1 for
    /// ROLLBACK_TIME).
    pub reload_time: AtomicI64,
    pub rollback_time: AtomicI64,
    number: AtomicU64,
    timeouts: Timeouts,
    /// The server serves (heartbeats run): the dataHosts a reload builds start theirs.
    pub serving: AtomicBool,
    /// Reloads and rollbacks that were installed / refused since start
    /// (`manx_reloads_total{result}`).
    pub succeeded: AtomicU64,
    pub failed: AtomicU64,
}

impl Reloads {
    pub(super) fn new(first: Generation, timeouts: Timeouts) -> Reloads {
        Reloads {
            current: RwLock::new(Arc::new(first)),
            previous: Mutex::new(None),
            retired: Mutex::new(Vec::new()),
            running: tokio::sync::Mutex::new(()),
            reload_time: AtomicI64::new(-1),
            rollback_time: AtomicI64::new(-1),
            number: AtomicU64::new(0),
            timeouts,
            serving: AtomicBool::new(false),
            succeeded: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    /// Holds off reloads (and waits for one in progress) while the guard lives: for the
    /// manager commands that change a dataHost's state (`switch @@datasource`, `stop
    /// @@heartbeat`), which a reload building new dataHosts from the running ones would lose.
    pub(super) async fn hold(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.running.lock().await
    }

    pub(super) fn current(&self) -> Arc<Generation> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The names of dataHosts replaced by earlier reloads that some session still holds.
    fn draining(&self) -> Vec<String> {
        let mut retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        retired.retain(|r| !r.draining().is_empty());
        let mut names: Vec<String> = retired.iter().flat_map(Retired::draining).collect();
        names.sort();
        names.dedup();
        names
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// What was refused: a reload of `Scope`, or `rollback @@config`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Reload(Scope),
    Rollback,
}

impl Operation {
    /// The failure message's prefix, as Mycat words it.
    fn failure(self) -> &'static str {
        match self {
            Operation::Reload(scope) => scope.failure(),
            Operation::Rollback => "Rollback config failure",
        }
    }
}

/// Why a reload or `rollback @@config` was refused; the running configuration is kept in every
/// case. Each reads as Mycat's failure message (its prefix names the operation) followed by the
/// reason; the manager port answers all of them with errno 1003, SQLSTATE HY000 (Mycat's
/// `ErrorCode.ER_YES` for a failed manager command, OPERATIONS.md §1), mapped once in
/// `From<ReloadError> for MysqlError`.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// `reload @@config_all` while dataHosts an earlier reload replaced still drain: Mycat's
    /// own message, word for word.
    #[error(
        "The are several unfinished db transactions before executing \"reload @@config_all\", therefore the execution is terminated for logical integrity and please try again later."
    )]
    Draining { data_hosts: Vec<String> },
    /// The files in `dir` do not load or validate: every error, with file and line.
    #[error("{}: {} error(s) in {}, the running configuration is kept: {}", op.failure(), errors.0.len(), dir.display(), listed(errors))]
    Files {
        op: Operation,
        dir: std::path::PathBuf,
        errors: ConfigErrors,
    },
    /// What a partial reload takes does not fit what it keeps (a schema naming a dataNode the
    /// running configuration lacks under `reload @@config`).
    #[error("{}: the running configuration is kept: {}{}", op.failure(), listed(errors), partial_hint(*op))]
    Compose { op: Operation, errors: ConfigErrors },
    /// The composed configuration does not route (partition functions, map files).
    #[error("{}: the running configuration is kept: {}", op.failure(), listed(errors))]
    Routing { op: Operation, errors: ConfigErrors },
    /// The cluster cannot be built: `dnindex.properties`, or a new dataHost that does not answer.
    #[error("{}: the running configuration is kept: {source}", op.failure())]
    Cluster {
        op: Operation,
        #[source]
        source: ClusterError,
    },
    /// `rollback @@config` with no reload since start-up.
    #[error("Rollback config failure: no reload since start-up, nothing to roll back to")]
    NothingToRollBack,
}

impl From<ReloadError> for MysqlError {
    fn from(e: ReloadError) -> Self {
        MysqlError::new(1003, "HY000", e.to_string())
    }
}

/// What a failed partial reload adds to its message.
fn partial_hint(op: Operation) -> &'static str {
    match op {
        Operation::Reload(Scope::Config | Scope::User) => {
            " (this reload keeps the running dataNodes, dataHosts and schemas it does not take: reload @@config_all applies them)"
        }
        _ => "",
    }
}

fn listed(errors: &ConfigErrors) -> String {
    errors
        .0
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The `server.xml` system properties a reload applies (besides the firewall): who may manage,
/// and `useSqlStat` (the one Mycat's `reload @@config` re-reads, SPEC §1); the others take
/// effect at restart.
const RELOADED_PROPERTIES: [&str; 2] = ["managerUsers", "useSqlStat"];

/// `loaded` cut to what `scope` takes, the rest kept from `running` (module documentation).
/// Logs the restart-only system properties that differ.
///
/// Errors: references the composed configuration cannot resolve (a schema naming a dataNode
/// the running configuration lacks under `reload @@config`, a user naming a schema it lacks
/// under `reload @@user`).
fn compose(running: &Config, loaded: Config, scope: Scope) -> Result<Config, ConfigErrors> {
    for (name, (value, origin)) in &loaded.system.properties {
        let before = running.system.properties.get(name).map(|(v, _)| v);
        if before != Some(value) && !RELOADED_PROPERTIES.contains(&name.as_str()) {
            tracing::warn!(property = %name, value = %value, at = %origin, "reload: server.xml system property changed; it takes effect at restart");
        }
    }
    let mut system = running.system.clone();
    system.white_hosts = loaded.system.white_hosts.clone();
    system.manager_users = loaded.system.manager_users.clone();
    system.use_sql_stat = loaded.system.use_sql_stat;
    for name in RELOADED_PROPERTIES {
        match loaded.system.properties.get(name) {
            Some(p) => system.properties.insert(name.to_string(), p.clone()),
            None => system.properties.remove(name),
        };
    }
    let composed = match scope {
        Scope::All => Config { system, ..loaded },
        Scope::Config => Config {
            system,
            data_nodes: running.data_nodes.clone(),
            data_hosts: running.data_hosts.clone(),
            ..loaded
        },
        Scope::User => Config {
            system,
            users: loaded.users,
            ..running.clone()
        },
    };
    composed.check_references()?;
    Ok(composed)
}

impl Server {
    /// The configuration in force now (module documentation).
    pub fn current(&self) -> Arc<Generation> {
        self.reloads.current()
    }

    /// Reloads the configuration files as `scope` says (module documentation), answering
    /// Mycat's OK message.
    ///
    /// Errors ([`ReloadError`], the running configuration kept): `reload @@config_all` while
    /// dataHosts of an earlier reload still drain (Mycat's message); the files do not load or
    /// validate (every error, with file and line); a dataNode or dataHost a partial reload
    /// cannot apply; a new dataHost's writeHost cannot be reached; `dnindex.properties` cannot
    /// be used.
    pub async fn reload(self: &Arc<Self>, scope: Scope) -> Result<&'static str, ReloadError> {
        let done = self.reload_once(scope).await;
        self.count_reload(done.is_ok());
        match &done {
            Ok(_) => tracing::info!(
                ?scope,
                generation = self.current().number,
                "configuration reloaded"
            ),
            Err(e) => tracing::error!(
                ?scope,
                reason = %e,
                "reload refused; the running configuration is kept"
            ),
        }
        done
    }

    fn count_reload(&self, ok: bool) {
        let counter = if ok {
            &self.reloads.succeeded
        } else {
            &self.reloads.failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// (installed, refused) reloads and rollbacks since start.
    pub fn reload_counts(&self) -> (u64, u64) {
        (
            self.reloads.succeeded.load(Ordering::Relaxed),
            self.reloads.failed.load(Ordering::Relaxed),
        )
    }

    async fn reload_once(self: &Arc<Self>, scope: Scope) -> Result<&'static str, ReloadError> {
        let _one = self.reloads.running.lock().await;
        if scope == Scope::All {
            let draining = self.reloads.draining();
            if !draining.is_empty() {
                tracing::warn!(data_hosts = ?draining, "reload @@config_all refused: dataHosts replaced by the previous reload are still in use");
                return Err(ReloadError::Draining {
                    data_hosts: draining,
                });
            }
        }
        let running = self.current();
        let dir = running.config.dir.clone();
        let op = Operation::Reload(scope);
        let loaded = Config::load(&dir).map_err(|errors| {
            for e in &errors.0 {
                tracing::warn!(error = %e, "reload: configuration error");
            }
            ReloadError::Files {
                op,
                dir: dir.clone(),
                errors,
            }
        })?;
        for w in &loaded.warnings {
            tracing::warn!("reload: {w}");
        }
        let composed = compose(&running.config, loaded, scope)
            .map_err(|errors| ReloadError::Compose { op, errors })?;
        self.install(&running, composed, scope == Scope::All, op)
            .await?;
        self.reloads.reload_time.store(now_ms(), Ordering::Relaxed);
        Ok(scope.success())
    }

    /// Checks the configuration files of `dir` as `reload @@config_all` would take them, without
    /// installing anything: they load and validate, compose with the running configuration,
    /// route, and the writeHosts of the dataHosts they would build anew answer (the "prepare"
    /// of a cluster-wide reload, module [`super::cluster`]).
    ///
    /// Errors: what `reload @@config_all` would refuse.
    pub async fn validate_dir(&self, dir: &std::path::Path) -> Result<(), ReloadError> {
        let op = Operation::Reload(Scope::All);
        let running = self.current();
        let loaded = Config::load(dir).map_err(|errors| ReloadError::Files {
            op,
            dir: dir.to_path_buf(),
            errors,
        })?;
        let composed = compose(&running.config, loaded, Scope::All)
            .map_err(|errors| ReloadError::Compose { op, errors })?;
        Router::new(&composed).map_err(|errors| ReloadError::Routing { op, errors })?;
        let cluster_error = |source| ReloadError::Cluster { op, source };
        let (cluster, built) = running
            .cluster
            .reload(&composed, self.reloads.timeouts)
            .map_err(cluster_error)?;
        cluster.test_new_hosts(&built).await.map_err(cluster_error)
    }

    /// `rollback @@config`: installs the configuration the last reload or rollback replaced.
    ///
    /// Errors: [`ReloadError::NothingToRollBack`] when nothing was reloaded since start-up;
    /// [`ReloadError::Routing`] or [`ReloadError::Cluster`] when the configuration cannot be
    /// installed again (a writeHost that no longer answers).
    pub async fn rollback(self: &Arc<Self>) -> Result<&'static str, ReloadError> {
        let done = self.rollback_once().await;
        self.count_reload(done.is_ok());
        done
    }

    async fn rollback_once(self: &Arc<Self>) -> Result<&'static str, ReloadError> {
        let _one = self.reloads.running.lock().await;
        let previous = self
            .reloads
            .previous
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let Some(previous) = previous else {
            return Err(ReloadError::NothingToRollBack);
        };
        let running = self.current();
        self.install(&running, (*previous).clone(), true, Operation::Rollback)
            .await?;
        self.reloads
            .rollback_time
            .store(now_ms(), Ordering::Relaxed);
        tracing::info!("configuration rolled back");
        Ok("Rollback config success")
    }

    /// Mycat force-closes the connections of a reload's old dataHosts `sqlExecuteTimeout` after
    /// the reload (SPEC §4.11): after that long, the sessions that still hold a configuration
    /// older than generation `number` while `retired` dataHosts drain are ended (their
    /// transactions roll back on the backends), so that no client can hold off the next
    /// `reload @@config_all` for ever.
    fn reap_after_timeout(self: &Arc<Self>, number: u64, retired: Retired) {
        let server = self.clone();
        let timeout =
            std::time::Duration::from_secs(server.current().config.system.sql_execute_timeout_s);
        tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            if retired.draining().is_empty() {
                return;
            }
            for (id, h) in server.registry.sessions() {
                if h.held_generation().is_some_and(|n| n < number) {
                    tracing::warn!(
                        connection = id,
                        ?timeout,
                        "reload: the session still holds the configuration a reload replaced after sqlExecuteTimeout: ended, its transaction rolled back"
                    );
                    h.kill();
                    h.cancel_running(true).await;
                }
            }
        });
    }

    /// Builds the generation of `config` from `running` (new dataHosts tested when
    /// `rebuild_hosts`, else `running`'s cluster kept) and swaps it in.
    ///
    /// Errors: the routing configuration is invalid, `dnindex.properties` cannot be used, a
    /// new dataHost's writeHost cannot be reached (one message listing all).
    async fn install(
        self: &Arc<Self>,
        running: &Arc<Generation>,
        config: Config,
        rebuild_hosts: bool,
        op: Operation,
    ) -> Result<(), ReloadError> {
        let router = Router::new(&config).map_err(|errors| ReloadError::Routing { op, errors })?;
        let cluster = if rebuild_hosts {
            let cluster_error = |source| ReloadError::Cluster { op, source };
            let (cluster, built) = running
                .cluster
                .reload(&config, self.reloads.timeouts)
                .map_err(cluster_error)?;
            cluster
                .test_new_hosts(&built)
                .await
                .map_err(cluster_error)?;
            if !built.is_empty() {
                tracing::info!(data_hosts = ?built, "reload: dataHosts built anew");
            }
            Arc::new(cluster)
        } else {
            running.cluster.clone()
        };
        let use_sql_stat = config.system.use_sql_stat;
        let number = self.reloads.number.fetch_add(1, Ordering::AcqRel) + 1;
        let previous = {
            let mut current = self
                .reloads
                .current
                .write()
                .unwrap_or_else(|p| p.into_inner());
            let next = Arc::new(Generation {
                number,
                config: Arc::new(config),
                router,
                cluster: cluster.clone(),
                view_columns: Mutex::default(),
                column_orders: Default::default(),
            });
            std::mem::replace(&mut *current, next)
        };
        self.stats.set_enabled(use_sql_stat);
        if let Err(e) = cluster.save_dnindex() {
            tracing::warn!(error = %e, "reload: cannot write dnindex.properties");
        }
        if self.reloads.serving.load(Ordering::Acquire) {
            cluster.start_heartbeats();
        }
        let retired = previous.cluster.retired_in(&cluster);
        tracing::info!(
            generation = number,
            data_hosts_replaced = ?retired.names(),
            "new configuration in force; replaced dataHosts drain"
        );
        if !retired.draining().is_empty() {
            self.reap_after_timeout(number, retired.clone());
        }
        self.reloads
            .retired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(retired);
        *self
            .reloads
            .previous
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(previous.config.clone());
        Ok(())
    }
}
