//! A session's transaction over its held connections: a dataNode joining it ([`Opening`]),
//! savepoints on every pinned connection, and its end ([`end_each`], [`Ended`]).

use super::{HeldConns, HeldError, Taken, run_simple};
use crate::backend::{BackendConn, BackendError, SavepointOp, Xid};
use crate::sqltext::SavepointName;

/// How a connection joining a transaction starts it ([`open_on`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening<'a> {
    /// `START TRANSACTION` ([`BackendConn::begin`]).
    Begin,
    /// The XA branch (`gtrid`, the dataNode) ([`BackendConn::xa_start`]).
    Xa(&'a str),
    /// `SET autocommit = 0`: MySQL's way to use transactions under `LOCK TABLES` (`START
    /// TRANSACTION` would release the locks); `SET autocommit = 1` ends it.
    AutocommitOff,
}

/// What ending a transaction, or rolling it back to a savepoint, left on its connections
/// ([`HeldConns::end_transaction`], [`HeldConns::rollback_to_savepoint`]).
#[derive(Debug, Default)]
pub struct Ended {
    /// The sum of the connections' warning counts (saturating).
    pub warning_count: u16,
    /// Their `SHOW WARNINGS` rows (Level, Code, Message), at most
    /// [`crate::backend::MAX_ERROR_COUNT`]; empty when the count is 0.
    pub warnings: Vec<Vec<Option<String>>>,
}

impl HeldConns {
    /// `node` joins the transaction on `taken`'s connection: `opening` starts it there
    /// ([`open_on`]; [`Opening::AutocommitOff`] whatever was asked while tables are locked),
    /// every savepoint of the transaction is set on it, oldest first, and it is pinned.
    ///
    /// Errors: [`HeldError::Node`] when the start failed (a kept connection stays kept);
    /// [`HeldError::Replay`] when a savepoint failed (the connection is let go: dropped).
    pub async fn join(
        &mut self,
        node: &str,
        taken: Taken,
        opening: Opening<'_>,
    ) -> Result<(), HeldError> {
        let Taken { mut conn, kept } = taken;
        let opening = match self.locks {
            Some(_) => Opening::AutocommitOff,
            None => opening,
        };
        if let Err(e) = open_on(conn.as_mut(), node, opening).await {
            if kept {
                self.kept.insert(node.to_string(), conn);
            }
            return Err(e);
        }
        for name in &self.savepoints {
            conn.savepoint(SavepointOp::Set, name)
                .await
                .map_err(|source| HeldError::Replay {
                    node: node.to_string(),
                    savepoint: name.written().to_string(),
                    source,
                })?;
        }
        self.pinned.insert(node.to_string(), conn);
        Ok(())
    }

    /// `SAVEPOINT name` on every pinned connection; the name then ends the list (moved there
    /// when it was in it).
    ///
    /// Errors: [`HeldError::Interrupted`] (nothing sent); [`HeldError::Savepoint`] (see
    /// [`HeldConns::savepoint_on_each`]).
    pub async fn set_savepoint(&mut self, name: SavepointName) -> Result<(), HeldError> {
        self.check_interrupted()?;
        self.savepoint_on_each(SavepointOp::Set, &name).await?;
        self.savepoints.retain(|s| s.key() != name.key());
        self.savepoints.push(name);
        Ok(())
    }

    /// `ROLLBACK TO SAVEPOINT name` on every pinned connection; later savepoints go. Allowed
    /// in an interrupted transaction, which it mends: back at a savepoint set before the
    /// statement that failed part-way, every node agrees again. Answers the warnings it left
    /// on the connections (1196, as ROLLBACK's: changes to non-transactional tables stay).
    ///
    /// Errors: [`HeldError::NoSuchSavepoint`] (nothing sent); [`HeldError::Savepoint`].
    pub async fn rollback_to_savepoint(
        &mut self,
        name: &SavepointName,
    ) -> Result<Ended, HeldError> {
        let at = self.savepoint_index(name)?;
        self.savepoint_on_each(SavepointOp::RollbackTo, name)
            .await?;
        self.savepoints.truncate(at + 1);
        self.interrupted = None;
        let mut pinned: Vec<_> = self.pinned.iter_mut().collect();
        pinned.sort_by(|a, b| a.0.cmp(b.0));
        let mut conns: Vec<_> = pinned.into_iter().map(|(_, c)| c.as_mut()).collect();
        Ok(warnings_left(&mut conns).await)
    }

    /// `RELEASE SAVEPOINT name` on every pinned connection; it and later savepoints go.
    ///
    /// Errors: [`HeldError::NoSuchSavepoint`], then [`HeldError::Interrupted`] (nothing
    /// sent); [`HeldError::Savepoint`].
    pub async fn release_savepoint(&mut self, name: &SavepointName) -> Result<(), HeldError> {
        let at = self.savepoint_index(name)?;
        self.check_interrupted()?;
        self.savepoint_on_each(SavepointOp::Release, name).await?;
        self.savepoints.truncate(at);
        Ok(())
    }

    fn check_interrupted(&self) -> Result<(), HeldError> {
        match &self.interrupted {
            Some(reason) => Err(HeldError::Interrupted {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    fn savepoint_index(&self, name: &SavepointName) -> Result<usize, HeldError> {
        self.savepoints
            .iter()
            .position(|s| s.key() == name.key())
            .ok_or_else(|| HeldError::NoSuchSavepoint {
                written: name.written().to_string(),
            })
    }

    /// Runs a savepoint statement on every pinned connection, all at once.
    ///
    /// Errors: [`HeldError::Savepoint`], the first failing node's error with a reason naming
    /// the nodes where it failed and those where it succeeded. The nodes then disagree about
    /// the transaction's state: it is marked interrupted.
    async fn savepoint_on_each(
        &mut self,
        op: SavepointOp,
        name: &SavepointName,
    ) -> Result<(), HeldError> {
        let results = futures::future::join_all(
            self.pinned
                .iter_mut()
                .map(|(node, conn)| async move { (node.clone(), conn.savepoint(op, name).await) }),
        )
        .await;
        let mut done = Vec::new();
        let mut failed = Vec::new();
        let mut first: Option<(String, BackendError)> = None;
        for (node, result) in results {
            match result {
                Ok(()) => done.push(node),
                Err(e) => {
                    failed.push(format!("{node} ({e})"));
                    first.get_or_insert((node, e));
                }
            }
        }
        let Some((node, source)) = first else {
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
        tracing::warn!(connection = self.connection, "{reason}");
        self.interrupted = Some(reason.clone());
        Err(HeldError::Savepoint {
            node,
            source,
            reason,
        })
    }

    /// Ends the open transaction with `sql` (`COMMIT` or `ROLLBACK`) on every pinned
    /// connection ([`end_each`]); they go back to their pools, or to the kept set when the
    /// session keeps its connections (neither ends table locks nor session state). Under table
    /// locks the connections get their autocommit back (`SET autocommit = 1`, [`Opening`]).
    /// The savepoints go; the interrupted mark stays (the caller decides). Answers the
    /// warnings the ending left on the connections (`ROLLBACK`'s 1196: changes to
    /// non-transactional tables stay), read before they go back.
    ///
    /// Errors: [`HeldError::Ended`].
    pub async fn end_transaction(&mut self, sql: &str) -> Result<Ended, HeldError> {
        let mut pinned = self.leave_transaction();
        let ended = end_each(
            pinned
                .iter_mut()
                .map(|(node, conn)| (node.as_str(), conn.as_mut())),
            sql,
            self.connection,
        )
        .await;
        let left = {
            let mut conns: Vec<_> = pinned.iter_mut().map(|(_, c)| c.as_mut()).collect();
            warnings_left(&mut conns).await
        };
        self.after_transaction(pinned).await;
        ended.map(|()| left)
    }

    /// Takes back the connections a transaction was ended on (taken by
    /// [`HeldConns::leave_transaction`], ended with [`end_each`]): under table locks their
    /// autocommit comes back (the locks stay); they stay held when the session keeps its
    /// connections, and go back to their pools otherwise.
    pub async fn after_transaction(&mut self, mut pinned: Vec<(String, Box<dyn BackendConn>)>) {
        if self.locks.is_some() {
            for (node, conn) in &mut pinned {
                if let Err(e) = run_simple(conn.as_mut(), "SET autocommit = 1").await {
                    tracing::warn!(connection = self.connection, %node, error = %e, "SET autocommit = 1 after the transaction failed");
                }
            }
        }
        if self.keeps() {
            self.kept.extend(pinned);
        }
    }

    /// The transaction's pinned connections, sorted by dataNode, for the caller to end it (an
    /// XA transaction's coordinator); the savepoints go.
    pub fn leave_transaction(&mut self) -> Vec<(String, Box<dyn BackendConn>)> {
        self.savepoints.clear();
        let mut pinned: Vec<_> = self.pinned.drain().collect();
        pinned.sort_by(|a, b| a.0.cmp(&b.0));
        pinned
    }
}

/// The warnings the statement just run left on `conns`: their counts summed (saturating) and,
/// when there are any, their `SHOW WARNINGS` rows, read before the connections go elsewhere.
async fn warnings_left(conns: &mut [&mut (dyn BackendConn + 'static)]) -> Ended {
    let warning_count = conns
        .iter()
        .filter_map(|c| c.warning_count())
        .map(|n| n.load(std::sync::atomic::Ordering::Relaxed))
        .fold(0u16, u16::saturating_add);
    let warnings = match warning_count {
        0 => Vec::new(),
        _ => crate::backend::show_warnings(conns).await,
    };
    Ended {
        warning_count,
        warnings,
    }
}

/// Starts a transaction on `node`'s connection as `opening` says.
///
/// Errors: [`HeldError::Node`].
pub async fn open_on(
    conn: &mut dyn BackendConn,
    node: &str,
    opening: Opening<'_>,
) -> Result<(), HeldError> {
    match opening {
        Opening::Begin => conn.begin().await,
        Opening::Xa(gtrid) => conn.xa_start(&Xid::new(gtrid, node)).await,
        Opening::AutocommitOff => run_simple(conn, "SET autocommit = 0").await,
    }
    .map_err(|source| HeldError::Node {
        node: node.to_string(),
        source,
    })
}

/// Sends `sql` (`COMMIT` or `ROLLBACK`) on each node's connection, all at once (one round trip
/// for the transaction, not one per node; each answers for itself, so the outcome per node is
/// what it was one after another). `connection`: the session's id, for logs.
///
/// Errors: [`HeldError::Ended`], naming the nodes where it failed and those where it succeeded
/// (DECISIONS.md 16), logged at error level.
pub async fn end_each<'c>(
    conns: impl Iterator<Item = (&'c str, &'c mut (dyn BackendConn + 'static))>,
    sql: &str,
    connection: u32,
) -> Result<(), HeldError> {
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
    tracing::error!(connection, "{message}");
    Err(HeldError::Ended { message })
}
