//! The statement's LIMIT, read from the parse.

use super::*;

/// `LIMIT` as (offset, count), literal numbers only.
pub(super) fn limit_of(q: &Query) -> Result<Option<(u64, u64)>, RouteError> {
    let number = |e: &Expr, what: &str| {
        analyze::literal_text(e)
            .and_then(|t| t.parse::<u64>().ok())
            .ok_or_else(|| RouteError::syntax(format!("{what} must be a number")))
    };
    Ok(match &q.limit_clause {
        None => None,
        Some(LimitClause::LimitOffset {
            limit: Some(l),
            offset,
            limit_by,
        }) if limit_by.is_empty() => Some((
            match offset {
                Some(o) => number(&o.value, "OFFSET")?,
                None => 0,
            },
            number(l, "LIMIT")?,
        )),
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
            Some((number(offset, "LIMIT offset")?, number(limit, "LIMIT")?))
        }
        Some(_) => {
            return Err(RouteError::syntax(
                "this LIMIT form over several dataNodes is not supported",
            ));
        }
    })
}
