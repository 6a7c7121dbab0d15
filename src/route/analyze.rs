//! Shard conditions in a WHERE clause (SPEC §5.5, DECISIONS.md item 14).
//!
//! The result is a set of partition indexes, or "all". `=` and `IN` on the rule column give the
//! partitions of their values; `BETWEEN` asks the function's range; `AND` intersects, `OR` unites;
//! anything else (other columns, functions of the column, `<`, `LIKE`, `NOT`, sub-queries) does
//! not narrow the route. Routing may therefore reach more nodes than needed, never fewer.

use std::collections::BTreeSet;

use sqlparser::ast::{BinaryOperator, Expr, InTarget, UnaryOperator, Value};

use super::RouteError;
use super::TableRoute;
use super::function::{RangePartitions, java};

/// Partition indexes a condition allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Partitions {
    All,
    Some(BTreeSet<usize>),
}

impl Partitions {
    fn and(self, other: Partitions) -> Partitions {
        match (self, other) {
            (Partitions::All, p) | (p, Partitions::All) => p,
            (Partitions::Some(a), Partitions::Some(b)) => Partitions::Some(&a & &b),
        }
    }

    fn or(self, other: Partitions) -> Partitions {
        match (self, other) {
            (Partitions::All, _) | (_, Partitions::All) => Partitions::All,
            (Partitions::Some(a), Partitions::Some(b)) => Partitions::Some(&a | &b),
        }
    }
}

/// Decides whether a column reference names the table's rule column.
pub struct ColumnMatcher<'a> {
    pub column: &'a str,
    /// Names the table may be qualified with (its name and alias), upper-cased.
    pub qualifiers: Vec<String>,
    /// Whether an unqualified column may belong to this table.
    pub unqualified: bool,
}

impl ColumnMatcher<'_> {
    fn matches(&self, e: &Expr) -> bool {
        match e {
            Expr::Identifier(i) => self.unqualified && i.value.eq_ignore_ascii_case(self.column),
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                let col = &parts[parts.len() - 1];
                let table = &parts[parts.len() - 2];
                col.value.eq_ignore_ascii_case(self.column)
                    && self
                        .qualifiers
                        .iter()
                        .any(|q| q.eq_ignore_ascii_case(&table.value))
            }
            Expr::Nested(inner) => self.matches(inner),
            _ => false,
        }
    }
}

/// The routing text of a literal (SPEC §2.2): integers as their decimal value (`007` → `7`),
/// strings as their text, other numbers as written; `None` for anything else (NULL included),
/// which does not narrow the route.
pub fn literal_text(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => Some(canonical_number(n)),
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => {
                (!ambiguous_number(s)).then(|| s.clone())
            }
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match &**expr {
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) => Some(canonical_number(&format!("-{n}"))),
                _ => None,
            },
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Plus,
            expr,
        } => literal_text(expr),
        Expr::Nested(inner) => literal_text(inner),
        _ => None,
    }
}

/// A string MySQL compares with a number as a different value than Mycat's functions read from
/// its text: `'4.0'`, `'1e0'`, `' +4'` (MySQL: 4), or Unicode digits such as `'٤'` (MySQL: 0,
/// Java: 4). Such a condition does not narrow the route (every node is asked), so no row is missed.
fn ambiguous_number(s: &str) -> bool {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    if t.starts_with('-') && t.len() > 1 && t[1..].bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.len() != s.len(); // padded with spaces
    }
    if t.chars().any(|c| !c.is_ascii() && java::digit(c).is_some()) {
        return true;
    }
    // A decimal or exponent number, optionally signed: MySQL reads its numeric value.
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (mantissa, exponent) = match body.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e.strip_prefix(['+', '-']).unwrap_or(e))),
        None => (body, None),
    };
    let (int_part, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    !(int_part.is_empty() && frac.is_empty())
        && digits(int_part)
        && digits(frac)
        && exponent.is_none_or(|e| !e.is_empty() && digits(e))
}

/// The routing text of a numeric literal: its integer value when it has one (`007` → `7`,
/// `-007` → `-7`, as Druid evaluates integers; also `7.0` and `1e2` → `7`, `100`, which MySQL
/// stores in an integer column as those integers — Mycat would hash or reject the text and
/// place such a row where its own key never finds it). Other numbers keep their text (`1.50`).
pub(super) fn canonical_number(n: &str) -> String {
    let (negative, body) = match n.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, n),
    };
    let (mantissa, exponent) = match body.split_once(['e', 'E']) {
        Some((m, e)) => match e.parse::<i32>() {
            Ok(e) => (m, e),
            Err(_) => return n.to_string(),
        },
        None => (body, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int_part.is_empty() && frac_part.is_empty()
        || !int_part
            .bytes()
            .chain(frac_part.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return n.to_string();
    }
    // digits × 10^scale
    let mut digits = format!("{int_part}{frac_part}");
    let scale = exponent as i64 - frac_part.len() as i64;
    if scale >= 0 {
        if scale > 40 {
            return n.to_string();
        }
        digits.push_str(&"0".repeat(scale as usize));
    } else {
        let cut = (-scale) as usize;
        if cut > digits.len() || !digits[digits.len() - cut..].bytes().all(|b| b == b'0') {
            return n.to_string(); // not an integer
        }
        digits.truncate(digits.len() - cut);
    }
    match digits.trim_start_matches('0') {
        "" => "0".to_string(),
        t if negative => format!("-{t}"),
        t => t.to_string(),
    }
}

/// The partitions `expr` (a WHERE clause) allows for `table`.
pub fn partitions(
    expr: &Expr,
    table: &TableRoute,
    m: &ColumnMatcher<'_>,
) -> Result<Partitions, RouteError> {
    Ok(match expr {
        // A chain `a OR b OR c ...` is a left-deep tree as deep as it is long: walk it with an
        // explicit stack, so a long chain cannot exhaust the thread's stack.
        Expr::BinaryOp {
            op: op @ (BinaryOperator::And | BinaryOperator::Or),
            ..
        } => {
            let mut acc: Option<Partitions> = None;
            let mut stack = vec![expr];
            while let Some(e) = stack.pop() {
                match e {
                    Expr::BinaryOp { left, op: o, right } if o == op => {
                        stack.push(right);
                        stack.push(left);
                    }
                    Expr::Nested(inner) if matches!(&**inner, Expr::BinaryOp { op: o, .. } if o == op) =>
                    {
                        stack.push(inner);
                    }
                    leaf => {
                        let p = partitions(leaf, table, m)?;
                        acc = Some(match (acc, op) {
                            (None, _) => p,
                            (Some(a), BinaryOperator::And) => a.and(p),
                            (Some(a), _) => a.or(p),
                        });
                    }
                }
            }
            acc.unwrap_or(Partitions::All)
        }
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } => {
            let value = if m.matches(left) {
                literal_text(right)
            } else if m.matches(right) {
                literal_text(left)
            } else {
                None
            };
            let literal = if m.matches(left) { right } else { left };
            match value {
                Some(v) => {
                    let p = table.partition_of(&v)?;
                    if collation_ambiguous(literal) {
                        Partitions::All
                    } else {
                        Partitions::Some(BTreeSet::from([p]))
                    }
                }
                None => Partitions::All,
            }
        }
        Expr::In {
            expr,
            target: InTarget::List(list),
            negated: false,
            ..
        } if m.matches(expr) => {
            let values: Option<Vec<String>> = list.iter().map(literal_text).collect();
            match values {
                Some(values) => {
                    let mut set = BTreeSet::new();
                    for v in values {
                        set.insert(table.partition_of(&v)?);
                    }
                    if list.iter().any(collation_ambiguous) {
                        Partitions::All
                    } else {
                        Partitions::Some(set)
                    }
                }
                None => Partitions::All,
            }
        }
        // One-sided comparisons: the range up to or from the value (bounds taken inclusive, a
        // superset for `<` and `>`), for functions that route ranges; others read everything.
        // A bound the function cannot read also reads everything.
        Expr::BinaryOp {
            left,
            op:
                op @ (BinaryOperator::Lt
                | BinaryOperator::LtEq
                | BinaryOperator::Gt
                | BinaryOperator::GtEq),
            right,
        } => {
            let below = matches!(op, BinaryOperator::Lt | BinaryOperator::LtEq);
            let (value, upper) = if m.matches(left) {
                (literal_text(right), below)
            } else if m.matches(right) {
                (literal_text(left), !below)
            } else {
                (None, false)
            };
            match value {
                Some(v) if !collation_ambiguous(if m.matches(left) { right } else { left }) => {
                    let (lo, hi) = if upper {
                        (i64::MIN.to_string(), v)
                    } else {
                        (v, i64::MAX.to_string())
                    };
                    table
                        .partitions_between(&lo, &hi)
                        .unwrap_or(Partitions::All)
                }
                _ => Partitions::All,
            }
        }
        Expr::Between {
            expr,
            negated: false,
            low,
            high,
        } if m.matches(expr) => match (literal_text(low), literal_text(high)) {
            (Some(lo), Some(hi)) => table.partitions_between(&lo, &hi)?,
            _ => Partitions::All,
        },
        Expr::Nested(inner) => partitions(inner, table, m)?,
        _ => Partitions::All,
    })
}

/// Whether a string literal may equal, under the column's collation, strings that a partition
/// function places elsewhere: MySQL's default collations ignore letter case, accents and
/// trailing spaces (`'K1' = 'k1'`, `'a' = 'ä'`, `'x ' = 'x'`), while the functions hash the
/// exact text. A comparison with such a literal cannot pin one node, so it reads every node
/// (DECISIONS.md item 14: more nodes than needed, never fewer). Digits and ASCII punctuation
/// equal only themselves.
fn collation_ambiguous(e: &Expr) -> bool {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => {
                s.ends_with(' ') || s.chars().any(|c| !c.is_ascii() || c.is_ascii_alphabetic())
            }
            _ => false,
        },
        Expr::Nested(inner) => collation_ambiguous(inner),
        _ => false,
    }
}

/// Turns a function's range answer into partition indexes of `table`.
pub fn range_partitions(r: RangePartitions, node_count: usize) -> Partitions {
    match r {
        RangePartitions::All => Partitions::All,
        RangePartitions::None => Partitions::Some(BTreeSet::new()),
        RangePartitions::Some(v) => {
            // An index outside the table means Mycat would fail or miss rows: read everything.
            if v.iter().any(|&i| i < 0 || i as usize >= node_count) {
                Partitions::All
            } else {
                Partitions::Some(v.into_iter().map(|i| i as usize).collect())
            }
        }
    }
}

/// Mycat strips one pair of quotes after trimming before calling a function (SPEC §2.2).
pub fn routing_value(text: &str) -> &str {
    java::remove_backquote(text)
}

#[cfg(test)]
mod tests {
    use super::canonical_number;

    #[test]
    fn numbers_route_by_value() {
        assert_eq!(canonical_number("007"), "7");
        assert_eq!(canonical_number("-007"), "-7");
        assert_eq!(canonical_number("000"), "0");
        assert_eq!(canonical_number("1.50"), "1.50");
        assert_eq!(canonical_number("7.0"), "7");
        assert_eq!(canonical_number("-7.00"), "-7");
        assert_eq!(canonical_number("1e2"), "100");
        assert_eq!(canonical_number("1.5E1"), "15");
        assert_eq!(canonical_number("1.25e1"), "1.25e1");
        assert_eq!(canonical_number("0.0"), "0");
        for s in ["4.0", "1e0", " 4", "+4", "٤", "４", ".5"] {
            assert!(super::ambiguous_number(s), "{s:?}");
        }
        for s in ["4", "-4", "007", "abc", "2014-01-01", "a1", ""] {
            assert!(!super::ambiguous_number(s), "{s:?}");
        }
    }
}
