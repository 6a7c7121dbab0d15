//! One live PostgreSQL connection to one database: what it learned about that database's tables,
//! the savepoint that keeps a failed statement from aborting the transaction, the reset on return
//! to the pool, and the canceller that interrupts its statements.

use super::*;

/// A live connection to one database, with what it learned about that database's tables
/// (forgotten after DDL on the connection).
pub(super) struct Conn {
    pub(super) client: tokio_postgres::Client,
    /// Interrupts its statements (made once: handed out for every statement).
    pub(super) canceller: Arc<PgCancel>,
    pub(super) database: String,
    pub(super) tables: HashMap<String, TableInfo>,
    /// Relation names whose column flags were looked up (found or not).
    pub(super) flags_looked_up: std::collections::HashSet<String>,
    /// Table oid → (name, column number → what the catalog says of the column).
    pub(super) flags: HashMap<u32, (String, HashMap<i16, CatalogColumn>)>,
    /// A statement that may have left session state ran since the last reset: reset before the
    /// next holder (see [`crate::backend::stateless`]).
    pub(super) dirty: bool,
    /// A statement ran since the last reset.
    pub(super) used: bool,
    /// Handed out without a reset after another holder used it: a statement that may read
    /// session state (`lastval()`, settings) gets a reset first.
    pub(super) inherited: bool,
    /// Statement-level rollback, as MySQL has it (see [`StatementGuard`]).
    pub(super) guard: StatementGuard,
}

/// The savepoint each statement of a transaction block runs under.
pub(super) const STATEMENT_SAVEPOINT: &str = "manx_statement";

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
pub(super) struct StatementGuard {
    /// In a transaction block (START TRANSACTION/BEGIN ran, no COMMIT/ROLLBACK since).
    pub(super) in_transaction: bool,
    /// The statement savepoint exists.
    pub(super) savepoint: bool,
    /// A statement's rows failed after they began to stream: the transaction must be rolled
    /// back to the savepoint before anything else runs on it.
    pub(super) failed: Arc<std::sync::atomic::AtomicBool>,
}

impl StatementGuard {
    /// Follows the transaction-control statements (MySQL text); `true` when `mysql` is one, or
    /// a `SET` (PostgreSQL's `SET TRANSACTION` must come before any statement, a savepoint
    /// included), and so runs without a savepoint.
    pub(super) fn control(&mut self, mysql: &str) -> bool {
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
    pub(super) fn end(&mut self) {
        self.in_transaction = false;
        self.savepoint = false;
        self.failed
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// What to send in front of a statement of the transaction, or `None` outside one.
    pub(super) fn prefix(&mut self) -> Option<String> {
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
pub(super) type CatalogColumn = (ColumnFlags, Option<types::Declared>);

/// What DISCARD ALL does, without deallocating tokio-postgres's own prepared statements.
pub(super) const RESET: &str = "ROLLBACK; RESET ALL; DISCARD TEMP; DISCARD SEQUENCES; CLOSE ALL; UNLISTEN *; SELECT pg_advisory_unlock_all()";

impl Conn {
    /// Clears what earlier statements left on the connection ([`RESET`]).
    pub(super) async fn reset(&mut self) -> Result<(), BackendError> {
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
    pub(super) async fn undo_statement(&mut self, error: &BackendError) {
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
    pub(super) async fn undo_streamed_failure(&mut self) {
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
    pub(super) async fn before(&mut self, mysql: &str) -> Result<(), BackendError> {
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

/// Interrupts a PostgreSQL connection's statement with the protocol's cancel request.
pub(super) struct PgCancel(pub(super) tokio_postgres::CancelToken);

impl std::fmt::Debug for PgCancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PgCancel")
    }
}

#[async_trait]
impl super::super::Canceller for PgCancel {
    async fn cancel(&self) -> Result<(), BackendError> {
        self.0.cancel_query(NoTls).await.map_err(error::convert)
    }
}
