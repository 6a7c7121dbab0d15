//! Prometheus exposition (issue 21 item 2): `GET /metrics` on `metricsAddr` (server.xml, manx)
//! or `--metrics-addr`, off by default, in the Prometheus text format (`prometheus-client`;
//! HTTP/1.1 by `hyper`). Names follow Prometheus' conventions (`manx_` prefix, base units,
//! `_total` counters) and labels are bounded sets (route kind, errno, dataNode, dataHost,
//! server): never SQL text.
//!
//! Kept by the statement recorder ([`crate::stats::Metrics`]):
//! `manx_statements_total{kind}`, `manx_statement_errors_total{kind,code}`,
//! `manx_statement_duration_seconds{kind}` (histogram), `manx_rows_sent_total`,
//! `manx_rows_affected_total`, `manx_slow_statements_total`,
//! `manx_datanode_statements_total{data_node}`, `manx_datanode_statement_errors_total{data_node}`,
//! `manx_datanode_statement_duration_seconds{data_node}` (histogram), `manx_plan_cache_hits_total`.
//!
//! Read at each scrape: `manx_frontend_connections`, `manx_frontend_transactions` (sessions with
//! connections pinned to an open transaction), `manx_backend_connections{data_host,host,state}`
//! (`active`: checked out, `idle`), `manx_backend_max_connections{data_host,host}` (`maxCon`),
//! `manx_heartbeat_up{data_host,host}` (1 when the last heartbeat succeeded),
//! `manx_heartbeat_duration_seconds{data_host,host}` (the last one's round trip),
//! `manx_replication_lag_seconds{data_host,host}` (`Seconds_Behind_Master` of servers whose
//! heartbeat is `show slave status`), `manx_datahost_switches_total` (failovers and `switch
//! @@datasource`), `manx_reloads_total{result}`, `manx_offline` (1 after `offline`),
//! `manx_start_time_seconds`.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use super::Server;

type Labels = Vec<(&'static str, String)>;

/// The exposition of `server`'s metrics now (module documentation).
pub fn exposition(server: &Server) -> String {
    let mut r = Registry::with_prefix("manx");
    let m = &server.stats.metrics;
    r.register(
        "statements",
        "Statements answered, by where they ran",
        m.statements.clone(),
    );
    r.register(
        "statement_errors",
        "Statements answered with an error, by where they ran and errno",
        m.errors.clone(),
    );
    r.register_with_unit(
        "statement_duration",
        "Time from a statement's arrival to its last packet",
        prometheus_client::registry::Unit::Seconds,
        m.duration.clone(),
    );
    r.register(
        "rows_sent",
        "Result-set rows sent to clients",
        m.rows_sent.clone(),
    );
    r.register(
        "rows_affected",
        "Rows changed by statements (their OK packets' affected rows)",
        m.rows_affected.clone(),
    );
    r.register(
        "slow_statements",
        "Statements at least sqlSlowTime ms slow",
        m.slow.clone(),
    );
    r.register(
        "datanode_statements",
        "Statements that ran on a dataNode",
        m.node_statements.clone(),
    );
    r.register(
        "datanode_statement_errors",
        "Statements that ran on a dataNode and ended with an error",
        m.node_errors.clone(),
    );
    r.register_with_unit(
        "datanode_statement_duration",
        "Duration of the statements that ran on a dataNode",
        prometheus_client::registry::Unit::Seconds,
        m.node_duration.clone(),
    );
    r.register(
        "plan_cache_hits",
        "Statements whose plan came from a session's plan cache",
        m.plan_cache_hits.clone(),
    );

    let gauge = |v: i64| {
        let g = Gauge::<i64>::default();
        g.set(v);
        g
    };
    let sessions = server.registry.sessions();
    r.register(
        "frontend_connections",
        "Client connections open on the server port",
        gauge(sessions.len() as i64),
    );
    let in_transaction = sessions
        .iter()
        .filter(|(_, h)| !h.published().nodes.is_empty())
        .count();
    r.register(
        "frontend_transactions",
        "Client sessions with backend connections pinned to an open transaction",
        gauge(in_transaction as i64),
    );
    r.register(
        "offline",
        "1 while the gateway is offline (manager command offline)",
        gauge(i64::from(server.offline.load(Ordering::Relaxed))),
    );
    let started = server
        .started_at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    r.register(
        "start_time_seconds",
        "When the gateway started, seconds since the Unix epoch",
        gauge(started as i64),
    );

    let generation = server.current();
    let connections = Family::<Labels, Gauge>::default();
    let max_connections = Family::<Labels, Gauge>::default();
    let up = Family::<Labels, Gauge>::default();
    let beat = Family::<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    let lag = Family::<Labels, Gauge>::default();
    for s in generation.cluster.source_infos() {
        let server_labels = vec![("data_host", s.data_host.clone()), ("host", s.name.clone())];
        let with_state = |state: &str| {
            let mut l = server_labels.clone();
            l.push(("state", state.to_string()));
            l
        };
        connections
            .get_or_create(&with_state("active"))
            .set(s.active as i64);
        connections
            .get_or_create(&with_state("idle"))
            .set(s.size.saturating_sub(s.active) as i64);
        max_connections
            .get_or_create(&server_labels)
            .set(s.max_con as i64);
        if s.heartbeat {
            up.get_or_create(&server_labels)
                .set(i64::from(s.rs_code == 1));
            if let Some((_, took)) = s.last_beat {
                beat.get_or_create(&server_labels).set(took.as_secs_f64());
            }
        }
        if let Some(l) = s.lag.filter(|_| s.replication_check) {
            lag.get_or_create(&server_labels).set(l);
        }
    }
    r.register(
        "backend_connections",
        "Connections of a server's pool, checked out (active) or not (idle)",
        connections,
    );
    r.register(
        "backend_max_connections",
        "A server's pool size limit (its dataHost's maxCon)",
        max_connections,
    );
    r.register(
        "heartbeat_up",
        "1 when the server's last heartbeat succeeded",
        up,
    );
    r.register_with_unit(
        "heartbeat_duration",
        "Round trip of the server's last heartbeat",
        prometheus_client::registry::Unit::Seconds,
        beat,
    );
    r.register_with_unit(
        "replication_lag",
        "Seconds_Behind_Master of the server's last show slave status heartbeat",
        prometheus_client::registry::Unit::Seconds,
        lag,
    );
    r.register(
        "datahost_switches",
        "Switches of a dataHost's active writeHost (failovers and switch @@datasource)",
        ConstCounter::new(generation.cluster.switches()),
    );
    let (installed, refused) = server.reload_counts();
    // Built at each scrape from the server's own counts (which only grow).
    let reloads = Family::<Vec<(&'static str, &'static str)>, Counter>::default();
    reloads
        .get_or_create(&vec![("result", "ok")])
        .inc_by(installed);
    reloads
        .get_or_create(&vec![("result", "failed")])
        .inc_by(refused);
    r.register(
        "reloads",
        "Configuration reloads and rollbacks, installed (ok) or refused (failed)",
        reloads,
    );
    // Two-phase commit (module `crate::xa`).
    let xa = &server.xa;
    let load = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    let commits = Family::<Vec<(&'static str, &'static str)>, Counter>::default();
    for (kind, counter) in [
        ("two_phase", &xa.counters.two_phase),
        ("one_phase", &xa.counters.one_phase),
        ("rolled_back", &xa.counters.refused),
    ] {
        commits
            .get_or_create(&vec![("kind", kind)])
            .inc_by(load(counter));
    }
    r.register(
        "xa_commits",
        "Ends of XA transactions' commits: in two phases, in one (one written branch), or rolled back (a branch could not prepare, the log could not be written)",
        commits,
    );
    let recovered = Family::<Vec<(&'static str, &'static str)>, Counter>::default();
    for (outcome, counter) in [
        ("committed", &xa.counters.recovered_commits),
        ("rolled_back", &xa.counters.recovered_rollbacks),
    ] {
        recovered
            .get_or_create(&vec![("outcome", outcome)])
            .inc_by(load(counter));
    }
    r.register(
        "xa_recovered_branches",
        "Prepared XA branches resolved by recovery",
        recovered,
    );
    let log = &xa.log().counters;
    r.register(
        "xa_log_appends",
        "Records appended to the XA coordinator log and waited for",
        ConstCounter::new(load(&log.appends)),
    );
    r.register(
        "xa_log_flushes",
        "fdatasync calls of the XA coordinator log (fewer than appends under load: group flush)",
        ConstCounter::new(load(&log.flushes)),
    );
    let in_doubt = Gauge::<i64>::default();
    in_doubt.set(
        xa.rows()
            .iter()
            .filter(|row| row.state == "IN_DOUBT")
            .map(|row| row.nodes.len() as i64)
            .sum(),
    );
    r.register(
        "xa_in_doubt_branches",
        "Prepared branches of this instance the coordinator log has no record of (last recovery pass)",
        in_doubt,
    );
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut out, &r);
    out
}

/// `openmetrics` (what `prometheus-client` writes) in the Prometheus text format 0.0.4, for
/// scrapers that do not ask for OpenMetrics (curl, `promtool check metrics`): a counter's
/// `# HELP` and `# TYPE` name its `_total` samples, and the `# UNIT` and `# EOF` lines go.
pub fn text_format(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len() + counters.len() * 12);
    for line in openmetrics.lines() {
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        let header = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|p| line.strip_prefix(p).map(|rest| (p, rest)));
        match header {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                out.push_str(prefix);
                out.push_str(name);
                if counters.contains(name) {
                    out.push_str("_total");
                }
                out.push(' ');
                out.push_str(tail);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

async fn respond(
    server: Arc<Server>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let response = if request.uri().path() == "/metrics" {
        // OpenMetrics for the scrapers that ask for it (Prometheus does), the classic text
        // format for the others.
        let openmetrics = request
            .headers()
            .get(hyper::header::ACCEPT)
            .and_then(|a| a.to_str().ok())
            .is_some_and(|a| a.contains("application/openmetrics-text"));
        let body = exposition(&server);
        let (content_type, body) = if openmetrics {
            (
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                body,
            )
        } else {
            (
                "text/plain; version=0.0.4; charset=utf-8",
                text_format(&body),
            )
        };
        Response::builder()
            .header(hyper::header::CONTENT_TYPE, content_type)
            .body(Full::new(Bytes::from(body)))
    } else {
        Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Full::new(Bytes::from_static(b"manx serves /metrics\n")))
    };
    Ok(response.unwrap_or_else(|_| Response::new(Full::new(Bytes::new()))))
}

impl Server {
    /// Serves `/metrics` on `listener` until `shutdown` completes, one task per connection.
    pub async fn serve_metrics(
        self: Arc<Self>,
        listener: TcpListener,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        loop {
            let (stream, _) = tokio::select! {
                _ = &mut shutdown => return,
                accepted = super::accept(&listener, "metrics port") => accepted,
            };
            let server = self.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| respond(server.clone(), req));
                let io = hyper_util::rt::TokioIo::new(stream);
                if let Err(e) = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await
                {
                    tracing::debug!(error = %e, "metrics connection ended with an error");
                }
            });
        }
    }
}
