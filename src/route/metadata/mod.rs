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
use super::{Access, Plan, RouteError, Router, Target};

mod postgres;

mod answer;

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
    // MariaDB's: every system variable's session and global value, default, origin and range
    // (what GLOBAL_VARIABLES and SESSION_VARIABLES hold, described).
    "SYSTEM_VARIABLES",
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

#[cfg(test)]
mod tests {
    use super::answer::{case_insensitive, derived};
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
