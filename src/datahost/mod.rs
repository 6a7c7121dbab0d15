//! The datahost layer: which physical server answers a statement for a dataNode.
//!
//! Each dataHost has its writeHosts (each with readHosts), one pool per physical server, a
//! heartbeat per server ([`heartbeat`]) and an active writeHost index. Routing calls
//! [`Cluster::acquire_for`] with a dataNode and an [`Intent`]; the connection comes back with the
//! dataNode's database selected.
//!
//! Choice of server (SPEC §4.3-§4.5, DECISIONS.md items 11-12), per statement, from the
//! servers' current heartbeat states:
//! * [`Intent::Write`] (writes, `/*balance*/` and `db_type=master` reads, everything in a
//!   transaction): the active writeHost (`writeType="0"`), or a random live writeHost
//!   (`writeType="1"`);
//! * [`Intent::Read`]: the dataHost's `balance` candidates ([`balance::read_candidates`]),
//!   picked by `balanceType` (0 weighted random by `weight`, 1 smooth weighted round robin, 2
//!   least connections in use, SPEC §4.4); the active writeHost when there are none;
//! * [`Intent::Replica`] (`db_type=slave`): a live readHost; the active writeHost when none.
//!
//! A server its heartbeat marked down never receives a statement: when the only possible server
//! is down the statement fails at once, naming it.
//!
//! PostgreSQL dataHosts: the heartbeat also asks `pg_is_in_recovery()`. A standby (in recovery)
//! answers reads as `balance` allows but never takes an [`Intent::Write`]: when the writeHost a
//! write would go to is a standby, the write fails at once with 1290/HY000 naming the dataNode,
//! dataHost and server; failover only ever switches to a writeHost that is not in recovery
//! ([`heartbeat`]).

pub mod accounts;
mod balance;
pub mod coordinated;
mod health;
mod heartbeat;
pub mod held;
pub mod manage;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::backend::deadline::Deadline;
use crate::backend::mysql::{MysqlBackend, MysqlSettings};
use crate::backend::postgres::{PostgresBackend, PostgresSettings};
use crate::backend::{Backend, BackendConn, BackendError};
use crate::config::{Config, DataHostConfig, DbType, HostConfig, dnindex};
use balance::{SourceId, View, WriteView};
use health::{Health, Status};

mod host;
pub use host::DataHost;
use host::{DnIndex, Source, backend, lease_epoch};

/// Timeouts the datahost layer applies to backend connections.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// TCP connect + handshake of a new backend connection.
    pub connect: Duration,
    /// Waiting for a free connection when a pool is at `maxCon`.
    pub pool_wait: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(3),
            pool_wait: Duration::from_secs(10),
        }
    }
}

/// What a statement asks of a dataNode's dataHost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// The active writeHost: writes, statements inside a transaction, and reads forced to the
    /// master by `/*balance*/` or `db_type=master` (DECISIONS.md item 11).
    Write,
    /// A read outside a transaction: spread over the servers the dataHost's `balance` allows.
    Read,
    /// A read that asked for a replica (`db_type=slave`, SPEC §6.4): a live readHost, whatever
    /// `balance` says; the active writeHost when there is none.
    Replica,
}

/// A failure to get a connection for a dataNode, naming the node and the server.
#[derive(Debug, Clone, thiserror::Error)]
#[error("dataNode {node} (dataHost {data_host}, {host} {address}): {source}")]
pub struct DatahostError {
    pub node: String,
    pub data_host: String,
    /// The writeHost/readHost name.
    pub host: String,
    pub address: String,
    #[source]
    pub source: BackendError,
}

/// Why a cluster cannot be built from a configuration (start-up, `reload @@config_all`):
/// `dnindex.properties` (SPEC §4.2) cannot be used, or a dataHost built anew does not answer.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// `dnindex.properties` cannot be read or written (`path`).
    #[error("cannot {action} {}: {source}", path.display())]
    DnIndexFile {
        /// "read" or "write".
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `dnindex.properties` names writeHost `index` of a dataHost that has only `write_hosts`.
    #[error(
        "{}: dataHost {data_host} has active writeHost index {index}, but only {write_hosts} writeHost(s)",
        dnindex::FILE
    )]
    IndexBeyond {
        data_host: String,
        index: usize,
        write_hosts: usize,
    },
    /// `dnindex.properties` names a writeHost other than 0 of a dataHost with `switchType=-1`,
    /// which Mycat refuses to start.
    #[error(
        "{}: dataHost {data_host} has active writeHost index {index}, but switchType=-1 only allows writeHost 0",
        dnindex::FILE
    )]
    NoSwitching { data_host: String, index: usize },
    /// The active writeHosts of dataHosts built anew cannot be reached
    /// ([`Cluster::test_new_hosts`]): one line per dataHost.
    #[error("{}", .0.join("; "))]
    Unreachable(Vec<String>),
}

/// A dataNode's active writeHost, reachable without holding the cluster
/// ([`Cluster::write_targets`]).
#[derive(Debug, Clone)]
pub struct WriteTarget {
    /// The dataNode.
    pub node: String,
    /// Its database on the server.
    pub database: String,
    /// The writeHost's pool.
    pub backend: Arc<dyn Backend>,
    /// `sqlExecuteTimeout`, for [`WriteTarget::connect`].
    statement_timeout: Duration,
}

impl WriteTarget {
    /// A connection to the writeHost with the dataNode's database selected, every wait
    /// bounded by `sqlExecuteTimeout` as for statements.
    ///
    /// Errors: the server cannot be reached, the pool has no free connection in time, or the
    /// database cannot be selected.
    pub async fn connect(&self) -> Result<Box<dyn BackendConn>, BackendError> {
        let conn = self.backend.acquire(&self.database).await?;
        let mut conn = Deadline::new(conn, self.statement_timeout);
        conn.select_database(&self.database).await?;
        Ok(Box::new(conn))
    }
}

#[derive(Debug)]
struct DataNode {
    host: Arc<DataHost>,
    database: String,
}

/// The dataHosts a reload took out of service ([`Cluster::retired_in`]). They live on while a
/// statement or transaction that began before the reload still holds the old configuration;
/// their pools and heartbeats end when the last one lets go.
#[derive(Debug, Default, Clone)]
pub struct Retired(Vec<(String, std::sync::Weak<DataHost>)>);

impl Retired {
    /// The names of the retired dataHosts, in name order.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.0.iter().map(|(n, _)| n.as_str()).collect();
        names.sort();
        names
    }

    /// The names of the retired dataHosts still held by some session, in name order.
    pub fn draining(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .0
            .iter()
            .filter(|(_, w)| w.strong_count() > 0)
            .map(|(n, _)| n.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

/// Every dataHost and dataNode of a configuration.
#[derive(Debug)]
pub struct Cluster {
    hosts: Vec<Arc<DataHost>>,
    nodes: BTreeMap<String, DataNode>,
    heartbeat: heartbeat::Settings,
    /// `dnindex.properties`, shared with the clusters a reload builds from this one.
    dnindex: Arc<DnIndex>,
    /// `sqlExecuteTimeout`: the longest wait for a backend's answer on a connection handed out
    /// ([`crate::backend::deadline`]).
    statement_timeout: Duration,
}

impl Cluster {
    /// Builds the pools (no connection is opened here: a server that is down at start-up only
    /// fails the statements that need it). Each dataHost starts on the writeHost that
    /// `dnindex.properties` names (0 when absent); the file is written when it is missing or
    /// lacks a dataHost.
    ///
    /// Errors: the file cannot be read or written, or names an index the dataHost cannot use
    /// ([`ClusterError`]).
    pub fn new(config: &Config, timeouts: Timeouts) -> Result<Cluster, ClusterError> {
        let store = Arc::new(DnIndex {
            dir: config.dir.clone(),
            indexes: Mutex::new(BTreeMap::new()),
            switches: std::sync::atomic::AtomicU64::new(0),
            coordinated: AtomicBool::new(false),
            lease_ms: AtomicU64::new(0),
            contact_ms: AtomicU64::new(0),
        });
        let (cluster, _) = Cluster::build(config, timeouts, store, &BTreeMap::new(), false)?;
        cluster
            .save_dnindex()
            .map_err(|source| ClusterError::DnIndexFile {
                action: "write",
                path: config.dir.join(dnindex::FILE),
                source,
            })?;
        Ok(cluster)
    }

    /// Makes `dnindex.properties` list exactly this cluster's dataHosts at their active
    /// writeHost (written only when the file says otherwise). A reload calls it once the new
    /// cluster is in force: a switch of a kept dataHost after that writes the same list.
    ///
    /// Errors: the file cannot be read or written.
    pub fn save_dnindex(&self) -> std::io::Result<()> {
        // One lock over the comparison and the write: a switch cannot slip in between
        // (DnIndex::store takes the same lock).
        let mut current = self
            .dnindex
            .indexes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let indexes: BTreeMap<String, usize> = self
            .hosts
            .iter()
            .map(|h| (h.name.clone(), h.active_index()))
            .collect();
        if dnindex::load(&self.dnindex.dir)? != indexes {
            dnindex::save(&self.dnindex.dir, &indexes)?;
        }
        *current = indexes;
        Ok(())
    }

    /// The cluster of `config` for a reload (`reload @@config_all`, OPERATIONS.md §1): every
    /// dataHost whose settings, servers and dataNode databases are unchanged
    /// ([`DataHostConfig::same_as`]) is this cluster's own, with its pools, health, heartbeats
    /// and active writeHost; the others are built anew on the writeHost `dnindex.properties`
    /// names, and the file is rewritten without the dataHosts that are gone. Nothing is
    /// connected or started here: the caller tests the new dataHosts
    /// ([`Cluster::test_new_hosts`]) and starts their heartbeats ([`Cluster::start_heartbeats`]).
    /// Returns the cluster and the names of the dataHosts built anew.
    ///
    /// Errors: as [`Cluster::new`].
    pub fn reload(
        &self,
        config: &Config,
        timeouts: Timeouts,
    ) -> Result<(Cluster, Vec<String>), ClusterError> {
        let kept = self
            .hosts
            .iter()
            .map(|h| (h.name.clone(), h.clone()))
            .collect();
        Cluster::build(config, timeouts, self.dnindex.clone(), &kept, true)
    }

    fn build(
        config: &Config,
        timeouts: Timeouts,
        store: Arc<DnIndex>,
        kept: &BTreeMap<String, Arc<DataHost>>,
        reloading: bool,
    ) -> Result<(Cluster, Vec<String>), ClusterError> {
        let stored = dnindex::load(&config.dir).map_err(|source| ClusterError::DnIndexFile {
            action: "read",
            path: config.dir.join(dnindex::FILE),
            source,
        })?;
        let mut hosts: BTreeMap<&str, Arc<DataHost>> = BTreeMap::new();
        let mut built = Vec::new();
        for h in config.data_hosts.values() {
            let databases: Vec<String> = config
                .data_nodes
                .values()
                .filter(|n| n.data_host == h.name)
                .map(|n| n.database.clone())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            if let Some(old) = kept
                .get(&h.name)
                .filter(|old| old.config.same_as(h) && old.databases == databases)
            {
                hosts.insert(h.name.as_str(), old.clone());
                continue;
            }
            // A dataHost rebuilt by a reload starts where the one it replaces is now (a switch
            // made since the file was read is not lost); a new one where the file says.
            let mut index = kept
                .get(&h.name)
                .map(|old| old.active_index())
                .or_else(|| stored.get(&h.name).copied())
                .unwrap_or(0);
            if reloading && index >= h.write_hosts.len() {
                // Mycat's pool init tries the stored index, then the next ones, wrapping round
                // (SPEC §4.2): a dataHost that lost writeHosts starts within its list.
                tracing::warn!(data_host = %h.name, index, write_hosts = h.write_hosts.len(), "reload: the active writeHost index is beyond the dataHost's writeHosts: wrapped round");
                index %= h.write_hosts.len();
            }
            if index >= h.write_hosts.len() {
                return Err(ClusterError::IndexBeyond {
                    data_host: h.name.clone(),
                    index,
                    write_hosts: h.write_hosts.len(),
                });
            }
            // Mycat refuses to start a dataHost on any writeHost but the first when automatic
            // switching is off (SPEC §4.2); manx says so instead of leaving the host dead.
            if index != 0 && h.switch_type == -1 {
                return Err(ClusterError::NoSwitching {
                    data_host: h.name.clone(),
                    index,
                });
            }
            let host = DataHost::new(h, timeouts, store.clone(), databases);
            host.active.store(index, Ordering::Relaxed);
            tracing::info!(data_host = %h.name, index, write_host = %h.write_hosts[index].host.name, "active writeHost");
            hosts.insert(h.name.as_str(), Arc::new(host));
            built.push(h.name.clone());
        }
        let nodes = config
            .data_nodes
            .values()
            .filter_map(|n| {
                let host = hosts.get(n.data_host.as_str())?.clone();
                Some((
                    n.name.clone(),
                    DataNode {
                        host,
                        database: n.database.clone(),
                    },
                ))
            })
            .collect();
        let cluster = Cluster {
            hosts: hosts.into_values().collect(),
            nodes,
            heartbeat: heartbeat::Settings {
                period: Duration::from_millis(config.system.heartbeat_period_ms),
                timeout: Duration::from_millis(config.system.heartbeat_timeout_ms),
            },
            dnindex: store,
            statement_timeout: Duration::from_secs(config.system.sql_execute_timeout_s),
        };
        Ok((cluster, built))
    }

    /// Switches of an active writeHost since start (failovers and `switch @@datasource`, of
    /// this cluster and the ones it was reloaded from).
    pub fn switches(&self) -> u64 {
        self.dnindex.switches.load(Ordering::Relaxed)
    }

    /// The dataHosts of this cluster that `next` does not keep (a reload replaced or removed
    /// them), watched without being kept alive.
    pub fn retired_in(&self, next: &Cluster) -> Retired {
        Retired(
            self.hosts
                .iter()
                .filter(|h| !next.hosts.iter().any(|n| Arc::ptr_eq(h, n)))
                .map(|h| (h.name.clone(), Arc::downgrade(h)))
                .collect(),
        )
    }

    /// Tests each dataHost named in `names` before a reload swaps it in, as Mycat tests a
    /// reloaded dataHost's pool: `minCon` connections (at least one) to its active writeHost.
    /// Unlike Mycat's pool init, the next writeHosts are not tried: a writeHost that does not
    /// answer after a reload is most often a typo in its `url` or account, and moving the
    /// writes to the next writeHost (a replica, in most dataHosts) would split them between two
    /// servers. The reload is refused instead; `switch @@datasource` moves writes on purpose.
    ///
    /// Errors: one line per dataHost whose active writeHost cannot be reached (name, server,
    /// address, the driver's error).
    pub async fn test_new_hosts(&self, names: &[String]) -> Result<(), ClusterError> {
        let tasks = self
            .hosts
            .iter()
            .filter(|h| names.contains(&h.name))
            .map(|h| async move {
                let i = h.active_index();
                let source = &h.write_hosts[i].source;
                source
                    .backend
                    .warm_up(h.min_con.max(1))
                    .await
                    .map_err(|e| {
                        format!(
                            "dataHost {}: its active writeHost {i} {} ({}) cannot be reached: {e} (writes are not moved to another writeHost by a reload: fix the writeHost, or switch @@datasource first)",
                            h.name,
                            source.name,
                            source.backend.address()
                        )
                    })
            });
        let failed: Vec<String> = futures::future::join_all(tasks)
            .await
            .into_iter()
            .filter_map(Result::err)
            .collect();
        if failed.is_empty() {
            Ok(())
        } else {
            Err(ClusterError::Unreachable(failed))
        }
    }

    /// Opens `minCon` connections to every active writeHost (Mycat does this at pool init).
    /// A server that cannot be reached is logged, not fatal: it fails only the statements that
    /// need it. The future holds the pools only, not the cluster (a reload meanwhile must not
    /// see the dataHosts it replaces as still in use).
    pub fn warm_up(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let jobs: Vec<(String, String, Arc<dyn Backend>, usize)> = self
            .hosts
            .iter()
            .map(|h| {
                let source = h.active();
                (
                    h.name.clone(),
                    source.name.clone(),
                    source.backend.clone(),
                    h.min_con,
                )
            })
            .collect();
        async move {
            let tasks = jobs
                .iter()
                .map(|(data_host, host, backend, min_con)| async move {
                    if let Err(e) = backend.warm_up(*min_con).await {
                        tracing::warn!(
                            %data_host,
                            %host,
                            address = %backend.address(),
                            error = %e,
                            "cannot open minCon connections"
                        );
                    }
                });
            futures::future::join_all(tasks).await;
        }
    }

    /// Starts one heartbeat task per server of every dataHost that has a heartbeat statement
    /// (period `dataNodeHeartbeatPeriod`, timeout `heartbeatTimeout`), unless that dataHost's
    /// tasks already run (a dataHost a reload kept). The tasks end when their dataHost is
    /// dropped. Must run inside a tokio runtime.
    pub fn start_heartbeats(&self) {
        for h in &self.hosts {
            if !h.beating.swap(true, Ordering::AcqRel) {
                heartbeat::spawn(h, self.heartbeat);
            }
        }
    }

    /// [`Cluster::acquire_for`] with [`Intent::Read`] when `read_only`, else [`Intent::Write`].
    ///
    /// Errors: as [`Cluster::acquire_for`].
    pub async fn acquire(
        &self,
        node: &str,
        read_only: bool,
    ) -> Result<Box<dyn BackendConn>, DatahostError> {
        let intent = if read_only {
            Intent::Read
        } else {
            Intent::Write
        };
        self.acquire_for(node, intent).await
    }

    /// A connection for `node` with its database selected, on the server `intent` calls for
    /// (module documentation). A read whose server cannot be reached (refused, timed out, marked
    /// down meanwhile) is tried once more on another eligible server; a write never is.
    ///
    /// Errors: an unknown node; the chosen server is marked down by its heartbeat (only when no
    /// other server may take the statement); the server cannot be reached, the pool has no free
    /// connection in time, or the database cannot be selected — naming node, host and address.
    pub async fn acquire_for(
        &self,
        node: &str,
        intent: Intent,
    ) -> Result<Box<dyn BackendConn>, DatahostError> {
        let Some(n) = self.nodes.get(node) else {
            return Err(DatahostError {
                node: node.to_string(),
                data_host: String::new(),
                host: String::new(),
                address: String::new(),
                source: BackendError::Other(format!("dataNode {node} is not configured")),
            });
        };
        let first = n.host.choose(intent, None);
        let e = match connect(node, n, first, intent, self.statement_timeout).await {
            Ok(conn) => return Ok(conn),
            Err(e) => e,
        };
        // A read outside a transaction that cannot reach its server is tried once on another
        // eligible one (a replica that just died, before its heartbeat marks it down). Writes
        // are never retried silently.
        if intent == Intent::Write || e.source.is_answer() {
            return Err(e);
        }
        let second = n.host.choose(intent, Some(first));
        if std::ptr::eq(first, second) {
            return Err(e);
        }
        tracing::warn!(node, error = %e, next = %second.name, "read retried on another server");
        connect(node, n, second, intent, self.statement_timeout).await
    }

    /// A connection for `node` to run a read again after the connection to the server at
    /// `failed` (`host:port`, [`BackendConn::address`]) broke mid-statement: on another server
    /// eligible for `intent`, or on the same one when no other may take the read (a pooled
    /// connection the server dropped is then replaced by a fresh one). Only for reads outside a
    /// transaction: the caller never calls it for a write, which is never retried silently.
    ///
    /// Errors: as [`Cluster::acquire_for`].
    pub async fn acquire_instead(
        &self,
        node: &str,
        intent: Intent,
        failed: &str,
    ) -> Result<Box<dyn BackendConn>, DatahostError> {
        let Some(n) = self.nodes.get(node) else {
            return self.acquire_for(node, intent).await;
        };
        let excluded = n
            .host
            .sources()
            .map(|(_, s)| s)
            .find(|s| s.backend.address() == failed);
        let next = n.host.choose(intent, excluded);
        tracing::warn!(node, failed, next = %next.name, "read retried after its connection broke");
        connect(node, n, next, intent, self.statement_timeout).await
    }
}

/// A connection to `source` for dataNode `n`, its database selected, every wait on its server
/// bounded by `statement_timeout` ([`Deadline`]).
///
/// Errors: `source` is marked down, cannot be reached, has no free connection in time, or
/// cannot select the database; the error names node, dataHost, server and address. For
/// [`Intent::Write`], `source` is a PostgreSQL standby in recovery: 1290/HY000 (MySQL's
/// `ER_OPTION_PREVENTS_STATEMENT`, what a `read_only` MySQL server answers) naming the
/// dataNode, dataHost and server, rather than sending the write to a server that refuses it.
async fn connect(
    node: &str,
    n: &DataNode,
    source: &Source,
    intent: Intent,
    statement_timeout: Duration,
) -> Result<Box<dyn BackendConn>, DatahostError> {
    let fail = |source_err: BackendError| DatahostError {
        node: node.to_string(),
        data_host: n.host.name.clone(),
        host: source.name.clone(),
        address: source.backend.address().to_string(),
        source: source_err,
    };
    let status = source.health.status();
    if status.is_down() {
        return Err(fail(BackendError::Closed(format!(
            "the server is marked down by its heartbeat ({status:?} for {} ms)",
            source.health.since().elapsed().as_millis()
        ))));
    }
    if intent == Intent::Write
        && let Some(silent) = n.host.dnindex.lease_expired()
    {
        return Err(fail(BackendError::refused(
            1290,
            "HY000",
            format!(
                "dataNode {node} (dataHost {}): cluster mode: no contact with ZooKeeper for {silent} ms (zkWriteLease {} ms); writes are refused until it is back, so that this instance cannot write to a writeHost the others may have left",
                n.host.name,
                n.host.dnindex.lease_ms.load(Ordering::Relaxed)
            ),
        )));
    }
    if intent == Intent::Write && source.health.in_recovery() {
        return Err(fail(BackendError::refused(
            1290,
            "HY000",
            format!(
                "dataNode {node} (dataHost {}): writeHost {} ({}) is a read-only PostgreSQL standby (pg_is_in_recovery() is true) and no writable writeHost is active; writes resume when a standby is promoted or the primary returns",
                n.host.name,
                source.name,
                source.backend.address()
            ),
        )));
    }
    let conn = source.backend.acquire(&n.database).await.map_err(fail)?;
    let counter = if intent == Intent::Write {
        &source.writes
    } else {
        &source.reads
    };
    counter.fetch_add(1, Ordering::Relaxed);
    let mut conn = Deadline::new(conn, statement_timeout);
    conn.select_database(&n.database).await.map_err(fail)?;
    if intent == Intent::Write && n.host.dnindex.coordinated.load(Ordering::Acquire) {
        conn.track_writes(n.host.acked.clone());
    }
    Ok(Box::new(conn))
}
