//! A per-session plan cache keyed by statement shape, as Vitess's plan cache is: the statement
//! text with its number and simple string literals abstracted.
//!
//! Parsing a statement with sqlparser is the largest cost of routing it (callgrind: ~55,000
//! instructions of ~113,000 per sysbench point select). Only plans that provably do not depend
//! on any literal are cached: a SELECT whose first table is not configured in a schema with a
//! default dataNode (the whole statement goes there unchanged, SPEC §5.4), whose per-node SQL is
//! the statement itself (no qualifier, `DATABASE()` or `LIMIT` edit). Whether that holds is
//! decided by the table names, keywords and structure of the statement — all of which the shape
//! keeps verbatim — so every statement of the same shape gets the same plan, with its own text.
//!
//! The other kind of entry is a sharded point select: `SELECT ... FROM t WHERE col = <integer>`
//! with one table, `col` its sharding column, and that integer the statement's only literal.
//! Its plan depends on the literal only through the partition function, so the entry keeps the
//! table and, on a hit, places the new value with the same function (SPEC §2.2's routing text,
//! the same as the router's) and the learned plan's everything else. The pattern is checked on
//! the parsed statement when the shape is first seen, and the learned node is checked against the
//! function's answer; a value the function rejects goes through the full routing.
//!
//! The third kind is a sharded range select: `SELECT ... FROM t WHERE col BETWEEN <integer> AND
//! <integer> [GROUP BY / ORDER BY ...]` with one table, `col` its sharding column, and the two
//! bounds the statement's only literals. Such a plan may span several dataNodes and carry a merge
//! and per-node rewrites (hidden sort columns, `AVG` split), but nothing in it depends on the
//! bounds except the dataNodes, which the function's range answer decides (the same
//! `partitions_between` the router calls), and the bounds' own text in each node's statement.
//! So the entry keeps the partitions the template was planned for and each node statement cut
//! around the bounds' text (`<lo> AND <hi>`, found exactly once in it); on a hit the new bounds
//! must give the same partitions, and their text is put back between the cuts. There is no other
//! literal to drive a `LIMIT` or a rewrite, and the function never sees more than the router
//! gave it.
//!
//! The shape is conservative: comments, identifiers, quoted identifiers, double-quoted strings
//! and any string literal holding quotes, backslashes or characters that could open a comment
//! are kept as written; only plain numbers and plain single-quoted strings become markers (one
//! per kind, so a number never shares a shape with a string).
//!
//! The cache belongs to one session (no lock on the statement path) and holds at most
//! [`CAPACITY`] shapes; it is emptied when full. The session empties it when a reload changes
//! the configuration it routes with (`frontend::reload`).

use std::collections::HashMap;
use std::ops::{ControlFlow, Range};
use std::sync::Arc;

use sqlparser::ast::{BinaryOperator, Expr, SetExpr, Statement, TableFactor, Value};
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;

use super::analyze::{Partitions, canonical_number};
use super::{Plan, SchemaRoute};
use crate::config::TableKind;
use crate::sqltext::quoted_end;

/// Shapes one session keeps at most.
pub const CAPACITY: usize = 256;

/// Marks an abstracted integer in a shape (never part of SQL text the shape keeps).
const NUMBER: char = '\u{1}';
/// Marks an abstracted single-quoted string.
const STRING: char = '\u{2}';
/// Marks an abstracted decimal number (`1.5`).
const DECIMAL: char = '\u{3}';

/// One abstracted literal of a statement: where it is and its marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Literal {
    pub range: Range<usize>,
    pub kind: char,
}

#[derive(Debug)]
enum Entry {
    /// The plan of every statement of the shape (with the statement's own text).
    Fixed(Plan),
    /// A sharded point select: `table`'s function places the one integer literal.
    Point { table: String, template: Plan },
    /// A sharded range select (module docs): templates for up to [`RANGE_VARIANTS`] different
    /// partition sets its bounds reached.
    Range(Vec<RangeEntry>),
    /// A shape the range pattern can never serve (its structure, not its values, failed it):
    /// not parsed again to find out.
    NotRange,
}

/// Templates one range shape keeps at most (bounds that reach one node, two adjacent ones, all
/// of them...).
const RANGE_VARIANTS: usize = 4;

/// Why a statement gave no range template.
enum NoRange {
    /// Its shape cannot be one (not a single-table SELECT with a sharding-column BETWEEN...).
    Never,
    /// Its values could not be used (a bound the function rejects...); another statement of
    /// the shape may do.
    NotThese,
}

#[derive(Debug)]
struct RangeEntry {
    table: String,
    /// What `table`'s range routing answered for the template's bounds.
    partitions: Partitions,
    template: Plan,
    /// Per target of `template`: its statement before and after the bounds' text.
    cuts: Vec<(String, String)>,
}

/// Plans of statements routed without depending on their literals, by (schema, shape).
#[derive(Debug, Default)]
pub struct PlanCache {
    plans: HashMap<String, Entry>,
    /// Statements answered from the cache.
    hits: u64,
    /// The key of the last statement looked up, for the statement recorder
    /// ([`PlanCache::take_last_key`]).
    last_key: Option<String>,
}

impl PlanCache {
    /// The cached plan for `stmt`, if its shape is known (and, for a point select, its value is
    /// placed without error; for a range select, its bounds reach the template's partitions).
    pub(super) fn get(
        &mut self,
        key: &str,
        literals: &[Literal],
        stmt: &str,
        schema: &SchemaRoute,
    ) -> Option<Plan> {
        let plan = self.lookup(key, literals, stmt, schema)?;
        self.hits += 1;
        Some(plan)
    }

    /// The shape key of the statement routed last with this cache, if it had one (taken: the
    /// next call answers `None` until another statement is looked up).
    pub fn take_last_key(&mut self) -> Option<String> {
        self.last_key.take()
    }

    pub(super) fn set_last_key(&mut self, key: String) {
        self.last_key = Some(key);
    }

    /// Statements this cache has answered (a counter for tests and diagnostics).
    pub fn hits(&self) -> u64 {
        self.hits
    }

    fn lookup(
        &self,
        key: &str,
        literals: &[Literal],
        stmt: &str,
        schema: &SchemaRoute,
    ) -> Option<Plan> {
        let mut plan = match self.plans.get(key)? {
            Entry::Fixed(plan) => plan.clone(),
            Entry::NotRange => return None,
            Entry::Range(variants) => {
                let [lo, hi] = literals else { return None };
                let partitions = range_partitions(
                    schema,
                    &variants.first()?.table,
                    &stmt[lo.range.clone()],
                    &stmt[hi.range.clone()],
                )?;
                let entry = variants.iter().find(|v| v.partitions == partitions)?;
                return Some(entry.plan(&stmt[lo.range.start..hi.range.end]));
            }
            Entry::Point { table, template } => {
                let node = point_node(schema, table, &stmt[literals.first()?.range.clone()])?;
                let mut plan = template.clone();
                plan.targets.first_mut()?.node = node;
                plan
            }
        };
        let sql: Arc<str> = Arc::from(stmt);
        for t in &mut plan.targets {
            t.sql = sql.clone();
        }
        Some(plan)
    }

    pub(super) fn insert(&mut self, key: String, plan: Plan) {
        self.put(key, Entry::Fixed(plan));
    }

    /// Keeps `plan` as a point-select template when `stmt` is one (see the module docs).
    pub(super) fn learn_point(
        &mut self,
        key: String,
        literals: &[Literal],
        stmt: &str,
        schema: &SchemaRoute,
        plan: &Plan,
    ) {
        if let Some(table) = point_table(schema, literals, stmt, plan) {
            let template = plan.clone();
            self.put(key, Entry::Point { table, template });
        }
    }

    /// Keeps `plan` as a range-select template when `stmt` is one (see the module docs).
    pub(super) fn learn_range(
        &mut self,
        key: String,
        literals: &[Literal],
        stmt: &str,
        schema: &SchemaRoute,
        plan: &Plan,
    ) {
        match self.plans.get_mut(&key) {
            Some(Entry::NotRange) => {}
            Some(Entry::Range(variants)) => {
                if variants.len() < RANGE_VARIANTS
                    && let Ok(entry) = range_entry(schema, literals, stmt, plan)
                    && variants.iter().all(|v| v.partitions != entry.partitions)
                {
                    variants.push(entry);
                }
            }
            // Another kind of entry never meets a plan this one would take.
            Some(_) => {}
            None => match range_entry(schema, literals, stmt, plan) {
                Ok(entry) => self.put(key, Entry::Range(vec![entry])),
                Err(NoRange::Never) => self.put(key, Entry::NotRange),
                Err(NoRange::NotThese) => {}
            },
        }
    }

    fn put(&mut self, key: String, entry: Entry) {
        if self.plans.len() >= CAPACITY {
            self.plans.clear();
        }
        self.plans.insert(key, entry);
    }

    /// Number of cached shapes.
    pub fn len(&self) -> usize {
        self.plans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.plans.is_empty()
    }
}

/// The node `table`'s function places the integer `text` on, or `None` (the full routing then
/// decides, with its error).
fn point_node(schema: &SchemaRoute, table: &str, text: &str) -> Option<String> {
    let t = schema.tables.get(table)?;
    let i = t
        .partition_of(&super::analyze::canonical_number(text))
        .ok()?;
    t.nodes.get(i).cloned()
}

impl RangeEntry {
    /// The template with `bounds` (`<lo> AND <hi>` as the statement writes them) in each
    /// node's statement.
    fn plan(&self, bounds: &str) -> Plan {
        let mut plan = self.template.clone();
        for (t, (before, after)) in plan.targets.iter_mut().zip(&self.cuts) {
            let mut sql = String::with_capacity(before.len() + bounds.len() + after.len());
            sql.push_str(before);
            sql.push_str(bounds);
            sql.push_str(after);
            t.sql = Arc::from(sql);
        }
        plan
    }
}

/// What `table`'s range routing answers for the integers `lo` and `hi` as written, computed as
/// the router computes it for `col BETWEEN lo AND hi`; `None` when it fails (the full routing
/// then reports it).
fn range_partitions(schema: &SchemaRoute, table: &str, lo: &str, hi: &str) -> Option<Partitions> {
    let t = schema.tables.get(table)?;
    t.partitions_between(&canonical_number(lo), &canonical_number(hi))
        .ok()
}

/// The one table of a single-table SELECT with no CTE and no join, upper-cased, with the
/// statement's `SELECT` and the table's route; `None` for anything else or an unconfigured
/// table.
fn single_table<'s>(
    schema: &'s SchemaRoute,
    statement: &'s Statement,
) -> Option<(String, &'s sqlparser::ast::Select, &'s super::TableRoute)> {
    let mut relations = 0;
    let _ = sqlparser::ast::visit_relations(statement, |_| {
        relations += 1;
        ControlFlow::<()>::Continue(())
    });
    let Statement::Query(q) = statement else {
        return None;
    };
    let SetExpr::Select(select) = &*q.body else {
        return None;
    };
    if relations != 1 || q.with.is_some() || select.from.len() != 1 {
        return None;
    }
    let from = &select.from[0];
    let TableFactor::Table { name, .. } = &from.relation else {
        return None;
    };
    if !from.joins.is_empty() || name.0.len() != 1 {
        return None;
    }
    let table = name.0[0].as_ident()?.value.to_ascii_uppercase();
    let t = schema.tables.get(&table)?;
    Some((table, select, t))
}

/// The entry for a sharded range select (module docs) whose plan is `plan`. The shape decides
/// everything up to the bounds' values: a failure there is [`NoRange::Never`].
fn range_entry(
    schema: &SchemaRoute,
    literals: &[Literal],
    stmt: &str,
    plan: &Plan,
) -> Result<RangeEntry, NoRange> {
    let [lo, hi] = literals else {
        return Err(NoRange::Never);
    };
    if lo.kind != NUMBER || hi.kind != NUMBER {
        return Err(NoRange::Never);
    }
    let Some(table) = range_table(
        schema,
        stmt,
        &stmt[lo.range.clone()],
        &stmt[hi.range.clone()],
    ) else {
        return Err(NoRange::Never);
    };
    range_template(schema, table, stmt, lo, hi, plan).ok_or(NoRange::NotThese)
}

/// The upper-cased table of `SELECT ... FROM table WHERE col BETWEEN lo AND hi ...` with one
/// table (no join, no CTE), `col` its sharding column, and `lo` and `hi` the integers written,
/// or `None`.
fn range_table(schema: &SchemaRoute, stmt: &str, lo: &str, hi: &str) -> Option<String> {
    let statements = Parser::parse_sql(&MySqlDialect {}, stmt).ok()?;
    let [statement] = &statements[..] else {
        return None;
    };
    let (table, select, t) = single_table(schema, statement)?;
    let rule = t.rule.as_ref()?;
    if !matches!(t.kind, TableKind::Sharded { .. }) {
        return None;
    }
    let Some(Expr::Between {
        expr,
        negated: false,
        low,
        high,
    }) = &select.selection
    else {
        return None;
    };
    let (Expr::Identifier(column), Expr::Value(l), Expr::Value(h)) = (&**expr, &**low, &**high)
    else {
        return None;
    };
    let (Value::Number(l, _), Value::Number(h, _)) = (&l.value, &h.value) else {
        return None;
    };
    (column.value.eq_ignore_ascii_case(&rule.column) && l == lo && h == hi).then_some(table)
}

/// The template of `table`'s range select `stmt` with bounds `lo`, `hi`: `None` when the
/// function rejects the bounds, the plan's nodes are not what the partitions name, or the
/// bounds' text is not found exactly once in a node statement.
fn range_template(
    schema: &SchemaRoute,
    table: String,
    stmt: &str,
    lo: &Literal,
    hi: &Literal,
    plan: &Plan,
) -> Option<RangeEntry> {
    let t = schema.tables.get(&table)?;
    let partitions = range_partitions(
        schema,
        &table,
        &stmt[lo.range.clone()],
        &stmt[hi.range.clone()],
    )?;
    let mut expected: Vec<&String> = match &partitions {
        Partitions::All => t.nodes.iter().collect(),
        Partitions::Some(set) => set.iter().map(|&i| t.nodes.get(i)).collect::<Option<_>>()?,
    };
    let mut planned: Vec<&String> = plan.targets.iter().map(|t| &t.node).collect();
    planned.sort();
    expected.sort();
    if planned.is_empty() || planned != expected {
        return None;
    }
    let bounds = &stmt[lo.range.start..hi.range.end];
    let cuts = plan
        .targets
        .iter()
        .map(|t| {
            let sql: &str = &t.sql;
            let at = sql.find(bounds)?;
            let after = at + bounds.len();
            (!sql[after..].contains(bounds))
                .then(|| (sql[..at].to_string(), sql[after..].to_string()))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(RangeEntry {
        table,
        partitions,
        template: plan.clone(),
        cuts,
    })
}

/// The table of a sharded point select (module docs) whose plan is `plan`, or `None`.
fn point_table(
    schema: &SchemaRoute,
    literals: &[Literal],
    stmt: &str,
    plan: &Plan,
) -> Option<String> {
    let [literal] = literals else { return None };
    if literal.kind != NUMBER || plan.targets.len() != 1 {
        return None;
    }
    let text = &stmt[literal.range.clone()];
    let mut statements = Parser::parse_sql(&MySqlDialect {}, stmt).ok()?;
    let statement = statements.pop()?;
    if !statements.is_empty() {
        return None;
    }
    let (table, select, t) = single_table(schema, &statement)?;
    let rule = t.rule.as_ref()?;
    if !matches!(t.kind, TableKind::Sharded { .. }) {
        return None;
    }
    let Some(Expr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    }) = &select.selection
    else {
        return None;
    };
    let (Expr::Identifier(column), Expr::Value(v)) = (&**left, &**right) else {
        return None;
    };
    let Value::Number(n, _) = &v.value else {
        return None;
    };
    if !column.value.eq_ignore_ascii_case(&rule.column) || n != text {
        return None;
    }
    (point_node(schema, &table, text)? == plan.targets[0].node).then_some(table)
}

/// `stmt`'s shape key for statistics when routing made none (module `stats`): as the cache's
/// key with an empty schema (a NUL, then the text with plain literals as marker characters).
/// `None` for statements the cache gives no key either (over 4 KiB, or holding NUL or marker
/// bytes).
pub fn statistics_key(stmt: &str) -> Option<String> {
    key_and_literals("", stmt).map(|(key, _)| key)
}

/// The cache key of `stmt` in `schema` (the schema name, a NUL, then the statement's shape) and
/// the literals the shape abstracts, in order. `None` for statements not worth a key (very long
/// ones, or text with NUL or marker bytes).
pub(super) fn key_and_literals(schema: &str, stmt: &str) -> Option<(String, Vec<Literal>)> {
    if stmt.len() > 4096 || stmt.bytes().any(|b| b <= 3) {
        return None;
    }
    let mut literals = Vec::new();
    let b = stmt.as_bytes();
    let mut out = String::with_capacity(schema.len() + 1 + stmt.len());
    out.push_str(schema);
    out.push('\0');
    let mut i = 0;
    // Whether the previous byte continues a word (so a digit run is part of an identifier).
    let mut in_word = false;
    while i < b.len() {
        let c = b[i];
        let rest = &stmt[i..];
        let copy_to = |end: usize, out: &mut String| out.push_str(&stmt[i..end]);
        if c == b'/' && rest.starts_with("/*") {
            let end = rest.find("*/").map_or(b.len(), |e| i + e + 2);
            copy_to(end, &mut out);
            i = end;
            in_word = false;
        } else if (c == b'-' && rest.starts_with("--")) || c == b'#' {
            let end = rest.find('\n').map_or(b.len(), |e| i + e + 1);
            copy_to(end, &mut out);
            i = end;
            in_word = false;
        } else if c == b'\'' || c == b'"' || c == b'`' {
            let end = quoted_end(b, i)?;
            let content = &b[i + 1..end - 1];
            if c == b'\'' && !in_word && plain_string(content) {
                out.push(STRING);
                literals.push(Literal {
                    range: i..end,
                    kind: STRING,
                });
            } else {
                copy_to(end, &mut out);
            }
            i = end;
            in_word = false;
        } else if c.is_ascii_digit() && !in_word && !(i > 0 && b[i - 1] == b'.') {
            let mut end = i;
            while end < b.len() && b[end].is_ascii_digit() {
                end += 1;
            }
            let mut kind = NUMBER;
            if end + 1 < b.len() && b[end] == b'.' && b[end + 1].is_ascii_digit() {
                kind = DECIMAL;
                end += 1;
                while end < b.len() && b[end].is_ascii_digit() {
                    end += 1;
                }
            }
            let next = b.get(end).copied();
            if next.is_some_and(|n| is_word_byte(n) || n == b'.' || n == b'\'' || n == b'"') {
                // `1e5`, `0x1F`, `1abc` (an identifier), `1.`: kept as written.
                while end < b.len() && (is_word_byte(b[end]) || b[end] == b'.') {
                    end += 1;
                }
                copy_to(end, &mut out);
                in_word = true;
            } else {
                out.push(kind);
                literals.push(Literal {
                    range: i..end,
                    kind,
                });
                in_word = false;
            }
            i = end;
        } else {
            // ASCII is copied as it is; anything else a whole character at a time.
            let width = if c.is_ascii() {
                out.push(c as char);
                1
            } else {
                let ch = rest.chars().next()?;
                out.push(ch);
                ch.len_utf8()
            };
            in_word = is_word_byte(c) || c == b'@' || c == b'.';
            i += width;
        }
    }
    Some((out, literals))
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

/// A string literal whose boundaries every SQL lexer agrees on and whose content cannot open a
/// comment or close one: letters, digits, spaces and a few punctuation marks.
fn plain_string(content: &[u8]) -> bool {
    content.len() <= 256
        && content.iter().enumerate().all(|(i, &c)| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b' ' | b'_' | b'.' | b',' | b':' | b'+' | b'=' | b'%' | b'~'
                )
                || (c == b'-' && content.get(i + 1) != Some(&b'-'))
        })
}

#[cfg(test)]
mod tests {
    fn key(schema: &str, stmt: &str) -> Option<String> {
        super::key_and_literals(schema, stmt).map(|(k, _)| k)
    }

    fn same(a: &str, b: &str) -> bool {
        key("S", a).unwrap() == key("S", b).unwrap()
    }

    #[test]
    fn literals_are_abstracted() {
        assert!(same(
            "SELECT c FROM sbtest1 WHERE id=5017",
            "SELECT c FROM sbtest1 WHERE id=12"
        ));
        assert!(same(
            "SELECT c FROM t WHERE id BETWEEN 1 AND 100 AND s = 'abc'",
            "SELECT c FROM t WHERE id BETWEEN 77 AND 25 AND s = 'x y'"
        ));
        assert_ne!(key("A", "SELECT 1"), key("B", "SELECT 1"));
    }

    #[test]
    fn statistics_keys_are_the_cache_keys_without_a_schema() {
        let stmt = "SELECT c FROM t WHERE id = 5 AND s = 'x' AND f = 1.5";
        assert_eq!(super::statistics_key(stmt), key("", stmt));
        assert_eq!(
            super::statistics_key(stmt).unwrap(),
            "\0SELECT c FROM t WHERE id = \u{1} AND s = \u{2} AND f = \u{3}"
        );
        assert_eq!(super::statistics_key("SELECT '\0'"), None);
    }

    #[test]
    fn everything_else_is_kept() {
        for (a, b) in [
            ("SELECT c FROM t1 WHERE id=1", "SELECT c FROM t2 WHERE id=1"),
            ("SELECT c FROM t WHERE id=1", "SELECT c FROM t WHERE id='1'"),
            ("SELECT c FROM t WHERE id=1", "SELECT c FROM t WHERE id=-1"),
            ("SELECT c FROM t WHERE id=1", "SELECT c FROM t WHERE id=1.5"),
            (
                "SELECT c FROM t WHERE id=1e5",
                "SELECT c FROM t WHERE id=1e6",
            ),
            (
                "SELECT c FROM t WHERE id=0x1F",
                "SELECT c FROM t WHERE id=0x2F",
            ),
            ("SELECT c FROM t1x WHERE 1", "SELECT c FROM t2x WHERE 1"),
            ("SELECT 1abc FROM t", "SELECT 2abc FROM t"),
            ("SELECT c FROM t.1 WHERE 1", "SELECT c FROM t.2 WHERE 1"),
            ("SELECT /* 1 */ c FROM t", "SELECT /* 2 */ c FROM t"),
            ("SELECT c FROM t -- 1\n", "SELECT c FROM t -- 2\n"),
            ("SELECT 'a''b' FROM t", "SELECT 'a''c' FROM t"),
            ("SELECT 'a\\'b' FROM t", "SELECT 'a\\'c' FROM t"),
            ("SELECT '*/' FROM t", "SELECT '/*' FROM t"),
            ("SELECT 'a--b' FROM t", "SELECT 'a--c' FROM t"),
            ("SELECT \"a\" FROM t", "SELECT \"b\" FROM t"),
            ("SELECT `1` FROM t", "SELECT `2` FROM t"),
            ("SELECT _utf8'a' FROM t", "SELECT _utf8'b' FROM t"),
            ("SELECT X'0A' FROM t", "SELECT X'0B' FROM t"),
            ("SELECT @a1 FROM t", "SELECT @a2 FROM t"),
            ("SELECT DATABASE() FROM t", "SELECT SCHEMA() FROM t"),
        ] {
            assert!(!same(a, b), "{a} / {b}");
        }
        assert_eq!(key("S", "SELECT 'unterminated"), None);
    }
}
