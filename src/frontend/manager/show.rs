//! `show @@...`: the dispatcher over the show commands and its `where` clause readers.

use super::*;

pub(super) fn show(server: &Arc<Server>, norm: &str, sql: &str) -> Answer {
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
pub(super) fn where_value(sql: &str, name: &str) -> Result<Option<String>, ()> {
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
pub(super) fn schema_nodes(server: &Server, s: &str) -> Vec<String> {
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
