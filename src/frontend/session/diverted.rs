//! Commands the packet reader diverts from opensrv-mysql ([`Diverted`]): `COM_RESET_CONNECTION`,
//! `COM_CHANGE_USER`, `COM_STATISTICS`, `COM_PING`, `COM_STMT_RESET` and `COM_FIELD_LIST`.

use std::io;
use std::sync::OnceLock;

use opensrv_mysql::{OkResponse, QueryResultWriter};

use super::{Session, Writer};
use crate::backend::OkInfo;
use crate::frontend::auth;
use crate::frontend::error::MysqlError;
use crate::frontend::wire::commands::Diverted;
use crate::route::{PlanCache, SqlMode};

impl Session {
    /// Answers a command the reader diverted from opensrv (module `commands`).
    pub(super) async fn diverted(
        &mut self,
        command: Diverted,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        match command {
            Diverted::ResetConnection => {
                self.reset().await;
                self.ok(w, OkInfo::default()).await
            }
            Diverted::StmtReset | Diverted::Ping => self.ok(w, OkInfo::default()).await,
            Diverted::Statistics => {
                // A bare string, not an OK packet (the writer swaps it in).
                self.slot
                    .replace_next(vec![self.server.registry.statistics().into_bytes()]);
                w.completed(OkResponse::default()).await
            }
            Diverted::FieldList(args) => self.field_list(&args, w).await,
            Diverted::ChangeUser(change) => self.change_user(change, w).await,
            Diverted::Refused(e) => self.error(w, e).await,
        }
    }

    /// What COM_RESET_CONNECTION resets (COM_CHANGE_USER too): the transaction is rolled back
    /// and its pinned connections go, table locks go, and with them and the session's state
    /// its kept connections (reset in their pools, as the client's reset asks); autocommit,
    /// session variables and sql_mode are the server's defaults again.
    async fn reset(&mut self) {
        self.held.take_interrupted();
        let _ = self.end_transaction("ROLLBACK").await;
        let _ = self.unlock_tables().await;
        self.held.let_go();
        self.sql_prepared.clear();
        self.autocommit = true;
        self.state.clear();
        self.handle
            .set_wait_timeout(crate::frontend::registry::DEFAULT_WAIT_TIMEOUT);
        self.sql_mode = SqlMode::default();
        self.slot.set_sql_mode(self.sql_mode);
        // Character sets too (MySQL resets "variables set implicitly by SET NAMES").
        self.slot.set_charsets(Default::default());
    }

    /// COM_CHANGE_USER: the new user's proof is checked against server.xml (as at login:
    /// the firewall's whitehost list first, then `mysql_native_password` or
    /// `caching_sha2_password` against the connection's scramble); on success the session is
    /// reset as by COM_RESET_CONNECTION, becomes that user (its schemas, `readOnly`,
    /// `<privileges>`) and uses the schema named. A wrong user or password gets MySQL's 1045 and
    /// the connection is closed, as MySQL does; so does a proof for another plugin (manx does
    /// not switch plugins mid-session), and a schema the new user may not use (1044/1049, as a
    /// login naming it).
    async fn change_user(
        &mut self,
        change: crate::frontend::wire::commands::ChangeUser,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        let generation = self.server.current();
        let ip = self.peer.ip().to_canonical().to_string();
        let name = change.user.clone();
        let proof = &change.auth_response;
        let verified =
            generation.config.system.admits(&name, &ip)
                && generation.config.users.get(&name).is_some_and(|u| {
                    match change.plugin.as_deref() {
                        None | Some("mysql_native_password") => {
                            auth::verify_native_password(&u.password, &self.salt, proof)
                        }
                        Some("caching_sha2_password") => {
                            auth::verify_caching_sha2(&u.password, &self.salt, proof)
                        }
                        Some(_) => false,
                    }
                });
        if !verified {
            tracing::info!(connection = self.id, peer = %self.peer, user = %name, "COM_CHANGE_USER refused: closing the connection");
            let e = MysqlError::new(
                1045,
                "28000",
                format!(
                    "Access denied for user '{name}'@'{}' (using password: {})",
                    self.peer.ip(),
                    if proof.is_empty() { "NO" } else { "YES" }
                ),
            );
            let answered = self.error(w, e).await;
            self.handle.kill();
            return answered;
        }
        // Everything COM_RESET_CONNECTION resets, then the user and its view of the schemas,
        // and the character set the packet names.
        self.reset().await;
        if let Some(id) = change.charset {
            self.slot.set_handshake_charset(id);
            self.adopt_handshake_charset();
        }
        self.user = OnceLock::new();
        let _ = self.user.set(name.clone());
        self.handle.set_user(&name);
        self.access = OnceLock::new();
        self.plans = PlanCache::default();
        self.schema = None;
        tracing::info!(connection = self.id, user = %name, "COM_CHANGE_USER");
        if !change.database.is_empty() {
            if let Err(e) = self.check_schema(&change.database) {
                // As a login naming that schema: refused, and the connection ends.
                let answered = self.error(w, e).await;
                self.handle.kill();
                return answered;
            }
            self.schema = Some(change.database);
        }
        self.ok(w, OkInfo::default()).await
    }
}
