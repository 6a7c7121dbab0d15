//! HAVING over groups: conditions the engine can evaluate on merged groups, read from the parse.

use super::*;

pub(super) fn unsupported_having() -> RouteError {
    RouteError::syntax(
        "this HAVING over groups that span several dataNodes is not supported (only comparisons of aggregates or group columns with numbers, AND, OR, NOT, IS NULL): group by the sharding column or route to one dataNode",
    )
}

/// The byte range of an expression made of identifiers or a function call, from its source
/// spans (the call's closing parenthesis found by the tokens).
pub(super) fn expr_range(p: &Planner<'_>, e: &Expr) -> Option<Range<usize>> {
    match e {
        Expr::Identifier(i) => {
            Some(rewrite::offset(p.sql, i.span.start)?..rewrite::offset(p.sql, i.span.end)?)
        }
        Expr::CompoundIdentifier(parts) => Some(
            rewrite::offset(p.sql, parts.first()?.span.start)?
                ..rewrite::offset(p.sql, parts.last()?.span.end)?,
        ),
        Expr::Function(f) => {
            let ident = f.name.0.first()?.as_ident()?;
            let start = rewrite::offset(p.sql, ident.span.start)?;
            let args = call_args(p, e)?;
            let close = p
                .layout
                .tokens
                .iter()
                .find(|(t, r, _)| r.start >= args.end && matches!(t, Token::RParen))?;
            Some(start..close.1.end)
        }
        _ => None,
    }
}

/// A HAVING operand: an aggregate (selected, or added as an extra column) or a selected column.
pub(super) fn having_operand(
    p: &mut Planner<'_>,
    e: &Expr,
    aggregates: &mut Vec<(ColumnRef, Aggregate)>,
) -> Result<ColumnRef, RouteError> {
    let e = match e {
        Expr::Nested(inner) => inner,
        e => e,
    };
    let range = expr_range(p, e).ok_or_else(unsupported_having)?;
    // A bare name that is a group column reads as that column, even where a select alias has
    // the name too (MariaDB warns that it is ambiguous, and takes the column).
    if let Expr::Identifier(id) = e
        && let Some(column) = p.group_column(&id.value)?
    {
        return Ok(column);
    }
    let call = aggregate_call(e, p)?;
    if let Some(i) = p.resolve(e, &range, true)
        && i < p.items.len()
        && p.fixed(i)
    {
        return Ok(ColumnRef::Visible(i));
    }
    let Some(call) = call else {
        return Err(unsupported_having());
    };
    let column = p.add_hidden(p.text(&range)?.to_string());
    if !aggregates.iter().any(|(c, _)| *c == column) {
        let a = p.aggregate(&call, column)?;
        aggregates.push((column, a));
    }
    Ok(column)
}

/// A number literal's text (`12`, `-2.5`), or `None`.
pub(super) fn number_text(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => Some(n.clone()),
            _ => None,
        },
        Expr::UnaryOp {
            op: sqlparser::ast::UnaryOperator::Minus,
            expr,
        } => number_text(expr).map(|n| format!("-{n}")),
        Expr::UnaryOp {
            op: sqlparser::ast::UnaryOperator::Plus,
            expr,
        } => number_text(expr),
        Expr::Nested(e) => number_text(e),
        _ => None,
    }
}

/// Plans `HAVING e` for merged groups.
pub(super) fn having(
    p: &mut Planner<'_>,
    e: &Expr,
    aggregates: &mut Vec<(ColumnRef, Aggregate)>,
) -> Result<Having, RouteError> {
    use sqlparser::ast::{BinaryOperator as B, UnaryOperator};
    Ok(match e {
        Expr::Nested(inner) => having(p, inner, aggregates)?,
        Expr::BinaryOp { left, op, right } => match op {
            B::And => Having::And(
                Box::new(having(p, left, aggregates)?),
                Box::new(having(p, right, aggregates)?),
            ),
            B::Or => Having::Or(
                Box::new(having(p, left, aggregates)?),
                Box::new(having(p, right, aggregates)?),
            ),
            B::Eq | B::NotEq | B::Lt | B::LtEq | B::Gt | B::GtEq => {
                let op = match op {
                    B::Eq => CompareOp::Eq,
                    B::NotEq => CompareOp::NotEq,
                    B::Lt => CompareOp::Lt,
                    B::LtEq => CompareOp::LtEq,
                    B::Gt => CompareOp::Gt,
                    _ => CompareOp::GtEq,
                };
                let flip = |op| match op {
                    CompareOp::Lt => CompareOp::Gt,
                    CompareOp::LtEq => CompareOp::GtEq,
                    CompareOp::Gt => CompareOp::Lt,
                    CompareOp::GtEq => CompareOp::LtEq,
                    other => other,
                };
                match (number_text(left), number_text(right)) {
                    (None, Some(number)) => Having::Compare {
                        column: having_operand(p, left, aggregates)?,
                        op,
                        number,
                    },
                    (Some(number), None) => Having::Compare {
                        column: having_operand(p, right, aggregates)?,
                        op: flip(op),
                        number,
                    },
                    _ => return Err(unsupported_having()),
                }
            }
            _ => return Err(unsupported_having()),
        },
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => Having::Not(Box::new(having(p, expr, aggregates)?)),
        Expr::IsNull(inner) => Having::IsNull {
            column: having_operand(p, inner, aggregates)?,
            negated: false,
        },
        Expr::IsNotNull(inner) => Having::IsNull {
            column: having_operand(p, inner, aggregates)?,
            negated: true,
        },
        _ => return Err(unsupported_having()),
    })
}
