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

/// Announces version `number` (server.xml's `fakeMySQLVersion`: a MySQL number such as `8.0.33`,
/// or a whole server version such as MariaDB's greeting `5.5.5-10.11.6-MariaDB-log`) instead of
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

/// The prefix MariaDB (10.0 and later) puts before its version in the handshake greeting only
/// (`5.5.5-10.11.6-MariaDB`): `RPL_VERSION_HACK` in MariaDB's `sql/slave.h`, so that old
/// clients and replicas that read the first number as the major version see 5.5.
/// `VERSION()` and `@@version` answer the version without it.
const MARIADB_GREETING_PREFIX: &str = "5.5.5-";

/// What `VERSION()`, `@@version` and `SHOW VARIABLES LIKE 'version'` answer: [`server_version`]
/// as a MariaDB server answers them, without its greeting's prefix (see [`without_greeting_prefix`]).
pub fn function_version() -> &'static str {
    without_greeting_prefix(server_version())
}

/// `greeting` without MariaDB's greeting prefix `5.5.5-` when a number follows it
/// (`5.5.5-10.11.6-MariaDB-manx-0.1.0` gives `10.11.6-MariaDB-manx-0.1.0`); any other version
/// string unchanged.
pub fn without_greeting_prefix(greeting: &str) -> &str {
    match greeting.strip_prefix(MARIADB_GREETING_PREFIX) {
        Some(rest) if rest.starts_with(|c: char| c.is_ascii_digit()) => rest,
        _ => greeting,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mariadb_greeting_prefix_is_not_part_of_the_function_version() {
        assert_eq!(
            without_greeting_prefix("5.5.5-10.11.6-MariaDB-log-manx-0.1.0"),
            "10.11.6-MariaDB-log-manx-0.1.0"
        );
        assert_eq!(
            without_greeting_prefix("5.5.5-manx-0.1.0"),
            "5.5.5-manx-0.1.0"
        );
        assert_eq!(without_greeting_prefix(SERVER_VERSION), SERVER_VERSION);
    }
}
