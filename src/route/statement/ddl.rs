//! Table DDL: the dataNodes a CREATE/ALTER/DROP/TRUNCATE/RENAME reaches.

use super::*;

pub(super) fn is_ddl(s: &Statement) -> bool {
    matches!(
        s,
        Statement::CreateTable(_)
            | Statement::AlterTable(_)
            | Statement::CreateIndex(_)
            | Statement::Truncate(_)
            | Statement::RenameTable(_)
            | Statement::Drop {
                object_type: ObjectType::Table | ObjectType::Index,
                ..
            }
    )
}

/// CREATE TABLE. With a query (`CREATE TABLE t [..] [AS] SELECT ..`) the table is filled with
/// the query's rows on every node the DDL reaches, so it runs only where one node holds the
/// table and every row the query reads: a table on one dataNode (an undeclared table of a schema
/// with a default dataNode, or one configured on one node), reading only tables whose rows are
/// all on that node (undeclared ones there, tables on that node alone, global tables it is one
/// of). Without a query (`LIKE`, column definitions) it is [`ddl`].
///
/// Errors: 1064 naming the table (sharded or global: every node would get every row read) or
/// the tables the query reads elsewhere.
pub(super) fn create_table(
    ctx: &Ctx<'_>,
    ct: &sqlparser::ast::CreateTable,
    occurrences: &[Occurrence],
) -> Result<Routed, RouteError> {
    if ct.query.is_none() {
        return ddl(ctx, &[&ct.name]);
    }
    let table = ct
        .name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.to_ascii_uppercase())
        .unwrap_or_default();
    let node = match (ctx.table(&table), &ctx.s.default_node) {
        (Some(t), _) => {
            let nodes: BTreeSet<&String> = t.nodes.iter().collect();
            match nodes.first() {
                Some(n) if nodes.len() == 1 => (*n).clone(),
                _ => {
                    let kind = if t.kind == TableKind::Global {
                        "a global table"
                    } else {
                        "a sharded table"
                    };
                    return Err(RouteError::syntax(format!(
                        "CREATE TABLE ... SELECT is not supported for table {} of schema {}: it is {kind} on {} dataNodes, and each would be filled with every row the SELECT reads; create the table, then fill it with INSERT ... SELECT",
                        t.name,
                        ctx.s.name,
                        nodes.len()
                    )));
                }
            }
        }
        (None, Some(d)) => {
            ctx.s.check_undeclared(&table)?;
            d.clone()
        }
        (None, None) => return Err(unknown_table(&table, &ctx.s.name)),
    };
    let mut elsewhere: Vec<&str> = Vec::new();
    for o in occurrences.iter().filter(|o| !o.sequence) {
        if !ctx.all_rows_on(&o.name, &node) && !elsewhere.contains(&o.name.as_str()) {
            elsewhere.push(&o.name);
        }
    }
    if !elsewhere.is_empty() {
        return Err(RouteError::syntax(format!(
            "CREATE TABLE ... SELECT into table {table} of schema {} is not supported: the table is on dataNode {node}, but the SELECT reads {} whose rows are not all there",
            ctx.s.name,
            elsewhere.join(", ")
        )));
    }
    ddl(ctx, &[&ct.name])
}

/// DDL on tables: every dataNode of the table; undeclared tables on the default node (SPEC §5.10).
/// The text is sent as written (DECISIONS.md item 17).
pub(super) fn ddl(ctx: &Ctx<'_>, names: &[&ObjectName]) -> Result<Routed, RouteError> {
    let mut chosen: Option<(BTreeSet<String>, OkMerge)> = None;
    for name in names {
        let table = name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(|i| i.value.to_ascii_uppercase())
            .unwrap_or_default();
        let (nodes, merge) = match (ctx.table(&table), &ctx.s.default_node) {
            (Some(t), _) => (
                t.nodes.iter().cloned().collect::<BTreeSet<_>>(),
                if t.kind == TableKind::Global {
                    OkMerge::First
                } else {
                    OkMerge::Sum
                },
            ),
            (None, Some(d)) => {
                ctx.s.check_undeclared(&table)?;
                (BTreeSet::from([d.clone()]), OkMerge::Sum)
            }
            (None, None) => return Err(unknown_table(&table, &ctx.s.name)),
        };
        match &chosen {
            Some((n, _)) if *n != nodes => {
                return Err(RouteError::syntax(
                    "DDL on several tables with different dataNodes is not supported; run it per table",
                ));
            }
            _ => chosen = Some((nodes, merge)),
        }
    }
    let (nodes, merge) = chosen.ok_or_else(|| RouteError::syntax("no table in DDL"))?;
    match ctx.plan(nodes, false, merge) {
        Routed::Plan(mut p) => {
            p.ddl = true;
            Ok(Routed::Plan(p))
        }
        local => Ok(local),
    }
}
