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
//! this table, never copied from a client's text. The single-byte sets (latin1, cp1250, dec8,
//! swe7, tis620, ... every one MariaDB has) convert by MariaDB's own tables
//! ([`single_byte`], derived from the server and checked against it by
//! `tests/charset_tables.rs`); a byte a set does not define is refused in a statement (1300)
//! and `?` in a parameter value. swe7 (whose 0x40, 0x5B-0x5E, 0x60, 0x7B-0x7E are letters) and
//! armscii8 (whose 0xA4, 0xA5, 0xA9, 0xAB, 0xAC, 0xFF are ASCII punctuation) are decoded as
//! MariaDB's lexer reads their bytes ([`Charset::decode_sql`]). The multibyte codecs are
//! `encoding_rs`'s (WHATWG Encoding Standard): `gbk` as GBK, held to MariaDB's byte ranges
//! (WHATWG's GBK decoder is GB18030's), `cp932` as Shift_JIS (WHATWG's is Windows-31J, which
//! cp932 is: the NEC and IBM extensions, user-defined characters in the private use area), held
//! to MariaDB's byte ranges and without the three characters WHATWG's encoder adds (¥, ‾ and −
//! are `?` in cp932), `euckr` as EUC-KR. Character sets whose WHATWG table differs from
//! MariaDB's (big5, sjis, ujis, eucjpms, gb2312) are not in the table: they are refused rather
//! than converted wrongly.

use encoding_rs::Encoding;

pub mod single_byte;

/// How a character set converts: UTF-8 (nothing to convert), a WHATWG codec of `encoding_rs`
/// (the multibyte sets), or MariaDB's own table (the single-byte sets, [`single_byte`]).
#[derive(Debug)]
enum Codec {
    Utf8,
    Whatwg(&'static Encoding),
    Table(&'static single_byte::SingleByte),
}

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
    /// The codec.
    codec: Codec,
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
        codec: Codec::Utf8,
    },
    Charset {
        name: "utf8mb3",
        default_collation_id: 33,
        default_collation: "utf8mb3_general_ci",
        other_collation_ids: &[
            83, 192, 193, 194, 195, 196, 197, 198, 199, 200, 201, 202, 203, 204, 205, 206, 207,
            208, 209, 210, 211, 212, 213, 214, 215, 223,
        ],
        codec: Codec::Utf8,
    },
    Charset {
        name: "latin1",
        default_collation_id: 8,
        default_collation: "latin1_swedish_ci",
        other_collation_ids: &[5, 15, 31, 47, 48, 49, 94],
        codec: Codec::Table(&single_byte::LATIN1),
    },
    Charset {
        name: "gbk",
        default_collation_id: 28,
        default_collation: "gbk_chinese_ci",
        other_collation_ids: &[87],
        codec: Codec::Whatwg(encoding_rs::GBK),
    },
    Charset {
        name: "cp932",
        default_collation_id: 95,
        default_collation: "cp932_japanese_ci",
        other_collation_ids: &[96],
        codec: Codec::Whatwg(encoding_rs::SHIFT_JIS),
    },
    Charset {
        name: "euckr",
        default_collation_id: 19,
        default_collation: "euckr_korean_ci",
        other_collation_ids: &[85],
        codec: Codec::Whatwg(encoding_rs::EUC_KR),
    },
    Charset {
        name: "cp1250",
        default_collation_id: 26,
        default_collation: "cp1250_general_ci",
        other_collation_ids: &[34, 44, 66, 99],
        codec: Codec::Table(&single_byte::CP1250),
    },
    Charset {
        name: "cp1251",
        default_collation_id: 51,
        default_collation: "cp1251_general_ci",
        other_collation_ids: &[14, 23, 50, 52],
        codec: Codec::Table(&single_byte::CP1251),
    },
    Charset {
        name: "latin2",
        default_collation_id: 9,
        default_collation: "latin2_general_ci",
        other_collation_ids: &[2, 21, 27, 77],
        codec: Codec::Table(&single_byte::LATIN2),
    },
    Charset {
        name: "hebrew",
        default_collation_id: 16,
        default_collation: "hebrew_general_ci",
        other_collation_ids: &[71],
        codec: Codec::Table(&single_byte::HEBREW),
    },
    Charset {
        name: "koi8r",
        default_collation_id: 7,
        default_collation: "koi8r_general_ci",
        other_collation_ids: &[74],
        codec: Codec::Table(&single_byte::KOI8R),
    },
    Charset {
        name: "armscii8",
        default_collation_id: 32,
        default_collation: "armscii8_general_ci",
        other_collation_ids: &[64],
        codec: Codec::Table(&single_byte::ARMSCII8),
    },
    Charset {
        name: "ascii",
        default_collation_id: 11,
        default_collation: "ascii_general_ci",
        other_collation_ids: &[65],
        codec: Codec::Table(&single_byte::ASCII),
    },
    Charset {
        name: "cp1256",
        default_collation_id: 57,
        default_collation: "cp1256_general_ci",
        other_collation_ids: &[67],
        codec: Codec::Table(&single_byte::CP1256),
    },
    Charset {
        name: "cp1257",
        default_collation_id: 59,
        default_collation: "cp1257_general_ci",
        other_collation_ids: &[29, 58],
        codec: Codec::Table(&single_byte::CP1257),
    },
    Charset {
        name: "cp850",
        default_collation_id: 4,
        default_collation: "cp850_general_ci",
        other_collation_ids: &[80],
        codec: Codec::Table(&single_byte::CP850),
    },
    Charset {
        name: "cp852",
        default_collation_id: 40,
        default_collation: "cp852_general_ci",
        other_collation_ids: &[81],
        codec: Codec::Table(&single_byte::CP852),
    },
    Charset {
        name: "cp866",
        default_collation_id: 36,
        default_collation: "cp866_general_ci",
        other_collation_ids: &[68],
        codec: Codec::Table(&single_byte::CP866),
    },
    Charset {
        name: "dec8",
        default_collation_id: 3,
        default_collation: "dec8_swedish_ci",
        other_collation_ids: &[69],
        codec: Codec::Table(&single_byte::DEC8),
    },
    Charset {
        name: "geostd8",
        default_collation_id: 92,
        default_collation: "geostd8_general_ci",
        other_collation_ids: &[93],
        codec: Codec::Table(&single_byte::GEOSTD8),
    },
    Charset {
        name: "greek",
        default_collation_id: 25,
        default_collation: "greek_general_ci",
        other_collation_ids: &[70],
        codec: Codec::Table(&single_byte::GREEK),
    },
    Charset {
        name: "hp8",
        default_collation_id: 6,
        default_collation: "hp8_english_ci",
        other_collation_ids: &[72],
        codec: Codec::Table(&single_byte::HP8),
    },
    Charset {
        name: "keybcs2",
        default_collation_id: 37,
        default_collation: "keybcs2_general_ci",
        other_collation_ids: &[73],
        codec: Codec::Table(&single_byte::KEYBCS2),
    },
    Charset {
        name: "koi8u",
        default_collation_id: 22,
        default_collation: "koi8u_general_ci",
        other_collation_ids: &[75],
        codec: Codec::Table(&single_byte::KOI8U),
    },
    Charset {
        name: "latin5",
        default_collation_id: 30,
        default_collation: "latin5_turkish_ci",
        other_collation_ids: &[78],
        codec: Codec::Table(&single_byte::LATIN5),
    },
    Charset {
        name: "latin7",
        default_collation_id: 41,
        default_collation: "latin7_general_ci",
        other_collation_ids: &[20, 42, 79],
        codec: Codec::Table(&single_byte::LATIN7),
    },
    Charset {
        name: "macce",
        default_collation_id: 38,
        default_collation: "macce_general_ci",
        other_collation_ids: &[43],
        codec: Codec::Table(&single_byte::MACCE),
    },
    Charset {
        name: "macroman",
        default_collation_id: 39,
        default_collation: "macroman_general_ci",
        other_collation_ids: &[53],
        codec: Codec::Table(&single_byte::MACROMAN),
    },
    Charset {
        name: "swe7",
        default_collation_id: 10,
        default_collation: "swe7_swedish_ci",
        other_collation_ids: &[82],
        codec: Codec::Table(&single_byte::SWE7),
    },
    Charset {
        name: "tis620",
        default_collation_id: 18,
        default_collation: "tis620_thai_ci",
        other_collation_ids: &[89],
        codec: Codec::Table(&single_byte::TIS620),
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
        matches!(self.codec, Codec::Utf8)
    }

    /// Whether every character of this set is one byte (MariaDB's `mbmaxlen` 1): its table.
    pub fn single_byte(&self) -> Option<&'static single_byte::SingleByte> {
        match self.codec {
            Codec::Table(t) => Some(t),
            _ => None,
        }
    }

    /// Whether a byte below 0x80 is always that ASCII character, and no other byte decodes to
    /// an ASCII character: then the text a statement decodes to has its quotes, backslashes and
    /// comments where MariaDB's lexer, which reads bytes, finds them. Not so for swe7 (0x5C
    /// is Ö, 0x60 é, ...) or armscii8 (0xFF is `'`, 0xA5 `(`, ...).
    pub fn ascii_transparent(&self) -> bool {
        match self.codec {
            Codec::Table(t) => (0..=255u8).all(|b| match t.char_of(b) {
                Some(c) if b < 0x80 => c == char::from(b),
                Some(c) => !c.is_ascii(),
                None => b >= 0x80,
            }),
            _ => true,
        }
    }

    /// `bytes` in this character set as UTF-8. `Err` with the first bytes that are not a
    /// character of it (MySQL's 1300 "Invalid ... character string" names them).
    pub fn decode<'a>(&self, bytes: &'a [u8]) -> Result<std::borrow::Cow<'a, str>, Vec<u8>> {
        let bad = |at: usize| bytes[at..bytes.len().min(at + 4)].to_vec();
        if let Some(at) = self.not_mariadb(bytes) {
            return Err(bad(at));
        }
        match self.codec {
            Codec::Utf8 => std::str::from_utf8(bytes)
                .map(std::borrow::Cow::Borrowed)
                .map_err(|e| bad(e.valid_up_to())),
            Codec::Table(t) => {
                if bytes.is_ascii() && t.ascii_is_ascii() {
                    // ASCII is ASCII in the set: nothing to convert.
                    return Ok(std::borrow::Cow::Borrowed(
                        std::str::from_utf8(bytes).unwrap_or_default(),
                    ));
                }
                let mut out = String::with_capacity(bytes.len() * 2);
                for (at, &b) in bytes.iter().enumerate() {
                    out.push(t.char_of(b).ok_or_else(|| bad(at))?);
                }
                Ok(std::borrow::Cow::Owned(out))
            }
            Codec::Whatwg(enc) => {
                match enc.decode_without_bom_handling_and_without_replacement(bytes) {
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
                }
            }
        }
    }

    /// A statement's `bytes` in this character set as the UTF-8 text that means to a parser
    /// what the bytes mean to MariaDB's lexer, which reads bytes: [`Charset::decode`], but for
    /// a single-byte set that is not [`Charset::ascii_transparent`] (swe7, armscii8) a byte
    /// below 0x80 outside quotes is that ASCII character (swe7's 0x40 is `@`, 0x60 a backtick,
    /// `a[b` an identifier spelt so, as MariaDB keeps it), the bodies of strings and quoted
    /// identifiers are decoded character by character with their escapes as MariaDB reads them
    /// (in swe7 `'\\'` is the byte 0x5C, Ö; `\%` is Ö%; `\[` is Ä), and a character written
    /// in such a body that is a quote or backslash in UTF-8 (armscii8's 0xFF, `'`) is escaped
    /// so it stays in its body. `backslash_escapes`: `\` escapes in strings (not
    /// `NO_BACKSLASH_ESCAPES`).
    ///
    /// Errors: as [`Charset::decode`], the bytes from the first one that is no character of
    /// the set (outside a body: also one that decodes to an ASCII character).
    pub fn decode_sql<'a>(
        &self,
        bytes: &'a [u8],
        backslash_escapes: bool,
    ) -> Result<std::borrow::Cow<'a, str>, Vec<u8>> {
        match self.codec {
            Codec::Table(t) if !self.ascii_transparent() => {
                decode_sql_by_bytes(t, bytes, backslash_escapes)
                    .map(std::borrow::Cow::Owned)
                    .map_err(|at| bytes[at..bytes.len().min(at + 4)].to_vec())
            }
            _ => self.decode(bytes),
        }
    }

    /// `bytes` in this character set as UTF-8, each byte that is not part of a character as
    /// `?` (how the server converts a string parameter from `character_set_client`).
    pub fn decode_lossy(&self, bytes: &[u8]) -> String {
        let enc = match self.codec {
            Codec::Utf8 => return String::from_utf8_lossy(bytes).replace('\u{fffd}', "?"),
            Codec::Table(t) => return bytes.iter().map(|&b| t.char_of(b).unwrap_or('?')).collect(),
            Codec::Whatwg(enc) => enc,
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
        let enc = match self.codec {
            Codec::Utf8 => return std::borrow::Cow::Borrowed(text.as_bytes()),
            Codec::Table(t) => {
                if text.is_ascii() && t.ascii_is_ascii() {
                    return std::borrow::Cow::Borrowed(text.as_bytes());
                }
                // A character outside the set (one outside the BMP too) is one `?`.
                return std::borrow::Cow::Owned(
                    text.chars().map(|c| t.byte_of(c).unwrap_or(b'?')).collect(),
                );
            }
            Codec::Whatwg(enc) => enc,
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

/// [`Charset::decode_sql`] for a table that is not ASCII-transparent: `Err` with the position
/// of the first byte that is not a character of it where one is needed.
fn decode_sql_by_bytes(
    t: &single_byte::SingleByte,
    sql: &[u8],
    backslash_escapes: bool,
) -> Result<String, usize> {
    let mut out = String::with_capacity(sql.len() * 2);
    // Outside quotes: ASCII as itself, another byte as its character when that is not ASCII.
    let syntax = |b: u8, at: usize| -> Result<char, usize> {
        match t.char_of(b) {
            _ if b < 0x80 => Ok(char::from(b)),
            Some(c) if !c.is_ascii() => Ok(c),
            _ => Err(at),
        }
    };
    // A comment's text: what it holds does not matter, as long as it stays a comment.
    let comment = |b: u8| match t.char_of(b) {
        _ if b < 0x80 => char::from(b),
        Some(c) if !c.is_ascii() => c,
        _ => '?',
    };
    let mut i = 0;
    while i < sql.len() {
        let b = sql[i];
        let rest = &sql[i..];
        if matches!(b, b'\'' | b'"' | b'`') {
            let quote = char::from(b);
            let escapes = backslash_escapes && b != b'`';
            // One byte of the body, as its character, escaped so it stays in the body.
            let body = |out: &mut String, c: u8, at: usize| -> Result<(), usize> {
                let ch = t.char_of(c).ok_or(at)?;
                if ch == quote || (escapes && ch == '\\') {
                    out.push(if ch == quote { quote } else { '\\' });
                }
                out.push(ch);
                Ok(())
            };
            out.push(quote);
            i += 1;
            while let Some(&c) = sql.get(i) {
                if c == b {
                    if sql.get(i + 1) == Some(&b) {
                        // A doubled quote: the quote's byte in the body.
                        body(&mut out, c, i)?;
                        i += 2;
                        continue;
                    }
                    out.push(quote);
                    i += 1;
                    break;
                }
                if c == b'\\' && escapes {
                    let Some(&e) = sql.get(i + 1) else {
                        out.push('\\');
                        i += 1;
                        continue;
                    };
                    match e {
                        // An escape that names a byte; ASCII letters and quotes are ASCII in
                        // every such set.
                        b'0' | b'b' | b'n' | b'r' | b't' | b'Z' | b'\'' | b'"' => {
                            out.push('\\');
                            out.push(char::from(e));
                        }
                        // `\%` and `\_` keep their backslash (the byte 0x5C).
                        b'%' | b'_' => {
                            body(&mut out, b'\\', i)?;
                            out.push(char::from(e));
                        }
                        // `\\` is the byte 0x5C, `\x` the byte x.
                        _ => body(&mut out, e, i + 1)?,
                    }
                    i += 2;
                    continue;
                }
                body(&mut out, c, i)?;
                i += 1;
            }
            continue;
        }
        let line_comment = b == b'#'
            || (rest.starts_with(b"--")
                && rest
                    .get(2)
                    .is_none_or(|&c| c.is_ascii_whitespace() || c.is_ascii_control()));
        let block_comment = rest.starts_with(b"/*")
            && !rest[2..].starts_with(b"!")
            && !rest[2..].starts_with(b"M!");
        if line_comment || block_comment {
            let end = if line_comment {
                rest.iter()
                    .position(|&c| c == b'\n')
                    .map_or(sql.len(), |p| i + p)
            } else {
                rest[2..]
                    .windows(2)
                    .position(|w| w == b"*/")
                    .map_or(sql.len(), |p| i + 2 + p + 2)
            };
            out.extend(sql[i..end].iter().map(|&c| comment(c)));
            i = end;
            continue;
        }
        out.push(syntax(b, i)?);
        i += 1;
    }
    Ok(out)
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

    #[test]
    fn single_byte_sets_convert_by_mariadbs_tables() {
        let dec8 = Charset::by_name("dec8").unwrap();
        assert_eq!(Charset::by_collation_id(69).unwrap().name, "dec8");
        assert_eq!(dec8.decode(b"caf\xe9").unwrap(), "café");
        // 0xA4 is no dec8 character: refused in a statement, `?` in a parameter value.
        assert_eq!(dec8.decode(b"a\xa4b").unwrap_err(), b"\xa4b");
        assert_eq!(dec8.decode_lossy(b"a\xa4b"), "a?b");
        assert_eq!(dec8.encode("café € 😀").as_ref(), b"caf\xe9 ? ?");
        // tis620's holes are U+FFFD, as MariaDB converts them; U+FFFD is written 0xFF.
        let tis620 = Charset::by_name("tis620").unwrap();
        assert_eq!(tis620.decode(b"\xa1\xa0").unwrap(), "\u{e01}\u{fffd}");
        assert_eq!(tis620.encode("\u{e01}\u{fffd}").as_ref(), b"\xa1\xff");
        // cp1250's 0x81 is none of its characters (WHATWG's windows-1250 reads U+0081).
        let cp1250 = Charset::by_name("cp1250").unwrap();
        assert!(cp1250.decode(b"\x81").is_err());
        assert_eq!(cp1250.encode("\u{81}").as_ref(), b"?");
        for (name, t) in single_byte::TABLES {
            if t.ascii_is_ascii() {
                for c in 0..0x80u8 {
                    assert_eq!(t.byte_of(char::from(c)), Some(c), "{name}");
                }
            }
            assert_eq!(
                Charset::by_name(name).unwrap().ascii_transparent(),
                !matches!(*name, "swe7" | "armscii8"),
                "{name}"
            );
        }
    }

    #[test]
    fn swe7_statements_read_as_mariadbs_lexer_reads_their_bytes() {
        let swe7 = Charset::by_name("swe7").unwrap();
        // Outside quotes ASCII is ASCII (`@`, backticks, `\N`); in strings and quoted names
        // 0x40 is É, 0x5B Ä, 0x5C Ö, 0x60 é; `\\` is 0x5C and `\%` keeps it.
        assert_eq!(
            swe7.decode_sql(
                b"SELECT @@version, @a, `x@``y`, '[@]', '\\\\', '\\%', '\\['",
                true
            )
            .unwrap(),
            "SELECT @@version, @a, `x\u{c9}\u{e9}y`, '\u{c4}\u{c9}\u{c5}', '\u{d6}', '\u{d6}%', '\u{c4}'"
        );
        assert_eq!(
            swe7.decode_sql(b"SELECT 'a\\'b\\n' -- [\n, \"x\"", true)
                .unwrap(),
            "SELECT 'a\\'b\\n' -- [\n, \"x\""
        );
        // Without backslash escapes 0x5C is Ö.
        assert_eq!(swe7.decode_sql(b"'\\'", false).unwrap(), "'\u{d6}'");
        // Bytes above 0x7F are no swe7 character (MariaDB's 1300 for `Ｔ`).
        assert_eq!(
            swe7.decode_sql(b"SELECT `\xef\xbc\xb4`", true).unwrap_err(),
            b"\xef\xbc\xb4`"
        );
        assert_eq!(swe7.encode("@\u{c9}\u{d6}").as_ref(), b"?@\\");
    }

    #[test]
    fn armscii8_bytes_that_are_quotes_stay_in_their_string() {
        let armscii8 = Charset::by_name("armscii8").unwrap();
        // 0xFF is `'` and 0xA5 `(` in armscii8: written in a string, they stay in it.
        assert_eq!(
            armscii8
                .decode_sql(b"SELECT 'a\xff OR 1=1 \xa5' AS `\xff`", true)
                .unwrap(),
            "SELECT 'a'' OR 1=1 (' AS `'`"
        );
        // Outside quotes they would be syntax MariaDB does not read there: refused.
        assert_eq!(
            armscii8.decode_sql(b"SELECT 1 \xff", true).unwrap_err(),
            b"\xff"
        );
        assert_eq!(armscii8.encode("'").as_ref(), b"'");
    }
}
