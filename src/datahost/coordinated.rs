//! Coordinated failover: several manx instances, one decision (issue 22, DECISIONS.md item
//! 26). With `myid.properties` (`loadZk=true`) and `useZKSwitch=true`, no instance switches a
//! writeHost on its own. Every instance, every heartbeat period (and at once when the dnindex
//! znode changes):
//! 1. **follows** the index document in ZooKeeper ([`crate::coord`]): a dataHost whose index
//!    differs is switched to it, as a failover does (the old writeHost's idle connections
//!    closed, `minCon` opened on the new one, `dnindex.properties` rewritten);
//! 2. **reports** what its heartbeats see of every writeHost (`W`/`D`/`?`) and the GTIDs of
//!    the writes it acknowledged on each dataHost;
//! 3. if it **leads** (lowest election znode), decides: the active writeHost of a dataHost is
//!    replaced only when *every* live instance reports it down, by the next writeHost (in
//!    dnindex order, wrapping) that *every* live instance reports writable (with
//!    `switchType="2"`, and a replication lag of 0 in the leader's view). Before writing the
//!    decision the leader waits (at most `failoverCatchUpTimeout`) for the standby to apply
//!    every acknowledged write (`MASTER_GTID_WAIT` over the union of the reported GTIDs) —
//!    when it does not, there is no switch, the writes at risk are logged and shown by
//!    `show @@cluster`, and the check runs again next period — then fences the old writeHost
//!    (`SET GLOBAL read_only = 1`; PostgreSQL `default_transaction_read_only`) when it can be
//!    reached, and writes the new document: epoch + 1, compare-and-set on the znode version,
//!    in one multi-operation with a check that its election znode still exists.
//!
//! An instance whose ZooKeeper session is down or expired keeps the indexes it last knew:
//! it never switches alone (its writes go on to the current writeHost while it is alive, and
//! fail while it is not). Without ZooKeeper at start-up, an instance starts on its local
//! `dnindex.properties` and keeps trying to connect.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Cluster, DataHost};
use crate::backend::position::{Position, format_lsn, parse_lsn};
use crate::backend::{BackendConn, Response};
use crate::config::myid::MyId;
use crate::coord::{HostReport, IndexDoc, Report, Session};

/// What coordinated failover needs to know, from `myid.properties` and `server.xml`.
#[derive(Debug, Clone)]
pub struct Settings {
    pub myid: MyId,
    /// `zkSessionTimeout`.
    pub session_timeout: Duration,
    /// How often each instance follows, reports and (when leading) decides: the heartbeat
    /// period (`dataNodeHeartbeatPeriod`).
    pub period: Duration,
    /// `failoverCatchUpTimeout`.
    pub catch_up_timeout: Duration,
    /// `useZKSwitch`: failovers are decided through ZooKeeper. Without it the session only
    /// serves the shared configuration, and every instance fails over on its own.
    pub failover: bool,
    /// `zkWriteLease` (zero: off): see [`crate::config::SystemConfig::zk_write_lease_ms`].
    pub write_lease: Duration,
}

/// What `show @@cluster` shows of one dataHost.
#[derive(Debug, Clone, Default)]
pub struct HostState {
    /// Why the last decision about it was not to switch although its writeHost is down (the
    /// writes at risk), or what was decided; empty when nothing happened.
    pub note: String,
}

/// The coordination state of this instance (module documentation).
#[derive(Debug, Default)]
pub struct State {
    /// The ZooKeeper session is connected.
    pub connected: bool,
    /// The leader's myid, as last read.
    pub leader: String,
    /// The epoch of the index document last followed.
    pub epoch: u64,
    /// Per dataHost: the last note.
    pub hosts: BTreeMap<String, HostState>,
}

/// A running coordination (one per gateway process).
#[derive(Debug)]
pub struct Coordination {
    pub settings: Settings,
    state: Mutex<State>,
    /// A session to write with from outside the loop (`switch @@datasource`).
    session: tokio::sync::Mutex<Option<Arc<Session>>>,
}

impl Coordination {
    /// Starts the coordination task; `current` gives the cluster in force (it changes with
    /// reloads) and `None` once the gateway is gone, which ends the task. Marks every cluster
    /// it sees as coordinated (their heartbeats no longer switch on their own).
    pub fn spawn(
        settings: Settings,
        current: impl Fn() -> Option<Arc<Cluster>> + Send + Sync + 'static,
    ) -> Arc<Coordination> {
        let c = Arc::new(Coordination {
            settings,
            state: Mutex::new(State::default()),
            session: tokio::sync::Mutex::new(None),
        });
        if c.settings.failover
            && let Some(cluster) = current()
        {
            cluster.set_coordinated();
            cluster.renew_lease(c.settings.write_lease);
        }
        let current = Arc::new(current);
        tokio::spawn(run(Arc::downgrade(&c), {
            let current = current.clone();
            move || current()
        }));
        if c.settings.failover && !c.settings.write_lease.is_zero() {
            tokio::spawn(keep_lease(Arc::downgrade(&c), move || current()));
        }
        c
    }

    /// The ZooKeeper session, while one is connected.
    pub async fn session(&self) -> Option<Arc<Session>> {
        self.session.lock().await.clone().filter(|s| s.connected())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A snapshot of the state, for the manager port; "connected" is the session's state now
    /// (the last round's when the session is being replaced).
    pub fn snapshot(&self) -> (bool, String, u64, BTreeMap<String, HostState>) {
        let now = self
            .session
            .try_lock()
            .ok()
            .map(|s| s.as_ref().is_some_and(|s| s.connected()));
        let s = self.state();
        (
            now.unwrap_or(s.connected),
            s.leader.clone(),
            s.epoch,
            s.hosts.clone(),
        )
    }

    fn note(&self, host: &str, note: String) {
        self.state().hosts.entry(host.to_string()).or_default().note = note;
    }

    /// `switch @@datasource` in cluster mode: fences the writeHost in force (as a failover
    /// does), then writes dataHost `host`'s new index `to` to ZooKeeper (epoch + 1,
    /// compare-and-set), for every instance to follow; this one follows at once. An operator's
    /// decision: no leader, vote or catch-up check is needed.
    ///
    /// Errors: ZooKeeper cannot be reached (nothing switches), or another write came first.
    pub async fn switch(&self, cluster: &Cluster, host: &str, to: usize) -> Result<(), String> {
        let session = self.session.lock().await.clone();
        let Some(session) = session.filter(|s| s.connected()) else {
            return Err(format!(
                "ZooKeeper ({}) is not connected: in cluster mode writeHosts switch only through it",
                self.settings.myid.zk_url
            ));
        };
        let (doc, version) = match session.watch_index().await {
            Ok((Some((doc, version)), _)) => (doc, Some(version)),
            Ok((None, _)) => (cluster.index_doc(), None),
            Err(e) => return Err(e.to_string()),
        };
        let fenced = match (
            cluster.hosts.iter().find(|h| h.name == host),
            doc.indexes.get(host),
        ) {
            (Some(h), Some(&from)) if from != to && from < h.write_hosts.len() => {
                h.fence(from).await;
                h.unfence(to).await;
                Some((h, from))
            }
            _ => None,
        };
        let mut next = doc.clone();
        next.epoch += 1;
        next.leader = self.settings.myid.myid.clone();
        next.indexes.insert(host.to_string(), to);
        let written = session.write_index(&next, version).await;
        match written {
            Ok(true) => {
                cluster.follow(&next);
                self.state().epoch = next.epoch;
                Ok(())
            }
            Ok(false) | Err(_) => {
                // Not switched: the writeHost in force takes writes again.
                if let Some((h, from)) = fenced {
                    h.unfence(from).await;
                }
                match written {
                    Err(e) => Err(e.to_string()),
                    _ => Err("another instance changed the dnindex znode meanwhile: nothing was switched; try again".to_string()),
                }
            }
        }
    }
}

/// Renews the write lease every 100 ms while the ZooKeeper session is connected (the client
/// reports a lost connection after about 2/5 of the session timeout without an answer).
async fn keep_lease(
    me: std::sync::Weak<Coordination>,
    current: impl Fn() -> Option<Arc<Cluster>> + Send + Sync + 'static,
) {
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let Some(c) = me.upgrade() else {
            return;
        };
        let connected = c
            .session
            .lock()
            .await
            .as_ref()
            .is_some_and(|s| s.connected());
        if connected && let Some(cluster) = current() {
            cluster.renew_lease(c.settings.write_lease);
        }
    }
}

async fn run(
    me: std::sync::Weak<Coordination>,
    current: impl Fn() -> Option<Arc<Cluster>> + Send + Sync + 'static,
) {
    let mut logged_down = false;
    loop {
        let Some(c) = me.upgrade() else {
            return;
        };
        let settings = c.settings.clone();
        drop(c);
        let session = match Session::open(&settings.myid, settings.session_timeout).await {
            Ok(s) => Arc::new(s),
            Err(e) => {
                if !logged_down {
                    let consequence = if settings.failover {
                        "writeHosts stay where they are until it can"
                    } else {
                        "the shared configuration is not followed until it can (failovers stay local)"
                    };
                    tracing::error!(error = %e, zk = %settings.myid.zk_url, "cluster mode: ZooKeeper cannot be reached; {consequence}");
                    logged_down = true;
                }
                tokio::time::sleep(settings.period).await;
                continue;
            }
        };
        logged_down = false;
        let granted = session.granted_timeout();
        tracing::info!(myid = %settings.myid.myid, zk = %settings.myid.zk_url, ?granted, "cluster mode: ZooKeeper session open");
        if !settings.write_lease.is_zero() && settings.write_lease * 2 >= granted {
            tracing::error!(
                lease = ?settings.write_lease,
                ?granted,
                asked = ?settings.session_timeout,
                "cluster mode: ZooKeeper granted a shorter session than zkSessionTimeout (its maxSessionTimeout, 20 ticks by default); zkWriteLease is no longer under half of it, so a cut-off instance may still write when the others decide without it: lower zkWriteLease or raise ZooKeeper's maxSessionTimeout"
            );
        }
        if let Some(c) = me.upgrade() {
            *c.session.lock().await = Some(session.clone());
        }
        while session.alive() {
            let (Some(c), Some(cluster)) = (me.upgrade(), current()) else {
                return;
            };
            if !settings.failover {
                c.state().connected = session.connected();
                drop((c, cluster));
                tokio::time::sleep(settings.period).await;
                continue;
            }
            cluster.set_coordinated();
            // Bounded: a catch-up wait, the fencing attempt (3 s) and ZooKeeper's answers.
            let limit =
                settings.session_timeout + settings.catch_up_timeout + Duration::from_secs(10);
            let round = tokio::time::timeout(limit, round(&c, &session, &cluster, &settings)).await;
            drop(cluster);
            let watcher = match round {
                Ok(Ok(w)) => Some(w),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "cluster mode: ZooKeeper round failed; indexes unchanged");
                    None
                }
                Err(_) => {
                    tracing::warn!("cluster mode: ZooKeeper round timed out; indexes unchanged");
                    None
                }
            };
            c.state().connected = session.connected();
            drop(c);
            match watcher {
                Some(w) => {
                    tokio::select! {
                        _ = w.changed() => {}
                        _ = tokio::time::sleep(settings.period) => {}
                    }
                }
                None => tokio::time::sleep(settings.period).await,
            }
        }
        tracing::error!(myid = %settings.myid.myid, "cluster mode: ZooKeeper session expired; indexes unchanged until a new one is open");
        if let Some(c) = me.upgrade() {
            c.state().connected = false;
            *c.session.lock().await = None;
        }
    }
}

/// One round: follow, report, decide (module documentation). Returns the watch on the
/// dnindex znode.
async fn round(
    c: &Coordination,
    session: &Session,
    cluster: &Cluster,
    settings: &Settings,
) -> Result<zookeeper_client::OneshotWatcher, crate::coord::CoordError> {
    let (doc, watcher) = session.watch_index().await?;
    if let Some((doc, _)) = &doc {
        cluster.follow(doc);
        c.state().epoch = doc.epoch;
    }
    session.report(&cluster.report()).await?;
    let leader = session.leader().await?.unwrap_or_default();
    c.state().leader = leader;
    if !session.leads().await? {
        return Ok(watcher);
    }
    let (doc, version) = match doc {
        Some((doc, version)) => (doc, Some(version)),
        None => (cluster.index_doc(), None),
    };
    if version.is_none() {
        // The first leader publishes the indexes it started with.
        let mut first = doc.clone();
        first.leader = settings.myid.myid.clone();
        session.write_index(&first, None).await?;
        return Ok(watcher);
    }
    let reports = session.reports().await?;
    let persisted = session.positions().await?;
    for host in &cluster.hosts {
        let current = match doc.indexes.get(&host.name) {
            Some(&i) if i < host.write_hosts.len() => i,
            other => {
                // The document lacks this dataHost, or names a writeHost it does not have
                // (written by hand, or by an instance with another configuration): the leader
                // puts the index in force here back, so that failover works again.
                let note = format!(
                    "the dnindex znode has {other:?} for this dataHost: rewritten with the active index {}",
                    host.active_index()
                );
                tracing::error!(data_host = %host.name, "cluster mode: {note}");
                c.note(&host.name, note);
                let mut next = doc.clone();
                next.epoch += 1;
                next.leader = settings.myid.myid.clone();
                next.indexes.insert(host.name.clone(), host.active_index());
                session.write_index(&next, version).await?;
                break;
            }
        };
        let views: Vec<&HostReport> = reports
            .values()
            .filter_map(|r| r.hosts.get(&host.name))
            .collect();
        let Some(to) = host.coordinated_candidate(current, &views) else {
            continue;
        };
        pause_for_tests().await;
        // Every acknowledged write: the live instances' reports, and what every instance ever
        // published (one that crashed since still acknowledged its writes).
        let mut acked = Position::default();
        for v in &views {
            acked.merge(&Position::parse(&v.position));
        }
        for p in persisted.get(&host.name).into_iter().flatten() {
            acked.merge(&Position::parse(p));
        }
        if let Err(at_risk) = host.caught_up(to, &acked, settings.catch_up_timeout).await {
            let note = format!(
                "writeHost {current} is down for every instance but {} has not applied the acknowledged writes {acked}: not switched ({at_risk})",
                host.write_hosts[to].source.name
            );
            tracing::error!(data_host = %host.name, "failover refused: {note}");
            c.note(&host.name, note);
            continue;
        }
        host.fence(current).await;
        host.unfence(to).await;
        let mut next = doc.clone();
        next.epoch += 1;
        next.leader = settings.myid.myid.clone();
        next.indexes.insert(host.name.clone(), to);
        if session.write_index(&next, version).await? {
            let note = format!(
                "epoch {}: writeHost {current} -> {to} ({}), decided by {}",
                next.epoch, host.write_hosts[to].source.name, next.leader
            );
            tracing::error!(data_host = %host.name, "failover decided: {note}");
            c.note(&host.name, note);
            cluster.follow(&next);
            c.state().epoch = next.epoch;
        }
        // One decision per round: the document's version changed.
        break;
    }
    Ok(watcher)
}

/// Debug builds: `MANX_COORD_PAUSE_MS=<ms>` holds a leader for that long between deciding a
/// switch and writing it (tests kill the leader there). Release builds ignore it.
async fn pause_for_tests() {
    if cfg!(debug_assertions)
        && let Some(ms) = std::env::var("MANX_COORD_PAUSE_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
    {
        tracing::warn!(
            ms,
            "MANX_COORD_PAUSE_MS: the leader pauses before writing its decision"
        );
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

impl Cluster {
    /// Marks the cluster (and every cluster a reload builds from it) as coordinated: failovers
    /// come only from ZooKeeper, and writes record their GTIDs.
    pub(super) fn set_coordinated(&self) {
        self.dnindex
            .coordinated
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Every dataHost's name, active writeHost index and the GTIDs of the writes acknowledged
    /// on it (`show @@cluster`), in name order.
    pub fn host_positions(&self) -> Vec<(String, usize, String)> {
        self.hosts
            .iter()
            .map(|h| (h.name.clone(), h.active_index(), h.acked.get().to_string()))
            .collect()
    }

    /// Records contact with ZooKeeper now, for a write lease of `lease` (zero: none).
    fn renew_lease(&self, lease: Duration) {
        use std::sync::atomic::Ordering;
        self.dnindex
            .lease_ms
            .store(lease.as_millis() as u64, Ordering::Relaxed);
        self.dnindex.contact_ms.store(
            super::lease_epoch().elapsed().as_millis() as u64,
            Ordering::Release,
        );
    }

    /// The active indexes as an index document of epoch 0.
    fn index_doc(&self) -> IndexDoc {
        IndexDoc {
            epoch: 0,
            leader: String::new(),
            indexes: self
                .hosts
                .iter()
                .map(|h| (h.name.clone(), h.active_index()))
                .collect(),
        }
    }

    /// Switches every dataHost whose index in `doc` differs from its active one (an index
    /// beyond its writeHosts is ignored, with a warning).
    pub(super) fn follow(&self, doc: &IndexDoc) {
        for h in &self.hosts {
            let Some(&to) = doc.indexes.get(&h.name) else {
                continue;
            };
            if to >= h.write_hosts.len() {
                tracing::warn!(data_host = %h.name, index = to, "cluster mode: the dnindex znode names a writeHost this dataHost does not have; ignored");
                continue;
            }
            let from = h.active_index();
            if from != to {
                h.switch(from, to, &format!("ZooKeeper epoch {}", doc.epoch));
            }
        }
    }

    /// This instance's report.
    fn report(&self) -> Report {
        Report {
            hosts: self
                .hosts
                .iter()
                .map(|h| {
                    let states = h
                        .write_hosts
                        .iter()
                        .map(|w| {
                            let health = &w.source.health;
                            if health.alive() && !health.in_recovery() {
                                'W'
                            } else if health.status().is_down() || health.in_recovery() {
                                'D'
                            } else {
                                '?'
                            }
                        })
                        .collect();
                    (
                        h.name.clone(),
                        HostReport {
                            active: h.active_index(),
                            states,
                            position: h.acked.get().to_string(),
                        },
                    )
                })
                .collect(),
        }
    }
}

/// The writeHost to switch to from `current`, given every live instance's view (`views`):
/// `None` unless every view reports `current` down (`D`); then the next index after
/// `current` (wrapping) that every view reports writable (`W`).
pub fn candidate(current: usize, write_hosts: usize, views: &[&HostReport]) -> Option<usize> {
    let state = |v: &HostReport, i: usize| v.states.as_bytes().get(i).copied().unwrap_or(b'?');
    if views.is_empty() || views.iter().any(|v| state(v, current) != b'D') {
        return None;
    }
    (1..write_hosts)
        .map(|k| (current + k) % write_hosts)
        .find(|&i| views.iter().all(|v| state(v, i) == b'W'))
}

impl DataHost {
    /// [`candidate`] under this dataHost's policy: no automatic switch with `switchType="-1"`,
    /// `notSwitch`, `writeType` other than 0 or one writeHost; with `switchType="2"` (MySQL) a
    /// candidate whose recorded lag in this instance's view is not 0 is passed over.
    fn coordinated_candidate(&self, current: usize, views: &[&HostReport]) -> Option<usize> {
        let p = &self.policy;
        let n = self.write_hosts.len();
        if p.switch_type == -1 || p.not_switch || p.write_type != 0 || n < 2 || current >= n {
            return None;
        }
        let lag_ok = |i: usize| {
            p.switch_type != 2
                || p.postgres
                || self.write_hosts[i].source.health.recorded_lag() == Some(0)
        };
        let mut filtered: Vec<HostReport> = views.iter().map(|v| (*v).clone()).collect();
        for v in &mut filtered {
            let mut states: Vec<u8> = v.states.bytes().collect();
            for (i, s) in states.iter_mut().enumerate() {
                if *s == b'W' && !lag_ok(i) {
                    *s = b'?';
                }
            }
            v.states = String::from_utf8_lossy(&states).into_owned();
        }
        let refs: Vec<&HostReport> = filtered.iter().collect();
        candidate(current, n, &refs)
    }

    /// Whether writeHost `to` has every acknowledged write of `acked`. MariaDB: waits until it
    /// has applied the GTIDs (`MASTER_GTID_WAIT`), at most `timeout`. PostgreSQL (the
    /// candidate is a promoted standby: one in recovery is never a candidate): the last LSN it
    /// replayed before its promotion (`pg_last_wal_replay_lsn()`) must be at least the
    /// acknowledged one; a server that never replayed (started as a primary, or restarted
    /// since its promotion) cannot tell and is refused. An empty `acked` passes at once.
    ///
    /// Errors: the writes are not all there, or the server cannot be asked (why, in words).
    async fn caught_up(
        &self,
        to: usize,
        acked: &Position,
        timeout: Duration,
    ) -> Result<(), String> {
        if acked.is_empty() {
            return Ok(());
        }
        let backend = self.write_hosts[to].source.backend.clone();
        if self.policy.postgres {
            let Some(wanted) = acked.lsn else {
                return Ok(());
            };
            let ask = async {
                let mut conn = backend.connect().await.map_err(|e| e.to_string())?;
                first_value(conn.as_mut(), "SELECT pg_last_wal_replay_lsn()").await
            };
            return match tokio::time::timeout(Duration::from_secs(10), ask).await {
                Ok(Ok(Some(v))) => match parse_lsn(&v) {
                    Some(replayed) if replayed >= wanted => Ok(()),
                    Some(replayed) => Err(format!(
                        "it replayed WAL up to {} before its promotion, short of {}",
                        format_lsn(replayed),
                        format_lsn(wanted)
                    )),
                    None => Err(format!("pg_last_wal_replay_lsn() answered {v:?}")),
                },
                Ok(Ok(None)) => Err("it never replayed WAL from the old primary (pg_last_wal_replay_lsn() is NULL): cannot tell".to_string()),
                Ok(Err(e)) => Err(format!("cannot ask it: {e}")),
                Err(_) => Err("it did not answer in time".to_string()),
            };
        }
        if acked.gtids.is_empty() {
            return Ok(());
        }
        let seconds = timeout.as_secs_f64().max(0.1);
        let sql = format!("SELECT MASTER_GTID_WAIT('{}', {seconds:.1})", acked.gtids);
        let ask = async {
            let mut conn = backend.connect().await.map_err(|e| e.to_string())?;
            first_value(conn.as_mut(), &sql).await
        };
        match tokio::time::timeout(timeout + Duration::from_secs(5), ask).await {
            Ok(Ok(Some(v))) if v == "0" => Ok(()),
            Ok(Ok(Some(v))) if v == "-1" => {
                Err(format!("waited {seconds:.1} s; it has not applied them"))
            }
            Ok(Ok(v)) => Err(format!("MASTER_GTID_WAIT answered {v:?}")),
            Ok(Err(e)) => Err(format!("cannot ask it: {e}")),
            Err(_) => Err("it did not answer in time".to_string()),
        }
    }

    /// Fences writeHost `old` before another takes the writes, when it can be reached within
    /// 3 s ([`BackendConn::fence`]): it is asked to refuse writes (MariaDB/MySQL `read_only`,
    /// which the account may not be allowed to set, and which does not stop an account with
    /// `READ_ONLY ADMIN`; PostgreSQL `default_transaction_read_only`), then every other
    /// connection of the gateway's account there is ended, so that statements of instances
    /// that have not followed yet fail. A writeHost that is down cannot take writes anyway;
    /// the outcome is logged either way.
    async fn fence(&self, old: usize) {
        let source = &self.write_hosts[old].source;
        let backend = source.backend.clone();
        let fenced = tokio::time::timeout(Duration::from_secs(3), async {
            let mut conn = backend.connect().await?;
            conn.fence().await
        })
        .await;
        match fenced {
            Ok(Ok((Ok(()), ended))) => {
                tracing::warn!(data_host = %self.name, host = %source.name, ended, "fencing: the old writeHost is read-only now and the gateway account's other connections to it are ended")
            }
            Ok(Ok((Err(refused), ended))) => {
                tracing::error!(data_host = %self.name, host = %source.name, ended, %refused, "fencing: the old writeHost refused to become read-only (the gateway account lacks the privilege); the account's other connections to it are ended")
            }
            Ok(Err(e)) => {
                tracing::warn!(data_host = %self.name, host = %source.name, error = %e, "fencing: the old writeHost cannot be reached (down?)")
            }
            Err(_) => {
                tracing::warn!(data_host = %self.name, host = %source.name, "fencing: the old writeHost did not answer within 3 s (down?)")
            }
        }
    }

    /// Undoes an earlier fencing of writeHost `to` before it takes the writes
    /// ([`BackendConn::unfence`]), within 3 s; a refusal is logged (the account may not change
    /// `read_only`: the server keeps what the operator set).
    async fn unfence(&self, to: usize) {
        let source = &self.write_hosts[to].source;
        let backend = source.backend.clone();
        let done = tokio::time::timeout(Duration::from_secs(3), async {
            let mut conn = backend.connect().await?;
            conn.unfence().await
        })
        .await;
        match done {
            Ok(Ok(())) => {
                tracing::info!(data_host = %self.name, host = %source.name, "the new writeHost accepts writes (read_only off)")
            }
            Ok(Err(e)) => {
                tracing::warn!(data_host = %self.name, host = %source.name, error = %e, "the new writeHost's read-only setting could not be turned off")
            }
            Err(_) => {
                tracing::warn!(data_host = %self.name, host = %source.name, "the new writeHost did not answer within 3 s")
            }
        }
    }
}

/// The first column of the first row of `sql` as text (`None` for NULL or no row; an OK
/// answer is `Some("")`).
///
/// Errors: the statement fails (the server's message).
async fn first_value(conn: &mut dyn BackendConn, sql: &str) -> Result<Option<String>, String> {
    use futures::StreamExt;
    match conn.query(sql).await.map_err(|e| e.to_string())? {
        Response::Ok(_) => Ok(Some(String::new())),
        Response::Rows { mut rows, .. } => {
            let mut first = None;
            while let Some(row) = rows.next().await {
                let row = row.map_err(|e| e.to_string())?;
                if first.is_none() {
                    first = Some(row.first().and_then(|v| v.to_text()));
                }
            }
            Ok(first.flatten())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(states: &str) -> HostReport {
        HostReport {
            active: 0,
            states: states.to_string(),
            position: String::new(),
        }
    }

    #[test]
    fn a_switch_needs_every_instance_to_see_the_writer_down_and_the_standby_up() {
        let (a, b, c) = (view("DW"), view("DW"), view("DW"));
        assert_eq!(candidate(0, 2, &[&a, &b, &c]), Some(1));
        // One instance still reaches the writer: no switch.
        let alive = view("WW");
        assert_eq!(candidate(0, 2, &[&a, &alive, &c]), None);
        // Not yet known counts as not down.
        let unknown = view("?W");
        assert_eq!(candidate(0, 2, &[&a, &unknown]), None);
        // The standby must be writable for everyone.
        let no_standby = view("D?");
        assert_eq!(candidate(0, 2, &[&a, &no_standby]), None);
        // Next in order, wrapping, skipping one that is down.
        let three = view("WDD");
        assert_eq!(candidate(2, 3, &[&three]), Some(0));
        let skip = view("DDW");
        assert_eq!(candidate(0, 3, &[&skip]), Some(2));
        // No views: no decision.
        assert_eq!(candidate(0, 2, &[]), None);
        // A view that lacks the standby's index (a shorter config) does not make it a
        // candidate.
        let short = view("D");
        assert_eq!(candidate(0, 2, &[&short]), None);
    }
}
