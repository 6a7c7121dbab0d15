//! The statement as the backend will read it: comments, version comments and quotes lexed by
//! MariaDB's rules under the session's `sql_mode`, before anything else looks at the text.
//!
//! Why: every later step (keyword scanner, `sqlparser`, the plan cache's literal scanner, the
//! rewrites) lexes with MySQL's default rules, where `\` escapes inside strings, `"` quotes a
//! string and `/*! ... */` is a comment. The backend does not: under `NO_BACKSLASH_ESCAPES`
//! `'x\'` is a whole string, under `ANSI_QUOTES` `"x"` is an identifier, and a version comment's
//! body is SQL it runs. A statement that one side reads differently from the other can hide a
//! second statement, a table or a `UNION` from the gateway's checks. So the router first turns
//! the client's text into its **canonical form**, which every later step and the backend read the
//! same way whatever the session's mode:
//!
//! * line comments (`# ...`, `-- ...`) and optimizer hints (`/*+ */`) become one space; plain
//!   `/* */` comments are kept (MariaDB and the parser both end them at the first `*/`);
//! * a version comment (`/*!NNNNN ... */`) whose body every supported backend runs becomes its
//!   body; one that no backend runs (a version above any release) becomes one space; one whose
//!   fate depends on the backend's version, and every MariaDB-only `/*M! */`, is refused;
//! * under `ANSI_QUOTES`, `"name"` becomes `` `name` `` (both modes read a backquoted name alike);
//! * under `NO_BACKSLASH_ESCAPES`, a string that holds a backslash is refused (no spelling of it
//!   reads the same in both modes); other strings are kept as written.
//!
//! The canonical text is what manx parses, routes and sends: what was checked is what runs.

use std::borrow::Cow;

use super::RouteError;

pub use crate::sqltext::SqlMode;

/// Version comments with a version up to this one are run by every backend manx supports
/// (MySQL 5.7 and later, MariaDB 10.0 and later): mysqldump's `/*!40101 */`, `/*!50503 */`.
pub const VERSION_RUN_BY_ALL: u32 = 50700;

/// Version comments with a version above this one are run by no released server: MariaDB's
/// `/*M!999999\- enable the sandbox mode */` is a comment everywhere.
pub const VERSION_RUN_BY_NONE: u32 = 199_999;

/// The canonical form of one statement (module docs) and what the lexer saw on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canonical<'a> {
    pub text: Cow<'a, str>,
    /// A `;` outside strings and comments (after a trailing one was trimmed): more than one
    /// statement.
    pub separator: bool,
}

fn refuse(message: String) -> RouteError {
    RouteError::not_supported(message)
}

/// The canonical form of `sql` under `mode` (module docs).
///
/// Errors: 1064 for an unterminated string, name or comment, a NUL byte outside a string, or a
/// version comment opened inside a version comment; 1235 for a version comment whose fate depends on
/// the backend's version or a MariaDB-only one, and under `NO_BACKSLASH_ESCAPES` for a string
/// holding a backslash. Each message names what it refuses.
///
/// The canonical text is also checked to read the same to the gateway's parser: its strings,
/// quoted names and comments where MariaDB has them ([`super::boundaries`]; 1235 otherwise).
pub fn canonical(sql: &str, mode: SqlMode) -> Result<Canonical<'_>, RouteError> {
    let canonical = lex(sql, mode)?;
    super::boundaries::check(&canonical.text)?;
    Ok(canonical)
}

/// [`canonical`] without the parser's agreement.
fn lex(sql: &str, mode: SqlMode) -> Result<Canonical<'_>, RouteError> {
    let b = sql.as_bytes();
    // Fast path: no quote, comment, separator or NUL: nothing to read differently.
    let special =
        |c: &u8| matches!(c, b'/' | b'#' | b'-' | b';' | b'\'' | b'"' | b'`' | 0) || *c >= 0x80;
    if !b.iter().any(special) {
        return Ok(Canonical {
            text: Cow::Borrowed(sql),
            separator: false,
        });
    }
    // Allocated at the first change: a statement with quotes but no comment stays borrowed.
    let mut out = String::new();
    let mut changed = false;
    let mut separator = false;
    // The byte offset where the version comment we are inside opened, if any.
    let mut in_version: Option<usize> = None;
    let mut copied = 0usize; // bytes of `sql` up to here are in `out` (or dropped)
    let mut i = 0usize;
    let unterminated = |what: &str, at: usize| {
        RouteError::syntax(format!(
            "unterminated {what} starting at byte {at}: {}",
            excerpt(sql, at)
        ))
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'"' | b'`' => {
                let quote = c;
                let identifier = quote == b'`' || (quote == b'"' && mode.ansi_quotes);
                let escapes = !identifier && !mode.no_backslash_escapes;
                let start = i;
                let mut j = i + 1;
                let mut has_backslash = false;
                loop {
                    let Some(&d) = b.get(j) else {
                        return Err(unterminated(
                            if identifier { "quoted name" } else { "string" },
                            start,
                        ));
                    };
                    if d == b'\\' {
                        has_backslash = true;
                        if escapes {
                            j += 2;
                            continue;
                        }
                    }
                    if d == quote {
                        if b.get(j + 1) == Some(&quote) {
                            j += 2;
                            continue;
                        }
                        break;
                    }
                    j += 1;
                }
                let end = j + 1;
                if !identifier && has_backslash && mode.no_backslash_escapes {
                    return Err(refuse(format!(
                        "a string holding a backslash under sql_mode NO_BACKSLASH_ESCAPES is not supported by the gateway (write it as X'...'): {}",
                        excerpt(sql, start)
                    )));
                }
                if quote == b'"' && identifier {
                    out.push_str(&sql[copied..start]);
                    out.push('`');
                    let inner = sql[start + 1..end - 1].replace("\"\"", "\"");
                    out.push_str(&inner.replace('`', "``"));
                    out.push('`');
                    copied = end;
                    changed = true;
                }
                i = end;
                continue;
            }
            b'#' => {
                let end = line_end(b, i);
                out.push_str(&sql[copied..i]);
                out.push(' ');
                copied = end;
                changed = true;
                i = end;
                continue;
            }
            b'-' if dash_comment_at(b, i) => {
                let end = line_end(b, i);
                out.push_str(&sql[copied..i]);
                out.push(' ');
                copied = end;
                changed = true;
                i = end;
                continue;
            }
            b'*' if in_version.is_some() && b.get(i + 1) == Some(&b'/') => {
                out.push_str(&sql[copied..i]);
                out.push(' ');
                copied = i + 2;
                in_version = None;
                i += 2;
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mariadb_only =
                    matches!(b.get(i + 2), Some(b'M' | b'm')) && b.get(i + 3) == Some(&b'!');
                let executable = b.get(i + 2) == Some(&b'!') || mariadb_only;
                // Inside a version comment MariaDB reads a plain comment as it does outside
                // one (to its first `*/`, `sql_lex.cc`, `consume_comment`), and then goes on
                // in the version comment, whose own `*/` comes later: handled below as outside.
                // A version comment inside a version comment is refused (MariaDB's reading of
                // it differs between versions).
                if let Some(open) = in_version
                    && executable
                {
                    return Err(RouteError::syntax(format!(
                        "a version comment inside a version comment is not supported: {}",
                        excerpt(sql, open)
                    )));
                }
                if !executable {
                    let end = find(b, i + 2, b"*/").ok_or_else(|| unterminated("comment", i))?;
                    if b.get(i + 2) != Some(&b'+') {
                        // A plain comment ends at its first `*/` for MariaDB and the parser
                        // alike (neither nests them): kept as written, since applications tag
                        // their statements with comments.
                        i = end + 2;
                        continue;
                    }
                    // `/*+ ... */`: optimizer hints to MySQL 8, a comment to MariaDB: dropped.
                    out.push_str(&sql[copied..i]);
                    out.push(' ');
                    changed = true;
                    copied = end + 2;
                    i = end + 2;
                    continue;
                }
                out.push_str(&sql[copied..i]);
                out.push(' ');
                changed = true;
                // MariaDB reads six digits when there are six, else five, else none.
                let mut body = i + if mariadb_only { 4 } else { 3 };
                let digits = b[body..]
                    .iter()
                    .take(6)
                    .take_while(|d| d.is_ascii_digit())
                    .count();
                let version = match digits {
                    5 | 6 => sql[body..body + digits].parse::<u32>().ok(),
                    _ => None,
                };
                if digits >= 5 {
                    body += digits;
                }
                match version {
                    Some(v) if v > VERSION_RUN_BY_NONE => {
                        // A comment on every server: skipped to its end like a plain one.
                        let end = find(b, body, b"*/").ok_or_else(|| unterminated("comment", i))?;
                        copied = end + 2;
                        i = end + 2;
                        continue;
                    }
                    _ if mariadb_only => {
                        return Err(refuse(format!(
                            "MariaDB executable comments (/*M!...*/) are not supported: a MySQL backend would not run what a MariaDB one runs: {}",
                            excerpt(sql, i)
                        )));
                    }
                    Some(v) if v > VERSION_RUN_BY_ALL => {
                        return Err(refuse(format!(
                            "version comment /*!{v} ...*/ is not supported: whether a backend runs it depends on its version (the gateway expands those up to {VERSION_RUN_BY_ALL}): {}",
                            excerpt(sql, i)
                        )));
                    }
                    _ => {
                        if digits != 0 && digits < 5 {
                            // `/*!123 x */`: MariaDB runs the body including the digits.
                            body = i + 3;
                        }
                        in_version = Some(i);
                        copied = body;
                        i = body;
                        continue;
                    }
                }
            }
            b';' => {
                separator = true;
            }
            0 => {
                return Err(RouteError::syntax(format!(
                    "a NUL byte outside a string is not allowed: {}",
                    excerpt(sql, i)
                )));
            }
            c if c >= 0x80 => {
                // Outside quotes MariaDB reads a non-ASCII character as part of a name; the
                // parser reads Unicode white space (U+00A0, U+2028, U+3000, ...) as white space,
                // and after `--` as the start of a comment. Refused: one statement, two readings.
                let ch = sql[i..].chars().next().unwrap_or(' ');
                if ch.is_whitespace() {
                    return Err(RouteError::syntax(format!(
                        "the Unicode white space U+{:04X} outside quotes is not allowed (MariaDB reads it as part of a name): {}",
                        ch as u32,
                        excerpt(sql, i.saturating_sub(8))
                    )));
                }
                i += ch.len_utf8();
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if let Some(open) = in_version {
        return Err(unterminated("version comment", open));
    }
    if !changed {
        return Ok(Canonical {
            text: Cow::Borrowed(sql),
            separator,
        });
    }
    out.push_str(&sql[copied..]);
    Ok(Canonical {
        text: Cow::Owned(out),
        separator,
    })
}

use crate::sqltext::{dash_comment_at, line_end};

fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

/// Up to 40 characters of `sql` from byte `at`, for messages.
fn excerpt(sql: &str, at: usize) -> String {
    let rest = sql.get(at..).unwrap_or("");
    let cut: String = rest.chars().take(40).collect();
    if cut.len() < rest.len() {
        format!("{cut}...")
    } else {
        cut
    }
}

/// The statements of a multi-statement text (`CLIENT_MULTI_STATEMENTS`) as the backend splits
/// them under `mode`: cut at each `;` outside strings, names and comments (version comments'
/// bodies are SQL: a `;` inside one separates too), each piece without its `;`. Pieces after the
/// last statement that hold only white space and comments are dropped; empty pieces between
/// statements are kept (the server answers them `Query was empty`). An unterminated string or
/// comment ends the last piece (its statement then fails to lex).
pub fn split_statements(s: &str, mode: SqlMode) -> Vec<&str> {
    let b = s.as_bytes();
    let mut cuts = Vec::new();
    let mut i = 0;
    let mut in_version = false;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"' | b'`') => {
                let identifier = q == b'`' || (q == b'"' && mode.ansi_quotes);
                let escapes = !identifier && !mode.no_backslash_escapes;
                let mut j = i + 1;
                while j < b.len() {
                    if b[j] == b'\\' && escapes {
                        j += 2;
                        continue;
                    }
                    if b[j] == q {
                        if b.get(j + 1) == Some(&q) {
                            j += 2;
                            continue;
                        }
                        break;
                    }
                    j += 1;
                }
                i = j + 1;
                continue;
            }
            b'#' => i = line_end(b, i),
            b'-' if dash_comment_at(b, i) => i = line_end(b, i),
            b'*' if in_version && b.get(i + 1) == Some(&b'/') => {
                in_version = false;
                i += 2;
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let executable = b.get(i + 2) == Some(&b'!')
                    || (matches!(b.get(i + 2), Some(b'M' | b'm')) && b.get(i + 3) == Some(&b'!'));
                if executable && !in_version {
                    in_version = true;
                    i += 3;
                    continue;
                }
                if executable {
                    // A version comment inside one: [`canonical`] refuses it.
                    i += 3;
                    continue;
                }
                // A plain comment, inside a version comment too, ends at its first `*/`.
                match find(b, i + 2, b"*/") {
                    Some(end) => i = end + 2,
                    None => i = b.len(),
                }
                continue;
            }
            b';' => cuts.push(i),
            _ => {}
        }
        i += 1;
    }
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for cut in cuts {
        out.push(&s[start..cut]);
        start = cut + 1;
    }
    out.push(&s[start..]);
    while out.len() > 1
        && out
            .last()
            .is_some_and(|p| super::scan::strip(p).is_empty() || only_comments(p, mode))
    {
        out.pop();
    }
    out
}

/// Whether `p` holds nothing but white space and plain comments.
fn only_comments(p: &str, mode: SqlMode) -> bool {
    canonical(p, mode).is_ok_and(|c| super::scan::strip(&c.text).is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::Refusal;

    fn canon(sql: &str, mode: SqlMode) -> String {
        canonical(sql, mode).unwrap().text.into_owned()
    }

    const NBE: SqlMode = SqlMode {
        no_backslash_escapes: true,
        ansi_quotes: false,
    };
    const ANSI: SqlMode = SqlMode {
        no_backslash_escapes: false,
        ansi_quotes: true,
    };

    #[test]
    fn non_ascii_names_and_strings_stay() {
        let d = SqlMode::default();
        assert_eq!(
            canon("SELECT `名前`, '中''x' FROM t", d),
            "SELECT `名前`, '中''x' FROM t"
        );
        assert_eq!(canon("SELECT 名前 FROM t", d), "SELECT 名前 FROM t");
        assert_eq!(canon("SELECT '\u{a0}' FROM t", d), "SELECT '\u{a0}' FROM t");
    }

    #[test]
    fn plain_text_is_borrowed() {
        let c = canonical("SELECT c FROM sbtest1 WHERE id=5", SqlMode::default()).unwrap();
        assert!(matches!(c.text, Cow::Borrowed(_)));
        assert!(!c.separator);
    }

    #[test]
    fn comments_become_spaces_and_version_comments_their_body() {
        let d = SqlMode::default();
        assert_eq!(canon("SELECT 1 /* x */ + 2", d), "SELECT 1 /* x */ + 2");
        assert_eq!(
            canon("SELECT 1 /* x /*! + 1 */ + 2", d),
            "SELECT 1 /* x /*! + 1 */ + 2"
        );
        assert_eq!(canon("SELECT /*+ BKA(t) */ 1", d), "SELECT   1");
        assert_eq!(canon("SELECT 1 # x\n+ 2", d), "SELECT 1  \n+ 2");
        assert_eq!(canon("SELECT 1 -- x\n+ 2", d), "SELECT 1  \n+ 2");
        assert_eq!(canon("SELECT 1 --x", d), "SELECT 1 --x");
        assert_eq!(canon("SELECT 1 --", d), "SELECT 1  ");
        assert_eq!(
            canon("SELECT * FROM t /*!40101 UNION SELECT 1 */", d),
            "SELECT * FROM t   UNION SELECT 1  "
        );
        assert_eq!(canon("SELECT 1 /*! + 1*/", d), "SELECT 1   + 1 ");
        assert_eq!(canon("SELECT 1 /*!999999 + 1*/", d), "SELECT 1  ");
        assert_eq!(canon("SELECT '/* not */' x", d), "SELECT '/* not */' x");
        assert!(matches!(
            canonical("SELECT 1 /* tag */", d).unwrap().text,
            Cow::Borrowed(_)
        ));
        assert_eq!(
            canon("SELECT 1 /*!40101 , '*/' */", d),
            "SELECT 1   , '*/'  "
        );
        // A plain comment inside a version comment ends at its first `*/` (MariaDB's
        // `consume_comment`); the version comment goes on to its own `*/`.
        assert_eq!(
            canon("SELECT 1 /*! + /* x */ 1 */", d),
            "SELECT 1   + /* x */ 1  "
        );
        assert_eq!(
            canon("SELECT 1 /*!40101 , 2 /* x /* y */ , 3 */, 4", d),
            "SELECT 1   , 2 /* x /* y */ , 3  , 4"
        );
        assert_eq!(
            canon("SELECT 1 /*!40101 , 2 /*/ , 3 */ , 4 */", d),
            "SELECT 1   , 2 /*/ , 3 */ , 4  "
        );
        assert_eq!(
            canon("SELECT 1 /*!40101 + /*+ hint */ 1 */", d),
            "SELECT 1   +   1  "
        );
    }

    #[test]
    fn version_comments_the_gateway_cannot_decide_are_refused() {
        let d = SqlMode::default();
        for sql in [
            "SELECT 1 /*!80000 + 1 */",
            "SELECT 1 /*!100100 + 1 */",
            "SELECT 1 /*M!100100 + 1 */",
            "SELECT 1 /*m! + 1 */",
        ] {
            assert_eq!(
                canonical(sql, d).unwrap_err().refusal,
                Refusal::NotSupported,
                "{sql}"
            );
        }
        for sql in [
            "SELECT 1 AS `\u{a0}` FROM t HAVING 1 --\u{a0}UNION SELECT 2",
            "SELECT\u{3000}1",
            "SELECT 1 --\u{2028}x",
            "SELECT 1 /*! + /*! x */ 1 */",
            "SELECT 1 /*! + /*!40101 x */ 1 */",
            "SELECT 1 /*! + /*M!100100 x */ 1 */",
            "SELECT 1 /*! + /* x */ 1",
            "SELECT 1 /*! + /* x 1 */",
            "SELECT 1 /* open",
            "SELECT 'open",
            "SELECT 1 /*! + 1",
            "SELECT 1 \0",
        ] {
            assert_eq!(
                canonical(sql, d).unwrap_err().refusal,
                Refusal::Routing,
                "{sql}"
            );
        }
    }

    #[test]
    fn a_statement_in_a_version_comment_is_its_body() {
        let d = SqlMode::default();
        let c = canonical("/*!40101 SET NAMES utf8 */", d).unwrap();
        assert_eq!(c.text.trim(), "SET NAMES utf8");
    }

    #[test]
    fn strings_follow_the_backslash_mode() {
        let d = SqlMode::default();
        // Default mode: the backslash escapes the quote; the `;` is inside the string.
        let c = canonical("SELECT 'a\\'; DELETE FROM t; -- '", d).unwrap();
        assert!(!c.separator);
        // NO_BACKSLASH_ESCAPES: refused, whatever follows.
        assert_eq!(
            canonical("SELECT 'a\\' UNION SELECT 1 -- '", NBE)
                .unwrap_err()
                .refusal,
            Refusal::NotSupported
        );
        assert_eq!(canon("SELECT 'it''s'", NBE), "SELECT 'it''s'");
        let c = canonical("SELECT 'a'; DELETE FROM t", NBE).unwrap();
        assert!(c.separator);
    }

    #[test]
    fn ansi_quotes_become_backquotes() {
        assert_eq!(
            canon("SELECT \"a\"\"b`c\" FROM \"t\"", ANSI),
            "SELECT `a\"b``c` FROM `t`"
        );
        assert_eq!(
            canon("SELECT \"a\" FROM t", SqlMode::default()),
            "SELECT \"a\" FROM t"
        );
    }

    #[test]
    fn statements_split_as_the_backend_splits_them() {
        let d = SqlMode::default();
        assert_eq!(
            split_statements("SELECT 1; SELECT 2;", d),
            ["SELECT 1", " SELECT 2"]
        );
        assert_eq!(split_statements("SELECT 'a;b'", d), ["SELECT 'a;b'"]);
        assert_eq!(split_statements("SELECT 'a\\';b'", d), ["SELECT 'a\\';b'"]);
        assert_eq!(
            split_statements("SELECT 'a\\';b'", NBE),
            ["SELECT 'a\\'", "b'"]
        );
        assert_eq!(
            split_statements("SELECT 1 /*!40101 ; DELETE FROM t */", d),
            ["SELECT 1 /*!40101 ", " DELETE FROM t */"]
        );
        // A plain comment inside a version comment hides its `;` and `*/` as MariaDB's does.
        assert_eq!(
            split_statements("SELECT 1 /*!40101 /* ; */ , 2 */; SELECT 3", d),
            ["SELECT 1 /*!40101 /* ; */ , 2 */", " SELECT 3"]
        );
        assert_eq!(split_statements("SELECT 1; -- end", d), ["SELECT 1"]);
        assert_eq!(
            split_statements(
                "USE a; SELECT ';', `x;y` /* ; */ FROM t -- ;\n; SELECT 'it''s;' ;  ",
                d
            ),
            [
                "USE a",
                " SELECT ';', `x;y` /* ; */ FROM t -- ;\n",
                " SELECT 'it''s;' "
            ]
        );
        assert_eq!(split_statements("SELECT 1; /* c */ ", d), ["SELECT 1"]);
        assert_eq!(
            split_statements("SELECT 1;;SELECT 2", d),
            ["SELECT 1", "", "SELECT 2"]
        );
    }

    #[test]
    fn separators_outside_quotes_and_comments() {
        let d = SqlMode::default();
        let sep = |s: &str| canonical(s, d).unwrap().separator;
        assert!(sep("SHOW TABLES; DELETE FROM t"));
        assert!(sep("DESC t ;DELETE FROM t"));
        assert!(!sep("SELECT ';' FROM t WHERE a = 'x\\';' -- ;\n"));
        assert!(!sep("SELECT 1 /* ; */ FROM t"));
        assert!(!sep("SELECT `a;b` FROM t"));
        assert!(sep("SELECT 1 /*!40101 ; DELETE FROM t */"));
    }
}
