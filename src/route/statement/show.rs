//! `SHOW` statements: the forms answered locally, mapped to `information_schema`, or sent to a node.

use super::*;
use crate::route::Refusal;

/// `SHOW ...` (SPEC §5.16).
pub(super) fn show(
    r: &Router,
    stmt: &str,
    words: &[&str],
    view: &SessionView<'_>,
) -> Result<Routed, RouteError> {
    let schema = view.schema;
    let mut i = 1;
    let full = is(words.get(i), "FULL");
    if full {
        i += 1;
    }
    let what = words
        .get(i)
        .map(|w| w.to_ascii_uppercase())
        .unwrap_or_default();
    match what.as_str() {
        "DATABASES" | "SCHEMAS" if i == 1 => {
            let pattern = match (words.get(2), words.get(3)) {
                (None, _) => None,
                (Some(w), Some(p)) if w.eq_ignore_ascii_case("LIKE") => {
                    Some(scan::unquote(p).to_string())
                }
                _ => return Err(RouteError::syntax("SHOW DATABASES supports only LIKE here")),
            };
            Ok(Routed::Local(Local::ShowDatabases(pattern)))
        }
        "COUNT(*)" if i == 1 && is(words.get(2), "WARNINGS") && words.len() == 3 => Ok(
            Routed::Local(Local::WarningCount("@@session.warning_count".to_string())),
        ),
        "COUNT(*)" if i == 1 && is(words.get(2), "ERRORS") && words.len() == 3 => Ok(
            Routed::Local(Local::ErrorCount("@@session.error_count".to_string())),
        ),
        "WARNINGS" | "ERRORS" if i == 1 => {
            // SHOW WARNINGS|ERRORS [LIMIT [offset,] n]
            let errors = is(words.get(1), "ERRORS");
            let bad =
                || RouteError::syntax("SHOW WARNINGS|ERRORS supports only LIMIT [offset,] n here");
            let rest = words.get(2..).unwrap_or_default();
            let (offset, limit) = match rest.split_first() {
                None => (0, None),
                Some((l, args)) if l.eq_ignore_ascii_case("LIMIT") => {
                    let args: String = args.concat();
                    let numbers: Vec<usize> = args
                        .split(',')
                        .map(|n| n.parse().map_err(|_| bad()))
                        .collect::<Result<_, _>>()?;
                    match numbers[..] {
                        [n] => (0, Some(n)),
                        [o, n] => (o, Some(n)),
                        _ => return Err(bad()),
                    }
                }
                Some(_) => return Err(bad()),
            };
            Ok(Routed::Local(Local::ShowWarnings {
                offset,
                limit,
                errors,
            }))
        }
        "GRANTS" if !full => show_grants(&words[i + 1..], view),
        "CREATE" if is(words.get(i + 1), "VIEW") && words.len() == i + 3 => {
            // A view of a schema's default dataNode, described there as a table would be.
            let (node, table_text) = table_node(r, words[i + 2], view)?;
            Ok(single(node, format!("SHOW CREATE VIEW {table_text}"), true))
        }
        "GRANTS" | "PROCESSLIST" => Err(RouteError::new(
            Refusal::PrivilegeRequired,
            format!(
                "Access denied; SHOW {what} of the backend servers is not available through the gateway"
            ),
        )),
        "CREATE" if is(words.get(i + 1), "DATABASE") || is(words.get(i + 1), "SCHEMA") => {
            let name = words.get(i + 2).map(|w| scan::unquote(w)).unwrap_or("");
            let s = require_schema(r, Some(name), view)?;
            Ok(Routed::Local(Local::ShowCreateDatabase(s.name.clone())))
        }
        "TABLES" => show_tables(r, stmt, view, ShowKind::Tables),
        "TABLE" if !full && is(words.get(i + 1), "STATUS") => {
            show_tables(r, stmt, view, ShowKind::TableStatus)
        }
        "PROCEDURE" | "FUNCTION" if !full && is(words.get(i + 1), "STATUS") => show_tables(
            r,
            stmt,
            view,
            ShowKind::Routines(if what == "PROCEDURE" {
                "PROCEDURE"
            } else {
                "FUNCTION"
            }),
        ),
        "TRIGGERS" if !full => show_tables(r, stmt, view, ShowKind::Triggers),
        "EVENTS" if !full => show_tables(r, stmt, view, ShowKind::Events),
        "COLUMNS" | "FIELDS" | "INDEX" | "INDEXES" | "KEYS" => {
            let j = i + 1;
            if !(is(words.get(j), "FROM") || is(words.get(j), "IN")) || words.len() <= j + 1 {
                return Err(RouteError::syntax(format!("SHOW {what} needs FROM table")));
            }
            let mut table = words[j + 1].to_string();
            let mut k = j + 2;
            if is(words.get(k), "FROM") || is(words.get(k), "IN") {
                table = format!("{}.{}", words.get(k + 1).copied().unwrap_or(""), table);
                k += 2;
            }
            let (node, table_text) = table_node(r, &table, view)?;
            // Only `LIKE 'pattern'` may follow: a WHERE could carry a subquery of any table.
            let tail = &words[k..];
            let tail_ok = match tail {
                [] => true,
                [l, p] => {
                    l.eq_ignore_ascii_case("LIKE")
                        && p.len() >= 2
                        && p.starts_with('\'')
                        && p.ends_with('\'')
                        && !p[1..p.len() - 1].contains('\'')
                }
                _ => false,
            };
            if !tail_ok {
                return Err(RouteError::syntax(format!(
                    "SHOW {what} supports only FROM table [FROM db] [LIKE 'pattern'] here"
                )));
            }
            let sql = format!(
                "{} FROM {table_text} {}",
                words[..=i].join(" "),
                tail.join(" ")
            );
            Ok(single(node, sql.trim_end().to_string(), true))
        }
        // A MariaDB sequence is shown where it is placed, as a table (module `sequence`).
        "CREATE" if is(words.get(i + 1), "SEQUENCE") && words.len() >= i + 3 => {
            if words.len() > i + 3 {
                return Err(RouteError::syntax(
                    "SHOW CREATE SEQUENCE takes one sequence",
                ));
            }
            let (node, table_text) = table_node(r, words[i + 2], view)?;
            Ok(single(
                node,
                format!("SHOW CREATE SEQUENCE {table_text}"),
                true,
            ))
        }
        "CREATE" if is(words.get(i + 1), "TABLE") && words.len() >= i + 3 => {
            if words.len() > i + 3 {
                return Err(RouteError::syntax("SHOW CREATE TABLE takes one table"));
            }
            let (node, table_text) = table_node(r, words[i + 2], view)?;
            Ok(single(
                node,
                format!("SHOW CREATE TABLE {table_text}"),
                true,
            ))
        }
        // What describes the server's settings and the session, nothing of other databases, its
        // users or its logs: forwarded with LIKE only (a WHERE could carry a subquery).
        "VARIABLES" | "STATUS" | "WARNINGS" | "ERRORS" | "ENGINES" | "COLLATION" | "CHARSET"
        | "CHARACTER" | "PLUGINS" | "PRIVILEGES" | "SESSION" | "LOCAL" | "GLOBAL" | "COUNT(*)"
            if server_show_form(stmt) =>
        {
            // Server-level SHOW (VARIABLES, STATUS, WARNINGS, ...): any node of the schema, or
            // without one, of a schema the user may use (never another's node).
            let s = match schema {
                Some(_) => require_schema(r, schema, view)?,
                None => r
                    .schemas
                    .values()
                    .find(|s| view.access.is_none_or(|a| a.may_use(&s.name)))
                    .ok_or_else(RouteError::no_database)?,
            };
            let columns_used = std::cell::Cell::new(false);
            let ctx = Ctx {
                r,
                s,
                stmt,
                edits: Edits::default(),
                columns: view.columns,
                columns_used: &columns_used,
            };
            let mut routed = ctx.plan_any(&s.nodes);
            if let Routed::Plan(p) = &mut routed {
                p.server_variables = words[i..]
                    .iter()
                    .take(2)
                    .any(|w| w.eq_ignore_ascii_case("VARIABLES"));
            }
            Ok(routed)
        }
        _ => Err(RouteError::new(
            Refusal::PrivilegeRequired,
            format!(
                "Access denied; SHOW {} is not available through the gateway",
                words[i..]
                    .iter()
                    .take(2)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        )),
    }
}

/// `SHOW GRANTS [FOR CURRENT_USER[()] | user[@host]]` (`rest`: the words after GRANTS): the
/// user's own rights at the gateway from server.xml — USAGE, then per logical schema `ALL
/// PRIVILEGES`, `SELECT` for a `readOnly` user, or the DML its `<privileges>` mask grants
/// (MySQL lists privileges in the order SELECT, INSERT, UPDATE, DELETE), and a line per table
/// with its own mask. Another user's grants need rights on `mysql` in MySQL: 1044, as MySQL
/// answers such a user. Without a user (the gateway's own statements): 1227.
fn show_grants(rest: &[&str], view: &SessionView<'_>) -> Result<Routed, RouteError> {
    let Some(access) = view.access else {
        return Err(RouteError::new(
            Refusal::PrivilegeRequired,
            "Access denied; SHOW GRANTS needs a user",
        ));
    };
    let user = &access.user;
    match rest {
        [] => {}
        [f, who] if f.eq_ignore_ascii_case("FOR") => {
            let name = who.split('@').next().unwrap_or("");
            let name = name.trim_matches(|c| c == '\'' || c == '`' || c == '"');
            let own = who.eq_ignore_ascii_case("CURRENT_USER")
                || who.eq_ignore_ascii_case("CURRENT_USER()")
                || name == user;
            if !own {
                return Err(RouteError::new(
                    Refusal::DatabaseAccessDenied,
                    format!("Access denied for user '{user}'@'%' to database 'mysql'"),
                ));
            }
        }
        _ => {
            return Err(RouteError::syntax(
                "SHOW GRANTS supports only FOR CURRENT_USER or the session's own user here",
            ));
        }
    }
    let to = format!("TO '{}'@'%'", user.replace('\'', "''"));
    // server.xml's mask order: INSERT, UPDATE, SELECT, DELETE.
    let dml = |mask: &[bool; 4]| {
        let names: Vec<&str> = [(2, "SELECT"), (0, "INSERT"), (1, "UPDATE"), (3, "DELETE")]
            .iter()
            .filter(|(i, _)| mask[*i] && (!access.read_only || *i == 2))
            .map(|(_, n)| *n)
            .collect();
        if names.is_empty() {
            "USAGE".to_string()
        } else {
            names.join(", ")
        }
    };
    let mut grants = vec![format!("GRANT USAGE ON *.* {to}")];
    for schema in &access.schemas {
        let checked = access.privileges.as_ref().and_then(|p| p.get(schema));
        let privileges = match checked {
            Some(p) => dml(&p.dml),
            None if access.read_only => "SELECT".to_string(),
            None => "ALL PRIVILEGES".to_string(),
        };
        grants.push(format!("GRANT {privileges} ON `{schema}`.* {to}"));
        for (table, mask) in checked.map(|p| &p.tables).into_iter().flatten() {
            grants.push(format!(
                "GRANT {} ON `{schema}`.`{}` {to}",
                dml(mask),
                table.replace('`', "``")
            ));
        }
    }
    Ok(Routed::Local(Local::ShowGrants {
        label: format!("Grants for {user}@%"),
        grants,
    }))
}

/// The SHOW statements answered from `information_schema` for the logical schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ShowKind {
    /// `SHOW [FULL] TABLES`.
    Tables,
    /// `SHOW TABLE STATUS`.
    TableStatus,
    /// `SHOW PROCEDURE STATUS` / `SHOW FUNCTION STATUS` (the routine type).
    Routines(&'static str),
    /// `SHOW TRIGGERS`.
    Triggers,
    /// `SHOW EVENTS`.
    Events,
}

impl ShowKind {
    /// The words after `SHOW`, for messages, and how many tokens they take with `SHOW`.
    fn what(self) -> (&'static str, usize) {
        match self {
            ShowKind::Tables => ("TABLES", 2),
            ShowKind::TableStatus => ("TABLE STATUS", 3),
            ShowKind::Routines("PROCEDURE") => ("PROCEDURE STATUS", 3),
            ShowKind::Routines(_) => ("FUNCTION STATUS", 3),
            ShowKind::Triggers => ("TRIGGERS", 2),
            ShowKind::Events => ("EVENTS", 2),
        }
    }

    /// (information_schema view, schema column, column `LIKE` matches, MySQL's result columns as
    /// (view column, label)).
    fn source(
        self,
    ) -> (
        &'static str,
        &'static str,
        &'static str,
        &'static [(&'static str, &'static str)],
    ) {
        match self {
            ShowKind::Tables => ("TABLES", "TABLE_SCHEMA", "TABLE_NAME", &[]),
            ShowKind::TableStatus => (
                "TABLES",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                &[
                    ("TABLE_NAME", "Name"),
                    ("ENGINE", "Engine"),
                    ("VERSION", "Version"),
                    ("ROW_FORMAT", "Row_format"),
                    ("TABLE_ROWS", "Rows"),
                    ("AVG_ROW_LENGTH", "Avg_row_length"),
                    ("DATA_LENGTH", "Data_length"),
                    ("MAX_DATA_LENGTH", "Max_data_length"),
                    ("INDEX_LENGTH", "Index_length"),
                    ("DATA_FREE", "Data_free"),
                    ("AUTO_INCREMENT", "Auto_increment"),
                    ("CREATE_TIME", "Create_time"),
                    ("UPDATE_TIME", "Update_time"),
                    ("CHECK_TIME", "Check_time"),
                    ("TABLE_COLLATION", "Collation"),
                    ("CHECKSUM", "Checksum"),
                    ("CREATE_OPTIONS", "Create_options"),
                    ("TABLE_COMMENT", "Comment"),
                ],
            ),
            ShowKind::Routines(_) => (
                "ROUTINES",
                "ROUTINE_SCHEMA",
                "ROUTINE_NAME",
                &[
                    ("ROUTINE_SCHEMA", "Db"),
                    ("ROUTINE_NAME", "Name"),
                    ("ROUTINE_TYPE", "Type"),
                    ("DEFINER", "Definer"),
                    ("LAST_ALTERED", "Modified"),
                    ("CREATED", "Created"),
                    ("SECURITY_TYPE", "Security_type"),
                    ("ROUTINE_COMMENT", "Comment"),
                    ("CHARACTER_SET_CLIENT", "character_set_client"),
                    ("COLLATION_CONNECTION", "collation_connection"),
                    ("DATABASE_COLLATION", "Database Collation"),
                ],
            ),
            ShowKind::Triggers => (
                "TRIGGERS",
                "TRIGGER_SCHEMA",
                "EVENT_OBJECT_TABLE",
                &[
                    ("TRIGGER_NAME", "Trigger"),
                    ("EVENT_MANIPULATION", "Event"),
                    ("EVENT_OBJECT_TABLE", "Table"),
                    ("ACTION_STATEMENT", "Statement"),
                    ("ACTION_TIMING", "Timing"),
                    ("CREATED", "Created"),
                    ("SQL_MODE", "sql_mode"),
                    ("DEFINER", "Definer"),
                    ("CHARACTER_SET_CLIENT", "character_set_client"),
                    ("COLLATION_CONNECTION", "collation_connection"),
                    ("DATABASE_COLLATION", "Database Collation"),
                ],
            ),
            ShowKind::Events => (
                "EVENTS",
                "EVENT_SCHEMA",
                "EVENT_NAME",
                &[
                    ("EVENT_SCHEMA", "Db"),
                    ("EVENT_NAME", "Name"),
                    ("DEFINER", "Definer"),
                    ("TIME_ZONE", "Time zone"),
                    ("EVENT_TYPE", "Type"),
                    ("EXECUTE_AT", "Execute at"),
                    ("INTERVAL_VALUE", "Interval value"),
                    ("INTERVAL_FIELD", "Interval field"),
                    ("STARTS", "Starts"),
                    ("ENDS", "Ends"),
                    ("STATUS", "Status"),
                    ("ORIGINATOR", "Originator"),
                    ("CHARACTER_SET_CLIENT", "character_set_client"),
                    ("COLLATION_CONNECTION", "collation_connection"),
                    ("DATABASE_COLLATION", "Database Collation"),
                ],
            ),
        }
    }
}

/// Whether a server-level SHOW (`SHOW [GLOBAL|SESSION] VARIABLES|STATUS [LIKE 'p' | WHERE
/// <comparisons of Variable_name and Value with strings>]`,
/// `SHOW WARNINGS|ERRORS [LIMIT [m,] n]`, `SHOW COUNT(*) WARNINGS`, `SHOW ENGINES`, `SHOW
/// COLLATION|CHARSET|CHARACTER SET [LIKE 'p']`, `SHOW PLUGINS`, `SHOW PRIVILEGES`) has only
/// the words of those forms, numbers, and one string right after LIKE: an allow-list over the
/// tokens, so `WHERE(...)` (a subquery of any table, run as the backend account) or `SONAME`
/// (the server's plugin files) is refused however it is spelled.
pub(super) fn server_show_form(stmt: &str) -> bool {
    const WORDS: &[&str] = &[
        "SHOW",
        "GLOBAL",
        "SESSION",
        "LOCAL",
        "VARIABLES",
        "STATUS",
        "WARNINGS",
        "ERRORS",
        "COUNT",
        "ENGINES",
        "STORAGE",
        "COLLATION",
        "CHARSET",
        "CHARACTER",
        "SET",
        "PLUGINS",
        "PRIVILEGES",
        "LIKE",
        "LIMIT",
    ];
    // After `SHOW [GLOBAL|SESSION] VARIABLES|STATUS WHERE`: comparisons of the two columns
    // with strings (`Variable_name IN ('a', 'b')`, MariaDB Connector/J's fallback probe).
    const WHERE_WORDS: &[&str] = &["VARIABLE_NAME", "VALUE", "IN", "LIKE", "OR", "AND", "NOT"];
    let Some(toks) = rewrite::tokens(stmt) else {
        return false;
    };
    let mut after_like = false;
    let mut in_where = false;
    let mut variables_or_status = false;
    for (t, _, _) in &toks {
        let ok = match t {
            Token::Word(w) if in_where => {
                w.quote_style.is_none()
                    && WHERE_WORDS.iter().any(|k| w.value.eq_ignore_ascii_case(k))
            }
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("WHERE") => {
                in_where = variables_or_status;
                in_where
            }
            Token::Word(w) => {
                w.quote_style.is_none() && WORDS.iter().any(|k| w.value.eq_ignore_ascii_case(k))
            }
            // A double-quoted string too: the canonical text keeps `"..."` only where it is
            // one (under ANSI_QUOTES it is a name, sent as `` `...` ``, module `lex`).
            Token::SingleQuotedString(_) | Token::DoubleQuotedString(_) => after_like || in_where,
            Token::Eq | Token::Neq if in_where => true,
            Token::Number(..) | Token::Comma | Token::LParen | Token::RParen | Token::Mul => true,
            _ => false,
        };
        if !ok {
            return false;
        }
        if let Token::Word(w) = t {
            variables_or_status |=
                w.value.eq_ignore_ascii_case("VARIABLES") || w.value.eq_ignore_ascii_case("STATUS");
        }
        after_like = matches!(t, Token::Word(w) if w.value.eq_ignore_ascii_case("LIKE"));
    }
    true
}

/// `SHOW [FULL] TABLES`, `SHOW TABLE STATUS`, `SHOW PROCEDURE|FUNCTION STATUS`, `SHOW TRIGGERS`,
/// `SHOW EVENTS`, each with optional `FROM db` and `LIKE 'p'` or `WHERE expr` (read from
/// sqlparser's `SHOW TABLES` AST: the text after the keywords is parsed as the tail of one).
///
/// A schema without a default dataNode lists its configured tables itself, lower-cased
/// (SPEC §5.16), unless a `WHERE` asks about the columns; otherwise the statement becomes a
/// query of the `information_schema` view MySQL answers it from, answered for the logical
/// schemas (module `metadata`): the header is `Tables_in_<logical schema>`, the configured
/// tables and those of the default dataNode are listed, and no physical database appears.
/// Routines, triggers and events are not reachable through the gateway: they list nothing.
///
/// Errors: 1227 for a backend's own schema, 1049 for an unknown one, 1064 for a form the parser
/// rejects.
pub(super) fn show_tables(
    r: &Router,
    stmt: &str,
    view: &SessionView<'_>,
    kind: ShowKind,
) -> Result<Routed, RouteError> {
    let schema = view.schema;
    use sqlparser::ast::{ShowStatementFilter, ShowStatementFilterPosition};
    let (what, keywords) = kind.what();
    let text = if kind == ShowKind::Tables {
        std::borrow::Cow::Borrowed(stmt)
    } else {
        let toks = rewrite::tokens(stmt).unwrap_or_default();
        let tail = toks.get(keywords - 1).map_or("", |t| &stmt[t.1.end..]);
        std::borrow::Cow::Owned(format!("SHOW TABLES{tail}"))
    };
    let ast = Parser::parse_sql(&MySqlDialect {}, &text)
        .map_err(|e| RouteError::syntax(format!("SHOW {what}: {e}")))?;
    let [
        Statement::ShowTables {
            full, show_options, ..
        },
    ] = ast.as_slice()
    else {
        return Err(RouteError::syntax(format!("SHOW {what}: unsupported form")));
    };
    if show_options.starts_with.is_some() || show_options.limit.is_some() {
        return Err(RouteError::syntax(format!(
            "SHOW {what} supports only FROM, LIKE and WHERE"
        )));
    }
    let named = show_options
        .show_in
        .as_ref()
        .and_then(|i| i.parent_name.as_ref())
        .and_then(|n| n.0.last())
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone());
    if let Some(n) = named.as_deref()
        && SYSTEM_SCHEMAS.iter().any(|x| x.eq_ignore_ascii_case(n))
    {
        return Err(RouteError::new(
            Refusal::PrivilegeRequired,
            format!(
                "Access denied; SHOW {what} of the backend servers' schema {n} is not available through the gateway"
            ),
        ));
    }
    let filter = match &show_options.filter_position {
        Some(ShowStatementFilterPosition::Infix(f) | ShowStatementFilterPosition::Suffix(f)) => {
            Some(f)
        }
        None => None,
    };
    let pattern = match filter {
        Some(ShowStatementFilter::Like(p)) => Some(p.as_str()),
        Some(ShowStatementFilter::Where(_)) | None => None,
        Some(_) => {
            return Err(RouteError::syntax(format!(
                "SHOW {what} supports only LIKE and WHERE filters"
            )));
        }
    };
    let filter_where = match filter {
        Some(ShowStatementFilter::Where(e)) => Some(e),
        _ => None,
    };
    // Routines are listed for every schema; the rest for one.
    let s = match kind {
        ShowKind::Routines(_) => None,
        _ => Some(require_schema(r, named.as_deref().or(schema), view)?),
    };
    if let Some(s) = s
        && kind == ShowKind::Tables
        && s.default_node.is_none()
        && filter_where.is_none()
    {
        // A table the user's `<privileges>` deny everything on is not listed (MariaDB's rule).
        // As schema.xml spells them (Mycat upper-cases them all).
        let tables = s
            .tables
            .values()
            .filter(|t| !view.access.is_some_and(|a| a.denies_all(&s.name, &t.name)))
            .map(|t| t.spelled.clone())
            .filter(|t| pattern.is_none_or(|p| like(t, p)))
            .collect();
        return Ok(Routed::Local(Local::ShowTables {
            schema: s.name.clone(),
            full: *full,
            tables,
        }));
    }
    let (view_name, schema_column, like_column, labels) = kind.source();
    let columns = match (kind, s) {
        (ShowKind::Tables, Some(s)) => {
            let header = metadata::quote_ident(&format!("Tables_in_{}", s.name));
            if *full {
                format!("TABLE_NAME AS {header}, TABLE_TYPE AS `Table_type`")
            } else {
                format!("TABLE_NAME AS {header}")
            }
        }
        _ => labels
            .iter()
            .map(|(c, a)| format!("{c} AS {}", metadata::quote_ident(a)))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let mut conditions = Vec::new();
    if let Some(s) = s {
        conditions.push(format!(
            "{schema_column} = {}",
            metadata::quote_literal(&s.name)
        ));
    }
    if let ShowKind::Routines(t) = kind {
        conditions.push(format!("ROUTINE_TYPE = '{t}'"));
    }
    if let Some(p) = pattern {
        conditions.push(format!("{like_column} LIKE {}", metadata::quote_literal(p)));
    }
    let mut sql = format!(
        "SELECT {columns} FROM information_schema.{view_name} WHERE {}",
        conditions.join(" AND ")
    );
    if filter_where.is_some() {
        // The condition as the client wrote it (canonical text), never re-printed from the
        // AST: sqlparser prints a string's backslashes as they are, so `'x\\'` would come out
        // as `'x\'` and end the string elsewhere on the backend than here.
        let toks = rewrite::tokens(&text).unwrap_or_default();
        let at = toks
            .iter()
            .find(|(t, _, depth)| {
                *depth == 0 && matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("WHERE"))
            })
            .map(|(_, range, _)| range.end)
            .ok_or_else(|| RouteError::syntax(format!("SHOW {what}: unsupported WHERE form")))?;
        sql = format!("SELECT * FROM ({sql}) AS t WHERE {}", text[at..].trim());
    }
    // MySQL lists by name (routines and events by schema, then name).
    sql.push_str(match kind {
        ShowKind::Routines(_) | ShowKind::Events => " ORDER BY 1, 2",
        _ => " ORDER BY 1",
    });
    let routing_schema = s.map(|s| s.name.clone());
    let inner = SessionView {
        schema: routing_schema.as_deref().or(schema),
        ..*view
    };
    match parsed(r, &sql, &inner, &mut CacheHints::default())? {
        Routed::Metadata(q) => Ok(Routed::Metadata(match s {
            Some(s) => q.requiring(&s.name),
            None => q,
        })),
        other => Ok(other),
    }
}

/// MySQL `LIKE` with `%` and `_` (and `\\` escapes), case-insensitive.
pub fn like(s: &str, pattern: &str) -> bool {
    // Pattern tokens: Some(c) a literal (after `\\`), None for `_`; `%` handled as "any run".
    #[derive(Clone, Copy)]
    enum P {
        Any,
        One,
        Lit(char),
    }
    let mut pat = Vec::new();
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        pat.push(match c {
            '%' => P::Any,
            '_' => P::One,
            '\\' => P::Lit(it.next().unwrap_or('\\')),
            c => P::Lit(c),
        });
    }
    let s: Vec<char> = s.chars().collect();
    // Dynamic programming over (pattern position, text position): linear in each, never
    // exponential, whatever the number of `%`.
    let mut row = vec![false; s.len() + 1];
    row[0] = true;
    for p in &pat {
        let mut next = vec![false; s.len() + 1];
        match p {
            P::Any => {
                let mut seen = false;
                for i in 0..=s.len() {
                    seen |= row[i];
                    next[i] = seen;
                }
            }
            P::One => {
                next[1..].copy_from_slice(&row[..s.len()]);
            }
            P::Lit(c) => {
                for i in 1..=s.len() {
                    next[i] = row[i - 1] && s[i - 1].to_lowercase().eq(c.to_lowercase());
                }
            }
        }
        row = next;
    }
    row[s.len()]
}
