//! `INSERT ... ON DUPLICATE KEY UPDATE` as PostgreSQL's `ON CONFLICT ... DO UPDATE`: `VALUES(col)` becomes `EXCLUDED.col`.

use super::*;

pub(super) fn values_query(rows: Vec<Vec<Expr>>) -> Query {
    let mut q = Parser::new(&MySqlDialect {})
        .try_with_sql("VALUES (1)")
        .and_then(|mut p| p.parse_query())
        .map(|b| *b)
        .expect("a constant query parses");
    if let sqlparser::ast::SetExpr::Values(v) = q.body.as_mut() {
        v.rows = rows
            .into_iter()
            .map(|content| sqlparser::ast::Parens {
                opening_token: AttachedToken::empty(),
                content,
                closing_token: AttachedToken::empty(),
            })
            .collect();
    }
    q
}

pub(super) fn excluded(column: &ObjectName) -> Expr {
    let name = column
        .0
        .last()
        .and_then(|p| p.as_ident().cloned())
        .unwrap_or_else(|| Ident::new(column.to_string()));
    Expr::CompoundIdentifier(vec![Ident::new("EXCLUDED"), name])
}

/// Inside `ON DUPLICATE KEY UPDATE`: `VALUES(c)` → `EXCLUDED.c`, and a bare column `c`
/// (the existing row's value in MySQL) → `<table>.c`, which PostgreSQL requires because
/// `EXCLUDED` makes a bare name ambiguous there.
pub(super) struct ValuesToExcluded {
    pub(super) table: Vec<Ident>,
}

impl VisitorMut for ValuesToExcluded {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::Identifier(c) if !c.value.starts_with('@') => {
                let mut parts = self.table.clone();
                parts.push(c.clone());
                *expr = Expr::CompoundIdentifier(parts);
            }
            Expr::Function(f) if ident_name(f).as_deref() == Some("VALUES") => {
                let column = match plain_args(f).as_deref() {
                    Some([Expr::CompoundIdentifier(parts)]) => parts.last().cloned(),
                    Some([Expr::Identifier(c)]) => Some(c.clone()),
                    _ => None,
                };
                if let Some(c) = column {
                    *expr = Expr::CompoundIdentifier(vec![Ident::new("EXCLUDED"), c]);
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}
