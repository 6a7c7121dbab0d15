//! Aggregate calls in the select list: which can be combined across nodes exactly, and how each is split into what the nodes return.

use super::*;

/// `NAME(args)` of a mergeable aggregate, with the text range of its arguments.
#[derive(Clone)]
pub(super) struct AggregateCall {
    pub(super) name: &'static str,
    pub(super) args: Range<usize>,
}

/// Names of aggregate functions (MySQL's), for finding aggregates anywhere in an expression.
pub(super) const AGGREGATE_NAMES: &[&str] = &[
    "COUNT",
    "SUM",
    "MIN",
    "MAX",
    "AVG",
    "GROUP_CONCAT",
    "STD",
    "STDDEV",
    "STDDEV_POP",
    "STDDEV_SAMP",
    "VARIANCE",
    "VAR_POP",
    "VAR_SAMP",
    "BIT_AND",
    "BIT_OR",
    "BIT_XOR",
    "JSON_ARRAYAGG",
    "JSON_OBJECTAGG",
];

pub(super) fn function_name(f: &sqlparser::ast::Function) -> String {
    f.name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.to_ascii_uppercase())
        .unwrap_or_default()
}

pub(super) fn contains_aggregate(e: &Expr) -> bool {
    use sqlparser::ast::{Visit, Visitor};
    use std::ops::ControlFlow;
    struct Find;
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = e
                && (AGGREGATE_NAMES.contains(&function_name(f).as_str()) || f.over.is_some())
            {
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    e.visit(&mut Find).is_break()
}

pub(super) fn has_window_function(q: &Query) -> bool {
    use sqlparser::ast::{Visit, Visitor};
    use std::ops::ControlFlow;
    struct Find;
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match e {
                Expr::Function(f) if f.over.is_some() => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
    }
    q.visit(&mut Find).is_break()
}

pub(super) fn unsupported_aggregate() -> RouteError {
    RouteError::syntax(
        "an aggregate inside an expression, COUNT(DISTINCT ...), SUM/AVG(DISTINCT ...), GROUP_CONCAT and statistical aggregates over several dataNodes are not supported: group by the sharding column or route to one dataNode",
    )
}

/// `Some` when `e` is exactly a mergeable aggregate call; `None` when it is another expression;
/// an error when it is an aggregate that cannot be merged.
pub(super) fn aggregate_call(
    e: &Expr,
    p: &Planner<'_>,
) -> Result<Option<AggregateCall>, RouteError> {
    let Expr::Function(f) = e else {
        return Ok(None);
    };
    let name = function_name(f);
    let Some(&name) = ["COUNT", "SUM", "MIN", "MAX", "AVG"]
        .iter()
        .find(|n| **n == name)
    else {
        return Ok(None);
    };
    let FunctionArguments::List(list) = &f.args else {
        return Err(unsupported_aggregate());
    };
    let distinct = list.duplicate_treatment == Some(DuplicateTreatment::Distinct);
    if f.over.is_some()
        || f.filter.is_some()
        || !f.within_group.is_empty()
        || !list.clauses.is_empty()
        || list.args.len() != 1
        || (distinct && matches!(name, "COUNT" | "SUM" | "AVG"))
    {
        return Err(unsupported_aggregate());
    }
    // The argument text: between the call's outermost parentheses.
    let args = call_args(p, e).ok_or_else(unsupported_aggregate)?;
    Ok(Some(AggregateCall { name, args }))
}

/// The byte range inside the parentheses of the call `e`, found by its name's source span.
pub(super) fn call_args(p: &Planner<'_>, e: &Expr) -> Option<Range<usize>> {
    let Expr::Function(f) = e else { return None };
    let ident = f.name.0.last()?.as_ident()?;
    let start = rewrite::offset(p.sql, ident.span.start)?;
    let toks = &p.layout.tokens;
    let i = toks.iter().position(|(_, r, _)| r.start == start)?;
    let (Token::LParen, open, depth) = &toks.get(i + 1)? else {
        return None;
    };
    let close = toks[i + 2..]
        .iter()
        .position(|(t, _, d)| matches!(t, Token::RParen) && d == depth)?
        + i
        + 2;
    Some(open.end..toks[close].1.start)
}
