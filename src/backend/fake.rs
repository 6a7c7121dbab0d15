//! A scripted [`BackendConn`] for tests that run without a database (the engine's recording
//! context, the datahost's held connections): every statement it receives is written to a
//! shared log as `label: sql`, in order, and answered as scripted.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;

use super::{
    BackendConn, BackendError, Column, ColumnFlags, ColumnType, OkInfo, Response, Row, Value,
    grants,
};

/// The log several fakes write to, in the order things happened.
pub type Log = Arc<Mutex<Vec<String>>>;

/// What a scripted connection answers to every statement.
#[derive(Clone, Debug)]
pub enum Answer {
    /// An OK with this many affected rows.
    Ok(u64),
    /// A result set: column names and rows of text values.
    Rows(Vec<&'static str>, Vec<Vec<&'static str>>),
    /// The statement fails with this error.
    Fails(BackendError),
}

/// A connection logging `label: sql` for each statement and answering with its [`Answer`];
/// statements starting with one of its refused prefixes fail with 1213 (as a deadlock
/// victim's do) whatever the answer.
pub struct FakeConn {
    label: String,
    address: String,
    answer: Answer,
    refused: Vec<&'static str>,
    logs_close: bool,
    log: Log,
}

impl FakeConn {
    /// A connection to `address` (what [`BackendConn::address`] answers) logging as `label`.
    pub fn new(
        label: impl Into<String>,
        address: impl Into<String>,
        answer: Answer,
        log: Log,
    ) -> Self {
        FakeConn {
            label: label.into(),
            address: address.into(),
            answer,
            refused: Vec::new(),
            logs_close: false,
            log,
        }
    }

    /// The statements starting with one of `prefixes` fail with 1213.
    pub fn refusing(mut self, prefixes: Vec<&'static str>) -> Self {
        self.refused = prefixes;
        self
    }

    /// [`BackendConn::abandon`] is logged as `label: closed`.
    pub fn logging_close(mut self) -> Self {
        self.logs_close = true;
        self
    }
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
        &self.address
    }

    async fn select_database(&mut self, _database: &str) -> Result<(), BackendError> {
        Ok(())
    }

    async fn query<'a>(&'a mut self, sql: &'a str) -> Result<Response<'a>, BackendError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("{}: {sql}", self.label));
        if self.refused.iter().any(|p| sql.starts_with(p)) {
            return Err(BackendError::Server {
                code: 1213,
                state: "40001".to_string(),
                message: format!("{sql} refused"),
            });
        }
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
                            .map(|v| Value::Bytes(v.as_bytes().to_vec()))
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

    fn abandon(&mut self) {
        if self.logs_close {
            self.log
                .lock()
                .unwrap()
                .push(format!("{}: closed", self.label));
        }
    }
}
