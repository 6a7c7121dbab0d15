//! Heartbeats and failover (SPEC §4.6, §4.7).
//!
//! One task per physical server runs its dataHost's `<heartbeat>` statement every
//! `dataNodeHeartbeatPeriod` on a connection of its own, opened beside the pool (so clients
//! holding every pooled connection cannot make a healthy server look dead), and records the
//! outcome in the server's [`Health`](super::health::Health). Transitions are logged: down at
//! warn, up at info. Two statements are read, not only run (SPEC §1.8): `show slave status`
//! gives the replication state and lag (`switchType="2"`), and `show status like 'wsrep%'`
//! counts as failed unless the Galera node is connected, ready and Primary (`switchType="3"`).
//!
//! After a heartbeat that leaves a writeHost not alive, the failover check runs
//! ([`DataHost::fail_over`]): with `switchType` 1 (or 2, 3), `writeType="0"`, `notSwitch` unset,
//! more than one writeHost, and the active writeHost marked down, the next writeHost after the
//! active one (wrapping) that is alive becomes active — with `switchType="2"` only a standby
//! whose recorded replication lag is exactly 0. The switch is logged at error level, the old
//! writeHost's idle connections are closed, the new one's pool is filled to `minCon`, and
//! `dnindex.properties` is rewritten. Nothing switches back on its own.
//!
//! PostgreSQL: after the statement the heartbeat asks `pg_is_in_recovery()` on the same
//! connection. A writeHost in recovery is never switched to, and an active writeHost found in
//! recovery is replaced like a dead one. Mycat does not promote standbys and neither does manx:
//! when the primary dies, writes fail until an operator promotes a standby (`pg_ctl promote`),
//! and the standby's next heartbeat (or the dead writeHost's) makes the switch.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;

use super::balance::SourceId;
use super::health::{Outcome, Replication, Status};
use super::{DataHost, Source};
use crate::backend::{BackendConn, BackendError, Response};

/// Heartbeat timing for every dataHost.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// `dataNodeHeartbeatPeriod`.
    pub period: Duration,
    /// `heartbeatTimeout` (manx only; Mycat's fixed 30 s).
    pub timeout: Duration,
}

/// Whether a heartbeat statement is `SHOW SLAVE STATUS` (case-insensitive, any white space), whose
/// rows carry the replication state (SPEC §1.8).
pub fn is_show_slave_status(sql: &str) -> bool {
    let words: Vec<String> = sql
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    words == ["show", "slave", "status"]
}

/// Whether a heartbeat statement is `SHOW STATUS LIKE 'wsrep%'` (case-insensitive, any white
/// space, either quote), the Galera status check of `switchType="3"` (SPEC §1.8, §4.7).
pub fn is_show_wsrep_status(sql: &str) -> bool {
    let words: Vec<String> = sql
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    words.len() == 4
        && words[..3] == ["show", "status", "like"]
        && (words[3] == "'wsrep%'" || words[3] == "\"wsrep%\"")
}

/// What a heartbeat's rows are read for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Only that the statement succeeds.
    Plain,
    /// `SHOW SLAVE STATUS`: the replication state.
    Replication,
    /// `SHOW STATUS LIKE 'wsrep%'`: the Galera node must be connected, ready and in the primary
    /// component.
    Galera,
}

/// Starts the heartbeat tasks of `host`'s servers (none when it has no heartbeat statement).
pub fn spawn(host: &Arc<DataHost>, settings: Settings) {
    if host.policy.heartbeat.is_empty() {
        return;
    }
    let ids: Vec<SourceId> = host.sources().map(|(id, _)| id).collect();
    for id in ids {
        let weak = Arc::downgrade(host);
        tokio::spawn(run(weak, id, settings));
    }
}

/// One server's heartbeat loop; ends when its dataHost is dropped.
async fn run(host: Weak<DataHost>, id: SourceId, settings: Settings) {
    let mut ticker = tokio::time::interval(settings.period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut conn: Option<Box<dyn BackendConn>> = None;
    loop {
        ticker.tick().await;
        // The dataHost is held only around the beat, not across it: a reload that replaced it
        // waits for the dataHosts still in use, and a beat on a hung server lasts up to
        // heartbeatTimeout.
        let (backend, sql, check) = {
            let Some(host) = host.upgrade() else {
                return;
            };
            if host.heartbeat_paused(id) {
                continue;
            }
            let source = host.source(id);
            let check = if is_show_slave_status(&host.policy.heartbeat) {
                Check::Replication
            } else if is_show_wsrep_status(&host.policy.heartbeat) {
                Check::Galera
            } else {
                Check::Plain
            };
            source.health.beating(true, std::time::Duration::ZERO);
            (source.backend.clone(), host.policy.heartbeat.clone(), check)
        };
        let began = std::time::Instant::now();
        let beat =
            tokio::time::timeout(settings.timeout, once(&mut conn, &*backend, &sql, check)).await;
        let Some(host) = host.upgrade() else {
            return;
        };
        let source = host.source(id);
        source.health.beating(false, began.elapsed());
        let outcome = match beat {
            Ok(Ok((replication, recovery))) => Outcome::Ok {
                replication,
                recovery,
            },
            Ok(Err(e)) => {
                conn = None;
                Outcome::Error(e.to_string())
            }
            Err(_) => {
                conn = None;
                Outcome::Timeout
            }
        };
        if let Some((old, new)) = source.health.record(&outcome, host.policy.max_retry_count) {
            log_transition(&host, source, old, new, &outcome);
        }
        // A writeHost that is not alive may need replacing; one that is not the active one may
        // be the replacement the dead (or read-only) active writeHost waits for — a PostgreSQL
        // standby promoted meanwhile takes over at its own heartbeat. `fail_over` does nothing
        // while the active writeHost can take writes.
        if id.read.is_none() && (!source.health.alive() || id.write != host.active_index()) {
            host.fail_over();
        }
    }
}

fn log_transition(host: &DataHost, source: &Source, old: Status, new: Status, outcome: &Outcome) {
    let address = source.backend.address();
    match (new, outcome) {
        (Status::Ok, _) => tracing::info!(
            data_host = %host.name,
            host = %source.name,
            %address,
            from = ?old,
            "heartbeat: server is up"
        ),
        (_, Outcome::Error(reason)) => tracing::warn!(
            data_host = %host.name,
            host = %source.name,
            %address,
            status = ?new,
            %reason,
            "heartbeat: server marked down"
        ),
        _ => tracing::warn!(
            data_host = %host.name,
            host = %source.name,
            %address,
            status = ?new,
            "heartbeat: server marked down (no answer in time)"
        ),
    }
}

/// Runs the heartbeat statement once, opening the heartbeat connection if needed. Returns the
/// replication state when `check` is [`Check::Replication`] and the server reports one, and
/// whether the server is in recovery (PostgreSQL's `pg_is_in_recovery()`, asked after the
/// statement; `None` for MySQL).
///
/// Errors: the statement fails, or (with [`Check::Galera`]) the node is not `wsrep_connected =
/// ON`, `wsrep_ready = ON` and `wsrep_cluster_status = Primary` (Mycat's rule, SPEC §4.7): a
/// Galera node outside the primary component answers queries but must not take statements.
async fn once(
    conn: &mut Option<Box<dyn BackendConn>>,
    backend: &dyn crate::backend::Backend,
    sql: &str,
    check: Check,
) -> Result<(Option<Replication>, Option<bool>), BackendError> {
    if conn.is_none() {
        *conn = Some(backend.connect().await?);
    }
    let Some(c) = conn.as_mut() else {
        return Ok((None, None));
    };
    let replication = statement(c.as_mut(), sql, check).await?;
    let recovery = c.in_recovery().await?;
    Ok((replication, recovery))
}

/// The heartbeat statement on `c`; the replication state when `check` is
/// [`Check::Replication`] and the server reports one.
///
/// Errors: the statement fails, or (with [`Check::Galera`]) the node is not `wsrep_connected =
/// ON`, `wsrep_ready = ON` and `wsrep_cluster_status = Primary` (Mycat's rule, SPEC §4.7): a
/// Galera node outside the primary component answers queries but must not take statements.
async fn statement(
    c: &mut dyn BackendConn,
    sql: &str,
    check: Check,
) -> Result<Option<Replication>, BackendError> {
    match c.query(sql).await? {
        Response::Ok(_) => Ok(None),
        Response::Rows { columns, mut rows } => {
            let mut first = None;
            let mut status = std::collections::HashMap::new();
            while let Some(row) = rows.next().await {
                let row = row?;
                if check == Check::Galera
                    && let [name, value, ..] = row.as_slice()
                {
                    status.insert(
                        name.to_text().unwrap_or_default().to_ascii_lowercase(),
                        value.to_text().unwrap_or_default(),
                    );
                }
                if first.is_none() {
                    first = Some(row);
                }
            }
            match check {
                Check::Plain => return Ok(None),
                Check::Galera => return galera_ready(&status).map(|()| None),
                Check::Replication => {}
            }
            let Some(row) = first else {
                // No row: not a replica (the active master), simply OK (SPEC §4.7).
                return Ok(None);
            };
            let field = |name: &str| -> Option<String> {
                let i = columns
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(name))?;
                row.get(i)?.to_text()
            };
            let yes = |name: &str| field(name).is_some_and(|v| v.eq_ignore_ascii_case("Yes"));
            let normal = yes("Slave_IO_Running")
                && yes("Slave_SQL_Running")
                && field("Last_SQL_Error").is_none_or(|e| e.is_empty());
            Ok(Some(Replication {
                normal,
                seconds_behind: field("Seconds_Behind_Master").and_then(|v| v.parse().ok()),
            }))
        }
    }
}

/// Mycat's Galera rule over `SHOW STATUS LIKE 'wsrep%'` (names lower-cased): connected, ready
/// and in the primary component.
///
/// Errors: names the variables that fail, with their values.
fn galera_ready(status: &std::collections::HashMap<String, String>) -> Result<(), BackendError> {
    let wanted = [
        ("wsrep_connected", "ON"),
        ("wsrep_ready", "ON"),
        ("wsrep_cluster_status", "Primary"),
    ];
    let failing: Vec<String> = wanted
        .iter()
        .filter(|(name, want)| {
            !status
                .get(*name)
                .is_some_and(|v| v.eq_ignore_ascii_case(want))
        })
        .map(|(name, _)| {
            format!(
                "{name}={}",
                status.get(*name).map(String::as_str).unwrap_or("(absent)")
            )
        })
        .collect();
    if failing.is_empty() {
        Ok(())
    } else {
        Err(BackendError::Other(format!(
            "Galera node not usable: {}",
            failing.join(", ")
        )))
    }
}

impl DataHost {
    /// Mycat's failover check (SPEC §4.7), run after a writeHost's heartbeat. Switches at most
    /// once per call; concurrent calls from several heartbeat tasks switch once
    /// (compare-and-swap on the active index).
    ///
    /// PostgreSQL (manx's rule; Mycat never asks): the active writeHost is replaced also when it
    /// is alive but a read-only standby (`pg_is_in_recovery()`), and a standby still in recovery
    /// is never chosen — Mycat does not promote, so after the primary dies writes fail (naming
    /// the dataHost) until an operator promotes a standby, whose next heartbeat makes it the
    /// active writeHost. switchType 2's lag rule does not apply to PostgreSQL (no
    /// `SHOW SLAVE STATUS`): the recovery rule stands in for it.
    pub(super) fn fail_over(&self) {
        let p = &self.policy;
        let n = self.write_hosts.len();
        if p.switch_type == -1 || p.not_switch || p.write_type != 0 || n < 2 {
            return;
        }
        // Cluster mode: the leader decides from every instance's reports (module
        // `coordinated`); this instance only reports what its heartbeats see.
        if self.dnindex.coordinated.load(Ordering::Acquire) {
            return;
        }
        let active = self.active_index();
        let old = &self.write_hosts[active].source;
        let read_only = old.health.alive() && old.health.in_recovery();
        if !old.health.status().is_down() && !read_only {
            self.no_writer_logged.store(false, Ordering::Release);
            return;
        }
        let mut i = (active + 1) % n;
        while i != active {
            let s = &self.write_hosts[i].source;
            if s.health.alive() {
                if s.health.in_recovery() {
                    tracing::debug!(
                        data_host = %self.name,
                        host = %s.name,
                        "failover: standby skipped, it is in recovery (read-only until promoted)"
                    );
                } else if p.switch_type == 2 && !p.postgres && s.health.recorded_lag() != Some(0) {
                    tracing::warn!(
                        data_host = %self.name,
                        host = %s.name,
                        lag = ?s.health.recorded_lag(),
                        "failover: standby skipped, slave is not synchronized"
                    );
                } else {
                    let reason = if read_only {
                        "writeHost in recovery"
                    } else {
                        "heartbeat error"
                    };
                    self.switch(active, i, reason);
                    return;
                }
            }
            i = (i + 1) % n;
        }
        if !self.no_writer_logged.swap(true, Ordering::AcqRel) {
            tracing::error!(
                data_host = %self.name,
                host = %old.name,
                "failover: the active writeHost cannot take writes and no other writeHost is alive and writable; writes fail until one is (a PostgreSQL standby must be promoted)"
            );
        }
    }

    /// Makes writeHost `to` active in place of `from`, if no other task switched meanwhile.
    /// `read_only`: the reason is that `from` is a PostgreSQL standby, not a failed heartbeat.
    pub(super) fn switch(&self, from: usize, to: usize, reason: &str) -> bool {
        if self
            .active
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        self.no_writer_logged.store(false, Ordering::Release);
        let old = &self.write_hosts[from].source;
        let new = &self.write_hosts[to].source;
        tracing::error!(
            data_host = %self.name,
            from = %old.name,
            to = %new.name,
            old_index = from,
            new_index = to,
            reason,
            status = ?old.health.status(),
            "failover: [Host={},result=[{from}->{to}],reason={reason}]",
            self.name
        );
        old.backend.close_idle();
        // Mycat initialises the new writeHost's pool (minCon) at the switch.
        let backend = new.backend.clone();
        let (min_con, name, host) = (self.min_con, self.name.clone(), new.name.clone());
        tokio::spawn(async move {
            if let Err(e) = backend.warm_up(min_con).await {
                tracing::warn!(data_host = %name, %host, error = %e, "cannot open minCon connections on the new writeHost");
            }
        });
        if let Err(e) = self.dnindex.store(&self.name, to) {
            tracing::error!(
                data_host = %self.name,
                error = %e,
                "failover: cannot write dnindex.properties; a restart would go back to the old writeHost"
            );
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::{galera_ready, is_show_slave_status, is_show_wsrep_status};

    #[test]
    fn recognises_show_wsrep_status_and_applies_the_galera_rule() {
        assert!(is_show_wsrep_status("show status like 'wsrep%'"));
        assert!(is_show_wsrep_status(" SHOW  STATUS\tLIKE \"WSREP%\";"));
        assert!(!is_show_wsrep_status("show status like 'wsrep_ready'"));
        assert!(!is_show_wsrep_status("show slave status"));
        let status = |connected: &str, ready: &str, cluster: &str| {
            [
                ("wsrep_connected", connected),
                ("wsrep_ready", ready),
                ("wsrep_cluster_status", cluster),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
        };
        assert!(galera_ready(&status("ON", "ON", "Primary")).is_ok());
        let e = galera_ready(&status("ON", "OFF", "non-Primary")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Galera node not usable: wsrep_ready=OFF, wsrep_cluster_status=non-Primary"
        );
        assert!(galera_ready(&Default::default()).is_err());
    }

    #[test]
    fn recognises_show_slave_status() {
        assert!(is_show_slave_status("show slave status"));
        assert!(is_show_slave_status("  SHOW   Slave\tSTATUS ; "));
        assert!(!is_show_slave_status("select user()"));
        assert!(!is_show_slave_status("show slave hosts"));
    }
}
