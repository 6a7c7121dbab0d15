//! Replication positions of acknowledged writes (issue 22: no promotion that loses an
//! acknowledged write).
//!
//! MariaDB names every committed transaction by a GTID `domain-server-sequence`; within a
//! replication domain sequence numbers only grow, so "every write acknowledged on this
//! dataHost" is, per domain, the highest sequence number seen. A standby has applied them all
//! when `MASTER_GTID_WAIT(<position>, t)` returns 0 on it.
//!
//! PostgreSQL names a point of its write-ahead log by an LSN (`16/B374D848`, a 64-bit byte
//! position); a promoted standby has every acknowledged commit when the last LSN it replayed
//! before its promotion (`pg_last_wal_replay_lsn()`) is at least the highest LSN read after
//! them (`pg_current_wal_insert_lsn()`, one round trip after each write and `COMMIT` of a
//! tracked connection).
//!
//! The MySQL backend reads `@@last_gtid` (the session's last committed transaction) in the
//! same packet as every write and `COMMIT` of a tracked connection
//! ([`super::BackendConn::track_writes`]): no extra round trip. mysql_async does not ask for
//! `CLIENT_SESSION_TRACK`, which would carry the GTID in the OK packet itself.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// A set of MariaDB GTIDs, one per replication domain (the highest sequence seen).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gtids(BTreeMap<u32, (u32, u64)>);

impl Gtids {
    /// Reads `domain-server-seq[,domain-server-seq...]` (`@@last_gtid`, `@@gtid_binlog_pos`);
    /// malformed entries are skipped, an empty text is the empty set.
    pub fn parse(text: &str) -> Gtids {
        let mut g = Gtids::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let mut it = part.splitn(3, '-');
            if let (Some(d), Some(s), Some(n)) = (it.next(), it.next(), it.next())
                && let (Ok(d), Ok(s), Ok(n)) = (d.parse(), s.parse(), n.parse())
            {
                g.add(d, s, n);
            }
        }
        g
    }

    fn add(&mut self, domain: u32, server: u32, seq: u64) {
        let slot = self.0.entry(domain).or_insert((server, seq));
        if seq > slot.1 {
            *slot = (server, seq);
        }
    }

    /// Adds every GTID of `other` (per domain, the higher sequence wins).
    pub fn merge(&mut self, other: &Gtids) {
        for (d, (s, n)) in &other.0 {
            self.add(*d, *s, *n);
        }
    }

    /// Whether no GTID is in the set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `self` holds, in every domain of `other`, at least `other`'s sequence.
    pub fn covers(&self, other: &Gtids) -> bool {
        other
            .0
            .iter()
            .all(|(d, (_, n))| self.0.get(d).is_some_and(|(_, m)| m >= n))
    }
}

impl std::fmt::Display for Gtids {
    /// `domain-server-seq` entries joined by `,` (MariaDB's GTID position syntax).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (d, (s, n))) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}-{s}-{n}")?;
        }
        Ok(())
    }
}

/// A PostgreSQL WAL position (`X/Y`, two hex halves of a 64-bit byte position).
pub fn parse_lsn(text: &str) -> Option<u64> {
    let (hi, lo) = text.trim().split_once('/')?;
    Some((u64::from_str_radix(hi, 16).ok()? << 32) | u64::from_str_radix(lo, 16).ok()?)
}

/// [`parse_lsn`]'s text.
pub fn format_lsn(lsn: u64) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn & 0xFFFF_FFFF)
}

/// How far the acknowledged writes of a dataHost go: MariaDB GTIDs, or a PostgreSQL LSN.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Position {
    pub gtids: Gtids,
    pub lsn: Option<u64>,
}

impl Position {
    /// Reads [`Position`]'s text: `,`-separated GTIDs and (PostgreSQL) one `X/Y` LSN;
    /// malformed parts are skipped.
    pub fn parse(text: &str) -> Position {
        let mut p = Position::default();
        for part in text.split(',') {
            if part.contains('/') {
                p.lsn = p.lsn.max(parse_lsn(part));
            } else {
                p.gtids.merge(&Gtids::parse(part));
            }
        }
        p
    }

    /// Adds `other` (per domain the higher GTID, the higher LSN).
    pub fn merge(&mut self, other: &Position) {
        self.gtids.merge(&other.gtids);
        self.lsn = self.lsn.max(other.lsn);
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.gtids.is_empty() && self.lsn.is_none()
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.gtids)?;
        if let Some(lsn) = self.lsn {
            if !self.gtids.is_empty() {
                f.write_str(",")?;
            }
            f.write_str(&format_lsn(lsn))?;
        }
        Ok(())
    }
}

/// The positions of the writes acknowledged on one dataHost, shared by its connections.
#[derive(Debug, Default)]
pub struct Acked(Mutex<Position>);

impl Acked {
    /// Records a GTID or an LSN a tracked connection read after a write.
    pub fn record(&self, text: &str) {
        let p = Position::parse(text);
        if !p.is_empty() {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).merge(&p);
        }
    }

    /// Everything recorded so far.
    pub fn get(&self) -> Position {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Whether a tracked connection reads the replication position after `sql`: every statement
/// but those that cannot commit data — `SELECT`, `SHOW`, `DESC`/`DESCRIBE`/`EXPLAIN`, `SET`,
/// `USE`, `BEGIN`/`START TRANSACTION`, `ROLLBACK`, `SAVEPOINT`/`RELEASE`, `DO`, `HELP`, and the
/// gateway's `XA START`/`END`/`PREPARE`/`ROLLBACK`. Writes (`... RETURNING` included), DDL
/// (which commits implicitly), `COMMIT`, `XA COMMIT`, and anything not recognised (a
/// statement behind a `/*! ... */` version comment, say) are tracked: reading a position too
/// often costs a row, missing one loses a write at the next failover.
pub fn is_write(sql: &str) -> bool {
    let trimmed = sql.trim_start();
    if trimmed.starts_with("/*!") {
        return true;
    }
    let text = skip_leading_comments(sql);
    match first_word(text).as_str() {
        "XA" => {
            text.len() > 3
                && text[3..]
                    .trim_start()
                    .to_ascii_uppercase()
                    .starts_with("COMMIT")
        }
        "SELECT" | "SHOW" | "DESC" | "DESCRIBE" | "EXPLAIN" | "SET" | "USE" | "BEGIN" | "START"
        | "ROLLBACK" | "SAVEPOINT" | "RELEASE" | "DO" | "HELP" => false,
        _ => true,
    }
}

/// [`is_write`] for a backend that cannot read a position after rows (PostgreSQL): only
/// statements that never return rows — `INSERT`, `REPLACE`, `UPDATE`, `DELETE` without
/// `RETURNING`, `LOAD`, DDL (`CREATE`, `ALTER`, `DROP`, `TRUNCATE`, `RENAME`), `COMMIT`.
pub fn is_rowless_write(sql: &str) -> bool {
    let text = skip_leading_comments(sql);
    matches!(
        first_word(text).as_str(),
        "INSERT"
            | "REPLACE"
            | "UPDATE"
            | "DELETE"
            | "LOAD"
            | "CREATE"
            | "ALTER"
            | "DROP"
            | "TRUNCATE"
            | "RENAME"
            | "COMMIT"
    ) && !crate::sqltext::contains_ignore_ascii_case(text, "RETURNING")
}

/// The first word of `text`, upper-cased (letters only).
fn first_word(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_uppercase()
}

/// `sql` after its leading white space and comments (`/* */`, `-- `, `#`).
fn skip_leading_comments(sql: &str) -> &str {
    let mut s = sql.trim_start();
    loop {
        if let Some(rest) = s.strip_prefix("/*") {
            s = rest.split_once("*/").map_or("", |(_, r)| r).trim_start();
        } else if s.starts_with("-- ") || s.starts_with('#') {
            s = s.split_once('\n').map_or("", |(_, r)| r).trim_start();
        } else {
            return s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gtid_sets_keep_the_highest_sequence_per_domain() {
        let mut g = Gtids::parse("0-1-5");
        g.merge(&Gtids::parse("0-1-3,1-2-9"));
        assert_eq!(g.to_string(), "0-1-5,1-2-9");
        g.merge(&Gtids::parse("0-2-6"));
        assert_eq!(g.to_string(), "0-2-6,1-2-9");
        assert!(Gtids::parse("0-2-7,1-2-9").covers(&g));
        assert!(!Gtids::parse("0-2-7").covers(&g));
        assert!(Gtids::parse("").is_empty());
        assert!(Gtids::parse("garbage,0-x-1").is_empty());
        let acked = Acked::default();
        acked.record("");
        acked.record("0-1-10");
        acked.record("0-1-4");
        assert_eq!(acked.get().to_string(), "0-1-10");
    }

    #[test]
    fn lsns_compare_as_64_bit_positions() {
        assert_eq!(parse_lsn("16/B374D848"), Some(0x16_B374_D848));
        assert_eq!(format_lsn(0x16_B374_D848), "16/B374D848");
        assert!(parse_lsn("0/FFFFFFFF") < parse_lsn("1/0"));
        assert_eq!(parse_lsn("x/1"), None);
        let acked = Acked::default();
        acked.record("0/3000060");
        acked.record("0/2000000");
        assert_eq!(acked.get().to_string(), "0/3000060");
        let mut p = Position::parse("0-1-5,1/0");
        p.merge(&Position::parse("0/FFFF"));
        assert_eq!(p.to_string(), "0-1-5,1/0");
        assert_eq!(Position::parse(&p.to_string()), p);
    }

    #[test]
    fn writes_are_recognised() {
        for w in [
            "INSERT INTO t VALUES (1)",
            "/* c */ update t set a=1",
            "delete from t",
            "COMMIT",
            "XA COMMIT X'01',X'02',1",
            "replace into t values (1)",
            "INSERT INTO t VALUES (1) RETURNING id",
            "TRUNCATE TABLE t",
            "CREATE TABLE t2 (a INT)",
            "/*!40101 INSERT INTO t VALUES (2) */",
            "WITH x AS (SELECT 1) UPDATE t SET a = 2",
        ] {
            assert!(is_write(w), "{w}");
        }
        for r in [
            "SELECT 1",
            "XA END X'01'",
            "ROLLBACK",
            "SET @a=1",
            "START TRANSACTION",
            "show tables",
        ] {
            assert!(!is_write(r), "{r}");
        }
    }
}
