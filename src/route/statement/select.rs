//! Placement of queries: which dataNodes a SELECT reads, joins kept on one node, and the merge it needs.

use super::*;

/// Where one table occurrence may be read or written.
#[derive(Debug)]
pub(super) enum Placement<'a> {
    /// A global table: any one of these nodes for reads, all for writes.
    Global(&'a TableRoute),
    /// Exactly these nodes.
    Nodes(String, BTreeSet<String>),
}

pub(super) fn nodes_of(t: &TableRoute, p: Partitions) -> BTreeSet<String> {
    match p {
        Partitions::All => t.nodes.iter().cloned().collect(),
        // A contradictory condition (`id = 1 AND id = 2`) matches no row anywhere: any one node
        // gives the right (empty) answer.
        Partitions::Some(set) if set.is_empty() => BTreeSet::from([t.nodes[0].clone()]),
        Partitions::Some(set) => set.into_iter().map(|i| t.nodes[i].clone()).collect(),
    }
}

/// Places every occurrence: configured tables by kind and conditions, undeclared ones on the
/// default node. `top_depth` is where the statement's own FROM stands.
pub(super) fn placements<'a>(
    ctx: &'a Ctx<'a>,
    occurrences: &[Occurrence],
    selection: Option<&Expr>,
    top_depth: usize,
) -> Result<Vec<Placement<'a>>, RouteError> {
    let top_non_global = occurrences
        .iter()
        .filter(|o| {
            o.depth == top_depth
                && ctx
                    .table(&o.name)
                    .is_some_and(|t| t.kind != TableKind::Global)
        })
        .count();
    let mut out = Vec::new();
    for o in occurrences {
        let Some(t) = ctx.table(&o.name) else {
            match &ctx.s.default_node {
                Some(d) => out.push(Placement::Nodes(
                    o.name.clone(),
                    BTreeSet::from([d.clone()]),
                )),
                None => return Err(unknown_table(&o.name, &ctx.s.name)),
            }
            continue;
        };
        match (&t.kind, &t.rule) {
            (TableKind::Global, _) => out.push(Placement::Global(t)),
            (TableKind::Sharded { .. } | TableKind::Child { .. }, Some(rule))
                if o.depth == top_depth =>
            {
                let p = match selection {
                    Some(w) => {
                        let mut qualifiers =
                            vec![o.alias.clone().unwrap_or_else(|| o.name.clone())];
                        if o.alias.is_none() {
                            qualifiers.push(o.name.clone());
                        }
                        let m = ColumnMatcher {
                            column: &rule.column,
                            qualifiers,
                            unqualified: top_non_global == 1,
                        };
                        analyze::partitions(w, t, &m)?
                    }
                    None => Partitions::All,
                };
                out.push(Placement::Nodes(t.name.clone(), nodes_of(t, p)));
            }
            _ => out.push(Placement::Nodes(
                t.name.clone(),
                t.nodes.iter().cloned().collect(),
            )),
        }
    }
    Ok(out)
}

/// Combines placements for a read: one node set that answers the whole statement correctly.
pub(super) fn read_nodes(placements: &[Placement<'_>]) -> Result<ReadNodes, RouteError> {
    let globals: Vec<&TableRoute> = placements
        .iter()
        .filter_map(|p| match p {
            Placement::Global(t) => Some(*t),
            _ => None,
        })
        .collect();
    let fixed: Vec<(&String, &BTreeSet<String>)> = placements
        .iter()
        .filter_map(|p| match p {
            Placement::Nodes(n, s) => Some((n, s)),
            _ => None,
        })
        .collect();
    let nodes = match fixed.as_slice() {
        [] => {
            let mut common: BTreeSet<String> = globals[0].nodes.iter().cloned().collect();
            for g in &globals[1..] {
                common = &common & &g.nodes.iter().cloned().collect();
            }
            let common: Vec<String> = common.into_iter().collect();
            if common.is_empty() {
                return Err(RouteError::syntax(
                    "the global tables of this statement share no dataNode",
                ));
            }
            return Ok(ReadNodes::AnyOf(common));
        }
        [(_, nodes)] => (*nodes).clone(),
        [(first_name, first), rest @ ..] => {
            for (name, nodes) in rest {
                if !(first.len() == 1 && nodes == first) {
                    return Err(RouteError::syntax(format!(
                        "cross-node join of {first_name} and {name} is not supported: their rows may be on different dataNodes (route both to one node with conditions on their sharding columns)"
                    )));
                }
            }
            (*first).clone()
        }
    };
    for g in globals {
        if let Some(missing) = nodes.iter().find(|n| !g.nodes.contains(n)) {
            return Err(RouteError::syntax(format!(
                "global table {} is not on dataNode {missing}",
                g.name
            )));
        }
    }
    Ok(ReadNodes::All(nodes))
}

/// Where a read must go.
pub(super) enum ReadNodes {
    /// Any one of these nodes answers it (only global tables).
    AnyOf(Vec<String>),
    /// All of these nodes, results concatenated.
    All(BTreeSet<String>),
}

pub(super) fn select(
    ctx: &Ctx<'_>,
    q: &Query,
    occurrences: &[Occurrence],
) -> Result<Routed, RouteError> {
    if occurrences.is_empty() {
        // No table: any node of the schema (SPEC §5.4).
        return Ok(ctx.plan_any(&ctx.s.nodes));
    }
    // Only a schema with sqlMaxLimit pays for finding where the LIMIT goes.
    let mut auto_limit = auto_limit(ctx, q, occurrences);
    let at = auto_limit.and_then(|_| horizon::limit_insertion_point(ctx.stmt));
    if at.is_none() {
        auto_limit = None;
    }
    let limited;
    let merge_edits = ctx.edits.clone();
    let ctx = match (auto_limit, at) {
        (Some(n), Some(at)) => {
            let mut edits = ctx.edits.clone();
            edits.push(at..at, Replacement::Text(format!(" LIMIT {n}")));
            limited = Ctx {
                r: ctx.r,
                s: ctx.s,
                stmt: ctx.stmt,
                edits,
                columns: ctx.columns,
                columns_used: ctx.columns_used,
            };
            &limited
        }
        _ => ctx,
    };
    // The first table undeclared and a default node: the whole statement goes there (SPEC §5.4),
    // when every table it reads has all its rows there (Mycat sends it all the same: a sharded
    // or global table named beside it was then read from a stale copy on that node, or not
    // found).
    if let (Some(d), None) = (&ctx.s.default_node, ctx.table(&occurrences[0].name)) {
        let elsewhere: BTreeSet<&str> = occurrences
            .iter()
            .filter(|o| !o.sequence && !ctx.all_rows_on(&o.name, d))
            .map(|o| o.name.as_str())
            .collect();
        if !elsewhere.is_empty() {
            return Err(RouteError::syntax(format!(
                "a statement over table {} of schema {} (on its default dataNode {d}) may read only tables whose rows are all there: {} {} not",
                occurrences[0].name,
                ctx.s.name,
                elsewhere.iter().copied().collect::<Vec<_>>().join(", "),
                if elsewhere.len() == 1 { "is" } else { "are" },
            )));
        }
        return Ok(ctx.plan(BTreeSet::from([d.clone()]), true, OkMerge::Sum));
    }
    let selection = match &*q.body {
        SetExpr::Select(s) => s.selection.as_ref(),
        _ => None,
    };
    let placements = placements(ctx, occurrences, selection, 1)?;
    let read = match read_nodes(&placements) {
        Err(_) if !matches!(&*q.body, SetExpr::Select(_)) => {
            return Err(RouteError::syntax(
                "UNION / INTERSECT / EXCEPT over several dataNodes is not supported yet",
            ));
        }
        Err(e) => match colocated_nodes(ctx, q, occurrences, &placements) {
            Some(nodes) => ReadNodes::All(nodes),
            None => return Err(e),
        },
        Ok(read) => read,
    };
    let nodes = match read {
        ReadNodes::AnyOf(nodes) => return Ok(ctx.plan_any(&nodes)),
        ReadNodes::All(nodes) => nodes,
    };
    if nodes.len() == 1 {
        return Ok(ctx.plan(nodes, true, OkMerge::Sum));
    }
    // Over several nodes each node answers for its own rows only. That is the whole answer when
    // every non-global table stands in the top-level FROM and global tables are only inner-joined
    // there; a sharded table in a subquery or derived table, or a global table on the preserved
    // side of an outer join, would give per-node answers that concatenate wrongly.
    if let Some(o) = occurrences.iter().find(|o| {
        o.depth != 1
            && ctx
                .table(&o.name)
                .is_none_or(|t| t.kind != TableKind::Global)
    }) {
        return Err(RouteError::syntax(format!(
            "table {} inside a subquery or derived table over several dataNodes is not supported yet",
            o.name
        )));
    }
    if !only_inner_joins(q) && !outer_joins_anchored(ctx, q) {
        return Err(RouteError::syntax(
            "an outer join with a global table or a derived table on its preserved side over several dataNodes is not supported yet",
        ));
    }
    // The one sharded table's sharding column: groups keyed on it never span nodes.
    let shard = {
        let mut sharded = occurrences.iter().filter_map(|o| {
            let t = ctx.table(&o.name)?;
            let rule = t.rule.as_ref()?;
            (t.kind != TableKind::Global).then_some((o, rule))
        });
        match (sharded.next(), sharded.next()) {
            (Some((o, rule)), None) => Some(horizon::ShardColumn {
                column: &rule.column,
                hashes_text: rule.function.hashes_text(),
                qualifiers: vec![o.alias.clone().unwrap_or_else(|| o.name.clone())],
            }),
            _ => None,
        }
    };
    let from = match from_columns(ctx, q) {
        ControlFlow::Continue(from) => from,
        ControlFlow::Break(lookup) => return Ok(Routed::Columns(lookup)),
    };
    let planned = horizon::plan(
        ctx.stmt,
        q,
        &merge_edits,
        merge_edits.ranges(),
        shard,
        &from,
        auto_limit,
        ctx.r.max_group_bytes,
    )?;
    let targets = nodes
        .into_iter()
        .map(|node| Target {
            sql: Arc::from(planned.edits.apply(ctx.stmt, ctx.database(&node))),
            node,
        })
        .collect();
    let merge = planned.merge;
    let trivial = merge.hidden == 0
        && merge.node_order.is_empty()
        && merge.grouping.is_none()
        && merge.limit.is_none();
    Ok(Routed::Plan(Plan {
        tables: Default::default(),
        targets,
        read_only: true,
        ok_merge: OkMerge::Sum,
        merge: (!trivial).then_some(merge),
        fallback: Vec::new(),
        ddl: false,
        host: HostHint::None,
        server_variables: false,
        table_names: None,
    }))
}

/// The columns of the FROM tables of a SELECT over several dataNodes, when its GROUP BY needs
/// them ([`horizon::needs_from_columns`]; none otherwise): from the session's column orders
/// ([`super::super::ColumnOrders`], read once per table and configuration, again after a DDL).
/// `Break`: the look-up of the first table whose columns the session has not read yet; it
/// reads them and routes the statement again ([`Routed::Columns`]). A derived table, a WITH
/// query, a table of another database, or any table when routing without a session, is
/// [`horizon::FromTable::Unknown`]: the planner refuses a name it would decide.
pub(super) fn from_columns(
    ctx: &Ctx<'_>,
    q: &Query,
) -> ControlFlow<ColumnsLookup, horizon::FromColumns> {
    use horizon::FromTable;
    let mut from = horizon::FromColumns::default();
    let SetExpr::Select(select) = &*q.body else {
        return ControlFlow::Continue(from);
    };
    if !horizon::needs_from_columns(q) {
        return ControlFlow::Continue(from);
    }
    fn leaves<'f>(f: &'f TableFactor, out: &mut Vec<&'f TableFactor>) {
        match f {
            TableFactor::NestedJoin {
                table_with_joins, ..
            } => {
                leaves(&table_with_joins.relation, out);
                for j in &table_with_joins.joins {
                    leaves(&j.relation, out);
                }
            }
            f => out.push(f),
        }
    }
    let mut factors = Vec::new();
    for t in &select.from {
        leaves(&t.relation, &mut factors);
        for j in &t.joins {
            leaves(&j.relation, &mut factors);
        }
    }
    let is_cte = |name: &str| {
        q.with.as_ref().is_some_and(|w| {
            w.cte_tables
                .iter()
                .any(|c| c.alias.name.value.eq_ignore_ascii_case(name))
        })
    };
    for f in factors {
        let table = match f {
            TableFactor::Table {
                name, args: None, ..
            } => {
                let (qualifier, table) = split_name(name);
                let nodes: Option<Vec<String>> = match ctx.table(&table.to_ascii_uppercase()) {
                    Some(t) => Some(t.nodes.clone()),
                    None => ctx.s.default_node.clone().map(|d| vec![d]),
                };
                match (ctx.columns, nodes) {
                    _ if qualifier.as_deref().is_some_and(|q| q != ctx.s.name) => {
                        FromTable::Unknown(format!("table {} of another database", name))
                    }
                    _ if qualifier.is_none() && is_cte(&table) => {
                        FromTable::Unknown(format!("the WITH query {table}"))
                    }
                    (None, _) => FromTable::Unknown(format!(
                        "table {table} (its columns are read only for a client's session)"
                    )),
                    (Some(_), None) => FromTable::Unknown(format!("table {table}")),
                    (Some(orders), Some(nodes)) => {
                        ctx.columns_used.set(true);
                        match orders.get(&ctx.s.name, &table) {
                            Some(columns) => FromTable::Columns(columns),
                            None => {
                                return ControlFlow::Break(columns_lookup(ctx, &table, &nodes));
                            }
                        }
                    }
                }
            }
            TableFactor::Derived {
                alias: Some(alias), ..
            } => FromTable::Unknown(format!("the derived table {}", alias.name)),
            f => FromTable::Unknown(format!(
                "`{}` in FROM",
                f.to_string().chars().take(60).collect::<String>()
            )),
        };
        from.tables.push(table);
    }
    ControlFlow::Continue(from)
}

/// The nodes of a join whose non-global tables are co-located: every table is linked to the
/// others by equalities (in ON or in WHERE, under AND) that keep matching rows on one node —
/// an ER child's `joinKey` = its parent's `parentKey` (SPEC §5.12), or the sharding columns
/// of two tables sharded by the same function over the same dataNodes. Each node then joins
/// its own rows completely; the nodes asked are those every table may be on. `None` when the
/// tables are not provably co-located (the join is refused).
pub(super) fn colocated_nodes(
    ctx: &Ctx<'_>,
    q: &Query,
    occurrences: &[Occurrence],
    placements: &[Placement<'_>],
) -> Option<BTreeSet<String>> {
    use sqlparser::ast::{JoinConstraint, JoinOperator as J};
    let SetExpr::Select(select) = &*q.body else {
        return None;
    };
    if placements.len() != occurrences.len() {
        return None;
    }
    let members: Vec<usize> = (0..occurrences.len())
        .filter(|&i| matches!(placements[i], Placement::Nodes(..)))
        .collect();
    if members.len() < 2 || members.iter().any(|&i| occurrences[i].depth != 1) {
        return None;
    }
    let mut conditions: Vec<&Expr> = select.selection.iter().collect();
    for t in &select.from {
        for j in &t.joins {
            let c = match &j.join_operator {
                J::Join(c)
                | J::Inner(c)
                | J::Left(c)
                | J::LeftOuter(c)
                | J::Right(c)
                | J::RightOuter(c)
                | J::StraightJoin(c) => c,
                _ => continue,
            };
            if let JoinConstraint::On(e) = c {
                conditions.push(e);
            }
        }
    }
    let mut equalities = Vec::new();
    let mut stack = conditions;
    while let Some(e) = stack.pop() {
        match e {
            Expr::Nested(inner) => stack.push(inner),
            Expr::BinaryOp {
                left,
                op: sqlparser::ast::BinaryOperator::And,
                right,
            } => {
                stack.push(left);
                stack.push(right);
            }
            Expr::BinaryOp {
                left,
                op: sqlparser::ast::BinaryOperator::Eq,
                right,
            } => equalities.push((&**left, &**right)),
            _ => {}
        }
    }
    let tables: Vec<Option<&TableRoute>> = occurrences.iter().map(|o| ctx.table(&o.name)).collect();
    // The columns that place a table's rows: its rule column, an ER joinKey, or a parentKey
    // one of its children refers to.
    let placing = |i: usize, column: &str| -> bool {
        let Some(t) = tables[i] else { return false };
        t.rule.as_ref().is_some_and(|r| r.column == column)
            || matches!(&t.kind, TableKind::Child { join_key, .. } if join_key == column)
            || tables.iter().flatten().any(|c| {
                matches!(&c.kind, TableKind::Child { parent, parent_key, .. }
                    if *parent == t.name && parent_key == column)
            })
    };
    let column_of = |e: &Expr| -> Option<(usize, String)> {
        let (qualifier, column) = match e {
            Expr::Identifier(c) => (None, c.value.to_ascii_uppercase()),
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => (
                Some(&parts[parts.len() - 2].value),
                parts[parts.len() - 1].value.to_ascii_uppercase(),
            ),
            _ => return None,
        };
        let candidates: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| {
                let o = &occurrences[i];
                match qualifier {
                    Some(q) => match &o.alias {
                        Some(a) => a.eq_ignore_ascii_case(q),
                        None => o.name.eq_ignore_ascii_case(q),
                    },
                    None => placing(i, &column),
                }
            })
            .collect();
        match candidates.as_slice() {
            [i] => Some((*i, column)),
            _ => None,
        }
    };
    let linked = |(a, x): &(usize, String), (b, y): &(usize, String)| -> bool {
        let (Some(ta), Some(tb)) = (tables[*a], tables[*b]) else {
            return false;
        };
        // A child placed by its parent's function on its joinKey is co-located only when the
        // function reads numbers: a text function may place 'a' and 'A' (equal under a _ci
        // collation) apart. Children placed by looking the parent row up are always with it.
        let er = |c: &TableRoute, ck: &str, p: &TableRoute, pk: &str| {
            matches!(&c.kind, TableKind::Child { parent, join_key, parent_key }
                if *parent == p.name && join_key == ck && parent_key == pk)
                && c.rule.as_ref().is_none_or(|r| !r.function.hashes_text())
        };
        let same_rule = match (&ta.rule, &tb.rule) {
            (Some(ra), Some(rb)) => {
                ra.column == *x
                    && rb.column == *y
                    && Arc::ptr_eq(&ra.function, &rb.function)
                    && !ra.function.hashes_text()
                    && ta.nodes == tb.nodes
            }
            _ => false,
        };
        er(ta, x, tb, y) || er(tb, y, ta, x) || same_rule
    };
    let mut root: Vec<usize> = (0..occurrences.len()).collect();
    fn find(root: &mut [usize], mut i: usize) -> usize {
        while root[i] != i {
            root[i] = root[root[i]];
            i = root[i];
        }
        i
    }
    for (l, r) in equalities {
        if let (Some(a), Some(b)) = (column_of(l), column_of(r))
            && a.0 != b.0
            && linked(&a, &b)
        {
            let (ra, rb) = (find(&mut root, a.0), find(&mut root, b.0));
            root[ra] = rb;
        }
    }
    let first = find(&mut root, members[0]);
    if members.iter().any(|&i| find(&mut root, i) != first) {
        return None;
    }
    let mut nodes: Option<BTreeSet<String>> = None;
    for &i in &members {
        let Placement::Nodes(_, set) = &placements[i] else {
            continue;
        };
        nodes = Some(match nodes {
            None => set.clone(),
            Some(n) => &n & set,
        });
    }
    let mut nodes = nodes?;
    if nodes.is_empty() {
        // No node can hold a matching pair: any one node answers (with no rows).
        let Placement::Nodes(_, set) = &placements[members[0]] else {
            return None;
        };
        nodes.insert(set.iter().next()?.clone());
    }
    for p in placements {
        if let Placement::Global(g) = p
            && nodes.iter().any(|n| !g.nodes.contains(n))
        {
            return None;
        }
    }
    Some(nodes)
}

/// Mycat's auto-LIMIT (SPEC §5.11): `sqlMaxLimit` rows for a single-table SELECT without
/// `LIMIT`, unless the table says `needAddLimit="false"` or the WHERE names its `primaryKey`.
pub(super) fn auto_limit(ctx: &Ctx<'_>, q: &Query, occurrences: &[Occurrence]) -> Option<u64> {
    let n = ctx.s.sql_max_limit?;
    if q.limit_clause.is_some() || occurrences.len() != 1 {
        return None;
    }
    let SetExpr::Select(select) = &*q.body else {
        return None;
    };
    let Some(t) = ctx.table(&occurrences[0].name) else {
        return Some(n);
    };
    if !t.need_add_limit {
        return None;
    }
    if t.kind == TableKind::Global {
        return Some(n);
    }
    match (&select.selection, &t.primary_key) {
        (Some(w), Some(pk)) if mentions_column(w, pk) => None,
        _ => Some(n),
    }
}

/// Whether `e` refers to column `column` (upper-cased) anywhere.
pub(super) fn mentions_column(e: &Expr, column: &str) -> bool {
    struct Find<'a>(&'a str);
    impl Visitor for Find<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            let name = match e {
                Expr::Identifier(i) => Some(&i.value),
                Expr::CompoundIdentifier(parts) => parts.last().map(|p| &p.value),
                _ => None,
            };
            if name.is_some_and(|n| n.eq_ignore_ascii_case(self.0)) {
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    e.visit(&mut Find(column)).is_break()
}

/// Whether every join of the top-level FROM is an inner or cross join (comma joins included).
pub(super) fn only_inner_joins(q: &Query) -> bool {
    use sqlparser::ast::JoinOperator as J;
    let SetExpr::Select(select) = &*q.body else {
        return false;
    };
    // Parenthesised joins may hide outer joins: not inspected, so not trusted.
    let nested = select.from.iter().any(|t| {
        matches!(t.relation, TableFactor::NestedJoin { .. })
            || t.joins
                .iter()
                .any(|j| matches!(j.relation, TableFactor::NestedJoin { .. }))
    });
    !nested
        && select.from.iter().flat_map(|t| &t.joins).all(|j| {
            matches!(
                j.join_operator,
                J::Join(_) | J::Inner(_) | J::CrossJoin(_) | J::StraightJoin(_)
            )
        })
}

/// Whether a multi-node read may use outer joins: only `sharded LEFT JOIN ...` chains whose
/// leftmost relation is a non-global configured table (every result row then carries a row of
/// that table, which exactly one node holds).
pub(super) fn outer_joins_anchored(ctx: &Ctx<'_>, q: &Query) -> bool {
    use sqlparser::ast::JoinOperator as J;
    let SetExpr::Select(select) = &*q.body else {
        return false;
    };
    select.from.iter().all(|t| {
        let anchored = match &t.relation {
            TableFactor::Table { name, .. } => {
                let (_, table) = split_name(name);
                ctx.table(&table.to_ascii_uppercase())
                    .is_some_and(|t| t.kind != TableKind::Global)
            }
            _ => false,
        };
        let plain = |f: &TableFactor| !matches!(f, TableFactor::NestedJoin { .. });
        plain(&t.relation)
            && t.joins.iter().all(|j| match j.join_operator {
                J::Join(_) | J::Inner(_) | J::CrossJoin(_) | J::StraightJoin(_) => {
                    plain(&j.relation)
                }
                J::Left(_) | J::LeftOuter(_) => anchored && plain(&j.relation),
                _ => false,
            })
    })
}
