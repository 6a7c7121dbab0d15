//! server.xml's `<system>` properties ([`SystemConfig`]) with Mycat's defaults, and the firewall's
//! white hosts.

use super::*;

/// What a plain `EXPLAIN <statement>` (and `DESCRIBE <statement>`) answers: server.xml's
/// `explainMode` (manx only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExplainMode {
    /// `route` (the default, Mycat's EXPLAIN, SPEC §5.18): one row per dataNode with the
    /// statement it would get (columns `DATA_NODE`, `SQL`), whatever the statement.
    Route,
    /// `backend`: a query or row write that runs on one MySQL dataNode as written is explained
    /// by that backend (MariaDB's plan rows, as a MySQL application expects from `EXPLAIN`);
    /// any other statement still gets its route. For applications moved behind the gateway
    /// whose tools read plans (GUI clients, ORMs' query analysers).
    Backend,
}

/// `server.xml` `<system>` properties that manx acts on, with Mycat's code defaults (SPEC §3.2).
#[derive(Debug, Clone)]
pub struct SystemConfig {
    /// `serverPort`, default 8066.
    pub server_port: u16,
    /// `bindIp`, default `0.0.0.0`.
    pub bind_ip: String,
    /// `managerPort`, default 9066: the manager port (module `frontend::manager`).
    pub manager_port: u16,
    /// `managerUsers` (manx only, DECISIONS.md item 25): the users that may run the manager
    /// commands that change state (kill, switch, stop, offline/online, reload, rollback).
    /// `None` (absent): every user that is not `readOnly`.
    pub manager_users: Option<Vec<String>>,
    /// `shutdownTimeout` in seconds (manx only), default 30: on SIGTERM/SIGINT, how long the
    /// statements in progress may take to finish before open transactions are rolled back and
    /// the process exits.
    pub shutdown_timeout_s: u64,
    /// `useSqlStat` (Mycat's, default 1 as in its code): keep the manager's `show @@sql*`
    /// statistics. Taken by every reload, as Mycat's `reload @@config` re-reads it.
    pub use_sql_stat: bool,
    /// `sqlRecordCount` (Mycat's, default 10): statements kept for `show @@sql` / `@@sql.slow`.
    pub sql_record_count: usize,
    /// `sqlSlowTime` in ms (DBLE's name, default 100 as Mycat's slow threshold): statements at
    /// least this slow are slow (`show @@sql.slow`, the slow log); `reload @@sqlslow=N` changes
    /// it at run time.
    pub sql_slow_time_ms: u64,
    /// `enableSlowLog` (DBLE's name, default 0): write slow statements to `slowLogFile`.
    pub enable_slow_log: bool,
    /// `slowLogFile` (manx; relative to the config directory), default `slow-query.log`.
    pub slow_log_file: PathBuf,
    /// `slowLogMaxBytes` (manx), default 100 MiB: the slow log is rotated past this size.
    pub slow_log_max_bytes: u64,
    /// `metricsAddr` (manx; `--metrics-addr` wins): where Prometheus scrapes `/metrics`; none
    /// by default.
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// `twoPhaseCommit` (manx; default false): every transaction starts its branches as XA
    /// branches, and a transaction or statement that writes on several dataNodes commits in two
    /// phases (module `xa`); without it only `SET XA = ON` transactions do.
    pub two_phase_commit: bool,
    /// `instanceId` (manx): this gateway's name in its XA transaction ids (1 to 32 letters,
    /// digits, `_`, `-`). Absent: the id kept in `xaLogDir`'s `INSTANCE` file, made at the
    /// first start. Gateways sharing backends need different ones.
    pub instance_id: Option<String>,
    /// `xaLogDir` (manx; relative to the config directory), default `xalog`: the XA
    /// coordinator log.
    pub xa_log_dir: PathBuf,
    /// `xaLogSegmentBytes` (manx), default 64 MiB: the log starts a new segment past this.
    pub xa_log_segment_bytes: u64,
    /// `xaRecoveryPeriod` in milliseconds (manx), default 10 000 (Mycat's retry period): how
    /// often XA recovery looks for prepared branches left behind.
    pub xa_recovery_period_ms: u64,
    /// `useZKSwitch` (Mycat's, default false): with ZooKeeper cluster mode (`myid.properties`,
    /// module `coord`), writeHost switches are decided by one instance holding the
    /// leadership and followed by every instance; no instance switches on its own.
    pub use_zk_switch: bool,
    /// `zkSessionTimeout` in milliseconds (manx), default 6 000: the ZooKeeper session timeout
    /// asked for; an instance cut off for longer loses its leadership and its vote.
    pub zk_session_timeout_ms: u64,
    /// `zkWriteLease` in milliseconds (manx), default 0 (off): in cluster mode with
    /// `useZKSwitch`, an instance that has had no contact with ZooKeeper for this long refuses
    /// writes (1290) until it has again, so that a partition can never leave it writing to a
    /// primary the others have left. Must be under half of `zkSessionTimeout`. Off, writes go
    /// on while ZooKeeper is unreachable.
    pub zk_write_lease_ms: u64,
    /// `failoverCatchUpTimeout` in milliseconds (manx), default 10 000: how long a coordinated
    /// failover waits for the standby to apply every write the gateways acknowledged before it
    /// refuses the switch (and retries at the next check).
    pub failover_catch_up_timeout_ms: u64,
    /// `charset`, default `utf8`.
    pub charset: String,
    /// `mycatVersion` (manx only, DECISIONS.md item 2): which Mycat's placement rules to follow.
    pub mycat_version: MycatVersion,
    /// `fakeMySQLVersion` (SPEC §3.2): the MySQL version number the gateway announces in
    /// place of 5.7.25 (greeting, `@@version`, `VERSION()`); digits and dots, checked.
    pub fake_mysql_version: Option<String>,
    /// `dataNodeHeartbeatPeriod` in milliseconds, default 10 000 (SPEC §3.2, §4.6): how often every
    /// writeHost and readHost runs its dataHost's heartbeat statement.
    pub heartbeat_period_ms: u64,
    /// `heartbeatTimeout` in milliseconds (manx only, DECISIONS.md item 19), default 30 000, the
    /// value Mycat hard-codes: a heartbeat not answered in time counts as a TIMEOUT failure.
    pub heartbeat_timeout_ms: u64,
    /// `maxPacketSize` in bytes, default 16 MiB (SPEC §3.2): the gateway's `max_allowed_packet`.
    /// A command longer than this gets MySQL's error 1153 and the connection is closed;
    /// `SELECT @@max_allowed_packet` answers it.
    pub max_packet_size: usize,
    /// `explainMode` (manx only), default [`ExplainMode::Route`]: what a plain `EXPLAIN` (or
    /// `DESCRIBE`) of a statement answers.
    pub explain_mode: ExplainMode,
    /// `sequenceHandlerType` / `sequnceHandlerType` (both spellings, DECISIONS.md item 7),
    /// default 0: where global sequence values come from (SPEC §5.17): 0 the local file
    /// `sequence_conf.properties`, 1 the database (`sequence_db_conf.properties`), 2 time-based
    /// ids (`sequence_time_conf.properties`); 3-5 (ZooKeeper, custom classes) are refused when a
    /// sequence is used.
    pub sequence_handler_type: u8,
    /// `<firewall><whitehost>` entries (SPEC §3.5): a host pattern and the users it admits.
    /// When there are any, logins must match one ([`SystemConfig::admits`]).
    pub white_hosts: Vec<WhiteHost>,
    /// `authTimeout` in milliseconds, default 15 000 (Mycat's, SPEC §3.2): a client that has
    /// not completed its login this long after connecting is disconnected.
    pub auth_timeout_ms: u64,
    /// `maxConnections` (manx only: Mycat 1.6 has no cap on front connections), default
    /// 10 000: client connections (logged in or not) the gateway holds at once. One more gets
    /// MySQL's 1040 `Too many connections` in place of the greeting and is closed.
    pub max_connections: usize,
    /// `sqlExecuteTimeout` in **seconds**, default 300 (Mycat's, SPEC §3.2, §4.10): a backend
    /// connection that gives no answer (no result, no row) for this long fails its statement
    /// and is closed, never reused.
    pub sql_execute_timeout_s: u64,
    /// `sslCertFile` (manx only: Mycat 1.6 has no front-end TLS): the PEM certificate chain the front end
    /// offers clients that switch to TLS, relative to the configuration directory. TLS is on
    /// when it and [`SystemConfig::ssl_key_file`] are set (or `--tls-cert` / `--tls-key`).
    pub ssl_cert_file: Option<PathBuf>,
    /// `sslKeyFile` (manx only): the PEM private key of `sslCertFile`.
    pub ssl_key_file: Option<PathBuf>,
    /// `requireSecureTransport` (manx only, MySQL's `require_secure_transport`), default false:
    /// clients that do not switch to TLS are refused with 3159.
    pub require_secure_transport: bool,
    /// Every property as written (trimmed, empty ones left out), for the features that read more.
    pub properties: BTreeMap<String, (String, Origin)>,
}

/// One `<whitehost><host host=".." user=".."/>` address (one per comma-separated host).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhiteHost {
    /// An IP, or a pattern where `*` and `%` stand for any run of digits.
    pub host: String,
    pub users: Vec<String>,
}

impl SystemConfig {
    /// Whether `user` may run the manager commands that change state: listed in
    /// `managerUsers`, or, without that property, not `readOnly` (DECISIONS.md item 25).
    pub fn may_manage(&self, user: &UserConfig) -> bool {
        match &self.manager_users {
            Some(list) => list.contains(&user.name),
            None => !user.read_only,
        }
    }

    /// Whether `user` may log in from `ip` under the whitehost list (SPEC §3.5): no entries
    /// admit everyone; otherwise some entry must match the whole address and list the user.
    ///
    /// Deliberately stricter than Mycat, which searches a wildcard pattern anywhere in the
    /// address (`10.*` admits `110.3.0.99`) and ignores a wildcard entry's user list: here a
    /// pattern matches from the address's start to its end, as Mycat's shipped examples mean
    /// them (`127.0.0.*`, `127.0.*`, `127.*`, `1*7.*` for 127.0.0.1): `*` and `%` stand for a
    /// run of digits within an octet, and one that ends the pattern for the rest of the
    /// address. Every entry admits only the users it lists. `ip` is the client's address as
    /// text, IPv4-mapped IPv6 addresses written as IPv4.
    pub fn admits(&self, user: &str, ip: &str) -> bool {
        self.white_hosts.is_empty()
            || self
                .white_hosts
                .iter()
                .any(|h| h.users.iter().any(|u| u == user) && host_matches(&h.host, ip))
    }
}

/// Whether `ip` is the whitehost `pattern`: byte for byte, except that `*` and `%` match any
/// run of digits (none included), and one at the pattern's end anything left. Anchored: the
/// whole address must match.
pub(super) fn host_matches(pattern: &str, ip: &str) -> bool {
    fn at(p: &[u8], t: &[u8]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some((b'*' | b'%', [])) => true,
            Some((b'*' | b'%', rest)) => {
                let digits = t.iter().take_while(|b| b.is_ascii_digit()).count();
                (0..=digits).any(|n| at(rest, &t[n..]))
            }
            Some((c, rest)) => t.first() == Some(c) && at(rest, &t[1..]),
        }
    }
    at(pattern.as_bytes(), ip.as_bytes())
}

impl Default for SystemConfig {
    fn default() -> Self {
        SystemConfig {
            server_port: 8066,
            bind_ip: "0.0.0.0".to_string(),
            manager_port: 9066,
            manager_users: None,
            shutdown_timeout_s: 30,
            charset: "utf8".to_string(),
            mycat_version: MycatVersion::V1_6_7_6,
            fake_mysql_version: None,
            heartbeat_period_ms: 10_000,
            heartbeat_timeout_ms: 30_000,
            max_packet_size: 16 * 1024 * 1024,
            explain_mode: ExplainMode::Route,
            sequence_handler_type: 0,
            white_hosts: Vec::new(),
            auth_timeout_ms: 15_000,
            max_connections: 10_000,
            sql_execute_timeout_s: 300,
            ssl_cert_file: None,
            ssl_key_file: None,
            require_secure_transport: false,
            use_sql_stat: true,
            sql_record_count: 10,
            sql_slow_time_ms: 100,
            enable_slow_log: false,
            slow_log_file: PathBuf::from("slow-query.log"),
            slow_log_max_bytes: 100 << 20,
            metrics_addr: None,
            two_phase_commit: false,
            instance_id: None,
            xa_log_dir: PathBuf::from("xalog"),
            xa_log_segment_bytes: 64 << 20,
            xa_recovery_period_ms: 10_000,
            use_zk_switch: false,
            zk_session_timeout_ms: 6_000,
            zk_write_lease_ms: 0,
            failover_catch_up_timeout_ms: 10_000,
            properties: BTreeMap::new(),
        }
    }
}
