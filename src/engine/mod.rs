//! Executes a routed [`Plan`] over backend connections and combines what the dataNodes return.
//!
//! Statements go to every target at once. Row results are streamed: the nodes' streams are
//! interleaved as rows arrive (SPEC §5.11: without ORDER BY, GROUP BY or aggregates Mycat streams
//! in arrival order), cut by the plan's `LIMIT` when it has one. OK results are combined by the
//! plan's [`OkMerge`].

pub mod cursor;
pub mod lookup;
mod merge;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use futures::StreamExt;
use futures::future::join_all;

use crate::backend::{BackendConn, BackendError, Column, OkInfo, Response, RowStream};
use crate::route::{OkMerge, Plan, TableName};

/// A failure on one dataNode.
#[derive(Debug, Clone, thiserror::Error)]
#[error("dataNode {node}: {source}")]
pub struct EngineError {
    pub node: String,
    #[source]
    pub source: BackendError,
    /// For a write run node after node: how many nodes had applied it before the failure
    /// (`None` when the nodes ran at once and it is unknown).
    pub applied: Option<usize>,
}

/// The combined answer of a plan.
pub enum Output<'a> {
    Ok(OkInfo),
    Rows {
        columns: Arc<[Column]>,
        rows: RowStream<'a>,
        /// The rows a merge's `LIMIT` offset read and dropped, counted as `rows` is read
        /// (always 0 without a merge: a node's own offset is in its statement). MariaDB's
        /// `FOUND_ROWS()` counts them with the rows sent.
        skipped: Arc<AtomicU64>,
    },
}

/// Runs `plan` with one connection per target (same order as `plan.targets`).
///
/// Errors: the first failing node's error (in target order). Nodes that succeeded keep their
/// effects: there is no atomicity across nodes outside a transaction (as in Mycat).
pub async fn execute<'a>(
    plan: &'a Plan,
    conns: Vec<&'a mut (dyn BackendConn + 'static)>,
) -> Result<Output<'a>, EngineError> {
    debug_assert_eq!(conns.len(), plan.targets.len());
    // A table on MySQL and PostgreSQL dataNodes at once: their string weights differ in kind.
    let mixed_weights = conns
        .windows(2)
        .any(|w| w[0].string_weights() != w[1].string_weights());
    // Writes to several nodes run one node after another in dataNode order, so two clients
    // writing the same rows always lock them in the same order (at once, each could hold one
    // node's lock and wait for the other's: a deadlock no single server can see), and a failure
    // stops before the remaining nodes.
    let responses = if !plan.read_only && plan.targets.len() > 1 {
        let mut out = Vec::with_capacity(conns.len());
        for (conn, t) in conns.into_iter().zip(&plan.targets) {
            let applied = out.len();
            let r = conn.query(&t.sql).await.map_err(|source| EngineError {
                node: t.node.clone(),
                source,
                applied: Some(applied),
            });
            let failed = r.is_err();
            out.push(r);
            if failed {
                break;
            }
        }
        out
    } else {
        join_all(
            conns
                .into_iter()
                .zip(&plan.targets)
                .map(|(conn, t)| async move {
                    conn.query(&t.sql).await.map_err(|source| EngineError {
                        node: t.node.clone(),
                        source,
                        applied: None,
                    })
                }),
        )
        .await
    };
    let mut oks = Vec::new();
    let mut streams = Vec::new();
    let mut columns = None;
    for r in responses {
        match r? {
            Response::Ok(ok) => oks.push(ok),
            Response::Rows { columns: c, rows } => {
                let first = columns.get_or_insert_with(|| c.clone());
                if first.len() != c.len() {
                    return Err(EngineError {
                        applied: None,
                        node: t_node(plan, streams.len()),
                        source: BackendError::Other(format!(
                            "dataNodes returned {} and {} columns for the same statement: their tables differ",
                            first.len(),
                            c.len()
                        )),
                    });
                }
                streams.push(rows);
            }
        }
    }
    if let Some(columns) = columns {
        if !oks.is_empty() {
            return Err(EngineError {
                applied: None,
                node: plan.targets[0].node.clone(),
                source: BackendError::Other(
                    "dataNodes answered the same statement differently".to_string(),
                ),
            });
        }
        let skipped = Arc::<AtomicU64>::default();
        if let Some(m) = &plan.merge {
            let (columns, rows) = merge::rows(m, columns, streams, mixed_weights, skipped.clone())
                .map_err(|source| EngineError {
                    node: t_node(plan, 0),
                    source,
                    applied: None,
                })?;
            return Ok(Output::Rows {
                columns,
                rows,
                skipped,
            });
        }
        if let Some(names) = &plan.table_names {
            // Table maintenance: each node's rows together, in dataNode order, each naming its
            // table as the client does.
            let rows = futures::stream::iter(streams.into_iter().zip(names.iter()))
                .flat_map(|(rows, names)| {
                    rows.map(move |row| row.map(|row| relabelled(row, names)))
                })
                .boxed();
            return Ok(Output::Rows {
                columns,
                rows,
                skipped,
            });
        }
        let rows = if streams.len() == 1 {
            streams.pop().expect("one stream")
        } else {
            futures::stream::select_all(streams).boxed()
        };
        let rows = if plan.server_variables && columns.len() == 2 {
            rows.map(|row| row.map(announced_variable)).boxed()
        } else {
            rows
        };
        return Ok(Output::Rows {
            columns,
            rows,
            skipped,
        });
    }
    tracing::debug!(?oks, "node OK packets");
    Ok(Output::Ok(merge_ok(oks, plan.ok_merge)))
}

/// A `SHOW VARIABLES` row (`Variable_name`, `Value`) as the gateway answers it: `version` and
/// `version_comment` are what the gateway announces ([`Plan::server_variables`]); other rows
/// as the dataNode gave them.
fn announced_variable(mut row: crate::backend::Row) -> crate::backend::Row {
    let value = match row.first().and_then(|name| name.to_text()) {
        Some(name) if name.eq_ignore_ascii_case("version") => crate::version::function_version(),
        Some(name) if name.eq_ignore_ascii_case("version_comment") => {
            crate::version::VERSION_COMMENT
        }
        _ => return row,
    };
    if let Some(v) = row.get_mut(1) {
        *v = crate::backend::Value::Bytes(value.as_bytes().to_vec());
    }
    row
}

/// A table maintenance row (`Table`, ...) with its table named `schema.table`
/// ([`Plan::table_names`]): `names` are the tables of the node's statement. A message
/// (`Msg_text`, the fourth column) that names the table `'database.table'` names it so too, as
/// the node's errors are (`Table 'db1.t' doesn't exist`).
fn relabelled(mut row: crate::backend::Row, names: &[TableName]) -> crate::backend::Row {
    let Some(value) = row.first().and_then(|v| v.to_text()) else {
        return row;
    };
    let Some((entry, table)) = TableName::named(names, &value) else {
        return row;
    };
    let label = format!("{}.{table}", entry.schema);
    let physical = format!("'{}.", entry.database);
    let logical = format!("'{}.", entry.schema);
    row[0] = crate::backend::Value::Bytes(label.into_bytes());
    if row.len() == 4
        && let Some(text) = row[3].to_text()
        && text.contains(&physical)
    {
        row[3] = crate::backend::Value::Bytes(text.replace(&physical, &logical).into_bytes());
    }
    row
}

/// The node of the `i`-th row stream (streams are pushed in target order).
fn t_node(plan: &Plan, i: usize) -> String {
    plan.targets
        .get(i)
        .map(|t| t.node.clone())
        .unwrap_or_default()
}

/// Combines OK packets: affected rows summed (or the first node's for global tables), warnings
/// summed, and the smallest positive insert id (SPEC §5.15); the info texts summed
/// ([`sum_info`]).
pub fn merge_ok(oks: Vec<OkInfo>, merge: OkMerge) -> OkInfo {
    match merge {
        OkMerge::First => oks.into_iter().next().unwrap_or_default(),
        OkMerge::Sum => {
            let info = sum_info(oks.iter().map(|ok| ok.info.as_str()));
            let mut out = OkInfo {
                info,
                ..OkInfo::default()
            };
            for ok in oks {
                out.affected_rows += ok.affected_rows;
                out.warnings = out.warnings.saturating_add(ok.warnings);
                out.last_insert_id =
                    match (out.last_insert_id, ok.last_insert_id.filter(|&id| id > 0)) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
            }
            out
        }
    }
}

/// The info texts of several nodes' OK packets as one server would write them for all their
/// rows: each count summed, when every text has the same labels (MariaDB's `Records: 3
/// Duplicates: 0  Warnings: 0`, `Rows matched: 2  Changed: 2  Warnings: 0`); empty otherwise:
/// a text of another shape is not one to add up, and a node without one (MariaDB writes none
/// for a one-row INSERT) leaves the sum unknown.
pub fn sum_info<'a>(infos: impl Iterator<Item = &'a str>) -> String {
    // (label, count) pairs of one text: `Label: n` separated by two spaces.
    fn parse(info: &str) -> Option<Vec<(&str, u64)>> {
        info.split("  ")
            .map(|part| {
                let (label, n) = part.split_once(": ")?;
                Some((label, n.trim().parse().ok()?))
            })
            .collect()
    }
    let mut total: Option<Vec<(&str, u64)>> = None;
    let mut without = false;
    for info in infos {
        if info.is_empty() {
            without = true;
            continue;
        }
        let Some(parts) = parse(info) else {
            return String::new();
        };
        total = match total {
            None => Some(parts),
            Some(mut sum) => {
                if sum.len() != parts.len() || sum.iter().zip(&parts).any(|(a, b)| a.0 != b.0) {
                    return String::new();
                }
                for (s, p) in sum.iter_mut().zip(&parts) {
                    s.1 += p.1;
                }
                Some(sum)
            }
        };
    }
    if without {
        return String::new();
    }
    total
        .map(|parts| {
            parts
                .iter()
                .map(|(label, n)| format!("{label}: {n}"))
                .collect::<Vec<_>>()
                .join("  ")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ok_packets_merge() {
        let a = OkInfo {
            affected_rows: 2,
            last_insert_id: Some(7),
            warnings: 1,
            info: String::new(),
        };
        let b = OkInfo {
            affected_rows: 3,
            last_insert_id: Some(5),
            warnings: 0,
            info: String::new(),
        };
        let c = OkInfo {
            affected_rows: 1,
            last_insert_id: Some(0),
            warnings: 0,
            info: String::new(),
        };
        assert_eq!(
            sum_info(
                [
                    "Rows matched: 2  Changed: 1  Warnings: 0",
                    "Rows matched: 3  Changed: 3  Warnings: 1"
                ]
                .into_iter()
            ),
            "Rows matched: 5  Changed: 4  Warnings: 1"
        );
        assert_eq!(
            sum_info(
                [
                    "Records: 2  Duplicates: 0  Warnings: 0",
                    "Rows matched: 1  Changed: 1  Warnings: 0"
                ]
                .into_iter()
            ),
            ""
        );
        assert_eq!(sum_info(["Records: 2  Duplicates: x"].into_iter()), "");
        assert_eq!(
            sum_info(["Records: 2  Duplicates: 0  Warnings: 0", ""].into_iter()),
            ""
        );
        assert_eq!(sum_info(["", ""].into_iter()), "");
        let sum = merge_ok(vec![a.clone(), b, c], OkMerge::Sum);
        assert_eq!(
            (sum.affected_rows, sum.last_insert_id, sum.warnings),
            (6, Some(5), 1)
        );
        assert_eq!(
            merge_ok(vec![a.clone(), a.clone()], OkMerge::First).affected_rows,
            2
        );
    }
}
