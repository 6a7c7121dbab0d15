//! A plan as a tree of steps, the form `EXPLAIN FORMAT=TREE` answers and the golden plan files
//! (`tests/plans/`) hold: the statement each dataNode gets, and above them the merge primitives
//! the engine runs on their rows (module `engine::merge`), outermost first.
//!
//! The layout is MySQL 8's `EXPLAIN FORMAT=TREE`: one line per step, `-> Name: arguments`, a
//! step's inputs under it indented by four spaces. The steps are named as Vitess names its
//! primitives (`Route`, `MergeSort`, `OrderedAggregate`, `ScalarAggregate`, `Filter`,
//! `MemorySort`, `Limit`, `SimpleProjection`), aggregates as Vitess's opcodes (`sum_count` for
//! the per-node counts added up, `count_distinct`, ...).
//!
//! Columns are written by position, because a `*` in the select list makes the client's
//! columns known only when the result arrives: `#2` is the second column the client sees (as
//! `ORDER BY 2` would name it), `__manx_0` the first extra column the merge asked every node
//! for (its alias in the nodes' statements). A string key compares by the collation weight the
//! node computed: `#1 DESC (weight __manx_0)`.

use super::plan::{
    Aggregate, ColumnRef, CompareOp, DistinctOp, Grouping, Having, Merge, Plan, SortKey,
};

/// `plan` as MySQL's `EXPLAIN FORMAT=TREE` text: the lines of [`lines`] joined with `\n`.
pub fn text(plan: &Plan) -> String {
    lines(plan).join("\n")
}

/// `plan` as a tree, one line per step, outermost first: `-> Name: arguments`, each step's input
/// indented four spaces more. The dataNodes' statements are the leaves (`-> Route on dn1: SQL`,
/// in dataNode order; for a read any of several nodes can answer, every candidate, marked
/// `(any one of N)`, since which one runs is drawn when it runs). Several routes without merge
/// steps are siblings at the top: their rows are passed on as they come (their OK counts
/// added up, or one node's for a global table's write).
pub fn lines(plan: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    let depth = match &plan.merge {
        Some(m) => merge_steps(m, &mut out),
        None => 0,
    };
    let indent = "    ".repeat(depth);
    if plan.fallback.is_empty() {
        for t in &plan.targets {
            out.push(format!("{indent}-> Route on {}: {}", t.node, t.sql));
        }
    } else {
        let mut any: Vec<_> = plan.targets.iter().chain(&plan.fallback).collect();
        any.sort_by(|a, b| a.node.cmp(&b.node));
        let n = any.len();
        for t in any {
            out.push(format!(
                "{indent}-> Route (any one of {n}) on {}: {}",
                t.node, t.sql
            ));
        }
    }
    out
}

/// Pushes the merge's steps, outermost first, in the order the engine stacks them
/// (`engine::merge::rows`), and returns how deep the routes go under them.
fn merge_steps(m: &Merge, out: &mut Vec<String>) -> usize {
    let mut steps = Vec::new();
    if m.hidden > 0 {
        let cut: Vec<String> = (0..m.hidden)
            .map(|i| column(ColumnRef::Hidden(i)))
            .collect();
        steps.push(format!("SimpleProjection: drop {}", cut.join(", ")));
    }
    if let Some((offset, count)) = m.limit {
        steps.push(if offset == 0 {
            format!("Limit: count {count}")
        } else {
            format!("Limit: count {count}, offset {offset}")
        });
    }
    if !m.order.is_empty() {
        steps.push(format!("MemorySort: {}", keys(&m.order)));
    }
    if let Some(g) = &m.grouping {
        if let Some(h) = &g.having {
            steps.push(format!("Filter: {}", having(h, false)));
        }
        steps.push(grouping(g));
    }
    if !m.node_order.is_empty() {
        steps.push(format!("MergeSort: {}", keys(&m.node_order)));
    }
    for (depth, step) in steps.iter().enumerate() {
        out.push(format!("{}-> {step}", "    ".repeat(depth)));
    }
    steps.len()
}

/// `OrderedAggregate` (with group keys) or `ScalarAggregate` (all rows one group) and its
/// arguments: the keys, the aggregates, and the sub-keys the nodes also grouped by (the
/// DISTINCT aggregates' arguments, a GROUP_CONCAT's ORDER BY): `sub-groups by ...`.
fn grouping(g: &Grouping) -> String {
    let mut parts = Vec::new();
    if !g.keys.is_empty() {
        parts.push(format!("group by {}", keys(&g.keys)));
    }
    if !g.aggregates.is_empty() {
        let aggs: Vec<String> = g
            .aggregates
            .iter()
            .map(|(c, a)| aggregate(*c, a, g.max_group_bytes))
            .collect();
        parts.push(aggs.join(", "));
    }
    if !g.sub_keys.is_empty() {
        parts.push(format!("sub-groups by {}", keys(&g.sub_keys)));
    }
    let name = if g.keys.is_empty() {
        "ScalarAggregate"
    } else {
        "OrderedAggregate"
    };
    if parts.is_empty() {
        name.to_string()
    } else {
        format!("{name}: {}", parts.join("; "))
    }
}

/// One aggregate column as Vitess writes its opcode: `sum_count(#2)`, `avg(#4) from sum
/// __manx_1 / count __manx_2`, `max(#3) (weight __manx_0)`.
fn aggregate(c: ColumnRef, a: &Aggregate, max_group_bytes: usize) -> String {
    let c = column(c);
    let weighted = |name: &str, w: &Option<ColumnRef>| match w {
        Some(w) => format!("{name}({c}) (weight {})", column(*w)),
        None => format!("{name}({c})"),
    };
    match a {
        Aggregate::Count => format!("sum_count({c})"),
        Aggregate::Sum => format!("sum({c})"),
        Aggregate::Min { weight } => weighted("min", weight),
        Aggregate::Max { weight } => weighted("max", weight),
        Aggregate::Avg { sum, count } => {
            format!(
                "avg({c}) from sum {} / count {}",
                column(*sum),
                column(*count)
            )
        }
        Aggregate::Distinct(op) => {
            let name = match op {
                DistinctOp::Count => "count_distinct",
                DistinctOp::Sum => "sum_distinct",
                DistinctOp::Avg => "avg_distinct",
            };
            format!("{name}({c})")
        }
        Aggregate::GroupConcat {
            distinct,
            separator,
            max_len,
        } => {
            let name = if *distinct {
                "group_concat_distinct"
            } else {
                "group_concat"
            };
            let separator = separator
                .map(|s| format!("separator {}, ", column(s)))
                .unwrap_or_default();
            format!(
                "{name}({c}) ({separator}max_len {}, at most {max_group_bytes} bytes)",
                column(*max_len)
            )
        }
    }
}

/// Sort keys, comma-separated: `#2 DESC (weight __manx_0), #1`.
fn keys(keys: &[SortKey]) -> String {
    keys.iter().map(key).collect::<Vec<_>>().join(", ")
}

/// One sort key: the column, `DESC` when descending, and the weight column strings compare by.
fn key(k: &SortKey) -> String {
    let mut s = column(k.column);
    if k.desc {
        s.push_str(" DESC");
    }
    if let Some(w) = k.weight {
        s.push_str(&format!(" (weight {})", column(w)));
    }
    s
}

/// A column by position: `#N` (1-based) for the client's, the alias `__manx_N` for an extra one.
fn column(c: ColumnRef) -> String {
    match c {
        ColumnRef::Visible(i) => format!("#{}", i + 1),
        ColumnRef::Hidden(i) => format!("__manx_{i}"),
    }
}

/// A HAVING condition in SQL's syntax; `nested`: an AND / OR inside another is parenthesized.
fn having(h: &Having, nested: bool) -> String {
    let both = |a: &Having, op: &str, b: &Having| {
        let s = format!("{} {op} {}", having(a, true), having(b, true));
        if nested { format!("({s})") } else { s }
    };
    match h {
        Having::And(a, b) => both(a, "AND", b),
        Having::Or(a, b) => both(a, "OR", b),
        Having::Not(x) => format!("NOT ({})", having(x, false)),
        Having::Compare {
            column: c,
            op,
            number,
        } => {
            let op = match op {
                CompareOp::Eq => "=",
                CompareOp::NotEq => "<>",
                CompareOp::Lt => "<",
                CompareOp::LtEq => "<=",
                CompareOp::Gt => ">",
                CompareOp::GtEq => ">=",
            };
            format!("{} {op} {number}", column(*c))
        }
        Having::IsNull { column: c, negated } => format!(
            "{} IS {}NULL",
            column(*c),
            if *negated { "NOT " } else { "" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::plan::Target;

    fn plan(nodes: &[&str], merge: Option<Merge>) -> Plan {
        let targets = nodes
            .iter()
            .map(|n| Target {
                node: n.to_string(),
                sql: format!("SELECT ... /* {n} */").into(),
            })
            .collect();
        Plan {
            merge,
            ..Plan::read(targets)
        }
    }

    fn key(column: ColumnRef, weight: Option<usize>, desc: bool) -> SortKey {
        SortKey {
            column,
            weight: weight.map(ColumnRef::Hidden),
            desc,
        }
    }

    #[test]
    fn routes_alone_are_the_statements_per_node() {
        let p = plan(&["dn1", "dn2"], None);
        assert_eq!(
            lines(&p),
            [
                "-> Route on dn1: SELECT ... /* dn1 */",
                "-> Route on dn2: SELECT ... /* dn2 */"
            ]
        );
        // A read any node can answer: every candidate, in dataNode order.
        let mut p = plan(&["dn3"], None);
        p.fallback = plan(&["dn2", "dn1"], None).targets;
        assert_eq!(
            text(&p),
            "-> Route (any one of 3) on dn1: SELECT ... /* dn1 */\n\
             -> Route (any one of 3) on dn2: SELECT ... /* dn2 */\n\
             -> Route (any one of 3) on dn3: SELECT ... /* dn3 */"
        );
    }

    #[test]
    fn an_ordered_limited_read_is_a_merge_sort_under_a_limit() {
        let m = Merge {
            hidden: 2,
            node_order: vec![
                key(ColumnRef::Visible(1), Some(0), true),
                key(ColumnRef::Visible(0), Some(1), false),
            ],
            grouping: None,
            order: Vec::new(),
            limit: Some((10, 5)),
        };
        assert_eq!(
            lines(&plan(&["dn1", "dn2"], Some(m.clone()))),
            [
                "-> SimpleProjection: drop __manx_0, __manx_1",
                "    -> Limit: count 5, offset 10",
                "        -> MergeSort: #2 DESC (weight __manx_0), #1 (weight __manx_1)",
                "            -> Route on dn1: SELECT ... /* dn1 */",
                "            -> Route on dn2: SELECT ... /* dn2 */",
            ]
        );
        // No extra columns, no offset, rows interleaved as they come.
        let m = Merge {
            hidden: 0,
            node_order: Vec::new(),
            limit: Some((0, 3)),
            ..m
        };
        assert_eq!(
            lines(&plan(&["dn1", "dn2"], Some(m))),
            [
                "-> Limit: count 3",
                "    -> Route on dn1: SELECT ... /* dn1 */",
                "    -> Route on dn2: SELECT ... /* dn2 */"
            ]
        );
    }

    #[test]
    fn grouping_shows_keys_aggregates_having_and_the_sort_after_it() {
        let g = Grouping {
            keys: vec![key(ColumnRef::Visible(0), Some(0), false)],
            aggregates: vec![
                (ColumnRef::Visible(1), Aggregate::Count),
                (ColumnRef::Visible(2), Aggregate::Sum),
                (
                    ColumnRef::Visible(3),
                    Aggregate::Avg {
                        sum: ColumnRef::Hidden(1),
                        count: ColumnRef::Hidden(2),
                    },
                ),
                (
                    ColumnRef::Visible(4),
                    Aggregate::Max {
                        weight: Some(ColumnRef::Hidden(3)),
                    },
                ),
                (ColumnRef::Visible(5), Aggregate::Min { weight: None }),
            ],
            having: Some(Having::Or(
                Box::new(Having::And(
                    Box::new(Having::Compare {
                        column: ColumnRef::Visible(1),
                        op: CompareOp::Gt,
                        number: "1".into(),
                    }),
                    Box::new(Having::Not(Box::new(Having::IsNull {
                        column: ColumnRef::Visible(2),
                        negated: true,
                    }))),
                )),
                Box::new(Having::Compare {
                    column: ColumnRef::Visible(3),
                    op: CompareOp::LtEq,
                    number: "-2.5".into(),
                }),
            )),
            sub_keys: Vec::new(),
            max_group_bytes: 1024,
        };
        let m = Merge {
            hidden: 4,
            node_order: g.keys.clone(),
            grouping: Some(g),
            order: vec![key(ColumnRef::Visible(1), None, true)],
            limit: None,
        };
        assert_eq!(
            lines(&plan(&["dn1", "dn2"], Some(m))),
            [
                "-> SimpleProjection: drop __manx_0, __manx_1, __manx_2, __manx_3",
                "    -> MemorySort: #2 DESC",
                "        -> Filter: (#2 > 1 AND NOT (#3 IS NOT NULL)) OR #4 <= -2.5",
                "            -> OrderedAggregate: group by #1 (weight __manx_0); sum_count(#2), sum(#3), avg(#4) from sum __manx_1 / count __manx_2, max(#5) (weight __manx_3), min(#6)",
                "                -> MergeSort: #1 (weight __manx_0)",
                "                    -> Route on dn1: SELECT ... /* dn1 */",
                "                    -> Route on dn2: SELECT ... /* dn2 */",
            ]
        );
    }

    #[test]
    fn distinct_aggregates_and_group_concat_name_their_extra_columns() {
        let sub = vec![key(ColumnRef::Hidden(0), Some(1), false)];
        let g = Grouping {
            keys: Vec::new(),
            aggregates: vec![
                (
                    ColumnRef::Visible(0),
                    Aggregate::Distinct(DistinctOp::Count),
                ),
                (
                    ColumnRef::Visible(1),
                    Aggregate::GroupConcat {
                        distinct: true,
                        separator: Some(ColumnRef::Hidden(2)),
                        max_len: ColumnRef::Hidden(3),
                    },
                ),
                (
                    ColumnRef::Visible(2),
                    Aggregate::GroupConcat {
                        distinct: false,
                        separator: None,
                        max_len: ColumnRef::Hidden(3),
                    },
                ),
            ],
            having: None,
            sub_keys: sub.clone(),
            max_group_bytes: 16,
        };
        let m = Merge {
            hidden: 4,
            node_order: sub,
            grouping: Some(g),
            order: Vec::new(),
            limit: None,
        };
        let l = lines(&plan(&["dn1", "dn2"], Some(m)));
        assert_eq!(
            l[1],
            "    -> ScalarAggregate: count_distinct(#1), group_concat_distinct(#2) (separator __manx_2, max_len __manx_3, at most 16 bytes), group_concat(#3) (max_len __manx_3, at most 16 bytes); sub-groups by __manx_0 (weight __manx_1)"
        );
        // SELECT DISTINCT: group keys and nothing else.
        let g = Grouping {
            keys: vec![key(ColumnRef::Visible(0), None, false)],
            aggregates: Vec::new(),
            having: None,
            sub_keys: Vec::new(),
            max_group_bytes: 16,
        };
        assert_eq!(grouping(&g), "OrderedAggregate: group by #1");
        let scalar = Grouping {
            keys: Vec::new(),
            ..g
        };
        assert_eq!(grouping(&scalar), "ScalarAggregate");
    }
}
