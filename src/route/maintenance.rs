//! Table maintenance: `CHECK TABLE`, `CHECKSUM TABLE`, `ANALYZE TABLE`, `OPTIMIZE TABLE` and
//! `REPAIR TABLE` (SPEC §5 step 4: Mycat sends them to the tables' dataNodes). Read by the
//! gateway itself (sqlparser reads most of them not at all), checked like any table access, and
//! sent to every dataNode of the named tables as a statement built from the parse: each node's
//! statement names only its tables, qualified by its database (the client's text never reaches
//! a backend).
//!
//! Grammar (MariaDB 10.11), `TABLE` or `TABLES` alike:
//! - `CHECK TABLE t [, ...] [FOR UPGRADE | QUICK | FAST | MEDIUM | EXTENDED | CHANGED] ...`
//! - `CHECKSUM TABLE t [, ...] [QUICK | EXTENDED]`
//! - `ANALYZE [NO_WRITE_TO_BINLOG | LOCAL] TABLE t [, ...] [PERSISTENT FOR ALL | PERSISTENT
//!   FOR [COLUMNS (c, ...)] [INDEXES (i, ...)]]`
//! - `OPTIMIZE [NO_WRITE_TO_BINLOG | LOCAL] TABLE t [, ...] [WAIT n | NOWAIT]` (the lock wait
//!   timeout; MariaDB reads it after OPTIMIZE's table list only, not after the other verbs')
//! - `REPAIR [NO_WRITE_TO_BINLOG | LOCAL] TABLE t [, ...] [QUICK | EXTENDED | USE_FRM] ...`
//!
//! `t` is `name` or `schema.name`, plain or backquoted, the schema a logical one the user may
//! use. CHECK and CHECKSUM read the table (SELECT); ANALYZE, OPTIMIZE and REPAIR change it, as
//! MariaDB's privilege checks have it (SELECT and INSERT): refused for a `readOnly` user and
//! checked against the `<privileges>` masks like other writes.

use std::collections::BTreeMap;
use std::sync::Arc;

use sqlparser::tokenizer::Token;

use super::access::TableAccess;
use super::plan::TableName;
use super::rewrite::backquoted;
use super::{HostHint, OkMerge, Plan, RouteError, Router, SessionView, Target};

/// The statement kinds, by their first word.
const VERBS: &[&str] = &["CHECK", "CHECKSUM", "ANALYZE", "OPTIMIZE", "REPAIR"];

/// Whether `words` (the statement's leading words, upper-cased) start a table maintenance
/// statement: one of the verbs, then `TABLE` or `TABLES`, with `NO_WRITE_TO_BINLOG` or `LOCAL`
/// between them for the verbs that take it.
pub(super) fn is_maintenance(words: &[String]) -> bool {
    let table = |w: Option<&String>| w.is_some_and(|w| w == "TABLE" || w == "TABLES");
    match words.first().map(String::as_str) {
        Some("CHECK" | "CHECKSUM") => table(words.get(1)),
        Some("ANALYZE" | "OPTIMIZE" | "REPAIR") => {
            table(words.get(1))
                || (words
                    .get(1)
                    .is_some_and(|w| w == "NO_WRITE_TO_BINLOG" || w == "LOCAL")
                    && table(words.get(2)))
        }
        _ => false,
    }
}

/// Routes a table maintenance statement (`stmt`: the canonical text, module `lex`).
///
/// Errors: 1064 for text outside the grammar; 1046 / 1049 / 1044 for the schema; 1146 for a
/// table the schema does not have (and no default dataNode); 1044 / 1495 / 3012 as the access
/// checks give them; 1235 for a table on a PostgreSQL dataNode (which has no such statements).
pub(super) fn maintenance(
    r: &Router,
    stmt: &str,
    view: &SessionView<'_>,
) -> Result<Plan, RouteError> {
    let toks = super::rewrite::token_list(stmt)?;
    let bad = || {
        RouteError::syntax(format!(
            "table maintenance syntax not understood by the gateway: {stmt}"
        ))
    };
    let keyword = |i: usize, w: &str| matches!(toks.get(i), Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    // A name: a plain word or a backquoted one.
    let ident = |i: usize| match toks.get(i) {
        Some(Token::Word(x)) if matches!(x.quote_style, None | Some('`')) => Some(x.value.clone()),
        _ => None,
    };
    let verb = VERBS
        .iter()
        .find(|v| keyword(0, v))
        .copied()
        .ok_or_else(bad)?;
    let mut i = 1;
    let mut head = verb.to_string();
    if matches!(verb, "ANALYZE" | "OPTIMIZE" | "REPAIR") {
        for m in ["NO_WRITE_TO_BINLOG", "LOCAL"] {
            if keyword(i, m) {
                head.push(' ');
                head.push_str(m);
                i += 1;
                break;
            }
        }
    }
    if !(keyword(i, "TABLE") || keyword(i, "TABLES")) {
        return Err(bad());
    }
    head.push_str(" TABLE ");
    i += 1;
    let writes = matches!(verb, "ANALYZE" | "OPTIMIZE" | "REPAIR");
    // Per dataNode: the node's table items and the names its rows will give them.
    let mut per_node: BTreeMap<String, (Vec<String>, Vec<TableName>)> = BTreeMap::new();
    let mut tables = Vec::new();
    loop {
        let (qualifier, name) =
            super::lock::qualified_name(&toks, &ident, &mut i).ok_or_else(bad)?;
        let schema =
            super::statement::require_schema(r, qualifier.as_deref().or(view.schema), view)?;
        if let Some(access) = view.access {
            access.check_table(&schema.name, &name, TableAccess::Select)?;
            if writes {
                access.check_table(&schema.name, &name, TableAccess::Insert)?;
            }
        }
        let nodes = super::lock::table_nodes(schema, &name)?;
        let upper = name.to_ascii_uppercase();
        for node in nodes {
            if !r.is_mysql_node(&node) {
                return Err(RouteError::not_supported(format!(
                    "{verb} TABLE of table {name} on dataNode {node} (PostgreSQL) is not supported by the gateway"
                )));
            }
            let database = r.database_of(&node).ok_or_else(bad)?;
            let entry = per_node.entry(node.clone()).or_default();
            entry
                .0
                .push(format!("{}.{}", backquoted(database), backquoted(&name)));
            entry.1.push(TableName {
                database: database.to_string(),
                table: name.clone(),
                schema: schema.name.clone(),
            });
        }
        if !tables.contains(&upper) {
            tables.push(upper);
        }
        if matches!(toks.get(i), Some(Token::Comma)) {
            i += 1;
        } else {
            break;
        }
    }
    let options = options(verb, &toks[i..]).ok_or_else(bad)?;
    let mut targets = Vec::new();
    let mut names = Vec::new();
    for (node, (items, table_names)) in per_node {
        targets.push(Target {
            node,
            sql: Arc::from(format!("{head}{}{options}", items.join(", "))),
        });
        names.push(table_names);
    }
    Ok(Plan {
        tables: tables.into(),
        targets,
        read_only: !writes,
        ok_merge: OkMerge::Sum,
        merge: None,
        fallback: Vec::new(),
        // MariaDB commits an open transaction before each of them but CHECKSUM TABLE.
        ddl: verb != "CHECKSUM",
        host: HostHint::None,
        server_variables: false,
        table_names: Some(names.into()),
    })
}

/// The options after the table list (the tokens `rest`) as they are sent on, with a leading
/// space (empty without any); `None` for anything outside the verb's grammar. A `;` may end
/// the statement.
fn options(verb: &str, rest: &[Token]) -> Option<String> {
    let keyword = |j: usize, w: &str| matches!(rest.get(j), Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let ident = |j: usize| match rest.get(j) {
        Some(Token::Word(x)) if matches!(x.quote_style, None | Some('`')) => Some(x.value.clone()),
        _ => None,
    };
    let end = match rest.last() {
        Some(Token::SemiColon) => rest.len() - 1,
        _ => rest.len(),
    };
    let mut out = String::new();
    let mut j = 0;
    let word_of = |j: usize, list: &[&'static str]| list.iter().find(|w| keyword(j, w)).copied();
    match verb {
        "CHECK" => {
            while j < end {
                if keyword(j, "FOR") && keyword(j + 1, "UPGRADE") {
                    out.push_str(" FOR UPGRADE");
                    j += 2;
                } else {
                    let w = word_of(j, &["QUICK", "FAST", "MEDIUM", "EXTENDED", "CHANGED"])?;
                    out.push(' ');
                    out.push_str(w);
                    j += 1;
                }
            }
        }
        "CHECKSUM" if j < end => {
            let w = word_of(j, &["QUICK", "EXTENDED"])?;
            out.push(' ');
            out.push_str(w);
            j += 1;
        }
        "REPAIR" => {
            while j < end {
                let w = word_of(j, &["QUICK", "EXTENDED", "USE_FRM"])?;
                out.push(' ');
                out.push_str(w);
                j += 1;
            }
        }
        "OPTIMIZE" if j < end => {
            if keyword(j, "NOWAIT") {
                out.push_str(" NOWAIT");
                j += 1;
            } else if keyword(j, "WAIT") {
                // MariaDB's `ulong_num`: a whole number of seconds, sent on as read.
                match rest.get(j + 1) {
                    Some(Token::Number(n, false)) if n.bytes().all(|b| b.is_ascii_digit()) => {
                        out.push_str(&format!(" WAIT {n}"));
                        j += 2;
                    }
                    _ => return None,
                }
            } else {
                return None;
            }
        }
        "ANALYZE" if j < end => {
            if !(keyword(0, "PERSISTENT") && keyword(1, "FOR")) {
                return None;
            }
            out.push_str(" PERSISTENT FOR");
            j = 2;
            if keyword(j, "ALL") {
                out.push_str(" ALL");
                j += 1;
            } else {
                for list in ["COLUMNS", "INDEXES"] {
                    if !keyword(j, list) {
                        continue;
                    }
                    if !matches!(rest.get(j + 1), Some(Token::LParen)) {
                        return None;
                    }
                    j += 2;
                    let mut names = Vec::new();
                    if matches!(rest.get(j), Some(Token::RParen)) {
                        j += 1;
                    } else {
                        loop {
                            names.push(backquoted(&ident(j)?));
                            j += 1;
                            match rest.get(j) {
                                Some(Token::Comma) => j += 1,
                                Some(Token::RParen) => {
                                    j += 1;
                                    break;
                                }
                                _ => return None,
                            }
                        }
                    }
                    out.push_str(&format!(" {list} ({})", names.join(", ")));
                }
            }
        }
        _ => {}
    }
    (j == end).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router() -> Router {
        crate::route::bundled_router()
    }

    fn route(sql: &str) -> Result<Plan, RouteError> {
        maintenance(&router(), sql, &SessionView::schema(Some("TESTDB")))
    }

    fn sqls(p: &Plan) -> Vec<(String, String)> {
        p.targets
            .iter()
            .map(|t| (t.node.clone(), t.sql.to_string()))
            .collect()
    }

    #[test]
    fn each_node_gets_its_tables_qualified_by_its_database() {
        let p = route("check table travelrecord, `TESTDB`.company quick for upgrade;").unwrap();
        assert!(
            sqls(&p).contains(&(
                "dn1".to_string(),
                "CHECK TABLE `db1`.`travelrecord`, `db1`.`company` QUICK FOR UPGRADE".to_string()
            )),
            "{:?}",
            sqls(&p)
        );
        assert!(p.read_only && p.ddl);
        assert_eq!(&p.tables[..], ["TRAVELRECORD", "COMPANY"]);
        let names = p.table_names.as_ref().unwrap();
        assert_eq!(names.len(), p.targets.len());
        assert_eq!(names[0][0].schema, "TESTDB");
        assert_eq!(names[0][0].database, "db1");

        let p = route(
            "ANALYZE NO_WRITE_TO_BINLOG TABLES company PERSISTENT FOR COLUMNS (a, `b`) INDEXES ()",
        )
        .unwrap();
        assert!(!p.read_only);
        assert!(
            sqls(&p)[0]
                .1
                .ends_with("`company` PERSISTENT FOR COLUMNS (`a`, `b`) INDEXES ()"),
            "{:?}",
            sqls(&p)
        );
        let p = route("checksum table company extended").unwrap();
        assert!(p.read_only && !p.ddl);
        assert!(route("OPTIMIZE LOCAL TABLE company").is_ok());
        for (sql, tail) in [
            ("OPTIMIZE TABLE company WAIT 1", "`company` WAIT 1"),
            (
                "optimize table company, travelrecord nowait;",
                "`travelrecord` NOWAIT",
            ),
        ] {
            let p = route(sql).unwrap();
            assert!(
                sqls(&p).iter().all(|(_, s)| s.ends_with(tail)),
                "{:?}",
                sqls(&p)
            );
        }
        assert!(route("REPAIR TABLE company QUICK EXTENDED USE_FRM").is_ok());
        assert!(route("ANALYZE TABLE company PERSISTENT FOR ALL").is_ok());
    }

    #[test]
    fn text_outside_the_grammar_is_refused() {
        for sql in [
            "CHECK TABLE",
            "CHECK TABLE company,",
            "CHECK TABLE company; DROP TABLE company",
            "CHECK TABLE company FOR",
            "CHECK TABLE company NOWAIT",
            "CHECK TABLE 'company'",
            "CHECK TABLE (SELECT 1)",
            "CHECKSUM TABLE company QUICK EXTENDED",
            "OPTIMIZE TABLE company QUICK",
            "OPTIMIZE TABLE company WAIT",
            "OPTIMIZE TABLE company WAIT 1.5",
            "OPTIMIZE TABLE company WAIT -1",
            "OPTIMIZE TABLE company WAIT 1 NOWAIT",
            "OPTIMIZE TABLE company NOWAIT 1",
            "OPTIMIZE TABLE company WAIT 1; DROP TABLE company",
            "ANALYZE TABLE company WAIT 1",
            "CHECK TABLE company WAIT 1",
            "REPAIR TABLE company NOWAIT",
            "CHECKSUM TABLE company NOWAIT",
            "CHECK LOCAL TABLE company",
            "ANALYZE TABLE company PERSISTENT FOR COLUMNS (a,)",
            "ANALYZE TABLE company PERSISTENT FOR COLUMNS a",
            "ANALYZE TABLE company PERSISTENT",
            "REPAIR TABLE company USE_FRM 1",
            "CHECK TABLE mysql.user",
            "CHECK TABLE db1.company",
            "CHECK TABLE nosuch",
        ] {
            assert!(route(sql).is_err(), "{sql}");
        }
        for words in [
            &["CHECK", "TABLE"][..],
            &["ANALYZE", "LOCAL", "TABLES"],
            &["REPAIR", "NO_WRITE_TO_BINLOG", "TABLE"],
        ] {
            let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
            assert!(is_maintenance(&words), "{words:?}");
        }
        let words: Vec<String> = ["CHECK", "LOCAL", "TABLE"]
            .iter()
            .map(|w| w.to_string())
            .collect();
        assert!(!is_maintenance(&words));
    }
}
