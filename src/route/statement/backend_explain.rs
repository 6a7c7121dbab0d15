//! MariaDB's own `EXPLAIN EXTENDED | PARTITIONS | FORMAT=JSON` and `ANALYZE [FORMAT=JSON]`
//! of a statement: the backend's query plan (and, for ANALYZE, its execution), where the
//! statement runs on one dataNode as written. Plain `EXPLAIN` stays Mycat's route display
//! (SPEC §5.18).

use super::*;

/// The words before the explained statement: `EXPLAIN` with one of MariaDB's modifiers
/// (`EXTENDED`, `PARTITIONS`, `FORMAT = JSON`; `FORMAT = TRADITIONAL` and `TREE` are the gateway's, module `explain`), or `ANALYZE` with an optional
/// `FORMAT = ...`; `None` for any other statement (plain `EXPLAIN`, `ANALYZE TABLE`). Returns
/// the byte offset where the explained statement starts.
pub(super) fn modifiers(stmt: &str) -> Option<usize> {
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
    let body = match word(0)?.as_str() {
        "EXPLAIN" if matches!(word(1).as_deref(), Some("EXTENDED" | "PARTITIONS")) => 2,
        "EXPLAIN" if format(1) => 4,
        "ANALYZE" if format(1) => 4,
        "ANALYZE" => 1,
        _ => return None,
    };
    // Only what MariaDB explains: a query or a row write (`ANALYZE TABLE` is maintenance).
    match word(body).as_deref() {
        Some("SELECT" | "WITH" | "INSERT" | "REPLACE" | "UPDATE" | "DELETE") => {}
        None if matches!(toks.get(body), Some((Token::LParen, _, _))) => {}
        _ => return None,
    }
    Some(toks[body].1.start)
}

/// The plan of `stmt` (`modifiers(stmt) == Some(at)`): the explained statement routed as if
/// sent alone (admitted, access-checked, placed), and sent to its one dataNode with the
/// modifier words before it. The plan keeps the statement's `read_only` (ANALYZE runs a write).
///
/// Errors: the explained statement's; 1235 when it would not run on one dataNode as one
/// statement (several nodes, a merge, a parent lookup, a sequence, DDL, an answer of the
/// gateway's own).
pub(super) fn backend_explain(
    r: &Router,
    stmt: &str,
    at: usize,
    view: &SessionView<'_>,
) -> Result<Routed, RouteError> {
    let (prefix, inner) = stmt.split_at(at);
    let words = prefix.split_whitespace().collect::<Vec<_>>().join(" ");
    let refuse = |why: &str| {
        RouteError::not_supported(format!(
            "{words} is answered by the backend only for a statement that runs on one dataNode as written ({why}); EXPLAIN alone shows the route"
        ))
    };
    match route(r, inner, view, None)? {
        Routed::Plan(mut plan) => {
            if plan.targets.len() != 1 || plan.merge.is_some() {
                return Err(refuse("this one reaches several dataNodes"));
            }
            if plan.ddl {
                return Err(refuse("this one is DDL"));
            }
            for t in plan.targets.iter_mut().chain(plan.fallback.iter_mut()) {
                t.sql = Arc::from(format!("{prefix}{}", t.sql));
            }
            Ok(Routed::Plan(plan))
        }
        Routed::Lookup(_) => Err(refuse("this one looks up its parent row first")),
        Routed::Sequence(_) => Err(refuse("this one takes a global sequence value")),
        // Only a SELECT over several dataNodes needs its tables' columns (module `horizon`).
        Routed::Columns(_)
            if !scan::words(inner).first().is_some_and(|w| {
                w.eq_ignore_ascii_case("INSERT") || w.eq_ignore_ascii_case("REPLACE")
            }) =>
        {
            Err(refuse("this one reaches several dataNodes"))
        }
        Routed::Columns(_) => Err(refuse("this one needs the table's column list")),
        Routed::Local(_) | Routed::Metadata(_) => Err(refuse("the gateway answers this one")),
    }
}
