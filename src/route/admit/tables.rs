//! The tables a statement names and how it uses each (the input of the access check, module
//! `access`), the sequences named by MariaDB's sequence functions among them.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast::{
    AlterTableOperation, CreateTableLikeKind, Expr, FromTable, FunctionArguments, Ident,
    ObjectName, ObjectNamePart, ObjectType, OnInsert, Query, RenameTableNameKind, Statement,
    TableFactor, TableObject, TableWithJoins, Visit, Visitor, visit_expressions,
};
use sqlparser::tokenizer::{Span, Token};

use crate::route::access::TableAccess;

/// One table a statement names: `(schema qualifier as written, table as written)`, and how the
/// statement uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRef {
    pub qualifier: Option<String>,
    pub table: String,
    pub access: TableAccess,
}

/// MariaDB's sequence functions (`NEXT VALUE FOR s` and `PREVIOUS VALUE FOR s` are read as
/// `NEXTVAL(s)` and `LASTVAL(s)`, module `forms`).
pub(super) const SEQUENCE_FUNCTIONS: &[&str] = &["NEXTVAL", "LASTVAL", "SETVAL"];

/// The sequence a call of a sequence function names, and the access MariaDB asks of it; `None`
/// when `f` is no such call or not of MariaDB's shape: `NEXTVAL(s)`, `LASTVAL(s)`,
/// `SETVAL(s, n[, used[, round]])`, `s` a name or `db.s`, plain arguments (no DISTINCT, ORDER
/// BY, FILTER, OVER).
///
/// The privileges are MariaDB 10.11's, as a grant-limited account meets them: NEXTVAL needs
/// INSERT and SELECT on the sequence (the documentation names INSERT; the server also checks
/// SELECT), SETVAL INSERT, LASTVAL SELECT.
pub(in crate::route) fn sequence_of(
    f: &sqlparser::ast::Function,
) -> Option<(ObjectName, &'static [TableAccess])> {
    let [part] = f.name.0.as_slice() else {
        return None;
    };
    let name = part.as_ident()?;
    if name.quote_style.is_some() {
        return None;
    }
    let (arity, access): (std::ops::RangeInclusive<usize>, &'static [TableAccess]) =
        match name.value.to_ascii_uppercase().as_str() {
            "NEXTVAL" => (1..=1, &[TableAccess::Insert, TableAccess::Select]),
            "LASTVAL" => (1..=1, &[TableAccess::Select]),
            "SETVAL" => (2..=4, &[TableAccess::Insert]),
            _ => return None,
        };
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    if list.duplicate_treatment.is_some()
        || !list.clauses.is_empty()
        || f.filter.is_some()
        || f.over.is_some()
        || !f.within_group.is_empty()
        || !matches!(f.parameters, FunctionArguments::None)
        || !arity.contains(&list.args.len())
    {
        return None;
    }
    let sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(first)) =
        &list.args[0]
    else {
        return None;
    };
    let parts = match first {
        Expr::Identifier(i) => vec![i.clone()],
        Expr::CompoundIdentifier(p) if p.len() == 2 => p.clone(),
        _ => return None,
    };
    let object = ObjectName(
        parts
            .into_iter()
            .map(sqlparser::ast::ObjectNamePart::Identifier)
            .collect(),
    );
    Some((object, access))
}

/// Every sequence `statement` names in a sequence function call, in order, with the access
/// MariaDB asks of it ([`sequence_of`]).
pub fn sequence_refs(statement: &Statement) -> Vec<(ObjectName, &'static [TableAccess])> {
    struct Calls(Vec<(ObjectName, &'static [TableAccess])>);
    impl Visitor for Calls {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = e
                && let Some(found) = sequence_of(f)
            {
                self.0.push(found);
            }
            ControlFlow::Continue(())
        }
    }
    let mut calls = Calls(Vec::new());
    let _ = statement.visit(&mut calls);
    calls.0
}

/// The tables the FOREIGN KEY definitions of DDL text `text` name as parents: the name after
/// each unquoted `REFERENCES`, in order, as written (`t`, `db.t`, quotes kept). That covers
/// table constraints (`[CONSTRAINT c] FOREIGN KEY (a) REFERENCES t (id)`), column options
/// (`a INT REFERENCES t (id)`) and ALTER TABLE items (`ADD [CONSTRAINT c] FOREIGN KEY ..`,
/// `ADD COLUMN .. REFERENCES`, `MODIFY ..`). `REFERENCES` is a reserved word to MariaDB, so
/// unquoted it is never a name; reading the tokens rather than the AST leaves no form of the
/// parse that could hide a parent. `None` when the text cannot be tokenized or a `REFERENCES`
/// is followed by no name.
pub(in crate::route) fn foreign_key_targets(text: &str) -> Option<Vec<ObjectName>> {
    let toks = crate::route::rewrite::tokens(text)?;
    let ident = |i: usize| match toks.get(i).map(|t| &t.0) {
        Some(Token::Word(w)) => Some(Ident {
            value: w.value.clone(),
            quote_style: w.quote_style,
            span: Span::empty(),
        }),
        _ => None,
    };
    let mut out = Vec::new();
    for (i, (t, _, _)) in toks.iter().enumerate() {
        let Token::Word(w) = t else { continue };
        if w.quote_style.is_some() || !w.value.eq_ignore_ascii_case("REFERENCES") {
            continue;
        }
        let mut parts = vec![ident(i + 1)?];
        let mut j = i + 1;
        while matches!(toks.get(j + 1).map(|t| &t.0), Some(Token::Period)) {
            parts.push(ident(j + 2)?);
            j += 2;
        }
        out.push(ObjectName(
            parts.into_iter().map(ObjectNamePart::Identifier).collect(),
        ));
    }
    Some(out)
}

/// `(qualifier, table)` of a possibly schema-qualified name.
pub fn split_name(name: &ObjectName) -> (Option<String>, String) {
    let parts: Vec<_> = name.0.iter().filter_map(|p| p.as_ident()).collect();
    let table = parts.last().map(|i| i.value.clone()).unwrap_or_default();
    let qualifier = (parts.len() >= 2).then(|| parts[parts.len() - 2].value.clone());
    (qualifier, table)
}

/// Whether `e` names a column anywhere (an update value that reads the row).
fn reads_columns(e: &Expr) -> bool {
    visit_expressions(e, |x| match x {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// Every table `statement` names and how it uses each (module docs of `access`): the targets
/// of INSERT / UPDATE / DELETE with their kind, every table of DDL as [`TableAccess::Ddl`], and
/// every other table the statement reads (subqueries, joins, UNION branches, derived tables,
/// CTE bodies, INSERT ... SELECT sources, the parents of FOREIGN KEYs a CREATE / ALTER TABLE
/// defines, [`foreign_key_targets`]) as [`TableAccess::Select`]. A table may appear with
/// several accesses, by MariaDB's privilege rules: REPLACE also deletes, ON DUPLICATE KEY
/// UPDATE also updates, and an UPDATE or DELETE that reads columns (WHERE, ORDER BY, a value
/// over columns) also selects. A name that refers to a common table expression where it
/// stands (MariaDB's scoping: a query's WITH names are visible in its body, a CTE body sees
/// only those defined before it, or itself under RECURSIVE) is no table and is left out, as is
/// an unquoted `DUAL`.
pub fn table_refs(statement: &Statement) -> Vec<TableRef> {
    /// The relations of a statement that name tables, with the names of common table
    /// expressions resolved by MariaDB's scoping: a query's WITH names are visible in its body
    /// (and the subqueries there), and in each CTE body only the CTEs defined before it (and
    /// itself, under RECURSIVE). A name is a CTE only where it is visible, so `WITH secret AS
    /// (SELECT * FROM secret) ...` still reads the table `secret`.
    struct Relations {
        names: Vec<ObjectName>,
        /// One frame per query being visited, innermost last.
        frames: Vec<Frame>,
    }
    struct Frame {
        /// The CTE names visible in the query's body.
        body: BTreeSet<String>,
        /// Each CTE body of the query (by address, only compared) and the names it sees.
        ctes: Vec<(*const Query, BTreeSet<String>)>,
    }
    impl Visitor for Relations {
        type Break = ();
        fn pre_visit_relation(&mut self, name: &ObjectName) -> ControlFlow<()> {
            let parts: Vec<_> = name.0.iter().filter_map(|p| p.as_ident()).collect();
            let cte = match parts.as_slice() {
                [one] => self
                    .frames
                    .last()
                    .is_some_and(|f| f.body.contains(&one.value.to_ascii_uppercase())),
                _ => false,
            };
            // Unquoted DUAL is no table; `dual` in backquotes is one.
            let dual = matches!(parts.as_slice(), [one]
                if one.quote_style.is_none() && one.value.eq_ignore_ascii_case("DUAL"));
            if !cte && !dual {
                self.names.push(name.clone());
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
            // What the enclosing query lets `q` see: a CTE body sees the CTEs defined before
            // it (and itself under RECURSIVE), anything else there sees all of them.
            let inherited = match self.frames.last() {
                None => BTreeSet::new(),
                Some(parent) => parent
                    .ctes
                    .iter()
                    .find(|(at, _)| std::ptr::eq(*at, q))
                    .map_or_else(|| parent.body.clone(), |(_, seen)| seen.clone()),
            };
            let mut body = inherited.clone();
            let mut ctes = Vec::new();
            if let Some(with) = &q.with {
                let mut before = inherited;
                for cte in &with.cte_tables {
                    let name = cte.alias.name.value.to_ascii_uppercase();
                    let mut seen = before.clone();
                    if with.recursive {
                        seen.insert(name.clone());
                    }
                    ctes.push((&*cte.query as *const Query, seen));
                    before.insert(name.clone());
                    body.insert(name);
                }
            }
            self.frames.push(Frame { body, ctes });
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.frames.pop();
            ControlFlow::Continue(())
        }
    }
    let mut v = Relations {
        names: Vec::new(),
        frames: Vec::new(),
    };
    let _ = statement.visit(&mut v);
    let mut targets: Vec<(ObjectName, TableAccess)> = Vec::new();
    let joined = |t: &TableWithJoins| -> Vec<ObjectName> {
        std::iter::once(&t.relation)
            .chain(t.joins.iter().map(|j| &j.relation))
            .filter_map(|f| match f {
                TableFactor::Table { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect()
    };
    match statement {
        Statement::Insert(i) => {
            if let TableObject::TableName(n) = &i.table {
                targets.push((n.clone(), TableAccess::Insert));
                // MariaDB's rules: REPLACE may delete, ON DUPLICATE KEY UPDATE updates, and an
                // update value that reads a column reads the table.
                if i.replace_into {
                    targets.push((n.clone(), TableAccess::Delete));
                }
                if let Some(OnInsert::DuplicateKeyUpdate(set)) = &i.on {
                    targets.push((n.clone(), TableAccess::Update));
                    if set.iter().any(|a| reads_columns(&a.value)) {
                        targets.push((n.clone(), TableAccess::Select));
                    }
                }
            }
        }
        Statement::Update(u) => {
            // Reading columns (WHERE, ORDER BY, a value over columns) needs SELECT too, as in
            // MariaDB: otherwise the count of changed rows answers questions about the data.
            let reads = u.selection.is_some()
                || !u.order_by.is_empty()
                || u.assignments.iter().any(|a| reads_columns(&a.value));
            for n in joined(&u.table) {
                targets.push((n.clone(), TableAccess::Update));
                if reads {
                    targets.push((n, TableAccess::Select));
                }
            }
        }
        Statement::Delete(d) => {
            let from = match &d.from {
                FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
            };
            // Multi-table DELETE: every table it joins may lose rows (conservative).
            let reads = d.selection.is_some() || !d.order_by.is_empty();
            for t in from.iter().chain(d.using.iter().flatten()) {
                for n in joined(t) {
                    targets.push((n.clone(), TableAccess::Delete));
                    if reads {
                        targets.push((n, TableAccess::Select));
                    }
                }
            }
            // `DELETE a, b FROM ...` names aliases or tables; as tables they are targets too.
            for n in &d.tables {
                targets.push((n.clone(), TableAccess::Delete));
                v.names.retain(|x| x != n);
            }
        }
        Statement::CreateTable(ct) => {
            targets.push((ct.name.clone(), TableAccess::Ddl));
            match &ct.like {
                Some(CreateTableLikeKind::Plain(l) | CreateTableLikeKind::Parenthesized(l)) => {
                    v.names.push(l.name.clone());
                }
                None => {}
            }
            // A FOREIGN KEY reads its parent: the child's inserts answer which keys exist (and
            // the parent's deletes are blocked). MariaDB asks REFERENCES, which Mycat's dml
            // mask has not; SELECT stands for it.
            v.names
                .extend(foreign_key_targets(&statement.to_string()).unwrap_or_default());
        }
        Statement::AlterTable(at) => {
            targets.push((at.name.clone(), TableAccess::Ddl));
            v.names
                .extend(foreign_key_targets(&statement.to_string()).unwrap_or_default());
            for op in &at.operations {
                if let AlterTableOperation::RenameTable {
                    table_name: RenameTableNameKind::As(n) | RenameTableNameKind::To(n),
                } = op
                {
                    targets.push((n.clone(), TableAccess::Ddl));
                }
            }
        }
        Statement::CreateIndex(ci) => targets.push((ci.table_name.clone(), TableAccess::Ddl)),
        Statement::Truncate(t) => {
            for t in &t.table_names {
                targets.push((t.name.clone(), TableAccess::Ddl));
            }
        }
        Statement::RenameTable(rs) => {
            for r in rs {
                targets.push((r.old_name.clone(), TableAccess::Ddl));
                targets.push((r.new_name.clone(), TableAccess::Ddl));
            }
        }
        Statement::Drop {
            object_type: ObjectType::Table,
            names,
            ..
        } => {
            for n in names {
                targets.push((n.clone(), TableAccess::Ddl));
            }
        }
        Statement::Drop {
            object_type: ObjectType::Index,
            table: Some(t),
            ..
        } => targets.push((t.clone(), TableAccess::Ddl)),
        _ => {}
    }
    // A target is also visited as a relation: each target table takes one of those
    // occurrences (once, however many accesses it has).
    let mut taken: Vec<&ObjectName> = Vec::new();
    for (n, _) in &targets {
        if taken.contains(&n) {
            continue;
        }
        taken.push(n);
        if let Some(i) = v.names.iter().position(|x| x == n) {
            v.names.remove(i);
        }
    }
    let reads = v.names.into_iter().map(|n| (n, TableAccess::Select));
    // Sequences named in sequence functions (`NEXTVAL(s)`): tables to MariaDB's privileges.
    let sequences = sequence_refs(statement)
        .into_iter()
        .flat_map(|(n, access)| access.iter().map(move |a| (n.clone(), *a)));
    targets
        .into_iter()
        .chain(reads)
        .chain(sequences)
        .map(|(n, access)| {
            let (qualifier, table) = split_name(&n);
            TableRef {
                qualifier,
                table,
                access,
            }
        })
        .collect()
}
