//! What the manager port reads from and does to the dataHosts: per-server and per-dataNode
//! snapshots (`show @@datasource`, `@@datanode`, `@@heartbeat`), `switch @@datasource` and
//! `stop @@heartbeat`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use super::balance::SourceId;
use super::health::Status;
use super::{Cluster, DataHost, Source};
use crate::config::DbType;

/// One physical server as the manager port shows it.
#[derive(Debug, Clone)]
pub struct SourceInfo {
    pub data_host: String,
    /// The `host` attribute of its `<writeHost>` / `<readHost>`.
    pub name: String,
    /// `mysql` / `postgresql`.
    pub db_type: &'static str,
    pub host: String,
    pub port: u16,
    /// A writeHost (`W`) or a readHost (`R`).
    pub write: bool,
    /// Connections checked out of its pool now.
    pub active: usize,
    /// Open connections of its pool (idle or checked out).
    pub size: usize,
    /// `maxCon` of its dataHost.
    pub max_con: usize,
    /// Connections handed out for reads / writes since start.
    pub reads: u64,
    pub writes: u64,
    /// Mycat's heartbeat code: 1 ok, -1 error, -2 timeout, 0 init.
    pub rs_code: i32,
    /// Consecutive failed heartbeats.
    pub retry: u32,
    pub checking: bool,
    /// When the last heartbeat ended, and how long it took.
    pub last_beat: Option<(SystemTime, Duration)>,
    /// Its dataHost's heartbeats are stopped (`stop @@heartbeat`).
    pub stopped: bool,
    /// Its dataHost has a heartbeat statement.
    pub heartbeat: bool,
    /// The recorded `Seconds_Behind_Master` (`show slave status` heartbeats only).
    pub lag: Option<i64>,
    /// The heartbeat is `show slave status`.
    pub replication_check: bool,
}

/// One dataNode as the manager port shows it.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub name: String,
    pub data_host: String,
    pub database: String,
    /// The active writeHost's index.
    pub index: usize,
    pub db_type: &'static str,
    /// Of the active writeHost's pool: connections checked out, open connections.
    pub active: usize,
    pub size: usize,
    pub max_con: usize,
    /// Connections handed out (reads and writes) by every server of its dataHost.
    pub executed: u64,
    /// Seconds until its dataHost's stopped heartbeat resumes; -1 when it is not stopped.
    pub recovery_s: i64,
}

fn db_type(t: DbType) -> &'static str {
    match t {
        DbType::Mysql => "mysql",
        DbType::Postgresql => "postgresql",
    }
}

impl DataHost {
    /// Whether `stop @@heartbeat` holds the heartbeat of server `id` now: only the active
    /// writeHost's is held (SPEC §8.2), the others keep beating.
    pub(super) fn heartbeat_paused(&self, id: SourceId) -> bool {
        id.read.is_none() && id.write == self.active_index() && self.paused_remaining().is_some()
    }

    fn paused_remaining(&self) -> Option<Duration> {
        let until = *self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        until.and_then(|u| u.checked_duration_since(Instant::now()))
    }

    fn source_info(&self, id: SourceId, s: &Source) -> SourceInfo {
        let write = id.read.is_none();
        let heartbeat = !self.policy.heartbeat.is_empty();
        SourceInfo {
            data_host: self.name.clone(),
            name: s.name.clone(),
            db_type: db_type(self.db_type),
            host: s.host.clone(),
            port: s.port,
            write,
            active: s.backend.in_use(),
            size: s.backend.size(),
            max_con: self.max_con,
            reads: s.reads.load(Ordering::Relaxed),
            writes: s.writes.load(Ordering::Relaxed),
            rs_code: match s.health.status() {
                Status::Init => 0,
                Status::Ok => 1,
                Status::Error => -1,
                Status::Timeout => -2,
            },
            retry: s.health.failures(),
            checking: s.health.checking(),
            last_beat: s.health.last_beat(),
            stopped: self.heartbeat_paused(id),
            heartbeat,
            lag: s.health.recorded_lag(),
            replication_check: super::heartbeat::is_show_slave_status(&self.policy.heartbeat),
        }
    }
}

impl Cluster {
    /// Every server of every dataHost (writeHosts first within each writeHost group), dataHosts
    /// by name.
    pub fn source_infos(&self) -> Vec<SourceInfo> {
        self.hosts
            .iter()
            .flat_map(|h| {
                h.sources()
                    .map(|(id, s)| h.source_info(id, s))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The servers of dataNode `node`'s dataHost (`None`: no such dataNode).
    pub fn node_sources(&self, node: &str) -> Option<Vec<SourceInfo>> {
        let n = self.nodes.get(node)?;
        Some(
            n.host
                .sources()
                .map(|(id, s)| n.host.source_info(id, s))
                .collect(),
        )
    }

    /// Every dataNode, by name.
    pub fn node_infos(&self) -> Vec<NodeInfo> {
        self.nodes
            .iter()
            .map(|(name, n)| {
                let h = &n.host;
                let active = h.active();
                NodeInfo {
                    name: name.clone(),
                    data_host: h.name.clone(),
                    database: n.database.clone(),
                    index: h.active_index(),
                    db_type: db_type(h.db_type),
                    active: active.backend.in_use(),
                    size: active.backend.size(),
                    max_con: h.max_con,
                    executed: h
                        .sources()
                        .map(|(_, s)| {
                            s.reads.load(Ordering::Relaxed) + s.writes.load(Ordering::Relaxed)
                        })
                        .sum(),
                    recovery_s: h
                        .paused_remaining()
                        .map_or(-1, |d| d.as_secs_f64().ceil() as i64),
                }
            })
            .collect()
    }

    /// Names of the dataNodes, by name.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.nodes.keys().map(String::as_str)
    }

    /// Every dataNode's active writeHost, as what it takes to reach it without the cluster:
    /// for work that may wait on a server and must not hold the configuration meanwhile (XA
    /// recovery: a reload waits for replaced dataHosts to be let go, [`super::Retired`]).
    /// Sorted by dataNode name.
    pub fn write_targets(&self) -> Vec<super::WriteTarget> {
        self.nodes
            .iter()
            .map(|(name, n)| {
                let source = n.host.choose(super::Intent::Write, None);
                super::WriteTarget {
                    node: name.clone(),
                    database: n.database.clone(),
                    backend: source.backend.clone(),
                    statement_timeout: self.statement_timeout,
                }
            })
            .collect()
    }

    /// `switch @@datasource`: makes writeHost `index` (or, without one, the writeHost after
    /// the active one) of dataHost `name` active, as an automatic failover does (idle
    /// connections of the old writeHost closed, `minCon` opened on the new one,
    /// dnindex.properties rewritten). Allowed whatever `switchType` says, as in Mycat.
    ///
    /// Returns `Ok(true)` when the active writeHost changed, `Ok(false)` when `name` is not a
    /// dataHost, has a `writeType` other than 0, or `index` is already active.
    ///
    /// Errors: `index` is not one of the dataHost's writeHosts.
    pub fn switch_datasource(&self, name: &str, index: Option<usize>) -> Result<bool, String> {
        let Some(to) = self.switch_target(name, index)? else {
            return Ok(false);
        };
        let Some(h) = self.hosts.iter().find(|h| h.name == name) else {
            return Ok(false);
        };
        Ok(h.switch(h.active_index(), to, "switch @@datasource"))
    }

    /// The writeHost `switch @@datasource name[:index]` would make active: `index`, or the one
    /// after the active one. `Ok(None)` when `name` is not a dataHost, has a `writeType` other
    /// than 0, or the writeHost is already active.
    ///
    /// Errors: `index` is not one of the dataHost's writeHosts.
    pub fn switch_target(&self, name: &str, index: Option<usize>) -> Result<Option<usize>, String> {
        let Some(h) = self.hosts.iter().find(|h| h.name == name) else {
            return Ok(None);
        };
        if h.policy.write_type != 0 {
            return Ok(None);
        }
        let n = h.write_hosts.len();
        let from = h.active_index();
        let to = match index {
            Some(i) if i >= n => {
                return Err(format!(
                    "dataHost {name} has {n} writeHost(s): index {i} does not exist"
                ));
            }
            Some(i) => i,
            None => (from + 1) % n,
        };
        Ok((to != from).then_some(to))
    }

    /// `stop @@heartbeat name:seconds`: holds the heartbeat of dataHost `name`'s active
    /// writeHost for `seconds` (it keeps its last status meanwhile; a failover or switch moves
    /// the hold to the new active writeHost). `false` when there is no such dataHost.
    pub fn stop_heartbeat(&self, name: &str, seconds: u64) -> bool {
        let Some(h) = self.hosts.iter().find(|h| h.name == name) else {
            return false;
        };
        *h.paused_until.lock().unwrap_or_else(|p| p.into_inner()) =
            Instant::now().checked_add(Duration::from_secs(seconds));
        true
    }

    /// Closes the idle connections of every server's pool (shutdown).
    pub fn close_idle(&self) {
        for h in &self.hosts {
            for (_, s) in h.sources() {
                s.backend.close_idle();
            }
        }
    }

    /// The heartbeat timeout (`heartbeatTimeout`), in ms.
    pub fn heartbeat_timeout_ms(&self) -> u64 {
        self.heartbeat.timeout.as_millis() as u64
    }
}
