//! The manager commands that change state: `kill`, `kill @@xa_session`, `switch @@datasource` and
//! `stop @@heartbeat`.

use super::*;

/// `kill @@connection id1,id2,...`: ends those server-port sessions; affected rows = sessions
/// ended (ids no session has are skipped, as in Mycat).
pub(super) async fn kill(server: &Arc<Server>, norm: &str) -> Answer {
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
pub(super) async fn kill_xa_sessions(server: &Arc<Server>, list: &str) -> Answer {
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

/// `switch @@datasource name[,name|$range][:index]`. In cluster mode (`useZKSwitch`) the new
/// index is written to ZooKeeper for every instance to follow
/// ([`crate::datahost::coordinated::Coordination::switch`]).
pub(super) async fn switch(server: &Server, norm: &str, sql: &str) -> Answer {
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
pub(super) fn stop(server: &Server, norm: &str, sql: &str) -> Answer {
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
