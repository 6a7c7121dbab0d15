//! Table locks (`LOCK TABLES`, SPEC §7.6) on a session's held connections, and what is left to
//! do with its connections when the session ends ([`Leaving`]).

use super::{HeldConns, HeldError, run_simple};
use crate::backend::BackendConn;

/// The tables a session locked (`LOCK TABLES`, SPEC §7.6) and the dataNodes whose kept
/// connections hold the locks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableLocks {
    /// Logical table names, upper-cased, as the router gives them (a table locked under
    /// several aliases may appear more than once).
    tables: Vec<String>,
    /// The dataNodes locked, in the order the locks were taken.
    nodes: Vec<String>,
}

impl TableLocks {
    /// The lock set of `tables` (upper-cased logical names) held on `nodes`.
    pub fn new(tables: Vec<String>, nodes: Vec<String>) -> TableLocks {
        TableLocks { tables, nodes }
    }

    /// Whether `table` (upper-cased) is in the lock set, under any alias.
    pub fn holds(&self, table: &str) -> bool {
        self.tables.iter().any(|t| t == table)
    }

    /// The dataNodes whose connections hold the locks.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }

    /// Whether every locked table was dropped ([`HeldConns::drop_locked`]).
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }
}

impl HeldConns {
    /// `tables` (upper-cased logical names) were dropped: they leave the lock set, under
    /// every alias. Once it is empty ([`TableLocks::is_empty`]) MariaDB has left LOCK TABLES
    /// mode, and so should the session ([`HeldConns::unlock_tables`]).
    pub fn drop_locked(&mut self, tables: &[String]) {
        if let Some(locks) = self.locks.as_mut() {
            locks.tables.retain(|t| !tables.contains(t));
        }
    }
}

impl HeldConns {
    /// The session now holds table locks: `conns` (each locked dataNode's connection) are
    /// kept until [`HeldConns::unlock_tables`].
    pub fn hold_locks(&mut self, locks: TableLocks, conns: Vec<(String, Box<dyn BackendConn>)>) {
        self.kept.extend(conns);
        self.locks = Some(locks);
    }

    /// Releases the table locks: `UNLOCK TABLES` on every kept connection of a locked node;
    /// the kept connections go back to their pools unless the session is sticky. Nothing to
    /// do without locks.
    ///
    /// Errors: [`HeldError::Node`] for the first node where it failed (its connection is
    /// closed, never pooled: the locks end with it); the others are unlocked all the same.
    pub async fn unlock_tables(&mut self) -> Result<(), HeldError> {
        let Some(l) = self.locks.take() else {
            return Ok(());
        };
        let mut failed = None;
        for node in l.nodes() {
            let Some(conn) = self.kept.get_mut(node) else {
                continue;
            };
            if let Err(e) = run_simple(conn.as_mut(), "UNLOCK TABLES").await {
                tracing::warn!(connection = self.connection, %node, error = %e, "UNLOCK TABLES failed: the connection is closed");
                if let Some(mut c) = self.kept.remove(node) {
                    c.abandon();
                }
                failed.get_or_insert_with(|| HeldError::Node {
                    node: node.clone(),
                    source: e,
                });
            }
        }
        if !self.keeps() {
            self.kept.clear();
        }
        failed.map_or(Ok(()), Err)
    }

    /// The session is no longer sticky and lets its kept connections go (their pools reset
    /// them). Table locks must be released first ([`HeldConns::unlock_tables`]).
    pub fn let_go(&mut self) {
        self.sticky = None;
        self.kept.clear();
    }

    /// What the end of the session leaves to do with what it holds ([`Leaving`]); kept
    /// connections without table locks go back to their pools at once.
    pub fn leave(&mut self) -> Leaving {
        let pinned: Vec<_> = self.pinned.drain().collect();
        let locked = self.locks.take().is_some();
        let kept = match locked {
            true => self.kept.drain().collect(),
            false => {
                self.kept.clear();
                Vec::new()
            }
        };
        Leaving {
            connection: self.connection,
            pinned,
            kept,
            locked,
        }
    }
}

/// The connections of a session that ended ([`HeldConns::leave`]): the ones pinned to a
/// transaction the client left open are rolled back before they are reused; table locks never
/// go back to a pool: `UNLOCK TABLES` on every connection that may hold them (a transaction's
/// too, after its rollback), and one where it fails is closed.
pub struct Leaving {
    connection: u32,
    pinned: Vec<(String, Box<dyn BackendConn>)>,
    kept: Vec<(String, Box<dyn BackendConn>)>,
    locked: bool,
}

impl Leaving {
    /// Whether there is anything left to do.
    pub fn is_empty(&self) -> bool {
        self.pinned.is_empty() && !self.locked
    }

    /// Does it (on a task of its own, which a graceful shutdown waits for).
    pub async fn run(self) {
        let id = self.connection;
        if self.locked {
            let mut conns = self.kept;
            for (node, mut conn) in self.pinned {
                let _ = run_simple(conn.as_mut(), "ROLLBACK").await;
                conns.push((node, conn));
            }
            for (node, mut conn) in conns {
                if let Err(e) = run_simple(conn.as_mut(), "UNLOCK TABLES").await {
                    tracing::info!(connection = id, %node, error = %e, "UNLOCK TABLES after the client left failed: the connection is closed");
                    conn.abandon();
                }
            }
            return;
        }
        for (node, mut conn) in self.pinned {
            let mut done = run_simple(conn.as_mut(), "ROLLBACK").await;
            if done.as_ref().is_err_and(|e| e.server_error().is_some()) {
                // The first call may only have read the end of a statement that was
                // interrupted when the client left (1317): the ROLLBACK itself follows.
                done = run_simple(conn.as_mut(), "ROLLBACK").await;
            }
            if let Err(e) = done {
                tracing::warn!(connection = id, %node, error = %e, "rollback after client disconnect failed");
            }
        }
    }

    /// Without a runtime to do it on: connections holding table locks are closed (never
    /// pooled with them); pinned ones without go back to their pools, whose reset rolls back.
    pub fn abandon(self) {
        if self.locked {
            for (_, mut conn) in self.kept.into_iter().chain(self.pinned) {
                conn.abandon();
            }
        }
    }
}
