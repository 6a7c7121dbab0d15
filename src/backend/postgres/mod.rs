//! PostgreSQL backend on `tokio-postgres`, pooled with `deadpool`, for MySQL clients.
//!
//! **Databases.** A PostgreSQL connection belongs to one database for its whole life, so
//! `select_database` cannot switch it. The backend therefore keeps one pool per database of
//! the server (each at most `maxCon` connections, created on first use), and the connection
//! handed out by [`Backend::acquire`] is a handle that takes a real connection from the pool
//! of the database that [`BackendConn::select_database`] names (the datahost layer always
//! selects the dataNode's database first). Selecting another database returns the held
//! connection to its pool and takes one of the other database's.
//!
//! **Statements.** Each statement arrives in MySQL's dialect and is translated
//! ([`dialect`]). A statement that returns rows is described (Parse/Describe: the column
//! types) and run with the simple query protocol in one pipelined round trip: its rows come
//! in PostgreSQL's text form, which is MySQL's text protocol form for most types ([`types`]
//! converts the rest), so no binary decoding is needed and every type, arrays and extension
//! types included, reaches the client as text. Rows are read from the socket as the client
//! consumes them (tokio-postgres hands each response to a channel of one message and stops
//! reading while it is full), so a large result keeps memory bounded just as a portal would.
//! The columns' table name and `NOT_NULL`/`PRI_KEY`/`AUTO_INCREMENT` flags come from the
//! catalog, looked up (in the same round trip) the first time a connection reads a table; the
//! table is its name, not the alias the statement gives it.
//!
//! **Session state.** Connections are opened with `DateStyle=ISO, YMD`, `bytea_output=hex`,
//! `standard_conforming_strings=on` and UTF-8; on return to the pool an open transaction is
//! rolled back and session state reset (`RESET ALL`, temporary tables, advisory locks,
//! cursors, LISTENs) — PostgreSQL's `DISCARD ALL` minus the prepared statements that
//! tokio-postgres keeps for type lookups — unless it only ran statements that leave nothing
//! behind ([`crate::backend::stateless`]), as MySQL connections are.
//!
//! **Ordering.** Cross-node merges compare string sort keys by the bytes of
//! `WEIGHT_STRING(RTRIM(x))`, translated to the UTF-8 bytes of `rtrim(x)`. These agree with
//! the node's `ORDER BY x` when the database's collation is `C` (byte order); under any other
//! collation the nodes' order and the merge's could differ, so PostgreSQL shards should use
//! `C` (the sandbox does). MySQL's `_ci` collations order case-insensitively (`a` < `B`),
//! byte order does not (`B` < `a`): a PostgreSQL-backed table orders strings like a MySQL
//! `utf8mb4_bin` column.

pub mod dialect;
pub mod error;
pub mod types;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use deadpool::managed::{self, Metrics, Pool, PoolError, RecycleError, RecycleResult};
use futures::StreamExt;
use tokio_postgres::{NoTls, SimpleQueryMessage};

use super::grants::{self, ExcessPrivilege};
use super::{
    Backend, BackendConn, BackendError, Column, ColumnFlags, OkInfo, Response, Row, SavepointOp,
    StringWeights, Xid,
};
use dialect::TableInfo;
use types::{Conversion, Mapped};

mod conn;
mod handle;
mod statement;
use conn::{Conn, PgCancel, STATEMENT_SAVEPOINT, StatementGuard};
use handle::{Held, PgConn};
use statement::{
    catalog_facts, dialect_error, flags_lookup, map_columns, record_flags, run_statement, unlooked,
};

/// How to reach one PostgreSQL server and how its pools behave.
#[derive(Debug, Clone)]
pub struct PostgresSettings {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    /// Pool size per database (`maxCon`).
    pub max_connections: usize,
    /// Longest wait for the TCP connect, authentication and start-up of a new connection.
    pub connect_timeout: Duration,
    /// Longest wait for a free connection when a pool is full.
    pub wait_timeout: Duration,
    /// The databases of this server's dataNodes: `warm_up` opens connections to each.
    pub databases: Vec<String>,
}

/// A pooled PostgreSQL server (one pool per database).
pub struct PostgresBackend {
    shared: Arc<Shared>,
}

struct Shared {
    address: String,
    settings: PostgresSettings,
    pools: Mutex<HashMap<String, Pool<Manager>>>,
}

impl std::fmt::Debug for PostgresBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresBackend")
            .field("address", &self.shared.address)
            .finish()
    }
}

impl PostgresBackend {
    /// Pools that open connections on demand (none is opened here).
    pub fn new(settings: PostgresSettings) -> Self {
        let address = format!("{}:{}", settings.host, settings.port);
        PostgresBackend {
            shared: Arc::new(Shared {
                address,
                settings,
                pools: Mutex::new(HashMap::new()),
            }),
        }
    }
}

impl Shared {
    fn pool(&self, database: &str) -> Pool<Manager> {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        pools
            .entry(database.to_string())
            .or_insert_with(|| {
                let s = &self.settings;
                let mut config = tokio_postgres::Config::new();
                config
                    .host(&s.host)
                    .port(s.port)
                    .user(&s.user)
                    .password(s.password.as_bytes())
                    .dbname(database)
                    .application_name("manx")
                    .connect_timeout(s.connect_timeout)
                    .options(
                        "-c DateStyle=ISO,YMD -c bytea_output=hex -c standard_conforming_strings=on -c IntervalStyle=postgres",
                    );
                let manager = Manager {
                    config,
                    connect_timeout: s.connect_timeout,
                    address: format!("{}/{database}", self.address),
                };
                Pool::builder(manager)
                    .max_size(s.max_connections.max(1))
                    .wait_timeout(Some(s.wait_timeout))
                    .create_timeout(Some(s.connect_timeout))
                    .recycle_timeout(Some(s.connect_timeout))
                    .runtime(deadpool::Runtime::Tokio1)
                    .build()
                    .expect("a runtime and a positive size are always given")
            })
            .clone()
    }

    async fn get(&self, database: &str) -> Result<managed::Object<Manager>, BackendError> {
        let pool = self.pool(database);
        pool.get().await.map_err(|e| self.pool_error(e, database))
    }

    fn pool_error(&self, e: PoolError<BackendError>, database: &str) -> BackendError {
        match e {
            PoolError::Backend(e) => e,
            PoolError::Timeout(kind) => BackendError::Timeout(format!(
                "no connection to {} database {database} within the time limit ({kind:?}): pool exhausted or server not answering",
                self.address
            )),
            other => BackendError::Other(format!(
                "pool of {} database {database}: {other}",
                self.address
            )),
        }
    }
}

#[async_trait]
impl Backend for PostgresBackend {
    /// The connection is taken from `database`'s pool by [`BackendConn::select_database`]
    /// (a PostgreSQL connection cannot change its database).
    async fn acquire(&self, _database: &str) -> Result<Box<dyn BackendConn>, BackendError> {
        Ok(Box::new(PgConn {
            track: None,
            shared: self.shared.clone(),
            conn: None,
        }))
    }

    async fn warm_up(&self, connections: usize) -> Result<(), BackendError> {
        for database in &self.shared.settings.databases {
            let pool = self.shared.pool(database);
            let missing = connections.saturating_sub(pool.status().size);
            let opened = futures::future::join_all((0..missing).map(|_| pool.get())).await;
            for o in opened {
                drop(o.map_err(|e| self.shared.pool_error(e, database))?);
            }
        }
        Ok(())
    }

    /// For the heartbeat: a connection to the first dataNode's database (a statement needs one
    /// selected), opened beside its pool: it counts against no `maxCon`, so clients keep every
    /// pooled connection and a pool exhausted by clients cannot fail the heartbeat.
    async fn connect(&self) -> Result<Box<dyn BackendConn>, BackendError> {
        use managed::Manager as _;
        let database = match self.shared.settings.databases.first() {
            Some(db) => db.clone(),
            None => self.shared.settings.user.clone(),
        };
        let conn = self.shared.pool(&database).manager().create().await?;
        Ok(Box::new(PgConn {
            track: None,
            shared: self.shared.clone(),
            conn: Some(Held::Direct(conn)),
        }))
    }

    fn close_idle(&self) {
        let pools = self.shared.pools.lock().unwrap_or_else(|p| p.into_inner());
        for pool in pools.values() {
            pool.retain(|_, _| false);
        }
    }

    fn address(&self) -> &str {
        &self.shared.address
    }

    fn size(&self) -> usize {
        let pools = self.shared.pools.lock().unwrap_or_else(|p| p.into_inner());
        pools.values().map(|p| p.status().size).sum()
    }

    fn in_use(&self) -> usize {
        let pools = self.shared.pools.lock().unwrap_or_else(|p| p.into_inner());
        pools
            .values()
            .map(|p| {
                let s = p.status();
                s.size.saturating_sub(s.available)
            })
            .sum()
    }
}

#[derive(Debug)]
struct Manager {
    config: tokio_postgres::Config,
    connect_timeout: Duration,
    address: String,
}

impl managed::Manager for Manager {
    type Type = Conn;
    type Error = BackendError;

    async fn create(&self) -> Result<Conn, BackendError> {
        let connect = self.config.connect(NoTls);
        match tokio::time::timeout(self.connect_timeout, connect).await {
            Ok(Ok((client, connection))) => {
                let address = self.address.clone();
                tokio::spawn(async move {
                    if let Err(e) = connection.await {
                        tracing::debug!(%address, error = %e, "PostgreSQL connection ended");
                    }
                });
                Ok(Conn {
                    canceller: Arc::new(PgCancel(client.cancel_token())),
                    client,
                    database: self.config.get_dbname().unwrap_or_default().to_string(),
                    tables: HashMap::new(),
                    flags_looked_up: Default::default(),
                    flags: HashMap::new(),
                    dirty: false,
                    used: false,
                    inherited: false,
                    guard: StatementGuard::default(),
                })
            }
            Ok(Err(e)) => Err(match error::convert(e) {
                server @ BackendError::Server { .. } => server,
                other => {
                    BackendError::Closed(format!("cannot connect to {}: {other}", self.address))
                }
            }),
            Err(_) => Err(BackendError::Timeout(format!(
                "cannot connect to {}: no answer within {} ms",
                self.address,
                self.connect_timeout.as_millis()
            ))),
        }
    }

    async fn recycle(&self, conn: &mut Conn, _: &Metrics) -> RecycleResult<BackendError> {
        if conn.client.is_closed() {
            return Err(RecycleError::Backend(BackendError::Closed(
                "connection to the server is closed".into(),
            )));
        }
        // A connection that only ran stateless statements since its last reset is handed out as
        // it is (no round trip); a statement that may read session state resets it first.
        if !conn.dirty {
            conn.inherited = conn.used;
            return Ok(());
        }
        conn.reset().await.map_err(RecycleError::Backend)
    }
}
