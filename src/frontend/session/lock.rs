//! `LOCK TABLES` / `UNLOCK TABLES` (SPEC §7.6): the locking connections are kept for the session,
//! and a statement naming a table outside the locked set gets 1100 from the gateway.

use super::{Session, run_simple};
use crate::backend::BackendConn;
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
    /// Errors: a node's own (1100, 1146, 1099...), naming it; the nodes locked before it are
    /// unlocked again, so either every node holds the locks or none does.
    pub(super) async fn lock_tables(
        &mut self,
        l: crate::route::LockTables,
    ) -> Result<(), MysqlError> {
        // Mycat refuses it whenever autocommit is off; with autocommit off and nothing run
        // yet there is nothing to commit, and MySQL's own pattern (`SET autocommit = 0; LOCK
        // TABLES ...; ...; COMMIT; UNLOCK TABLES`, also what `mysqldump --no-autocommit`
        // writes) must work, so only a transaction that began (BEGIN, or statements) is.
        if self.in_transaction || !self.pinned.is_empty() {
            return Err(MysqlError::new(
                1003,
                "HY000",
                "can't lock table in transaction!",
            ));
        }
        if self.locks.is_some() {
            return Err(MysqlError::new(1003, "HY000", "can't lock multi-table"));
        }
        let mut taken: Vec<(String, Box<dyn BackendConn>)> = Vec::new();
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
            let done = run_simple(conn.as_mut(), &t.sql).await;
            match done {
                Ok(()) => taken.push((t.node.clone(), conn)),
                Err(e) => {
                    let error = self.logical_names(
                        &t.node,
                        MysqlError::backend(format!("dataNode {}", t.node), &e),
                    );
                    if self.sticky.is_some() {
                        self.kept.insert(t.node.clone(), conn);
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
                if self.sticky.is_some() {
                    self.kept.insert(node, conn);
                }
            }
            return Err(e);
        }
        tracing::debug!(connection = self.id, nodes = taken.len(), "LOCK TABLES");
        self.kept.extend(taken);
        self.locks = Some(l);
        Ok(())
    }

    /// Releases the session's table locks (`UNLOCK TABLES` on every connection that holds
    /// them); its kept connections go back to their pools when nothing else keeps them
    /// ([`Session::kept`]). Nothing to do without locks.
    ///
    /// Errors: a node where `UNLOCK TABLES` failed (its connection is closed, never pooled:
    /// the locks end with it); the others are unlocked all the same.
    pub(super) async fn unlock_tables(&mut self) -> Result<(), MysqlError> {
        let Some(l) = self.locks.take() else {
            return Ok(());
        };
        let mut failed = None;
        for t in &l.targets {
            let Some(conn) = self.kept.get_mut(&t.node) else {
                continue;
            };
            if let Err(e) = run_simple(conn.as_mut(), "UNLOCK TABLES").await {
                tracing::warn!(connection = self.id, node = %t.node, error = %e, "UNLOCK TABLES failed: the connection is closed");
                if let Some(mut c) = self.kept.remove(&t.node) {
                    c.abandon();
                }
                failed
                    .get_or_insert_with(|| MysqlError::backend(format!("dataNode {}", t.node), &e));
            }
        }
        if !self.keeps() {
            self.kept.clear();
        }
        match failed {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    /// MySQL's 1100 for a statement naming a table outside the session's `LOCK TABLES` set
    /// (spelled as the statement spells it), before anything reaches a backend.
    pub(super) fn unlocked_table(&self, plan: &Plan) -> Option<MysqlError> {
        let locks = self.locks.as_ref()?;
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
