//! The tokens of a `SET` statement's canonical text, as the statement's checks read them.

use crate::route::RouteError;

/// A token of a SET statement's canonical text: its kind and byte range. The plain `/* ... */`
/// comments the canonical form keeps are skipped like white space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tok {
    /// A name, keyword or number (letters, digits, `_`, `$`).
    Word,
    /// `'...'` or `"..."`.
    Str,
    /// `` `...` ``.
    Quoted,
    /// `@`.
    At,
    /// `@@`.
    AtAt,
    Dot,
    Comma,
    Open,
    Close,
    /// `=` or `:=`.
    Assign,
    /// Anything else (operators).
    Other,
}

pub(super) fn tokenize(s: &str) -> Result<Vec<(Tok, usize, usize)>, RouteError> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let kind = match c {
            c if c.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            // A plain comment (the canonical form keeps no other kind): it ends at the first
            // `*/`, as for MariaDB.
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = s[i + 2..].find("*/").ok_or_else(|| {
                    RouteError::syntax(format!("unterminated comment in SET at byte {start}"))
                })?;
                i += 2 + end + 2;
                continue;
            }
            b'\'' | b'"' | b'`' => {
                i = crate::sqltext::quoted_end(b, i).ok_or_else(|| {
                    RouteError::syntax(format!("unterminated quote in SET at byte {start}"))
                })?;
                out.push((if c == b'`' { Tok::Quoted } else { Tok::Str }, start, i));
                continue;
            }
            b'@' if b.get(i + 1) == Some(&b'@') => {
                i += 2;
                Tok::AtAt
            }
            b'@' => {
                i += 1;
                Tok::At
            }
            b'.' if !b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i += 1;
                Tok::Dot
            }
            b',' => {
                i += 1;
                Tok::Comma
            }
            b'(' => {
                i += 1;
                Tok::Open
            }
            b')' => {
                i += 1;
                Tok::Close
            }
            b'=' => {
                i += 1;
                Tok::Assign
            }
            b':' if b.get(i + 1) == Some(&b'=') => {
                i += 2;
                Tok::Assign
            }
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c == b'.' || c >= 0x80 => {
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || b[i] == b'_'
                        || b[i] == b'$'
                        || b[i] >= 0x80
                        || (b[i] == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)))
                {
                    i += 1;
                }
                Tok::Word
            }
            _ => {
                i += 1;
                Tok::Other
            }
        };
        out.push((kind, start, i));
    }
    Ok(out)
}
