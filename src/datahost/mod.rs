//! The datahost layer: which physical server answers a statement for a dataNode.
//!
//! Each dataHost has its writeHosts (each with readHosts), one pool per physical server, and an
//! active writeHost index. Routing calls [`Cluster::acquire`] with a dataNode and whether the
//! statement only reads; the connection comes back with the dataNode's database selected.
//!
//! Today every statement goes to the active writeHost (Mycat `balance="0"`); read/write
//! splitting, heartbeats and failover build on this interface.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::backend::mysql::{MysqlBackend, MysqlSettings};
use crate::backend::postgres::{PostgresBackend, PostgresSettings};
use crate::backend::{Backend, BackendConn, BackendError};
use crate::config::{Config, DataHostConfig, DbType, HostConfig, dnindex};

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

/// One physical server of a dataHost.
#[derive(Debug)]
struct Source {
    name: String,
    backend: Arc<dyn Backend>,
}

/// A `<dataHost>`: its writeHosts' pools and which one is active.
#[derive(Debug)]
pub struct DataHost {
    name: String,
    write_hosts: Vec<Source>,
    active: AtomicUsize,
    min_con: usize,
}

impl DataHost {
    /// `databases`: the databases of this dataHost's dataNodes (a PostgreSQL server pools
    /// connections per database).
    fn new(config: &DataHostConfig, timeouts: Timeouts, databases: Vec<String>) -> Self {
        let write_hosts = config
            .write_hosts
            .iter()
            .map(|w| Source {
                name: w.host.name.clone(),
                backend: backend(config, &w.host, timeouts, &databases),
            })
            .collect();
        if config.balance != 0 {
            tracing::warn!(
                data_host = %config.name,
                balance = config.balance,
                "read/write splitting is not implemented yet: every statement goes to the active writeHost"
            );
        }
        tracing::info!(
            data_host = %config.name,
            balance = config.balance,
            write_type = config.write_type,
            switch_type = config.switch_type,
            "dataHost settings in effect"
        );
        DataHost {
            name: config.name.clone(),
            write_hosts,
            active: AtomicUsize::new(0),
            min_con: config.min_con,
        }
    }

    fn active(&self) -> &Source {
        &self.write_hosts[self.active.load(Ordering::Relaxed) % self.write_hosts.len()]
    }
}

/// The pool for one physical server, by the dataHost's `dbType` (`dbDriver` native and jdbc
/// both mean manx's own driver).
fn backend(
    config: &DataHostConfig,
    host: &HostConfig,
    timeouts: Timeouts,
    databases: &[String],
) -> Arc<dyn Backend> {
    match config.db_type {
        DbType::Mysql => Arc::new(MysqlBackend::new(MysqlSettings {
            host: host.address.clone(),
            port: host.port,
            user: host.user.clone(),
            password: host.password.clone(),
            max_connections: config.max_con,
            connect_timeout: timeouts.connect,
            wait_timeout: timeouts.pool_wait,
        })),
        DbType::Postgresql => Arc::new(PostgresBackend::new(PostgresSettings {
            host: host.address.clone(),
            port: host.port,
            user: host.user.clone(),
            password: host.password.clone(),
            max_connections: config.max_con,
            connect_timeout: timeouts.connect,
            wait_timeout: timeouts.pool_wait,
            databases: databases.to_vec(),
        })),
    }
}

#[derive(Debug)]
struct DataNode {
    host: Arc<DataHost>,
    database: String,
}

/// Every dataHost and dataNode of a configuration.
#[derive(Debug)]
pub struct Cluster {
    hosts: Vec<Arc<DataHost>>,
    nodes: BTreeMap<String, DataNode>,
}

impl Cluster {
    /// Builds the pools (no connection is opened here: a server that is down at start-up only
    /// fails the statements that need it). Each dataHost starts on the writeHost that
    /// `dnindex.properties` names (0 when absent); the file is written when it is missing or
    /// lacks a dataHost.
    ///
    /// Errors: the file cannot be read or written, or names an index the dataHost cannot use.
    pub fn new(config: &Config, timeouts: Timeouts) -> Result<Cluster, String> {
        let stored = dnindex::load(&config.dir).map_err(|e| {
            format!(
                "cannot read {}: {e}",
                config.dir.join(dnindex::FILE).display()
            )
        })?;
        let mut hosts: BTreeMap<&str, Arc<DataHost>> = BTreeMap::new();
        let mut indexes = BTreeMap::new();
        for h in config.data_hosts.values() {
            let index = stored.get(&h.name).copied().unwrap_or(0);
            if index >= h.write_hosts.len() {
                return Err(format!(
                    "{}: dataHost {} has active writeHost index {index}, but only {} writeHost(s)",
                    dnindex::FILE,
                    h.name,
                    h.write_hosts.len()
                ));
            }
            // Mycat refuses to start a dataHost on any writeHost but the first when automatic
            // switching is off (SPEC §4.2); manx says so instead of leaving the host dead.
            if index != 0 && h.switch_type == -1 {
                return Err(format!(
                    "{}: dataHost {} has active writeHost index {index}, but switchType=-1 only allows writeHost 0",
                    dnindex::FILE,
                    h.name
                ));
            }
            let databases = config
                .data_nodes
                .values()
                .filter(|n| n.data_host == h.name)
                .map(|n| n.database.clone())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let host = DataHost::new(h, timeouts, databases);
            host.active.store(index, Ordering::Relaxed);
            tracing::info!(data_host = %h.name, index, write_host = %h.write_hosts[index].host.name, "active writeHost");
            indexes.insert(h.name.clone(), index);
            hosts.insert(h.name.as_str(), Arc::new(host));
        }
        if indexes != stored {
            dnindex::save(&config.dir, &indexes).map_err(|e| {
                format!(
                    "cannot write {}: {e}",
                    config.dir.join(dnindex::FILE).display()
                )
            })?;
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
        Ok(Cluster {
            hosts: hosts.into_values().collect(),
            nodes,
        })
    }

    /// Opens `minCon` connections to every active writeHost (Mycat does this at pool init).
    /// A server that cannot be reached is logged, not fatal: it fails only the statements that
    /// need it.
    pub async fn warm_up(&self) {
        let tasks = self.hosts.iter().map(|h| async move {
            let source = h.active();
            if let Err(e) = source.backend.warm_up(h.min_con).await {
                tracing::warn!(
                    data_host = %h.name,
                    host = %source.name,
                    address = %source.backend.address(),
                    error = %e,
                    "cannot open minCon connections"
                );
            }
        });
        futures::future::join_all(tasks).await;
    }

    /// A connection for `node` with its database selected. `read_only` states the statement's
    /// intent (used by read/write splitting).
    ///
    /// Errors: an unknown node, or the server cannot be reached / the pool has no free
    /// connection in time / the database cannot be selected — naming node, host and address.
    pub async fn acquire(
        &self,
        node: &str,
        read_only: bool,
    ) -> Result<Box<dyn BackendConn>, DatahostError> {
        let _ = read_only;
        let Some(n) = self.nodes.get(node) else {
            return Err(DatahostError {
                node: node.to_string(),
                data_host: String::new(),
                host: String::new(),
                address: String::new(),
                source: BackendError::Other(format!("dataNode {node} is not configured")),
            });
        };
        let source = n.host.active();
        let fail = |source_err: BackendError| DatahostError {
            node: node.to_string(),
            data_host: n.host.name.clone(),
            host: source.name.clone(),
            address: source.backend.address().to_string(),
            source: source_err,
        };
        let mut conn = source.backend.acquire().await.map_err(fail)?;
        conn.select_database(&n.database).await.map_err(fail)?;
        Ok(conn)
    }
}
