//! The backend's own plan of a statement: MariaDB's `EXPLAIN EXTENDED | PARTITIONS |
//! FORMAT=JSON` and `ANALYZE [FORMAT=JSON]` always, and a plain `EXPLAIN` under server.xml's
//! `explainMode=backend`, where the statement runs on one dataNode as written. Plain `EXPLAIN`
//! is otherwise Mycat's route display (SPEC §5.18, module `explain`).

use super::*;
use crate::config::ExplainMode;

/// Where the statement an `EXPLAIN` / `ANALYZE` explains starts, and whether MariaDB's
/// modifiers come before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Explained {
    /// Byte offset of the explained statement in the text.
    at: usize,
    /// `EXTENDED`, `PARTITIONS`, `FORMAT = JSON`, or `ANALYZE`: only the backend can answer.
    modified: bool,
}

/// Reads the words before an explained query or row write: `EXPLAIN` alone or with one of
/// MariaDB's modifiers (`EXTENDED`, `PARTITIONS`, `FORMAT = JSON`; `FORMAT = TRADITIONAL` and
/// `TREE` are the gateway's, module `explain`), or `ANALYZE` with an optional `FORMAT = ...`.
/// `None` for any other statement (`ANALYZE TABLE`, an EXPLAIN of DDL or of a table).
fn explained(stmt: &str) -> Option<Explained> {
    let toks = rewrite::tokens(stmt)?;
    let word = |i: usize| match toks.get(i) {
        Some((Token::Word(w), _, 0)) if w.quote_style.is_none() => {
            Some(w.value.to_ascii_uppercase())
        }
        _ => None,
    };
    let format = |i: usize| {
        word(i).as_deref() == Some("FORMAT")
            && matches!(toks.get(i + 1), Some((Token::Eq, _, 0)))
            && matches!(word(i + 2).as_deref(), Some("JSON"))
    };
    let (body, modified) = match word(0)?.as_str() {
        "EXPLAIN" if matches!(word(1).as_deref(), Some("EXTENDED" | "PARTITIONS")) => (2, true),
        "EXPLAIN" if format(1) => (4, true),
        "EXPLAIN" => (1, false),
        "ANALYZE" if format(1) => (4, true),
        "ANALYZE" => (1, true),
        _ => return None,
    };
    // Only what MariaDB explains: a query or a row write (`ANALYZE TABLE` is maintenance).
    match word(body).as_deref() {
        Some("SELECT" | "WITH" | "INSERT" | "REPLACE" | "UPDATE" | "DELETE") => {}
        None if matches!(toks.get(body), Some((Token::LParen, _, _))) => {}
        _ => return None,
    }
    Some(Explained {
        at: toks[body].1.start,
        modified,
    })
}

/// The byte offset of the statement that `stmt` asks the backend to explain: after MariaDB's
/// modifiers (`EXPLAIN EXTENDED ..`, `ANALYZE ..`), or after a plain `EXPLAIN` when `mode` is
/// [`ExplainMode::Backend`]; `None` when the gateway answers (Mycat's EXPLAIN, maintenance).
pub(super) fn backend_body(stmt: &str, mode: ExplainMode) -> Option<usize> {
    explained(stmt)
        .filter(|e| e.modified || mode == ExplainMode::Backend)
        .map(|e| e.at)
}

/// The plan that sends `stmt` (`backend_body(stmt, ..) == Some(at)`) to the backend: the
/// explained statement routed as if sent alone (admitted, access-checked, placed), sent to its
/// one MySQL dataNode with the words before it, keeping the statement's `read_only` (ANALYZE
/// runs a write). `Ok(None)` for a plain `EXPLAIN` whose statement does not run so (several
/// dataNodes, a merge, ...): that one gets Mycat's route display.
///
/// Errors: the explained statement's; for MariaDB's modifiers, 1235 when the statement would
/// not run on one dataNode as one statement (several nodes, a merge, a parent lookup, a
/// sequence, DDL, an answer of the gateway's own).
pub(super) fn backend_explain(
    r: &Router,
    stmt: &str,
    at: usize,
    view: &SessionView<'_>,
) -> Result<Option<Routed>, RouteError> {
    let (prefix, inner) = stmt.split_at(at);
    let words = prefix.split_whitespace().collect::<Vec<_>>().join(" ");
    let plain = words.eq_ignore_ascii_case("EXPLAIN");
    let refuse = |why: &str| {
        if plain {
            return Ok(None);
        }
        Err(RouteError::not_supported(format!(
            "{words} is answered by the backend only for a statement that runs on one dataNode as written ({why}); EXPLAIN alone shows the route"
        )))
    };
    match route(r, inner, view, None)? {
        Routed::Plan(mut plan) => {
            if plan.targets.len() != 1 || plan.merge.is_some() {
                return refuse("this one reaches several dataNodes");
            }
            if plan.ddl {
                return refuse("this one is DDL");
            }
            if plain && !r.is_mysql_node(&plan.targets[0].node) {
                return refuse("PostgreSQL plans differ");
            }
            for t in plan.targets.iter_mut().chain(plan.fallback.iter_mut()) {
                t.sql = Arc::from(format!("{prefix}{}", t.sql));
            }
            Ok(Some(Routed::Plan(plan)))
        }
        Routed::Lookup(_) => refuse("this one looks up its parent row first"),
        Routed::Sequence(_) => refuse("this one takes a global sequence value"),
        // Only a SELECT over several dataNodes needs its tables' columns (module `horizon`).
        Routed::Columns(_)
            if !scan::words(inner).first().is_some_and(|w| {
                w.eq_ignore_ascii_case("INSERT") || w.eq_ignore_ascii_case("REPLACE")
            }) =>
        {
            refuse("this one reaches several dataNodes")
        }
        Routed::Columns(_) => refuse("this one needs the table's column list"),
        Routed::Local(_) | Routed::Metadata(_) => refuse("the gateway answers this one"),
    }
}
