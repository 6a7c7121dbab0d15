//! Statements the gateway answers or keeps itself: canned SELECTs, `KILL`, `LAST_INSERT_ID()`, transaction control.

use super::*;
use sqlparser::keywords::Keyword;

/// The SELECTs clients send on connect that the gateway answers itself (SPEC §5.16).
pub(super) fn canned_select(stmt: &str) -> Option<Local> {
    // Each statement below is `select` and a second word opening with `@` or one of three
    // function calls: checking those two words first spares every other statement the
    // normalisation.
    let mut w = stmt.split_whitespace();
    let canned_start = w.next().is_some_and(|x| x.eq_ignore_ascii_case("select"))
        && w.next().is_some_and(|x| {
            x.starts_with('@')
                || ["database()", "schema()", "connection_id()", "version()"]
                    .iter()
                    .any(|f| x.eq_ignore_ascii_case(f))
        });
    if !canned_start {
        return last_insert_id(stmt);
    }
    let normalized: String = scan::words(stmt).join(" ").to_ascii_lowercase();
    match normalized.as_str() {
        "select @@version_comment limit 1" | "select @@version_comment" => {
            // Labelled as written (`@@vErsion_comment`), as MariaDB labels it.
            let label = stmt
                .split_whitespace()
                .nth(1)
                .unwrap_or("@@version_comment");
            Some(Local::VersionComment(label.to_string()))
        }
        "select database()" | "select schema()" => {
            Some(Local::Database(stmt[6..].trim().to_string()))
        }
        // Mycat answers the version itself (its `SelectHandler`): the one the greeting gave.
        "select version()" | "select @@version" | "select @@global.version" => {
            Some(Local::Version(stmt[6..].trim().to_string()))
        }
        "select connection_id()" => Some(Local::ConnectionId(stmt[6..].trim().to_string())),
        "select @@max_allowed_packet"
        | "select @@session.max_allowed_packet"
        | "select @@global.max_allowed_packet" => {
            Some(Local::MaxAllowedPacket(stmt[6..].trim().to_string()))
        }
        "select @@autocommit" | "select @@session.autocommit" => {
            Some(Local::Autocommit(stmt[6..].trim().to_string()))
        }
        "select @@warning_count" | "select @@session.warning_count" => {
            Some(Local::WarningCount(stmt[6..].trim().to_string()))
        }
        "select @@error_count" | "select @@session.error_count" => {
            Some(Local::ErrorCount(stmt[6..].trim().to_string()))
        }
        // Only a statement naming one of the two counts is read further.
        n if n.contains("_count") => diagnostics_counts(stmt).or_else(|| last_insert_id(stmt)),
        _ => last_insert_id(stmt),
    }
}

/// `SELECT` of `@@[session.]warning_count` and `@@[session.]error_count` items only, each
/// `[[AS] alias]`, as [`Local::Counts`]: labelled by the alias, or the variable as written
/// (MariaDB's labels). `None` for anything else (a version comment, another item, a clause), so
/// the statement is routed as any other.
pub(super) fn diagnostics_counts(stmt: &str) -> Option<Local> {
    if stmt.contains("/*!") {
        return None;
    }
    let toks = rewrite::tokens(stmt)?;
    let (first, mut rest) = toks.split_first()?;
    if !matches!(&first.0, Token::Word(w) if w.value.eq_ignore_ascii_case("SELECT")) {
        return None;
    }
    let mut columns = Vec::new();
    loop {
        // The variable: `@@name` or `@@session.name` (one word, or three tokens).
        let (name, start, end, after) = match rest {
            [
                (Token::Word(s), r, _),
                (Token::Period, _, _),
                (Token::Word(v), e, _),
                after @ ..,
            ] if s.quote_style.is_none()
                && v.quote_style.is_none()
                && s.value.eq_ignore_ascii_case("@@session") =>
            {
                (v.value.as_str(), r.start, e.end, after)
            }
            [(Token::Word(v), r, _), after @ ..] if v.quote_style.is_none() => {
                let lower = v.value.to_ascii_lowercase();
                let name = if lower.starts_with("@@session.") {
                    &v.value["@@session.".len()..]
                } else if lower.starts_with("@@") {
                    &v.value[2..]
                } else {
                    return None;
                };
                (name, r.start, r.end, after)
            }
            _ => return None,
        };
        let condition = if name.eq_ignore_ascii_case("warning_count") {
            Condition::Warnings
        } else if name.eq_ignore_ascii_case("error_count") {
            Condition::Errors
        } else {
            return None;
        };
        // An alias: a word that is no keyword (`FROM` would open a clause) or quoted, or a
        // string, after `AS` or alone.
        let alias = |t: &Token| match t {
            Token::Word(w) if w.quote_style.is_some() || w.keyword == Keyword::NoKeyword => {
                Some(w.value.clone())
            }
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => Some(s.clone()),
            _ => None,
        };
        let (label, after) = match after {
            [(Token::Word(a), _, _), (t, _, _), after @ ..]
                if a.quote_style.is_none() && a.value.eq_ignore_ascii_case("AS") =>
            {
                (alias(t)?, after)
            }
            [(t, _, _), after @ ..] if !matches!(t, Token::Comma) => (alias(t)?, after),
            _ => (stmt[start..end].to_string(), after),
        };
        columns.push((label, condition));
        match after {
            [] => return Some(Local::Counts(columns)),
            [(Token::Comma, _, _), after @ ..] => rest = after,
            _ => return None,
        }
    }
}

/// `KILL [HARD|SOFT] [CONNECTION|QUERY] [ID] <n>` (MySQL's and MariaDB's forms) as
/// [`Local::Kill`]; the id is the gateway's connection id, never a backend's thread id.
///
/// Errors: 1064 for other forms (`KILL USER`, `KILL QUERY ID <query id>`, an id that is not a
/// number), which name backend threads or queries the gateway does not expose.
pub(super) fn kill(words: &[&str]) -> Result<Local, RouteError> {
    let mut rest = &words[1..];
    if rest
        .first()
        .is_some_and(|w| w.eq_ignore_ascii_case("HARD") || w.eq_ignore_ascii_case("SOFT"))
    {
        rest = &rest[1..];
    }
    let mut query = false;
    if let Some(w) = rest.first() {
        if w.eq_ignore_ascii_case("QUERY") {
            query = true;
            rest = &rest[1..];
        } else if w.eq_ignore_ascii_case("CONNECTION") {
            rest = &rest[1..];
        }
    }
    match rest {
        [id] => id
            .parse::<u64>()
            .map(|id| Local::Kill { query, id })
            .map_err(|_| {
                RouteError::syntax(format!(
                    "KILL takes a connection id (a number): {}",
                    words.join(" ")
                ))
            }),
        _ => Err(RouteError::syntax(format!(
            "only KILL [CONNECTION|QUERY] <connection id> is supported: {}",
            words.join(" ")
        ))),
    }
}

/// `SELECT LAST_INSERT_ID()` / `SELECT @@identity` (SPEC §5.15) / `SELECT FOUND_ROWS()` /
/// `SELECT ROW_COUNT()` [[AS] alias] as the whole statement: the session's value, labelled by the alias or the
/// expression as written.
pub(super) fn last_insert_id(stmt: &str) -> Option<Local> {
    // Tokenizing every statement to find these names cost ~19,000 instructions per statement
    // (callgrind); a statement without any of them cannot match.
    let mentions = |name: &str| scan::contains_ignore_ascii_case(stmt, name);
    if !mentions("last_insert_id")
        && !mentions("@@identity")
        && !mentions("found_rows")
        && !mentions("row_count")
    {
        return None;
    }
    let toks = rewrite::tokens(stmt)?;
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.value.eq_ignore_ascii_case(w));
    if !toks.first().is_some_and(|t| word(&t.0, "SELECT")) {
        return None;
    }
    let call = |name: &str| {
        toks.get(1).is_some_and(|t| word(&t.0, name))
            && matches!(toks.get(2).map(|t| &t.0), Some(Token::LParen))
            && matches!(toks.get(3).map(|t| &t.0), Some(Token::RParen))
    };
    let (answer, expr_end, rest): (fn(String) -> Local, _, _) = match toks.get(1).map(|t| &t.0) {
        Some(_) if call("LAST_INSERT_ID") => (Local::LastInsertId, toks[3].1.end, &toks[4..]),
        Some(_) if call("FOUND_ROWS") => (Local::FoundRows, toks[3].1.end, &toks[4..]),
        Some(_) if call("ROW_COUNT") => (Local::RowCount, toks[3].1.end, &toks[4..]),
        Some(Token::AtSign) => return None,
        Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("@@identity") => {
            (Local::LastInsertId, toks[1].1.end, &toks[2..])
        }
        _ => return None,
    };
    let label = match rest {
        [] => stmt[toks[1].1.start..expr_end].to_string(),
        [(a, _, _), (Token::Word(alias), _, _)] if word(a, "AS") => alias.value.clone(),
        [(Token::Word(alias), _, _)] => alias.value.clone(),
        _ => return None,
    };
    Some(answer(label))
}

/// Transaction control: `BEGIN [WORK]`, `START TRANSACTION ...`, `COMMIT` / `ROLLBACK`
/// `[WORK] [AND [NO] CHAIN] [[NO] RELEASE]`, `SAVEPOINT name`, `ROLLBACK [WORK] TO
/// [SAVEPOINT] name` and `RELEASE SAVEPOINT name`.
///
/// The forms with a savepoint name are read by an allow-list, as the statement's text never
/// reaches a backend (the session sends its own, with the name re-quoted): the statement must
/// be exactly those keywords and one identifier ([`SavepointName::parse`]), with only white
/// space and `/* */` comments between them.
///
/// Errors: 1064 for any other form (`SAVEPOINT a b`, a quoted string as the name, `AND CHAIN
/// RELEASE` together, which MySQL refuses too).
pub(super) fn transaction(stmt: &str) -> Result<Local, RouteError> {
    let unsupported = || RouteError::syntax(format!("transaction statement not supported: {stmt}"));
    let w = scan::words_before_comment(stmt);
    match w[0].as_str() {
        "BEGIN" if w[1..].iter().all(|x| x == "WORK") && w.len() <= 2 => Ok(Local::Begin),
        "START" if w.get(1).map(String::as_str) == Some("TRANSACTION") => Ok(Local::Begin),
        "COMMIT" | "ROLLBACK" | "SAVEPOINT" | "RELEASE" => {
            let tokens = control_tokens(stmt).ok_or_else(unsupported)?;
            control(&tokens).ok_or_else(unsupported)
        }
        _ => Err(unsupported()),
    }
}

/// The tokens of a transaction-control statement: bare words (ASCII letters, digits, `_`, `$`)
/// and backquoted names (with their quotes), white space and `/* */` comments dropped. `None`
/// when the text holds anything else (a string, an operator, a `;`, an open quote).
fn control_tokens(stmt: &str) -> Option<Vec<&str>> {
    let b = stmt.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"/*") {
            // The canonical text keeps only plain comments (module `lex`): they end at `*/`.
            i += 2 + stmt[i + 2..].find("*/")? + 2;
        } else if c == b'`' {
            let end = crate::sqltext::quoted_end(b, i)?;
            out.push(&stmt[i..end]);
            i = end;
        } else if word(c) {
            let start = i;
            while i < b.len() && word(b[i]) {
                i += 1;
            }
            out.push(&stmt[start..i]);
        } else {
            return None;
        }
    }
    Some(out)
}

/// [`transaction`]'s `COMMIT`, `ROLLBACK`, `SAVEPOINT` and `RELEASE` forms, from their
/// tokens; `None` for anything else.
fn control(tokens: &[&str]) -> Option<Local> {
    let kw = |t: &str, k: &str| !t.starts_with('`') && t.eq_ignore_ascii_case(k);
    let first = tokens.first()?;
    if kw(first, "SAVEPOINT") {
        return match tokens {
            [_, name] => SavepointName::parse(name).map(Local::Savepoint),
            _ => None,
        };
    }
    if kw(first, "RELEASE") {
        return match tokens {
            [_, s, name] if kw(s, "SAVEPOINT") => {
                SavepointName::parse(name).map(Local::ReleaseSavepoint)
            }
            _ => None,
        };
    }
    let commit = kw(first, "COMMIT");
    if !commit && !kw(first, "ROLLBACK") {
        return None;
    }
    let mut rest = &tokens[1..];
    if rest.first().is_some_and(|t| kw(t, "WORK")) {
        rest = &rest[1..];
    }
    if !commit && rest.first().is_some_and(|t| kw(t, "TO")) {
        // `ROLLBACK [WORK] TO [SAVEPOINT] name` (`ROLLBACK TO SAVEPOINT` alone names a
        // savepoint called `savepoint`, as MySQL reads it).
        return match &rest[1..] {
            [s, name] if kw(s, "SAVEPOINT") => SavepointName::parse(name),
            [name] => SavepointName::parse(name),
            _ => None,
        }
        .map(Local::RollbackToSavepoint);
    }
    let mut chain = false;
    match rest {
        [a, c, ..] if kw(a, "AND") && kw(c, "CHAIN") => {
            chain = true;
            rest = &rest[2..];
        }
        [a, n, c, ..] if kw(a, "AND") && kw(n, "NO") && kw(c, "CHAIN") => rest = &rest[3..],
        _ => {}
    }
    let release = match rest {
        [] => false,
        [r] if kw(r, "RELEASE") => true,
        [n, r] if kw(n, "NO") && kw(r, "RELEASE") => false,
        _ => return None,
    };
    let completion = match (chain, release) {
        (false, false) => Completion::Plain,
        (true, false) => Completion::Chain,
        (false, true) => Completion::Release,
        // MySQL's syntax error too: a chained transaction on a closed connection.
        (true, true) => return None,
    };
    Some(if commit {
        Local::Commit(completion)
    } else {
        Local::Rollback(completion)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_diagnostics_counts_are_answered_locally() {
        use Condition::{Errors, Warnings};
        let counts = |s: &str| match canned_select(s) {
            Some(Local::Counts(c)) => Some(c),
            _ => None,
        };
        let c = |l: &str, x: Condition| (l.to_string(), x);
        assert_eq!(
            counts("SELECT @@warning_count, @@error_count"),
            Some(vec![
                c("@@warning_count", Warnings),
                c("@@error_count", Errors)
            ])
        );
        assert_eq!(
            counts("select @@warning_count AS w, @@Session.Error_Count e"),
            Some(vec![c("w", Warnings), c("e", Errors)])
        );
        assert_eq!(
            counts("SELECT @@session.warning_count, @@error_count as `E c`"),
            Some(vec![
                c("@@session.warning_count", Warnings),
                c("E c", Errors)
            ])
        );
        assert_eq!(
            counts("SELECT @@warning_count AS w"),
            Some(vec![c("w", Warnings)])
        );
        // Anything else is routed as before.
        for s in [
            "SELECT @@warning_count, 5",
            "SELECT @@warning_count, @@error_count FROM t",
            "SELECT @@warning_count FROM",
            "SELECT @@warning_count, @@error_count LIMIT 1",
            "SELECT @@warning_count, @@error_count /*!, (SELECT 1) */",
            "SELECT @@global.warning_count, @@error_count",
            "SELECT @@warning_count,",
            "SELECT @@warning_count AS",
        ] {
            assert_eq!(counts(s), None, "{s}");
        }
    }

    fn name(n: &str) -> SavepointName {
        SavepointName::parse(n).unwrap()
    }

    #[test]
    fn transaction_control_forms() {
        let ok = |s: &str| transaction(s).unwrap_or_else(|e| panic!("{s}: {e:?}"));
        assert_eq!(ok("BEGIN"), Local::Begin);
        assert_eq!(ok("begin work"), Local::Begin);
        assert_eq!(ok("START TRANSACTION READ ONLY"), Local::Begin);
        assert_eq!(ok("COMMIT"), Local::Commit(Completion::Plain));
        assert_eq!(ok("commit/*x*/"), Local::Commit(Completion::Plain));
        assert_eq!(
            ok("COMMIT WORK AND NO CHAIN NO RELEASE"),
            Local::Commit(Completion::Plain)
        );
        assert_eq!(ok("commit and chain"), Local::Commit(Completion::Chain));
        assert_eq!(
            ok("COMMIT AND CHAIN NO RELEASE"),
            Local::Commit(Completion::Chain)
        );
        assert_eq!(ok("commit release"), Local::Commit(Completion::Release));
        assert_eq!(
            ok("ROLLBACK WORK AND NO CHAIN RELEASE"),
            Local::Rollback(Completion::Release)
        );
        assert_eq!(ok("rollback and chain"), Local::Rollback(Completion::Chain));
        assert_eq!(ok("SAVEPOINT sa_1"), Local::Savepoint(name("sa_1")));
        assert_eq!(ok("savepoint /* c */ `Sp`"), Local::Savepoint(name("Sp")));
        assert_eq!(
            ok("ROLLBACK TO SAVEPOINT sp"),
            Local::RollbackToSavepoint(name("sp"))
        );
        assert_eq!(
            ok("rollback work to `sp`"),
            Local::RollbackToSavepoint(name("sp"))
        );
        // MySQL reads it as the savepoint named `savepoint`.
        assert_eq!(
            ok("ROLLBACK TO SAVEPOINT"),
            Local::RollbackToSavepoint(name("SAVEPOINT"))
        );
        assert_eq!(
            ok("RELEASE SAVEPOINT sp"),
            Local::ReleaseSavepoint(name("sp"))
        );
    }

    #[test]
    fn malformed_control_statements_are_refused() {
        for s in [
            "SAVEPOINT",
            "SAVEPOINT a b",
            "SAVEPOINT a; DROP TABLE x",
            "SAVEPOINT a;",
            "SAVEPOINT 'a'",
            "SAVEPOINT \"a\"",
            "SAVEPOINT `a b`",
            "SAVEPOINT `a",
            "SAVEPOINT a /* open",
            "SAVEPOINT 12",
            "SAVEPOINT a-b",
            "SAVEPOINT a.b",
            "SAVEPOINT @a",
            "SAVEPOINT `a``; DROP TABLE x; --`",
            "RELEASE a",
            "RELEASE SAVEPOINT",
            "RELEASE SAVEPOINT a b",
            "RELEASE `SAVEPOINT` a",
            "ROLLBACK TO",
            "ROLLBACK TO a b",
            "ROLLBACK TO SAVEPOINT a b",
            "ROLLBACK TO SAVEPOINT a, b",
            "ROLLBACK AND CHAIN RELEASE",
            "COMMIT AND CHAIN RELEASE",
            "COMMIT TO a",
            "COMMIT AND",
            "COMMIT CHAIN",
            "COMMIT NO",
            "COMMIT RELEASE RELEASE",
            "COMMIT `AND` CHAIN",
            "BEGIN a",
        ] {
            assert!(transaction(s).is_err(), "{s} accepted");
        }
    }
}
