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

static ANNOUNCED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Announces MySQL version `number` (server.xml's `fakeMySQLVersion`, e.g. `8.0.33`) instead of
/// 5.7.25 for the rest of the process: [`server_version`] becomes `<number>-manx-<version>`.
/// Mycat replaces the part before the first `-` the same way (SPEC §3.2). Set once, at
/// start-up (a reload does not change it, as in Mycat); later calls are ignored.
pub fn announce(number: Option<&str>) {
    if let Some(n) = number {
        let _ = ANNOUNCED.set(format!("{n}-manx-{}", env!("CARGO_PKG_VERSION")));
    }
}

/// The version string the greeting, `@@version` and `VERSION()` answer: [`SERVER_VERSION`]
/// unless [`announce`] named another number.
pub fn server_version() -> &'static str {
    ANNOUNCED
        .get()
        .map(String::as_str)
        .unwrap_or(SERVER_VERSION)
}
