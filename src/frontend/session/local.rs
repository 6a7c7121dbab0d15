//! Statements the gateway answers itself ([`Local`]): `USE`, the `SHOW`s it knows, `SET` of session
//! state and autocommit, transaction and savepoint control, `LOCK TABLES`, `KILL`, and the
//! one-row SELECTs of session values (`FOUND_ROWS()`, `LAST_INSERT_ID()`, `@@version_comment`...).

use std::io;

use opensrv_mysql::{Column as WireColumn, ColumnFlags, ColumnType, QueryResultWriter};

use super::diagnostics::write_warnings;
use super::reply::{write_signed, write_text_rows, write_unsigned};
use super::{Session, Writer};
use crate::backend::OkInfo;
use crate::frontend::error::MysqlError;
use crate::route::{Completion, Condition, Local};

impl Session {
    pub(super) async fn local(
        &mut self,
        l: Local,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        // The SELECTs answered here return one row: as any SELECT, they set FOUND_ROWS().
        let one_row_select = matches!(
            l,
            Local::FoundRows(_)
                | Local::RowCount(_)
                | Local::LastInsertId(_)
                | Local::WarningCount(_)
                | Local::ErrorCount(_)
                | Local::Counts(_)
                | Local::Autocommit(_)
                | Local::Database(_)
                | Local::Version(_)
                | Local::ConnectionId(_)
                | Local::VersionComment(_)
                | Local::MaxAllowedPacket(_)
        );
        let answered = self.answer_local(l, w).await;
        if one_row_select && answered.is_ok() {
            self.found_rows = 1;
        }
        answered
    }

    async fn answer_local(&mut self, l: Local, w: QueryResultWriter<'_, Writer>) -> io::Result<()> {
        match l {
            Local::Commit(_) | Local::Begin | Local::SetAutocommit(true)
                if self.held.interrupted().is_some() =>
            {
                // The transaction can only be rolled back: do it and say so (DECISIONS.md 16).
                let reason = self.held.take_interrupted().unwrap_or_default();
                let _ = self.end_transaction("ROLLBACK").await;
                if l == Local::SetAutocommit(true) {
                    self.autocommit = true;
                }
                let message = format!(
                    "Transaction error, need to rollback: {reason}; the transaction was rolled back"
                );
                self.error(w, MysqlError::new(1003, "HY000", message)).await
            }
            Local::Use(db) => match self.check_schema(&db) {
                Ok(()) => {
                    self.schema = Some(db);
                    self.ok(w, OkInfo::default()).await
                }
                Err(e) => self.error(w, e).await,
            },
            Local::ShowDatabases(pattern) => {
                // Who sees what: the newest configuration's (see `Session::view`).
                let config = self.server.current().config.clone();
                // MariaDB names the column after the pattern: `Database (x)` for LIKE 'x'.
                let column = match &pattern {
                    Some(p) => format!("Database ({p})"),
                    None => "Database".to_string(),
                };
                let names: Vec<Vec<Option<String>>> = config
                    .users
                    .get(self.user_name())
                    .map(|u| config.user_schemas(u))
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|n| pattern.as_deref().is_none_or(|p| crate::route::like(n, p)))
                    .map(|n| vec![Some(n)])
                    .collect();
                write_text_rows(w, &[&column], names).await
            }
            Local::ShowWarnings {
                offset,
                limit,
                errors,
            } => {
                let rows: Vec<Vec<Option<String>>> = self
                    .warnings
                    .iter()
                    .filter(|r| !errors || is_error(r))
                    .skip(offset)
                    .take(limit.unwrap_or(usize::MAX))
                    .cloned()
                    .collect();
                write_warnings(w, rows).await
            }
            Local::ShowGrants { label, grants } => {
                write_text_rows(w, &[&label], grants.into_iter().map(|g| vec![Some(g)])).await
            }
            Local::ShowCreateDatabase(name) => {
                if let Err(e) = self.check_schema(&name) {
                    return self.error(w, e).await;
                }
                let create = format!("CREATE DATABASE `{name}`");
                write_text_rows(
                    w,
                    &["Database", "Create Database"],
                    vec![vec![Some(name), Some(create)]],
                )
                .await
            }
            Local::ShowTables {
                schema,
                full,
                tables,
            } => {
                if let Err(e) = self.check_schema(&schema) {
                    return self.error(w, e).await;
                }
                let header = format!("Tables_in_{schema}");
                if full {
                    let rows = tables
                        .into_iter()
                        .map(|t| vec![Some(t), Some("BASE TABLE".to_string())]);
                    write_text_rows(w, &[&header, "Table_type"], rows).await
                } else {
                    write_text_rows(w, &[&header], tables.into_iter().map(|t| vec![Some(t)])).await
                }
            }
            Local::SetAutocommit(on) => {
                if on && !self.autocommit {
                    // MySQL commits the open transaction when autocommit is switched on.
                    if let Err(e) = self.end_transaction("COMMIT").await {
                        self.autocommit = true;
                        return self.error(w, e).await;
                    }
                }
                self.autocommit = on;
                self.ok(w, OkInfo::default()).await
            }
            Local::SetAutocommitFrom(variable) => {
                // The user variable as the session set it (`SET @v = ...`, replayed state).
                let value = self
                    .state
                    .iter()
                    .find(|s| s.key.eq_ignore_ascii_case(&variable))
                    .and_then(|s| s.assignment.split_once('=').map(|(_, v)| v.trim()))
                    .unwrap_or("NULL")
                    .to_string();
                match crate::route::switch_value("autocommit", &value) {
                    Ok(on) => Box::pin(self.local(Local::SetAutocommit(on), w)).await,
                    Err(e) => self.error(w, e.into()).await,
                }
            }
            Local::SetXa(on) => {
                // Mycat's rules and texts (SPEC §7.4).
                let refusal = if !on {
                    Some("set xa cmd off not for external use ")
                } else if self.autocommit && !self.in_transaction {
                    Some("set xa cmd on can't used in autocommit connection ")
                } else if self.held.locks().is_some() {
                    Some(
                        "set xa cmd on can't be used while tables are locked (LOCK TABLES): UNLOCK TABLES first",
                    )
                } else if self.held.has_pinned() && self.xa.is_none() {
                    Some(
                        "set xa cmd on can't be used once the transaction has run statements: COMMIT or ROLLBACK first",
                    )
                } else {
                    None
                };
                match refusal {
                    Some(message) => self.error(w, MysqlError::new(3012, "HY000", message)).await,
                    None => {
                        self.xa_on = true;
                        self.ok(w, OkInfo::default()).await
                    }
                }
            }
            Local::Set { autocommit, items } => {
                // `SET TRANSACTION ...` (the next transaction's characteristics, no SESSION)
                // inside a transaction BEGIN / START TRANSACTION opened: MariaDB's 1568, also
                // before the transaction ran anything (the gateway holds no connection of it
                // yet, so no backend would refuse it). Once the transaction holds connections,
                // the SET runs on them and the backend answers.
                if self.in_transaction && items.iter().any(next_transaction_characteristics) {
                    let e = MysqlError::new(
                        1568,
                        "25001",
                        "Transaction characteristics can't be changed while a transaction is in progress",
                    );
                    return self.error(w, e).await;
                }
                if let Err(e) = self.set_state(items).await {
                    return self.error(w, e).await;
                }
                match autocommit {
                    Some(on) => Box::pin(self.local(Local::SetAutocommit(on), w)).await,
                    None => self.ok(w, OkInfo::default()).await,
                }
            }
            Local::Ok => self.ok(w, OkInfo::default()).await,
            Local::LockTables(l) => match self.lock_tables(l).await {
                Ok(warnings) => {
                    let ok = OkInfo {
                        warnings,
                        ..OkInfo::default()
                    };
                    self.ok(w, ok).await
                }
                Err(e) => self.error(w, e).await,
            },
            Local::UnlockTables => {
                if self.held.locks().is_some() {
                    // With table locks held, UNLOCK TABLES commits the open transaction first
                    // (MySQL's rule); without, it ends nothing.
                    if let Err(e) = self.end_transaction("COMMIT").await {
                        return self.error(w, e).await;
                    }
                }
                match self.unlock_tables().await {
                    Ok(()) => self.ok(w, OkInfo::default()).await,
                    Err(e) => self.error(w, e).await,
                }
            }
            Local::MaxAllowedPacket(label) => {
                let size = self.generation().config.system.max_packet_size as u64;
                write_unsigned(w, label, size).await
            }
            Local::ConnectionId(label) => write_unsigned(w, label, u64::from(self.id)).await,
            Local::Kill { query, id } => {
                let Some(target) = self.server.registry.get(id) else {
                    let e = MysqlError::new(1094, "HY000", format!("Unknown thread id: {id}"));
                    return self.error(w, e).await;
                };
                if target.user() != Some(self.user_name()) {
                    let e =
                        MysqlError::new(1095, "HY000", format!("You are not owner of thread {id}"));
                    return self.error(w, e).await;
                }
                tracing::info!(connection = self.id, target = id, query, "KILL");
                if query {
                    target.cancel_running(false).await;
                    return self.ok(w, OkInfo::default()).await;
                }
                // The session is marked killed first: a read whose backend connection the kill
                // ends below would otherwise be retried on another connection and run there
                // after the session is gone. KILL CONNECTION ends the backend connections of
                // the running statement too: a backend blocked sending rows would otherwise run
                // on until its connection is read again.
                target.kill();
                target.cancel_running(true).await;
                if id == u64::from(self.id) {
                    // MariaDB's answer to a session killing itself, before it closes.
                    let e = MysqlError::new(1927, "70100", "Connection was killed");
                    return self.error(w, e).await;
                }
                self.ok(w, OkInfo::default()).await
            }
            Local::Begin => {
                // `SET XA = ON` before BEGIN holds for the transaction BEGIN starts.
                let xa_on = self.xa_on && !self.held.has_pinned() && self.xa.is_none();
                // BEGIN inside a transaction commits it first, and releases table locks, as
                // MySQL does.
                if let Err(e) = self.end_transaction("COMMIT").await {
                    return self.error(w, e).await;
                }
                if let Err(e) = self.unlock_tables().await {
                    return self.error(w, e).await;
                }
                self.xa_on = xa_on;
                self.in_transaction = true;
                self.ok(w, OkInfo::default()).await
            }
            Local::Commit(completion) | Local::Rollback(completion) => {
                self.held.take_interrupted();
                let sql = if matches!(l, Local::Commit(_)) {
                    "COMMIT"
                } else {
                    "ROLLBACK"
                };
                // `AND CHAIN`'s "same characteristics": an XA transaction chains into another.
                let xa = self.xa.is_some() || self.xa_on;
                // ROLLBACK's own warnings (kept by `end_transaction` for SHOW WARNINGS); the
                // kept diagnostics of an earlier statement are not this one's.
                let warnings = match self.end_transaction(sql).await {
                    Ok(warnings) => warnings,
                    Err(e) => return self.error(w, e).await,
                };
                let ok = OkInfo {
                    warnings,
                    ..OkInfo::default()
                };
                match completion {
                    Completion::Plain => self.ok(w, ok).await,
                    Completion::Chain => {
                        self.in_transaction = true;
                        self.xa_on = xa;
                        self.ok(w, ok).await
                    }
                    Completion::Release => {
                        // MySQL answers, then closes the connection: the OK goes out with the
                        // command's flush, then the session ends as a KILL ends it.
                        let answered = self.ok(w, OkInfo::default()).await;
                        tracing::debug!(
                            connection = self.id,
                            "{sql} RELEASE: closing the connection"
                        );
                        self.handle.kill();
                        answered
                    }
                }
            }
            Local::Savepoint(name) => {
                if !self.transaction_open() {
                    // MySQL accepts it outside a transaction and keeps nothing.
                    return self.ok(w, OkInfo::default()).await;
                }
                // Refused in an interrupted transaction (1003).
                match self.held.set_savepoint(name).await {
                    Ok(()) => self.ok(w, OkInfo::default()).await,
                    Err(e) => self.error(w, e.into()).await,
                }
            }
            Local::RollbackToSavepoint(name) => {
                // 1305 for a name the transaction does not hold; allowed in an interrupted
                // transaction: back to a savepoint set before the statement that failed
                // part-way, every node agrees again.
                match self.held.rollback_to_savepoint(&name).await {
                    Ok(left) => {
                        // Its warnings (1196) are the statement's, as ROLLBACK's are.
                        let ok = OkInfo {
                            warnings: left.warning_count,
                            ..OkInfo::default()
                        };
                        if left.warning_count > 0 {
                            self.warnings = left.warnings;
                            self.warning_count = left.warning_count;
                        }
                        self.ok(w, ok).await
                    }
                    Err(e) => self.error(w, e.into()).await,
                }
            }
            Local::ReleaseSavepoint(name) => {
                // 1305 for a name the transaction does not hold, then 1003 in an interrupted
                // transaction.
                match self.held.release_savepoint(&name).await {
                    Ok(()) => self.ok(w, OkInfo::default()).await,
                    Err(e) => self.error(w, e.into()).await,
                }
            }
            Local::Explain(plan) => {
                let rows: Vec<Vec<Option<String>>> = plan
                    .targets
                    .into_iter()
                    .map(|t| vec![Some(t.node), Some(t.sql.to_string())])
                    .collect();
                write_text_rows(w, &["DATA_NODE", "SQL"], rows).await
            }
            Local::ExplainTree(plan) => {
                let tree = crate::route::explain::text(&plan);
                write_text_rows(w, &["EXPLAIN"], std::iter::once(vec![Some(tree)])).await
            }
            Local::VersionComment(label) => {
                write_text_rows(
                    w,
                    &[&label],
                    std::iter::once(vec![Some(crate::version::VERSION_COMMENT.to_string())]),
                )
                .await
            }
            Local::WarningCount(label) => {
                write_unsigned(w, label, u64::from(self.warning_count)).await
            }
            Local::ErrorCount(label) => {
                let errors = self.warnings.iter().filter(|r| is_error(r)).count();
                write_unsigned(w, label, errors as u64).await
            }
            Local::Counts(columns) => {
                let errors = self.warnings.iter().filter(|r| is_error(r)).count() as u64;
                let warnings = u64::from(self.warning_count);
                let (wire, values): (Vec<WireColumn>, Vec<u64>) = columns
                    .into_iter()
                    .map(|(label, condition)| {
                        let column = WireColumn {
                            table: String::new(),
                            column: label,
                            coltype: ColumnType::MYSQL_TYPE_LONGLONG,
                            colflags: ColumnFlags::UNSIGNED_FLAG | ColumnFlags::NOT_NULL_FLAG,
                        };
                        let value = match condition {
                            Condition::Warnings => warnings,
                            Condition::Errors => errors,
                        };
                        (column, value)
                    })
                    .unzip();
                let mut rw = w.start(&wire).await?;
                for v in values {
                    rw.write_col(v)?;
                }
                rw.end_row().await?;
                rw.finish().await
            }
            Local::FoundRows(label) => write_unsigned(w, label, self.found_rows).await,
            Local::RowCount(label) => write_signed(w, label, self.row_count).await,
            Local::Autocommit(label) => write_signed(w, label, i64::from(self.autocommit)).await,
            Local::LastInsertId(label) => write_unsigned(w, label, self.last_insert_id).await,
            Local::Database(label) => {
                write_text_rows(w, &[&label], std::iter::once(vec![self.schema.clone()])).await
            }
            Local::Version(label) => {
                let version = crate::version::function_version().to_string();
                write_text_rows(w, &[&label], std::iter::once(vec![Some(version)])).await
            }
        }
    }
}

/// Whether a `SET` item is `TRANSACTION ...` without a scope: the characteristics of the next
/// transaction only (MySQL's rule), which MariaDB refuses inside a transaction (1568); `SET
/// SESSION TRANSACTION ...` is the session's and allowed there. The item's assignment is the
/// statement after `SET` (module `route::set`).
fn next_transaction_characteristics(item: &crate::route::SessionSet) -> bool {
    item.key == "transaction"
        && item
            .assignment
            .split_ascii_whitespace()
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case("TRANSACTION"))
}

/// Whether a `SHOW WARNINGS` row (Level, Code, Message) is an error.
fn is_error(row: &[Option<String>]) -> bool {
    row.first().and_then(|l| l.as_deref()) == Some("Error")
}
