//! The parser must see the statement's strings, quoted names and comments exactly where MariaDB
//! sees them, or the statement is refused.
//!
//! Why: module [`super::lex`] reads the client's text as MariaDB does and produces the canonical
//! text; every later check (the allow-list, the access check, the rewrites) reads that text
//! through `sqlparser`'s tokenizer. Where the two lexers put a boundary in different places, the
//! gateway checks one statement and the backend runs another. The tokenizer has such places of
//! its own: it reads `B"..."` as one byte-string literal with no backslash escapes where MariaDB
//! reads the name `B` and a string in which `\"` is a quote, so `SELECT B"\" # " , (SELECT ...
//! FROM victim.t)` hid the rest of the line behind a comment from the parser only (attacker round
//! 5). Other prefixes, quote styles and comment forms can differ between its versions.
//!
//! So rather than list the tokenizer's quirks, both readings are compared: the *regions* of the
//! canonical text — each string (from its opening quote to its closing one), each quoted name and
//! each comment, with its kind — as MariaDB's rules find them ([`mariadb_regions`]) and as the
//! tokenizer reports them ([`parser_regions`]). Prefixes (`X'..'`, `N'..'`, `_latin1'..'`) are not
//! part of a region: a region starts at its quote. Any difference refuses the statement (1235),
//! naming where the readings part. Outside the regions both read the same characters as code.
//!
//! Texts without a quote, a comment opener, `$` or `\` have no regions for either reader and are
//! not tokenized here (sysbench's point select with a number takes that path).

use std::ops::Range;

use sqlparser::dialect::MySqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

use super::RouteError;
use super::rewrite::Cursor;

/// What a region of the text is to a reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A string literal (single or double quotes).
    String,
    /// A backquoted name.
    Name,
    /// A comment of any form.
    Comment,
}

/// One region: its byte range in the text (from the opening quote or comment opener to the end
/// of the closing one) and its kind.
type Region = (Range<usize>, Kind);

/// Checks that `sqlparser`'s tokenizer finds the same strings, quoted names and comments in the
/// canonical text `text` as MariaDB does (module docs).
///
/// Errors: 1235 naming the byte where the readings part, when they differ or when the tokenizer
/// cannot read a text that has regions.
pub fn check(text: &str) -> Result<(), RouteError> {
    let b = text.as_bytes();
    if !b
        .iter()
        .any(|c| matches!(c, b'\'' | b'"' | b'`' | b'#' | b'-' | b'/' | b'$' | b'\\'))
    {
        return Ok(());
    }
    let ours = mariadb_regions(text);
    let theirs = parser_regions(text).ok_or_else(|| differ(text, 0))?;
    if ours == theirs {
        return Ok(());
    }
    let at = ours
        .iter()
        .zip(&theirs)
        .find(|(a, b)| a != b)
        .map(|(a, b)| a.0.start.min(b.0.start))
        .or_else(|| ours.get(theirs.len()).map(|r| r.0.start))
        .or_else(|| theirs.get(ours.len()).map(|r| r.0.start))
        .unwrap_or(0);
    Err(differ(text, at))
}

fn differ(text: &str, at: usize) -> RouteError {
    let at = (0..=at.min(text.len()))
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    let rest = &text[at..];
    let excerpt: String = rest.chars().take(40).collect();
    let more = if excerpt.len() < rest.len() {
        "..."
    } else {
        ""
    };
    RouteError::not_supported(format!(
        "the gateway's parser and the server would read the strings, names or comments of this statement differently from byte {at} (write the literal another way): {excerpt}{more}"
    ))
}

/// The regions of `text` by MariaDB's rules for the canonical text: `'` and `"` strings with
/// backslash escapes and doubled quotes (the canonical text has no `ANSI_QUOTES` string and no
/// backslash under `NO_BACKSLASH_ESCAPES`), backquoted names with doubled backquotes, `/* */`
/// comments ending at the first `*/`, `#` and `-- ` comments to the end of the line. An
/// unterminated region runs to the end of the text.
fn mariadb_regions(text: &str) -> Vec<Region> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let (end, kind) = match b[i] {
            q @ (b'\'' | b'"' | b'`') => {
                let escapes = q != b'`';
                let mut j = i + 1;
                loop {
                    match b.get(j) {
                        None => break,
                        Some(b'\\') if escapes => j += 2,
                        Some(&d) if d == q => {
                            if b.get(j + 1) == Some(&q) {
                                j += 2;
                            } else {
                                j += 1;
                                break;
                            }
                        }
                        Some(_) => j += 1,
                    }
                }
                let kind = if q == b'`' { Kind::Name } else { Kind::String };
                (j.min(b.len()), kind)
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = b[i + 2..]
                    .windows(2)
                    .position(|w| w == b"*/")
                    .map_or(b.len(), |p| i + 2 + p + 2);
                (end, Kind::Comment)
            }
            b'#' => (line_end(b, i), Kind::Comment),
            b'-' if b.get(i + 1) == Some(&b'-')
                && b.get(i + 2)
                    .is_none_or(|&n| n.is_ascii_whitespace() || n < 0x20 || n == 0x7f) =>
            {
                (line_end(b, i), Kind::Comment)
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.push((start..end, kind));
        i = end;
    }
    out
}

fn line_end(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |n| i + n)
}

/// The regions of `text` as `sqlparser`'s MySQL tokenizer reads it: comment tokens whole, and
/// every other token holding a quote character from its first quote on (a word's is a quoted
/// name, anything else's a string; a token of the string kinds without a quote, such as a
/// dollar-quoted one, whole). `None` when the tokenizer fails.
fn parser_regions(text: &str) -> Option<Vec<Region>> {
    let tokens = Tokenizer::new(&MySqlDialect {}, text)
        .tokenize_with_location()
        .ok()?;
    let mut out = Vec::new();
    let mut at = Cursor::default();
    for t in tokens {
        if matches!(t.token, Token::EOF) {
            continue;
        }
        let start = at.seek(text, t.span.start)?;
        let end = at.clone().seek(text, t.span.end)?;
        let slice = text.get(start..end)?;
        let quote = slice.find(['\'', '"', '`']).map(|q| start + q);
        let region = match &t.token {
            Token::Whitespace(Whitespace::SingleLineComment { .. })
            | Token::Whitespace(Whitespace::MultiLineComment(_)) => {
                // A line comment's token may or may not take the line break.
                let end = if slice.ends_with('\n') { end - 1 } else { end };
                Some((start..end, Kind::Comment))
            }
            Token::Whitespace(_) => None,
            Token::Word(_) => quote.map(|q| (q..end, Kind::Name)),
            Token::DollarQuotedString(_) => Some((start..end, Kind::String)),
            _ => quote.map(|q| (q..end, Kind::String)),
        };
        out.extend(region);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> bool {
        check(text).is_err_and(|e| e.refusal == crate::route::Refusal::NotSupported)
    }

    #[test]
    fn ordinary_literals_names_and_comments_agree() {
        for ok in [
            "SELECT 1",
            "SELECT 'a', \"b\", `c`, 'it''s', 'a\\'b', \"a\\\"b\", `x``y` FROM t",
            "SELECT X'4142', x'41', N'abc', n'abc', B'0101', _utf8mb4'x', _binary'\\0' FROM t",
            "SELECT /* tag */ id FROM t /* end */",
            "SELECT 'a' 'b', '--', '#', '/*', `#`, '\\\\' FROM t",
            "SELECT id FROM t WHERE v = '中文\\'' AND w LIKE 'a%'",
            "SELECT 1--1",
            "SELECT 5-1, 3 - -2, a/b FROM t",
            "INSERT INTO t (a) VALUES ('x'), ('y\\n')",
            "SELECT 'multi\nline', \"x\" FROM t WHERE a = 'b'\n AND c = 1",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
    }

    /// Attacker round 5: `B"` is one byte-string token to the parser (no escapes), the name
    /// `B` and an escaping string to MariaDB; the parser saw a comment where MariaDB ran code.
    #[test]
    fn a_byte_string_prefix_before_a_double_quote_is_refused() {
        for bad in [
            "SELECT B\"\\\" # \" , (SELECT s FROM victim.t) AS leak FROM (SELECT 1 AS B) AS y",
            "SELECT b\"\\\" -- \" , 1 FROM t",
            "UPDATE p JOIN (SELECT B\"\\\" # \" FROM (SELECT 1 AS B) z) AS d ON 1=1 SET p.s = 1 WHERE \"a\" <> \"\n) # \"",
        ] {
            assert!(refused(bad), "{bad}");
        }
    }

    #[test]
    fn a_comment_only_one_side_sees_is_refused() {
        // No line comments are left in canonical text; a leftover one is a disagreement if
        // the two readers place it differently, and a `#` only MariaDB would read is one.
        assert_eq!(
            mariadb_regions("SELECT 1 # x\n, 2"),
            vec![(9..12, Kind::Comment)]
        );
        assert_eq!(check("SELECT 1 # x\n, 2"), Ok(()));
        // `--x` is a minus sign to MariaDB, and to the tokenizer too.
        assert_eq!(parser_regions("SELECT 1 --x\n, 2").unwrap(), vec![]);
        assert_eq!(check("SELECT 1 --x\n, 2"), Ok(()));
    }

    #[test]
    fn regions_are_compared_with_their_kinds_and_ends() {
        assert_eq!(
            mariadb_regions("SELECT 'a\\'b', `n`, /* c */ 1"),
            vec![
                (7..13, Kind::String),
                (15..18, Kind::Name),
                (20..27, Kind::Comment)
            ]
        );
        assert_eq!(
            parser_regions("SELECT 'a\\'b', `n`, /* c */ 1").unwrap(),
            mariadb_regions("SELECT 'a\\'b', `n`, /* c */ 1")
        );
        assert_eq!(
            parser_regions("SELECT X'41', _latin1'x'").unwrap(),
            vec![(8..12, Kind::String), (21..24, Kind::String)]
        );
    }
}
