//! The text of COM_QUERY / COM_STMT_PREPARE and the parameter values of COM_STMT_EXECUTE,
//! decoded from the client's character set to UTF-8, and the statement id of a COM_STMT_*
//! payload.

use super::*;
use crate::frontend::wire::lenenc;

/// A statement sent in the client's character set `client` (not UTF-8) as the UTF-8 text the
/// gateway parses and the backends (always utf8mb4) get: decoded whole first, so a multibyte
/// character whose second byte is `\` or a quote (GBK's 0xBF5C) stays one character and can
/// hide no quote; then each `_binary'...'` literal is written as `X'...'`, and each literal of
/// another character set (`_koi8r'...'`) as `_koi8r X'...'`, holding its bytes in the client's
/// character set, as the server would have read them.
///
/// Errors: 1300 `Invalid <charset> character string: '<hex>'` (MySQL's
/// `ER_INVALID_CHARACTER_STRING`) for bytes that are not characters of `client`.
pub(super) fn decode_statement(
    client: &crate::charset::Charset,
    sql: &[u8],
    backslash_escapes: bool,
) -> Result<String, MysqlError> {
    let text = client.decode_sql(sql, backslash_escapes).map_err(|bad| {
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
        && client.single_byte().is_some()
        && client.ascii_transparent()
    {
        true => crate::sqltext::utf8_literals_as_sent(&text, backslash_escapes, &|b| {
            client.encode_bytes(b).into_owned()
        })
        .map_or(text, std::borrow::Cow::Owned),
        false => text,
    };
    // `_koi8r'...'` and the other introducers: the bytes as sent, in hex.
    let text = match text.contains('_') {
        true => crate::sqltext::charset_literals_as_hex(&text, backslash_escapes, &|b| {
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

/// One parameter value of a COM_STMT_EXECUTE payload: its type byte, where its bytes start
/// (its length prefix, for a length-encoded value) and where its data starts and ends.
pub(super) struct ParamValue {
    kind: u8,
    start: usize,
    data: usize,
    end: usize,
}

/// The values of a COM_STMT_EXECUTE payload whose types are bound (`params` parameters; those
/// in `long` were sent as long data and have no value here; NULLs neither), in order. `None`
/// when the payload does not have that shape: shorter than its NULL bitmap and types, types
/// not bound, or a value running past its end (MySQL answers 1210).
pub(super) fn parameter_values(
    payload: &[u8],
    params: usize,
    long: &[u16],
) -> Option<Vec<ParamValue>> {
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
                let (len, n) = lenenc::read_int(payload.get(at..)?)?;
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
pub(super) fn decode_parameters(
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
    // ASCII bytes are those characters, except in swe7 (0x40 is É, ...).
    let ascii_as_is = client.ascii_transparent();
    for v in values {
        let value = &payload[v.data..v.end];
        if matches!(v.kind, 0x0F | 0xFD | 0xFE) && (!ascii_as_is || !value.is_ascii()) {
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
pub(super) fn statement_id(payload: &[u8]) -> u32 {
    payload
        .get(1..5)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::decode_parameters;

    /// A COM_STMT_EXECUTE payload binding one VAR_STRING parameter `value`.
    fn execute(value: &[u8]) -> Vec<u8> {
        let mut p = vec![0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0x00, 0x01, 0xFD, 0x00];
        p.push(u8::try_from(value.len()).unwrap());
        p.extend_from_slice(value);
        p
    }

    #[test]
    fn ascii_bytes_of_a_set_that_reads_them_otherwise_are_decoded() {
        let swe7 = crate::charset::Charset::by_name("swe7").unwrap();
        // swe7's 0x5B is Ä and 0x40 É (the breaker got `??x`).
        let out = decode_parameters(&execute(b"[@x"), 1, &[], swe7).expect("decoded");
        assert!(out.ends_with("\u{c4}\u{c9}x".as_bytes()), "{out:?}");
        // In latin1, ASCII is left as it is (nothing to change).
        let latin1 = crate::charset::Charset::by_name("latin1").unwrap();
        assert_eq!(decode_parameters(&execute(b"[@x"), 1, &[], latin1), None);
    }
}
