//! The configuration shared through ZooKeeper in cluster mode (issue 22 item 5, znodes in
//! [`crate::coord::bundle`]).
//!
//! * At start-up ([`fetch_at_start`]), an instance with `loadZk=true` writes the published
//!   configuration into its configuration directory before loading it, as Mycat does.
//! * `manx zk publish` ([`publish`]) proposes the files of a directory. Every live instance
//!   validates the proposal as `reload @@config_all` would ([`super::Server::validate_dir`])
//!   and votes; the leader commits it only when every live instance voted `ok` (the bundle
//!   becomes the published configuration, then the decision is written), and aborts it when
//!   one voted an error or some did not vote within [`VOTE_WINDOW`]. On `commit`, every
//!   instance writes the files and reloads. So a change reaches all live instances or none;
//!   an instance whose reload fails at commit time after a good vote (a server gone in
//!   between) keeps its configuration and says so in its log and `show @@cluster`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Server;
use super::reload::ReloadError;
use super::reload::Scope;
use crate::config::myid::MyId;
use crate::coord::{Bundle, BundleError, CoordError, Session};

/// How long the leader waits for every live instance's vote before aborting a proposal.
pub const VOTE_WINDOW: Duration = Duration::from_secs(60);

/// Why fetching, publishing, voting on or applying a cluster-wide configuration failed.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// ZooKeeper cannot be asked, or holds something that is not a bundle.
    #[error(transparent)]
    Coord(#[from] CoordError),
    /// The configuration files cannot be read or written.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// A local file or directory (`dnindex.properties`, the staging directory) cannot be used.
    #[error("{}: {source}", path.display())]
    File {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The proposal does not pass what `reload @@config_all` checks, or cannot be installed.
    #[error(transparent)]
    Reload(#[from] ReloadError),
    /// The proposal was aborted: the decision and every instance's vote.
    #[error("configuration version {seq} {decision}; votes: {votes}")]
    Aborted {
        seq: u64,
        decision: String,
        votes: String,
    },
    /// No decision within the wait.
    #[error(
        "configuration version {seq} not decided within {wait:?}: the proposal stays pending and the leader may still commit it (show @@cluster's CONFIG_VERSION tells; is a leader running?)"
    )]
    Undecided { seq: u64, wait: Duration },
}

/// Writes the configuration published in ZooKeeper into `dir` (start-up, `loadZk=true`).
/// Returns its version; `Ok(None)` when none was published yet (the local files are used).
///
/// Errors: ZooKeeper cannot be reached within `timeout`, or the files cannot be written.
pub async fn fetch_at_start(
    dir: &std::path::Path,
    myid: &MyId,
    timeout: Duration,
) -> Result<Option<u64>, SyncError> {
    let session = Session::observe(myid, timeout).await?;
    let Some(bundle) = session.config().await? else {
        return Ok(None);
    };
    bundle.write_dir(dir)?;
    Ok(Some(bundle.version))
}

/// Writes the active writeHost indexes agreed in ZooKeeper (the dnindex znode) into `dir`'s
/// `dnindex.properties` (start-up, `useZKSwitch=true`), so that an instance started after a
/// failover starts on the writeHost the others use. Returns the epoch; `Ok(None)` when the
/// znode does not exist yet.
///
/// Errors: ZooKeeper cannot be reached within `timeout`, or the file cannot be written.
pub async fn fetch_dnindex_at_start(
    dir: &std::path::Path,
    myid: &MyId,
    timeout: Duration,
) -> Result<Option<u64>, SyncError> {
    let session = Session::observe(myid, timeout).await?;
    let (doc, _) = session.watch_index().await?;
    let Some((doc, _)) = doc else {
        return Ok(None);
    };
    let file = |source| SyncError::File {
        path: dir.join(crate::config::dnindex::FILE),
        source,
    };
    let mut indexes = crate::config::dnindex::load(dir).map_err(file)?;
    indexes.extend(doc.indexes);
    crate::config::dnindex::save(dir, &indexes).map_err(file)?;
    Ok(Some(doc.epoch))
}

/// `manx zk publish`: proposes the configuration files of `dir` to the cluster of `myid` and
/// waits (at most `wait`) for the decision. With no live instance, the configuration is
/// published at once. Returns the message to print.
///
/// Errors: ZooKeeper cannot be reached; the files cannot be read; the proposal was aborted
/// (with every instance's vote) or not decided in time.
pub async fn publish(
    dir: &std::path::Path,
    myid: &MyId,
    wait: Duration,
) -> Result<String, SyncError> {
    let mut bundle = Bundle::read_dir(dir)?;
    let session = Session::observe(myid, Duration::from_secs(10)).await?;
    // The base: two publishes over the same version cannot both commit (the second would
    // undo the first without a word).
    bundle.version = session.config().await?.map_or(0, |b| b.version);
    let seq = session.propose(&bundle).await?;
    let live = session.live().await?;
    if live.is_empty() {
        bundle.version = seq;
        session.set_config(&bundle).await?;
        session.decide(seq, "commit").await?;
        return Ok(format!(
            "configuration version {seq} published ({} files); no instance is running",
            bundle.files.len()
        ));
    }
    let started = std::time::Instant::now();
    loop {
        let proposals = session.proposals().await?;
        if let Some(p) = proposals.iter().find(|p| p.seq == seq)
            && let Some(decision) = &p.decision
        {
            let votes: Vec<String> = p.votes.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            return if decision == "commit" {
                Ok(format!(
                    "configuration version {seq} committed; votes: {}",
                    votes.join("; ")
                ))
            } else {
                Err(SyncError::Aborted {
                    seq,
                    decision: decision.clone(),
                    votes: votes.join("; "),
                })
            };
        }
        if started.elapsed() > wait {
            return Err(SyncError::Undecided { seq, wait });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every `period`: votes on new proposals, decides them when leading, applies committed ones
/// (module documentation). Ends with the server.
pub(super) async fn sync(server: std::sync::Weak<Server>, period: Duration) {
    // The last committed version tried here (installed or not): not tried again.
    let mut attempted = 0;
    loop {
        tokio::time::sleep(period).await;
        let Some(s) = server.upgrade() else {
            return;
        };
        let Some(coordination) = s.coordination.get().cloned() else {
            continue;
        };
        let Some(session) = coordination.session().await else {
            continue;
        };
        let limit = VOTE_WINDOW + Duration::from_secs(30);
        if tokio::time::timeout(limit, step(&s, &session, &mut attempted))
            .await
            .is_err()
        {
            tracing::warn!("cluster configuration: a round took over {limit:?}");
        }
    }
}

async fn step(server: &Arc<Server>, session: &Session, attempted: &mut u64) {
    let proposals = match session.proposals().await {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = %e, "cluster configuration: cannot read the proposals");
            return;
        }
    };
    let Some(myid) = server.myid.as_ref().map(|m| m.myid.clone()) else {
        return;
    };
    let applied = server
        .config_version
        .load(Ordering::Acquire)
        .max(*attempted);
    let dir = server.current().config.dir.clone();
    for p in &proposals {
        if p.seq <= applied {
            continue;
        }
        match p.decision.as_deref() {
            Some("commit") => {
                *attempted = p.seq;
                apply(server, session, p.seq, &dir).await;
                continue;
            }
            Some(_) => continue,
            None => {}
        }
        if !p.votes.contains_key(&myid) {
            let vote = match vote(server, session, p.seq, &dir).await {
                Ok(()) => "ok".to_string(),
                Err(e) => format!("error: {e}"),
            };
            tracing::info!(version = p.seq, %vote, "cluster configuration: voted");
            if let Err(e) = session.vote(p.seq, &vote).await {
                tracing::warn!(error = %e, "cluster configuration: cannot vote");
            }
        }
        if session.leads().await.unwrap_or(false) {
            decide(session, p.seq).await;
        }
    }
}

/// Validates proposal `seq` in a staging directory beside `dir`.
async fn vote(
    server: &Server,
    session: &Session,
    seq: u64,
    dir: &std::path::Path,
) -> Result<(), SyncError> {
    let (bundle, _) = session.proposal(seq).await?;
    let staging = dir.join(format!(".zk-staged-{seq}"));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|source| SyncError::File {
        path: staging.clone(),
        source,
    })?;
    let checked = match bundle.write_dir(&staging) {
        Ok(()) => server.validate_dir(&staging).await.map_err(SyncError::from),
        Err(e) => Err(e.into()),
    };
    let _ = std::fs::remove_dir_all(&staging);
    checked
}

/// The leader's decision on proposal `seq`, once every live instance voted (or one refused,
/// or the vote window closed).
async fn decide(session: &Session, seq: u64) {
    let (Ok(proposals), Ok(live)) = (session.proposals().await, session.live().await) else {
        return;
    };
    let Some(p) = proposals.into_iter().find(|p| p.seq == seq) else {
        return;
    };
    if p.decision.is_some() {
        return;
    }
    let published = match session.config().await {
        Ok(b) => b.map_or(0, |b| b.version),
        Err(_) => return,
    };
    let (bundle, base) = match session.proposal(seq).await {
        Ok(x) => x,
        Err(e) => {
            tracing::warn!(error = %e, "cluster configuration: cannot read the proposal");
            return;
        }
    };
    if base != published {
        let decision = format!(
            "abort: proposed over version {base}, but version {published} was committed since: publish again from the files in force"
        );
        if let Ok(true) = session.decide(seq, &decision).await {
            tracing::warn!(version = seq, %decision, "cluster configuration: decided");
        }
        return;
    }
    let refused: Vec<String> = p
        .votes
        .iter()
        .filter(|(_, v)| v.as_str() != "ok")
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    let missing: Vec<&String> = live.iter().filter(|m| !p.votes.contains_key(*m)).collect();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let decision = if !refused.is_empty() {
        format!("abort: refused by {}", refused.join("; "))
    } else if missing.is_empty() {
        // Published before the decision: an instance that starts in between takes it.
        if let Err(e) = session.set_config(&bundle).await {
            tracing::warn!(error = %e, "cluster configuration: cannot publish");
            return;
        }
        "commit".to_string()
    } else if now_ms - p.created_ms > VOTE_WINDOW.as_millis() as i64 {
        format!(
            "abort: no vote within {VOTE_WINDOW:?} from {}",
            missing
                .iter()
                .map(|m| m.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        return;
    };
    match session.decide(seq, &decision).await {
        Ok(true) => tracing::warn!(version = seq, %decision, "cluster configuration: decided"),
        Ok(false) => {}
        Err(e) => tracing::warn!(error = %e, "cluster configuration: cannot decide"),
    }
}

/// Writes committed proposal `seq` into `dir` and reloads.
async fn apply(server: &Arc<Server>, session: &Session, seq: u64, dir: &std::path::Path) {
    let written = match session.proposal(seq).await {
        Ok((bundle, _)) => bundle.write_dir(dir).map_err(SyncError::from),
        Err(e) => Err(e.into()),
    };
    let done = match written {
        Ok(()) => server.reload(Scope::All).await.map_err(SyncError::from),
        Err(e) => Err(e),
    };
    match done {
        Ok(_) => {
            server.config_version.store(seq, Ordering::Release);
            tracing::warn!(
                version = seq,
                "cluster configuration: committed version in force"
            )
        }
        Err(e) => {
            tracing::error!(version = seq, error = %e, "cluster configuration: the committed version could not be installed here; the running configuration is kept")
        }
    }
}
