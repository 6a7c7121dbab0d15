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

/// `s` with each plain `/* ... */` comment outside strings and quoted names replaced by one
/// space, as MariaDB reads it (a comment separates words). Meant for the canonical text
/// ([`super::lex`]), where version comments are already expanded and line comments gone; an
/// unterminated comment or quote leaves the rest as written.
pub fn without_comments(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains("/*") {
        return std::borrow::Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' | b'`' => match crate::sqltext::quoted_end(b, i) {
                Some(end) => i = end,
                None => break,
            },
            b'/' if b.get(i + 1) == Some(&b'*') => match s[i + 2..].find("*/") {
                Some(end) => {
                    out.push_str(&s[copied..i]);
                    out.push(' ');
                    i = i + 2 + end + 2;
                    copied = i;
                }
                None => break,
            },
            _ => i += 1,
        }
    }
    out.push_str(&s[copied..]);
    std::borrow::Cow::Owned(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_become_one_space_outside_quotes() {
        assert_eq!(without_comments("show /* c */ warnings"), "show   warnings");
        assert_eq!(without_comments("SHOW/**/ERRORS"), "SHOW ERRORS");
        assert_eq!(
            without_comments("show tables like '/* x */' /* y */"),
            "show tables like '/* x */'  "
        );
        assert_eq!(without_comments("show `a/*b` /*c*/"), "show `a/*b`  ");
        assert_eq!(without_comments("show 'it''s' /*"), "show 'it''s' /*");
        assert_eq!(without_comments("show warnings"), "show warnings");
    }

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
    fn first_words() {
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
    fn hints_and_words() {
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
