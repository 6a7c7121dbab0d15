//! The slow log: statements at least `slowTime` ms slow, in MySQL's slow-query-log format so
//! that `pt-query-digest` and `mysqldumpslow` read it (as DBLE writes its own; OPERATIONS.md §4):
//!
//! ```text
//! # Time: 2026-12-02T09:28:53.123456Z
//! # User@Host: app[app] @  [10.0.0.7]  Id:    12
//! # Query_time: 0.153021  Lock_time: 0.000000 Rows_sent: 3  Rows_examined: 0
//! # manx: schema=TESTDB data_nodes=dn1,dn2 kind=multi errno=0
//! use TESTDB;
//! SET timestamp=1796203733;
//! SELECT ...;
//! ```
//!
//! `Rows_examined` is the rows the statement changed (manx does not see what the backends
//! examined); `Lock_time` is 0. The file is rotated by size: past `max_bytes` it is renamed to
//! `<file>.1` (the previous `.1` is dropped) and a new one is started.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use super::{Executed, utc};

/// Where and how big (server.xml `slowLogFile`, `slowLogMaxBytes`).
#[derive(Debug, Clone)]
pub struct Settings {
    pub path: PathBuf,
    /// The size past which the file is rotated, in bytes.
    pub max_bytes: u64,
}

/// An open slow log.
#[derive(Debug)]
pub struct SlowLog {
    settings: Settings,
    file: Mutex<(File, u64)>,
}

fn open(path: &PathBuf) -> std::io::Result<(File, u64)> {
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let size = file.metadata()?.len();
    Ok((file, size))
}

impl SlowLog {
    /// Opens (creates) the file for appending.
    ///
    /// Errors: the file cannot be opened.
    pub fn open(settings: Settings) -> std::io::Result<SlowLog> {
        let file = open(&settings.path)?;
        Ok(SlowLog {
            settings,
            file: Mutex::new(file),
        })
    }

    /// Appends `e`'s entry. A failed write is logged, not returned: the statement is done.
    pub fn write(&self, e: &Executed) {
        let entry = entry(e);
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if f.1 > 0 && f.1 + entry.len() as u64 > self.settings.max_bytes {
            let rotated = self.settings.path.with_extension(
                match self.settings.path.extension().and_then(|e| e.to_str()) {
                    Some(ext) => format!("{ext}.1"),
                    None => "1".to_string(),
                },
            );
            let renamed = std::fs::rename(&self.settings.path, &rotated);
            match renamed.and_then(|()| open(&self.settings.path)) {
                Ok(fresh) => *f = fresh,
                Err(e) => {
                    tracing::warn!(path = %self.settings.path.display(), error = %e, "slow log: cannot rotate")
                }
            }
        }
        match f.0.write_all(entry.as_bytes()) {
            Ok(()) => f.1 += entry.len() as u64,
            Err(err) => {
                tracing::warn!(path = %self.settings.path.display(), error = %err, "slow log: cannot write")
            }
        }
    }
}

/// One entry (module documentation).
fn entry(e: &Executed) -> String {
    let (date, micros) = utc(e.started);
    let timestamp = e
        .started
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let user = e.user.replace(['\n', '\r'], " ");
    let mut sql = e.sql.trim_end().to_string();
    if !sql.ends_with(';') {
        sql.push(';');
    }
    let use_schema = match e.schema {
        Some(s) => format!("use {s};\n"),
        None => String::new(),
    };
    format!(
        "# Time: {}T{}.{micros:06}Z\n# User@Host: {user}[{user}] @  [{}]  Id: {:>5}\n# Query_time: {:.6}  Lock_time: 0.000000 Rows_sent: {}  Rows_examined: {}\n# manx: schema={} data_nodes={} kind={} errno={}\n{use_schema}SET timestamp={timestamp};\n{sql}\n",
        &date[..10],
        &date[11..],
        e.client,
        e.connection,
        e.elapsed.as_secs_f64(),
        e.rows_sent,
        e.rows_affected,
        e.schema.unwrap_or(""),
        e.nodes.join(","),
        e.kind.as_str(),
        e.error.unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::RouteKind;
    use std::time::{Duration, SystemTime};

    fn executed(sql: &str) -> Executed<'_> {
        Executed {
            user: "app",
            client: "10.0.0.7".parse().unwrap(),
            connection: 12,
            schema: Some("TESTDB"),
            sql,
            started: SystemTime::UNIX_EPOCH + Duration::from_micros(1_796_203_733_123_456),
            elapsed: Duration::from_micros(153_021),
            rows_sent: 3,
            rows_affected: 0,
            error: None,
            nodes: &[],
            tables: &[],
            kind: RouteKind::Multi,
            read: true,
        }
    }

    #[test]
    fn entries_are_in_mysqls_format() {
        let text = entry(&executed("SELECT 1"));
        assert_eq!(
            text,
            "# Time: 2026-12-02T09:28:53.123456Z\n# User@Host: app[app] @  [10.0.0.7]  Id:    12\n# Query_time: 0.153021  Lock_time: 0.000000 Rows_sent: 3  Rows_examined: 0\n# manx: schema=TESTDB data_nodes= kind=multi errno=0\nuse TESTDB;\nSET timestamp=1796203733;\nSELECT 1;\n"
        );
    }

    #[test]
    fn rotates_past_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("slow.log");
        let log = SlowLog::open(Settings {
            path: path.clone(),
            max_bytes: 600,
        })
        .unwrap();
        for _ in 0..3 {
            log.write(&executed("SELECT 1"));
        }
        let rotated = std::fs::read_to_string(dir.path().join("slow.log.1")).unwrap();
        let current = std::fs::read_to_string(&path).unwrap();
        assert_eq!(rotated.matches("# Time:").count(), 2);
        assert_eq!(current.matches("# Time:").count(), 1);
    }
}
