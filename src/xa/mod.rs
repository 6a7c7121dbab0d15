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
use log::{CoordinatorLog, Decision, LogError, Logged, Record};

mod coordinator;

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
    Log(#[source] LogError),
    /// The task running the commit ended without an outcome (it panicked or was cancelled):
    /// what reached the log decides, and recovery finishes the transaction.
    #[error(
        "XA: the commit task ended without an outcome ({0}); the coordinator log decides the transaction, and recovery finishes it"
    )]
    Task(#[source] tokio::task::JoinError),
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
        source: Arc::new(source),
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
