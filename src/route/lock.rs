//! `LOCK TABLES` (SPEC §7.6): parsed by the gateway, checked like any table access, and turned
//! into one statement per dataNode naming only that node's tables, built from the parse (the
//! client's text never reaches a backend).
//!
//! Grammar (MySQL's and MariaDB's): `LOCK {TABLE | TABLES} tbl [[AS] alias] lock_type [, ...]`
//! with `lock_type` one of `READ [LOCAL]`, `[LOW_PRIORITY] WRITE`, `WRITE CONCURRENT`
//! (MariaDB), then MariaDB's `WAIT n` or `NOWAIT` (how long to wait for the locks, handed on
//! to each dataNode's statement). `tbl` is `name` or `schema.name`, the schema a logical one.

use crate::route::Refusal;
use std::collections::BTreeMap;
use std::sync::Arc;

use sqlparser::tokenizer::Token;

use super::access::TableAccess;
use super::rewrite::backquoted;
use super::{RouteError, Router, SessionView, Target};

/// One table of a `LOCK TABLES` statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedTable {
    /// The logical schema it is in.
    pub schema: String,
    /// Upper-cased table name (as routing names tables).
    pub table: String,
    /// A write lock (`WRITE`, `LOW_PRIORITY WRITE`, `WRITE CONCURRENT`).
    pub write: bool,
}

/// A `LOCK TABLES` statement, routed: the tables it locks and, per dataNode, the statement
/// that locks that node's share of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockTables {
    pub tables: Vec<LockedTable>,
    /// `LOCK TABLES ...` per dataNode, sorted by dataNode name.
    pub targets: Vec<Target>,
}

impl LockTables {
    /// Whether `table` (upper-cased) is in the lock set, under any alias. The backend itself
    /// holds the finer rules (a table locked under an alias must be named by it).
    pub fn holds(&self, table: &str) -> bool {
        self.tables.iter().any(|t| t.table == table)
    }
}

/// A table name at `*i` of `toks`, `name` or `schema.name` (each part as `ident` reads a
/// name there), moving `*i` past it: (the qualifier, the name); `None` when no name stands
/// there.
pub(super) fn qualified_name(
    toks: &[Token],
    ident: &dyn Fn(usize) -> Option<String>,
    i: &mut usize,
) -> Option<(Option<String>, String)> {
    let first = ident(*i)?;
    if matches!(toks.get(*i + 1), Some(Token::Period)) {
        let name = ident(*i + 2)?;
        *i += 3;
        Some((Some(first), name))
    } else {
        *i += 1;
        Some((None, first))
    }
}

/// The dataNodes of table `name` of `schema` as a statement naming it alone reaches them: a
/// configured table's nodes (a global table's every node), else the schema's default dataNode.
///
/// Errors: 1146 (`Table 'schema.name' doesn't exist`) when the schema has neither.
pub(super) fn table_nodes(
    schema: &super::SchemaRoute,
    name: &str,
) -> Result<Vec<String>, RouteError> {
    let upper = name.to_ascii_uppercase();
    match (schema.tables.get(&upper), &schema.default_node) {
        (Some(t), _) => Ok(t.nodes.clone()),
        (None, Some(d)) => {
            schema.check_undeclared(&upper)?;
            Ok(vec![d.clone()])
        }
        (None, None) => Err(RouteError::new(
            Refusal::NoSuchTable,
            format!("Table '{}.{name}' doesn't exist", schema.name),
        )),
    }
}

/// Routes `LOCK {TABLE|TABLES} ...` (`stmt`: the canonical text, module `lex`).
///
/// Errors: 1064 for text outside the grammar; 1046 / 1049 / 1044 for the schema; 1146 for a
/// table the schema does not have (and no default dataNode); 1044 / 1495 / 3012 as the access
/// checks give them (a `WRITE` lock counts as an UPDATE of the table); 1235 for a table on a
/// PostgreSQL dataNode (PostgreSQL's `LOCK TABLE` lives only inside a transaction, so MySQL's
/// session-long locks have no translation).
pub(super) fn lock_tables(
    r: &Router,
    stmt: &str,
    view: &SessionView<'_>,
) -> Result<LockTables, RouteError> {
    let toks = super::rewrite::token_list(stmt)?;
    let bad = || RouteError::syntax(format!("LOCK TABLES syntax not understood: {stmt}"));
    let keyword = |i: usize, w: &str| matches!(toks.get(i), Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let ident = |i: usize| match toks.get(i) {
        Some(Token::Word(x)) => Some(x.value.clone()),
        _ => None,
    };
    if !keyword(0, "LOCK") || !(keyword(1, "TABLES") || keyword(1, "TABLE")) {
        return Err(bad());
    }
    let mut i = 2;
    // Per dataNode: the node's lock items, in the statement's order.
    let mut per_node: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut tables = Vec::new();
    let mut wait = String::new();
    loop {
        let (qualifier, name) = qualified_name(&toks, &ident, &mut i).ok_or_else(bad)?;
        let mut alias = None;
        if keyword(i, "AS") {
            alias = Some(ident(i + 1).ok_or_else(bad)?);
            i += 2;
        } else if let Some(Token::Word(w)) = toks.get(i)
            && (w.quote_style.is_some()
                || !["READ", "WRITE", "LOW_PRIORITY"]
                    .iter()
                    .any(|k| w.value.eq_ignore_ascii_case(k)))
        {
            alias = Some(w.value.clone());
            i += 1;
        }
        let (mode, write) = if keyword(i, "READ") && keyword(i + 1, "LOCAL") {
            i += 2;
            ("READ LOCAL", false)
        } else if keyword(i, "READ") {
            i += 1;
            ("READ", false)
        } else if keyword(i, "LOW_PRIORITY") && keyword(i + 1, "WRITE") {
            i += 2;
            ("LOW_PRIORITY WRITE", true)
        } else if keyword(i, "WRITE") && keyword(i + 1, "CONCURRENT") {
            i += 2;
            ("WRITE CONCURRENT", true)
        } else if keyword(i, "WRITE") {
            i += 1;
            ("WRITE", true)
        } else {
            return Err(bad());
        };
        let schema =
            super::statement::require_schema(r, qualifier.as_deref().or(view.schema), view)?;
        if let Some(access) = view.access {
            let how = if write {
                TableAccess::Update
            } else {
                TableAccess::Select
            };
            access.check_table(&schema.name, &name, how)?;
        }
        let nodes = table_nodes(schema, &name)?;
        let upper = name.to_ascii_uppercase();
        for node in nodes {
            if !r.is_mysql_node(&node) {
                return Err(RouteError::not_supported(format!(
                    "LOCK TABLES of table {name} on dataNode {node} (PostgreSQL) is not supported by the gateway: PostgreSQL's LOCK TABLE holds only until the end of a transaction"
                )));
            }
            let database = r.database_of(&node).ok_or_else(bad)?;
            let mut item = format!("{}.{}", backquoted(database), backquoted(&name));
            if let Some(a) = &alias {
                item.push_str(" AS ");
                item.push_str(&backquoted(a));
            }
            item.push(' ');
            item.push_str(mode);
            per_node.entry(node).or_default().push(item);
        }
        tables.push(LockedTable {
            schema: schema.name.clone(),
            table: upper,
            write,
        });
        let ends =
            |j: usize| matches!(toks.get(j), None | Some(Token::SemiColon)) && toks.len() <= j + 1;
        match toks.get(i) {
            Some(Token::Comma) => i += 1,
            None | Some(Token::SemiColon) if toks.len() <= i + 1 => break,
            // `WAIT n` / `NOWAIT` (MariaDB) after the last item: how long to wait for the locks.
            Some(Token::Word(_)) if keyword(i, "NOWAIT") && ends(i + 1) => {
                wait = " NOWAIT".to_string();
                break;
            }
            Some(Token::Word(_))
                if keyword(i, "WAIT")
                    && ends(i + 2)
                    && let Some(Token::Number(n, false)) = toks.get(i + 1)
                    && !n.is_empty()
                    && n.bytes().all(|b| b.is_ascii_digit()) =>
            {
                wait = format!(" WAIT {n}");
                break;
            }
            _ => return Err(bad()),
        }
    }
    let targets = per_node
        .into_iter()
        .map(|(node, items)| Target {
            node,
            sql: Arc::from(format!("LOCK TABLES {}{wait}", items.join(", "))),
        })
        .collect();
    Ok(LockTables { tables, targets })
}

/// Whether `stmt` is exactly `ALTER TABLE [schema.]name {DISABLE | ENABLE} KEYS` (what
/// mysqldump writes around a table's rows).
pub(super) fn keys_toggle(stmt: &str) -> bool {
    let Some(toks) = super::rewrite::tokens(stmt) else {
        return false;
    };
    let toks: Vec<Token> = toks
        .into_iter()
        .map(|(t, _, _)| t)
        .filter(|t| !matches!(t, Token::SemiColon))
        .collect();
    let keyword = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let name = |t: &Token| matches!(t, Token::Word(_));
    let tail = match toks.as_slice() {
        [a, t, n, rest @ ..] if keyword(a, "ALTER") && keyword(t, "TABLE") && name(n) => rest,
        _ => return false,
    };
    let tail = match tail {
        [Token::Period, n, rest @ ..] if name(n) => rest,
        other => other,
    };
    matches!(tail, [d, k] if (keyword(d, "DISABLE") || keyword(d, "ENABLE")) && keyword(k, "KEYS"))
}

/// The tables `sql` (a statement as sent to a dataNode) drops when it is `DROP TABLE` /
/// `DROP TABLES` of tables that are not temporary, upper-cased, without their schema: MariaDB
/// leaves LOCK TABLES mode when such a statement drops the last locked table
/// (`mysql_rm_table`). Read on the tokens: `DROP TABLE[S] [IF EXISTS] [db.]t [, ...] [WAIT n |
/// NOWAIT] [RESTRICT | CASCADE]`. `None` for anything else, for a `TEMPORARY` anywhere (a
/// version comment may hide one from the tokens) and for a text the tokenizer refuses.
pub fn dropped_tables(sql: &str) -> Option<Vec<String>> {
    if crate::sqltext::contains_ignore_ascii_case(sql, "TEMPORARY") {
        return None;
    }
    let toks: Vec<Token> = super::rewrite::tokens(sql)?
        .into_iter()
        .map(|(t, _, _)| t)
        .collect();
    let keyword = |i: usize, w: &str| matches!(toks.get(i), Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let name = |i: usize| match toks.get(i) {
        Some(Token::Word(x)) if matches!(x.quote_style, None | Some('`')) => {
            Some(x.value.to_ascii_uppercase())
        }
        _ => None,
    };
    if !(keyword(0, "DROP") && (keyword(1, "TABLE") || keyword(1, "TABLES"))) {
        return None;
    }
    let mut i = if keyword(2, "IF") && keyword(3, "EXISTS") {
        4
    } else {
        2
    };
    let mut tables = Vec::new();
    loop {
        let mut table = name(i)?;
        i += 1;
        if matches!(toks.get(i), Some(Token::Period)) {
            table = name(i + 1)?;
            i += 2;
        }
        tables.push(table);
        if !matches!(toks.get(i), Some(Token::Comma)) {
            break;
        }
        i += 1;
    }
    if keyword(i, "NOWAIT") {
        i += 1;
    } else if keyword(i, "WAIT") && matches!(toks.get(i + 1), Some(Token::Number(..))) {
        i += 2;
    }
    if keyword(i, "RESTRICT") || keyword(i, "CASCADE") {
        i += 1;
    }
    if matches!(toks.get(i), Some(Token::SemiColon)) {
        i += 1;
    }
    (i == toks.len()).then_some(tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router() -> Router {
        crate::route::bundled_router()
    }

    fn lock(sql: &str) -> Result<LockTables, RouteError> {
        lock_tables(&router(), sql, &SessionView::schema(Some("TESTDB")))
    }

    #[test]
    fn a_drop_of_tables_that_are_not_temporary() {
        let names = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(dropped_tables("DROP TABLE t1, `T2`"), names(&["T1", "T2"]));
        assert_eq!(
            dropped_tables("drop tables if exists `db1`.t NOWAIT CASCADE;"),
            names(&["T"])
        );
        assert_eq!(dropped_tables("DROP TABLE db.t WAIT 1"), names(&["T"]));
        for sql in [
            "DROP TEMPORARY TABLE t1",
            "DROP /*!40000 TEMPORARY */ TABLE t1",
            "DROP VIEW t1",
            "DROP DATABASE d",
            "DROP TABLE",
            "DROP TABLE t1,",
            "DROP TABLE t1 x",
            "SELECT 'DROP TABLE t'",
            "ALTER TABLE t DROP COLUMN a",
        ] {
            assert_eq!(dropped_tables(sql), None, "{sql}");
        }
    }

    #[test]
    fn each_node_gets_its_tables_qualified_by_its_database() {
        let l = lock("LOCK TABLES travelrecord READ LOCAL, TESTDB.company AS c LOW_PRIORITY WRITE")
            .unwrap();
        let sqls: Vec<(String, String)> = l
            .targets
            .iter()
            .map(|t| (t.node.clone(), t.sql.to_string()))
            .collect();
        assert!(
            sqls.contains(&(
                "dn1".to_string(),
                "LOCK TABLES `db1`.`travelrecord` READ LOCAL, `db1`.`company` AS `c` LOW_PRIORITY WRITE".to_string()
            )),
            "{sqls:?}"
        );
        assert!(l.holds("COMPANY") && l.holds("TRAVELRECORD") && !l.holds("HOTNEWS"));
        assert!(l.tables[1].write && !l.tables[0].write);
    }

    #[test]
    fn keys_toggles_are_recognised_exactly() {
        for sql in [
            "ALTER TABLE `t` DISABLE KEYS",
            "alter table TESTDB.t enable keys",
            "ALTER TABLE t ENABLE KEYS;",
        ] {
            assert!(keys_toggle(sql), "{sql}");
        }
        for sql in [
            "ALTER TABLE t DISABLE KEYS, ADD COLUMN x INT",
            "ALTER TABLE t ADD COLUMN keys INT",
            "ALTER TABLE t DISABLE",
        ] {
            assert!(!keys_toggle(sql), "{sql}");
        }
    }

    #[test]
    fn text_outside_the_grammar_is_refused() {
        for sql in [
            "LOCK TABLES travelrecord",
            "LOCK TABLES travelrecord READ; DROP TABLE x",
            "LOCK TABLES travelrecord READ,",
            "LOCK TABLES travelrecord READ company WRITE",
            "LOCK TABLES mysql.user READ",
            "LOCK TABLES nosuch READ",
        ] {
            assert!(lock(sql).is_err(), "{sql}");
        }
    }
}
