//! Transactions across dataNodes: the connections pinned to the open transaction, their `BEGIN` or
//! `XA START`, savepoints on every pinned connection, `COMMIT` / `ROLLBACK` on each (or through
//! the XA coordinator), and the implicit per-node transactions of a multi-node write.

use std::sync::Arc;

use super::{Session, XaTx, run_simple};
use crate::backend::BackendConn;
use crate::backend::SavepointOp;
use crate::frontend::error::MysqlError;
use crate::route::Plan;
use crate::sqltext::SavepointName;

/// Starts a transaction on `node`'s connection; the error names the node.
pub(super) async fn begin_on(conn: &mut dyn BackendConn, node: &str) -> Result<(), MysqlError> {
    conn.begin().await.map_err(|source| {
        MysqlError::from(crate::engine::EngineError {
            node: node.to_string(),
            source,
            applied: None,
        })
    })
}

/// MySQL's 1305 for a savepoint the transaction does not hold, naming it as the client wrote
/// it.
pub(super) fn no_such_savepoint(name: &SavepointName) -> MysqlError {
    MysqlError::new(
        1305,
        "42000",
        format!("SAVEPOINT {} does not exist", name.written()),
    )
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
    conn.xa_start(&crate::backend::Xid::new(gtrid, node))
        .await
        .map_err(|source| {
            MysqlError::from(crate::engine::EngineError {
                node: node.to_string(),
                source,
                applied: None,
            })
        })?;
    xa.joined(gtrid, node);
    Ok(())
}

impl Session {
    /// Whether a transaction is open for the client: `BEGIN` ran, or `autocommit` is off (every
    /// statement is in one), or connections are pinned to one.
    pub(super) fn transaction_open(&self) -> bool {
        self.in_transaction || !self.autocommit || !self.pinned.is_empty()
    }

    /// Where savepoint `name` is in the open transaction's list ([`Session::savepoints`]).
    pub(super) fn savepoint_index(&self, name: &SavepointName) -> Option<usize> {
        self.savepoints.iter().position(|s| s.key() == name.key())
    }

    /// Runs a savepoint statement on every connection pinned to the transaction, all at once
    /// (each connection holds every savepoint of the list, see [`Session::savepoints`]).
    ///
    /// Errors: the first failing node's server error (or 1105), with a message naming the
    /// nodes where it failed and those where it succeeded. The nodes then disagree about the
    /// transaction's state: it is marked interrupted (only `ROLLBACK` ends it).
    pub(super) async fn savepoint_on_each(
        &mut self,
        op: SavepointOp,
        name: &SavepointName,
    ) -> Result<(), MysqlError> {
        let results = futures::future::join_all(
            self.pinned
                .iter_mut()
                .map(|(node, conn)| async move { (node.clone(), conn.savepoint(op, name).await) }),
        )
        .await;
        let mut done = Vec::new();
        let mut failed = Vec::new();
        let mut first: Option<MysqlError> = None;
        for (node, result) in results {
            match result {
                Ok(()) => done.push(node),
                Err(e) => {
                    first
                        .get_or_insert_with(|| MysqlError::backend(format!("dataNode {node}"), &e));
                    failed.push(format!("{node} ({e})"));
                }
            }
        }
        let Some(mut error) = first else {
            return Ok(());
        };
        done.sort();
        failed.sort();
        let reason = format!(
            "{} {} failed on dataNode {}; it succeeded on [{}]",
            op.verb(),
            name.written(),
            failed.join(", "),
            done.join(", ")
        );
        tracing::warn!(connection = self.id, "{reason}");
        error.message = format!("{reason}; the transaction can only be rolled back");
        self.interrupted = Some(reason);
        Err(error)
    }

    /// Sets the open transaction's savepoints, oldest first, on the connection of `node`,
    /// which joins the transaction now (see [`Session::savepoints`] for why this is exact).
    ///
    /// Errors: the server's, naming the node; the connection is then not pinned.
    pub(super) async fn replay_savepoints(
        savepoints: &[SavepointName],
        conn: &mut dyn BackendConn,
        node: &str,
    ) -> Result<(), MysqlError> {
        for name in savepoints {
            conn.savepoint(SavepointOp::Set, name).await.map_err(|e| {
                let mut error = MysqlError::backend(format!("dataNode {node}"), &e);
                error.message = format!(
                    "dataNode {node} joining the transaction: SAVEPOINT {} failed: {}",
                    name.written(),
                    error.message
                );
                error
            })?;
        }
        Ok(())
    }

    /// Sends `sql` (COMMIT or ROLLBACK) on every pinned connection and releases them.
    ///
    /// Errors: names the dataNodes where it failed and those where it succeeded (DECISIONS.md
    /// item 16); the event is logged at error level.
    pub(super) async fn end_transaction(&mut self, sql: &str) -> Result<(), MysqlError> {
        self.in_transaction = false;
        self.xa_on = false;
        self.savepoints.clear();
        let mut pinned: Vec<_> = self.pinned.drain().collect();
        pinned.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(tx) = self.xa.take() {
            let branches = pinned
                .into_iter()
                .map(|(node, conn)| crate::xa::Branch {
                    written: tx.written.contains(&node),
                    node,
                    conn,
                })
                .collect();
            return end_xa(&self.server.xa, &tx.gtrid, branches, sql, self.id).await;
        }
        let ended = end_on_each(
            pinned
                .iter_mut()
                .map(|(node, conn)| (node.as_str(), conn.as_mut())),
            sql,
            self.id,
        )
        .await;
        // ROLLBACK's warnings (1196: changes to non-transactional tables stay) are the
        // statement's, for its OK and SHOW WARNINGS.
        let warned = |c: &dyn BackendConn| {
            c.warning_count()
                .map_or(0, |n| n.load(std::sync::atomic::Ordering::Relaxed))
        };
        let count = pinned
            .iter()
            .map(|(_, c)| warned(c.as_ref()))
            .fold(0u16, u16::saturating_add);
        if sql == "ROLLBACK" && count > 0 {
            let mut conns: Vec<_> = pinned.iter_mut().map(|(_, c)| c.as_mut()).collect();
            self.warnings = super::diagnostics::collect_warnings(&mut conns).await;
            self.warning_count = count;
        }
        if self.locks.is_some() {
            // The transaction ran under `SET autocommit = 0` on them ([`Session::open_tx`]):
            // the connections' own autocommit comes back, their table locks stay.
            for (node, conn) in &mut pinned {
                if let Err(e) = run_simple(conn.as_mut(), "SET autocommit = 1").await {
                    tracing::warn!(connection = self.id, %node, error = %e, "SET autocommit = 1 after the transaction failed");
                }
            }
        }
        if self.keeps() {
            // COMMIT and ROLLBACK release neither table locks nor session state.
            self.kept.extend(pinned);
        }
        ended
    }

    /// Whether the session keeps its backend connections between statements
    /// ([`Session::kept`]).
    pub(super) fn keeps(&self) -> bool {
        self.sticky.is_some() || self.locks.is_some()
    }

    /// Starts the transaction on a connection joining it: `START TRANSACTION` (or `XA START`),
    /// or under table locks `SET autocommit = 0` (MySQL's way to use transactions with
    /// `LOCK TABLES`: `START TRANSACTION` would release the locks).
    pub(super) async fn open_tx(
        &mut self,
        conn: &mut dyn BackendConn,
        node: &str,
    ) -> Result<(), MysqlError> {
        if self.locks.is_some() {
            return run_simple(conn, "SET autocommit = 0")
                .await
                .map_err(|e| MysqlError::backend(format!("dataNode {node}"), &e));
        }
        let two_phase = self.generation().config.system.two_phase_commit;
        if self.xa.is_none() && (self.xa_on || two_phase) {
            self.xa = Some(XaTx {
                gtrid: self.server.xa.begin(self.id),
                written: Default::default(),
            });
        }
        match &self.xa {
            Some(tx) => xa_start_on(&self.server.xa, conn, &tx.gtrid, node).await,
            None => begin_on(conn, node).await,
        }
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
    let ended = end_on_each(each, sql, id).await;
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

/// Sends `sql` (COMMIT or ROLLBACK) on each node's connection, all at once.
///
/// Errors: names the nodes where it failed and those where it succeeded (DECISIONS.md 16),
/// logged at error level.
async fn end_on_each<'c>(
    conns: impl Iterator<Item = (&'c str, &'c mut (dyn BackendConn + 'static))>,
    sql: &str,
    id: u32,
) -> Result<(), MysqlError> {
    // Every node is asked at once (one round trip for the transaction, not one per node);
    // each answers for itself, so the outcome per node is what it was one after another.
    let results = futures::future::join_all(
        conns.map(|(node, conn)| async move { (node, run_simple(conn, sql).await) }),
    )
    .await;
    let mut done = Vec::new();
    let mut failed = Vec::new();
    for (node, result) in results {
        match result {
            Ok(()) => done.push(node.to_string()),
            Err(e) => failed.push(format!("{node} ({e})")),
        }
    }
    if failed.is_empty() {
        return Ok(());
    }
    let message = format!(
        "{sql} failed on dataNode {}; it succeeded on [{}]",
        failed.join(", "),
        done.join(", ")
    );
    tracing::error!(connection = id, "{message}");
    Err(MysqlError::new(1180, "HY000", message))
}
