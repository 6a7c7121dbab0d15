//! The backend connections one client session holds, by dataNode ([`HeldConns`]): those pinned
//! to its open transaction, those kept for session affinity, with the transaction's savepoints,
//! its interrupted mark and the session's table locks.
//!
//! Transactions across dataNodes: from the client's `BEGIN` (or its first statement with
//! `autocommit = 0`) each dataNode a statement touches *joins* the transaction: the session's
//! connection to it gets `START TRANSACTION` (or `XA START`, or under table locks `SET
//! autocommit = 0`), then every savepoint the transaction already holds, and stays pinned until
//! `COMMIT` / `ROLLBACK`, which go to every pinned connection at once (DECISIONS.md item 16
//! for the partial failures). Session affinity (ProxySQL's "multiplexing disabled"): once a
//! statement left state a later one reads (a temporary table, `SELECT @x := 1`, `GET_LOCK`) or
//! tables are locked (`LOCK TABLES`, SPEC §7.6), every connection the session takes is kept
//! for it between statements.
//!
//! The question every caller asks — the session's own connection for this node, or a fresh
//! one — is answered here once ([`HeldConns::lease`], [`HeldConns::take`]). Fresh connections
//! come from [`Pools`] (the [`Cluster`] in the gateway, a fake in tests); the statements that
//! put a fresh one in the session's settings are the caller's (its `SET`s, which this layer
//! runs without reading). XA transactions stay with the session and the XA coordinator: this type
//! only starts a branch ([`Opening::Xa`]) and hands the pinned connections over
//! ([`HeldConns::leave_transaction`]).

use std::collections::HashMap;
use std::future::Future;

use futures::StreamExt;

use super::{Cluster, DatahostError, Intent};
use crate::backend::{BackendConn, BackendError, Response};
use crate::sqltext::SavepointName;

/// Where fresh connections come from: a dataNode's pool for the server an [`Intent`] asks
/// for, the dataNode's database selected ([`Cluster::acquire_for`]).
pub trait Pools: Sync {
    /// A connection for `node` on the server `intent` calls for.
    ///
    /// Errors: as [`Cluster::acquire_for`] (naming node, dataHost, server and address).
    fn acquire_for(
        &self,
        node: &str,
        intent: Intent,
    ) -> impl Future<Output = Result<Box<dyn BackendConn>, DatahostError>> + Send;
}

impl Pools for Cluster {
    fn acquire_for(
        &self,
        node: &str,
        intent: Intent,
    ) -> impl Future<Output = Result<Box<dyn BackendConn>, DatahostError>> + Send {
        Cluster::acquire_for(self, node, intent)
    }
}

/// What went wrong with a held connection, or with getting one. Each variant names the dataNode
/// and keeps the backend's error; the front end maps them to MySQL errors.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HeldError {
    /// No fresh connection could be had (boxed: the largest of these errors).
    #[error("{0}")]
    Datahost(Box<DatahostError>),
    /// A statement of the session's settings (`sql`) failed on a connection that was to take
    /// them.
    #[error("dataNode {node}: the session's `{sql}` failed: {source}")]
    Setup {
        node: String,
        sql: String,
        source: BackendError,
    },
    /// A statement the transaction or the table locks need (`START TRANSACTION`, `XA START`,
    /// `SET autocommit`, `UNLOCK TABLES`) failed on `node`'s connection.
    #[error("dataNode {node}: {source}")]
    Node { node: String, source: BackendError },
    /// `SAVEPOINT savepoint` (as the client wrote it) failed on the connection of `node`
    /// joining the transaction; the connection was let go, not pinned.
    #[error("dataNode {node} joining the transaction: SAVEPOINT {savepoint} failed: {source}")]
    Replay {
        node: String,
        savepoint: String,
        source: BackendError,
    },
    /// A savepoint statement failed on some pinned connections (`node`: the first that
    /// failed): `reason` names where it failed and where it succeeded; the transaction is now
    /// interrupted.
    #[error("{reason}")]
    Savepoint {
        node: String,
        source: BackendError,
        reason: String,
    },
    /// `COMMIT` / `ROLLBACK` failed on some connections: `message` names those and the ones
    /// where it succeeded (DECISIONS.md item 16).
    #[error("{message}")]
    Ended { message: String },
    /// The transaction holds no savepoint of that name (`written`: as the client wrote it).
    #[error("SAVEPOINT {written} does not exist")]
    NoSuchSavepoint { written: String },
    /// The transaction is interrupted ([`HeldConns::interrupted`]): only a rollback ends it.
    #[error("Transaction error, need to rollback: {reason}")]
    Interrupted { reason: String },
}

/// A connection for one statement on a node ([`HeldConns::lease`]).
pub enum Leased<'a> {
    /// The session's own, lent.
    Held(&'a mut (dyn BackendConn + 'static)),
    /// A fresh one; dropped, it goes back to its pool.
    Fresh(Box<dyn BackendConn>),
}

impl Leased<'_> {
    /// The connection.
    pub fn conn(&mut self) -> &mut (dyn BackendConn + 'static) {
        match self {
            Leased::Held(c) => &mut **c,
            Leased::Fresh(c) => c.as_mut(),
        }
    }
}

/// What a fresh connection of [`HeldConns::lease`] is for, which decides its server and set-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fresh {
    /// A statement the gateway runs for the session: the writeHost, with the session's
    /// settings.
    Session,
    /// A read of `information_schema` for a metadata query: a server chosen as for a read
    /// (`balance`), without the session's settings.
    Metadata,
}

/// A connection the session took for itself ([`HeldConns::take`]).
pub struct Taken {
    pub conn: Box<dyn BackendConn>,
    /// It was the one kept for the session (its settings are on it already); a fresh one had
    /// them run.
    pub kept: bool,
}

/// A session's backend connections by dataNode (module docs).
///
/// Invariants: a dataNode has at most one pinned connection; every pinned connection holds
/// every savepoint of [`HeldConns::savepoints`], in its order (a dataNode joining later gets
/// them replayed, which is exact: it did nothing in the transaction before it joined, so its
/// state at each earlier savepoint is its state at the join, and a later `ROLLBACK TO sp`
/// undoes all it did since while its connection stays in the transaction). The savepoint list
/// is the truth for the client: a name not in it gets 1305 without asking any backend.
pub struct HeldConns {
    /// The session's connection id, for logs.
    connection: u32,
    /// Connections pinned to the open transaction.
    pinned: HashMap<String, Box<dyn BackendConn>>,
    /// Connections kept for the session outside its transactions (session affinity): from the
    /// statement that left state a later one reads ([`HeldConns::make_sticky`]) or while
    /// tables are locked, every connection the session takes is kept, and its transactions'
    /// connections come from them and go back to them. Only [`HeldConns::let_go`] (the
    /// client's `COM_RESET_CONNECTION`, `COM_CHANGE_USER`) and the end of the session let
    /// them go; in their pools they are reset.
    kept: HashMap<String, Box<dyn BackendConn>>,
    /// What made the session keep its connections, for logs.
    sticky: Option<&'static str>,
    /// The session's table locks, until `UNLOCK TABLES`.
    locks: Option<TableLocks>,
    /// The open transaction's savepoints, oldest first (a name set again moves to the end, as
    /// MySQL replaces it).
    savepoints: Vec<SavepointName>,
    /// Why the open transaction can only be rolled back: a statement failed on some dataNodes
    /// after others had applied it (Mycat's "interrupted" transaction, SPEC §7.3).
    interrupted: Option<String>,
}

impl HeldConns {
    /// No connection held, for session `connection` (its id, for logs).
    pub fn new(connection: u32) -> HeldConns {
        HeldConns {
            connection,
            pinned: HashMap::new(),
            kept: HashMap::new(),
            sticky: None,
            locks: None,
            savepoints: Vec::new(),
            interrupted: None,
        }
    }

    /// Whether connections are pinned to a transaction.
    pub fn has_pinned(&self) -> bool {
        !self.pinned.is_empty()
    }

    /// Whether `node`'s connection is pinned to the transaction.
    pub fn is_pinned(&self, node: &str) -> bool {
        self.pinned.contains_key(node)
    }

    /// Whether a connection to `node` is kept for the session.
    pub fn is_kept(&self, node: &str) -> bool {
        self.kept.contains_key(node)
    }

    /// The dataNodes the session holds connections on (pinned or kept), sorted, once each.
    pub fn nodes(&self) -> Vec<String> {
        let mut nodes: Vec<String> = self
            .pinned
            .keys()
            .chain(self.kept.keys())
            .cloned()
            .collect();
        nodes.sort();
        nodes.dedup();
        nodes
    }

    /// Whether the session keeps the connections it takes: it is sticky or holds table locks.
    pub fn keeps(&self) -> bool {
        self.sticky.is_some() || self.locks.is_some()
    }

    /// What made the session sticky, if anything did.
    pub fn sticky(&self) -> Option<&'static str> {
        self.sticky
    }

    /// From now on the session keeps every connection it takes (`reason`: for logs).
    pub fn make_sticky(&mut self, reason: &'static str) {
        self.sticky = Some(reason);
    }

    /// The session's table locks.
    pub fn locks(&self) -> Option<&TableLocks> {
        self.locks.as_ref()
    }

    /// Why the open transaction can only be rolled back, when it can only be.
    pub fn interrupted(&self) -> Option<&str> {
        self.interrupted.as_deref()
    }

    /// Marks the open transaction as one that can only be rolled back.
    pub fn interrupt(&mut self, reason: String) {
        self.interrupted = Some(reason);
    }

    /// Takes the interrupted mark away, returning its reason.
    pub fn take_interrupted(&mut self) -> Option<String> {
        self.interrupted.take()
    }

    /// The open transaction's savepoints, oldest first.
    pub fn savepoints(&self) -> &[SavepointName] {
        &self.savepoints
    }

    /// The session's own connection for `node` when it may serve a statement the gateway runs
    /// for the session: the transaction's, else a kept one — unless tables are locked and
    /// `table` (the statement's table as spelled, if it names one) is not among them (the
    /// backend would refuse it there with 1100, while a pooled connection reads it).
    fn own(&mut self, node: &str, table: Option<&str>) -> Option<&mut (dyn BackendConn + 'static)> {
        if let Some(c) = self.pinned.get_mut(node) {
            return Some(c.as_mut());
        }
        let usable = match (&self.locks, table) {
            (Some(l), Some(t)) => l.holds(&t.to_ascii_uppercase()),
            _ => true,
        };
        if !usable {
            return None;
        }
        self.kept.get_mut(node).map(|c| c.as_mut())
    }

    /// The connection a statement the gateway runs for the session on `node` uses: the
    /// session's own where it may serve (see `table` in the rule of the pinned, then kept
    /// connection, module docs), else a fresh one — for [`Fresh::Session`] on the writeHost
    /// with `setup()` run on it (the session's settings), for [`Fresh::Metadata`] chosen as
    /// for a read, as it comes.
    ///
    /// Errors: [`HeldError::Datahost`] (no connection), [`HeldError::Setup`].
    pub async fn lease<P: Pools>(
        &mut self,
        pools: &P,
        node: &str,
        table: Option<&str>,
        fresh: Fresh,
        setup: impl FnOnce() -> Vec<String> + Send,
    ) -> Result<Leased<'_>, HeldError> {
        // Checked first, then borrowed: the borrow of a held one lives as long as the lease.
        if self.own(node, table).is_some() {
            let held = self.own(node, table).expect("checked");
            return Ok(Leased::Held(held));
        }
        match fresh {
            Fresh::Session => {
                let mut conn = pools
                    .acquire_for(node, Intent::Write)
                    .await
                    .map_err(|e| HeldError::Datahost(Box::new(e)))?;
                set_up(conn.as_mut(), node, &setup()).await?;
                Ok(Leased::Fresh(conn))
            }
            Fresh::Metadata => pools
                .acquire_for(node, Intent::Read)
                .await
                .map(Leased::Fresh)
                .map_err(|e| HeldError::Datahost(Box::new(e))),
        }
    }

    /// A connection for `node` the session takes for itself, to pin it to its transaction or
    /// keep it: the kept one when `kept` allows and there is one (it leaves the kept set),
    /// else a fresh one on the writeHost with `setup()` run on it.
    ///
    /// Errors: [`HeldError::Datahost`], [`HeldError::Setup`].
    pub async fn take<P: Pools>(
        &mut self,
        pools: &P,
        node: &str,
        kept: bool,
        setup: impl FnOnce() -> Vec<String> + Send,
    ) -> Result<Taken, HeldError> {
        if kept && let Some(conn) = self.kept.remove(node) {
            return Ok(Taken { conn, kept: true });
        }
        let mut conn = pools
            .acquire_for(node, Intent::Write)
            .await
            .map_err(|e| HeldError::Datahost(Box::new(e)))?;
        set_up(conn.as_mut(), node, &setup()).await?;
        Ok(Taken { conn, kept: false })
    }

    /// The connections pinned to the transaction for `nodes`, in that order (a node without
    /// one is left out).
    pub fn pinned_for<'n>(
        &mut self,
        nodes: impl IntoIterator<Item = &'n str>,
    ) -> Vec<&mut (dyn BackendConn + 'static)> {
        let mut by_node: HashMap<&str, &mut Box<dyn BackendConn>> = self
            .pinned
            .iter_mut()
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        nodes
            .into_iter()
            .filter_map(|n| by_node.remove(n).map(|b| b.as_mut()))
            .collect()
    }

    /// Keeps `conn` as the session's connection for `node`, replacing one kept before.
    pub fn keep(&mut self, node: String, conn: Box<dyn BackendConn>) {
        self.kept.insert(node, conn);
    }

    /// Keeps `conn` for `node` unless a connection is kept for it already (then `conn` goes
    /// back to its pool).
    pub fn keep_unless_kept(&mut self, node: String, conn: Box<dyn BackendConn>) {
        self.kept.entry(node).or_insert(conn);
    }

    /// Closes the connections held for `node` (their state is unknown: a refused `SET` could
    /// not be undone there) instead of letting them serve again. Returns whether one was
    /// pinned to the transaction, which the caller must then roll back on every node.
    pub fn forget(&mut self, node: &str) -> bool {
        if let Some(mut conn) = self.kept.remove(node) {
            conn.abandon();
        }
        match self.pinned.remove(node) {
            Some(mut conn) => {
                conn.abandon();
                true
            }
            None => false,
        }
    }

    /// Runs `statements` (a `SET` the session accepted) on every held connection but the
    /// `checked` node's one that ran it already (its pinned one, else its kept one). A
    /// connection that fails is closed and let go.
    ///
    /// Errors: the first failure; with `true` when it was a pinned connection (the pinned
    /// ones are done first, and the kept ones are then left as they are): the caller rolls the
    /// transaction back, as a broken connection ends it.
    pub async fn set_on_held(
        &mut self,
        checked: &str,
        statements: &[String],
    ) -> Result<(), (HeldError, bool)> {
        let pinned: Vec<String> = self
            .pinned
            .keys()
            .filter(|n| *n != checked)
            .cloned()
            .collect();
        let mut failed = None;
        for n in pinned {
            if let Some(c) = self.pinned.get_mut(&n)
                && let Err(e) = set_up(c.as_mut(), &n, statements).await
            {
                if let Some(mut c) = self.pinned.remove(&n) {
                    c.abandon();
                }
                failed.get_or_insert(e);
            }
        }
        if let Some(e) = failed {
            return Err((e, true));
        }
        let checked_on_kept = !self.pinned.contains_key(checked);
        let kept: Vec<String> = self
            .kept
            .keys()
            .filter(|n| !(checked_on_kept && *n == checked))
            .cloned()
            .collect();
        let mut failed = None;
        for n in kept {
            if let Some(c) = self.kept.get_mut(&n)
                && let Err(e) = set_up(c.as_mut(), &n, statements).await
            {
                if let Some(mut c) = self.kept.remove(&n) {
                    c.abandon();
                }
                failed.get_or_insert(e);
            }
        }
        failed.map_or(Ok(()), |e| Err((e, false)))
    }
}

/// Runs a statement whose result is not needed (rows read to the end).
///
/// Errors: the server's, or a broken connection.
pub async fn run_simple(conn: &mut dyn BackendConn, sql: &str) -> Result<(), BackendError> {
    match conn.query(sql).await? {
        Response::Ok(_) => Ok(()),
        Response::Rows { mut rows, .. } => {
            while let Some(r) = rows.next().await {
                r?;
            }
            Ok(())
        }
    }
}

/// Runs `statements` (the session's settings) on `node`'s connection, in order.
///
/// Errors: [`HeldError::Setup`] naming the first that failed.
pub async fn set_up(
    conn: &mut dyn BackendConn,
    node: &str,
    statements: &[String],
) -> Result<(), HeldError> {
    for sql in statements {
        run_simple(conn, sql)
            .await
            .map_err(|source| HeldError::Setup {
                node: node.to_string(),
                sql: sql.clone(),
                source,
            })?;
    }
    Ok(())
}

mod locks;
mod transaction;

pub use locks::{Leaving, TableLocks};
pub use transaction::{Ended, Opening, end_each, open_on};

#[cfg(test)]
mod tests;
