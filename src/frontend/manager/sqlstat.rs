//! The manager's SQL statistics commands (SPEC §8.1-8.2, OPERATIONS.md §1), answered from the
//! statement recorder ([`crate::stats`]):
//!
//! * `show @@sql [true]`: the last `sqlRecordCount` statements — ID, USER, START_TIME (ms since
//!   the epoch), EXECUTE_TIME (ms), SQL (as sent), IP; `true` clears the statistics after.
//! * `show @@sql.slow`, `show @@slow where schema = S | datanode = dn`: the last
//!   `sqlRecordCount` statements at least `sqlSlowTime` ms slow — USER, DATASOURCE (the
//!   dataNodes it ran on), START_TIME, EXECUTE_TIME, SQL, IP, SCHEMA.
//! * `show @@sql.high`: per (user, shape), most frequent first — ID, USER, FREQUENCY, AVG_TIME,
//!   MAX_TIME, MIN_TIME, EXECUTE_TIME (total), LAST_TIME (the last run's start), SQL (the shape,
//!   literals as `?`), IP (the last client).
//! * `show @@sql.resultset`: per (user, shape) that sent rows, largest first — ID, USER,
//!   FREQUENCY, SQL, RESULTSET_SIZE (the largest result in rows: manx does not count bytes).
//! * `show @@sql.sum` / `@@sql.sum.user`: per user — ID, USER, R, W, R% (reads / all, two
//!   decimals), MAX (slowest, ms), NET_IN / NET_OUT (0: not counted), TIME_COUNT (statements
//!   `[<10ms, 10-200ms, 200ms-1s, >=1s]`), TTL_COUNT (statements by dataNodes touched `[<=1, 2,
//!   3, >3]`: Mycat counts tables), LAST_TIME.
//! * `show @@sql.sum.table`: per logical table — ID, TABLE (upper-cased), R, W, R%, RELATABLE
//!   (tables named in the same statements, at most 16), RELACOUNT (statements naming it with
//!   others), LAST_TIME. Statements the plan cache answered count with the tables of their
//!   shape; statements routed without parsing (hints' `sql=`, `DESC`) count none.
//! * `clear @@slow where schema = S | datanode = dn`, `reload @@user_stat` (forget),
//!   `reload @@sqlslow=N` (threshold, ms), `reload @@sqlstat=open|close` (`useSqlStat`).

use super::{Answer, LONGLONG, Server, TEXT, error, ok, text, unsupported, where_value};

const DOUBLE_TEXT: opensrv_mysql::ColumnType = opensrv_mysql::ColumnType::MYSQL_TYPE_DOUBLE;

/// `show @@sql...` / `show @@slow ...`, or `None` when `what` is none of them.
pub(super) fn show(server: &Server, what: &str, sql: &str) -> Option<Answer> {
    let stats = &server.stats;
    let answer = match what {
        "@@sql" | "@@sql true" => {
            let rows = stats
                .recent()
                .into_iter()
                .map(|r| {
                    vec![
                        text(r.id),
                        text(&r.user),
                        text(r.start_ms),
                        text(r.elapsed_ms),
                        text(&r.sql),
                        text(r.client),
                    ]
                })
                .collect();
            if what.ends_with("true") {
                stats.clear();
            }
            Answer::Rows {
                columns: vec![
                    ("ID", LONGLONG),
                    ("USER", TEXT),
                    ("START_TIME", LONGLONG),
                    ("EXECUTE_TIME", LONGLONG),
                    ("SQL", TEXT),
                    ("IP", TEXT),
                ],
                rows,
            }
        }
        "@@sql.slow" => slow(stats, |_| true),
        "@@slow" => match (where_value(sql, "schema"), where_value(sql, "datanode")) {
            (Ok(Some(s)), _) => slow(stats, |r| r.schema == s),
            (_, Ok(Some(dn))) => slow(stats, |r| r.nodes.split(',').any(|n| n == dn)),
            _ => unsupported(sql),
        },
        "@@sql.high" => Answer::Rows {
            columns: vec![
                ("ID", LONGLONG),
                ("USER", TEXT),
                ("FREQUENCY", LONGLONG),
                ("AVG_TIME", LONGLONG),
                ("MAX_TIME", LONGLONG),
                ("MIN_TIME", LONGLONG),
                ("EXECUTE_TIME", LONGLONG),
                ("LAST_TIME", LONGLONG),
                ("SQL", TEXT),
                ("IP", TEXT),
            ],
            rows: stats
                .shapes()
                .into_iter()
                .map(|s| {
                    let ms = |d: std::time::Duration| d.as_millis() as u64;
                    vec![
                        text(s.id),
                        text(&s.user),
                        text(s.count),
                        text(ms(s.total) / s.count.max(1)),
                        text(ms(s.max)),
                        text(ms(s.min)),
                        text(ms(s.total)),
                        text(s.last_start_ms),
                        text(&s.sql),
                        text(s.client),
                    ]
                })
                .collect(),
        },
        "@@sql.resultset" => {
            let mut shapes: Vec<_> = stats
                .shapes()
                .into_iter()
                .filter(|s| s.max_rows > 0)
                .collect();
            shapes.sort_by(|a, b| b.max_rows.cmp(&a.max_rows).then(a.id.cmp(&b.id)));
            Answer::Rows {
                columns: vec![
                    ("ID", LONGLONG),
                    ("USER", TEXT),
                    ("FREQUENCY", LONGLONG),
                    ("SQL", TEXT),
                    ("RESULTSET_SIZE", LONGLONG),
                ],
                rows: shapes
                    .into_iter()
                    .map(|s| {
                        vec![
                            text(s.id),
                            text(&s.user),
                            text(s.count),
                            text(&s.sql),
                            text(s.max_rows),
                        ]
                    })
                    .collect(),
            }
        }
        "@@sql.sum" | "@@sql.sum.user" => Answer::Rows {
            columns: vec![
                ("ID", LONGLONG),
                ("USER", TEXT),
                ("R", LONGLONG),
                ("W", LONGLONG),
                ("R%", DOUBLE_TEXT),
                ("MAX", LONGLONG),
                ("NET_IN", LONGLONG),
                ("NET_OUT", LONGLONG),
                ("TIME_COUNT", TEXT),
                ("TTL_COUNT", TEXT),
                ("LAST_TIME", LONGLONG),
            ],
            rows: stats
                .users()
                .into_iter()
                .map(|u| {
                    let all = (u.reads + u.writes).max(1);
                    let list = |c: [u64; 4]| format!("[{}, {}, {}, {}]", c[0], c[1], c[2], c[3]);
                    vec![
                        text(u.id),
                        text(&u.user),
                        text(u.reads),
                        text(u.writes),
                        text(format!("{:.2}", u.reads as f64 / all as f64)),
                        text(u.max_ms),
                        text(0),
                        text(0),
                        text(list(u.time_count)),
                        text(list(u.node_count)),
                        text(u.last_ms),
                    ]
                })
                .collect(),
        },
        "@@sql.sum.table" => Answer::Rows {
            columns: vec![
                ("ID", LONGLONG),
                ("TABLE", TEXT),
                ("R", LONGLONG),
                ("W", LONGLONG),
                ("R%", DOUBLE_TEXT),
                ("RELATABLE", TEXT),
                ("RELACOUNT", LONGLONG),
                ("LAST_TIME", LONGLONG),
            ],
            rows: stats
                .tables()
                .into_iter()
                .map(|t| {
                    let all = (t.reads + t.writes).max(1);
                    vec![
                        text(t.id),
                        text(&t.table),
                        text(t.reads),
                        text(t.writes),
                        text(format!("{:.2}", t.reads as f64 / all as f64)),
                        text(t.related.iter().cloned().collect::<Vec<_>>().join(",")),
                        text(t.related_count),
                        text(t.last_ms),
                    ]
                })
                .collect(),
        },
        "@@sql.condition" | "@@sql.large" | "@@sql.execute" | "@@sql.detail"
        | "@@connection.sql" => error(
            1003,
            format!(
                "show {what} is not answered: manx does not keep these statistics (show @@sql, @@sql.slow, @@sql.high, @@sql.resultset, @@sql.sum and @@sql.sum.table are kept)"
            ),
        ),
        _ => return None,
    };
    Some(answer)
}

fn slow(stats: &crate::stats::Recorder, keep: impl Fn(&crate::stats::Recent) -> bool) -> Answer {
    Answer::Rows {
        columns: vec![
            ("USER", TEXT),
            ("DATASOURCE", TEXT),
            ("START_TIME", LONGLONG),
            ("EXECUTE_TIME", LONGLONG),
            ("SQL", TEXT),
            ("IP", TEXT),
            ("SCHEMA", TEXT),
        ],
        rows: stats
            .slow()
            .into_iter()
            .filter(|r| keep(r))
            .map(|r| {
                vec![
                    text(&r.user),
                    text(&r.nodes),
                    text(r.start_ms),
                    text(r.elapsed_ms),
                    text(&r.sql),
                    text(r.client),
                    text(&r.schema),
                ]
            })
            .collect(),
    }
}

/// `reload @@user_stat`, `reload @@sqlslow=N`, `reload @@sqlstat=open|close`; `None` for other
/// reloads.
pub(super) fn reload(server: &Server, norm: &str) -> Option<Answer> {
    let stats = &server.stats;
    let answer = if norm == "reload @@user_stat" {
        stats.clear();
        ok(1, "Reset show @@sql  @@sql.sum  @@sql.slow success")
    } else if let Some(n) = norm.strip_prefix("reload @@sqlslow=") {
        match n.trim().parse::<u64>() {
            Ok(ms) => {
                stats.set_slow_ms(ms);
                ok(1, "")
            }
            Err(_) => error(
                1003,
                format!("reload @@sqlslow: '{n}' is not a number of milliseconds"),
            ),
        }
    } else if let Some(v) = norm.strip_prefix("reload @@sqlstat=") {
        match v.trim() {
            "open" => stats.set_enabled(true),
            "close" => stats.set_enabled(false),
            _ => return Some(error(1003, "reload @@sqlstat=open|close")),
        }
        ok(1, "")
    } else {
        return None;
    };
    Some(answer)
}

/// `clear @@slow where schema = S | datanode = dn`.
pub(super) fn clear(server: &Server, sql: &str) -> Answer {
    let norm = super::normalize(sql);
    if !norm.starts_with("clear @@slow ") {
        return unsupported(sql);
    }
    match (where_value(sql, "schema"), where_value(sql, "datanode")) {
        (Ok(Some(s)), _) => server.stats.clear_slow(|r| r.schema == s),
        (_, Ok(Some(dn))) => server
            .stats
            .clear_slow(|r| r.nodes.split(',').any(|n| n == dn)),
        _ => return unsupported(sql),
    }
    ok(1, "")
}
