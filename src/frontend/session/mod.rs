//! One client connection.
//!
//! State machine of a session: connected → authenticated (user set, optional schema) → serving
//! commands until the client quits. Transactions: from `BEGIN` / `START TRANSACTION`, or any
//! statement while `autocommit=0`, until `COMMIT` / `ROLLBACK`, each dataNode the session touches
//! gets one backend connection that stays pinned to the session, with a transaction started on it;
//! reads inside the transaction therefore see its writes. Outside a transaction every statement
//! takes pooled connections and gives them back. A client that leaves mid-transaction has every
//! pinned connection rolled back before it returns to its pool.
//!
//! This module holds the session itself (its fields, how it starts, what its end rolls back)
//! and the helpers every part uses; the parts, by concept: [`shim`] (opensrv-mysql's entry
//! points and the commands behind them), [`query`] (one statement: routed, run, recorded),
//! [`local`] (answers of the gateway itself), [`execute`] (running a plan on connections),
//! [`transaction`], [`lock`] (`LOCK TABLES`), [`state`] (replayed session settings),
//! [`lookup`] (what the router asks for before it can plan), [`metadata`], [`diagnostics`]
//! (warnings, `FOUND_ROWS()`), [`diverted`] (commands the reader diverts) and [`reply`]
//! (packets written to the client).

mod diagnostics;
mod diverted;
mod dynamic;
mod execute;
mod local;
mod lock;
mod lookup;
mod metadata;
mod query;
mod reply;
mod shim;
mod state;
mod transaction;

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use opensrv_mysql::{AsyncMysqlIntermediary, QueryResultWriter, StatusFlags};
use tokio::net::TcpStream;

use super::Server;
use super::error::MysqlError;
use super::prepared::Prepared;
use super::registry::{Handle, Registry};
use super::reload::Generation;
use super::wire::commands::{Commands, Statements};
use super::wire::tap::{ErrorSlot, Tap};
use super::wire::tls::{self, ClientWrite};
use super::wire::watch;
use crate::backend::OkInfo;
use crate::datahost::held::{HeldConns, run_simple};
use crate::route::{Access, PlanCache, SessionSet, SessionView, SqlMode};
use reply::{send_error, write_ok};

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
    let (read, watch) = watch::watched(read);
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
        held: HeldConns::new(id),
        prepared: HashMap::new(),
        sql_prepared: HashMap::new(),
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
        executing: None,
        row_count: 0,
        next_insert_id: None,
        statements: statements.clone(),
        tls,
        generation: None,
        seen_generation: 0,
        plans_generation: 0,
        tally: Tally::default(),
    };
    slot.set_status(StatusFlags::SERVER_STATUS_AUTOCOMMIT.bits());
    let idle_slot = slot.clone();
    let serve = AsyncMysqlIntermediary::run_on(
        session,
        Commands::new(
            read,
            statements,
            slot.clone(),
            max_packet,
            crate::route::split_statements,
        ),
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
            _ = super::limits::idle_deadline(&handle, &idle_slot) => {
                // As MariaDB: no packet, the connection ends; dropping the session rolls back
                // its transaction and gives its backend connections back.
                tracing::info!(wait_timeout = ?handle.wait_timeout(), "idle longer than wait_timeout: closed");
                Ok(())
            }
            () = client_left(&watch, &handle) => {
                // The session (and the statement's future) is dropped by now: its connections
                // with a command in flight are closed, never pooled, its pinned ones rolled
                // back. As `KILL CONNECTION`, the backend statements are ended on their
                // servers too, which do not watch the gateway's side of the connection.
                tracing::info!("client closed its connection while a statement ran: the statement's backend connections are ended");
                handle.kill();
                handle.cancel_running(true).await;
                Ok(())
            }
        }
    };
    tracing::Instrument::instrument(session, span).await
}

/// Completes when the client has gone away (its socket ended: EOF, `COM_QUIT` then EOF, or
/// a read error) while a statement of the session runs on backend connections.
///
/// Polled by the session's `select!` after opensrv's loop, in the same task: the loop returns
/// pending while it waits for the backends, and the watch then reads the socket (keeping any
/// pipelined bytes for the loop, module [`watch`]). Between statements, and while a statement
/// runs no backend work (waiting for a pooled connection, a `COMMIT` or an XA phase, which
/// must not be cut short), nothing is read here: a client gone then is seen by the loop's next
/// read, or by this watch once the statement's backend work starts.
async fn client_left<R: tokio::io::AsyncRead + Unpin>(watch: &watch::Watch<R>, handle: &Handle) {
    std::future::poll_fn(|cx| {
        if handle.has_running() {
            watch.poll_gone(cx)
        } else {
            std::task::Poll::Pending
        }
    })
    .await
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
    /// The backend connections the session holds, by dataNode: pinned to its open
    /// transaction, or kept for session affinity, with the transaction's savepoints, its
    /// interrupted mark and the session's table locks (module [`crate::datahost::held`]).
    ///
    /// Session affinity, as ProxySQL disables multiplexing: once a statement of the session
    /// may have left state in its backend connection that a later statement reads — a
    /// temporary table (`CREATE TEMPORARY TABLE`), a user variable assigned inside a statement
    /// (`SELECT @x := 5`; a `SET @x` is replayed on every connection instead, see
    /// [`Session::state`]), a named lock (`GET_LOCK`) — the session keeps every backend
    /// connection it takes from then on, for the rest of the session: its statements run on
    /// them (a dataNode it had no connection for gets one, kept too), a transaction's pinned
    /// connections come from them and go back to them at `COMMIT` / `ROLLBACK`. Only
    /// `COM_RESET_CONNECTION` (which clears that state on the backends too),
    /// `COM_CHANGE_USER` and the end of the session let them go. Nothing proves such state
    /// gone earlier (a `DROP TEMPORARY TABLE` may leave another one), so nothing else does.
    /// `LOCK TABLES` keeps connections the same way (SPEC §7.6, until `UNLOCK TABLES`,
    /// `BEGIN` / `START TRANSACTION`, `COM_RESET_CONNECTION` or the end of the session; a
    /// statement naming a table outside the set gets 1100 from the gateway; `COMMIT` /
    /// `ROLLBACK` keep the locks), and `UNLOCK TABLES` lets them go when nothing else made
    /// the session sticky.
    ///
    /// A SQL `PREPARE s FROM '...'` makes the session sticky too (module `dynamic`);
    /// `PREPARE s FROM @var` stays refused by the router (dynamic SQL), and `FOUND_ROWS()`,
    /// `LAST_INSERT_ID()` are answered by the gateway from its own counts, so neither needs
    /// affinity. Returned to its pool, a kept connection is reset (`COM_RESET_CONNECTION`:
    /// temporary tables, variables and named locks go); one holding table locks gets `UNLOCK
    /// TABLES` first, and is closed when that fails. A kept connection that is lost ends the
    /// session after the statement's error (its state is gone). Limits: an XA transaction
    /// (`SET XA = ON`, `twoPhaseCommit`) runs on pooled connections, not the kept ones (the
    /// coordinator keeps its connections at the end, and the state would go with them): the
    /// kept state is not visible inside it, and state made inside it does not outlive it; such
    /// a session's multi-node autocommit writes are not two-phase.
    ///
    /// Savepoints across dataNodes: set on every pinned connection when the client sets one,
    /// and replayed on a dataNode's connection when it joins the transaction later (exact, see
    /// [`HeldConns`]); the cost is one round trip per savepoint when a node joins a
    /// transaction that holds savepoints. The alternative (rolling such a node back whole at
    /// `ROLLBACK TO`) would need a branch rollback and restart under XA. A savepoint statement
    /// that fails on some connection leaves the nodes disagreeing and marks the transaction
    /// interrupted.
    held: HeldConns,
    /// `SET XA = ON` was issued: the session's next (or current, still empty) transaction is
    /// an XA transaction (Mycat's rule: for one transaction, SPEC §7.4).
    xa_on: bool,
    /// The open transaction's XA state when it is one (module [`crate::xa`]).
    xa: Option<XaTx>,
    /// Parameter counts and types of prepared statements, shared with the socket reader.
    statements: Statements,
    /// Statements prepared by the client (COM_STMT_PREPARE), by statement id.
    prepared: HashMap<u32, Prepared>,
    /// Statements prepared with SQL `PREPARE`, by lower-cased name (module `dynamic`): each
    /// lives on the session's kept connection to its dataNode.
    sql_prepared: HashMap<String, dynamic::SqlPrepared>,
    /// The id the next prepared statement gets.
    next_statement: u32,
    /// The last insert id a statement of this session reported (`LAST_INSERT_ID()`).
    last_insert_id: u64,
    /// `SHOW WARNINGS` rows (Level, Code, Message) of the last statement that ran on dataNodes
    /// and ended with an OK or EOF packet counting warnings (at most `MAX_ERROR_COUNT`, module
    /// [`diagnostics`]).
    warnings: Vec<Vec<Option<String>>>,
    /// That statement's warning count, as its OK or EOF packet gave it (`@@warning_count`).
    warning_count: u16,
    /// `FOUND_ROWS()` of the last result set that went to the client
    /// ([`Local::FoundRows`](crate::route::Local::FoundRows)).
    found_rows: u64,
    /// While an SQL-level `EXECUTE s` runs: the text prepared as `s` on its dataNode, which
    /// the `FOUND_ROWS()` rules read in place of `EXECUTE s` (module `dynamic`).
    executing: Option<Arc<str>>,
    /// `ROW_COUNT()` after the last statement ([`Local::RowCount`](crate::route::Local::RowCount)):
    /// its OK packet's affected rows, or -1 after a result set or an error (0 on a new
    /// connection, as on MariaDB).
    row_count: i64,
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
            if !self.held.has_pinned() {
                self.server.xa.forget(&tx.gtrid);
            } else if let Ok(handle) = tokio::runtime::Handle::try_current() {
                // A client that left mid-XA-transaction: its branches are rolled back.
                let pinned = self.held.leave_transaction();
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
        // Pinned connections are rolled back before they are reused; table locks never go
        // back to a pool (`UNLOCK TABLES`, or the connection is closed); kept connections go
        // back to their pools, which reset them.
        let leaving = self.held.leave();
        if leaving.is_empty() {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            // Counted until done: a graceful shutdown waits for it (`Server::drain`).
            let pending = super::Pending::new(&self.server);
            handle.spawn(async move {
                let _pending = pending;
                leaving.run().await;
            });
        } else {
            leaving.abandon();
        }
    }
}

impl Session {
    fn user_name(&self) -> &str {
        self.user.get().map(String::as_str).unwrap_or("")
    }

    fn status(&self) -> StatusFlags {
        let mut s = StatusFlags::empty();
        if self.autocommit {
            s |= StatusFlags::SERVER_STATUS_AUTOCOMMIT;
        }
        if self.in_transaction || self.held.has_pinned() {
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
            charsets: {
                let cs = self.slot.charsets();
                let utf8 = |c: &crate::charset::Charset| c.name == "utf8mb4";
                (!utf8(cs.client) || cs.results.is_none_or(|r| !utf8(r)))
                    .then(|| (cs.client.name, cs.results.map(|r| r.name)))
            },
            counters: Some(crate::route::Counters {
                found_rows: self.found_rows,
                last_insert_id: self.last_insert_id,
                row_count: self.row_count,
                connection_id: self.id,
            }),
        }
    }

    async fn error(&self, w: QueryResultWriter<'_, Writer>, e: MysqlError) -> io::Result<()> {
        tracing::debug!(connection = self.id, code = e.code, message = %e.message, "statement refused");
        send_error(&self.slot, w, e).await
    }

    async fn ok(&self, w: QueryResultWriter<'_, Writer>, ok: OkInfo) -> io::Result<()> {
        write_ok(&self.slot, w, ok, self.status()).await
    }

    /// The client's character set as MariaDB names it: the session's, or for a UTF-8 session
    /// the one its handshake named (`utf8mb3`, `binary`, which the gateway reads as utf8mb4).
    fn client_charset_name(&self) -> &'static str {
        let client = self.slot.charsets().client;
        if !client.is_utf8() {
            return client.name;
        }
        match self.slot.handshake_collation() {
            Some(63) => "binary",
            Some(id) => crate::charset::Charset::by_collation_id(id)
                .filter(|c| c.is_utf8())
                .map_or(client.name, |c| c.name),
            None => client.name,
        }
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

    /// Checks that the user may use `schema` (1300 for a name holding a character outside the
    /// BMP, 1049 unknown, 1044 not allowed).
    fn check_schema(&self, schema: &str) -> Result<(), MysqlError> {
        // MariaDB converts a database name to its system character set (utf8mb3) first: a
        // character outside the BMP is 1300, naming the client's character set and the name's
        // bytes (mysql-test mysql_not_windows: a login naming `test😁 `).
        if schema.chars().any(|c| c.len_utf8() == 4) {
            return Err(MysqlError::new(
                1300,
                "HY000",
                format!(
                    "Invalid {} character string: '{}'",
                    self.client_charset_name(),
                    printable(schema.as_bytes())
                ),
            ));
        }
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

    /// Tells the registry (manager port) the session's schema, autocommit and the
    /// dataNodes it holds connections on, when they changed.
    fn publish(&self) {
        // The dataNodes the session holds connections on: pinned to its transaction or kept
        // for its state.
        let nodes = self.held.nodes();
        let mut p = self.handle.published_mut();
        if p.schema == self.schema && p.autocommit == self.autocommit && p.nodes == nodes {
            return;
        }
        p.schema.clone_from(&self.schema);
        p.autocommit = self.autocommit;
        p.nodes = nodes;
    }
}

/// `bytes` as MariaDB prints a string it could not convert in a message: printable ASCII as
/// it is, any other byte as `\xHH`.
fn printable(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            0x20..=0x7E => char::from(b).to_string(),
            _ => format!("\\x{b:02X}"),
        })
        .collect()
}
