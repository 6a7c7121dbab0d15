//! The sandbox's standby writeHost with the bundled schema.xml: `scripts/sandbox.sh` runs a
//! primary (13306, writeHost hostM1) and a standby replicating from it (13308, writeHost hostM2,
//! switchType 1). The test kills the primary with SIGKILL under a stream of INSERTs, sees the
//! gateway switch to the standby, then brings the primary back with `scripts/sandbox.sh start`.
//!
//! Its own test binary on purpose: cargo runs test binaries one after another, so no other test
//! finds the shared primary down.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{Extra, Fixture, opts};
use mysql_async::prelude::Queryable;

const STANDBY_PORT: u16 = 13308;

fn sandbox_dir() -> std::path::PathBuf {
    std::env::var_os("MANX_SANDBOX_DIR")
        .map(Into::into)
        .unwrap_or_else(|| common::repo().join("target/sandbox"))
}

async fn standby(db: Option<&str>) -> mysql_async::Conn {
    mysql_async::Conn::new(opts(STANDBY_PORT, "manx", "manx", db))
        .await
        .expect("connect to the sandbox standby")
}

/// Waits until the standby has applied everything the primary logged so far.
async fn standby_caught_up() {
    let mut p = common::primary(None).await;
    let pos: Option<String> = p.query_first("SELECT @@gtid_binlog_pos").await.unwrap();
    let mut s = standby(None).await;
    let waited: Option<i64> = s
        .query_first(format!(
            "SELECT MASTER_GTID_WAIT('{}', 30)",
            pos.unwrap_or_default()
        ))
        .await
        .unwrap();
    assert_eq!(waited, Some(0), "the standby did not catch up within 30 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bundled_config_fails_over_to_the_sandbox_standby_and_the_primary_comes_back() {
    let f = Fixture::start(
        "h5sb",
        Extra {
            users_xml:
                r#"<system><property name="dataNodeHeartbeatPeriod">300</property></system>"#
                    .to_string(),
            ..Extra::default()
        },
    )
    .await;
    standby_caught_up().await;
    let mut c = f.client().await;
    // Acknowledged rows before the kill, all replicated to the standby.
    let mut acked = Vec::new();
    for id in 1..=20i64 {
        c.query_drop(format!(
            "INSERT INTO travelrecord (id, user_id) VALUES ({id}, 'before')"
        ))
        .await
        .unwrap();
        acked.push(id);
    }
    standby_caught_up().await;

    let pidfile = sandbox_dir().join("primary/mariadbd.pid");
    let pid =
        std::fs::read_to_string(&pidfile).unwrap_or_else(|e| panic!("{}: {e}", pidfile.display()));
    let status = Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -9 {pid}");
    let killed = Instant::now();

    // INSERTs keep coming; they fail until the gateway switches, then land on the standby.
    let mut id = 1000i64;
    let switched = loop {
        id += 1;
        match c
            .query_drop(format!(
                "INSERT INTO travelrecord (id, user_id) VALUES ({id}, 'after')"
            ))
            .await
        {
            Ok(()) => {
                acked.push(id);
                break killed.elapsed();
            }
            Err(_) => {
                assert!(
                    killed.elapsed() < Duration::from_secs(20),
                    "writes did not resume within 20 s of the primary's SIGKILL"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
                if c.ping().await.is_err() {
                    c = f.client().await;
                }
            }
        }
    };
    eprintln!("writes resumed {switched:?} after the SIGKILL");
    // The file is rewritten a moment after the switch becomes visible to statements.
    let file = f.dir.path().join("dnindex.properties");
    let deadline = Instant::now() + Duration::from_secs(5);
    let dnindex = loop {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if text.contains("localhost1=1\n") || Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(dnindex.contains("localhost1=1\n"), "{dnindex}");
    let port: Option<u16> = c.query_first("SELECT @@port").await.unwrap();
    assert_eq!(
        port,
        Some(STANDBY_PORT),
        "reads follow the active writeHost"
    );

    // Every acknowledged row is on the standby, once each.
    let mut on_standby: Vec<i64> = Vec::new();
    for db in &f.databases {
        let mut s = standby(Some(db)).await;
        let ids: Vec<i64> = s.query("SELECT id FROM travelrecord").await.unwrap();
        on_standby.extend(ids);
    }
    on_standby.sort();
    acked.sort();
    assert_eq!(on_standby, acked);

    // The primary comes back as it was; the topology (primary -> replica, standby) is intact.
    common::sandbox_start();
    let mut p = common::primary(None).await;
    for db in &f.databases {
        p.query_drop(format!("DROP DATABASE IF EXISTS {db}"))
            .await
            .unwrap();
    }
    drop(p);
    standby_caught_up().await;
    let mut s = standby(None).await;
    let left: Option<i64> = s
        .query_first("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 't\\_h5sb\\_%'")
        .await
        .unwrap();
    assert_eq!(
        left,
        Some(0),
        "the primary's DROP DATABASE reached the standby"
    );
}
