//! The check of the backend accounts' privileges (issue 17, part 7): every writeHost and
//! readHost of every dataHost is asked, on a connection of its own, what its configured
//! account may do ([`BackendConn::excess_privileges`]); each privilege beyond what manx needs
//! is reported with the dataHost, the server and the reason.
//!
//! At start-up the gateway logs them as warnings ([`log`]) and serves anyway: the account is
//! the operator's choice. `manx check --strict` connects the same way and fails on them (and on
//! a server whose grants cannot be read, since nothing is then known about its account).
//!
//! [`BackendConn::excess_privileges`]: crate::backend::BackendConn::excess_privileges

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use crate::backend::BackendError;
use crate::backend::grants::ExcessPrivilege;
use crate::config::{Config, DataHostConfig, HostConfig};

use super::Timeouts;

/// What one server's account was found to hold.
#[derive(Debug, Clone)]
pub struct AccountReport {
    /// The `<dataHost>` name.
    pub data_host: String,
    /// `writeHost` or `readHost`.
    pub kind: &'static str,
    /// The server's `host` attribute.
    pub host: String,
    /// `address:port`.
    pub address: String,
    /// The account (`user` attribute).
    pub user: String,
    /// The privileges beyond what manx needs (empty: the account is fine), or why they could not
    /// be read (the server is unreachable, refused the login or the query).
    pub outcome: Result<Vec<ExcessPrivilege>, BackendError>,
}

impl AccountReport {
    /// `dataHost localhost1 writeHost hostM1 (127.0.0.1:13306, user manx)`.
    pub fn server(&self) -> String {
        format!(
            "dataHost {} {} {} ({}, user {})",
            self.data_host, self.kind, self.host, self.address, self.user
        )
    }

    /// One line per problem: each excess privilege, or the failure to read them; none for an
    /// account that holds only what manx needs.
    pub fn problems(&self) -> Vec<String> {
        match &self.outcome {
            Ok(found) => found
                .iter()
                .map(|p| format!("{}: the backend account holds {p}", self.server()))
                .collect(),
            Err(e) => vec![format!(
                "{}: cannot read the backend account's privileges: {e}",
                self.server()
            )],
        }
    }
}

impl fmt::Display for AccountReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let problems = self.problems();
        if problems.is_empty() {
            write!(
                f,
                "{}: the backend account holds nothing beyond what manx needs",
                self.server()
            )
        } else {
            write!(f, "{}", problems.join("\n"))
        }
    }
}

/// Asks every server of every dataHost of `config` (writeHosts first, each followed by its
/// readHosts; dataHosts in name order) what its account holds, all at once. Each server gets a
/// connection of its own, closed afterwards; no pool is filled. A server that does not answer
/// within the connect timeout plus 10 s is reported as a timeout.
pub async fn audit(config: &Config, timeouts: Timeouts) -> Vec<AccountReport> {
    let mut checks = Vec::new();
    for h in config.data_hosts.values() {
        let databases: Vec<String> = config
            .data_nodes
            .values()
            .filter(|n| n.data_host == h.name)
            .map(|n| n.database.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        for w in &h.write_hosts {
            checks.push(check(h, &w.host, "writeHost", timeouts, databases.clone()));
            for r in &w.read_hosts {
                checks.push(check(h, r, "readHost", timeouts, databases.clone()));
            }
        }
    }
    futures::future::join_all(checks).await
}

/// The report of one server.
async fn check(
    data_host: &DataHostConfig,
    host: &HostConfig,
    kind: &'static str,
    timeouts: Timeouts,
    databases: Vec<String>,
) -> AccountReport {
    let backend = super::backend(data_host, host, timeouts, &databases);
    let limit = timeouts.connect + Duration::from_secs(10);
    let outcome = match tokio::time::timeout(limit, async {
        let mut conn = backend.connect().await?;
        conn.excess_privileges().await
    })
    .await
    {
        Ok(outcome) => outcome,
        Err(_) => Err(BackendError::Timeout(format!(
            "no answer within {} ms",
            limit.as_millis()
        ))),
    };
    AccountReport {
        data_host: data_host.name.clone(),
        kind,
        host: host.name.clone(),
        address: format!("{}:{}", host.address, host.port),
        user: host.user.clone(),
        outcome,
    }
}

/// Logs `reports` as the start-up check does: a warning per excess privilege (naming the
/// dataHost, server, account, privilege and reason), a warning per server whose privileges
/// could not be read, and one info line per account found fine.
pub fn log(reports: &[AccountReport]) {
    for r in reports {
        match &r.outcome {
            Ok(found) if found.is_empty() => tracing::info!(
                data_host = %r.data_host,
                host = %r.host,
                address = %r.address,
                user = %r.user,
                "backend account holds nothing beyond what manx needs"
            ),
            Ok(found) => {
                for p in found {
                    tracing::warn!(
                        data_host = %r.data_host,
                        host = %r.host,
                        address = %r.address,
                        user = %r.user,
                        privilege = ?p.privilege,
                        on = %p.on,
                        "backend account of dataHost {} {} {} holds {p}; grant it only what the README's \"Deployment: the backend account\" lists",
                        r.data_host,
                        r.kind,
                        r.host,
                    );
                }
            }
            Err(e) => tracing::warn!(
                data_host = %r.data_host,
                host = %r.host,
                address = %r.address,
                user = %r.user,
                error = %e,
                "cannot read the privileges of the backend account of dataHost {} {} {}; not checked",
                r.data_host,
                r.kind,
                r.host,
            ),
        }
    }
}
