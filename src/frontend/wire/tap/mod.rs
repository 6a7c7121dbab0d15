//! The client socket's write side: a buffer that also fixes ERR packets.
//!
//! opensrv-mysql 0.7 can only send errnos it has in its table (1000-1885) and derives the
//! SQLSTATE from them, so a backend's own errno (say MariaDB's 1927 or 4025) or a failed login's
//! 1045/28000 cannot be sent through it. The session therefore asks for the exact error here
//! ([`ErrorSlot::set`]) and lets opensrv write a placeholder ERR packet; this writer parses the
//! outgoing packet framing and replaces the next ERR packet with the exact one, keeping its
//! sequence id.
//!
//! opensrv also writes every column definition with collation 33 (utf8), length 1024 and no
//! decimals, so clients decode binary columns as text and show DECIMAL(10,2) without its scale.
//! The session announces the backend's real values ([`ErrorSlot::set_columns`]) and this writer
//! patches them into the next result set's column definitions. For a client whose
//! `character_set_results` is not UTF-8 ([`ErrorSlot::charsets`]) it also writes the names of
//! those definitions in that character set, and its collation for text columns.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;

use super::commands::Diverted;

mod writer;

pub use writer::Tap;

/// Bytes buffered before the writer pushes them to the socket on its own.
const HIGH_WATER: usize = 64 * 1024;

/// How long the client may take no bytes at all while some wait for it (MySQL's
/// `net_write_timeout` default): then the write fails, the session ends and the backend
/// statement feeding it is interrupted. A client that half-closed its socket without reading
/// (or stopped reading) would otherwise hold both forever: the session does not read the socket
/// while it answers.
pub const WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The error the next ERR packet must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrPacket {
    pub code: u16,
    /// Five characters.
    pub state: String,
    pub message: String,
}

/// A column definition's fields that opensrv cannot express.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnMeta {
    /// Collation id (63 = binary).
    pub charset: u16,
    pub length: u32,
    pub decimals: u8,
}

/// Where the writer is in the packets before the column definitions it patches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// A result set's column-count packet comes next.
    Count,
    /// A COM_STMT_PREPARE OK packet comes next (its column and parameter counts).
    PrepareOk,
    /// This many parameter definitions come next (prepare response), then an EOF.
    Params(usize),
    /// The EOF after the parameter definitions (absent with CLIENT_DEPRECATE_EOF).
    ParamsEof,
    /// Column definitions.
    Columns,
}

#[derive(Debug, Default)]
struct Pending {
    err: Option<ErrPacket>,
    /// How the statement being answered ended: its last ERR packet's errno and message (none
    /// when it did not fail) and its OK packet's affected rows (none when it ended with a
    /// result set) ([`ErrorSlot::take_outcome`]).
    outcome: (Option<(u16, String)>, Option<u64>),
    /// Metadata for the next result set or prepare response: where its packets are, then one
    /// entry per column definition still to patch.
    columns: Option<(Stage, VecDeque<ColumnMeta>)>,
    /// The session's status flags (autocommit, in transaction), for the packets opensrv writes
    /// without them.
    status: u16,
    /// The warning count for the EOF or OK packet that ends the response being written:
    /// opensrv-mysql 0.7 writes 0 in every one.
    end_warnings: u16,
    /// The server greeting has gone by (its status flags are patched too).
    greeted: bool,
    /// The login's OK packet (written by opensrv with no status flags) is still to come.
    login_ok: bool,
    /// A `caching_sha2_password` login succeeded: the next packet (opensrv's OK) is preceded by
    /// the fast-auth-success packet `0x01 0x03` the client waits for, and moves one sequence id.
    fast_auth: bool,
    /// The capability flags of the client's handshake response (set by the reader).
    client_capabilities: u32,
    /// A multi-statement batch is being answered and more statements follow the current one:
    /// its EOF and OK packets carry `SERVER_MORE_RESULTS_EXISTS`.
    more_results: bool,
    /// An ERR packet went out while `more_results` was set: the batch stops there.
    batch_failed: bool,
    /// Added to the sequence id of every packet: the statements of a batch after the first are
    /// handed to opensrv as commands of their own, but answer as one response.
    seq_offset: u8,
    /// The sequence id of the last packet written.
    last_seq: u8,
    /// Payloads that replace the next packet (a response opensrv cannot write: COM_STATISTICS's
    /// bare string, COM_FIELD_LIST's column definitions); they take consecutive sequence ids.
    replacement: Option<Vec<Vec<u8>>>,
    /// The row being written fills this many 0xFFFFFF-byte packets exactly: an empty packet
    /// is added after the last of them (opensrv-mysql 0.7 leaves it out).
    pad_after: Option<usize>,
    /// How the session's backend lexes statements (set by the session, read by the reader to
    /// split multi-statement texts as the backend would).
    sql_mode: crate::sqltext::SqlMode,
    /// Commands the reader diverted to the session, in the order of their placeholder queries
    /// (several when the client pipelined them).
    diverted: VecDeque<Diverted>,
    /// The session's character sets (`SET NAMES`...): the reader decodes statements from
    /// `client`, the session encodes results to `results` ([`crate::charset`]).
    charsets: crate::charset::ClientCharsets,
    /// The collation id of the client's handshake response, until the session takes it.
    handshake_charset: Option<u16>,
    /// The collation id of the client's last handshake response (or COM_CHANGE_USER), kept.
    handshake_collation: Option<u16>,
    /// Classic EOF framing (the manager port, as Mycat's): the greeting goes out without
    /// `CLIENT_DEPRECATE_EOF`, and the reader clears it from the client's handshake response.
    classic_eof: bool,
    /// When the client connection last did something: a command packet read, or a response
    /// flushed to the client (`None`: nothing since the connection opened). Its idle time
    /// (`wait_timeout`) counts from there.
    last_activity: Option<std::time::Instant>,
}

/// `CLIENT_PROTOCOL_41`: OK packets carry status flags and a warning count.
const CLIENT_PROTOCOL_41: u32 = 0x0200;
/// `SERVER_MORE_RESULTS_EXISTS`.
const MORE_RESULTS: u16 = 0x0008;
/// `CLIENT_MULTI_STATEMENTS` | `CLIENT_MULTI_RESULTS`, in the upper half of the capabilities.
const MULTI_CAPABILITIES_UPPER: u16 = 0x0001 | 0x0002;

/// Shared between the session (which sets it) and the [`Tap`] (which applies it).
#[derive(Debug, Clone, Default)]
pub struct ErrorSlot(Arc<Mutex<Pending>>);

impl ErrorSlot {
    /// The next ERR packet written becomes `err`.
    pub fn set(&self, err: ErrPacket) {
        let mut p = self.lock();
        p.outcome.0 = Some((err.code, err.message.clone()));
        p.err = Some(err);
    }

    /// The statement being answered ends with an OK packet reporting `affected` rows.
    pub fn note_ok(&self, affected: u64) {
        self.lock().outcome.1 = Some(affected);
    }

    /// Whether the statement being answered failed (an error was set since the last
    /// [`ErrorSlot::take_outcome`]).
    pub fn failed(&self) -> bool {
        self.lock().outcome.0.is_some()
    }

    /// How the statement answered since the last call ended: its error (errno and message;
    /// `None` when it did not fail) and affected rows; both are reset.
    pub fn take_outcome(&self) -> (Option<(u16, String)>, Option<u64>) {
        std::mem::take(&mut self.lock().outcome)
    }

    /// The next result set's column definitions get these collations, lengths and decimals.
    pub fn set_columns(&self, columns: impl IntoIterator<Item = ColumnMeta>) {
        self.lock().columns = Some((Stage::Count, columns.into_iter().collect()));
    }

    /// The next COM_STMT_PREPARE response's column definitions get these collations, lengths
    /// and decimals (opensrv writes its own there too).
    pub fn set_prepared_columns(&self, columns: impl IntoIterator<Item = ColumnMeta>) {
        let metas: VecDeque<ColumnMeta> = columns.into_iter().collect();
        self.lock().columns = (!metas.is_empty()).then_some((Stage::PrepareOk, metas));
    }

    /// The session's current status flags (`SERVER_STATUS_AUTOCOMMIT`, `SERVER_STATUS_IN_TRANS`):
    /// opensrv-mysql 0.7 writes the greeting and every result set's EOF (or its 0xFE OK) with
    /// none, so clients that read autocommit from them (PyMySQL, mysqlclient, Connector/J)
    /// believe it is off and never send `SET autocommit=0`.
    pub fn set_status(&self, bits: u16) {
        self.lock().status = bits;
    }

    /// The response being written ends with `warnings` warnings: set just before its last
    /// packet, the OK of a statement without rows or the EOF (or 0xFE OK) of a result set, is
    /// written (after the EOF that follows column definitions), and applied to it once.
    pub fn set_end_warnings(&self, warnings: u16) {
        self.lock().end_warnings = warnings;
    }

    /// The client logged in with `caching_sha2_password`'s fast path: announce its success.
    pub fn fast_auth_success(&self) {
        self.lock().fast_auth = true;
    }

    /// Records the client's capability flags (from its handshake response).
    /// The login's OK packet has been written: from now on the client sends commands, each
    /// starting at sequence id 0.
    pub fn logged_in(&self) -> bool {
        let p = self.lock();
        p.greeted && !p.login_ok
    }

    pub fn set_client_capabilities(&self, caps: u32) {
        self.lock().client_capabilities = caps;
    }

    /// The client's capability flags (0 before its handshake response).
    pub fn client_capabilities(&self) -> u32 {
        self.lock().client_capabilities
    }

    /// The lexing part of the session's `sql_mode` (module `route::lex`).
    pub fn sql_mode(&self) -> crate::sqltext::SqlMode {
        self.lock().sql_mode
    }

    /// The session's character sets (the reader decodes statements from their `client`).
    pub fn charsets(&self) -> crate::charset::ClientCharsets {
        self.lock().charsets.clone()
    }

    /// Sets what [`ErrorSlot::charsets`] answers.
    pub fn set_charsets(&self, charsets: crate::charset::ClientCharsets) {
        self.lock().charsets = charsets;
    }

    /// Records the collation id of the client's handshake response (the reader) and puts the
    /// session in its character set at once.
    pub fn set_handshake_charset(&self, id: u16) {
        let mut p = self.lock();
        p.handshake_charset = Some(id);
        p.handshake_collation = Some(id);
        p.charsets = crate::charset::ClientCharsets::from_handshake(id);
    }

    /// The collation id of the client's last handshake response, if it sent one.
    pub fn handshake_collation(&self) -> Option<u16> {
        self.lock().handshake_collation
    }

    /// The handshake's collation id, once (the session takes it on its first command).
    pub fn take_handshake_charset(&self) -> Option<u16> {
        self.lock().handshake_charset.take()
    }

    /// Sets what [`ErrorSlot::sql_mode`] answers.
    pub fn set_sql_mode(&self, mode: crate::sqltext::SqlMode) {
        self.lock().sql_mode = mode;
    }

    /// Result sets of this connection use classic EOF framing (see `Pending::classic_eof`).
    pub fn classic_eof(&self) {
        self.lock().classic_eof = true;
    }

    /// Whether [`ErrorSlot::classic_eof`] was called.
    pub fn is_classic_eof(&self) -> bool {
        self.lock().classic_eof
    }

    /// The next packet written is replaced by `payloads`, one packet each.
    pub fn replace_next(&self, payloads: Vec<Vec<u8>>) {
        self.lock().replacement = Some(payloads);
    }

    /// The next row's payload fills `chunks` packets of 0xFFFFFF bytes exactly.
    pub fn pad_after_full_chunks(&self, chunks: usize) {
        self.lock().pad_after = Some(chunks);
    }

    /// A new command from the client: its response numbers packets from 1 again.
    /// The reader diverted `command` to the session; its placeholder query follows
    /// ([`super::commands::DIVERTED_QUERY`]).
    pub fn divert(&self, command: Diverted) {
        self.lock().diverted.push_back(command);
    }

    /// The oldest diverted command not yet answered, for the session at a placeholder query.
    pub fn take_diverted(&self) -> Option<Diverted> {
        self.lock().diverted.pop_front()
    }

    pub fn new_command(&self) {
        self.end_batch();
    }

    /// Whether more statements of a batch follow the one being answered.
    pub fn more_results(&self) -> bool {
        self.lock().more_results
    }

    /// The reader hands on the next statement of a batch (`more`: others follow it): its
    /// response continues the sequence ids of the previous one. `false` when the batch must
    /// stop because the previous statement failed.
    pub fn next_in_batch(&self, more: bool) -> bool {
        let mut p = self.lock();
        if p.batch_failed {
            return false;
        }
        p.seq_offset = p.last_seq;
        p.more_results = more;
        true
    }

    /// A batch begins (`more`: its first statement is not the last).
    pub fn start_batch(&self, more: bool) {
        let mut p = self.lock();
        p.seq_offset = 0;
        p.batch_failed = false;
        p.more_results = more;
    }

    /// The batch is over: responses number their packets from 1 again.
    pub fn end_batch(&self) {
        let mut p = self.lock();
        p.seq_offset = 0;
        p.batch_failed = false;
        p.more_results = false;
    }

    /// Records activity on the client connection now (a command came in, a response went
    /// out).
    pub fn touch(&self) {
        self.lock().last_activity = Some(std::time::Instant::now());
    }

    /// How long ago the last activity ([`ErrorSlot::touch`]) was; `None` when there was none.
    pub fn idle_for(&self) -> Option<std::time::Duration> {
        self.lock().last_activity.map(|t| t.elapsed())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
