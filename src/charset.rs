//! Client character sets: the fixed table of the MySQL/MariaDB character sets the gateway can
//! decode and encode, and the session's three settings (`character_set_client`,
//! `character_set_connection`, `character_set_results`). A leaf module: it uses nothing of the
//! crate.
//!
//! Backend connections always speak utf8mb4. A client in another character set has its
//! statements decoded to UTF-8 by the reader before anything parses them
//! ([`Charset::decode`]), and the string values and column names of its results encoded back
//! ([`Charset::encode`]), as the MySQL server converts between `character_set_client`,
//! `character_set_connection` and `character_set_results`. The parser therefore only ever sees
//! UTF-8, and what reaches a backend is manx's own UTF-8 text: the GBK/Big5/SJIS trick of a
//! multibyte character whose second byte is `\` (0x5C) hiding a quote cannot work.
//!
//! Names are looked up in [`CHARSETS`] (case-insensitively) and written to a backend only from
//! this table, never copied from a client's text. The codecs are `encoding_rs`'s (WHATWG
//! Encoding Standard): MySQL's `latin1` is Windows-1252 (so is WHATWG's), `gbk` as GBK, held to
//! MariaDB's byte ranges (WHATWG's GBK decoder is GB18030's), `cp932` as Shift_JIS (WHATWG's
//! is Windows-31J, which cp932 is: the NEC and IBM extensions, user-defined characters in the
//! private use area), held to MariaDB's byte ranges and without the three characters WHATWG's
//! encoder adds (¥, ‾ and − are `?` in cp932). Character sets whose WHATWG table differs from
//! MariaDB's (big5, sjis, ujis, eucjpms, greek, koi8u, tis620, gb2312, cp1256, cp1257) are not
//! in the table: they are refused rather than converted wrongly.

use encoding_rs::Encoding;

/// One character set of the table: its MySQL name, the id and name of its default collation
/// (MariaDB's `SHOW CHARACTER SET`), the ids of its other collations that a client can name in
/// its handshake, and its codec (`None`: UTF-8, which needs no conversion).
#[derive(Debug)]
pub struct Charset {
    /// MySQL's name (`latin1`, `gbk`, `utf8mb4`).
    pub name: &'static str,
    /// Its default collation's id (`SHOW COLLATION`'s `Id`): what column definitions carry for
    /// text columns in this character set.
    pub default_collation_id: u8,
    /// Its default collation's name.
    pub default_collation: &'static str,
    /// Ids of its other collations (a client's handshake may name any of them).
    pub other_collation_ids: &'static [u8],
    /// The codec; `None` for UTF-8 (utf8mb4, utf8mb3).
    encoding: Option<&'static Encoding>,
}

/// The character sets the gateway converts (MariaDB's ids). utf8mb4 first: the gateway's own.
pub static CHARSETS: &[Charset] = &[
    Charset {
        name: "utf8mb4",
        default_collation_id: 45,
        default_collation: "utf8mb4_general_ci",
        other_collation_ids: &[
            46, 224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237, 238, 239,
            240, 241, 242, 243, 244, 245, 246, 247, 255,
        ],
        encoding: None,
    },
    Charset {
        name: "utf8mb3",
        default_collation_id: 33,
        default_collation: "utf8mb3_general_ci",
        other_collation_ids: &[
            83, 192, 193, 194, 195, 196, 197, 198, 199, 200, 201, 202, 203, 204, 205, 206, 207,
            208, 209, 210, 211, 212, 213, 214, 215, 223,
        ],
        encoding: None,
    },
    Charset {
        name: "latin1",
        default_collation_id: 8,
        default_collation: "latin1_swedish_ci",
        other_collation_ids: &[5, 15, 31, 47, 48, 49, 94],
        encoding: Some(encoding_rs::WINDOWS_1252),
    },
    Charset {
        name: "gbk",
        default_collation_id: 28,
        default_collation: "gbk_chinese_ci",
        other_collation_ids: &[87],
        encoding: Some(encoding_rs::GBK),
    },
    Charset {
        name: "cp932",
        default_collation_id: 95,
        default_collation: "cp932_japanese_ci",
        other_collation_ids: &[96],
        encoding: Some(encoding_rs::SHIFT_JIS),
    },
    Charset {
        name: "euckr",
        default_collation_id: 19,
        default_collation: "euckr_korean_ci",
        other_collation_ids: &[85],
        encoding: Some(encoding_rs::EUC_KR),
    },
    Charset {
        name: "cp1250",
        default_collation_id: 26,
        default_collation: "cp1250_general_ci",
        other_collation_ids: &[34, 44, 66, 99],
        encoding: Some(encoding_rs::WINDOWS_1250),
    },
    Charset {
        name: "cp1251",
        default_collation_id: 51,
        default_collation: "cp1251_general_ci",
        other_collation_ids: &[14, 23, 50, 52],
        encoding: Some(encoding_rs::WINDOWS_1251),
    },
    Charset {
        name: "latin2",
        default_collation_id: 9,
        default_collation: "latin2_general_ci",
        other_collation_ids: &[2, 21, 27, 77],
        encoding: Some(encoding_rs::ISO_8859_2),
    },
    Charset {
        name: "hebrew",
        default_collation_id: 16,
        default_collation: "hebrew_general_ci",
        other_collation_ids: &[71],
        encoding: Some(encoding_rs::ISO_8859_8),
    },
    Charset {
        name: "koi8r",
        default_collation_id: 7,
        default_collation: "koi8r_general_ci",
        other_collation_ids: &[74],
        encoding: Some(encoding_rs::KOI8_R),
    },
];

/// The gateway's own character set (utf8mb4): the backends' and the default.
pub fn utf8mb4() -> &'static Charset {
    &CHARSETS[0]
}

impl Charset {
    /// The character set named `name` (any case, quotes already removed; `utf8` is
    /// `utf8mb3`, as MariaDB reads it). `None` for a name the gateway does not convert.
    pub fn by_name(name: &str) -> Option<&'static Charset> {
        let name = name.to_ascii_lowercase();
        let name = if name == "utf8" { "utf8mb3" } else { &name };
        CHARSETS.iter().find(|c| c.name == name)
    }

    /// The character set of collation `id` (a handshake's or COM_CHANGE_USER's character set
    /// byte). `None` for an id the gateway does not know.
    pub fn by_collation_id(id: u16) -> Option<&'static Charset> {
        let id = u8::try_from(id).ok()?;
        CHARSETS
            .iter()
            .find(|c| c.default_collation_id == id || c.other_collation_ids.contains(&id))
    }

    /// The character set a collation name belongs to (`latin1_bin` → latin1, `utf8_bin` →
    /// utf8mb3), when the name is one the gateway may pass on: lower-case letters, digits and
    /// `_` only, starting with the character set's name and `_`.
    pub fn of_collation(collation: &str) -> Option<&'static Charset> {
        let c = collation.to_ascii_lowercase();
        if c.is_empty() || !c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return None;
        }
        let (prefix, _) = c.split_once('_')?;
        // `utf8mb4_bin` has prefix `utf8mb4`; `utf8_bin` `utf8`.
        Charset::by_name(prefix)
    }

    /// Whether this is a UTF-8 character set (no conversion).
    pub fn is_utf8(&self) -> bool {
        self.encoding.is_none()
    }

    /// `bytes` in this character set as UTF-8. `Err` with the first bytes that are not a
    /// character of it (MySQL's 1300 "Invalid ... character string" names them).
    pub fn decode<'a>(&self, bytes: &'a [u8]) -> Result<std::borrow::Cow<'a, str>, Vec<u8>> {
        let bad = |at: usize| bytes[at..bytes.len().min(at + 4)].to_vec();
        if let Some(at) = self.not_mariadb(bytes) {
            return Err(bad(at));
        }
        match self.encoding {
            None => std::str::from_utf8(bytes)
                .map(std::borrow::Cow::Borrowed)
                .map_err(|e| bad(e.valid_up_to())),
            Some(enc) => match enc.decode_without_bom_handling_and_without_replacement(bytes) {
                Some(text) => Ok(text),
                None => {
                    // Where it stops: the longest prefix that decodes.
                    let mut decoder = enc.new_decoder_without_bom_handling();
                    let mut out = String::with_capacity(bytes.len() * 3 + 16);
                    let (result, read) =
                        decoder.decode_to_string_without_replacement(bytes, &mut out, true);
                    let at = match result {
                        encoding_rs::DecoderResult::Malformed(len, after) => {
                            read.saturating_sub(usize::from(len) + usize::from(after))
                        }
                        _ => read,
                    };
                    Err(bad(at.min(bytes.len().saturating_sub(1))))
                }
            },
        }
    }

    /// `bytes` in this character set as UTF-8, each byte that is not part of a character as
    /// `?` (how the server converts a string parameter from `character_set_client`).
    pub fn decode_lossy(&self, bytes: &[u8]) -> String {
        let Some(enc) = self.encoding else {
            return String::from_utf8_lossy(bytes).replace('\u{fffd}', "?");
        };
        if let Some(at) = self.not_mariadb(bytes) {
            // What precedes the first byte MariaDB does not have, that byte as `?`, the rest.
            let mut out = self.decode_lossy(&bytes[..at]);
            out.push('?');
            out.push_str(&self.decode_lossy(&bytes[at + 1..]));
            return out;
        }
        let mut decoder = enc.new_decoder_without_bom_handling();
        let mut out = String::with_capacity(bytes.len() * 3 + 16);
        let mut rest = bytes;
        loop {
            let (result, read) = decoder.decode_to_string_without_replacement(rest, &mut out, true);
            rest = &rest[read..];
            match result {
                encoding_rs::DecoderResult::InputEmpty => return out,
                encoding_rs::DecoderResult::OutputFull => out.reserve(rest.len() * 3 + 16),
                encoding_rs::DecoderResult::Malformed(_, _) => out.push('?'),
            }
        }
    }

    /// UTF-8 `text` in this character set; a character it cannot hold becomes `?`, as the
    /// MySQL server converts results to `character_set_results`.
    pub fn encode<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, [u8]> {
        let Some(enc) = self.encoding else {
            return std::borrow::Cow::Borrowed(text.as_bytes());
        };
        if text.is_ascii() {
            return std::borrow::Cow::Borrowed(text.as_bytes());
        }
        // WHATWG's GBK encoder writes € as 0x80, which MariaDB's gbk does not have; its
        // Shift_JIS encoder writes ¥ as 0x5C, ‾ as 0x7E, − as 0x817C (U+FF0D's) and U+0080 as
        // 0x80, which MariaDB's cp932 does not (`?`).
        let not_held: &[char] = match self.name {
            "gbk" => &['\u{20ac}'],
            "cp932" => &['\u{a5}', '\u{203e}', '\u{2212}', '\u{80}'],
            _ => &[],
        };
        if text.contains(not_held) {
            return std::borrow::Cow::Owned(self.encode(&text.replace(not_held, "?")).into_owned());
        }
        let mut encoder = enc.new_encoder();
        let mut out = Vec::with_capacity(text.len() + 8);
        let mut rest = text;
        loop {
            let mut buf = [0u8; 1024];
            let (result, read, written) =
                encoder.encode_from_utf8_without_replacement(rest, &mut buf, true);
            out.extend_from_slice(&buf[..written]);
            rest = &rest[read..];
            match result {
                encoding_rs::EncoderResult::InputEmpty => break,
                encoding_rs::EncoderResult::OutputFull => {}
                encoding_rs::EncoderResult::Unmappable(c) => match self.name {
                    "cp932" => out.extend_from_slice(&cp932_unmappable(c)),
                    _ => out.push(b'?'),
                },
            }
        }
        std::borrow::Cow::Owned(out)
    }

    /// Where `bytes` first hold what MariaDB's character set does not, for gbk and cp932
    /// (`None` for any other). WHATWG's GBK decoder (encoding_rs) is GB18030's, which also
    /// reads a lone 0x80 (€) and four-byte sequences (a lead byte, then 0x30-0x39). MariaDB's
    /// gbk: ASCII, or a lead byte 0x81-0xFE then a trail byte 0x40-0x7E or 0x80-0xFE
    /// (`strings/ctype-gbk.c`, `isgbkhead` / `isgbktail`). WHATWG's Shift_JIS decoder reads a
    /// lone 0x80 as U+0080; MariaDB's cp932: ASCII, half-width katakana 0xA1-0xDF, or a lead
    /// byte 0x81-0x9F or 0xE0-0xFC then a trail byte 0x40-0x7E or 0x80-0xFC
    /// (`strings/ctype-cp932.c`).
    fn not_mariadb(&self, bytes: &[u8]) -> Option<usize> {
        type Class = fn(u8) -> bool;
        let (single, lead, trail): (Class, Class, Class) = match self.name {
            "gbk" => (
                |b| b < 0x80,
                |b| (0x81..=0xFE).contains(&b),
                |b| matches!(b, 0x40..=0x7E | 0x80..=0xFE),
            ),
            "cp932" => (
                |b| b < 0x80 || (0xA1..=0xDF).contains(&b),
                |b| matches!(b, 0x81..=0x9F | 0xE0..=0xFC),
                |b| matches!(b, 0x40..=0x7E | 0x80..=0xFC),
            ),
            _ => return None,
        };
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b if single(b) => i += 1,
                b if lead(b) && bytes.get(i + 1).is_some_and(|&t| trail(t)) => i += 2,
                // A lead byte at the very end is left to the decoder's own error.
                b if lead(b) && i + 1 == bytes.len() => return None,
                _ => return Some(i),
            }
        }
        None
    }

    /// Bytes the backend sent in UTF-8 as this character set: text that is not UTF-8 (a
    /// binary string in a text column) passes unchanged, as the server passes binary data.
    pub fn encode_bytes<'a>(&self, bytes: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
        if self.is_utf8() || bytes.is_ascii() {
            return std::borrow::Cow::Borrowed(bytes);
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => self.encode(text),
            Err(_) => std::borrow::Cow::Borrowed(bytes),
        }
    }
}

/// cp932's bytes for `c`, which WHATWG's Shift_JIS encoder does not write, where MariaDB's
/// cp932 has them: its user-defined characters (0xF040-0xF9FC, the private use area's
/// U+E000-U+E757, which the WHATWG decoder reads), and 晡 (U+6661, 0xFAD7); `?` otherwise.
/// (Checked against MariaDB 10.11 for every byte pair and every BMP character: these are the
/// only differences.)
fn cp932_unmappable(c: char) -> Vec<u8> {
    if c == '\u{6661}' {
        return vec![0xFA, 0xD7];
    }
    let Some(pointer) = (c as u32)
        .checked_sub(0xE000)
        .filter(|&p| p <= 0xE757 - 0xE000)
        .map(|p| p + 8836)
    else {
        return vec![b'?'];
    };
    let (lead, trail) = (pointer / 188, pointer % 188);
    let lead = lead + if lead < 0x1F { 0x81 } else { 0xC1 };
    let trail = trail + if trail < 0x3F { 0x40 } else { 0x41 };
    match (u8::try_from(lead), u8::try_from(trail)) {
        (Ok(l), Ok(t)) => vec![l, t],
        _ => vec![b'?'],
    }
}

/// A session's character set settings, as MySQL's `character_set_client`,
/// `character_set_connection` / `collation_connection` and `character_set_results` (`None`:
/// NULL, no conversion of results).
#[derive(Debug, Clone)]
pub struct ClientCharsets {
    pub client: &'static Charset,
    pub connection: &'static Charset,
    /// `collation_connection` when it is not `connection`'s default (a validated name, see
    /// [`Charset::of_collation`]); `None` for the default.
    pub collation: Option<String>,
    /// `collation_connection` by id, from a handshake (`None` when not set so).
    pub collation_id: Option<u8>,
    /// `character_set_connection` when it is a character set the gateway does not convert
    /// (ucs2, utf16, utf32, ...: the connection's, which only the backend uses), a validated
    /// name ([`valid_name`]); `None` when it is `connection`.
    pub connection_other: Option<String>,
    pub results: Option<&'static Charset>,
}

/// Whether `name` may be written into a backend's `SET` as a character set or collation name
/// the backend checks itself: lower-case ASCII letters, digits and `_`, starting with a letter,
/// at most 64 bytes.
pub fn valid_name(name: &str) -> bool {
    name.len() <= 64
        && name.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

impl Default for ClientCharsets {
    fn default() -> Self {
        ClientCharsets::all(utf8mb4())
    }
}

impl ClientCharsets {
    /// All three set to `cs` with its default collation (`SET NAMES cs`).
    pub fn all(cs: &'static Charset) -> Self {
        ClientCharsets {
            client: cs,
            connection: cs,
            collation: None,
            collation_id: None,
            connection_other: None,
            results: Some(cs),
        }
    }

    /// The settings a handshake's collation id asks for. An id the gateway does not know gives
    /// utf8mb4, as a MySQL server falls back to its default; so does a UTF-8 one (utf8mb3 or
    /// utf8mb4 in any collation): nothing to convert, and the backends' connections stay as
    /// they are.
    pub fn from_handshake(id: u16) -> Self {
        match Charset::by_collation_id(id) {
            Some(cs) if !cs.is_utf8() => ClientCharsets {
                collation_id: u8::try_from(id)
                    .ok()
                    .filter(|i| *i != cs.default_collation_id),
                ..ClientCharsets::all(cs)
            },
            _ => ClientCharsets::default(),
        }
    }

    /// Whether nothing needs converting (client and results UTF-8, connection utf8mb4 with its
    /// default collation): the backends' own state.
    pub fn is_default(&self) -> bool {
        self.client.is_utf8()
            && self.results.is_none_or(Charset::is_utf8)
            && std::ptr::eq(self.connection, utf8mb4())
            && self.collation.is_none()
            && self.collation_id.is_none()
            && self.connection_other.is_none()
    }

    /// `collation_connection`'s name.
    pub fn collation_name(&self) -> String {
        if let Some(c) = &self.collation {
            return c.clone();
        }
        self.connection.default_collation.to_string()
    }

    /// The `SET` assignments (without `SET`) that put a backend connection in this state:
    /// client and results stay utf8mb4 (the gateway converts), the connection's character set
    /// and collation are the client's (so literals compare and convert as they would on the
    /// server). Written only from the table and validated names.
    pub fn backend_assignment(&self) -> String {
        let connection = match (&self.collation, self.collation_id) {
            (Some(name), _) => format!("collation_connection = '{name}'"),
            (None, Some(id)) => format!("collation_connection = {id}"),
            (None, None) => format!(
                "character_set_connection = {}",
                self.connection_other
                    .as_deref()
                    .unwrap_or(self.connection.name)
            ),
        };
        format!("character_set_client = utf8mb4, character_set_results = utf8mb4, {connection}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_come_from_the_table() {
        assert_eq!(Charset::by_name("GBK").unwrap().name, "gbk");
        assert_eq!(Charset::by_name("utf8").unwrap().name, "utf8mb3");
        assert!(Charset::by_name("0x67626b").is_none());
        assert!(Charset::by_name("gbk'; DROP").is_none());
        assert_eq!(Charset::by_collation_id(8).unwrap().name, "latin1");
        assert_eq!(Charset::by_collation_id(87).unwrap().name, "gbk");
        assert!(Charset::by_collation_id(63).is_none());
        assert_eq!(Charset::of_collation("latin1_bin").unwrap().name, "latin1");
        assert_eq!(Charset::of_collation("utf8_bin").unwrap().name, "utf8mb3");
        assert!(Charset::of_collation("latin1_bin'").is_none());
    }

    #[test]
    fn gbk_with_a_backslash_as_second_byte_decodes_to_one_character() {
        let gbk = Charset::by_name("gbk").unwrap();
        // 0xBF5C is one character (縗) in GBK: the 0x5C is not a backslash.
        let text = gbk.decode(b"SELECT '\xbf\\' , 1").unwrap();
        assert_eq!(text, "SELECT '\u{7e17}' , 1");
        assert_eq!(gbk.encode("\u{7e17}").as_ref(), b"\xbf\\");
        // GB18030's four-byte sequences and a lone 0x80 are not MariaDB's gbk; € has no
        // gbk byte.
        assert_eq!(
            gbk.decode(b"SELECT '\x81\x30\x81\x30'").unwrap_err(),
            b"\x810\x810"
        );
        assert_eq!(gbk.decode(b"'\x80'").unwrap_err(), b"\x80'");
        assert_eq!(gbk.decode_lossy(b"a\x80\xd6\xd0"), "a?\u{4e2d}");
        assert_eq!(gbk.encode("\u{20ac}\u{4e2d}").as_ref(), b"?\xd6\xd0");
        // A lead byte with nothing after it is not GBK.
        assert!(gbk.decode(b"SELECT '\x81").is_err());
    }

    #[test]
    fn cp932_is_mariadbs_both_ways() {
        let cp932 = Charset::by_name("CP932").unwrap();
        assert_eq!(Charset::by_collation_id(96).unwrap().name, "cp932");
        // 0x835C is one character (ソ): the 0x5C is not a backslash (mysql-test mysql_cp932).
        assert_eq!(
            cp932.decode(b"SELECT '\x83\\'").unwrap(),
            "SELECT '\u{30bd}'"
        );
        assert_eq!(cp932.encode("\u{30bd}").as_ref(), b"\x83\\");
        // Half-width katakana, NEC row 13 before IBM's duplicate, JIS X 0208 before both,
        // user-defined characters in the private use area (as MariaDB converts them).
        assert_eq!(cp932.decode(b"\xb1\xf0\x40").unwrap(), "\u{ff71}\u{e000}");
        assert_eq!(
            cp932
                .encode("\u{2160}\u{2235}\u{ffe2}\u{e000}\u{e757}\u{e758}\u{6661}")
                .as_ref(),
            b"\x87\x54\x81\xe6\x81\xca\xf0\x40\xf9\xfc?\xfa\xd7"
        );
        // Not cp932: a lone 0x80, 0xA0, 0xFD-0xFF; ¥, ‾, − and U+0080 have no cp932 byte.
        for bad in [&b"a\x80"[..], b"\xa0", b"\xfd", b"\x81\x20"] {
            assert!(cp932.decode(bad).is_err(), "{bad:?}");
        }
        assert_eq!(cp932.decode_lossy(b"a\x80\xb1"), "a?\u{ff71}");
        assert_eq!(
            cp932
                .encode("\u{a5}\u{203e}\u{2212}\u{80}\u{ff0d}")
                .as_ref(),
            b"????\x81\x7c"
        );
    }

    #[test]
    fn latin1_is_windows_1252_both_ways() {
        let latin1 = Charset::by_name("latin1").unwrap();
        assert_eq!(latin1.decode(b"caf\xe9 \x80").unwrap(), "café €");
        assert_eq!(latin1.encode("café € 中").as_ref(), b"caf\xe9 \x80 ?");
        // Not UTF-8 in a text column: passed as it is.
        assert_eq!(latin1.encode_bytes(b"\xff\xfe").as_ref(), b"\xff\xfe");
    }
}
