//! One dataHost: its writeHosts and readHosts, the balance and write policy, the active writeHost
//! index (dnindex.properties) and its lease, and the backend each server is reached through.

use super::*;

/// One physical server of a dataHost.
#[derive(Debug)]
pub(super) struct Source {
    pub(super) name: String,
    pub(super) backend: Arc<dyn Backend>,
    pub(super) health: Health,
    pub(super) weight: u32,
    /// `host:port` as configured, for the manager port.
    pub(super) host: String,
    pub(super) port: u16,
    /// Connections handed out for reads / for writes (manager `EXECUTE`, `READ_LOAD`,
    /// `WRITE_LOAD`).
    pub(super) reads: AtomicU64,
    pub(super) writes: AtomicU64,
}

/// A `<writeHost>` and its `<readHost>`s.
#[derive(Debug)]
pub(super) struct WriteHost {
    pub(super) source: Source,
    pub(super) reads: Vec<Source>,
}

/// The `<dataHost>` attributes that steer host choice, heartbeat and failover.
#[derive(Debug, Clone)]
pub(super) struct Policy {
    pub(super) balance: i32,
    pub(super) balance_type: u8,
    pub(super) write_type: i32,
    pub(super) switch_type: i32,
    pub(super) slave_threshold: i64,
    pub(super) temp_read_host_available: bool,
    pub(super) max_retry_count: u32,
    pub(super) not_switch: bool,
    pub(super) heartbeat: String,
    /// `dbType="postgresql"`: writeHosts in recovery are not writable (see `fail_over`).
    pub(super) postgres: bool,
}

/// `dnindex.properties` as the running gateway keeps it: every dataHost's active index, written
/// whole on every switch.
#[derive(Debug)]
pub(super) struct DnIndex {
    pub(super) dir: PathBuf,
    pub(super) indexes: Mutex<BTreeMap<String, usize>>,
    /// Switches of an active writeHost (failovers and `switch @@datasource`) since start,
    /// across reloads (`manx_datahost_switches_total`).
    pub(super) switches: std::sync::atomic::AtomicU64,
    /// Cluster mode (module [`coordinated`]): switches come only from ZooKeeper, and writes
    /// record their GTIDs.
    pub(super) coordinated: AtomicBool,
    /// `zkWriteLease` in ms (0: off) and the last moment ZooKeeper was in contact, in ms since
    /// [`lease_epoch`] (module [`coordinated`]).
    pub(super) lease_ms: AtomicU64,
    pub(super) contact_ms: AtomicU64,
}

/// The instant lease times are counted from (the first use).
pub(super) fn lease_epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl DnIndex {
    /// With a write lease in force: how long ZooKeeper has been out of contact, when that is
    /// longer than the lease (writes are then refused).
    pub(super) fn lease_expired(&self) -> Option<u64> {
        let lease = self.lease_ms.load(Ordering::Relaxed);
        if lease == 0 || !self.coordinated.load(Ordering::Acquire) {
            return None;
        }
        let now = lease_epoch().elapsed().as_millis() as u64;
        let silent = now.saturating_sub(self.contact_ms.load(Ordering::Acquire));
        (silent > lease).then_some(silent)
    }

    /// Records `host`'s new active index and rewrites the file. A dataHost the configuration
    /// in force no longer has (a reload replaced it; it drains) is not written.
    ///
    /// Errors: the file cannot be written (the switch still holds in memory).
    pub(super) fn store(&self, host: &str, index: usize) -> std::io::Result<()> {
        let mut indexes = self.indexes.lock().unwrap_or_else(|p| p.into_inner());
        let Some(slot) = indexes.get_mut(host) else {
            return Ok(());
        };
        *slot = index;
        self.switches.fetch_add(1, Ordering::Relaxed);
        dnindex::save(&self.dir, &indexes)
    }
}

/// A `<dataHost>`: its servers' pools and health, and which writeHost is active.
#[derive(Debug)]
pub struct DataHost {
    pub(super) name: String,
    pub(super) write_hosts: Vec<WriteHost>,
    pub(super) active: AtomicUsize,
    pub(super) min_con: usize,
    pub(super) policy: Policy,
    pub(super) dnindex: Arc<DnIndex>,
    /// `balanceType="1"`'s round-robin counters, per server.
    pub(super) round_robin: Mutex<HashMap<SourceId, i64>>,
    /// The "no writable writeHost" error was logged since the last switch (logged once).
    pub(super) no_writer_logged: AtomicBool,
    /// `stop @@heartbeat name:seconds`: no heartbeat runs before this instant.
    pub(super) paused_until: Mutex<Option<Instant>>,
    pub(super) max_con: usize,
    pub(super) db_type: DbType,
    /// What it was built from, and its dataNodes' databases: a reload keeps the dataHost when
    /// both are unchanged ([`Cluster::reload`]).
    pub(super) config: DataHostConfig,
    pub(super) databases: Vec<String>,
    /// Its heartbeat tasks were started (once per dataHost, whichever cluster holds it).
    pub(super) beating: AtomicBool,
    /// The GTIDs of the writes acknowledged on it (cluster mode, [`coordinated`]).
    pub(super) acked: Arc<crate::backend::position::Acked>,
}

pub(super) fn source(
    h: &HostConfig,
    config: &DataHostConfig,
    timeouts: Timeouts,
    databases: &[String],
) -> Source {
    // Without a heartbeat statement nothing can tell a dead server from a live one; every
    // server counts as alive, as Mycat treats an empty heartbeat (SPEC §1.8).
    let initial = if config.heartbeat.is_empty() {
        Status::Ok
    } else {
        Status::Init
    };
    Source {
        name: h.name.clone(),
        backend: backend(config, h, timeouts, databases),
        health: Health::new(initial),
        weight: h.weight,
        host: h.address.clone(),
        port: h.port,
        reads: AtomicU64::new(0),
        writes: AtomicU64::new(0),
    }
}

impl DataHost {
    /// `databases`: the databases of this dataHost's dataNodes (a PostgreSQL server pools
    /// connections per database).
    pub(super) fn new(
        config: &DataHostConfig,
        timeouts: Timeouts,
        dnindex: Arc<DnIndex>,
        databases: Vec<String>,
    ) -> Self {
        let write_hosts = config
            .write_hosts
            .iter()
            .map(|w| WriteHost {
                source: source(&w.host, config, timeouts, &databases),
                reads: w
                    .read_hosts
                    .iter()
                    .map(|r| source(r, config, timeouts, &databases))
                    .collect(),
            })
            .collect();
        if config.heartbeat.is_empty() {
            tracing::warn!(
                data_host = %config.name,
                "no <heartbeat> statement: every server counts as alive and none is ever marked down"
            );
        }
        if config.switch_type == 3 && !heartbeat::is_show_wsrep_status(&config.heartbeat) {
            tracing::warn!(
                data_host = %config.name,
                heartbeat = %config.heartbeat,
                "switchType=3 expects the heartbeat show status like 'wsrep%'; with another statement the Galera state is not checked and the heartbeat's success alone decides"
            );
        }
        tracing::info!(
            data_host = %config.name,
            balance = config.balance,
            balance_type = config.balance_type,
            write_type = config.write_type,
            switch_type = config.switch_type,
            slave_threshold = config.slave_threshold,
            temp_read_host_available = config.temp_read_host_available,
            max_retry_count = config.max_retry_count,
            "dataHost settings in effect"
        );
        DataHost {
            name: config.name.clone(),
            write_hosts,
            active: AtomicUsize::new(0),
            min_con: config.min_con,
            policy: Policy {
                balance: config.balance,
                balance_type: config.balance_type,
                write_type: config.write_type,
                switch_type: config.switch_type,
                slave_threshold: config.slave_threshold,
                temp_read_host_available: config.temp_read_host_available,
                max_retry_count: config.max_retry_count,
                not_switch: config.not_switch,
                heartbeat: config.heartbeat.clone(),
                postgres: config.db_type == DbType::Postgresql,
            },
            dnindex,
            round_robin: Mutex::new(HashMap::new()),
            no_writer_logged: AtomicBool::new(false),
            paused_until: Mutex::new(None),
            max_con: config.max_con,
            db_type: config.db_type,
            config: config.clone(),
            databases,
            beating: AtomicBool::new(false),
            acked: Arc::default(),
        }
    }

    pub(super) fn active_index(&self) -> usize {
        self.active.load(Ordering::Acquire) % self.write_hosts.len()
    }

    pub(super) fn active(&self) -> &Source {
        &self.write_hosts[self.active_index()].source
    }

    pub(super) fn source(&self, id: SourceId) -> &Source {
        let w = &self.write_hosts[id.write];
        match id.read {
            None => &w.source,
            Some(r) => &w.reads[r],
        }
    }

    /// Every server with its id, writeHosts first within each writeHost group.
    pub(super) fn sources(&self) -> impl Iterator<Item = (SourceId, &Source)> {
        self.write_hosts.iter().enumerate().flat_map(|(w, wh)| {
            std::iter::once((
                SourceId {
                    write: w,
                    read: None,
                },
                &wh.source,
            ))
            .chain(wh.reads.iter().enumerate().map(move |(r, s)| {
                (
                    SourceId {
                        write: w,
                        read: Some(r),
                    },
                    s,
                )
            }))
        })
    }

    /// The servers' states as selection sees them, with the `slaveThreshold` filter applied
    /// (only with `switchType="2"` and a threshold other than -1, SPEC §4.3).
    pub(super) fn views(&self) -> Vec<WriteView> {
        let lag_filter = self.policy.switch_type == 2 && self.policy.slave_threshold != -1;
        let view = |s: &Source| View {
            alive: s.health.alive(),
            weight: s.weight,
            lag_ok: !lag_filter
                || s.health
                    .lag()
                    .is_some_and(|l| l < self.policy.slave_threshold),
        };
        self.write_hosts
            .iter()
            .map(|w| WriteView {
                host: view(&w.source),
                reads: w.reads.iter().map(view).collect(),
            })
            .collect()
    }

    /// The writeHost for a write: the active one (`writeType="0"`), or a random writeHost not
    /// marked down and not a PostgreSQL standby in recovery (`writeType="1"`, SPEC §4.5;
    /// writeHost 0 when there is none).
    pub(super) fn write_source(&self) -> &Source {
        if self.policy.write_type != 1 {
            return self.active();
        }
        let up: Vec<&Source> = self
            .write_hosts
            .iter()
            .map(|w| &w.source)
            .filter(|s| !s.health.status().is_down() && !s.health.in_recovery())
            .collect();
        match balance::pick(&vec![0; up.len()], rand::random()) {
            Some(i) => up[i],
            None => &self.write_hosts[0].source,
        }
    }

    /// The server for one statement of `intent` (see the module documentation), never
    /// `excluded` among the read candidates (the server a read just failed to reach).
    pub(super) fn choose(&self, intent: Intent, excluded: Option<&Source>) -> &Source {
        let candidates = match intent {
            Intent::Write => return self.write_source(),
            Intent::Read if self.policy.balance == 0 => return self.write_source(),
            Intent::Read => balance::read_candidates(
                self.policy.balance,
                self.active_index(),
                self.policy.temp_read_host_available,
                &self.views(),
            ),
            Intent::Replica => balance::replica_candidates(&self.views()),
        };
        let candidates: Vec<_> = candidates
            .into_iter()
            .filter(|(id, _)| excluded.is_none_or(|x| !std::ptr::eq(self.source(*id), x)))
            .collect();
        if candidates.is_empty() {
            return self.write_source();
        }
        let weights: Vec<u32> = candidates.iter().map(|(_, w)| *w).collect();
        let picked = match self.policy.balance_type {
            1 => {
                let mut state = self.round_robin.lock().unwrap_or_else(|p| p.into_inner());
                balance::pick_round_robin(&candidates, &mut state)
            }
            2 => {
                let active: Vec<usize> = candidates
                    .iter()
                    .map(|(id, _)| self.source(*id).backend.in_use())
                    .collect();
                balance::pick_least_active(&weights, &active, rand::random())
            }
            _ => balance::pick(&weights, rand::random()),
        };
        // balanceType 1 and 2 skip weight-0 servers; with none left Mycat picks uniformly.
        let i =
            picked.unwrap_or_else(|| (rand::random::<u64>() % candidates.len() as u64) as usize);
        self.source(candidates[i].0)
    }
}

/// The pool for one physical server, by the dataHost's `dbType` (`dbDriver` native and jdbc
/// both mean manx's own driver).
pub(super) fn backend(
    config: &DataHostConfig,
    host: &HostConfig,
    timeouts: Timeouts,
    databases: &[String],
) -> Arc<dyn Backend> {
    match config.db_type {
        DbType::Mysql => Arc::new(MysqlBackend::new(MysqlSettings {
            host: host.address.clone(),
            port: host.port,
            user: host.user.clone(),
            password: host.password.clone(),
            max_connections: config.max_con,
            connect_timeout: timeouts.connect,
            wait_timeout: timeouts.pool_wait,
        })),
        DbType::Postgresql => Arc::new(PostgresBackend::new(PostgresSettings {
            host: host.address.clone(),
            port: host.port,
            user: host.user.clone(),
            password: host.password.clone(),
            max_connections: config.max_con,
            connect_timeout: timeouts.connect,
            wait_timeout: timeouts.pool_wait,
            databases: databases.to_vec(),
        })),
    }
}
