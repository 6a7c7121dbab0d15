//! The manager port (Mycat's 9066, server.xml `managerPort`; SPEC §8, OPERATIONS.md §1).
//!
//! Clients log in as on the server port (any server.xml user, same firewall and passwords) and
//! get classic EOF-framed result sets. A command is dispatched on its first keyword; commands
//! match case-insensitively, with any run of blanks between words and an optional trailing `;`.
//! The commands that change state (`kill`, `switch`, `stop`, `offline`, `online`, `reload`,
//! `rollback`) are for the users server.xml's manx-only `managerUsers` property names (by
//! default every user that is not `readOnly`); others get 1227.
//!
//! What each column means in manx (Mycat's column names and MySQL types, OPERATIONS.md §1):
//!
//! * `show @@datasource [where dataNode = dn]`: one row per (dataNode, physical server) —
//!   DATANODE, NAME (the `host` attribute), TYPE (`mysql`/`postgresql`), HOST, PORT, W/R (`W`
//!   writeHost, `R` readHost), ACTIVE (pool connections checked out now), IDLE (open and not
//!   checked out), SIZE (`maxCon`), EXECUTE (connections handed out for statements since start,
//!   reads and writes), READ_LOAD / WRITE_LOAD (of those, for reads / for writes).
//! * `show @@datanode [where schema = S]`: NAME, DATHOST (`dataHost/database`), INDEX (active
//!   writeHost), TYPE, ACTIVE / IDLE (of the active writeHost's pool), SIZE (`maxCon`), EXECUTE
//!   (connections handed out by the dataHost's servers), TOTAL_TIME / MAX_TIME / MAX_SQL (0, as
//!   in Mycat), RECOVERY_TIME (seconds until a `stop @@heartbeat` ends, else -1).
//! * `show @@heartbeat`: one row per server of a dataHost with a heartbeat statement — NAME
//!   (`host` attribute), TYPE, HOST, PORT, RS_CODE (1 ok, -1 error, -2 timeout, 0 not decided
//!   yet), RETRY (consecutive failures), STATUS (`checking` while the statement runs, else
//!   `idle`), TIMEOUT (`heartbeatTimeout`, ms), EXECUTE_TIME (the last heartbeat's duration in
//!   ms, three times: manx keeps no 1/10/30-minute averages), LAST_ACTIVE_TIME (when the last
//!   heartbeat ended, `yyyy-MM-dd HH:mm:ss` UTC), STOP (`true` while `stop @@heartbeat` holds it).
//! * `show @@connection`: one row per server-port client — PROCESSOR (`Processor0`: manx has one
//!   runtime), ID (connection id), HOST / PORT (client), LOCAL_PORT, USER, SCHEMA, CHARSET
//!   (server.xml `charset`), NET_IN / NET_OUT (0: not counted), ALIVE_TIME(S), RECV_BUFFER /
//!   SEND_QUEUE (0), txlevel (empty: the isolation level is the backends'), autocommit.
//! * `show @@backend`: the 17 columns, no rows: manx's pools do not expose their connections one
//!   by one (`show @@datasource` has the counts).
//! * `show @@session`: sessions holding backend connections (pinned to an open transaction, or
//!   kept for session state such as temporary tables and named locks) — SESSION (connection
//!   id), DN_COUNT, DN_LIST (dataNodes, comma-separated).
//! * `show @@processor`: one row per tokio worker thread (`Processor<i>`); the network and
//!   buffer counters manx does not keep are 0.
//! * `show @@threadpool`: one row, the tokio runtime — POOL_SIZE (workers), ACTIVE_COUNT (tasks
//!   alive), TASK_QUEUE_SIZE (global queue depth), COMPLETED_TASK / TOTAL_TASK (0: not counted).
//! * `show @@server`: UPTIME (`Nd Nh Nm Ns`), USED_MEMORY / TOTAL_MEMORY (the process's resident
//!   memory, bytes), MAX_MEMORY (the machine's memory), RELOAD_TIME (the last reload, else the
//!   start-up, ms since the epoch, as Mycat), ROLLBACK_TIME (the last `rollback @@config`, -1
//!   before any), CHARSET, STATUS (`ON`, `OFF` while offline).
//!
//! `reload @@config_all`, `reload @@config`, `reload @@user` and `rollback @@config` are module
//! [`super::reload`]'s; the SQL statistics commands (`show @@sql*`, `show @@slow`, `clear
//! @@slow`, `reload @@sqlslow|sqlstat|user_stat`) are module `sqlstat`'s.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use opensrv_mysql::ColumnType;

use super::Server;
use super::error::MysqlError;
use super::reload::Scope;

mod sqlstat;

const TEXT: ColumnType = ColumnType::MYSQL_TYPE_VAR_STRING;
const LONG: ColumnType = ColumnType::MYSQL_TYPE_LONG;
const LONGLONG: ColumnType = ColumnType::MYSQL_TYPE_LONGLONG;
const DOUBLE: ColumnType = ColumnType::MYSQL_TYPE_DOUBLE;
const TINY: ColumnType = ColumnType::MYSQL_TYPE_TINY;

/// A manager command's answer.
#[derive(Debug)]
pub enum Answer {
    Rows {
        columns: Vec<(&'static str, ColumnType)>,
        rows: Vec<Vec<Option<String>>>,
    },
    /// One row of text columns with labels made at run time.
    Labelled {
        columns: Vec<String>,
        row: Vec<Option<String>>,
    },
    Ok {
        affected: u64,
        message: String,
    },
    Error(MysqlError),
}

/// MySQL's 1053 `The server has been shutdown` (08S01): the answer to load-balancer probes
/// while the gateway is offline, and to logins then.
pub fn shut_down() -> MysqlError {
    MysqlError::new(1053, "08S01", "The server has been shutdown")
}

/// `sql` lower-cased, blanks collapsed to one space, trimmed, one trailing `;` removed.
fn normalize(sql: &str) -> String {
    let sql = sql.trim();
    let sql = sql.strip_suffix(';').unwrap_or(sql);
    sql.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase()
}

/// Whether `sql` (on the server port) is one of the statements load balancers probe with,
/// which answer 1053 while the gateway is offline (OPERATIONS.md §1): `select user()`,
/// `select connection_id()`, or a dataHost's heartbeat statement.
pub fn is_probe(server: &Server, sql: &str) -> bool {
    let sql = normalize(sql);
    sql == "select user()"
        || sql == "select connection_id()"
        || server
            .current()
            .config
            .data_hosts
            .values()
            .any(|h| !h.heartbeat.is_empty() && normalize(&h.heartbeat) == sql)
}

fn error(code: u16, message: impl Into<String>) -> Answer {
    Answer::Error(MysqlError::new(code, "HY000", message))
}

fn unsupported(sql: &str) -> Answer {
    error(
        1003,
        format!(
            "Unsupported statement: {}; `show @@help` lists the manager commands manx answers",
            sql.trim()
        ),
    )
}

fn ok(affected: u64, message: &str) -> Answer {
    Answer::Ok {
        affected,
        message: message.to_string(),
    }
}

fn text(s: impl ToString) -> Option<String> {
    Some(s.to_string())
}

/// Answers manager command `sql` of `user`.
pub async fn answer(server: &Arc<Server>, user: &str, sql: &str) -> Answer {
    let norm = normalize(sql);
    let verb = norm.split([' ', '@']).next().unwrap_or("");
    let mutating = matches!(
        verb,
        "kill" | "switch" | "stop" | "offline" | "online" | "reload" | "rollback" | "clear"
    );
    if mutating {
        let allowed = server
            .current()
            .config
            .users
            .get(user)
            .is_some_and(|u| server.current().config.system.may_manage(u));
        if !allowed {
            return Answer::Error(MysqlError::new(
                1227,
                "42000",
                format!(
                    "Access denied; user '{user}' may not run '{verb}' on the manager port (server.xml's managerUsers names the users that may; without it, the users that are not readOnly)"
                ),
            ));
        }
    }
    match verb {
        "show" => show(server, &norm, sql),
        "select" => select(&norm, sql),
        "set" => ok(0, ""),
        "kill" => kill(server, &norm).await,
        // Not while a reload builds its dataHosts from the running ones' state (a switch
        // made meanwhile would be lost with the dataHost it was made on).
        "switch" => {
            let _one = server.reloads.hold().await;
            switch(server, &norm, sql).await
        }
        "stop" => {
            let _one = server.reloads.hold().await;
            stop(server, &norm, sql)
        }
        "offline" if norm == "offline" => {
            server.offline.store(true, Ordering::SeqCst);
            tracing::warn!(
                user,
                "offline: load-balancer probes now answer 1053, new logins are refused"
            );
            ok(1, "")
        }
        "online" if norm == "online" => {
            server.offline.store(false, Ordering::SeqCst);
            tracing::warn!(user, "online");
            ok(1, "")
        }
        "clear" => sqlstat::clear(server, sql),
        "reload" | "rollback" => {
            if let Some(answer) = sqlstat::reload(server, &norm) {
                return answer;
            }
            let done = match norm.as_str() {
                "reload @@config_all" => server.reload(Scope::All).await,
                "reload @@config" => server.reload(Scope::Config).await,
                "reload @@user" => server.reload(Scope::User).await,
                "rollback @@config" => server.rollback().await,
                "reload @@route" => return error(1003, "Unsupported statement"),
                _ => return unsupported(sql),
            };
            match done {
                Ok(message) => {
                    tracing::info!(user, command = %norm, "{message}");
                    ok(1, message)
                }
                Err(e) => Answer::Error(e),
            }
        }
        "file" => error(
            1003,
            "file @@... is refused: manx does not read or replace its configuration files over the network",
        ),
        "zk" => error(
            1003,
            "zk ... is refused: in cluster mode, publish a configuration with `manx zk publish` (show @@cluster shows the version in force)",
        ),
        _ => unsupported(sql),
    }
}

/// `select @@a[, @@b...] [limit 1]`: the system variables drivers ask for on connect (SPEC
/// §8.2: `@@version_comment`, `@@session.auto_increment_increment`, `@@session.tx_read_only`;
/// also `@@max_allowed_packet` and `@@wait_timeout`, which mysql_async asks). Each column is
/// labelled as written.
fn select(norm: &str, sql: &str) -> Answer {
    let Some(list) = norm.strip_prefix("select ") else {
        return unsupported(sql);
    };
    let list = list.strip_suffix(" limit 1").unwrap_or(list);
    // Labels as the client wrote them.
    let original = sql.trim().trim_end_matches(';').trim();
    let original = original.get(7..).unwrap_or("").trim();
    let lower = original.to_ascii_lowercase();
    let original = match lower.rfind(" limit ") {
        Some(at) => &original[..at],
        None => original,
    };
    let labels: Vec<&str> = original.split(',').map(str::trim).collect();
    let mut columns = Vec::new();
    let mut row = Vec::new();
    for (i, var) in list.split(',').map(str::trim).enumerate() {
        let name = var
            .strip_prefix("@@session.")
            .or_else(|| var.strip_prefix("@@global."))
            .or_else(|| var.strip_prefix("@@"));
        let value = match name {
            Some("version_comment") => crate::version::VERSION_COMMENT.into(),
            Some("auto_increment_increment") => "1".into(),
            Some("tx_read_only" | "transaction_read_only") => "0".into(),
            Some("tx_isolation" | "transaction_isolation") => "REPEATABLE-READ".into(),
            Some("max_allowed_packet") => "16777216".into(),
            Some("wait_timeout" | "interactive_timeout") => "28800".into(),
            Some("character_set_client" | "character_set_connection" | "character_set_results") => {
                "utf8".into()
            }
            _ => return unsupported(sql),
        };
        columns.push(labels.get(i).copied().unwrap_or(var).to_string());
        row.push(Some(value));
    }
    Answer::Labelled { columns, row }
}

/// The manager commands manx answers, in Mycat's `show @@help` order.
const HELP: &[(&str, &str)] = &[
    ("show @@time.current", "Report current timestamp"),
    ("show @@time.startup", "Report startup timestamp"),
    ("show @@version", "Report server version"),
    ("show @@server", "Report server status"),
    ("show @@threadpool", "Report thread pool status"),
    ("show @@database", "Report logical schemas"),
    ("show @@datanode", "Report dataNodes"),
    (
        "show @@datanode where schema = ?",
        "Report dataNodes of a schema",
    ),
    ("show @@datasource", "Report dataSources"),
    (
        "show @@datasource where dataNode = ?",
        "Report dataSources of a dataNode",
    ),
    (
        "show @@datasource.synstatus",
        "Report replication state of dataSources",
    ),
    ("show @@processor", "Report processor status"),
    ("show @@connection", "Report client connections"),
    ("show @@backend", "Report backend connections"),
    (
        "show @@session",
        "Report sessions holding backend connections",
    ),
    ("show @@heartbeat", "Report heartbeat status"),
    ("show @@sysparam", "Report system parameters"),
    ("show @@white", "Report firewall whitehost entries"),
    (
        "switch @@datasource name:index",
        "Switch the active writeHost of dataHosts",
    ),
    ("kill @@connection id1,id2,...", "Kill client connections"),
    (
        "show @@xa_session",
        "Report XA transactions and in-doubt branches",
    ),
    (
        "show @@cluster",
        "Report ZooKeeper cluster mode: leader, epoch, acknowledged positions",
    ),
    (
        "kill @@xa_session id1,id2,...",
        "Kill client connections of ACTIVE XA transactions",
    ),
    (
        "stop @@heartbeat name:time",
        "Pause the active writeHost's heartbeat of dataHosts (seconds)",
    ),
    ("reload @@config", "Reload basic config from file"),
    ("reload @@config_all", "Reload all config from file"),
    ("reload @@user", "Reload user config from file"),
    ("rollback @@config", "Rollback all config from memory"),
    ("show @@sql", "Report SQL list"),
    ("show @@sql.high", "Report Hight Frequency SQL"),
    ("show @@sql.slow", "Report slow SQL"),
    ("show @@sql.resultset", "Report BIG RESULTSET SQL"),
    ("show @@sql.sum", "Report  User RW Stat "),
    ("show @@slow where schema = ?", "Report schema slow sql"),
    ("show @@slow where datanode = ?", "Report datanode slow sql"),
    ("clear @@slow where schema = ?", "Clear slow sql by schema"),
    (
        "clear @@slow where datanode = ?",
        "Clear slow sql by datanode",
    ),
    ("reload @@sqlslow=", "Set Slow SQL Time(ms)"),
    (
        "reload @@user_stat",
        "Reset show @@sql  @@sql.sum @@sql.slow",
    ),
    ("reload @@sqlstat=open", "Open real-time sql stat analyzer"),
    (
        "reload @@sqlstat=close",
        "Close real-time sql stat analyzer",
    ),
    ("offline", "Change the server status to OFF"),
    ("online", "Change the server status to ON"),
];

fn show(server: &Arc<Server>, norm: &str, sql: &str) -> Answer {
    let what = norm.strip_prefix("show ").unwrap_or("");
    let (what, filter) = match what.split_once(" where ") {
        Some((w, f)) => (w.trim(), Some(f.trim())),
        None => (what, None),
    };
    let now_ms = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    match (what, filter) {
        ("@@help", None) => Answer::Rows {
            columns: vec![("STATEMENT", TEXT), ("DESCRIPTION", TEXT)],
            rows: HELP.iter().map(|(s, d)| vec![text(s), text(d)]).collect(),
        },
        ("@@version", None) => Answer::Rows {
            columns: vec![("VERSION", TEXT)],
            rows: vec![vec![text(crate::version::server_version())]],
        },
        ("@@time.current", None) => Answer::Rows {
            columns: vec![("TIMESTAMP", LONGLONG)],
            rows: vec![vec![text(now_ms(SystemTime::now()))]],
        },
        ("@@time.startup", None) => Answer::Rows {
            columns: vec![("TIMESTAMP", LONGLONG)],
            rows: vec![vec![text(now_ms(server.started_at))]],
        },
        ("@@server", None) => server_row(server),
        ("@@database", None) => Answer::Rows {
            columns: vec![("DATABASE", TEXT)],
            rows: server
                .current()
                .config
                .schemas
                .keys()
                .map(|s| vec![text(s)])
                .collect(),
        },
        ("@@datanode", _) => {
            let schema_nodes: Option<Vec<String>> = match where_value(sql, "schema") {
                Ok(None) => None,
                Err(()) => return unsupported(sql),
                Ok(Some(s)) if server.current().config.schemas.contains_key(&s) => {
                    Some(schema_nodes(server, &s))
                }
                Ok(Some(s)) => return error(1003, format!("Unknown schema {s}")),
            };
            datanodes(server, schema_nodes.as_deref())
        }
        ("@@datasource", _) => match where_value(sql, "datanode") {
            Ok(None) => datasources(server, None),
            Err(()) => unsupported(sql),
            Ok(Some(dn)) => datasources(server, Some(&dn)),
        },
        ("@@datasource.synstatus", None) => synstatus(server),
        ("@@heartbeat", None) => heartbeat(server),
        ("@@connection", None) => connections(server),
        ("@@xa_session", None) => xa_sessions(server),
        ("@@cluster", None) => cluster(server),
        ("@@backend", None) => Answer::Rows {
            columns: vec![
                ("processor", TEXT),
                ("id", LONG),
                ("mysqlId", LONG),
                ("host", TEXT),
                ("port", LONG),
                ("l_port", LONG),
                ("net_in", LONGLONG),
                ("net_out", LONGLONG),
                ("life", LONGLONG),
                ("closed", TEXT),
                ("borrowed", TEXT),
                ("SEND_QUEUE", LONG),
                ("schema", TEXT),
                ("charset", TEXT),
                ("txlevel", TEXT),
                ("autocommit", TEXT),
                ("tx_readonly", TEXT),
            ],
            rows: Vec::new(),
        },
        ("@@session", None) => Answer::Rows {
            columns: vec![("SESSION", TEXT), ("DN_COUNT", TEXT), ("DN_LIST", TEXT)],
            rows: server
                .registry
                .sessions()
                .into_iter()
                .filter_map(|(id, h)| {
                    let p = h.published();
                    (!p.nodes.is_empty())
                        .then(|| vec![text(id), text(p.nodes.len()), text(p.nodes.join(","))])
                })
                .collect(),
        },
        ("@@processor", None) => {
            let workers =
                tokio::runtime::Handle::try_current().map_or(1, |h| h.metrics().num_workers());
            Answer::Rows {
                columns: vec![
                    ("NAME", TEXT),
                    ("NET_IN", LONGLONG),
                    ("NET_OUT", LONGLONG),
                    ("REACT_COUNT", LONGLONG),
                    ("R_QUEUE", LONG),
                    ("W_QUEUE", LONG),
                    ("FREE_BUFFER", LONGLONG),
                    ("TOTAL_BUFFER", LONGLONG),
                    ("BU_PERCENT", TINY),
                    ("BU_WARNS", LONG),
                    ("FC_COUNT", LONG),
                    ("BC_COUNT", LONG),
                ],
                rows: (0..workers)
                    .map(|i| {
                        let mut row = vec![text(format!("Processor{i}"))];
                        row.extend((0..11).map(|_| text(0)));
                        row
                    })
                    .collect(),
            }
        }
        ("@@threadpool", None) => {
            let (workers, alive, queue) =
                tokio::runtime::Handle::try_current().map_or((0, 0, 0), |h| {
                    let m = h.metrics();
                    (m.num_workers(), m.num_alive_tasks(), m.global_queue_depth())
                });
            Answer::Rows {
                columns: vec![
                    ("NAME", TEXT),
                    ("POOL_SIZE", LONG),
                    ("ACTIVE_COUNT", LONG),
                    ("TASK_QUEUE_SIZE", LONG),
                    ("COMPLETED_TASK", LONGLONG),
                    ("TOTAL_TASK", LONGLONG),
                ],
                rows: vec![vec![
                    text("tokio-workers"),
                    text(workers),
                    text(alive),
                    text(queue),
                    text(0),
                    text(0),
                ]],
            }
        }
        ("@@sysparam", None) => sysparam(server),
        ("@@white", None) => Answer::Rows {
            columns: vec![("IP", TEXT), ("USER", TEXT)],
            rows: server
                .current()
                .config
                .system
                .white_hosts
                .iter()
                .map(|w| vec![text(&w.host), text(w.users.join(","))])
                .collect(),
        },
        (w, _) => match sqlstat::show(server, w, sql) {
            Some(answer) => answer,
            None => unsupported(sql),
        },
    }
}

/// The value of `where NAME = value` in `sql` as written (names are case-sensitive; quotes
/// removed); `Ok(None)` without a `where`.
///
/// Errors: a `where` on another column, or without `=`.
fn where_value(sql: &str, name: &str) -> Result<Option<String>, ()> {
    let lower = sql.to_ascii_lowercase();
    let Some(at) = lower.find(" where ").or_else(|| lower.find("\twhere ")) else {
        return Ok(None);
    };
    let rest = &sql[at + " where ".len()..];
    let (key, value) = rest.split_once('=').ok_or(())?;
    if !key.trim().eq_ignore_ascii_case(name) {
        return Err(());
    }
    let value = value.trim().trim_end_matches(';').trim();
    Ok(Some(
        value
            .trim_matches(|c| c == '\'' || c == '"' || c == '`')
            .to_string(),
    ))
}

/// The dataNodes schema `s` uses (its tables' and its default dataNode).
fn schema_nodes(server: &Server, s: &str) -> Vec<String> {
    let generation = server.current();
    let Some(schema) = generation.config.schemas.get(s) else {
        return Vec::new();
    };
    let mut nodes: Vec<String> = schema
        .data_node
        .iter()
        .cloned()
        .chain(
            schema
                .tables
                .values()
                .flat_map(|t| t.data_nodes.iter().cloned()),
        )
        .collect();
    nodes.sort();
    nodes.dedup();
    nodes
}

fn server_row(server: &Server) -> Answer {
    let up = server.started_at.elapsed().map_or(0, |d| d.as_secs());
    let uptime = format!(
        "{}d {}h {}m {}s",
        up / 86_400,
        up / 3_600 % 24,
        up / 60 % 60,
        up % 60
    );
    let rss = resident_bytes();
    let total = machine_bytes();
    let started = server
        .started_at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let reloaded = match server.reloads.reload_time.load(Ordering::Relaxed) {
        -1 => started,
        t => t,
    };
    let status = if server.offline.load(Ordering::Relaxed) {
        "OFF"
    } else {
        "ON"
    };
    Answer::Rows {
        columns: vec![
            ("UPTIME", TEXT),
            ("USED_MEMORY", LONGLONG),
            ("TOTAL_MEMORY", LONGLONG),
            ("MAX_MEMORY", LONGLONG),
            ("RELOAD_TIME", LONGLONG),
            ("ROLLBACK_TIME", LONGLONG),
            ("CHARSET", TEXT),
            ("STATUS", TEXT),
        ],
        rows: vec![vec![
            text(uptime),
            text(rss),
            text(rss),
            text(total),
            text(reloaded),
            text(server.reloads.rollback_time.load(Ordering::Relaxed)),
            text(&server.current().config.system.charset),
            text(status),
        ]],
    }
}

/// The process's resident memory in bytes (Linux `/proc/self/statm`; 0 elsewhere).
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// The machine's memory in bytes (Linux `/proc/meminfo`; 0 elsewhere).
fn machine_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kb| kb * 1024)
}

fn datanodes(server: &Server, only: Option<&[String]>) -> Answer {
    let rows = server
        .current()
        .cluster
        .node_infos()
        .into_iter()
        .filter(|n| only.is_none_or(|o| o.contains(&n.name)))
        .map(|n| {
            vec![
                text(&n.name),
                text(format!("{}/{}", n.data_host, n.database)),
                text(n.index),
                text(n.db_type),
                text(n.active),
                text(n.size.saturating_sub(n.active)),
                text(n.max_con),
                text(n.executed),
                text("0"),
                text("0"),
                text(0),
                text(n.recovery_s),
            ]
        })
        .collect();
    Answer::Rows {
        columns: vec![
            ("NAME", TEXT),
            ("DATHOST", TEXT),
            ("INDEX", LONG),
            ("TYPE", TEXT),
            ("ACTIVE", LONG),
            ("IDLE", LONG),
            ("SIZE", LONG),
            ("EXECUTE", LONGLONG),
            ("TOTAL_TIME", DOUBLE),
            ("MAX_TIME", DOUBLE),
            ("MAX_SQL", LONGLONG),
            ("RECOVERY_TIME", LONGLONG),
        ],
        rows,
    }
}

fn datasources(server: &Server, only: Option<&str>) -> Answer {
    let nodes: Vec<String> = match only {
        Some(dn) => vec![dn.to_string()],
        None => server
            .current()
            .cluster
            .node_names()
            .map(String::from)
            .collect(),
    };
    let mut rows = Vec::new();
    for node in &nodes {
        let Some(sources) = server.current().cluster.node_sources(node) else {
            continue;
        };
        for s in sources {
            rows.push(vec![
                text(node),
                text(&s.name),
                text(s.db_type),
                text(&s.host),
                text(s.port),
                text(if s.write { "W" } else { "R" }),
                text(s.active),
                text(s.size.saturating_sub(s.active)),
                text(s.max_con),
                text(s.reads + s.writes),
                text(s.reads),
                text(s.writes),
            ]);
        }
    }
    Answer::Rows {
        columns: vec![
            ("DATANODE", TEXT),
            ("NAME", TEXT),
            ("TYPE", TEXT),
            ("HOST", TEXT),
            ("PORT", LONG),
            ("W/R", TEXT),
            ("ACTIVE", LONG),
            ("IDLE", LONG),
            ("SIZE", LONG),
            ("EXECUTE", LONGLONG),
            ("READ_LOAD", LONG),
            ("WRITE_LOAD", LONG),
        ],
        rows,
    }
}

/// `yyyy-MM-dd HH:mm:ss` (UTC) of `t`.
fn datetime(t: SystemTime) -> String {
    crate::stats::utc(t).0
}

fn heartbeat(server: &Server) -> Answer {
    let timeout = server.current().cluster.heartbeat_timeout_ms();
    let rows = server
        .current()
        .cluster
        .source_infos()
        .into_iter()
        .filter(|s| s.heartbeat)
        .map(|s| {
            let (last, took) = match s.last_beat {
                Some((at, took)) => (Some(datetime(at)), took.as_millis()),
                None => (None, 0),
            };
            vec![
                text(&s.name),
                text(s.db_type),
                text(&s.host),
                text(s.port),
                text(s.rs_code),
                text(s.retry),
                text(if s.checking { "checking" } else { "idle" }),
                text(timeout),
                text(format!("{took},{took},{took}")),
                last,
                text(s.stopped),
            ]
        })
        .collect();
    Answer::Rows {
        columns: vec![
            ("NAME", TEXT),
            ("TYPE", TEXT),
            ("HOST", TEXT),
            ("PORT", LONG),
            ("RS_CODE", LONG),
            ("RETRY", LONG),
            ("STATUS", TEXT),
            ("TIMEOUT", LONGLONG),
            ("EXECUTE_TIME", TEXT),
            ("LAST_ACTIVE_TIME", TEXT),
            ("STOP", TEXT),
        ],
        rows,
    }
}

fn synstatus(server: &Server) -> Answer {
    let rows = server
        .current()
        .cluster
        .source_infos()
        .into_iter()
        .filter(|s| s.replication_check)
        .map(|s| {
            let mut row = vec![text(&s.name), text(&s.host), text(s.port)];
            // Master_Host, Master_Port, Master_Use: not kept by manx's heartbeat.
            row.extend([None, None, None]);
            row.push(s.lag.map(|l| l.to_string()));
            // Slave_IO_Running .. Last_SQL_Errno: not kept.
            row.extend((0..7).map(|_| None));
            row
        })
        .collect();
    Answer::Rows {
        columns: vec![
            ("name", TEXT),
            ("host", TEXT),
            ("port", LONG),
            ("Master_Host", TEXT),
            ("Master_Port", LONG),
            ("Master_Use", TEXT),
            ("Seconds_Behind_Master", LONG),
            ("Slave_IO_Running", TEXT),
            ("Slave_SQL_Running", TEXT),
            ("Slave_IO_State", TEXT),
            ("Connect_Retry", LONG),
            ("Last_IO_Error", TEXT),
            ("Last_SQL_Error", TEXT),
            ("Last_SQL_Errno", LONG),
        ],
        rows,
    }
}

fn connections(server: &Server) -> Answer {
    let charset = &server.current().config.system.charset;
    let rows = server
        .registry
        .sessions()
        .into_iter()
        .filter_map(|(id, h)| {
            let user = h.user()?.to_string();
            let p = h.published();
            Some(vec![
                text("Processor0"),
                text(id),
                text(h.peer.ip().to_canonical()),
                text(h.peer.port()),
                text(h.local_port),
                text(user),
                p.schema,
                text(charset),
                text(0),
                text(0),
                text(h.since.elapsed().as_secs()),
                text(0),
                text(0),
                text(""),
                text(p.autocommit),
            ])
        })
        .collect();
    Answer::Rows {
        columns: vec![
            ("PROCESSOR", TEXT),
            ("ID", LONG),
            ("HOST", TEXT),
            ("PORT", LONG),
            ("LOCAL_PORT", LONG),
            ("USER", TEXT),
            ("SCHEMA", TEXT),
            ("CHARSET", TEXT),
            ("NET_IN", LONGLONG),
            ("NET_OUT", LONGLONG),
            ("ALIVE_TIME(S)", LONGLONG),
            ("RECV_BUFFER", LONG),
            ("SEND_QUEUE", LONG),
            ("txlevel", TEXT),
            ("autocommit", TEXT),
        ],
        rows,
    }
}

fn sysparam(server: &Server) -> Answer {
    let s = &server.current().config.system;
    let managers = match &s.manager_users {
        Some(list) => list.join(","),
        None => "(users not readOnly)".to_string(),
    };
    let params: Vec<(&str, String, &str)> = vec![
        (
            "serverPort",
            s.server_port.to_string(),
            "port of the SQL service",
        ),
        (
            "managerPort",
            s.manager_port.to_string(),
            "port of the manager service",
        ),
        ("bindIp", s.bind_ip.clone(), "address both ports listen on"),
        ("charset", s.charset.clone(), "default character set"),
        (
            "dataNodeHeartbeatPeriod",
            s.heartbeat_period_ms.to_string(),
            "ms between heartbeats",
        ),
        (
            "heartbeatTimeout",
            s.heartbeat_timeout_ms.to_string(),
            "ms a heartbeat may take",
        ),
        (
            "sqlExecuteTimeout",
            s.sql_execute_timeout_s.to_string(),
            "seconds a backend may stay silent",
        ),
        (
            "maxPacketSize",
            s.max_packet_size.to_string(),
            "max_allowed_packet of clients",
        ),
        (
            "authTimeout",
            s.auth_timeout_ms.to_string(),
            "ms a client has to log in",
        ),
        (
            "maxConnections",
            s.max_connections.to_string(),
            "client connections at once",
        ),
        (
            "sequenceHandlerType",
            s.sequence_handler_type.to_string(),
            "where global sequences come from",
        ),
        (
            "managerUsers",
            managers,
            "users that may change state on the manager port",
        ),
        (
            "shutdownTimeout",
            s.shutdown_timeout_s.to_string(),
            "seconds statements get to finish on SIGTERM",
        ),
        (
            "useSqlStat",
            u8::from(server.stats.enabled()).to_string(),
            "keep the show @@sql* statistics",
        ),
        (
            "sqlRecordCount",
            s.sql_record_count.to_string(),
            "statements kept for show @@sql and @@sql.slow",
        ),
        (
            "sqlSlowTime",
            server.stats.slow_ms().to_string(),
            "ms from which a statement is slow (reload @@sqlslow=N)",
        ),
        (
            "enableSlowLog",
            u8::from(s.enable_slow_log).to_string(),
            "write slow statements to slowLogFile",
        ),
        (
            "slowLogFile",
            s.slow_log_file.display().to_string(),
            "the slow log (MySQL's format)",
        ),
        (
            "metricsAddr",
            s.metrics_addr
                .map_or_else(|| "(off)".to_string(), |a| a.to_string()),
            "where Prometheus scrapes /metrics",
        ),
        (
            "twoPhaseCommit",
            s.two_phase_commit.to_string(),
            "every transaction and multi-node write commits in two phases (XA)",
        ),
        (
            "instanceId",
            server.xa.instance().to_string(),
            "this gateway's name in its XA transaction ids",
        ),
        (
            "xaLogDir",
            server.xa.settings.log_dir.display().to_string(),
            "the XA coordinator log",
        ),
        (
            "xaRecoveryPeriod",
            s.xa_recovery_period_ms.to_string(),
            "ms between two XA recovery passes",
        ),
        (
            "useZKSwitch",
            s.use_zk_switch.to_string(),
            "failovers decided through ZooKeeper (cluster mode, myid.properties)",
        ),
        (
            "zkSessionTimeout",
            s.zk_session_timeout_ms.to_string(),
            "ms without ZooKeeper before this instance's session expires",
        ),
        (
            "zkWriteLease",
            s.zk_write_lease_ms.to_string(),
            "ms without ZooKeeper before this instance refuses writes (0: never)",
        ),
        (
            "failoverCatchUpTimeout",
            s.failover_catch_up_timeout_ms.to_string(),
            "ms a failover waits for the standby to apply the acknowledged writes",
        ),
    ];
    Answer::Rows {
        columns: vec![
            ("PARAM_NAME", TEXT),
            ("PARAM_VALUE", TEXT),
            ("PARAM_DESCR", TEXT),
        ],
        rows: params
            .into_iter()
            .map(|(n, v, d)| vec![text(n), text(v), text(d)])
            .collect(),
    }
}

/// `kill @@connection id1,id2,...`: ends those server-port sessions; affected rows = sessions
/// ended (ids no session has are skipped, as in Mycat).
async fn kill(server: &Arc<Server>, norm: &str) -> Answer {
    if let Some(list) = norm.strip_prefix("kill @@xa_session") {
        return kill_xa_sessions(server, list).await;
    }
    let Some(list) = norm.strip_prefix("kill @@connection") else {
        return unsupported(norm);
    };
    let mut killed = 0;
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Ok(id) = item.parse::<u64>() else {
            return error(
                1003,
                format!("kill @@connection: '{item}' is not a connection id"),
            );
        };
        if let Some(h) = server.registry.get(id) {
            h.kill();
            h.cancel_running(true).await;
            killed += 1;
        }
    }
    ok(killed, "")
}

/// `kill @@xa_session id1,id2,...` (DBLE's name): ends the client connections whose XA
/// transaction is still running statements (ACTIVE), which rolls their branches back; one
/// whose COMMIT or ROLLBACK began finishes on its own, so its session is not counted.
/// Affected rows = sessions ended.
async fn kill_xa_sessions(server: &Arc<Server>, list: &str) -> Answer {
    let undecided = server.xa.active_fronts();
    if list.trim().is_empty() {
        return error(
            1003,
            "kill @@xa_session: name the connection ids (FRONT_ID of show @@xa_session)",
        );
    }
    let mut killed = 0;
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Ok(id) = item.parse::<u32>() else {
            return error(
                1003,
                format!("kill @@xa_session: '{item}' is not a connection id"),
            );
        };
        if !undecided.contains(&id) {
            continue;
        }
        if let Some(h) = server.registry.get(u64::from(id)) {
            h.kill();
            h.cancel_running(true).await;
            killed += 1;
        }
    }
    ok(killed, "")
}

/// `show @@cluster` (manx): ZooKeeper cluster mode as this instance sees it, one row per
/// dataHost: this instance's MYID, ZK (`connected`, `disconnected`, or `off` outside cluster
/// mode), the LEADER's myid, the EPOCH of the index document last followed, the DATAHOST, its
/// active INDEX, POSITION (the GTIDs of the writes acknowledged on it by this instance) and
/// NOTE (the last failover decision about it, or why a switch was refused and which writes
/// were at risk) and CONFIG_VERSION (the cluster-wide configuration version in force here, 0
/// before any was published; module [`super::cluster`]).
fn cluster(server: &Server) -> Answer {
    let current = server.current();
    let config_version = server
        .config_version
        .load(std::sync::atomic::Ordering::Acquire);
    let (myid, zk, leader, epoch, notes) = match server.coordination.get() {
        Some(c) => {
            let (connected, leader, epoch, hosts) = c.snapshot();
            (
                c.settings.myid.myid.clone(),
                if connected {
                    "connected"
                } else {
                    "disconnected"
                },
                leader,
                epoch,
                hosts,
            )
        }
        None => (String::new(), "off", String::new(), 0, Default::default()),
    };
    Answer::Rows {
        columns: vec![
            ("MYID", TEXT),
            ("ZK", TEXT),
            ("LEADER", TEXT),
            ("EPOCH", LONGLONG),
            ("DATAHOST", TEXT),
            ("INDEX", LONG),
            ("POSITION", TEXT),
            ("NOTE", TEXT),
            ("CONFIG_VERSION", LONGLONG),
        ],
        rows: current
            .cluster
            .host_positions()
            .into_iter()
            .map(|(name, index, position)| {
                let note = notes.get(&name).map(|h| h.note.clone()).unwrap_or_default();
                vec![
                    text(&myid),
                    text(zk),
                    text(&leader),
                    text(epoch),
                    text(&name),
                    text(index),
                    text(position),
                    text(note),
                    text(config_version),
                ]
            })
            .collect(),
    }
}

/// `show @@xa_session` (DBLE's columns): the XA transactions of this instance: those its
/// sessions run (FRONT_ID, state ACTIVE...COMMITTING), those left to recovery (FRONT_ID 0,
/// COMMIT_PENDING / ROLLBACK_PENDING), and the branches the last recovery pass found prepared
/// with no record in the coordinator log (IN_DOUBT). SHARDING_NODES lists the dataNodes,
/// separated by spaces as DBLE does.
fn xa_sessions(server: &Server) -> Answer {
    Answer::Rows {
        columns: vec![
            ("FRONT_ID", TEXT),
            ("XA_ID", TEXT),
            ("XA_STATE", TEXT),
            ("SHARDING_NODES", TEXT),
        ],
        rows: server
            .xa
            .rows()
            .into_iter()
            .map(|r| {
                vec![
                    text(r.front),
                    text(r.gtrid),
                    text(r.state),
                    text(r.nodes.join(" ")),
                ]
            })
            .collect(),
    }
}

/// `switch @@datasource name[,name|$range][:index]`. In cluster mode (`useZKSwitch`) the new
/// index is written to ZooKeeper for every instance to follow
/// ([`crate::datahost::coordinated::Coordination::switch`]).
async fn switch(server: &Server, norm: &str, sql: &str) -> Answer {
    if !norm.starts_with("switch @@datasource ") {
        return unsupported(sql);
    }
    // Names as written (dataHost names are case-sensitive).
    let at = sql.to_ascii_lowercase().find("@@datasource").unwrap_or(0) + "@@datasource".len();
    let arg = sql[at..].trim().trim_end_matches(';').trim();
    let (names, index) = match arg.rsplit_once(':') {
        Some((n, i)) => match i.trim().parse::<usize>() {
            Ok(i) => (n, Some(i)),
            Err(_) => return error(1003, format!("switch @@datasource: '{i}' is not an index")),
        },
        None => (arg, None),
    };
    let names = match crate::config::expand::expand_names(names) {
        Ok(n) if !n.is_empty() => n,
        Ok(_) => return error(1003, "switch @@datasource: no dataHost named"),
        Err(e) => return error(1003, format!("switch @@datasource: {e}")),
    };
    let mut switched = 0;
    let cluster = server.current().cluster.clone();
    for name in &names {
        if let Some(coordination) = server.coordination.get() {
            match cluster.switch_target(name, index) {
                Ok(Some(to)) => match coordination.switch(&cluster, name, to).await {
                    Ok(()) => switched += 1,
                    Err(e) => return error(1003, format!("switch @@datasource: {e}")),
                },
                Ok(None) => {}
                Err(e) => return error(1003, format!("switch @@datasource: {e}")),
            }
            continue;
        }
        match cluster.switch_datasource(name, index) {
            Ok(true) => switched += 1,
            Ok(false) => {}
            Err(e) => return error(1003, format!("switch @@datasource: {e}")),
        }
    }
    ok(switched, "")
}

/// `stop @@heartbeat name[,name]:seconds`.
fn stop(server: &Server, norm: &str, sql: &str) -> Answer {
    if !norm.starts_with("stop @@heartbeat ") {
        return unsupported(sql);
    }
    let at = sql.to_ascii_lowercase().find("@@heartbeat").unwrap_or(0) + "@@heartbeat".len();
    let arg = sql[at..].trim().trim_end_matches(';').trim();
    let Some((names, secs)) = arg.rsplit_once(':') else {
        return error(1003, "stop @@heartbeat name:seconds: the time is missing");
    };
    let Ok(secs) = secs.trim().parse::<u64>() else {
        return error(
            1003,
            format!("stop @@heartbeat: '{secs}' is not a number of seconds"),
        );
    };
    let names = match crate::config::expand::expand_names(names) {
        Ok(n) => n,
        Err(e) => return error(1003, format!("stop @@heartbeat: {e}")),
    };
    let stopped = names
        .iter()
        .filter(|n| server.current().cluster.stop_heartbeat(n, secs))
        .count();
    ok(stopped as u64, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_normalised() {
        assert_eq!(normalize("  SHOW   @@DataSource ; "), "show @@datasource");
        assert_eq!(normalize("select USER()"), "select user()");
    }

    #[test]
    fn datetime_is_civil_utc() {
        let t = UNIX_EPOCH + std::time::Duration::from_secs(1_764_633_600 + 3_723);
        assert_eq!(datetime(t), "2025-12-02 01:02:03");
        assert_eq!(datetime(UNIX_EPOCH), "1970-01-01 00:00:00");
    }
}
