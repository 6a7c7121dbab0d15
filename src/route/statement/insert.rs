//! INSERT and REPLACE: placement by value, INSERT ... SELECT, ER child rows, sequences and auto-increment.

use super::*;
use crate::route::Refusal;

/// INSERT and REPLACE (SPEC §5.8): rows grouped by dataNode, one statement per node.
pub(super) fn insert_route(
    ctx: &Ctx<'_>,
    statement: &Statement,
    occurrences: &[Occurrence],
    table: String,
) -> Result<Routed, RouteError> {
    let Statement::Insert(insert) = statement else {
        unreachable!("called for INSERT only")
    };
    // The target and every table the values read are undeclared tables of a schema with a
    // default dataNode: all live there (SPEC §5.4), so the statement runs there as a SELECT of
    // undeclared tables does (INSERT ... SELECT, subqueries in VALUES alike).
    if let Some(d) = &ctx.s.default_node
        && ctx.table(&table).is_none()
        && occurrences.iter().all(|o| ctx.table(&o.name).is_none())
    {
        return Ok(ctx.plan(BTreeSet::from([d.clone()]), false, OkMerge::Sum));
    }
    // Values read from other tables (INSERT ... SELECT, subqueries in VALUES): each node reads
    // only its own rows of a non-global table.
    if let Some(o) = occurrences.iter().find(|o| !is_global(ctx, o)) {
        let columns = match ctx.table(&table) {
            Some(t) => match insert_columns(ctx, insert, t)? {
                ControlFlow::Continue(columns) => columns,
                ControlFlow::Break(read_first) => return Ok(read_first),
            },
            None => Vec::new(),
        };
        let listed = listed(ctx, insert, &columns)?;
        let ctx = listed.as_ref().unwrap_or(ctx);
        return insert_select(ctx, insert, &columns, occurrences, &table, o);
    }
    let Some(t) = ctx.table(&table) else {
        return match &ctx.s.default_node {
            Some(d) => Ok(ctx.plan(BTreeSet::from([d.clone()]), false, OkMerge::Sum)),
            None => Err(unknown_table(&table, &ctx.s.name)),
        };
    };
    // The column list, as written or read from the table (Break: read it first); only what
    // places rows needs it.
    let needs_columns = t.auto_increment
        || t.rule.is_some()
        || matches!(t.kind, TableKind::Child { .. } if t.rule.is_none());
    let columns = match needs_columns && t.kind != TableKind::Global {
        true => match insert_columns(ctx, insert, t)? {
            ControlFlow::Continue(columns) => columns,
            ControlFlow::Break(read_first) => return Ok(read_first),
        },
        false => Vec::new(),
    };
    let listed = listed(ctx, insert, &columns)?;
    let ctx = listed.as_ref().unwrap_or(ctx);
    check_duplicate_key_update(insert, t)?;
    if t.auto_increment
        && let Some(routed) = auto_increment(ctx, insert, &columns, t)?
    {
        return Ok(routed);
    }
    let rule = match (&t.kind, &t.rule) {
        (TableKind::Global, _) => {
            check_global_write(statement, &t.name)?;
            return Ok(ctx.plan(t.nodes.iter().cloned().collect(), false, OkMerge::First));
        }
        (
            TableKind::Child {
                parent,
                join_key,
                parent_key,
            },
            None,
        ) => return parent_lookup(ctx, insert, &columns, t, parent, join_key, parent_key),
        (_, None) => return Ok(ctx.plan(t.nodes.iter().cloned().collect(), false, OkMerge::Sum)),
        (_, Some(rule)) => rule,
    };
    let column = &rule.column;
    // INSERT ... SET col = v, ...
    if insert.source.is_none() {
        let value = insert.assignments.iter().find_map(|a| match &a.target {
            sqlparser::ast::AssignmentTarget::ColumnName(n)
                if n.0
                    .last()
                    .and_then(|p| p.as_ident())
                    .is_some_and(|i| i.value.eq_ignore_ascii_case(column)) =>
            {
                Some(&a.value)
            }
            _ => None,
        });
        let Some(value) = value else {
            return Err(RouteError::syntax(format!(
                "bad insert sql (sharding column:{column} not provided) for table {}",
                t.name
            )));
        };
        let index = t.partition_of(&insert_value(t, column, value)?)?;
        return Ok(ctx.plan(
            BTreeSet::from([t.nodes[index].clone()]),
            false,
            OkMerge::Sum,
        ));
    }
    let Some(position) = columns.iter().position(|c| c.eq_ignore_ascii_case(column)) else {
        return Err(RouteError::syntax(format!(
            "bad insert sql (sharding column:{column} not provided) for table {}",
            t.name
        )));
    };
    let source = insert.source.as_ref().expect("checked above");
    let SetExpr::Values(values) = &*source.body else {
        return Err(RouteError::syntax(format!(
            "INSERT ... SELECT into sharded table {} is not supported yet",
            t.name
        )));
    };
    let mut by_node: std::collections::BTreeMap<String, Vec<usize>> =
        std::collections::BTreeMap::new();
    for (i, row) in values.rows.iter().enumerate() {
        if row.len() != columns.len() {
            return Err(RouteError::new(
                Refusal::ValueCount,
                format!("Column count doesn't match value count at row {}", i + 1),
            ));
        }
        let index = t.partition_of(&insert_value(t, column, &row[position])?)?;
        by_node.entry(t.nodes[index].clone()).or_default().push(i);
    }
    if by_node.len() <= 1 {
        return Ok(ctx.plan(by_node.into_keys().collect(), false, OkMerge::Sum));
    }
    // One statement per node with only its rows, cut from the original text.
    let row_ranges = rewrite::insert_rows(ctx.stmt)
        .filter(|r| r.len() == values.rows.len())
        .ok_or_else(|| {
            RouteError::syntax(format!(
                "cannot split this multi-row INSERT into table {} by dataNode",
                t.name
            ))
        })?;
    let (first, last) = (row_ranges[0].start, row_ranges[row_ranges.len() - 1].end);
    let targets = by_node
        .into_iter()
        .map(|(node, rows)| {
            let db = ctx.database(&node);
            let mut sql = ctx.edits.apply_in(ctx.stmt, 0..first, db);
            for (k, &r) in rows.iter().enumerate() {
                if k > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&ctx.edits.apply_in(ctx.stmt, row_ranges[r].clone(), db));
            }
            sql.push_str(&ctx.edits.apply_in(ctx.stmt, last..ctx.stmt.len(), db));
            Target {
                sql: Arc::from(sql),
                node,
            }
        })
        .collect();
    Ok(Routed::Plan(Plan::write(targets)))
}

/// The columns an INSERT fills, upper-cased: its column list, or without one the table's own
/// order (MySQL: "If you do not specify a list of column names ..., values for every column
/// in the table must be provided"), read from its dataNodes once ([`super::super::ColumnOrders`]).
/// `INSERT ... SET` has no list and needs none (empty). `Break`: the order must be read
/// first ([`Routed::Columns`]).
///
/// Errors: Mycat's `insert must provide ColumnList` where the order cannot be read (routing
/// without a session).
fn insert_columns(
    ctx: &Ctx<'_>,
    insert: &sqlparser::ast::Insert,
    t: &TableRoute,
) -> Result<ControlFlow<Routed, Vec<String>>, RouteError> {
    if !insert.columns.is_empty() || insert.source.is_none() {
        return Ok(ControlFlow::Continue(
            insert
                .columns
                .iter()
                .map(|c| {
                    c.0.last()
                        .and_then(|p| p.as_ident())
                        .map_or_else(String::new, |i| i.value.to_ascii_uppercase())
                })
                .collect(),
        ));
    }
    let Some(orders) = ctx.columns else {
        return Err(RouteError::syntax(format!(
            "partition table {}, insert must provide ColumnList",
            t.name
        )));
    };
    // The table as the statement spells it: the physical table it reaches (a backend with
    // `lower_case_table_names=0` tells `t` and `T` apart), so the key of its order.
    let spelled = match &insert.table {
        TableObject::TableName(name) => name.0.last().and_then(|p| p.as_ident()).cloned(),
        _ => None,
    }
    .ok_or_else(|| RouteError::syntax("INSERT INTO a table function is not supported"))?;
    ctx.columns_used.set(true);
    if let Some(columns) = orders.get(&ctx.s.name, &spelled.value) {
        return Ok(ControlFlow::Continue(columns.to_vec()));
    }
    Ok(ControlFlow::Break(Routed::Columns(columns_lookup(
        ctx,
        &spelled.value,
        &t.nodes,
    ))))
}

/// The look-up of the column order of `table` (as the statement spells it) of the statement's
/// schema, on each of `nodes` ([`Routed::Columns`]).
pub(super) fn columns_lookup(ctx: &Ctx<'_>, table: &str, nodes: &[String]) -> ColumnsLookup {
    let probe = format!("SELECT * FROM `{}` LIMIT 0", table.replace('`', "``"));
    let probes = nodes
        .iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|node| Target {
            node: node.clone(),
            sql: Arc::from(probe.as_str()),
        })
        .collect();
    ColumnsLookup {
        schema: ctx.s.name.clone(),
        table: table.to_string(),
        probes,
    }
}

/// For an INSERT without a column list whose columns were read from the table
/// ([`insert_columns`]): the context whose statements carry that list, written after the
/// table name, so each node stores the values in the columns the rows were placed by even if
/// the table changed since its order was read (a changed table then fails with the node's
/// error instead of storing a row where its sharding value does not belong). `None` when the
/// INSERT has its own list or none is needed.
fn listed<'a>(
    ctx: &Ctx<'a>,
    insert: &sqlparser::ast::Insert,
    columns: &[String],
) -> Result<Option<Ctx<'a>>, RouteError> {
    if !insert.columns.is_empty() || insert.source.is_none() || columns.is_empty() {
        return Ok(None);
    }
    let TableObject::TableName(name) = &insert.table else {
        return Ok(None);
    };
    let at = name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .and_then(|i| rewrite::offset(ctx.stmt, i.span.end))
        .ok_or_else(|| RouteError::syntax("cannot place the INSERT's column list"))?;
    let list: Vec<String> = columns
        .iter()
        .map(|c| format!("`{}`", c.replace('`', "``")))
        .collect();
    let mut edits = ctx.edits.clone();
    edits.push(at..at, Replacement::Text(format!(" ({})", list.join(", "))));
    Ok(Some(Ctx {
        r: ctx.r,
        s: ctx.s,
        stmt: ctx.stmt,
        edits,
        columns: ctx.columns,
        columns_used: ctx.columns_used,
    }))
}

/// The routing text of an INSERT value (SPEC §2.2, 1.6.7): a literal's value, otherwise the
/// expression's SQL text (so `NULL` is the text `NULL`, as in Mycat).
/// `INSERT ... SELECT` reading a non-global table: run where the rows are read, which is right
/// when (i) the SELECT reads one dataNode and the target table lives on that node only, or
/// (ii) the target's sharding column is filled from the source's sharding column and both
/// tables are sharded by the same function over the same dataNodes (every row read on a node
/// belongs on that node). Anything else is refused: a node cannot insert rows another holds.
pub(super) fn insert_select(
    ctx: &Ctx<'_>,
    insert: &sqlparser::ast::Insert,
    columns: &[String],
    occurrences: &[Occurrence],
    table: &str,
    first: &Occurrence,
) -> Result<Routed, RouteError> {
    let refuse = |why: &str| {
        Err(RouteError::syntax(format!(
            "INSERT ... SELECT into {table} reading table {} is not supported: {why}",
            first.name
        )))
    };
    if let Some(t) = ctx.table(table) {
        check_duplicate_key_update(insert, t)?;
    }
    let Some(source) = &insert.source else {
        return refuse("a subquery in VALUES");
    };
    let sel = match &*source.body {
        SetExpr::Select(sel) => sel,
        SetExpr::Values(_) => return refuse("a subquery in VALUES may read another dataNode"),
        _ => return refuse("the SELECT is a set operation"),
    };
    if occurrences
        .iter()
        .any(|o| o.depth != 1 && !is_global(ctx, o))
    {
        return refuse("a sharded table in a subquery of the SELECT");
    }
    let placements = placements(ctx, occurrences, sel.selection.as_ref(), 1)?;
    let nodes = match read_nodes(&placements) {
        Ok(ReadNodes::All(nodes)) => nodes,
        Ok(ReadNodes::AnyOf(nodes)) => nodes.into_iter().take(1).collect(),
        Err(e) => match colocated_nodes(ctx, source, occurrences, &placements) {
            Some(nodes) => nodes,
            None => return Err(e),
        },
    };
    let target_nodes: Vec<String> = match ctx.table(table) {
        Some(t) => t.nodes.clone(),
        None => match &ctx.s.default_node {
            Some(d) => vec![d.clone()],
            None => return Err(unknown_table(table, &ctx.s.name)),
        },
    };
    // (i) One node reads and holds everything.
    if nodes.len() == 1 && target_nodes.len() == 1 && nodes.contains(&target_nodes[0]) {
        return Ok(ctx.plan(nodes, false, OkMerge::Sum));
    }
    // (ii) Co-located: the target's sharding value is the source's sharding column.
    let Some(t) = ctx.table(table) else {
        return refuse("the SELECT reads several dataNodes but the table is on one");
    };
    let (Some(rule), true) = (&t.rule, t.kind != TableKind::Global) else {
        return refuse(
            "the target is not sharded like the source, so the rows would not be where they belong",
        );
    };
    let sources: Vec<(&Occurrence, &TableRoute)> = occurrences
        .iter()
        .filter(|o| o.depth == 1)
        .filter_map(|o| {
            ctx.table(&o.name)
                .filter(|s| s.kind != TableKind::Global)
                .map(|s| (o, s))
        })
        .collect();
    let [(o, src)] = sources.as_slice() else {
        return refuse("several sharded tables are read");
    };
    let Some(src_rule) = &src.rule else {
        return refuse("the source table has no sharding rule");
    };
    let position = columns
        .iter()
        .position(|c| c.eq_ignore_ascii_case(&rule.column));
    let item = position.and_then(|k| sel.projection.get(k));
    let fed = match item {
        Some(SelectItem::UnnamedExpr(e)) | Some(SelectItem::ExprWithAlias { expr: e, .. }) => {
            horizon::ShardColumn {
                column: &src_rule.column,
                hashes_text: false,
                qualifiers: vec![o.alias.clone().unwrap_or_else(|| o.name.clone())],
            }
            .is(e)
        }
        _ => false,
    };
    let grouped = sel.distinct.is_some()
        || !matches!(&sel.group_by, GroupByExpr::Expressions(e, _) if e.is_empty())
        || sel.having.is_some()
        || source.limit_clause.is_some();
    // Each node runs the SELECT over its own rows: a value computed across rows (COUNT(*)
    // OVER (), ROW_NUMBER(), an aggregate without GROUP BY, `@n := @n + 1`) would be each
    // node's, not the statement's.
    if let Some(what) = horizon::cross_row_value(source) {
        return refuse(&format!(
            "it reads {} dataNodes and the SELECT holds {what}, which each dataNode would compute over its own rows only",
            nodes.len()
        ));
    }
    if !fed || grouped || !Arc::ptr_eq(&rule.function, &src_rule.function) || t.nodes != src.nodes {
        return refuse(&format!(
            "it reads {} dataNodes; the target's {} must be the source's sharding column {} (same function and dataNodes, no DISTINCT, GROUP BY or LIMIT) for every row to stay on its node",
            nodes.len(),
            rule.column,
            src_rule.column
        ));
    }
    Ok(ctx.plan(nodes, false, OkMerge::Sum))
}

/// Refuses `ON DUPLICATE KEY UPDATE` assigning a column that places the rows of `t`: the
/// sharding column of a sharded table (Mycat: "Sharding column can't be updated") or the joinKey
/// of an ER child table (as UPDATE refuses it). The update would change the row's placing value
/// where it stands, leaving it on a dataNode it does not belong to; so whatever fills the rows
/// (VALUES, SET or a SELECT).
///
/// Errors: 1064 naming the table and the column.
fn check_duplicate_key_update(
    insert: &sqlparser::ast::Insert,
    t: &TableRoute,
) -> Result<(), RouteError> {
    let Some(OnInsert::DuplicateKeyUpdate(assignments)) = &insert.on else {
        return Ok(());
    };
    let mut placing: Vec<(&str, String)> = Vec::new();
    if let TableKind::Child { join_key, .. } = &t.kind {
        placing.push((
            join_key,
            format!(
                "Parent relevant column can't be updated: {} -> {join_key}",
                t.name
            ),
        ));
    }
    if let (Some(rule), false) = (&t.rule, t.kind == TableKind::Global) {
        placing.push((
            &rule.column,
            format!(
                "Sharding column can't be updated: {} -> {}",
                t.name, rule.column
            ),
        ));
    }
    for a in assignments {
        let sqlparser::ast::AssignmentTarget::ColumnName(n) = &a.target else {
            continue;
        };
        let Some(name) = n.0.last().and_then(|p| p.as_ident()) else {
            continue;
        };
        if let Some((_, message)) = placing
            .iter()
            .find(|(c, _)| name.value.eq_ignore_ascii_case(c))
        {
            return Err(RouteError::syntax(message.clone()));
        }
    }
    Ok(())
}

/// An INSERT of one row into an ER child table whose node is its parent row's (SPEC §5.12).
///
/// Errors (Mycat's texts): several rows (`ChildTable multi insert not provided`), no joinKey
/// value (`joinKey not provided`), a joinKey value that is not a literal.
pub(super) fn parent_lookup(
    ctx: &Ctx<'_>,
    insert: &sqlparser::ast::Insert,
    columns: &[String],
    t: &TableRoute,
    parent: &str,
    join_key: &str,
    parent_key: &str,
) -> Result<Routed, RouteError> {
    let named = |n: &ObjectName| {
        n.0.last()
            .and_then(|p| p.as_ident())
            .is_some_and(|i| i.value.eq_ignore_ascii_case(join_key))
    };
    let missing = || {
        RouteError::syntax(format!(
            "joinKey not provided :{join_key},{} (ER child table {})",
            ctx.stmt, t.name
        ))
    };
    let value: &Expr = match &insert.source {
        None => insert
            .assignments
            .iter()
            .find_map(|a| match &a.target {
                sqlparser::ast::AssignmentTarget::ColumnName(n) if named(n) => Some(&a.value),
                _ => None,
            })
            .ok_or_else(missing)?,
        Some(source) => {
            let SetExpr::Values(values) = &*source.body else {
                return Err(RouteError::syntax(format!(
                    "INSERT ... SELECT into ER child table {} is not supported",
                    t.name
                )));
            };
            if values.rows.len() != 1 {
                return Err(RouteError::syntax(format!(
                    "ChildTable multi insert not provided (ER child table {} whose parent row must be looked up)",
                    t.name
                )));
            }
            let position = columns
                .iter()
                .position(|c| c.eq_ignore_ascii_case(join_key))
                .ok_or_else(missing)?;
            values.rows[0].get(position).ok_or_else(missing)?
        }
    };
    let literal = match value {
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::Number(n, _) => n.clone(),
            sqlparser::ast::Value::SingleQuotedString(s)
            | sqlparser::ast::Value::DoubleQuotedString(s) => {
                format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
            }
            _ => return Err(missing()),
        },
        Expr::UnaryOp {
            op: sqlparser::ast::UnaryOperator::Minus,
            expr,
        } => match &**expr {
            Expr::Value(v) => match &v.value {
                sqlparser::ast::Value::Number(n, _) => format!("-{n}"),
                _ => return Err(missing()),
            },
            _ => return Err(missing()),
        },
        _ => {
            return Err(RouteError::syntax(format!(
                "the joinKey {join_key} of ER child table {} must be a literal to find its parent row",
                t.name
            )));
        }
    };
    let parent_table = ctx
        .table(parent)
        .ok_or_else(|| unknown_table(parent, &ctx.s.name))?;
    // Physical table names are taken in lower case, as Mycat does.
    let probe = format!(
        "SELECT 1 FROM `{}` WHERE `{}` = {literal} LIMIT 1",
        parent.to_ascii_lowercase().replace('`', "``"),
        parent_key.to_ascii_lowercase().replace('`', "``"),
    );
    let probe: Arc<str> = Arc::from(probe);
    let nodes: BTreeSet<String> = parent_table.nodes.iter().cloned().collect();
    Ok(Routed::Lookup(super::super::ParentLookup {
        child: t.name.clone(),
        parent: parent.to_string(),
        probes: nodes
            .iter()
            .map(|n| Target {
                node: n.clone(),
                sql: probe.clone(),
            })
            .collect(),
        inserts: nodes
            .iter()
            .map(|n| Target {
                node: n.clone(),
                sql: Arc::from(ctx.sql_for(n)),
            })
            .collect(),
    }))
}

/// The routing text of an INSERT's sharding value (DECISIONS.md item 23): a literal whose stored
/// value manx knows — an integer, or a string that MySQL stores as written whatever the column's
/// type — or NULL (routed as Mycat routes it). Never the text of an expression: `1 + 9`, `10.5`,
/// `' 10'`, `0x0a`, `b'1010'`, `@v`, `(SELECT 10)` or `CAST(...)` would be placed by their
/// spelling, not by the value the row stores.
///
/// Errors: 1064 naming the table, the column and the expression.
pub(super) fn insert_value(t: &TableRoute, column: &str, e: &Expr) -> Result<String, RouteError> {
    if let Expr::Value(v) = e
        && v.value == sqlparser::ast::Value::Null
    {
        return Ok(e.to_string());
    }
    let text = match analyze::literal_text(e) {
        Some(text) if !is_fractional_number(e) => text,
        _ => {
            return Err(RouteError::syntax(format!(
                "table {} sharding column {column}: the value {e} is not a plain literal (an integer or a string); write the value the row stores",
                t.name
            )));
        }
    };
    // A function of integers places the row by the integer MySQL stores: only an integer
    // written as one (no text after it, which MySQL would drop) in BIGINT's range (beyond it
    // MySQL clamps) is that integer.
    if t.rule.as_ref().is_some_and(|r| r.function.reads_integers()) && text.parse::<i64>().is_err()
    {
        return Err(RouteError::syntax(format!(
            "table {} sharding column {column}: the value {e} is not an integer in BIGINT's range; the column would store another value than the one the row would be placed by",
            t.name
        )));
    }
    Ok(text)
}

/// Whether `e` is a number literal (signed or parenthesised) with a fraction or an exponent that
/// does not reduce to an integer: its stored value depends on the column's type.
pub(super) fn is_fractional_number(e: &Expr) -> bool {
    match e {
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::Number(n, _) => {
                analyze::canonical_number(n).contains(['.', 'e', 'E'])
            }
            _ => false,
        },
        Expr::UnaryOp { expr, .. } | Expr::Nested(expr) => is_fractional_number(expr),
        _ => false,
    }
}

/// `next value for MYCATSEQ_<NAME>` occurrences (SPEC §5.17), found by tokens (so never inside
/// a string literal or comment). Each draws from its own sequence (Mycat draws every value of
/// a statement from the first name it sees, which would hand one table another's keys).
pub(super) fn sequence_calls(stmt: &str) -> Option<SequenceRewrite> {
    if !scan::contains_ignore_ascii_case(stmt, "mycatseq_") {
        return None;
    }
    let toks = rewrite::tokens(stmt)?;
    let word = |i: usize, w: &str| matches!(toks.get(i), Some((Token::Word(x), _, _)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let mut edits = Vec::new();
    let mut i = 0;
    while i + 3 < toks.len() {
        let name = match &toks[i + 3].0 {
            Token::Word(w) if w.quote_style.is_none() => w
                .value
                .get(..9)
                .filter(|p| p.eq_ignore_ascii_case("MYCATSEQ_"))
                .map(|_| w.value[9..].to_ascii_uppercase()),
            _ => None,
        };
        match name {
            Some(name) if word(i, "NEXT") && word(i + 1, "VALUE") && word(i + 2, "FOR") => {
                edits.push(SequenceEdit {
                    range: toks[i].1.start..toks[i + 3].1.end,
                    before: String::new(),
                    sequence: Some(name),
                    after: String::new(),
                });
                i += 4;
            }
            _ => i += 1,
        }
    }
    (!edits.is_empty()).then(|| SequenceRewrite {
        sql: stmt.to_string(),
        prefix: String::new(),
        edits,
        reports_id: false,
    })
}

/// An INSERT into an `autoIncrement` table without its primary key: the key is added as the
/// first column, each row's value drawn from the sequence named after the table (SPEC §5.17).
/// `None` when the INSERT names the key.
pub(super) fn auto_increment(
    ctx: &Ctx<'_>,
    insert: &sqlparser::ast::Insert,
    columns: &[String],
    t: &TableRoute,
) -> Result<Option<Routed>, RouteError> {
    let Some(pk) = &t.primary_key else {
        return Err(RouteError::syntax(format!(
            "please make sure the primaryKey's config is not null in schemal.xml (table {} has autoIncrement)",
            t.name
        )));
    };
    // Named, or given by position in an INSERT without a column list.
    if columns.iter().any(|c| c.eq_ignore_ascii_case(pk)) {
        return Ok(None);
    }
    let Some(first) = insert
        .columns
        .first()
        .and_then(|c| c.0.first()?.as_ident().cloned())
    else {
        return Err(RouteError::syntax(format!(
            "insert must provide ColumnList (table {} takes its {pk} from a global sequence)",
            t.name
        )));
    };
    let values = insert.source.as_ref().map(|s| &*s.body);
    if !matches!(values, Some(SetExpr::Values(_))) {
        return Err(RouteError::syntax(format!(
            "multi insert not provided (INSERT ... SELECT into table {} whose {pk} comes from a global sequence)",
            t.name
        )));
    }
    let at = rewrite::offset(ctx.stmt, first.span.start)
        .ok_or_else(|| RouteError::syntax("cannot place the primary key column"))?;
    let rows = rewrite::insert_rows(ctx.stmt)
        .ok_or_else(|| RouteError::syntax("cannot place the primary key values"))?;
    let mut edits = vec![SequenceEdit {
        range: at..at,
        before: format!("`{}`, ", pk.to_ascii_lowercase()),
        sequence: None,
        after: String::new(),
    }];
    for r in rows {
        edits.push(SequenceEdit {
            range: r.start + 1..r.start + 1,
            before: String::new(),
            sequence: Some(t.name.clone()),
            after: ", ".to_string(),
        });
    }
    Ok(Some(Routed::Sequence(SequenceRewrite {
        sql: ctx.stmt.to_string(),
        prefix: String::new(),
        edits,
        reports_id: true,
    })))
}
