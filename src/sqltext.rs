//! Small facts about SQL text that several layers need without depending on each other (a leaf
//! module: it uses nothing of the crate).

/// The index just past the quoted string or identifier starting at `start` (MySQL rules:
/// a doubled quote stands for itself; backslash escapes inside string literals, not inside
/// backquotes), or `None` when it is not closed.
pub fn quoted_end(b: &[u8], start: usize) -> Option<usize> {
    quoted_end_in(b, start, true)
}

/// [`quoted_end`] under a given `NO_BACKSLASH_ESCAPES`: when `backslash_escapes` is false a
/// backslash is an ordinary character inside strings too.
pub fn quoted_end_in(b: &[u8], start: usize, backslash_escapes: bool) -> Option<usize> {
    let q = b[start];
    let mut i = start + 1;
    while i < b.len() {
        if b[i] == b'\\' && q != b'`' && backslash_escapes {
            i += 2;
            continue;
        }
        if b[i] == q {
            if b.get(i + 1) == Some(&q) {
                i += 2;
                continue;
            }
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

/// Whether `hay` contains `needle`, ignoring ASCII case (without allocating).
pub fn contains_ignore_ascii_case(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let Some((&first, rest)) = n.split_first() else {
        return true;
    };
    if h.len() < n.len() {
        return false;
    }
    // A needle byte without case (`_`, `@`) must occur as it is: one fast search rules most
    // statements out.
    if let Some(caseless) = n.iter().find(|b| !b.is_ascii_alphabetic())
        && !h.contains(caseless)
    {
        return false;
    }
    let (lower, upper) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    (0..=h.len() - n.len()).any(|i| {
        (h[i] == lower || h[i] == upper) && h[i + 1..i + n.len()].eq_ignore_ascii_case(rest)
    })
}

/// The statement with every `_binary'...'` literal (also `_binary "..."`, any case, blanks
/// before the quote), and every string literal whose bytes are not UTF-8, written as the
/// hexadecimal literal `X'...'` of the same bytes; `None` when there is no such literal or the
/// text is not UTF-8 outside them.
///
/// Why: drivers send binary parameters of client-side prepared statements as raw bytes in a
/// literal — JDBC's `byte[]` as `_binary'<bytes>'` (MariaDB Connector/J writes `_binary '`,
/// MySQL Connector/J `_binary'`), PyMySQL's `bytes` as a plain `'<bytes>'` — while the gateway
/// reads statements as UTF-8. `X'..'` is the same binary string in MySQL (what a BLOB column
/// stores, what a text column refuses when the bytes are not text), and the PostgreSQL
/// translation turns it into `bytea`. The literal's escapes are resolved as MySQL resolves
/// them (`\0 \' \" \b \n \r \t \Z \\`; `\%` and `\_` keep their backslash; any other
/// `\x` is `x`; a doubled quote is one), or only doubled quotes when `backslash_escapes` is
/// false (`NO_BACKSLASH_ESCAPES`). Quoted identifiers and comments are skipped whole, so an
/// `_binary'` inside them is left alone.
pub fn binary_literals_as_hex(sql: &[u8], backslash_escapes: bool) -> Option<String> {
    binary_literals_as_hex_with(sql, backslash_escapes, &|b| b.to_vec())
}

/// [`binary_literals_as_hex`] for a statement decoded from a client character set to UTF-8:
/// each `_binary` literal's bytes (unescaped, UTF-8) go through `recode` (back to the client's
/// character set) before they are written in hex.
pub fn binary_literals_as_hex_with(
    sql: &[u8],
    backslash_escapes: bool,
    recode: &dyn Fn(&[u8]) -> Vec<u8>,
) -> Option<String> {
    const INTRODUCER: &[u8] = b"_binary";
    let utf8 = std::str::from_utf8(sql).is_ok();
    if utf8
        && !sql
            .windows(INTRODUCER.len())
            .any(|w| w.eq_ignore_ascii_case(INTRODUCER))
    {
        return None;
    }
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
    let mut out: Vec<u8> = Vec::with_capacity(sql.len() * 2);
    let mut changed = false;
    let mut i = 0;
    while i < sql.len() {
        let b = sql[i];
        if (b == b'\'' || b == b'"')
            && let Some(end) = quoted_end_in(sql, i, backslash_escapes)
            && std::str::from_utf8(&sql[i + 1..end - 1]).is_err()
        {
            push_hex(
                &mut out,
                &unescape(&sql[i + 1..end - 1], b, backslash_escapes),
            );
            changed = true;
            i = end;
            continue;
        }
        if let Some(end) = opaque_end(sql, i, backslash_escapes) {
            out.extend_from_slice(&sql[i..end]);
            i = end;
            continue;
        }
        // A name after `.` or `@` (a column or variable called `_binary`) is no introducer.
        let at_word_start =
            i == 0 || !(ident(sql[i - 1]) || sql[i - 1] == b'.' || sql[i - 1] == b'@');
        if at_word_start
            && sql.len() >= i + INTRODUCER.len()
            && sql[i..i + INTRODUCER.len()].eq_ignore_ascii_case(INTRODUCER)
        {
            let mut q = i + INTRODUCER.len();
            while q < sql.len() && sql[q].is_ascii_whitespace() {
                q += 1;
            }
            if q < sql.len() && (sql[q] == b'\'' || sql[q] == b'"') {
                let end = quoted_end_in(sql, q, backslash_escapes)?;
                push_hex(
                    &mut out,
                    &recode(&unescape(&sql[q + 1..end - 1], sql[q], backslash_escapes)),
                );
                changed = true;
                i = end;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    if !changed {
        return None;
    }
    String::from_utf8(out).ok()
}

/// The statement (decoded from a single-byte client character set to UTF-8) with the body of
/// every `_utf8'...'` literal (also `_utf8mb3`, `_utf8mb4`, `"..."`, any case, blanks before
/// the quote) put back as the client sent it, when those bytes are UTF-8: the introducer says
/// the literal's bytes are UTF-8 whatever the connection's character set (mysql-test
/// `ctype_mb`: `_utf8'тест'` from a latin1 client is four characters, not the eight its bytes
/// make in latin1). `recode` turns decoded text back into the client's bytes. `None` when no
/// literal changes. Quoted names and comments are skipped whole.
///
/// Only for single-byte character sets: each byte is one character there, so the body's
/// quotes and backslashes are the same bytes before and after, and the literal ends where it
/// ended. (The text is lexed again afterwards, as every statement is, on what the backend gets.)
pub fn utf8_literals_as_sent(
    text: &str,
    backslash_escapes: bool,
    recode: &dyn Fn(&[u8]) -> Vec<u8>,
) -> Option<String> {
    const INTRODUCERS: [&[u8]; 3] = [b"_utf8mb4", b"_utf8mb3", b"_utf8"];
    let sql = text.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
    let mut out: Vec<u8> = Vec::with_capacity(sql.len());
    let mut changed = false;
    let mut i = 0;
    while i < sql.len() {
        if let Some(end) = opaque_end(sql, i, backslash_escapes) {
            out.extend_from_slice(&sql[i..end]);
            i = end;
            continue;
        }
        let at_word_start =
            i == 0 || !(ident(sql[i - 1]) || sql[i - 1] == b'.' || sql[i - 1] == b'@');
        let introducer = INTRODUCERS.iter().find(|w| {
            sql.len() >= i + w.len()
                && sql[i..i + w.len()].eq_ignore_ascii_case(w)
                && !sql.get(i + w.len()).copied().is_some_and(ident)
        });
        if at_word_start && let Some(w) = introducer {
            let mut q = i + w.len();
            while q < sql.len() && sql[q].is_ascii_whitespace() {
                q += 1;
            }
            if q < sql.len()
                && (sql[q] == b'\'' || sql[q] == b'"')
                && let Some(end) = quoted_end_in(sql, q, backslash_escapes)
            {
                let body = &sql[q + 1..end - 1];
                let sent = recode(body);
                out.extend_from_slice(&sql[i..q + 1]);
                match std::str::from_utf8(&sent) {
                    Ok(_) if sent.as_slice() != body => {
                        out.extend_from_slice(&sent);
                        changed = true;
                    }
                    _ => out.extend_from_slice(body),
                }
                out.extend_from_slice(&sql[end - 1..end]);
                i = end;
                continue;
            }
        }
        out.push(sql[i]);
        i += 1;
    }
    if !changed {
        return None;
    }
    String::from_utf8(out).ok()
}

/// MariaDB's character sets that an introducer may name, other than `binary` and the UTF-8
/// ones (`_binary`, `_utf8`: see [`binary_literals_as_hex_with`], [`utf8_literals_as_sent`]).
const INTRODUCED_CHARSETS: &[&str] = &[
    "armscii8", "ascii", "big5", "cp1250", "cp1251", "cp1256", "cp1257", "cp850", "cp852", "cp866",
    "cp932", "dec8", "eucjpms", "euckr", "gb2312", "gbk", "geostd8", "greek", "hebrew", "hp8",
    "keybcs2", "koi8r", "koi8u", "latin1", "latin2", "latin5", "latin7", "macce", "macroman",
    "sjis", "swe7", "tis620", "ucs2", "ujis", "utf16", "utf16le", "utf32",
];

/// The statement (decoded from a client character set to UTF-8) with every `_cs'...'` literal
/// of another character set than the client's UTF-8 text (`_koi8r'...'`, `_latin2"..."`, any
/// case, blanks before the quote; [`INTRODUCED_CHARSETS`]) written as `_cs X'...'` holding the
/// bytes the client sent (its body unescaped, then `recode`d back to the client's character
/// set): the introducer says what those bytes are, whatever the connection's character set
/// (mysql-test `ctype_recoding`: `_koi8r'...'` from a koi8r client reached the utf8mb4 backend
/// as UTF-8 bytes read as koi8r). A literal followed by another string (`_latin1'a' 'b'`,
/// which MariaDB concatenates, and no hex literal may start) is left as written. `None` when
/// no literal changes. Quoted names and comments are skipped whole.
pub fn charset_literals_as_hex(
    text: &str,
    backslash_escapes: bool,
    recode: &dyn Fn(&[u8]) -> Vec<u8>,
) -> Option<String> {
    let sql = text.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
    let mut out: Vec<u8> = Vec::with_capacity(sql.len() * 2);
    let mut changed = false;
    let mut i = 0;
    while i < sql.len() {
        if let Some(end) = opaque_end(sql, i, backslash_escapes) {
            out.extend_from_slice(&sql[i..end]);
            i = end;
            continue;
        }
        let at_word_start =
            i == 0 || !(ident(sql[i - 1]) || sql[i - 1] == b'.' || sql[i - 1] == b'@');
        let name_end = (i + 1..sql.len())
            .find(|&j| !ident(sql[j]))
            .unwrap_or(sql.len());
        let introducer = at_word_start
            && sql[i] == b'_'
            && INTRODUCED_CHARSETS
                .iter()
                .any(|c| sql[i + 1..name_end].eq_ignore_ascii_case(c.as_bytes()));
        if introducer {
            let mut q = name_end;
            while q < sql.len() && sql[q].is_ascii_whitespace() {
                q += 1;
            }
            if q < sql.len()
                && (sql[q] == b'\'' || sql[q] == b'"')
                && let Some(end) = quoted_end_in(sql, q, backslash_escapes)
            {
                let mut next = end;
                while next < sql.len() && sql[next].is_ascii_whitespace() {
                    next += 1;
                }
                // A body of plain ASCII (no escape, no quote) the client sent as the text has
                // it reaches the backend the same as written, and keeps its column label
                // (`_cp866''`, mysql-test `ctype_cp866`).
                let body = &sql[q + 1..end - 1];
                let as_written = body
                    .iter()
                    .all(|&b| b.is_ascii() && !matches!(b, b'\\' | b'\'' | b'"'))
                    && recode(body) == body;
                if !as_written && !matches!(sql.get(next), Some(b'\'' | b'"')) {
                    out.extend_from_slice(&sql[i..name_end]);
                    out.push(b' ');
                    push_hex(
                        &mut out,
                        &recode(&unescape(&sql[q + 1..end - 1], sql[q], backslash_escapes)),
                    );
                    changed = true;
                    i = end;
                    continue;
                }
            }
        }
        out.push(sql[i]);
        i += 1;
    }
    if !changed {
        return None;
    }
    String::from_utf8(out).ok()
}

/// The statement's first word (letters, digits, `_`), after blanks and comments; `""` when it
/// starts with anything else.
pub fn first_keyword(sql: &str) -> &str {
    let b = sql.as_bytes();
    let mut i = 0;
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if b[i..].starts_with(b"/*") {
            i = b[i + 2..]
                .windows(2)
                .position(|w| w == b"*/")
                .map_or(b.len(), |p| i + 2 + p + 2);
        } else if b[i..].starts_with(b"#") || dash_comment_at(b, i) {
            i = line_end(b, i);
        } else {
            break;
        }
    }
    let end = b[i..]
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .map_or(b.len(), |p| i + p);
    &sql[i..end]
}

/// The end of the string, quoted name or comment starting at `i` (to the end of the text when
/// it is not closed), or `None` when none starts there: what a rewrite of the code around them
/// copies whole. Strings follow `NO_BACKSLASH_ESCAPES` (`backslash_escapes` false), comments
/// MariaDB's rules (`#`, `-- `, `/* */`).
fn opaque_end(b: &[u8], i: usize, backslash_escapes: bool) -> Option<usize> {
    Some(match b[i] {
        q @ (b'\'' | b'"' | b'`') => {
            quoted_end_in(b, i, backslash_escapes || q == b'`').unwrap_or(b.len())
        }
        b'#' => line_end(b, i),
        b'-' if dash_comment_at(b, i) => line_end(b, i),
        b'/' if b.get(i + 1) == Some(&b'*') => b[i + 2..]
            .windows(2)
            .position(|w| w == b"*/")
            .map_or(b.len(), |p| i + 2 + p + 2),
        _ => return None,
    })
}

/// Appends `X'<hex>'` of `bytes`.
fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    out.extend_from_slice(b"X'");
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 15)]);
    }
    out.push(b'\'');
}

/// Whether a `--` line comment starts at `i`: MariaDB's rule, the second dash followed by white
/// space, a control character or the end of the text (`--x` and `1--1` are minus signs).
pub fn dash_comment_at(b: &[u8], i: usize) -> bool {
    b.get(i) == Some(&b'-')
        && b.get(i + 1) == Some(&b'-')
        && b.get(i + 2)
            .is_none_or(|&n| n.is_ascii_whitespace() || n < 0x20 || n == 0x7f)
}

/// The index of the `\n` ending the line comment at `start` (kept: it separates tokens), or
/// the end.
pub fn line_end(b: &[u8], start: usize) -> usize {
    b[start..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| start + p)
}

/// The bytes a quoted literal's body (between the quotes `quote`) stands for.
fn unescape(body: &[u8], quote: u8, backslash_escapes: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let b = body[i];
        if b == b'\\' && backslash_escapes && i + 1 < body.len() {
            let e = body[i + 1];
            match e {
                b'0' => out.push(0),
                b'b' => out.push(8),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'Z' => out.push(26),
                b'%' | b'_' => out.extend_from_slice(&[b'\\', e]),
                other => out.push(other),
            }
            i += 2;
        } else if b == quote && body.get(i + 1) == Some(&quote) {
            out.push(quote);
            i += 2;
        } else {
            out.push(b);
            i += 1;
        }
    }
    out
}

/// The statement with the system variables `renames` names (`(from, to)`, lower case)
/// renamed wherever they are read (`@@from`, `@@session.from`, any case), or `None` when
/// none occurs outside strings, quoted identifiers and comments. A renamed variable that is a
/// whole select item without an alias gets its written form as alias, so the column keeps
/// MySQL's label (`@@session.from`).
///
/// Why: MariaDB before 11.1 knows `tx_isolation` / `tx_read_only` only, MySQL 8.0 knows
/// `transaction_isolation` / `transaction_read_only` only, and a driver picks its names by
/// the version the gateway announces, not by the backend behind it.
pub fn rename_system_variables(sql: &str, renames: &[(&str, &str)]) -> Option<String> {
    if !sql.contains("@@") {
        return None;
    }
    let b = sql.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
    // Where the previous significant token ended and whether it was `SELECT` or `,`.
    let mut out = String::with_capacity(sql.len() + 32);
    let mut changed = false;
    let mut item_start = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if let Some(end) = opaque_end(b, i, true) {
            out.push_str(&sql[i..end]);
            if !matches!(c, b'#' | b'-' | b'/') {
                item_start = false;
            }
            i = end;
            continue;
        }
        if c == b'@' && b.get(i + 1) == Some(&b'@') {
            let mut j = i + 2;
            while j < b.len() && (ident(b[j]) || b[j] == b'.') {
                j += 1;
            }
            let written = &sql[i..j];
            let lower = written.to_ascii_lowercase();
            let (scope, name) = match lower[2..].split_once('.') {
                Some((s, n)) => (Some(s), n),
                None => (None, &lower[2..]),
            };
            if let Some((_, to)) = renames.iter().find(|(from, _)| *from == name) {
                out.push_str("@@");
                if let Some(s) = scope {
                    out.push_str(s);
                    out.push('.');
                }
                out.push_str(to);
                let rest = sql[j..].trim_start();
                let next_word = rest
                    .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                    .next()
                    .unwrap_or("");
                let item_end = rest.is_empty()
                    || rest.starts_with(',')
                    || rest.starts_with(';')
                    || ["FROM", "LIMIT"]
                        .iter()
                        .any(|k| next_word.eq_ignore_ascii_case(k));
                if item_start && item_end {
                    out.push_str(" AS `");
                    out.push_str(written);
                    out.push('`');
                }
                changed = true;
            } else {
                out.push_str(written);
            }
            item_start = false;
            i = j;
            continue;
        }
        if c.is_ascii_whitespace() {
            out.push(c as char);
            i += 1;
            continue;
        }
        if ident(c) {
            let mut j = i;
            while j < b.len() && ident(b[j]) {
                j += 1;
            }
            let word = &sql[i..j];
            item_start = word.eq_ignore_ascii_case("SELECT");
            out.push_str(word);
            i = j;
            continue;
        }
        item_start = c == b',';
        let len = sql[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&sql[i..i + len]);
        i += len;
    }
    changed.then_some(out)
}

/// A savepoint name the gateway accepted from a client (`SAVEPOINT name`, module `route`):
/// 1 to 64 ASCII letters, digits, `_` or `$` (not digits only when unquoted), written bare or
/// in backquotes. Anything else is refused: the name is the only text of a client's savepoint
/// statement that reaches a backend, and it reaches it re-quoted by the backend's own rules
/// ([`SavepointName::mysql`], [`SavepointName::postgres`]), never as the client wrote it.
///
/// MySQL compares savepoint names without regard to case: two names are the same savepoint
/// when their [`SavepointName::key`]s are equal, and backends are sent the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavepointName {
    /// The name in lower case: what identifies it and what backends get.
    key: String,
    /// The name as the client wrote it, without its backquotes (for messages).
    written: String,
}

/// Longest savepoint name accepted (MySQL's identifier limit).
const MAX_SAVEPOINT_NAME: usize = 64;

impl SavepointName {
    /// Reads one token of a statement as a savepoint name: a bare identifier, or a backquoted
    /// one (`` ` `` doubled inside, which the allowed characters exclude anyway). `None` for
    /// anything else.
    pub fn parse(token: &str) -> Option<SavepointName> {
        let (inner, quoted) = match token.strip_prefix('`') {
            Some(rest) => (rest.strip_suffix('`')?, true),
            None => (token, false),
        };
        let allowed = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
        let ok = !inner.is_empty()
            && inner.len() <= MAX_SAVEPOINT_NAME
            && inner.bytes().all(allowed)
            && (quoted || !inner.bytes().all(|c| c.is_ascii_digit()));
        ok.then(|| SavepointName {
            key: inner.to_ascii_lowercase(),
            written: inner.to_string(),
        })
    }

    /// The name that identifies the savepoint (lower case).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The name as the client wrote it (without backquotes), for messages.
    pub fn written(&self) -> &str {
        &self.written
    }

    /// The name as a MySQL identifier: `` `key` ``.
    pub fn mysql(&self) -> String {
        format!("`{}`", self.key)
    }

    /// The name as a PostgreSQL identifier: `"key"`.
    pub fn postgres(&self) -> String {
        format!("\"{}\"", self.key)
    }
}

/// The lexing-relevant part of a session's `sql_mode` (MariaDB's `sql_mode` flags).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SqlMode {
    /// `NO_BACKSLASH_ESCAPES`: `\` is an ordinary character inside strings.
    pub no_backslash_escapes: bool,
    /// `ANSI_QUOTES` (also part of `ANSI`, `DB2`, `MSSQL`, `POSTGRESQL`, ...): `"` quotes names.
    pub ansi_quotes: bool,
}

/// Modes that change how MariaDB parses a statement in ways the gateway's parser cannot follow:
/// Oracle's grammar. (`PIPES_AS_CONCAT` is followed: the parser always reads `||` as
/// concatenation, and `||` never hides a table either way.)
const UNFOLLOWED_MODES: &[&str] = &["ORACLE"];

impl SqlMode {
    /// The flags of a server's `@@sql_mode` value (comma-separated names, any case, as
    /// `SELECT @@session.sql_mode` answers it, or as a client wrote it: combination modes such
    /// as `ANSI` count with the flags they stand for).
    ///
    /// Errors: the name of a mode the gateway cannot follow (`ORACLE`).
    pub fn from_server(text: &str) -> Result<SqlMode, String> {
        let mut mode = SqlMode::default();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let name = name.to_ascii_uppercase();
            if let Some(bad) = UNFOLLOWED_MODES.iter().find(|m| **m == name) {
                return Err((*bad).to_string());
            }
            match name.as_str() {
                "NO_BACKSLASH_ESCAPES" => mode.no_backslash_escapes = true,
                // The combination modes that include ANSI_QUOTES, for a value not yet
                // expanded by a server.
                "ANSI_QUOTES" | "ANSI" | "DB2" | "MSSQL" | "POSTGRESQL" | "MAXDB" => {
                    mode.ansi_quotes = true
                }
                _ => {}
            }
        }
        Ok(mode)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn utf8_literals_keep_the_bytes_sent() {
        // The client's bytes read as ISO-8859-1 (one character per byte), and back.
        let decode = |b: &[u8]| b.iter().map(|&c| char::from(c)).collect::<String>();
        let recode = |t: &[u8]| {
            std::str::from_utf8(t)
                .unwrap()
                .chars()
                .map(|c| u8::try_from(u32::from(c)).unwrap())
                .collect::<Vec<u8>>()
        };
        let sent =
            "SELECT _utf8'тест' AS a, _UTF8MB4 \"д\\'\", 'т', `_utf8'т'`, x._utf8, _utf8mb3'abc'";
        let text = decode(sent.as_bytes());
        assert_eq!(
            super::utf8_literals_as_sent(&text, true, &recode).as_deref(),
            Some(
                format!(
                    "SELECT _utf8'тест' AS a, _UTF8MB4 \"д\\'\", {}, {}, x._utf8, _utf8mb3'abc'",
                    decode("'т'".as_bytes()),
                    decode("`_utf8'т'`".as_bytes())
                )
                .as_str()
            )
        );
        // Bytes that are no UTF-8 stay as decoded; nothing to change gives None.
        assert_eq!(
            super::utf8_literals_as_sent("SELECT _utf8'\u{e9}'", true, &recode),
            None
        );
        assert_eq!(
            super::utf8_literals_as_sent("SELECT 'x'", true, &recode),
            None
        );
    }

    use super::{
        SavepointName, SqlMode, binary_literals_as_hex, first_keyword, quoted_end,
        rename_system_variables,
    };

    const NBE: SqlMode = SqlMode {
        no_backslash_escapes: true,
        ansi_quotes: false,
    };
    const ANSI: SqlMode = SqlMode {
        no_backslash_escapes: false,
        ansi_quotes: true,
    };

    #[test]
    fn quotes_end_where_mysql_ends_them() {
        assert_eq!(quoted_end(b"'it''s' x", 0), Some(7));
        assert_eq!(quoted_end(b"'a\\'b' x", 0), Some(6));
        assert_eq!(quoted_end(b"`a\\`x", 0), Some(4));
        assert_eq!(quoted_end(b"'open", 0), None);
    }

    #[test]
    fn binary_literals_become_hex_literals() {
        let hex = |s: &[u8]| binary_literals_as_hex(s, true);
        assert_eq!(hex(b"SELECT 1"), None);
        assert_eq!(
            hex(b"INSERT INTO t VALUES (_binary'a\\0\\'\xff', _BINARY \"''\")").as_deref(),
            Some("INSERT INTO t VALUES (X'610027FF', X'2727')")
        );
        // MariaDB Connector/J's form, with a blank; escapes as MySQL resolves them.
        assert_eq!(
            hex(b"SELECT _binary '\\n\\Z\\%\\q'''").as_deref(),
            Some("SELECT X'0A1A5C257127'")
        );
        // Inside strings, identifiers and comments nothing changes; a word ending in
        // `_binary` is not the introducer.
        assert_eq!(
            hex(b"SELECT '_binary''x', `_binary'`, x_binary, /* _binary'y' */ _binary'z' -- _binary'w'")
                .as_deref(),
            Some("SELECT '_binary''x', `_binary'`, x_binary, /* _binary'y' */ X'7A' -- _binary'w'")
        );
        // Without backslash escapes a backslash is a byte.
        assert_eq!(
            binary_literals_as_hex(b"SELECT _binary'\\0'", false).as_deref(),
            Some("SELECT X'5C30'")
        );
        // A plain string literal that is not UTF-8 (PyMySQL's bytes) is binary too; one that
        // is stays a string.
        assert_eq!(
            hex(b"SELECT _binary'a', '\xff\\'', 'ok'").as_deref(),
            Some("SELECT X'61', X'FF27', 'ok'")
        );
        assert_eq!(hex(b"SELECT '\xfe'").as_deref(), Some("SELECT X'FE'"));
        // Bytes that are not UTF-8 outside a literal, and an unclosed literal: None.
        assert_eq!(hex(b"SELECT _binary'a', `\xff`"), None);
        assert_eq!(hex(b"SELECT _binary'a"), None);
    }

    #[test]
    fn system_variables_are_renamed_where_read() {
        let r = |s: &str| rename_system_variables(s, &[("transaction_isolation", "tx_isolation")]);
        assert_eq!(r("SELECT 1"), None);
        assert_eq!(
            r("SELECT @@session.Transaction_Isolation").as_deref(),
            Some("SELECT @@session.tx_isolation AS `@@session.Transaction_Isolation`")
        );
        assert_eq!(
            r("/* c */SELECT  @@a AS a, @@transaction_isolation AS transaction_isolation, @@b")
                .as_deref(),
            Some("/* c */SELECT  @@a AS a, @@tx_isolation AS transaction_isolation, @@b")
        );
        assert_eq!(
            r("SELECT x FROM t WHERE @@transaction_isolation = 'READ-COMMITTED'").as_deref(),
            Some("SELECT x FROM t WHERE @@tx_isolation = 'READ-COMMITTED'")
        );
        assert_eq!(
            r("SELECT '@@transaction_isolation', `@@transaction_isolation`"),
            None
        );
    }

    #[test]
    fn the_first_keyword_follows_comments() {
        assert_eq!(
            first_keyword("  /* x */ -- y\n# z\nSTART TRANSACTION"),
            "START"
        );
        assert_eq!(first_keyword("commit"), "commit");
        assert_eq!(first_keyword("(SELECT 1)"), "");
        assert_eq!(first_keyword("/* open"), "");
    }

    #[test]
    fn the_binary_rewrite_reads_strings_and_comments_as_mariadb_does() {
        // Under NO_BACKSLASH_ESCAPES a backslash ends nothing: the literal is `x\`, and what
        // follows stays code (a second literal here), as MariaDB reads it.
        assert_eq!(
            binary_literals_as_hex(
                b"SELECT 1 WHERE d = _binary'x\\' AND n = ' OR 1=1 -- '",
                false
            )
            .as_deref(),
            Some("SELECT 1 WHERE d = X'785C' AND n = ' OR 1=1 -- '")
        );
        // `--` followed by a control character starts a comment (MariaDB's rule).
        assert_eq!(
            binary_literals_as_hex(b"SELECT 1 --\x01 _binary'\nAND 0 -- '\n", true),
            None
        );
        // A column or variable named `_binary` is no introducer.
        assert_eq!(
            binary_literals_as_hex(b"SELECT t._binary 'x', @_binary 'y'", true),
            None
        );
    }
    #[test]
    fn charset_literals_carry_the_clients_bytes() {
        // The client's bytes: each character's code point as a byte (a latin1-like recode).
        let recode = |b: &[u8]| {
            std::str::from_utf8(b)
                .unwrap()
                .chars()
                .map(|c| c as u32 as u8)
                .collect::<Vec<u8>>()
        };
        let hex = |s: &str| super::charset_literals_as_hex(s, true, &recode);
        assert_eq!(
            hex("SELECT _koi8r'\u{f0}\u{d2}', _KOI8R \"a\\'b\", _latin2'', x").as_deref(),
            Some("SELECT _koi8r X'F0D2', _KOI8R X'612762', _latin2'', x")
        );
        // Not an introducer: another word, a name after `.` or `@`, a string followed by
        // another (concatenated), quoted names and comments, `_utf8` and `_binary`.
        for same in [
            "SELECT _koi8rx'a', t._koi8r 'a', @_koi8r 'a'",
            "SELECT _latin1'a' 'b'",
            "SELECT `_koi8r'a'`, /* _koi8r'a' */ 1 -- _koi8r'a'\n",
            "SELECT _utf8'a', _binary'a', _utf8mb4'a'",
            // A body of plain ASCII, which reaches the backend the same as written.
            "SELECT _cp866'' LIKE _cp866'' ESCAPE _cp866 0xFF, _latin1 'a b', _koi8r\"x\"",
        ] {
            assert_eq!(hex(same), None, "{same}");
        }
        // Without backslash escapes a backslash is a byte.
        assert_eq!(
            super::charset_literals_as_hex("SELECT _latin1'\\'", false, &recode).as_deref(),
            Some("SELECT _latin1 X'5C'")
        );
    }

    #[test]
    fn savepoint_names_are_identifiers_only() {
        let n = SavepointName::parse("Sa_1$").unwrap();
        assert_eq!((n.key(), n.written()), ("sa_1$", "Sa_1$"));
        assert_eq!(n.mysql(), "`sa_1$`");
        assert_eq!(n.postgres(), "\"sa_1$\"");
        assert_eq!(SavepointName::parse("`sp`").unwrap().key(), "sp");
        assert_eq!(SavepointName::parse("`12`").unwrap().key(), "12");
        assert_eq!(SavepointName::parse("1a").unwrap().key(), "1a");
        for bad in [
            "",
            "``",
            "12",
            "a b",
            "`a b`",
            "a;",
            "a`b",
            "`a``b`",
            "`a",
            "a`",
            "'a'",
            "\"a\"",
            "a-b",
            "é",
            "a/*",
            &"x".repeat(65),
        ] {
            assert_eq!(SavepointName::parse(bad), None, "{bad}");
        }
        assert!(SavepointName::parse(&"x".repeat(64)).is_some());
    }

    #[test]
    fn modes_from_the_server() {
        assert_eq!(
            SqlMode::from_server("STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES").unwrap(),
            NBE
        );
        assert_eq!(SqlMode::from_server("ansi_quotes").unwrap(), ANSI);
        assert_eq!(
            SqlMode::from_server("REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ANSI")
                .unwrap(),
            ANSI
        );
        assert_eq!(
            SqlMode::from_server("PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ORACLE").unwrap_err(),
            "ORACLE"
        );
        assert_eq!(SqlMode::from_server("").unwrap(), SqlMode::default());
    }
}
