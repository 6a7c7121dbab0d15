//! The coordinator log: manx's own durable record of its two-phase commits (issue 24,
//! DECISIONS.md item 27).
//!
//! A directory of append-only segment files `xa-<number>.log`, numbered from 1. Each record is
//! framed as `length: u32 LE | crc32: u32 LE | payload`, the CRC-32 (IEEE) being the payload's.
//! A global transaction writes, in order:
//! - [`Record::Prepare`] with its branches, durable before the first `XA PREPARE`: a prepared
//!   branch of this instance that the log does not know of is therefore *in doubt* (the log was
//!   lost), never silently rolled back;
//! - [`Record::Commit`], the commit decision, durable before the first `XA COMMIT` (Mycat logs
//!   only "all prepared", OPERATIONS.md §3 defect 1), or [`Record::Abort`];
//! - [`Record::Done`] once every branch is resolved.
//!
//! Appends are made by one writer thread that takes every request waiting when it wakes, writes
//! them with one `write` and makes them durable with one `fdatasync` (group flush): under load
//! many commits share a flush. Records nobody waits for ([`CoordinatorLog::append_later`]) ride
//! along with the next flush. A segment is never appended to after a failed write, nor after
//! a restart: the writer starts a new one. A segment is deleted once every transaction with a
//! record in it is done and it is no longer the one being appended to.
//!
//! Reading at start-up: the first record that does not check ends a segment. When it runs to
//! the end of the file it is the tail of a write that failed or was cut short by a crash (its
//! append was never acknowledged) and is ignored; anything after it is corruption and start-up
//! is refused naming the file and offset.

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// One entry of the log ([module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// The transaction is about to prepare these branches (dataNode names).
    Prepare {
        gtrid: String,
        branches: Vec<String>,
    },
    /// The commit decision.
    Commit { gtrid: String },
    /// The transaction is rolled back: no commit decision follows.
    Abort { gtrid: String },
    /// Every branch is resolved (committed or rolled back, or found gone).
    Done { gtrid: String },
}

impl Record {
    /// The global transaction id the record is about.
    pub fn gtrid(&self) -> &str {
        match self {
            Record::Prepare { gtrid, .. }
            | Record::Commit { gtrid }
            | Record::Abort { gtrid }
            | Record::Done { gtrid } => gtrid,
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; 8]);
        let (kind, branches): (u8, &[String]) = match self {
            Record::Prepare { branches, .. } => (1, branches),
            Record::Commit { .. } => (2, &[]),
            Record::Abort { .. } => (3, &[]),
            Record::Done { .. } => (4, &[]),
        };
        out.push(kind);
        put_str(out, self.gtrid());
        out.extend_from_slice(&(branches.len() as u16).to_le_bytes());
        for b in branches {
            put_str(out, b);
        }
        let payload = &out[start + 8..];
        let len = payload.len() as u32;
        let crc = crc32fast::hash(payload);
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
        out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    }

    fn decode(payload: &[u8]) -> Option<Record> {
        let mut r = Reader(payload);
        let kind = r.u8()?;
        let gtrid = r.str()?;
        let count = r.u16()?;
        let mut branches = Vec::with_capacity(usize::from(count));
        for _ in 0..count {
            branches.push(r.str()?);
        }
        if !r.0.is_empty() {
            return None;
        }
        Some(match kind {
            1 => Record::Prepare { gtrid, branches },
            2 => Record::Commit { gtrid },
            3 => Record::Abort { gtrid },
            4 => Record::Done { gtrid },
            _ => return None,
        })
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    let bytes = &s.as_bytes()[..s.len().min(usize::from(u16::MAX))];
    out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
    out.extend_from_slice(bytes);
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }
    fn str(&mut self) -> Option<String> {
        let n = usize::from(self.u16()?);
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

/// What the log knows of a transaction that is not done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// Its branches (dataNode names), from its [`Record::Prepare`].
    pub branches: Vec<String>,
    /// Its decision, when one was logged.
    pub decision: Decision,
}

/// A transaction's outcome as logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Prepared (or preparing) and not decided: recovery rolls it back.
    Undecided,
    /// The commit decision is on disk: recovery commits every branch.
    Commit,
    /// Rolled back.
    Abort,
}

/// Why the log cannot be opened or written. Cloned to every append a failed flush answers.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LogError {
    /// A file operation failed (`path` names the file or directory).
    #[error("XA coordinator log {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: Arc<io::Error>,
    },
    /// A record in the middle of a segment does not check: the log is damaged.
    #[error(
        "XA coordinator log {path} is damaged at byte {offset}: a record that does not check is followed by more data; move the file away only after resolving its transactions by hand"
    )]
    Corrupt { path: PathBuf, offset: u64 },
    /// Another process holds the log (its `LOCK` file): two gateways must not share one.
    #[error(
        "XA coordinator log {path} is in use by another process: every gateway needs its own xaLogDir and instanceId"
    )]
    Locked { path: PathBuf },
    /// The writer thread is gone (the process is ending).
    #[error("XA coordinator log: the writer has stopped")]
    Stopped,
}

/// Counters of the writer, for tests and the closing measurements: group flushing shows as
/// fewer flushes than appends.
#[derive(Debug, Default)]
pub struct LogCounters {
    /// Appends made durable (one per successful [`CoordinatorLog::append`] call).
    pub appends: AtomicU64,
    /// `fdatasync` calls that succeeded.
    pub flushes: AtomicU64,
    /// Segment files deleted because all their transactions were done.
    pub segments_removed: AtomicU64,
}

type Reply = tokio::sync::oneshot::Sender<Result<(), LogError>>;

struct Request {
    records: Vec<Record>,
    reply: Option<Reply>,
}

/// The handle through which sessions append to the log; cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct CoordinatorLog {
    tx: std::sync::Mutex<std::sync::mpsc::Sender<Request>>,
    dir: PathBuf,
    /// `<dir>/LOCK`, locked exclusively for the process's life.
    _lock: File,
    /// The writer's counters.
    pub counters: Arc<LogCounters>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("records", &self.records)
            .finish()
    }
}

impl CoordinatorLog {
    /// Opens (creating it when missing) the log in `dir`, reads every segment, deletes those
    /// whose transactions are all done, and starts the writer thread, which starts a new
    /// segment at its first append and a further one once a segment holds `segment_bytes`.
    /// Returns the transactions that are not done, by gtrid.
    ///
    /// Errors: the directory cannot be created or read ([`LogError::Io`]), a segment is damaged
    /// ([`LogError::Corrupt`]).
    pub fn open(
        dir: &Path,
        segment_bytes: u64,
    ) -> Result<(CoordinatorLog, BTreeMap<String, Logged>), LogError> {
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| LogError::Io {
                path,
                source: Arc::new(source),
            }
        };
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let lock_path = dir.join("LOCK");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(LogError::Locked {
                    path: dir.to_path_buf(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(&lock_path)(e)),
        }
        let mut numbers = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io_err(dir))? {
            let entry = entry.map_err(io_err(dir))?;
            if let Some(n) = segment_number(&entry.file_name().to_string_lossy()) {
                numbers.push(n);
            }
        }
        numbers.sort_unstable();
        let mut book = Book::default();
        for &n in &numbers {
            let path = segment_path(dir, n);
            let bytes = std::fs::read(&path).map_err(io_err(&path))?;
            book.live.insert(n, 0);
            for record in read_records(&bytes, &path)? {
                book.apply(n, record);
            }
        }
        let next = numbers.last().map_or(1, |n| n + 1);
        let counters = Arc::new(LogCounters::default());
        let mut writer = Writer {
            dir: dir.to_path_buf(),
            segment_bytes,
            active: None,
            next,
            book,
            counters: counters.clone(),
        };
        writer.remove_finished();
        let logged = writer.book.logged.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("manx-xa-log".to_string())
            .spawn(move || writer.run(rx))
            .map_err(io_err(dir))?;
        Ok((
            CoordinatorLog {
                tx: std::sync::Mutex::new(tx),
                dir: dir.to_path_buf(),
                _lock: lock,
                counters,
            },
            logged,
        ))
    }

    /// The log's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends `records` and waits until they are durable (written and `fdatasync`ed, with
    /// whatever other appends were waiting: one flush for all).
    ///
    /// Errors: the write or flush error ([`LogError::Io`]; the records may be partly on disk:
    /// the caller acts as if they were not, and recovery treats a torn tail as never written),
    /// or [`LogError::Stopped`].
    pub async fn append(&self, records: Vec<Record>) -> Result<(), LogError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send(Request {
            records,
            reply: Some(reply),
        })?;
        answer.await.map_err(|_| LogError::Stopped).and_then(|r| r)
    }

    /// Appends `records` without waiting: they are made durable with the next flush. For
    /// records whose loss recovery repairs ([`Record::Abort`], [`Record::Done`]).
    pub fn append_later(&self, records: Vec<Record>) {
        let _ = self.send(Request {
            records,
            reply: None,
        });
    }

    fn send(&self, request: Request) -> Result<(), LogError> {
        let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        tx.send(request).map_err(|_| LogError::Stopped)
    }
}

fn segment_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("xa-{n:010}.log"))
}

fn segment_number(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("xa-")?.strip_suffix(".log")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The records of one segment's bytes ([module docs](self) for torn tails and corruption).
fn read_records(bytes: &[u8], path: &Path) -> Result<Vec<Record>, LogError> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.len() < 8 {
            break; // a torn header
        }
        let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
        let Some(payload) = rest.get(8..8 + len) else {
            break; // runs past the end: torn
        };
        let record = (crc32fast::hash(payload) == crc)
            .then(|| Record::decode(payload))
            .flatten();
        match record {
            Some(r) => out.push(r),
            None if 8 + len == rest.len() => break, // the last record, torn
            None => {
                return Err(LogError::Corrupt {
                    path: path.to_path_buf(),
                    offset: at as u64,
                });
            }
        }
        at += 8 + len;
    }
    Ok(out)
}

/// The bookkeeping shared by reading and writing: which transactions are not done, and which
/// segments hold their records.
#[derive(Debug, Default)]
struct Book {
    logged: BTreeMap<String, Logged>,
    /// Segments holding records of each transaction not done.
    holds: HashMap<String, Vec<u64>>,
    /// For every segment file: how many transactions not done have records in it.
    live: BTreeMap<u64, usize>,
}

impl Book {
    fn apply(&mut self, segment: u64, record: Record) {
        let gtrid = record.gtrid().to_string();
        match record {
            Record::Done { .. } => {
                self.logged.remove(&gtrid);
                for s in self.holds.remove(&gtrid).unwrap_or_default() {
                    if let Some(n) = self.live.get_mut(&s) {
                        *n = n.saturating_sub(1);
                    }
                }
                return;
            }
            Record::Prepare { branches, .. } => {
                self.logged.insert(
                    gtrid.clone(),
                    Logged {
                        branches,
                        decision: Decision::Undecided,
                    },
                );
            }
            Record::Commit { .. } | Record::Abort { .. } => {
                let decision = if matches!(record, Record::Commit { .. }) {
                    Decision::Commit
                } else {
                    Decision::Abort
                };
                self.logged
                    .entry(gtrid.clone())
                    .or_insert_with(|| Logged {
                        branches: Vec::new(),
                        decision,
                    })
                    .decision = decision;
            }
        }
        let holds = self.holds.entry(gtrid).or_default();
        if !holds.contains(&segment) {
            holds.push(segment);
            *self.live.entry(segment).or_default() += 1;
        }
    }
}

struct Writer {
    dir: PathBuf,
    segment_bytes: u64,
    /// The segment being appended to: number, file, length.
    active: Option<(u64, File, u64)>,
    /// The number the next segment gets.
    next: u64,
    book: Book,
    counters: Arc<LogCounters>,
}

impl Writer {
    fn run(mut self, rx: std::sync::mpsc::Receiver<Request>) {
        let mut buffer = Vec::new();
        while let Ok(first) = rx.recv() {
            let mut batch = vec![first];
            while let Ok(more) = rx.try_recv() {
                batch.push(more);
                if batch.len() >= 4096 {
                    break;
                }
            }
            buffer.clear();
            for r in batch.iter().flat_map(|r| &r.records) {
                r.encode(&mut buffer);
            }
            // Records nobody waits for (aborts, dones) are written but not flushed on their
            // own: the next flush takes them along, and losing them costs recovery a look.
            let sync = batch.iter().any(|r| r.reply.is_some());
            let result = self.write(&buffer, sync);
            if result.is_ok() {
                let segment = self.active.as_ref().map_or(0, |a| a.0);
                for r in batch.iter_mut().flat_map(|r| r.records.drain(..)) {
                    self.book.apply(segment, r);
                }
                self.remove_finished();
            } else if let Err(e) = &result {
                tracing::error!(dir = %self.dir.display(), error = %e, "XA coordinator log write failed: the commits waiting for it are refused");
            }
            for r in batch {
                if let Some(reply) = r.reply {
                    if result.is_ok() {
                        self.counters.appends.fetch_add(1, Ordering::Relaxed);
                    }
                    let _ = reply.send(result.clone());
                }
            }
        }
    }

    /// Writes `bytes` at the end of the active segment (starting a new one first when there is
    /// none or it is full) and, when `sync`, flushes it. On failure the segment is abandoned:
    /// the next write starts another.
    fn write(&mut self, bytes: &[u8], sync: bool) -> Result<(), LogError> {
        if self
            .active
            .as_ref()
            .is_some_and(|a| a.2 >= self.segment_bytes)
        {
            self.active = None;
            self.remove_finished();
        }
        let active = match self.active.take() {
            Some(active) => active,
            None => {
                let n = self.next;
                self.next += 1;
                let path = segment_path(&self.dir, n);
                let file = OpenOptions::new()
                    .create_new(true)
                    .append(true)
                    .open(&path)
                    .and_then(|f| {
                        // The new name must survive a crash too.
                        File::open(&self.dir)?.sync_all()?;
                        Ok(f)
                    })
                    .map_err(|source| LogError::Io {
                        path: path.clone(),
                        source: Arc::new(source),
                    })?;
                self.book.live.insert(n, 0);
                (n, file, 0)
            }
        };
        let (n, file, len) = self.active.insert(active);
        let path = segment_path(&self.dir, *n);
        let written = file
            .write_all(bytes)
            .and_then(|()| if sync { file.sync_data() } else { Ok(()) });
        match written {
            Ok(()) => {
                *len += bytes.len() as u64;
                if sync {
                    self.counters.flushes.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            }
            Err(e) => {
                self.active = None;
                Err(LogError::Io {
                    path,
                    source: Arc::new(e),
                })
            }
        }
    }

    /// Deletes the segments, other than the active one, that hold no record of a transaction
    /// that is not done.
    fn remove_finished(&mut self) {
        let active = self.active.as_ref().map(|a| a.0);
        let finished: Vec<u64> = self
            .book
            .live
            .iter()
            .filter(|(n, live)| **live == 0 && Some(**n) != active)
            .map(|(n, _)| *n)
            .collect();
        for n in finished {
            let path = segment_path(&self.dir, n);
            match std::fs::remove_file(&path) {
                Ok(()) => {
                    self.book.live.remove(&n);
                    self.counters
                        .segments_removed
                        .fetch_add(1, Ordering::Relaxed);
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    self.book.live.remove(&n);
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "XA coordinator log: a finished segment could not be removed");
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepare(g: &str) -> Record {
        Record::Prepare {
            gtrid: g.to_string(),
            branches: vec!["dn1".to_string(), "dn2".to_string()],
        }
    }

    #[test]
    fn records_round_trip() {
        for r in [
            prepare("manx.a.1.1"),
            Record::Commit {
                gtrid: "g".to_string(),
            },
            Record::Abort {
                gtrid: "g".to_string(),
            },
            Record::Done {
                gtrid: "g".to_string(),
            },
        ] {
            let mut buf = Vec::new();
            r.encode(&mut buf);
            assert_eq!(read_records(&buf, Path::new("x")).unwrap(), vec![r]);
        }
    }

    #[test]
    fn a_torn_tail_is_ignored_and_damage_before_the_end_refused() {
        let mut buf = Vec::new();
        prepare("a").encode(&mut buf);
        let whole = buf.len();
        prepare("b").encode(&mut buf);
        // Cut inside the second record: torn.
        assert_eq!(
            read_records(&buf[..buf.len() - 3], Path::new("x")).unwrap(),
            vec![prepare("a")]
        );
        // A flipped byte in the last record: torn too (its write never completed).
        let mut last = buf.clone();
        *last.last_mut().unwrap() ^= 1;
        assert_eq!(
            read_records(&last, Path::new("x")).unwrap(),
            vec![prepare("a")]
        );
        // A flipped byte in the first record, followed by another: damage.
        let mut first = buf.clone();
        first[whole - 1] ^= 1;
        assert!(matches!(
            read_records(&first, Path::new("x")),
            Err(LogError::Corrupt { offset: 0, .. })
        ));
    }

    #[tokio::test]
    async fn decisions_survive_reopening_and_done_segments_go() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (log, logged) = CoordinatorLog::open(dir.path(), 1).unwrap();
            assert!(logged.is_empty());
            log.append(vec![prepare("t1")]).await.unwrap();
            log.append(vec![Record::Commit {
                gtrid: "t1".to_string(),
            }])
            .await
            .unwrap();
            log.append(vec![prepare("t2")]).await.unwrap();
            log.append(vec![prepare("t3")]).await.unwrap();
            log.append(vec![Record::Done {
                gtrid: "t3".to_string(),
            }])
            .await
            .unwrap();
        }
        let (log, logged) = CoordinatorLog::open(dir.path(), 1).unwrap();
        assert_eq!(logged.len(), 2, "{logged:?}");
        assert_eq!(logged["t1"].decision, Decision::Commit);
        assert_eq!(logged["t1"].branches, vec!["dn1", "dn2"]);
        assert_eq!(logged["t2"].decision, Decision::Undecided);
        // t3's segment went at opening (every transaction in it done); t1's and t2's stay.
        for g in ["t1", "t2"] {
            log.append(vec![Record::Done {
                gtrid: g.to_string(),
            }])
            .await
            .unwrap();
        }
        log.append(vec![prepare("t4")]).await.unwrap();
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "LOCK")
            .collect();
        // Only the active segment (holding t4) remains.
        assert_eq!(left.len(), 1, "{left:?}");
    }

    #[tokio::test]
    async fn a_log_is_opened_by_one_process_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let (first, _) = CoordinatorLog::open(dir.path(), 1 << 20).unwrap();
        assert!(matches!(
            CoordinatorLog::open(dir.path(), 1 << 20),
            Err(LogError::Locked { .. })
        ));
        drop(first);
        CoordinatorLog::open(dir.path(), 1 << 20).unwrap();
    }

    #[tokio::test]
    async fn a_write_that_fails_is_reported_and_the_next_one_retries() {
        let dir = tempfile::tempdir().unwrap();
        let logdir = dir.path().join("log");
        let (log, _) = CoordinatorLog::open(&logdir, 1).unwrap();
        log.append(vec![prepare("t1")]).await.unwrap();
        // The directory replaced by a file: the next segment cannot be created.
        std::fs::rename(&logdir, dir.path().join("moved")).unwrap();
        std::fs::write(&logdir, b"not a directory").unwrap();
        let e = log.append(vec![prepare("t2")]).await.unwrap_err();
        assert!(
            matches!(&e, LogError::Io { path, .. } if path.starts_with(&logdir)),
            "{e}"
        );
        std::fs::remove_file(&logdir).unwrap();
        std::fs::rename(dir.path().join("moved"), &logdir).unwrap();
        log.append(vec![prepare("t3")]).await.unwrap();
    }
}
