//! [`HeldConns`] against fake connections and a fake cluster, without a database: every
//! statement a connection receives, every connection the pools hand out and every one
//! closed is logged, in order.

use std::sync::Mutex;

use super::*;
use crate::backend::fake::{Answer, FakeConn, Log};

/// A connection named `name` (the node and which of its connections, `dn1#2`) logging
/// `name: sql` for every statement and `name: closed` when abandoned, failing the statements
/// starting with one of `fails` (1213, as a deadlock victim).
fn fake(name: String, fails: Vec<&'static str>, log: &Log) -> Box<dyn BackendConn> {
    Box::new(
        FakeConn::new(name.clone(), name, Answer::Ok(0), log.clone())
            .refusing(fails)
            .logging_close(),
    )
}

/// Pools of the dataNodes named in `nodes`, handing out [`FakeConn`]s numbered per node
/// (`dn1#1`, `dn1#2`...) and logging `acquire dn1 Write`; the statements of `fails` fail
/// on every connection of theirs.
struct FakePools {
    nodes: Vec<&'static str>,
    fails: Vec<&'static str>,
    opened: Mutex<HashMap<String, usize>>,
    log: Log,
}

impl FakePools {
    fn new(nodes: &[&'static str]) -> FakePools {
        FakePools {
            nodes: nodes.to_vec(),
            fails: Vec::new(),
            opened: Mutex::new(HashMap::new()),
            log: Log::default(),
        }
    }

    fn failing(mut self, sql: &'static str) -> FakePools {
        self.fails.push(sql);
        self
    }

    fn conn(&self, node: &str) -> Box<dyn BackendConn> {
        let mut opened = self.opened.lock().unwrap();
        let n = opened.entry(node.to_string()).or_insert(0);
        *n += 1;
        fake(format!("{node}#{n}"), self.fails.clone(), &self.log)
    }

    /// The log since the last call.
    fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

impl Pools for FakePools {
    async fn acquire_for(
        &self,
        node: &str,
        intent: Intent,
    ) -> Result<Box<dyn BackendConn>, DatahostError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("acquire {node} {intent:?}"));
        if !self.nodes.contains(&node) {
            return Err(DatahostError {
                node: node.to_string(),
                data_host: "dh".to_string(),
                host: "w1".to_string(),
                address: "h:1".to_string(),
                source: BackendError::Closed("refused".to_string()),
            });
        }
        Ok(self.conn(node))
    }
}

fn setup() -> Vec<String> {
    vec!["SET @a = 1".to_string()]
}

fn sp(name: &str) -> SavepointName {
    SavepointName::parse(name).unwrap()
}

/// A session with `node` joined to a plain transaction on a fresh connection.
async fn joined(held: &mut HeldConns, pools: &FakePools, node: &str) {
    let taken = held.take(pools, node, true, setup).await.unwrap();
    held.join(node, taken, Opening::Begin).await.unwrap();
}

#[tokio::test]
async fn a_lease_is_the_pinned_connection_else_the_kept_one_else_a_fresh_one_set_up() {
    let pools = FakePools::new(&["dn1", "dn2", "dn3"]);
    let mut held = HeldConns::new(7);
    joined(&mut held, &pools, "dn1").await;
    held.keep("dn2".to_string(), pools.conn("dn2"));
    pools.take_log();
    for node in ["dn1", "dn2", "dn3"] {
        let mut lease = held
            .lease(&pools, node, Some("t"), Fresh::Session, setup)
            .await
            .unwrap();
        lease.conn().query("SELECT 1").await.unwrap();
    }
    let mut lease = held
        .lease(&pools, "dn3", None, Fresh::Metadata, setup)
        .await
        .unwrap();
    lease.conn().query("SELECT 2").await.unwrap();
    drop(lease);
    assert_eq!(
        pools.take_log(),
        [
            "dn1#1: SELECT 1",
            "dn2#1: SELECT 1",
            "acquire dn3 Write",
            "dn3#1: SET @a = 1",
            "dn3#1: SELECT 1",
            "acquire dn3 Read",
            "dn3#2: SELECT 2",
        ]
    );
    let failed = held
        .lease(&pools, "dn9", None, Fresh::Session, setup)
        .await
        .err()
        .unwrap();
    assert!(matches!(failed, HeldError::Datahost(ref e) if e.node == "dn9"));
}

#[tokio::test]
async fn under_table_locks_a_kept_connection_serves_only_the_locked_tables() {
    let pools = FakePools::new(&["dn1"]);
    let mut held = HeldConns::new(7);
    let locks = TableLocks::new(vec!["T1".to_string()], vec!["dn1".to_string()]);
    held.hold_locks(locks, vec![("dn1".to_string(), pools.conn("dn1"))]);
    assert!(held.keeps());
    for table in [Some("t1"), Some("t2"), None] {
        let mut lease = held
            .lease(&pools, "dn1", table, Fresh::Session, Vec::new)
            .await
            .unwrap();
        lease.conn().query("SELECT 1").await.unwrap();
    }
    assert_eq!(
        pools.take_log(),
        [
            "dn1#1: SELECT 1",
            "acquire dn1 Write",
            "dn1#2: SELECT 1",
            "dn1#1: SELECT 1"
        ]
    );
}

#[tokio::test]
async fn a_node_joining_gets_begin_then_every_savepoint_in_order() {
    let pools = FakePools::new(&["dn1", "dn2"]);
    let mut held = HeldConns::new(7);
    joined(&mut held, &pools, "dn1").await;
    held.set_savepoint(sp("a")).await.unwrap();
    held.set_savepoint(sp("b")).await.unwrap();
    // Set again: moves to the end, as MySQL replaces it.
    held.set_savepoint(sp("A")).await.unwrap();
    pools.take_log();
    joined(&mut held, &pools, "dn2").await;
    assert_eq!(
        pools.take_log(),
        [
            "acquire dn2 Write",
            "dn2#1: SET @a = 1",
            "dn2#1: START TRANSACTION",
            "dn2#1: SAVEPOINT `b`",
            "dn2#1: SAVEPOINT `a`",
        ]
    );
    assert!(held.is_pinned("dn2") && held.has_pinned());
    let keys: Vec<&str> = held.savepoints().iter().map(|s| s.key()).collect();
    assert_eq!(keys, ["b", "a"]);
    let conns = held.pinned_for(["dn2", "dn9", "dn1"]);
    let names: Vec<&str> = conns.iter().map(|c| c.address()).collect();
    assert_eq!(names, ["dn2#1", "dn1#1"]);
}

#[tokio::test]
async fn a_join_under_table_locks_or_in_xa_opens_its_own_way() {
    let pools = FakePools::new(&["dn1", "dn2"]);
    let mut held = HeldConns::new(7);
    let taken = held.take(&pools, "dn1", false, Vec::new).await.unwrap();
    held.join("dn1", taken, Opening::Xa("g1")).await.unwrap();
    let locks = TableLocks::new(vec!["T".to_string()], vec!["dn2".to_string()]);
    held.hold_locks(locks, vec![("dn2".to_string(), pools.conn("dn2"))]);
    let taken = held.take(&pools, "dn2", true, Vec::new).await.unwrap();
    assert!(taken.kept);
    held.join("dn2", taken, Opening::Begin).await.unwrap();
    let log = pools.take_log();
    // Branch (gtrid `g1`, bqual: the dataNode), in hex.
    assert_eq!(log[1], "dn1#1: XA START X'6731',X'646e31'");
    assert_eq!(log[2], "dn2#1: SET autocommit = 0");
    // The end gives autocommit back and the connections to the kept set (locks hold).
    held.end_transaction("COMMIT").await.unwrap();
    let mut log = pools.take_log();
    log.sort();
    assert_eq!(
        log,
        [
            "dn1#1: COMMIT",
            "dn1#1: SET autocommit = 1",
            "dn2#1: COMMIT",
            "dn2#1: SET autocommit = 1"
        ]
    );
    assert!(!held.has_pinned() && held.is_kept("dn1") && held.is_kept("dn2"));
    assert_eq!(held.nodes(), ["dn1", "dn2"]);
}

#[tokio::test]
async fn a_failed_start_leaves_a_kept_connection_kept_and_a_failed_replay_lets_it_go() {
    let pools = FakePools::new(&["dn1"]).failing("START TRANSACTION");
    let mut held = HeldConns::new(7);
    held.make_sticky("temporary table");
    held.keep("dn1".to_string(), pools.conn("dn1"));
    let taken = held.take(&pools, "dn1", true, Vec::new).await.unwrap();
    let e = held.join("dn1", taken, Opening::Begin).await.unwrap_err();
    assert!(matches!(e, HeldError::Node { ref node, .. } if node == "dn1"));
    assert!(held.is_kept("dn1") && !held.has_pinned());

    let pools = FakePools::new(&["dn1", "dn2"]).failing("SAVEPOINT `b`");
    let mut held = HeldConns::new(7);
    held.savepoints.push(sp("a"));
    held.savepoints.push(sp("b"));
    let taken = held.take(&pools, "dn2", true, Vec::new).await.unwrap();
    let e = held.join("dn2", taken, Opening::Begin).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "dataNode dn2 joining the transaction: SAVEPOINT b failed: SAVEPOINT `b` refused"
    );
    assert!(!held.has_pinned() && !held.is_kept("dn2"));
}

#[tokio::test]
async fn savepoints_go_to_every_pinned_connection_and_a_partial_failure_interrupts() {
    let pools = FakePools::new(&["dn1", "dn2"]);
    let mut held = HeldConns::new(7);
    joined(&mut held, &pools, "dn1").await;
    held.set_savepoint(sp("a")).await.unwrap();
    held.set_savepoint(sp("b")).await.unwrap();
    held.set_savepoint(sp("c")).await.unwrap();
    let e = held.rollback_to_savepoint(&sp("Zz")).await.unwrap_err();
    assert_eq!(e.to_string(), "SAVEPOINT Zz does not exist");
    held.rollback_to_savepoint(&sp("b")).await.unwrap();
    let keys: Vec<&str> = held.savepoints().iter().map(|s| s.key()).collect();
    assert_eq!(keys, ["a", "b"]);
    held.release_savepoint(&sp("b")).await.unwrap();
    assert_eq!(held.savepoints().len(), 1);
    pools.take_log();

    // dn2 joins on a connection that refuses the next SAVEPOINT.
    held.pinned.insert(
        "dn2".to_string(),
        fake(
            "dn2#1".to_string(),
            vec!["SAVEPOINT `d`"],
            &pools.log.clone(),
        ),
    );
    let e = held.set_savepoint(sp("d")).await.unwrap_err();
    let HeldError::Savepoint { node, reason, .. } = &e else {
        panic!("{e:?}");
    };
    assert_eq!(node, "dn2");
    assert_eq!(
        reason,
        "SAVEPOINT d failed on dataNode dn2 (SAVEPOINT `d` refused); it succeeded on [dn1]"
    );
    assert_eq!(held.interrupted(), Some(reason.as_str()));
    assert_eq!(
        held.savepoints().len(),
        1,
        "a failed savepoint is not recorded"
    );
    // Interrupted: SAVEPOINT and RELEASE are refused without asking any backend;
    // ROLLBACK TO mends it.
    pools.take_log();
    assert!(matches!(
        held.set_savepoint(sp("e")).await,
        Err(HeldError::Interrupted { .. })
    ));
    assert!(matches!(
        held.release_savepoint(&sp("a")).await,
        Err(HeldError::Interrupted { .. })
    ));
    assert!(pools.take_log().is_empty());
    held.rollback_to_savepoint(&sp("a")).await.unwrap();
    assert_eq!(held.interrupted(), None);
}

#[tokio::test]
async fn the_end_of_a_transaction_names_the_nodes_where_it_failed_and_keeps_nothing_pinned() {
    let pools = FakePools::new(&["dn1", "dn2"]);
    let mut held = HeldConns::new(7);
    joined(&mut held, &pools, "dn1").await;
    held.pinned.insert(
        "dn2".to_string(),
        fake("dn2#1".to_string(), vec!["COMMIT"], &pools.log),
    );
    held.set_savepoint(sp("a")).await.unwrap();
    held.interrupt("x".to_string());
    let e = held.end_transaction("COMMIT").await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "COMMIT failed on dataNode dn2 (COMMIT refused); it succeeded on [dn1]"
    );
    assert!(!held.has_pinned() && !held.is_kept("dn1"));
    assert!(held.savepoints().is_empty());
    assert_eq!(
        held.take_interrupted().as_deref(),
        Some("x"),
        "the caller's"
    );
}

#[tokio::test]
async fn a_set_reaches_every_held_connection_and_one_that_refuses_it_is_closed() {
    let pools = FakePools::new(&["dn1", "dn2", "dn3"]);
    let mut held = HeldConns::new(7);
    joined(&mut held, &pools, "dn1").await;
    joined(&mut held, &pools, "dn2").await;
    held.keep("dn3".to_string(), pools.conn("dn3"));
    pools.take_log();
    let set = vec!["SET @b = 2".to_string()];
    held.set_on_held("dn1", &set).await.unwrap();
    let mut log = pools.take_log();
    log.sort();
    assert_eq!(log, ["dn2#1: SET @b = 2", "dn3#1: SET @b = 2"]);
    // Checked on the kept connection of dn3: it is skipped there.
    held.set_on_held("dn3", &set).await.unwrap();
    let mut log = pools.take_log();
    log.sort();
    assert_eq!(log, ["dn1#1: SET @b = 2", "dn2#1: SET @b = 2"]);

    let failing: Box<dyn BackendConn> = fake("dn2#9".to_string(), vec!["SET"], &pools.log);
    held.pinned.insert("dn2".to_string(), failing);
    let (e, pinned) = held.set_on_held("dn1", &set).await.unwrap_err();
    assert!(pinned);
    assert_eq!(
        e.to_string(),
        "dataNode dn2: the session's `SET @b = 2` failed: SET @b = 2 refused"
    );
    assert!(!held.is_pinned("dn2") && held.is_pinned("dn1"));
    assert_eq!(pools.take_log(), ["dn2#9: SET @b = 2", "dn2#9: closed"]);
    assert!(held.forget("dn1"));
    assert!(!held.forget("dn3"));
    assert_eq!(pools.take_log(), ["dn1#1: closed", "dn3#1: closed"]);
}

#[tokio::test]
async fn unlock_tables_closes_a_connection_that_cannot_unlock_and_lets_the_others_go() {
    let pools = FakePools::new(&["dn1", "dn2"]);
    let mut held = HeldConns::new(7);
    let failing: Box<dyn BackendConn> = fake("dn1#1".to_string(), vec!["UNLOCK"], &pools.log);
    let locks = TableLocks::new(
        vec!["T".to_string()],
        vec!["dn1".to_string(), "dn2".to_string()],
    );
    held.hold_locks(
        locks,
        vec![
            ("dn1".to_string(), failing),
            ("dn2".to_string(), pools.conn("dn2")),
        ],
    );
    let e = held.unlock_tables().await.unwrap_err();
    assert!(matches!(e, HeldError::Node { ref node, .. } if node == "dn1"));
    assert_eq!(
        pools.take_log(),
        [
            "dn1#1: UNLOCK TABLES",
            "dn1#1: closed",
            "dn2#1: UNLOCK TABLES"
        ]
    );
    assert!(held.locks().is_none() && !held.keeps() && held.nodes().is_empty());
    // Nothing to do without locks.
    held.unlock_tables().await.unwrap();
    assert!(pools.take_log().is_empty());
}

#[tokio::test]
async fn a_session_that_leaves_rolls_back_and_unlocks() {
    let pools = FakePools::new(&["dn1", "dn2"]);
    let mut held = HeldConns::new(7);
    joined(&mut held, &pools, "dn1").await;
    held.make_sticky("GET_LOCK");
    held.keep("dn2".to_string(), pools.conn("dn2"));
    pools.take_log();
    let leaving = held.leave();
    assert!(!leaving.is_empty());
    leaving.run().await;
    assert_eq!(
        pools.take_log(),
        ["dn1#1: ROLLBACK"],
        "kept ones go to their pools"
    );
    assert!(held.nodes().is_empty());

    joined(&mut held, &pools, "dn1").await;
    let locks = TableLocks::new(vec!["T".to_string()], vec!["dn2".to_string()]);
    held.hold_locks(locks, vec![("dn2".to_string(), pools.conn("dn2"))]);
    pools.take_log();
    held.leave().run().await;
    assert_eq!(
        pools.take_log(),
        [
            "dn1#2: ROLLBACK",
            "dn2#2: UNLOCK TABLES",
            "dn1#2: UNLOCK TABLES"
        ]
    );
    assert!(held.leave().is_empty());
}
