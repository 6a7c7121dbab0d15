//! Routing of one statement: classification, table resolution, dataNode choice, per-node SQL.

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
    ColumnsLookup, Completion, HostHint, Local, OkMerge, Plan, RouteError, Routed, Router,
    SchemaRoute, SequenceEdit, SequenceRewrite, SessionView, TableRoute, Target,
};
use crate::config::TableKind;
use crate::sqltext::SavepointName;

mod backend_explain;
mod ddl;
mod explain;
mod hints;
mod insert;
mod select;
mod sequence;
mod session;
mod show;
mod write;

use self::ddl::*;
use self::hints::*;
use self::insert::*;
use self::select::*;
use self::session::*;
use self::show::*;
use self::write::*;

pub use self::show::like;

/// Schemas of the backend server itself. `information_schema` may be read (tools do); the
/// others hold the backend's users, grants and sessions and are not reachable through the
/// gateway.
const SYSTEM_SCHEMAS: &[&str] = &["information_schema", "mysql", "performance_schema", "sys"];

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
    // MariaDB's EXPLAIN EXTENDED / FORMAT=JSON and ANALYZE: the backend's plan.
    if matches!(first.as_str(), "EXPLAIN" | "ANALYZE")
        && let Some(at) = backend_explain::modifiers(stmt)
    {
        return backend_explain::backend_explain(r, stmt, at, view);
    }
    match first.as_str() {
        "USE" if words.len() == 2 => Ok(Routed::Local(Local::Use(
            scan::unquote(words[1]).to_string(),
        ))),
        "SET" => super::set::set(stmt, &|n| r.knows_function(n)).map(Routed::Local),
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
        "CREATE" | "ALTER" | "DROP" if sequence::is_sequence_ddl(stmt) => {
            sequence::sequence_ddl(r, stmt, view)
        }
        "SHOW" => show(r, stmt, &words, view),
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
            _ => parsed(r, stmt, view, &mut false),
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
        (None, Some(d)) => d.clone(),
        // MySQL's answer to DESC / SHOW COLUMNS of a missing table: ORMs (SQLAlchemy's
        // has_table) read 1146 as "no such table".
        (None, None) => {
            return Err(RouteError {
                code: 1146,
                state: "42S02",
                message: format!("Table '{}.{name}' doesn't exist", s.name),
            });
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

/// A table named in the statement, where it stands, and how it may be qualified.
#[derive(Debug)]
struct Occurrence {
    /// Upper-cased table name.
    name: String,
    /// Schema qualifier as written, if any.
    qualifier: Option<String>,
    alias: Option<String>,
    /// Query nesting depth (0 for DML targets, 1 for a top-level SELECT's FROM).
    depth: usize,
    /// The sequence of a sequence function (`NEXTVAL(s)`), not a table the statement reads.
    sequence: bool,
}

/// Collects table occurrences, CTE names and the spans of logical-schema qualifiers.
struct Collector<'a> {
    schema_names: &'a dyn Fn(&str) -> bool,
    occurrences: Vec<Occurrence>,
    ctes: BTreeSet<String>,
    qualifier_spans: Vec<Span>,
    /// Logical schemas named as qualifiers.
    qualifiers: BTreeSet<String>,
    /// Qualifiers that name no logical schema (physical or system databases).
    foreign: BTreeSet<String>,
    /// MariaDB sequences named in sequence functions (`NEXTVAL(s)`), each also an
    /// [`Occurrence`] (a table to routing).
    sequences: Vec<sequence::Named>,
    depth: usize,
}

impl Collector<'_> {
    /// Records the span of a logical-schema qualifier of `name` (replaced per dataNode later).
    fn relation(&mut self, name: &ObjectName) {
        let parts: Vec<_> = name.0.iter().filter_map(|p| p.as_ident()).collect();
        if parts.len() >= 2 {
            let q = parts[parts.len() - 2];
            if (self.schema_names)(&q.value) {
                // DDL names are added beside the visitor's relations: each span once.
                if self.qualifier_spans.contains(&q.span) {
                    return;
                }
                self.qualifier_spans.push(q.span);
                self.qualifiers.insert(q.value.clone());
            } else {
                self.foreign.insert(q.value.clone());
            }
        }
    }
}

impl Visitor for Collector<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        self.depth += 1;
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                self.ctes.insert(cte.alias.name.value.to_ascii_uppercase());
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, f: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, alias, .. } = f {
            let (qualifier, table) = split_name(name);
            self.occurrences.push(Occurrence {
                name: table.to_ascii_uppercase(),
                qualifier,
                alias: alias.as_ref().map(|a| a.name.value.clone()),
                depth: self.depth,
                sequence: false,
            });
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, name: &ObjectName) -> ControlFlow<()> {
        self.relation(name);
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        // A sequence function's sequence is a table reference (module `sequence`).
        if let Expr::Function(f) = e
            && let Some((name, access)) = admit::sequence_of(f)
        {
            self.relation(&name);
            let (qualifier, table) = split_name(&name);
            let upper = table.to_ascii_uppercase();
            self.sequences.push(sequence::Named {
                name: upper.clone(),
                writes: access.iter().any(|a| a.writes()),
            });
            self.occurrences.push(Occurrence {
                name: upper,
                qualifier,
                alias: None,
                depth: self.depth,
                sequence: true,
            });
        }
        // `schema.table.column` in expressions.
        if let Expr::CompoundIdentifier(parts) = e
            && parts.len() >= 3
            && (self.schema_names)(&parts[parts.len() - 3].value)
        {
            self.qualifier_spans.push(parts[parts.len() - 3].span);
        }
        ControlFlow::Continue(())
    }
}

/// Where a statement calls something the gateway answers as a literal (byte ranges), and the
/// literal's text.
type Found<'a> = (Vec<Range<usize>>, &'a dyn Fn() -> String);

/// Statements that go through the SQL parser.
/// [`parsed`] through the session's plan cache (module `shape`).
///
/// The cache is the session's own, so a shape it holds was admitted and access-checked for this
/// user by [`parsed`]: a statement of the same shape names the same tables the same way.
fn cached(
    r: &Router,
    stmt: &str,
    view: &SessionView<'_>,
    cache: &mut PlanCache,
) -> Result<Routed, RouteError> {
    let Some(schema) = view.schema else {
        return parsed(r, stmt, view, &mut false);
    };
    // `@@character_set_client` is written as the session's value: not a plan to keep.
    if view.charsets.is_some() && stmt.contains("@@") {
        return parsed(r, stmt, view, &mut false);
    }
    let (Some((key, literals)), Some(s)) =
        (shape::key_and_literals(schema, stmt), r.schema(schema))
    else {
        return parsed(r, stmt, view, &mut false);
    };
    if let Some(plan) = cache.get(&key, &literals, stmt, s) {
        cache.set_last_key(key);
        return Ok(Routed::Plan(plan));
    }
    cache.set_last_key(key.clone());
    let mut literal_free = false;
    let routed = parsed(r, stmt, view, &mut literal_free)?;
    // A statement naming a sequence is placed by the sequence's node too (module
    // `sequence`), which the cache's learned placements do not know: never cached.
    if let Routed::Plan(plan) = &routed
        && plan.fallback.is_empty()
        && !sequence::may_name_sequence(stmt)
    {
        // One node, the statement as written, no merge.
        let plain =
            plan.targets.len() == 1 && *plan.targets[0].sql == *stmt && plan.merge.is_none();
        if plain && literal_free {
            cache.insert(key, plan.clone());
        } else if !literal_free && literals.len() == 2 {
            cache.learn_range(key, &literals, stmt, s, plan);
        } else if plain {
            cache.learn_point(key, &literals, stmt, s, plan);
        }
    }
    Ok(routed)
}

/// Parses and routes `stmt`. Sets `literal_free` when the plan cannot depend on the statement's
/// literals: a SELECT whose first table is undeclared in a schema with a default dataNode
/// (SPEC §5.4: the whole statement goes there).
fn parsed(
    r: &Router,
    stmt: &str,
    view: &SessionView<'_>,
    literal_free: &mut bool,
) -> Result<Routed, RouteError> {
    let mut tables = Vec::new();
    let mut routed = parsed_statement(r, stmt, view, literal_free, &mut tables)?;
    if let Routed::Plan(plan) = &mut routed {
        plan.tables = Arc::from(tables);
    }
    Ok(routed)
}

/// [`parsed`], with the logical tables the statement names put in `tables` (upper-cased, in
/// order, once each; not information_schema, WITH query names or DUAL).
fn parsed_statement(
    r: &Router,
    stmt: &str,
    view: &SessionView<'_>,
    literal_free: &mut bool,
    tables: &mut Vec<String>,
) -> Result<Routed, RouteError> {
    let schema = view.schema;
    let mut statements =
        super::forms::parse(stmt).map_err(|e| RouteError::syntax(e.to_string()))?;
    if statements.len() != 1 {
        return Err(RouteError::syntax(
            "Multi statements is not supported, use single statement instead",
        ));
    }
    let statement = statements.remove(0);
    let is_schema = |n: &str| r.schemas.contains_key(n);
    admit::admit(&statement, stmt, &is_schema, &|n| r.knows_function(n))?;
    let c = collect(&is_schema, &statement);
    for o in &c.occurrences {
        let named = match o.qualifier.as_deref() {
            Some(q) => !metadata::is_information_schema(q),
            None => !(c.ctes.contains(&o.name) || o.name == "DUAL"),
        };
        if named && !tables.contains(&o.name) {
            tables.push(o.name.clone());
        }
    }
    // Routing drops every name of a WITH query and every DUAL from the tables it places; the
    // access checks resolve names as MariaDB does (`admit::table_refs`). Where the two could
    // differ — a table named like a WITH query of the statement, a backquoted `dual` (a real
    // table to MariaDB) — the statement is refused, so both always see the same tables.
    if let Some(t) = admit::table_refs(&statement).iter().find(|t| {
        t.qualifier.is_none()
            && (c.ctes.contains(&t.table.to_ascii_uppercase())
                || t.table.eq_ignore_ascii_case("DUAL"))
    }) {
        return Err(RouteError::syntax(format!(
            "table {} is not supported here: it is named like a WITH query of the statement, or is `dual` (rename it)",
            t.table
        )));
    }
    check_reachable(&statement, &c)?;
    if let Some(access) = view.access {
        for q in &c.qualifiers {
            access.check_schema(q)?;
        }
    }
    if matches!(statement, Statement::Query(_))
        && c.occurrences.iter().any(|o| {
            o.qualifier
                .as_deref()
                .is_some_and(metadata::is_information_schema)
        })
    {
        // Tools' metadata queries: answered for the logical schemas (module `metadata`).
        if let Some(seq) = c.sequences.first() {
            return Err(RouteError::not_supported(format!(
                "sequence {} in a query of information_schema is not supported",
                seq.name
            )));
        }
        let others: Vec<String> = c
            .occurrences
            .iter()
            .filter(|o| match o.qualifier.as_deref() {
                Some(q) => !metadata::is_information_schema(q),
                None => !(c.ctes.contains(&o.name) || o.name == "DUAL"),
            })
            .map(|o| o.name.clone())
            .collect();
        if let Some(current) = schema {
            check_access(view, current, &statement, &c.qualifiers)?;
        } else if let Some(access) = view.access
            && let Some(t) = admit::table_refs(&statement)
                .into_iter()
                .find(|t| t.qualifier.is_none())
        {
            // A table without a schema, in a session without one.
            access.check_schema("")?;
            return Err(unknown_table(&t.table, ""));
        }
        let q = metadata::analyze(stmt, &statement, &others, schema)?;
        return Ok(Routed::Metadata(q));
    }
    // Names written as `schema.table` where schema is configured decide the schema when the
    // session has none, and when every table the statement names is qualified with the same
    // other logical schema (`CREATE TABLE test_schema.t ..` from schema `test`: routed by
    // test_schema's rules, as after `USE test_schema`); a statement mixing the session's
    // tables with another schema's is not supported yet.
    let only_other = match (schema, c.qualifiers.iter().collect::<Vec<_>>().as_slice()) {
        (Some(s), [q]) if *q != s => {
            let relations = c
                .occurrences
                .iter()
                .filter(|o| {
                    o.qualifier.is_some() || !(c.ctes.contains(&o.name) || o.name == "DUAL")
                })
                .filter(|o| {
                    !o.qualifier.as_deref().is_some_and(|q| {
                        metadata::is_information_schema(q)
                            || SYSTEM_SCHEMAS.iter().any(|x| x.eq_ignore_ascii_case(q))
                    })
                })
                .all(|o| o.qualifier.as_deref() == Some(q.as_str()));
            // The targets too (INSERT INTO t, CREATE TABLE t, which are no relations of the
            // query): `INSERT INTO t VALUES (NEXTVAL(other.s))` writes the session's `t`.
            let targets = || {
                admit::table_refs(&statement).iter().all(|t| {
                    t.qualifier.as_deref().is_some_and(|x| {
                        x == q.as_str()
                            || metadata::is_information_schema(x)
                            || SYSTEM_SCHEMAS.iter().any(|y| y.eq_ignore_ascii_case(x))
                    })
                })
            };
            (relations && targets()).then_some(q.as_str())
        }
        _ => None,
    };
    let schema = match (schema, c.qualifiers.iter().next()) {
        (Some(_), Some(q)) if only_other == Some(q.as_str()) => q.as_str(),
        (Some(s), _) => {
            if let Some(other) = c.qualifiers.iter().find(|q| *q != s) {
                return Err(RouteError::syntax(format!(
                    "statements over several schemas are not supported yet (current schema {s}, statement names {other})"
                )));
            }
            s
        }
        (None, Some(q)) if c.qualifiers.len() == 1 => q.as_str(),
        // No schema and no table (`SELECT @@max_allowed_packet` on connect): any schema's node
        // answers it the same (SPEC §5.2 uses an arbitrary schema).
        (None, None) if c.occurrences.is_empty() => {
            match r
                .schemas
                .keys()
                .find(|k| view.access.is_none_or(|a| a.may_use(k)))
            {
                Some(first) => first.as_str(),
                None => return Err(RouteError::no_database()),
            }
        }
        _ => return Err(RouteError::no_database()),
    };
    let s = r
        .schema(schema)
        .ok_or_else(|| RouteError::unknown_database(schema))?;
    if let Some(cte) = c.ctes.iter().find(|n| s.tables.contains_key(*n)) {
        return Err(RouteError::syntax(format!(
            "a WITH query named like table {cte} is not supported (rename it)"
        )));
    }
    let mut edits = Edits::qualifiers(stmt, &c.qualifier_spans);
    if !is_ddl(&statement) {
        // DATABASE() answers the session's logical schema, not the dataNode's database.
        let current = view.schema.unwrap_or(&s.name);
        let database = || format!("'{}'", current.replace('\\', "\\\\").replace('\'', "''"));
        // VERSION() answers the version the greeting announced, not the backend's (drivers
        // check one against the other: SQLAlchemy's `SELECT VERSION() LIKE '%MariaDB%'`).
        // So do `@@version` and `@@version_comment`, as `SELECT @@version` alone and SHOW
        // VARIABLES do.
        let version = || format!("'{}'", crate::version::function_version());
        let comment = || format!("'{}'", crate::version::VERSION_COMMENT);
        let found: [(_, &dyn Fn() -> String); 4] = [
            (rewrite::database_calls(stmt), &database),
            (rewrite::version_calls(stmt), &version),
            (rewrite::global_variable_refs(stmt, "version"), &version),
            (
                rewrite::global_variable_refs(stmt, "version_comment"),
                &comment,
            ),
        ];
        // The session's character sets are the gateway's (the backends' connections stay
        // utf8mb4): `@@character_set_client` and `@@character_set_results` answer them.
        let mut found: Vec<Found<'_>> = found.into();
        let client = || format!("'{}'", view.charsets.map_or("utf8mb4", |c| c.0));
        let results = || match view.charsets.and_then(|c| c.1) {
            Some(name) => format!("'{name}'"),
            None => "NULL".to_string(),
        };
        if view.charsets.is_some() {
            found.push((
                rewrite::session_variable_refs(stmt, "character_set_client"),
                &client,
            ));
            found.push((
                rewrite::session_variable_refs(stmt, "character_set_results"),
                &results,
            ));
        }
        // (The literals are written only for a statement that has such a call: most have none.)
        for (calls, value) in found.into_iter().filter(|(c, _)| !c.is_empty()) {
            let value = value();
            for call in calls {
                // `DATABASE()'alias'`: a literal right before a string would join it (MySQL
                // concatenates adjacent strings), so it goes in parentheses there.
                let text = match stmt[call.end..].chars().next() {
                    Some('\'' | '"') => format!("({value})"),
                    // A select item of its own keeps its label (`@@character_set_client`).
                    _ if stmt[call.clone()].starts_with("@@")
                        && rewrite::whole_select_item(stmt, call.clone()) =>
                    {
                        format!("{value} AS `{}`", &stmt[call.clone()])
                    }
                    _ => value.clone(),
                };
                edits.push(call, Replacement::Text(text));
            }
        }
    }
    let ctx = Ctx {
        r,
        s,
        stmt,
        edits,
        columns: view.columns,
    };
    // Occurrences that name configured-or-unknown tables of this schema (not CTEs, not system
    // tables, not other schemas).
    let occurrences: Vec<Occurrence> = c
        .occurrences
        .into_iter()
        .filter(|o| !(o.qualifier.is_none() && (c.ctes.contains(&o.name) || o.name == "DUAL")))
        .filter(|o| {
            !o.qualifier
                .as_deref()
                .is_some_and(|q| SYSTEM_SCHEMAS.iter().any(|x| x.eq_ignore_ascii_case(q)))
        })
        .collect();
    check_access(view, &s.name, &statement, &c.qualifiers)?;
    // An INSERT is placed by its target and sources; its sequences' dataNode is checked on
    // the plan (`sequence::keep_on_node`): a value drawn from a sequence reads no rows.
    // Elsewhere a sequence is placed like a table, after the statement's tables: never the
    // "first table" that decides where a statement over undeclared tables goes (SPEC §5.4).
    let occurrences: Vec<Occurrence> = match statement {
        Statement::Insert(_) => occurrences.into_iter().filter(|o| !o.sequence).collect(),
        _ => {
            let (sequences, tables): (Vec<_>, Vec<_>) =
                occurrences.into_iter().partition(|o| o.sequence);
            tables.into_iter().chain(sequences).collect()
        }
    };
    let sequence_node = sequence::node_of_sequences(r, s, &c.sequences)?;
    let returning = match &statement {
        Statement::Insert(i) => i.returning.is_some(),
        Statement::Update(u) => u.returning.is_some(),
        Statement::Delete(d) => d.returning.is_some(),
        _ => false,
    };
    let mut routed = route_parsed(&ctx, &statement, &occurrences)?;
    if let Some(place) = &sequence_node {
        sequence::keep_on_node(&mut routed, place)?;
    }
    *literal_free = matches!(statement, Statement::Query(_))
        && s.default_node.is_some()
        && occurrences
            .first()
            .is_some_and(|o| ctx.table(&o.name).is_none());
    if returning && matches!(&routed, Routed::Plan(p) if p.targets.len() > 1) {
        return Err(RouteError::syntax(
            "RETURNING from a write to several dataNodes is not supported yet",
        ));
    }
    Ok(routed)
}

/// The tables, CTEs and schema qualifiers `statement` names.
fn collect<'a>(is_schema: &'a dyn Fn(&str) -> bool, statement: &Statement) -> Collector<'a> {
    let mut c = Collector {
        schema_names: is_schema,
        occurrences: Vec::new(),
        ctes: BTreeSet::new(),
        qualifier_spans: Vec::new(),
        qualifiers: BTreeSet::new(),
        foreign: BTreeSet::new(),
        sequences: Vec::new(),
        depth: 0,
    };
    let _ = statement.visit(&mut c);
    // DDL names the visitor does not report as relations.
    match statement {
        Statement::CreateTable(ct) => c.relation(&ct.name),
        Statement::Drop { names, table, .. } => {
            names.iter().chain(table.iter()).for_each(|n| c.relation(n));
        }
        Statement::Truncate(t) => t.table_names.iter().for_each(|t| c.relation(&t.name)),
        Statement::AlterTable(at) => {
            c.relation(&at.name);
            for op in &at.operations {
                if let sqlparser::ast::AlterTableOperation::RenameTable {
                    table_name:
                        sqlparser::ast::RenameTableNameKind::As(n)
                        | sqlparser::ast::RenameTableNameKind::To(n),
                } = op
                {
                    c.relation(n);
                }
            }
        }
        Statement::CreateIndex(ci) => c.relation(&ci.table_name),
        Statement::RenameTable(rs) => rs.iter().for_each(|r| {
            c.relation(&r.old_name);
            c.relation(&r.new_name);
        }),
        _ => {}
    }
    if let Statement::CreateTable(ct) = statement
        && let Some(
            sqlparser::ast::CreateTableLikeKind::Plain(l)
            | sqlparser::ast::CreateTableLikeKind::Parenthesized(l),
        ) = &ct.like
    {
        c.relation(&l.name);
    }
    c
}

/// Refuses statements that reach past the logical schemas: other physical databases, the
/// backend's own schemas, and the information_schema views of its sessions and grants.
fn check_reachable(statement: &Statement, c: &Collector<'_>) -> Result<(), RouteError> {
    // Only logical schemas are reachable: physical databases of the dataNodes and the backend's
    // own schemas are not (information_schema may be read).
    for q in &c.foreign {
        let lower = q.to_ascii_lowercase();
        if lower == "information_schema" && matches!(statement, Statement::Query(_)) {
            continue;
        }
        if SYSTEM_SCHEMAS.contains(&lower.as_str()) {
            return Err(RouteError {
                code: 1044,
                state: "42000",
                message: format!(
                    "Access denied to database '{q}': the backend servers' own schemas are not reachable through the gateway"
                ),
            });
        }
        return Err(RouteError::unknown_database(q));
    }
    // information_schema views of the backend's sessions and grants are as private as
    // SHOW PROCESSLIST / SHOW GRANTS.
    if let Some(o) = c.occurrences.iter().find(|o| {
        o.qualifier
            .as_deref()
            .is_some_and(|q| q.eq_ignore_ascii_case("information_schema"))
            && (o.name == "PROCESSLIST"
                || o.name.ends_with("PRIVILEGES")
                || o.name.contains("ROLE"))
    }) {
        return Err(RouteError {
            code: 1044,
            state: "42000",
            message: format!(
                "Access denied to information_schema.{} through the gateway",
                o.name
            ),
        });
    }
    Ok(())
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
                insert_route(ctx, statement, occurrences, table.unwrap_or_default())
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
        Statement::CreateTable(ct) => ddl(ctx, &[&ct.name]),
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
    /// Tables' column orders read so far (INSERT without a column list).
    columns: Option<&'a super::ColumnOrders>,
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
