//! Text rewrites of a statement for one dataNode. The client's SQL is sent as written; only the
//! logical schema qualifiers (`TESTDB.t`) are replaced by the dataNode's physical database, found
//! by the parser's source spans so nothing else in the text moves.

use std::ops::Range;

use sqlparser::tokenizer::{Location, Span};

/// Byte ranges of `sql` to replace by a dataNode's database name.
#[derive(Debug, Clone, Default)]
pub struct Qualifiers(Vec<Range<usize>>);

impl Qualifiers {
    /// Collects the byte ranges of the given source spans (1-based line/column, columns in
    /// characters, as sqlparser reports them).
    pub fn from_spans(sql: &str, spans: &[Span]) -> Self {
        let mut ranges: Vec<Range<usize>> = spans
            .iter()
            .filter_map(|s| Some(offset(sql, s.start)?..offset(sql, s.end)?))
            .filter(|r| r.start < r.end)
            .collect();
        ranges.sort_by_key(|r| r.start);
        ranges.dedup();
        Qualifiers(ranges)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `sql` with every qualifier replaced by `` `database` ``.
    pub fn apply(&self, sql: &str, database: &str) -> String {
        let quoted = format!("`{}`", database.replace('`', "``"));
        let mut out = String::with_capacity(sql.len() + self.0.len() * quoted.len());
        let mut at = 0;
        for r in &self.0 {
            out.push_str(&sql[at..r.start]);
            out.push_str(&quoted);
            at = r.end;
        }
        out.push_str(&sql[at..]);
        out
    }
}

/// Byte offset of a 1-based (line, column-in-characters) location.
fn offset(sql: &str, loc: Location) -> Option<usize> {
    if loc.line == 0 || loc.column == 0 {
        return None;
    }
    let mut line_start = 0;
    for _ in 1..loc.line {
        line_start += sql[line_start..].find('\n')? + 1;
    }
    let line = &sql[line_start..];
    let col = (loc.column - 1) as usize;
    match line.char_indices().nth(col) {
        Some((i, _)) => Some(line_start + i),
        None if line.chars().count() == col => Some(line_start + line.len()),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::Qualifiers;
    use sqlparser::ast::{ObjectName, Visit, Visitor};
    use sqlparser::dialect::MySqlDialect;
    use sqlparser::parser::Parser;
    use std::ops::ControlFlow;

    struct Spans(Vec<sqlparser::tokenizer::Span>);
    impl Visitor for Spans {
        type Break = ();
        fn pre_visit_relation(&mut self, r: &ObjectName) -> ControlFlow<()> {
            if r.0.len() == 2 {
                self.0.push(r.0[0].as_ident().unwrap().span);
            }
            ControlFlow::Continue(())
        }
    }

    fn rewrite(sql: &str) -> String {
        let stmts = Parser::parse_sql(&MySqlDialect {}, sql).unwrap();
        let mut s = Spans(vec![]);
        let _ = stmts.visit(&mut s);
        Qualifiers::from_spans(sql, &s.0).apply(sql, "db1")
    }

    #[test]
    fn qualifiers_are_replaced_in_place() {
        assert_eq!(
            rewrite("select * from TESTDB.t where a='é'"),
            "select * from `db1`.t where a='é'"
        );
        assert_eq!(
            rewrite("select 'ü', x from\n  `TESTDB`.`t`"),
            "select 'ü', x from\n  `db1`.`t`"
        );
        assert_eq!(
            rewrite("insert into TESTDB.t (id) values (1)"),
            "insert into `db1`.t (id) values (1)"
        );
    }
}
