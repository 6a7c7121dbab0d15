//! Every failure a client can see, as a MySQL error: errno, SQLSTATE, message.

use crate::backend::BackendError;
use crate::datahost::DatahostError;
use crate::engine::EngineError;
use crate::route::{Refusal, RouteError};

/// An error for the client (an ERR packet; the session stays open).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ERROR {code} ({state}): {message}")]
pub struct MysqlError {
    pub code: u16,
    pub state: String,
    pub message: String,
}

impl MysqlError {
    pub fn new(code: u16, state: &str, message: impl Into<String>) -> Self {
        MysqlError {
            code,
            state: state.to_string(),
            message: message.into(),
        }
    }

    /// A backend error, with `context` (the dataNode) in front of anything but the server's own
    /// errors and the gateway's refusals, which pass through with their errno, SQLSTATE and
    /// message.
    pub(super) fn backend(context: String, e: &BackendError) -> Self {
        match e.mysql_error() {
            Some((code, state, message)) => MysqlError::new(code, state, message),
            // 1105 ER_UNKNOWN_ERROR: the backend could not be used (refused, timed out, broke).
            None => MysqlError::new(1105, "HY000", format!("{context}: {e}")),
        }
    }
}

impl From<RouteError> for MysqlError {
    fn from(e: RouteError) -> Self {
        let (code, state) = refusal_code(e.refusal);
        MysqlError::new(code, state, e.message)
    }
}

/// The MySQL errno and SQLSTATE of each kind of the router's refusals (MySQL's
/// `mysqld_error.h` and `sql_state.h`; Mycat's own 3012 and 1495 where Mycat answers them).
pub fn refusal_code(refusal: Refusal) -> (u16, &'static str) {
    match refusal {
        Refusal::Routing => (1064, "42000"),
        Refusal::NotSupported => (1235, "42000"),
        Refusal::DatabaseAccessDenied => (1044, "42000"),
        Refusal::PrivilegeRequired => (1227, "42000"),
        Refusal::DmlPrivilege => (3012, "HY000"),
        Refusal::ReadOnly => (1495, "HY000"),
        Refusal::UnknownDatabase => (1049, "42000"),
        Refusal::NoDatabase => (1046, "3D000"),
        Refusal::NoSuchTable => (1146, "42S02"),
        Refusal::UnknownColumn => (1054, "42S22"),
        Refusal::ValueCount => (1136, "21S01"),
        Refusal::WrongValue => (1231, "42000"),
        Refusal::EmptyQuery => (1065, "42000"),
        Refusal::UnknownExplainFormat => (1791, "HY000"),
        Refusal::MetadataMismatch => (1105, "HY000"),
        Refusal::TooDeep => (1436, "HY000"),
    }
}

impl From<DatahostError> for MysqlError {
    fn from(e: DatahostError) -> Self {
        let context = format!(
            "dataNode {} (dataHost {}, {} {})",
            e.node, e.data_host, e.host, e.address
        );
        MysqlError::backend(context, &e.source)
    }
}

impl From<EngineError> for MysqlError {
    fn from(e: EngineError) -> Self {
        MysqlError::backend(format!("dataNode {}", e.node), &e.source)
    }
}

impl From<&MysqlError> for crate::frontend::wire::tap::ErrPacket {
    fn from(e: &MysqlError) -> Self {
        crate::frontend::wire::tap::ErrPacket {
            code: e.code,
            state: e.state.clone(),
            message: e.message.clone(),
        }
    }
}
