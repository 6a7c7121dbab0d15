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
//! The shape is conservative: comments, identifiers, quoted identifiers, double-quoted strings
//! and any string literal holding quotes, backslashes or characters that could open a comment
//! are kept as written; only plain numbers and plain single-quoted strings become markers (one
//! per kind, so a number never shares a shape with a string).
//!
//! The cache belongs to one session (no lock on the statement path) and holds at most
//! [`CAPACITY`] shapes; it is emptied when full. The router's configuration never changes while
//! a session runs, so nothing else invalidates it.

use std::collections::HashMap;
use std::ops::{ControlFlow, Range};
use std::sync::Arc;

use sqlparser::ast::{BinaryOperator, Expr, SetExpr, Statement, TableFactor, Value};
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;

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
}

/// Plans of statements routed without depending on their literals, by (schema, shape).
#[derive(Debug, Default)]
pub struct PlanCache {
    plans: HashMap<String, Entry>,
}

impl PlanCache {
    /// The cached plan for `stmt` (its text as the single target's SQL), if its shape is known
    /// (and, for a point select, its value is placed without error).
    pub(super) fn get(
        &self,
        key: &str,
        literals: &[Literal],
        stmt: &str,
        schema: &SchemaRoute,
    ) -> Option<Plan> {
        let mut plan = match self.plans.get(key)? {
            Entry::Fixed(plan) => plan.clone(),
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
    let mut relations = 0;
    let _ = sqlparser::ast::visit_relations(&statement, |_| {
        relations += 1;
        ControlFlow::<()>::Continue(())
    });
    let Statement::Query(q) = &statement else {
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
