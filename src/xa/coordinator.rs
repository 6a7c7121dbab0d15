//! The coordinator's work: starting, preparing, committing and rolling back a distributed
//! transaction's branches, its log, and recovery of the transactions a crash left in doubt.

use super::*;

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

    pub(super) fn set_state(&self, gtrid: &str, state: XaState) {
        if let Some(r) = lock(&self.running).get_mut(gtrid) {
            r.state = state;
        }
    }

    pub(super) fn finish(&self, gtrid: &str) {
        lock(&self.running).remove(gtrid);
    }

    /// Leaves `gtrid` to recovery (a branch is unresolved), with what the log says of it.
    pub(super) fn hand_to_recovery(&self, gtrid: &str, branches: Vec<String>, decision: Decision) {
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
            .unwrap_or_else(|e| Err(XaError::Task(e)))
    }

    pub(super) async fn commit_now(
        &self,
        gtrid: &str,
        branches: Vec<Branch>,
    ) -> Result<(), XaError> {
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
    pub(super) async fn commit_branches(
        &self,
        gtrid: &str,
        branches: Vec<Branch>,
    ) -> Result<bool, XaError> {
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
    pub(super) async fn roll_back_all(
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

    pub(super) async fn rollback_now(
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
