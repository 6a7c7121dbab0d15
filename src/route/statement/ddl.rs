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
            (None, Some(d)) => (BTreeSet::from([d.clone()]), OkMerge::Sum),
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
