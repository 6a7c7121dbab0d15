//! The connection handle the engine drives ([`BackendConn`]): it holds a pooled connection of the
//! database last selected and runs statements on it.

use super::*;

/// The handle [`PostgresBackend::acquire`] returns: holds a connection of the selected
/// database's pool (or, for the heartbeat, one opened beside the pools).
pub(super) struct PgConn {
    pub(super) shared: Arc<Shared>,
    pub(super) conn: Option<Held>,
    /// Where the WAL positions of this holder's writes go ([`BackendConn::track_writes`]).
    pub(super) track: Option<Arc<super::super::position::Acked>>,
}

/// A connection checked out of a pool, or one opened beside the pools ([`Backend::connect`]).
pub(super) enum Held {
    Pooled(managed::Object<Manager>),
    Direct(Conn),
}

impl std::ops::Deref for Held {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        match self {
            Held::Pooled(o) => o,
            Held::Direct(c) => c,
        }
    }
}

impl std::ops::DerefMut for Held {
    fn deref_mut(&mut self) -> &mut Conn {
        match self {
            Held::Pooled(o) => o,
            Held::Direct(c) => c,
        }
    }
}

impl PgConn {
    /// Tracked: reads `pg_current_wal_insert_lsn()` after a write or commit (at or past its
    /// commit record once the commit returned) into the dataHost's acknowledged position.
    ///
    /// Errors: the connection broke (the write is then not acknowledged).
    pub(super) async fn record_lsn(&mut self) -> Result<(), BackendError> {
        let Some(acked) = self.track.clone() else {
            return Ok(());
        };
        let conn = self.conn().await?;
        let messages = conn
            .client
            .simple_query("SELECT pg_current_wal_insert_lsn()")
            .await
            .map_err(error::convert)?;
        for m in messages {
            if let SimpleQueryMessage::Row(row) = m
                && let Some(lsn) = row.get(0)
            {
                acked.record(lsn);
            }
        }
        Ok(())
    }

    pub(super) async fn conn(&mut self) -> Result<&mut Conn, BackendError> {
        if self.conn.is_none() {
            // No database selected: the user's default database, as PostgreSQL's libpq does.
            let database = self.shared.settings.user.clone();
            self.conn = Some(Held::Pooled(self.shared.get(&database).await?));
        }
        Ok(self.conn.as_mut().expect("set above"))
    }

    /// Sends one transaction-control statement as is (not through the MySQL dialect), marking
    /// the connection for a reset before its next holder.
    pub(super) async fn raw(&mut self, sql: &str) -> Result<(), BackendError> {
        let conn = self.conn().await?;
        conn.dirty = true;
        conn.guard.control(sql);
        conn.client.batch_execute(sql).await.map_err(error::convert)
    }

    /// Ends the open transaction with `end` (`COMMIT` or `PREPARE TRANSACTION '<gid>'`), or
    /// fails when an earlier error aborted it. PostgreSQL answers either statement in an
    /// aborted transaction by rolling back, without an error (the command tag says `ROLLBACK`,
    /// which tokio-postgres does not expose): the `SELECT 1` sent in front, in the same
    /// packet, fails there with 25P02 instead, and `end` is not run. The connection needs a
    /// reset only after a failure.
    pub(super) async fn end_checked(&mut self, end: &str) -> Result<(), BackendError> {
        let conn = self.conn().await?;
        // A statement whose rows failed is undone, as MySQL undoes it; the rest commits.
        conn.undo_streamed_failure().await;
        conn.guard.end();
        let ended = conn
            .client
            .batch_execute(&format!("SELECT 1; {end}"))
            .await
            .map_err(error::convert);
        if ended.is_err() {
            conn.dirty = true;
        }
        ended
    }
}

#[async_trait]
impl BackendConn for PgConn {
    fn address(&self) -> &str {
        &self.shared.address
    }

    fn canceller(&self) -> Option<Arc<dyn super::super::Canceller>> {
        let conn: &Conn = self.conn.as_ref()?;
        Some(conn.canceller.clone())
    }

    fn track_writes(&mut self, acked: Arc<super::super::position::Acked>) {
        self.track = Some(acked);
    }

    /// `ALTER SYSTEM SET default_transaction_read_only = on` and `pg_reload_conf()` (each on
    /// its own: `ALTER SYSTEM` refuses a transaction block), then `pg_terminate_backend` of
    /// every other session of this account; sent as is, not through the MySQL dialect.
    async fn fence(&mut self) -> Result<(Result<(), String>, usize), BackendError> {
        let conn = self.conn().await?;
        conn.dirty = true;
        let client = &conn.client;
        let mut read_only = Ok(());
        for sql in [
            "ALTER SYSTEM SET default_transaction_read_only = on",
            "SELECT pg_reload_conf()",
        ] {
            if let Err(e) = client.batch_execute(sql).await {
                if e.as_db_error().is_none() {
                    return Err(error::convert(e));
                }
                read_only = Err(error::convert(e).to_string());
                break;
            }
        }
        let messages = client
            .simple_query(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE usename = current_user AND pid <> pg_backend_pid()",
            )
            .await
            .map_err(error::convert)?;
        let ended = messages
            .iter()
            .find_map(|m| match m {
                SimpleQueryMessage::Row(r) => r.get(0).and_then(|v| v.parse().ok()),
                _ => None,
            })
            .unwrap_or(0);
        Ok((read_only, ended))
    }

    async fn unfence(&mut self) -> Result<(), BackendError> {
        let conn = self.conn().await?;
        conn.dirty = true;
        for sql in [
            "ALTER SYSTEM RESET default_transaction_read_only",
            "SELECT pg_reload_conf()",
        ] {
            conn.client
                .batch_execute(sql)
                .await
                .map_err(error::convert)?;
        }
        Ok(())
    }

    /// Takes the connection out of its pool and closes it.
    fn abandon(&mut self) {
        if let Some(Held::Pooled(o)) = self.conn.take() {
            drop(managed::Object::take(o));
        }
    }

    async fn select_database(&mut self, database: &str) -> Result<(), BackendError> {
        if self.conn.as_ref().is_some_and(|c| c.database == database) {
            return Ok(());
        }
        // Return the held connection before waiting for another pool's.
        self.conn = None;
        self.conn = Some(Held::Pooled(self.shared.get(database).await?));
        Ok(())
    }

    /// Translates the statement with each `?` as `NULL` and has PostgreSQL describe it
    /// (Parse/Describe, nothing runs): the number of `?`s, and the result columns mapped as a
    /// query's are (none for a statement that returns no rows).
    ///
    /// Errors: a statement that does not translate, or that PostgreSQL cannot prepare.
    async fn describe(&mut self, sql: &str) -> Result<(usize, Vec<Column>), BackendError> {
        let conn = self.conn().await?;
        let (translation, params) =
            dialect::translate_for_describe(sql, &conn.database).map_err(dialect_error)?;
        let (info, booleans) = catalog_facts(conn, &translation).await?;
        let finished = translation
            .finish(info.as_ref(), &booleans)
            .map_err(dialect_error)?;
        if !finished.returns_rows || finished.sql.is_empty() {
            return Ok((params, Vec::new()));
        }
        // Preparing may fail and, in a transaction, abort it: mark the connection for a reset.
        conn.dirty = true;
        let missing = unlooked(conn, &finished);
        let client = &conn.client;
        let catalog = flags_lookup(client, &missing);
        let (statement, catalog) =
            futures::future::join(client.prepare(&finished.sql), catalog).await;
        let statement = statement.map_err(error::convert)?;
        let catalog = catalog.map_err(error::convert)?;
        record_flags(conn, catalog, missing);
        let columns = map_columns(conn, &statement)
            .into_iter()
            .map(|m| m.column)
            .collect();
        Ok((params, columns))
    }

    /// The dialect translates `WEIGHT_STRING(RTRIM(x))` to the UTF-8 bytes of `rtrim(x)`.
    fn string_weights(&self) -> StringWeights {
        StringWeights::Utf8Bytes
    }

    /// `SELECT pg_is_in_recovery()`, sent as is (not through the MySQL dialect translation).
    async fn in_recovery(&mut self) -> Result<Option<bool>, BackendError> {
        let conn = self.conn().await?;
        let messages = conn
            .client
            .simple_query("SELECT pg_is_in_recovery()")
            .await
            .map_err(error::convert)?;
        let value = messages.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(row) => row.get(0).map(|v| v == "t"),
            _ => None,
        });
        match value {
            Some(v) => Ok(Some(v)),
            None => Err(BackendError::Other(
                "SELECT pg_is_in_recovery() returned no row".to_string(),
            )),
        }
    }

    /// The client's savepoint statement in PostgreSQL's syntax (the name double-quoted), sent
    /// as is, beside the statement savepoint of [`StatementGuard`]. PostgreSQL's `ROLLBACK TO`
    /// and `RELEASE` destroy every savepoint set after theirs, so a client's savepoint must
    /// never be set above `manx_statement`, which the next statement releases: `SAVEPOINT` is
    /// sent as `RELEASE SAVEPOINT manx_statement; SAVEPOINT "name"` (the last statement's work
    /// stays), and the next statement sets `manx_statement` again, above the client's. After
    /// `ROLLBACK TO` or `RELEASE` of a client's savepoint, `manx_statement` (always the latest)
    /// is gone too and is set again by the next statement. A failure that came while a
    /// statement's rows streamed is undone first, as before any statement.
    async fn savepoint(
        &mut self,
        op: SavepointOp,
        name: &crate::sqltext::SavepointName,
    ) -> Result<(), BackendError> {
        let conn = self.conn().await?;
        conn.undo_streamed_failure().await;
        let statement = op.with_name(&name.postgres());
        let sql = if op == SavepointOp::Set && conn.guard.savepoint {
            format!("RELEASE SAVEPOINT {STATEMENT_SAVEPOINT}; {statement}")
        } else {
            statement
        };
        // Released here or destroyed by the client's ROLLBACK TO / RELEASE.
        conn.guard.savepoint = false;
        let done = conn
            .client
            .batch_execute(&sql)
            .await
            .map_err(error::convert);
        if done.is_err() {
            conn.dirty = true;
        }
        done
    }

    /// `BEGIN` (through [`BackendConn::begin`]): PostgreSQL names a transaction only when it
    /// is prepared.
    async fn xa_start(&mut self, _xid: &Xid) -> Result<(), BackendError> {
        self.begin().await
    }

    /// `PREPARE TRANSACTION '<gtrid>|<bqual>'`, sent as is, failing when an earlier error
    /// aborted the transaction (PostgreSQL would roll it back silently). PostgreSQL needs
    /// `max_prepared_transactions > 0` (its error, 55000, says so otherwise).
    async fn xa_prepare(&mut self, xid: &Xid) -> Result<(), BackendError> {
        self.end_checked(&format!("PREPARE TRANSACTION {}", xid.postgres_literal()))
            .await
    }

    /// `COMMIT` (one phase, failing when an earlier error aborted the transaction) or
    /// `COMMIT PREPARED '<gid>'`, sent as is.
    async fn xa_commit(&mut self, xid: &Xid, one_phase: bool) -> Result<(), BackendError> {
        if one_phase {
            self.end_checked("COMMIT").await?;
        } else {
            self.raw(&format!("COMMIT PREPARED {}", xid.postgres_literal()))
                .await?;
        }
        self.record_lsn().await
    }

    /// `ROLLBACK` or `ROLLBACK PREPARED '<gid>'`, sent as is.
    async fn xa_rollback(&mut self, xid: &Xid, prepared: bool) -> Result<(), BackendError> {
        if prepared {
            self.raw(&format!("ROLLBACK PREPARED {}", xid.postgres_literal()))
                .await
        } else {
            self.raw("ROLLBACK").await
        }
    }

    /// `SHOW max_prepared_transactions`, sent as is: 0 disables `PREPARE TRANSACTION`.
    async fn xa_unready(&mut self) -> Result<Option<String>, BackendError> {
        let conn = self.conn().await?;
        let messages = conn
            .client
            .simple_query("SHOW max_prepared_transactions")
            .await
            .map_err(error::convert)?;
        let value = messages.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        });
        Ok(match value.as_deref() {
            Some("0") => Some(
                "max_prepared_transactions is 0: PostgreSQL refuses PREPARE TRANSACTION (set it above the number of concurrent XA transactions and restart the server)"
                    .to_string(),
            ),
            _ => None,
        })
    }

    /// The identifiers in `pg_prepared_xacts` of the connection's database that read as
    /// manx's (`<gtrid>|<bqual>`).
    async fn xa_recover(&mut self) -> Result<Vec<Xid>, BackendError> {
        let conn = self.conn().await?;
        let messages = conn
            .client
            .simple_query(
                "SELECT gid FROM pg_catalog.pg_prepared_xacts WHERE database = current_database()",
            )
            .await
            .map_err(error::convert)?;
        Ok(messages
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(row) => row.get(0).and_then(Xid::from_postgres),
                _ => None,
            })
            .collect())
    }

    /// The role's attributes and its memberships in [`grants::PG_DANGEROUS_ROLES`] from
    /// `pg_roles`, sent as is (not through the MySQL dialect translation), judged by
    /// [`grants::postgres_excess`]. Roles a server version lacks are simply not found.
    async fn excess_privileges(&mut self) -> Result<Vec<ExcessPrivilege>, BackendError> {
        let names = grants::PG_DANGEROUS_ROLES
            .iter()
            .map(|(name, _)| format!("'{name}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolreplication, r.rolbypassrls, \
             (SELECT string_agg(p.rolname, ',' ORDER BY p.rolname) FROM pg_roles p \
              WHERE p.rolname IN ({names}) AND pg_has_role(r.oid, p.oid, 'MEMBER')) \
             FROM pg_roles r WHERE r.rolname = current_user"
        );
        let conn = self.conn().await?;
        let messages = conn
            .client
            .simple_query(&sql)
            .await
            .map_err(error::convert)?;
        let row = messages.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(row),
            _ => None,
        });
        let Some(row) = row else {
            return Err(BackendError::Other(
                "pg_roles has no row for current_user".to_string(),
            ));
        };
        let flag = |i: usize| row.get(i) == Some("t");
        let role = grants::PgRole {
            superuser: flag(0),
            create_role: flag(1),
            create_db: flag(2),
            replication: flag(3),
            bypass_rls: flag(4),
            member_of: row
                .get(5)
                .map(|s| s.split(',').map(str::to_string).collect())
                .unwrap_or_default(),
        };
        Ok(grants::postgres_excess(&role))
    }

    async fn query<'a>(&'a mut self, sql: &'a str) -> Result<Response<'a>, BackendError> {
        if sql == "COMMIT" {
            // The gateway's COMMIT of a transaction: an aborted one must fail, not roll back
            // silently (see `end_checked`).
            self.end_checked("COMMIT").await?;
            self.record_lsn().await?;
            return Ok(Response::Ok(OkInfo::default()));
        }
        if self.track.is_some() && super::super::position::is_rowless_write(sql) {
            let ok = match self.query_untracked(sql).await? {
                Response::Ok(ok) => ok,
                // Not for these statements (`is_rowless_write`): read to the end.
                Response::Rows { mut rows, .. } => {
                    while let Some(r) = rows.next().await {
                        r?;
                    }
                    OkInfo::default()
                }
            };
            self.record_lsn().await?;
            return Ok(Response::Ok(ok));
        }
        self.query_untracked(sql).await
    }
}

impl PgConn {
    /// [`BackendConn::query`] without the position tracking.
    pub(super) async fn query_untracked<'a>(
        &'a mut self,
        sql: &'a str,
    ) -> Result<Response<'a>, BackendError> {
        let conn = self.conn().await?;
        conn.before(sql).await?;
        let control = conn.guard.control(sql);
        if !control {
            conn.undo_streamed_failure().await;
        }
        let translation = dialect::translate(sql, &conn.database).map_err(dialect_error)?;
        if translation.is_ddl {
            conn.tables.clear();
            conn.flags_looked_up.clear();
            conn.flags.clear();
        }
        let (info, booleans) = catalog_facts(conn, &translation).await?;
        let finished = translation
            .finish(info.as_ref(), &booleans)
            .map_err(dialect_error)?;
        if finished.sql.is_empty() {
            return Ok(Response::Ok(OkInfo::default()));
        }
        let prefix = if control { None } else { conn.guard.prefix() };
        let guarded = prefix.is_some();
        match run_statement(conn, &finished, prefix).await {
            Err(e) => {
                if guarded {
                    conn.undo_statement(&e).await;
                }
                Err(e)
            }
            Ok(Response::Rows { columns, rows }) if guarded => {
                // An error among the rows leaves the transaction aborted: the next statement
                // undoes it first.
                let failed = conn.guard.failed.clone();
                let rows = rows.inspect(move |r| {
                    if r.is_err() {
                        failed.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                });
                Ok(Response::Rows {
                    columns,
                    rows: rows.boxed(),
                })
            }
            Ok(other) => Ok(other),
        }
    }
}
