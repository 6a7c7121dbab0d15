//! Statements the gateway answers or keeps itself: canned SELECTs, `KILL`, `LAST_INSERT_ID()`, transaction control.

use super::*;

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
            Some(Local::VersionComment)
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
        _ => last_insert_id(stmt),
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

/// `SELECT LAST_INSERT_ID()` / `SELECT @@identity` (SPEC §5.15) / `SELECT FOUND_ROWS()`
/// [[AS] alias] as the whole statement: the session's value, labelled by the alias or the
/// expression as written.
pub(super) fn last_insert_id(stmt: &str) -> Option<Local> {
    // Tokenizing every statement to find these names cost ~19,000 instructions per statement
    // (callgrind); a statement without any of them cannot match.
    let mentions = |name: &str| scan::contains_ignore_ascii_case(stmt, name);
    if !mentions("last_insert_id") && !mentions("@@identity") && !mentions("found_rows") {
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
    let (found_rows, expr_end, rest) = match toks.get(1).map(|t| &t.0) {
        Some(_) if call("LAST_INSERT_ID") => (false, toks[3].1.end, &toks[4..]),
        Some(_) if call("FOUND_ROWS") => (true, toks[3].1.end, &toks[4..]),
        Some(Token::AtSign) => return None,
        Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("@@identity") => {
            (false, toks[1].1.end, &toks[2..])
        }
        _ => return None,
    };
    let label = match rest {
        [] => stmt[toks[1].1.start..expr_end].to_string(),
        [(a, _, _), (Token::Word(alias), _, _)] if word(a, "AS") => alias.value.clone(),
        [(Token::Word(alias), _, _)] => alias.value.clone(),
        _ => return None,
    };
    Some(if found_rows {
        Local::FoundRows(label)
    } else {
        Local::LastInsertId(label)
    })
}

/// `BEGIN`, `START TRANSACTION`, `COMMIT`, `ROLLBACK` with their optional words; chains,
/// releases and savepoints are refused.
pub(super) fn transaction(stmt: &str) -> Result<Local, RouteError> {
    let w = scan::words_before_comment(stmt);
    let rest: Vec<&str> = w
        .iter()
        .skip(1)
        .map(String::as_str)
        .filter(|x| *x != "WORK")
        .collect();
    let unsupported = || RouteError::syntax(format!("transaction statement not supported: {stmt}"));
    match w[0].as_str() {
        "BEGIN" if rest.is_empty() => Ok(Local::Begin),
        "START" if w.get(1).map(String::as_str) == Some("TRANSACTION") => Ok(Local::Begin),
        "COMMIT" | "ROLLBACK" => {
            // Only the defaults may be spelled out: AND NO CHAIN, NO RELEASE.
            let ok = matches!(
                rest.as_slice(),
                [] | ["AND", "NO", "CHAIN"]
                    | ["NO", "RELEASE"]
                    | ["AND", "NO", "CHAIN", "NO", "RELEASE"]
            );
            match (ok, w[0].as_str()) {
                (true, "COMMIT") => Ok(Local::Commit),
                (true, _) => Ok(Local::Rollback),
                (false, _) => Err(unsupported()),
            }
        }
        _ => Err(unsupported()),
    }
}
