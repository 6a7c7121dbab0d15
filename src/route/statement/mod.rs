//! Routing of one statement: classification, table resolution, dataNode choice, per-node SQL.

use crate::route::Refusal;
use std::collections::BTreeSet;
use std::ops::{ControlFlow, Range};
use std::sync::Arc;

use sqlparser::ast::{
    Expr, FromTable, GroupByExpr, ObjectName, ObjectType, OnInsert, Query, SelectItem, SetExpr,
    Statement, TableFactor, TableObject, Visit, Visitor,
};
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Span, Token};

use super::admit::{self, Admitted, split_name};
use super::analyze::{self, ColumnMatcher, Partitions};
use super::horizon;
use super::lex;
use super::metadata;
use super::rewrite::{self, Edits, Replacement};
use super::scan::{self, is};
use super::shape::{self, PlanCache};
use super::{
    ColumnsLookup, Completion, Condition, Counter, HostHint, Local, OkMerge, Plan, RouteError,
    Routed, Router, SchemaRoute, SequenceEdit, SequenceRewrite, SessionView, TableRoute, Target,
};
use crate::config::TableKind;
use crate::sqltext::SavepointName;

mod backend_explain;
mod collect;
mod ddl;
mod explain;
mod hints;
mod insert;
mod parsed;
mod select;
mod sequence;
mod session;
mod set_statement;
mod show;
mod write;

use self::collect::*;
use self::ddl::*;
use self::hints::*;
use self::insert::*;
use self::parsed::*;
use self::select::*;
use self::session::*;
use self::show::*;
use self::write::*;

pub use self::show::like;

/// Schemas of the backend server itself. `information_schema` may be read (tools do); the
/// others hold the backend's users, grants and sessions and are not reachable through the
/// gateway.
const SYSTEM_SCHEMAS: &[&str] = &["information_schema", "mysql", "performance_schema", "sys"];

/// `true` when the words of a `DESC` / `DESCRIBE` statement (split at white space, the first
/// being `DESC` or `DESCRIBE`) are MariaDB's EXPLAIN of a statement (`sql_yacc.yy`, `describe`:
/// `opt_extended_describe explainable_command`) rather than the columns of a table: a SELECT,
/// INSERT, REPLACE, UPDATE, DELETE, WITH query or parenthesized query, optionally after
/// `EXTENDED [ALL]`, `PARTITIONS` or `FORMAT = name`. None of those words can be a table's
/// name there: the statement words are reserved, and `EXTENDED`, `PARTITIONS` and `FORMAT =`
/// are taken as such only before a statement.
fn describes_statement(words: &[&str]) -> bool {
    let explainable = |w: Option<&&str>| {
        w.is_some_and(|w| {
            w.starts_with('(')
                || ["SELECT", "INSERT", "REPLACE", "UPDATE", "DELETE", "WITH"]
                    .iter()
                    .any(|k| w.eq_ignore_ascii_case(k))
        })
    };
    let upper = |i: usize| words.get(i).map(|w| w.to_ascii_uppercase());
    match upper(1).as_deref() {
        Some("EXTENDED" | "PARTITIONS") => {
            explainable(words.get(2))
                || (scan::is(words.get(2), "ALL") && explainable(words.get(3)))
        }
        Some(w) if w.starts_with("FORMAT") => {
            w.contains('=') || words.get(2).is_some_and(|n| n.starts_with('='))
        }
        _ => explainable(words.get(1)),
    }
}

/// Most operator tokens a long statement may carry. Expression trees are as deep as their
/// operator chains, and the parser's visitors (and drop) walk them recursively: a 100 KB
/// `id = 1 OR id = 2 OR ...` must get an error, not overflow the stack.
const MAX_OPERATORS: usize = 4_000;

pub(super) fn route(
    r: &Router,
    sql: &str,
    view: &SessionView<'_>,
    cache: Option<&mut PlanCache>,
) -> Result<Routed, RouteError> {
    if let Some(annotation) = scan::annotation(sql) {
        return annotated(r, annotation.map_err(RouteError::syntax)?, view);
    }
    // `/*balance*/` forces the active writeHost (DECISIONS.md item 11; not Mycat's meaning).
    if let Some(rest) = sql.trim_start().strip_prefix("/*balance*/") {
        return Ok(with_host(route(r, rest, view, None)?, HostHint::Master));
    }
    // From here on only the canonical text exists: comments gone, version comments expanded,
    // quotes as the backend reads them under the session's sql_mode (module `lex`).
    let canonical = lex::canonical(sql, view.mode)?;
    let stmt = scan::strip(&canonical.text);
    if stmt.is_empty() {
        return match comments_only(sql) {
            true => Ok(Routed::Local(Local::Ok)),
            false => Err(RouteError::empty()),
        };
    }
    if canonical.separator && stmt.contains(';') && lex::canonical(stmt, view.mode)?.separator {
        return Err(RouteError::syntax(
            "Multi statements is not supported, use single statement instead",
        ));
    }
    if stmt.len() > 8 * 1024 && rewrite::operator_count(stmt) > MAX_OPERATORS {
        return Err(RouteError::syntax(format!(
            "statement too complex: more than {MAX_OPERATORS} operators (use IN lists)"
        )));
    }
    let schema = view.schema;
    if let Some(rewrite) = sequence_calls(stmt) {
        return Ok(Routed::Sequence(rewrite));
    }
    if let Some(local) = canned_select(stmt) {
        return Ok(Routed::Local(local));
    }
    // The leading keyword, also when a comment follows it without a space (`COMMIT/*x*/`).
    // Only the statements named here need all their words.
    let first = scan::first_word_before_comment(stmt).unwrap_or_else(|| {
        stmt.split_whitespace()
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase()
    });
    let words = match first.as_str() {
        "USE" | "SHOW" | "KILL" | "EXPLAIN" | "DESC" | "DESCRIBE" => scan::words(stmt),
        _ => Vec::new(),
    };
    // `DESC | DESCRIBE <statement>` is MariaDB's EXPLAIN of that statement: answered as the
    // same EXPLAIN (the words after the first are kept as written).
    if matches!(first.as_str(), "DESC" | "DESCRIBE") && describes_statement(&words) {
        let rest = &stmt.trim_start()[words[0].len()..];
        return route(r, &format!("EXPLAIN{rest}"), view, cache);
    }
    // MariaDB's EXPLAIN EXTENDED / FORMAT=JSON and ANALYZE, and with `explainMode=backend` a
    // plain EXPLAIN of a statement on one dataNode: the backend's plan.
    if matches!(first.as_str(), "EXPLAIN" | "ANALYZE")
        && let Some(at) = backend_explain::backend_body(stmt, r.explain_mode)
        && let Some(routed) = backend_explain::backend_explain(r, stmt, at, view)?
    {
        return Ok(routed);
    }
    match first.as_str() {
        "USE" if words.len() == 2 => Ok(Routed::Local(Local::Use(
            scan::unquote(words[1]).to_string(),
        ))),
        "SET" if super::set::is_set_statement(stmt) => set_statement::set_statement(r, stmt, view),
        // `SET @y = FOUND_ROWS()`: the session's counters, as literals, as in any statement
        // (the SET may be evaluated on any connection).
        "SET" => match view.counters.and_then(|c| rewrite::with_counters(stmt, &c)) {
            Some(text) => super::set::set(&text, &|n| r.knows_function(n)).map(Routed::Local),
            None => super::set::set(stmt, &|n| r.knows_function(n)).map(Routed::Local),
        },
        "BEGIN" | "START" | "COMMIT" | "ROLLBACK" | "SAVEPOINT" | "RELEASE" => {
            transaction(stmt).map(Routed::Local)
        }
        // `LOCK TABLES` (SPEC §7.6): the session locks on every dataNode of the tables
        // (module `lock`); `LOCK INSTANCE` and the like go on to be refused by the parse.
        "LOCK"
            if scan::words_before_comment(stmt)
                .get(1)
                .is_some_and(|t| t == "TABLES" || t == "TABLE") =>
        {
            super::lock::lock_tables(r, stmt, view).map(|l| Routed::Local(Local::LockTables(l)))
        }
        // mysqldump's `/*!40000 ALTER TABLE t DISABLE KEYS */` and `ENABLE KEYS` around a
        // table's rows: a no-op on InnoDB, and on MyISAM/Aria only a deferral of non-unique
        // index updates, so the gateway answers OK (as Mycat answers a whole version comment)
        // rather than sending the same deferral to every dataNode.
        "ALTER" if super::lock::keys_toggle(stmt) => Ok(Routed::Local(Local::Ok)),
        // `UNLOCK TABLES`, exactly those two words (Mycat's rule): the session's table locks
        // go; without any, MySQL answers OK and an open transaction goes on (mysqldump
        // --single-transaction sends it after its START TRANSACTION).
        "UNLOCK"
            if matches!(
                scan::words_before_comment(stmt).as_slice(),
                [_, t] if t == "TABLES" || t == "TABLE"
            ) =>
        {
            Ok(Routed::Local(Local::UnlockTables))
        }
        // Table maintenance (`CHECK TABLE`, ...; module `maintenance`): read by the gateway,
        // sent to the tables' dataNodes as statements it builds.
        "CHECK" | "CHECKSUM" | "ANALYZE" | "OPTIMIZE" | "REPAIR"
            if super::maintenance::is_maintenance(&scan::words_before_comment(stmt)) =>
        {
            super::maintenance::maintenance(r, stmt, view).map(Routed::Plan)
        }
        "CREATE" | "ALTER" | "DROP" if sequence::is_sequence_ddl(stmt) => {
            sequence::sequence_ddl(r, stmt, view)
        }
        // A comment between SHOW's words is white space (`show /* c */ warnings`).
        "SHOW" => {
            let text = scan::without_comments(stmt);
            show(r, &text, &scan::words(&text), view)
        }
        "KILL" => kill(&words).map(Routed::Local),
        // Mycat's EXPLAIN shows the route, not the backend's query plan (SPEC §5.18).
        "EXPLAIN" if words.len() > 1 => explain::explain(r, stmt, view),
        "DESC" | "DESCRIBE" if words.len() >= 2 => {
            let (node, table_text) = table_node(r, words[1], view)?;
            let rest = &stmt[stmt
                .find(words[1])
                .map_or(stmt.len(), |i| i + words[1].len())..];
            // `DESC t [column | 'pattern']`: one more word at most, never a statement.
            let rest_ok = match scan::words(rest).as_slice() {
                [] => true,
                [w] => {
                    w.bytes()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'%'))
                        || (w.len() >= 2
                            && w.starts_with('\'')
                            && w.ends_with('\'')
                            && !w[1..w.len() - 1].contains(['\'', '\\']))
                }
                _ => false,
            };
            if !rest_ok {
                return Err(RouteError::syntax(format!(
                    "{} supports only a table and one column name or pattern: {stmt}",
                    words[0]
                )));
            }
            Ok(single(
                node,
                format!("{} {table_text}{rest}", words[0]),
                true,
            ))
        }
        _ => match (cache, schema) {
            (Some(cache), Some(_)) => cached(r, stmt, view, cache),
            _ => parsed(r, stmt, view, &mut CacheHints::default()),
        },
    }
}

/// Whether `sql`, which holds no statement once its comments are gone, held comments: MariaDB
/// answers such a text OK, and only an empty one — nothing but white space and `;` once the
/// server trimmed its ends (`alloc_query`) — `Query was empty` (1065; the grammar's
/// `OPTION_LEX_FOUND_COMMENT` tells them apart).
fn comments_only(sql: &str) -> bool {
    !sql.trim_start()
        .trim_end_matches(|c: char| c.is_whitespace() || c == ';')
        .is_empty()
}

/// The user's access to every table `statement` names (module `access`), each resolved to its
/// logical schema: its qualifier when that names one, else `schema`. No check without an
/// [`Access`](super::Access) in the view.
///
/// Errors: 1044, 1495, 3012 as [`super::Access::check_table`] gives them.
fn check_access(
    view: &SessionView<'_>,
    schema: &str,
    statement: &Statement,
    qualifiers: &BTreeSet<String>,
) -> Result<(), RouteError> {
    let Some(access) = view.access else {
        return Ok(());
    };
    for q in qualifiers {
        access.check_schema(q)?;
    }
    for t in admit::table_refs(statement) {
        let in_schema = match t.qualifier.as_deref() {
            Some(q) if qualifiers.contains(q) => q,
            // information_schema (metadata queries) and refused qualifiers: checked elsewhere.
            Some(_) => continue,
            None => schema,
        };
        access.check_table(in_schema, &t.table, t.access)?;
    }
    Ok(())
}

fn single(node: String, sql: String, read_only: bool) -> Routed {
    Routed::Plan(Plan::simple(
        vec![Target {
            node,
            sql: Arc::from(sql),
        }],
        read_only,
    ))
}

/// The logical schema `schema` names, if the session's user may use it.
///
/// Errors: 1046 without a name, 1049 for an unknown schema, 1044 for one the user may not use.
pub(in crate::route) fn require_schema<'r>(
    r: &'r Router,
    schema: Option<&str>,
    view: &SessionView<'_>,
) -> Result<&'r SchemaRoute, RouteError> {
    let name = schema.ok_or_else(RouteError::no_database)?;
    let s = r
        .schema(name)
        .ok_or_else(|| RouteError::unknown_database(name))?;
    if let Some(access) = view.access {
        access.check_schema(name)?;
    }
    Ok(s)
}

/// The node that answers a metadata statement about `token` (`t`, `` `t` ``, `db.t`), and the
/// table name to send there (unqualified).
fn table_node(
    r: &Router,
    token: &str,
    view: &SessionView<'_>,
) -> Result<(String, String), RouteError> {
    let (qualifier, name) = qualified_name(token);
    let name = name.as_str();
    let s = require_schema(r, qualifier.as_deref().or(view.schema), view)?;
    if let Some(access) = view.access {
        access.check_table(&s.name, name, super::TableAccess::Select)?;
    }
    let upper = name.to_ascii_uppercase();
    let node = match (s.tables.get(&upper), &s.default_node) {
        (Some(t), _) => t.nodes[0].clone(),
        (None, Some(d)) => {
            s.check_undeclared(&upper)?;
            d.clone()
        }
        // MySQL's answer to DESC / SHOW COLUMNS of a missing table: ORMs (SQLAlchemy's
        // has_table) read 1146 as "no such table".
        (None, None) => {
            return Err(RouteError::new(
                Refusal::NoSuchTable,
                format!("Table '{}.{name}' doesn't exist", s.name),
            ));
        }
    };
    Ok((node, format!("`{}`", name.replace('`', "``"))))
}

/// The qualifier and the name of a table reference written as one word (`t`, `` `t` ``,
/// `db.t`, `` `d.b`.`t``1` ``), each unquoted: a `.` inside backquotes belongs to the name, and
/// a doubled backquote inside them is one (MySQL's quoting).
fn qualified_name(token: &str) -> (Option<String>, String) {
    let mut parts = vec![String::new()];
    let mut chars = token.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        let part = parts.last_mut().expect("one part at least");
        match c {
            '`' if quoted && chars.peek() == Some(&'`') => {
                chars.next();
                part.push('`');
            }
            '`' => quoted = !quoted,
            '.' if !quoted => parts.push(String::new()),
            c => part.push(c),
        }
    }
    let name = parts.pop().unwrap_or_default();
    if parts.is_empty() {
        // A name in quotes (`SHOW COLUMNS FROM 't'` is no MySQL, but was always read so).
        return match token.starts_with('`') {
            true => (None, name),
            false => (None, scan::unquote(&name).to_string()),
        };
    }
    // More than one `.` names no table MySQL knows: the qualifier is then no schema either.
    (Some(parts.join(".")), name)
}

fn unknown_table(table: &str, schema: &str) -> RouteError {
    RouteError::syntax(format!(
        "table {table} is not defined in schema {schema} (and the schema has no default dataNode)"
    ))
}

/// Routes a parsed statement by its kind.
fn route_parsed(
    ctx: &Ctx<'_>,
    statement: &Statement,
    occurrences: &[Occurrence],
) -> Result<Routed, RouteError> {
    let s = ctx.s;
    match statement {
        Statement::Query(q) => select(ctx, q, occurrences),
        Statement::Insert(insert) => match &insert.table {
            TableObject::TableName(name) => {
                let table = name
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .map(|i| i.value.to_ascii_uppercase());
                let table = table.unwrap_or_default();
                let routed = insert_route(ctx, statement, occurrences, table.clone())?;
                // A global table the values read is read on each node the rows go to.
                if let Routed::Plan(p) = &routed
                    && let Some((o, t)) = occurrences
                        .iter()
                        .filter(|o| !o.sequence && o.name != table)
                        .find_map(|o| {
                            p.targets
                                .iter()
                                .find(|t| {
                                    !ctx.all_rows_on(&o.name, &t.node)
                                        && ctx
                                            .table(&o.name)
                                            .is_some_and(|x| x.kind == TableKind::Global)
                                })
                                .map(|t| (o, t))
                        })
                {
                    return Err(RouteError::syntax(format!(
                        "an INSERT on dataNode {} may not read global table {}, which is not on that node",
                        t.node, o.name
                    )));
                }
                Ok(routed)
            }
            _ => Err(RouteError::syntax(
                "INSERT INTO a table function is not supported",
            )),
        },
        Statement::Update(u) => write(
            ctx,
            statement,
            occurrences,
            u.selection.as_ref(),
            Some(&u.assignments),
            u.from.is_some() || !u.table.joins.is_empty(),
            u.limit.is_some(),
        ),
        Statement::Delete(d) => {
            let from = match &d.from {
                FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
            };
            let multi = !d.tables.is_empty()
                || d.using.is_some()
                || from.len() != 1
                || !from[0].joins.is_empty();
            write(
                ctx,
                statement,
                occurrences,
                d.selection.as_ref(),
                None,
                multi,
                d.limit.is_some(),
            )
        }
        Statement::CreateTable(ct) => create_table(ctx, ct, occurrences),
        Statement::AlterTable(at) => ddl(ctx, &[&at.name]),
        Statement::CreateIndex(ci) => ddl(ctx, &[&ci.table_name]),
        Statement::Truncate(t) => ddl(
            ctx,
            &t.table_names.iter().map(|t| &t.name).collect::<Vec<_>>(),
        ),
        Statement::Drop {
            object_type: ObjectType::Table,
            names,
            ..
        } => ddl(ctx, &names.iter().collect::<Vec<_>>()),
        Statement::Drop {
            object_type: ObjectType::Index,
            table: Some(t),
            ..
        } => ddl(ctx, &[t]),
        Statement::RenameTable(renames) => ddl(
            ctx,
            &renames
                .iter()
                .flat_map(|r| [&r.old_name, &r.new_name])
                .collect::<Vec<_>>(),
        ),
        // `admit` lets nothing else through; a kind added there needs its route here.
        other => Err(RouteError::syntax(format!(
            "this statement is not supported by manx in schema {}: {}",
            s.name,
            admit::kind_words(other)
        ))),
    }
}

struct Ctx<'a> {
    r: &'a Router,
    s: &'a SchemaRoute,
    stmt: &'a str,
    /// Per-node replacements (schema qualifiers, DATABASE()).
    edits: Edits,
    /// Tables' column orders read so far (INSERT without a column list, GROUP BY names that
    /// may be columns).
    columns: Option<&'a super::ColumnOrders>,
    /// Set when the answer depends on `columns`: it holds only until a DDL makes the session
    /// read them again, so the plan cache does not keep it.
    columns_used: &'a std::cell::Cell<bool>,
}

impl Ctx<'_> {
    /// The statement text for `node`: logical schema qualifiers replaced by its database.
    fn sql_for(&self, node: &str) -> String {
        if self.edits.is_empty() {
            return self.stmt.to_string();
        }
        self.edits.apply(self.stmt, self.database(node))
    }

    fn database<'n>(&'n self, node: &'n str) -> &'n str {
        self.r.database_of(node).unwrap_or(node)
    }

    fn plan(&self, nodes: BTreeSet<String>, read_only: bool, ok_merge: OkMerge) -> Routed {
        let shared: Arc<str> = Arc::from(self.stmt);
        let targets = nodes
            .into_iter()
            .map(|node| {
                let sql = if self.edits.is_empty() {
                    shared.clone()
                } else {
                    Arc::from(self.sql_for(&node))
                };
                Target { node, sql }
            })
            .collect();
        Routed::Plan(Plan {
            tables: Default::default(),
            targets,
            read_only,
            ok_merge,
            merge: None,
            fallback: Vec::new(),
            ddl: false,
            host: HostHint::None,
            server_variables: false,
            table_names: None,
        })
    }

    /// A read that any of `nodes` answers the same: one chosen at random, the others kept as
    /// fallbacks for when its server cannot be reached.
    fn plan_any(&self, nodes: &[String]) -> Routed {
        let mut order: Vec<String> = nodes.to_vec();
        let first = rand::random_range(0..order.len());
        order.rotate_left(first);
        match self.plan(BTreeSet::from([order[0].clone()]), true, OkMerge::Sum) {
            Routed::Plan(mut p) => {
                p.fallback = order[1..]
                    .iter()
                    .map(|node| Target {
                        node: node.clone(),
                        sql: Arc::from(self.sql_for(node)),
                    })
                    .collect();
                Routed::Plan(p)
            }
            local => local,
        }
    }

    fn table(&self, name: &str) -> Option<&TableRoute> {
        self.s.tables.get(name)
    }

    /// Whether every row of table `name` (upper case) is on dataNode `node`: an undeclared table
    /// when `node` is the default dataNode, a table on that node alone, a global table it is one
    /// of. Sequences are not tables here (callers skip them).
    fn all_rows_on(&self, name: &str, node: &str) -> bool {
        match (self.table(name), &self.s.default_node) {
            (Some(t), _) => {
                t.nodes.iter().all(|n| n == node)
                    || (t.kind == TableKind::Global && t.nodes.iter().any(|n| n == node))
            }
            (None, Some(d)) => d == node,
            (None, None) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::like;

    #[test]
    fn qualified_names_unquote_as_mysql_does() {
        let q = |t: &str| {
            let (a, b) = super::qualified_name(t);
            (a.as_deref().map(str::to_string), b)
        };
        let s = |x: &str| x.to_string();
        assert_eq!(q("t"), (None, s("t")));
        assert_eq!(q("`t``1`"), (None, s("t`1")));
        assert_eq!(q("db.t"), (Some(s("db")), s("t")));
        assert_eq!(q("`d.b`.`t``1`"), (Some(s("d.b")), s("t`1")));
        assert_eq!(q("`a`.b.c"), (Some(s("a.b")), s("c")));
        assert_eq!(q("'t'"), (None, s("t")));
        assert_eq!(q("`'t'`"), (None, s("'t'")));
    }

    #[test]
    fn like_patterns() {
        assert!(like("travelrecord", "travel%"));
        assert!(like("travelrecord", "TRAVEL%"));
        assert!(like("goods", "g_ods"));
        assert!(!like("goods", "g_od"));
        assert!(like("a_b", "a\\_b"));
        assert!(!like("axb", "a\\_b"));
    }
}
