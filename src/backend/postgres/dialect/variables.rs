//! MySQL system variables (`@@name`, `SHOW VARIABLES`) answered on a PostgreSQL dataNode.
//!
//! One table, [`VARIABLES`], answers both `SELECT @@x` and `SHOW [GLOBAL|SESSION] VARIABLES
//! [LIKE 'p' | WHERE ..]`, so the two always agree. It holds every variable the MySQL drivers
//! read when they connect — the start-up probes of MySQL Connector/J 5.1 and 8.0
//! (`ConnectionImpl.loadServerVariables` / `NativeSession.loadServerVariables`), MariaDB
//! Connector/J 2.x (`SELECT @@max_allowed_packet,@@system_time_zone,@@time_zone,
//! @@auto_increment_increment` and its `SHOW VARIABLES WHERE Variable_name in (..)` fallback),
//! Go's `SELECT @@max_allowed_packet`, SQLAlchemy's `SHOW VARIABLES LIKE 'sql_mode'` /
//! `'lower_case_table_names'` / `'character_set%'` — and the read-only and isolation questions
//! of `Connection.isReadOnly()` / `getTransactionIsolation()`. Values that follow the session
//! (isolation, read-only, time zone) are read from the PostgreSQL session; the others are what
//! a PostgreSQL node behaves like, written as MySQL names it. A variable outside the table is
//! refused by name (1235), never guessed.

use super::*;

/// Where a variable's value comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// A number (MySQL answers integer variables as integers).
    Number(&'static str),
    /// A fixed string.
    Text(&'static str),
    /// A PostgreSQL expression over the session (its text, parsed as PostgreSQL).
    Sql(&'static str),
    /// The version the gateway announces ([`crate::version::server_version`]).
    Version,
}

/// `@@time_zone` as MySQL prints it: `SYSTEM` while the session keeps the server's zone, the
/// offset (`+08:00`) after `SET time_zone = '+08:00'` (which becomes a PostgreSQL zone written
/// `<+08>-08`), or the zone's name.
const TIME_ZONE: &str = "CASE WHEN current_setting('TimeZone') = (SELECT reset_val FROM pg_catalog.pg_settings WHERE name = 'TimeZone') THEN 'SYSTEM' \
     WHEN current_setting('TimeZone') LIKE '<%' THEN to_char(now(), 'TZH:TZM') ELSE current_setting('TimeZone') END";

/// `@@transaction_isolation`: PostgreSQL's `read committed` as MySQL's `READ-COMMITTED`.
const ISOLATION: &str = "upper(replace(current_setting('transaction_isolation'), ' ', '-'))";

/// `@@transaction_read_only`: 1 in a read-only transaction or session.
const READ_ONLY_TX: &str =
    "CASE WHEN current_setting('transaction_read_only') = 'on' THEN 1 ELSE 0 END";

/// The variables a PostgreSQL dataNode answers, sorted by name (`SHOW VARIABLES` lists them in
/// this order, as MySQL does).
const VARIABLES: &[(&str, Source)] = &[
    ("auto_increment_increment", Source::Number("1")),
    ("auto_increment_offset", Source::Number("1")),
    // MySQL answers 1/0 (a session that turned it off is answered by the gateway itself).
    ("autocommit", Source::Number("1")),
    ("character_set_client", Source::Text("utf8mb4")),
    ("character_set_connection", Source::Text("utf8mb4")),
    ("character_set_database", Source::Text("utf8mb4")),
    ("character_set_filesystem", Source::Text("binary")),
    ("character_set_results", Source::Text("utf8mb4")),
    ("character_set_server", Source::Text("utf8mb4")),
    ("character_set_system", Source::Text("utf8")),
    // The nodes compare and order strings by bytes (collation "C").
    ("collation_connection", Source::Text("utf8mb4_bin")),
    ("collation_database", Source::Text("utf8mb4_bin")),
    ("collation_server", Source::Text("utf8mb4_bin")),
    ("default_storage_engine", Source::Text("InnoDB")),
    ("have_query_cache", Source::Text("NO")),
    ("init_connect", Source::Text("")),
    ("interactive_timeout", Source::Number("28800")),
    ("license", Source::Text("GPL")),
    // Unquoted and backquoted names are folded to lower case (module doc of the dialect).
    ("lower_case_table_names", Source::Number("1")),
    // manx's own packet limit (server.xml maxPacketSize's default), what a client may send.
    ("max_allowed_packet", Source::Number("16777216")),
    ("net_buffer_length", Source::Number("16384")),
    ("net_read_timeout", Source::Number("30")),
    ("net_write_timeout", Source::Number("60")),
    ("performance_schema", Source::Number("0")),
    ("query_cache_size", Source::Number("0")),
    ("query_cache_type", Source::Text("OFF")),
    (
        "read_only",
        Source::Sql("CASE WHEN pg_is_in_recovery() THEN 1 ELSE 0 END"),
    ),
    // PostgreSQL rejects what MySQL's strict mode rejects.
    (
        "sql_mode",
        Source::Text("STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO"),
    ),
    (
        "system_time_zone",
        Source::Sql("current_setting('TimeZone')"),
    ),
    ("time_zone", Source::Sql(TIME_ZONE)),
    ("transaction_isolation", Source::Sql(ISOLATION)),
    ("transaction_read_only", Source::Sql(READ_ONLY_TX)),
    ("tx_isolation", Source::Sql(ISOLATION)),
    ("tx_read_only", Source::Sql(READ_ONLY_TX)),
    ("version", Source::Version),
    (
        "version_comment",
        Source::Text(crate::version::VERSION_COMMENT),
    ),
    ("version_compile_machine", Source::Text("x86_64")),
    ("version_compile_os", Source::Text("Linux")),
    ("wait_timeout", Source::Number("28800")),
];

/// The lower-case name of a MySQL system variable reference (`@@x`, `@@session.x`).
pub(super) fn system_variable(expr: &Expr) -> Option<String> {
    let name = match expr {
        Expr::Identifier(i) if i.quote_style.is_none() => i.value.strip_prefix("@@")?.to_string(),
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            let scope = parts[0].value.strip_prefix("@@")?.to_ascii_lowercase();
            if !matches!(scope.as_str(), "session" | "local" | "global") {
                return None;
            }
            parts[1].value.clone()
        }
        _ => return None,
    };
    Some(name.to_ascii_lowercase())
}

/// The PostgreSQL expression of one source.
fn source_expr(source: Source) -> Result<Expr, DialectError> {
    Ok(match source {
        Source::Number(n) => Expr::value(Value::Number(n.to_string(), false)),
        Source::Text(s) => string(s),
        Source::Version => string(crate::version::function_version()),
        Source::Sql(sql) => Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| DialectError::Parse(format!("variable expression {sql}: {e}")))?,
    })
}

/// A MySQL system variable's value as a PostgreSQL node behaves (see the module doc).
///
/// Errors: [`DialectError::Unsupported`] naming a variable outside [`VARIABLES`].
pub(super) fn system_variable_value(name: &str) -> Result<Expr, DialectError> {
    match VARIABLES.binary_search_by(|(n, _)| n.cmp(&name)) {
        Ok(i) => source_expr(VARIABLES[i].1),
        Err(_) => Err(DialectError::Unsupported(format!(
            "the system variable @@{name}"
        ))),
    }
}

/// `SHOW [GLOBAL|SESSION] VARIABLES [LIKE 'p' | WHERE expr]` as a PostgreSQL query of
/// [`VARIABLES`] with MySQL's two columns (`Variable_name`, `Value`, both strings). `LIKE`
/// ignores case, as MySQL's does on variable names; a `WHERE` may name `Variable_name` and
/// `Value` (the router admits only the forms drivers send).
///
/// Errors: a `WHERE` expression that does not translate.
pub(super) fn show_variables(
    filter: Option<&sqlparser::ast::ShowStatementFilter>,
) -> Result<Statement, DialectError> {
    use sqlparser::ast::ShowStatementFilter as F;
    let mut rows = Vec::with_capacity(VARIABLES.len());
    for (name, source) in VARIABLES {
        rows.push(format!(
            "('{name}', CAST({} AS TEXT))",
            source_expr(*source)?
        ));
    }
    // The client's pattern or condition goes into the parsed statement as an expression,
    // never into the text (its printing is made safe with the rest of the statement).
    let condition = match filter {
        None => None,
        Some(F::Like(p)) | Some(F::ILike(p)) | Some(F::NoKeyword(p)) => Some(Expr::Like {
            negated: false,
            any: false,
            expr: Box::new(call(
                "lower",
                vec![Expr::Identifier(Ident::new("variable_name"))],
            )),
            pattern: Box::new(call("lower", vec![string(p)])),
            escape_char: None,
        }),
        Some(F::Where(e)) => {
            // Already rewritten with the statement; MySQL compares without regard to case.
            let mut e = e.clone();
            let _ = e.visit(&mut IgnoreCase);
            Some(e)
        }
    };
    let sql = format!(
        "SELECT variable_name AS \"Variable_name\", value AS \"Value\" FROM (VALUES {}) AS v(variable_name, value) ORDER BY variable_name",
        rows.join(", ")
    );
    let mut parsed = Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, &sql)
        .map_err(|e| DialectError::Parse(e.to_string()))?;
    let mut statement = parsed.remove(0);
    if let Statement::Query(q) = &mut statement
        && let sqlparser::ast::SetExpr::Select(select) = q.body.as_mut()
    {
        select.selection = condition;
    }
    Ok(statement)
}

/// A `SHOW VARIABLES WHERE` compared without regard to case, as MySQL's collation compares
/// both columns: `Variable_name` and `Value` become `lower(..)` of the query's columns and
/// string literals are lower-cased.
struct IgnoreCase;

impl VisitorMut for IgnoreCase {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::Identifier(i)
                if i.quote_style.is_none()
                    && (i.value.eq_ignore_ascii_case("variable_name")
                        || i.value.eq_ignore_ascii_case("value")) =>
            {
                let column = i.value.to_ascii_lowercase();
                *expr = call("lower", vec![Expr::Identifier(Ident::new(column))]);
            }
            Expr::Value(v) => {
                if let Value::SingleQuotedString(s) = &mut v.value {
                    *s = s.to_lowercase();
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_for_binary_search() {
        assert!(VARIABLES.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn every_expression_parses() {
        for (name, source) in VARIABLES {
            source_expr(*source).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
