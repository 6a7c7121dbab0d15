//! The AST rewriter: walks a parsed statement and rewrites MySQL expressions for PostgreSQL.

use super::*;

/// The expression- and query-level rewrites.
pub(super) struct Rewriter<'a> {
    /// The connection's database (see [`translate`]).
    pub(super) database: &'a str,
}

impl VisitorMut for Rewriter<'_> {
    type Break = DialectError;

    fn pre_visit_relation(&mut self, relation: &mut ObjectName) -> ControlFlow<DialectError> {
        if relation.0.len() == 2
            && let Some(first) = relation.0[0].as_ident()
            && (first.value == self.database
                || (first.quote_style.is_none() && first.value.eq_ignore_ascii_case(self.database)))
        {
            relation.0.remove(0);
        }
        // PostgreSQL resolves an unqualified name in `pg_catalog` before the search path: a
        // client's `pg_authid`, `pg_settings` or `pg_stat_activity` (also written `schema.`
        // `pg_authid`, whose qualifier is dropped just above) would read or write the system
        // catalogs. Only manx's own metadata queries name them, always qualified.
        if let [one] = relation.0.as_slice()
            && let Some(i) = one.as_ident()
            && i.value.len() >= 3
            && i.value[..3].eq_ignore_ascii_case("pg_")
        {
            return ControlFlow::Break(DialectError::Unsupported(format!(
                "the table name {} (PostgreSQL's system catalogs are not reachable through the gateway)",
                i.value
            )));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<DialectError> {
        // MySQL orders NULL before every value (ASC) and after (DESC); PostgreSQL the other
        // way round. The merge of several nodes relies on MySQL's order.
        if let Some(order_by) = &mut query.order_by
            && let sqlparser::ast::OrderByKind::Expressions(items) = &mut order_by.kind
        {
            for item in items {
                if item.options.nulls_first.is_none() {
                    item.options.nulls_first = Some(!matches!(
                        item.options.sort,
                        Some(sqlparser::ast::OrderBySort::Desc)
                    ));
                }
            }
        }
        // `SELECT @@x` is labelled `@@x` by MySQL: keep the label once the value replaces it.
        if let sqlparser::ast::SetExpr::Select(select) = query.body.as_mut() {
            // MySQL's optimizer and cache hints (HIGH_PRIORITY, STRAIGHT_JOIN, SQL_SMALL_RESULT,
            // SQL_BIG_RESULT, SQL_BUFFER_RESULT, SQL_NO_CACHE; MySQL 8.4 reference 15.2.13)
            // change how MySQL runs a SELECT, never its rows; PostgreSQL has none of them and
            // would read the word as a column. (The cross-node merge adds SQL_BUFFER_RESULT.)
            if let Some(m) = &mut select.select_modifiers {
                m.high_priority = false;
                m.straight_join = false;
                m.sql_small_result = false;
                m.sql_big_result = false;
                m.sql_buffer_result = false;
                m.sql_no_cache = false;
            }
            for item in &mut select.projection {
                if let SelectItem::UnnamedExpr(e) = item
                    && system_variable(e).is_some()
                {
                    let label = e.to_string();
                    *item = SelectItem::ExprWithAlias {
                        expr: e.clone(),
                        alias: Ident::with_quote('"', label),
                    };
                }
            }
        }
        if let Some(LimitClause::OffsetCommaLimit { offset, limit }) = &query.limit_clause {
            query.limit_clause = Some(LimitClause::LimitOffset {
                limit: Some(limit.clone()),
                offset: Some(Offset {
                    value: offset.clone(),
                    rows: OffsetRows::None,
                }),
                limit_by: Vec::new(),
            });
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DialectError> {
        match rewrite_expr(expr) {
            Ok(Some(new)) => {
                *expr = new;
                ControlFlow::Continue(())
            }
            Ok(None) => ControlFlow::Continue(()),
            Err(e) => ControlFlow::Break(e),
        }
    }
}

/// The PostgreSQL replacement of one (already rewritten inside) expression, if it changes.
pub(super) fn rewrite_expr(expr: &Expr) -> Result<Option<Expr>, DialectError> {
    if let Some(name) = system_variable(expr) {
        return system_variable_value(&name).map(Some);
    }
    if let Expr::Identifier(i) = expr
        && i.quote_style.is_none()
        && i.value.starts_with('@')
    {
        return Err(DialectError::Unsupported(format!(
            "user variable {}",
            i.value
        )));
    }
    Ok(Some(match expr {
        Expr::Value(v) => match &v.value {
            Value::Boolean(b) => {
                Expr::value(Value::Number(if *b { "1" } else { "0" }.into(), false))
            }
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) if s.contains('\0') => {
                return Err(DialectError::Unsupported(
                    "a string holding the NUL character (PostgreSQL text cannot hold it; bind bytes as binary)"
                        .into(),
                ));
            }
            Value::DoubleQuotedString(s) => string(s),
            Value::HexStringLiteral(h) => call("decode", vec![string(h), string("hex")]),
            // A bit-value literal as its number (what MySQL makes of it in a numeric context and
            // stores in a BIT column, which a PostgreSQL node holds as BIGINT).
            Value::SingleQuotedByteStringLiteral(bits)
            | Value::DoubleQuotedByteStringLiteral(bits) => match u64::from_str_radix(bits, 2) {
                Ok(n) => Expr::value(Value::Number(n.to_string(), false)),
                Err(_) if bits.is_empty() => Expr::value(Value::Number("0".into(), false)),
                Err(_) => {
                    return Err(DialectError::Unsupported(
                        "b'..' bit literals longer than 64 bits".into(),
                    ));
                }
            },
            _ => return Ok(None),
        },
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Spaceship,
            right,
        } => Expr::IsNotDistinctFrom(left.clone(), right.clone()),
        Expr::BinaryOp {
            op: BinaryOperator::MyIntegerDivide,
            ..
        } => return Err(DialectError::Unsupported("the DIV operator".into())),
        Expr::BinaryOp {
            op: BinaryOperator::Regexp,
            ..
        } => return Err(DialectError::Unsupported("REGEXP".into())),
        Expr::Cast {
            kind,
            expr: inner,
            data_type: t,
            format,
        } => {
            let new = data_type(t)?;
            if new == *t {
                return Ok(None);
            }
            Expr::Cast {
                kind: kind.clone(),
                expr: inner.clone(),
                data_type: new,
                format: format.clone(),
            }
        }
        // CONVERT(x, type) is CAST(x AS type); CONVERT(x USING charset) has no translation
        // (every PostgreSQL string is UTF-8).
        Expr::Convert {
            is_try: false,
            expr: inner,
            data_type: Some(t),
            charset: None,
            target_before_value: false,
            ..
        } => cast((**inner).clone(), data_type(t)?),
        Expr::Convert { .. } => {
            return Err(DialectError::Unsupported("this form of CONVERT()".into()));
        }
        // MySQL's `x IS TRUE` takes any number (TINYINT(1) columns are SMALLINT here):
        // through integer, PostgreSQL's boolean, integer and smallint all become a boolean.
        Expr::IsTrue(x) => Expr::IsTrue(Box::new(as_boolean(x))),
        Expr::IsNotTrue(x) => Expr::IsNotTrue(Box::new(as_boolean(x))),
        Expr::IsFalse(x) => Expr::IsFalse(Box::new(as_boolean(x))),
        Expr::IsNotFalse(x) => Expr::IsNotFalse(Box::new(as_boolean(x))),
        // `DATE '2024-01-01'` and the like: the type goes through the same checks as a CAST's
        // (`regclass 'pg_authid'` is a catalog probe).
        Expr::TypedString(ts) => {
            let new = data_type(&ts.data_type)?;
            if new == ts.data_type {
                return Ok(None);
            }
            let mut ts = ts.clone();
            ts.data_type = new;
            Expr::TypedString(ts)
        }
        Expr::Function(f) => return rewrite_function(f),
        _ => return Ok(None),
    }))
}

/// `CAST(CAST(x AS INTEGER) AS BOOLEAN)`: MySQL's truth of a number (or a boolean).
fn as_boolean(x: &Expr) -> Expr {
    cast(cast(x.clone(), DataType::Integer(None)), DataType::Boolean)
}
