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
//! `pseudo_thread_id`, ...) with 1227; `SET STATEMENT ... FOR` and variables manx does not know
//! with 1235.

use super::admit;
use super::{Local, RouteError, SessionSet};

/// Session variables a client may set through the gateway (lower case, MariaDB's names and the
/// MySQL names drivers send). Each only changes how this session's statements behave.
pub const SESSION_VARIABLES: &[&str] = &[
    "sql_mode",
    "time_zone",
    "character_set_client",
    "character_set_connection",
    "character_set_results",
    "collation_connection",
    "sql_select_limit",
    "max_execution_time",
    "max_statement_time",
    "net_read_timeout",
    "net_write_timeout",
    "wait_timeout",
    "interactive_timeout",
    "group_concat_max_len",
    "foreign_key_checks",
    "unique_checks",
    "sql_safe_updates",
    "sql_auto_is_null",
    "sql_notes",
    "sql_warnings",
    "sql_big_selects",
    "max_join_size",
    "sql_quote_show_create",
    "lc_time_names",
    "lc_messages",
    "div_precision_increment",
    "transaction_isolation",
    "tx_isolation",
    "transaction_read_only",
    "tx_read_only",
    "innodb_lock_wait_timeout",
    "lock_wait_timeout",
    "innodb_strict_mode",
    "optimizer_switch",
    "long_query_time",
    "big_tables",
    "max_sort_length",
    "sort_buffer_size",
    "join_buffer_size",
    "tmp_table_size",
    "max_heap_table_size",
    "default_storage_engine",
    "storage_engine",
    "default_tmp_storage_engine",
    "explicit_defaults_for_timestamp",
    "auto_increment_increment",
    "auto_increment_offset",
    "profiling",
    "sql_buffer_result",
    "default_week_format",
    "max_error_count",
    "check_constraint_checks",
    "sql_if_exists",
    "character_set_server",
    "collation_server",
];

/// Variables that control replication, logging or other sessions: never through the gateway.
const PRIVILEGED_VARIABLES: &[&str] = &[
    "sql_log_bin",
    "sql_log_off",
    "pseudo_thread_id",
    "pseudo_slave_mode",
    "skip_replication",
    "server_id",
    "gtid_domain_id",
    "gtid_seq_no",
    "gtid_next",
    "gtid_strict_mode",
    "binlog_format",
    "timestamp",
    "insert_id",
    "last_insert_id",
    "identity",
    "rand_seed1",
    "rand_seed2",
    "debug",
    "debug_sync",
    "wsrep_on",
    "character_set_filesystem",
    "completion_type",
];

/// The name of the user variable `value` is (`@name` → `name`), `None` for anything else.
fn user_variable(value: &str) -> Option<&str> {
    value.strip_prefix('@').filter(|name| {
        !name.is_empty()
            && name
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.'))
    })
}

/// Checks a client character set a session asks for: `value` is its name, quoted or not. The
/// session looks the name up in its fixed table (`crate::charset`) and converts the client's
/// statements and results itself, so any character set it knows is safe, including those in
/// which a backslash byte can end a character (big5, cp932, gbk, sjis): the parser and the
/// backends only ever see UTF-8.
///
/// Errors: 1235 for a value that is not a charset name (an expression, a hex or bit value
/// holding a name's bytes, or a number, which would name one by id).
pub fn check_client_charset(value: &str) -> Result<(), RouteError> {
    let name = super::scan::unquote(value.trim()).to_ascii_lowercase();
    // Every charset name starts with a letter: `0x67626b` and `0b0110...` are the bytes of a
    // name (`gbk`), `28` an id, not names.
    let named = name.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
    if !named {
        return Err(RouteError::not_supported(format!(
            "the client character set {value} is not supported by the gateway: a charset is set by name"
        )));
    }
    Ok(())
}

/// Checks a storage engine a session variable (`default_storage_engine`,
/// `default_tmp_storage_engine`, `storage_engine`) was set to, as the server settled on it
/// (`'MyISAM'`, quoted or not): the engines a CREATE TABLE may name ([`super::admit`]'s
/// `LOCAL_ENGINES`).
///
/// Errors: 1227 naming the engine.
pub fn check_storage_engine(value: &str) -> Result<(), RouteError> {
    let engine = super::scan::unquote(value.trim()).to_ascii_uppercase();
    if super::admit::LOCAL_ENGINES.contains(&engine.as_str()) {
        Ok(())
    } else {
        Err(denied(&format!("the storage engine {value}")))
    }
}

fn denied(what: &str) -> RouteError {
    RouteError {
        code: 1227,
        state: "42000",
        message: format!("Access denied; {what} is not allowed through the gateway"),
    }
}

/// A token of a SET statement's canonical text (no comments left): its kind and byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
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

fn tokenize(s: &str) -> Result<Vec<(Tok, usize, usize)>, RouteError> {
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
            "SET STATEMENT ... FOR is not supported by the gateway: set the variables with SET, then run the statement".to_string(),
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

/// The value of an on/off variable (`autocommit`, Mycat's `xa`): `1`/`ON`/`TRUE` or
/// `0`/`OFF`/`FALSE`, quoted or not, in any case.
///
/// Errors: MySQL's 1231 naming the variable and the value.
pub fn switch_value(key: &str, value: &str) -> Result<bool, RouteError> {
    let v = super::scan::unquote(value).to_ascii_lowercase();
    match v.as_str() {
        "1" | "on" | "true" => Ok(true),
        "0" | "off" | "false" => Ok(false),
        _ => Err(RouteError {
            code: 1231,
            state: "42000",
            message: format!("Variable '{key}' can't be set to the value of '{v}'"),
        }),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// [`set`] for a configuration of MariaDB dataHosts.
    fn set_(sql: &str) -> Result<Local, RouteError> {
        set(sql, &|n| crate::route::builtins::is_builtin(n, false))
    }

    fn items(sql: &str) -> Vec<(String, String, bool)> {
        match set_(sql).unwrap() {
            Local::Set { items, .. } => items
                .into_iter()
                .map(|i| (i.key, i.assignment, i.evaluate))
                .collect(),
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn global_scope_is_refused_in_every_spelling_and_position() {
        for sql in [
            "SET GLOBAL max_connections = 1",
            "SET @@global.max_connections = 1",
            "SET @@Global . max_connections = 1",
            "SET @@GLOBAL.sql_mode = ''",
            "SET @a = 1, GLOBAL max_connections = 1",
            "SET @a = 1,GLOBAL max_connections = 1",
            "SET PERSIST max_connections = 1",
            "SET  GLOBAL  x = 1",
            "SET sql_log_bin = 0",
            "SET SESSION sql_log_bin = 0",
            "SET @@session.gtid_seq_no = 5",
            "SET PASSWORD FOR 'manx'@'127.0.0.1' = PASSWORD('x')",
            "SET PASSWORD = 'x'",
            "SET ROLE admin",
            "SET DEFAULT ROLE admin FOR u",
            "SET default_storage_engine = MRG_MyISAM",
            "SET SESSION storage_engine = 'CONNECT'",
            "SET default_tmp_storage_engine = FEDERATED",
        ] {
            assert_eq!(set_(sql).unwrap_err().code, 1227, "{sql}");
        }
        assert!(set_("SET default_storage_engine = InnoDB").is_ok());
        assert!(set_("SET default_storage_engine = 'Aria'").is_ok());
    }

    #[test]
    fn unknown_variables_and_set_statement_are_refused() {
        for sql in [
            "SET STATEMENT max_statement_time=10 FOR DELETE FROM pub",
            "SET init_connect = 'x'",
            "SET default.key_buffer_size = 1",
            "SET sql_mode = (SELECT 'x' FROM t)",
            "SET @x = (SELECT user FROM mysql.user LIMIT 1)",
            "SET @x = LOAD_FILE('/etc/passwd')",
            "SET @x = 1 FOR DELETE FROM t",
        ] {
            let e = set_(sql).unwrap_err();
            assert!(matches!(e.code, 1235 | 1227 | 1064), "{sql}: {e:?}");
        }
    }

    #[test]
    fn known_state_is_rebuilt_from_its_parts() {
        assert_eq!(
            items("SET @@session.sql_mode = 'ANSI', @x = 5, SESSION time_zone = '+00:00'"),
            [
                ("sql_mode".into(), "sql_mode = 'ANSI'".into(), true),
                ("@x".into(), "@x = 5".into(), false),
                ("time_zone".into(), "time_zone = '+00:00'".into(), false),
            ]
        );
        assert_eq!(
            items("SET sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')"),
            [(
                "sql_mode".into(),
                "sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')".into(),
                true
            )]
        );
        assert_eq!(set_("SET @`a b` = 1").unwrap_err().code, 1235);
    }

    #[test]
    fn a_client_charset_is_judged_only_by_its_name() {
        // The bytes of `gbk`, `big5` and `sjis` as hex and bit values, and charset ids: not
        // names this check can judge (a hex value passed for a name before).
        for sql in [
            "SET character_set_client = 0x67626b",
            "SET character_set_client = 0X62696735",
            "SET character_set_client = 0b011001110110001001101011",
            "SET character_set_client = '0x736a6973'",
            "SET character_set_client = 28",
            "SET NAMES 0x67626b",
            "SET CHARACTER SET 0x67626b",
        ] {
            assert_eq!(set_(sql).unwrap_err().code, 1235, "{sql}");
        }
        // The session converts these itself (module `crate::charset`).
        assert!(set_("SET character_set_client = latin1").is_ok());
        assert!(set_("SET NAMES gbk").is_ok());
        assert!(set_("SET character_set_client = big5").is_ok());
        // Always read back: the session checks the value the server settled on too.
        let Ok(Local::Set { items, .. }) = set_("SET character_set_client = utf8mb4") else {
            panic!("a SET of state")
        };
        assert!(items[0].evaluate);
    }

    #[test]
    fn names_and_transactions() {
        assert!(set_("SET NAMES utf8mb4 COLLATE utf8mb4_bin").is_ok());
        assert!(set_("SET CHARACTER SET 'latin1'").is_ok());
        assert!(set_("SET NAMES utf8, GLOBAL x = 1").is_err());
        // More assignments after NAMES, in the order written.
        let Ok(Local::Set { autocommit, items }) =
            set_("SET NAMES utf8, character_set_connection=ucs2, autocommit = 0")
        else {
            panic!("SET NAMES with more assignments");
        };
        assert_eq!(autocommit, Some(false));
        let keys: Vec<&str> = items.iter().map(|i| i.key.as_str()).collect();
        assert_eq!(keys, ["names", "character_set_connection"]);
        assert!(set_("SET NAMES utf8, sql_log_bin = 0").is_err());
        assert!(set_("SET NAMES utf8, xa = 1").is_err());
        assert!(set_("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED").is_ok());
        assert!(set_("SET TRANSACTION READ ONLY").is_ok());
        assert!(set_("SET TRANSACTION ISOLATION LEVEL READ COMMITTED; DROP TABLE t").is_err());
        assert_eq!(
            set_("SET GLOBAL TRANSACTION ISOLATION LEVEL SERIALIZABLE")
                .unwrap_err()
                .code,
            1227
        );
        assert_eq!(
            set_("SET autocommit = 0").unwrap(),
            Local::SetAutocommit(false)
        );
        // Mycat's XA switch (SPEC §7.4), on its own only.
        assert_eq!(set_("set xa=on").unwrap(), Local::SetXa(true));
        assert_eq!(set_("SET XA = OFF").unwrap(), Local::SetXa(false));
        assert_eq!(set_("SET @@session.xa = 1").unwrap(), Local::SetXa(true));
        assert_eq!(set_("SET xa = maybe").unwrap_err().code, 1231);
        assert!(set_("SET xa = on, autocommit = 0").is_err());
    }
}
