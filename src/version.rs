//! What manx tells MySQL clients it is (a leaf module: it uses nothing of the crate).

/// The server version in the handshake greeting, and what `@@version` / `VERSION()` answer
/// where the gateway answers them (PostgreSQL dataNodes). MySQL 5.7's number: the drivers pick
/// their start-up probe and features by it (Connector/J 5.1 and 8.0 read
/// `@@transaction_isolation` from 5.7.20 on and the query-cache variables before 8.0.3).
pub const SERVER_VERSION: &str = concat!("5.7.25-manx-", env!("CARGO_PKG_VERSION"));

/// `@@version_comment` (what the mysql CLI prints after "Server version:").
pub const VERSION_COMMENT: &str = concat!(
    "manx ",
    env!("CARGO_PKG_VERSION"),
    " (Mycat-compatible MySQL gateway)"
);
