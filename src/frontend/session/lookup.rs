//! What the router asks the session to look up before it can plan a statement: sequence values
//! (SPEC §5.17), the column order of a table an INSERT fills without a column list (or whose
//! columns decide what a GROUP BY name over several dataNodes means), and the node
//! of an ER child row's parent (SPEC §5.12). The engine runs them ([`crate::engine::lookup`])
//! over the session's context ([`Session::ctx`]); the session keeps what outlives the statement
//! (the insert id, the column orders).

use std::sync::Arc;

use super::Session;
use crate::engine::lookup;
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
        let drawn = lookup::draw_sequences(&mut self.ctx(), &r).await?;
        if r.reports_id {
            self.next_insert_id = drawn.first.and_then(|v| u64::try_from(v).ok());
        }
        tracing::debug!(connection = self.id, sql = %drawn.sql, "sequence values drawn");
        Ok(drawn.sql)
    }

    /// Reads the column order of the table a statement needs
    /// ([`Routed::Columns`](crate::route::Routed::Columns)) from each of its dataNodes and
    /// records it for routing ([`crate::route::ColumnOrders`]).
    ///
    /// Errors: a node's own error (1146 when the table is missing there); 1105 when the nodes
    /// define different columns (the statement cannot mean one thing on all of them).
    pub(super) async fn read_columns(
        &mut self,
        lookup: crate::route::ColumnsLookup,
    ) -> Result<(), MysqlError> {
        let epoch = self.generation().column_orders.epoch();
        if let Some(columns) = lookup::read_columns(&mut self.ctx(), &lookup).await? {
            self.generation().column_orders.insert(
                &lookup.schema,
                &lookup.table,
                Arc::from(columns),
                epoch,
            );
        }
        Ok(())
    }

    /// Finds the node of an ER child row's parent (SPEC §5.12) and plans the INSERT there
    /// ([`lookup::find_parent`]).
    ///
    /// Errors: a node that cannot be asked; no node holding the parent row (1064, Mycat's text).
    pub(super) async fn find_parent(&mut self, lookup: ParentLookup) -> Result<Plan, MysqlError> {
        Ok(lookup::find_parent(&mut self.ctx(), lookup).await?)
    }
}
