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
    /// How the statement being answered ended, for the recorder: the errno of its last ERR
    /// packet (0 for none) and its OK packet's affected rows ([`ErrorSlot::take_outcome`]).
    outcome: (u16, u64),
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
        p.outcome.0 = err.code;
        p.err = Some(err);
    }

    /// The statement being answered ends with an OK packet reporting `affected` rows.
    pub fn note_ok(&self, affected: u64) {
        self.lock().outcome.1 = affected;
    }

    /// How the statement answered since the last call ended: its errno (`None` when it did
    /// not fail) and affected rows; both are reset.
    pub fn take_outcome(&self) -> (Option<u16>, u64) {
        let (code, affected) = std::mem::take(&mut self.lock().outcome);
        ((code != 0).then_some(code), affected)
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
        p.charsets = crate::charset::ClientCharsets::from_handshake(id);
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

/// Writes `meta` into a column definition payload (after its six length-encoded strings come
/// 0x0C, collation u16, length u32, type u8, flags u16, decimals u8). `false` when the payload
/// does not have that shape.
fn patch_column(payload: &mut [u8], meta: ColumnMeta) -> bool {
    let mut p = 0usize;
    for _ in 0..6 {
        let Some((len, size)) = payload.get(p..).and_then(super::lenenc::read_int) else {
            return false;
        };
        match usize::try_from(len)
            .ok()
            .and_then(|len| p.checked_add(size)?.checked_add(len))
        {
            Some(next) if next <= payload.len() => p = next,
            _ => return false,
        }
    }
    if payload.len() < p + 11 || payload[p] != 0x0C {
        return false;
    }
    payload[p + 1..p + 3].copy_from_slice(&meta.charset.to_le_bytes());
    payload[p + 3..p + 7].copy_from_slice(&meta.length.to_le_bytes());
    payload[p + 10] = meta.decimals;
    true
}

/// A column definition payload with its six names (catalog, schema, table, original table,
/// name, original name) in the character set `results` instead of UTF-8; `None` when they are
/// all ASCII (nothing changes) or the payload does not have that shape.
fn recode_column_names(payload: &[u8], results: &crate::charset::Charset) -> Option<Vec<u8>> {
    use mysql_common::io::WriteMysqlExt;
    let mut p = 0usize;
    let mut out = Vec::with_capacity(payload.len() + 16);
    let mut changed = false;
    for _ in 0..6 {
        let (len, size) = payload.get(p..).and_then(super::lenenc::read_int)?;
        let len = usize::try_from(len).ok()?;
        let text = payload.get(p + size..p + size + len)?;
        let encoded = results.encode_bytes(text);
        changed |= matches!(encoded, std::borrow::Cow::Owned(_));
        // Writing into a Vec cannot fail.
        let _ = out.write_lenenc_str(&encoded);
        p += size + len;
    }
    out.extend_from_slice(payload.get(p..)?);
    changed.then_some(out)
}

/// `CLIENT_TRANSACTIONS`: the server reports transaction state in status flags. opensrv-mysql
/// 0.7 does not announce it, and drivers (mysqlclient) then never switch autocommit off.
const CLIENT_TRANSACTIONS: u16 = 0x2000;

/// Sets the status flags of a protocol-10 greeting (after the NUL-terminated version, the
/// connection id, 8 scramble bytes, a filler, 2 capability bytes and the charset) and adds
/// `CLIENT_TRANSACTIONS` to its capabilities.
fn patch_greeting(payload: &mut [u8], status: u16, classic_eof: bool) {
    if payload.first() != Some(&10) {
        return;
    }
    let Some(nul) = payload.iter().position(|b| *b == 0) else {
        return;
    };
    let caps = nul + 1 + 4 + 8 + 1;
    if let Some(c) = payload.get_mut(caps..caps + 2) {
        let old = u16::from_le_bytes([c[0], c[1]]);
        c.copy_from_slice(&(old | CLIENT_TRANSACTIONS).to_le_bytes());
    }
    let at = caps + 2 + 1;
    if let Some(s) = payload.get_mut(at..at + 2) {
        s.copy_from_slice(&status.to_le_bytes());
    }
    // The upper capability bytes: multi-statements and multi-results are answered (the reader
    // splits the statements, this writer chains their responses).
    if let Some(c) = payload.get_mut(at + 2..at + 4) {
        let old = u16::from_le_bytes([c[0], c[1]]);
        let mut caps = old | MULTI_CAPABILITIES_UPPER;
        if classic_eof {
            caps &= !DEPRECATE_EOF_UPPER;
        }
        c.copy_from_slice(&caps.to_le_bytes());
    }
}

/// `CLIENT_DEPRECATE_EOF` (1 << 24), in the upper half of the capabilities.
const DEPRECATE_EOF_UPPER: u16 = 0x0100;

/// Adds the session's status flags to an EOF packet (`FE warnings status`) or an OK packet
/// (`00`/`FE` `affected insert-id status warnings`), keeping opensrv's
/// `SERVER_MORE_RESULTS_EXISTS`, and sets its warning count when `warnings` is not 0.
fn patch_eof(payload: &mut [u8], status: u16, warnings: u16) {
    let eof = payload.len() == 5 && payload[0] == 0xFE;
    let at = if payload.len() == 5 && payload[0] == 0xFE {
        3
    } else {
        // Two length-encoded integers after the header; only 1-byte ones fit in 8 bytes.
        if payload[1] >= 0xFB || payload.get(2).is_none_or(|b| *b >= 0xFB) {
            return;
        }
        3
    };
    if let Some(s) = payload.get_mut(at..at + 2) {
        let old = u16::from_le_bytes([s[0], s[1]]);
        s.copy_from_slice(&(old | status).to_le_bytes());
    }
    if warnings != 0 {
        let at = if eof { 1 } else { at + 2 };
        if let Some(w) = payload.get_mut(at..at + 2) {
            w.copy_from_slice(&warnings.to_le_bytes());
        }
    }
}

/// Sets the warning count of an OK packet (`00 affected insert-id status warnings [info]`,
/// the two counts length-encoded), which opensrv-mysql 0.7 always writes as 0.
fn patch_ok_warnings(payload: &mut [u8], warnings: u16) {
    let Some((_, affected)) = payload.get(1..).and_then(super::lenenc::read_int) else {
        return;
    };
    let insert_id = 1 + affected;
    let Some((_, size)) = payload.get(insert_id..).and_then(super::lenenc::read_int) else {
        return;
    };
    let at = insert_id + size + 2;
    if let Some(w) = payload.get_mut(at..at + 2) {
        w.copy_from_slice(&warnings.to_le_bytes());
    }
}

/// Buffered writer over the client socket that rewrites ERR packets (see the module docs).
pub struct Tap<W> {
    inner: W,
    buf: Vec<u8>,
    /// Bytes of `buf` already written to `inner`.
    written: usize,
    /// Where in `buf` the packet being parsed starts, and how much of it has been seen.
    packet_start: usize,
    /// The previous packet was 0xFFFFFF bytes long: the next one continues its payload and is
    /// not looked at (only renumbered).
    continued: bool,
    slot: ErrorSlot,
    /// Since when the socket took nothing while bytes waited, and how long it may ([`WRITE_TIMEOUT`]).
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
    write_timeout: std::time::Duration,
}

impl<W: AsyncWrite + Unpin> Tap<W> {
    pub fn new(inner: W, slot: ErrorSlot) -> Self {
        Tap {
            inner,
            buf: Vec::with_capacity(16 * 1024),
            written: 0,
            packet_start: 0,
            continued: false,
            slot,
            stalled: None,
            write_timeout: WRITE_TIMEOUT,
        }
    }

    /// Parses complete packets appended since the last call, rewrites ERR packets and patches
    /// column definitions.
    fn scan(&mut self) {
        // Borrowed, not cloned: an Arc clone per packet is two more atomic operations on the
        // row path.
        let mut pending = self.slot.lock();
        loop {
            let start = self.packet_start;
            if self.buf.len() < start + 4 {
                return;
            }
            let len =
                u32::from_le_bytes([self.buf[start], self.buf[start + 1], self.buf[start + 2], 0])
                    as usize;
            if self.buf.len() < start + 4 + len {
                return;
            }
            let seq = self.buf[start + 3].wrapping_add(pending.seq_offset);
            self.buf[start + 3] = seq;
            pending.last_seq = seq;
            if len == 0xFF_FFFF
                && let Some(left) = pending.pad_after.as_mut()
            {
                *left = left.saturating_sub(1);
                if *left == 0 {
                    // The row ends here: the empty packet that says so, and everything after
                    // it in this response one sequence id later.
                    pending.pad_after = None;
                    let end = start + 4 + len;
                    let next = seq.wrapping_add(1);
                    self.buf.splice(end..end, [0, 0, 0, next]);
                    pending.seq_offset = pending.seq_offset.wrapping_add(1);
                    pending.last_seq = next;
                    self.continued = false;
                    self.packet_start = end + 4;
                    continue;
                }
            }
            if self.continued {
                self.continued = len == 0xFF_FFFF;
                self.packet_start = start + 4 + len;
                continue;
            }
            self.continued = len == 0xFF_FFFF;
            if let Some(payloads) = pending.replacement.take() {
                let tail = self.buf.split_off(start + 4 + len);
                self.buf.truncate(start);
                let mut seq = seq;
                for (i, p) in payloads.iter().enumerate() {
                    if i > 0 {
                        seq = seq.wrapping_add(1);
                    }
                    let p = &p[..p.len().min(0xFF_FFFE)];
                    let mut header = (p.len() as u32).to_le_bytes();
                    header[3] = seq;
                    self.buf.extend_from_slice(&header);
                    self.buf.extend_from_slice(p);
                }
                // The replaced packet is a whole response (an OK): nothing of opensrv's follows
                // it that would need renumbering.
                pending.last_seq = seq;
                self.packet_start = self.buf.len();
                self.buf.extend_from_slice(&tail);
                self.continued = false;
                continue;
            }
            // The flag is the batch's to set: a status the session set during a batch that
            // stopped on an error must not carry it into later responses.
            let status = if pending.more_results {
                pending.status | MORE_RESULTS
            } else {
                pending.status & !MORE_RESULTS
            };
            if pending.fast_auth {
                pending.fast_auth = false;
                let seq = self.buf[start + 3];
                self.buf[start + 3] = seq.wrapping_add(1);
                let more = [2, 0, 0, seq, 0x01, 0x03];
                self.buf.splice(start..start, more);
                self.packet_start = start + more.len();
                continue;
            }
            if !pending.greeted {
                pending.greeted = true;
                pending.login_ok = true;
                patch_greeting(
                    &mut self.buf[start + 4..start + 4 + len],
                    pending.status,
                    pending.classic_eof,
                );
            } else if pending.login_ok && len >= 7 && matches!(self.buf[start + 4], 0x00 | 0xFF) {
                pending.login_ok = false;
                if self.buf[start + 4] == 0x00 {
                    patch_eof(&mut self.buf[start + 4..start + 4 + len], pending.status, 0);
                }
            } else if (5..9).contains(&len) && self.buf[start + 4] == 0xFE {
                let warnings = std::mem::take(&mut pending.end_warnings);
                patch_eof(&mut self.buf[start + 4..start + 4 + len], status, warnings);
            } else if pending.end_warnings != 0
                && len >= 7
                && self.buf[start + 4] == 0x00
                && pending.client_capabilities & CLIENT_PROTOCOL_41 != 0
            {
                let warnings = std::mem::take(&mut pending.end_warnings);
                patch_ok_warnings(&mut self.buf[start + 4..start + 4 + len], warnings);
            }
            let is_err = len > 0 && self.buf[start + 4] == 0xFF;
            if is_err {
                pending.columns = None;
                if pending.more_results {
                    pending.batch_failed = true;
                }
            }
            if is_err && let Some(err) = pending.err.take() {
                let seq = self.buf[start + 3];
                let mut payload = Vec::with_capacity(9 + err.message.len());
                payload.push(0xFF);
                payload.extend_from_slice(&err.code.to_le_bytes());
                payload.push(b'#');
                let mut state = err.state.into_bytes();
                state.resize(5, b'0');
                payload.extend_from_slice(&state);
                payload.extend_from_slice(err.message.as_bytes());
                payload.truncate(0xFF_FFFF);
                let mut packet = (payload.len() as u32).to_le_bytes();
                packet[3] = seq;
                let tail = self.buf.split_off(start + 4 + len);
                self.buf.truncate(start);
                self.buf.extend_from_slice(&packet);
                self.buf.extend_from_slice(&payload);
                self.buf.extend_from_slice(&tail);
                self.packet_start = start + 4 + payload.len();
                continue;
            }
            let mut recoded = None;
            let results = pending.charsets.results.filter(|r| !r.is_utf8());
            if let Some((stage, metas)) = pending.columns.as_mut() {
                let payload = &mut self.buf[start + 4..start + 4 + len];
                let eof = payload.first() == Some(&0xFE) && len < 9;
                let next = match *stage {
                    // The column-count packet: it must announce as many columns as we have.
                    Stage::Count => {
                        let count = super::lenenc::read_int(payload).map(|(n, _)| n as usize);
                        (count == Some(metas.len())).then_some(Stage::Columns)
                    }
                    // 0x00, statement id (4), columns (2), parameters (2), filler, warnings.
                    Stage::PrepareOk => match payload {
                        [0x00, _, _, _, _, c0, c1, p0, p1, ..]
                            if usize::from(u16::from_le_bytes([*c0, *c1])) == metas.len() =>
                        {
                            match usize::from(u16::from_le_bytes([*p0, *p1])) {
                                0 => Some(Stage::Columns),
                                n => Some(Stage::Params(n)),
                            }
                        }
                        _ => None,
                    },
                    Stage::Params(1) => Some(Stage::ParamsEof),
                    Stage::Params(n) => Some(Stage::Params(n - 1)),
                    Stage::ParamsEof if eof => Some(Stage::Columns),
                    Stage::ParamsEof | Stage::Columns => {
                        // Done, or not a column definition after all: stop patching.
                        // A client whose `character_set_results` is not UTF-8 gets its
                        // default collation for every column that is not binary (63), as
                        // MySQL's `send_result_set_metadata` writes it.
                        let meta = metas.pop_front().map(|m| match results {
                            Some(r) if m.charset != 63 => ColumnMeta {
                                charset: u16::from(r.default_collation_id),
                                ..m
                            },
                            _ => m,
                        });
                        match meta {
                            Some(meta) if patch_column(payload, meta) => {
                                // Names in the client's `character_set_results`.
                                recoded = results.and_then(|r| recode_column_names(payload, r));
                                (!metas.is_empty()).then_some(Stage::Columns)
                            }
                            _ => None,
                        }
                    }
                };
                match next {
                    Some(n) => *stage = n,
                    None => pending.columns = None,
                }
            }
            if let Some(payload) = recoded {
                // The definition's names changed length: the packet is written anew.
                let mut header = (payload.len() as u32).to_le_bytes();
                header[3] = self.buf[start + 3];
                let tail = self.buf.split_off(start + 4 + len);
                self.buf.truncate(start);
                self.buf.extend_from_slice(&header);
                self.buf.extend_from_slice(&payload);
                self.buf.extend_from_slice(&tail);
                self.packet_start = start + 4 + payload.len();
                continue;
            }
            self.packet_start = start + 4 + len;
        }
    }

    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Only whole packets leave, so an ERR packet is never half sent when it is rewritten.
        let end = self.packet_start;
        while self.written < end {
            let n = match Pin::new(&mut self.inner).poll_write(cx, &self.buf[self.written..end]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {
                    let timeout = self.write_timeout;
                    let stalled = self
                        .stalled
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                    if stalled.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "the client took no bytes for 60 s (net_write_timeout)",
                        )));
                    }
                    return Poll::Pending;
                }
            };
            self.stalled = None;
            self.written += n;
        }
        self.buf.drain(..self.written);
        self.packet_start -= self.written;
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Tap<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[io::IoSlice::new(data)])
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.buf.len() >= HIGH_WATER {
            match self.poll_drain(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                // Still full: apply back-pressure to the writer (and so to the backend stream).
                Poll::Pending if self.buf.len() >= HIGH_WATER => return Poll::Pending,
                Poll::Pending => {}
            }
        }
        let mut n = 0;
        for b in bufs {
            self.buf.extend_from_slice(b);
            n += b.len();
        }
        self.scan();
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.poll_drain(cx) {
            Poll::Ready(Ok(())) => {
                // A response went out: the client's idle time starts now.
                self.slot.touch();
                Pin::new(&mut self.inner).poll_flush(cx)
            }
            other => other,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.poll_drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut self.inner).poll_shutdown(cx),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = (payload.len() as u32).to_le_bytes().to_vec();
        p[3] = seq;
        p.extend_from_slice(payload);
        p
    }

    /// A socket that never takes a byte (a client that stopped reading).
    struct Stuck;

    impl AsyncWrite for Stuck {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Pending
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_client_that_takes_nothing_times_out() {
        let mut tap = Tap::new(Stuck, ErrorSlot::default());
        tap.write_timeout = std::time::Duration::from_millis(200);
        tap.write_all(&packet(1, b"\x00\x00\x00\x02\x00\x00\x00"))
            .await
            .unwrap();
        let started = std::time::Instant::now();
        let e = tap.flush().await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= tap.write_timeout);
    }

    #[tokio::test]
    async fn rewrites_only_the_next_err_packet() {
        let slot = ErrorSlot::default();
        let mut out = Vec::new();
        {
            let mut tap = Tap::new(&mut out, slot.clone());
            tap.write_all(&packet(1, b"\x00\x00\x00\x02\x00\x00\x00"))
                .await
                .unwrap();
            slot.set(ErrPacket {
                code: 1927,
                state: "70100".into(),
                message: "Connection was killed".into(),
            });
            let mut err = vec![0xFF, 0x51, 0x04, b'#'];
            err.extend_from_slice(b"HY000placeholder");
            tap.write_all(&packet(2, &err)).await.unwrap();
            tap.write_all(&packet(3, &err)).await.unwrap();
            tap.flush().await.unwrap();
        }
        let mut expected = packet(1, b"\x00\x00\x00\x02\x00\x00\x00");
        let mut fixed = vec![0xFF];
        fixed.extend_from_slice(&1927u16.to_le_bytes());
        fixed.extend_from_slice(b"#70100Connection was killed");
        expected.extend(packet(2, &fixed));
        let mut err = vec![0xFF, 0x51, 0x04, b'#'];
        err.extend_from_slice(b"HY000placeholder");
        expected.extend(packet(3, &err));
        assert_eq!(out, expected);
    }
}
