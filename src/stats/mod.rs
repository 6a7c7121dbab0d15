//! The statement recorder (issue 21): one place every statement a client sends is counted,
//! for the Prometheus exposition (module `frontend::metrics`), the slow log ([`slowlog`]) and
//! the manager's `show @@sql*` commands (SPEC §8.1, OPERATIONS.md §1).
//!
//! What is kept, all bounded:
//! - counters and histograms ([`Metrics`]), labelled only by bounded sets (route kind, errno,
//!   dataNode): never SQL text;
//! - per (user, statement shape) frequency and times (`show @@sql.high`, `@@sql.resultset`),
//!   at most [`MAX_SHAPES`] shapes (later ones are counted in the metrics only); a shape is the
//!   statement with its plain number and string literals as `?` (the plan cache's shape);
//! - per user reads, writes and time buckets (`show @@sql.sum`);
//! - the last `sqlRecordCount` statements (`show @@sql`) and slow statements (`show @@sql.slow`).
//!
//! `useSqlStat=0` (or `reload @@sqlstat=close`) stops all but the metrics and the slow log.

pub mod slowlog;

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

/// Shapes kept for `show @@sql.high` / `@@sql.resultset` at most.
pub const MAX_SHAPES: usize = 5_000;

/// Where a statement was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteKind {
    /// On one dataNode.
    Single,
    /// On several dataNodes (a merge, a global table's copies, a multi-node write).
    Multi,
    /// By the gateway itself (session statements, `SHOW DATABASES`, refusals at routing).
    Local,
    /// A manager-port command.
    Manager,
}

impl RouteKind {
    /// The Prometheus label value.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteKind::Single => "single",
            RouteKind::Multi => "multi",
            RouteKind::Local => "local",
            RouteKind::Manager => "manager",
        }
    }
}

/// One statement as it ended.
#[derive(Debug)]
pub struct Executed<'a> {
    pub user: &'a str,
    pub client: IpAddr,
    /// The client's connection id.
    pub connection: u32,
    pub schema: Option<&'a str>,
    /// The statement as the client sent it.
    pub sql: &'a str,
    pub started: SystemTime,
    pub elapsed: Duration,
    /// Rows of the result set sent to the client.
    pub rows_sent: u64,
    /// Rows the statement changed (its OK packets' affected rows, summed over dataNodes).
    pub rows_affected: u64,
    /// The MySQL errno the client got, if the statement failed.
    pub error: Option<u16>,
    /// The dataNodes it ran on.
    pub nodes: &'a [String],
    /// The logical tables it names (upper-cased), when routing parsed it.
    pub tables: &'a [String],
    pub kind: RouteKind,
    /// It only read (a SELECT or SHOW), as the router decided.
    pub read: bool,
}

/// The settings of [`Recorder::new`], from server.xml's system properties.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `useSqlStat`: keep the `show @@sql*` statistics.
    pub use_sql_stat: bool,
    /// `slowTime` (manx) / `reload @@sqlslow=N`: statements at least this slow are slow, in ms.
    pub slow_ms: u64,
    /// `sqlRecordCount`: statements kept for `show @@sql` and `@@sql.slow`.
    pub record_count: usize,
    /// The slow log file, when one is configured.
    pub slow_log: Option<slowlog::Settings>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            use_sql_stat: true,
            slow_ms: 100,
            record_count: 10,
            slow_log: None,
        }
    }
}

/// Label set of the statement counters.
pub type KindLabels = Vec<(&'static str, &'static str)>;
/// Label set of the error counter: kind and errno.
pub type ErrorLabels = Vec<(&'static str, String)>;
/// Label set of the per-dataNode metrics.
pub type NodeLabels = Vec<(&'static str, String)>;

/// The Prometheus metrics the recorder keeps (clones share their values).
#[derive(Debug, Clone)]
pub struct Metrics {
    /// `manx_statements_total{kind}`.
    pub statements: Family<KindLabels, Counter>,
    /// `manx_statement_errors_total{kind, code}`.
    pub errors: Family<ErrorLabels, Counter>,
    /// `manx_statement_duration_seconds{kind}`.
    pub duration: Family<KindLabels, Histogram>,
    /// `manx_rows_sent_total`.
    pub rows_sent: Counter,
    /// `manx_rows_affected_total`.
    pub rows_affected: Counter,
    /// `manx_slow_statements_total`.
    pub slow: Counter,
    /// `manx_datanode_statements_total{data_node}`.
    pub node_statements: Family<NodeLabels, Counter>,
    /// `manx_datanode_statement_errors_total{data_node}`.
    pub node_errors: Family<NodeLabels, Counter>,
    /// `manx_datanode_statement_duration_seconds{data_node}`.
    pub node_duration: Family<NodeLabels, Histogram>,
    /// `manx_plan_cache_hits_total`.
    pub plan_cache_hits: Counter,
}

/// Latency buckets, in seconds: 0.5 ms to 10 s.
fn buckets() -> Histogram {
    Histogram::new([
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    ])
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            statements: Family::default(),
            errors: Family::default(),
            duration: Family::new_with_constructor(buckets),
            rows_sent: Counter::default(),
            rows_affected: Counter::default(),
            slow: Counter::default(),
            node_statements: Family::default(),
            node_errors: Family::default(),
            node_duration: Family::new_with_constructor(buckets),
            plan_cache_hits: Counter::default(),
        }
    }
}

/// Frequency and times of one (user, shape) (`show @@sql.high`, `@@sql.resultset`).
#[derive(Debug, Clone)]
pub struct ShapeStat {
    pub id: u64,
    pub user: String,
    /// The shape, literals as `?`.
    pub sql: String,
    pub client: IpAddr,
    pub count: u64,
    pub total: Duration,
    pub max: Duration,
    pub min: Duration,
    /// When it last ran (start, ms since the epoch) and how long that took.
    pub last_start_ms: i64,
    pub last_time: Duration,
    /// The largest result set it sent, in rows.
    pub max_rows: u64,
}

/// Reads, writes and times of one user (`show @@sql.sum`).
#[derive(Debug, Clone, Default)]
pub struct UserStat {
    pub id: u64,
    pub user: String,
    pub reads: u64,
    pub writes: u64,
    /// The slowest statement, in ms.
    pub max_ms: u64,
    /// Statements by time: < 10 ms, 10-200 ms, 200 ms-1 s, >= 1 s (Mycat's TIME_COUNT).
    pub time_count: [u64; 4],
    /// Statements by dataNodes touched: 0-1, 2, 3, more (manx's TTL_COUNT: Mycat counts the
    /// tables a statement names, which manx does not keep).
    pub node_count: [u64; 4],
    pub last_ms: i64,
}

/// Reads and writes of one logical table (`show @@sql.sum.table`).
#[derive(Debug, Clone, Default)]
pub struct TableStat {
    pub id: u64,
    pub table: String,
    pub reads: u64,
    pub writes: u64,
    /// Tables named together with it (at most [`MAX_RELATED`]), and how many statements did.
    pub related: std::collections::BTreeSet<String>,
    pub related_count: u64,
    pub last_ms: i64,
}

/// Tables kept for `show @@sql.sum.table` at most; related tables listed per table at most.
pub const MAX_TABLES: usize = 5_000;
pub const MAX_RELATED: usize = 16;

/// One statement of `show @@sql` / `@@sql.slow`.
#[derive(Debug, Clone)]
pub struct Recent {
    pub id: u64,
    pub user: String,
    pub client: IpAddr,
    pub schema: String,
    /// dataNodes it ran on, comma-separated (`show @@sql.slow` DATASOURCE).
    pub nodes: String,
    pub start_ms: i64,
    pub elapsed_ms: u64,
    pub sql: String,
}

type Fast<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// One user's statistics and shapes.
#[derive(Debug)]
struct UserEntry {
    stat: UserStat,
    /// By shape key (the plan cache's key: schema, NUL, the shape with marker characters).
    shapes: Fast<String, ShapeStat>,
}

impl Recent {
    fn empty(client: IpAddr) -> Recent {
        Recent {
            id: 0,
            user: String::new(),
            client,
            schema: String::new(),
            nodes: String::new(),
            start_ms: 0,
            elapsed_ms: 0,
            sql: String::new(),
        }
    }
}

/// Marks of abstracted literals in a shape key (the plan cache's, module `route::shape`).
const MARKS: [char; 3] = ['\u{1}', '\u{2}', '\u{3}'];

/// A shape key as `show @@sql.high` shows it: the schema prefix cut, markers as `?`.
pub fn shape_text(key: &str) -> String {
    let body = key.split_once('\0').map_or(key, |(_, b)| b);
    body.chars()
        .map(|c| if MARKS.contains(&c) { '?' } else { c })
        .collect()
}

#[derive(Debug, Default)]
struct Tables {
    next_id: u64,
    shape_count: usize,
    users: Fast<String, UserEntry>,
    tables: Fast<String, TableStat>,
    recent: VecDeque<Recent>,
    slow: VecDeque<Recent>,
}

/// A dataNode's metric handles, resolved once.
#[derive(Debug)]
struct NodeHandles {
    statements: Counter,
    errors: Counter,
    duration: Histogram,
}

/// The recorder (module documentation). One per server; cheap to call once per statement.
#[derive(Debug)]
pub struct Recorder {
    pub metrics: Metrics,
    /// Per [`RouteKind`] (in its order): the statement counter and duration histogram, resolved
    /// once (a family lookup hashes its labels: a tenth of a point select's cost for four).
    kinds: [(Counter, Histogram); 4],
    nodes: std::sync::RwLock<Fast<String, NodeHandles>>,
    enabled: AtomicBool,
    slow_ms: AtomicU64,
    record_count: usize,
    tables: Mutex<Tables>,
    slow_log: Option<slowlog::SlowLog>,
}

fn ms_since_epoch(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Recorder {
    /// A recorder with `settings`. The slow log file is opened (created) here.
    ///
    /// Errors: the slow log file cannot be opened for appending.
    pub fn new(settings: Settings) -> std::io::Result<Recorder> {
        let slow_log = settings.slow_log.map(slowlog::SlowLog::open).transpose()?;
        let metrics = Metrics::default();
        let kinds = [
            RouteKind::Single,
            RouteKind::Multi,
            RouteKind::Local,
            RouteKind::Manager,
        ]
        .map(|k| {
            let labels = vec![("kind", k.as_str())];
            (
                metrics.statements.get_or_create_owned(&labels),
                metrics.duration.get_or_create_owned(&labels),
            )
        });
        Ok(Recorder {
            metrics,
            kinds,
            nodes: std::sync::RwLock::default(),
            enabled: AtomicBool::new(settings.use_sql_stat),
            slow_ms: AtomicU64::new(settings.slow_ms),
            record_count: settings.record_count.max(1),
            tables: Mutex::new(Tables::default()),
            slow_log,
        })
    }

    /// `reload @@sqlstat=open|close`, `useSqlStat` at a reload.
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// `reload @@sqlslow=N`: the slow threshold, in ms.
    pub fn set_slow_ms(&self, ms: u64) {
        self.slow_ms.store(ms, Ordering::Relaxed);
    }

    pub fn slow_ms(&self) -> u64 {
        self.slow_ms.load(Ordering::Relaxed)
    }

    /// Counts one statement of `seconds` on dataNode `node` (an error when `failed`); the
    /// node's metric handles are made on first use and read under the lock after that (no
    /// handle is cloned on the statement path).
    fn count_node(&self, node: &str, seconds: f64, failed: bool) {
        let count = |h: &NodeHandles| {
            h.statements.inc();
            h.duration.observe(seconds);
            if failed {
                h.errors.inc();
            }
        };
        if let Some(h) = self
            .nodes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(node)
        {
            return count(h);
        }
        let labels = vec![("data_node", node.to_string())];
        let m = &self.metrics;
        let h = NodeHandles {
            statements: m.node_statements.get_or_create_owned(&labels),
            errors: m.node_errors.get_or_create_owned(&labels),
            duration: m.node_duration.get_or_create_owned(&labels),
        };
        count(&h);
        self.nodes
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(node.to_string(), h);
    }

    /// Counts statement `e`. `shape` is its shape key (the plan cache's: schema, NUL, the text
    /// with plain literals as the marker characters U+0001-U+0003; [`shape_text`] renders it),
    /// when there is one.
    pub fn record(&self, e: &Executed, shape: Option<&str>) {
        let m = &self.metrics;
        let kind = e.kind as usize;
        let seconds = e.elapsed.as_secs_f64();
        self.kinds[kind].0.inc();
        self.kinds[kind].1.observe(seconds);
        if let Some(code) = e.error {
            m.errors
                .get_or_create(&vec![
                    ("kind", e.kind.as_str().to_string()),
                    ("code", code.to_string()),
                ])
                .inc();
        }
        if e.rows_sent > 0 {
            m.rows_sent.inc_by(e.rows_sent);
        }
        if e.rows_affected > 0 {
            m.rows_affected.inc_by(e.rows_affected);
        }
        for node in e.nodes {
            self.count_node(node, seconds, e.error.is_some());
        }
        let elapsed_ms = e.elapsed.as_millis() as u64;
        let slow = elapsed_ms >= self.slow_ms() && e.kind != RouteKind::Manager;
        if slow {
            m.slow.inc();
            if let Some(log) = &self.slow_log {
                log.write(e);
            }
        }
        if !self.enabled() || e.kind == RouteKind::Manager {
            return;
        }
        let start_ms = ms_since_epoch(e.started);
        let record_count = self.record_count;
        let mut guard = self.tables.lock().unwrap_or_else(|p| p.into_inner());
        let t = &mut *guard;
        t.next_id += 1;
        let id = t.next_id;
        let fill = |r: &mut Recent| {
            r.id = id;
            r.user.clear();
            r.user.push_str(e.user);
            r.client = e.client;
            r.schema.clear();
            r.schema.push_str(e.schema.unwrap_or(""));
            r.nodes.clear();
            for (i, n) in e.nodes.iter().enumerate() {
                if i > 0 {
                    r.nodes.push(',');
                }
                r.nodes.push_str(n);
            }
            r.start_ms = start_ms;
            r.elapsed_ms = elapsed_ms;
            r.sql.clear();
            r.sql.push_str(e.sql);
        };
        // The oldest entry's buffers are reused once the list is full.
        let push = |list: &mut VecDeque<Recent>| {
            let mut r = if list.len() >= record_count {
                list.pop_front().unwrap_or_else(|| Recent::empty(e.client))
            } else {
                Recent::empty(e.client)
            };
            fill(&mut r);
            list.push_back(r);
        };
        if slow {
            push(&mut t.slow);
        }
        push(&mut t.recent);
        for name in e.tables {
            let count = t.tables.len();
            let table = match t.tables.get_mut(name.as_str()) {
                Some(table) => table,
                None if count < MAX_TABLES => {
                    t.tables.entry(name.clone()).or_insert_with(|| TableStat {
                        id: count as u64 + 1,
                        table: name.clone(),
                        ..TableStat::default()
                    })
                }
                None => continue,
            };
            if e.read {
                table.reads += 1;
            } else {
                table.writes += 1;
            }
            table.last_ms = start_ms;
            if e.tables.len() > 1 {
                table.related_count += 1;
                for other in e.tables.iter().filter(|o| *o != name) {
                    if table.related.len() < MAX_RELATED && !table.related.contains(other) {
                        table.related.insert(other.clone());
                    }
                }
            }
        }
        let users = t.users.len();
        let entry = match t.users.get_mut(e.user) {
            Some(u) => u,
            None => t
                .users
                .entry(e.user.to_string())
                .or_insert_with(|| UserEntry {
                    stat: UserStat {
                        id: users as u64 + 1,
                        user: e.user.to_string(),
                        ..UserStat::default()
                    },
                    shapes: Fast::default(),
                }),
        };
        let user = &mut entry.stat;
        if e.read {
            user.reads += 1;
        } else {
            user.writes += 1;
        }
        user.max_ms = user.max_ms.max(elapsed_ms);
        let bucket = match elapsed_ms {
            0..10 => 0,
            10..200 => 1,
            200..1000 => 2,
            _ => 3,
        };
        user.time_count[bucket] += 1;
        user.node_count[e.nodes.len().saturating_sub(1).min(3)] += 1;
        user.last_ms = start_ms;
        let Some(shape) = shape else { return };
        if let Some(s) = entry.shapes.get_mut(shape) {
            s.count += 1;
            s.total += e.elapsed;
            s.max = s.max.max(e.elapsed);
            s.min = s.min.min(e.elapsed);
            s.last_start_ms = start_ms;
            s.last_time = e.elapsed;
            s.max_rows = s.max_rows.max(e.rows_sent);
            s.client = e.client;
        } else if t.shape_count < MAX_SHAPES {
            t.shape_count += 1;
            entry.shapes.insert(
                shape.to_string(),
                ShapeStat {
                    id: t.shape_count as u64,
                    user: e.user.to_string(),
                    sql: shape.to_string(),
                    client: e.client,
                    count: 1,
                    total: e.elapsed,
                    max: e.elapsed,
                    min: e.elapsed,
                    last_start_ms: start_ms,
                    last_time: e.elapsed,
                    max_rows: e.rows_sent,
                },
            );
        }
    }

    /// `show @@sql`: the last statements, oldest first.
    pub fn recent(&self) -> Vec<Recent> {
        self.lock().recent.iter().cloned().collect()
    }

    /// `show @@sql.slow`: the last slow statements, oldest first.
    pub fn slow(&self) -> Vec<Recent> {
        self.lock().slow.iter().cloned().collect()
    }

    /// `show @@sql.high` / `@@sql.resultset`: shapes, most frequent first.
    pub fn shapes(&self) -> Vec<ShapeStat> {
        let mut v: Vec<ShapeStat> = self
            .lock()
            .users
            .values()
            .flat_map(|u| u.shapes.values())
            .map(|s| ShapeStat {
                sql: shape_text(&s.sql),
                ..s.clone()
            })
            .collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then(a.id.cmp(&b.id)));
        v
    }

    /// `show @@sql.sum`: per user, in first-seen order.
    pub fn users(&self) -> Vec<UserStat> {
        let mut v: Vec<UserStat> = self.lock().users.values().map(|u| u.stat.clone()).collect();
        v.sort_by_key(|u| u.id);
        v
    }

    /// `show @@sql.sum.table`: per table, in first-seen order.
    pub fn tables(&self) -> Vec<TableStat> {
        let mut v: Vec<TableStat> = self.lock().tables.values().cloned().collect();
        v.sort_by_key(|t| t.id);
        v
    }

    /// `show @@sql true`, `reload @@user_stat`: forgets the statistics (not the metrics).
    pub fn clear(&self) {
        *self.lock() = Tables::default();
    }

    /// `clear @@slow ...`: forgets the slow statements `matches` selects.
    pub fn clear_slow(&self, matches: impl Fn(&Recent) -> bool) {
        self.lock().slow.retain(|r| !matches(r));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `yyyy-MM-dd HH:mm:ss` (UTC) of `t`, and the microseconds.
pub fn utc(t: SystemTime) -> (String, u32) {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        format!(
            "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
            rem / 3600,
            rem / 60 % 60,
            rem % 60
        ),
        d.subsec_micros(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executed<'a>(sql: &'a str, ms: u64, nodes: &'a [String]) -> Executed<'a> {
        Executed {
            user: "u",
            client: "127.0.0.1".parse().unwrap(),
            connection: 1,
            schema: Some("S"),
            sql,
            started: SystemTime::UNIX_EPOCH + Duration::from_secs(86_400),
            elapsed: Duration::from_millis(ms),
            rows_sent: 3,
            rows_affected: 0,
            error: None,
            nodes,
            tables: &[],
            kind: RouteKind::Single,
            read: true,
        }
    }

    #[test]
    fn keeps_bounded_recent_and_slow_lists_and_per_shape_times() {
        let r = Recorder::new(Settings {
            record_count: 2,
            slow_ms: 50,
            ..Settings::default()
        })
        .unwrap();
        let nodes = vec!["dn1".to_string()];
        for (sql, ms) in [("a", 1), ("b", 60), ("c", 70), ("d", 2)] {
            r.record(&executed(sql, ms, &nodes), Some("select ?"));
        }
        let recent: Vec<String> = r.recent().into_iter().map(|e| e.sql).collect();
        assert_eq!(recent, ["c", "d"]);
        let slow: Vec<String> = r.slow().into_iter().map(|e| e.sql).collect();
        assert_eq!(slow, ["b", "c"]);
        let shapes = r.shapes();
        assert_eq!(shapes.len(), 1);
        assert_eq!(shapes[0].count, 4);
        assert_eq!(shapes[0].max, Duration::from_millis(70));
        assert_eq!(shapes[0].min, Duration::from_millis(1));
        let users = r.users();
        assert_eq!(users[0].time_count, [2, 2, 0, 0]);
        assert_eq!(users[0].reads, 4);
        assert_eq!(r.metrics.slow.get(), 2);
        r.clear();
        assert!(r.recent().is_empty() && r.shapes().is_empty());
    }

    #[test]
    fn shape_keys_show_their_literals_as_placeholders() {
        assert_eq!(
            shape_text("S\0SELECT c FROM t WHERE id = \u{1} AND s = \u{2} AND f = \u{3}"),
            "SELECT c FROM t WHERE id = ? AND s = ? AND f = ?"
        );
    }

    #[test]
    fn utc_is_the_civil_date() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_micros(1_796_203_733_123_456);
        assert_eq!(utc(t), ("2026-12-02 09:28:53".to_string(), 123_456));
    }
}
