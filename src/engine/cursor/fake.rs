//! A recording [`ExecCtx`] and a scripted [`BackendConn`] for engine tests (as Vitess's
//! `loggingVCursor`): every connection asked for and every statement run is written to one
//! log, in order, as text; what a node answers is scripted per dataNode.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{ExecCtx, Lease, Purpose, Taken};
use crate::backend::BackendConn;
use crate::backend::fake::{FakeConn, Log};
use crate::route::{Plan, Target};

/// A target: `sql` for `node`.
pub fn target(node: &str, sql: &str) -> Target {
    Target {
        node: node.to_string(),
        sql: Arc::from(sql),
    }
}

/// What a scripted dataNode answers to every statement.
pub use crate::backend::fake::Answer;

/// How a connection request for a dataNode goes.
#[derive(Clone)]
pub enum Reach {
    /// A connection to this `host:port`, answering with the node's [`Answer`].
    Server(&'static str),
    /// The request fails: the server cannot be reached (`true`) or refuses (`false`).
    Fails(bool),
}

/// The recording context: per dataNode the servers it hands out in turn (the last one
/// repeats) and the node's answer; the connections the "session" holds (lent to
/// look-ups before any fresh one); the sequences' next values (a sequence not listed
/// cannot be drawn); the shared log.
#[derive(Default)]
pub struct Recorder {
    pub reach: Mutex<HashMap<String, Vec<Reach>>>,
    pub answers: HashMap<String, Answer>,
    pub held: HashMap<String, Box<dyn BackendConn>>,
    pub sequences: HashMap<String, i64>,
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    pub fn node(mut self, node: &str, reach: Vec<Reach>, answer: Answer) -> Self {
        self.reach
            .get_mut()
            .unwrap()
            .insert(node.to_string(), reach);
        self.answers.insert(node.to_string(), answer);
        self
    }

    /// The session holds a connection to `address` for `node` (which answers as scripted).
    pub fn holding(mut self, node: &str, address: &'static str) -> Self {
        let conn = fake_conn(node, address, self.answers[node].clone(), &self.log);
        self.held.insert(node.to_string(), Box::new(conn));
        self
    }

    /// Sequence `name` hands out values from `next` on.
    pub fn sequence(mut self, name: &str, next: i64) -> Self {
        self.sequences.insert(name.to_string(), next);
        self
    }

    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// A fresh connection on `node`, logged.
    fn open(&self, node: &str, instead_of: Option<&str>) -> Result<FakeConn, Failed> {
        let reach = {
            let mut all = self.reach.lock().unwrap();
            let turns = all.get_mut(node).expect("a scripted dataNode");
            if turns.len() > 1 {
                turns.remove(0)
            } else {
                turns[0].clone()
            }
        };
        let line = match instead_of {
            Some(a) => format!("connect {node} instead of {a}"),
            None => format!("connect {node}"),
        };
        self.log.lock().unwrap().push(line);
        match reach {
            Reach::Server(address) => Ok(fake_conn(
                node,
                address,
                self.answers[node].clone(),
                &self.log,
            )),
            Reach::Fails(unreachable) => Err(Failed(
                format!("dataNode {node}: no connection"),
                unreachable,
            )),
        }
    }
}

/// A connection failure of the fake: its text and whether it is [`ExecCtx::unreachable`].
#[derive(Debug)]
pub struct Failed(pub String, pub bool);

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl ExecCtx for Recorder {
    type Error = Failed;

    async fn connect(
        &self,
        node: &str,
        _plan: &Plan,
        instead_of: Option<&str>,
    ) -> Result<Box<dyn BackendConn>, Failed> {
        Ok(Box::new(self.open(node, instead_of)?))
    }

    fn unreachable(e: &Failed) -> bool {
        e.1
    }

    /// The held connection of `node` (logged `held dn1`, whatever the purpose), else a
    /// fresh one.
    async fn session_conn(
        &mut self,
        node: &str,
        _purpose: Purpose<'_>,
    ) -> Result<Lease<'_>, Failed> {
        if self.held.contains_key(node) {
            self.log.lock().unwrap().push(format!("held {node}"));
            let conn = self.held.get_mut(node).expect("checked");
            return Ok(Lease::Held(conn.as_mut()));
        }
        Ok(Lease::Fresh(Box::new(self.open(node, None)?)))
    }

    /// The held connection when `kept` (logged `take dn1 kept`), else a fresh one.
    async fn take_conn(&mut self, node: &str, kept: bool) -> Result<Taken, Failed> {
        if kept && let Some(conn) = self.held.remove(node) {
            self.log.lock().unwrap().push(format!("take {node} kept"));
            return Ok(Taken { conn, kept: true });
        }
        let conn = Box::new(self.open(node, None)?);
        Ok(Taken { conn, kept: false })
    }

    /// The held connections of `targets`' nodes.
    fn pinned_for(&mut self, targets: &[Target]) -> Vec<&mut (dyn BackendConn + 'static)> {
        let mut by_node: HashMap<&str, &mut Box<dyn BackendConn>> =
            self.held.iter_mut().map(|(k, v)| (k.as_str(), v)).collect();
        targets
            .iter()
            .filter_map(|t| by_node.remove(t.node.as_str()).map(|b| b.as_mut()))
            .collect()
    }

    /// Logged `draw NAME count`.
    async fn draw(&mut self, name: &str, count: usize) -> Result<Vec<i64>, Failed> {
        self.log
            .lock()
            .unwrap()
            .push(format!("draw {name} {count}"));
        let Some(next) = self.sequences.get_mut(name) else {
            return Err(Failed(
                format!("mycat sequnce err.can't find definition for sequence :{name}"),
                false,
            ));
        };
        let values = (*next..*next + count as i64).collect();
        *next += count as i64;
        Ok(values)
    }
}

/// A connection of `node` to `address` answering `answer`, logging `node@address: sql`.
fn fake_conn(node: &str, address: &str, answer: Answer, log: &Log) -> FakeConn {
    FakeConn::new(format!("{node}@{address}"), address, answer, log.clone())
}
