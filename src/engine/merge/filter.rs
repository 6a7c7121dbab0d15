//! Filter: HAVING conditions evaluated on merged groups.

use super::*;

/// A HAVING condition resolved to column indexes.
pub(super) enum Condition {
    And(Box<Condition>, Box<Condition>),
    Or(Box<Condition>, Box<Condition>),
    Not(Box<Condition>),
    Compare {
        at: usize,
        float: bool,
        op: CompareOp,
        number: String,
    },
    IsNull {
        at: usize,
        negated: bool,
    },
}

impl Condition {
    pub(super) fn new(
        h: &Having,
        columns: &[Column],
        resolve: &dyn Fn(ColumnRef) -> Result<usize, BackendError>,
    ) -> Result<Condition, BackendError> {
        Ok(match h {
            Having::And(a, b) => Condition::And(
                Box::new(Condition::new(a, columns, resolve)?),
                Box::new(Condition::new(b, columns, resolve)?),
            ),
            Having::Or(a, b) => Condition::Or(
                Box::new(Condition::new(a, columns, resolve)?),
                Box::new(Condition::new(b, columns, resolve)?),
            ),
            Having::Not(a) => Condition::Not(Box::new(Condition::new(a, columns, resolve)?)),
            Having::IsNull { column, negated } => Condition::IsNull {
                at: resolve(*column)?,
                negated: *negated,
            },
            Having::Compare { column, op, number } => {
                let at = resolve(*column)?;
                let float = match kind(&columns[at], None, false) {
                    Ok(Kind::Int | Kind::Decimal) => false,
                    Ok(Kind::Float) => true,
                    _ => {
                        return Err(not_supported(format!(
                            "HAVING comparing non-numeric column {} with a number over several dataNodes",
                            columns[at].name
                        )));
                    }
                };
                Condition::Compare {
                    at,
                    float,
                    op: *op,
                    number: number.clone(),
                }
            }
        })
    }

    /// SQL's three-valued result: `None` is unknown (a comparison with NULL).
    pub(super) fn eval(&self, row: &Row) -> Option<bool> {
        match self {
            Condition::And(a, b) => match (a.eval(row), b.eval(row)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Condition::Or(a, b) => match (a.eval(row), b.eval(row)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            Condition::Not(a) => a.eval(row).map(|v| !v),
            Condition::IsNull { at, negated } => Some(matches!(row[*at], Value::Null) != *negated),
            Condition::Compare {
                at,
                float,
                op,
                number,
            } => {
                let value = text(&row[*at])?;
                let o = if *float {
                    let x: f64 = value.trim().parse().ok()?;
                    let y: f64 = number.parse().ok()?;
                    x.partial_cmp(&y)?
                } else if number.contains(['e', 'E']) || value.contains(['e', 'E']) {
                    // Scientific notation (`> 1e0`): compared as exact decimals.
                    let x = BigDecimal::from_str(value.trim()).ok()?;
                    let y = BigDecimal::from_str(number).ok()?;
                    x.cmp(&y)
                } else {
                    compare_decimal(&value, number)
                };
                Some(match op {
                    CompareOp::Eq => o == Ordering::Equal,
                    CompareOp::NotEq => o != Ordering::Equal,
                    CompareOp::Lt => o == Ordering::Less,
                    CompareOp::LtEq => o != Ordering::Greater,
                    CompareOp::Gt => o == Ordering::Greater,
                    CompareOp::GtEq => o != Ordering::Less,
                })
            }
        }
    }
}
