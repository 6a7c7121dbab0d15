//! UPDATE and DELETE: the dataNodes a write reaches, global-table rules, nondeterministic values.

use super::*;

/// Functions whose value differs between the copies of a global table (each node evaluates
/// them itself), which would leave the copies different.
pub(super) const NONDETERMINISTIC: &[&str] = &[
    "UUID",
    "UUID_SHORT",
    "RAND",
    "NOW",
    "SYSDATE",
    "CURRENT_TIMESTAMP",
    "CURRENT_TIME",
    "CURRENT_DATE",
    "CURDATE",
    "CURTIME",
    "LOCALTIME",
    "LOCALTIMESTAMP",
    "UNIX_TIMESTAMP",
    "UTC_TIMESTAMP",
    "UTC_DATE",
    "UTC_TIME",
    "CONNECTION_ID",
    "LAST_INSERT_ID",
    "RANDOM_BYTES",
    "USER",
    "CURRENT_USER",
    "SESSION_USER",
    "SYSTEM_USER",
    "SLEEP",
    "SYS_GUID",
];

/// The unqualified, unquoted, upper-cased name of a function (`` `rand` `` → `RAND`).
pub(super) fn function_name(name: &ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.to_ascii_uppercase())
        .unwrap_or_default()
}

/// The first non-deterministic function a statement calls, if any.
pub(super) fn nondeterministic(statement: &Statement) -> Option<String> {
    struct Find(Option<String>);
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            let found = match e {
                Expr::Function(f) => Some(function_name(&f.name)),
                // `utc_timestamp` without parentheses, `@@timestamp`, `@user_var`: each copy's
                // connection has its own value.
                Expr::Identifier(i) if i.quote_style.is_none() => {
                    Some(i.value.to_ascii_uppercase())
                }
                _ => None,
            };
            if let Some(name) = found
                && (NONDETERMINISTIC.contains(&name.as_str()) || name.starts_with('@'))
            {
                self.0 = Some(name);
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut f = Find(None);
    let _ = statement.visit(&mut f);
    f.0
}

/// Refuses a write to a global table that its copies would not all apply the same way.
pub(super) fn check_global_write(statement: &Statement, table: &str) -> Result<(), RouteError> {
    match nondeterministic(statement) {
        Some(func) => Err(RouteError::syntax(format!(
            "{func} in a write to global table {table} would give its copies different values"
        ))),
        None => Ok(()),
    }
}

pub(super) fn is_global(ctx: &Ctx<'_>, o: &Occurrence) -> bool {
    ctx.table(&o.name)
        .is_some_and(|t| t.kind == TableKind::Global)
}

/// UPDATE and DELETE (SPEC §5.9).
pub(super) fn write(
    ctx: &Ctx<'_>,
    statement: &Statement,
    occurrences: &[Occurrence],
    selection: Option<&Expr>,
    assignments: Option<&Vec<sqlparser::ast::Assignment>>,
    multi_table: bool,
    has_limit: bool,
) -> Result<Routed, RouteError> {
    let top: Vec<&Occurrence> = occurrences.iter().filter(|o| o.depth == 0).collect();
    if top.is_empty() {
        return Err(RouteError::syntax("no table to write"));
    }
    // The sharding column of any sharded table written here may only be "updated" to the value
    // the WHERE pins it to (one table), so no row moves off its node.
    if let Some(assignments) = assignments {
        for o in &top {
            let Some(t) = ctx.table(&o.name) else {
                continue;
            };
            // The column that places the row: the sharding column, or an ER child's joinKey.
            let (column, message) = match (&t.kind, &t.rule) {
                (TableKind::Child { join_key, .. }, _) => (
                    join_key,
                    format!(
                        "Parent relevant column can't be updated {}->{join_key}",
                        t.name
                    ),
                ),
                (_, Some(rule)) => (
                    &rule.column,
                    format!(
                        "Sharding column can't be updated {}->{}",
                        t.name, rule.column
                    ),
                ),
                _ => continue,
            };
            for a in assignments {
                let cols: Vec<String> = match &a.target {
                    sqlparser::ast::AssignmentTarget::ColumnName(n) => vec![n.to_string()],
                    sqlparser::ast::AssignmentTarget::Tuple(v) => {
                        v.iter().map(|n| n.to_string()).collect()
                    }
                };
                let hits = cols.iter().any(|c| {
                    c.rsplit('.')
                        .next()
                        .is_some_and(|c| scan::unquote(c).eq_ignore_ascii_case(column))
                });
                // Only a literal is safe: MySQL evaluates SET left to right, so `SET days = 2, id
                // = days WHERE id = days` would move the row.
                let literal = analyze::literal_text(&a.value).is_some();
                if hits
                    && (multi_table
                        || !literal
                        || !same_value_condition(selection, column, &a.value))
                {
                    return Err(RouteError::syntax(message));
                }
            }
        }
    }
    let placements = placements(ctx, occurrences, selection, 0)?;
    // A global table only read (in a subquery) is read where the write runs: it must be on
    // every one of those nodes (it was read from whatever the default dataNode held).
    let reads_globals_on = |nodes: &BTreeSet<String>| -> Result<(), RouteError> {
        for p in &placements {
            if let Placement::Global(t) = p
                && !top.iter().any(|o| o.name == t.name)
                && let Some(n) = nodes.iter().find(|n| !t.nodes.contains(n))
            {
                return Err(RouteError::syntax(format!(
                    "a write on dataNode {n} may not read global table {}, which is not on that node",
                    t.name
                )));
            }
        }
        Ok(())
    };
    let non_global_in_subquery = occurrences
        .iter()
        .find(|o| o.depth > 0 && !is_global(ctx, o));
    if multi_table || non_global_in_subquery.is_some() {
        // Every node only sees its own rows: correct only when everything is on one node.
        let mut nodes = BTreeSet::new();
        for p in &placements {
            match p {
                Placement::Global(t) if multi_table || top.iter().any(|o| o.name == t.name) => {
                    return Err(RouteError::syntax(format!(
                        "a multi-table or subquery write involving global table {} is not supported",
                        t.name
                    )));
                }
                Placement::Global(_) => {}
                Placement::Nodes(_, n) => nodes.extend(n.iter().cloned()),
            }
        }
        if nodes.len() != 1 {
            let what = match non_global_in_subquery {
                Some(o) => format!("a subquery on table {}", o.name),
                None => "a multi-table UPDATE/DELETE".to_string(),
            };
            return Err(RouteError::syntax(format!(
                "{what} over several dataNodes is not supported (each node would see only its own rows)"
            )));
        }
        reads_globals_on(&nodes)?;
        return Ok(ctx.plan(nodes, false, OkMerge::Sum));
    }
    match placements.first() {
        Some(Placement::Global(t)) => {
            check_global_write(statement, &t.name)?;
            if has_limit {
                return Err(RouteError::syntax(format!(
                    "UPDATE/DELETE with LIMIT on global table {} could change different rows on each copy",
                    t.name
                )));
            }
            let nodes: BTreeSet<String> = t.nodes.iter().cloned().collect();
            reads_globals_on(&nodes)?;
            Ok(ctx.plan(nodes, false, OkMerge::First))
        }
        Some(Placement::Nodes(name, nodes)) => {
            if has_limit && nodes.len() > 1 {
                return Err(RouteError::syntax(format!(
                    "UPDATE/DELETE with LIMIT on table {name} over several dataNodes is not supported (the LIMIT would apply on each node)"
                )));
            }
            reads_globals_on(nodes)?;
            Ok(ctx.plan(nodes.clone(), false, OkMerge::Sum))
        }
        None => Err(RouteError::syntax("no table to write")),
    }
}

/// Mycat allows `SET col = v` on the sharding column when the WHERE pins `col = v` with the same
/// literal through ANDs only (SPEC §5.9): the row stays where it is.
pub(super) fn same_value_condition(selection: Option<&Expr>, column: &str, value: &Expr) -> bool {
    fn go(e: &Expr, column: &str, value: &str) -> bool {
        match e {
            Expr::BinaryOp {
                left,
                op: sqlparser::ast::BinaryOperator::And,
                right,
            } => go(left, column, value) || go(right, column, value),
            Expr::Nested(inner) => go(inner, column, value),
            Expr::BinaryOp {
                left,
                op: sqlparser::ast::BinaryOperator::Eq,
                right,
            } => {
                let is_col = |x: &Expr| match x {
                    Expr::Identifier(i) => i.value.eq_ignore_ascii_case(column),
                    Expr::CompoundIdentifier(p) => p
                        .last()
                        .is_some_and(|i| i.value.eq_ignore_ascii_case(column)),
                    _ => false,
                };
                (is_col(left) && right.to_string() == value)
                    || (is_col(right) && left.to_string() == value)
            }
            _ => false,
        }
    }
    selection.is_some_and(|s| go(s, column, &value.to_string()))
}
