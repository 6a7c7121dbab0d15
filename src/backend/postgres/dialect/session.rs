//! Session statements: MySQL's SET forms as PostgreSQL settings, or refused by name.

use super::*;

/// The PostgreSQL statements for a MySQL session `SET` (empty: nothing to send).
///
/// - `NAMES`, `CHARACTER SET`, `character_set_*`, `collation_*`: nothing (connections are
///   UTF-8); so are `sql_mode` (the gateway parses as MySQL whatever it says), `autocommit`
///   (kept by the session) and MySQL-only client settings (`net_*_timeout`, `wait_timeout`,
///   `interactive_timeout`, `sql_auto_is_null`, `sql_safe_updates`, `group_concat_max_len`,
///   `sql_select_limit = DEFAULT`, `sql_quote_show_create`, `foreign_key_checks`, `unique_checks`);
/// - `time_zone`: `'+hh:mm'` → `SET TIME ZONE INTERVAL '+hh:mm' HOUR TO MINUTE`, a named zone
///   → `SET TIME ZONE 'name'`, `'SYSTEM'` → `SET TIME ZONE LOCAL` (the server's own);
/// - isolation (`transaction_isolation`, `tx_isolation`, `SET [SESSION] TRANSACTION ISOLATION
///   LEVEL ..`) and `transaction_read_only`/`tx_read_only` → `SET SESSION CHARACTERISTICS AS
///   TRANSACTION ..`;
/// - `max_execution_time` (ms) → `statement_timeout`; `lock_wait_timeout` and
///   `innodb_lock_wait_timeout` (s) → `lock_timeout` (ms).
///
/// Errors: user variables and any other variable are [`DialectError::Unsupported`], naming it.
pub(super) fn session_set(set: sqlparser::ast::Set) -> Result<Vec<String>, DialectError> {
    use sqlparser::ast::{Set, TransactionIsolationLevel, TransactionMode};
    let assignments: Vec<(String, Expr)> = match set {
        Set::SetNames { .. } | Set::SetNamesDefault {} => return Ok(Vec::new()),
        Set::SetTransaction { modes, .. } => {
            let modes: Vec<String> = modes
                .iter()
                .map(|m| match m {
                    TransactionMode::IsolationLevel(level) => format!(
                        "ISOLATION LEVEL {}",
                        match level {
                            TransactionIsolationLevel::ReadUncommitted => "READ UNCOMMITTED",
                            TransactionIsolationLevel::ReadCommitted => "READ COMMITTED",
                            TransactionIsolationLevel::RepeatableRead => "REPEATABLE READ",
                            TransactionIsolationLevel::Serializable => "SERIALIZABLE",
                            TransactionIsolationLevel::Snapshot => "REPEATABLE READ",
                        }
                    ),
                    TransactionMode::AccessMode(mode) => mode.to_string(),
                })
                .collect();
            return Ok(vec![format!(
                "SET SESSION CHARACTERISTICS AS TRANSACTION {}",
                modes.join(", ")
            )]);
        }
        Set::SingleAssignment {
            variable, values, ..
        } if values.len() == 1 => {
            vec![(
                variable.to_string(),
                values.into_iter().next().expect("one value"),
            )]
        }
        Set::MultipleAssignments { assignments } => assignments
            .into_iter()
            .map(|a| (a.name.to_string(), a.value))
            .collect(),
        other => {
            return Err(DialectError::Unsupported(format!(
                "SET statement `{other}`"
            )));
        }
    };
    let mut out = Vec::new();
    for (name, value) in assignments {
        let lower = name.to_ascii_lowercase();
        let variable = lower
            .trim_start_matches("@@session.")
            .trim_start_matches("@@local.")
            .trim_start_matches("@@");
        if variable.starts_with('@') {
            return Err(DialectError::Unsupported(format!(
                "user variable {name} (PostgreSQL has no session variables of that kind)"
            )));
        }
        // The value as text: a string literal's contents, a number, or a bare word.
        let text = match &value {
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
                Value::Number(n, _) => n.clone(),
                Value::Boolean(b) => if *b { "1" } else { "0" }.to_string(),
                other => other.to_string(),
            },
            Expr::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        };
        let number = |unit_ms: f64| -> Result<String, DialectError> {
            text.parse::<f64>()
                .ok()
                .filter(|n| *n >= 0.0)
                .map(|n| format!("{}", (n * unit_ms).round() as u64))
                .ok_or_else(|| {
                    DialectError::Unsupported(format!("{variable} = {value} (not a number)"))
                })
        };
        let quoted = |s: &str| format!("'{}'", s.replace('\'', "''"));
        match variable {
            "names"
            | "sql_mode"
            | "autocommit"
            | "net_read_timeout"
            | "net_write_timeout"
            | "wait_timeout"
            | "interactive_timeout"
            | "sql_auto_is_null"
            | "sql_safe_updates"
            | "group_concat_max_len"
            | "sql_quote_show_create"
            | "foreign_key_checks"
            | "unique_checks"
            | "sql_notes"
            | "sql_warnings" => {}
            v if v.starts_with("character_set_") || v.starts_with("collation_") => {}
            "sql_select_limit" if text.eq_ignore_ascii_case("default") => {}
            "time_zone" => {
                let zone = text.trim();
                let offset = zone.len() >= 5
                    && (zone.starts_with('+') || zone.starts_with('-'))
                    && zone[1..].split_once(':').is_some_and(|(h, m)| {
                        h.len() <= 2
                            && m.len() == 2
                            && h.chars().chain(m.chars()).all(|c| c.is_ascii_digit())
                    });
                if zone.eq_ignore_ascii_case("system") {
                    out.push("SET TIME ZONE LOCAL".to_string());
                } else if offset {
                    out.push(format!(
                        "SET TIME ZONE INTERVAL {} HOUR TO MINUTE",
                        quoted(zone)
                    ));
                } else {
                    out.push(format!("SET TIME ZONE {}", quoted(zone)));
                }
            }
            "transaction_isolation" | "tx_isolation" => {
                let level = text.replace('-', " ").to_ascii_uppercase();
                if !matches!(
                    level.as_str(),
                    "READ UNCOMMITTED" | "READ COMMITTED" | "REPEATABLE READ" | "SERIALIZABLE"
                ) {
                    return Err(DialectError::Unsupported(format!(
                        "{variable} = '{text}' (not an isolation level)"
                    )));
                }
                out.push(format!(
                    "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL {level}"
                ));
            }
            "transaction_read_only" | "tx_read_only" => {
                let mode = match text.to_ascii_lowercase().as_str() {
                    "1" | "on" | "true" => "READ ONLY",
                    "0" | "off" | "false" => "READ WRITE",
                    _ => {
                        return Err(DialectError::Unsupported(format!("{variable} = '{text}'")));
                    }
                };
                out.push(format!("SET SESSION CHARACTERISTICS AS TRANSACTION {mode}"));
            }
            "max_execution_time" => out.push(format!("SET statement_timeout = {}", number(1.0)?)),
            "lock_wait_timeout" | "innodb_lock_wait_timeout" => {
                out.push(format!("SET lock_timeout = {}", number(1000.0)?))
            }
            _ => {
                return Err(DialectError::Unsupported(format!(
                    "SET {name} (no PostgreSQL equivalent)"
                )));
            }
        }
    }
    Ok(out)
}
