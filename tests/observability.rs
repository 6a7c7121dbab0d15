//! Observability (issue 21): a real Prometheus (Debian's) scrapes `/metrics` while the test
//! sends statements, and its HTTP API returns the counts the test sent; `promtool check
//! metrics` accepts the exposition; `pt-query-digest` (Debian's percona-toolkit) reads the slow
//! log and reports the slow statements; the manager's `show @@sql*` columns and numbers
//! through a real client.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::clients::clients;
use common::{Extra, Fixture, opts, server_error, system_xml};
use manx::config::Config;
use manx::datahost::Timeouts;
use manx::frontend::Server;
use mysql_async::consts::ColumnType as T;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row};

/// A gateway for `dir` served in-process with its server, manager and metrics ports: (server
/// port, manager port, metrics port).
async fn gateway(dir: &std::path::Path) -> (u16, u16, u16) {
    let config = Config::load(dir).unwrap_or_else(|e| panic!("{e}"));
    let server = Arc::new(Server::new(config, Timeouts::default()).unwrap());
    let bind = || async { tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap() };
    let (l, m, x) = (bind().await, bind().await, bind().await);
    let ports = (
        l.local_addr().unwrap().port(),
        m.local_addr().unwrap().port(),
        x.local_addr().unwrap().port(),
    );
    tokio::spawn(server.clone().serve_manager(m, std::future::pending()));
    tokio::spawn(server.clone().serve_metrics(x, std::future::pending()));
    tokio::spawn(server.serve(l, std::future::pending()));
    ports
}

/// `GET http://127.0.0.1:port/path` with curl: the body.
fn get(port: u16, path: &str) -> String {
    let out = std::process::Command::new("curl")
        .args([
            "-sf",
            "--max-time",
            "5",
            &format!("http://127.0.0.1:{port}{path}"),
        ])
        .output()
        .expect("run curl");
    assert!(out.status.success(), "GET {path} on {port} failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The value of sample `name` (with its labels as written, e.g. `{kind="single"}`) in a text
/// exposition.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l[series.len()..].trim().parse().ok())
}

/// A Prometheus server scraping `target` every 500 ms (killed on drop).
struct Prometheus {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    fn start(target: u16) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("prometheus.yml");
        std::fs::write(
            &cfg,
            format!(
                "global:\n  scrape_interval: 500ms\n  scrape_timeout: 400ms\nscrape_configs:\n  - job_name: manx\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
            ),
        )
        .unwrap();
        let port = common::closed_port();
        let child = std::process::Command::new(&clients().prometheus)
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start prometheus");
        Prometheus {
            child,
            port,
            _dir: dir,
        }
    }

    /// The value of the instant query `q` once it equals `want` (polled, bounded): the last
    /// value seen otherwise.
    async fn wait_for(&self, q: &str, want: f64) -> Option<f64> {
        let started = Instant::now();
        let mut last = None;
        while started.elapsed() < Duration::from_secs(30) {
            let url = format!(
                "/api/v1/query?query={}",
                q.replace('{', "%7B")
                    .replace('}', "%7D")
                    .replace('"', "%22")
                    .replace(' ', "%20")
                    .replace('=', "%3D")
            );
            let body = std::process::Command::new("curl")
                .args([
                    "-sf",
                    "--max-time",
                    "2",
                    &format!("http://127.0.0.1:{}{url}", self.port),
                ])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
            if let Some(body) = body {
                let v: serde_json::Value = serde_json::from_str(&body).unwrap();
                last = v["data"]["result"][0]["value"][1]
                    .as_str()
                    .and_then(|s| s.parse::<f64>().ok());
                if last == Some(want) {
                    return last;
                }
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        last
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_the_statements_sent_and_promtool_accepts_the_exposition() {
    let f = Fixture::start("obs_prom", Extra::default()).await;
    let (port, mport, xport) = gateway(f.dir.path()).await;
    let prometheus = Prometheus::start(xport);
    let mut c = Conn::new(opts(port, "root", "123456", Some("TESTDB")))
        .await
        .unwrap();
    // What the driver's own start-up statements counted.
    let before = get(xport, "/metrics");
    let base_single = sample(&before, "manx_statements_total{kind=\"single\"}").unwrap_or(0.0);
    let base_dn1 =
        sample(&before, "manx_datanode_statements_total{data_node=\"dn1\"}").unwrap_or(0.0);
    // 30 point selects (one dataNode each), 4 inserts on dn1, 3 statements refused at routing.
    for id in 0..30 {
        let _: Vec<Row> = c
            .query(format!("SELECT * FROM travelrecord WHERE id = {id}"))
            .await
            .unwrap();
    }
    for id in 1..=4 {
        c.query_drop(format!(
            "INSERT INTO travelrecord (id, user_id) VALUES ({id}, 'u')"
        ))
        .await
        .unwrap();
    }
    for _ in 0..3 {
        let (code, _, _) = server_error(c.query_drop("SELECT * FROM nowhere").await.unwrap_err());
        assert_eq!(code, 1064);
    }
    let text = get(xport, "/metrics");
    assert_eq!(
        sample(&text, "manx_statements_total{kind=\"single\"}"),
        Some(base_single + 34.0),
        "{text}"
    );
    assert_eq!(sample(&text, "manx_rows_affected_total"), Some(4.0));
    assert_eq!(
        sample(
            &text,
            "manx_statement_errors_total{kind=\"local\",code=\"1064\"}"
        ),
        Some(3.0)
    );
    assert_eq!(
        sample(
            &text,
            "manx_heartbeat_up{data_host=\"localhost1\",host=\"hostM1\"}"
        ),
        Some(1.0),
        "{text}"
    );
    assert!(!text.contains("travelrecord"), "no SQL text in a label");

    // promtool's linter accepts the exposition.
    let mut lint = std::process::Command::new(&clients().promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    lint.stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = lint.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // The real Prometheus stores what the test sent.
    let want = base_single + 34.0;
    assert_eq!(
        prometheus
            .wait_for("manx_statements_total{kind=\"single\"}", want)
            .await,
        Some(want)
    );
    // ids 0..30 and 1..=4 are all on dn1 (auto-sharding-long: 0-500M).
    let want = base_dn1 + 34.0;
    assert_eq!(
        prometheus
            .wait_for("manx_datanode_statements_total{data_node=\"dn1\"}", want)
            .await,
        Some(want)
    );
    // A manager command shows up as its own kind (after the driver's start-up statements).
    let mut m = Conn::new(opts(mport, "root", "123456", None))
        .await
        .unwrap();
    let base = sample(
        &get(xport, "/metrics"),
        "manx_statements_total{kind=\"manager\"}",
    )
    .unwrap_or(0.0);
    let _: Vec<Row> = m.query("show @@version").await.unwrap();
    assert_eq!(
        prometheus
            .wait_for("manx_statements_total{kind=\"manager\"}", base + 1.0)
            .await,
        Some(base + 1.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pt_query_digest_reads_the_slow_log_and_show_sql_commands_count_what_ran() {
    let f = Fixture::start(
        "obs_slow",
        Extra::system(&[
            ("enableSlowLog", "1"),
            ("slowLogFile", "slow.log"),
            ("sqlSlowTime", "150"),
            ("sqlRecordCount", "5"),
        ]),
    )
    .await;
    let (port, mport, _) = gateway(f.dir.path()).await;
    let mut c = Conn::new(opts(port, "root", "123456", Some("TESTDB")))
        .await
        .unwrap();
    // Forget what the driver's start-up statements counted.
    let mut m = Conn::new(opts(mport, "root", "123456", None))
        .await
        .unwrap();
    m.query_drop("reload @@user_stat").await.unwrap();
    // One row, so that SLEEP runs once per statement (directly on the backend: not counted).
    f.backend(1)
        .await
        .query_drop("INSERT INTO travelrecord (id, user_id) VALUES (7, 's')")
        .await
        .unwrap();
    for _ in 0..2 {
        let _: Vec<Row> = c
            .query("SELECT SLEEP(0.2), id FROM travelrecord WHERE id = 7")
            .await
            .unwrap();
    }
    for id in 0..6 {
        let _: Vec<Row> = c
            .query(format!("SELECT * FROM travelrecord WHERE id = {id}"))
            .await
            .unwrap();
    }

    // pt-query-digest: one class, two queries, at least 0.2 s each.
    let log = f.dir.path().join("slow.log");
    let out = std::process::Command::new(&clients().pt_query_digest)
        .args(["--output", "json", "--limit", "100%"])
        .arg(&log)
        .output()
        .expect("run pt-query-digest");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "pt-query-digest output is not JSON ({e}):\n{}\n--- the log ---\n{}",
            String::from_utf8_lossy(&out.stdout),
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    });
    let classes = report["classes"].as_array().expect("classes");
    assert_eq!(classes.len(), 1, "{report:#}");
    let class = &classes[0];
    assert_eq!(class["query_count"].as_u64(), Some(2), "{class:#}");
    assert!(
        class["fingerprint"]
            .as_str()
            .unwrap()
            .contains("from travelrecord where id = ?"),
        "{class:#}"
    );
    let min = class["metrics"]["Query_time"]["min"]
        .as_str()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap();
    assert!(min >= 0.2, "{min}");

    // The manager's statistics.
    let columns = |rows: &[Row]| -> Vec<(String, T)> {
        rows.first()
            .map(|r| {
                r.columns_ref()
                    .iter()
                    .map(|c| (c.name_str().into_owned(), c.column_type()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let s = |r: &Row, i: usize| r.get::<String, _>(i).unwrap_or_default();
    let slow: Vec<Row> = m.query("show @@sql.slow").await.unwrap();
    assert_eq!(slow.len(), 2);
    assert_eq!(
        columns(&slow),
        [
            ("USER", T::MYSQL_TYPE_VAR_STRING),
            ("DATASOURCE", T::MYSQL_TYPE_VAR_STRING),
            ("START_TIME", T::MYSQL_TYPE_LONGLONG),
            ("EXECUTE_TIME", T::MYSQL_TYPE_LONGLONG),
            ("SQL", T::MYSQL_TYPE_VAR_STRING),
            ("IP", T::MYSQL_TYPE_VAR_STRING),
            ("SCHEMA", T::MYSQL_TYPE_VAR_STRING),
        ]
        .map(|(n, t)| (n.to_string(), t))
    );
    assert_eq!(s(&slow[0], 0), "root");
    assert_eq!(s(&slow[0], 1), "dn1");
    assert!(slow[0].get::<i64, _>(3).unwrap() >= 200);
    assert_eq!(s(&slow[0], 6), "TESTDB");
    let recent: Vec<Row> = m.query("show @@sql").await.unwrap();
    assert_eq!(recent.len(), 5, "sqlRecordCount");
    assert_eq!(s(&recent[4], 4), "SELECT * FROM travelrecord WHERE id = 5");
    let high: Vec<Row> = m.query("show @@sql.high").await.unwrap();
    let point = high
        .iter()
        .find(|r| s(r, 8) == "SELECT * FROM travelrecord WHERE id = ?")
        .expect("the point select's shape");
    assert_eq!(point.get::<i64, _>(2), Some(6), "FREQUENCY");
    let sum: Vec<Row> = m.query("show @@sql.sum").await.unwrap();
    let root = sum.iter().find(|r| s(r, 1) == "root").unwrap();
    assert_eq!(root.get::<i64, _>(2), Some(8), "R: every statement read");
    assert_eq!(root.get::<i64, _>(3), Some(0), "W");
    // TIME_COUNT: < 10 ms, 10-200 ms, 200 ms-1 s, >= 1 s. The six quick statements take
    // under 10 ms on an idle machine and may not on a loaded one: only their sum is certain.
    let buckets: Vec<u64> = s(root, 8)
        .trim_matches(['[', ']'])
        .split(", ")
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(
        (buckets[0] + buckets[1], buckets[2], buckets[3]),
        (6, 2, 0),
        "TIME_COUNT {buckets:?}"
    );
    let tables: Vec<Row> = m.query("show @@sql.sum.table").await.unwrap();
    let t = tables
        .iter()
        .find(|r| s(r, 1) == "TRAVELRECORD")
        .expect("travelrecord counted");
    assert_eq!(t.get::<i64, _>(2), Some(8), "R");
    assert_eq!(t.get::<i64, _>(3), Some(0), "W");
    // reload @@sqlslow raises the threshold; clear @@slow forgets them.
    m.query_drop("reload @@sqlslow=1000").await.unwrap();
    let _: Vec<Row> = c
        .query("SELECT SLEEP(0.2), id FROM travelrecord WHERE id = 7")
        .await
        .unwrap();
    let slow: Vec<Row> = m.query("show @@slow where schema = TESTDB").await.unwrap();
    assert_eq!(slow.len(), 2, "not slow under 1000 ms");
    m.query_drop("clear @@slow where datanode = dn1")
        .await
        .unwrap();
    let slow: Vec<Row> = m.query("show @@sql.slow").await.unwrap();
    assert!(slow.is_empty());
    m.query_drop("reload @@user_stat").await.unwrap();
    let recent: Vec<Row> = m.query("show @@sql").await.unwrap();
    assert!(recent.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_carry_the_connection_span() {
    let f = Fixture::start("obs_json", Extra::system(&[("logFormat", "json")])).await;
    let log = f.dir.path().join("manx.log");
    let (g, mut c) =
        common::GatewayProcess::start_logging(f.dir.path(), "root", "123456", "TESTDB", Some(&log))
            .await;
    let id: Option<u32> = c.query_first("SELECT CONNECTION_ID()").await.unwrap();
    let id = id.unwrap();
    let mut m = Conn::new(opts(g.manager_port, "root", "123456", None))
        .await
        .unwrap();
    m.query_drop(format!("kill @@connection {id}"))
        .await
        .unwrap();
    let started = Instant::now();
    let line = loop {
        let text = std::fs::read_to_string(&log).unwrap();
        if let Some(l) = text.lines().find(|l| l.contains("connection killed")) {
            break l.to_string();
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no line:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let event: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
    assert_eq!(event["level"], "INFO");
    assert_eq!(event["span"]["name"], "conn", "{event}");
    assert_eq!(event["span"]["id"].as_u64(), Some(u64::from(id)), "{event}");
    assert_eq!(event["span"]["user"], "root", "{event}");
    // Every line of the log is JSON.
    for l in std::fs::read_to_string(&log).unwrap().lines() {
        serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("{e}: {l}"));
    }
}

/// `contrib/grafana/manx.json` is a dashboard whose every query names metrics the gateway
/// exposes (checked against a live exposition, so a renamed metric breaks this test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grafana_dashboard_queries_metrics_that_exist() {
    // A dataHost whose heartbeat reads the replica's lag, beating every 200 ms.
    let f = Fixture::start(
        "obs_dash",
        Extra {
            schema_xml: format!(
                r#"<dataNode name="dnr" dataHost="hr" database="{}" />
    <dataHost name="hr" maxCon="5" minCon="1" balance="0" dbType="mysql" dbDriver="native">
        <heartbeat>show slave status</heartbeat>
        <writeHost host="replica" url="127.0.0.1:13307" user="manx" password="manx" />
    </dataHost>"#,
                "mysql"
            ),
            users_xml: system_xml(&[("dataNodeHeartbeatPeriod", "200")]),
            ..Extra::default()
        },
    )
    .await;
    let (port, _, xport) = gateway(f.dir.path()).await;
    let mut c = Conn::new(opts(port, "root", "123456", Some("TESTDB")))
        .await
        .unwrap();
    let _ = c.query_drop("SELECT * FROM nowhere").await;
    let _: Vec<Row> = c
        .query("SELECT * FROM travelrecord WHERE id = 1")
        .await
        .unwrap();
    let started = Instant::now();
    let exposition = loop {
        let text = get(xport, "/metrics");
        if text.contains("manx_replication_lag_seconds{") {
            break text;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no replication lag reported:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Sample names, and the families declared without samples yet (replication lag needs a
    // `show slave status` heartbeat).
    let names: std::collections::HashSet<&str> = exposition
        .lines()
        .filter_map(|l| match l.strip_prefix("# TYPE ") {
            Some(t) => t.split(' ').next(),
            None if l.starts_with('#') => None,
            None => l.split(['{', ' ']).next(),
        })
        .collect();
    let text = std::fs::read_to_string(common::repo().join("contrib/grafana/manx.json")).unwrap();
    let dash: serde_json::Value = serde_json::from_str(&text).unwrap();
    let panels = dash["panels"].as_array().unwrap();
    assert!(panels.len() >= 8);
    for p in panels {
        for t in p["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap();
            let metrics: Vec<&str> = expr
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("manx_"))
                .collect();
            assert!(!metrics.is_empty(), "{expr}");
            for m in metrics {
                assert!(names.contains(m), "{m} (in {expr}) is not exposed");
            }
        }
    }
}
