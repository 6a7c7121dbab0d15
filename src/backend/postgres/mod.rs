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

/// A live connection to one database, with what it learned about that database's tables
/// (forgotten after DDL on the connection).
struct Conn {
    client: tokio_postgres::Client,
    /// Interrupts its statements (made once: handed out for every statement).
    canceller: Arc<PgCancel>,
    database: String,
    tables: HashMap<String, TableInfo>,
    /// Relation names whose column flags were looked up (found or not).
    flags_looked_up: std::collections::HashSet<String>,
    /// Table oid → (name, column number → what the catalog says of the column).
    flags: HashMap<u32, (String, HashMap<i16, CatalogColumn>)>,
    /// A statement that may have left session state ran since the last reset: reset before the
    /// next holder (see [`crate::backend::stateless`]).
    dirty: bool,
    /// A statement ran since the last reset.
    used: bool,
    /// Handed out without a reset after another holder used it: a statement that may read
    /// session state (`lastval()`, settings) gets a reset first.
    inherited: bool,
    /// Statement-level rollback, as MySQL has it (see [`StatementGuard`]).
    guard: StatementGuard,
}

/// The savepoint each statement of a transaction block runs under.
const STATEMENT_SAVEPOINT: &str = "manx_statement";

/// MySQL undoes a failed statement and keeps its transaction; PostgreSQL aborts the whole
/// transaction (every later statement fails with 25P02 until ROLLBACK). So inside a
/// transaction block each statement runs under a savepoint, set in the same packet as the
/// statement (`RELEASE SAVEPOINT manx_statement; SAVEPOINT manx_statement`: no round trip, the
/// depth stays one), and a failed statement is rolled back to it — except a deadlock or
/// serialization failure (MySQL 1213), which ends the whole transaction as InnoDB's deadlock
/// victim does. What the savepoints cost: one more message per statement, and a
/// subtransaction per writing statement (past 64 in one transaction PostgreSQL's subxid cache
/// overflows and its snapshots get slower, as with pgjdbc's `autosave`).
#[derive(Debug, Default)]
struct StatementGuard {
    /// In a transaction block (START TRANSACTION/BEGIN ran, no COMMIT/ROLLBACK since).
    in_transaction: bool,
    /// The statement savepoint exists.
    savepoint: bool,
    /// A statement's rows failed after they began to stream: the transaction must be rolled
    /// back to the savepoint before anything else runs on it.
    failed: Arc<std::sync::atomic::AtomicBool>,
}

impl StatementGuard {
    /// Follows the transaction-control statements (MySQL text); `true` when `mysql` is one, or
    /// a `SET` (PostgreSQL's `SET TRANSACTION` must come before any statement, a savepoint
    /// included), and so runs without a savepoint.
    fn control(&mut self, mysql: &str) -> bool {
        let word = crate::sqltext::first_keyword(mysql);
        let is = |k: &str| word.eq_ignore_ascii_case(k);
        if is("START") || is("BEGIN") {
            self.in_transaction = true;
            self.savepoint = false;
            self.failed
                .store(false, std::sync::atomic::Ordering::Relaxed);
        } else if (is("COMMIT") || is("ROLLBACK"))
            && !crate::sqltext::contains_ignore_ascii_case(mysql, "SAVEPOINT")
        {
            self.end();
        }
        is("START")
            || is("BEGIN")
            || is("COMMIT")
            || is("ROLLBACK")
            || is("SAVEPOINT")
            || is("RELEASE")
            || is("SET")
            || is("XA")
    }

    /// The transaction ended.
    fn end(&mut self) {
        self.in_transaction = false;
        self.savepoint = false;
        self.failed
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// What to send in front of a statement of the transaction, or `None` outside one.
    fn prefix(&mut self) -> Option<String> {
        if !self.in_transaction {
            return None;
        }
        let sql = if self.savepoint {
            format!("RELEASE SAVEPOINT {STATEMENT_SAVEPOINT}; SAVEPOINT {STATEMENT_SAVEPOINT}")
        } else {
            format!("SAVEPOINT {STATEMENT_SAVEPOINT}")
        };
        self.savepoint = true;
        Some(sql)
    }
}

/// A table column as the catalog describes it to MySQL clients: its flags (NOT NULL, key,
/// auto-increment) and its declared MySQL type, when the PostgreSQL type does not show it.
type CatalogColumn = (ColumnFlags, Option<types::Declared>);

/// What DISCARD ALL does, without deallocating tokio-postgres's own prepared statements.
const RESET: &str = "ROLLBACK; RESET ALL; DISCARD TEMP; DISCARD SEQUENCES; CLOSE ALL; UNLISTEN *; SELECT pg_advisory_unlock_all()";

impl Conn {
    /// Clears what earlier statements left on the connection ([`RESET`]).
    async fn reset(&mut self) -> Result<(), BackendError> {
        self.client
            .batch_execute(RESET)
            .await
            .map_err(error::convert)?;
        self.dirty = false;
        self.used = false;
        self.inherited = false;
        self.guard.end();
        Ok(())
    }

    /// Undoes the failed statement of a transaction block as MySQL would ([`StatementGuard`]):
    /// back to the statement savepoint, or, for a deadlock or serialization failure, the whole
    /// transaction. Without a transaction block there is nothing to undo.
    async fn undo_statement(&mut self, error: &BackendError) {
        if !self.guard.savepoint {
            return;
        }
        self.guard
            .failed
            .store(false, std::sync::atomic::Ordering::Relaxed);
        let whole = error
            .server_error()
            .is_some_and(|(code, _, _)| code == 1213);
        let sql = if whole {
            self.guard.end();
            "ROLLBACK".to_string()
        } else {
            format!("ROLLBACK TO SAVEPOINT {STATEMENT_SAVEPOINT}")
        };
        if let Err(e) = self.client.batch_execute(&sql).await {
            tracing::debug!(error = %e, "undoing a failed statement");
        }
    }

    /// Before a statement: a failure that came while rows streamed is undone first.
    async fn undo_streamed_failure(&mut self) {
        if self
            .guard
            .failed
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            let sql = format!("ROLLBACK TO SAVEPOINT {STATEMENT_SAVEPOINT}");
            if let Err(e) = self.client.batch_execute(&sql).await {
                tracing::debug!(error = %e, "undoing a statement whose rows failed");
            }
        }
    }

    /// Called before each statement with its MySQL text: marks what it may leave behind, and
    /// resets first when it may read state a previous holder left.
    async fn before(&mut self, mysql: &str) -> Result<(), BackendError> {
        let stateless = crate::backend::stateless::is_stateless(mysql);
        if !stateless && self.inherited {
            self.reset().await?;
        }
        self.inherited &= stateless;
        self.used = true;
        self.dirty |= !stateless;
        Ok(())
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

/// Interrupts a PostgreSQL connection's statement with the protocol's cancel request.
struct PgCancel(tokio_postgres::CancelToken);

impl std::fmt::Debug for PgCancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PgCancel")
    }
}

#[async_trait]
impl super::Canceller for PgCancel {
    async fn cancel(&self) -> Result<(), BackendError> {
        self.0.cancel_query(NoTls).await.map_err(error::convert)
    }
}

/// The handle [`PostgresBackend::acquire`] returns: holds a connection of the selected
/// database's pool (or, for the heartbeat, one opened beside the pools).
struct PgConn {
    shared: Arc<Shared>,
    conn: Option<Held>,
    /// Where the WAL positions of this holder's writes go ([`BackendConn::track_writes`]).
    track: Option<Arc<super::position::Acked>>,
}

/// A connection checked out of a pool, or one opened beside the pools ([`Backend::connect`]).
enum Held {
    Pooled(managed::Object<Manager>),
    Direct(Conn),
}

impl std::ops::Deref for Held {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        match self {
            Held::Pooled(o) => o,
            Held::Direct(c) => c,
        }
    }
}

impl std::ops::DerefMut for Held {
    fn deref_mut(&mut self) -> &mut Conn {
        match self {
            Held::Pooled(o) => o,
            Held::Direct(c) => c,
        }
    }
}

impl PgConn {
    /// Tracked: reads `pg_current_wal_insert_lsn()` after a write or commit (at or past its
    /// commit record once the commit returned) into the dataHost's acknowledged position.
    ///
    /// Errors: the connection broke (the write is then not acknowledged).
    async fn record_lsn(&mut self) -> Result<(), BackendError> {
        let Some(acked) = self.track.clone() else {
            return Ok(());
        };
        let conn = self.conn().await?;
        let messages = conn
            .client
            .simple_query("SELECT pg_current_wal_insert_lsn()")
            .await
            .map_err(error::convert)?;
        for m in messages {
            if let SimpleQueryMessage::Row(row) = m
                && let Some(lsn) = row.get(0)
            {
                acked.record(lsn);
            }
        }
        Ok(())
    }

    async fn conn(&mut self) -> Result<&mut Conn, BackendError> {
        if self.conn.is_none() {
            // No database selected: the user's default database, as PostgreSQL's libpq does.
            let database = self.shared.settings.user.clone();
            self.conn = Some(Held::Pooled(self.shared.get(&database).await?));
        }
        Ok(self.conn.as_mut().expect("set above"))
    }

    /// Sends one transaction-control statement as is (not through the MySQL dialect), marking
    /// the connection for a reset before its next holder.
    async fn raw(&mut self, sql: &str) -> Result<(), BackendError> {
        let conn = self.conn().await?;
        conn.dirty = true;
        conn.guard.control(sql);
        conn.client.batch_execute(sql).await.map_err(error::convert)
    }

    /// Ends the open transaction with `end` (`COMMIT` or `PREPARE TRANSACTION '<gid>'`), or
    /// fails when an earlier error aborted it. PostgreSQL answers either statement in an
    /// aborted transaction by rolling back, without an error (the command tag says `ROLLBACK`,
    /// which tokio-postgres does not expose): the `SELECT 1` sent in front, in the same
    /// packet, fails there with 25P02 instead, and `end` is not run. The connection needs a
    /// reset only after a failure.
    async fn end_checked(&mut self, end: &str) -> Result<(), BackendError> {
        let conn = self.conn().await?;
        // A statement whose rows failed is undone, as MySQL undoes it; the rest commits.
        conn.undo_streamed_failure().await;
        conn.guard.end();
        let ended = conn
            .client
            .batch_execute(&format!("SELECT 1; {end}"))
            .await
            .map_err(error::convert);
        if ended.is_err() {
            conn.dirty = true;
        }
        ended
    }
}

#[async_trait]
impl BackendConn for PgConn {
    fn address(&self) -> &str {
        &self.shared.address
    }

    fn canceller(&self) -> Option<Arc<dyn super::Canceller>> {
        let conn: &Conn = self.conn.as_ref()?;
        Some(conn.canceller.clone())
    }

    fn track_writes(&mut self, acked: Arc<super::position::Acked>) {
        self.track = Some(acked);
    }

    /// `ALTER SYSTEM SET default_transaction_read_only = on` and `pg_reload_conf()` (each on
    /// its own: `ALTER SYSTEM` refuses a transaction block), then `pg_terminate_backend` of
    /// every other session of this account; sent as is, not through the MySQL dialect.
    async fn fence(&mut self) -> Result<(Result<(), String>, usize), BackendError> {
        let conn = self.conn().await?;
        conn.dirty = true;
        let client = &conn.client;
        let mut read_only = Ok(());
        for sql in [
            "ALTER SYSTEM SET default_transaction_read_only = on",
            "SELECT pg_reload_conf()",
        ] {
            if let Err(e) = client.batch_execute(sql).await {
                if e.as_db_error().is_none() {
                    return Err(error::convert(e));
                }
                read_only = Err(error::convert(e).to_string());
                break;
            }
        }
        let messages = client
            .simple_query(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE usename = current_user AND pid <> pg_backend_pid()",
            )
            .await
            .map_err(error::convert)?;
        let ended = messages
            .iter()
            .find_map(|m| match m {
                SimpleQueryMessage::Row(r) => r.get(0).and_then(|v| v.parse().ok()),
                _ => None,
            })
            .unwrap_or(0);
        Ok((read_only, ended))
    }

    async fn unfence(&mut self) -> Result<(), BackendError> {
        let conn = self.conn().await?;
        conn.dirty = true;
        for sql in [
            "ALTER SYSTEM RESET default_transaction_read_only",
            "SELECT pg_reload_conf()",
        ] {
            conn.client
                .batch_execute(sql)
                .await
                .map_err(error::convert)?;
        }
        Ok(())
    }

    /// Takes the connection out of its pool and closes it.
    fn abandon(&mut self) {
        if let Some(Held::Pooled(o)) = self.conn.take() {
            drop(managed::Object::take(o));
        }
    }

    async fn select_database(&mut self, database: &str) -> Result<(), BackendError> {
        if self.conn.as_ref().is_some_and(|c| c.database == database) {
            return Ok(());
        }
        // Return the held connection before waiting for another pool's.
        self.conn = None;
        self.conn = Some(Held::Pooled(self.shared.get(database).await?));
        Ok(())
    }

    /// Translates the statement with each `?` as `NULL` and has PostgreSQL describe it
    /// (Parse/Describe, nothing runs): the number of `?`s, and the result columns mapped as a
    /// query's are (none for a statement that returns no rows).
    ///
    /// Errors: a statement that does not translate, or that PostgreSQL cannot prepare.
    async fn describe(&mut self, sql: &str) -> Result<(usize, Vec<Column>), BackendError> {
        let conn = self.conn().await?;
        let (translation, params) =
            dialect::translate_for_describe(sql, &conn.database).map_err(dialect_error)?;
        let (info, booleans) = catalog_facts(conn, &translation).await?;
        let finished = translation
            .finish(info.as_ref(), &booleans)
            .map_err(dialect_error)?;
        if !finished.returns_rows || finished.sql.is_empty() {
            return Ok((params, Vec::new()));
        }
        // Preparing may fail and, in a transaction, abort it: mark the connection for a reset.
        conn.dirty = true;
        let missing = unlooked(conn, &finished);
        let client = &conn.client;
        let catalog = flags_lookup(client, &missing);
        let (statement, catalog) =
            futures::future::join(client.prepare(&finished.sql), catalog).await;
        let statement = statement.map_err(error::convert)?;
        let catalog = catalog.map_err(error::convert)?;
        record_flags(conn, catalog, missing);
        let columns = map_columns(conn, &statement)
            .into_iter()
            .map(|m| m.column)
            .collect();
        Ok((params, columns))
    }

    /// The dialect translates `WEIGHT_STRING(RTRIM(x))` to the UTF-8 bytes of `rtrim(x)`.
    fn string_weights(&self) -> StringWeights {
        StringWeights::Utf8Bytes
    }

    /// `SELECT pg_is_in_recovery()`, sent as is (not through the MySQL dialect translation).
    async fn in_recovery(&mut self) -> Result<Option<bool>, BackendError> {
        let conn = self.conn().await?;
        let messages = conn
            .client
            .simple_query("SELECT pg_is_in_recovery()")
            .await
            .map_err(error::convert)?;
        let value = messages.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(row) => row.get(0).map(|v| v == "t"),
            _ => None,
        });
        match value {
            Some(v) => Ok(Some(v)),
            None => Err(BackendError::Other(
                "SELECT pg_is_in_recovery() returned no row".to_string(),
            )),
        }
    }

    /// The client's savepoint statement in PostgreSQL's syntax (the name double-quoted), sent
    /// as is, beside the statement savepoint of [`StatementGuard`]. PostgreSQL's `ROLLBACK TO`
    /// and `RELEASE` destroy every savepoint set after theirs, so a client's savepoint must
    /// never be set above `manx_statement`, which the next statement releases: `SAVEPOINT` is
    /// sent as `RELEASE SAVEPOINT manx_statement; SAVEPOINT "name"` (the last statement's work
    /// stays), and the next statement sets `manx_statement` again, above the client's. After
    /// `ROLLBACK TO` or `RELEASE` of a client's savepoint, `manx_statement` (always the latest)
    /// is gone too and is set again by the next statement. A failure that came while a
    /// statement's rows streamed is undone first, as before any statement.
    async fn savepoint(
        &mut self,
        op: SavepointOp,
        name: &crate::sqltext::SavepointName,
    ) -> Result<(), BackendError> {
        let conn = self.conn().await?;
        conn.undo_streamed_failure().await;
        let statement = op.with_name(&name.postgres());
        let sql = if op == SavepointOp::Set && conn.guard.savepoint {
            format!("RELEASE SAVEPOINT {STATEMENT_SAVEPOINT}; {statement}")
        } else {
            statement
        };
        // Released here or destroyed by the client's ROLLBACK TO / RELEASE.
        conn.guard.savepoint = false;
        let done = conn
            .client
            .batch_execute(&sql)
            .await
            .map_err(error::convert);
        if done.is_err() {
            conn.dirty = true;
        }
        done
    }

    /// `BEGIN` (through [`BackendConn::begin`]): PostgreSQL names a transaction only when it
    /// is prepared.
    async fn xa_start(&mut self, _xid: &Xid) -> Result<(), BackendError> {
        self.begin().await
    }

    /// `PREPARE TRANSACTION '<gtrid>|<bqual>'`, sent as is, failing when an earlier error
    /// aborted the transaction (PostgreSQL would roll it back silently). PostgreSQL needs
    /// `max_prepared_transactions > 0` (its error, 55000, says so otherwise).
    async fn xa_prepare(&mut self, xid: &Xid) -> Result<(), BackendError> {
        self.end_checked(&format!("PREPARE TRANSACTION {}", xid.postgres_literal()))
            .await
    }

    /// `COMMIT` (one phase, failing when an earlier error aborted the transaction) or
    /// `COMMIT PREPARED '<gid>'`, sent as is.
    async fn xa_commit(&mut self, xid: &Xid, one_phase: bool) -> Result<(), BackendError> {
        if one_phase {
            self.end_checked("COMMIT").await?;
        } else {
            self.raw(&format!("COMMIT PREPARED {}", xid.postgres_literal()))
                .await?;
        }
        self.record_lsn().await
    }

    /// `ROLLBACK` or `ROLLBACK PREPARED '<gid>'`, sent as is.
    async fn xa_rollback(&mut self, xid: &Xid, prepared: bool) -> Result<(), BackendError> {
        if prepared {
            self.raw(&format!("ROLLBACK PREPARED {}", xid.postgres_literal()))
                .await
        } else {
            self.raw("ROLLBACK").await
        }
    }

    /// `SHOW max_prepared_transactions`, sent as is: 0 disables `PREPARE TRANSACTION`.
    async fn xa_unready(&mut self) -> Result<Option<String>, BackendError> {
        let conn = self.conn().await?;
        let messages = conn
            .client
            .simple_query("SHOW max_prepared_transactions")
            .await
            .map_err(error::convert)?;
        let value = messages.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        });
        Ok(match value.as_deref() {
            Some("0") => Some(
                "max_prepared_transactions is 0: PostgreSQL refuses PREPARE TRANSACTION (set it above the number of concurrent XA transactions and restart the server)"
                    .to_string(),
            ),
            _ => None,
        })
    }

    /// The identifiers in `pg_prepared_xacts` of the connection's database that read as
    /// manx's (`<gtrid>|<bqual>`).
    async fn xa_recover(&mut self) -> Result<Vec<Xid>, BackendError> {
        let conn = self.conn().await?;
        let messages = conn
            .client
            .simple_query(
                "SELECT gid FROM pg_catalog.pg_prepared_xacts WHERE database = current_database()",
            )
            .await
            .map_err(error::convert)?;
        Ok(messages
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(row) => row.get(0).and_then(Xid::from_postgres),
                _ => None,
            })
            .collect())
    }

    /// The role's attributes and its memberships in [`grants::PG_DANGEROUS_ROLES`] from
    /// `pg_roles`, sent as is (not through the MySQL dialect translation), judged by
    /// [`grants::postgres_excess`]. Roles a server version lacks are simply not found.
    async fn excess_privileges(&mut self) -> Result<Vec<ExcessPrivilege>, BackendError> {
        let names = grants::PG_DANGEROUS_ROLES
            .iter()
            .map(|(name, _)| format!("'{name}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolreplication, r.rolbypassrls, \
             (SELECT string_agg(p.rolname, ',' ORDER BY p.rolname) FROM pg_roles p \
              WHERE p.rolname IN ({names}) AND pg_has_role(r.oid, p.oid, 'MEMBER')) \
             FROM pg_roles r WHERE r.rolname = current_user"
        );
        let conn = self.conn().await?;
        let messages = conn
            .client
            .simple_query(&sql)
            .await
            .map_err(error::convert)?;
        let row = messages.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(row),
            _ => None,
        });
        let Some(row) = row else {
            return Err(BackendError::Other(
                "pg_roles has no row for current_user".to_string(),
            ));
        };
        let flag = |i: usize| row.get(i) == Some("t");
        let role = grants::PgRole {
            superuser: flag(0),
            create_role: flag(1),
            create_db: flag(2),
            replication: flag(3),
            bypass_rls: flag(4),
            member_of: row
                .get(5)
                .map(|s| s.split(',').map(str::to_string).collect())
                .unwrap_or_default(),
        };
        Ok(grants::postgres_excess(&role))
    }

    async fn query<'a>(&'a mut self, sql: &'a str) -> Result<Response<'a>, BackendError> {
        if sql == "COMMIT" {
            // The gateway's COMMIT of a transaction: an aborted one must fail, not roll back
            // silently (see `end_checked`).
            self.end_checked("COMMIT").await?;
            self.record_lsn().await?;
            return Ok(Response::Ok(OkInfo::default()));
        }
        if self.track.is_some() && super::position::is_rowless_write(sql) {
            let ok = match self.query_untracked(sql).await? {
                Response::Ok(ok) => ok,
                // Not for these statements (`is_rowless_write`): read to the end.
                Response::Rows { mut rows, .. } => {
                    while let Some(r) = rows.next().await {
                        r?;
                    }
                    OkInfo::default()
                }
            };
            self.record_lsn().await?;
            return Ok(Response::Ok(ok));
        }
        self.query_untracked(sql).await
    }
}

impl PgConn {
    /// [`BackendConn::query`] without the position tracking.
    async fn query_untracked<'a>(&'a mut self, sql: &'a str) -> Result<Response<'a>, BackendError> {
        let conn = self.conn().await?;
        conn.before(sql).await?;
        let control = conn.guard.control(sql);
        if !control {
            conn.undo_streamed_failure().await;
        }
        let translation = dialect::translate(sql, &conn.database).map_err(dialect_error)?;
        if translation.is_ddl {
            conn.tables.clear();
            conn.flags_looked_up.clear();
            conn.flags.clear();
        }
        let (info, booleans) = catalog_facts(conn, &translation).await?;
        let finished = translation
            .finish(info.as_ref(), &booleans)
            .map_err(dialect_error)?;
        if finished.sql.is_empty() {
            return Ok(Response::Ok(OkInfo::default()));
        }
        let prefix = if control { None } else { conn.guard.prefix() };
        let guarded = prefix.is_some();
        match run_statement(conn, &finished, prefix).await {
            Err(e) => {
                if guarded {
                    conn.undo_statement(&e).await;
                }
                Err(e)
            }
            Ok(Response::Rows { columns, rows }) if guarded => {
                // An error among the rows leaves the transaction aborted: the next statement
                // undoes it first.
                let failed = conn.guard.failed.clone();
                let rows = rows.inspect(move |r| {
                    if r.is_err() {
                        failed.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                });
                Ok(Response::Rows {
                    columns,
                    rows: rows.boxed(),
                })
            }
            Ok(other) => Ok(other),
        }
    }
}

/// Runs a translated statement, with `prefix` (the statement savepoint, see
/// [`StatementGuard`]) sent in front of it in the same round trip.
async fn run_statement(
    conn: &mut Conn,
    finished: &dialect::Finished,
    prefix: Option<String>,
) -> Result<Response<'static>, BackendError> {
    let client = &conn.client;
    let savepoint = async {
        match &prefix {
            Some(p) => client.batch_execute(p).await.map_err(error::convert),
            None => Ok(()),
        }
    };
    if finished.returning_id || finished.returning_inserted {
        let (set, ran) = futures::future::join(savepoint, insert_returning(client, finished)).await;
        set?;
        return ran.map(Response::Ok);
    }
    if !finished.returns_rows {
        let run = async {
            let mut stream = std::pin::pin!(
                client
                    .simple_query_raw(&finished.sql)
                    .await
                    .map_err(error::convert)?
            );
            let mut ok = OkInfo::default();
            while let Some(m) = stream.next().await {
                if let SimpleQueryMessage::CommandComplete(n) = m.map_err(error::convert)? {
                    ok.affected_rows = n;
                }
            }
            Ok(Response::Ok(ok))
        };
        let (set, ran) = futures::future::join(savepoint, run).await;
        set?;
        return ran;
    }
    // Describe, look up the column flags of tables not seen yet, and run, in one round
    // trip: the requests are queued in this order before any answer is read.
    let missing = unlooked(conn, finished);
    let catalog = flags_lookup(client, &missing);
    let (set, statement, catalog, stream) = futures::future::join4(
        savepoint,
        client.prepare(&finished.sql),
        catalog,
        client.simple_query_raw(&finished.sql),
    )
    .await;
    set?;
    // In a transaction a failed Describe aborts it and the query then fails with 25P02:
    // the Describe's error is the one to report.
    let statement = statement.map_err(error::convert)?;
    let catalog = catalog.map_err(error::convert)?;
    let stream = stream.map_err(error::convert)?;
    record_flags(conn, catalog, missing);
    let mapped = map_columns(conn, &statement);
    let columns: Arc<[Column]> = mapped.iter().map(|m| m.column.clone()).collect();
    let conversions: Vec<Conversion> = mapped.iter().map(|m| m.conversion).collect();
    let rows = stream.filter_map(move |m| {
        let out = match m {
            Ok(SimpleQueryMessage::Row(row)) => Some(Ok((0..row.len())
                .map(|i| {
                    types::convert_value(
                        row.get(i),
                        conversions.get(i).copied().unwrap_or(Conversion::AsIs),
                    )
                })
                .collect::<Row>())),
            Ok(_) => None,
            Err(e) => Some(Err(error::convert(e))),
        };
        futures::future::ready(out)
    });
    Ok(Response::Rows {
        columns,
        rows: rows.boxed(),
    })
}

/// The relations a row-returning statement reads whose column flags the connection has not
/// looked up yet.
fn unlooked(conn: &Conn, finished: &dialect::Finished) -> Vec<String> {
    finished
        .tables
        .iter()
        .filter(|t| !conn.flags_looked_up.contains(*t))
        .cloned()
        .collect()
}

/// The catalog lookup of `missing` relations' column flags ([`dialect::column_flags_query`]),
/// nothing when there are none; queued on `client` when first polled.
async fn flags_lookup(
    client: &tokio_postgres::Client,
    missing: &[String],
) -> Result<Vec<SimpleQueryMessage>, tokio_postgres::Error> {
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    client
        .simple_query(&dialect::column_flags_query(missing))
        .await
}

/// Records the column flags a [`dialect::column_flags_query`] answered, and that `looked_up`
/// relations were looked up (found or not).
fn record_flags(conn: &mut Conn, catalog: Vec<SimpleQueryMessage>, looked_up: Vec<String>) {
    for m in catalog {
        if let SimpleQueryMessage::Row(row) = m {
            let (Some(oid), Some(name), Some(attnum)) = (
                row.get(0).and_then(|v| v.parse::<u32>().ok()),
                row.get(1),
                row.get(2).and_then(|v| v.parse::<i16>().ok()),
            ) else {
                continue;
            };
            let mut flags = ColumnFlags::empty();
            if row.get(3) == Some("t") {
                flags |= ColumnFlags::NOT_NULL_FLAG;
            }
            if row.get(4) == Some("t") {
                flags |= ColumnFlags::PRI_KEY_FLAG;
            }
            if row.get(5) == Some("t") {
                flags |= ColumnFlags::AUTO_INCREMENT_FLAG;
            }
            let declared = row.get(6).and_then(types::Declared::parse);
            conn.flags
                .entry(oid)
                .or_insert_with(|| (name.to_string(), HashMap::new()))
                .1
                .insert(attnum, (flags, declared));
        }
    }
    conn.flags_looked_up.extend(looked_up);
}

/// A described statement's result columns as MySQL columns, with the table name and flags the
/// connection knows from the catalog.
fn map_columns(conn: &Conn, statement: &tokio_postgres::Statement) -> Vec<Mapped> {
    statement
        .columns()
        .iter()
        .map(|c| {
            let mut m = types::map_column(c.name(), c.type_(), c.type_modifier());
            if let (Some(oid), Some(attnum)) = (c.table_oid(), c.column_id())
                && let Some((table, columns)) = conn.flags.get(&oid)
            {
                m.column.table = table.clone();
                if let Some((f, declared)) = columns.get(&attnum) {
                    if let Some(d) = declared {
                        d.apply(&mut m);
                    }
                    m.column.flags |= *f;
                }
            }
            m
        })
        .collect()
}

/// An INSERT with manx's `RETURNING` (see [`dialect::Finished`]): the first id (MySQL's
/// `last_insert_id` of a multi-row INSERT is its first row's) and, for an upsert, MySQL's
/// affected rows (1 per row inserted, 2 per row updated).
async fn insert_returning(
    client: &tokio_postgres::Client,
    finished: &dialect::Finished,
) -> Result<OkInfo, BackendError> {
    let mut ok = OkInfo::default();
    let mut upserted = 0;
    let mut stream = std::pin::pin!(
        client
            .simple_query_raw(&finished.sql)
            .await
            .map_err(error::convert)?
    );
    while let Some(m) = stream.next().await {
        match m.map_err(error::convert)? {
            SimpleQueryMessage::Row(row) => {
                if finished.returning_id && ok.last_insert_id.is_none() {
                    ok.last_insert_id = row.get(0).and_then(|v| v.parse().ok());
                }
                if finished.returning_inserted {
                    let inserted = row.len().checked_sub(1).and_then(|i| row.get(i)) == Some("t");
                    upserted += if inserted { 1 } else { 2 };
                }
            }
            SimpleQueryMessage::CommandComplete(n) => ok.affected_rows = n,
            _ => {}
        }
    }
    if finished.returning_inserted {
        ok.affected_rows = upserted;
    }
    Ok(ok)
}

/// What [`dialect::Translation::finish`] needs from the catalog: the INSERT target's
/// [`TableInfo`], and the boolean columns of the tables whose 0/1 literals may meet them.
async fn catalog_facts(
    conn: &mut Conn,
    translation: &dialect::Translation,
) -> Result<(Option<TableInfo>, HashSet<String>), BackendError> {
    let info = match &translation.insert_table {
        Some(table) => Some(table_info(conn, table).await?),
        None => None,
    };
    let mut booleans = HashSet::new();
    for table in &translation.boolean_tables {
        booleans.extend(table_info(conn, table).await?.booleans);
    }
    Ok((info, booleans))
}

/// The primary key and identity column of `table`, from the catalog (cached per connection,
/// cleared by DDL on it).
async fn table_info(conn: &mut Conn, table: &str) -> Result<TableInfo, BackendError> {
    if let Some(info) = conn.tables.get(table) {
        return Ok(info.clone());
    }
    let messages = conn
        .client
        .simple_query(&dialect::table_info_query(table))
        .await
        .map_err(error::convert)?;
    let mut info = TableInfo::default();
    for m in messages {
        if let SimpleQueryMessage::Row(row) = m {
            let name = row.get(0).unwrap_or_default().to_string();
            info.columns.push(name.to_lowercase());
            if row.get(3) == Some("t") {
                info.booleans.push(name.to_lowercase());
            }
            if row.get(1) == Some("t") {
                info.primary_key.push(name.clone());
            }
            if row.get(2) == Some("t") && info.auto_column.is_none() {
                info.auto_column = Some(name);
            }
        }
    }
    conn.tables.insert(table.to_string(), info.clone());
    Ok(info)
}

/// A translation failure as the client sees it, the gateway's refusal (no server saw the
/// statement): a statement that does not parse is a syntax
/// error (1064/42000); a refused construct is `ER_NOT_SUPPORTED_YET` (1235/42000); an error
/// MySQL would give keeps its code.
fn dialect_error(e: dialect::DialectError) -> BackendError {
    let (code, state) = match e {
        dialect::DialectError::Parse(_) => (1064, "42000"),
        dialect::DialectError::Unsupported(_) => (1235, "42000"),
        dialect::DialectError::Server { code, state, .. } => (code, state),
    };
    BackendError::refused(code, state, e.to_string())
}
