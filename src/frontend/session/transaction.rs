//! Transactions across dataNodes as the session runs them: a dataNode joining the open
//! transaction (plain, or an XA branch: [`Session::join`]), its end on every pinned connection
//! or through the XA coordinator, and the implicit per-node transactions of a multi-node write.
//! The connections themselves, their savepoints and the partial failures are
//! [`HeldConns`](crate::datahost::held::HeldConns)'s; their errors become the client's here
//! (`From<HeldError> for MysqlError`).

use std::sync::Arc;

use super::{Session, XaTx, run_simple};
use crate::backend::BackendConn;
use crate::datahost::held::{self, HeldError, Opening, Taken};
use crate::frontend::error::MysqlError;
use crate::route::Plan;

impl From<HeldError> for MysqlError {
    /// The client's error for a held connection's failure: the server's own errno where it
    /// answered, else 1105 naming the dataNode; 1180 for a `COMMIT` / `ROLLBACK` that failed
    /// on some nodes (DECISIONS.md 16), 1305 for an unknown savepoint, 1003 for an
    /// interrupted transaction (Mycat's text).
    fn from(e: HeldError) -> MysqlError {
        match e {
            HeldError::Datahost(e) => (*e).into(),
            HeldError::Setup { .. } => MysqlError::new(1105, "HY000", e.to_string()),
            HeldError::Node { node, source } => {
                MysqlError::backend(format!("dataNode {node}"), &source)
            }
            HeldError::Replay {
                node,
                savepoint,
                source,
            } => {
                let mut error = MysqlError::backend(format!("dataNode {node}"), &source);
                error.message = format!(
                    "dataNode {node} joining the transaction: SAVEPOINT {savepoint} failed: {}",
                    error.message
                );
                error
            }
            HeldError::Savepoint {
                node,
                source,
                reason,
            } => {
                let mut error = MysqlError::backend(format!("dataNode {node}"), &source);
                error.message = format!("{reason}; the transaction can only be rolled back");
                error
            }
            HeldError::Ended { message } => MysqlError::new(1180, "HY000", message),
            HeldError::NoSuchSavepoint { .. } => MysqlError::new(1305, "42000", e.to_string()),
            HeldError::Interrupted { .. } => MysqlError::new(1003, "HY000", e.to_string()),
        }
    }
}

/// Whether a statement's error means its server rolled back the whole transaction, not only
/// the statement: MySQL's deadlock victim (1213, also PostgreSQL's 40P01 / 40001 as mapped)
/// and the XA branch rollbacks (1402 `XA_RBROLLBACK`, 1613 `XA_RBTIMEOUT`, 1614
/// `XA_RBDEADLOCK`).
pub(super) fn ends_transaction(e: &crate::backend::BackendError) -> bool {
    e.server_error()
        .is_some_and(|(code, _, _)| matches!(code, 1213 | 1402 | 1613 | 1614))
}

/// Starts XA branch (`gtrid`, `node`) on `node`'s connection; the error names the node.
pub(super) async fn xa_start_on(
    xa: &crate::xa::Coordinator,
    conn: &mut dyn BackendConn,
    gtrid: &str,
    node: &str,
) -> Result<(), MysqlError> {
    held::open_on(conn, node, Opening::Xa(gtrid)).await?;
    xa.joined(gtrid, node);
    Ok(())
}

impl Session {
    /// Whether a transaction is open for the client: `BEGIN` ran, or `autocommit` is off (every
    /// statement is in one), or connections are pinned to one.
    pub(super) fn transaction_open(&self) -> bool {
        self.in_transaction || !self.autocommit || self.held.has_pinned()
    }

    /// Ends the open transaction with `sql` (COMMIT or ROLLBACK) on every pinned connection
    /// ([`crate::datahost::held::HeldConns::end_transaction`]), or through the XA coordinator
    /// when it is an XA transaction. Returns ROLLBACK's warning count (0 for COMMIT and a
    /// ROLLBACK without warnings): its warnings are then the session's diagnostics.
    ///
    /// Errors: names the dataNodes where it failed and those where it succeeded (DECISIONS.md
    /// item 16); the event is logged at error level.
    pub(super) async fn end_transaction(&mut self, sql: &str) -> Result<u16, MysqlError> {
        self.in_transaction = false;
        self.xa_on = false;
        if let Some(tx) = self.xa.take() {
            let branches = self
                .held
                .leave_transaction()
                .into_iter()
                .map(|(node, conn)| crate::xa::Branch {
                    written: tx.written.contains(&node),
                    node,
                    conn,
                })
                .collect();
            return end_xa(&self.server.xa, &tx.gtrid, branches, sql, self.id)
                .await
                .map(|()| 0);
        }
        let ended = self.held.end_transaction(sql).await?;
        // ROLLBACK's warnings (1196: changes to non-transactional tables stay) are the
        // statement's, for its OK and SHOW WARNINGS; a COMMIT may be another statement's
        // implicit one, whose diagnostics are that statement's.
        if sql == "ROLLBACK" && ended.warning_count > 0 {
            self.warnings = ended.warnings;
            self.warning_count = ended.warning_count;
            return Ok(ended.warning_count);
        }
        Ok(0)
    }

    /// `node` joins the open transaction on `taken`'s connection
    /// ([`crate::datahost::held::HeldConns::join`]): `START TRANSACTION`, or `XA START` when
    /// the transaction is (or now becomes, by `SET XA = ON` or `twoPhaseCommit`) an XA
    /// transaction, or under table locks `SET autocommit = 0`; then the transaction's
    /// savepoints.
    ///
    /// Errors: the server's, naming the node; the connection is then not pinned.
    pub(super) async fn join(&mut self, node: &str, taken: Taken) -> Result<(), MysqlError> {
        let gtrid = match self.held.locks() {
            Some(_) => None,
            None => {
                let two_phase = self.generation().config.system.two_phase_commit;
                if self.xa.is_none() && (self.xa_on || two_phase) {
                    self.xa = Some(XaTx {
                        gtrid: self.server.xa.begin(self.id),
                        written: Default::default(),
                    });
                }
                self.xa.as_ref().map(|tx| tx.gtrid.clone())
            }
        };
        let opening = gtrid.as_deref().map_or(Opening::Begin, Opening::Xa);
        let joined = self.held.join(node, taken, opening).await;
        // The branch started (for `show @@xa_session`), even when a savepoint failed after.
        if let Some(gtrid) = &gtrid
            && !matches!(joined, Err(HeldError::Node { .. }))
        {
            self.server.xa.joined(gtrid, node);
        }
        Ok(joined?)
    }
}

/// Ends the implicit per-node transactions of a multi-node write (`COMMIT` or `ROLLBACK`).
///
/// Errors: a COMMIT that failed on some nodes, naming those that committed (DECISIONS.md 16).
pub(super) async fn finish_implicit(
    xa: &Arc<crate::xa::Coordinator>,
    conns: &mut Vec<Box<dyn BackendConn>>,
    plan: &Plan,
    sql: &str,
    gtrid: Option<&str>,
    id: u32,
    locked: bool,
) -> Result<(), MysqlError> {
    if let Some(gtrid) = gtrid {
        // The coordinator takes the connections: it owns them until every branch is resolved.
        let branches = conns
            .drain(..)
            .zip(&plan.targets)
            .map(|(conn, t)| crate::xa::Branch {
                node: t.node.clone(),
                conn,
                written: true,
            })
            .collect();
        return end_xa(xa, gtrid, branches, sql, id).await;
    }
    let each = conns
        .iter_mut()
        .zip(&plan.targets)
        .map(|(conn, t)| (t.node.as_str(), conn.as_mut()));
    let ended = held::end_each(each, sql, id)
        .await
        .map_err(MysqlError::from);
    if locked {
        // Opened with `SET autocommit = 0` under table locks: back to autocommit.
        for (conn, t) in conns.iter_mut().zip(&plan.targets) {
            if let Err(e) = run_simple(conn.as_mut(), "SET autocommit = 1").await {
                tracing::warn!(connection = id, node = %t.node, error = %e, "SET autocommit = 1 failed");
            }
        }
    }
    ended
}

/// Ends XA transaction `gtrid` over `branches` with `sql`'s outcome (`COMMIT` or `ROLLBACK`)
/// through the coordinator (module [`crate::xa`]).
///
/// Errors: a commit that rolled back (1402 `XA_RBROLLBACK`, XA100, naming the dataNode or
/// the log) or a one-phase commit the server refused; a rollback that failed on some nodes
/// (1180, naming them: their servers roll the branches back as the connections close).
async fn end_xa(
    xa: &Arc<crate::xa::Coordinator>,
    gtrid: &str,
    branches: Vec<crate::xa::Branch>,
    sql: &str,
    id: u32,
) -> Result<(), MysqlError> {
    if sql == "COMMIT" {
        xa.commit(gtrid, branches).await.map_err(|e| {
            tracing::error!(connection = id, gtrid, error = %e, "XA commit failed");
            let (code, state) = e.code();
            MysqlError::new(code, &state, e.to_string())
        })
    } else {
        xa.rollback(gtrid, branches).await.map_err(|failed| {
            let nodes: Vec<String> = failed
                .iter()
                .map(|(node, e)| format!("{node} ({e})"))
                .collect();
            let message = format!("XA ROLLBACK failed on dataNode {}", nodes.join(", "));
            tracing::error!(connection = id, gtrid, "{message}");
            MysqlError::new(1180, "HY000", message)
        })
    }
}
