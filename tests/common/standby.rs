//! The world of the failover tests (tests/failover.rs on MariaDB, tests/pg_standby.rs on
//! PostgreSQL): schema `FO` on one dataNode `dnfo` of a dataHost `fo` over throwaway servers,
//! user `fo`/`fo`, a fast heartbeat, and the waits those tests make while a server dies, is
//! promoted or comes back.

use std::path::Path;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;

use super::xml;

/// Heartbeat period of these tests (`dataNodeHeartbeatPeriod`), in milliseconds.
pub const PERIOD_MS: u64 = 300;

/// A config directory: schema `FO` on dataNode `dnfo` (database `database`) of dataHost `fo`
/// of `db_type` (`mysql`, `postgresql`) with the attributes `attrs` and the body `hosts`
/// (heartbeat, writeHosts, readHosts); user `fo`/`fo`; heartbeat every [`PERIOD_MS`].
pub fn config(db_type: &str, database: &str, attrs: &str, hosts: &str) -> tempfile::TempDir {
    xml::config_dir(
        &format!(
            r#"<schema name="FO" dataNode="dnfo"></schema>
    <dataNode name="dnfo" dataHost="fo" database="{database}" />
    <dataHost name="fo" maxCon="10" minCon="1" {attrs} dbType="{db_type}" dbDriver="native">
        {hosts}
    </dataHost>"#
        ),
        &format!(
            "<system><property name=\"dataNodeHeartbeatPeriod\">{PERIOD_MS}</property></system>\n{}",
            xml::user("fo", "fo", "FO")
        ),
    )
}

/// A client of the gateway on `port` as `fo`, schema `FO`.
pub async fn client(port: u16) -> mysql_async::Conn {
    mysql_async::Conn::new(super::opts(port, "fo", "fo", Some("FO")))
        .await
        .expect("connect to the gateway")
}

/// The text of `dnindex.properties` in `dir` (empty when there is none).
pub fn dnindex(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("dnindex.properties")).unwrap_or_default()
}

/// `dnindex.properties` once it contains `line` (waiting up to 5 s: the switch is visible to
/// statements a moment before the file is rewritten), or as it is then.
pub async fn dnindex_with(dir: &Path, line: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = dnindex(dir);
        if text.contains(line) || Instant::now() > deadline {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs the write `next()` gives (a new statement each try) every 10 ms until one succeeds;
/// returns how many failed with a server error meanwhile. Panics when the gateway connection
/// itself fails, or when no write succeeded within 20 s of `since` (`event` names it in the
/// message: "the kill", "the promotion").
pub async fn writes_resume(
    c: &mut mysql_async::Conn,
    since: Instant,
    event: &str,
    mut next: impl FnMut() -> String,
) -> usize {
    let mut failed = 0;
    loop {
        match c.query_drop(next()).await {
            Ok(()) => return failed,
            Err(mysql_async::Error::Server(_)) => failed += 1,
            Err(e) => panic!("the gateway connection itself failed: {e}"),
        }
        assert!(
            since.elapsed() < Duration::from_secs(20),
            "no write succeeded within 20 s of {event}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether a line of the gateway's log in `text` is at level ERROR and contains `needle`.
pub fn logged_error(text: &str, needle: &str) -> bool {
    text.lines()
        .any(|l| l.contains("ERROR") && l.contains(needle))
}
