//! A keyword scanner for the statements answered without the SQL parser: session commands
//! (`SET`, `USE`, `BEGIN`, `COMMIT`, ...) and `SHOW`/`DESC`, whose MySQL forms the parser does not
//! all know. Like Mycat's `ServerParse` it skips leading white space and comments.

/// The statement after leading white space, `-- `/`#` line comments and `/* */` comments (but not
/// `/*!` version comments, which carry SQL), with one trailing `;` and white space removed.
pub fn strip(sql: &str) -> &str {
    let mut s = sql.trim_start();
    loop {
        if s.starts_with("/*") && !s.starts_with("/*!") {
            match s.find("*/") {
                Some(end) => s = s[end + 2..].trim_start(),
                None => return "",
            }
        } else if s.starts_with("-- ")
            || s.starts_with("--\t")
            || s.starts_with("--\n")
            || s.starts_with('#')
        {
            match s.find('\n') {
                Some(end) => s = s[end + 1..].trim_start(),
                None => return "",
            }
        } else {
            break;
        }
    }
    let s = s.trim_end();
    s.strip_suffix(';').map(str::trim_end).unwrap_or(s)
}

/// The words of a statement, split on white space (quotes are not understood: callers use this
/// only to recognise leading keywords).
pub fn words(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}

/// The first word of a statement, cut at the first comment marker (`/*`, `#`, `--`) it holds,
/// in upper case: `COMMIT/*x*/` gives `COMMIT`. `None` when the statement is empty or opens with
/// a marker. The same as the first of [`words_before_comment`], without splitting the rest.
pub fn first_word_before_comment(s: &str) -> Option<String> {
    let t = s.trim_start();
    let word = &t[..t.find(char::is_whitespace).unwrap_or(t.len())];
    let b = word.as_bytes();
    let cut = (0..b.len())
        .find(|&i| b[i] == b'#' || matches!(&b[i..], [b'/', b'*', ..] | [b'-', b'-', ..]))
        .unwrap_or(b.len());
    (cut > 0).then(|| word[..cut].to_ascii_uppercase())
}

pub use crate::sqltext::contains_ignore_ascii_case;

/// `true` when `word` equals `keyword` ignoring ASCII case.
pub fn is(word: Option<&&str>, keyword: &str) -> bool {
    word.is_some_and(|w| w.eq_ignore_ascii_case(keyword))
}

/// Removes one pair of backquotes or quotes around an identifier or string.
pub fn unquote(s: &str) -> &str {
    for q in ['`', '\'', '"'] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
}

/// Splits `a=1, b='x,y'` at top-level commas (outside quotes and parentheses).
pub fn split_assignments(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match quote {
            Some(_) if c == '\\' => {
                chars.next();
            }
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '\'' | '"' | '`' => quote = Some(c),
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(s[start..i].trim());
                    start = i + 1;
                }
                _ => {}
            },
        }
    }
    out.push(s[start..].trim());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_comments_and_semicolon() {
        assert_eq!(strip("  /* a */ -- b\n SELECT 1 ; "), "SELECT 1");
        assert_eq!(strip("# x\nshow tables;"), "show tables");
        assert_eq!(
            strip("/*!40101 SET NAMES utf8 */;"),
            "/*!40101 SET NAMES utf8 */"
        );
        assert_eq!(strip("/* unterminated"), "");
    }

    #[test]
    fn splits_assignments() {
        assert_eq!(
            split_assignments("autocommit=1, sql_mode='A,B', x=f(1,2)"),
            ["autocommit=1", "sql_mode='A,B'", "x=f(1,2)"]
        );
    }
}

/// A Mycat annotation at the start of the statement (`/*!mycat:...*/`, `/*#mycat:...*/`): the
/// comment's text (to its first `*/`, or to the end when unterminated); `None` for other
/// comments, `/*balance*/` included.
pub fn mycat_hint(sql: &str) -> Option<&str> {
    let s = sql.trim_start();
    let body = s.strip_prefix("/*")?;
    // Any spelling Mycat's scanner accepts: `/*!mycat:`, `/*#mycat:`, `/*mycat:`, `/** mycat:`,
    // with white space anywhere before the keyword.
    let head: String = body
        .chars()
        .take(64)
        .filter(|c| !c.is_whitespace() && !matches!(c, '*' | '!' | '#'))
        .take(6)
        .collect::<String>()
        .to_ascii_lowercase();
    if head == "mycat:" {
        let end = s.find("*/").map_or(s.len(), |i| i + 2);
        return Some(&s[..end]);
    }
    None
}

/// A parsed Mycat annotation (SPEC §6.1, 1.6.7 form: the whole body is one `type=value` pair).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation<'a> {
    /// The comment as written (`/*!mycat:dataNode=dn1*/`), for messages.
    pub text: &'a str,
    /// The hint type, trimmed and lower-cased (`datanode`, `db_type`, `sql`, ...).
    pub kind: String,
    /// The value, trimmed, one pair of surrounding single quotes removed.
    pub value: &'a str,
    /// The real statement: everything after the comment, trimmed.
    pub statement: &'a str,
}

/// Parses the Mycat annotation at the start of `sql`; `None` when there is none.
///
/// Errors (Mycat's 1064 cases): the comment is not closed, its body has no `type=value` pair,
/// or the value is empty.
pub fn annotation(sql: &str) -> Option<Result<Annotation<'_>, String>> {
    let text = mycat_hint(sql)?;
    let shape = || {
        format!(
            "comment in sql must meet :/*!mycat:type=value*/ or /*#mycat:type=value*/ or /*mycat:type=value*/: {text}"
        )
    };
    let Some(inner) = text.strip_suffix("*/").filter(|_| text.len() >= 4) else {
        return Some(Err(shape()));
    };
    let Some(colon) = inner.find(':') else {
        return Some(Err(shape()));
    };
    let body = inner[colon + 1..].trim();
    let eq = match body.find('=') {
        Some(i) if i > 0 => i,
        _ => return Some(Err(shape())),
    };
    let kind = body[..eq].trim().to_ascii_lowercase();
    let value = body[eq + 1..].trim();
    let value = value
        .strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .unwrap_or(value);
    if value.is_empty() || kind.is_empty() {
        return Some(Err(shape()));
    }
    let rest = &sql.trim_start()[text.len()..];
    Some(Ok(Annotation {
        text,
        kind,
        value,
        statement: rest.trim(),
    }))
}

/// What one pass over a statement found outside quotes and (plain) comments: the two checks
/// every routed statement gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Markers {
    /// A MariaDB executable comment (`/*M!...*/`): the backend runs its content, but the SQL
    /// parser sees a comment, so routing would ignore it.
    pub mariadb_comment: bool,
    /// A `;`, which separates statements.
    pub separator: bool,
}

/// The [`Markers`] of `s`, in one pass.
pub fn markers(s: &str) -> Markers {
    let mut m = Markers::default();
    each_outside_quotes(s, |_, rest| {
        match rest.as_bytes() {
            [b';', ..] => m.separator = true,
            [b'/', b'*', b'M' | b'm', b'!', ..] => m.mariadb_comment = true,
            _ => {}
        }
        m.mariadb_comment && m.separator
    });
    m
}

/// The statements of a multi-statement text (CLIENT_MULTI_STATEMENTS): `s` cut at each `;`
/// outside quotes, backquotes and comments, each piece without its `;`. Pieces after the last
/// statement holding only white space and comments are dropped (`SELECT 1;` is one statement);
/// empty pieces between statements are kept (the server answers them `Query was empty`).
pub fn split_statements(s: &str) -> Vec<&str> {
    let mut cuts = Vec::new();
    each_outside_quotes(s, |i, rest| {
        if rest.starts_with(';') {
            cuts.push(i);
        }
        false
    });
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for cut in cuts {
        out.push(&s[start..cut]);
        start = cut + 1;
    }
    out.push(&s[start..]);
    while out.len() > 1 && out.last().is_some_and(|p| strip(p).is_empty()) {
        out.pop();
    }
    out
}

/// Calls `f` with the byte offset and the rest of `s` at each position outside quotes and
/// (plain) comments, until it returns `true`.
fn each_outside_quotes(s: &str, mut f: impl FnMut(usize, &str) -> bool) {
    let b = s.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) => {
                if c == b'\\' && q != b'`' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None => {
                if s.is_char_boundary(i) && f(i, &s[i..]) {
                    return;
                }
                match c {
                    b'\'' | b'"' | b'`' => quote = Some(c),
                    b'#' => match s[i..].find('\n') {
                        Some(n) => i += n,
                        None => return,
                    },
                    b'-' if s[i..].starts_with("-- ") || s[i..].starts_with("--\t") => {
                        match s[i..].find('\n') {
                            Some(n) => i += n,
                            None => return,
                        }
                    }
                    b'/' if s[i..].starts_with("/*")
                        && !s[i..].starts_with("/*!")
                        && !s[i..].starts_with("/*M!")
                        && !s[i..].starts_with("/*m!") =>
                    {
                        match s[i + 2..].find("*/") {
                            Some(n) => i += n + 3,
                            None => return,
                        }
                    }
                    _ => {}
                }
            }
        }
        i += 1;
    }
}

/// The words of a statement up to the first comment (for keyword-only statements such as
/// `COMMIT /* done */`).
pub fn words_before_comment(s: &str) -> Vec<String> {
    let end = ["/*", "#", "--"]
        .iter()
        .filter_map(|m| s.find(m))
        .min()
        .unwrap_or(s.len());
    s[..end]
        .split_whitespace()
        .map(|w| w.to_ascii_uppercase())
        .collect()
}

#[cfg(test)]
mod more_tests {
    use super::*;

    #[test]
    fn one_pass_markers_and_first_words() {
        for (s, mariadb_comment, separator) in [
            ("SELECT 1", false, false),
            ("SELECT 1; SELECT 2", false, true),
            ("SELECT /*M!100000 1 */", true, false),
            ("SELECT ';' /*m! x */ ; 2", true, true),
            ("SELECT '/*M!' FROM t", false, false),
            ("SELECT `;` -- ;\n", false, false),
            ("SELECT 1 /* ; /*M! */ FROM t", false, false),
            ("SELECT /*M! ; */ 1", true, true),
        ] {
            assert_eq!(
                markers(s),
                Markers {
                    mariadb_comment,
                    separator
                },
                "{s}"
            );
        }
        for s in [
            "commit",
            "  COMMIT/*x*/",
            "rollback work -- undo",
            "--5",
            "/* c */ SELECT",
            "",
            "   ",
            "sel#ect 1",
            "\u{3000}use db",
        ] {
            assert_eq!(
                first_word_before_comment(s),
                words_before_comment(s).into_iter().next(),
                "{s}"
            );
        }
        assert!(contains_ignore_ascii_case(
            "select next value for MycatSeq_x",
            "MYCATSEQ_"
        ));
        assert!(contains_ignore_ascii_case("x", ""));
        assert!(!contains_ignore_ascii_case("mycatse", "mycatseq_"));
        assert!(!contains_ignore_ascii_case(
            "SELECT c FROM t",
            "last_insert_id"
        ));
    }

    #[test]
    fn separators_hints_and_words() {
        let has_statement_separator = |s: &str| markers(s).separator;
        assert!(has_statement_separator("SHOW TABLES; DELETE FROM t"));
        assert!(has_statement_separator("DESC t ;DELETE FROM t"));
        assert!(!has_statement_separator(
            "SELECT ';' FROM t WHERE a = 'x\\';' -- ;\n"
        ));
        assert!(!has_statement_separator("SELECT 1 /* ; */ FROM t"));
        assert!(!has_statement_separator("SELECT `a;b` FROM t"));
        assert_eq!(
            split_statements("USE a; SELECT ';', `x;y` /* ; */ FROM t -- ;\n; SELECT 'it''s;' ;  "),
            [
                "USE a",
                " SELECT ';', `x;y` /* ; */ FROM t -- ;\n",
                " SELECT 'it''s;' "
            ]
        );
        assert_eq!(split_statements("SELECT 1; /* c */ "), ["SELECT 1"]);
        assert_eq!(split_statements("SELECT 1"), ["SELECT 1"]);
        assert_eq!(
            split_statements("SELECT 1;;SELECT 2"),
            ["SELECT 1", "", "SELECT 2"]
        );
        assert_eq!(
            split_statements("SELECT 'a\\';' ; SELECT 2"),
            ["SELECT 'a\\';' ", " SELECT 2"]
        );
        assert_eq!(
            mycat_hint("/*!mycat:dataNode=dn1*/ select 1"),
            Some("/*!mycat:dataNode=dn1*/")
        );
        assert_eq!(
            mycat_hint("/* #mycat:db_type=master */ select 1"),
            Some("/* #mycat:db_type=master */")
        );
        assert_eq!(mycat_hint("/*balance*/ select 1"), None);
        let a = annotation(" /*!mycat: DataNode = 'dn1' */ select 1 ")
            .unwrap()
            .unwrap();
        assert_eq!(
            (a.kind.as_str(), a.value, a.statement),
            ("datanode", "dn1", "select 1")
        );
        let a = annotation("/*#mycat:sql=select * from t where id = 1, 2*/ call p()")
            .unwrap()
            .unwrap();
        assert_eq!(
            (a.kind.as_str(), a.value, a.statement),
            ("sql", "select * from t where id = 1, 2", "call p()")
        );
        assert!(annotation("/*!mycat:dataNode*/ select 1").unwrap().is_err());
        assert!(annotation("/*!mycat:=dn1*/ select 1").unwrap().is_err());
        assert!(
            annotation("/*!mycat:dataNode=''*/ select 1")
                .unwrap()
                .is_err()
        );
        assert!(
            annotation("/*!mycat:dataNode=dn1 select 1")
                .unwrap()
                .is_err()
        );
        assert!(annotation("/* plain */ select 1").is_none());
        assert_eq!(words_before_comment("COMMIT /* done */"), ["COMMIT"]);
        assert_eq!(
            words_before_comment("rollback work -- undo"),
            ["ROLLBACK", "WORK"]
        );
    }
}
