//! Metadata the session asks dataNodes for: the result columns of a prepared statement,
//! `information_schema` answers over the user's schemas, and `COM_FIELD_LIST`.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use futures::StreamExt;
use opensrv_mysql::{OkResponse, QueryResultWriter};

use super::execute::CtxError;
use super::{Session, Writer};
use crate::backend::{Column, Response};
use crate::datahost::held::HeldError;
use crate::engine::cursor::{ExecCtx, Purpose};
use crate::engine::lookup;
use crate::frontend::error::MysqlError;
use crate::route::{Plan, Routed, SessionView};

impl Session {
    /// The result columns of a statement with `?` placeholders, for COM_STMT_PREPARE: described
    /// by the first dataNode it routes to (without the merge's extra columns). Empty when it
    /// cannot be routed before its parameters are known, or returns no rows.
    pub(super) async fn describe(&mut self, sql: &str) -> Vec<Column> {
        let mut routed = self.generation().router.route_for(sql, &self.view(), None);
        if self.with_columns(sql, &mut routed).await.is_err() {
            return Vec::new();
        }
        let plan = match routed {
            Ok(Routed::Plan(plan)) => plan,
            Ok(Routed::Metadata(q)) => match self.metadata_plan(&q).await {
                Ok(plan) => plan,
                Err(_) => return Vec::new(),
            },
            _ => return Vec::new(),
        };
        let Some(target) = plan.targets.first() else {
            return Vec::new();
        };
        let hidden = plan.merge.as_ref().map_or(0, |m| m.hidden);
        let described = match self
            .ctx()
            .session_conn(&target.node, Purpose::Session(None))
            .await
        {
            Ok(mut lease) => lease.conn().describe(&target.sql).await,
            Err(CtxError::Held(HeldError::Datahost(e))) => Err(e.source),
            Err(e) => Err(crate::backend::BackendError::Other(
                MysqlError::from(e).message,
            )),
        };
        match described {
            Ok((_, mut columns)) => {
                columns.truncate(columns.len().saturating_sub(hidden));
                columns
            }
            Err(e) => {
                tracing::debug!(connection = self.id, error = %e, "statement not described");
                Vec::new()
            }
        }
    }

    /// The plan answering an `information_schema` query for the schemas the user may see
    /// (module `route::metadata`): run on the first MySQL dataNode of those schemas, after the
    /// columns of the views it reads are known (asked of that node once, then kept).
    ///
    /// Errors: 1235 when every schema the user may see is on PostgreSQL; the node's error when
    /// it cannot describe a view.
    pub(super) async fn metadata_plan(
        &mut self,
        q: &crate::route::MetadataQuery,
    ) -> Result<Plan, MysqlError> {
        if let Some(schema) = q.required_schema() {
            self.check_schema(schema)?;
        }
        // Who sees what: the newest configuration's (see `Session::view`).
        let config = self.server.current().config.clone();
        let visible: Vec<String> = config
            .users
            .get(self.user_name())
            .map(|u| config.user_schemas(u))
            .unwrap_or_default();
        let access = self.view().access.cloned();
        let server = self.generation();
        let router = &server.router;
        // A MySQL dataNode answers when the user has one (its information_schema, with the
        // PostgreSQL databases' rows carried in); else a PostgreSQL one, from its catalog.
        let mysql_node = router.metadata_node(self.schema.as_deref(), &visible);
        let node = mysql_node
            .clone()
            .or_else(|| router.metadata_postgres_node(self.schema.as_deref(), &visible))
            .ok_or_else(|| {
                MysqlError::new(
                    1046,
                    "3D000",
                    "No database selected: the schemas you may use have no dataNode",
                )
            })?;
        let viewer = crate::route::Viewer {
            schemas: &visible,
            access: access.as_ref(),
        };
        let mut known: HashMap<&str, Arc<[String]>> = HashMap::new();
        for view in q.views_to_describe() {
            let columns = if mysql_node.is_some() {
                self.view_columns(&node, view).await?
            } else {
                crate::route::Router::metadata_postgres_columns(view).ok_or_else(|| {
                    MysqlError::new(
                        1235,
                        "42000",
                        format!(
                            "information_schema.{view} is not answered on a PostgreSQL dataNode"
                        ),
                    )
                })?
            };
            known.insert(view, columns);
        }
        // Rows of the tables on other dataHosts, carried in as literals.
        let mut fetched: HashMap<&str, Vec<Vec<String>>> = HashMap::new();
        for other in router.metadata_other_nodes(&visible, &node) {
            for (view, main_columns) in &known {
                let columns = self.view_columns(&other, view).await?;
                if let Some(sql) =
                    router.metadata_fetch(view, main_columns, &columns, &viewer, &node, &other)?
                {
                    let rows = self.literal_rows(&other, &sql).await?;
                    fetched.entry(view).or_default().extend(rows);
                }
            }
        }
        for other in router.metadata_postgres_nodes(&visible, &node) {
            for (view, main_columns) in &known {
                if let Some(sql) =
                    router.metadata_fetch_postgres(view, main_columns, &viewer, &other)
                {
                    let rows = self.literal_rows(&other, &sql).await?;
                    fetched.entry(view).or_default().extend(rows);
                }
            }
        }
        Ok(
            router.metadata_plan(q, &viewer, &node, &|v| known.get(v).cloned(), &|v| {
                fetched.get(v).cloned().unwrap_or_default()
            })?,
        )
    }

    /// The column names of `information_schema.<view>` on `node`, asked once per server run.
    async fn view_columns(&mut self, node: &str, view: &str) -> Result<Arc<[String]>, MysqlError> {
        let key = (node.to_string(), view.to_string());
        let cached = self
            .generation()
            .view_columns
            .lock()
            .ok()
            .and_then(|m| m.get(&key).cloned());
        if let Some(c) = cached {
            return Ok(c);
        }
        let c = self.describe_view(node, view).await?;
        if let Ok(mut m) = self.generation().view_columns.lock() {
            m.insert(key, c.clone());
        }
        Ok(c)
    }

    /// The column names of `information_schema.<view>` on `node` ([`lookup::view_columns`]).
    async fn describe_view(&mut self, node: &str, view: &str) -> Result<Arc<[String]>, MysqlError> {
        Ok(lookup::view_columns(&mut self.ctx(), node, view).await?)
    }

    /// `sql`'s rows on `node` as SQL literals ([`lookup::literal_rows`]).
    async fn literal_rows(
        &mut self,
        node: &str,
        sql: &str,
    ) -> Result<Vec<Vec<String>>, MysqlError> {
        Ok(lookup::literal_rows(&mut self.ctx(), node, sql).await?)
    }

    /// COM_FIELD_LIST (`args`: the table name, NUL, the column wildcard): the table's column
    /// definitions as the first dataNode it routes to describes them (`SELECT * FROM t LIMIT 0`),
    /// named with the logical schema and table, each with the command's default-value field
    /// (sent as NULL: manx does not look the defaults up), ended by EOF — what MySQL's
    /// deprecated command returns. The writer swaps them in for the OK packet written here.
    ///
    /// Errors: 1046 without a current schema; 1146 for a table the schema does not have.
    pub(super) async fn field_list(
        &mut self,
        args: &str,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        let (table, wild) = args.split_once('\0').unwrap_or((args, ""));
        let wild = wild.trim_end_matches('\0');
        let Some(schema) = self.schema.clone() else {
            let e = MysqlError::new(1046, "3D000", "No database selected");
            return self.error(w, e).await;
        };
        let missing = || {
            MysqlError::new(
                1146,
                "42S02",
                format!("Table '{schema}.{table}' doesn't exist"),
            )
        };
        let sql = format!("SELECT * FROM `{}` LIMIT 0", table.replace('`', "``"));
        let view = SessionView {
            schema: Some(&schema),
            ..self.view()
        };
        let target = match self.generation().router.route_for(&sql, &view, None) {
            Ok(Routed::Plan(plan)) if !table.is_empty() => plan.targets.into_iter().next(),
            _ => None,
        };
        let Some(target) = target else {
            return self.error(w, missing()).await;
        };
        let described = match self
            .ctx()
            .session_conn(&target.node, Purpose::Session(Some(table)))
            .await
        {
            Err(e) => Err(MysqlError::from(e)),
            Ok(mut lease) => match lease.conn().query(&target.sql).await {
                Ok(Response::Rows { columns, mut rows }) => {
                    while rows.next().await.is_some() {}
                    Ok(columns.to_vec())
                }
                Ok(Response::Ok(_)) => Ok(Vec::new()),
                Err(e) if e.server_error().is_some_and(|(code, _, _)| code == 1146) => {
                    Err(missing())
                }
                Err(e) => Err(MysqlError::backend(format!("dataNode {}", target.node), &e)),
            },
        };
        let columns = match described {
            Ok(c) => c,
            Err(e) => return self.error(w, e).await,
        };
        let mut packets: Vec<Vec<u8>> = columns
            .iter()
            .filter(|c| wild.is_empty() || crate::route::like(&c.name, wild))
            .map(|c| field_definition(&schema, table, c))
            .collect();
        let status = self.status().bits().to_le_bytes();
        const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;
        packets.push(
            if self.slot.client_capabilities() & CLIENT_DEPRECATE_EOF != 0 {
                // OK with the EOF header: affected rows, insert id, status, warnings.
                vec![0xFE, 0, 0, status[0], status[1], 0, 0]
            } else {
                vec![0xFE, 0, 0, status[0], status[1]]
            },
        );
        self.slot.replace_next(packets);
        w.completed(OkResponse::default()).await
    }
}

/// A COM_FIELD_LIST column definition: catalog, schema, table, original table, name,
/// original name, the fixed fields, then the default value (NULL, 0xFB).
fn field_definition(schema: &str, table: &str, c: &Column) -> Vec<u8> {
    let mut p = Vec::with_capacity(64);
    for s in ["def", schema, table, table, &c.name, &c.name] {
        crate::frontend::wire::lenenc::write_str(&mut p, s.as_bytes())
            .expect("a Vec takes every write");
    }
    p.push(0x0C);
    p.extend_from_slice(&c.charset.to_le_bytes());
    p.extend_from_slice(&c.length.to_le_bytes());
    p.push(c.column_type as u8);
    p.extend_from_slice(&c.flags.bits().to_le_bytes());
    p.push(c.decimals);
    p.extend_from_slice(&[0, 0]);
    p.push(0xFB);
    p
}
