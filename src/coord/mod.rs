//! Coordination of several manx instances through ZooKeeper (Mycat's cluster mode,
//! OPERATIONS.md §2, DECISIONS.md item 26): who decides a writeHost switch, what the epoch is,
//! which writeHost of every dataHost is active.
//!
//! Znodes, under `/mycat/<clusterId>` (`myid.properties`):
//! * `bindata/dnindex.properties` — Mycat's path: the active writeHost index of every
//!   dataHost, in `dnindex.properties` form, with a comment line `#manx epoch=<n>
//!   leader=<myid>`. Written only by the leader, with a compare-and-set on the znode version in
//!   the same multi-operation that checks the leader's election znode still exists (so a
//!   leader whose session expired cannot write); the epoch grows by one with every write.
//! * `line/<myid>` — Mycat's path: ephemeral, one per live instance.
//! * `manx/election/n_<seq>` — ephemeral sequential, data = myid: the instance with the
//!   lowest sequence number is the leader (the decider) while its session lives.
//! * `manx/health/<myid>` — ephemeral: the instance's [`Report`] (what its heartbeats see
//!   of every writeHost, and the replication position of the writes it acknowledged).
//!
//! This module only talks to ZooKeeper; what is decided, and how instances follow, is
//! `datahost`'s (module `datahost::coordinated`).

pub mod bundle;

use std::collections::BTreeMap;
use std::time::Duration;

use zookeeper_client as zk;

pub use bundle::{Bundle, BundleError};

use crate::config::myid::MyId;

mod session;
pub use session::Session;

/// A coordination failure, with what was being done.
#[derive(Debug, thiserror::Error)]
pub enum CoordError {
    /// ZooKeeper failed (or, for `connect`, did not answer in time).
    #[error("ZooKeeper {what}: {source}")]
    Zk {
        what: String,
        #[source]
        source: zk::Error,
    },
    /// A znode holds something that is not a configuration bundle.
    #[error("ZooKeeper {what}: {source}")]
    Bundle {
        what: String,
        #[source]
        source: BundleError,
    },
}

fn fail(what: impl Into<String>) -> impl FnOnce(zk::Error) -> CoordError {
    let what = what.into();
    move |source| CoordError::Zk { what, source }
}

/// The active writeHost indexes as the cluster agreed on them, with the epoch of the
/// decision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexDoc {
    /// Grows by one with every write of the document by a leader; 0 for a document written by
    /// Mycat or published from a local file.
    pub epoch: u64,
    /// The myid of the instance that wrote it (empty when unknown).
    pub leader: String,
    /// dataHost name → active writeHost index.
    pub indexes: BTreeMap<String, usize>,
}

impl IndexDoc {
    /// The znode's text: `dnindex.properties` as Mycat writes it, plus manx's epoch comment
    /// (Java's `Properties` skips comments, so Mycat reads it unchanged).
    pub fn encode(&self) -> String {
        let mut s = format!(
            "#manx epoch={} leader={}\n#update\n",
            self.epoch, self.leader
        );
        for (name, index) in &self.indexes {
            s.push_str(&format!("{name}={index}\n"));
        }
        s
    }

    /// Reads [`IndexDoc::encode`]'s text, or Mycat's own (epoch 0). Lines that are not
    /// `name=number` are skipped, as in `dnindex.properties`.
    pub fn decode(text: &str) -> IndexDoc {
        let mut doc = IndexDoc::default();
        for line in text.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix("#manx ") {
                for word in rest.split_whitespace() {
                    match word.split_once('=') {
                        Some(("epoch", v)) => doc.epoch = v.parse().unwrap_or(0),
                        Some(("leader", v)) => doc.leader = v.to_string(),
                        _ => {}
                    }
                }
                continue;
            }
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            if let Some((k, v)) = line.split_once(['=', ':'])
                && let Ok(i) = v.trim().parse()
            {
                doc.indexes.insert(k.trim().to_string(), i);
            }
        }
        doc
    }
}

/// What one instance sees of one dataHost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostReport {
    /// The index the instance has active.
    pub active: usize,
    /// Per writeHost (by index), what the instance's heartbeat finds: `W` able to take writes
    /// (alive, not a PostgreSQL standby in recovery), `D` not (marked down, or in recovery),
    /// `?` not known yet (no heartbeat has settled it).
    pub states: String,
    /// The replication position of the last write the instance acknowledged on this dataHost
    /// (MariaDB GTIDs `domain-server-seq[,...]`), empty when none.
    pub position: String,
}

/// One instance's report: its view of every dataHost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// dataHost name → the instance's view.
    pub hosts: BTreeMap<String, HostReport>,
}

impl Report {
    /// One line per dataHost: `<name> active=<i> states=<W|D|?>... position=<gtids>`.
    pub fn encode(&self) -> String {
        let mut s = String::new();
        for (name, h) in &self.hosts {
            s.push_str(&format!(
                "{name} active={} states={} position={}\n",
                h.active, h.states, h.position
            ));
        }
        s
    }

    /// Reads [`Report::encode`]'s text; malformed lines are skipped.
    pub fn decode(text: &str) -> Report {
        let mut report = Report::default();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let Some(name) = words.next() else {
                continue;
            };
            let mut h = HostReport::default();
            for word in words {
                match word.split_once('=') {
                    Some(("active", v)) => h.active = v.parse().unwrap_or(0),
                    Some(("states", v)) => h.states = v.to_string(),
                    Some(("position", v)) => h.position = v.to_string(),
                    _ => {}
                }
            }
            report.hosts.insert(name.to_string(), h);
        }
        report
    }
}

/// The znode paths of one cluster.
#[derive(Debug, Clone)]
pub struct Paths {
    /// `/mycat/<clusterId>`.
    pub base: String,
}

impl Paths {
    pub fn new(cluster_id: &str) -> Paths {
        Paths {
            base: format!("/mycat/{cluster_id}"),
        }
    }
    /// Mycat's dnindex path.
    pub fn dnindex(&self) -> String {
        format!("{}/bindata/dnindex.properties", self.base)
    }
    /// Mycat's live-instance path.
    pub fn line(&self, myid: &str) -> String {
        format!("{}/line/{myid}", self.base)
    }
    pub fn election(&self) -> String {
        format!("{}/manx/election", self.base)
    }
    pub fn health(&self) -> String {
        format!("{}/manx/health", self.base)
    }
    /// Persistent, one per instance that ever reported: the positions of the writes it
    /// acknowledged, which outlive the instance (a crashed instance's acknowledged writes are
    /// still waited for).
    pub fn positions(&self) -> String {
        format!("{}/manx/positions", self.base)
    }
    /// The configuration in force cluster-wide ([`bundle`]).
    pub fn config(&self) -> String {
        format!("{}/manx/config", self.base)
    }
    /// Proposed configurations ([`bundle`]).
    pub fn reload(&self) -> String {
        format!("{}/manx/reload", self.base)
    }
}

/// A proposed configuration and where it stands ([`bundle`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// Its sequence number (from 1): the configuration version it makes when committed.
    pub seq: u64,
    /// Votes by myid: `ok` or `error: <why>`.
    pub votes: BTreeMap<String, String>,
    /// The leader's decision: `commit` or `abort: <why>`.
    pub decision: Option<String>,
    /// When it was proposed (ms since the Unix epoch, ZooKeeper's clock).
    pub created_ms: i64,
}

#[cfg(test)]
mod tests {
    use super::session::sequence_of;
    use super::*;

    #[test]
    fn index_documents_round_trip_and_read_mycat_text() {
        let mut doc = IndexDoc {
            epoch: 7,
            leader: "manx_2".to_string(),
            indexes: BTreeMap::new(),
        };
        doc.indexes.insert("localhost1".to_string(), 1);
        doc.indexes.insert("h2".to_string(), 0);
        assert_eq!(IndexDoc::decode(&doc.encode()), doc);
        let mycat = "#update\n#Wed Jun 14 10:00:00 CST 2017\nlocalhost1=1\njdbchost=0\n";
        let read = IndexDoc::decode(mycat);
        assert_eq!(read.epoch, 0);
        assert_eq!(read.indexes.get("localhost1"), Some(&1));
        assert_eq!(read.indexes.len(), 2);
    }

    #[test]
    fn reports_round_trip() {
        let mut r = Report::default();
        r.hosts.insert(
            "dh1".to_string(),
            HostReport {
                active: 1,
                states: "DW".to_string(),
                position: "0-1-42,1-2-7".to_string(),
            },
        );
        r.hosts.insert(
            "dh2".to_string(),
            HostReport {
                active: 0,
                states: "?".to_string(),
                position: String::new(),
            },
        );
        assert_eq!(Report::decode(&r.encode()), r);
    }

    #[test]
    fn election_order_is_numeric() {
        assert!(sequence_of("n_0000000009") < sequence_of("n_0000000010"));
        assert_eq!(sequence_of("junk"), i64::MAX);
    }
}
