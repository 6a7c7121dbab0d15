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
use crate::backend::{BackendConn, BackendError, Response, SavepointOp, Xid};
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

/// What ending a transaction left on its connections ([`HeldConns::end_transaction`]).
#[derive(Debug, Default)]
pub struct Ended {
    /// The sum of the connections' warning counts (saturating).
    pub warning_count: u16,
    /// Their `SHOW WARNINGS` rows (Level, Code, Message), at most
    /// [`crate::backend::MAX_ERROR_COUNT`]; empty when the count is 0.
    pub warnings: Vec<Vec<Option<String>>>,
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
    /// statement that failed part-way, every node agrees again.
    ///
    /// Errors: [`HeldError::NoSuchSavepoint`] (nothing sent); [`HeldError::Savepoint`].
    pub async fn rollback_to_savepoint(&mut self, name: &SavepointName) -> Result<(), HeldError> {
        let at = self.savepoint_index(name)?;
        self.savepoint_on_each(SavepointOp::RollbackTo, name)
            .await?;
        self.savepoints.truncate(at + 1);
        self.interrupted = None;
        Ok(())
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
        let warning_count = pinned
            .iter()
            .filter_map(|(_, c)| c.warning_count())
            .map(|n| n.load(std::sync::atomic::Ordering::Relaxed))
            .fold(0u16, u16::saturating_add);
        let warnings = match warning_count {
            0 => Vec::new(),
            _ => {
                let mut conns: Vec<_> = pinned.iter_mut().map(|(_, c)| c.as_mut()).collect();
                crate::backend::show_warnings(&mut conns).await
            }
        };
        self.after_transaction(pinned).await;
        ended.map(|()| Ended {
            warning_count,
            warnings,
        })
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

#[cfg(test)]
mod tests;
