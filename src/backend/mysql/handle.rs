//! The pooled connection handle the engine drives ([`BackendConn`]), its `KILL QUERY` canceller,
//! and the conversions of mysql_async's columns, rows and errors into the backend's types.

use super::*;

pub(super) struct PooledConn {
    pub(super) conn: Holder,
    /// The server's `host:port`.
    pub(super) address: Arc<str>,
    /// The database [`BackendConn::select_database`] asked for, when the connection has another
    /// one selected: `USE` goes in front of the next statement, in the same packet.
    pub(super) use_pending: Option<String>,
    /// Where the GTIDs of this holder's writes go ([`BackendConn::track_writes`]).
    pub(super) track: Option<Arc<super::super::position::Acked>>,
}

/// A connection checked out of the pool, or one opened beside it ([`Backend::connect`]).
pub(super) enum Holder {
    Pooled(super::super::pool::Object<Manager>),
    Direct(Conn),
}

impl std::ops::Deref for Holder {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        match self {
            Holder::Pooled(o) => o,
            Holder::Direct(c) => c,
        }
    }
}

impl std::ops::DerefMut for Holder {
    fn deref_mut(&mut self) -> &mut Conn {
        match self {
            Holder::Pooled(o) => o,
            Holder::Direct(c) => c,
        }
    }
}

impl PooledConn {
    /// Sends a pending `USE` on its own (for a command that cannot carry it).
    pub(super) async fn flush_use(&mut self) -> Result<(), BackendError> {
        if let Some(db) = self.use_pending.take() {
            let c: &mut Conn = &mut self.conn;
            c.in_flight = true;
            c.conn
                .query_drop(use_statement(&db))
                .await
                .map_err(convert_error)?;
            c.in_flight = false;
            c.database = Some(db);
        }
        Ok(())
    }
}

/// `USE` of `database`, quoted.
pub(super) fn use_statement(database: &str) -> String {
    format!("USE `{}`", database.replace('`', "``"))
}

#[async_trait]
impl BackendConn for PooledConn {
    fn address(&self) -> &str {
        &self.address
    }

    /// Sends nothing yet when the connection has another database selected: `USE` goes in
    /// front of the next statement, in the same packet (`USE db;<statement>`, its OK read and
    /// dropped), as Mycat sends its re-synchronisation preamble (SPEC §4.10). The pool hands
    /// out a connection of another database when the wanted one has none idle (as Mycat's
    /// does); with two dataNodes on one dataHost and 16 sysbench clients that was 13-18 % of
    /// point selects, each paying a round trip. A `USE` that fails (the database is gone) fails the statement with the
    /// server's error, and the statement is not run.
    async fn select_database(&mut self, database: &str) -> Result<(), BackendError> {
        self.use_pending =
            (self.conn.database.as_deref() != Some(database)).then(|| database.to_string());
        Ok(())
    }

    fn track_writes(&mut self, acked: Arc<super::super::position::Acked>) {
        self.track = Some(acked);
    }

    /// `SET GLOBAL read_only = 1` (MariaDB 10.11 wants `READ_ONLY ADMIN` for it, which also
    /// lets the account write regardless), then `KILL CONNECTION` of every other connection
    /// of this account (`information_schema.PROCESSLIST`); one gone meanwhile is skipped.
    async fn fence(&mut self) -> Result<(Result<(), String>, usize), BackendError> {
        self.flush_use().await?;
        let c: &mut Conn = &mut self.conn;
        c.dirty = true;
        c.in_flight = true;
        let read_only = match c.conn.query_drop("SET GLOBAL read_only = 1").await {
            Ok(()) => Ok(()),
            Err(mysql_async::Error::Server(e)) => Err(format!("{} ({})", e.message, e.code)),
            Err(e) => return Err(convert_error(e)),
        };
        let ids: Vec<u64> = c
            .conn
            .query(
                "SELECT id FROM information_schema.PROCESSLIST \
                 WHERE user = SUBSTRING_INDEX(CURRENT_USER(), '@', 1) AND id <> CONNECTION_ID()",
            )
            .await
            .map_err(convert_error)?;
        let mut killed = 0;
        for id in ids {
            if c.conn
                .query_drop(format!("KILL CONNECTION {id}"))
                .await
                .is_ok()
            {
                killed += 1;
            }
        }
        c.in_flight = false;
        Ok((read_only, killed))
    }

    async fn unfence(&mut self) -> Result<(), BackendError> {
        self.flush_use().await?;
        let c: &mut Conn = &mut self.conn;
        c.dirty = true;
        c.in_flight = true;
        c.conn
            .query_drop("SET GLOBAL read_only = 0")
            .await
            .map_err(convert_error)?;
        c.in_flight = false;
        Ok(())
    }

    fn canceller(&self) -> Option<Arc<dyn Canceller>> {
        Some(self.conn.canceller.clone())
    }

    fn warning_count(&self) -> Option<Arc<AtomicU16>> {
        Some(self.conn.warnings.clone())
    }

    /// `SHOW GRANTS`, which on MariaDB also lists the grants of the role enabled at login
    /// (`SHOW GRANTS FOR CURRENT_USER` would not), judged by [`grants::mysql_excess`].
    async fn excess_privileges(&mut self) -> Result<Vec<ExcessPrivilege>, BackendError> {
        let lines = match self.query("SHOW GRANTS").await? {
            Response::Ok(_) => Vec::new(),
            Response::Rows { mut rows, .. } => {
                let mut lines = Vec::new();
                while let Some(row) = rows.next().await {
                    if let Some(text) = row?.first().and_then(Value::to_text) {
                        lines.push(text);
                    }
                }
                lines
            }
        };
        if lines.is_empty() {
            return Err(BackendError::Other(
                "SHOW GRANTS returned no grant".to_string(),
            ));
        }
        Ok(grants::mysql_excess(&lines))
    }

    /// Marks the connection as waiting for an answer that may still come ([`Conn::in_flight`]):
    /// its pool closes it instead of reusing it.
    fn abandon(&mut self) {
        self.conn.in_flight = true;
    }

    async fn describe(&mut self, sql: &str) -> Result<(usize, Vec<Column>), BackendError> {
        // COM_STMT_PREPARE carries one statement: a pending `USE` goes first, on its own.
        self.flush_use().await?;
        let c: &mut Conn = &mut self.conn;
        // A prepared (then closed) statement: not on the stateless list, reset afterwards.
        c.before("").await?;
        c.dirty = true;
        c.in_flight = true;
        let described = describe(&mut c.conn, sql).await?;
        c.in_flight = false;
        Ok(described)
    }

    /// Sends nothing yet: `START TRANSACTION` goes in front of the next statement, in the same
    /// packet (`START TRANSACTION;<statement>`, a multi-statement query whose first result, an
    /// OK, is read and dropped). That saves a round trip per dataNode per transaction. A
    /// `COMMIT` or `ROLLBACK` that comes first ends the empty transaction without a word to
    /// the server. An inherited connection is not reset inside the transaction (that would
    /// roll it back): what a previous holder's plain SELECTs leave that `START TRANSACTION`
    /// does not clear (warnings, `ROW_COUNT()`) is `FOUND_ROWS()`, cleared per statement, and
    /// the session's status counters (`SHOW SESSION STATUS`).
    async fn begin(&mut self) -> Result<(), BackendError> {
        let c: &mut Conn = &mut self.conn;
        c.before("START TRANSACTION").await?;
        c.begin_pending = true;
        c.inherited = false;
        Ok(())
    }

    async fn query<'a>(&'a mut self, sql: &'a str) -> Result<Response<'a>, BackendError> {
        let c: &'a mut Conn = &mut self.conn;
        c.warnings.store(0, Ordering::Relaxed);
        if c.unread {
            // The abandoned rows' end, read on a ping (see `unread`): their error is no longer
            // anyone's, a broken connection is this statement's.
            c.check_in_step()?;
            c.in_flight = true;
            let drained = c.conn.ping().await;
            c.in_flight = false;
            c.unread = false;
            match drained {
                Ok(()) | Err(mysql_async::Error::Server(_)) => {}
                Err(e) => return Err(convert_error(e)),
            }
        }
        let kind = c.before(sql).await?;
        let begin = std::mem::take(&mut c.begin_pending);
        if begin && kind == Kind::End {
            // Nothing ran in the transaction: there is nothing to end.
            c.open_transaction = false;
            return Ok(Response::Ok(OkInfo::default()));
        }
        let renamed = isolation_names(c.conn.server_version())
            .and_then(|r| crate::sqltext::rename_system_variables(sql, r));
        let use_db = self.use_pending.take();
        let track = self
            .track
            .clone()
            .filter(|_| super::super::position::is_write(sql));
        let tracked = track.is_some();
        let clears =
            c.foreign_found_rows && crate::sqltext::contains_ignore_ascii_case(sql, "FOUND_ROWS");
        c.foreign_found_rows &= !clears;
        // A SELECT read to its end sets FOUND_ROWS() to its own count: from then on the
        // connection's value is this holder's (the gateway asks it after `LIMIT m, n`). So
        // does the result of an SQL-level `EXECUTE` (of a statement this holder prepared; the
        // gateway asks only after one of a SELECT).
        let own_found_rows = ["SELECT", "EXECUTE"].iter().any(|k| {
            sql.trim_start()
                .get(..k.len())
                .is_some_and(|w| w.eq_ignore_ascii_case(k))
        });
        let foreign_found_rows = &mut c.foreign_found_rows;
        let stateless = kind != Kind::Other;
        // Dirty until the statement is seen to end cleanly (a result dropped half-read, an
        // error or warnings keep it so).
        let dirty_before = c.dirty;
        c.dirty = true;
        let dirty = &mut c.dirty;
        let warnings: &'a AtomicU16 = &c.warnings;
        let unread = &mut c.unread;
        let open_transaction = &mut c.open_transaction;
        // From the send until the statement's own result (or error) is in: see `in_flight`.
        // A future that completes has read what it waited for, error or not.
        let in_flight = &mut c.in_flight;
        *in_flight = true;
        let conn = &mut c.conn;
        let database = &mut c.database;
        let sent = async move {
            if !(begin || clears || use_db.is_some() || tracked || renamed.is_some()) {
                return conn.query_iter(sql).await;
            }
            let mut text = String::with_capacity(sql.len() + 64);
            if let Some(db) = &use_db {
                text.push_str(&use_statement(db));
                text.push(';');
            }
            if begin {
                text.push_str("START TRANSACTION;");
            }
            if clears {
                text.push_str(CLEAR_FOUND_ROWS);
                text.push(';');
            }
            text.push_str(renamed.as_deref().unwrap_or(sql));
            if tracked {
                // Read after the statement's result: its OK, then this one-row result. The
                // line break ends a `-- ` or `#` comment the statement may end with.
                text.push_str("\n;SELECT @@last_gtid");
            }
            let skip = usize::from(use_db.is_some()) + usize::from(begin) + usize::from(clears);
            // The first result is USE's when there is one: a failed USE ends the packet there,
            // with the database unchanged.
            let mut r = conn.query_iter(text).await?;
            if let Some(db) = use_db {
                *database = Some(db);
            }
            // Reading past a result moves to the next one: past USE's and START TRANSACTION's
            // OK and the empty result to the statement's result, or its error.
            for _ in 0..skip {
                r.next().await?;
            }
            Ok(r)
        }
        .await;
        *in_flight = false;
        let result = sent.map_err(convert_error)?;
        let columns = result.columns_ref();
        if columns.is_empty() {
            let ok = OkInfo {
                affected_rows: result.affected_rows(),
                last_insert_id: result.last_insert_id(),
                warnings: result.warnings(),
                info: result.info().into_owned(),
            };
            *in_flight = true;
            let mut result = result;
            if let Some(acked) = &track {
                // Past the statement's OK to the GTID's result, then its one row.
                let gtid = async {
                    result.next().await?;
                    let row = result.next().await?;
                    Ok::<_, mysql_async::Error>(row.and_then(|r| r.get_opt::<String, _>(0)?.ok()))
                }
                .await
                .map_err(convert_error)?;
                if let Some(g) = gtid {
                    acked.record(&g);
                }
            }
            let dropped = result.drop_result().await;
            *in_flight = false;
            dropped.map_err(convert_error)?;
            warnings.store(ok.warnings, Ordering::Relaxed);
            if stateless && ok.warnings == 0 {
                *dirty = dirty_before;
                if kind == Kind::End {
                    *open_transaction = false;
                }
            }
            return Ok(Response::Ok(ok));
        }
        let columns: Arc<[Column]> = columns.iter().map(convert_column).collect();
        *unread = true;
        let state = (result, dirty, unread, foreign_found_rows);
        let rows =
            futures::stream::try_unfold(state, move |(mut result, dirty, unread, foreign)| {
                let track = track.clone();
                async move {
                    match result.next().await {
                        Ok(Some(row)) => {
                            Ok(Some((convert_row(row), (result, dirty, unread, foreign))))
                        }
                        Ok(None) => {
                            if let Some(acked) = track {
                                // A tracked statement's rows (INSERT ... RETURNING, or one that
                                // could not be told from a write): the GTID's result follows.
                                let gtid = async {
                                    let row = result.next().await?;
                                    while result.next().await?.is_some() {}
                                    Ok::<_, mysql_async::Error>(
                                        row.and_then(|r| r.get_opt::<String, _>(0)?.ok()),
                                    )
                                }
                                .await;
                                match gtid {
                                    Ok(Some(g)) => acked.record(&g),
                                    Ok(None) => {}
                                    Err(e) => {
                                        *unread = false;
                                        return Err(convert_error(e));
                                    }
                                }
                            }
                            *unread = false;
                            if own_found_rows {
                                *foreign = false;
                            }
                            let count = result.warnings();
                            warnings.store(count, Ordering::Relaxed);
                            if stateless && count == 0 {
                                *dirty = dirty_before;
                            }
                            Ok(None)
                        }
                        Err(e) => {
                            *unread = false;
                            Err(convert_error(e))
                        }
                    }
                }
            });
        Ok(Response::Rows {
            columns,
            rows: rows.boxed(),
        })
    }
}

/// Interrupts a MySQL connection's statement: `KILL QUERY <thread id>` sent on a connection of
/// its own to the same server (opened beside the pool, closed afterwards).
#[derive(Debug)]
pub(super) struct KillQuery {
    pub(super) opts: mysql_async::Opts,
    pub(super) thread: u32,
    pub(super) connect_timeout: Duration,
}

impl KillQuery {
    /// Sends `KILL <what> <thread>` on a connection of its own.
    pub(super) async fn kill(&self, what: &str) -> Result<(), BackendError> {
        let kill = async {
            let mut conn = mysql_async::Conn::new(self.opts.clone()).await?;
            let killed = conn
                .query_drop(format!("KILL {what} {}", self.thread))
                .await;
            let _ = conn.disconnect().await;
            killed
        };
        match tokio::time::timeout(self.connect_timeout, kill).await {
            Ok(result) => result.map_err(convert_error),
            Err(_) => Err(BackendError::Timeout(format!(
                "KILL {what} {}: no answer within {} ms",
                self.thread,
                self.connect_timeout.as_millis()
            ))),
        }
    }
}

#[async_trait]
impl Canceller for KillQuery {
    async fn cancel(&self) -> Result<(), BackendError> {
        self.kill("QUERY").await
    }

    async fn close(&self) -> Result<(), BackendError> {
        self.kill("CONNECTION").await
    }
}

/// `describe` for MySQL: COM_STMT_PREPARE, then COM_STMT_CLOSE so no server-side statement
/// outlives the call.
pub(super) async fn describe(
    conn: &mut mysql_async::Conn,
    sql: &str,
) -> Result<(usize, Vec<Column>), BackendError> {
    let stmt = conn.prep(sql).await.map_err(convert_error)?;
    let out = (
        usize::from(stmt.num_params()),
        stmt.columns().iter().map(convert_column).collect(),
    );
    conn.close(stmt).await.map_err(convert_error)?;
    Ok(out)
}

pub(super) fn convert_column(c: &mysql_async::Column) -> Column {
    Column {
        name: c.name_str().into_owned(),
        table: c.table_str().into_owned(),
        column_type: c.column_type(),
        flags: c.flags(),
        charset: c.character_set(),
        length: c.column_length(),
        decimals: c.decimals(),
    }
}

pub(super) fn convert_row(row: mysql_async::Row) -> Row {
    row.unwrap()
        .into_iter()
        .map(|v| match v {
            mysql_async::Value::NULL => Value::Null,
            mysql_async::Value::Bytes(b) => Value::Bytes(b),
            mysql_async::Value::Int(i) => Value::Int(i),
            mysql_async::Value::UInt(u) => Value::UInt(u),
            mysql_async::Value::Float(f) => Value::Double(f as f64),
            mysql_async::Value::Double(f) => Value::Double(f),
            // The text protocol never yields the temporal variants; render them as text if a
            // driver path ever does.
            other => Value::Bytes(other.as_sql(true).trim_matches('\'').as_bytes().to_vec()),
        })
        .collect()
}

pub(super) fn convert_error(e: mysql_async::Error) -> BackendError {
    match e {
        mysql_async::Error::Server(s) => BackendError::Server {
            code: s.code,
            state: s.state,
            message: s.message,
        },
        mysql_async::Error::Io(io) => BackendError::Closed(io.to_string()),
        mysql_async::Error::Driver(mysql_async::DriverError::ConnectionClosed) => {
            BackendError::Closed("connection to the server is closed".to_string())
        }
        other => BackendError::Other(other.to_string()),
    }
}

/// The names of the isolation and read-only variables a server does not know, as renames to
/// the ones it does (see [`crate::sqltext::rename_system_variables`]): MySQL before 5.7.20 and
/// MariaDB before 11.1.1 know only `tx_isolation` / `tx_read_only`, MySQL 8.0 only
/// `transaction_isolation` / `transaction_read_only`, MySQL 5.7.20+ and MariaDB 11.1.1+ both.
/// `version` is the server's (MariaDB's own number, not its `5.5.5-` prefix).
pub(super) fn isolation_names(
    version: (u16, u16, u16),
) -> Option<&'static [(&'static str, &'static str)]> {
    const TO_TX: &[(&str, &str)] = &[
        ("transaction_isolation", "tx_isolation"),
        ("transaction_read_only", "tx_read_only"),
    ];
    const TO_TRANSACTION: &[(&str, &str)] = &[
        ("tx_isolation", "transaction_isolation"),
        ("tx_read_only", "transaction_read_only"),
    ];
    match version {
        v if v < (5, 7, 20) => Some(TO_TX),
        v if v < (8, 0, 0) => None,
        v if v < (10, 0, 0) => Some(TO_TRANSACTION),
        v if v < (11, 1, 1) => Some(TO_TX),
        _ => None,
    }
}
