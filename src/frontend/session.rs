//! One client connection.
//!
//! State machine of a session: connected → authenticated (user set, optional schema) → serving
//! commands until the client quits. Transactions: from `BEGIN` / `START TRANSACTION`, or any
//! statement while `autocommit=0`, until `COMMIT` / `ROLLBACK`, each dataNode the session touches
//! gets one backend connection that stays pinned to the session, with a transaction started on it;
//! reads inside the transaction therefore see its writes. Outside a transaction every statement
//! takes pooled connections and gives them back. A client that leaves mid-transaction has every
//! pinned connection rolled back before it returns to its pool.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use futures::StreamExt;
use opensrv_mysql::{
    AsyncMysqlIntermediary, AsyncMysqlShim, Column as WireColumn, ColumnFlags, ColumnType,
    ErrorKind, InitWriter, OkResponse, ParamParser, QueryResultWriter, StatementMetaWriter,
    StatusFlags,
};
use tokio::net::TcpStream;

use super::Server;
use super::auth;
use super::binary::{Cell, TextRow};
use super::commands::{Commands, DIVERTED_QUERY, Diverted, Statements};
use super::error::MysqlError;
use super::prepared::{self, Prepared};
use super::registry::{Handle, Registry};
use super::reload::Generation;
use super::tap::{ColumnMeta, ErrPacket, ErrorSlot, Tap};
use super::tls::{self, ClientWrite};
use crate::backend::SavepointOp;
use crate::backend::{BackendConn, Column, OkInfo, Response};
use crate::datahost::Intent;
use crate::engine::{self, Output};
use crate::route::{
    Access, Completion, HostHint, Local, OkMerge, ParentLookup, Plan, PlanCache, Routed,
    SessionSet, SessionView, SqlMode,
};
use crate::sqltext::SavepointName;

type Writer = Tap<ClientWrite>;

/// Serves one client until it quits or the connection fails.
///
/// `manager`: a client of the manager port (module [`super::manager`]): same login, classic
/// EOF-framed result sets, manager commands instead of SQL, not in the registry of sessions
/// (`KILL`, `show @@connection` list the server port's clients).
pub async fn run(
    server: Arc<Server>,
    stream: TcpStream,
    peer: SocketAddr,
    id: u32,
    manager: bool,
) -> io::Result<()> {
    let local_port = stream.local_addr().map(|a| a.port()).unwrap_or(0);
    let (read, write, tls) = tls::split(stream, server.tls.as_ref(), peer.to_string());
    let slot = ErrorSlot::default();
    let statements = Statements::default();
    let handle = Arc::new(Handle::new(peer, local_port));
    let (handle, _registered) = if manager {
        slot.classic_eof();
        (handle, None)
    } else {
        let (h, r) = Registry::register(&server, id, handle);
        (h, Some(r))
    };
    // Copied out: a session must not hold the configuration for its whole life (a reload
    // waits for the dataHosts it replaced to be let go).
    let (max_packet, auth_timeout) = {
        let generation = server.current();
        let system = &generation.config.system;
        (
            system.max_packet_size,
            std::time::Duration::from_millis(system.auth_timeout_ms),
        )
    };
    let session = Session {
        server,
        manager,
        handle: handle.clone(),
        id,
        peer,
        salt: scramble(),
        slot: slot.clone(),
        user: OnceLock::new(),
        schema: None,
        autocommit: true,
        in_transaction: false,
        xa_on: false,
        xa: None,
        interrupted: None,
        pinned: HashMap::new(),
        kept: HashMap::new(),
        sticky: None,
        locks: None,
        savepoints: Vec::new(),
        prepared: HashMap::new(),
        next_statement: 1,
        state: Vec::new(),
        sql_mode: SqlMode::default(),
        access: OnceLock::new(),
        plans: PlanCache::default(),
        binary: false,
        last_insert_id: 0,
        warnings: Vec::new(),
        warning_count: 0,
        found_rows: 0,
        next_insert_id: None,
        statements: statements.clone(),
        tls,
        generation: None,
        seen_generation: 0,
        plans_generation: 0,
        tally: Tally::default(),
    };
    slot.set_status(StatusFlags::SERVER_STATUS_AUTOCOMMIT.bits());
    let serve = AsyncMysqlIntermediary::run_on(
        session,
        Commands::new(read, statements, slot.clone(), max_packet),
        Tap::new(write, slot),
    );
    // One span per client connection: every event of the session carries its id, peer and
    // (once logged in) user, in text and JSON logs alike.
    let span = tracing::info_span!(
        "conn",
        id,
        %peer,
        port = if manager { "manager" } else { "server" },
        user = tracing::field::Empty
    );
    let session = async {
        // Biased: a session that killed itself writes its answer before it ends.
        tokio::select! {
            biased;
            served = serve => served,
            _ = handle.killed() => {
                // Dropping the session rolls back its transaction and closes the client socket.
                tracing::info!("connection killed");
                Ok(())
            }
            _ = super::limits::login_deadline(&handle, auth_timeout) => {
                tracing::info!(?auth_timeout, "login not completed within authTimeout: closed");
                Ok(())
            }
        }
    };
    tracing::Instrument::instrument(session, span).await
}

/// 20 random scramble bytes, none of them NUL or `$` (the handshake's terminators).
fn scramble() -> [u8; 20] {
    let mut s: [u8; 20] = rand::random();
    for b in &mut s {
        *b = (*b % 0x7E).max(1);
        if *b == b'$' {
            *b += 1;
        }
    }
    s
}

struct Session {
    server: Arc<Server>,
    /// A manager-port client (module [`super::manager`]).
    manager: bool,
    /// This session in the server's registry (`KILL`).
    handle: Arc<Handle>,
    id: u32,
    peer: SocketAddr,
    salt: [u8; 20],
    slot: ErrorSlot,
    /// Set once authentication succeeds.
    user: OnceLock<String>,
    schema: Option<String>,
    autocommit: bool,
    /// `BEGIN` was issued and not yet ended.
    in_transaction: bool,
    /// Why the open transaction can only be rolled back: a statement failed on some dataNodes
    /// after others had applied it (Mycat's "interrupted" transaction, SPEC §7.3).
    interrupted: Option<String>,
    /// Connections pinned to the open transaction, by dataNode.
    pinned: HashMap<String, Box<dyn BackendConn>>,
    /// Connections kept for the session outside its transactions, by dataNode: session
    /// affinity, as ProxySQL disables multiplexing.
    ///
    /// The rule: once a statement of the session may have left state in its backend
    /// connection that a later statement reads — a temporary table (`CREATE TEMPORARY
    /// TABLE`), a user variable assigned inside a statement (`SELECT @x := 5`; a `SET @x` is
    /// replayed on every connection instead, see [`Session::state`]), a named lock
    /// (`GET_LOCK`) — the session keeps every backend connection it takes from then on, for
    /// the rest of the session: its statements run on them (a dataNode it had no connection
    /// for gets one, kept too), a transaction's pinned connections come from them and go back
    /// to them at `COMMIT` / `ROLLBACK`. Only `COM_RESET_CONNECTION` (which clears that state
    /// on the backends too), `COM_CHANGE_USER` and the end of the session let them go. Nothing
    /// proves such state gone earlier (a `DROP TEMPORARY TABLE` may leave another one), so
    /// nothing else does. `LOCK TABLES` keeps connections the same way ([`Session::locks`]),
    /// and `UNLOCK TABLES` lets them go when nothing else made the session sticky.
    ///
    /// `PREPARE` / `EXECUTE` stay refused by the router (dynamic SQL), and `FOUND_ROWS()`,
    /// `LAST_INSERT_ID()` are answered by the gateway from its own counts, so neither needs
    /// affinity. Returned to its pool, a kept connection is reset (`COM_RESET_CONNECTION`:
    /// temporary tables, variables and named locks go); one holding table locks gets `UNLOCK
    /// TABLES` first, and is closed when that fails. A kept connection that is lost ends the
    /// session after the statement's error (its state is gone). Limits: an XA transaction
    /// (`SET XA = ON`, `twoPhaseCommit`) runs on pooled connections, not the kept ones (the
    /// coordinator keeps its connections at the end, and the state would go with them): the
    /// kept state is not visible inside it, and state made inside it does not outlive it; such
    /// a session's multi-node autocommit writes are not two-phase.
    kept: HashMap<String, Box<dyn BackendConn>>,
    /// What made the session keep its connections ([`Session::kept`]), for logs; `None` until
    /// a statement leaves such state.
    sticky: Option<&'static str>,
    /// The tables the session locked with `LOCK TABLES` (SPEC §7.6), until `UNLOCK TABLES`,
    /// `BEGIN` / `START TRANSACTION` (which unlock, as in MySQL), `COM_RESET_CONNECTION` or
    /// the end of the session. Each target's connection is in [`Session::kept`] (or, inside
    /// a transaction, [`Session::pinned`]) while it is set. A statement naming a table
    /// outside the set gets 1100 from the gateway; `COMMIT` / `ROLLBACK` keep the locks.
    locks: Option<crate::route::LockTables>,
    /// The open transaction's savepoints, oldest first (`SAVEPOINT name`; a name set again
    /// moves to the end, as MySQL replaces it).
    ///
    /// Across dataNodes: a savepoint is set on every connection pinned to the transaction
    /// when the client sets it, and a dataNode that joins the transaction later gets all the
    /// savepoints of this list set on its connection when it joins, before its first
    /// statement runs ([`Session::replay_savepoints`]). That is exact: the node has done
    /// nothing in the transaction before it joins, so its state at each earlier savepoint is
    /// its state at the join, and a later `ROLLBACK TO sp` (sent to every pinned connection)
    /// undoes all it did since, which is all it did after `sp`, while its connection stays in
    /// the transaction. Every pinned connection therefore holds every savepoint of this list,
    /// in the list's order, and `ROLLBACK TO` / `RELEASE` are sent to all of them alike. The
    /// alternative (rolling such a node back whole at `ROLLBACK TO`) would need a branch
    /// rollback and restart under XA; the cost here is one round trip per savepoint when a
    /// node joins a transaction that holds savepoints.
    ///
    /// The list is the truth for the client: a name not in it gets 1305 without asking any
    /// backend. A savepoint statement that fails on some connection leaves the nodes
    /// disagreeing, and marks the transaction [`Session::interrupted`].
    savepoints: Vec<SavepointName>,
    /// `SET XA = ON` was issued: the session's next (or current, still empty) transaction is
    /// an XA transaction (Mycat's rule: for one transaction, SPEC §7.4).
    xa_on: bool,
    /// The open transaction's XA state when it is one (module [`crate::xa`]).
    xa: Option<XaTx>,
    /// Parameter counts and types of prepared statements, shared with the socket reader.
    statements: Statements,
    /// Statements prepared by the client (COM_STMT_PREPARE), by statement id.
    prepared: HashMap<u32, Prepared>,
    /// The id the next prepared statement gets.
    next_statement: u32,
    /// The last insert id a statement of this session reported (`LAST_INSERT_ID()`).
    last_insert_id: u64,
    /// `SHOW WARNINGS` rows (Level, Code, Message) of the last statement that ran on dataNodes
    /// and ended with an OK or EOF packet counting warnings (at most [`MAX_ERROR_COUNT`]).
    warnings: Vec<Vec<Option<String>>>,
    /// That statement's warning count, as its OK or EOF packet gave it (`@@warning_count`).
    warning_count: u16,
    /// `FOUND_ROWS()` of the last result set that went to the client ([`Local::FoundRows`]).
    found_rows: u64,
    /// The insert id the next OK packet reports (the first key drawn from a sequence).
    next_insert_id: Option<u64>,
    /// Session state the client set (`SET NAMES`, `sql_mode`, user variables...), replayed on
    /// every backend connection the session takes.
    state: Vec<SessionSet>,
    /// The lexing part of the backend sessions' `sql_mode` (module `route::lex`), as read back
    /// from a backend after each `SET` that may change it.
    sql_mode: SqlMode,
    /// What the logged-in user may reach, made on first use (`None` before login).
    access: OnceLock<Option<Access>>,
    /// Plans of statements whose routing does not depend on their literals, by shape.
    plans: PlanCache,
    /// The statement being answered is a COM_STMT_EXECUTE (rows in the binary protocol).
    binary: bool,
    /// The connection's TLS state, when the server offers TLS.
    tls: Option<tls::Link>,
    /// The configuration the command in progress, or the open transaction, runs on; `None`
    /// between commands outside a transaction (module [`super::reload`]).
    generation: Option<Arc<Generation>>,
    /// The number of the newest generation this session saw: `access` was made under it.
    seen_generation: u64,
    /// The number of the generation `plans` were made under.
    plans_generation: u64,
    /// What the statement being answered did, for the recorder ([`Session::run_query`]).
    tally: Tally,
}

/// An open XA transaction of the session: its global id and the dataNodes written.
#[derive(Debug)]
struct XaTx {
    gtrid: String,
    written: std::collections::BTreeSet<String>,
}

/// What one statement did, gathered while it runs and handed to the recorder
/// ([`crate::stats::Recorder::record`]) when it ends; its errno and affected rows come from
/// the packets written ([`ErrorSlot::take_outcome`]).
#[derive(Debug, Default)]
struct Tally {
    /// Rows of its result set.
    rows: u64,
    /// The dataNodes it ran on.
    nodes: Vec<String>,
    /// The logical tables it named (its plan's).
    tables: Arc<[String]>,
    /// It only read (the plan's `read_only`; answers of the gateway count as reads).
    read: bool,
    /// It ran on dataNodes (else the gateway answered).
    planned: bool,
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(tx) = self.xa.take() {
            if self.pinned.is_empty() {
                self.server.xa.forget(&tx.gtrid);
            } else if let Ok(handle) = tokio::runtime::Handle::try_current() {
                // A client that left mid-XA-transaction: its branches are rolled back.
                let pinned: Vec<_> = self.pinned.drain().collect();
                let pending = super::Pending::new(&self.server);
                let xa = self.server.xa.clone();
                handle.spawn(async move {
                    let _pending = pending;
                    let branches = pinned
                        .into_iter()
                        .map(|(node, conn)| crate::xa::Branch {
                            node,
                            conn,
                            written: false,
                        })
                        .collect();
                    if let Err(failed) = xa.rollback(&tx.gtrid, branches).await {
                        // A connection a KILL closed mid-statement: its server rolls the
                        // (never prepared) branch back as the connection closes.
                        tracing::info!(gtrid = %tx.gtrid, ?failed, "XA rollback after the client left failed on some connections; they are closed, which rolls their branches back");
                    }
                });
            }
        }
        if self.locks.take().is_some() {
            // Table locks never go back to a pool: `UNLOCK TABLES` on every connection that
            // may hold them (a transaction's too, after its rollback below), and a connection
            // where it fails is closed instead.
            let mut conns: Vec<_> = self.kept.drain().collect();
            let pinned: Vec<_> = self.pinned.drain().collect();
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                let pending = super::Pending::new(&self.server);
                let id = self.id;
                handle.spawn(async move {
                    let _pending = pending;
                    for (node, mut conn) in pinned {
                        let _ = run_simple(conn.as_mut(), "ROLLBACK").await;
                        conns.push((node, conn));
                    }
                    for (node, mut conn) in conns {
                        if let Err(e) = run_simple(conn.as_mut(), "UNLOCK TABLES").await {
                            tracing::info!(connection = id, %node, error = %e, "UNLOCK TABLES after the client left failed: the connection is closed");
                            conn.abandon();
                        }
                    }
                });
            } else {
                for (_, mut conn) in conns.into_iter().chain(pinned) {
                    conn.abandon();
                }
            }
            return;
        }
        // Kept connections go back to their pools, which reset them.
        self.kept.clear();
        if self.pinned.is_empty() {
            return;
        }
        let pinned: Vec<_> = self.pinned.drain().collect();
        let id = self.id;
        // A client that left mid-transaction: roll back before the connections are reused.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            // Counted until done: a graceful shutdown waits for it (`Server::drain`).
            let pending = super::Pending::new(&self.server);
            handle.spawn(async move {
                let _pending = pending;
                for (node, mut conn) in pinned {
                    let mut done = run_simple(conn.as_mut(), "ROLLBACK").await;
                    if done.as_ref().is_err_and(|e| e.server_error().is_some()) {
                        // The first call may only have read the end of a statement that was
                        // interrupted when the client left (1317): the ROLLBACK itself follows.
                        done = run_simple(conn.as_mut(), "ROLLBACK").await;
                    }
                    if let Err(e) = done {
                        tracing::warn!(connection = id, %node, error = %e, "rollback after client disconnect failed");
                    }
                }
            });
        }
    }
}

/// Which server a statement outside a transaction asks for: writes and master-forced reads the
/// active writeHost, `db_type=slave` reads a readHost, other reads per `balance`. (Inside a
/// transaction every statement uses its pinned writeHost connection, DECISIONS.md item 12.)
fn intent(plan: &Plan) -> Intent {
    match (plan.read_only, plan.host) {
        (false, _) | (true, HostHint::Master) => Intent::Write,
        (true, HostHint::Slave) => Intent::Replica,
        (true, HostHint::None) => Intent::Read,
    }
}

/// Starts a transaction on `node`'s connection; the error names the node.
async fn begin_on(conn: &mut dyn BackendConn, node: &str) -> Result<(), MysqlError> {
    conn.begin().await.map_err(|source| {
        MysqlError::from(crate::engine::EngineError {
            node: node.to_string(),
            source,
            applied: None,
        })
    })
}

/// MySQL's 1305 for a savepoint the transaction does not hold, naming it as the client wrote
/// it.
fn no_such_savepoint(name: &SavepointName) -> MysqlError {
    MysqlError::new(
        1305,
        "42000",
        format!("SAVEPOINT {} does not exist", name.written()),
    )
}

/// Whether a statement's error means its server rolled back the whole transaction, not only
/// the statement: MySQL's deadlock victim (1213, also PostgreSQL's 40P01 / 40001 as mapped)
/// and the XA branch rollbacks (1402 `XA_RBROLLBACK`, 1613 `XA_RBTIMEOUT`, 1614
/// `XA_RBDEADLOCK`).
fn ends_transaction(e: &crate::backend::BackendError) -> bool {
    e.server_error()
        .is_some_and(|(code, _, _)| matches!(code, 1213 | 1402 | 1613 | 1614))
}

/// Starts XA branch (`gtrid`, `node`) on `node`'s connection; the error names the node.
async fn xa_start_on(
    xa: &crate::xa::Coordinator,
    conn: &mut dyn BackendConn,
    gtrid: &str,
    node: &str,
) -> Result<(), MysqlError> {
    conn.xa_start(&crate::backend::Xid::new(gtrid, node))
        .await
        .map_err(|source| {
            MysqlError::from(crate::engine::EngineError {
                node: node.to_string(),
                source,
                applied: None,
            })
        })?;
    xa.joined(gtrid, node);
    Ok(())
}

/// A string value as SQL that every `sql_mode` reads the same: quoted when it holds no quote or
/// backslash, else spelled in hex (a backslash means one thing under NO_BACKSLASH_ESCAPES and
/// another without, and the replay may run under either).
fn replay_literal(text: &str) -> String {
    if !text.contains(['\\', '\'']) {
        return format!("'{text}'");
    }
    let hex: String = text.bytes().map(|b| format!("{b:02X}")).collect();
    format!("CONVERT(X'{hex}' USING utf8mb4)")
}

/// Runs a statement whose result is not needed.
async fn run_simple(
    conn: &mut dyn BackendConn,
    sql: &str,
) -> Result<(), crate::backend::BackendError> {
    match conn.query(sql).await? {
        Response::Ok(_) => Ok(()),
        Response::Rows { mut rows, .. } => {
            while let Some(r) = rows.next().await {
                r?;
            }
            Ok(())
        }
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

    /// Tells the registry (manager port) the session's schema, autocommit and pinned
    /// dataNodes, when they changed.
    fn publish(&self) {
        let mut p = self.handle.published_mut();
        if p.schema == self.schema
            && p.autocommit == self.autocommit
            && p.nodes.len() == self.pinned.len()
            && p.nodes.iter().all(|n| self.pinned.contains_key(n))
        {
            return;
        }
        p.schema.clone_from(&self.schema);
        p.autocommit = self.autocommit;
        p.nodes = self.pinned.keys().cloned().collect();
        p.nodes.sort();
    }

    /// Writes a manager command's answer.
    async fn manager_answer(
        &self,
        answer: super::manager::Answer,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        match answer {
            super::manager::Answer::Error(e) => self.error(w, e).await,
            super::manager::Answer::Ok { affected, message } => {
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
            super::manager::Answer::Labelled { columns, row } => {
                let names: Vec<&str> = columns.iter().map(String::as_str).collect();
                write_text_rows(w, &names, std::iter::once(row)).await
            }
            super::manager::Answer::Rows { columns, rows } => {
                write_typed_rows(w, columns.iter().map(|(n, t)| (*n, *t)), rows).await
            }
        }
    }

    fn user_name(&self) -> &str {
        self.user.get().map(String::as_str).unwrap_or("")
    }

    fn status(&self) -> StatusFlags {
        let mut s = StatusFlags::empty();
        if self.autocommit {
            s |= StatusFlags::SERVER_STATUS_AUTOCOMMIT;
        }
        if self.in_transaction || !self.pinned.is_empty() {
            s |= StatusFlags::SERVER_STATUS_IN_TRANS;
        }
        if self.slot.more_results() {
            s |= StatusFlags::SERVER_MORE_RESULTS_EXISTS;
        }
        // Clients that escape parameters themselves (PyMySQL, libmysqlclient's
        // mysql_real_escape_string) read it: the backend session's mode, not manx's default.
        if self.sql_mode.no_backslash_escapes {
            s |= StatusFlags::SERVER_STATUS_NO_BACKSLASH_ESCAPES;
        }
        s
    }

    /// What the router needs of this session (module `route`): every statement a client sends
    /// is routed with it.
    fn view(&self) -> SessionView<'_> {
        let access = self
            .access
            .get_or_init(|| {
                // The newest configuration's users, even inside a transaction that routes on
                // an older one ([`Session::begin_command`]).
                let generation = self.server.current();
                let config = &generation.config;
                self.user
                    .get()
                    .and_then(|u| config.users.get(u))
                    .map(|u| Access::of(config, u))
            })
            .as_ref();
        SessionView {
            schema: self.schema.as_deref(),
            mode: self.sql_mode,
            access,
            columns: self.generation.as_ref().map(|g| &g.column_orders),
        }
    }

    async fn error(&self, w: QueryResultWriter<'_, Writer>, e: MysqlError) -> io::Result<()> {
        tracing::debug!(connection = self.id, code = e.code, message = %e.message, "statement refused");
        send_error(&self.slot, w, e).await
    }

    async fn ok(&self, w: QueryResultWriter<'_, Writer>, ok: OkInfo) -> io::Result<()> {
        write_ok(&self.slot, w, ok, self.status()).await
    }

    /// The configuration this session's command runs on: the one taken when the command began
    /// or the open transaction first needed it, else (between commands) the server's current
    /// one.
    fn generation(&self) -> Arc<Generation> {
        match &self.generation {
            Some(g) => g.clone(),
            None => self.server.current(),
        }
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
        if self.pinned.is_empty() {
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

    /// Checks that the user may use `schema` (1049 unknown, 1044 not allowed).
    fn check_schema(&self, schema: &str) -> Result<(), MysqlError> {
        // Who may use what: the newest configuration's (see `Session::view`).
        let generation = self.server.current();
        let config = &generation.config;
        if !config.schemas.contains_key(schema) {
            return Err(MysqlError::new(
                1049,
                "42000",
                format!("Unknown database '{schema}'"),
            ));
        }
        let user = config.users.get(self.user_name());
        if user.is_some_and(|u| !config.user_schemas(u).iter().any(|s| s == schema)) {
            return Err(MysqlError::new(
                1044,
                "42000",
                format!(
                    "Access denied for user '{}'@'%' to database '{schema}'",
                    self.user_name()
                ),
            ));
        }
        Ok(())
    }

    async fn local(&mut self, l: Local, w: QueryResultWriter<'_, Writer>) -> io::Result<()> {
        // The SELECTs answered here return one row: as any SELECT, they set FOUND_ROWS().
        let one_row_select = matches!(
            l,
            Local::FoundRows(_)
                | Local::LastInsertId(_)
                | Local::WarningCount(_)
                | Local::Autocommit(_)
                | Local::Database(_)
                | Local::Version(_)
                | Local::ConnectionId(_)
                | Local::VersionComment
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
                if self.interrupted.is_some() =>
            {
                // The transaction can only be rolled back: do it and say so (DECISIONS.md 16).
                let reason = self.interrupted.take().unwrap_or_default();
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
                let names: Vec<Vec<Option<String>>> = config
                    .users
                    .get(self.user_name())
                    .map(|u| config.user_schemas(u))
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|n| pattern.as_deref().is_none_or(|p| crate::route::like(n, p)))
                    .map(|n| vec![Some(n)])
                    .collect();
                write_text_rows(w, &["Database"], names).await
            }
            Local::ShowWarnings { offset, limit } => {
                let rows: Vec<Vec<Option<String>>> = self
                    .warnings
                    .iter()
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
                } else if self.locks.is_some() {
                    Some(
                        "set xa cmd on can't be used while tables are locked (LOCK TABLES): UNLOCK TABLES first",
                    )
                } else if !self.pinned.is_empty() && self.xa.is_none() {
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
                Ok(()) => self.ok(w, OkInfo::default()).await,
                Err(e) => self.error(w, e).await,
            },
            Local::UnlockTables => {
                if self.locks.is_some() {
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
                let xa_on = self.xa_on && self.pinned.is_empty() && self.xa.is_none();
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
                self.interrupted = None;
                let sql = if matches!(l, Local::Commit(_)) {
                    "COMMIT"
                } else {
                    "ROLLBACK"
                };
                // `AND CHAIN`'s "same characteristics": an XA transaction chains into another.
                let xa = self.xa.is_some() || self.xa_on;
                if let Err(e) = self.end_transaction(sql).await {
                    return self.error(w, e).await;
                }
                match completion {
                    Completion::Plain => self.ok(w, OkInfo::default()).await,
                    Completion::Chain => {
                        self.in_transaction = true;
                        self.xa_on = xa;
                        self.ok(w, OkInfo::default()).await
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
                if let Some(reason) = &self.interrupted {
                    let message = format!("Transaction error, need to rollback: {reason}");
                    return self.error(w, MysqlError::new(1003, "HY000", message)).await;
                }
                if let Err(e) = self.savepoint_on_each(SavepointOp::Set, &name).await {
                    return self.error(w, e).await;
                }
                self.savepoints.retain(|s| s.key() != name.key());
                self.savepoints.push(name);
                self.ok(w, OkInfo::default()).await
            }
            Local::RollbackToSavepoint(name) => {
                let Some(at) = self.savepoint_index(&name) else {
                    return self.error(w, no_such_savepoint(&name)).await;
                };
                // Allowed in an interrupted transaction: back to a savepoint set before the
                // statement that failed part-way, every node agrees again.
                if let Err(e) = self.savepoint_on_each(SavepointOp::RollbackTo, &name).await {
                    return self.error(w, e).await;
                }
                self.savepoints.truncate(at + 1);
                self.interrupted = None;
                self.ok(w, OkInfo::default()).await
            }
            Local::ReleaseSavepoint(name) => {
                let Some(at) = self.savepoint_index(&name) else {
                    return self.error(w, no_such_savepoint(&name)).await;
                };
                if let Some(reason) = &self.interrupted {
                    let message = format!("Transaction error, need to rollback: {reason}");
                    return self.error(w, MysqlError::new(1003, "HY000", message)).await;
                }
                if let Err(e) = self.savepoint_on_each(SavepointOp::Release, &name).await {
                    return self.error(w, e).await;
                }
                self.savepoints.truncate(at);
                self.ok(w, OkInfo::default()).await
            }
            Local::Explain(plan) => {
                let rows: Vec<Vec<Option<String>>> = plan
                    .targets
                    .into_iter()
                    .map(|t| vec![Some(t.node), Some(t.sql.to_string())])
                    .collect();
                write_text_rows(w, &["DATA_NODE", "SQL"], rows).await
            }
            Local::VersionComment => {
                write_text_rows(
                    w,
                    &["@@version_comment"],
                    std::iter::once(vec![Some(crate::version::VERSION_COMMENT.to_string())]),
                )
                .await
            }
            Local::WarningCount(label) => {
                write_unsigned(w, label, u64::from(self.warning_count)).await
            }
            Local::FoundRows(label) => write_unsigned(w, label, self.found_rows).await,
            Local::Autocommit(label) => {
                let column = WireColumn {
                    table: String::new(),
                    column: label,
                    coltype: ColumnType::MYSQL_TYPE_LONGLONG,
                    colflags: ColumnFlags::NOT_NULL_FLAG,
                };
                let mut rw = w.start(std::slice::from_ref(&column)).await?;
                rw.write_col(i64::from(self.autocommit))?;
                rw.end_row().await?;
                rw.finish().await
            }
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

    /// Whether a transaction is open for the client: `BEGIN` ran, or `autocommit` is off (every
    /// statement is in one), or connections are pinned to one.
    fn transaction_open(&self) -> bool {
        self.in_transaction || !self.autocommit || !self.pinned.is_empty()
    }

    /// Where savepoint `name` is in the open transaction's list ([`Session::savepoints`]).
    fn savepoint_index(&self, name: &SavepointName) -> Option<usize> {
        self.savepoints.iter().position(|s| s.key() == name.key())
    }

    /// Runs a savepoint statement on every connection pinned to the transaction, all at once
    /// (each connection holds every savepoint of the list, see [`Session::savepoints`]).
    ///
    /// Errors: the first failing node's server error (or 1105), with a message naming the
    /// nodes where it failed and those where it succeeded. The nodes then disagree about the
    /// transaction's state: it is marked interrupted (only `ROLLBACK` ends it).
    async fn savepoint_on_each(
        &mut self,
        op: SavepointOp,
        name: &SavepointName,
    ) -> Result<(), MysqlError> {
        let results = futures::future::join_all(
            self.pinned
                .iter_mut()
                .map(|(node, conn)| async move { (node.clone(), conn.savepoint(op, name).await) }),
        )
        .await;
        let mut done = Vec::new();
        let mut failed = Vec::new();
        let mut first: Option<MysqlError> = None;
        for (node, result) in results {
            match result {
                Ok(()) => done.push(node),
                Err(e) => {
                    first
                        .get_or_insert_with(|| MysqlError::backend(format!("dataNode {node}"), &e));
                    failed.push(format!("{node} ({e})"));
                }
            }
        }
        let Some(mut error) = first else {
            return Ok(());
        };
        done.sort();
        failed.sort();
        let reason = format!(
            "{} {} failed on dataNode {}; it succeeded on [{}]",
            op.verb(),
            name.written(),
            failed.join(", "),
            done.join(", ")
        );
        tracing::warn!(connection = self.id, "{reason}");
        error.message = format!("{reason}; the transaction can only be rolled back");
        self.interrupted = Some(reason);
        Err(error)
    }

    /// Sets the open transaction's savepoints, oldest first, on the connection of `node`,
    /// which joins the transaction now (see [`Session::savepoints`] for why this is exact).
    ///
    /// Errors: the server's, naming the node; the connection is then not pinned.
    async fn replay_savepoints(
        savepoints: &[SavepointName],
        conn: &mut dyn BackendConn,
        node: &str,
    ) -> Result<(), MysqlError> {
        for name in savepoints {
            conn.savepoint(SavepointOp::Set, name).await.map_err(|e| {
                let mut error = MysqlError::backend(format!("dataNode {node}"), &e);
                error.message = format!(
                    "dataNode {node} joining the transaction: SAVEPOINT {} failed: {}",
                    name.written(),
                    error.message
                );
                error
            })?;
        }
        Ok(())
    }

    /// Sends `sql` (COMMIT or ROLLBACK) on every pinned connection and releases them.
    ///
    /// Errors: names the dataNodes where it failed and those where it succeeded (DECISIONS.md
    /// item 16); the event is logged at error level.
    async fn end_transaction(&mut self, sql: &str) -> Result<(), MysqlError> {
        self.in_transaction = false;
        self.xa_on = false;
        self.savepoints.clear();
        let mut pinned: Vec<_> = self.pinned.drain().collect();
        pinned.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(tx) = self.xa.take() {
            let branches = pinned
                .into_iter()
                .map(|(node, conn)| crate::xa::Branch {
                    written: tx.written.contains(&node),
                    node,
                    conn,
                })
                .collect();
            return end_xa(&self.server.xa, &tx.gtrid, branches, sql, self.id).await;
        }
        let ended = end_on_each(
            pinned
                .iter_mut()
                .map(|(node, conn)| (node.as_str(), conn.as_mut())),
            sql,
            self.id,
        )
        .await;
        if self.locks.is_some() {
            // The transaction ran under `SET autocommit = 0` on them ([`Session::open_tx`]):
            // the connections' own autocommit comes back, their table locks stay.
            for (node, conn) in &mut pinned {
                if let Err(e) = run_simple(conn.as_mut(), "SET autocommit = 1").await {
                    tracing::warn!(connection = self.id, %node, error = %e, "SET autocommit = 1 after the transaction failed");
                }
            }
        }
        if self.keeps() {
            // COMMIT and ROLLBACK release neither table locks nor session state.
            self.kept.extend(pinned);
        }
        ended
    }

    /// Whether the session keeps its backend connections between statements
    /// ([`Session::kept`]).
    fn keeps(&self) -> bool {
        self.sticky.is_some() || self.locks.is_some()
    }

    /// Starts the transaction on a connection joining it: `START TRANSACTION` (or `XA START`),
    /// or under table locks `SET autocommit = 0` (MySQL's way to use transactions with
    /// `LOCK TABLES`: `START TRANSACTION` would release the locks).
    async fn open_tx(&mut self, conn: &mut dyn BackendConn, node: &str) -> Result<(), MysqlError> {
        if self.locks.is_some() {
            return run_simple(conn, "SET autocommit = 0")
                .await
                .map_err(|e| MysqlError::backend(format!("dataNode {node}"), &e));
        }
        let two_phase = self.generation().config.system.two_phase_commit;
        if self.xa.is_none() && (self.xa_on || two_phase) {
            self.xa = Some(XaTx {
                gtrid: self.server.xa.begin(self.id),
                written: Default::default(),
            });
        }
        match &self.xa {
            Some(tx) => xa_start_on(&self.server.xa, conn, &tx.gtrid, node).await,
            None => begin_on(conn, node).await,
        }
    }

    /// The connection the session holds for `node` that a statement reading `table`
    /// (upper-cased) may use: the transaction's, else a kept one — unless tables are locked and
    /// `table` is not among them (the backend would refuse it there with 1100, while a pooled
    /// connection reads it: the gateway's own look-ups, such as an ER parent's row, do that).
    fn held_conn(&mut self, node: &str, table: Option<&str>) -> Option<&mut Box<dyn BackendConn>> {
        if self.pinned.contains_key(node) {
            return self.pinned.get_mut(node);
        }
        let usable = match (&self.locks, table) {
            (Some(l), Some(t)) => l.holds(&t.to_ascii_uppercase()),
            _ => true,
        };
        if usable {
            self.kept.get_mut(node)
        } else {
            None
        }
    }

    /// `LOCK TABLES` (SPEC §7.6): refused in a transaction and while tables are locked
    /// (Mycat's 1003 texts); otherwise each dataNode's statement runs on the session's
    /// connection to that node (taken from its pool when it has none, in dataNode order, so
    /// two sessions locking the same tables wait for each other rather than deadlock), and
    /// those connections are kept until `UNLOCK TABLES`.
    ///
    /// Errors: a node's own (1100, 1146, 1099...), naming it; the nodes locked before it are
    /// unlocked again, so either every node holds the locks or none does.
    async fn lock_tables(&mut self, l: crate::route::LockTables) -> Result<(), MysqlError> {
        // Mycat refuses it whenever autocommit is off; with autocommit off and nothing run
        // yet there is nothing to commit, and MySQL's own pattern (`SET autocommit = 0; LOCK
        // TABLES ...; ...; COMMIT; UNLOCK TABLES`, also what `mysqldump --no-autocommit`
        // writes) must work, so only a transaction that began (BEGIN, or statements) is.
        if self.in_transaction || !self.pinned.is_empty() {
            return Err(MysqlError::new(
                1003,
                "HY000",
                "can't lock table in transaction!",
            ));
        }
        if self.locks.is_some() {
            return Err(MysqlError::new(1003, "HY000", "can't lock multi-table"));
        }
        let server = self.generation();
        let mut taken: Vec<(String, Box<dyn BackendConn>)> = Vec::new();
        let mut failure = None;
        for t in &l.targets {
            let mut conn = match self.kept.remove(&t.node) {
                Some(c) => c,
                None => match server.cluster.acquire(&t.node, false).await {
                    Ok(mut c) => {
                        if let Err(e) = Self::apply_state(&self.state, c.as_mut(), &t.node).await {
                            failure = Some(e);
                            break;
                        }
                        c
                    }
                    Err(e) => {
                        failure = Some(e.into());
                        break;
                    }
                },
            };
            let done = run_simple(conn.as_mut(), &t.sql).await;
            match done {
                Ok(()) => taken.push((t.node.clone(), conn)),
                Err(e) => {
                    let error = self.logical_names(
                        &t.node,
                        MysqlError::backend(format!("dataNode {}", t.node), &e),
                    );
                    if self.sticky.is_some() {
                        self.kept.insert(t.node.clone(), conn);
                    }
                    failure = Some(error);
                    break;
                }
            }
        }
        if let Some(e) = failure {
            for (node, mut conn) in taken {
                if run_simple(conn.as_mut(), "UNLOCK TABLES").await.is_err() {
                    conn.abandon();
                    continue;
                }
                if self.sticky.is_some() {
                    self.kept.insert(node, conn);
                }
            }
            return Err(e);
        }
        tracing::debug!(connection = self.id, nodes = taken.len(), "LOCK TABLES");
        self.kept.extend(taken);
        self.locks = Some(l);
        Ok(())
    }

    /// Releases the session's table locks (`UNLOCK TABLES` on every connection that holds
    /// them); its kept connections go back to their pools when nothing else keeps them
    /// ([`Session::kept`]). Nothing to do without locks.
    ///
    /// Errors: a node where `UNLOCK TABLES` failed (its connection is closed, never pooled:
    /// the locks end with it); the others are unlocked all the same.
    async fn unlock_tables(&mut self) -> Result<(), MysqlError> {
        let Some(l) = self.locks.take() else {
            return Ok(());
        };
        let mut failed = None;
        for t in &l.targets {
            let Some(conn) = self.kept.get_mut(&t.node) else {
                continue;
            };
            if let Err(e) = run_simple(conn.as_mut(), "UNLOCK TABLES").await {
                tracing::warn!(connection = self.id, node = %t.node, error = %e, "UNLOCK TABLES failed: the connection is closed");
                if let Some(mut c) = self.kept.remove(&t.node) {
                    c.abandon();
                }
                failed
                    .get_or_insert_with(|| MysqlError::backend(format!("dataNode {}", t.node), &e));
            }
        }
        if !self.keeps() {
            self.kept.clear();
        }
        match failed {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    /// Draws the sequence values a statement needs and writes them in (SPEC §5.17). For an
    /// `autoIncrement` INSERT the first key becomes the insert id the OK packet reports.
    ///
    /// Errors: 1003 with Mycat's `mycat sequnce err.` prefix.
    async fn draw_sequences(
        &mut self,
        r: crate::route::SequenceRewrite,
    ) -> Result<String, MysqlError> {
        let mut wanted: std::collections::BTreeMap<&str, usize> = Default::default();
        for e in &r.edits {
            if let Some(name) = &e.sequence {
                *wanted.entry(name).or_default() += 1;
            }
        }
        let mut drawn: HashMap<String, std::vec::IntoIter<i64>> = HashMap::new();
        for (name, count) in wanted {
            let generation = self.generation();
            let values = self
                .server
                .sequences
                .next(&generation.cluster, name, count)
                .await
                .map_err(|e| MysqlError::new(1003, "HY000", e.to_string()))?;
            drawn.insert(name.to_string(), values.into_iter());
        }
        let mut sql = r.prefix.clone();
        let mut at = 0;
        let mut first = None;
        for e in &r.edits {
            sql.push_str(&r.sql[at..e.range.start]);
            sql.push_str(&e.before);
            if let Some(name) = &e.sequence {
                let v = drawn
                    .get_mut(name)
                    .and_then(|it| it.next())
                    .ok_or_else(|| {
                        MysqlError::new(1003, "HY000", "mycat sequnce err.no value drawn")
                    })?;
                first.get_or_insert(v);
                sql.push_str(&v.to_string());
            }
            sql.push_str(&e.after);
            at = e.range.end;
        }
        sql.push_str(&r.sql[at..]);
        if r.reports_id {
            self.next_insert_id = first.and_then(|v| u64::try_from(v).ok());
        }
        tracing::debug!(connection = self.id, %sql, "sequence values drawn");
        Ok(sql)
    }

    /// The statements that put a fresh backend connection in the session's state.
    fn state_statements(items: &[SessionSet]) -> Vec<String> {
        let mut out: Vec<String> = items
            .iter()
            .filter(|i| i.standalone)
            .map(|i| format!("SET {}", i.assignment))
            .collect();
        let joined: Vec<&str> = items
            .iter()
            .filter(|i| !i.standalone)
            .map(|i| i.assignment.as_str())
            .collect();
        if !joined.is_empty() {
            out.push(format!("SET {}", joined.join(", ")));
        }
        out
    }

    /// After a result set went to the client: what the session keeps of it, read from the
    /// connections it ran on while they are still held. The warnings' rows for a later `SHOW
    /// WARNINGS` (as after an OK, see `execute`), then its found-rows count for `SELECT
    /// FOUND_ROWS()`: the rows sent, or, after `SQL_CALC_FOUND_ROWS` on one dataNode, the
    /// node's `FOUND_ROWS()` (several dataNodes are refused at routing).
    async fn rows_sent(
        &mut self,
        sent: io::Result<Sent>,
        transactional: bool,
        fresh: &mut [Box<dyn BackendConn>],
        targets: &[crate::route::Target],
    ) -> io::Result<()> {
        let sent = sent?;
        self.tally.rows = sent.rows;
        if !sent.complete {
            return Ok(());
        }
        if targets.first().is_some_and(|t| sets_found_rows(&t.sql)) {
            self.found_rows = sent.rows;
        }
        let calc = targets.len() == 1
            && crate::sqltext::contains_ignore_ascii_case(&targets[0].sql, "SQL_CALC_FOUND_ROWS");
        if sent.warnings == 0 && !calc {
            return Ok(());
        }
        let mut conns = held(transactional, &mut self.pinned, fresh, targets);
        if sent.warnings > 0 {
            // First: MariaDB's SHOW WARNINGS leaves FOUND_ROWS() as it is, and a SELECT
            // without warnings would clear them.
            self.warnings = collect_warnings(&mut conns).await;
            self.warning_count = sent.warnings;
        }
        if calc && let Some(conn) = conns.first_mut() {
            match found_rows_on(&mut **conn).await {
                Some(n) => self.found_rows = n,
                None => tracing::warn!(
                    connection = self.id,
                    node = %targets[0].node,
                    "FOUND_ROWS() after SQL_CALC_FOUND_ROWS could not be read; counting the rows sent"
                ),
            }
        }
        Ok(())
    }

    /// Puts a connection just taken from a pool in the session's state.
    async fn apply_state(
        state: &[SessionSet],
        conn: &mut dyn BackendConn,
        node: &str,
    ) -> Result<(), MysqlError> {
        for sql in Self::state_statements(state) {
            run_simple(conn, &sql).await.map_err(|e| {
                MysqlError::new(
                    1105,
                    "HY000",
                    format!("dataNode {node}: the session's `{sql}` failed: {e}"),
                )
            })?;
        }
        Ok(())
    }

    /// A `SET` of session state: checked on a backend connection (so a bad value gets the
    /// server's error now, as MySQL gives it), user variables set from expressions evaluated
    /// once, then kept for every connection the session takes and applied to those it holds.
    async fn set_state(&mut self, mut items: Vec<SessionSet>) -> Result<(), MysqlError> {
        if items.is_empty() {
            return Ok(());
        }
        // `SET @OLD_AUTOCOMMIT = @@AUTOCOMMIT` (mysqldump --no-autocommit): the session's
        // autocommit is the gateway's, not the backend connection's (always on).
        for item in items.iter_mut().filter(|i| i.key.starts_with('@')) {
            let value = item
                .assignment
                .split_once('=')
                .map_or("", |(_, v)| v.trim())
                .to_ascii_lowercase();
            if matches!(
                value.as_str(),
                "@@autocommit" | "@@session.autocommit" | "@@local.autocommit"
            ) {
                item.assignment = format!("{} = {}", item.key, u8::from(self.autocommit));
                item.evaluate = false;
            }
        }
        // A node of the current schema, else of one of the user's schemas: never a node the
        // user has no schema on (its database is none of the user's business, and a backend
        // account scoped to the user's databases could not use it).
        let generation = self.generation();
        let router = &generation.router;
        let node = self
            .schema
            .as_deref()
            .and_then(|s| router.schema(s))
            .and_then(|s| s.nodes.first().cloned())
            .or_else(|| {
                let view = self.view();
                let access = view.access?;
                access
                    .schemas
                    .iter()
                    .find_map(|s| router.schema(s).and_then(|s| s.nodes.first().cloned()))
            })
            .ok_or_else(|| MysqlError::new(1105, "HY000", "no dataNode to check SET on"))?;
        let mut fresh;
        let held = match self.pinned.get_mut(&node) {
            Some(c) => Some(c),
            None => self.kept.get_mut(&node),
        };
        let conn: &mut dyn BackendConn = match held {
            Some(c) => c.as_mut(),
            None => {
                fresh = self.generation().cluster.acquire(&node, false).await?;
                Self::apply_state(&self.state, fresh.as_mut(), &node).await?;
                fresh.as_mut()
            }
        };
        for sql in Self::state_statements(&items) {
            run_simple(conn, &sql)
                .await
                .map_err(|e| MysqlError::backend(format!("dataNode {node}"), &e))?;
        }
        for item in items.iter_mut().filter(|i| i.evaluate) {
            // What the server settled on: `@x`, or `@@session.name` for a system variable.
            let read = if item.key.starts_with('@') {
                item.key.clone()
            } else {
                format!("@@session.{}", item.key)
            };
            let read_back = match conn.query(&format!("SELECT {read}")).await {
                Ok(Response::Rows { columns, mut rows }) => {
                    let row = rows.next().await;
                    let numeric = columns.first().is_some_and(|c| {
                        matches!(
                            c.column_type,
                            crate::backend::ColumnType::MYSQL_TYPE_LONGLONG
                                | crate::backend::ColumnType::MYSQL_TYPE_LONG
                                | crate::backend::ColumnType::MYSQL_TYPE_NEWDECIMAL
                                | crate::backend::ColumnType::MYSQL_TYPE_DOUBLE
                        )
                    });
                    while rows.next().await.is_some() {}
                    match row {
                        Some(Ok(r)) => Some(match r.into_iter().next() {
                            Some(crate::backend::Value::Bytes(b)) => {
                                let text = String::from_utf8_lossy(&b).into_owned();
                                if numeric { text } else { replay_literal(&text) }
                            }
                            Some(crate::backend::Value::Null) | None => "NULL".to_string(),
                            Some(other) => replay_literal(&other.to_text().unwrap_or_default()),
                        }),
                        _ => None,
                    }
                }
                _ => None,
            };
            // A user variable that cannot be read back is NULL; a system variable keeps the
            // value as written (a PostgreSQL dataNode answers only the variables it maps).
            let value = match read_back {
                Some(v) => v,
                None if item.key.starts_with('@') => "NULL".to_string(),
                None => item
                    .assignment
                    .split_once('=')
                    .map_or(String::new(), |(_, v)| v.trim().to_string()),
            };
            if item.key == "sql_mode" {
                let text = crate::route::unquote(&value);
                match SqlMode::from_server(text) {
                    Ok(mode) => {
                        self.sql_mode = mode;
                        self.slot.set_sql_mode(mode);
                    }
                    Err(bad) => {
                        // Put the connection back in the session's mode before refusing.
                        let previous = self
                            .state
                            .iter()
                            .find(|s| s.key == "sql_mode")
                            .map_or("sql_mode = DEFAULT".to_string(), |s| s.assignment.clone());
                        let _ = run_simple(conn, &format!("SET {previous}")).await;
                        return Err(MysqlError::new(
                            1235,
                            "42000",
                            format!(
                                "sql_mode {bad} is not supported by the gateway: its statements could not be checked as the backend parses them"
                            ),
                        ));
                    }
                }
            }
            item.assignment = format!("{} = {value}", item.key);
            item.evaluate = false;
        }
        // Connections the session holds get it too (the checking one already has it).
        let pinned: Vec<String> = self
            .pinned
            .keys()
            .filter(|n| **n != node)
            .cloned()
            .collect();
        for n in pinned {
            if let Some(c) = self.pinned.get_mut(&n) {
                Self::apply_state(&items, c.as_mut(), &n).await?;
            }
        }
        let checked_on_kept = !self.pinned.contains_key(&node);
        let kept: Vec<String> = self
            .kept
            .keys()
            .filter(|n| !(checked_on_kept && **n == node))
            .cloned()
            .collect();
        for n in kept {
            if let Some(c) = self.kept.get_mut(&n) {
                Self::apply_state(&items, c.as_mut(), &n).await?;
            }
        }
        for item in items {
            self.state.retain(|s| s.key != item.key);
            self.state.push(item);
        }
        Ok(())
    }

    /// The result columns of a statement with `?` placeholders, for COM_STMT_PREPARE: described
    /// by the first dataNode it routes to (without the merge's extra columns). Empty when it
    /// cannot be routed before its parameters are known, or returns no rows.
    async fn describe(&mut self, sql: &str) -> Vec<Column> {
        let plan = match self.generation().router.route_for(sql, &self.view(), None) {
            Ok(Routed::Plan(plan)) => plan,
            Ok(Routed::Metadata(q)) => match self.metadata_plan(&q).await {
                Ok(plan) => plan,
                Err(_) => return Vec::new(),
            },
            _ => return Vec::new(),
        };
        let Some(target) = plan.targets.first() else {
            return Vec::new();
        };
        let hidden = plan.merge.as_ref().map_or(0, |m| m.hidden);
        let described = match self.held_conn(&target.node, None) {
            Some(c) => c.describe(&target.sql).await,
            None => match self.generation().cluster.acquire(&target.node, false).await {
                Ok(mut c) => match Self::apply_state(&self.state, c.as_mut(), &target.node).await {
                    Ok(()) => c.describe(&target.sql).await,
                    Err(e) => Err(crate::backend::BackendError::Other(e.message)),
                },
                Err(e) => Err(e.source),
            },
        };
        match described {
            Ok((_, mut columns)) => {
                columns.truncate(columns.len().saturating_sub(hidden));
                columns
            }
            Err(e) => {
                tracing::debug!(connection = self.id, error = %e, "statement not described");
                Vec::new()
            }
        }
    }

    /// The plan answering an `information_schema` query for the schemas the user may see
    /// (module `route::metadata`): run on the first MySQL dataNode of those schemas, after the
    /// columns of the views it reads are known (asked of that node once, then kept).
    ///
    /// Errors: 1235 when every schema the user may see is on PostgreSQL; the node's error when
    /// it cannot describe a view.
    async fn metadata_plan(&mut self, q: &crate::route::MetadataQuery) -> Result<Plan, MysqlError> {
        if let Some(schema) = q.required_schema() {
            self.check_schema(schema)?;
        }
        // Who sees what: the newest configuration's (see `Session::view`).
        let config = self.server.current().config.clone();
        let visible: Vec<String> = config
            .users
            .get(self.user_name())
            .map(|u| config.user_schemas(u))
            .unwrap_or_default();
        let access = self.view().access.cloned();
        let server = self.generation();
        let router = &server.router;
        // A MySQL dataNode answers when the user has one (its information_schema, with the
        // PostgreSQL databases' rows carried in); else a PostgreSQL one, from its catalog.
        let mysql_node = router.metadata_node(self.schema.as_deref(), &visible);
        let node = mysql_node
            .clone()
            .or_else(|| router.metadata_postgres_node(self.schema.as_deref(), &visible))
            .ok_or_else(|| {
                MysqlError::new(
                    1046,
                    "3D000",
                    "No database selected: the schemas you may use have no dataNode",
                )
            })?;
        let viewer = crate::route::Viewer {
            schemas: &visible,
            access: access.as_ref(),
        };
        let mut known: HashMap<&str, Arc<[String]>> = HashMap::new();
        for view in q.views_to_describe() {
            let columns = if mysql_node.is_some() {
                self.view_columns(&node, view).await?
            } else {
                crate::route::Router::metadata_postgres_columns(view).ok_or_else(|| {
                    MysqlError::new(
                        1235,
                        "42000",
                        format!(
                            "information_schema.{view} is not answered on a PostgreSQL dataNode"
                        ),
                    )
                })?
            };
            known.insert(view, columns);
        }
        // Rows of the tables on other dataHosts, carried in as literals.
        let mut fetched: HashMap<&str, Vec<Vec<String>>> = HashMap::new();
        for other in router.metadata_other_nodes(&visible, &node) {
            for (view, main_columns) in &known {
                let columns = self.view_columns(&other, view).await?;
                if let Some(sql) =
                    router.metadata_fetch(view, main_columns, &columns, &viewer, &node, &other)?
                {
                    let rows = self.literal_rows(&other, &sql).await?;
                    fetched.entry(view).or_default().extend(rows);
                }
            }
        }
        for other in router.metadata_postgres_nodes(&visible, &node) {
            for (view, main_columns) in &known {
                if let Some(sql) =
                    router.metadata_fetch_postgres(view, main_columns, &viewer, &other)
                {
                    let rows = self.literal_rows(&other, &sql).await?;
                    fetched.entry(view).or_default().extend(rows);
                }
            }
        }
        Ok(
            router.metadata_plan(q, &viewer, &node, &|v| known.get(v).cloned(), &|v| {
                fetched.get(v).cloned().unwrap_or_default()
            })?,
        )
    }

    /// A server error of `node` as the client should read it: the node's physical database,
    /// where the message names it as a qualifier (`Table 'db1.t' doesn't exist`, which
    /// SQLAlchemy's `has_table` provokes), becomes the session's logical schema.
    fn logical_names(&self, node: &str, mut e: MysqlError) -> MysqlError {
        if let (Some(db), Some(schema)) = (
            self.generation().router.database_of(node),
            self.schema.as_deref(),
        ) {
            e.message = e
                .message
                .replace(&format!("'{db}."), &format!("'{schema}."));
        }
        e
    }

    /// The column names of `information_schema.<view>` on `node`, asked once per server run.
    async fn view_columns(&mut self, node: &str, view: &str) -> Result<Arc<[String]>, MysqlError> {
        let key = (node.to_string(), view.to_string());
        let cached = self
            .generation()
            .view_columns
            .lock()
            .ok()
            .and_then(|m| m.get(&key).cloned());
        if let Some(c) = cached {
            return Ok(c);
        }
        let c = self.describe_view(node, view).await?;
        if let Ok(mut m) = self.generation().view_columns.lock() {
            m.insert(key, c.clone());
        }
        Ok(c)
    }

    /// Runs `sql` on `node` and returns its rows with each value as an SQL literal: numbers of
    /// numeric columns as written, NULL, other text quoted, other bytes in hex.
    async fn literal_rows(
        &mut self,
        node: &str,
        sql: &str,
    ) -> Result<Vec<Vec<String>>, MysqlError> {
        use crate::backend::{ColumnType as T, Value};
        let mut fresh;
        let conn: &mut dyn BackendConn = match self.held_conn(node, None) {
            Some(c) => c.as_mut(),
            None => {
                fresh = self
                    .generation()
                    .cluster
                    .acquire_for(node, Intent::Read)
                    .await?;
                fresh.as_mut()
            }
        };
        let failed = |source| {
            MysqlError::from(crate::engine::EngineError {
                node: node.to_string(),
                source,
                applied: None,
            })
        };
        let Response::Rows { columns, mut rows } = conn.query(sql).await.map_err(failed)? else {
            return Ok(Vec::new());
        };
        let numeric: Vec<bool> = columns
            .iter()
            .map(|c| {
                matches!(
                    c.column_type,
                    T::MYSQL_TYPE_TINY
                        | T::MYSQL_TYPE_SHORT
                        | T::MYSQL_TYPE_LONG
                        | T::MYSQL_TYPE_INT24
                        | T::MYSQL_TYPE_LONGLONG
                        | T::MYSQL_TYPE_DECIMAL
                        | T::MYSQL_TYPE_NEWDECIMAL
                        | T::MYSQL_TYPE_FLOAT
                        | T::MYSQL_TYPE_DOUBLE
                        | T::MYSQL_TYPE_YEAR
                )
            })
            .collect();
        let mut out = Vec::new();
        while let Some(row) = rows.next().await {
            let row = row.map_err(failed)?;
            let literals = row
                .iter()
                .zip(&numeric)
                .map(|(v, numeric)| match v {
                    Value::Null => "NULL".to_string(),
                    Value::Int(i) => i.to_string(),
                    Value::UInt(u) => u.to_string(),
                    Value::Double(d) => d.to_string(),
                    Value::Bytes(b) => match std::str::from_utf8(b) {
                        Ok(t) if *numeric && t.parse::<f64>().is_ok() => t.to_string(),
                        Ok(t) => format!("'{}'", t.replace('\\', "\\\\").replace('\'', "''")),
                        Err(_) => format!(
                            "X'{}'",
                            b.iter().map(|x| format!("{x:02X}")).collect::<String>()
                        ),
                    },
                })
                .collect();
            out.push(literals);
        }
        Ok(out)
    }

    /// The column names of `information_schema.<view>` on `node`.
    async fn describe_view(&mut self, node: &str, view: &str) -> Result<Arc<[String]>, MysqlError> {
        let sql = format!("SELECT * FROM information_schema.`{view}` WHERE 1 = 0");
        let mut fresh;
        let conn: &mut dyn BackendConn = match self.held_conn(node, None) {
            Some(c) => c.as_mut(),
            None => {
                fresh = self
                    .generation()
                    .cluster
                    .acquire_for(node, Intent::Read)
                    .await?;
                fresh.as_mut()
            }
        };
        let failed = |source| {
            MysqlError::from(crate::engine::EngineError {
                node: node.to_string(),
                source,
                applied: None,
            })
        };
        match conn.query(&sql).await.map_err(failed)? {
            Response::Rows { columns, mut rows } => {
                while let Some(r) = rows.next().await {
                    r.map_err(failed)?;
                }
                Ok(columns.iter().map(|c| c.name.clone()).collect())
            }
            Response::Ok(_) => Err(MysqlError::new(
                1105,
                "HY000",
                format!("dataNode {node} answered no columns for information_schema.{view}"),
            )),
        }
    }

    /// Reads the column order of the table an INSERT without a column list fills
    /// ([`Routed::Columns`]) from each of its dataNodes and records it for routing
    /// ([`crate::route::ColumnOrders`]).
    ///
    /// Errors: a node's own error (1146 when the table is missing there); 1105 when the nodes
    /// define different columns (the INSERT cannot mean one thing on all of them).
    async fn read_columns(
        &mut self,
        lookup: crate::route::ColumnsLookup,
    ) -> Result<(), MysqlError> {
        let epoch = self.generation().column_orders.epoch();
        let mut agreed: Option<(String, Vec<String>)> = None;
        for probe in &lookup.probes {
            let (columns, _) = self.probe(probe, &lookup.table).await?;
            let columns: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
            match &agreed {
                None => agreed = Some((probe.node.clone(), columns)),
                Some((node, first))
                    if first.len() != columns.len()
                        || first
                            .iter()
                            .zip(&columns)
                            .any(|(a, b)| !a.eq_ignore_ascii_case(b)) =>
                {
                    return Err(MysqlError::new(
                        1105,
                        "HY000",
                        format!(
                            "table {} has different columns on dataNode {node} ({}) and on dataNode {} ({}): an INSERT without a column list cannot be placed; name the columns",
                            lookup.table,
                            first.join(", "),
                            probe.node,
                            columns.join(", ")
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        if let Some((_, columns)) = agreed {
            self.generation().column_orders.insert(
                &lookup.schema,
                &lookup.table,
                Arc::from(columns),
                epoch,
            );
        }
        Ok(())
    }

    /// Runs a small lookup the router asked for (`target`: a node and a statement reading
    /// `table`) on the connection the session holds for that node (its transaction's, its
    /// kept one, so rows it wrote itself are seen) or on one from the pool with the session's
    /// settings: the result's columns and how many rows it had (the rows are read, not kept).
    ///
    /// Errors: a connection that cannot be had, or the node's own error, naming the node.
    async fn probe(
        &mut self,
        target: &crate::route::Target,
        table: &str,
    ) -> Result<(Arc<[Column]>, usize), MysqlError> {
        let mut fresh;
        let conn: &mut dyn BackendConn = match self.held_conn(&target.node, Some(table)) {
            Some(c) => c.as_mut(),
            None => {
                fresh = self
                    .generation()
                    .cluster
                    .acquire(&target.node, false)
                    .await?;
                Self::apply_state(&self.state, fresh.as_mut(), &target.node).await?;
                fresh.as_mut()
            }
        };
        let failed = |source| crate::engine::EngineError {
            node: target.node.clone(),
            source,
            applied: None,
        };
        match conn.query(&target.sql).await.map_err(failed)? {
            Response::Rows { columns, mut rows } => {
                let mut count = 0;
                while let Some(row) = rows.next().await {
                    row.map_err(failed)?;
                    count += 1;
                }
                Ok((columns, count))
            }
            Response::Ok(_) => Ok((Arc::from(Vec::new()), 0)),
        }
    }

    /// Finds the node of an ER child row's parent (SPEC §5.12): the parent's nodes are asked in
    /// order, on the session's pinned connection where it has one (so a parent inserted in the
    /// same transaction is found), and the INSERT is planned for the first that answers a row.
    ///
    /// Errors: a node that cannot be asked; no node holding the parent row (1064, Mycat's text).
    async fn find_parent(&mut self, lookup: ParentLookup) -> Result<Plan, MysqlError> {
        for (probe, insert) in lookup.probes.iter().zip(lookup.inserts) {
            let (_, rows) = self.probe(probe, &lookup.parent).await?;
            if rows > 0 {
                tracing::debug!(connection = self.id, child = %lookup.child, parent = %lookup.parent, node = %insert.node, "parent row found");
                return Ok(Plan {
                    tables: Default::default(),
                    targets: vec![insert],
                    read_only: false,
                    ok_merge: OkMerge::Sum,
                    merge: None,
                    fallback: Vec::new(),
                    ddl: false,
                    host: HostHint::None,
                    server_variables: false,
                });
            }
        }
        Err(MysqlError::new(
            1064,
            "42000",
            format!(
                "can't find (root) parent sharding node for sql: the {} row that {} refers to is on no dataNode",
                lookup.parent, lookup.child
            ),
        ))
    }

    /// Runs a plan ([`Session::execute_on`]); afterwards the connections it took from pools
    /// are kept when the session keeps its connections ([`Session::kept`]), which the
    /// statement itself may have begun (a temporary table, `SELECT @x := ...`, `GET_LOCK`).
    /// Around DDL the tables' column orders are forgotten, before (the statement may change
    /// any table) and after (an order read by another session while it ran may predate it).
    async fn execute(&mut self, plan: Plan, w: QueryResultWriter<'_, Writer>) -> io::Result<()> {
        let ddl = plan.ddl;
        if ddl {
            self.generation().column_orders.clear();
        }
        if self.sticky.is_none()
            && let Some(reason) = plan
                .targets
                .iter()
                .find_map(|t| crate::route::session_state(&t.sql))
        {
            tracing::debug!(
                connection = self.id,
                reason,
                "the session keeps its backend connections from now on"
            );
            self.sticky = Some(reason);
        }
        let mut fresh = Vec::new();
        let mut nodes = Vec::new();
        let done = self.execute_on(plan, w, &mut fresh, &mut nodes).await;
        if self.keeps() {
            for (node, conn) in nodes.into_iter().zip(fresh) {
                self.kept.entry(node).or_insert(conn);
            }
        }
        if ddl {
            self.generation().column_orders.clear();
        }
        done
    }

    /// MySQL's 1100 for a statement naming a table outside the session's `LOCK TABLES` set
    /// (spelled as the statement spells it), before anything reaches a backend.
    fn unlocked_table(&self, plan: &Plan) -> Option<MysqlError> {
        let locks = self.locks.as_ref()?;
        let missing = plan.tables.iter().find(|t| !locks.holds(t))?;
        let text = plan.targets.first().map_or("", |t| &t.sql);
        let spelled = text
            .to_ascii_uppercase()
            .find(missing.as_str())
            .map_or(missing.to_ascii_lowercase(), |at| {
                text[at..at + missing.len()].to_string()
            });
        Some(MysqlError::new(
            1100,
            "HY000",
            format!("Table '{spelled}' was not locked with LOCK TABLES"),
        ))
    }

    /// Runs a plan on the transaction's pinned connections, the session's kept ones, or
    /// connections taken for it, which are left in `fresh` (their dataNodes in `nodes`, in
    /// the same order) for [`Session::execute`].
    async fn execute_on(
        &mut self,
        mut plan: Plan,
        w: QueryResultWriter<'_, Writer>,
        fresh: &mut Vec<Box<dyn BackendConn>>,
        nodes: &mut Vec<String>,
    ) -> io::Result<()> {
        self.tally.planned = true;
        self.tally.read = plan.read_only;
        self.tally.nodes = plan.targets.iter().map(|t| t.node.clone()).collect();
        self.tally.tables = plan.tables.clone();
        let read_only_user = self
            .server
            .current()
            .config
            .users
            .get(self.user_name())
            .is_some_and(|u| u.read_only);
        if read_only_user && !plan.read_only {
            return self
                .error(w, MysqlError::new(1495, "HY000", "User readonly"))
                .await;
        }
        if let Some(reason) = &self.interrupted {
            let message = format!("Transaction error, need to rollback: {reason}");
            return self.error(w, MysqlError::new(1003, "HY000", message)).await;
        }
        if let Some(e) = self.unlocked_table(&plan) {
            return self.error(w, e).await;
        }
        let keeps = self.keeps();
        // DDL commits the open transaction first, as in MySQL, and runs outside it.
        if plan.ddl
            && (self.in_transaction || !self.pinned.is_empty())
            && let Err(e) = self.end_transaction("COMMIT").await
        {
            return self.error(w, e).await;
        }
        let transactional = !plan.ddl && (self.in_transaction || !self.autocommit);
        // A write to several dataNodes outside a transaction runs in one on each node and is
        // committed only where all succeeded, so a failure leaves nothing half applied.
        let implicit = !transactional && !plan.read_only && !plan.ddl && plan.targets.len() > 1;
        let server = self.generation();
        // A read any node can answer, in a session that keeps connections: one it holds.
        if keeps
            && !plan.fallback.is_empty()
            && !self.kept.contains_key(&plan.targets[0].node)
            && let Some(i) = plan
                .fallback
                .iter()
                .position(|t| self.kept.contains_key(&t.node))
        {
            std::mem::swap(&mut plan.targets[0], &mut plan.fallback[i]);
        }
        // A read any node can answer: when the chosen node's server cannot be reached, the next.
        let on_held = self.pinned.contains_key(&plan.targets[0].node)
            || (keeps && self.kept.contains_key(&plan.targets[0].node));
        if !plan.fallback.is_empty() && !on_held {
            let mut candidates = std::mem::take(&mut plan.fallback).into_iter();
            loop {
                match server
                    .cluster
                    .acquire_for(&plan.targets[0].node, intent(&plan))
                    .await
                {
                    Ok(c) => {
                        fresh.push(c);
                        nodes.push(plan.targets[0].node.clone());
                        break;
                    }
                    Err(e) if e.source.server_error().is_none() => match candidates.next() {
                        Some(next) => {
                            tracing::warn!(connection = self.id, error = %e, next = %next.node, "trying another dataNode");
                            plan.targets[0] = next;
                        }
                        None => return self.error(w, e.into()).await,
                    },
                    Err(e) => return self.error(w, e.into()).await,
                }
            }
        }
        if transactional {
            for t in &plan.targets {
                if self.pinned.contains_key(&t.node) {
                    continue;
                }
                // The session's kept connection joins the transaction (it holds the session's
                // state, or its table locks).
                // Not into an XA transaction: the coordinator keeps its connections at the
                // end, and the kept state would go with them; the XA transaction takes pooled
                // connections, and the kept ones wait for it to end.
                let xa = self.locks.is_none()
                    && (self.xa.is_some() || self.xa_on || server.config.system.two_phase_commit);
                let kept = if xa { None } else { self.kept.remove(&t.node) };
                let was_kept = kept.is_some();
                let acquired = match kept {
                    Some(c) => Ok(c),
                    None => match fresh.pop() {
                        Some(c) => {
                            nodes.pop();
                            Ok(c)
                        }
                        None => server.cluster.acquire(&t.node, false).await,
                    },
                };
                let mut conn = match acquired {
                    Ok(c) => c,
                    Err(e) => return self.error(w, e.into()).await,
                };
                if !was_kept
                    && let Err(e) = Self::apply_state(&self.state, conn.as_mut(), &t.node).await
                {
                    return self.error(w, e).await;
                }
                if let Err(e) = self.open_tx(conn.as_mut(), &t.node).await {
                    if was_kept {
                        self.kept.insert(t.node.clone(), conn);
                    }
                    return self.error(w, e).await;
                }
                if let Err(e) =
                    Self::replay_savepoints(&self.savepoints, conn.as_mut(), &t.node).await
                {
                    return self.error(w, e).await;
                }
                self.pinned.insert(t.node.clone(), conn);
            }
        } else if fresh.is_empty() && keeps {
            // Session affinity: the kept connections, and new ones (on the writeHost, as the
            // state may be a write's) for the other nodes, kept afterwards.
            for t in &plan.targets {
                let conn = match self.kept.remove(&t.node) {
                    Some(c) => c,
                    None => match server.cluster.acquire(&t.node, false).await {
                        Ok(mut c) => {
                            if let Err(e) =
                                Self::apply_state(&self.state, c.as_mut(), &t.node).await
                            {
                                return self.error(w, e).await;
                            }
                            c
                        }
                        Err(e) => return self.error(w, e.into()).await,
                    },
                };
                fresh.push(conn);
                nodes.push(t.node.clone());
            }
        } else if fresh.is_empty() {
            nodes.extend(plan.targets.iter().map(|t| t.node.clone()));
            let acquired = futures::future::join_all(
                plan.targets
                    .iter()
                    .map(|t| server.cluster.acquire_for(&t.node, intent(&plan))),
            )
            .await;
            for a in acquired {
                match a {
                    Ok(c) => fresh.push(c),
                    Err(e) => return self.error(w, e.into()).await,
                }
            }
        }
        if !transactional && !self.state.is_empty() && !keeps {
            for (conn, t) in fresh.iter_mut().zip(&plan.targets) {
                if let Err(e) = Self::apply_state(&self.state, conn.as_mut(), &t.node).await {
                    return self.error(w, e).await;
                }
            }
        }
        // With `twoPhaseCommit`, that implicit transaction is an XA transaction.
        // (Not for a session that keeps its connections: the coordinator would take them.)
        let implicit_xa = (implicit && server.config.system.two_phase_commit && !keeps)
            .then(|| self.server.xa.begin(self.id));
        let locked = self.locks.is_some();
        if implicit {
            for (conn, t) in fresh.iter_mut().zip(&plan.targets) {
                let started = match &implicit_xa {
                    Some(gtrid) => {
                        xa_start_on(&self.server.xa, conn.as_mut(), gtrid, &t.node).await
                    }
                    // START TRANSACTION would release the table locks.
                    None if locked => run_simple(conn.as_mut(), "SET autocommit = 0")
                        .await
                        .map_err(|e| MysqlError::backend(format!("dataNode {}", t.node), &e)),
                    None => begin_on(conn.as_mut(), &t.node).await,
                };
                if let Err(e) = started {
                    if let Some(gtrid) = &implicit_xa {
                        let _ = finish_implicit(
                            &self.server.xa,
                            fresh,
                            &plan,
                            "ROLLBACK",
                            Some(gtrid),
                            self.id,
                            false,
                        )
                        .await;
                    }
                    return self.error(w, e).await;
                }
            }
        }
        if transactional
            && !plan.read_only
            && let Some(tx) = &mut self.xa
        {
            tx.written
                .extend(plan.targets.iter().map(|t| t.node.clone()));
        }
        let slot = self.slot.clone();
        let status = self.status();
        slot.set_status(status.bits());
        let id = self.id;
        let handle = self.handle.clone();
        let conns = held(transactional, &mut self.pinned, fresh, &plan.targets);
        let binary = self.binary;
        let ran = run_plan(&plan, conns, w, &slot, binary, &handle, transactional).await;
        let (w, finished) = match ran {
            Ran::Rows(sent) => {
                return self
                    .rows_sent(sent, transactional, fresh, &plan.targets)
                    .await;
            }
            Ran::Done(w, finished) => (w, finished),
        };
        // A read outside a transaction whose connection broke before its result began (the
        // server died or dropped a pooled connection) runs once more, on another eligible server
        // for the failed node. Nothing has reached the client yet. Writes and statements in a
        // transaction are never retried: the client gets the error. Nor is the read of a
        // session being killed: `KILL` broke its connection, and the session is ending.
        let (w, finished) = match finished {
            Err(e)
                if !transactional
                    && !keeps
                    && plan.read_only
                    && e.source.is_closed()
                    && !handle.is_killed() =>
            {
                let failed = plan
                    .targets
                    .iter()
                    .position(|t| t.node == e.node)
                    .and_then(|i| fresh.get(i))
                    .map(|c| c.address().to_string())
                    .unwrap_or_default();
                tracing::warn!(connection = id, error = %e, "read retried after its connection broke");
                // The first attempt's connections go back to their pools (reset there).
                fresh.clear();
                let want = intent(&plan);
                let acquired = futures::future::join_all(plan.targets.iter().map(|t| {
                    let failed = (t.node == e.node).then_some(failed.as_str());
                    let cluster = &server.cluster;
                    async move {
                        match failed {
                            Some(a) => cluster.acquire_instead(&t.node, want, a).await,
                            None => cluster.acquire_for(&t.node, want).await,
                        }
                    }
                }))
                .await;
                for a in acquired {
                    match a {
                        Ok(c) => fresh.push(c),
                        Err(e) => return self.error(w, e.into()).await,
                    }
                }
                for (conn, t) in fresh.iter_mut().zip(&plan.targets) {
                    if let Err(e) = Self::apply_state(&self.state, conn.as_mut(), &t.node).await {
                        return self.error(w, e).await;
                    }
                }
                let conns: Vec<&mut (dyn BackendConn + 'static)> =
                    fresh.iter_mut().map(|b| b.as_mut()).collect();
                match run_plan(&plan, conns, w, &slot, binary, &handle, false).await {
                    Ran::Rows(sent) => {
                        return self.rows_sent(sent, false, fresh, &plan.targets).await;
                    }
                    Ran::Done(w, again) => (w, again),
                }
            }
            other => (w, other),
        };
        match finished {
            Err(e) if transactional && ends_transaction(&e.source) => {
                // The server rolled its part of the transaction back (a deadlock victim), as
                // MySQL rolls back the whole transaction: so are the other dataNodes' parts,
                // which the client's next BEGIN or COMMIT would otherwise commit alone.
                self.next_insert_id = None;
                tracing::info!(connection = id, node = %e.node, error = %e, "the transaction was rolled back on every dataNode");
                let _ = self.end_transaction("ROLLBACK").await;
                self.interrupted = None;
                let e = self.logical_names(&e.node.clone(), e.into());
                send_error(&slot, w, e).await
            }
            Err(e) => {
                self.next_insert_id = None;
                if implicit {
                    let _ = finish_implicit(
                        &self.server.xa,
                        fresh,
                        &plan,
                        "ROLLBACK",
                        implicit_xa.as_deref(),
                        id,
                        locked,
                    )
                    .await;
                } else if transactional
                    && plan.targets.len() > 1
                    && !plan.read_only
                    && e.applied != Some(0)
                {
                    self.interrupted = Some(format!("a write to several dataNodes failed ({e})"));
                }
                // A connection the session keeps for its state (temporary tables, table
                // locks...) was lost: that state is gone on its server, and going on with a
                // fresh connection would hide it (a table thought locked, a temporary table
                // missing). As when a MySQL server connection is lost, the client's ends,
                // after this error.
                let lost = keeps && (e.source.is_closed() || e.source.is_timeout());
                let e = self.logical_names(&e.node.clone(), e.into());
                let answered = send_error(&slot, w, e).await;
                if lost {
                    tracing::warn!(
                        connection = id,
                        "a backend connection holding the session's state was lost: the session is closed"
                    );
                    self.handle.kill();
                }
                answered
            }
            Ok(mut ok) => {
                // The warnings stay on the backend connections, which go back to their pools
                // now: read them while they are held, for a later SHOW WARNINGS.
                if ok.warnings > 0 {
                    let mut conns = held(transactional, &mut self.pinned, fresh, &plan.targets);
                    // A global table's write ran on every node: its first node's warnings are
                    // the statement's (as its OK packet is).
                    if plan.ok_merge == OkMerge::First {
                        conns.truncate(1);
                    }
                    self.warnings = collect_warnings(&mut conns).await;
                    self.warning_count = ok.warnings;
                }
                if implicit
                    && let Err(e) = finish_implicit(
                        &self.server.xa,
                        fresh,
                        &plan,
                        "COMMIT",
                        implicit_xa.as_deref(),
                        id,
                        locked,
                    )
                    .await
                {
                    self.next_insert_id = None;
                    return send_error(&slot, w, e).await;
                }
                if let Some(key) = self.next_insert_id.take() {
                    ok.last_insert_id = Some(key);
                }
                if let Some(key) = ok.last_insert_id.filter(|k| *k > 0) {
                    self.last_insert_id = key;
                }
                write_ok(&slot, w, ok, status).await
            }
        }
    }
}

/// How a statement went before the rest of its answer is written ([`run_plan`]).
enum Ran<'w> {
    /// Its result set went to the client (or did not: the client left).
    Rows(io::Result<Sent>),
    /// An OK or the first failing node's error, with the writer that is to answer.
    Done(
        QueryResultWriter<'w, Writer>,
        Result<OkInfo, engine::EngineError>,
    ),
}

/// Runs `plan` on `conns` (one per target, in order) and streams a result set to the client;
/// `handle` holds the connections' cancellers meanwhile, for `KILL QUERY`. When the client
/// leaves mid-result, the backend statements are stopped at once rather than left to run until
/// the connections are reset in their pools: a backend blocked sending rows notices an
/// interrupted statement only once they are read, which a pooled connection's next holder
/// would do, so outside a transaction those connections are closed instead (the pool replaces
/// them); pinned ones are read out by the ROLLBACK that follows.
async fn run_plan<'w>(
    plan: &Plan,
    conns: Vec<&mut (dyn BackendConn + 'static)>,
    w: QueryResultWriter<'w, Writer>,
    slot: &ErrorSlot,
    binary: bool,
    handle: &Handle,
    transactional: bool,
) -> Ran<'w> {
    handle.running(conns.iter().filter_map(|c| c.canceller()));
    let warning_counts: Vec<_> = conns.iter().filter_map(|c| c.warning_count()).collect();
    let ran = match engine::execute(plan, conns).await {
        Ok(Output::Rows { columns, rows }) => {
            let sent = stream_rows(w, &columns, rows, slot, binary, &warning_counts).await;
            if sent.is_err() {
                handle.cancel_running(!transactional).await;
            }
            Ran::Rows(sent)
        }
        Ok(Output::Ok(ok)) => Ran::Done(w, Ok(ok)),
        Err(e) => Ran::Done(w, Err(e)),
    };
    handle.running(None);
    ran
}

/// The connections a statement runs on, in target order: the session's pinned ones in a
/// transaction, else those taken for it.
fn held<'a>(
    transactional: bool,
    pinned: &'a mut HashMap<String, Box<dyn BackendConn>>,
    fresh: &'a mut [Box<dyn BackendConn>],
    targets: &[crate::route::Target],
) -> Vec<&'a mut (dyn BackendConn + 'static)> {
    if transactional {
        pinned_for(pinned, targets)
    } else {
        fresh.iter_mut().map(|b| b.as_mut()).collect()
    }
}

/// The session's pinned connections of `targets`' nodes, in target order.
fn pinned_for<'a>(
    pinned: &'a mut HashMap<String, Box<dyn BackendConn>>,
    targets: &[crate::route::Target],
) -> Vec<&'a mut (dyn BackendConn + 'static)> {
    let mut by_node: HashMap<&str, &mut Box<dyn BackendConn>> =
        pinned.iter_mut().map(|(k, v)| (k.as_str(), v)).collect();
    targets
        .iter()
        .filter_map(|t| by_node.remove(t.node.as_str()).map(|b| b.as_mut()))
        .collect()
}

/// Whether a statement only reads the diagnostics area (`SHOW COUNT(*) WARNINGS`, `SHOW
/// ERRORS`, `SELECT @@warning_count`...), which MySQL leaves as it is.
fn reads_diagnostics(query: &str) -> bool {
    const PATTERNS: [&str; 8] = [
        "showcount(*)warnings",
        "showcount(*)errors",
        "showerrors",
        "showwarnings",
        "select@@warning_count",
        "select@@session.warning_count",
        "select@@error_count",
        "select@@session.error_count",
    ];
    // The statement's first 40 characters without white space, in ASCII lower case (this runs
    // for every statement: no allocation, one pass).
    let mut squeezed = [0u8; 40];
    let mut n = 0;
    for c in query.trim_start().chars().take(40) {
        if c.is_whitespace() {
            continue;
        }
        if !c.is_ascii() {
            break;
        }
        squeezed[n] = c.to_ascii_lowercase() as u8;
        n += 1;
    }
    PATTERNS
        .iter()
        .any(|p| squeezed[..n].starts_with(p.as_bytes()))
}

/// MySQL's default `max_error_count`: `SHOW WARNINGS` lists at most this many.
const MAX_ERROR_COUNT: usize = 64;

/// The rows of `SHOW WARNINGS` on each connection (Level, Code, Message), in order, at most
/// [`MAX_ERROR_COUNT`]; a connection that cannot answer adds nothing (the statement itself
/// succeeded).
async fn collect_warnings(
    conns: &mut [&mut (dyn BackendConn + 'static)],
) -> Vec<Vec<Option<String>>> {
    let mut out = Vec::new();
    for conn in conns.iter_mut() {
        let Ok(Response::Rows { mut rows, .. }) = conn.query("SHOW WARNINGS").await else {
            continue;
        };
        while let Some(Ok(row)) = rows.next().await {
            if out.len() >= MAX_ERROR_COUNT {
                continue;
            }
            out.push(row.iter().take(3).map(|v| v.to_text()).collect());
        }
    }
    out
}

/// An OK packet. The server's `info` text ("Records: 2  Duplicates: 0 ...") is left out:
/// opensrv-mysql 0.7 writes it as a raw string unless the client negotiated session tracking,
/// while MySQL sends it length-encoded and clients (mysql_common) parse it so; a raw text there
/// makes them misread the whole packet. For merged results it would be one node's counts anyway.
/// Its warning count goes through `slot`: opensrv-mysql 0.7 writes 0 whatever it is given.
async fn write_ok(
    slot: &ErrorSlot,
    w: QueryResultWriter<'_, Writer>,
    ok: OkInfo,
    status: StatusFlags,
) -> io::Result<()> {
    if ok.warnings > 0 {
        slot.set_end_warnings(ok.warnings);
    }
    slot.note_ok(ok.affected_rows);
    w.completed(OkResponse {
        affected_rows: ok.affected_rows,
        last_insert_id: ok.last_insert_id.unwrap_or(0),
        status_flags: status,
        warnings: ok.warnings,
        ..Default::default()
    })
    .await
}

/// An OK packet's payload as a MySQL server writes it (`00`, affected rows, insert id 0,
/// status flags, no warnings, `info`), the message length-encoded whatever the client's
/// capabilities, as MySQL's `net_send_ok` stores it: opensrv-mysql 0.7 writes it bare to a
/// client without `CLIENT_SESSION_TRACK`, and such clients (mysql_async, Connector/J) then read
/// a length out of its first letter and lose the message (Mycat's `Reload config success`).
fn ok_payload(affected: u64, status: StatusFlags, info: &str) -> Vec<u8> {
    use mysql_common::io::WriteMysqlExt;
    let mut p = vec![0x00];
    // Writing into a Vec cannot fail.
    let _ = p.write_lenenc_int(affected);
    let _ = p.write_lenenc_int(0);
    p.extend_from_slice(&status.bits().to_le_bytes());
    p.extend_from_slice(&[0, 0]);
    let _ = p.write_lenenc_str(info.as_bytes());
    p
}

/// Streams a result set to the client as the dataNodes deliver it, and ends it with the sum of
/// the nodes' warning counts (`warning_counts`, [`BackendConn::warning_count`], read once the
/// rows are all in).
async fn stream_rows(
    w: QueryResultWriter<'_, Writer>,
    columns: &[Column],
    mut rows: crate::backend::RowStream<'_>,
    slot: &ErrorSlot,
    binary: bool,
    warning_counts: &[Arc<AtomicU16>],
) -> io::Result<Sent> {
    let wire: Vec<WireColumn> = columns.iter().map(wire_column).collect();
    slot.set_columns(columns.iter().map(|c| ColumnMeta {
        charset: c.charset,
        length: c.length,
        decimals: c.decimals,
    }));
    let mut rw = w.start(&wire).await?;
    // The text-protocol encoding of the current row (see `TextRow`), reused row after row.
    let mut encoded = Vec::new();
    let mut sent = 0u64;
    while let Some(row) = rows.next().await {
        match row {
            Ok(row) if row.len() != wire.len() => {
                let message = format!(
                    "dataNodes returned different columns for the same statement ({} and {}): their tables differ",
                    wire.len(),
                    row.len()
                );
                return abort_rows(rw, slot, MysqlError::new(1105, "HY000", message))
                    .await
                    .map(|_| Sent::default());
            }
            Ok(row) => {
                if binary {
                    for v in &row {
                        rw.write_col(Cell(v))?;
                    }
                } else {
                    rw.write_col(TextRow::encode(&row, &mut encoded)?)?;
                    for _ in 1..row.len() {
                        rw.write_col(TextRow::REST)?;
                    }
                }
                if let Some(chunks) = full_chunks(&row, &wire, binary) {
                    slot.pad_after_full_chunks(chunks);
                }
                rw.end_row().await?;
                sent += 1;
            }
            Err(e) => {
                // A server error mid-result keeps its errno; a broken connection is named.
                let e = match e.server_error() {
                    Some((code, state, message)) => MysqlError::new(code, state, message),
                    None => MysqlError::new(
                        1105,
                        "HY000",
                        format!("a dataNode failed while sending rows: {e}"),
                    ),
                };
                return abort_rows(rw, slot, e).await.map(|_| Sent::default());
            }
        }
    }
    let warnings = warning_counts
        .iter()
        .fold(0u16, |n, c| n.saturating_add(c.load(Ordering::Relaxed)));
    if warnings > 0 {
        slot.set_end_warnings(warnings);
    }
    rw.finish().await?;
    Ok(Sent {
        rows: sent,
        warnings,
        complete: true,
    })
}

/// Whether a statement's result set sets `FOUND_ROWS()` to its row count, as on MariaDB: a
/// SELECT's does, and so do the `SHOW`s and `DESCRIBE` that read information_schema; `EXPLAIN`
/// and `SHOW CREATE ...` leave it.
fn sets_found_rows(sql: &str) -> bool {
    let mut words = sql.split_ascii_whitespace();
    match words.next() {
        Some(w) if w.eq_ignore_ascii_case("EXPLAIN") => false,
        Some(w) if w.eq_ignore_ascii_case("SHOW") => !words
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case("CREATE")),
        _ => true,
    }
}

/// What [`stream_rows`] sent.
#[derive(Debug, Clone, Copy, Default)]
struct Sent {
    /// Rows written.
    rows: u64,
    /// The warning count the result set ended with.
    warnings: u16,
    /// The result set ended with its EOF, not with an error.
    complete: bool,
}

/// `SELECT FOUND_ROWS()` on `conn`; `None` when it fails or answers no number.
async fn found_rows_on(conn: &mut (dyn BackendConn + 'static)) -> Option<u64> {
    let Ok(Response::Rows { mut rows, .. }) = conn.query("SELECT FOUND_ROWS()").await else {
        return None;
    };
    let mut value = None;
    while let Some(Ok(row)) = rows.next().await {
        value = value.or_else(|| row.first()?.to_text()?.parse().ok());
    }
    value
}

/// A one-row, one-column `BIGINT UNSIGNED` result the session answers itself.
async fn write_unsigned(
    w: QueryResultWriter<'_, Writer>,
    label: String,
    value: u64,
) -> io::Result<()> {
    let column = WireColumn {
        table: String::new(),
        column: label,
        coltype: ColumnType::MYSQL_TYPE_LONGLONG,
        colflags: ColumnFlags::UNSIGNED_FLAG | ColumnFlags::NOT_NULL_FLAG,
    };
    let mut rw = w.start(std::slice::from_ref(&column)).await?;
    rw.write_col(value)?;
    rw.end_row().await?;
    rw.finish().await
}

/// How many 0xFFFFFF-byte packets a row's payload fills exactly, when it does: such a row must
/// be followed by an empty packet, which opensrv-mysql 0.7 does not send (the client would wait
/// for the rest of the row forever). `None` for every other row (checked cheaply: only rows
/// holding nearly 16 MiB are measured).
fn full_chunks(row: &[crate::backend::Value], wire: &[WireColumn], binary: bool) -> Option<usize> {
    use opensrv_mysql::ToMysqlValue;
    const CHUNK: usize = 0xFF_FFFF;
    let bytes: usize = row
        .iter()
        .map(|v| match v {
            crate::backend::Value::Bytes(b) => b.len(),
            _ => 0,
        })
        .sum();
    if bytes + 9 * row.len() + 16 < CHUNK {
        return None;
    }
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    if binary {
        n.0 = 1 + (row.len() + 7 + 2) / 8;
        for (v, c) in row.iter().zip(wire) {
            let cell = Cell(v);
            if !cell.is_null() {
                cell.to_mysql_bin(&mut n, c).ok()?;
            }
        }
    } else {
        for v in row {
            Cell(v).to_mysql_text(&mut n).ok()?;
        }
    }
    n.0.is_multiple_of(CHUNK).then_some(n.0 / CHUNK)
}

/// Ends a result set with an error (the client sees the rows so far, then the ERR packet).
async fn abort_rows(
    rw: opensrv_mysql::RowWriter<'_, Writer>,
    slot: &ErrorSlot,
    e: MysqlError,
) -> io::Result<()> {
    slot.set(ErrPacket::from(&e));
    rw.finish_error(ErrorKind::ER_UNKNOWN_ERROR, &e.message.into_bytes())
        .await
}

/// Ends the implicit per-node transactions of a multi-node write (`COMMIT` or `ROLLBACK`).
///
/// Errors: a COMMIT that failed on some nodes, naming those that committed (DECISIONS.md 16).
async fn finish_implicit(
    xa: &Arc<crate::xa::Coordinator>,
    conns: &mut Vec<Box<dyn BackendConn>>,
    plan: &Plan,
    sql: &str,
    gtrid: Option<&str>,
    id: u32,
    locked: bool,
) -> Result<(), MysqlError> {
    if let Some(gtrid) = gtrid {
        // The coordinator takes the connections: it owns them until every branch is resolved.
        let branches = conns
            .drain(..)
            .zip(&plan.targets)
            .map(|(conn, t)| crate::xa::Branch {
                node: t.node.clone(),
                conn,
                written: true,
            })
            .collect();
        return end_xa(xa, gtrid, branches, sql, id).await;
    }
    let each = conns
        .iter_mut()
        .zip(&plan.targets)
        .map(|(conn, t)| (t.node.as_str(), conn.as_mut()));
    let ended = end_on_each(each, sql, id).await;
    if locked {
        // Opened with `SET autocommit = 0` under table locks: back to autocommit.
        for (conn, t) in conns.iter_mut().zip(&plan.targets) {
            if let Err(e) = run_simple(conn.as_mut(), "SET autocommit = 1").await {
                tracing::warn!(connection = id, node = %t.node, error = %e, "SET autocommit = 1 failed");
            }
        }
    }
    ended
}

/// Ends XA transaction `gtrid` over `branches` with `sql`'s outcome (`COMMIT` or `ROLLBACK`)
/// through the coordinator (module [`crate::xa`]).
///
/// Errors: a commit that rolled back (1402 `XA_RBROLLBACK`, XA100, naming the dataNode or
/// the log) or a one-phase commit the server refused; a rollback that failed on some nodes
/// (1180, naming them: their servers roll the branches back as the connections close).
async fn end_xa(
    xa: &Arc<crate::xa::Coordinator>,
    gtrid: &str,
    branches: Vec<crate::xa::Branch>,
    sql: &str,
    id: u32,
) -> Result<(), MysqlError> {
    if sql == "COMMIT" {
        xa.commit(gtrid, branches).await.map_err(|e| {
            tracing::error!(connection = id, gtrid, error = %e, "XA commit failed");
            let (code, state) = e.code();
            MysqlError::new(code, &state, e.to_string())
        })
    } else {
        xa.rollback(gtrid, branches).await.map_err(|failed| {
            let nodes: Vec<String> = failed
                .iter()
                .map(|(node, e)| format!("{node} ({e})"))
                .collect();
            let message = format!("XA ROLLBACK failed on dataNode {}", nodes.join(", "));
            tracing::error!(connection = id, gtrid, "{message}");
            MysqlError::new(1180, "HY000", message)
        })
    }
}

/// Sends `sql` (COMMIT or ROLLBACK) on each node's connection, all at once.
///
/// Errors: names the nodes where it failed and those where it succeeded (DECISIONS.md 16),
/// logged at error level.
async fn end_on_each<'c>(
    conns: impl Iterator<Item = (&'c str, &'c mut (dyn BackendConn + 'static))>,
    sql: &str,
    id: u32,
) -> Result<(), MysqlError> {
    // Every node is asked at once (one round trip for the transaction, not one per node);
    // each answers for itself, so the outcome per node is what it was one after another.
    let results = futures::future::join_all(
        conns.map(|(node, conn)| async move { (node, run_simple(conn, sql).await) }),
    )
    .await;
    let mut done = Vec::new();
    let mut failed = Vec::new();
    for (node, result) in results {
        match result {
            Ok(()) => done.push(node.to_string()),
            Err(e) => failed.push(format!("{node} ({e})")),
        }
    }
    if failed.is_empty() {
        return Ok(());
    }
    let message = format!(
        "{sql} failed on dataNode {}; it succeeded on [{}]",
        failed.join(", "),
        done.join(", ")
    );
    tracing::error!(connection = id, "{message}");
    Err(MysqlError::new(1180, "HY000", message))
}

async fn send_error(
    slot: &ErrorSlot,
    w: QueryResultWriter<'_, Writer>,
    e: MysqlError,
) -> io::Result<()> {
    slot.set(ErrPacket::from(&e));
    w.error(ErrorKind::ER_UNKNOWN_ERROR, e.message.as_bytes())
        .await
}

/// The backend's column definition in opensrv's terms (it carries type and flags; opensrv writes
/// its own charset, length and decimals).
fn wire_column(c: &Column) -> WireColumn {
    WireColumn {
        table: c.table.clone(),
        column: c.name.clone(),
        coltype: ColumnType::try_from(c.column_type as u8)
            .unwrap_or(ColumnType::MYSQL_TYPE_VAR_STRING),
        colflags: ColumnFlags::from_bits_truncate(c.flags.bits()),
    }
}

/// A COM_FIELD_LIST column definition: catalog, schema, table, original table, name,
/// original name, the fixed fields, then the default value (NULL, 0xFB).
fn field_definition(schema: &str, table: &str, c: &Column) -> Vec<u8> {
    let mut p = Vec::with_capacity(64);
    for s in ["def", schema, table, table, &c.name, &c.name] {
        super::lenenc::write_str(&mut p, s.as_bytes()).expect("a Vec takes every write");
    }
    p.push(0x0C);
    p.extend_from_slice(&c.charset.to_le_bytes());
    p.extend_from_slice(&c.length.to_le_bytes());
    p.push(c.column_type as u8);
    p.extend_from_slice(&c.flags.bits().to_le_bytes());
    p.push(c.decimals);
    p.extend_from_slice(&[0, 0]);
    p.push(0xFB);
    p
}

/// A result set of text columns answered by the gateway itself.
async fn write_text_rows(
    w: QueryResultWriter<'_, Writer>,
    names: &[&str],
    rows: impl IntoIterator<Item = Vec<Option<String>>>,
) -> io::Result<()> {
    let columns = names
        .iter()
        .map(|n| (*n, ColumnType::MYSQL_TYPE_VAR_STRING));
    write_typed_rows(w, columns, rows).await
}

/// A result set answered by the gateway itself, each column named and typed (`columns`), each
/// value sent as text (the manager's answers type their numbers, as Mycat's do).
async fn write_typed_rows<'n>(
    w: QueryResultWriter<'_, Writer>,
    columns: impl IntoIterator<Item = (&'n str, ColumnType)>,
    rows: impl IntoIterator<Item = Vec<Option<String>>>,
) -> io::Result<()> {
    let cols: Vec<WireColumn> = columns
        .into_iter()
        .map(|(name, coltype)| WireColumn {
            table: String::new(),
            column: name.to_string(),
            coltype,
            colflags: ColumnFlags::empty(),
        })
        .collect();
    let mut rw = w.start(&cols).await?;
    for row in rows {
        for v in row {
            rw.write_col(v)?;
        }
        rw.end_row().await?;
    }
    rw.finish().await
}

/// `SHOW WARNINGS` rows (Level, Code, Message, as read from the nodes) typed as MySQL types
/// them: Code is an `INT UNSIGNED` (clients reading it in the binary protocol, or by type, get a
/// number), the others text.
async fn write_warnings(
    w: QueryResultWriter<'_, Writer>,
    rows: Vec<Vec<Option<String>>>,
) -> io::Result<()> {
    let column = |name: &str, coltype, colflags| WireColumn {
        table: String::new(),
        column: name.to_string(),
        coltype,
        colflags,
    };
    let text = ColumnType::MYSQL_TYPE_VAR_STRING;
    let cols = [
        column("Level", text, ColumnFlags::NOT_NULL_FLAG),
        column(
            "Code",
            ColumnType::MYSQL_TYPE_LONG,
            ColumnFlags::UNSIGNED_FLAG | ColumnFlags::NOT_NULL_FLAG,
        ),
        column("Message", text, ColumnFlags::NOT_NULL_FLAG),
    ];
    let mut rw = w.start(&cols).await?;
    for row in rows {
        let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        rw.write_col(text(0))?;
        rw.write_col(text(1).parse::<u32>().unwrap_or(0))?;
        rw.write_col(text(2))?;
        rw.end_row().await?;
    }
    rw.finish().await
}

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
            .and_then(|u| super::limits::degraded(u, self.server.connections.count()));
        let offline = (ok || sha2)
            && !self.manager
            && self
                .server
                .offline
                .load(std::sync::atomic::Ordering::Relaxed);
        if offline {
            tracing::info!(connection = self.id, peer = %self.peer, user = %name, "login refused: the gateway is offline");
            self.slot.set(ErrPacket::from(&super::manager::shut_down()));
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
                        super::manager::answer(&self.server, self.user_name(), query).await;
                    let error = match &answer {
                        super::manager::Answer::Error(e) => Some(e.code),
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
                None => super::manager::is_probe(&self.server, query),
            }
        {
            return self.error(w, super::manager::shut_down()).await;
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

impl Session {
    /// Answers a command the reader diverted from opensrv (module `commands`).
    async fn diverted(
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
        self.interrupted = None;
        let _ = self.end_transaction("ROLLBACK").await;
        let _ = self.unlock_tables().await;
        self.sticky = None;
        self.kept.clear();
        self.autocommit = true;
        self.state.clear();
        self.sql_mode = SqlMode::default();
        self.slot.set_sql_mode(self.sql_mode);
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
        change: super::commands::ChangeUser,
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
        // Everything COM_RESET_CONNECTION resets, then the user and its view of the schemas.
        self.reset().await;
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

    /// COM_FIELD_LIST (`args`: the table name, NUL, the column wildcard): the table's column
    /// definitions as the first dataNode it routes to describes them (`SELECT * FROM t LIMIT 0`),
    /// named with the logical schema and table, each with the command's default-value field
    /// (sent as NULL: manx does not look the defaults up), ended by EOF — what MySQL's
    /// deprecated command returns. The writer swaps them in for the OK packet written here.
    ///
    /// Errors: 1046 without a current schema; 1146 for a table the schema does not have.
    async fn field_list(&mut self, args: &str, w: QueryResultWriter<'_, Writer>) -> io::Result<()> {
        let (table, wild) = args.split_once('\0').unwrap_or((args, ""));
        let wild = wild.trim_end_matches('\0');
        let Some(schema) = self.schema.clone() else {
            let e = MysqlError::new(1046, "3D000", "No database selected");
            return self.error(w, e).await;
        };
        let missing = || {
            MysqlError::new(
                1146,
                "42S02",
                format!("Table '{schema}.{table}' doesn't exist"),
            )
        };
        let sql = format!("SELECT * FROM `{}` LIMIT 0", table.replace('`', "``"));
        let view = SessionView {
            schema: Some(&schema),
            ..self.view()
        };
        let target = match self.generation().router.route_for(&sql, &view, None) {
            Ok(Routed::Plan(plan)) if !table.is_empty() => plan.targets.into_iter().next(),
            _ => None,
        };
        let Some(target) = target else {
            return self.error(w, missing()).await;
        };
        let mut fresh;
        let conn: &mut dyn BackendConn = match self.held_conn(&target.node, Some(table)) {
            Some(c) => c.as_mut(),
            None => {
                fresh = match self.generation().cluster.acquire(&target.node, false).await {
                    Ok(c) => c,
                    Err(e) => return self.error(w, e.into()).await,
                };
                if let Err(e) = Self::apply_state(&self.state, fresh.as_mut(), &target.node).await {
                    return self.error(w, e).await;
                }
                fresh.as_mut()
            }
        };
        let described = match conn.query(&target.sql).await {
            Ok(Response::Rows { columns, mut rows }) => {
                while rows.next().await.is_some() {}
                Ok(columns.to_vec())
            }
            Ok(Response::Ok(_)) => Ok(Vec::new()),
            Err(e) if e.server_error().is_some_and(|(code, _, _)| code == 1146) => Err(missing()),
            Err(e) => Err(MysqlError::backend(format!("dataNode {}", target.node), &e)),
        };
        let columns = match described {
            Ok(c) => c,
            Err(e) => return self.error(w, e).await,
        };
        let mut packets: Vec<Vec<u8>> = columns
            .iter()
            .filter(|c| wild.is_empty() || crate::route::like(&c.name, wild))
            .map(|c| field_definition(&schema, table, c))
            .collect();
        let status = self.status().bits().to_le_bytes();
        const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;
        packets.push(
            if self.slot.client_capabilities() & CLIENT_DEPRECATE_EOF != 0 {
                // OK with the EOF header: affected rows, insert id, status, warnings.
                vec![0xFE, 0, 0, status[0], status[1], 0, 0]
            } else {
                vec![0xFE, 0, 0, status[0], status[1]]
            },
        );
        self.slot.replace_next(packets);
        w.completed(OkResponse::default()).await
    }

    /// Routes and runs one statement (a COM_QUERY, or a COM_STMT_EXECUTE with its parameters
    /// bound), answering on `w`.
    /// Routes and runs one statement ([`Session::route_and_run`]) and hands what it did to the
    /// recorder.
    async fn run_query(&mut self, query: &str, w: QueryResultWriter<'_, Writer>) -> io::Result<()> {
        let started = std::time::SystemTime::now();
        let clock = std::time::Instant::now();
        let hits = self.plans.hits();
        self.plans.take_last_key();
        self.slot.take_outcome();
        self.tally = Tally {
            read: true,
            ..Tally::default()
        };
        let done = self.route_and_run(query, w).await;
        let elapsed = clock.elapsed();
        let stats = &self.server.stats;
        stats
            .metrics
            .plan_cache_hits
            .inc_by(self.plans.hits().saturating_sub(hits));
        let kind = match self.tally.nodes.len() {
            _ if !self.tally.planned => crate::stats::RouteKind::Local,
            0 | 1 => crate::stats::RouteKind::Single,
            _ => crate::stats::RouteKind::Multi,
        };
        // The plan cache's key when routing made one, else one made here (statistics only).
        let shape = match self.plans.take_last_key() {
            Some(key) => Some(key),
            None if stats.enabled() => crate::route::statistics_key(query),
            None => None,
        };
        let (error, affected) = self.slot.take_outcome();
        stats.record(
            &crate::stats::Executed {
                user: self.user_name(),
                client: self.peer.ip(),
                connection: self.id,
                schema: self.schema.as_deref(),
                sql: query,
                started,
                elapsed,
                rows_sent: self.tally.rows,
                rows_affected: affected,
                error,
                nodes: &self.tally.nodes,
                tables: &self.tally.tables,
                kind,
                read: self.tally.read,
            },
            shape.as_deref(),
        );
        done
    }

    async fn route_and_run(
        &mut self,
        query: &str,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        self.server.registry.question();
        self.slot.set_status(self.status().bits());
        let mut plans = std::mem::take(&mut self.plans);
        let mut routed = self
            .generation()
            .router
            .route_for(query, &self.view(), Some(&mut plans));
        self.plans = plans;
        // An INSERT without a column list: its table's column order first, then again.
        if let Ok(Routed::Columns(lookup)) = routed {
            if let Err(e) = self.read_columns(lookup).await {
                return self.error(w, e).await;
            }
            routed = self
                .generation()
                .router
                .route_for(query, &self.view(), None);
        }
        tracing::trace!(connection = self.id, sql = query, ?routed, "routed");
        // Every statement starts a new warnings list, except those that read it.
        if (self.warning_count > 0 || !self.warnings.is_empty())
            && !matches!(
                routed,
                Ok(Routed::Local(
                    Local::ShowWarnings { .. } | Local::WarningCount(_)
                ))
            )
            && !reads_diagnostics(query)
        {
            self.warnings.clear();
            self.warning_count = 0;
        }
        match routed {
            Err(e) => self.error(w, e.into()).await,
            Ok(Routed::Local(l)) => self.local(l, w).await,
            Ok(Routed::Plan(plan)) => self.execute(plan, w).await,
            Ok(Routed::Metadata(q)) => match self.metadata_plan(&q).await {
                Ok(plan) => self.execute(plan, w).await,
                Err(e) => self.error(w, e).await,
            },
            Ok(Routed::Sequence(rewrite)) => match self.draw_sequences(rewrite).await {
                Ok(sql) => match self.generation().router.route_for(&sql, &self.view(), None) {
                    Ok(Routed::Plan(plan)) => self.execute(plan, w).await,
                    Ok(Routed::Lookup(lookup)) => match self.find_parent(lookup).await {
                        Ok(plan) => self.execute(plan, w).await,
                        Err(e) => self.error(w, e).await,
                    },
                    Ok(Routed::Local(l)) => self.local(l, w).await,
                    Ok(Routed::Metadata(_)) | Ok(Routed::Sequence(_)) | Ok(Routed::Columns(_)) => {
                        self.next_insert_id = None;
                        let e = MysqlError::new(
                            1003,
                            "HY000",
                            "mycat sequnce err.the statement still needs sequence values after they were drawn",
                        );
                        self.error(w, e).await
                    }
                    Err(e) => {
                        self.next_insert_id = None;
                        self.error(w, e.into()).await
                    }
                },
                Err(e) => self.error(w, e).await,
            },
            Ok(Routed::Lookup(lookup)) => match self.find_parent(lookup).await {
                Ok(plan) => self.execute(plan, w).await,
                Err(e) => self.error(w, e).await,
            },
            Ok(Routed::Columns(lookup)) => {
                let e = MysqlError::new(
                    1105,
                    "HY000",
                    format!(
                        "the column order of table {} changed while the INSERT was routed: try again",
                        lookup.table
                    ),
                );
                self.error(w, e).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn diagnostics_statements_are_recognised_without_case_or_spaces() {
        for q in [
            "SHOW WARNINGS",
            "  show   count(*)   warnings",
            "show errors limit 1",
            "SELECT @@warning_count",
            "select @@SESSION.error_count, 1",
        ] {
            assert!(super::reads_diagnostics(q), "{q}");
        }
        for q in [
            "SELECT c FROM t",
            "SHOW TABLES",
            "select @@warning",
            "",
            "sel",
            "SELECT                                    @@warning_count",
        ] {
            assert!(!super::reads_diagnostics(q), "{q}");
        }
    }
}
