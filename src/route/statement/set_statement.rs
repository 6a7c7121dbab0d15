//! MariaDB's `SET STATEMENT name = literal, ... FOR <statement>`: the statement routed as if
//! sent alone (every check), each dataNode's statement sent with the same variables
//! (`SET STATEMENT <rebuilt assignments> FOR <node statement>`), the assignments read and
//! checked as a `SET` of them (module `set`).

use super::*;

/// Routes `stmt` (canonical, starting `SET STATEMENT`).
///
/// Errors: the assignments' ([`super::super::set::set_statement`]); the statement's own; 1235
/// when the `sql_mode` it sets lexes the statement otherwise than the session's does (a `"`
/// or `\` in it), when a dataNode is PostgreSQL, or when the gateway would answer the
/// statement itself or look up rows first.
pub(super) fn set_statement(
    r: &Router,
    stmt: &str,
    view: &SessionView<'_>,
) -> Result<Routed, RouteError> {
    let s = super::super::set::set_statement(stmt, &|n| r.knows_function(n))?;
    let inner = &stmt[s.at..];
    let refuse =
        |why: &str| RouteError::not_supported(format!("SET STATEMENT {} FOR {why}", s.assignments));
    // The gateway reads the statement under the session's sql_mode; the backend will read it
    // under the one set here. Only where both read it alike (no `"`, no `\`) may it run.
    if s.sql_mode.is_some_and(|m| m != view.mode) && (inner.contains('"') || inner.contains('\\')) {
        return Err(refuse(
            "a statement with \" or \\ under an sql_mode that reads them otherwise than the session's: set sql_mode with SET first",
        ));
    }
    match route(r, inner, view, None)? {
        Routed::Plan(mut plan) => {
            if let Some(t) = plan
                .targets
                .iter()
                .chain(plan.fallback.iter())
                .find(|t| !r.is_mysql_node(&t.node))
            {
                return Err(refuse(&format!(
                    "a statement on dataNode {} (PostgreSQL has no SET STATEMENT)",
                    t.node
                )));
            }
            for t in plan.targets.iter_mut().chain(plan.fallback.iter_mut()) {
                t.sql = Arc::from(format!("SET STATEMENT {} FOR {}", s.assignments, t.sql));
            }
            Ok(Routed::Plan(plan))
        }
        // An INSERT without a column list: the session reads it, then routes this again.
        Routed::Columns(c) => Ok(Routed::Columns(c)),
        Routed::Lookup(_) | Routed::Sequence(_) => Err(refuse(
            "an INSERT that needs a parent row or a sequence value first",
        )),
        Routed::Local(_) | Routed::Metadata(_) => {
            Err(refuse("a statement the gateway answers itself"))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::route::{Refusal, Routed, SessionView};

    fn route(sql: &str) -> Result<Routed, crate::route::RouteError> {
        crate::route::bundled_router().route_for(sql, &SessionView::schema(Some("TESTDB")), None)
    }

    #[test]
    fn each_data_node_gets_the_statement_with_the_variables_rebuilt() {
        let Ok(Routed::Plan(plan)) = route(
            "SET STATEMENT max_statement_time=10, SQL_MODE = 'NO_ENGINE_SUBSTITUTION' FOR SELECT * FROM travelrecord WHERE id IN (1, 5000001)",
        ) else {
            panic!("not a plan");
        };
        let sql: Vec<&str> = plan.targets.iter().map(|t| &*t.sql).collect();
        assert_eq!(
            sql,
            ["SET STATEMENT max_statement_time = 10, sql_mode = 'NO_ENGINE_SUBSTITUTION' FOR SELECT * FROM travelrecord WHERE id IN (1, 5000001)";
                2]
        );
        assert!(plan.merge.is_some() || plan.targets.len() == 2);
    }

    #[test]
    fn what_a_set_refuses_or_the_gateway_cannot_follow_is_refused() {
        for (sql, refusal) in [
            // The statement's own checks.
            (
                "SET STATEMENT sql_mode = '' FOR SELECT * FROM mysql.user",
                Refusal::DatabaseAccessDenied,
            ),
            // Variables: privileged, unknown, user variables, charsets, not literals.
            (
                "SET STATEMENT sql_log_bin = 0 FOR DELETE FROM company",
                Refusal::PrivilegeRequired,
            ),
            (
                "SET STATEMENT init_connect = 'x' FOR SELECT 1",
                Refusal::NotSupported,
            ),
            (
                "SET STATEMENT @x = 1 FOR SELECT * FROM company",
                Refusal::NotSupported,
            ),
            (
                "SET STATEMENT character_set_client = latin1 FOR SELECT * FROM company",
                Refusal::NotSupported,
            ),
            (
                "SET STATEMENT sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES') FOR SELECT * FROM company",
                Refusal::NotSupported,
            ),
            (
                "SET STATEMENT sql_mode = DEFAULT FOR SELECT * FROM company",
                Refusal::NotSupported,
            ),
            (
                "SET STATEMENT sql_mode = 'ORACLE' FOR SELECT * FROM company",
                Refusal::NotSupported,
            ),
            (
                "SET STATEMENT sql_mode = 'ORAC\\LE' FOR SELECT * FROM company",
                Refusal::NotSupported,
            ),
            (
                "SET STATEMENT autocommit = 0 FOR SELECT * FROM company",
                Refusal::NotSupported,
            ),
            (
                "SET STATEMENT GLOBAL max_statement_time = 1 FOR SELECT 1",
                Refusal::PrivilegeRequired,
            ),
            // Lexed otherwise under the mode it sets.
            (
                "SET STATEMENT sql_mode = 'ANSI_QUOTES' FOR SELECT \"id\" FROM company",
                Refusal::NotSupported,
            ),
            (
                "SET STATEMENT sql_mode = 'NO_BACKSLASH_ESCAPES' FOR SELECT 'a\\\\b' FROM company",
                Refusal::NotSupported,
            ),
            // The gateway's own answers.
            (
                "SET STATEMENT max_statement_time = 1 FOR SELECT FOUND_ROWS()",
                Refusal::NotSupported,
            ),
            // No statement.
            ("SET STATEMENT max_statement_time = 1 FOR", Refusal::Routing),
            ("SET STATEMENT FOR SELECT 1", Refusal::Routing),
        ] {
            let e = route(sql).map(|_| ()).unwrap_err();
            assert_eq!(e.refusal, refusal, "{sql}: {e:?}");
        }
    }
}
