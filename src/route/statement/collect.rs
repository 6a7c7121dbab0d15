//! Table collection: the tables, CTE names, sequences and schema qualifiers a parsed statement
//! names, and the refusal of what lies past the logical schemas.

use super::*;
use crate::route::Refusal;

/// A table named in the statement, where it stands, and how it may be qualified.
#[derive(Debug)]
pub(super) struct Occurrence {
    /// Upper-cased table name.
    pub(super) name: String,
    /// Schema qualifier as written, if any.
    pub(super) qualifier: Option<String>,
    pub(super) alias: Option<String>,
    /// Query nesting depth (0 for DML targets, 1 for a top-level SELECT's FROM).
    pub(super) depth: usize,
    /// The sequence of a sequence function (`NEXTVAL(s)`), not a table the statement reads.
    pub(super) sequence: bool,
}

/// Collects table occurrences, CTE names and the spans of logical-schema qualifiers.
pub(super) struct Collector<'a> {
    schema_names: &'a dyn Fn(&str) -> bool,
    pub(super) occurrences: Vec<Occurrence>,
    pub(super) ctes: BTreeSet<String>,
    pub(super) qualifier_spans: Vec<Span>,
    /// Logical schemas named as qualifiers.
    pub(super) qualifiers: BTreeSet<String>,
    /// Qualifiers that name no logical schema (physical or system databases).
    foreign: BTreeSet<String>,
    /// MariaDB sequences named in sequence functions (`NEXTVAL(s)`), each also an
    /// [`Occurrence`] (a table to routing).
    pub(super) sequences: Vec<sequence::Named>,
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

/// The tables, CTEs and schema qualifiers `statement` names.
pub(super) fn collect<'a>(
    is_schema: &'a dyn Fn(&str) -> bool,
    statement: &Statement,
) -> Collector<'a> {
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
pub(super) fn check_reachable(statement: &Statement, c: &Collector<'_>) -> Result<(), RouteError> {
    // Only logical schemas are reachable: physical databases of the dataNodes and the backend's
    // own schemas are not (information_schema may be read).
    for q in &c.foreign {
        let lower = q.to_ascii_lowercase();
        if lower == "information_schema" && matches!(statement, Statement::Query(_)) {
            continue;
        }
        if SYSTEM_SCHEMAS.contains(&lower.as_str()) {
            return Err(RouteError::new(
                Refusal::DatabaseAccessDenied,
                format!(
                    "Access denied to database '{q}': the backend servers' own schemas are not reachable through the gateway"
                ),
            ));
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
        return Err(RouteError::new(
            Refusal::DatabaseAccessDenied,
            format!(
                "Access denied to information_schema.{} through the gateway",
                o.name
            ),
        ));
    }
    Ok(())
}
