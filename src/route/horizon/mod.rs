//! Planning of a SELECT over several dataNodes: what each node must return so that the engine
//! can combine the nodes' rows into exactly what one database holding all rows would return.
//!
//! The client's statement is kept as written; only these pieces change, by byte range:
//! - extra columns after the select list: copies of sort and group keys that are not selected,
//!   `WEIGHT_STRING(RTRIM(key))` for every key that may be a string (the merge then compares by
//!   the node's collation), `SUM(x)` and `COUNT(x)` for each `AVG(x)`;
//! - the `ORDER BY` each node sorts by (the group keys when groups span nodes);
//! - `LIMIT m, n` becomes `LIMIT m + n` when the nodes' order is the final one, and is dropped
//!   when every group is needed;
//! - for `COUNT/SUM/AVG(DISTINCT ...)` and `GROUP_CONCAT`, the arguments (and GROUP_CONCAT's
//!   ORDER BY keys) are added to the nodes' `GROUP BY` (one is written when the statement has
//!   none) and to their `ORDER BY` after the group keys, by the extra columns' aliases; the
//!   separator and `@@SESSION.group_concat_max_len` come back as extra columns; when the
//!   client orders such groups by an aggregate, the nodes get `SQL_BUFFER_RESULT`, so that
//!   they describe the columns as one server sorting through a temporary table does.
//!
//! What cannot be combined exactly is refused with an error naming it (two DISTINCT
//! aggregates over different expressions, aggregates inside expressions, `HAVING` forms the
//! merge cannot evaluate): never a wrong answer.

use std::ops::Range;
use std::sync::Arc;

use sqlparser::ast::{
    Distinct, DuplicateTreatment, Expr, FunctionArguments, GroupByExpr, Ident, LimitClause,
    OrderByKind, OrderBySort, Query, Select, SelectItem, SetExpr, Value,
};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

use super::RouteError;
use super::analyze;
use super::plan::{Aggregate, ColumnRef, CompareOp, DistinctOp, Grouping, Having, Merge, SortKey};
use super::rewrite::{self, Edits, Replacement, is_keyword};

mod aggregate;
mod having;
mod layout;
mod limit;

pub(in crate::route) use self::aggregate::cross_row_value;
use self::aggregate::*;
use self::having::*;
pub(super) use self::layout::limit_insertion_point;
use self::layout::*;
use self::limit::*;

/// The sharding column of the one sharded table of a multi-node read, as a condition on column
/// references: groups keyed on it never span nodes.
pub(super) struct ShardColumn<'a> {
    /// Upper-cased column name.
    pub column: &'a str,
    /// The function places exact text ([`PartitionFunction::hashes_text`]): values equal under
    /// the column's collation may be on different nodes, so its groups are not node-local.
    ///
    /// [`PartitionFunction::hashes_text`]: super::function::PartitionFunction::hashes_text
    pub hashes_text: bool,
    /// Names the table may be qualified by (its alias, or its name), compared case-insensitively.
    pub qualifiers: Vec<String>,
}

impl ShardColumn<'_> {
    /// Whether `e` names the sharding column (bare, or qualified by the table or its alias).
    pub(super) fn is(&self, e: &Expr) -> bool {
        match e {
            Expr::Identifier(i) => i.value.eq_ignore_ascii_case(self.column),
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                let n = parts.len();
                parts[n - 1].value.eq_ignore_ascii_case(self.column)
                    && self
                        .qualifiers
                        .iter()
                        .any(|q| q.eq_ignore_ascii_case(&parts[n - 2].value))
            }
            Expr::Nested(e) => self.is(e),
            _ => false,
        }
    }
}

/// The columns of what a SELECT's FROM clause reads, as far as its `GROUP BY` names need them.
///
/// MariaDB reads an unqualified `GROUP BY` name as a column of the FROM tables first and as a
/// select alias only when no table has such a column, or more than one does (an ambiguous
/// column is passed over there, without an error); it warns (1052, `Column 'b' in GROUP BY is
/// ambiguous`) when a column wins over an alias. `HAVING` then reads the name as that group
/// column, `ORDER BY` reads the alias first (`find_order_in_list`,
/// `resolve_ref_in_select_and_group`; checked on MariaDB 10.11).
#[derive(Debug, Default)]
pub(super) struct FromColumns {
    /// One entry per table of the FROM clause (joined ones included).
    pub tables: Vec<FromTable>,
}

/// One table of a FROM clause.
#[derive(Debug)]
pub(super) enum FromTable {
    /// A table or view, and its columns as its dataNodes define them.
    Columns(Arc<[String]>),
    /// Something whose columns the gateway does not know (a derived table, a WITH query, a
    /// table read without a session): what it is, for the refusal.
    Unknown(String),
}

impl FromColumns {
    /// How many tables have a column `name` (compared without case, as MariaDB compares
    /// column names), up to 2. Errors: what an unknown table is, when it would decide.
    fn tables_with(&self, name: &str) -> Result<usize, &str> {
        let name = name.to_lowercase();
        let mut found = 0;
        let mut unknown = None;
        for t in &self.tables {
            match t {
                FromTable::Columns(columns) => {
                    if columns.iter().any(|c| c.to_lowercase() == name) {
                        found += 1;
                    }
                }
                FromTable::Unknown(what) => {
                    unknown.get_or_insert(what.as_str());
                }
            }
        }
        match unknown {
            Some(what) if found < 2 => Err(what),
            _ => Ok(found.min(2)),
        }
    }
}

/// The `GROUP BY` item `g` of `select` when it is an unqualified name whose meaning depends on
/// the FROM tables' columns ([`FromColumns`]): the alias of a select item that is not that
/// same bare column, with no select item written as the bare name. Any other item means the
/// same whatever the columns: a bare item of that name or no alias of it is a column, an
/// alias of `(name)` is that column too.
pub(super) fn alias_or_column<'q>(select: &Select, g: &'q Expr) -> Option<&'q Ident> {
    let Expr::Identifier(id) = g else {
        return None;
    };
    let bare = |e: &Expr| {
        let mut e = e;
        while let Expr::Nested(inner) = e {
            e = inner;
        }
        matches!(e, Expr::Identifier(x) if x.value.eq_ignore_ascii_case(&id.value))
    };
    let mut aliased = None;
    for item in &select.projection {
        match item {
            // The planner matches GROUP BY items with select items by text first: a bare item
            // of the name is that column.
            SelectItem::UnnamedExpr(Expr::Identifier(x))
            | SelectItem::ExprWithAlias {
                expr: Expr::Identifier(x),
                ..
            } if x.value.eq_ignore_ascii_case(&id.value) => return None,
            SelectItem::ExprWithAlias { expr, alias }
                if aliased.is_none() && alias.value.eq_ignore_ascii_case(&id.value) =>
            {
                aliased = Some(expr);
            }
            _ => {}
        }
    }
    aliased.filter(|e| !bare(e)).map(|_| id)
}

/// Whether some `GROUP BY` item of `q` needs the FROM tables' columns ([`alias_or_column`]).
pub(super) fn needs_from_columns(q: &Query) -> bool {
    let SetExpr::Select(select) = &*q.body else {
        return false;
    };
    match &select.group_by {
        GroupByExpr::Expressions(items, _) => {
            items.iter().any(|g| alias_or_column(select, g).is_some())
        }
        GroupByExpr::All(_) => false,
    }
}

/// The refusal of a `GROUP BY` name that is a select alias and may be a column of a FROM table
/// whose columns are not known (`what`).
fn ambiguous_name(name: &str, what: &str) -> RouteError {
    RouteError::not_supported(format!(
        "Column '{name}' in GROUP BY over several dataNodes is ambiguous: it is a select alias, and MariaDB groups by a column of that name if one table of the FROM clause has one, which the gateway cannot tell for {what}; rename the alias or qualify the column"
    ))
}

/// The merge of a multi-node SELECT and the edits that make each node's statement serve it.
pub(super) struct Planned {
    pub merge: Merge,
    pub edits: Edits,
}

/// Plans the merge of `q` over several dataNodes. `edited` are the byte ranges the per-node
/// edits change; `shard` is the sharding column of the statement's one sharded table; `from`
/// the columns of its FROM tables, as far as [`needs_from_columns`] asks for them.
///
/// Errors: a construct whose per-node results cannot be combined exactly (1064, naming it); a
/// `GROUP BY` name whose meaning `from` does not decide (1235, naming it).
#[allow(clippy::too_many_arguments)]
pub(super) fn plan(
    sql: &str,
    q: &Query,
    edits: &Edits,
    edited: Vec<Range<usize>>,
    shard: Option<ShardColumn<'_>>,
    from: &FromColumns,
    auto_limit: Option<u64>,
    max_group_bytes: usize,
) -> Result<Planned, RouteError> {
    let SetExpr::Select(select) = &*q.body else {
        return Err(RouteError::syntax(
            "UNION and other set operations over several dataNodes are not supported yet",
        ));
    };
    if has_window_function(q) {
        return Err(RouteError::syntax(
            "window functions over several dataNodes are not supported",
        ));
    }
    let layout = Layout::new(sql).ok_or_else(|| {
        RouteError::syntax("this SELECT form over several dataNodes is not supported")
    })?;
    if layout.items.len() != select.projection.len() {
        return Err(RouteError::syntax(
            "this select list over several dataNodes is not supported",
        ));
    }
    if select
        .select_modifiers
        .as_ref()
        .is_some_and(|m| m.sql_calc_found_rows)
    {
        return Err(RouteError::syntax(
            "SQL_CALC_FOUND_ROWS over several dataNodes is not supported",
        ));
    }
    let mut p = Planner {
        sql,
        layout,
        items: Vec::new(),
        hidden: Vec::new(),
        edited,
        sub: SubKeys::default(),
        merging: false,
        group_columns: Vec::new(),
    };
    for (i, item) in select.projection.iter().enumerate() {
        let range = p.layout.items[i].clone();
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (Some(e), None),
            SelectItem::ExprWithAlias { expr, alias } => (Some(expr), Some(alias.value.clone())),
            _ => (None, None),
        };
        let Some(expr) = expr else {
            p.items.push(Item {
                expr: None,
                alias: None,
                aggregate: None,
                nested_aggregate: false,
            });
            continue;
        };
        let expr_range = if alias.is_some() {
            // `expr [AS] alias`: the expression ends before the alias (and its AS).
            let toks: Vec<&(Token, Range<usize>, usize)> = p
                .layout
                .tokens
                .iter()
                .filter(|(_, r, _)| r.start >= range.start && r.end <= range.end)
                .collect();
            let n = toks.len();
            let cut = if n >= 3 && is_keyword(&toks[n - 2].0, Keyword::AS) {
                n - 2
            } else {
                n - 1
            };
            if cut == 0 {
                return Err(RouteError::syntax(
                    "this select list over several dataNodes is not supported",
                ));
            }
            range.start..toks[cut - 1].1.end
        } else {
            range
        };
        let aggregate = aggregate_call(expr, &p)?;
        let nested_aggregate = aggregate.is_none() && contains_aggregate(expr);
        p.items.push(Item {
            expr: Some(expr_range),
            alias,
            aggregate,
            nested_aggregate,
        });
    }

    let group_exprs: &[Expr] = match &select.group_by {
        GroupByExpr::Expressions(e, modifiers) if modifiers.is_empty() => e,
        GroupByExpr::Expressions(..) | GroupByExpr::All(_) => {
            return Err(RouteError::syntax(
                "GROUP BY ... WITH ROLLUP over several dataNodes is not supported",
            ));
        }
    };
    // `GROUP BY a DESC`: MariaDB sorts the groups so; the merge sorts groups ascending.
    if p.layout.group_sorted && q.order_by.is_none() {
        return Err(RouteError::syntax(
            "GROUP BY ... ASC / DESC over several dataNodes is not supported: write the order as ORDER BY",
        ));
    }
    if group_exprs.len() != p.layout.group.len() {
        return Err(RouteError::syntax(
            "this GROUP BY over several dataNodes is not supported",
        ));
    }
    // Which GROUP BY names that are also select aliases are read as a FROM table's column.
    let mut by_column = Vec::with_capacity(group_exprs.len());
    for g in group_exprs {
        by_column.push(match alias_or_column(select, g) {
            Some(name) => match from.tables_with(&name.value) {
                Ok(n) => n == 1,
                Err(what) => return Err(ambiguous_name(&name.value, what)),
            },
            None => false,
        });
    }
    let distinct = match &select.distinct {
        None | Some(Distinct::All) => false,
        Some(Distinct::Distinct) => true,
        Some(Distinct::On(_)) => {
            return Err(RouteError::syntax("DISTINCT ON is not supported"));
        }
    };
    // Aggregates anywhere (select list, HAVING, ORDER BY) make the whole statement one group
    // when there is no GROUP BY.
    let has_aggregates = p
        .items
        .iter()
        .any(|i| i.aggregate.is_some() || i.nested_aggregate)
        || select.having.as_ref().is_some_and(contains_aggregate)
        || q.order_by.as_ref().is_some_and(|o| match &o.kind {
            OrderByKind::Expressions(list) => list.iter().any(|e| contains_aggregate(&e.expr)),
            OrderByKind::All(_) => false,
        });
    let grouped = !group_exprs.is_empty() || has_aggregates;

    // Groups keyed on the sharding column never span nodes: the nodes' rows are final and only
    // need ordering. So are DISTINCT rows that include the sharding column. (A GROUP BY name
    // read as a select alias is not the column, whatever its name.)
    let local = shard.as_ref().filter(|s| !s.hashes_text).is_some_and(|s| {
        if !group_exprs.is_empty() {
            group_exprs
                .iter()
                .zip(&by_column)
                .any(|(g, column)| s.is(g) && (*column || alias_or_column(select, g).is_none()))
        } else if distinct && !has_aggregates {
            select.projection.iter().any(|it| match it {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => s.is(e),
                _ => false,
            })
        } else {
            false
        }
    });

    let order_exprs: Vec<(&Expr, bool)> = match &q.order_by {
        None => Vec::new(),
        Some(o) => match &o.kind {
            OrderByKind::Expressions(list) => list
                .iter()
                .map(|e| {
                    if e.options.nulls_first.is_some() || e.with_fill.is_some() {
                        return Err(RouteError::syntax("NULLS FIRST / LAST is not MySQL syntax"));
                    }
                    let desc = match &e.options.sort {
                        Some(OrderBySort::Desc) => true,
                        Some(OrderBySort::Asc) | None => false,
                        Some(_) => {
                            return Err(RouteError::syntax("this ORDER BY form is not supported"));
                        }
                    };
                    Ok((&e.expr, desc))
                })
                .collect::<Result<_, _>>()?,
            OrderByKind::All(_) => {
                return Err(RouteError::syntax("ORDER BY ALL is not MySQL syntax"));
            }
        },
    };
    // `ORDER BY NULL` asks for no order (a MySQL idiom after GROUP BY).
    let order_exprs: Vec<(&Expr, bool)> = if order_exprs.len() == 1
        && matches!(order_exprs[0].0, Expr::Value(v) if matches!(v.value, Value::Null))
    {
        Vec::new()
    } else {
        order_exprs
    };
    let order_ranges: Vec<Range<usize>> = match &p.layout.order {
        Some((_, items)) => items.clone(),
        None => Vec::new(),
    };
    if !order_exprs.is_empty() && order_ranges.len() != order_exprs.len() {
        return Err(RouteError::syntax(
            "this ORDER BY over several dataNodes is not supported",
        ));
    }
    let limit = limit_of(q)?.or(auto_limit.map(|n| (0, n)));

    let mut merge = Merge {
        hidden: 0,
        node_order: Vec::new(),
        grouping: None,
        order: Vec::new(),
        limit,
    };
    let mut new_order: Option<String> = None;
    // Sub-keys the nodes group by beside the client's GROUP BY (their text).
    let mut sub_group: Vec<String> = Vec::new();
    // The nodes' result goes through a temporary table (`SQL_BUFFER_RESULT`).
    let mut buffer_result = false;
    let mut having_edit: Option<Edits> = None;
    // Whether each node may stop after offset + count rows.
    let mut node_limit = true;

    if !grouped && !distinct || local {
        // Each node's rows are final: merge them in the client's order. GROUP BY without
        // ORDER BY returns groups in key order on MariaDB, so that order is kept.
        let mut keys = Vec::new();
        for ((e, desc), r) in order_exprs.iter().zip(&order_ranges) {
            keys.push(p.key(e, r, *desc, true)?);
        }
        if keys.is_empty() && !group_exprs.is_empty() {
            let mut text = Vec::new();
            for ((g, r), column) in group_exprs
                .iter()
                .zip(p.layout.group.clone())
                .zip(&by_column)
            {
                let (key, key_text) = p.group_key(g, &r, *column)?;
                keys.push(key);
                text.push(key_text);
            }
            new_order = Some(text.join(", "));
        }
        merge.node_order = keys;
    } else {
        if distinct && grouped {
            return Err(RouteError::syntax(
                "SELECT DISTINCT with GROUP BY or aggregates over several dataNodes is not supported",
            ));
        }
        if p.items.iter().any(|i| i.nested_aggregate) {
            return Err(unsupported_aggregate());
        }
        p.merging = true;
        // Group keys: GROUP BY items, or every selected column for DISTINCT.
        let mut keys: Vec<SortKey> = Vec::new();
        let mut key_text: Vec<String> = Vec::new();
        if distinct {
            if p.items.iter().any(|i| i.expr.is_none()) {
                return Err(RouteError::syntax(
                    "SELECT DISTINCT * over several dataNodes is not supported: name the columns",
                ));
            }
            for i in 0..p.items.len() {
                let r = p.items[i].expr.clone().expect("no wildcard");
                let weight = p.weight(&r, None)?;
                keys.push(SortKey {
                    column: ColumnRef::Visible(i),
                    weight,
                    desc: false,
                });
                key_text.push((i + 1).to_string());
            }
        } else {
            for ((g, r), column) in group_exprs
                .iter()
                .zip(p.layout.group.clone())
                .zip(&by_column)
            {
                let (key, text) = p.group_key(g, &r, *column)?;
                keys.push(key);
                key_text.push(text);
            }
        }
        let mut aggregates = Vec::new();
        for i in 0..p.items.len() {
            if let Some(call) = p.items[i].aggregate.clone() {
                let column = if p.fixed(i) {
                    ColumnRef::Visible(i)
                } else {
                    return Err(RouteError::syntax(
                        "aggregates after * over several dataNodes are not supported: name the columns",
                    ));
                };
                let a = p.aggregate(&call, column)?;
                aggregates.push((column, a));
            }
        }
        // HAVING applies to merged groups: evaluated by the merge, removed from the nodes'.
        let having = match &select.having {
            Some(h) => {
                let range = p.layout.having.clone().ok_or_else(|| {
                    RouteError::syntax("this HAVING over several dataNodes is not supported")
                })?;
                let h = having(&mut p, h, &mut aggregates)?;
                let mut e = Edits::default();
                e.push(range, Replacement::Text(String::new()));
                having_edit = Some(e);
                node_limit = false;
                Some(h)
            }
            None => None,
        };
        // The client's order, over the merged groups.
        let mut order = Vec::new();
        for ((e, desc), r) in order_exprs.iter().zip(&order_ranges) {
            let k = p.key(e, r, *desc, true)?;
            if let ColumnRef::Hidden(_) = k.column
                && let Some(call) = aggregate_call(e, &p)?
                && !aggregates.iter().any(|(c, _)| *c == k.column)
            {
                let a = p.aggregate(&call, k.column)?;
                aggregates.push((k.column, a));
            } else if distinct && matches!(k.column, ColumnRef::Hidden(_)) {
                return Err(RouteError::syntax(
                    "SELECT DISTINCT ordered by a column it does not select over several dataNodes is not supported",
                ));
            }
            order.push(k);
        }
        // DISTINCT aggregates and GROUP_CONCAT: the nodes also group by the sub-keys, which
        // follow the group keys in the nodes' order (named by their extra column's alias there,
        // so that a select-list alias of the same name cannot stand in for them).
        let sub_list = p.sub.list();
        let mut sub_keys: Vec<SortKey> = Vec::new();
        let mut sub_order: Vec<String> = Vec::new();
        for k in &sub_list {
            let text = p.text(&k.range)?.to_string();
            let column = p.add_hidden(text.clone());
            let weight = p.weight(&k.range, None)?;
            let ColumnRef::Hidden(i) = column else {
                unreachable!("add_hidden gives a hidden column")
            };
            sub_order.push(format!("`__manx_{i}`{}", if k.desc { " DESC" } else { "" }));
            sub_keys.push(SortKey {
                column,
                weight,
                desc: k.desc,
            });
            // A bare integer in GROUP BY is a select-list position to MySQL (`COUNT(DISTINCT
            // 1)` would group by the aggregate itself: 1056): the nodes group by its alias.
            sub_group.push(match integer_literal(&text) {
                true => format!("`__manx_{i}`"),
                false => text,
            });
        }
        if !sub_keys.is_empty() {
            // The nodes return a row per sub-group: their LIMIT would count those.
            node_limit = false;
            if select.into.is_some() {
                return Err(RouteError::syntax(
                    "SELECT ... INTO with DISTINCT aggregates or GROUP_CONCAT over several dataNodes is not supported",
                ));
            }
            if keys.is_empty()
                && let Some(i) = p.items.iter().position(|i| i.aggregate.is_none())
            {
                // Without GROUP BY the nodes now group: when no row matches, the merge makes
                // the implicit group's row itself, and can do that only for aggregates.
                return Err(RouteError::syntax(format!(
                    "select item {} beside DISTINCT aggregates or GROUP_CONCAT without GROUP BY over several dataNodes is not supported: select only aggregates there",
                    i + 1
                )));
            }
        }
        if keys.is_empty() {
            // Aggregates without GROUP BY: one row per node, combined into one (or, with
            // sub-keys, one row per node and sub-key).
            node_limit = false;
            if !sub_keys.is_empty() {
                merge.node_order = sub_keys.clone();
                new_order = Some(sub_order.join(", "));
            }
        } else {
            let in_keys = |k: &SortKey| keys.iter().any(|g| g.column == k.column);
            if order.iter().all(in_keys) {
                // The client's order is over group keys: the nodes sort by it (then by the
                // other keys) and merged groups come out in final order.
                let mut node_order = order.clone();
                let mut text: Vec<String> = order_ranges
                    .iter()
                    .zip(&order_exprs)
                    .map(|(r, (_, desc))| {
                        Ok(format!(
                            "{}{}",
                            p.text(r)?,
                            if *desc { " DESC" } else { "" }
                        ))
                    })
                    .collect::<Result<_, RouteError>>()?;
                for (k, t) in keys.iter().zip(&key_text) {
                    if !node_order.iter().any(|o| o.column == k.column) {
                        node_order.push(*k);
                        text.push(t.clone());
                    }
                }
                node_order.extend(sub_keys.iter().copied());
                text.extend(sub_order.iter().cloned());
                merge.node_order = node_order;
                new_order = Some(text.join(", "));
            } else {
                merge.node_order = keys.clone();
                merge.node_order.extend(sub_keys.iter().copied());
                // One server sorts such groups through a temporary table, and MariaDB describes
                // the columns of a result read from one (a YEAR() column's length 5, not 4,
                // GROUP_CONCAT's BLOB length, MIN(varchar)'s decimals 0, not 39); the nodes'
                // statements, which now group in their order without one, say so too.
                buffer_result = !sub_keys.is_empty();
                merge.order = order;
                let mut text = key_text.clone();
                text.extend(sub_order.iter().cloned());
                new_order = Some(text.join(", "));
                node_limit = false;
            }
        }
        merge.grouping = Some(Grouping {
            keys,
            aggregates,
            having,
            sub_keys,
            max_group_bytes,
        });
    }

    // The edits: extra columns, the nodes' ORDER BY, their LIMIT.
    let mut edits = edits.clone();
    if !p.hidden.is_empty() {
        let mut extra = String::new();
        for (i, h) in p.hidden.iter().enumerate() {
            extra.push_str(&format!(", {h} AS `__manx_{i}`"));
        }
        edits.push(
            p.layout.items_end..p.layout.items_end,
            Replacement::Text(extra),
        );
    }
    if let Some(h) = having_edit {
        for r in h.ranges() {
            edits.push(r, Replacement::Text(String::new()));
        }
    }
    if buffer_result
        && !select
            .select_modifiers
            .as_ref()
            .is_some_and(|m| m.sql_buffer_result)
        && let Some(first) = p.layout.items.first()
    {
        edits.push(
            first.start..first.start,
            Replacement::Text("SQL_BUFFER_RESULT ".to_string()),
        );
    }
    // Text inserted where an ORDER BY / LIMIT would stand when the statement has none.
    let mut tail = String::new();
    if !sub_group.is_empty() {
        let list = sub_group.join(", ");
        // (Two insertions at one point would be one edit: text for the statement's end goes
        // into `tail`, before its ORDER BY.)
        match p.layout.group.last() {
            Some(last) if last.end == p.layout.tail => tail.push_str(&format!(", {list}")),
            Some(last) => edits.push(last.end..last.end, Replacement::Text(format!(", {list}"))),
            None => {
                // Before HAVING (removed for the nodes), ORDER BY, LIMIT, FOR UPDATE / LOCK IN
                // SHARE MODE, or the end.
                let at = match (&p.layout.having, &p.layout.order) {
                    (Some(h), _) => h.start,
                    (None, Some((o, _))) => o.start,
                    (None, None) => p.layout.tail,
                };
                if at == p.layout.tail {
                    tail.push_str(&format!(" GROUP BY {list}"));
                } else {
                    edits.push(at..at, Replacement::Text(format!("GROUP BY {list} ")));
                }
            }
        }
    }
    if let Some(text) = new_order {
        match &p.layout.order {
            Some((range, _)) => {
                edits.push(range.clone(), Replacement::Text(format!("ORDER BY {text}")))
            }
            None => tail.push_str(&format!(" ORDER BY {text}")),
        }
    }
    match (merge.limit, p.layout.limit.clone()) {
        (Some((offset, count)), Some(range)) => {
            let text = if node_limit {
                format!("LIMIT {}", offset.saturating_add(count))
            } else {
                String::new()
            };
            edits.push(range, Replacement::Text(text));
        }
        (Some((_, count)), None) if auto_limit.is_some() => {
            if node_limit {
                tail.push_str(&format!(" LIMIT {count}"));
            }
        }
        (Some(_), None) => {
            return Err(RouteError::syntax(
                "this LIMIT form over several dataNodes is not supported",
            ));
        }
        (None, _) => {}
    }
    if !tail.is_empty() {
        tail.push(' ');
        edits.push(p.layout.tail..p.layout.tail, Replacement::Text(tail));
    }
    merge.hidden = p.hidden.len();
    Ok(Planned { merge, edits })
}

#[cfg(test)]
mod tests;

mod planner;
mod sub_keys;
use planner::{Item, Planner};
use sub_keys::{SubKeys, integer_literal};
