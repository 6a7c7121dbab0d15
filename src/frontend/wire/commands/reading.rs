//! Reading commands off the client's bytes (module docs of `commands`): packets framed one at
//! a time, commands of several packets joined and oversized ones dropped, each command handled
//! by its byte, and multi-statement COM_QUERY batches handed on one statement at a time.

use super::*;

impl<R: AsyncRead + Unpin> Commands<R> {
    /// Moves what can be decided from `input` to `output`.
    pub(super) fn process(&mut self) {
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
    pub(super) fn query(&mut self, sql: &str, payload: &[u8]) {
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
    pub(super) fn next_in_batch(&mut self) {
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
