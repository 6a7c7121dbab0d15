//! MySQL's 0/1 (and TRUE/FALSE, which the translation writes as 1/0) against native
//! PostgreSQL `boolean` columns: `flag = 1`, `flag IN (0, 1)`, `SET flag = 1` and
//! `INSERT .. VALUES (.., 1)`
//! fail in PostgreSQL (no implicit integer → boolean cast). When the catalog says a column the
//! statement compares or inserts is a boolean, the literal becomes `TRUE`/`FALSE`; anything
//! else is left as written (a column of another type keeps its integer comparison).

use std::collections::HashSet;

use super::*;

/// Whether `e` is the literal 0 or 1.
fn zero_or_one(e: &Expr) -> Option<bool> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Number(n, false) if n == "0" => Some(false),
            Value::Number(n, false) if n == "1" => Some(true),
            _ => None,
        },
        _ => None,
    }
}

/// The unqualified column name of a column reference.
fn column_name(e: &Expr) -> Option<&str> {
    match e {
        Expr::Identifier(i) => Some(&i.value),
        Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.as_str()),
        _ => None,
    }
}

fn is_comparison(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq
    )
}

/// Whether the (translated) statement compares a column with 0/1 or inserts 0/1: only then are
/// the types of its tables' columns worth looking up.
pub(super) fn has_candidates(statement: &Statement) -> bool {
    let mut found = false;
    let _ = sqlparser::ast::Visit::visit(
        statement,
        &mut ExprVisitor(|e: &Expr| {
            found |= match e {
                Expr::BinaryOp { left, op, right } if is_comparison(op) => {
                    (column_name(left).is_some() && zero_or_one(right).is_some())
                        || (column_name(right).is_some() && zero_or_one(left).is_some())
                }
                Expr::In {
                    expr,
                    target: sqlparser::ast::InTarget::List(list),
                    ..
                } => column_name(expr).is_some() && list.iter().any(|e| zero_or_one(e).is_some()),
                _ => false,
            };
        }),
    );
    let assigns_zero_or_one = |a: &[Assignment]| a.iter().any(|a| zero_or_one(&a.value).is_some());
    found |= match statement {
        Statement::Update(u) => assigns_zero_or_one(&u.assignments),
        Statement::Insert(i) => match &i.on {
            Some(OnInsert::DuplicateKeyUpdate(a)) => assigns_zero_or_one(a),
            _ => false,
        },
        _ => false,
    };
    if let Statement::Insert(i) = statement
        && let Some(source) = &i.source
        && let sqlparser::ast::SetExpr::Values(v) = source.body.as_ref()
    {
        found |= v
            .rows
            .iter()
            .flat_map(|r| r.content.iter())
            .any(|e| zero_or_one(e).is_some());
    }
    found
}

/// A read-only visitor over every expression.
struct ExprVisitor<F: FnMut(&Expr)>(F);

impl<F: FnMut(&Expr)> sqlparser::ast::Visitor for ExprVisitor<F> {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        (self.0)(expr);
        ControlFlow::Continue(())
    }
}

/// Rewrites the 0/1 literals compared with, or inserted into, the `boolean` columns (lower-case
/// names of the statement's tables' boolean columns; `insert_columns`: the INSERT's target
/// columns in order, the table's own when it names none).
pub(super) fn rewrite(
    statement: &mut Statement,
    booleans: &HashSet<String>,
    insert_columns: &[String],
) {
    if booleans.is_empty() {
        return;
    }
    let is_bool = |e: &Expr| column_name(e).is_some_and(|n| booleans.contains(&n.to_lowercase()));
    let to_bool = |e: &mut Expr| {
        if let Some(b) = zero_or_one(e) {
            *e = Expr::value(Value::Boolean(b));
        }
    };
    let _ = sqlparser::ast::visit_expressions_mut(statement, |e: &mut Expr| {
        match e {
            Expr::BinaryOp { left, op, right } if is_comparison(op) => {
                if is_bool(left) {
                    to_bool(right);
                } else if is_bool(right) {
                    to_bool(left);
                }
            }
            Expr::In {
                expr,
                target: sqlparser::ast::InTarget::List(list),
                ..
            } if is_bool(expr) => list.iter_mut().for_each(to_bool),
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    // SET flag = 1 (UPDATE, and an upsert's DO UPDATE).
    let assignments: Vec<&mut Assignment> = match statement {
        Statement::Update(u) => u.assignments.iter_mut().collect(),
        Statement::Insert(i) => match &mut i.on {
            Some(OnInsert::DuplicateKeyUpdate(a)) => a.iter_mut().collect(),
            Some(OnInsert::OnConflict(OnConflict {
                action: OnConflictAction::DoUpdate(d),
                ..
            })) => d.assignments.iter_mut().collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    for a in assignments {
        if let AssignmentTarget::ColumnName(name) = &a.target
            && let Some(last) = name.0.last().and_then(|p| p.as_ident())
            && booleans.contains(&last.value.to_lowercase())
        {
            to_bool(&mut a.value);
        }
    }
    if let Statement::Insert(i) = statement
        && let Some(source) = &mut i.source
        && let sqlparser::ast::SetExpr::Values(v) = source.body.as_mut()
    {
        let names: Vec<String> = if i.columns.is_empty() {
            insert_columns.to_vec()
        } else {
            i.columns
                .iter()
                .filter_map(|c| c.0.last().and_then(|p| p.as_ident()))
                .map(|c| c.value.to_lowercase())
                .collect()
        };
        for row in &mut v.rows {
            for (e, name) in row.content.iter_mut().zip(&names) {
                if booleans.contains(name) {
                    to_bool(e);
                }
            }
        }
    }
}
