//! A million-row single-node SELECT streams through the gateway: its resident memory stays far
//! below the size of the result. The gateway runs as its own process so its memory is measured
//! alone (VmRSS when idle, VmHWM — the peak — after the rows have flowed, from /proc).

mod common;

use std::time::Instant;

use common::{Extra, Fixture, GatewayProcess};
use mysql_async::prelude::Queryable;

const ROWS: u64 = 1_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_row_select_is_streamed_not_buffered() {
    let f = Fixture::start(
        "stream",
        Extra {
            schema_xml: r#"<schema name="BIG" dataNode="dn1"></schema>"#.to_string(),
            users_xml: r#"<user name="big"><property name="password">big</property><property name="schemas">BIG</property></user>"#.to_string(),
            ..Extra::default()
        },
    )
    .await;
    let mut b = f.backend(1).await;
    b.query_drop("CREATE TABLE big (id INT PRIMARY KEY, pad VARCHAR(200)) ENGINE=InnoDB")
        .await
        .unwrap();
    b.query_drop(format!(
        "INSERT INTO big SELECT seq, REPEAT('x', 150) FROM seq_1_to_{ROWS}"
    ))
    .await
    .unwrap();
    drop(b);

    let (gateway, mut c) = GatewayProcess::start(f.dir.path(), "big", "big", "BIG").await;
    let _: Vec<u32> = c.query("SELECT id FROM big LIMIT 10").await.unwrap();
    let idle = gateway.rss_kib();

    let t = Instant::now();
    let mut result = c.query_iter("SELECT id, pad FROM big").await.unwrap();
    let (mut count, mut last) = (0u64, 0u32);
    while let Some(row) = result.next().await.unwrap() {
        let (id, pad): (u32, String) = mysql_async::from_row(row);
        assert_eq!(pad.len(), 150);
        last = id;
        count += 1;
    }
    drop(result);
    let elapsed = t.elapsed();
    // The kernel's high-water mark covers the whole run, so no sample can miss the peak.
    let peak = gateway.peak_kib();
    drop(gateway);
    assert_eq!(count, ROWS);
    assert_eq!(last, ROWS as u32);
    let growth_mib = (peak.saturating_sub(idle)) as f64 / 1024.0;
    eprintln!(
        "streamed {count} rows ({:.0} MiB of row data) in {elapsed:?}; gateway RSS idle {:.1} MiB, peak {:.1} MiB, growth {growth_mib:.1} MiB",
        (ROWS * 155) as f64 / 1048576.0,
        idle as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    assert!(
        growth_mib < 100.0,
        "gateway memory grew by {growth_mib:.1} MiB while streaming"
    );
}

/// A sorted merge of three dataNodes streams too: `ORDER BY` over 3 × 300,000 rows comes out in
/// order with the gateway holding one row per node, not the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_node_order_by_is_merged_as_it_streams() {
    const PER_NODE: u64 = 300_000;
    let f = Fixture::start(
        "mstream",
        Extra {
            schema_xml: r#"<schema name="BIGS"><table name="bigs" dataNode="dn1,dn2,dn3" rule="mod-long" /></schema>"#.to_string(),
            users_xml: r#"<user name="bigs"><property name="password">bigs</property><property name="schemas">BIGS</property></user>"#.to_string(),
            ..Extra::default()
        },
    )
    .await;
    // mod-long: id % 3 picks the node; node n holds ids ≡ n - 1 (mod 3).
    for n in 1..=3u64 {
        let mut b = f.backend(n as usize).await;
        b.query_drop("CREATE TABLE bigs (id INT PRIMARY KEY, pad VARCHAR(200)) ENGINE=InnoDB")
            .await
            .unwrap();
        b.query_drop(format!(
            "INSERT INTO bigs SELECT seq * 3 + {}, REPEAT('y', 150) FROM seq_0_to_{}",
            n - 1,
            PER_NODE - 1
        ))
        .await
        .unwrap();
    }

    let (gateway, mut c) = GatewayProcess::start(f.dir.path(), "bigs", "bigs", "BIGS").await;
    let _: Vec<u32> = c.query("SELECT id FROM bigs LIMIT 10").await.unwrap();
    let idle = gateway.rss_kib();

    let t = Instant::now();
    let mut result = c
        .query_iter("SELECT id, pad FROM bigs ORDER BY id DESC")
        .await
        .unwrap();
    let mut count = 0u64;
    let mut expected = 3 * PER_NODE;
    while let Some(row) = result.next().await.unwrap() {
        let (id, pad): (u64, String) = mysql_async::from_row(row);
        expected -= 1;
        assert_eq!(id, expected, "row {count} out of order");
        assert_eq!(pad.len(), 150);
        count += 1;
    }
    drop(result);
    let elapsed = t.elapsed();
    let peak = gateway.peak_kib();
    drop(gateway);
    assert_eq!(count, 3 * PER_NODE);
    let growth_mib = (peak.saturating_sub(idle)) as f64 / 1024.0;
    eprintln!(
        "merged {count} rows from 3 dataNodes in {elapsed:?}; gateway RSS idle {:.1} MiB, peak {:.1} MiB, growth {growth_mib:.1} MiB",
        idle as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    assert!(
        growth_mib < 100.0,
        "gateway memory grew by {growth_mib:.1} MiB while merging"
    );
}
