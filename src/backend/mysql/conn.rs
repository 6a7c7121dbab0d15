//! One live MariaDB/MySQL connection: the session state it carries (schema, `FOUND_ROWS()`,
//! what kind of statements it ran), its reset before reuse, and the lexing defaults read from the
//! server.

use super::*;

/// A connection checked out again within this time of its return skips the liveness round trip (when it needs
/// no reset either): a server that died since is noticed by the statement itself. Longer idle
/// connections are checked before they are handed out, as every one was before.
pub(super) const RECENTLY_USED: Duration = Duration::from_secs(1);

/// A raw connection, the database it has selected, and what may be left on it (see
/// [`super::super::stateless`]).
pub(super) struct Conn {
    pub(super) conn: mysql_async::Conn,
    /// Interrupts its statements (made once: handed out for every statement).
    pub(super) canceller: Arc<KillQuery>,
    pub(super) database: Option<String>,
    /// A statement that may have left session state ran since the last reset (or its result was
    /// not read to the end, or it ended with an error or warnings): reset before the next holder.
    pub(super) dirty: bool,
    /// A statement ran since the last reset.
    pub(super) used: bool,
    /// Handed out without a reset after another holder used it: a statement that may read
    /// session state (`FOUND_ROWS()`, `SHOW WARNINGS`...) gets a reset first.
    pub(super) inherited: bool,
    /// The gateway's `START TRANSACTION` ran and no `COMMIT`/`ROLLBACK` has ended it cleanly
    /// since: returned like this, the connection is reset (which rolls back) before reuse.
    pub(super) open_transaction: bool,
    /// `START TRANSACTION` is owed: it goes in the next statement's packet
    /// ([`BackendConn::begin`]).
    pub(super) begin_pending: bool,
    /// `FOUND_ROWS()` may still be a previous holder's: the connection was handed out again,
    /// and MariaDB's COM_RESET_CONNECTION does not clear it. A statement that names it gets
    /// [`CLEAR_FOUND_ROWS`] first, in the same packet.
    pub(super) foreign_found_rows: bool,
    /// A command was sent and the future waiting for its answer was dropped before it arrived
    /// (a client killed or gone mid-statement: the session's task ends with it). The answer,
    /// or what is left of it after USE's or START TRANSACTION's, may still come, and would be
    /// read as the next command's: the next holder would get another statement's rows. Such a
    /// connection is closed, never reused. (mysql_async's futures are not cancellation-safe
    /// there; a result set dropped between rows is, it reads the rest out itself.)
    pub(super) in_flight: bool,
    /// The last statement's rows were dropped before their end (a merge stopped reading at its
    /// LIMIT, another dataNode failed, the client left). mysql_async reads the rest before the
    /// next command and reports an error that rest ends with as that command's own: a
    /// statement a `KILL QUERY` interrupted meanwhile would fail the next statement with 1317.
    /// The next statement reads it out first ([`PooledConn::query`]).
    pub(super) unread: bool,
    /// The warnings of the statement's result, once read to its end
    /// ([`BackendConn::warning_count`]).
    pub(super) warnings: Arc<AtomicU16>,
}

/// An empty result that sets `FOUND_ROWS()` to 0 (as on a connection that ran no SELECT yet),
/// leaving nothing else.
pub(super) const CLEAR_FOUND_ROWS: &str = "SELECT 1 FROM DUAL WHERE 0";

/// How a statement bears on what a connection carries to its next holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Leaves and reads no session state ([`super::super::stateless::is_stateless`]).
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
    /// statements are refused by the router), always with hex XIDs (`super::super::xa::Xid::mysql`):
    /// `XA START` opens a transaction as `START TRANSACTION` does, `XA COMMIT` / `XA ROLLBACK`
    /// end it, `XA END` / `XA PREPARE` leave nothing else.
    pub(super) fn of(sql: &str) -> Kind {
        match sql {
            "START TRANSACTION" => Kind::Begin,
            "COMMIT" | "ROLLBACK" => Kind::End,
            _ if sql.starts_with("XA START X'") => Kind::Begin,
            _ if sql.starts_with("XA COMMIT X'") || sql.starts_with("XA ROLLBACK X'") => Kind::End,
            _ if sql.starts_with("XA END X'") || sql.starts_with("XA PREPARE X'") => {
                Kind::Stateless
            }
            _ if super::super::stateless::is_stateless(sql) => Kind::Stateless,
            _ => Kind::Other,
        }
    }
}

impl Conn {
    pub(super) fn new(
        conn: mysql_async::Conn,
        opts: mysql_async::Opts,
        connect_timeout: Duration,
    ) -> Self {
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
    pub(super) async fn reset(&mut self) -> Result<(), BackendError> {
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
    pub(super) async fn before(&mut self, sql: &str) -> Result<Kind, BackendError> {
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
    pub(super) fn needs_reset(&self) -> bool {
        self.dirty || self.open_transaction || self.in_flight
    }

    /// Errors when an answer may still be on its way ([`Conn::in_flight`]): the pool then
    /// closes the connection instead of reusing it.
    pub(super) fn check_in_step(&self) -> Result<(), BackendError> {
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
pub(super) async fn lexing_defaults(
    conn: &mut mysql_async::Conn,
    address: &str,
) -> Result<(), BackendError> {
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
