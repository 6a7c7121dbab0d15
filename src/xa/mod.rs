//! Two-phase commit of writes that span dataNodes (issue 24; DECISIONS.md item 27).
//!
//! A session whose transaction is an XA transaction (`SET XA = ON`, Mycat's session rule, or
//! server.xml's `twoPhaseCommit`) starts every branch with [`BackendConn::xa_start`] under one
//! global id from [`Coordinator::begin`], and ends them with [`Coordinator::commit`] or
//! [`Coordinator::rollback`]:
//! - no written branch or one: one-phase commit (`XA COMMIT ... ONE PHASE`), nothing logged:
//!   one branch is atomic on its own;
//! - several written branches: [`log::Record::Prepare`] durable, every branch prepared,
//!   [`log::Record::Commit`] durable, every branch committed, [`log::Record::Done`]. A branch
//!   that cannot prepare, or a decision that cannot be written, rolls every branch back and
//!   the client gets 1402 `XA_RBROLLBACK`; once the decision is on disk the transaction *is*
//!   committed: a branch whose `XA COMMIT` fails (its server down, the connection cut) is
//!   committed by recovery and the client gets its OK.
//!
//! Recovery ([`Coordinator::recover`]) runs at start-up and then every `xaRecoveryPeriod` while
//! there is something to resolve ([`Coordinator::has_work`]): it asks
//! the *current* writeHost of every dataNode for its prepared branches (`XA RECOVER`,
//! `pg_prepared_xacts`; so it follows failovers, Mycat's recovery does not, OPERATIONS.md §3
//! defect 2), keeps this instance's (`manx.<instance>.`, bqual = that dataNode), skips those
//! of transactions this process is still running, and resolves each from the log: a commit
//! decision → `XA COMMIT`; prepared but undecided, or aborted → `XA ROLLBACK`; no record →
//! *in doubt*: left alone (its row locks make any statement that touches its rows wait and
//! fail with 1205, never read or overwrite them silently), logged at error level and listed by
//! `show @@xa_session`, for the operator to resolve.

pub mod log;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::backend::{BackendConn, BackendError, Xid, xa::unknown_xid};
use crate::datahost::WriteTarget;
use log::{CoordinatorLog, Decision, Logged, Record};

/// How two-phase commit is set up (server.xml properties, manx's own).
#[derive(Debug, Clone)]
pub struct Settings {
    /// `instanceId`: this gateway's name in its XIDs, unique among the gateways sharing
    /// backends (letters, digits, `_`, `-`; at most 32 characters). `None`: the name kept in
    /// the log directory's `INSTANCE` file, made at the first start (the host name and a
    /// random suffix), so it survives host name and port changes.
    pub instance: Option<String>,
    /// `xaLogDir`: the coordinator log's directory.
    pub log_dir: PathBuf,
    /// `xaLogSegmentBytes`: a log segment is closed past this size.
    pub segment_bytes: u64,
    /// `xaRecoveryPeriod`: time between two recovery passes.
    pub recovery_period: Duration,
}

/// Where a transaction of this process stands (`show @@xa_session`'s `XA_STATE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XaState {
    /// Branches started, statements running.
    Active,
    /// `XA PREPARE` sent.
    Preparing,
    /// Every branch prepared; the decision is being written.
    Prepared,
    /// The commit decision is on disk; `XA COMMIT` sent.
    Committing,
    /// Rolling back.
    RollingBack,
}

impl XaState {
    /// The state's name as `show @@xa_session` prints it.
    pub fn name(self) -> &'static str {
        match self {
            XaState::Active => "ACTIVE",
            XaState::Preparing => "PREPARING",
            XaState::Prepared => "PREPARED",
            XaState::Committing => "COMMITTING",
            XaState::RollingBack => "ROLLING_BACK",
        }
    }
}

/// One row of `show @@xa_session`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XaRow {
    /// The client connection's id; 0 for a transaction recovery owns.
    pub front: u32,
    /// The global transaction id.
    pub gtrid: String,
    /// [`XaState::name`], `COMMIT_PENDING` (decided, a branch not yet committed: recovery
    /// retries), `ROLLBACK_PENDING`, or `IN_DOUBT` (prepared, no record in the log).
    pub state: &'static str,
    /// Its dataNodes.
    pub nodes: Vec<String>,
}

/// Why a two-phase commit did not commit. Every variant but [`XaError::OnePhase`] means every
/// branch was (or, by recovery, will be) rolled back.
#[derive(Debug, thiserror::Error)]
pub enum XaError {
    /// A branch could not be prepared.
    #[error(
        "XA_RBROLLBACK: dataNode {node} could not prepare its branch ({source}); the transaction was rolled back on every dataNode"
    )]
    Prepare {
        node: String,
        #[source]
        source: BackendError,
    },
    /// The coordinator log could not be written.
    #[error(
        "XA_RBROLLBACK: the XA coordinator log could not be written ({0}); the transaction was rolled back on every dataNode"
    )]
    Log(String),
    /// The one-phase commit of a single written branch failed: its server's answer.
    #[error("COMMIT failed on dataNode {node}: {source}")]
    OnePhase {
        node: String,
        #[source]
        source: BackendError,
    },
}

impl XaError {
    /// MySQL's errno and SQLSTATE for it: 1402 `XA_RBROLLBACK` (XA100) when rolled back; the
    /// server's own for a one-phase commit it refused, else 1180 (`ER_ERROR_DURING_COMMIT`).
    pub fn code(&self) -> (u16, String) {
        match self {
            XaError::OnePhase { source, .. } => match source.mysql_error() {
                Some((code, state, _)) => (code, state.to_string()),
                None => (1180, "HY000".to_string()),
            },
            _ => (1402, "XA100".to_string()),
        }
    }
}

/// One branch as the session hands it over at the end, with its connection: the coordinator
/// owns it until the branch is resolved, so a session that goes away meanwhile cannot drop a
/// connection that holds a prepared branch (a pooled MariaDB connection reset with a prepared
/// branch on it leaves an InnoDB transaction that holds its locks until the server restarts).
pub struct Branch {
    /// The dataNode (the XID's bqual).
    pub node: String,
    /// The connection the branch was started on.
    pub conn: Box<dyn BackendConn>,
    /// A statement that may write ran on it (a branch that only read commits in one phase
    /// whatever the others do).
    pub written: bool,
}

/// What recovery did in one pass ([`Coordinator::recover`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// Branches committed.
    pub committed: usize,
    /// Branches rolled back.
    pub rolled_back: usize,
    /// Branches left in doubt.
    pub in_doubt: Vec<Xid>,
    /// dataNodes whose writeHost could not be asked.
    pub unreachable: Vec<String>,
}

/// Counters for the closing measurements and `show @@xa_session`'s neighbours.
#[derive(Debug, Default)]
pub struct XaCounters {
    /// Transactions committed in two phases.
    pub two_phase: AtomicU64,
    /// Transactions committed in one phase (one written branch or none).
    pub one_phase: AtomicU64,
    /// Transactions rolled back by `commit` (a branch could not prepare, the log failed).
    pub refused: AtomicU64,
    /// Branches recovery committed / rolled back.
    pub recovered_commits: AtomicU64,
    pub recovered_rollbacks: AtomicU64,
}

/// The XA coordinator of one gateway process ([module docs](self)).
#[derive(Debug)]
pub struct Coordinator {
    /// `manx.<instance>.`: the prefix of this instance's gtrids.
    prefix: String,
    /// This process's start, in ms since the epoch: gtrids of a restarted instance differ.
    boot: u64,
    next: AtomicU64,
    log: CoordinatorLog,
    /// Transactions of this process's sessions, by gtrid.
    running: Mutex<BTreeMap<String, Running>>,
    /// Logged transactions that are not done and that no session runs: from the log at
    /// start-up, and those whose commit or rollback left a branch unresolved.
    unresolved: Mutex<BTreeMap<String, Logged>>,
    /// Branches the last recovery pass found in doubt.
    in_doubt: Mutex<Vec<Xid>>,
    /// Recovery passes run one at a time.
    recovering: tokio::sync::Mutex<()>,
    /// Wakes the recovery task early (a commit left a branch unresolved).
    wake: tokio::sync::Notify,
    pub settings: Settings,
    pub counters: XaCounters,
}

#[derive(Debug)]
struct Running {
    front: u32,
    state: XaState,
    nodes: BTreeSet<String>,
}

impl Coordinator {
    /// Opens the coordinator log and takes over the transactions it holds that are not done
    /// (recovery resolves them).
    ///
    /// Errors: the log cannot be opened or is damaged ([`log::LogError`]).
    pub fn open(settings: Settings) -> Result<Coordinator, log::LogError> {
        let (log, logged) = CoordinatorLog::open(&settings.log_dir, settings.segment_bytes)?;
        let instance = instance_id(&settings)?;
        if let Some(other) = logged
            .keys()
            .find(|g| !g.starts_with(&format!("manx.{instance}.")))
        {
            // Recovery resolves them all the same (it matches the log's ids, whatever their
            // instance part), but the operator should know the name changed.
            tracing::warn!(%instance, logged = %other, "the XA coordinator log holds transactions of another instanceId: they are resolved from the log; keep instanceId stable");
        }
        let settings = Settings {
            instance: Some(instance),
            ..settings
        };
        let boot = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Ok(Coordinator {
            prefix: format!("manx.{}.", settings.instance.as_deref().unwrap_or_default()),
            boot,
            next: AtomicU64::new(1),
            log,
            running: Mutex::default(),
            unresolved: Mutex::new(logged),
            in_doubt: Mutex::default(),
            recovering: tokio::sync::Mutex::new(()),
            wake: tokio::sync::Notify::new(),
            settings,
            counters: XaCounters::default(),
        })
    }

    /// The coordinator log (its counters).
    pub fn log(&self) -> &CoordinatorLog {
        &self.log
    }

    /// This gateway's instance id in its XIDs.
    pub fn instance(&self) -> &str {
        self.settings.instance.as_deref().unwrap_or_default()
    }

    /// A new global transaction for client connection `front`: its gtrid,
    /// `manx.<instance>.<boot ms>.<n>`.
    pub fn begin(&self, front: u32) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let gtrid = format!("{}{}.{n}", self.prefix, self.boot);
        lock(&self.running).insert(
            gtrid.clone(),
            Running {
                front,
                state: XaState::Active,
                nodes: BTreeSet::new(),
            },
        );
        gtrid
    }

    /// Records that `gtrid` started a branch on `node` (for `show @@xa_session`).
    pub fn joined(&self, gtrid: &str, node: &str) {
        if let Some(r) = lock(&self.running).get_mut(gtrid) {
            r.nodes.insert(node.to_string());
        }
    }

    fn set_state(&self, gtrid: &str, state: XaState) {
        if let Some(r) = lock(&self.running).get_mut(gtrid) {
            r.state = state;
        }
    }

    fn finish(&self, gtrid: &str) {
        lock(&self.running).remove(gtrid);
    }

    /// Leaves `gtrid` to recovery (a branch is unresolved), with what the log says of it.
    fn hand_to_recovery(&self, gtrid: &str, branches: Vec<String>, decision: Decision) {
        lock(&self.unresolved).insert(gtrid.to_string(), Logged { branches, decision });
        self.finish(gtrid);
        self.wake.notify_one();
    }

    /// Commits transaction `gtrid` over `branches` ([module docs](self)). The work runs in a
    /// task of its own: dropping the returned future (the client's session ended) does not
    /// stop it halfway.
    ///
    /// Errors: [`XaError`]; for all but [`XaError::OnePhase`] nothing was committed anywhere.
    pub async fn commit(
        self: &Arc<Self>,
        gtrid: &str,
        branches: Vec<Branch>,
    ) -> Result<(), XaError> {
        let this = self.clone();
        let gtrid = gtrid.to_string();
        tokio::spawn(async move { this.commit_now(&gtrid, branches).await })
            .await
            .unwrap_or_else(|e| Err(XaError::Log(format!("the commit task failed: {e}"))))
    }

    async fn commit_now(&self, gtrid: &str, branches: Vec<Branch>) -> Result<(), XaError> {
        let result = self.commit_branches(gtrid, branches).await;
        match &result {
            Ok(true) => {
                self.counters.two_phase.fetch_add(1, Ordering::Relaxed);
            }
            Ok(false) => {
                self.counters.one_phase.fetch_add(1, Ordering::Relaxed);
            }
            Err(XaError::OnePhase { .. }) => {}
            Err(_) => {
                self.counters.refused.fetch_add(1, Ordering::Relaxed);
            }
        }
        result.map(|_| ())
    }

    /// [`Coordinator::commit`]; `Ok(true)` when it took two phases.
    async fn commit_branches(&self, gtrid: &str, branches: Vec<Branch>) -> Result<bool, XaError> {
        let (mut written, read): (Vec<_>, Vec<_>) = branches.into_iter().partition(|b| b.written);
        // Branches that only read end at once: nothing of theirs needs to be atomic.
        for mut b in read {
            let xid = Xid::new(gtrid, &b.node);
            if let Err(e) = b.conn.xa_commit(&xid, true).await {
                b.conn.abandon();
                tracing::warn!(xid = %xid, error = %e, "ending a read-only XA branch failed");
            }
        }
        if written.len() <= 1 {
            let outcome = match written.pop() {
                Some(mut b) => {
                    let r = b.conn.xa_commit(&Xid::new(gtrid, &b.node), true).await;
                    r.map_err(|source| {
                        b.conn.abandon();
                        XaError::OnePhase {
                            node: b.node.clone(),
                            source,
                        }
                    })
                }
                None => Ok(()),
            };
            self.finish(gtrid);
            return outcome.map(|()| false);
        }
        written.sort_by(|a, b| a.node.cmp(&b.node));
        let nodes: Vec<String> = written.iter().map(|b| b.node.clone()).collect();
        self.set_state(gtrid, XaState::Preparing);
        if let Err(e) = self
            .log
            .append(vec![Record::Prepare {
                gtrid: gtrid.to_string(),
                branches: nodes.clone(),
            }])
            .await
        {
            self.roll_back_all(gtrid, &mut written, &BTreeSet::new(), &nodes)
                .await;
            return Err(XaError::Log(e));
        }
        hook("before_prepare").await;
        let prepared = futures::future::join_all(written.iter_mut().map(|b| {
            let xid = Xid::new(gtrid, &b.node);
            async move { b.conn.xa_prepare(&xid).await }
        }))
        .await;
        let mut done = BTreeSet::new();
        let mut failure = None;
        for (b, r) in written.iter().zip(prepared) {
            match r {
                Ok(()) => {
                    done.insert(b.node.clone());
                }
                Err(source) if failure.is_none() => {
                    failure = Some(XaError::Prepare {
                        node: b.node.clone(),
                        source,
                    });
                }
                Err(_) => {}
            }
        }
        if let Some(e) = failure {
            self.roll_back_all(gtrid, &mut written, &done, &nodes).await;
            return Err(e);
        }
        hook("after_prepare").await;
        self.set_state(gtrid, XaState::Prepared);
        if let Err(e) = self
            .log
            .append(vec![Record::Commit {
                gtrid: gtrid.to_string(),
            }])
            .await
        {
            self.roll_back_all(gtrid, &mut written, &done, &nodes).await;
            return Err(XaError::Log(e));
        }
        hook("after_decision").await;
        self.set_state(gtrid, XaState::Committing);
        let committed = if fault_set("between_commits") {
            let first = &mut written[0];
            let r = first
                .conn
                .xa_commit(&Xid::new(gtrid, &first.node), false)
                .await;
            hook("between_commits").await;
            vec![r]
        } else {
            futures::future::join_all(written.iter_mut().map(|b| {
                let xid = Xid::new(gtrid, &b.node);
                async move { b.conn.xa_commit(&xid, false).await }
            }))
            .await
        };
        let mut unresolved = false;
        for (b, r) in written.iter_mut().zip(committed) {
            if let Err(e) = r {
                // The branch may still be prepared on this connection: never reused.
                b.conn.abandon();
                if !unknown_xid(&e) {
                    tracing::warn!(xid = %Xid::new(gtrid, &b.node), error = %e, "XA COMMIT failed after the commit decision: recovery commits the branch");
                    unresolved = true;
                }
            }
        }
        if unresolved {
            self.hand_to_recovery(gtrid, nodes, Decision::Commit);
        } else {
            self.log.append_later(vec![Record::Done {
                gtrid: gtrid.to_string(),
            }]);
            self.finish(gtrid);
        }
        Ok(true)
    }

    /// Rolls every branch back: those in `prepared` as prepared branches, the others as
    /// active ones. Logs the abort; a branch left unresolved goes to recovery.
    async fn roll_back_all(
        &self,
        gtrid: &str,
        branches: &mut [Branch],
        prepared: &BTreeSet<String>,
        logged: &[String],
    ) {
        self.set_state(gtrid, XaState::RollingBack);
        let results = futures::future::join_all(branches.iter_mut().map(|b| {
            let xid = Xid::new(gtrid, &b.node);
            let was_prepared = prepared.contains(&b.node);
            async move { b.conn.xa_rollback(&xid, was_prepared).await }
        }))
        .await;
        let mut unresolved = false;
        for (b, r) in branches.iter_mut().zip(results) {
            if let Err(e) = r {
                b.conn.abandon();
                if !unknown_xid(&e) {
                    // A branch that failed to prepare may have been rolled back by its server,
                    // or be prepared after all (the answer was lost): recovery looks.
                    tracing::warn!(xid = %Xid::new(gtrid, &b.node), error = %e, "XA ROLLBACK failed: recovery rolls the branch back if it is prepared");
                    unresolved = true;
                }
            }
        }
        if logged.is_empty() {
            self.finish(gtrid);
            return;
        }
        self.log.append_later(vec![Record::Abort {
            gtrid: gtrid.to_string(),
        }]);
        if unresolved {
            self.hand_to_recovery(gtrid, logged.to_vec(), Decision::Abort);
        } else {
            self.log.append_later(vec![Record::Done {
                gtrid: gtrid.to_string(),
            }]);
            self.finish(gtrid);
        }
    }

    /// Rolls back transaction `gtrid`'s active branches (the client's ROLLBACK, a client that
    /// left, a statement that interrupted it), in a task of its own as [`Coordinator::commit`].
    /// Nothing is logged: nothing was prepared.
    ///
    /// Errors: the nodes whose rollback failed, with the error (their servers roll the branch
    /// back when the connection closes).
    pub async fn rollback(
        self: &Arc<Self>,
        gtrid: &str,
        branches: Vec<Branch>,
    ) -> Result<(), Vec<(String, BackendError)>> {
        let this = self.clone();
        let gtrid = gtrid.to_string();
        tokio::spawn(async move { this.rollback_now(&gtrid, branches).await })
            .await
            .unwrap_or_else(|e| Err(vec![(String::new(), BackendError::Other(e.to_string()))]))
    }

    async fn rollback_now(
        &self,
        gtrid: &str,
        mut branches: Vec<Branch>,
    ) -> Result<(), Vec<(String, BackendError)>> {
        self.set_state(gtrid, XaState::RollingBack);
        let results = futures::future::join_all(branches.iter_mut().map(|b| {
            let xid = Xid::new(gtrid, &b.node);
            async move { b.conn.xa_rollback(&xid, false).await }
        }))
        .await;
        self.finish(gtrid);
        let failed: Vec<_> = branches
            .iter_mut()
            .zip(results)
            .filter_map(|(b, r)| {
                r.err().map(|e| {
                    // Not reused: an active branch must not reach the connection's next holder.
                    b.conn.abandon();
                    (b.node.clone(), e)
                })
            })
            .collect();
        if failed.is_empty() {
            Ok(())
        } else {
            Err(failed)
        }
    }

    /// Forgets `gtrid` without touching its branches (the session could not start it).
    pub fn forget(&self, gtrid: &str) {
        self.finish(gtrid);
    }

    /// The rows of `show @@xa_session`: the XA transactions of this process's sessions, then
    /// those left to recovery, then the branches the last pass found in doubt.
    pub fn rows(&self) -> Vec<XaRow> {
        let mut rows: Vec<XaRow> = lock(&self.running)
            .iter()
            .map(|(g, r)| XaRow {
                front: r.front,
                gtrid: g.clone(),
                state: r.state.name(),
                nodes: r.nodes.iter().cloned().collect(),
            })
            .collect();
        rows.extend(lock(&self.unresolved).iter().map(|(g, l)| XaRow {
            front: 0,
            gtrid: g.clone(),
            state: match l.decision {
                Decision::Commit => "COMMIT_PENDING",
                _ => "ROLLBACK_PENDING",
            },
            nodes: l.branches.clone(),
        }));
        let mut doubt: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for x in lock(&self.in_doubt).iter() {
            doubt
                .entry(x.gtrid.clone())
                .or_default()
                .push(x.bqual.clone());
        }
        rows.extend(doubt.into_iter().map(|(gtrid, nodes)| XaRow {
            front: 0,
            gtrid,
            state: "IN_DOUBT",
            nodes,
        }));
        rows
    }

    /// The client connections whose XA transaction is still running statements
    /// ([`XaState::Active`]): `kill @@xa_session` ends only those, which rolls them back. A
    /// transaction whose COMMIT or ROLLBACK began ends on its own (its work runs in a task
    /// of its own, [`Coordinator::commit`]).
    pub fn active_fronts(&self) -> BTreeSet<u32> {
        lock(&self.running)
            .values()
            .filter(|r| r.state == XaState::Active)
            .map(|r| r.front)
            .collect()
    }

    /// The dataNodes of `targets` whose active writeHost cannot prepare branches, with the
    /// reason ([`BackendConn::xa_unready`]); unreachable ones are not listed (their statements
    /// fail on their own).
    pub async fn unready(&self, targets: &[WriteTarget]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for t in targets {
            let checked = tokio::time::timeout(NODE_TIMEOUT, async {
                let mut conn = t.connect().await.ok()?;
                conn.xa_unready().await.ok().flatten()
            })
            .await;
            if let Ok(Some(reason)) = checked {
                out.push((t.node.clone(), format!("{}: {reason}", t.backend.address())));
            }
        }
        out
    }

    /// One recovery pass over the dataNodes' active writeHosts `targets`
    /// ([`Cluster::write_targets`] of the configuration in force; [module docs](self)).
    pub async fn recover(&self, targets: &[WriteTarget]) -> Recovered {
        let _one = self.recovering.lock().await;
        let mut report = Recovered::default();
        let running_before: BTreeSet<String> = lock(&self.running).keys().cloned().collect();
        // dataNode → gtrids of this instance still prepared there after the pass.
        let mut remaining: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let nodes: Vec<String> = targets.iter().map(|t| t.node.clone()).collect();
        for (node, target) in nodes.iter().zip(targets) {
            // Bounded: a server that does not answer must not hold the pass.
            let listed = tokio::time::timeout(NODE_TIMEOUT, async {
                let mut conn = target.connect().await.map_err(|e| e.to_string())?;
                let xids = conn.xa_recover().await.map_err(|e| e.to_string())?;
                Ok::<_, String>((conn, xids))
            })
            .await
            .unwrap_or_else(|_| Err(format!("no answer in {NODE_TIMEOUT:?}")));
            let (mut conn, xids) = match listed {
                Ok(found) => found,
                Err(e) => {
                    tracing::warn!(node, error = %e, "XA recovery cannot list the prepared branches of the dataNode's writeHost");
                    report.unreachable.push(node.clone());
                    continue;
                }
            };
            let left = remaining.entry(node.clone()).or_default();
            for xid in xids {
                // This instance's branches, and any the log knows (written under an earlier
                // instanceId), of this dataNode.
                let ours = xid.gtrid.starts_with(&self.prefix)
                    || lock(&self.unresolved).contains_key(&xid.gtrid);
                if !ours || xid.bqual != *node {
                    continue;
                }
                if running_before.contains(&xid.gtrid)
                    || lock(&self.running).contains_key(&xid.gtrid)
                {
                    continue;
                }
                let decision = lock(&self.unresolved).get(&xid.gtrid).map(|l| l.decision);
                let commit = match decision {
                    Some(Decision::Commit) => true,
                    Some(Decision::Undecided | Decision::Abort) => false,
                    None => {
                        tracing::error!(xid = %xid, node, "XA branch in doubt: prepared by this instance, but the coordinator log has no record of it; left prepared (resolve it with XA COMMIT or XA ROLLBACK on the dataNode's server)");
                        report.in_doubt.push(xid);
                        continue;
                    }
                };
                let result = if commit {
                    conn.xa_commit(&xid, false).await
                } else {
                    conn.xa_rollback(&xid, true).await
                };
                match result {
                    Ok(()) => {
                        tracing::info!(xid = %xid, node, commit, "XA branch resolved by recovery");
                        if commit {
                            report.committed += 1;
                            self.counters
                                .recovered_commits
                                .fetch_add(1, Ordering::Relaxed);
                        } else {
                            report.rolled_back += 1;
                            self.counters
                                .recovered_rollbacks
                                .fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Err(e) if unknown_xid(&e) => {}
                    Err(e) => {
                        tracing::warn!(xid = %xid, node, error = %e, "XA recovery could not resolve the branch; the next pass tries again");
                        left.insert(xid.gtrid.clone());
                    }
                }
            }
        }
        // A logged transaction is done once every one of its dataNodes was asked and none
        // holds its branch any more.
        let mut finished = Vec::new();
        {
            let unresolved = lock(&self.unresolved);
            for (gtrid, logged) in unresolved.iter() {
                let all_seen = logged.branches.iter().all(|n| {
                    remaining.get(n).is_some_and(|left| !left.contains(gtrid)) || !nodes.contains(n)
                });
                if all_seen && !lock(&self.running).contains_key(gtrid) {
                    finished.push(gtrid.clone());
                }
            }
        }
        if !finished.is_empty() {
            let mut unresolved = lock(&self.unresolved);
            for g in &finished {
                unresolved.remove(g);
            }
            self.log.append_later(
                finished
                    .into_iter()
                    .map(|gtrid| Record::Done { gtrid })
                    .collect(),
            );
        }
        *lock(&self.in_doubt) = report.in_doubt.clone();
        report
    }

    /// Whether a periodic pass has anything to look for: logged transactions not done (from
    /// the log at start-up or left by a failed commit or rollback), or in-doubt branches the
    /// operator may have resolved since. New in-doubt branches only appear with a lost log,
    /// which the pass at start-up finds; in steady state no pass runs.
    pub fn has_work(&self) -> bool {
        !lock(&self.unresolved).is_empty() || !lock(&self.in_doubt).is_empty()
    }

    /// Waits for the next recovery pass to be due: `xaRecoveryPeriod`, or sooner when a
    /// commit left a branch unresolved.
    pub async fn next_pass(&self) {
        let _ = tokio::time::timeout(self.settings.recovery_period, self.wake.notified()).await;
    }
}

/// The instance id: `settings.instance`, else the one in `<xaLogDir>/INSTANCE`, else a new
/// one (`<host name, at most 16 characters>-<8 random hex digits>`) written there.
///
/// Errors: the file cannot be read or written, or holds no valid id.
fn instance_id(settings: &Settings) -> Result<String, log::LogError> {
    if let Some(id) = &settings.instance {
        return Ok(id.clone());
    }
    let path = settings.log_dir.join("INSTANCE");
    let io = |source| log::LogError::Io {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let id = text.trim();
            if id.is_empty()
                || id.len() > 32
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
            {
                return Err(io(std::io::Error::other(format!(
                    "'{id}' is not an instance id (1 to 32 letters, digits, '_' or '-')"
                ))));
            }
            Ok(id.to_string())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
            let host: String = host
                .trim()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .take(16)
                .collect();
            let host = if host.is_empty() {
                "manx".to_string()
            } else {
                host
            };
            let id = format!("{host}-{:08x}", rand::random::<u32>());
            let tmp = settings.log_dir.join(".INSTANCE.tmp");
            std::fs::write(&tmp, format!("{id}\n"))
                .and_then(|()| std::fs::File::open(&tmp)?.sync_all())
                .and_then(|()| std::fs::rename(&tmp, &path))
                .and_then(|()| std::fs::File::open(&settings.log_dir)?.sync_all())
                .map_err(io)?;
            Ok(id)
        }
        Err(e) => Err(io(e)),
    }
}

/// The longest a recovery pass waits for one dataNode's writeHost to list its branches.
const NODE_TIMEOUT: Duration = Duration::from_secs(10);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether the test hook `MANX_XA_FAULT` names `point` (debug builds only).
fn fault_set(point: &str) -> bool {
    cfg!(debug_assertions) && std::env::var("MANX_XA_FAULT").is_ok_and(|v| v == point)
}

/// The test hooks at `point` (debug builds only): [`fault`], and `MANX_XA_PAUSE=<point>:<ms>`,
/// which holds the commit there for that long (a test cuts a backend connection meanwhile).
async fn hook(point: &str) {
    fault(point);
    if !cfg!(debug_assertions) {
        return;
    }
    let pause = std::env::var("MANX_XA_PAUSE").ok().and_then(|v| {
        let (p, ms) = v.split_once(':')?;
        (p == point).then(|| ms.parse::<u64>().ok()).flatten()
    });
    if let Some(ms) = pause {
        tracing::warn!(point, ms, "MANX_XA_PAUSE: holding the commit");
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// The fault-injection hook of the crash tests (debug builds only): when `MANX_XA_FAULT`
/// names `point`, the process exits on the spot with status 86, as under `kill -9` for the
/// backends (no destructor, no rollback, no further log record: the kernel closes the
/// connections). Points: `before_prepare`, `after_prepare`, `after_decision`,
/// `between_commits`.
fn fault(point: &str) {
    if fault_set(point) {
        eprintln!("MANX_XA_FAULT={point}: exiting");
        std::process::exit(86);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(dir: &std::path::Path) -> Settings {
        Settings {
            instance: Some("t1".to_string()),
            log_dir: dir.to_path_buf(),
            segment_bytes: 1 << 20,
            recovery_period: Duration::from_secs(10),
        }
    }

    #[tokio::test]
    async fn gtrids_name_the_instance_and_differ() {
        let dir = tempfile::tempdir().unwrap();
        let c = Coordinator::open(settings(dir.path())).unwrap();
        let a = c.begin(7);
        let b = c.begin(7);
        assert_ne!(a, b);
        assert!(a.starts_with("manx.t1."), "{a}");
        assert!(a.len() <= 64);
        c.joined(&a, "dn2");
        let rows = c.rows();
        assert_eq!(rows[0].front, 7);
        assert_eq!(rows[0].state, "ACTIVE");
        assert_eq!(
            rows.iter().find(|r| r.gtrid == a).unwrap().nodes,
            vec!["dn2"]
        );
        assert_eq!(c.active_fronts(), BTreeSet::from([7]));
        c.forget(&a);
        c.forget(&b);
        assert!(c.rows().is_empty());
    }
}
