//! `LOCK TABLES` / `UNLOCK TABLES` (SPEC §7.6): the locking connections are kept for the session,
//! and a statement naming a table outside the locked set gets 1100 from the gateway.

use super::{Session, run_simple};
use crate::backend::{BackendConn, Response};
use crate::datahost::held::TableLocks;
use crate::engine::cursor::ExecCtx;
use crate::frontend::error::MysqlError;
use crate::route::Plan;

impl Session {
    /// `LOCK TABLES` (SPEC §7.6): refused in a transaction and while tables are locked
    /// (Mycat's 1003 texts); otherwise each dataNode's statement runs on the session's
    /// connection to that node (taken from its pool when it has none, in dataNode order, so
    /// two sessions locking the same tables wait for each other rather than deadlock), and
    /// those connections are kept until `UNLOCK TABLES`.
    ///
    /// Returns the warnings the nodes raised (`WAIT n` beyond the maximum: 1292), kept for SHOW
    /// WARNINGS.
    ///
    /// Errors: a node's own (1100, 1146, 1099...), naming it; the nodes locked before it are
    /// unlocked again, so either every node holds the locks or none does.
    pub(super) async fn lock_tables(
        &mut self,
        l: crate::route::LockTables,
    ) -> Result<u16, MysqlError> {
        // Mycat refuses it whenever autocommit is off; with autocommit off and nothing run
        // yet there is nothing to commit, and MySQL's own pattern (`SET autocommit = 0; LOCK
        // TABLES ...; ...; COMMIT; UNLOCK TABLES`, also what `mysqldump --no-autocommit`
        // writes) must work, so only a transaction that began (BEGIN, or statements) is.
        if self.in_transaction || self.held.has_pinned() {
            return Err(MysqlError::new(
                1003,
                "HY000",
                "can't lock table in transaction!",
            ));
        }
        if self.held.locks().is_some() {
            return Err(MysqlError::new(1003, "HY000", "can't lock multi-table"));
        }
        let mut taken: Vec<(String, Box<dyn BackendConn>)> = Vec::new();
        // Each locked node's warning count, in `taken`'s order.
        let mut warned: Vec<u16> = Vec::new();
        let mut failure = None;
        for t in &l.targets {
            let got = self.ctx().take_conn(&t.node, true).await;
            let mut conn = match got {
                Ok(t) => t.conn,
                Err(e) => {
                    failure = Some(e.into());
                    break;
                }
            };
            let done = match conn.query(&t.sql).await {
                Ok(Response::Ok(ok)) => Ok(ok.warnings),
                // Never for LOCK TABLES; read out all the same, as `run_simple` does.
                Ok(Response::Rows { mut rows, .. }) => {
                    let mut read = Ok(0);
                    while let Some(r) = futures::StreamExt::next(&mut rows).await {
                        if let Err(e) = r {
                            read = Err(e);
                            break;
                        }
                    }
                    read
                }
                Err(e) => Err(e),
            };
            match done {
                Ok(n) => {
                    warned.push(n);
                    taken.push((t.node.clone(), conn));
                }
                Err(e) => {
                    let error = self.logical_names(
                        &t.node,
                        MysqlError::backend(format!("dataNode {}", t.node), &e),
                    );
                    if self.held.sticky().is_some() {
                        self.held.keep(t.node.clone(), conn);
                    }
                    failure = Some(error);
                    break;
                }
            }
        }
        if let Some(e) = failure {
            for (node, mut conn) in taken {
                if run_simple(conn.as_mut(), "UNLOCK TABLES").await.is_err() {
                    conn.abandon();
                    continue;
                }
                if self.held.sticky().is_some() {
                    self.held.keep(node, conn);
                }
            }
            return Err(e);
        }
        tracing::debug!(connection = self.id, nodes = taken.len(), "LOCK TABLES");
        let count = warned.iter().fold(0u16, |a, n| a.saturating_add(*n));
        if count > 0 {
            let mut conns: Vec<&mut (dyn BackendConn + 'static)> = taken
                .iter_mut()
                .zip(&warned)
                .filter(|(_, n)| **n > 0)
                .map(|((_, c), _)| c.as_mut())
                .collect();
            self.warnings = crate::backend::show_warnings(&mut conns).await;
            self.warning_count = count;
        }
        let locks = TableLocks::new(
            l.tables.iter().map(|t| t.table.clone()).collect(),
            l.targets.iter().map(|t| t.node.clone()).collect(),
        );
        self.held.hold_locks(locks, taken);
        Ok(count)
    }

    /// Releases the session's table locks (`UNLOCK TABLES` on every connection that holds
    /// them); its kept connections go back to their pools when nothing else keeps them
    /// ([`Session::held`]). Nothing to do without locks.
    ///
    /// Errors: a node where `UNLOCK TABLES` failed (its connection is closed, never pooled:
    /// the locks end with it); the others are unlocked all the same.
    pub(super) async fn unlock_tables(&mut self) -> Result<(), MysqlError> {
        Ok(self.held.unlock_tables().await?)
    }

    /// MySQL's 1100 for a statement naming a table outside the session's `LOCK TABLES` set
    /// (spelled as the statement spells it), before anything reaches a backend.
    pub(super) fn unlocked_table(&self, plan: &Plan) -> Option<MysqlError> {
        let locks = self.held.locks()?;
        let missing = plan.tables.iter().find(|t| !locks.holds(t))?;
        let text = plan.targets.first().map_or("", |t| &t.sql);
        let spelled = text
            .to_ascii_uppercase()
            .find(missing.as_str())
            .map_or(missing.to_ascii_lowercase(), |at| {
                text[at..at + missing.len()].to_string()
            });
        Some(MysqlError::new(
            1100,
            "HY000",
            format!("Table '{spelled}' was not locked with LOCK TABLES"),
        ))
    }
}
