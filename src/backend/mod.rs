//! Backends: one connection interface ([`BackendConn`]) over the database drivers, the pooled
//! [`Backend`] that hands connections out, and the values that travel through them.
//!
//! Results stream: [`Response::Rows`] carries the column definitions and an async stream of rows
//! read from the socket as the consumer asks for them, so a million-row result never sits in
//! memory. Rows of the text protocol keep the server's text encoding ([`Value::Bytes`]) and pass
//! through to the client unchanged.

pub mod deadline;
#[cfg(test)]
pub mod fake;
pub mod grants;
pub mod mysql;
mod pool;
pub mod position;
pub mod postgres;
pub mod stateless;
pub mod xa;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU16;

use async_trait::async_trait;
use futures::stream::BoxStream;

pub use mysql_async::consts::{ColumnFlags, ColumnType};
pub use xa::Xid;

/// One column of a result set, as the backend described it (MySQL column definition fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Column label (the alias when there is one).
    pub name: String,
    /// Table label (alias) the column comes from, or empty.
    pub table: String,
    pub column_type: ColumnType,
    pub flags: ColumnFlags,
    /// Collation id.
    pub charset: u16,
    /// Maximum display length.
    pub length: u32,
    pub decimals: u8,
}

/// One value of a row. The text protocol yields `Bytes` (the server's text form) or `Null`.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bytes(Vec<u8>),
    Int(i64),
    UInt(u64),
    Double(f64),
}

impl Value {
    /// The value as text (the server's text form; numbers printed; `None` for NULL).
    pub fn to_text(&self) -> Option<String> {
        match self {
            Value::Null => None,
            Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
            Value::Int(n) => Some(n.to_string()),
            Value::UInt(n) => Some(n.to_string()),
            Value::Double(n) => Some(n.to_string()),
        }
    }
}

/// One row: a value per column.
pub type Row = Vec<Value>;

/// A stream of rows borrowed from a connection (the connection is busy until it ends or drops).
pub type RowStream<'a> = BoxStream<'a, Result<Row, BackendError>>;

/// What a statement that returns no rows reports (MySQL OK packet fields).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OkInfo {
    pub affected_rows: u64,
    pub last_insert_id: Option<u64>,
    pub warnings: u16,
    pub info: String,
}

/// The answer to one statement.
pub enum Response<'a> {
    Ok(OkInfo),
    Rows {
        columns: Arc<[Column]>,
        rows: RowStream<'a>,
    },
}

/// A backend failure. Drivers keep their details; callers decide with the predicates (retry,
/// failover, pass through) and never by matching message text.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BackendError {
    /// The server answered with an error: passed to the client with its own errno and SQLSTATE.
    /// Only what a server sent (a PostgreSQL error mapped to MySQL's errno is one).
    #[error("{message}")]
    Server {
        code: u16,
        state: String,
        message: String,
    },
    /// The gateway refused on the server's behalf, without the server having said anything: a
    /// merge the result's column types do not allow, a statement the PostgreSQL dialect cannot
    /// translate, a write to a standby or without the cluster's write lease. The client gets
    /// this errno, SQLSTATE and message exactly as it would a server's; decisions that read
    /// the server's state (a rolled-back transaction, an unknown XID) must not read it as one.
    #[error("{message}")]
    Refused {
        code: u16,
        state: String,
        message: String,
    },
    /// The connection could not be made or broke (refused, reset, closed).
    #[error("{0}")]
    Closed(String),
    /// No answer in time (connect timeout, pool wait timeout).
    #[error("{0}")]
    Timeout(String),
    /// Anything else the driver reports (protocol errors, unsupported features).
    #[error("{0}")]
    Other(String),
}

impl BackendError {
    /// The connection is unusable: it failed to open or broke mid-statement.
    pub fn is_closed(&self) -> bool {
        matches!(self, BackendError::Closed(_))
    }

    /// The operation timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, BackendError::Timeout(_))
    }

    /// The server's own error: (errno, SQLSTATE, message). `None` for everything else, the
    /// gateway's refusals ([`BackendError::Refused`]) included.
    pub fn server_error(&self) -> Option<(u16, &str, &str)> {
        match self {
            BackendError::Server {
                code,
                state,
                message,
            } => Some((*code, state, message)),
            _ => None,
        }
    }

    /// The gateway's own refusal ([`BackendError::Refused`]): (errno, SQLSTATE, message).
    pub fn refusal(&self) -> Option<(u16, &str, &str)> {
        match self {
            BackendError::Refused {
                code,
                state,
                message,
            } => Some((*code, state, message)),
            _ => None,
        }
    }

    /// The error as the client sees it when it has its own MySQL errno: a server's answer or
    /// the gateway's refusal, (errno, SQLSTATE, message); `None` when no server could be used
    /// (closed, timed out, a driver failure), which the front end reports as 1105 with context.
    pub fn mysql_error(&self) -> Option<(u16, &str, &str)> {
        match self {
            BackendError::Server {
                code,
                state,
                message,
            }
            | BackendError::Refused {
                code,
                state,
                message,
            } => Some((*code, state, message)),
            _ => None,
        }
    }

    /// The statement got an answer (the server's error or the gateway's refusal) rather than
    /// finding no usable server: another server or dataNode would be refused the same, so no
    /// read is retried or falls back elsewhere on such an error.
    pub fn is_answer(&self) -> bool {
        self.mysql_error().is_some()
    }

    /// The gateway's refusal with MySQL's `code` and `state` (SQLSTATE, 5 characters) and a
    /// message naming what is refused ([`BackendError::Refused`]).
    pub fn refused(code: u16, state: &str, message: impl Into<String>) -> Self {
        BackendError::Refused {
            code,
            state: state.to_string(),
            message: message.into(),
        }
    }
}

/// A savepoint statement of a client's transaction ([`BackendConn::savepoint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SavepointOp {
    /// `SAVEPOINT name`.
    Set,
    /// `ROLLBACK TO SAVEPOINT name`: the work since it is undone, it stays, later ones go.
    RollbackTo,
    /// `RELEASE SAVEPOINT name`: it and later ones go, the work stays.
    Release,
}

impl SavepointOp {
    /// The statement in MySQL's syntax, the name backquoted.
    pub fn mysql(self, name: &crate::sqltext::SavepointName) -> String {
        self.with_name(&name.mysql())
    }

    /// The statement with `quoted` (a name quoted for the backend) as its savepoint.
    pub fn with_name(self, quoted: &str) -> String {
        match self {
            SavepointOp::Set => format!("SAVEPOINT {quoted}"),
            SavepointOp::RollbackTo => format!("ROLLBACK TO SAVEPOINT {quoted}"),
            SavepointOp::Release => format!("RELEASE SAVEPOINT {quoted}"),
        }
    }

    /// The statement's leading words, for messages.
    pub fn verb(self) -> &'static str {
        match self {
            SavepointOp::Set => "SAVEPOINT",
            SavepointOp::RollbackTo => "ROLLBACK TO SAVEPOINT",
            SavepointOp::Release => "RELEASE SAVEPOINT",
        }
    }
}

/// A connection to one physical database server, checked out of its pool. Dropping it returns
/// it to the pool.
#[async_trait]
pub trait BackendConn: Send + Sync {
    /// The server's `host:port` (the [`Backend::address`] of the pool it came from).
    fn address(&self) -> &str;

    /// Makes `database` the connection's current database (a no-op when it already is).
    async fn select_database(&mut self, database: &str) -> Result<(), BackendError>;

    /// Runs one statement (text protocol) and returns its first result: an OK or a row stream.
    async fn query<'a>(&'a mut self, sql: &'a str) -> Result<Response<'a>, BackendError>;

    /// Starts a transaction on the connection (the gateway's `START TRANSACTION`). A backend may
    /// send it together with the next statement instead of on its own: it must then behave as
    /// if it had run first (that statement runs inside the transaction), and a `COMMIT` or
    /// `ROLLBACK` before any statement ends the still empty transaction without a round trip.
    ///
    /// Errors: the server refused it or the connection broke (when sent at once).
    async fn begin(&mut self) -> Result<(), BackendError> {
        match self.query("START TRANSACTION").await? {
            Response::Ok(_) => Ok(()),
            Response::Rows { mut rows, .. } => {
                while let Some(r) = futures::StreamExt::next(&mut rows).await {
                    r?;
                }
                Ok(())
            }
        }
    }

    /// Runs a client's savepoint statement in the connection's open transaction (MySQL
    /// `SAVEPOINT`, `ROLLBACK TO SAVEPOINT`, `RELEASE SAVEPOINT` with the name backquoted;
    /// PostgreSQL's own forms, which keep its statement savepoint apart). Like any statement
    /// it sends a deferred [`BackendConn::begin`] first.
    ///
    /// Errors: the server's (MySQL 1305 for a savepoint it does not hold) or a broken
    /// connection.
    async fn savepoint(
        &mut self,
        op: SavepointOp,
        name: &crate::sqltext::SavepointName,
    ) -> Result<(), BackendError> {
        let sql = op.mysql(name);
        match self.query(&sql).await? {
            Response::Ok(_) => Ok(()),
            Response::Rows { mut rows, .. } => {
                while let Some(r) = futures::StreamExt::next(&mut rows).await {
                    r?;
                }
                Ok(())
            }
        }
    }

    /// Starts XA branch `xid` on the connection instead of a plain transaction (MySQL
    /// `XA START`; PostgreSQL `BEGIN`, its branch being named at prepare time).
    ///
    /// Errors: the server refused it (MySQL 1399 when a transaction is already open) or the
    /// connection broke.
    async fn xa_start(&mut self, xid: &Xid) -> Result<(), BackendError> {
        xa::run(self, &format!("XA START {}", xid.mysql())).await
    }

    /// Ends and prepares branch `xid` (MySQL `XA END` then `XA PREPARE`; PostgreSQL
    /// `PREPARE TRANSACTION`): from here the branch survives the connection, and only its
    /// commit or rollback, from any connection to the server, ends it.
    ///
    /// Errors: the server refused (the branch is then rolled back by the server or must be by
    /// the caller) or the connection broke (the branch may or may not be prepared).
    async fn xa_prepare(&mut self, xid: &Xid) -> Result<(), BackendError> {
        xa::run(self, &format!("XA END {}", xid.mysql())).await?;
        xa::run(self, &format!("XA PREPARE {}", xid.mysql())).await
    }

    /// Commits branch `xid`: with `one_phase`, the branch this connection started, not
    /// prepared (MySQL `XA END` + `XA COMMIT ... ONE PHASE`; PostgreSQL `COMMIT`); else a
    /// prepared branch, from any connection (MySQL `XA COMMIT`; PostgreSQL `COMMIT PREPARED`).
    ///
    /// Errors: the server's (MySQL 1397 `XAER_NOTA` when it knows no such branch, see
    /// [`xa::unknown_xid`]) or a broken connection.
    async fn xa_commit(&mut self, xid: &Xid, one_phase: bool) -> Result<(), BackendError> {
        if one_phase {
            xa::run(self, &format!("XA END {}", xid.mysql())).await?;
            xa::run(self, &format!("XA COMMIT {} ONE PHASE", xid.mysql())).await
        } else {
            xa::run(self, &format!("XA COMMIT {}", xid.mysql())).await
        }
    }

    /// Rolls branch `xid` back: when not `prepared`, the active branch this connection started
    /// (MySQL `XA END` + `XA ROLLBACK`; PostgreSQL `ROLLBACK`); else a prepared branch, from
    /// any connection (MySQL `XA ROLLBACK`; PostgreSQL `ROLLBACK PREPARED`).
    ///
    /// Errors: as [`BackendConn::xa_commit`].
    async fn xa_rollback(&mut self, xid: &Xid, prepared: bool) -> Result<(), BackendError> {
        if !prepared {
            // Already ended (a failed prepare may leave it IDLE): the rollback decides.
            let _ = xa::run(self, &format!("XA END {}", xid.mysql())).await;
        }
        xa::run(self, &format!("XA ROLLBACK {}", xid.mysql())).await
    }

    /// Why the server cannot prepare XA branches, when it cannot (PostgreSQL with
    /// `max_prepared_transactions = 0`); `None` when it can (MySQL and MariaDB always can).
    ///
    /// Errors: the connection broke or the server refused the query.
    async fn xa_unready(&mut self) -> Result<Option<String>, BackendError> {
        Ok(None)
    }

    /// The prepared branches the server holds for the connection's database's server (MySQL
    /// `XA RECOVER`: every database's; PostgreSQL `pg_prepared_xacts` of the connection's
    /// database). Branches of other coordinators are included: callers keep their own.
    ///
    /// Errors: the server refused (MySQL 1401 without `XA_RECOVER_ADMIN`) or the connection
    /// broke.
    async fn xa_recover(&mut self) -> Result<Vec<Xid>, BackendError> {
        xa::mysql_recover(self).await
    }

    /// Describes a statement with `?` placeholders without running it: (number of parameters,
    /// result columns). Used to answer a client's COM_STMT_PREPARE with real metadata.
    ///
    /// Errors: the server's error for a statement it cannot prepare.
    async fn describe(&mut self, sql: &str) -> Result<(usize, Vec<Column>), BackendError>;

    /// Whether the server is a read-only standby, for the heartbeat: PostgreSQL answers
    /// `SELECT pg_is_in_recovery()` (true on a streaming or archive-recovery standby until it
    /// is promoted). `None` where the notion does not apply (MySQL: a replica's writability is
    /// not checked, as in Mycat).
    ///
    /// Errors: the connection broke or the server refused the query.
    async fn in_recovery(&mut self) -> Result<Option<bool>, BackendError> {
        Ok(None)
    }

    /// The privileges of this connection's account that give more than manx needs, with the
    /// reason for each ([`grants`]): MySQL and MariaDB read `SHOW GRANTS` (the current user's
    /// grants and those of the role enabled at login), PostgreSQL the role's attributes and
    /// memberships in `pg_roles`. Empty for an account holding only what manx needs.
    ///
    /// Errors: the connection broke or the server refused the query.
    async fn excess_privileges(&mut self) -> Result<Vec<grants::ExcessPrivilege>, BackendError>;

    /// How this server computes the `WEIGHT_STRING(RTRIM(x))` that the merge compares string
    /// keys by. Weights of different kinds cannot be compared with each other.
    fn string_weights(&self) -> StringWeights {
        StringWeights::Collation
    }

    /// A handle that interrupts, from another task, the statement this connection is running
    /// (`KILL QUERY <thread id>` on a new connection to the same MySQL server, PostgreSQL's
    /// cancel request). `None` when the driver offers none (or, for PostgreSQL, before the
    /// connection has a database).
    fn canceller(&self) -> Option<Arc<dyn Canceller>> {
        None
    }

    /// The warning count of the statement this connection runs, once its result has been read
    /// to the end (the `warnings` field of the EOF or OK packet that ended it); 0 while it runs
    /// and when its result was dropped unread. Shared, so that the caller reads it while a row
    /// stream still borrows the connection, before it ends its own result set. `None` when the
    /// driver counts no warnings (PostgreSQL: its notices are not MySQL warnings).
    fn warning_count(&self) -> Option<Arc<AtomicU16>> {
        None
    }

    /// The connection must not be used again (a statement on it gave no answer in time,
    /// [`deadline`]): when dropped, it is closed instead of going back to its pool, whatever
    /// it was doing. The default does nothing, for connections no pool reuses.
    fn abandon(&mut self) {}

    /// Fences the server before another takes its writes (cluster mode): asks it to refuse
    /// writes from now on (MySQL `SET GLOBAL read_only = 1`; PostgreSQL
    /// `default_transaction_read_only` for new transactions through `ALTER SYSTEM` and a
    /// configuration reload), then ends every other connection of this account there, whether
    /// or not the first step was allowed. Returns whether the server was made read-only (the
    /// refusal's text when not) and how many connections were ended.
    ///
    /// Errors: the connection broke; the default: not supported.
    async fn fence(&mut self) -> Result<(Result<(), String>, usize), BackendError> {
        Err(BackendError::Other(
            "fencing is not supported by this backend".to_string(),
        ))
    }

    /// Undoes [`BackendConn::fence`]'s read-only setting on a server about to take the writes
    /// (MySQL `SET GLOBAL read_only = 0`; PostgreSQL `ALTER SYSTEM RESET
    /// default_transaction_read_only` and a reload).
    ///
    /// Errors: the server refused (the account may not change it) or the connection broke;
    /// the default: not supported.
    async fn unfence(&mut self) -> Result<(), BackendError> {
        Err(BackendError::Other(
            "fencing is not supported by this backend".to_string(),
        ))
    }

    /// From now on, every write and `COMMIT` this connection runs also reads the replication
    /// position it produced into `acked` ([`position`]), in the same round trip; a failure to
    /// read it fails the statement (it was not acknowledged). The default does nothing: a
    /// backend without positions (PostgreSQL, for now) tracks nothing.
    fn track_writes(&mut self, acked: Arc<position::Acked>) {
        let _ = acked;
    }
}

/// The kind of string weights a server computes for the merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StringWeights {
    /// MySQL: the column collation's weights (`_ci` collations fold case and accents).
    Collation,
    /// PostgreSQL: the UTF-8 bytes of the value (byte order, what collation `C` sorts by).
    Utf8Bytes,
}

/// Interrupts the statement one backend connection runs ([`BackendConn::canceller`]). The
/// interrupted statement ends with the server's error (MySQL 1317 `Query execution was
/// interrupted`, PostgreSQL 57014); a connection that is idle meanwhile is left alone by MySQL
/// but may have its next statement interrupted if it already started one: callers drop the
/// handle as soon as the statement it was taken for has ended.
#[async_trait]
pub trait Canceller: Send + Sync + fmt::Debug {
    /// Sends the interruption. Errors: the server cannot be reached or refuses it.
    async fn cancel(&self) -> Result<(), BackendError>;

    /// Ends the connection itself, and so its statement, at once even when the server is
    /// blocked sending rows nobody reads (MySQL's `KILL CONNECTION`; PostgreSQL: the cancel
    /// request). The connection's pool notices it closed and replaces it.
    async fn close(&self) -> Result<(), BackendError> {
        self.cancel().await
    }
}

/// A pool of connections to one physical database server (a writeHost or readHost).
#[async_trait]
pub trait Backend: Send + Sync + fmt::Debug {
    /// A connection from the pool for a statement on `database`, preferably one that already
    /// has it selected (SPEC §4.10: Mycat keeps pooled connections per database), opening one
    /// when none is idle and the pool has room; waits a bounded time when the pool is at
    /// `maxCon`. The caller still calls [`BackendConn::select_database`]: the connection may be
    /// on another database.
    ///
    /// Errors: `Closed` when the server cannot be reached, `Timeout` when no connection frees up
    /// or the connect does not finish in time.
    async fn acquire(&self, database: &str) -> Result<Box<dyn BackendConn>, BackendError>;

    /// Opens connections until `connections` are in the pool (Mycat's `minCon`: connections
    /// opened per source at start-up). Errors: the first connection that could not be opened.
    async fn warm_up(&self, connections: usize) -> Result<(), BackendError>;

    /// A new connection opened beside the pool (not counted in `maxCon`), for the heartbeat:
    /// a pool exhausted by clients must not make a healthy server look dead.
    ///
    /// Errors: `Closed` when the server cannot be reached, `Timeout` when the connect does not
    /// finish in time, `Server` when it refuses the login.
    async fn connect(&self) -> Result<Box<dyn BackendConn>, BackendError>;

    /// Closes the pool's idle connections (after a failover away from this server, SPEC §4.7).
    fn close_idle(&self);

    /// `host:port`, for messages and logs.
    fn address(&self) -> &str;

    /// Connections checked out of the pool now (Mycat's "active" count, which
    /// `balanceType="2"` compares).
    fn in_use(&self) -> usize;

    /// Open connections of the pool, idle or checked out (the manager port's `SIZE` of a
    /// server's pool).
    fn size(&self) -> usize;
}

/// MySQL's default `max_error_count`: `SHOW WARNINGS` lists at most this many.
pub const MAX_ERROR_COUNT: usize = 64;

/// The rows of `SHOW WARNINGS` on each connection (Level, Code, Message as text), in the
/// connections' order, at most [`MAX_ERROR_COUNT`]: the warnings the statement just run on them
/// left. A connection that cannot answer adds nothing (the statement itself succeeded).
pub async fn show_warnings(
    conns: &mut [&mut (dyn BackendConn + 'static)],
) -> Vec<Vec<Option<String>>> {
    use futures::StreamExt;
    let mut out = Vec::new();
    for conn in conns.iter_mut() {
        let Ok(Response::Rows { mut rows, .. }) = conn.query("SHOW WARNINGS").await else {
            continue;
        };
        while let Some(Ok(row)) = rows.next().await {
            if out.len() >= MAX_ERROR_COUNT {
                continue;
            }
            out.push(row.iter().take(3).map(|v| v.to_text()).collect());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::BackendError;

    #[test]
    fn only_a_servers_answer_is_a_server_error_and_a_refusal_keeps_its_errno() {
        let server = BackendError::Server {
            code: 1213,
            state: "40001".into(),
            message: "Deadlock found".into(),
        };
        let refused = BackendError::refused(1235, "42000", "not yet");
        let closed = BackendError::Closed("reset".into());
        let timeout = BackendError::Timeout("late".into());
        let other = BackendError::Other("odd".into());

        assert_eq!(
            server.server_error(),
            Some((1213, "40001", "Deadlock found"))
        );
        assert_eq!(server.refusal(), None);
        assert_eq!(refused.server_error(), None, "no server said it");
        assert_eq!(refused.refusal(), Some((1235, "42000", "not yet")));
        // The client sees both with their own errno.
        assert_eq!(server.mysql_error(), server.server_error());
        assert_eq!(refused.mysql_error(), refused.refusal());
        // An answer is never retried elsewhere; a server that could not be used may be.
        assert!(server.is_answer() && refused.is_answer());
        for e in [&closed, &timeout, &other] {
            assert!(!e.is_answer(), "{e:?}");
            assert_eq!(e.mysql_error(), None, "{e:?}");
        }
        assert!(closed.is_closed() && !refused.is_closed() && !refused.is_timeout());
        assert_eq!(refused.to_string(), "not yet");
    }
}
