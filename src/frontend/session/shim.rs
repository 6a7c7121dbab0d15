//! The protocol shim: opensrv-mysql's entry points ([`AsyncMysqlShim`]) for login, `COM_INIT_DB`,
//! `COM_STMT_PREPARE` / `EXECUTE` / `CLOSE` and `COM_QUERY`, and the commands behind them, each
//! between [`Session::begin_command`] and [`Session::end_command`].

use std::io;
use std::sync::OnceLock;

use async_trait::async_trait;
use opensrv_mysql::{
    AsyncMysqlShim, Column as WireColumn, ColumnFlags, ColumnType, ErrorKind, InitWriter,
    OkResponse, ParamParser, QueryResultWriter, StatementMetaWriter,
};

use super::reply::{ok_payload, send_error, wire_column, write_text_rows, write_typed_rows};
use super::{Session, Writer};
use crate::frontend::auth;
use crate::frontend::error::MysqlError;
use crate::frontend::prepared::{self, Prepared};
use crate::frontend::wire::commands::{DIVERTED_QUERY, Diverted};
use crate::frontend::wire::tap::{ColumnMeta, ErrPacket};
use crate::frontend::wire::tls;
use crate::route::PlanCache;

#[async_trait]
impl AsyncMysqlShim<Writer> for Session {
    type Error = io::Error;

    fn version(&self) -> String {
        crate::version::server_version().to_string()
    }

    fn connect_id(&self) -> u32 {
        self.id
    }

    fn salt(&self) -> [u8; 20] {
        self.salt
    }

    async fn authenticate(
        &self,
        _plugin: &str,
        username: &[u8],
        salt: &[u8],
        auth_data: &[u8],
    ) -> bool {
        let generation = self.generation();
        let name = String::from_utf8_lossy(username).into_owned();
        // The firewall decides before any password is looked at: a refused host gets the same
        // answer whatever it sent, and learns nothing about the password.
        let ip = self.peer.ip().to_canonical().to_string();
        if !generation.config.system.admits(&name, &ip) {
            tracing::info!(connection = self.id, peer = %self.peer, user = %name, "login refused by the firewall whitehost list");
            self.slot.set(ErrPacket {
                code: 1045,
                state: "28000".to_string(),
                message: format!("Access denied for user '{name}' with host '{ip}'"),
            });
            return false;
        }
        let ok = generation
            .config
            .users
            .get(&name)
            .is_some_and(|u| auth::verify_native_password(&u.password, salt, auth_data));
        tracing::debug!(
            connection = self.id,
            plugin = _plugin,
            response_len = auth_data.len(),
            "login"
        );
        let sha2 = !ok
            && generation
                .config
                .users
                .get(&name)
                .is_some_and(|u| auth::verify_caching_sha2(&u.password, salt, auth_data));
        // A caching_sha2_password proof that does not match: over TLS, MySQL asks for the
        // cleartext password ("full authentication") instead of refusing at once.
        let full = !ok && !sha2 && auth_data.len() == 32 && self.full_authentication(&name).await;
        let sha2 = sha2 || full;
        let degraded = (ok || sha2)
            .then(|| generation.config.users.get(&name))
            .flatten()
            .and_then(|u| crate::frontend::limits::degraded(u, self.server.connections.count()));
        let offline = (ok || sha2)
            && !self.manager
            && self
                .server
                .offline
                .load(std::sync::atomic::Ordering::Relaxed);
        if offline {
            tracing::info!(connection = self.id, peer = %self.peer, user = %name, "login refused: the gateway is offline");
            self.slot
                .set(ErrPacket::from(&crate::frontend::manager::shut_down()));
            return false;
        }
        if let Some(refusal) = degraded {
            tracing::info!(connection = self.id, peer = %self.peer, user = %name, "login refused: benchmark");
            self.slot.set(refusal);
            return false;
        }
        if sha2 && !full {
            self.slot.fast_auth_success();
        }
        if ok || sha2 {
            self.handle.set_user(&name);
            tracing::Span::current().record("user", name.as_str());
            let _ = self.user.set(name);
        } else {
            tracing::info!(connection = self.id, peer = %self.peer, user = %name, "authentication failed");
            // MySQL's own answer to a wrong user or password: 1045 / 28000.
            self.slot.set(ErrPacket {
                code: 1045,
                state: "28000".to_string(),
                message: format!(
                    "Access denied for user '{name}'@'{}' (using password: {})",
                    self.peer.ip(),
                    if auth_data.is_empty() { "NO" } else { "YES" }
                ),
            });
        }
        ok || sha2
    }

    async fn on_init<'a>(
        &'a mut self,
        schema: &'a str,
        w: InitWriter<'a, Writer>,
    ) -> io::Result<()> {
        self.begin_command()?;
        let done = self.init_command(schema, w).await;
        self.end_command();
        done
    }

    async fn on_prepare<'a>(
        &'a mut self,
        query: &'a str,
        info: StatementMetaWriter<'a, Writer>,
    ) -> io::Result<()> {
        self.begin_command()?;
        let done = self.prepare_command(query, info).await;
        self.end_command();
        done
    }

    async fn on_execute<'a>(
        &'a mut self,
        id: u32,
        params: ParamParser<'a>,
        w: QueryResultWriter<'a, Writer>,
    ) -> io::Result<()> {
        if let Err(e) = self.begin_command() {
            return self.refuse_removed(e, w).await;
        }
        let done = self.execute_command(id, params, w).await;
        self.end_command();
        done
    }

    async fn on_close<'a>(&'a mut self, stmt: u32) {
        self.prepared.remove(&stmt);
    }

    async fn on_query<'a>(
        &'a mut self,
        query: &'a str,
        w: QueryResultWriter<'a, Writer>,
    ) -> io::Result<()> {
        if let Err(e) = self.begin_command() {
            return self.refuse_removed(e, w).await;
        }
        let done = self.query_command(query, w).await;
        self.end_command();
        done
    }
}

impl Session {
    /// `caching_sha2_password` full authentication (on a TLS connection only; manx has no RSA
    /// key for plain ones): `true` when the cleartext password the client sends is `name`'s.
    async fn full_authentication(&self, name: &str) -> bool {
        let Some(link) = self.tls.as_ref().filter(|l| l.is_secure()) else {
            return false;
        };
        let answer = match link.full_authentication().await {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!(connection = self.id, error = %e, "full authentication failed");
                return false;
            }
        };
        let password = answer.strip_suffix(&[0]).unwrap_or(&answer);
        self.generation()
            .config
            .users
            .get(name)
            .is_some_and(|u| !u.password.is_empty() && u.password.as_bytes() == password)
    }

    /// Starts a command: ends the connection when the session was killed
    /// ([`Session::ended_by_kill`]) or when a reload removed its user; otherwise takes the
    /// configuration the command routes and runs on, the newest one unless a transaction holds
    /// an older one. What the user may do always follows the newest configuration, inside a
    /// transaction too (as MariaDB applies a REVOKE from the next statement on): a reload
    /// drops the session's access, made again on first use; cached plans are dropped when the
    /// routing configuration changes.
    fn begin_command(&mut self) -> io::Result<()> {
        self.ended_by_kill()?;
        let newest = self.server.current();
        if newest.number != self.seen_generation {
            self.seen_generation = newest.number;
            self.access = OnceLock::new();
            // A cached plan skips the access checks it passed when it was made: made under the
            // old access, it must go even while a transaction keeps the old routing.
            self.plans = PlanCache::default();
            if let Some(user) = self.user.get()
                && !newest.config.users.contains_key(user)
            {
                tracing::warn!(
                    connection = self.id,
                    user,
                    "the user was removed by a reload: connection closed"
                );
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "the session's user was removed by a reload",
                ));
            }
        }
        if self.generation.is_none() {
            if newest.number != self.plans_generation {
                self.plans_generation = newest.number;
                self.plans = PlanCache::default();
            }
            self.handle.hold_generation(Some(newest.number));
            self.generation = Some(newest);
        }
        self.adopt_handshake_charset();
        Ok(())
    }

    /// The end of a session [`Session::begin_command`] refused: a user a reload removed gets
    /// 1045/28000 saying so, then the session is ended as a KILL ends one (a client otherwise
    /// sees only a lost connection); a killed session just ends.
    async fn refuse_removed(
        &self,
        e: io::Error,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        if e.kind() == io::ErrorKind::PermissionDenied {
            let refusal = MysqlError::new(
                1045,
                "28000",
                format!(
                    "Access denied for user '{}': the user was removed from the configuration (reload); the connection is closed",
                    self.user_name()
                ),
            );
            // Answered (the packet goes out with the command's flush), then ended as a KILL
            // ends a session.
            send_error(&self.slot, w, refusal).await?;
            self.handle.kill();
            return Ok(());
        }
        Err(e)
    }

    /// Ends a command: the configuration it ran on is let go unless a connection pinned to the
    /// session's transaction still needs it (a `BEGIN` alone holds nothing, as Mycat counts
    /// only backend connections: the transaction's first statement takes the newest one).
    fn end_command(&mut self) {
        if !self.held.has_pinned() {
            self.handle.hold_generation(None);
            self.generation = None;
        }
    }

    /// Ends the connection (an error for the protocol loop) once the session was killed: the
    /// command that arrives after a session's `KILL` of itself, read before the kill's notice
    /// reached the loop, must not run (MariaDB has closed the connection by then).
    fn ended_by_kill(&self) -> io::Result<()> {
        if self.handle.is_killed() {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the session was killed",
            ));
        }
        Ok(())
    }

    /// Writes a manager command's answer.
    async fn manager_answer(
        &self,
        answer: crate::frontend::manager::Answer,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        match answer {
            crate::frontend::manager::Answer::Error(e) => self.error(w, e).await,
            crate::frontend::manager::Answer::Ok { affected, message } => {
                if !message.is_empty() {
                    self.slot
                        .replace_next(vec![ok_payload(affected, self.status(), &message)]);
                }
                w.completed(OkResponse {
                    affected_rows: affected,
                    status_flags: self.status(),
                    info: message,
                    ..Default::default()
                })
                .await
            }
            crate::frontend::manager::Answer::Labelled { columns, row } => {
                let names: Vec<&str> = columns.iter().map(String::as_str).collect();
                write_text_rows(w, &names, std::iter::once(row)).await
            }
            crate::frontend::manager::Answer::Rows { columns, rows } => {
                write_typed_rows(w, columns.iter().map(|(n, t)| (*n, *t)), rows).await
            }
        }
    }
}

/// The commands behind the protocol shim's entry points, which hold the configuration for
/// them ([`Session::begin_command`]).
impl Session {
    async fn init_command<'a>(
        &'a mut self,
        schema: &'a str,
        w: InitWriter<'a, Writer>,
    ) -> io::Result<()> {
        if self.manager {
            // Mycat's manager port ignores the database a client names.
            return w.ok().await;
        }
        match self.check_schema(schema) {
            Ok(()) => {
                self.schema = Some(schema.to_string());
                self.publish();
                w.ok().await
            }
            Err(e) => {
                self.slot.set(ErrPacket::from(&e));
                w.error(ErrorKind::ER_UNKNOWN_ERROR, e.message.as_bytes())
                    .await
            }
        }
    }

    async fn prepare_command<'a>(
        &'a mut self,
        query: &'a str,
        info: StatementMetaWriter<'a, Writer>,
    ) -> io::Result<()> {
        if self.manager {
            let e = MysqlError::new(
                1003,
                "HY000",
                "Unsupported statement: the manager port takes no prepared statements",
            );
            self.slot.set(ErrPacket::from(&e));
            return info
                .error(ErrorKind::ER_UNKNOWN_ERROR, e.message.as_bytes())
                .await;
        }
        let placeholders = crate::route::placeholders(query);
        if placeholders
            .as_ref()
            .is_some_and(|p| p.len() > usize::from(u16::MAX))
        {
            let e = MysqlError::new(
                1390,
                "HY000",
                "Prepared statement contains too many placeholders",
            );
            self.slot.set(ErrPacket::from(&e));
            return info
                .error(ErrorKind::ER_PS_MANY_PARAM, e.message.as_bytes())
                .await;
        }
        let Some(placeholders) = placeholders else {
            let e = MysqlError::new(1064, "42000", "the statement cannot be tokenized");
            self.slot.set(ErrPacket::from(&e));
            return info
                .error(ErrorKind::ER_PARSE_ERROR, e.message.as_bytes())
                .await;
        };
        let columns = self.describe(query).await;
        let id = self.next_statement;
        self.next_statement = self.next_statement.wrapping_add(1).max(1);
        let params: Vec<WireColumn> = (0..placeholders.len())
            .map(|_| WireColumn {
                table: String::new(),
                column: "?".to_string(),
                coltype: ColumnType::MYSQL_TYPE_VAR_STRING,
                colflags: ColumnFlags::empty(),
            })
            .collect();
        self.slot
            .set_prepared_columns(columns.iter().map(|c| ColumnMeta {
                charset: c.charset,
                length: c.length,
                decimals: c.decimals,
            }));
        let columns: Vec<WireColumn> = columns.iter().map(wire_column).collect();
        self.statements.prepared(id, placeholders.len());
        self.prepared.insert(
            id,
            Prepared {
                sql: query.to_string(),
                placeholders,
            },
        );
        info.reply(id, &params, &columns).await
    }

    async fn execute_command<'a>(
        &'a mut self,
        id: u32,
        params: ParamParser<'a>,
        w: QueryResultWriter<'a, Writer>,
    ) -> io::Result<()> {
        let Some(p) = self.prepared.get(&id) else {
            return self
                .error(
                    w,
                    MysqlError::new(
                        1243,
                        "HY000",
                        format!(
                            "Unknown prepared statement handler ({id}) given to mysqld_stmt_execute"
                        ),
                    ),
                )
                .await;
        };
        // opensrv's parameter decoder panics on malformed input (an unknown type byte, a short
        // packet): a bad client gets an error, never a dead task.
        let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            params
                .into_iter()
                .map(prepared::literal)
                .collect::<Result<Vec<String>, MysqlError>>()
        }));
        let literals = match decoded {
            Ok(Ok(l)) if l.len() == p.placeholders.len() => l,
            Ok(Err(e)) => return self.error(w, e).await,
            _ => {
                return self
                    .error(
                        w,
                        MysqlError::new(
                            1210,
                            "HY000",
                            "Incorrect arguments to mysqld_stmt_execute",
                        ),
                    )
                    .await;
            }
        };
        let sql = p.bind(&literals);
        self.binary = true;
        let _busy = self.handle.busy();
        let done = self.run_query(&sql, w).await;
        self.binary = false;
        self.publish();
        done
    }

    async fn query_command<'a>(
        &'a mut self,
        query: &'a str,
        w: QueryResultWriter<'a, Writer>,
    ) -> io::Result<()> {
        let diverted = if query == DIVERTED_QUERY {
            self.slot.take_diverted()
        } else {
            None
        };
        if self.manager {
            return match diverted {
                Some(command) => self.diverted(command, w).await,
                None => {
                    let started = std::time::SystemTime::now();
                    let clock = std::time::Instant::now();
                    let answer =
                        crate::frontend::manager::answer(&self.server, self.user_name(), query)
                            .await;
                    let error = match &answer {
                        crate::frontend::manager::Answer::Error(e) => Some(e.code),
                        _ => None,
                    };
                    let done = self.manager_answer(answer, w).await;
                    self.server.stats.record(
                        &crate::stats::Executed {
                            user: self.user_name(),
                            client: self.peer.ip(),
                            connection: self.id,
                            schema: None,
                            sql: query,
                            started,
                            elapsed: clock.elapsed(),
                            rows_sent: 0,
                            rows_affected: 0,
                            error,
                            nodes: &[],
                            tables: &[],
                            kind: crate::stats::RouteKind::Manager,
                            read: true,
                        },
                        None,
                    );
                    done
                }
            };
        }
        if self
            .server
            .offline
            .load(std::sync::atomic::Ordering::Relaxed)
            && match &diverted {
                Some(command) => *command == Diverted::Ping,
                None => crate::frontend::manager::is_probe(&self.server, query),
            }
        {
            return self.error(w, crate::frontend::manager::shut_down()).await;
        }
        if let Some(command) = diverted {
            return self.diverted(command, w).await;
        }
        if let Some((name, value)) = tls::ssl_status(query, self.tls.as_ref()) {
            return write_text_rows(
                w,
                &["Variable_name", "Value"],
                std::iter::once(vec![Some(name), Some(value)]),
            )
            .await;
        }
        let _busy = self.handle.busy();
        let done = self.run_query(query, w).await;
        self.publish();
        done
    }
}
