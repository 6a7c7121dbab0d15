//! `SET` statements, allow-listed: only session state manx knows reaches a backend, rebuilt from
//! its parts (never the client's text), and replayed on every backend connection the session
//! takes.
//!
//! * `SET NAMES cs [COLLATE c]`, `SET CHARACTER SET cs` / `CHARSET cs`;
//! * `SET [SESSION | LOCAL] TRANSACTION ISOLATION LEVEL ... | READ ONLY | READ WRITE`;
//! * `SET [SESSION | LOCAL | @@[session. | local.]]name = value, ...` for the session variables of
//!   [`SESSION_VARIABLES`], and `SET @user_var = value`.
//!
//! A value is one literal or word (`'ANSI'`, `10`, `ON`, `DEFAULT`, `TRADITIONAL`), or an
//! expression that is a query the allow-list admits over no table (`CONCAT(@@sql_mode,
//! ',ANSI_QUOTES')`, `@old`). The session runs the rebuilt `SET` on a backend (the server's own
//! checks and errors), reads the resulting values back and replays those literals, so an
//! expression is evaluated once.
//!
//! Refused, whatever the spelling or position: any `GLOBAL` / `PERSIST` scope (`SET GLOBAL x`,
//! `SET @@global.x`, `SET @@Global . x`, `SET @a = 1, GLOBAL x = 1`), `SET PASSWORD`, `SET ROLE`,
//! `SET DEFAULT ROLE`, replication and logging controls (`sql_log_bin`, `gtid_*`,
//! `pseudo_thread_id`, ...) with 1227; variables manx does not know with 1235.
//!
//! `SET STATEMENT name = literal, ... FOR <statement>` ([`set_statement`]): the same variables
//! with literal values, for one statement routed as if sent alone.

use super::admit;
use super::{Local, RouteError, SessionSet};

#[cfg(test)]
mod tests;
mod tokens;
mod variables;

use tokens::{Tok, tokenize};
use variables::{PRIVILEGED_VARIABLES, denied, user_variable};
pub use variables::{SESSION_VARIABLES, check_client_charset, check_storage_engine, switch_value};

/// `SET ...` (module docs). `stmt` is the canonical statement, `SET` included.
///
/// Errors: 1227 for global scope, passwords, roles and privileged variables; 1235 for
/// `SET STATEMENT`, unknown variables and unsupported values; 1064 for malformed statements.
pub fn set(stmt: &str, known_function: &dyn Fn(&str) -> bool) -> Result<Local, RouteError> {
    let rest = stmt[3..].trim_start();
    let toks = tokenize(rest)?;
    let text = |t: &(Tok, usize, usize)| &rest[t.1..t.2];
    let word_is = |i: usize, w: &str| {
        toks.get(i)
            .is_some_and(|t| t.0 == Tok::Word && text(t).eq_ignore_ascii_case(w))
    };
    // Any GLOBAL or PERSIST scope, anywhere: `SET @a = 1, GLOBAL x = 1`, `@@Global . x`.
    for (i, t) in toks.iter().enumerate() {
        if t.0 == Tok::Word
            && ["GLOBAL", "PERSIST", "PERSIST_ONLY"]
                .iter()
                .any(|w| text(t).eq_ignore_ascii_case(w))
            && (i == 0
                || matches!(toks[i - 1].0, Tok::Comma | Tok::AtAt)
                || toks.get(i + 1).is_some_and(|n| n.0 == Tok::Dot))
        {
            return Err(denied("SET GLOBAL"));
        }
    }
    if word_is(0, "PASSWORD") {
        return Err(denied("SET PASSWORD"));
    }
    if word_is(0, "ROLE") || (word_is(0, "DEFAULT") && word_is(1, "ROLE")) {
        return Err(denied("SET ROLE"));
    }
    if word_is(0, "STATEMENT") {
        return Err(RouteError::not_supported(
            "SET STATEMENT without FOR <statement>".to_string(),
        ));
    }
    let standalone = |key: &str| {
        Ok(Local::Set {
            autocommit: None,
            items: vec![SessionSet {
                key: key.to_string(),
                assignment: rest.to_string(),
                standalone: true,
                evaluate: false,
            }],
        })
    };
    if word_is(0, "NAMES")
        || word_is(0, "CHARSET")
        || (word_is(0, "CHARACTER") && word_is(1, "SET"))
    {
        let start = if word_is(0, "CHARACTER") { 2 } else { 1 };
        // `SET NAMES utf8, character_set_connection = ucs2`: more assignments after a comma
        // (MariaDB's list), applied after NAMES in the order written.
        if let Some(comma) = toks.iter().position(|t| t.0 == Tok::Comma) {
            let names = &rest[..toks[comma].1];
            let more = &rest[toks[comma].2..];
            let Local::Set {
                autocommit: None,
                items: first,
            } = set(&format!("SET {names}"), known_function)?
            else {
                return Err(RouteError::syntax(format!("malformed SET NAMES: {stmt}")));
            };
            return match set(&format!("SET {more}"), known_function)? {
                Local::Set { autocommit, items } => Ok(Local::Set {
                    autocommit,
                    items: first.into_iter().chain(items).collect(),
                }),
                Local::SetAutocommit(on) => Ok(Local::Set {
                    autocommit: Some(on),
                    items: first,
                }),
                _ => Err(RouteError::not_supported(format!(
                    "this SET must be a statement of its own, not after NAMES: {stmt}"
                ))),
            };
        }
        // A charset name or string, or DEFAULT, then optionally COLLATE and a collation.
        let name = |i: usize| {
            toks.get(i)
                .is_some_and(|t| matches!(t.0, Tok::Word | Tok::Str))
        };
        let ok = match toks.len() - start {
            1 => name(start),
            3 => name(start) && word_is(start + 1, "COLLATE") && name(start + 2),
            _ => false,
        };
        if !ok {
            return Err(RouteError::syntax(format!("malformed SET NAMES: {stmt}")));
        }
        let value = &toks[start];
        if !(value.0 == Tok::Word && text(value).eq_ignore_ascii_case("DEFAULT")) {
            check_client_charset(text(value))?;
        }
        return standalone("names");
    }
    let transaction_at = if word_is(0, "TRANSACTION") {
        Some(1)
    } else if (word_is(0, "SESSION") || word_is(0, "LOCAL")) && word_is(1, "TRANSACTION") {
        Some(2)
    } else {
        None
    };
    if let Some(from) = transaction_at {
        const WORDS: &[&str] = &[
            "ISOLATION",
            "LEVEL",
            "READ",
            "UNCOMMITTED",
            "COMMITTED",
            "REPEATABLE",
            "SERIALIZABLE",
            "WRITE",
            "ONLY",
        ];
        let ok = toks.len() > from
            && toks[from..].iter().all(|t| {
                t.0 == Tok::Comma
                    || (t.0 == Tok::Word && WORDS.iter().any(|w| text(t).eq_ignore_ascii_case(w)))
            });
        if !ok {
            return Err(RouteError::syntax(format!(
                "malformed SET TRANSACTION: {stmt}"
            )));
        }
        return standalone("transaction");
    }
    let mut autocommit = None;
    let mut autocommit_from = None;
    let mut xa = None;
    let mut items = Vec::new();
    for item in split_top(&toks) {
        let (key, value) = assignment(rest, item)?;
        if key == "xa" {
            xa = Some(switch_value(&key, value)?);
            continue;
        }
        if key == "autocommit" {
            // `SET AUTOCOMMIT = @OLD_AUTOCOMMIT` (mysqldump --no-autocommit): the session's
            // own user variable, looked up by the session.
            if let Some(name) = user_variable(value) {
                autocommit_from = Some(format!("@{name}"));
                continue;
            }
            autocommit = Some(switch_value(&key, value)?);
            continue;
        }
        let literal = is_literal(value);
        // `SET character_set_client = @saved_cs_client` (mysqldump): the variable's value is
        // checked by the session once the server has evaluated it.
        if key == "character_set_client"
            && !value.eq_ignore_ascii_case("DEFAULT")
            && user_variable(value).is_none()
        {
            check_client_charset(value)?;
        }
        if key.ends_with("storage_engine")
            && !value.eq_ignore_ascii_case("DEFAULT")
            && user_variable(value).is_none()
        {
            // The engine of a CREATE TABLE without ENGINE: the same allow-list as ENGINE =.
            // (From a user variable, `SET default_storage_engine = @saved`: checked by the
            // session on the value the server evaluated, `check_storage_engine`.)
            let engine = super::scan::unquote(value.trim()).to_ascii_uppercase();
            if !super::admit::LOCAL_ENGINES.contains(&engine.as_str()) {
                return Err(denied(&format!("the storage engine {value}")));
            }
        }
        if !literal {
            check_expression(&key, value, known_function)?;
        }
        let user = key.starts_with('@');
        items.push(SessionSet {
            assignment: format!("{key} = {value}"),
            // An expression is evaluated once and replayed as its value (`sql_mode = @old`);
            // sql_mode and the client charset are always read back: how the server reads the
            // session's statements follows them (the charset is checked again on the value the
            // server settled on). So is optimizer_switch: a list of some of its flags changes
            // those and keeps the others (MariaDB's rule), so the value it leaves depends on the
            // earlier SETs, which a connection taken later has not seen.
            evaluate: !literal
                || (!user
                    && matches!(
                        key.as_str(),
                        "sql_mode" | "character_set_client" | "optimizer_switch"
                    )),
            key,
            standalone: false,
        });
    }
    if let Some(v) = xa {
        if !items.is_empty() || autocommit.is_some() {
            return Err(RouteError::not_supported(
                "SET XA must be a statement of its own".to_string(),
            ));
        }
        return Ok(Local::SetXa(v));
    }
    if let Some(variable) = autocommit_from {
        if !items.is_empty() || autocommit.is_some() {
            return Err(RouteError::not_supported(
                "SET autocommit from a user variable must be a statement of its own".to_string(),
            ));
        }
        return Ok(Local::SetAutocommitFrom(variable));
    }
    if items.is_empty()
        && let Some(v) = autocommit
    {
        return Ok(Local::SetAutocommit(v));
    }
    Ok(Local::Set { autocommit, items })
}

/// MariaDB's `SET STATEMENT name = value [, ...] FOR <statement>`, read: the statement that
/// runs, where it starts in the text, and the assignments that run with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetStatement {
    /// Byte offset in the text where the statement after `FOR` starts.
    pub at: usize,
    /// The assignments rebuilt from their parts (`sql_mode = 'ANSI'`, comma-separated), to
    /// send as `SET STATEMENT <assignments> FOR <the statement as routed>`.
    pub assignments: String,
    /// How the backend lexes the statement when an assignment sets `sql_mode` (MariaDB's
    /// `SET STATEMENT sql_mode` replaces the session's mode for it).
    pub sql_mode: Option<crate::sqltext::SqlMode>,
}

/// Whether `stmt` (canonical, `SET` first) is `SET STATEMENT ...`.
pub fn is_set_statement(stmt: &str) -> bool {
    let mut words = stmt.split_ascii_whitespace();
    words.next().is_some_and(|w| w.eq_ignore_ascii_case("SET"))
        && words
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case("STATEMENT"))
}

/// Reads `SET STATEMENT name = literal [, ...] FOR <statement>` (`stmt` canonical): each
/// variable one a `SET` may set ([`SESSION_VARIABLES`], checked by [`set`]), with a literal
/// value; not `autocommit`, `xa`, the character set variables (the gateway converts for the
/// session's) nor user variables (MariaDB's grammar has none there). A `sql_mode` must be a
/// string the gateway can follow ([`SqlMode::from_server`](crate::sqltext::SqlMode)).
///
/// Errors: 1064 without `FOR` or a statement after it; 1227 / 1235 as [`set`] gives for the
/// variables; 1235 for the refused variables and for values that are not literals.
pub fn set_statement(
    stmt: &str,
    known_function: &dyn Fn(&str) -> bool,
) -> Result<SetStatement, RouteError> {
    use sqlparser::tokenizer::Token;
    let toks = super::rewrite::tokens(stmt)
        .ok_or_else(|| RouteError::syntax("SET STATEMENT: the statement cannot be tokenized"))?;
    let for_at = toks
        .iter()
        .skip(2)
        .position(|(t, _, depth)| {
            *depth == 0
                && matches!(t, Token::Word(w) if w.quote_style.is_none()
                    && w.value.eq_ignore_ascii_case("FOR"))
        })
        .map(|i| i + 2)
        .filter(|&i| i + 1 < toks.len() && i > 2)
        .ok_or_else(|| {
            RouteError::syntax("SET STATEMENT needs assignments, FOR and a statement")
        })?;
    let assignments = stmt[toks[2].1.start..toks[for_at].1.start].trim();
    let at = toks[for_at + 1].1.start;
    let refuse =
        |why: String| RouteError::not_supported(format!("SET STATEMENT {assignments} FOR: {why}"));
    let items = match set(&format!("SET {assignments}"), known_function)? {
        Local::Set {
            autocommit: None,
            items,
        } => items,
        _ => {
            return Err(refuse(
                "autocommit and XA are set for a session, not for one statement".into(),
            ));
        }
    };
    let mut rebuilt = Vec::with_capacity(items.len());
    let mut sql_mode = None;
    for item in &items {
        let value = item
            .assignment
            .split_once('=')
            .map_or("", |(_, v)| v.trim());
        if item.standalone
            || item.key.starts_with('@')
            || item.key.starts_with("character_set")
            || item.key.starts_with("collation")
        {
            return Err(refuse(format!(
                "{} is not set for one statement through the gateway (set it with SET)",
                item.key
            )));
        }
        if !is_literal(value) {
            return Err(refuse(format!(
                "the value of {} must be a literal",
                item.key
            )));
        }
        if item.key == "sql_mode" {
            // A plain string: MariaDB unescapes `\` in it ('ORAC\LE' is ORACLE), the
            // gateway would read it otherwise.
            if !(value.starts_with('\'') || value.starts_with('"')) || value.contains('\\') {
                return Err(refuse(
                    "sql_mode must be given as a string without backslashes".into(),
                ));
            }
            let mode = crate::sqltext::SqlMode::from_server(super::scan::unquote(value))
                .map_err(|bad| {
                    refuse(format!(
                        "sql_mode {bad} is not supported by the gateway: its statements could not be checked as the backend parses them"
                    ))
                })?;
            sql_mode = Some(mode);
        }
        rebuilt.push(format!("{} = {value}", item.key));
    }
    Ok(SetStatement {
        at,
        assignments: rebuilt.join(", "),
        sql_mode,
    })
}

/// The token slices of the comma-separated assignments (commas inside parentheses belong to
/// their expression).
fn split_top(toks: &[(Tok, usize, usize)]) -> Vec<&[(Tok, usize, usize)]> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, t) in toks.iter().enumerate() {
        match t.0 {
            Tok::Open => depth += 1,
            Tok::Close => depth -= 1,
            Tok::Comma if depth == 0 => {
                out.push(&toks[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&toks[start..]);
    out
}

/// One `[SESSION|LOCAL] target = value`: the normalised key (`@name` for a user variable, the
/// lower-cased name of an allow-listed session variable) and the value's text.
fn assignment<'s>(
    rest: &'s str,
    item: &[(Tok, usize, usize)],
) -> Result<(String, &'s str), RouteError> {
    let text = |t: &(Tok, usize, usize)| &rest[t.1..t.2];
    let malformed = || {
        let from = item.first().map_or(0, |t| t.1);
        let to = item.last().map_or(from, |t| t.2);
        RouteError::syntax(format!(
            "this SET form is not supported: {}",
            &rest[from..to]
        ))
    };
    let Some(eq) = item.iter().position(|t| t.0 == Tok::Assign) else {
        return Err(malformed());
    };
    let (target, value) = (&item[..eq], &item[eq + 1..]);
    let (Some(first), Some(last)) = (value.first(), value.last()) else {
        return Err(malformed());
    };
    let value = rest[first.1..last.2].trim();
    let key = match target {
        // @name, @'name', @`name`
        [(Tok::At, _, _), name] if matches!(name.0, Tok::Word | Tok::Str | Tok::Quoted) => {
            let raw = text(name);
            let inner = super::scan::unquote(raw);
            if inner.is_empty()
                || !inner
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.'))
            {
                return Err(RouteError::not_supported(format!(
                    "user variable names other than letters, digits, '_', '$' and '.' are not supported: @{raw}"
                )));
            }
            format!("@{inner}")
        }
        _ => system_variable(rest, target).ok_or_else(malformed)?,
    };
    if key.starts_with('@') {
        return Ok((key, value));
    }
    if PRIVILEGED_VARIABLES.contains(&key.as_str())
        || ["gtid_", "wsrep_", "pseudo_", "debug"]
            .iter()
            .any(|p| key.starts_with(p))
    {
        return Err(denied(&format!("SET {key}")));
    }
    if key != "autocommit" && key != "xa" && !SESSION_VARIABLES.contains(&key.as_str()) {
        return Err(RouteError::not_supported(format!(
            "the session variable '{key}' cannot be set through the gateway"
        )));
    }
    Ok((key, value))
}

/// The lower-cased name of a session-scoped system variable target: `name`, `SESSION name`,
/// `LOCAL name`, `@@name`, `@@session.name`, `@@local.name` (white space around the dot
/// allowed, as MariaDB allows it). `None` for anything else (`a.b` structured names).
fn system_variable(rest: &str, target: &[(Tok, usize, usize)]) -> Option<String> {
    let text = |t: &(Tok, usize, usize)| &rest[t.1..t.2];
    let scope = |t: &(Tok, usize, usize)| {
        t.0 == Tok::Word
            && (text(t).eq_ignore_ascii_case("SESSION") || text(t).eq_ignore_ascii_case("LOCAL"))
    };
    let name = match target {
        [n] if n.0 == Tok::Word => n,
        [s, n] if scope(s) && n.0 == Tok::Word => n,
        [(Tok::AtAt, _, _), n] if n.0 == Tok::Word => n,
        [(Tok::AtAt, _, _), s, (Tok::Dot, _, _), n] if scope(s) && n.0 == Tok::Word => n,
        _ => return None,
    };
    let n = text(name);
    (!n.is_empty() && !n.bytes().next().is_some_and(|c| c.is_ascii_digit()))
        .then(|| n.to_ascii_lowercase())
}

/// One literal or bare word: a number, a quoted string, `NULL`, `ON`, `DEFAULT`, a name.
fn is_literal(value: &str) -> bool {
    let Ok(toks) = tokenize(value) else {
        return false;
    };
    match toks.as_slice() {
        [(Tok::Word | Tok::Str, _, _)] => true,
        [(Tok::Other, a, b), (Tok::Word, _, _)] => matches!(&value[*a..*b], "-" | "+"),
        _ => false,
    }
}

/// A value that is an expression must be a query the allow-list admits over no table, with no
/// subquery: evaluated by the backend, it can then reach nothing but the session.
///
/// Errors: 1235 naming the variable and the value.
fn check_expression(
    key: &str,
    value: &str,
    known_function: &dyn Fn(&str) -> bool,
) -> Result<(), RouteError> {
    use sqlparser::dialect::MySqlDialect;
    use sqlparser::parser::Parser;
    let refuse = |why: &str| {
        RouteError::not_supported(format!(
            "SET {key} = {value}: {why} (a value is a literal or an expression over no table)"
        ))
    };
    let sql = format!("SELECT {value}");
    let mut parsed = Parser::parse_sql(&MySqlDialect {}, &sql)
        .map_err(|e| refuse(&format!("the value does not parse: {e}")))?;
    if parsed.len() != 1 {
        return Err(refuse("more than one statement"));
    }
    let statement = parsed.remove(0);
    admit::admit(&statement, &sql, &|_| false, known_function)?;
    let sqlparser::ast::Statement::Query(q) = &statement else {
        return Err(refuse("not an expression"));
    };
    let sqlparser::ast::SetExpr::Select(select) = &*q.body else {
        return Err(refuse("not an expression"));
    };
    if select.projection.len() != 1
        || !select.from.is_empty()
        || select.selection.is_some()
        || q.order_by.is_some()
        || q.limit_clause.is_some()
        || !admit::table_refs(&statement).is_empty()
        || count_selects(&sql) > 1
    {
        return Err(refuse("a query"));
    }
    Ok(())
}

fn count_selects(sql: &str) -> usize {
    tokenize(sql)
        .map(|t| {
            t.iter()
                .filter(|t| t.0 == Tok::Word && sql[t.1..t.2].eq_ignore_ascii_case("SELECT"))
                .count()
        })
        .unwrap_or(usize::MAX)
}
