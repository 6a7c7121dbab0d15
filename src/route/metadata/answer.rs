//! The router's side of `information_schema`: which dataNode answers a metadata query, and the
//! statement rewritten with one derived table per view reference (the view's rows restricted to
//! the user's logical schemas).

use super::*;
use crate::route::Refusal;

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
    pub(super) fn is_mysql(&self, node: &str) -> bool {
        self.hosts.get(node).is_some_and(|(_, mysql)| *mysql)
    }

    pub(super) fn same_host(&self, a: &str, b: &str) -> bool {
        match (self.hosts.get(a), self.hosts.get(b)) {
            (Some((x, _)), Some((y, _))) => x == y,
            _ => false,
        }
    }

    /// Whether one connection to `b` reads the catalog rows of `a`'s tables: the same MySQL
    /// dataHost (its `information_schema` covers every database), or the same PostgreSQL
    /// database of the same dataHost (a PostgreSQL connection sees one database).
    pub(super) fn same_server(&self, a: &str, b: &str) -> bool {
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
    pub(super) fn scopes(
        &self,
        visible: &[String],
        node: &str,
        access: Option<&Access>,
    ) -> Vec<Scope> {
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
    pub(super) fn other_servers(&self, visible: &[String], main: &str, mysql: bool) -> Vec<String> {
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
                    let cols = columns(m.name).ok_or_else(|| {
                        RouteError::new(
                            Refusal::MetadataMismatch,
                            format!("the columns of information_schema.{} are unknown", m.name),
                        )
                    })?;
                    let mut text = if postgresql {
                        let database = self.database_of(node).unwrap_or_default();
                        postgres::derived(m, &scopes, database).ok_or_else(|| RouteError::new(Refusal::NotSupported, format!(
                                "information_schema.{} is not answered on a PostgreSQL dataNode",
                                m.name
                            )))?
                    } else {
                        derived(m, &cols, &scopes)?
                    };
                    for row in fetched(m.name) {
                        if row.len() != cols.len() {
                            return Err(RouteError::new(
                                Refusal::MetadataMismatch,
                                format!(
                                    "a dataHost answered {} columns of information_schema.{} instead of {}",
                                    row.len(),
                                    m.name,
                                    cols.len()
                                ),
                            ));
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
        Ok(Plan::read(vec![Target {
            node: node.to_string(),
            sql: Arc::from(sql),
        }]))
    }
}

/// The `visible` schemas, the `current` one first when it is one of them.
pub(super) fn current_first<'a>(
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
pub(super) fn derived(
    m: &Mapped,
    columns: &[String],
    scopes: &[Scope],
) -> Result<String, RouteError> {
    let has = |c: &str| columns.iter().any(|x| x.eq_ignore_ascii_case(c));
    if !has(m.schema) || m.table.is_some_and(|t| !has(t)) {
        return Err(RouteError::new(
            Refusal::MetadataMismatch,
            format!(
                "information_schema.{} of this server lacks the columns the gateway maps",
                m.name
            ),
        ));
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
pub(super) fn case_insensitive(sql: &str) -> Vec<(Range<usize>, String)> {
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
