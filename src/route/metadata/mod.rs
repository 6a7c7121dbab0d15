//! `information_schema` answered for the logical schemas (issue 7 item 6).
//!
//! GUI tools and ORMs read `information_schema.SCHEMATA`, `TABLES`, `COLUMNS`, `STATISTICS`...
//! Forwarded as written, such a query would list the dataNodes' physical databases and find
//! nothing under a logical schema's name. Instead every reference to such a view is replaced,
//! at its source span, by a derived table the backend computes: the view's own rows restricted
//! to the tables the user's logical schemas hold (each configured table on its first dataNode,
//! and every other table of a schema's default dataNode), with the schema columns answering the
//! logical schema name. The client's select list, `WHERE`, `LIKE`, joins, `ORDER BY`, `LIMIT`
//! are then evaluated by the backend over that derived table exactly as MySQL evaluates them.
//!
//! ```text
//! SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'TESTDB'
//!   → SELECT TABLE_NAME FROM (SELECT v.`TABLE_CATALOG`, 'TESTDB' AS `TABLE_SCHEMA`, ...
//!       FROM information_schema.`TABLES` AS v
//!       WHERE (v.`TABLE_SCHEMA` = 'db1' AND LOWER(v.`TABLE_NAME`) IN ('travelrecord', ...))
//!     ) AS `TABLES` WHERE TABLE_SCHEMA = 'TESTDB'
//! ```
//!
//! The derived table must list the view's columns by name, and they differ between MySQL 5.7,
//! 8.0 and MariaDB: the session asks the node for them first (`SELECT * ... WHERE 1 = 0`) and
//! hands them to [`Router::metadata_plan`], which stays pure.
//!
//! One backend server answers the query (the dataHost of the first MySQL dataNode of the user's
//! schemas, the current schema first). The rows that other MySQL dataHosts hold for the views
//! it reads are fetched from them first and joined to its derived tables as literal rows
//! (`UNION ALL SELECT ...`). Tables on PostgreSQL dataNodes are not listed. Views of routines,
//! triggers, events and views answer no rows (their definitions name physical databases);
//! views that only describe the server (character sets, collations, engines, variables) are
//! read unchanged; any other view answers no rows rather than the physical databases' data.

use std::collections::BTreeMap;
use std::ops::{ControlFlow, Range};
use std::sync::Arc;

use sqlparser::ast::{Statement, TableFactor, Visit, Visitor};

use super::rewrite;
use super::{Access, HostHint, OkMerge, Plan, RouteError, Router, Target};

mod postgres;

/// A view whose rows belong to schemas and are mapped to the logical ones.
#[derive(Debug, PartialEq, Eq)]
struct Mapped {
    name: &'static str,
    /// The column holding the schema a row belongs to (restricted, answers the logical name).
    schema: &'static str,
    /// The column holding the table a row belongs to, for views with one.
    table: Option<&'static str>,
    /// Other columns naming a schema: answer the logical name too (NULL stays NULL).
    also: &'static [&'static str],
}

const MAPPED: &[Mapped] = &[
    Mapped {
        name: "SCHEMATA",
        schema: "SCHEMA_NAME",
        table: None,
        also: &[],
    },
    Mapped {
        name: "TABLES",
        schema: "TABLE_SCHEMA",
        table: Some("TABLE_NAME"),
        also: &[],
    },
    Mapped {
        name: "COLUMNS",
        schema: "TABLE_SCHEMA",
        table: Some("TABLE_NAME"),
        also: &[],
    },
    Mapped {
        name: "STATISTICS",
        schema: "TABLE_SCHEMA",
        table: Some("TABLE_NAME"),
        also: &["INDEX_SCHEMA"],
    },
    Mapped {
        name: "TABLE_CONSTRAINTS",
        schema: "TABLE_SCHEMA",
        table: Some("TABLE_NAME"),
        also: &["CONSTRAINT_SCHEMA"],
    },
    Mapped {
        name: "KEY_COLUMN_USAGE",
        schema: "TABLE_SCHEMA",
        table: Some("TABLE_NAME"),
        also: &["CONSTRAINT_SCHEMA", "REFERENCED_TABLE_SCHEMA"],
    },
    Mapped {
        name: "REFERENTIAL_CONSTRAINTS",
        schema: "CONSTRAINT_SCHEMA",
        table: Some("TABLE_NAME"),
        also: &["UNIQUE_CONSTRAINT_SCHEMA"],
    },
    Mapped {
        name: "PARTITIONS",
        schema: "TABLE_SCHEMA",
        table: Some("TABLE_NAME"),
        also: &[],
    },
    Mapped {
        name: "COLUMNS_EXTENSIONS",
        schema: "TABLE_SCHEMA",
        table: Some("TABLE_NAME"),
        also: &[],
    },
];

/// Views that describe the server, not any database: read as they are.
const SERVER_VIEWS: &[&str] = &[
    "CHARACTER_SETS",
    "COLLATIONS",
    "COLLATION_CHARACTER_SET_APPLICABILITY",
    "ENGINES",
    "PLUGINS",
    "KEYWORDS",
    "SQL_FUNCTIONS",
    "GLOBAL_STATUS",
    "GLOBAL_VARIABLES",
    "SESSION_STATUS",
    "SESSION_VARIABLES",
    "PROFILING",
    "SPATIAL_REF_SYS",
    "ST_SPATIAL_REFERENCE_SYSTEMS",
    "ST_UNITS_OF_MEASURE",
];

/// How one view reference is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// Index into [`MAPPED`].
    Mapped(usize),
    /// The view's columns, no rows.
    Empty,
}

/// One `information_schema.X` reference of the statement.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ViewRef {
    /// Byte range of `information_schema.X` in the statement.
    range: Range<usize>,
    /// The view name as written (the derived table's alias when the statement gives none).
    written: String,
    alias: bool,
    kind: Kind,
}

/// A query over `information_schema` views, to be answered for the user's logical schemas
/// (see the module documentation). Built by routing; turned into a [`Plan`] by
/// [`Router::metadata_plan`] once the session knows the user's schemas and the views' columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataQuery {
    sql: String,
    /// Fixed replacements (`DATABASE()` → the session's schema).
    texts: Vec<(Range<usize>, String)>,
    views: Vec<ViewRef>,
    /// A schema the user must be allowed to use (`SHOW TABLES FROM db`).
    requires: Option<String>,
}

impl MetadataQuery {
    /// The (upper-cased) views whose column lists [`Router::metadata_plan`] needs.
    pub fn views_to_describe(&self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = self
            .views
            .iter()
            .filter_map(|r| match r.kind {
                Kind::Mapped(i) => Some(MAPPED[i].name),
                Kind::Empty => None,
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The statement as the client wrote it.
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// The logical schema the statement is about, which the user must be allowed to use
    /// (`SHOW TABLES FROM db`); `None` for plain queries, which see only the user's schemas.
    pub fn required_schema(&self) -> Option<&str> {
        self.requires.as_deref()
    }

    /// This query, answered only when the user may use `schema`.
    pub(super) fn requiring(mut self, schema: &str) -> Self {
        self.requires = Some(schema.to_string());
        self
    }
}

/// `true` for `information_schema` (any case).
pub(super) fn is_information_schema(name: &str) -> bool {
    name.eq_ignore_ascii_case("information_schema")
}

/// Collects the `information_schema.X` table references of a statement with their spans.
struct Views<'a> {
    sql: &'a str,
    found: Vec<ViewRef>,
    /// A reference whose span could not be placed in the text.
    unplaced: bool,
}

impl Visitor for Views<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, f: &TableFactor) -> ControlFlow<()> {
        let TableFactor::Table { name, alias, .. } = f else {
            return ControlFlow::Continue(());
        };
        let parts: Vec<_> = name.0.iter().filter_map(|p| p.as_ident()).collect();
        // `information_schema.X`, also behind a catalog (`def.information_schema.X`).
        let n = parts.len();
        if n < 2 || !is_information_schema(&parts[n - 2].value) {
            return ControlFlow::Continue(());
        }
        let view = parts[n - 1];
        let start = rewrite::offset(self.sql, parts[0].span.start);
        let end = rewrite::offset(self.sql, view.span.end);
        let (Some(start), Some(end)) = (start, end) else {
            self.unplaced = true;
            return ControlFlow::Continue(());
        };
        let upper = view.value.to_ascii_uppercase();
        if SERVER_VIEWS.contains(&upper.as_str()) {
            return ControlFlow::Continue(());
        }
        let kind = match MAPPED.iter().position(|m| m.name == upper) {
            Some(i) => Kind::Mapped(i),
            None => Kind::Empty,
        };
        self.found.push(ViewRef {
            range: start..end,
            written: view.value.clone(),
            alias: alias.is_some(),
            kind,
        });
        ControlFlow::Continue(())
    }
}

/// The metadata query of a parsed SELECT that reads `information_schema` (and nothing else but
/// CTEs and `DUAL`, which `others` must already exclude). `schema` is the session's schema:
/// `DATABASE()` answers it.
///
/// Errors: 1064 when the statement also reads tables of a logical schema (the two live in
/// different places), or a view's position in the text cannot be found.
pub(super) fn analyze(
    stmt: &str,
    statement: &Statement,
    others: &[String],
    schema: Option<&str>,
) -> Result<MetadataQuery, RouteError> {
    if let Some(t) = others.first() {
        return Err(RouteError::syntax(format!(
            "a query of information_schema cannot also read table {t}: run them separately"
        )));
    }
    let mut v = Views {
        sql: stmt,
        found: Vec::new(),
        unplaced: false,
    };
    let _ = statement.visit(&mut v);
    if v.unplaced {
        return Err(RouteError::syntax(
            "this information_schema query cannot be rewritten for the logical schemas",
        ));
    }
    let database = match schema {
        Some(s) => quote_literal(s),
        None => "NULL".to_string(),
    };
    let texts = rewrite::database_calls(stmt)
        .into_iter()
        .map(|r| (r, database.clone()))
        .collect();
    Ok(MetadataQuery {
        sql: stmt.to_string(),
        texts,
        views: v.found,
        requires: None,
    })
}

/// A SQL string literal (MySQL's default escaping: backslash and quote).
pub(super) fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// `'a', 'b', ...`: the names as a list of SQL string literals.
pub(super) fn literal_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| quote_literal(n))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A backquoted identifier.
pub(super) fn quote_ident(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

/// Who reads `information_schema`: the logical schemas the user may use, and its access (whose
/// `<privileges>` hide the tables they deny everything on).
#[derive(Debug, Clone, Copy)]
pub struct Viewer<'a> {
    pub schemas: &'a [String],
    pub access: Option<&'a Access>,
}

/// Which physical rows one logical schema owns on the answering server.
#[derive(Debug, Default)]
struct Scope {
    logical: String,
    /// The schema's default dataNode's database: every table there but the configured ones.
    default_db: Option<String>,
    /// Every configured table name of the schema (lower-cased), excluded from `default_db`.
    configured: Vec<String>,
    /// Physical database → lower-cased names of the configured tables whose first dataNode it is.
    tables: BTreeMap<String, Vec<String>>,
}

impl Scope {
    /// The database whose SCHEMATA row describes the schema.
    fn representative(&self) -> Option<&str> {
        self.default_db
            .as_deref()
            .or_else(|| self.tables.keys().next().map(String::as_str))
    }

    /// The condition selecting this schema's rows of view `m` (aliased `v`); `None` when the
    /// schema has nothing on this server.
    fn condition(&self, m: &Mapped) -> Option<String> {
        let s = format!("v.{}", quote_ident(m.schema));
        let Some(table) = m.table else {
            return self
                .representative()
                .map(|db| format!("{s} = {}", quote_literal(db)));
        };
        let t = format!("LOWER(v.{})", quote_ident(table));
        let list = literal_list;
        let mut parts = Vec::new();
        if let Some(db) = &self.default_db {
            parts.push(if self.configured.is_empty() {
                format!("{s} = {}", quote_literal(db))
            } else {
                format!(
                    "({s} = {} AND {t} NOT IN ({}))",
                    quote_literal(db),
                    list(&self.configured)
                )
            });
        }
        for (db, names) in &self.tables {
            parts.push(format!(
                "({s} = {} AND {t} IN ({}))",
                quote_literal(db),
                list(names)
            ));
        }
        (!parts.is_empty()).then(|| parts.join(" OR "))
    }
}

impl Router {
    /// The dataNode that answers metadata queries for a user who may see `visible` schemas:
    /// the first MySQL dataNode of the current schema (its default node first), else of the
    /// first visible schema that has one. `None` when every visible schema is on PostgreSQL.
    pub fn metadata_node(&self, current: Option<&str>, visible: &[String]) -> Option<String> {
        for name in current_first(current, visible) {
            let Some(s) = self.schema(name) else { continue };
            let found = s
                .default_node
                .iter()
                .chain(s.nodes.iter())
                .find(|n| self.is_mysql(n));
            if let Some(n) = found {
                return Some(n.clone());
            }
        }
        None
    }

    /// `true` when `node` is on a MySQL dataHost.
    fn is_mysql(&self, node: &str) -> bool {
        self.hosts.get(node).is_some_and(|(_, mysql)| *mysql)
    }

    fn same_host(&self, a: &str, b: &str) -> bool {
        match (self.hosts.get(a), self.hosts.get(b)) {
            (Some((x, _)), Some((y, _))) => x == y,
            _ => false,
        }
    }

    /// Whether one connection to `b` reads the catalog rows of `a`'s tables: the same MySQL
    /// dataHost (its `information_schema` covers every database), or the same PostgreSQL
    /// database of the same dataHost (a PostgreSQL connection sees one database).
    fn same_server(&self, a: &str, b: &str) -> bool {
        self.same_host(a, b) && (self.is_mysql(b) || self.database_of(a) == self.database_of(b))
    }

    /// The PostgreSQL dataNode that answers metadata queries when no visible schema has a
    /// MySQL dataNode ([`Router::metadata_node`]): the first PostgreSQL dataNode of the
    /// current schema (its default node first), else of the first visible schema.
    pub fn metadata_postgres_node(
        &self,
        current: Option<&str>,
        visible: &[String],
    ) -> Option<String> {
        for name in current_first(current, visible) {
            let Some(s) = self.schema(name) else { continue };
            let first = s
                .default_node
                .iter()
                .chain(s.tables.values().filter_map(|t| t.nodes.first()))
                .find(|n| !self.is_mysql(n));
            if let Some(n) = first {
                return Some(n.clone());
            }
        }
        None
    }

    /// The PostgreSQL databases (each as its first dataNode) holding tables of the `visible`
    /// schemas, other than `main`'s: each answers its rows of the views a query reads
    /// ([`Router::metadata_fetch_postgres`]).
    pub fn metadata_postgres_nodes(&self, visible: &[String], main: &str) -> Vec<String> {
        self.other_servers(visible, main, false)
    }

    /// The columns of view `view` as a PostgreSQL dataNode answers them (MySQL 5.7's), or
    /// `None` for a view it does not answer.
    pub fn metadata_postgres_columns(view: &str) -> Option<Arc<[String]>> {
        postgres::columns(view).map(|c| c.iter().map(|s| s.to_string()).collect())
    }

    /// The statement that reads, on the PostgreSQL dataNode `node`, the rows of view `view`
    /// the `visible` schemas own in its database, as the columns `main_columns` (a column it
    /// does not answer reads NULL). `None` when they own nothing there or the view is not
    /// answered from PostgreSQL.
    pub fn metadata_fetch_postgres(
        &self,
        view: &str,
        main_columns: &[String],
        viewer: &Viewer<'_>,
        node: &str,
    ) -> Option<String> {
        let m = MAPPED.iter().find(|m| m.name == view)?;
        let own = postgres::columns(view)?;
        let database = self.database_of(node)?;
        let scopes = self.scopes(viewer.schemas, node, viewer.access);
        let owns = scopes.iter().any(|s| {
            if m.table.is_none() {
                s.representative() == Some(database)
            } else {
                s.default_db.as_deref() == Some(database) || s.tables.contains_key(database)
            }
        });
        if !owns {
            return None;
        }
        let derived = postgres::derived(m, &scopes, database)?;
        let list = main_columns
            .iter()
            .map(|c| match own.iter().find(|x| x.eq_ignore_ascii_case(c)) {
                Some(x) => format!("d.{x}"),
                None => format!("CAST(NULL AS CHAR) AS {}", quote_ident(c)),
            })
            .collect::<Vec<_>>()
            .join(", ");
        Some(format!("SELECT {list} FROM ({derived}) AS d"))
    }

    /// What each visible schema owns on the server of `node`, less the tables `access` denies
    /// every access to (MariaDB shows an account no table it holds no privilege on): those
    /// named in `<privileges>` with `dml="0000"`, and, under a schema-level `0000`, every
    /// configured table without an entry of its own and the whole default dataNode.
    fn scopes(&self, visible: &[String], node: &str, access: Option<&Access>) -> Vec<Scope> {
        let mut out = Vec::new();
        for name in visible {
            let Some(s) = self.schema(name) else { continue };
            let mut scope = Scope {
                logical: s.name.clone(),
                ..Scope::default()
            };
            let denied = access.map(|a| a.denied(name)).unwrap_or_default();
            scope.default_db = s
                .default_node
                .as_deref()
                .filter(|d| self.same_server(d, node))
                .filter(|_| !denied.whole_schema)
                .and_then(|d| self.database_of(d))
                .map(str::to_string);
            // Denied tables of the default dataNode are left out like configured ones.
            scope.configured.extend(denied.tables.iter().cloned());
            for t in s.tables.values() {
                let lower = t.name.to_ascii_lowercase();
                scope.configured.push(lower.clone());
                if access.is_some_and(|a| a.denies_all(name, &t.name)) {
                    continue;
                }
                let Some(first) = t.nodes.first() else {
                    continue;
                };
                if !self.same_server(first, node) {
                    continue;
                }
                if let Some(db) = self.database_of(first) {
                    scope.tables.entry(db.to_string()).or_default().push(lower);
                }
            }
            out.push(scope);
        }
        out
    }

    /// The other MySQL dataHosts holding tables of the `visible` schemas than the one of
    /// `main`, each as the first such dataNode: their rows of the views a query reads are
    /// fetched with [`Router::metadata_fetch`] and carried into the query run on `main`.
    pub fn metadata_other_nodes(&self, visible: &[String], main: &str) -> Vec<String> {
        self.other_servers(visible, main, true)
    }

    /// The first dataNode of each server (MySQL dataHost, or PostgreSQL database: see
    /// [`Router::same_server`]) of kind `mysql` holding tables of the `visible` schemas, other
    /// than `main`'s.
    fn other_servers(&self, visible: &[String], main: &str, mysql: bool) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for name in visible {
            let Some(s) = self.schema(name) else { continue };
            let firsts = s
                .default_node
                .iter()
                .chain(s.tables.values().filter_map(|t| t.nodes.first()));
            for n in firsts {
                if self.is_mysql(n) == mysql
                    && !self.same_server(n, main)
                    && !out.iter().any(|o| self.same_server(n, o))
                {
                    out.push(n.clone());
                }
            }
        }
        out
    }

    /// The statement that reads, on the server of `node`, the rows of mapped view `view` that
    /// the `visible` schemas own there, as the columns `main_columns` of the answering node
    /// `main`
    /// (a column this server lacks reads NULL; `columns` are its own). `None` when the schemas
    /// own nothing there or the view is not mapped.
    ///
    /// Errors: 1105 when this server's view lacks the columns the mapping needs.
    pub fn metadata_fetch(
        &self,
        view: &str,
        main_columns: &[String],
        columns: &[String],
        viewer: &Viewer<'_>,
        main: &str,
        node: &str,
    ) -> Result<Option<String>, RouteError> {
        let visible = viewer.schemas;
        let Some(m) = MAPPED.iter().find(|m| m.name == view) else {
            return Ok(None);
        };
        let mut scopes = self.scopes(visible, node, viewer.access);
        if m.table.is_none() {
            // One SCHEMATA row per schema: from the first server that has one for it (the
            // answering node's, then the others in order).
            let hosts: Vec<String> = std::iter::once(main.to_string())
                .chain(self.metadata_other_nodes(visible, main))
                .collect();
            scopes.retain(|s| {
                hosts
                    .iter()
                    .find(|h| {
                        self.scopes(std::slice::from_ref(&s.logical), h, viewer.access)
                            .iter()
                            .any(|x| x.representative().is_some())
                    })
                    .is_some_and(|h| self.same_host(h, node))
            });
        }
        if scopes.iter().all(|s| s.condition(m).is_none()) {
            return Ok(None);
        }
        let sql = derived(m, columns, &scopes)?;
        let list = main_columns
            .iter()
            .map(
                |c| match columns.iter().find(|x| x.eq_ignore_ascii_case(c)) {
                    Some(x) => format!("d.{}", quote_ident(x)),
                    None => format!("NULL AS {}", quote_ident(c)),
                },
            )
            .collect::<Vec<_>>()
            .join(", ");
        Ok(Some(format!("SELECT {list} FROM ({sql}) AS d")))
    }

    /// The plan that answers `q` on `node` for a user who may see the `visible` schemas;
    /// `columns` gives each mapped view's column names as the node reports them, `fetched`
    /// the rows other dataHosts hold for it ([`Router::metadata_fetch`]), each value as an SQL
    /// literal, in that column order.
    ///
    /// Errors: 1105 when a view's columns are unknown, or lack the column the mapping needs.
    pub fn metadata_plan(
        &self,
        q: &MetadataQuery,
        viewer: &Viewer<'_>,
        node: &str,
        columns: &dyn Fn(&str) -> Option<Arc<[String]>>,
        fetched: &dyn Fn(&str) -> Vec<Vec<String>>,
    ) -> Result<Plan, RouteError> {
        let scopes = self.scopes(viewer.schemas, node, viewer.access);
        // On PostgreSQL the derived tables come from its catalog, and their names stay
        // unquoted: PostgreSQL folds them as it folds the client's unquoted references.
        let postgresql = !self.is_mysql(node);
        let column_name = |c: &str| {
            if postgresql && c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_') {
                c.to_string()
            } else {
                quote_ident(c)
            }
        };
        let mut edits: Vec<(Range<usize>, String)> = q.texts.clone();
        for v in &q.views {
            let derived = match v.kind {
                Kind::Empty => format!(
                    "(SELECT * FROM information_schema.{} WHERE 1 = 0)",
                    quote_ident(&v.written)
                ),
                Kind::Mapped(i) => {
                    let m = &MAPPED[i];
                    let cols = columns(m.name).ok_or_else(|| RouteError {
                        code: 1105,
                        state: "HY000",
                        message: format!(
                            "the columns of information_schema.{} are unknown",
                            m.name
                        ),
                    })?;
                    let mut text = if postgresql {
                        let database = self.database_of(node).unwrap_or_default();
                        postgres::derived(m, &scopes, database).ok_or_else(|| RouteError {
                            code: 1235,
                            state: "42000",
                            message: format!(
                                "information_schema.{} is not answered on a PostgreSQL dataNode",
                                m.name
                            ),
                        })?
                    } else {
                        derived(m, &cols, &scopes)?
                    };
                    for row in fetched(m.name) {
                        if row.len() != cols.len() {
                            return Err(RouteError {
                                code: 1105,
                                state: "HY000",
                                message: format!(
                                    "a dataHost answered {} columns of information_schema.{} instead of {}",
                                    row.len(),
                                    m.name,
                                    cols.len()
                                ),
                            });
                        }
                        let items: Vec<String> = row
                            .iter()
                            .zip(cols.iter())
                            .map(|(v, c)| format!("{v} AS {}", column_name(c)))
                            .collect();
                        text.push_str(" UNION ALL SELECT ");
                        text.push_str(&items.join(", "));
                    }
                    format!("({text})")
                }
            };
            let text = if v.alias {
                derived
            } else {
                format!("{derived} AS {}", column_name(&v.written))
            };
            edits.push((v.range.clone(), text));
        }
        if postgresql {
            edits.extend(case_insensitive(&q.sql));
        }
        edits.sort_by_key(|(r, _)| r.start);
        let mut sql = String::with_capacity(q.sql.len() + 512);
        let mut at = 0;
        for (r, text) in &edits {
            if r.start < at {
                continue;
            }
            sql.push_str(&q.sql[at..r.start]);
            sql.push_str(text);
            at = r.end;
        }
        sql.push_str(&q.sql[at..]);
        Ok(Plan {
            tables: Default::default(),
            targets: vec![Target {
                node: node.to_string(),
                sql: Arc::from(sql),
            }],
            read_only: true,
            ok_merge: OkMerge::Sum,
            merge: None,
            fallback: Vec::new(),
            ddl: false,
            host: HostHint::None,
            server_variables: false,
        })
    }
}

/// The `visible` schemas, the `current` one first when it is one of them.
fn current_first<'a>(
    current: Option<&'a str>,
    visible: &'a [String],
) -> impl Iterator<Item = &'a str> {
    current
        .filter(|c| visible.iter().any(|v| v == c))
        .into_iter()
        .chain(visible.iter().map(String::as_str))
}

/// The derived table of view `m`: one SELECT per schema with rows on this server, the schema
/// columns answering the logical name.
fn derived(m: &Mapped, columns: &[String], scopes: &[Scope]) -> Result<String, RouteError> {
    let has = |c: &str| columns.iter().any(|x| x.eq_ignore_ascii_case(c));
    if !has(m.schema) || m.table.is_some_and(|t| !has(t)) {
        return Err(RouteError {
            code: 1105,
            state: "HY000",
            message: format!(
                "information_schema.{} of this server lacks the columns the gateway maps",
                m.name
            ),
        });
    }
    let select = |logical: Option<&str>| {
        columns
            .iter()
            .map(|c| {
                let q = quote_ident(c);
                match logical {
                    Some(l) if c.eq_ignore_ascii_case(m.schema) => {
                        format!("{} AS {q}", quote_literal(l))
                    }
                    Some(l) if m.also.iter().any(|a| c.eq_ignore_ascii_case(a)) => format!(
                        "CASE WHEN v.{q} IS NULL THEN NULL ELSE {} END AS {q}",
                        quote_literal(l)
                    ),
                    _ => format!("v.{q}"),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let from = format!("information_schema.{} AS v", quote_ident(m.name));
    let parts: Vec<String> = scopes
        .iter()
        .filter_map(|s| {
            let cond = s.condition(m)?;
            Some(format!(
                "SELECT {} FROM {from} WHERE {cond}",
                select(Some(&s.logical))
            ))
        })
        .collect();
    if parts.is_empty() {
        return Ok(format!("SELECT {} FROM {from} WHERE 1 = 0", select(None)));
    }
    Ok(parts.join(" UNION ALL "))
}

/// Text edits that make the client's comparisons of a column with string literals ignore
/// case (`IS_NULLABLE = 'yes'` → `LOWER(IS_NULLABLE) = 'yes'`; also `<>`, `IN (..)` and
/// `LIKE`), for a metadata query answered by PostgreSQL: MySQL compares `information_schema`
/// values under a case-insensitive collation (drivers rely on it: MariaDB Connector/J's
/// `getColumns` tests `IS_NULLABLE = 'yes'`), PostgreSQL's "C" collation compares bytes.
fn case_insensitive(sql: &str) -> Vec<(Range<usize>, String)> {
    use sqlparser::ast::{BinaryOperator, Expr, InTarget, Spanned, Value};
    let Ok(statements) =
        sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::MySqlDialect {}, sql)
    else {
        return Vec::new();
    };
    let range = |e: &Expr| {
        let span = e.span();
        Some(rewrite::offset(sql, span.start)?..rewrite::offset(sql, span.end)?)
    };
    let column = |e: &Expr| matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_));
    // A literal with an escape is left out, and with it its whole comparison: lower-casing
    // the escape (`\N`) would change the value.
    let literal = |e: &Expr| {
        matches!(e, Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)))
            && range(e).is_some_and(|r| !sql[r].contains('\\'))
    };
    let mut edits = Vec::new();
    let lower = |e: &Expr, edits: &mut Vec<(Range<usize>, String)>| {
        if let Some(r) = range(e) {
            let text = &sql[r.clone()];
            let new = if literal(e) {
                text.to_lowercase()
            } else {
                format!("LOWER({text})")
            };
            edits.push((r, new));
        }
    };
    for statement in &statements {
        let _ = sqlparser::ast::visit_expressions(statement, |e: &Expr| {
            match e {
                Expr::BinaryOp {
                    left,
                    op: BinaryOperator::Eq | BinaryOperator::NotEq,
                    right,
                } if (column(left) && literal(right)) || (literal(left) && column(right)) => {
                    lower(left, &mut edits);
                    lower(right, &mut edits);
                }
                Expr::Like { expr, pattern, .. } if column(expr) && literal(pattern) => {
                    lower(expr, &mut edits);
                    lower(pattern, &mut edits);
                }
                Expr::In {
                    expr,
                    target: InTarget::List(list),
                    ..
                } if column(expr) && !list.is_empty() && list.iter().all(literal) => {
                    lower(expr, &mut edits);
                    for l in list {
                        lower(l, &mut edits);
                    }
                }
                _ => {}
            }
            ControlFlow::<()>::Continue(())
        });
    }
    edits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_with_strings_ignore_case_unless_the_literal_has_an_escape() {
        let sql = "SELECT x FROM t WHERE a = 'YES' AND b LIKE 'Ab%' AND c IN ('X') AND d = '\\N'";
        let mut edits = case_insensitive(sql);
        edits.sort_by_key(|(r, _)| r.start);
        let texts: Vec<&str> = edits.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(
            texts,
            ["LOWER(a)", "'yes'", "LOWER(b)", "'ab%'", "LOWER(c)", "'x'"]
        );
    }

    #[test]
    fn literals_and_identifiers_are_escaped() {
        assert_eq!(quote_literal("a'b\\c"), "'a''b\\\\c'");
        assert_eq!(quote_ident("a`b"), "`a``b`");
    }

    #[test]
    fn condition_excludes_configured_tables_from_the_default_database() {
        let s = Scope {
            logical: "L".into(),
            default_db: Some("d0".into()),
            configured: vec!["t1".into(), "t2".into()],
            tables: BTreeMap::from([("d1".to_string(), vec!["t1".to_string()])]),
        };
        let c = s.condition(&MAPPED[1]).unwrap();
        assert_eq!(
            c,
            "(v.`TABLE_SCHEMA` = 'd0' AND LOWER(v.`TABLE_NAME`) NOT IN ('t1', 't2')) OR (v.`TABLE_SCHEMA` = 'd1' AND LOWER(v.`TABLE_NAME`) IN ('t1'))"
        );
        assert_eq!(s.condition(&MAPPED[0]).unwrap(), "v.`SCHEMA_NAME` = 'd0'");
        assert_eq!(Scope::default().condition(&MAPPED[1]), None);
    }

    #[test]
    fn derived_maps_schema_columns_and_keeps_others() {
        let s = Scope {
            logical: "TESTDB".into(),
            tables: BTreeMap::from([("db1".to_string(), vec!["t".to_string()])]),
            ..Scope::default()
        };
        let cols: Vec<String> = [
            "TABLE_CATALOG",
            "TABLE_SCHEMA",
            "TABLE_NAME",
            "INDEX_SCHEMA",
        ]
        .map(String::from)
        .to_vec();
        let d = derived(&MAPPED[3], &cols, &[s]).unwrap();
        assert_eq!(
            d,
            "SELECT v.`TABLE_CATALOG`, 'TESTDB' AS `TABLE_SCHEMA`, v.`TABLE_NAME`, CASE WHEN v.`INDEX_SCHEMA` IS NULL THEN NULL ELSE 'TESTDB' END AS `INDEX_SCHEMA` FROM information_schema.`STATISTICS` AS v WHERE (v.`TABLE_SCHEMA` = 'db1' AND LOWER(v.`TABLE_NAME`) IN ('t'))"
        );
        let none = derived(&MAPPED[3], &cols, &[]).unwrap();
        assert!(none.ends_with("WHERE 1 = 0"), "{none}");
        assert!(derived(&MAPPED[3], &cols[..1], &[]).is_err());
    }
}
