//! MySQL/MariaDB backend on `mysql_async`, one pool per physical host (`maxCon` connections at
//! most, as Mycat sizes a source's pool, SPEC §4.10) whose idle connections are kept per
//! selected database (module [`super::pool`]). The dataNode's database is selected per
//! connection, lazily (SPEC §1.6): only when the connection taken was on another one.

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use mysql_async::prelude::Queryable;

use super::grants::{self, ExcessPrivilege};
use super::pool::{Manage, Pool, PoolConfig, PoolError};
use super::{Backend, BackendConn, BackendError, Canceller, Column, OkInfo, Response, Row, Value};

/// How to reach one MySQL server and how its pool behaves.
#[derive(Debug, Clone)]
pub struct MysqlSettings {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    /// Pool size (`maxCon`).
    pub max_connections: usize,
    /// Longest wait for the TCP connect and handshake of a new connection.
    pub connect_timeout: Duration,
    /// Longest wait for a free connection when the pool is full.
    pub wait_timeout: Duration,
}

/// A pooled MySQL server.
pub struct MysqlBackend {
    address: Arc<str>,
    pool: Pool<Manager>,
}

impl std::fmt::Debug for MysqlBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = self.pool.status();
        f.debug_struct("MysqlBackend")
            .field("address", &self.address)
            .field("size", &status.size)
            .field("idle", &status.idle)
            .finish()
    }
}

impl MysqlBackend {
    /// A pool that opens connections on demand (none is opened here).
    pub fn new(settings: MysqlSettings) -> Self {
        let address = format!("{}:{}", settings.host, settings.port);
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname(settings.host.clone())
            .tcp_port(settings.port)
            .user(Some(settings.user.clone()))
            .pass(Some(settings.password.clone()))
            .prefer_socket(false)
            .tcp_nodelay(true)
            .stmt_cache_size(0);
        let manager = Manager {
            opts: opts.into(),
            connect_timeout: settings.connect_timeout,
            address: address.clone(),
        };
        let address: Arc<str> = address.into();
        let pool = Pool::new(
            manager,
            PoolConfig {
                max_size: settings.max_connections,
                wait_timeout: settings.wait_timeout,
                create_timeout: settings.connect_timeout,
                recycle_timeout: settings.connect_timeout,
            },
        );
        MysqlBackend { address, pool }
    }
}

#[async_trait]
impl Backend for MysqlBackend {
    async fn acquire(&self, database: &str) -> Result<Box<dyn BackendConn>, BackendError> {
        match self.pool.get(database).await {
            Ok(conn) => Ok(Box::new(PooledConn {
                conn: Holder::Pooled(conn),
                address: self.address.clone(),
                use_pending: None,
                track: None,
            })),
            Err(PoolError::Backend(e)) => Err(e),
            Err(PoolError::Timeout(kind)) => Err(BackendError::Timeout(format!(
                "no connection to {} within the time limit ({kind:?}): pool exhausted or server not answering",
                self.address
            ))),
        }
    }

    async fn warm_up(&self, connections: usize) -> Result<(), BackendError> {
        let missing = connections.saturating_sub(self.pool.status().size);
        let opened = futures::future::join_all((0..missing).map(|_| self.pool.get(""))).await;
        // Dropping the objects returns them to the pool, where they stay idle.
        for o in opened {
            match o {
                Ok(_) => {}
                Err(PoolError::Backend(e)) => return Err(e),
                Err(PoolError::Timeout(stage)) => {
                    return Err(BackendError::Timeout(format!(
                        "warming the pool of {}: time limit reached ({stage:?})",
                        self.address
                    )));
                }
            }
        }
        Ok(())
    }

    async fn connect(&self) -> Result<Box<dyn BackendConn>, BackendError> {
        let conn = self.pool.manager().create().await?;
        Ok(Box::new(PooledConn {
            conn: Holder::Direct(conn),
            address: self.address.clone(),
            use_pending: None,
            track: None,
        }))
    }

    fn close_idle(&self) {
        // Connections in use are closed when they are returned and fail their recycle check,
        // or when their holder drops them.
        self.pool.close_idle();
    }

    fn address(&self) -> &str {
        &self.address
    }

    fn size(&self) -> usize {
        self.pool.status().size
    }

    fn in_use(&self) -> usize {
        // Connections being reset after their holder returned them serve no statement.
        let s = self.pool.status();
        s.size.saturating_sub(s.idle + s.cleaning)
    }
}

/// A connection checked out again within this time of its return skips the liveness round trip (when it needs
/// no reset either): a server that died since is noticed by the statement itself. Longer idle
/// connections are checked before they are handed out, as every one was before.
const RECENTLY_USED: Duration = Duration::from_secs(1);

/// A raw connection, the database it has selected, and what may be left on it (see
/// [`super::stateless`]).
struct Conn {
    conn: mysql_async::Conn,
    /// Interrupts its statements (made once: handed out for every statement).
    canceller: Arc<KillQuery>,
    database: Option<String>,
    /// A statement that may have left session state ran since the last reset (or its result was
    /// not read to the end, or it ended with an error or warnings): reset before the next holder.
    dirty: bool,
    /// A statement ran since the last reset.
    used: bool,
    /// Handed out without a reset after another holder used it: a statement that may read
    /// session state (`FOUND_ROWS()`, `SHOW WARNINGS`...) gets a reset first.
    inherited: bool,
    /// The gateway's `START TRANSACTION` ran and no `COMMIT`/`ROLLBACK` has ended it cleanly
    /// since: returned like this, the connection is reset (which rolls back) before reuse.
    open_transaction: bool,
    /// `START TRANSACTION` is owed: it goes in the next statement's packet
    /// ([`BackendConn::begin`]).
    begin_pending: bool,
    /// `FOUND_ROWS()` may still be a previous holder's: the connection was handed out again,
    /// and MariaDB's COM_RESET_CONNECTION does not clear it. A statement that names it gets
    /// [`CLEAR_FOUND_ROWS`] first, in the same packet.
    foreign_found_rows: bool,
    /// A command was sent and the future waiting for its answer was dropped before it arrived
    /// (a client killed or gone mid-statement: the session's task ends with it). The answer,
    /// or what is left of it after USE's or START TRANSACTION's, may still come, and would be
    /// read as the next command's: the next holder would get another statement's rows. Such a
    /// connection is closed, never reused. (mysql_async's futures are not cancellation-safe
    /// there; a result set dropped between rows is, it reads the rest out itself.)
    in_flight: bool,
    /// The last statement's rows were dropped before their end (a merge stopped reading at its
    /// LIMIT, another dataNode failed, the client left). mysql_async reads the rest before the
    /// next command and reports an error that rest ends with as that command's own: a
    /// statement a `KILL QUERY` interrupted meanwhile would fail the next statement with 1317.
    /// The next statement reads it out first ([`PooledConn::query`]).
    unread: bool,
    /// The warnings of the statement's result, once read to its end
    /// ([`BackendConn::warning_count`]).
    warnings: Arc<AtomicU16>,
}

/// An empty result that sets `FOUND_ROWS()` to 0 (as on a connection that ran no SELECT yet),
/// leaving nothing else.
const CLEAR_FOUND_ROWS: &str = "SELECT 1 FROM DUAL WHERE 0";

/// How a statement bears on what a connection carries to its next holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Leaves and reads no session state ([`super::stateless::is_stateless`]).
    Stateless,
    /// The gateway's `START TRANSACTION`: opens a transaction, leaves nothing else.
    Begin,
    /// The gateway's `COMMIT` / `ROLLBACK`: ends the transaction, leaves nothing else.
    End,
    /// Anything else: may leave or read session state.
    Other,
}

impl Kind {
    /// The gateway sends transaction control with exactly these texts (frontend `session`);
    /// a client's own text takes the careful path.
    ///
    /// The XA statements of two-phase commit come only from the gateway too (clients' `XA`
    /// statements are refused by the router), always with hex XIDs (`super::xa::Xid::mysql`):
    /// `XA START` opens a transaction as `START TRANSACTION` does, `XA COMMIT` / `XA ROLLBACK`
    /// end it, `XA END` / `XA PREPARE` leave nothing else.
    fn of(sql: &str) -> Kind {
        match sql {
            "START TRANSACTION" => Kind::Begin,
            "COMMIT" | "ROLLBACK" => Kind::End,
            _ if sql.starts_with("XA START X'") => Kind::Begin,
            _ if sql.starts_with("XA COMMIT X'") || sql.starts_with("XA ROLLBACK X'") => Kind::End,
            _ if sql.starts_with("XA END X'") || sql.starts_with("XA PREPARE X'") => {
                Kind::Stateless
            }
            _ if super::stateless::is_stateless(sql) => Kind::Stateless,
            _ => Kind::Other,
        }
    }
}

impl Conn {
    fn new(conn: mysql_async::Conn, opts: mysql_async::Opts, connect_timeout: Duration) -> Self {
        let canceller = Arc::new(KillQuery {
            opts,
            thread: conn.id(),
            connect_timeout,
        });
        Conn {
            conn,
            canceller,
            database: None,
            dirty: false,
            used: false,
            inherited: false,
            open_transaction: false,
            begin_pending: false,
            foreign_found_rows: false,
            in_flight: false,
            unread: false,
            warnings: Arc::default(),
        }
    }

    /// COM_RESET_CONNECTION (or a ping on servers without it): clears what earlier statements
    /// left (user variables, GET_LOCK locks, temporary tables, session variables) and keeps the
    /// selected database.
    async fn reset(&mut self) -> Result<(), BackendError> {
        self.check_in_step()?;
        self.in_flight = true;
        match self.conn.reset().await {
            Ok(true) => {}
            // Servers before MySQL 5.7.3 / MariaDB 10.2.4: only check that it is alive.
            Ok(false) => self.conn.ping().await.map_err(convert_error)?,
            Err(e) => return Err(convert_error(e)),
        }
        self.in_flight = false;
        self.unread = false;
        self.dirty = false;
        self.used = false;
        self.inherited = false;
        self.open_transaction = false;
        self.begin_pending = false;
        Ok(())
    }

    /// Called before each statement: marks what it may leave behind, and resets first when it
    /// may read state a previous holder left. Transaction control reads none (and a begun
    /// transaction takes no reset later: it would roll it back), so a read-only transaction of
    /// stateless statements leaves its connection clean: no reset before it nor after its
    /// `COMMIT`. `FOUND_ROWS()`, which no reset clears, is handled per statement
    /// ([`Conn::foreign_found_rows`]).
    async fn before(&mut self, sql: &str) -> Result<Kind, BackendError> {
        self.check_in_step()?;
        let kind = Kind::of(sql);
        // `XA START` clears what a previous holder left before the branch opens, as no reset
        // may come inside it ([`BackendConn::begin`] instead defers and never resets).
        let clears = kind == Kind::Other || (kind == Kind::Begin && sql != "START TRANSACTION");
        if clears && self.inherited {
            self.reset().await?;
        }
        self.inherited &= !clears;
        self.used = true;
        if kind == Kind::Begin {
            self.open_transaction = true;
        }
        Ok(kind)
    }

    /// Whether the connection may carry state to its next holder.
    fn needs_reset(&self) -> bool {
        self.dirty || self.open_transaction || self.in_flight
    }

    /// Errors when an answer may still be on its way ([`Conn::in_flight`]): the pool then
    /// closes the connection instead of reusing it.
    fn check_in_step(&self) -> Result<(), BackendError> {
        if self.in_flight {
            return Err(BackendError::Closed(
                "a statement was abandoned before its answer arrived; the connection is closed"
                    .to_string(),
            ));
        }
        Ok(())
    }
}

/// Checks that a new connection starts in a `sql_mode` that lexes as MySQL's default does.
///
/// The gateway reads every statement with the backend session's lexing modes (`route::lex`):
/// those it set itself it knows, but a server whose *global* `sql_mode` has
/// `NO_BACKSLASH_ESCAPES` or `ANSI_QUOTES` (or `ORACLE`'s grammar) would read statements
/// differently from how the gateway checked them. Such a server is not used: set those modes
/// per session (clients may, through the gateway), not globally.
///
/// Errors: [`BackendError::Closed`] naming the server and the mode.
async fn lexing_defaults(conn: &mut mysql_async::Conn, address: &str) -> Result<(), BackendError> {
    use mysql_async::prelude::Queryable;
    let mode: Option<String> = conn
        .query_first("SELECT @@session.sql_mode")
        .await
        .map_err(|e| BackendError::Closed(format!("{address}: reading sql_mode: {e}")))?;
    let mode = mode.unwrap_or_default();
    let bad = mode.split(',').map(str::trim).find(|m| {
        ["NO_BACKSLASH_ESCAPES", "ANSI_QUOTES", "ORACLE"]
            .iter()
            .any(|b| m.eq_ignore_ascii_case(b))
    });
    match bad {
        None => Ok(()),
        Some(m) => Err(BackendError::Closed(format!(
            "{address}: the server's global sql_mode has {m}: the gateway checks statements as MySQL's default sql_mode lexes them; remove {m} from the global sql_mode (sessions may still set it)"
        ))),
    }
}

#[derive(Debug)]
struct Manager {
    opts: mysql_async::Opts,
    connect_timeout: Duration,
    address: String,
}

impl Manage for Manager {
    type Conn = Conn;
    type Error = BackendError;

    async fn create(&self) -> Result<Conn, BackendError> {
        let connect = mysql_async::Conn::new(self.opts.clone());
        match tokio::time::timeout(self.connect_timeout, connect).await {
            Ok(Ok(mut conn)) => {
                lexing_defaults(&mut conn, &self.address).await?;
                Ok(Conn::new(conn, self.opts.clone(), self.connect_timeout))
            }
            Ok(Err(e)) => Err(match convert_error(e) {
                BackendError::Server {
                    code,
                    state,
                    message,
                } => BackendError::Server {
                    code,
                    state,
                    message,
                },
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

    async fn recycle(&self, conn: &mut Conn, idle: Duration) -> Result<(), BackendError> {
        // A connection returned dirty was reset (`clean`) before it was listed idle. One that
        // only ran stateless statements (module `stateless`) since its last reset and was
        // returned moments ago is handed out as it is: no round trip. Otherwise (idle a while,
        // or dirty because it was returned outside a runtime) COM_RESET_CONNECTION clears what
        // a previous session may have left (user variables, GET_LOCK locks, temporary tables,
        // session variables) so nothing leaks to the next client; it keeps the selected
        // database and doubles as the liveness check. A connection dropped mid-result has its
        // remaining rows read out first by mysql_async.
        // Whatever else happens, a connection handed out again may show its last holder's
        // FOUND_ROWS() (a reset does not clear it).
        conn.check_in_step()?;
        conn.foreign_found_rows = true;
        if !conn.needs_reset() && idle < RECENTLY_USED {
            conn.inherited = conn.used;
            return Ok(());
        }
        conn.reset().await
    }

    fn database(conn: &Conn) -> Option<&str> {
        conn.database.as_deref()
    }

    /// A statement that may have left session state ran (or its result was not read to the end,
    /// or it ended with an error or warnings): see [`Conn::dirty`].
    fn dirty(conn: &Conn) -> bool {
        conn.needs_reset()
    }

    async fn clean(&self, conn: &mut Conn) -> Result<(), BackendError> {
        conn.reset().await
    }
}

struct PooledConn {
    conn: Holder,
    /// The server's `host:port`.
    address: Arc<str>,
    /// The database [`BackendConn::select_database`] asked for, when the connection has another
    /// one selected: `USE` goes in front of the next statement, in the same packet.
    use_pending: Option<String>,
    /// Where the GTIDs of this holder's writes go ([`BackendConn::track_writes`]).
    track: Option<Arc<super::position::Acked>>,
}

/// A connection checked out of the pool, or one opened beside it ([`Backend::connect`]).
enum Holder {
    Pooled(super::pool::Object<Manager>),
    Direct(Conn),
}

impl std::ops::Deref for Holder {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        match self {
            Holder::Pooled(o) => o,
            Holder::Direct(c) => c,
        }
    }
}

impl std::ops::DerefMut for Holder {
    fn deref_mut(&mut self) -> &mut Conn {
        match self {
            Holder::Pooled(o) => o,
            Holder::Direct(c) => c,
        }
    }
}

impl PooledConn {
    /// Sends a pending `USE` on its own (for a command that cannot carry it).
    async fn flush_use(&mut self) -> Result<(), BackendError> {
        if let Some(db) = self.use_pending.take() {
            let c: &mut Conn = &mut self.conn;
            c.in_flight = true;
            c.conn
                .query_drop(use_statement(&db))
                .await
                .map_err(convert_error)?;
            c.in_flight = false;
            c.database = Some(db);
        }
        Ok(())
    }
}

/// `USE` of `database`, quoted.
fn use_statement(database: &str) -> String {
    format!("USE `{}`", database.replace('`', "``"))
}

#[async_trait]
impl BackendConn for PooledConn {
    fn address(&self) -> &str {
        &self.address
    }

    /// Sends nothing yet when the connection has another database selected: `USE` goes in
    /// front of the next statement, in the same packet (`USE db;<statement>`, its OK read and
    /// dropped), as Mycat sends its re-synchronisation preamble (SPEC §4.10). The pool hands
    /// out a connection of another database when the wanted one has none idle (as Mycat's
    /// does); with two dataNodes on one dataHost and 16 sysbench clients that was 13-18 % of
    /// point selects, each paying a round trip. A `USE` that fails (the database is gone) fails the statement with the
    /// server's error, and the statement is not run.
    async fn select_database(&mut self, database: &str) -> Result<(), BackendError> {
        self.use_pending =
            (self.conn.database.as_deref() != Some(database)).then(|| database.to_string());
        Ok(())
    }

    fn track_writes(&mut self, acked: Arc<super::position::Acked>) {
        self.track = Some(acked);
    }

    /// `SET GLOBAL read_only = 1` (MariaDB 10.11 wants `READ_ONLY ADMIN` for it, which also
    /// lets the account write regardless), then `KILL CONNECTION` of every other connection
    /// of this account (`information_schema.PROCESSLIST`); one gone meanwhile is skipped.
    async fn fence(&mut self) -> Result<(Result<(), String>, usize), BackendError> {
        self.flush_use().await?;
        let c: &mut Conn = &mut self.conn;
        c.dirty = true;
        c.in_flight = true;
        let read_only = match c.conn.query_drop("SET GLOBAL read_only = 1").await {
            Ok(()) => Ok(()),
            Err(mysql_async::Error::Server(e)) => Err(format!("{} ({})", e.message, e.code)),
            Err(e) => return Err(convert_error(e)),
        };
        let ids: Vec<u64> = c
            .conn
            .query(
                "SELECT id FROM information_schema.PROCESSLIST \
                 WHERE user = SUBSTRING_INDEX(CURRENT_USER(), '@', 1) AND id <> CONNECTION_ID()",
            )
            .await
            .map_err(convert_error)?;
        let mut killed = 0;
        for id in ids {
            if c.conn
                .query_drop(format!("KILL CONNECTION {id}"))
                .await
                .is_ok()
            {
                killed += 1;
            }
        }
        c.in_flight = false;
        Ok((read_only, killed))
    }

    async fn unfence(&mut self) -> Result<(), BackendError> {
        self.flush_use().await?;
        let c: &mut Conn = &mut self.conn;
        c.dirty = true;
        c.in_flight = true;
        c.conn
            .query_drop("SET GLOBAL read_only = 0")
            .await
            .map_err(convert_error)?;
        c.in_flight = false;
        Ok(())
    }

    fn canceller(&self) -> Option<Arc<dyn Canceller>> {
        Some(self.conn.canceller.clone())
    }

    fn warning_count(&self) -> Option<Arc<AtomicU16>> {
        Some(self.conn.warnings.clone())
    }

    /// `SHOW GRANTS`, which on MariaDB also lists the grants of the role enabled at login
    /// (`SHOW GRANTS FOR CURRENT_USER` would not), judged by [`grants::mysql_excess`].
    async fn excess_privileges(&mut self) -> Result<Vec<ExcessPrivilege>, BackendError> {
        let lines = match self.query("SHOW GRANTS").await? {
            Response::Ok(_) => Vec::new(),
            Response::Rows { mut rows, .. } => {
                let mut lines = Vec::new();
                while let Some(row) = rows.next().await {
                    if let Some(text) = row?.first().and_then(Value::to_text) {
                        lines.push(text);
                    }
                }
                lines
            }
        };
        if lines.is_empty() {
            return Err(BackendError::Other(
                "SHOW GRANTS returned no grant".to_string(),
            ));
        }
        Ok(grants::mysql_excess(&lines))
    }

    /// Marks the connection as waiting for an answer that may still come ([`Conn::in_flight`]):
    /// its pool closes it instead of reusing it.
    fn abandon(&mut self) {
        self.conn.in_flight = true;
    }

    async fn describe(&mut self, sql: &str) -> Result<(usize, Vec<Column>), BackendError> {
        // COM_STMT_PREPARE carries one statement: a pending `USE` goes first, on its own.
        self.flush_use().await?;
        let c: &mut Conn = &mut self.conn;
        // A prepared (then closed) statement: not on the stateless list, reset afterwards.
        c.before("").await?;
        c.dirty = true;
        c.in_flight = true;
        let described = describe(&mut c.conn, sql).await?;
        c.in_flight = false;
        Ok(described)
    }

    /// Sends nothing yet: `START TRANSACTION` goes in front of the next statement, in the same
    /// packet (`START TRANSACTION;<statement>`, a multi-statement query whose first result, an
    /// OK, is read and dropped). That saves a round trip per dataNode per transaction. A
    /// `COMMIT` or `ROLLBACK` that comes first ends the empty transaction without a word to
    /// the server. An inherited connection is not reset inside the transaction (that would
    /// roll it back): what a previous holder's plain SELECTs leave that `START TRANSACTION`
    /// does not clear (warnings, `ROW_COUNT()`) is `FOUND_ROWS()`, cleared per statement, and
    /// the session's status counters (`SHOW SESSION STATUS`).
    async fn begin(&mut self) -> Result<(), BackendError> {
        let c: &mut Conn = &mut self.conn;
        c.before("START TRANSACTION").await?;
        c.begin_pending = true;
        c.inherited = false;
        Ok(())
    }

    async fn query<'a>(&'a mut self, sql: &'a str) -> Result<Response<'a>, BackendError> {
        let c: &'a mut Conn = &mut self.conn;
        c.warnings.store(0, Ordering::Relaxed);
        if c.unread {
            // The abandoned rows' end, read on a ping (see `unread`): their error is no longer
            // anyone's, a broken connection is this statement's.
            c.check_in_step()?;
            c.in_flight = true;
            let drained = c.conn.ping().await;
            c.in_flight = false;
            c.unread = false;
            match drained {
                Ok(()) | Err(mysql_async::Error::Server(_)) => {}
                Err(e) => return Err(convert_error(e)),
            }
        }
        let kind = c.before(sql).await?;
        let begin = std::mem::take(&mut c.begin_pending);
        if begin && kind == Kind::End {
            // Nothing ran in the transaction: there is nothing to end.
            c.open_transaction = false;
            return Ok(Response::Ok(OkInfo::default()));
        }
        let renamed = isolation_names(c.conn.server_version())
            .and_then(|r| crate::sqltext::rename_system_variables(sql, r));
        let use_db = self.use_pending.take();
        let track = self
            .track
            .clone()
            .filter(|_| super::position::is_write(sql));
        let tracked = track.is_some();
        let clears =
            c.foreign_found_rows && crate::sqltext::contains_ignore_ascii_case(sql, "FOUND_ROWS");
        c.foreign_found_rows &= !clears;
        let stateless = kind != Kind::Other;
        // Dirty until the statement is seen to end cleanly (a result dropped half-read, an
        // error or warnings keep it so).
        let dirty_before = c.dirty;
        c.dirty = true;
        let dirty = &mut c.dirty;
        let warnings: &'a AtomicU16 = &c.warnings;
        let unread = &mut c.unread;
        let open_transaction = &mut c.open_transaction;
        // From the send until the statement's own result (or error) is in: see `in_flight`.
        // A future that completes has read what it waited for, error or not.
        let in_flight = &mut c.in_flight;
        *in_flight = true;
        let conn = &mut c.conn;
        let database = &mut c.database;
        let sent = async move {
            if !(begin || clears || use_db.is_some() || tracked || renamed.is_some()) {
                return conn.query_iter(sql).await;
            }
            let mut text = String::with_capacity(sql.len() + 64);
            if let Some(db) = &use_db {
                text.push_str(&use_statement(db));
                text.push(';');
            }
            if begin {
                text.push_str("START TRANSACTION;");
            }
            if clears {
                text.push_str(CLEAR_FOUND_ROWS);
                text.push(';');
            }
            text.push_str(renamed.as_deref().unwrap_or(sql));
            if tracked {
                // Read after the statement's result: its OK, then this one-row result. The
                // line break ends a `-- ` or `#` comment the statement may end with.
                text.push_str("\n;SELECT @@last_gtid");
            }
            let skip = usize::from(use_db.is_some()) + usize::from(begin) + usize::from(clears);
            // The first result is USE's when there is one: a failed USE ends the packet there,
            // with the database unchanged.
            let mut r = conn.query_iter(text).await?;
            if let Some(db) = use_db {
                *database = Some(db);
            }
            // Reading past a result moves to the next one: past USE's and START TRANSACTION's
            // OK and the empty result to the statement's result, or its error.
            for _ in 0..skip {
                r.next().await?;
            }
            Ok(r)
        }
        .await;
        *in_flight = false;
        let result = sent.map_err(convert_error)?;
        let columns = result.columns_ref();
        if columns.is_empty() {
            let ok = OkInfo {
                affected_rows: result.affected_rows(),
                last_insert_id: result.last_insert_id(),
                warnings: result.warnings(),
                info: result.info().into_owned(),
            };
            *in_flight = true;
            let mut result = result;
            if let Some(acked) = &track {
                // Past the statement's OK to the GTID's result, then its one row.
                let gtid = async {
                    result.next().await?;
                    let row = result.next().await?;
                    Ok::<_, mysql_async::Error>(row.and_then(|r| r.get_opt::<String, _>(0)?.ok()))
                }
                .await
                .map_err(convert_error)?;
                if let Some(g) = gtid {
                    acked.record(&g);
                }
            }
            let dropped = result.drop_result().await;
            *in_flight = false;
            dropped.map_err(convert_error)?;
            warnings.store(ok.warnings, Ordering::Relaxed);
            if stateless && ok.warnings == 0 {
                *dirty = dirty_before;
                if kind == Kind::End {
                    *open_transaction = false;
                }
            }
            return Ok(Response::Ok(ok));
        }
        let columns: Arc<[Column]> = columns.iter().map(convert_column).collect();
        *unread = true;
        let state = (result, dirty, unread);
        let rows = futures::stream::try_unfold(state, move |(mut result, dirty, unread)| {
            let track = track.clone();
            async move {
                match result.next().await {
                    Ok(Some(row)) => Ok(Some((convert_row(row), (result, dirty, unread)))),
                    Ok(None) => {
                        if let Some(acked) = track {
                            // A tracked statement's rows (INSERT ... RETURNING, or one that
                            // could not be told from a write): the GTID's result follows.
                            let gtid = async {
                                let row = result.next().await?;
                                while result.next().await?.is_some() {}
                                Ok::<_, mysql_async::Error>(
                                    row.and_then(|r| r.get_opt::<String, _>(0)?.ok()),
                                )
                            }
                            .await;
                            match gtid {
                                Ok(Some(g)) => acked.record(&g),
                                Ok(None) => {}
                                Err(e) => {
                                    *unread = false;
                                    return Err(convert_error(e));
                                }
                            }
                        }
                        *unread = false;
                        let count = result.warnings();
                        warnings.store(count, Ordering::Relaxed);
                        if stateless && count == 0 {
                            *dirty = dirty_before;
                        }
                        Ok(None)
                    }
                    Err(e) => {
                        *unread = false;
                        Err(convert_error(e))
                    }
                }
            }
        });
        Ok(Response::Rows {
            columns,
            rows: rows.boxed(),
        })
    }
}

/// Interrupts a MySQL connection's statement: `KILL QUERY <thread id>` sent on a connection of
/// its own to the same server (opened beside the pool, closed afterwards).
#[derive(Debug)]
struct KillQuery {
    opts: mysql_async::Opts,
    thread: u32,
    connect_timeout: Duration,
}

impl KillQuery {
    /// Sends `KILL <what> <thread>` on a connection of its own.
    async fn kill(&self, what: &str) -> Result<(), BackendError> {
        let kill = async {
            let mut conn = mysql_async::Conn::new(self.opts.clone()).await?;
            let killed = conn
                .query_drop(format!("KILL {what} {}", self.thread))
                .await;
            let _ = conn.disconnect().await;
            killed
        };
        match tokio::time::timeout(self.connect_timeout, kill).await {
            Ok(result) => result.map_err(convert_error),
            Err(_) => Err(BackendError::Timeout(format!(
                "KILL {what} {}: no answer within {} ms",
                self.thread,
                self.connect_timeout.as_millis()
            ))),
        }
    }
}

#[async_trait]
impl Canceller for KillQuery {
    async fn cancel(&self) -> Result<(), BackendError> {
        self.kill("QUERY").await
    }

    async fn close(&self) -> Result<(), BackendError> {
        self.kill("CONNECTION").await
    }
}

/// `describe` for MySQL: COM_STMT_PREPARE, then COM_STMT_CLOSE so no server-side statement
/// outlives the call.
async fn describe(
    conn: &mut mysql_async::Conn,
    sql: &str,
) -> Result<(usize, Vec<Column>), BackendError> {
    let stmt = conn.prep(sql).await.map_err(convert_error)?;
    let out = (
        usize::from(stmt.num_params()),
        stmt.columns().iter().map(convert_column).collect(),
    );
    conn.close(stmt).await.map_err(convert_error)?;
    Ok(out)
}

fn convert_column(c: &mysql_async::Column) -> Column {
    Column {
        name: c.name_str().into_owned(),
        table: c.table_str().into_owned(),
        column_type: c.column_type(),
        flags: c.flags(),
        charset: c.character_set(),
        length: c.column_length(),
        decimals: c.decimals(),
    }
}

fn convert_row(row: mysql_async::Row) -> Row {
    row.unwrap()
        .into_iter()
        .map(|v| match v {
            mysql_async::Value::NULL => Value::Null,
            mysql_async::Value::Bytes(b) => Value::Bytes(b),
            mysql_async::Value::Int(i) => Value::Int(i),
            mysql_async::Value::UInt(u) => Value::UInt(u),
            mysql_async::Value::Float(f) => Value::Double(f as f64),
            mysql_async::Value::Double(f) => Value::Double(f),
            // The text protocol never yields the temporal variants; render them as text if a
            // driver path ever does.
            other => Value::Bytes(other.as_sql(true).trim_matches('\'').as_bytes().to_vec()),
        })
        .collect()
}

fn convert_error(e: mysql_async::Error) -> BackendError {
    match e {
        mysql_async::Error::Server(s) => BackendError::Server {
            code: s.code,
            state: s.state,
            message: s.message,
        },
        mysql_async::Error::Io(io) => BackendError::Closed(io.to_string()),
        mysql_async::Error::Driver(mysql_async::DriverError::ConnectionClosed) => {
            BackendError::Closed("connection to the server is closed".to_string())
        }
        other => BackendError::Other(other.to_string()),
    }
}

/// The names of the isolation and read-only variables a server does not know, as renames to
/// the ones it does (see [`crate::sqltext::rename_system_variables`]): MySQL before 5.7.20 and
/// MariaDB before 11.1.1 know only `tx_isolation` / `tx_read_only`, MySQL 8.0 only
/// `transaction_isolation` / `transaction_read_only`, MySQL 5.7.20+ and MariaDB 11.1.1+ both.
/// `version` is the server's (MariaDB's own number, not its `5.5.5-` prefix).
fn isolation_names(version: (u16, u16, u16)) -> Option<&'static [(&'static str, &'static str)]> {
    const TO_TX: &[(&str, &str)] = &[
        ("transaction_isolation", "tx_isolation"),
        ("transaction_read_only", "tx_read_only"),
    ];
    const TO_TRANSACTION: &[(&str, &str)] = &[
        ("tx_isolation", "transaction_isolation"),
        ("tx_read_only", "transaction_read_only"),
    ];
    match version {
        v if v < (5, 7, 20) => Some(TO_TX),
        v if v < (8, 0, 0) => None,
        v if v < (10, 0, 0) => Some(TO_TRANSACTION),
        v if v < (11, 1, 1) => Some(TO_TX),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::isolation_names;

    #[test]
    fn isolation_variables_are_renamed_for_servers_without_them() {
        let to = |v| isolation_names(v).map(|r| r[0].1);
        assert_eq!(to((10, 11, 19)), Some("tx_isolation"));
        assert_eq!(to((5, 6, 51)), Some("tx_isolation"));
        assert_eq!(to((5, 7, 25)), None);
        assert_eq!(to((8, 0, 36)), Some("transaction_isolation"));
        assert_eq!(to((11, 4, 2)), None);
    }
}
