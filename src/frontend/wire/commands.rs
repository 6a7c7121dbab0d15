//! The client socket's read side: commands opensrv-mysql 0.7 answers with a bare OK without
//! doing what they ask are handled here instead.
//!
//! Commands the session answers itself reach it as typed values ([`Diverted`]), put in the
//! shared slot right before a placeholder COM_QUERY ([`DIVERTED_QUERY`]) takes their place in
//! opensrv's loop: the text a client could send is never what tells the session what to do.
//!
//! - `COM_RESET_CONNECTION` (0x1F) is diverted ([`Diverted::ResetConnection`]), so the session
//!   really resets: its transaction is rolled back and its pinned connections go
//!   back to their pools.
//! - `COM_CHANGE_USER` (0x11) is diverted with its fields ([`Diverted::ChangeUser`]): the
//!   session checks the new user's proof against server.xml (opensrv would answer OK without
//!   checking or switching) and resets itself; a packet it cannot read closes the connection.
//!
//! - `COM_STMT_RESET` (0x1A), which opensrv does not know (it would answer an error), is
//!   diverted and answered with OK ([`Diverted::StmtReset`]): manx binds parameters at each
//!   execution, so a prepared statement has nothing else to reset.
//!
//! - `COM_STMT_EXECUTE` (0x17) that re-uses the parameter types of the previous execution
//!   (`new_params_bound_flag = 0`, sent by libmariadb and Connector/J from the second
//!   execution on) gets those types written back in: opensrv-mysql 0.7 does not skip the flag
//!   byte in that case and reads every parameter one byte off.
//!
//! - `COM_STMT_SEND_LONG_DATA` (0x18) pieces are held here, bounded by `max_allowed_packet`,
//!   and handed on right before their statement's `COM_STMT_EXECUTE`
//!   ([`super::long_data`]); `COM_STMT_RESET` and `COM_STMT_CLOSE` drop them.
//!
//! - `COM_STATISTICS` (0x09) and `COM_FIELD_LIST` (0x04), which opensrv answers with a bare
//!   OK, are diverted ([`Diverted::Statistics`], [`Diverted::FieldList`]), and so is `COM_PING`
//!   ([`Diverted::Ping`]: 1053 while the gateway is offline, as Mycat answers load balancers);
//!   `COM_PROCESS_KILL` (0x0C), which opensrv does not know, becomes `KILL CONNECTION <id>`.
//!
//! - `COM_QUERY` holding several statements, from a client that set
//!   `CLIENT_MULTI_STATEMENTS`, is split (at `;` outside quotes and comments) and each
//!   statement is handed on as a COM_QUERY of its own, the next one only when opensrv asks for
//!   more input, that is once the previous one is answered. The writer ([`super::tap`]) chains
//!   their responses into one: `SERVER_MORE_RESULTS_EXISTS` on all but the last, sequence ids
//!   continued; an ERR packet ends the batch, as in MySQL. Statements opensrv would intercept
//!   by prefix (`USE `, `SELECT @@`) get a leading space so the session answers them.
//!
//! - `COM_QUERY` and `COM_STMT_PREPARE` text from a client whose character set is not UTF-8
//!   (its handshake's, or `SET NAMES`: [`ErrorSlot::charsets`]) is decoded to UTF-8 here, before
//!   anything parses or splits it, and handed on as UTF-8 (bytes that are not characters of the
//!   client's set are answered with 1300); so are the text parameters of `COM_STMT_EXECUTE`.
//!   See module `crate::charset`.
//!
//! - A command longer than the gateway's `max_allowed_packet` (all its packets together) is
//!   read and dropped as it arrives, answered with 1153 `Got a packet bigger than
//!   'max_allowed_packet' bytes` once the client has sent it all, and the connection is closed,
//!   as MySQL does. Commands of several packets (16 MiB and more) are put together here, within
//!   that limit, and handed on as opensrv expects them.
//!
//! Reads stop at packet boundaries: opensrv-mysql 0.7's packet reader frees its buffer while
//! the packet it just returned still points into it when a read brought more than one packet
//! (several pipelined queries), so it must never get more than one packet per read.
//!
//! Only command packets (sequence id 0) are looked at (the first login packet only for the
//! client's capabilities); everything else passes through as is.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

use super::long_data::{LongData, Overflow};
use super::tap::ErrorSlot;
use crate::frontend::MysqlError;
use crate::sqltext::SqlMode;

/// The placeholder COM_QUERY text handed to opensrv in place of a diverted command. The session
/// acts on the [`Diverted`] value the reader put in the shared slot, never on this text: the
/// same text from a client finds no value there and is an ordinary (empty) statement.
pub const DIVERTED_QUERY: &str = "/* manx: diverted command */";

/// A command the reader takes out of opensrv's hands and the session answers (module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Diverted {
    /// `COM_RESET_CONNECTION`.
    ResetConnection,
    /// `COM_STMT_RESET`.
    StmtReset,
    /// `COM_STATISTICS`.
    Statistics,
    /// `COM_PING` (an OK, or 1053 while the gateway is offline).
    Ping,
    /// `COM_FIELD_LIST` with its arguments as sent (the table name, a NUL, the wildcard).
    FieldList(String),
    /// `COM_CHANGE_USER`, read ([`ChangeUser`]).
    ChangeUser(ChangeUser),
    /// A command the reader refused: the error answering it.
    Refused(MysqlError),
}

/// The fields of a `COM_CHANGE_USER` (MySQL's protocol documentation,
/// "COM_CHANGE_USER"): the user, the proof of its password computed with the connection's
/// original scramble, the schema to use (empty: none) and the client's authentication plugin
/// (`None` when the client did not name one).
#[derive(Clone, PartialEq, Eq)]
pub struct ChangeUser {
    pub user: String,
    pub auth_response: Vec<u8>,
    pub database: String,
    pub plugin: Option<String>,
    /// The character set (a collation id) the client asks for, when the packet carries one.
    pub charset: Option<u16>,
}

impl std::fmt::Debug for ChangeUser {
    // The proof is a password hash: never in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeUser")
            .field("user", &self.user)
            .field("database", &self.database)
            .field("plugin", &self.plugin)
            .finish_non_exhaustive()
    }
}

/// Reads a `COM_CHANGE_USER` payload (the command byte first) of a client with capabilities
/// `caps`: `user NUL`, the auth response (1-byte length with `CLIENT_SECURE_CONNECTION`, else
/// NUL-terminated), `database NUL`, then, when present, the character set (2 bytes) and with
/// `CLIENT_PLUGIN_AUTH` the plugin name (NUL-terminated); connection attributes are ignored.
/// `None` for a payload that does not hold those fields.
pub fn read_change_user(payload: &[u8], caps: u32) -> Option<ChangeUser> {
    const CLIENT_SECURE_CONNECTION: u32 = 0x8000;
    const CLIENT_PLUGIN_AUTH: u32 = 0x0008_0000;
    let nul_terminated = |from: usize| -> Option<(&[u8], usize)> {
        let rest = payload.get(from..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        Some((&rest[..end], from + end + 1))
    };
    let (user, at) = nul_terminated(1)?;
    let (auth_response, at) = if caps & CLIENT_SECURE_CONNECTION != 0 {
        let len = usize::from(*payload.get(at)?);
        (payload.get(at + 1..at + 1 + len)?, at + 1 + len)
    } else {
        nul_terminated(at)?
    };
    let (database, at) = match payload.get(at) {
        None => (&[][..], at),
        Some(_) => nul_terminated(at)?,
    };
    let charset = payload
        .get(at..at + 2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]));
    let plugin = if caps & CLIENT_PLUGIN_AUTH != 0 && payload.len() > at + 2 {
        let (name, _) = nul_terminated(at + 2)?;
        Some(String::from_utf8(name.to_vec()).ok()?)
    } else {
        None
    };
    Some(ChangeUser {
        user: String::from_utf8(user.to_vec()).ok()?,
        auth_response: auth_response.to_vec(),
        database: String::from_utf8(database.to_vec()).ok()?,
        plugin,
        charset,
    })
}

/// The detail of the refusal of an execution whose long data went over the connection's bound.
const LONG_DATA_CONNECTION: &str = "connection";

/// MySQL's errno, SQLSTATE and message for what the reader refuses: unknown command 1047,
/// unknown statement 1243, packet too large 1153, packets out of order 1156, an execution
/// whose parameter values do not fit their types 1210, long data past the
/// limit 1105 (`detail` [`LONG_DATA_CONNECTION`] for the connection's bound), text that is not
/// UTF-8 1300.
fn refusal(errno: u16, detail: &str) -> MysqlError {
    match errno {
        1047 => MysqlError::new(1047, "08S01", "Unknown command"),
        1243 => MysqlError::new(
            1243,
            "HY000",
            "Unknown prepared statement handler given to mysqld_stmt_execute",
        ),
        1153 => MysqlError::new(
            1153,
            "08S01",
            "Got a packet bigger than 'max_allowed_packet' bytes",
        ),
        1156 => MysqlError::new(1156, "08S01", "Got packets out of order"),
        1210 => MysqlError::new(1210, "HY000", "Incorrect arguments to mysqld_stmt_execute"),
        // MySQL's answer to the execution (`Item_param::set_longdata`).
        1105 if detail == LONG_DATA_CONNECTION => MysqlError::new(
            1105,
            "HY000",
            "Parameters of prepared statements which are set through mysql_send_long_data() are longer than 'max_allowed_packet' bytes together on this connection: execute or reset the statements that hold long data first",
        ),
        1105 => MysqlError::new(
            1105,
            "HY000",
            "Parameter of prepared statement which is set through mysql_send_long_data() is longer than 'max_allowed_packet' bytes",
        ),
        _ => MysqlError::new(
            1300,
            "HY000",
            "Invalid utf8mb4 character string: the gateway takes statements in UTF-8 (set the connection character set to utf8mb4)",
        ),
    }
}

const COM_FIELD_LIST: u8 = 0x04;
const COM_STATISTICS: u8 = 0x09;
const COM_PING: u8 = 0x0E;
const COM_PROCESS_KILL: u8 = 0x0C;

const COM_STMT_RESET: u8 = 0x1A;
const COM_STMT_SEND_LONG_DATA: u8 = 0x18;
const COM_STMT_EXECUTE: u8 = 0x17;
const COM_STMT_CLOSE: u8 = 0x19;
const COM_CHANGE_USER: u8 = 0x11;
const COM_RESET_CONNECTION: u8 = 0x1F;
const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;

/// Commands opensrv-mysql (or this reader) answers; any other command byte gets 1047
/// `Unknown command` (opensrv would answer OK).
const KNOWN_COMMANDS: &[u8] = &[
    0x01, 0x02, 0x03, 0x04, 0x09, 0x0E, 0x11, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x1F,
];

/// The parameter count of each prepared statement (set by the session at COM_STMT_PREPARE)
/// and the parameter types its last execution bound.
#[derive(Debug, Clone, Default)]
pub struct Statements(Arc<Mutex<HashMap<u32, StatementShape>>>);

/// A prepared statement's parameter count and the types its last execution bound (2 bytes
/// per parameter, as COM_STMT_EXECUTE carries them).
type StatementShape = (usize, Option<Vec<u8>>);

impl Statements {
    /// Statement `id` takes `params` parameters.
    pub fn prepared(&self, id: u32, params: usize) {
        self.lock().insert(id, (params, None));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, StatementShape>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// How a multi-statement text is cut into its statements as the backend will cut them under a
/// `sql_mode` (each piece without its `;`). The router's splitter
/// (`split_statements` of module `route`) is handed in by the session: finding where a statement
/// ends needs the router's lexer, which the wire layer does not import (module [`super`]).
pub type Splitter = fn(&str, SqlMode) -> Vec<&str>;

/// Reader over the client socket (see the module docs).
pub struct Commands<R> {
    inner: R,
    /// Bytes read from the socket, not yet handed on.
    input: Vec<u8>,
    /// Bytes ready for opensrv.
    output: Vec<u8>,
    /// Bytes handed on so far, and the positions (in that count) where packets end.
    handed: u64,
    boundaries: VecDeque<u64>,
    /// Payload bytes of the current packet still to pass through unexamined.
    passing: usize,
    closed: bool,
    statements: Statements,
    /// Shared with the writer: the client's capabilities, the batch in progress.
    slot: ErrorSlot,
    /// The gateway's `max_allowed_packet` (`maxPacketSize`), in bytes.
    max_packet: usize,
    /// The client's handshake response went by (its capabilities are recorded).
    greeted: bool,
    /// A command of several packets (its first was 0xFFFFFF bytes long) being put together.
    held: Option<Vec<u8>>,
    /// A command over `max_packet` being thrown away.
    oversized: Option<Oversized>,
    /// Statements of a multi-statement COM_QUERY not yet handed on, and whether a batch is
    /// being answered (its last statement may already be handed on).
    batch: VecDeque<String>,
    in_batch: bool,
    /// `COM_STMT_SEND_LONG_DATA` pieces held until their statement executes
    /// ([`super::long_data`]).
    long_data: LongData,
    /// Cuts a multi-statement COM_QUERY into its statements.
    split: Splitter,
}

/// A command longer than `max_allowed_packet`: its bytes are read and dropped (so the client
/// can finish sending and read the error) and then the connection ends.
#[derive(Debug)]
struct Oversized {
    /// Payload bytes of the current packet still to drop.
    left: usize,
    /// Another packet of the command follows this one.
    more: bool,
    /// The sequence id of the command's last packet so far (the error answers after it).
    seq: u8,
    /// Payload bytes of the command so far.
    total: u64,
}

/// Most bytes of an oversized command read (and dropped) before the connection is closed
/// without waiting for its end: MySQL's own ceiling for `max_allowed_packet`.
const OVERSIZED_DRAIN_LIMIT: u64 = 1 << 30;

/// `CLIENT_MULTI_STATEMENTS`.
const CLIENT_MULTI_STATEMENTS: u32 = 1 << 16;

/// `CLIENT_PROTOCOL_41`: the handshake response carries the client's character set.
const CLIENT_PROTOCOL_41: u32 = 0x0200;

/// The longest packet payload; a longer one continues in the next packet.
const MAX_PAYLOAD: usize = 0xFF_FFFF;

impl<R: AsyncRead + Unpin> Commands<R> {
    /// A reader over `inner`; `max_packet` is the gateway's `max_allowed_packet` in bytes;
    /// `split` cuts multi-statement texts ([`Splitter`]).
    pub fn new(
        inner: R,
        statements: Statements,
        slot: ErrorSlot,
        max_packet: usize,
        split: Splitter,
    ) -> Self {
        Commands {
            inner,
            input: Vec::new(),
            output: Vec::new(),
            handed: 0,
            boundaries: VecDeque::new(),
            passing: 0,
            closed: false,
            statements,
            slot,
            max_packet,
            greeted: false,
            held: None,
            oversized: None,
            batch: VecDeque::new(),
            in_batch: false,
            long_data: LongData::new(max_packet),
            split,
        }
    }

    /// Appends a whole payload to the output as packets (a payload of 0xFFFFFF bytes or more
    /// continues in the packets after, the last one shorter) and marks where each ends.
    fn emit(&mut self, seq: u8, payload: &[u8]) {
        let mut seq = seq;
        let mut rest = payload;
        loop {
            let n = rest.len().min(MAX_PAYLOAD);
            let mut header = (n as u32).to_le_bytes();
            header[3] = seq;
            self.output.extend_from_slice(&header);
            self.output.extend_from_slice(&rest[..n]);
            self.boundaries
                .push_back(self.handed + self.output.len() as u64);
            rest = &rest[n..];
            seq = seq.wrapping_add(1);
            if n < MAX_PAYLOAD {
                return;
            }
        }
    }

    /// Hands on a COM_QUERY carrying `query`, as sequence id `seq`.
    fn emit_query(&mut self, seq: u8, query: &str) {
        let mut payload = Vec::with_capacity(1 + query.len());
        payload.push(COM_QUERY);
        payload.extend_from_slice(query.as_bytes());
        self.emit(seq, &payload);
    }

    /// Hands `command` to the session: the value in the shared slot, the placeholder query
    /// (sequence id `seq`) in opensrv's loop.
    fn divert(&mut self, seq: u8, command: Diverted) {
        self.slot.divert(command);
        self.emit_query(seq, DIVERTED_QUERY);
    }

    /// Hands on the refusal `errno` in place of the command.
    /// Hands on a COM_QUERY or COM_STMT_PREPARE (`command`) whose text the reader rewrote to
    /// `sql` (decoded from the client's character set, `_binary` literals in hex).
    fn hand_on_text(&mut self, command: u8, sql: &str) {
        let mut rewritten = Vec::with_capacity(1 + sql.len());
        rewritten.push(command);
        rewritten.extend_from_slice(sql.as_bytes());
        if command == COM_STMT_PREPARE {
            self.emit(0, &rewritten);
        } else {
            self.query(sql, &rewritten);
        }
    }

    fn refuse(&mut self, errno: u16) {
        self.divert(0, Diverted::Refused(refusal(errno, "")));
    }

    /// A COM_STMT_EXECUTE payload with the previous execution's parameter types written in
    /// when it re-uses them; the types it binds are remembered.
    fn execute(&self, payload: &[u8]) -> Option<Vec<u8>> {
        let id = u32::from_le_bytes(payload.get(1..5)?.try_into().ok()?);
        let mut statements = self.statements.lock();
        let (params, types) = statements.get_mut(&id)?;
        let params = *params;
        if params == 0 {
            return None;
        }
        let flag_at = 10 + params.div_ceil(8);
        match payload.get(flag_at)? {
            1 => {
                *types = Some(payload.get(flag_at + 1..flag_at + 1 + 2 * params)?.to_vec());
                None
            }
            0 => {
                let types = types.as_ref()?;
                let mut out = Vec::with_capacity(payload.len() + types.len());
                out.extend_from_slice(&payload[..flag_at]);
                out.push(1);
                out.extend_from_slice(types);
                out.extend_from_slice(&payload[flag_at + 1..]);
                Some(out)
            }
            _ => None,
        }
    }

    /// Starts dropping a command that has grown past `max_packet` (`len`: the payload length
    /// of its packet whose header was just consumed).
    fn oversize(&mut self, len: usize, seq: u8, total: u64) {
        tracing::info!(
            bytes = total,
            limit = self.max_packet,
            "command larger than max_allowed_packet: answering 1153 and closing"
        );
        self.held = None;
        self.oversized = Some(Oversized {
            left: len,
            more: len == MAX_PAYLOAD,
            seq,
            total,
        });
    }

    /// Moves what can be decided from `input` to `output`.
    fn process(&mut self) {
        loop {
            if self.in_batch || self.closed {
                // Later commands wait until every statement of the batch is answered.
                return;
            }
            if self.passing > 0 {
                let n = self.passing.min(self.input.len());
                self.output.extend(self.input.drain(..n));
                self.passing -= n;
                if self.passing > 0 {
                    return;
                }
            }
            if let Some(o) = self.oversized.as_mut() {
                let n = o.left.min(self.input.len());
                self.input.drain(..n);
                o.left -= n;
                if o.left > 0 {
                    return;
                }
                if !o.more {
                    // The client sent all of it: it reads the error now, then the connection
                    // ends (MySQL closes it too).
                    let seq = o.seq;
                    self.oversized = None;
                    self.divert(seq, Diverted::Refused(refusal(1153, "")));
                    self.closed = true;
                    self.input.clear();
                    return;
                }
                if self.input.len() < 4 {
                    return;
                }
                let len = u32::from_le_bytes([self.input[0], self.input[1], self.input[2], 0]);
                o.seq = self.input[3];
                o.left = len as usize;
                o.more = o.left == MAX_PAYLOAD;
                o.total += u64::from(len);
                self.input.drain(..4);
                if o.total > OVERSIZED_DRAIN_LIMIT {
                    tracing::info!("oversized command still growing: closing the connection");
                    self.oversized = None;
                    self.closed = true;
                    self.input.clear();
                    return;
                }
                continue;
            }
            if self.input.len() < 4 {
                return;
            }
            let len = u32::from_le_bytes([self.input[0], self.input[1], self.input[2], 0]) as usize;
            let seq = self.input[3];
            if let Some(held) = self.held.as_ref() {
                // A further packet of a long command.
                let total = (held.len() + len) as u64;
                if total > self.max_packet as u64 {
                    self.input.drain(..4);
                    self.oversize(len, seq, total);
                    continue;
                }
                if self.input.len() < 4 + len {
                    return;
                }
                let mut held = self.held.take().unwrap_or_default();
                held.extend_from_slice(&self.input[4..4 + len]);
                self.input.drain(..4 + len);
                if len == MAX_PAYLOAD {
                    self.held = Some(held);
                } else {
                    self.command(held);
                }
                continue;
            }
            if len > self.max_packet {
                self.input.drain(..4);
                self.oversize(len, seq, len as u64);
                continue;
            }
            if seq != 0 && self.slot.logged_in() {
                // A command must start at sequence id 0; MySQL answers 1156 and closes the
                // connection (opensrv-mysql would take it as a command and overflow its
                // sequence counter on 255).
                tracing::info!(
                    seq,
                    "command packet out of order: answering 1156 and closing"
                );
                self.refuse(1156);
                self.closed = true;
                self.input.clear();
                return;
            }
            if seq == 255 {
                // A login packet numbered 255 (the greeting was 0; a real exchange never gets
                // there): opensrv-mysql would overflow its sequence counter on the reply. MySQL
                // ends such a handshake; so does manx, without a word.
                tracing::info!("login packet with sequence id 255: closing");
                self.closed = true;
                self.input.clear();
                return;
            }
            if seq != 0 {
                // Not a command: the login exchange. The first packet is the handshake
                // response (or the SSL request), which starts with the client's capabilities.
                if !self.greeted {
                    if (len >= 4 && self.input.len() < 8) || (len >= 9 && self.input.len() < 13) {
                        return;
                    }
                    self.greeted = true;
                    if len >= 4 && self.slot.is_classic_eof() {
                        // CLIENT_DEPRECATE_EOF (bit 24): opensrv then writes EOF packets.
                        self.input[7] &= !0x01;
                    }
                    if len >= 4 {
                        let caps = u32::from_le_bytes([
                            self.input[4],
                            self.input[5],
                            self.input[6],
                            self.input[7],
                        ]);
                        self.slot.set_client_capabilities(caps);
                        // Protocol 4.1: capabilities, max packet size, then the client's
                        // character set (a collation id), as in the SSL request too.
                        if caps & CLIENT_PROTOCOL_41 != 0
                            && len >= 9
                            && let Some(&id) = self.input.get(12)
                        {
                            self.slot.set_handshake_charset(u16::from(id));
                        }
                    }
                }
                self.output.extend(self.input.drain(..4));
                self.boundaries
                    .push_back(self.handed + (self.output.len() + len) as u64);
                self.passing = len;
                continue;
            }
            // A command: decided on once all of it is here.
            if self.input.len() < 4 + len {
                return;
            }
            // The input buffer becomes the payload (no copy of a 16 MiB packet); what follows
            // it starts a new one.
            let rest = self.input.split_off(4 + len);
            let mut payload = std::mem::replace(&mut self.input, rest);
            payload.drain(..4);
            if len == MAX_PAYLOAD {
                self.held = Some(payload);
            } else {
                self.command(payload);
            }
        }
    }

    /// Hands on one whole command (its payload, put together from all its packets).
    fn command(&mut self, payload: Vec<u8>) {
        self.slot.new_command();
        self.slot.touch();
        let Some(&command) = payload.first() else {
            self.emit(0, &payload);
            return;
        };
        match command {
            COM_RESET_CONNECTION if payload.len() == 1 => self.divert(0, Diverted::ResetConnection),
            COM_STMT_RESET if payload.len() == 5 => {
                self.long_data.drop_statement(statement_id(&payload));
                self.divert(0, Diverted::StmtReset)
            }
            COM_STMT_SEND_LONG_DATA if payload.len() >= 5 => {
                // No answer either way; opensrv gets the pieces right before the execution.
                let id = statement_id(&payload);
                if self.statements.lock().contains_key(&id) {
                    self.long_data.hold(id, payload);
                } else {
                    // MySQL ignores long data for an unknown statement (opensrv would drop the
                    // connection).
                    tracing::debug!(statement = id, "long data for an unknown statement dropped");
                }
            }
            COM_CHANGE_USER => match read_change_user(&payload, self.slot.client_capabilities()) {
                Some(change) => self.divert(0, Diverted::ChangeUser(change)),
                None => {
                    tracing::info!("COM_CHANGE_USER that cannot be read: closing the connection");
                    self.closed = true;
                    self.input.clear();
                }
            },
            COM_STATISTICS => self.divert(0, Diverted::Statistics),
            COM_PING => self.divert(0, Diverted::Ping),
            COM_FIELD_LIST => {
                let args = String::from_utf8_lossy(&payload[1..]).into_owned();
                self.divert(0, Diverted::FieldList(args));
            }
            COM_PROCESS_KILL if payload.len() == 5 => {
                let id = u32::from_le_bytes([payload[1], payload[2], payload[3], payload[4]]);
                self.emit_query(0, &format!("KILL CONNECTION {id}"));
            }
            c if !KNOWN_COMMANDS.contains(&c) => self.refuse(1047),
            COM_STMT_CLOSE => {
                if payload.len() == 5 {
                    let id = statement_id(&payload);
                    self.statements.lock().remove(&id);
                    self.long_data.drop_statement(id);
                }
                self.emit(0, &payload);
            }
            COM_STMT_EXECUTE => {
                let known = payload
                    .get(1..5)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .is_some_and(|id| self.statements.lock().contains_key(&id));
                if !known {
                    // opensrv would drop the connection; MySQL answers 1243.
                    self.refuse(1243);
                    return;
                }
                let pieces = match self.long_data.take(statement_id(&payload)) {
                    Ok(pieces) => pieces,
                    Err(Overflow::Parameter) => {
                        self.refuse(1105);
                        return;
                    }
                    Err(Overflow::Connection) => {
                        let e = refusal(1105, LONG_DATA_CONNECTION);
                        self.divert(0, Diverted::Refused(e));
                        return;
                    }
                };
                // Parameters sent as long data have no value in the packet.
                let long: Vec<u16> = pieces
                    .iter()
                    .filter_map(|p| p.get(5..7))
                    .map(|b| u16::from_le_bytes([b[0], b[1]]))
                    .collect();
                let patched = self.execute(&payload);
                let payload = patched.unwrap_or(payload);
                let params = self
                    .statements
                    .lock()
                    .get(&statement_id(&payload))
                    .map_or(0, |s| s.0);
                if params > 0 && parameter_values(&payload, params, &long).is_none() {
                    // A packet whose values do not fit its types (opensrv-mysql 0.7 panics on
                    // a length past the end): MySQL's answer to a malformed execution. Its
                    // long data is spent, as the server spends it on any execution.
                    self.refuse(1210);
                    return;
                }
                for piece in pieces {
                    self.emit(0, &piece);
                }
                let client = self.slot.charsets().client;
                match (!client.is_utf8())
                    .then(|| decode_parameters(&payload, params, &long, client))
                    .flatten()
                {
                    Some(decoded) => self.emit(0, &decoded),
                    None => self.emit(0, &payload),
                }
            }
            COM_QUERY | COM_STMT_PREPARE if !self.slot.charsets().client.is_utf8() => {
                let client = self.slot.charsets().client;
                let backslash_escapes = !self.slot.sql_mode().no_backslash_escapes;
                match decode_statement(client, &payload[1..], backslash_escapes) {
                    Ok(sql) => self.hand_on_text(command, &sql),
                    Err(e) => self.divert(0, Diverted::Refused(e)),
                }
            }
            COM_QUERY | COM_STMT_PREPARE => {
                // `_binary'<any bytes>'` (JDBC's byte[] parameters) as `X'<hex>'`: the same
                // value, in UTF-8 text.
                // Most statements are UTF-8 without `_binary`: checked once, handed on as they are.
                let text = std::str::from_utf8(&payload[1..]);
                let plain =
                    text.is_ok_and(|t| !crate::sqltext::contains_ignore_ascii_case(t, "_binary"));
                let backslash_escapes = !self.slot.sql_mode().no_backslash_escapes;
                if !plain
                    && let Some(sql) =
                        crate::sqltext::binary_literals_as_hex(&payload[1..], backslash_escapes)
                {
                    self.hand_on_text(command, &sql);
                    return;
                }
                // opensrv drops the connection on SQL that is not UTF-8: answer an error instead.
                let Ok(sql) = text else {
                    self.refuse(1300);
                    return;
                };
                if command == COM_STMT_PREPARE {
                    self.emit(0, &payload);
                } else {
                    self.query(sql, &payload);
                }
            }
            _ => self.emit(0, &payload),
        }
    }

    /// Hands on a COM_QUERY: split into its statements when the client asked for
    /// multi-statements (each handed on once the previous one is answered, see the module
    /// docs), kept away from opensrv's own answers otherwise.
    fn query(&mut self, sql: &str, payload: &[u8]) {
        // Most statements hold no `;` at all: no scan for them.
        if sql.as_bytes().contains(&b';')
            && self.slot.client_capabilities() & CLIENT_MULTI_STATEMENTS != 0
        {
            let pieces = (self.split)(sql, self.slot.sql_mode());
            if pieces.len() > 1 {
                let mut pieces: VecDeque<String> = pieces.into_iter().map(shielded).collect();
                let first = pieces.pop_front().unwrap_or_default();
                self.slot.start_batch(true);
                self.batch = pieces;
                self.in_batch = true;
                self.emit_query(0, &first);
                return;
            }
        }
        // Outside a batch opensrv's `USE` is kept (it answers COM_INIT_DB the same way), unless
        // more statements follow: the router then refuses them as MySQL does without
        // CLIENT_MULTI_STATEMENTS.
        let shield = sql == "SELECT @@max_allowed_packet"
            || sql == "select @@max_allowed_packet"
            || sql == DIVERTED_QUERY
            || (intercepted(sql) && (self.split)(sql, self.slot.sql_mode()).len() > 1);
        if shield {
            self.emit_query(0, &shielded(sql));
        } else {
            self.emit(0, payload);
        }
    }

    /// Called when opensrv asks for more and `output` is empty during a batch: hands on its
    /// next statement, or ends the batch (all answered, or one failed) and goes on with the
    /// commands that came after it.
    fn next_in_batch(&mut self) {
        if let Some(next) = self.batch.pop_front()
            && self.slot.next_in_batch(!self.batch.is_empty())
        {
            self.emit_query(0, &next);
            return;
        }
        self.batch.clear();
        self.in_batch = false;
        self.slot.end_batch();
        self.process();
    }
}

/// A statement sent in the client's character set `client` (not UTF-8) as the UTF-8 text the
/// gateway parses and the backends (always utf8mb4) get: decoded whole first, so a multibyte
/// character whose second byte is `\` or a quote (GBK's 0xBF5C) stays one character and can
/// hide no quote; then each `_binary'...'` literal is written as `X'...'` holding its bytes in
/// the client's character set, as the server would have stored them.
///
/// Errors: 1300 `Invalid <charset> character string: '<hex>'` (MySQL's
/// `ER_INVALID_CHARACTER_STRING`) for bytes that are not characters of `client`.
fn decode_statement(
    client: &crate::charset::Charset,
    sql: &[u8],
    backslash_escapes: bool,
) -> Result<String, MysqlError> {
    let text = client.decode(sql).map_err(|bad| {
        let hex: String = bad.iter().map(|b| format!("{b:02X}")).collect();
        MysqlError::new(
            1300,
            "HY000",
            format!("Invalid {} character string: '{hex}'", client.name),
        )
    })?;
    // `_utf8'...'` holds UTF-8 bytes whatever the client's set: its body as sent (single-byte
    // sets only, see `utf8_literals_as_sent`).
    let text = match crate::sqltext::contains_ignore_ascii_case(&text, "_utf8")
        && SINGLE_BYTE.contains(&client.name)
    {
        true => crate::sqltext::utf8_literals_as_sent(&text, backslash_escapes, &|b| {
            client.encode_bytes(b).into_owned()
        })
        .map_or(text, std::borrow::Cow::Owned),
        false => text,
    };
    if !crate::sqltext::contains_ignore_ascii_case(&text, "_binary") {
        return Ok(text.into_owned());
    }
    Ok(
        crate::sqltext::binary_literals_as_hex_with(text.as_bytes(), backslash_escapes, &|b| {
            client.encode_bytes(b).into_owned()
        })
        .unwrap_or_else(|| text.into_owned()),
    )
}

/// The client character sets the gateway converts whose every character is one byte (MariaDB's
/// `mbmaxlen` 1): a byte below 0x80 is always that ASCII character in them.
const SINGLE_BYTE: &[&str] = &["latin1", "latin2", "cp1250", "cp1251", "hebrew", "koi8r"];

/// One parameter value of a COM_STMT_EXECUTE payload: its type byte, where its bytes start
/// (its length prefix, for a length-encoded value) and where its data starts and ends.
struct ParamValue {
    kind: u8,
    start: usize,
    data: usize,
    end: usize,
}

/// The values of a COM_STMT_EXECUTE payload whose types are bound (`params` parameters; those
/// in `long` were sent as long data and have no value here; NULLs neither), in order. `None`
/// when the payload does not have that shape: shorter than its NULL bitmap and types, types
/// not bound, or a value running past its end (MySQL answers 1210).
fn parameter_values(payload: &[u8], params: usize, long: &[u16]) -> Option<Vec<ParamValue>> {
    let nulls = payload.get(10..10 + params.div_ceil(8))?;
    let flag_at = 10 + params.div_ceil(8);
    if *payload.get(flag_at)? != 1 {
        return None;
    }
    let types = payload.get(flag_at + 1..flag_at + 1 + 2 * params)?;
    let mut at = flag_at + 1 + 2 * params;
    let mut values = Vec::with_capacity(params);
    for i in 0..params {
        let is_long = u16::try_from(i).is_ok_and(|i| long.contains(&i));
        if nulls[i / 8] & (1 << (i % 8)) != 0 || is_long {
            continue;
        }
        let kind = types[2 * i];
        let (data, end) = match kind {
            0x06 => (at, at),
            0x01 => (at, at + 1),
            0x02 | 0x0D => (at, at + 2),
            0x03 | 0x09 | 0x04 => (at, at + 4),
            0x05 | 0x08 => (at, at + 8),
            0x07 | 0x0A | 0x0B | 0x0C => (at + 1, at + 1 + usize::from(*payload.get(at)?)),
            _ => {
                let (len, n) = super::lenenc::read_int(payload.get(at..)?)?;
                let len = usize::try_from(len).ok()?;
                (at + n, (at + n).checked_add(len)?)
            }
        };
        if end > payload.len() {
            return None;
        }
        values.push(ParamValue {
            kind,
            start: at,
            data,
            end,
        });
        at = end;
    }
    Some(values)
}

/// A COM_STMT_EXECUTE payload (its types bound, `params` parameters, those in `long` sent as
/// long data) with its text parameters (`MYSQL_TYPE_VARCHAR`, `VAR_STRING`, `STRING`)
/// decoded from the client's character set `client` to UTF-8, as the server converts them
/// from `character_set_client`; blob and every other type pass as they are (binary data). A
/// byte that is not a character of `client` becomes `?`, as the server's conversion writes
/// it. `None` when nothing changes or the payload does not have the expected shape
/// ([`parameter_values`]).
fn decode_parameters(
    payload: &[u8],
    params: usize,
    long: &[u16],
    client: &crate::charset::Charset,
) -> Option<Vec<u8>> {
    use mysql_common::io::WriteMysqlExt;
    let values = parameter_values(payload, params, long)?;
    let mut out = Vec::with_capacity(payload.len());
    let mut copied = 0;
    let mut changed = false;
    for v in values {
        let value = &payload[v.data..v.end];
        if matches!(v.kind, 0x0F | 0xFD | 0xFE) && !value.is_ascii() {
            out.extend_from_slice(&payload[copied..v.start]);
            let text = client.decode_lossy(value);
            let _ = out.write_lenenc_str(text.as_bytes());
            copied = v.end;
            changed = true;
        }
    }
    out.extend_from_slice(&payload[copied..]);
    changed.then_some(out)
}

/// The statement id of a COM_STMT_* payload (bytes 1-4, little-endian); 0 when it is shorter.
fn statement_id(payload: &[u8]) -> u32 {
    payload
        .get(1..5)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Whether opensrv-mysql 0.7 would answer `sql` itself instead of the session: it takes
/// `USE `/`use ` by prefix (`USE a; SELECT 1` would become a schema named `a; SELECT 1`) and
/// answers `SELECT @@max_allowed_packet` with a constant 64 MiB.
fn intercepted(sql: &str) -> bool {
    ["USE ", "use ", "SELECT @@", "select @@"]
        .iter()
        .any(|p| sql.starts_with(p))
}

/// `sql` as the session must get it: a leading space keeps opensrv's prefix checks away, and
/// keeps a client's text equal to [`DIVERTED_QUERY`] from passing for a diverted command (the
/// router skips leading white space).
fn shielded(sql: &str) -> String {
    if intercepted(sql) || sql == DIVERTED_QUERY {
        format!(" {sql}")
    } else {
        sql.to_string()
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Commands<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if !this.output.is_empty() {
                // Never past the end of the packet being handed on (see the module docs).
                while this.boundaries.front().is_some_and(|b| *b <= this.handed) {
                    this.boundaries.pop_front();
                }
                let to_boundary = this
                    .boundaries
                    .front()
                    .map_or(usize::MAX, |b| (*b - this.handed) as usize);
                let n = this.output.len().min(buf.remaining()).min(to_boundary);
                buf.put_slice(&this.output[..n]);
                this.output.drain(..n);
                this.handed += n as u64;
                return Poll::Ready(Ok(()));
            }
            if this.in_batch {
                this.next_in_batch();
                continue;
            }
            if this.closed {
                return Poll::Ready(Ok(())); // end of stream
            }
            // Uninitialised: zeroing 16 KiB before every read cost more than the rest of the
            // command path (callgrind: ~33,000 instructions per statement).
            let mut chunk = [MaybeUninit::<u8>::uninit(); 16 * 1024];
            let mut rb = ReadBuf::uninit(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut rb) {
                Poll::Ready(Ok(())) if rb.filled().is_empty() => {
                    // The client closed: hand on whatever is left, then end.
                    this.output.append(&mut this.input);
                    this.closed = true;
                }
                Poll::Ready(Ok(())) => {
                    this.input.extend_from_slice(rb.filled());
                    this.process();
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    // The router's real splitter, as the session hands it in.
    use crate::route::split_statements;
    use tokio::io::AsyncReadExt;

    fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = (payload.len() as u32).to_le_bytes().to_vec();
        p[3] = seq;
        p.extend_from_slice(payload);
        p
    }

    #[tokio::test]
    async fn reset_becomes_a_query_and_an_unreadable_change_user_closes() {
        let mut input = packet(0, b"\x03SELECT 1");
        input.extend(packet(1, &[0x1F])); // not a command packet: passes
        input.extend(packet(0, &[0x1F]));
        input.extend(packet(0, b"\x11root\0"));
        input.extend(packet(0, b"\x03SELECT 2"));
        let mut out = Vec::new();
        let slot = ErrorSlot::default();
        Commands::new(
            &input[..],
            Statements::default(),
            slot.clone(),
            1 << 24,
            split_statements,
        )
        .read_to_end(&mut out)
        .await
        .unwrap();
        let mut expected = packet(0, b"\x03SELECT 1");
        expected.extend(packet(1, &[0x1F]));
        let mut q = vec![0x03];
        q.extend_from_slice(DIVERTED_QUERY.as_bytes());
        expected.extend(packet(0, &q));
        assert_eq!(
            out, expected,
            "the change-user packet and what follows are not handed on"
        );
        assert_eq!(slot.take_diverted(), Some(Diverted::ResetConnection));
        assert_eq!(slot.take_diverted(), None);
    }

    #[test]
    fn change_user_fields() {
        // user, 20-byte proof, database, charset 45, plugin, attributes.
        let mut p = b"\x11bob\0\x14".to_vec();
        p.extend([7u8; 20]);
        p.extend(b"TESTDB\0\x2d\x00mysql_native_password\0\x00");
        let caps = 0x8000 | 0x0008_0000;
        let c = read_change_user(&p, caps).unwrap();
        assert_eq!(
            (c.user.as_str(), c.auth_response.len(), c.database.as_str()),
            ("bob", 20, "TESTDB")
        );
        assert_eq!(c.plugin.as_deref(), Some("mysql_native_password"));
        // Without a schema or the optional fields.
        let mut p = b"\x11bob\0\x00\0".to_vec();
        let c = read_change_user(&p, caps).unwrap();
        assert_eq!((c.auth_response.len(), c.database.as_str()), (0, ""));
        assert_eq!(c.plugin, None);
        // A proof longer than the packet.
        p = b"\x11bob\0\x14abc".to_vec();
        assert_eq!(read_change_user(&p, caps), None);
    }

    fn query(seq: u8, sql: &str) -> Vec<u8> {
        let mut q = vec![0x03];
        q.extend_from_slice(sql.as_bytes());
        packet(seq, &q)
    }

    /// The login packet of a client with `caps`.
    fn login(caps: u32) -> Vec<u8> {
        let mut p = caps.to_le_bytes().to_vec();
        p.extend_from_slice(&[0; 28]);
        packet(1, &p)
    }

    #[tokio::test]
    async fn multi_statements_are_handed_on_one_by_one() {
        let mut input = login(CLIENT_MULTI_STATEMENTS);
        input.extend(query(0, "USE a; SELECT ';' ;SELECT 2; "));
        input.extend(query(0, "SELECT 3; SELECT 4"));
        let slot = ErrorSlot::default();
        let mut out = Vec::new();
        Commands::new(
            &input[..],
            Statements::default(),
            slot.clone(),
            1 << 24,
            split_statements,
        )
        .read_to_end(&mut out)
        .await
        .unwrap();
        let mut expected = login(CLIENT_MULTI_STATEMENTS);
        for sql in [
            " USE a",
            " SELECT ';' ",
            "SELECT 2",
            "SELECT 3",
            " SELECT 4",
        ] {
            expected.extend(query(0, sql));
        }
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&expected)
        );
        assert!(!slot.more_results(), "the batch ended");
    }

    #[tokio::test]
    async fn without_the_capability_a_batch_is_one_query() {
        let mut input = login(0);
        input.extend(query(0, "SELECT 1; SELECT 2"));
        input.extend(query(0, "USE a; SELECT 2"));
        input.extend(query(0, "SELECT @@max_allowed_packet"));
        let mut out = Vec::new();
        Commands::new(
            &input[..],
            Statements::default(),
            ErrorSlot::default(),
            1 << 24,
            split_statements,
        )
        .read_to_end(&mut out)
        .await
        .unwrap();
        let mut expected = login(0);
        expected.extend(query(0, "SELECT 1; SELECT 2"));
        expected.extend(query(0, " USE a; SELECT 2"));
        expected.extend(query(0, " SELECT @@max_allowed_packet"));
        assert_eq!(out, expected);
    }

    #[tokio::test]
    async fn long_commands_are_joined_and_oversized_ones_refused() {
        // 0xFFFFFF + 10 bytes of query under a 32 MiB limit: handed on as sent.
        let sql = "x".repeat(MAX_PAYLOAD - 1 + 10);
        let mut payload = vec![0x03];
        payload.extend_from_slice(sql.as_bytes());
        let mut input = login(0);
        input.extend(packet(0, &payload[..MAX_PAYLOAD]));
        input.extend(packet(1, &payload[MAX_PAYLOAD..]));
        let mut out = Vec::new();
        Commands::new(
            &input[..],
            Statements::default(),
            ErrorSlot::default(),
            32 << 20,
            split_statements,
        )
        .read_to_end(&mut out)
        .await
        .unwrap();
        assert_eq!(out, input);
        // Under a 16 MiB limit: dropped, refused after its last packet, then the end.
        input.extend(query(0, "SELECT 1"));
        let mut out = Vec::new();
        let slot = ErrorSlot::default();
        Commands::new(
            &input[..],
            Statements::default(),
            slot.clone(),
            16 << 20,
            split_statements,
        )
        .read_to_end(&mut out)
        .await
        .unwrap();
        let mut expected = login(0);
        expected.extend(query(1, DIVERTED_QUERY));
        assert_eq!(out, expected);
        assert_eq!(
            slot.take_diverted().map(|d| match d {
                Diverted::Refused(e) => e.code,
                _ => 0,
            }),
            Some(1153)
        );
    }

    /// Pipelined diverted commands queue up in order; a client's text equal to the placeholder
    /// is handed on shielded, so it cannot take a diverted command's place.
    #[tokio::test]
    async fn diverted_commands_queue_and_the_placeholder_text_is_shielded() {
        let mut input = packet(0, &[0x1A, 7, 0, 0, 0]);
        let mut fake = vec![0x03];
        fake.extend_from_slice(DIVERTED_QUERY.as_bytes());
        input.extend(packet(0, &fake));
        input.extend(packet(0, &[0x09]));
        input.extend(packet(0, b"\x03SELECT 1"));
        let mut out = Vec::new();
        let slot = ErrorSlot::default();
        Commands::new(
            &input[..],
            Statements::default(),
            slot.clone(),
            1 << 24,
            split_statements,
        )
        .read_to_end(&mut out)
        .await
        .unwrap();
        let mut q = vec![0x03];
        q.extend_from_slice(DIVERTED_QUERY.as_bytes());
        let mut shielded = vec![0x03, b' '];
        shielded.extend_from_slice(DIVERTED_QUERY.as_bytes());
        let mut expected = packet(0, &q);
        expected.extend(packet(0, &shielded));
        expected.extend(packet(0, &q));
        expected.extend(packet(0, b"\x03SELECT 1"));
        assert_eq!(out, expected);
        assert_eq!(slot.take_diverted(), Some(Diverted::StmtReset));
        assert_eq!(slot.take_diverted(), Some(Diverted::Statistics));
        assert_eq!(slot.take_diverted(), None);
        assert_eq!(out, expected);
    }

    #[test]
    fn a_gbk_statement_is_decoded_whole_before_anything_reads_it() {
        let gbk = crate::charset::Charset::by_name("gbk").unwrap();
        // 0xBF5C is one character: the quote after it ends the string.
        let sql = decode_statement(gbk, b"SELECT '\xbf\\'; DROP TABLE t -- '", true).unwrap();
        assert_eq!(sql, "SELECT '\u{7e17}'; DROP TABLE t -- '");
        // A `_binary` literal keeps the client's bytes (中 is D6D0 in GBK).
        let sql = decode_statement(gbk, b"SELECT _binary'\xd6\xd0', '\xd6\xd0'", true).unwrap();
        assert_eq!(sql, "SELECT X'D6D0', '\u{4e2d}'");
        let e = decode_statement(gbk, b"SELECT 'x\x81'", true).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (1300, "Invalid gbk character string: '8127'")
        );
    }

    #[test]
    fn text_parameters_are_decoded_and_blob_ones_left_as_bytes() {
        let latin1 = crate::charset::Charset::by_name("latin1").unwrap();
        // COM_STMT_EXECUTE, statement 1, no cursor, 1 iteration, no NULLs, types bound:
        // VAR_STRING, BLOB, LONG; values 'é' (latin1 E9), E9 as bytes, 7.
        let mut p = vec![
            0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xFD, 0, 0xFC, 0, 0x03, 0,
        ];
        p.extend_from_slice(&[1, 0xE9, 1, 0xE9, 7, 0, 0, 0]);
        let out = decode_parameters(&p, 3, &[], latin1).unwrap();
        let mut expected = p[..18].to_vec();
        expected.extend_from_slice(&[2, 0xC3, 0xA9, 1, 0xE9, 7, 0, 0, 0]);
        assert_eq!(out, expected);
        // All ASCII: nothing to change.
        let mut p = p[..18].to_vec();
        p.extend_from_slice(&[1, b'a', 1, 0xE9, 7, 0, 0, 0]);
        assert_eq!(decode_parameters(&p, 3, &[], latin1), None);
    }
}
