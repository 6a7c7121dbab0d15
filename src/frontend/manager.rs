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

mod control;
mod show;
mod status;
use control::{kill, stop, switch};
use show::{show, where_value};
use status::{
    cluster, connections, datanodes, datasources, heartbeat, server_row, synstatus, sysparam,
    xa_sessions,
};

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
                Err(e) => Answer::Error(e.into()),
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

#[cfg(test)]
mod tests {
    use super::status::datetime;
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
