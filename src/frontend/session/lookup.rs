//! What the router asks the session to look up before it can plan a statement: sequence values
//! (SPEC §5.17), the column order of a table an INSERT fills without a column list, and the node
//! of an ER child row's parent (SPEC §5.12).

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;

use super::Session;
use crate::backend::{BackendConn, Column, Response};
use crate::frontend::error::MysqlError;
use crate::route::{ParentLookup, Plan};

impl Session {
    /// Draws the sequence values a statement needs and writes them in (SPEC §5.17). For an
    /// `autoIncrement` INSERT the first key becomes the insert id the OK packet reports.
    ///
    /// Errors: 1003 with Mycat's `mycat sequnce err.` prefix.
    pub(super) async fn draw_sequences(
        &mut self,
        r: crate::route::SequenceRewrite,
    ) -> Result<String, MysqlError> {
        let mut wanted: std::collections::BTreeMap<&str, usize> = Default::default();
        for e in &r.edits {
            if let Some(name) = &e.sequence {
                *wanted.entry(name).or_default() += 1;
            }
        }
        let mut drawn: HashMap<String, std::vec::IntoIter<i64>> = HashMap::new();
        for (name, count) in wanted {
            let generation = self.generation();
            let values = self
                .server
                .sequences
                .next(&generation.cluster, name, count)
                .await
                .map_err(|e| MysqlError::new(1003, "HY000", e.to_string()))?;
            drawn.insert(name.to_string(), values.into_iter());
        }
        let mut sql = r.prefix.clone();
        let mut at = 0;
        let mut first = None;
        for e in &r.edits {
            sql.push_str(&r.sql[at..e.range.start]);
            sql.push_str(&e.before);
            if let Some(name) = &e.sequence {
                let v = drawn
                    .get_mut(name)
                    .and_then(|it| it.next())
                    .ok_or_else(|| {
                        MysqlError::new(1003, "HY000", "mycat sequnce err.no value drawn")
                    })?;
                first.get_or_insert(v);
                sql.push_str(&v.to_string());
            }
            sql.push_str(&e.after);
            at = e.range.end;
        }
        sql.push_str(&r.sql[at..]);
        if r.reports_id {
            self.next_insert_id = first.and_then(|v| u64::try_from(v).ok());
        }
        tracing::debug!(connection = self.id, %sql, "sequence values drawn");
        Ok(sql)
    }

    /// Reads the column order of the table an INSERT without a column list fills
    /// ([`Routed::Columns`](crate::route::Routed::Columns)) from each of its dataNodes and
    /// records it for routing ([`crate::route::ColumnOrders`]).
    ///
    /// Errors: a node's own error (1146 when the table is missing there); 1105 when the nodes
    /// define different columns (the INSERT cannot mean one thing on all of them).
    pub(super) async fn read_columns(
        &mut self,
        lookup: crate::route::ColumnsLookup,
    ) -> Result<(), MysqlError> {
        let epoch = self.generation().column_orders.epoch();
        let mut agreed: Option<(String, Vec<String>)> = None;
        for probe in &lookup.probes {
            let (columns, _) = self.probe(probe, &lookup.table).await?;
            let columns: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
            match &agreed {
                None => agreed = Some((probe.node.clone(), columns)),
                Some((node, first))
                    if first.len() != columns.len()
                        || first
                            .iter()
                            .zip(&columns)
                            .any(|(a, b)| !a.eq_ignore_ascii_case(b)) =>
                {
                    return Err(MysqlError::new(
                        1105,
                        "HY000",
                        format!(
                            "table {} has different columns on dataNode {node} ({}) and on dataNode {} ({}): an INSERT without a column list cannot be placed; name the columns",
                            lookup.table,
                            first.join(", "),
                            probe.node,
                            columns.join(", ")
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        if let Some((_, columns)) = agreed {
            self.generation().column_orders.insert(
                &lookup.schema,
                &lookup.table,
                Arc::from(columns),
                epoch,
            );
        }
        Ok(())
    }

    /// Runs a small lookup the router asked for (`target`: a node and a statement reading
    /// `table`) on the connection the session holds for that node (its transaction's, its
    /// kept one, so rows it wrote itself are seen) or on one from the pool with the session's
    /// settings: the result's columns and how many rows it had (the rows are read, not kept).
    ///
    /// Errors: a connection that cannot be had, or the node's own error, naming the node.
    async fn probe(
        &mut self,
        target: &crate::route::Target,
        table: &str,
    ) -> Result<(Arc<[Column]>, usize), MysqlError> {
        let mut fresh;
        let conn: &mut dyn BackendConn = match self.held_conn(&target.node, Some(table)) {
            Some(c) => c.as_mut(),
            None => {
                fresh = self
                    .generation()
                    .cluster
                    .acquire(&target.node, false)
                    .await?;
                Self::apply_state(&self.state, fresh.as_mut(), &target.node).await?;
                fresh.as_mut()
            }
        };
        let failed = |source| crate::engine::EngineError {
            node: target.node.clone(),
            source,
            applied: None,
        };
        match conn.query(&target.sql).await.map_err(failed)? {
            Response::Rows { columns, mut rows } => {
                let mut count = 0;
                while let Some(row) = rows.next().await {
                    row.map_err(failed)?;
                    count += 1;
                }
                Ok((columns, count))
            }
            Response::Ok(_) => Ok((Arc::from(Vec::new()), 0)),
        }
    }

    /// Finds the node of an ER child row's parent (SPEC §5.12): the parent's nodes are asked in
    /// order, on the session's pinned connection where it has one (so a parent inserted in the
    /// same transaction is found), and the INSERT is planned for the first that answers a row.
    ///
    /// Errors: a node that cannot be asked; no node holding the parent row (1064, Mycat's text).
    pub(super) async fn find_parent(&mut self, lookup: ParentLookup) -> Result<Plan, MysqlError> {
        for (probe, insert) in lookup.probes.iter().zip(lookup.inserts) {
            let (_, rows) = self.probe(probe, &lookup.parent).await?;
            if rows > 0 {
                tracing::debug!(connection = self.id, child = %lookup.child, parent = %lookup.parent, node = %insert.node, "parent row found");
                return Ok(Plan::write(vec![insert]));
            }
        }
        Err(MysqlError::new(
            1064,
            "42000",
            format!(
                "can't find (root) parent sharding node for sql: the {} row that {} refers to is on no dataNode",
                lookup.parent, lookup.child
            ),
        ))
    }
}
