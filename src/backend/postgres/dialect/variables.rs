//! MySQL system variables (`@@name`) answered on a PostgreSQL dataNode.

use super::*;

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

/// A MySQL system variable's value as a PostgreSQL node behaves (what clients and
/// connectors read on connect). Errors: a variable without a meaningful PostgreSQL value.
pub(super) fn system_variable_value(name: &str) -> Result<Expr, DialectError> {
    let number = |n: &str| Expr::value(Value::Number(n.to_string(), false));
    let setting = |n: &str| call("current_setting", vec![string(n)]);
    Ok(match name {
        // MySQL 8.0's defaults; PostgreSQL has no such limits.
        "max_allowed_packet" => number("67108864"),
        "wait_timeout" | "interactive_timeout" => number("28800"),
        "net_write_timeout" => number("60"),
        "net_read_timeout" => number("30"),
        "auto_increment_increment" | "auto_increment_offset" => number("1"),
        // Unquoted and backquoted names are folded to lower case (module doc).
        "lower_case_table_names" => number("1"),
        "autocommit" => number("1"),
        "tx_read_only" | "transaction_read_only" | "read_only" => number("0"),
        "performance_schema" | "query_cache_size" => number("0"),
        "query_cache_type" => string("OFF"),
        "license" => string("GPL"),
        // PostgreSQL rejects what MySQL's strict mode rejects.
        "sql_mode" => {
            string("STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO")
        }
        "character_set_client"
        | "character_set_connection"
        | "character_set_results"
        | "character_set_server"
        | "character_set_database" => string("utf8mb4"),
        // The nodes compare and order strings by bytes (collation "C").
        "collation_connection" | "collation_server" | "collation_database" => string("utf8mb4_bin"),
        "time_zone" => string("SYSTEM"),
        "system_time_zone" => setting("TimeZone"),
        "tx_isolation" | "transaction_isolation" => call(
            "upper",
            vec![call(
                "replace",
                vec![setting("transaction_isolation"), string(" "), string("-")],
            )],
        ),
        other => {
            return Err(DialectError::Unsupported(format!(
                "the system variable @@{other}"
            )));
        }
    })
}
