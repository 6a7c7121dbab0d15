//! A recording [`ExecCtx`] and a scripted [`BackendConn`] for engine tests (as Vitess's
//! `loggingVCursor`): every connection asked for and every statement run is written to one
//! log, in order, as text; what a node answers is scripted per dataNode.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;

use super::{ExecCtx, Lease, Purpose, Taken};
use crate::backend::{
    BackendConn, BackendError, Column, ColumnFlags, ColumnType, OkInfo, Response, Row, grants,
};
use crate::route::{Plan, Target};

/// A target: `sql` for `node`.
pub fn target(node: &str, sql: &str) -> Target {
    Target {
        node: node.to_string(),
        sql: Arc::from(sql),
    }
}

/// What a scripted dataNode answers to every statement.
#[derive(Clone)]
pub enum Answer {
    /// An OK with this many affected rows.
    Ok(u64),
    /// A result set: column names and rows of text values.
    Rows(Vec<&'static str>, Vec<Vec<&'static str>>),
    /// The statement fails with this error.
    Fails(BackendError),
}

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
        let conn = FakeConn {
            node: node.to_string(),
            address,
            answer: self.answers[node].clone(),
            log: self.log.clone(),
        };
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
            Reach::Server(address) => Ok(FakeConn {
                node: node.to_string(),
                address,
                answer: self.answers[node].clone(),
                log: self.log.clone(),
            }),
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

/// A connection answering every statement with its node's [`Answer`], logging
/// `node@address: sql`.
pub struct FakeConn {
    node: String,
    address: &'static str,
    answer: Answer,
    log: Arc<Mutex<Vec<String>>>,
}

fn column(name: &str) -> Column {
    Column {
        name: name.to_string(),
        table: String::new(),
        column_type: ColumnType::MYSQL_TYPE_VAR_STRING,
        flags: ColumnFlags::empty(),
        charset: 45,
        length: 255,
        decimals: 0,
    }
}

#[async_trait]
impl BackendConn for FakeConn {
    fn address(&self) -> &str {
        self.address
    }

    async fn select_database(&mut self, _database: &str) -> Result<(), BackendError> {
        Ok(())
    }

    async fn query<'a>(&'a mut self, sql: &'a str) -> Result<Response<'a>, BackendError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("{}@{}: {sql}", self.node, self.address));
        match &self.answer {
            Answer::Ok(n) => Ok(Response::Ok(OkInfo {
                affected_rows: *n,
                ..OkInfo::default()
            })),
            Answer::Rows(names, rows) => {
                let rows: Vec<Result<Row, BackendError>> = rows
                    .iter()
                    .map(|r| {
                        Ok(r.iter()
                            .map(|v| crate::backend::Value::Bytes(v.as_bytes().to_vec()))
                            .collect())
                    })
                    .collect();
                Ok(Response::Rows {
                    columns: names.iter().map(|n| column(n)).collect(),
                    rows: futures::stream::iter(rows).boxed(),
                })
            }
            Answer::Fails(e) => Err(e.clone()),
        }
    }

    async fn describe(&mut self, _sql: &str) -> Result<(usize, Vec<Column>), BackendError> {
        Ok((0, Vec::new()))
    }

    async fn excess_privileges(&mut self) -> Result<Vec<grants::ExcessPrivilege>, BackendError> {
        Ok(Vec::new())
    }
}
