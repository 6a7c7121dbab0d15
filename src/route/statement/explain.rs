//! `EXPLAIN`: Mycat's (the statement each dataNode would get, SPEC §5.18) and
//! `EXPLAIN FORMAT=TREE`, the whole plan with the merge steps (module `route::explain`).

use super::super::scan;
use super::super::{Local, Plan, RouteError, Routed, Router, SessionView};
use super::route;
use crate::route::Refusal;

/// What `EXPLAIN [FORMAT = name]` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// No `FORMAT`, or MySQL's `TRADITIONAL`: Mycat's rows (`DATA_NODE`, `SQL`).
    Route,
    /// `FORMAT=TREE`: the plan as MySQL 8 prints its iterator tree, one text cell.
    Tree,
}

/// Routes `EXPLAIN [FORMAT = name] <statement>` (`stmt` in its canonical form, starting with
/// the word `EXPLAIN`): the inner statement is routed as it would run (every check included)
/// and its plan is answered instead of run.
///
/// Errors: 1791 (`ER_UNKNOWN_EXPLAIN_FORMAT`) for a format MySQL does not know; 1235 for
/// `FORMAT=JSON`; 1064 for an EXPLAIN of EXPLAIN, a `FORMAT` without a statement, an INSERT
/// needing sequence values (Mycat's message), an INSERT without a column list, or a statement
/// the gateway answers itself; and the inner statement's own refusal.
pub(super) fn explain(
    r: &Router,
    stmt: &str,
    view: &SessionView<'_>,
) -> Result<Routed, RouteError> {
    let after = stmt.get("EXPLAIN".len()..).unwrap_or_default().trim_start();
    let (format, inner) = format(after)?;
    if inner.is_empty() {
        return Err(RouteError::syntax("EXPLAIN without a statement"));
    }
    if scan::words(inner)
        .first()
        .is_some_and(|w| w.eq_ignore_ascii_case("EXPLAIN"))
    {
        return Err(RouteError::syntax("EXPLAIN of EXPLAIN is not supported"));
    }
    let plan = match route(r, inner, view, None)? {
        Routed::Plan(plan) => plan,
        // The statements that would look for the parent row.
        Routed::Lookup(l) => Plan::read(l.probes),
        Routed::Sequence(_) => {
            return Err(RouteError::syntax(
                "insert sql using mycat seq,you must provide primaryKey value for explain",
            ));
        }
        // A SELECT whose GROUP BY needs its tables' columns: the session reads them and routes
        // the EXPLAIN again.
        Routed::Columns(c)
            if !scan::words(inner).first().is_some_and(|w| {
                w.eq_ignore_ascii_case("INSERT") || w.eq_ignore_ascii_case("REPLACE")
            }) =>
        {
            return Ok(Routed::Columns(c));
        }
        Routed::Columns(c) => {
            return Err(RouteError::syntax(format!(
                "EXPLAIN of an INSERT without a column list into {}: give the column list",
                c.table
            )));
        }
        Routed::Local(_) | Routed::Metadata(_) => {
            return Err(RouteError::syntax(format!(
                "EXPLAIN of a statement the gateway answers itself: {inner}"
            )));
        }
    };
    Ok(Routed::Local(match format {
        Format::Route => Local::Explain(Box::new(plan)),
        Format::Tree => Local::ExplainTree(Box::new(plan)),
    }))
}

/// Splits MySQL's `FORMAT = name` (name bare or quoted, any case) off the front of what follows
/// `EXPLAIN`; without it, Mycat's EXPLAIN of all of `after`.
fn format(after: &str) -> Result<(Format, &str), RouteError> {
    let Some(rest) = after
        .get(..6)
        .filter(|w| w.eq_ignore_ascii_case("FORMAT"))
        .map(|_| after[6..].trim_start())
        .and_then(|r| r.strip_prefix('='))
    else {
        return Ok((Format::Route, after));
    };
    let rest = rest.trim_start();
    let (name, inner) = match rest.chars().next() {
        Some(q @ ('\'' | '"')) => {
            let body = &rest[1..];
            let end = body
                .find(q)
                .ok_or_else(|| RouteError::syntax("EXPLAIN FORMAT: an unterminated name"))?;
            (&body[..end], &body[end + 1..])
        }
        _ => {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        }
    };
    if !inner.is_empty() && !inner.starts_with(char::is_whitespace) {
        return Err(RouteError::syntax(format!(
            "EXPLAIN FORMAT={name}: a statement must follow the format name"
        )));
    }
    let format = match name.to_ascii_uppercase().as_str() {
        "TREE" => Format::Tree,
        "TRADITIONAL" => Format::Route,
        "JSON" => {
            return Err(RouteError::not_supported(
                "EXPLAIN FORMAT=JSON: manx explains a statement as its route (EXPLAIN, FORMAT=TRADITIONAL) or as its whole plan (FORMAT=TREE)",
            ));
        }
        _ => {
            // MySQL's ER_UNKNOWN_EXPLAIN_FORMAT.
            return Err(RouteError::new(
                Refusal::UnknownExplainFormat,
                format!("Unknown EXPLAIN format name: '{name}'"),
            ));
        }
    };
    Ok((format, inner.trim_start()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_is_split_off_in_any_spelling_and_unknown_ones_are_refused() {
        for (text, want, inner) in [
            ("SELECT 1", Format::Route, "SELECT 1"),
            ("FORMAT=TREE SELECT 1", Format::Tree, "SELECT 1"),
            ("format = tree SELECT 1", Format::Tree, "SELECT 1"),
            ("FORMAT='tree'  SELECT 1", Format::Tree, "SELECT 1"),
            ("FORMAT=\"TRADITIONAL\" SELECT 1", Format::Route, "SELECT 1"),
            ("FORMAT=TREE", Format::Tree, ""),
            // Not a FORMAT clause: the statement as it is (then refused by its routing).
            ("FORMATS SELECT 1", Format::Route, "FORMATS SELECT 1"),
            ("é", Format::Route, "é"),
        ] {
            assert_eq!(format(text).unwrap(), (want, inner), "{text}");
        }
        let e = format("FORMAT=JSON SELECT 1").unwrap_err();
        assert_eq!(e.refusal, Refusal::NotSupported, "{e}");
        let e = format("FORMAT=yaml SELECT 1").unwrap_err();
        assert_eq!(e.refusal, Refusal::UnknownExplainFormat);
        assert_eq!(e.message, "Unknown EXPLAIN format name: 'yaml'");
        for bad in ["FORMAT='tree SELECT 1", "FORMAT=TREE(SELECT 1)"] {
            assert_eq!(format(bad).unwrap_err().refusal, Refusal::Routing, "{bad}");
        }
    }
}
