//! Aggregate calls in the select list: which can be combined across nodes exactly, and how each is split into what the nodes return.

use super::*;

/// `NAME(args)` of a mergeable aggregate, with the text range of its arguments.
#[derive(Clone)]
pub(super) struct AggregateCall {
    pub(super) name: &'static str,
    /// Everything between the call's parentheses.
    pub(super) args: Range<usize>,
    /// `NAME(DISTINCT ...)`.
    pub(super) distinct: bool,
    /// Each argument's text range (without `DISTINCT`, the ORDER BY and the SEPARATOR).
    pub(super) arg_list: Vec<Range<usize>>,
    /// GROUP_CONCAT's `ORDER BY` items: text range (without ASC / DESC) and descending.
    pub(super) order: Vec<(Range<usize>, bool)>,
    /// GROUP_CONCAT's `SEPARATOR` string literal, as written (one token).
    pub(super) separator: Option<Range<usize>>,
}

impl AggregateCall {
    /// COUNT / SUM / AVG over distinct values, or GROUP_CONCAT: the nodes' rows must be split
    /// by the values ([`super::SubKeys`]).
    pub(super) fn needs_sub_keys(&self) -> bool {
        self.name == "GROUP_CONCAT" || self.distinct && matches!(self.name, "COUNT" | "SUM" | "AVG")
    }
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

/// What in a query's SELECT list makes a row's value depend on rows other than its own — an
/// aggregate, a window function, a user variable assigned per row (`@n := @n + 1`) — named;
/// `None` when each output row is computed from its own input row alone. Each dataNode
/// computing such a query over its own rows gives other values than one server over all of
/// them (an `INSERT ... SELECT` run node by node must refuse it). Subqueries count too (the
/// check errs towards naming something).
pub(in crate::route) fn cross_row_value(q: &Query) -> Option<&'static str> {
    use sqlparser::ast::{BinaryOperator, Visit, Visitor};
    use std::ops::ControlFlow;
    struct Find;
    impl Visitor for Find {
        type Break = &'static str;
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<&'static str> {
            match e {
                Expr::Function(f) if f.over.is_some() => ControlFlow::Break("a window function"),
                Expr::Function(f) if AGGREGATE_NAMES.contains(&function_name(f).as_str()) => {
                    ControlFlow::Break("an aggregate")
                }
                Expr::BinaryOp {
                    op: BinaryOperator::Assignment,
                    ..
                } => ControlFlow::Break("a user variable assigned per row"),
                _ => ControlFlow::Continue(()),
            }
        }
    }
    match q.visit(&mut Find) {
        ControlFlow::Break(what) => Some(what),
        ControlFlow::Continue(()) => None,
    }
}

pub(super) fn unsupported_aggregate() -> RouteError {
    RouteError::syntax(
        "an aggregate inside an expression, a FILTER / OVER / LIMIT clause on an aggregate, and statistical or bit aggregates over several dataNodes are not supported: group by the sharding column or route to one dataNode",
    )
}

/// A GROUP_CONCAT form the merge cannot reproduce exactly, named.
fn unsupported_group_concat(what: &str) -> RouteError {
    RouteError::syntax(format!(
        "GROUP_CONCAT with {what} over several dataNodes is not supported: group by the sharding column or route to one dataNode"
    ))
}

/// `Some` when `e` is exactly a mergeable aggregate call; `None` when it is another expression;
/// an error when it is an aggregate that cannot be merged.
///
/// Mergeable: COUNT, SUM, MIN, MAX, AVG (each with or without DISTINCT; `COUNT(DISTINCT a, b)`
/// counts tuples) and `GROUP_CONCAT([DISTINCT] e, ... [ORDER BY k [ASC|DESC], ...] [SEPARATOR
/// 'literal'])` (MySQL 8.0 reference, 14.19.1 "Aggregate Function Descriptions"). Argument
/// ranges are found on the tokens and checked against the parse (same number of arguments and
/// ORDER BY items), so text copied from them is what the parser read.
pub(super) fn aggregate_call(
    e: &Expr,
    p: &Planner<'_>,
) -> Result<Option<AggregateCall>, RouteError> {
    use sqlparser::ast::{FunctionArg, FunctionArgExpr, FunctionArgumentClause};
    let Expr::Function(f) = e else {
        return Ok(None);
    };
    let name = function_name(f);
    let Some(&name) = ["COUNT", "SUM", "MIN", "MAX", "AVG", "GROUP_CONCAT"]
        .iter()
        .find(|n| **n == name)
    else {
        return Ok(None);
    };
    let FunctionArguments::List(list) = &f.args else {
        return Err(unsupported_aggregate());
    };
    let distinct = list.duplicate_treatment == Some(DuplicateTreatment::Distinct);
    if f.over.is_some() || f.filter.is_some() || !f.within_group.is_empty() {
        return Err(unsupported_aggregate());
    }
    let group_concat = name == "GROUP_CONCAT";
    let mut order_by = None;
    let mut separator = false;
    for c in &list.clauses {
        match c {
            FunctionArgumentClause::OrderBy(o) if group_concat && order_by.is_none() => {
                order_by = Some(o)
            }
            FunctionArgumentClause::Separator(_) if group_concat && !separator => separator = true,
            _ if group_concat => return Err(unsupported_group_concat("this clause")),
            _ => return Err(unsupported_aggregate()),
        }
    }
    let plain_args = list
        .args
        .iter()
        .all(|a| matches!(a, FunctionArg::Unnamed(FunctionArgExpr::Expr(_))));
    let arity_ok = match name {
        "COUNT" if distinct => plain_args && !list.args.is_empty(),
        "GROUP_CONCAT" => plain_args && !list.args.is_empty(),
        _ => list.args.len() == 1,
    };
    if !arity_ok {
        return Err(unsupported_aggregate());
    }
    // The argument text: between the call's outermost parentheses.
    let args = call_args(p, e).ok_or_else(unsupported_aggregate)?;
    let mut call = AggregateCall {
        name,
        args: args.clone(),
        distinct,
        arg_list: Vec::new(),
        order: Vec::new(),
        separator: None,
    };
    if !call.needs_sub_keys() {
        return Ok(Some(call));
    }
    // The pieces of `[DISTINCT] e, ... [ORDER BY k, ...] [SEPARATOR 's']`, on the tokens at the
    // arguments' own depth.
    let toks: Vec<&(Token, Range<usize>, usize)> = p
        .layout
        .tokens
        .iter()
        .filter(|(_, r, _)| r.start >= args.start && r.end <= args.end)
        .collect();
    let Some(depth) = toks.first().map(|t| t.2) else {
        return Err(unsupported_aggregate());
    };
    let top: Vec<usize> = (0..toks.len()).filter(|&i| toks[i].2 == depth).collect();
    let mut from = 0;
    if distinct {
        match top.first() {
            Some(&i) if is_keyword(&toks[i].0, Keyword::DISTINCT) => from = 1,
            _ => return Err(unsupported_aggregate()),
        }
    }
    let find = |word: &str| {
        top.iter()
            .position(|&i| word_is(&toks[i].0, &[word]))
            .filter(|&k| k >= from)
    };
    let order_at = find("ORDER").filter(|&k| {
        top.get(k + 1)
            .is_some_and(|&i| word_is(&toks[i].0, &["BY"]))
    });
    let separator_at = find("SEPARATOR");
    let args_end_k = order_at.or(separator_at).unwrap_or(top.len());
    let byte_start = |k: usize| toks[top[k]].1.start;
    let byte_end_before = |k: usize| -> usize {
        // The end of the last token (at any depth) before top-level token k.
        let i = if k < top.len() { top[k] } else { toks.len() };
        toks[..i].last().map(|t| t.1.end).unwrap_or(args.start)
    };
    if from >= args_end_k {
        return Err(unsupported_aggregate());
    }
    call.arg_list = split(
        &p.layout.tokens,
        byte_start(from)..byte_end_before(args_end_k),
    );
    if call.arg_list.len() != list.args.len() {
        return Err(unsupported_aggregate());
    }
    if let Some(o) = order_by {
        let k = order_at.ok_or_else(|| unsupported_group_concat("this ORDER BY"))?;
        let end_k = separator_at.filter(|&s| s > k).unwrap_or(top.len());
        if k + 2 >= end_k {
            return Err(unsupported_group_concat("this ORDER BY"));
        }
        let items = split(&p.layout.tokens, byte_start(k + 2)..byte_end_before(end_k));
        if items.len() != o.len() {
            return Err(unsupported_group_concat("this ORDER BY"));
        }
        for (item, ob) in items.into_iter().zip(o) {
            if ob.options.nulls_first.is_some() || ob.with_fill.is_some() {
                return Err(unsupported_group_concat("NULLS FIRST / LAST"));
            }
            // `ORDER BY 2` inside GROUP_CONCAT: a position, not an expression.
            if matches!(&ob.expr, Expr::Value(_)) {
                return Err(unsupported_group_concat("an ORDER BY position or literal"));
            }
            let desc = match &ob.options.sort {
                Some(OrderBySort::Desc) => true,
                Some(OrderBySort::Asc) | None => false,
                Some(_) => return Err(unsupported_group_concat("this ORDER BY")),
            };
            // Drop a trailing ASC / DESC (not when the word is the whole item).
            let inside: Vec<&(Token, Range<usize>, usize)> = p
                .layout
                .tokens
                .iter()
                .filter(|(_, r, _)| r.start >= item.start && r.end <= item.end)
                .collect();
            let n = inside.len();
            let range = if n >= 2
                && (is_keyword(&inside[n - 1].0, Keyword::ASC)
                    || is_keyword(&inside[n - 1].0, Keyword::DESC))
            {
                item.start..inside[n - 2].1.end
            } else {
                item
            };
            call.order.push((range, desc));
        }
    } else if order_at.is_some() {
        return Err(unsupported_group_concat("this ORDER BY"));
    }
    match separator_at {
        Some(k) if separator => {
            // Exactly one single-quoted literal, the last thing in the parentheses.
            let lit = top.get(k + 1).map(|&i| toks[i]);
            match lit {
                Some((Token::SingleQuotedString(_), r, _))
                    if top.len() == k + 2 && toks.last().is_some_and(|t| t.1 == *r) =>
                {
                    call.separator = Some(r.clone());
                }
                _ => {
                    return Err(unsupported_group_concat(
                        "a SEPARATOR that is not one single-quoted string",
                    ));
                }
            }
        }
        None if !separator => {}
        _ => return Err(unsupported_group_concat("this SEPARATOR")),
    }
    if separator_at.is_some_and(|s| order_at.is_some_and(|o| s < o)) {
        return Err(unsupported_group_concat("SEPARATOR before ORDER BY"));
    }
    Ok(Some(call))
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
