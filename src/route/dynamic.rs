//! SQL-level dynamic SQL whose text the gateway can read: `PREPARE s FROM '<literal>'`,
//! `EXECUTE s [USING @a, ...]`, `DEALLOCATE PREPARE s` / `DROP PREPARE s` and `EXECUTE IMMEDIATE
//! '<literal>'`. Only these spellings are recognised (one string literal, no concatenation, no
//! introducer, no expression, plain user variables): every other form of `PREPARE` / `EXECUTE`
//! is left to the router, which refuses it as dynamic SQL. The session routes the literal's
//! text as if the client had sent it (module `frontend::session`).

use sqlparser::tokenizer::Token;

use super::lex::{SqlMode, canonical};
use super::rewrite::tokens;

/// One recognised dynamic SQL statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dynamic {
    /// `PREPARE name FROM '<text>'`: `text` is the literal's value, as MariaDB reads it.
    Prepare { name: String, text: String },
    /// `EXECUTE name [USING @a, ...]`: `using` holds the variables as written (`@a`).
    Execute { name: String, using: Vec<String> },
    /// `DEALLOCATE PREPARE name` / `DROP PREPARE name`.
    Deallocate { name: String },
    /// `EXECUTE IMMEDIATE '<text>'`.
    Immediate { text: String },
}

/// The statement `sql` as one of the [`Dynamic`] forms, read under the session's `mode`;
/// `None` for anything else (including every form that is not understood).
pub fn dynamic(sql: &str, mode: SqlMode) -> Option<Dynamic> {
    let first = sql.trim_start().get(..4)?;
    if !["PREP", "EXEC", "DEAL", "DROP"]
        .iter()
        .any(|w| first.eq_ignore_ascii_case(w))
        && !sql.trim_start().starts_with("/*")
    {
        return None;
    }
    // A trailing `;` ends the statement (one inside a comment or string leaves it unreadable).
    let sql = sql.trim_end();
    let sql = sql.strip_suffix(';').unwrap_or(sql);
    let canon = canonical(sql, mode).ok()?;
    if canon.separator {
        return None;
    }
    let text = canon.text.as_ref();
    let toks = tokens(text)?;
    let word = |i: usize, w: &str| matches!(toks.get(i), Some((Token::Word(x), _, _)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let name = |i: usize| match toks.get(i) {
        Some((Token::Word(x), _, _))
            if (x.quote_style.is_none() || x.quote_style == Some('`'))
                && !x.value.is_empty()
                && !x.value.starts_with('@') =>
        {
            Some(x.value.clone())
        }
        _ => None,
    };
    let literal = |i: usize| match toks.get(i) {
        Some((Token::SingleQuotedString(_) | Token::DoubleQuotedString(_), r, _)) => {
            decode(&text[r.clone()], !mode.no_backslash_escapes)
        }
        _ => None,
    };
    let n = toks.len();
    if word(0, "PREPARE") && n == 4 && word(2, "FROM") {
        return Some(Dynamic::Prepare {
            name: name(1)?,
            text: literal(3)?,
        });
    }
    if (word(0, "DEALLOCATE") || word(0, "DROP")) && word(1, "PREPARE") && n == 3 {
        return Some(Dynamic::Deallocate { name: name(2)? });
    }
    if word(0, "EXECUTE") {
        if word(1, "IMMEDIATE") && n == 3 {
            return Some(Dynamic::Immediate { text: literal(2)? });
        }
        let name = name(1)?;
        if name.eq_ignore_ascii_case("IMMEDIATE") {
            return None;
        }
        if n == 2 {
            return Some(Dynamic::Execute {
                name,
                using: Vec::new(),
            });
        }
        if !word(2, "USING") {
            return None;
        }
        let mut using = Vec::new();
        let mut i = 3;
        loop {
            match toks.get(i) {
                Some((Token::Word(x), _, _))
                    if x.quote_style.is_none() && is_user_variable(&x.value) =>
                {
                    using.push(x.value.clone())
                }
                _ => return None,
            }
            match toks.get(i + 1) {
                None => break,
                Some((Token::Comma, _, _)) => i += 2,
                _ => return None,
            }
        }
        return Some(Dynamic::Execute { name, using });
    }
    None
}

/// The name a `PREPARE name FROM ...` of any form prepares (also one [`dynamic`] does not
/// read, which the router refuses), read under the session's `mode`; `None` for any other
/// statement. MariaDB drops the statement of that name first, even when the PREPARE fails,
/// so the session forgets it whatever becomes of the PREPARE.
pub fn prepare_name(sql: &str, mode: SqlMode) -> Option<String> {
    if !sql.trim_start().get(..7)?.eq_ignore_ascii_case("PREPARE") {
        return None;
    }
    let canon = canonical(sql, mode).ok()?;
    let toks = tokens(canon.text.as_ref())?;
    let word = |i: usize, w: &str| matches!(toks.get(i), Some((Token::Word(x), _, _)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    match toks.get(1) {
        Some((Token::Word(x), _, _))
            if word(0, "PREPARE")
                && word(2, "FROM")
                && (x.quote_style.is_none() || x.quote_style == Some('`'))
                && !x.value.starts_with('@') =>
        {
            Some(x.value.clone())
        }
        _ => None,
    }
}

/// `@name` with a plain name (letters, digits, `_`, `$`, `.`): not `@@`, not quoted.
fn is_user_variable(w: &str) -> bool {
    w.strip_prefix('@').is_some_and(|n| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == '.')
    })
}

/// The value of the string literal `raw` (with its quotes) as MariaDB reads it: a doubled quote
/// stands for one; with `backslash_escapes`, `\` escapes the next character (`\n`, `\t`, `\r`,
/// `\b`, `\0`, `\Z`; `\%` and `\_` keep their backslash; any other character stands for
/// itself). `None` for what is not one whole literal.
pub fn decode(raw: &str, backslash_escapes: bool) -> Option<String> {
    let quote = raw.chars().next().filter(|q| *q == '\'' || *q == '"')?;
    let inner = raw.get(1..raw.len().checked_sub(1)?)?;
    if !raw.ends_with(quote) || raw.len() < 2 {
        return None;
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == quote {
            if chars.next() != Some(quote) {
                return None;
            }
            out.push(quote);
        } else if c == '\\' && backslash_escapes {
            match chars.next()? {
                '0' => out.push('\0'),
                'b' => out.push('\u{8}'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'Z' => out.push('\u{1a}'),
                e @ ('%' | '_') => {
                    out.push('\\');
                    out.push(e);
                }
                e => out.push(e),
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// `text` as a single-quoted string literal that MariaDB reads back as `text` under `mode`;
/// `None` when no spelling is safe (a NUL character, or a backslash under
/// `NO_BACKSLASH_ESCAPES`, which the gateway's lexer refuses in strings).
pub fn quote(text: &str, mode: SqlMode) -> Option<String> {
    if text.contains('\0') || (mode.no_backslash_escapes && text.contains('\\')) {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('\'');
    Some(out)
}

/// A statement name as a quoted identifier (`` `s` ``).
pub fn quote_name(name: &str) -> String {
    super::rewrite::backquoted(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NBE: SqlMode = SqlMode {
        no_backslash_escapes: true,
        ansi_quotes: false,
    };

    fn prepare(name: &str, text: &str) -> Option<Dynamic> {
        Some(Dynamic::Prepare {
            name: name.into(),
            text: text.into(),
        })
    }

    #[test]
    fn the_readable_forms_are_recognised() {
        let d = SqlMode::default();
        assert_eq!(
            dynamic("PREPARE s FROM 'SELECT ''a'''", d),
            prepare("s", "SELECT 'a'")
        );
        assert_eq!(
            dynamic("prepare `my s` from \"select 'x\\\\y'\";", d),
            prepare("my s", "select 'x\\y'")
        );
        assert_eq!(
            dynamic("PREPARE s FROM 'SELECT 1; DROP TABLE t'", d),
            prepare("s", "SELECT 1; DROP TABLE t")
        );
        assert_eq!(
            dynamic("EXECUTE s USING @a, @b", d),
            Some(Dynamic::Execute {
                name: "s".into(),
                using: vec!["@a".into(), "@b".into()]
            })
        );
        assert_eq!(
            dynamic("execute s", d),
            Some(Dynamic::Execute {
                name: "s".into(),
                using: vec![]
            })
        );
        assert_eq!(
            dynamic("DROP PREPARE s", d),
            Some(Dynamic::Deallocate { name: "s".into() })
        );
        assert_eq!(
            dynamic("deallocate prepare s", d),
            Some(Dynamic::Deallocate { name: "s".into() })
        );
        assert_eq!(
            dynamic("EXECUTE IMMEDIATE 'SELECT 1'", d),
            Some(Dynamic::Immediate {
                text: "SELECT 1".into()
            })
        );
        assert_eq!(decode(r"'a\nb\%\q'", true).unwrap(), "a\nb\\%q");
        assert_eq!(decode(r"'a\nb'", false).unwrap(), r"a\nb");
    }

    #[test]
    fn every_other_form_is_left_to_the_router() {
        let d = SqlMode::default();
        for sql in [
            "PREPARE s FROM @q",
            "PREPARE s FROM 'SELECT ' 'x'",
            "PREPARE s FROM CONCAT('SELECT ', 1)",
            "PREPARE s FROM _latin1'SELECT 1'",
            "PREPARE @s FROM 'SELECT 1'",
            "EXECUTE IMMEDIATE @q",
            "EXECUTE IMMEDIATE CONCAT('SELECT ', 1)",
            "EXECUTE IMMEDIATE 'SELECT ?' USING 1",
            "EXECUTE s USING 1",
            "EXECUTE s USING @@sql_mode",
            "EXECUTE s USING @a,",
            "EXECUTE immediate",
            "PREPARE s FROM 'SELECT 1'; DROP TABLE t",
            "SELECT 1",
        ] {
            assert_eq!(dynamic(sql, d), None, "{sql}");
        }
        // A backslash under NO_BACKSLASH_ESCAPES is refused by the lexer; ANSI_QUOTES makes
        // "..." a name.
        assert_eq!(dynamic(r"PREPARE s FROM 'SELECT \'", NBE), None);
        let ansi = SqlMode {
            no_backslash_escapes: false,
            ansi_quotes: true,
        };
        assert_eq!(dynamic("PREPARE s FROM \"SELECT 1\"", ansi), None);
        assert_eq!(quote("it's \\", d).unwrap(), "'it''s \\\\'");
        assert_eq!(quote("it's", NBE).unwrap(), "'it''s'");
        assert_eq!(quote("a\\b", NBE), None);
    }
}
