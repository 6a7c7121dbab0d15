//! Mycat's global sequences (SPEC §5.17): `next value for MYCATSEQ_<NAME>` in SQL and the keys
//! of `autoIncrement="true"` tables, from the handler `sequenceHandlerType` selects:
//!
//! - 0, local file: `sequence_conf.properties` holds `NAME.CURID`, `NAME.MINID`, `NAME.MAXID`,
//!   `NAME.HISIDS`; every value is written back (atomically: a temporary file renamed over it)
//!   before it is handed out, so a restart never reissues one. Past `MAXID` the range moves on
//!   as Mycat's does: `MINID := MAXID + 1`, `MAXID := 2·MAXID − MINID + 1`.
//! - 1, database: `sequence_db_conf.properties` maps `NAME=dataNode`; `SELECT
//!   mycat_seq_nextval('NAME')` on that dataNode's writeHost reserves `increment` values (Mycat's
//!   `dbseq.sql`), served from memory until used up.
//! - 2, time-based: `sequence_time_conf.properties` gives `WORKID` and `DATAACENTERID` (sic);
//!   `id = (ms − 1288834974657) << 22 | datacenter << 17 | worker << 12 | sequence`.
//!
//! Values are unique across sessions: each handler serialises its state behind a lock.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::StreamExt;

use crate::backend::{Response, Value};
use crate::config::{Config, MycatVersion};
use crate::datahost::{Cluster, Intent};

/// Mycat's epoch for time-based ids (2010-11-04T01:42:54.657Z, Twitter's snowflake epoch).
const TWEPOCH_MS: i64 = 1_288_834_974_657;

/// A failure to draw sequence values; the client gets errno 1003 with Mycat's prefix.
#[derive(Debug, Clone, thiserror::Error)]
#[error("mycat sequnce err.{0}")]
pub struct SequenceError(pub String);

/// The sequence handler of a configuration.
pub struct Sequences {
    handler: Handler,
}

impl std::fmt::Debug for Sequences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.handler {
            Handler::File(f) => format!("local file {}", f.path.display()),
            Handler::Database(d) => format!("database ({} sequences)", d.nodes.len()),
            Handler::Time(_) => "time-based".to_string(),
            Handler::Unsupported(t) => format!("unsupported type {t}"),
        };
        f.debug_struct("Sequences").field("handler", &kind).finish()
    }
}

enum Handler {
    File(FileSequences),
    Database(DatabaseSequences),
    Time(TimeSequence),
    /// Types 3-5 (ZooKeeper, custom classes): refused when used.
    Unsupported(u8),
}

impl Sequences {
    /// The handler `config` selects, with its state read from the config directory. A missing
    /// file leaves the handler without sequences (an error names the file when one is used).
    /// The handler and its state outlive reloads (`sequnceHandlerType` takes effect at
    /// restart, as Mycat reads it once); the database handler asks the cluster of the
    /// statement that draws the values.
    pub fn new(config: &Config) -> Sequences {
        let dir = &config.dir;
        let handler = match config.system.sequence_handler_type {
            0 => Handler::File(FileSequences::load(dir.join("sequence_conf.properties"))),
            1 => Handler::Database(DatabaseSequences::new(
                read_properties(&dir.join("sequence_db_conf.properties")).unwrap_or_default(),
            )),
            2 => {
                let p =
                    read_properties(&dir.join("sequence_time_conf.properties")).unwrap_or_default();
                let field = |k: &str| {
                    p.get(k)
                        .and_then(|v| v.trim().parse::<i64>().ok())
                        .unwrap_or(0)
                        & 31
                };
                Handler::Time(TimeSequence {
                    worker: field("WORKID"),
                    datacenter: field("DATAACENTERID"),
                    odd_start: config.system.mycat_version >= MycatVersion::V1_6_7_5,
                    state: Mutex::new((0, 0)),
                })
            }
            other => Handler::Unsupported(other),
        };
        Sequences { handler }
    }

    /// `count` new values of sequence `name` (upper-cased by the caller), in increasing order
    /// for the file and database handlers.
    ///
    /// Errors: an unknown sequence (`can't find definition for sequence :NAME`), a database
    /// that cannot be asked or has no such row, a file that cannot be written, a handler type
    /// manx does not support.
    /// `cluster`: the dataNodes the database handler reads `MYCAT_SEQUENCE` from (the running
    /// configuration's).
    pub async fn next(
        &self,
        cluster: &Cluster,
        name: &str,
        count: usize,
    ) -> Result<Vec<i64>, SequenceError> {
        match &self.handler {
            Handler::File(f) => f.next(name, count),
            Handler::Database(d) => d.next(cluster, name, count).await,
            Handler::Time(t) => Ok((0..count).map(|_| t.next()).collect()),
            Handler::Unsupported(t) => Err(SequenceError(format!(
                "sequenceHandlerType {t} (ZooKeeper or custom class) is not supported by manx"
            ))),
        }
    }
}

/// Java `.properties` lines: `key=value` or `key:value`, `#` / `!` comments. Enough for
/// Mycat's sequence files (no escapes or continuations in them).
fn read_properties(path: &std::path::Path) -> Option<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let Some(at) = line.find(['=', ':']) else {
            out.insert(line.to_string(), String::new());
            continue;
        };
        out.insert(
            line[..at].trim().to_string(),
            line[at + 1..].trim().to_string(),
        );
    }
    Some(out)
}

/// One sequence of the local file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileEntry {
    cur: i64,
    min: i64,
    max: i64,
    his: String,
}

/// Handler 0: `sequence_conf.properties`.
struct FileSequences {
    path: PathBuf,
    /// `None` when the file could not be read.
    state: Mutex<Option<FileState>>,
}

struct FileState {
    entries: BTreeMap<String, FileEntry>,
    /// Keys of the file that are not sequence fields, kept when it is rewritten.
    other: BTreeMap<String, String>,
}

impl FileSequences {
    fn load(path: PathBuf) -> FileSequences {
        let state = read_properties(&path).map(|props| {
            let mut entries: BTreeMap<String, FileEntry> = BTreeMap::new();
            let mut other = BTreeMap::new();
            for (k, v) in props {
                let field = k
                    .rsplit_once('.')
                    .filter(|(_, f)| matches!(*f, "CURID" | "MINID" | "MAXID" | "HISIDS"));
                let Some((name, field)) = field else {
                    other.insert(k, v);
                    continue;
                };
                let e = entries.entry(name.to_string()).or_insert(FileEntry {
                    cur: 0,
                    min: 0,
                    max: 0,
                    his: String::new(),
                });
                let n = v.parse::<i64>().unwrap_or(0);
                match field {
                    "CURID" => e.cur = n,
                    "MINID" => e.min = n,
                    "MAXID" => e.max = n,
                    _ => e.his = v,
                }
            }
            FileState { entries, other }
        });
        FileSequences {
            path,
            state: Mutex::new(state),
        }
    }

    fn next(&self, name: &str, count: usize) -> Result<Vec<i64>, SequenceError> {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some(state) = guard.as_mut() else {
            return Err(SequenceError(format!(
                "can't find definition for sequence :{name} ({} cannot be read)",
                self.path.display()
            )));
        };
        let Some(entry) = state.entries.get(name) else {
            return Err(SequenceError(format!(
                "can't find definition for sequence :{name}"
            )));
        };
        let mut e = entry.clone();
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            if e.cur + 1 > e.max {
                // Mycat: the next range is as long as the last one and follows it.
                let (min, max) = (e.min, e.max);
                if !e.his.is_empty() {
                    e.his.push(',');
                }
                e.his.push_str(&format!("{min}-{max}"));
                e.min = max + 1;
                e.max = 2 * max - min + 1;
                e.cur = max;
            }
            e.cur += 1;
            out.push(e.cur);
        }
        // Written before the values are handed out: a restart continues after them.
        let previous = state.entries.insert(name.to_string(), e);
        if let Err(err) = write_file(&self.path, state) {
            if let Some(p) = previous {
                state.entries.insert(name.to_string(), p);
            }
            return Err(SequenceError(format!(
                "cannot write {}: {err}",
                self.path.display()
            )));
        }
        Ok(out)
    }
}

/// Rewrites the sequence file: a temporary file beside it, renamed over it.
fn write_file(path: &std::path::Path, state: &FileState) -> std::io::Result<()> {
    use std::io::Write;
    let mut text = String::from("#manx global sequences (Mycat sequence_conf.properties)\n");
    for (k, v) in &state.other {
        text.push_str(&format!("{k}={v}\n"));
    }
    for (name, e) in &state.entries {
        text.push_str(&format!(
            "{name}.HISIDS={}\n{name}.MINID={}\n{name}.MAXID={}\n{name}.CURID={}\n",
            e.his, e.min, e.max, e.cur
        ));
    }
    let tmp = path.with_extension("properties.tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_data()?;
    std::fs::rename(&tmp, path)
}

/// Handler 1: values reserved in the database by `mycat_seq_nextval`.
struct DatabaseSequences {
    /// Sequence name → the dataNode whose database holds `MYCAT_SEQUENCE`.
    nodes: BTreeMap<String, String>,
    /// Per sequence: the reserved values not yet handed out (`next..end`).
    reserved: HashMap<String, Arc<tokio::sync::Mutex<(i64, i64)>>>,
}

impl DatabaseSequences {
    fn new(mapping: BTreeMap<String, String>) -> DatabaseSequences {
        let nodes: BTreeMap<String, String> = mapping
            .into_iter()
            .map(|(k, v)| (k.to_ascii_uppercase(), v))
            .collect();
        let reserved = nodes
            .keys()
            .map(|k| (k.clone(), Arc::new(tokio::sync::Mutex::new((0, 0)))))
            .collect();
        DatabaseSequences { nodes, reserved }
    }

    async fn next(
        &self,
        cluster: &Cluster,
        name: &str,
        count: usize,
    ) -> Result<Vec<i64>, SequenceError> {
        let (Some(node), Some(slot)) = (self.nodes.get(name), self.reserved.get(name)) else {
            return Err(SequenceError(format!(
                "can't find definition for sequence :{name}"
            )));
        };
        let mut range = slot.lock().await;
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            if range.0 >= range.1 {
                *range = fetch(cluster, node, name).await?;
            }
            out.push(range.0);
            range.0 += 1;
        }
        Ok(out)
    }
}

/// Reserves the next block of sequence `name` in dataNode `node`'s database: `SELECT
/// mycat_seq_nextval('NAME')` answers `"first,increment"`; the block is `first..first+increment`.
///
/// Errors: the dataNode cannot be reached, or the function's answer is not such a pair (the
/// sequence row is missing).
async fn fetch(cluster: &Cluster, node: &str, name: &str) -> Result<(i64, i64), SequenceError> {
    let fail = |m: String| SequenceError(format!("sequence {name} on dataNode {node}: {m}"));
    let mut conn = cluster
        .acquire_for(node, Intent::Write)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let sql = format!("SELECT mycat_seq_nextval('{}')", name.replace('\'', "''"));
    let text = match conn.query(&sql).await.map_err(|e| fail(e.to_string()))? {
        Response::Rows { mut rows, .. } => {
            let mut first = None;
            while let Some(row) = rows.next().await {
                let row = row.map_err(|e| fail(e.to_string()))?;
                if first.is_none() {
                    first = row.into_iter().next();
                }
            }
            match first {
                Some(Value::Bytes(b)) => String::from_utf8_lossy(&b).into_owned(),
                _ => String::new(),
            }
        }
        Response::Ok(_) => String::new(),
    };
    let parsed = text
        .split_once(',')
        .and_then(|(a, b)| Some((a.trim().parse::<i64>().ok()?, b.trim().parse::<i64>().ok()?)));
    match parsed {
        Some((first, increment)) if increment > 0 && first != -999_999 => {
            Ok((first, first + increment))
        }
        _ => Err(fail(format!(
            "sequnce not found in db table (mycat_seq_nextval answered {text:?})"
        ))),
    }
}

/// Handler 2: time-based 64-bit ids.
struct TimeSequence {
    worker: i64,
    datacenter: i64,
    /// Mycat 1.6.7 starts each millisecond's counter at `ms & 1`, 1.6.5 at 0.
    odd_start: bool,
    /// (last millisecond, counter within it).
    state: Mutex<(i64, i64)>,
}

impl TimeSequence {
    fn next(&self) -> i64 {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let now = jiff::Timestamp::now().as_millisecond();
            if now < s.0 {
                // The clock went back: wait until it passes the last millisecond used, so no
                // id repeats.
                std::thread::sleep(std::time::Duration::from_millis((s.0 - now) as u64));
                continue;
            }
            if now == s.0 {
                let seq = (s.1 + 1) & 4095;
                if seq == 0 {
                    // The millisecond's 4096 ids are used up.
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    continue;
                }
                s.1 = seq;
            } else {
                s.0 = now;
                s.1 = if self.odd_start { now & 1 } else { 0 };
            }
            return ((now - TWEPOCH_MS) << 22)
                | (self.datacenter << 17)
                | (self.worker << 12)
                | s.1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_sequences_roll_into_the_next_range_and_persist() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sequence_conf.properties");
        std::fs::write(
            &path,
            "#c\nT.HISIDS=\nT.MINID=1\nT.MAXID=3\nT.CURID=1\nOTHER=x\n",
        )
        .unwrap();
        let f = FileSequences::load(path.clone());
        assert_eq!(f.next("T", 2).unwrap(), [2, 3]);
        // Past MAXID: MINID 4, MAXID 2*3-1+1 = 6.
        assert_eq!(f.next("T", 4).unwrap(), [4, 5, 6, 7]);
        let again = FileSequences::load(path.clone());
        assert_eq!(again.next("T", 1).unwrap(), [8]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("OTHER=x"), "{text}");
        assert!(text.contains("T.HISIDS=1-3,4-6"), "{text}");
        assert!(f.next("NOPE", 1).is_err());
    }

    #[test]
    fn time_ids_are_unique_and_increasing() {
        let t = TimeSequence {
            worker: 1,
            datacenter: 2,
            odd_start: true,
            state: Mutex::new((0, 0)),
        };
        let ids: Vec<i64> = (0..20_000).map(|_| t.next()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!((ids[0] >> 12) & 31, 1);
        assert_eq!((ids[0] >> 17) & 31, 2);
    }
}
