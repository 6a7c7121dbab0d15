//! The writer itself: [`Tap`] buffers what opensrv writes, fixes the packets the session asked
//! for (ERR packets, column definitions, the greeting, EOF and OK status and warnings) and
//! drains to the socket.

use super::*;
use crate::frontend::wire::lenenc;

/// Writes `meta` into a column definition payload (after its six length-encoded strings come
/// 0x0C, collation u16, length u32, type u8, flags u16, decimals u8). `false` when the payload
/// does not have that shape.
fn patch_column(payload: &mut [u8], meta: ColumnMeta) -> bool {
    let mut p = 0usize;
    for _ in 0..6 {
        let Some((len, size)) = payload.get(p..).and_then(lenenc::read_int) else {
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
        let (len, size) = payload.get(p..).and_then(lenenc::read_int)?;
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
    let Some((_, affected)) = payload.get(1..).and_then(lenenc::read_int) else {
        return;
    };
    let insert_id = 1 + affected;
    let Some((_, size)) = payload.get(insert_id..).and_then(lenenc::read_int) else {
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
                        let count = lenenc::read_int(payload).map(|(n, _)| n as usize);
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
