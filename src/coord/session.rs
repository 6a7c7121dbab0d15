//! A coordination session: the connection to the coordination service and every read and write
//! made through it — this instance's registration, the leader election, health reports, the
//! shared dnindex and positions, the shared configuration and its proposals and votes.

use super::*;

/// A ZooKeeper session of this instance, registered as a live instance and a leadership
/// candidate. A session that expires is not revived: [`Session::alive`] turns false and the
/// caller opens a new one (a new candidacy, at the back of the line).
pub struct Session {
    pub(super) client: zk::Client,
    pub(super) paths: Paths,
    pub(super) myid: String,
    /// This instance's election znode (full path); `None` for an observer
    /// ([`Session::observe`]).
    pub(super) candidate: Option<String>,
    /// The positions text last written to this instance's positions znode.
    pub(super) positions_written: std::sync::Mutex<String>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("base", &self.paths.base)
            .field("myid", &self.myid)
            .field("candidate", &self.candidate)
            .finish()
    }
}

pub(super) fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

pub(super) fn ephemeral() -> zk::CreateOptions<'static> {
    zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all())
}

impl Session {
    /// Connects to `myid.zk_url` (bounded by `session_timeout`), creates the cluster's
    /// znodes when missing, and registers this instance: `line/<myid>`, its health znode and
    /// its election znode. Znodes a previous session of the same myid left (a restart within
    /// the session timeout) are waited out (they vanish when it expires).
    ///
    /// Errors: ZooKeeper cannot be reached in time, or refuses an operation; another live
    /// instance has the same myid (its znodes outlive the session timeout).
    pub async fn open(myid: &MyId, session_timeout: Duration) -> Result<Session, CoordError> {
        let mut session = Session::observe(myid, session_timeout).await?;
        let (client, paths) = (&session.client, &session.paths);
        // `line/<myid>` first: while an earlier session's is there, so are its other
        // ephemeral znodes (its election znode among them); they all go together.
        for path in [
            paths.line(&myid.myid),
            format!("{}/{}", paths.health(), myid.myid),
        ] {
            register(client, &path, session_timeout).await?;
        }
        let election = format!("{}/n_", paths.election());
        let (_, seq) = client
            .create(
                &election,
                myid.myid.as_bytes(),
                &zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all()),
            )
            .await
            .map_err(fail("join the election"))?;
        session.candidate = Some(format!("{election}{seq}"));
        Ok(session)
    }

    /// Connects to `myid.zk_url` (bounded by `session_timeout`) and creates the cluster's
    /// znodes when missing, without registering as an instance: for `manx zk publish` and the
    /// configuration read at start-up.
    ///
    /// Errors: ZooKeeper cannot be reached in time, or refuses an operation.
    pub async fn observe(myid: &MyId, session_timeout: Duration) -> Result<Session, CoordError> {
        let connecting = zk::Client::connector()
            .with_session_timeout(session_timeout)
            .with_connection_timeout(session_timeout.min(Duration::from_secs(5)))
            .with_fail_eagerly()
            .connect(&myid.zk_url);
        let client = tokio::time::timeout(session_timeout, connecting)
            .await
            .map_err(|_| CoordError::Zk {
                what: format!("connect to {}", myid.zk_url),
                source: zk::Error::Timeout,
            })?
            .map_err(fail(format!("connect to {}", myid.zk_url)))?;
        let paths = Paths::new(&myid.cluster_id);
        for dir in [
            format!("{}/bindata", paths.base),
            format!("{}/line", paths.base),
            paths.election(),
            paths.health(),
            paths.reload(),
            paths.positions(),
        ] {
            match client.mkdir(&dir, &persistent()).await {
                Ok(()) | Err(zk::Error::NodeExists) => {}
                Err(e) => return Err(fail(format!("create {dir}"))(e)),
            }
        }
        Ok(Session {
            client,
            paths,
            myid: myid.myid.clone(),
            candidate: None,
            positions_written: std::sync::Mutex::new(String::new()),
        })
    }

    /// The session timeout ZooKeeper granted (it bounds what was asked for by its
    /// `minSessionTimeout` / `maxSessionTimeout`).
    pub fn granted_timeout(&self) -> Duration {
        self.client.session_timeout()
    }

    /// Whether the session is connected now (not disconnected, expired or closed).
    pub fn connected(&self) -> bool {
        matches!(self.client.state(), zk::SessionState::SyncConnected)
    }

    /// Whether the session can still come back (not expired, closed or refused).
    pub fn alive(&self) -> bool {
        !matches!(
            self.client.state(),
            zk::SessionState::Expired | zk::SessionState::Closed | zk::SessionState::AuthFailed
        )
    }

    /// The myid of the current leader: the owner of the lowest election znode.
    ///
    /// Errors: ZooKeeper cannot be asked.
    pub async fn leader(&self) -> Result<Option<String>, CoordError> {
        let mut children = self
            .client
            .list_children(&self.paths.election())
            .await
            .map_err(fail("list the election"))?;
        children.sort_by_key(|c| sequence_of(c));
        for child in children {
            let path = format!("{}/{child}", self.paths.election());
            match self.client.get_data(&path).await {
                Ok((data, _)) => return Ok(Some(String::from_utf8_lossy(&data).into_owned())),
                // Gone since the listing: the next one.
                Err(zk::Error::NoNode) => continue,
                Err(e) => return Err(fail("read the election")(e)),
            }
        }
        Ok(None)
    }

    /// Whether this instance leads: its election znode is the lowest.
    ///
    /// Errors: ZooKeeper cannot be asked.
    pub async fn leads(&self) -> Result<bool, CoordError> {
        let children = self
            .client
            .list_children(&self.paths.election())
            .await
            .map_err(fail("list the election"))?;
        let lowest = children.iter().min_by_key(|c| sequence_of(c));
        Ok(match (&self.candidate, lowest) {
            (Some(me), Some(c)) => me.ends_with(&format!("/{c}")),
            _ => false,
        })
    }

    /// Publishes this instance's report, and its positions to its persistent positions
    /// znode when they changed.
    ///
    /// Errors: ZooKeeper refuses a write (the health znode is re-created when it vanished).
    pub async fn report(&self, report: &Report) -> Result<(), CoordError> {
        let positions: String = report
            .hosts
            .iter()
            .filter(|(_, h)| !h.position.is_empty())
            .map(|(name, h)| format!("{name} {}\n", h.position))
            .collect();
        let changed = *self
            .positions_written
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            != positions;
        if changed {
            let path = format!("{}/{}", self.paths.positions(), self.myid);
            match self
                .client
                .set_data(&path, positions.as_bytes(), None)
                .await
            {
                Ok(_) => {}
                Err(zk::Error::NoNode) => {
                    self.client
                        .create(&path, positions.as_bytes(), &persistent())
                        .await
                        .map_err(fail("publish the positions"))?;
                }
                Err(e) => return Err(fail("publish the positions")(e)),
            }
            *self
                .positions_written
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = positions;
        }
        let path = format!("{}/{}", self.paths.health(), self.myid);
        let text = report.encode();
        match self.client.set_data(&path, text.as_bytes(), None).await {
            Ok(_) => Ok(()),
            Err(zk::Error::NoNode) => self
                .client
                .create(&path, text.as_bytes(), &ephemeral())
                .await
                .map(|_| ())
                .map_err(fail("publish the health report")),
            Err(e) => Err(fail("publish the health report")(e)),
        }
    }

    /// Every live instance's report, by myid.
    ///
    /// Errors: ZooKeeper cannot be asked.
    pub async fn reports(&self) -> Result<BTreeMap<String, Report>, CoordError> {
        let dir = self.paths.health();
        let children = self
            .client
            .list_children(&dir)
            .await
            .map_err(fail("list the health reports"))?;
        let mut out = BTreeMap::new();
        for child in children {
            match self.client.get_data(&format!("{dir}/{child}")).await {
                Ok((data, _)) => {
                    out.insert(child, Report::decode(&String::from_utf8_lossy(&data)));
                }
                Err(zk::Error::NoNode) => {}
                Err(e) => return Err(fail("read a health report")(e)),
            }
        }
        Ok(out)
    }

    /// The index document and its znode version, with a watch that fires at its next change
    /// (or creation); `None` when it does not exist yet.
    ///
    /// Errors: ZooKeeper cannot be asked.
    pub async fn watch_index(
        &self,
    ) -> Result<(Option<(IndexDoc, i32)>, zk::OneshotWatcher), CoordError> {
        let path = self.paths.dnindex();
        match self.client.get_and_watch_data(&path).await {
            Ok((data, stat, watcher)) => Ok((
                Some((
                    IndexDoc::decode(&String::from_utf8_lossy(&data)),
                    stat.version,
                )),
                watcher,
            )),
            Err(zk::Error::NoNode) => {
                let (stat, watcher) = self
                    .client
                    .check_and_watch_stat(&path)
                    .await
                    .map_err(fail("watch the dnindex znode"))?;
                // Created between the two calls (`stat` is then set): the next round reads it.
                let _ = stat;
                Ok((None, watcher))
            }
            Err(e) => Err(fail("read the dnindex znode")(e)),
        }
    }

    /// Writes `doc` as the new index document if its znode is still at `version` (`None`:
    /// create it, it must not exist) and this instance still holds its election znode — one
    /// atomic multi-operation. `Ok(false)`: someone else wrote first, or the leadership is
    /// gone; nothing was written.
    ///
    /// Errors: ZooKeeper cannot be asked.
    pub async fn write_index(
        &self,
        doc: &IndexDoc,
        version: Option<i32>,
    ) -> Result<bool, CoordError> {
        let text = doc.encode();
        let path = self.paths.dnindex();
        let Some(candidate) = &self.candidate else {
            return Ok(false);
        };
        let mut multi = self.client.new_multi_writer();
        let built = multi
            .add_check_version(candidate, -1)
            .and_then(|()| match version {
                Some(v) => multi.add_set_data(&path, text.as_bytes(), Some(v)),
                None => multi.add_create(&path, text.as_bytes(), &persistent()),
            });
        built.map_err(fail("prepare the dnindex write"))?;
        match multi.commit().await {
            Ok(_) => Ok(true),
            Err(zk::MultiWriteError::OperationFailed {
                source: zk::Error::BadVersion | zk::Error::NoNode | zk::Error::NodeExists,
                ..
            }) => Ok(false),
            Err(e) => Err(fail("write the dnindex znode")(e.into())),
        }
    }

    /// The acknowledged positions every instance ever published (live or not), per dataHost:
    /// dataHost → the positions' texts.
    ///
    /// Errors: ZooKeeper cannot be asked.
    pub async fn positions(&self) -> Result<BTreeMap<String, Vec<String>>, CoordError> {
        let dir = self.paths.positions();
        let children = self
            .client
            .list_children(&dir)
            .await
            .map_err(fail("list the positions"))?;
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for child in children {
            let data = match self.client.get_data(&format!("{dir}/{child}")).await {
                Ok((data, _)) => data,
                Err(zk::Error::NoNode) => continue,
                Err(e) => return Err(fail("read the positions")(e)),
            };
            for line in String::from_utf8_lossy(&data).lines() {
                if let Some((host, position)) = line.split_once(' ') {
                    out.entry(host.to_string())
                        .or_default()
                        .push(position.trim().to_string());
                }
            }
        }
        Ok(out)
    }

    /// The myids of the live instances (those with a health znode).
    ///
    /// Errors: ZooKeeper cannot be asked.
    pub async fn live(&self) -> Result<Vec<String>, CoordError> {
        self.client
            .list_children(&self.paths.health())
            .await
            .map_err(fail("list the live instances"))
    }

    /// The configuration in force cluster-wide, when one was published.
    ///
    /// Errors: ZooKeeper cannot be asked, or the znode is not a bundle.
    pub async fn config(&self) -> Result<Option<Bundle>, CoordError> {
        match self.client.get_data(&self.paths.config()).await {
            Ok((data, _)) => Bundle::decode(&data)
                .map(Some)
                .map_err(|source| CoordError::Bundle {
                    what: format!("read {}", self.paths.config()),
                    source,
                }),
            Err(zk::Error::NoNode) => Ok(None),
            Err(e) => Err(fail("read the configuration")(e)),
        }
    }

    /// Makes `bundle` the configuration in force cluster-wide.
    ///
    /// Errors: ZooKeeper refuses the write.
    pub async fn set_config(&self, bundle: &Bundle) -> Result<(), CoordError> {
        let path = self.paths.config();
        let data = bundle.encode();
        match self.client.set_data(&path, &data, None).await {
            Ok(_) => Ok(()),
            Err(zk::Error::NoNode) => self
                .client
                .create(&path, &data, &persistent())
                .await
                .map(|_| ())
                .map_err(fail("publish the configuration")),
            Err(e) => Err(fail("publish the configuration")(e)),
        }
    }

    /// Proposes `bundle`, whose version is the published version it was made over (a
    /// proposal over a version that is no longer the published one is aborted), and returns
    /// the proposal's sequence number (from 1: the version it makes when committed).
    ///
    /// Errors: ZooKeeper refuses the write.
    pub async fn propose(&self, bundle: &Bundle) -> Result<u64, CoordError> {
        let (_, seq) = self
            .client
            .create(
                &format!("{}/p_", self.paths.reload()),
                &bundle.encode(),
                &zk::CreateMode::PersistentSequential.with_acls(zk::Acls::anyone_all()),
            )
            .await
            .map_err(fail("propose a configuration"))?;
        Ok(seq.into_i64() as u64 + 1)
    }

    /// Proposal `seq`'s znode: sequence numbers are the znodes' plus one, so that 0 means
    /// "none" in versions.
    pub(super) fn proposal_path(&self, seq: u64) -> String {
        format!("{}/p_{:010}", self.paths.reload(), seq.saturating_sub(1))
    }

    /// Every proposal with its votes and decision, oldest first.
    ///
    /// Errors: ZooKeeper cannot be asked.
    pub async fn proposals(&self) -> Result<Vec<Proposal>, CoordError> {
        let dir = self.paths.reload();
        let mut names = self
            .client
            .list_children(&dir)
            .await
            .map_err(fail("list the proposals"))?;
        names.sort_by_key(|n| sequence_of(n));
        let mut out = Vec::new();
        for name in names {
            let path = format!("{dir}/{name}");
            let (children, stat) = match self.client.get_children(&path).await {
                Ok(c) => c,
                Err(zk::Error::NoNode) => continue,
                Err(e) => return Err(fail("read a proposal")(e)),
            };
            let mut p = Proposal {
                seq: sequence_of(&name).max(0) as u64 + 1,
                votes: BTreeMap::new(),
                decision: None,
                created_ms: stat.ctime,
            };
            for child in children {
                let text = match self.client.get_data(&format!("{path}/{child}")).await {
                    Ok((data, _)) => String::from_utf8_lossy(&data).into_owned(),
                    Err(zk::Error::NoNode) => continue,
                    Err(e) => return Err(fail("read a vote")(e)),
                };
                if child == "decision" {
                    p.decision = Some(text);
                } else if let Some(myid) = child.strip_prefix("v_") {
                    p.votes.insert(myid.to_string(), text);
                }
            }
            out.push(p);
        }
        Ok(out)
    }

    /// The bundle of proposal `seq`, with `seq` as its version, and the version of the
    /// published configuration it was proposed over (its base).
    ///
    /// Errors: ZooKeeper cannot be asked, or the proposal is not a bundle.
    pub async fn proposal(&self, seq: u64) -> Result<(Bundle, u64), CoordError> {
        let (data, _) = self
            .client
            .get_data(&self.proposal_path(seq))
            .await
            .map_err(fail("read a proposal"))?;
        let mut b = Bundle::decode(&data).map_err(|source| CoordError::Bundle {
            what: format!("read proposal {seq}"),
            source,
        })?;
        let base = std::mem::replace(&mut b.version, seq);
        Ok((b, base))
    }

    /// Records this instance's vote on proposal `seq` (replacing an earlier one).
    ///
    /// Errors: ZooKeeper refuses the write.
    pub async fn vote(&self, seq: u64, vote: &str) -> Result<(), CoordError> {
        let path = format!("{}/v_{}", self.proposal_path(seq), self.myid);
        match self
            .client
            .create(&path, vote.as_bytes(), &persistent())
            .await
        {
            Ok(_) => Ok(()),
            Err(zk::Error::NodeExists) => self
                .client
                .set_data(&path, vote.as_bytes(), None)
                .await
                .map(|_| ())
                .map_err(fail("vote")),
            Err(e) => Err(fail("vote")(e)),
        }
    }

    /// Records the decision on proposal `seq`, unless one was made already (`Ok(false)`).
    ///
    /// Errors: ZooKeeper refuses the write.
    pub async fn decide(&self, seq: u64, decision: &str) -> Result<bool, CoordError> {
        let path = format!("{}/decision", self.proposal_path(seq));
        match self
            .client
            .create(&path, decision.as_bytes(), &persistent())
            .await
        {
            Ok(_) => Ok(true),
            Err(zk::Error::NodeExists) => Ok(false),
            Err(e) => Err(fail("decide")(e)),
        }
    }

    /// Closes the session (its ephemeral znodes go with it): dropping the last client of a
    /// session closes it.
    pub fn close(self) {
        drop(self);
    }
}

/// Creates the ephemeral `path`, replacing one an earlier session left.
pub(super) async fn register(
    client: &zk::Client,
    path: &str,
    session_timeout: Duration,
) -> Result<(), CoordError> {
    // A znode left by an earlier session of this instance (a crash, a restart) goes when
    // that session expires; one that outlives the session timeout belongs to a live
    // instance with the same myid, which this one must not push out.
    let deadline = std::time::Instant::now() + session_timeout + Duration::from_secs(2);
    loop {
        match client.create(path, b"", &ephemeral()).await {
            Ok(_) => return Ok(()),
            Err(zk::Error::NodeExists) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(zk::Error::NodeExists) => {
                return Err(CoordError::Zk {
                    what: format!(
                        "register {path}: another live instance holds this myid (each instance needs its own myid in myid.properties)"
                    ),
                    source: zk::Error::NodeExists,
                });
            }
            Err(e) => return Err(fail(format!("create {path}"))(e)),
        }
    }
}

/// The sequence number of an election znode name (`n_0000000042` → 42).
pub(super) fn sequence_of(name: &str) -> i64 {
    name.rsplit('_')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(i64::MAX)
}
