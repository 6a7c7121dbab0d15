//! SQL-level prepared statements (`PREPARE s FROM '...'`, `EXECUTE s [USING @a, ...]`,
//! `DEALLOCATE PREPARE s`) and `EXECUTE IMMEDIATE '...'` (module [`crate::route::dynamic`]).
//!
//! The literal's text is routed as if the client had sent it (every access check, the
//! allow-list), with its `?` placeholders as in a COM_STMT_PREPARE. A `PREPARE` is admitted only
//! when that text is one plain statement on exactly one dataNode whatever the parameters are;
//! the gateway then prepares the router's text for that node on the session's connection to it
//! and keeps that connection from then on (session affinity). An `EXECUTE` routes the text
//! again, under the schema it was prepared in and the current configuration and user, and runs
//! only when that still gives the same node and the same text: what runs on the backend is
//! always what was checked. MariaDB binds a prepared statement's tables when it is prepared (in
//! the connection's database, which on a dataNode's connection is always that dataNode's), so
//! a later `USE` changes nothing the backend reaches.

use std::io;
use std::sync::Arc;

use opensrv_mysql::QueryResultWriter;

use super::{Session, Writer};
use crate::frontend::error::MysqlError;
use crate::route::dynamic::{Dynamic, quote, quote_name};
use crate::route::{HostHint, Plan, Routed, SessionView, Target};

/// A statement prepared with SQL `PREPARE`, by its name (lower-cased).
#[derive(Debug, Clone)]
pub(super) struct SqlPrepared {
    /// The text the client prepared (the literal's value) and the schema it was routed in.
    text: String,
    schema: Option<String>,
    /// The dataNode it was prepared on and the text prepared there.
    node: String,
    sql: Arc<str>,
    /// Whether it only reads; its number of `?` placeholders.
    read_only: bool,
    params: usize,
    tables: Arc<[String]>,
}

fn not_supported(message: String) -> MysqlError {
    MysqlError::new(1235, "42000", message)
}

impl Session {
    /// Answers one recognised dynamic SQL statement.
    pub(super) async fn dynamic(
        &mut self,
        d: Dynamic,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        if !matches!(d, Dynamic::Immediate { .. }) {
            self.server.registry.question();
        }
        if self.xa_on || self.xa.is_some() {
            let e = not_supported(
                "PREPARE / EXECUTE in an XA session is not supported by the gateway".to_string(),
            );
            return self.error(w, e).await;
        }
        match d {
            Dynamic::Immediate { text } => {
                if crate::route::placeholders(&text).is_some_and(|p| !p.is_empty()) {
                    let e = MysqlError::new(1210, "HY000", "Incorrect arguments to EXECUTE");
                    return self.error(w, e).await;
                }
                self.route_plain(&text, w).await
            }
            Dynamic::Prepare { name, text } => self.sql_prepare(name, text, w).await,
            Dynamic::Execute { name, using } => self.sql_execute(name, using, w).await,
            Dynamic::Deallocate { name } => {
                let Some(p) = self.sql_prepared.remove(&name.to_lowercase()) else {
                    return self.error(w, unknown(&name, "DEALLOCATE PREPARE")).await;
                };
                let sql = format!("DEALLOCATE PREPARE {}", quote_name(&name));
                self.run_on(&p, sql, w).await
            }
        }
    }

    /// The one-node plan a prepared text routes to in `schema` now, or why there is none.
    fn prepared_plan(&self, text: &str, schema: Option<&str>) -> Result<Plan, MysqlError> {
        // The text must route the same at each EXECUTE: the session's counters are not
        // written into it (the backend's answer them).
        let view = SessionView {
            schema,
            counters: None,
            ..self.view()
        };
        let refused = || {
            not_supported(format!(
                "PREPARE of a statement that does not run as it is on exactly one dataNode is not supported by the gateway: {}",
                text.chars().take(80).collect::<String>()
            ))
        };
        let plan = match self.generation().router.route_for(text, &view, None) {
            Ok(Routed::Plan(plan)) => plan,
            Ok(_) => return Err(refused()),
            Err(e) => return Err(e.into()),
        };
        if plan.targets.len() != 1
            || plan.merge.is_some()
            || plan.ddl
            || plan.server_variables
            || plan.host != HostHint::None
        {
            return Err(refused());
        }
        Ok(plan)
    }

    async fn sql_prepare(
        &mut self,
        name: String,
        text: String,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        // As in MariaDB, a PREPARE drops the statement of that name first, even when it fails.
        self.sql_prepared.remove(&name.to_lowercase());
        let schema = self.schema.clone();
        let plan = match self.prepared_plan(&text, schema.as_deref()) {
            Ok(plan) => plan,
            Err(e) => return self.error(w, e).await,
        };
        let target = &plan.targets[0];
        let params = crate::route::placeholders(&target.sql).map(|p| p.len());
        let quoted = quote(&target.sql, self.sql_mode);
        let (Some(params), Some(quoted)) = (params, quoted) else {
            let e = not_supported(
                "PREPARE of a text the gateway cannot quote again is not supported".to_string(),
            );
            return self.error(w, e).await;
        };
        if crate::route::placeholders(&text).map(|p| p.len()) != Some(params) {
            let e = not_supported(
                "PREPARE of a statement whose placeholders the router rewrote is not supported by the gateway".to_string(),
            );
            return self.error(w, e).await;
        }
        let p = SqlPrepared {
            text,
            schema,
            node: target.node.clone(),
            sql: target.sql.clone(),
            read_only: plan.read_only,
            params,
            tables: plan.tables.clone(),
        };
        let sql = format!("PREPARE {} FROM {quoted}", quote_name(&name));
        self.held.make_sticky("a prepared statement (PREPARE)");
        self.run_on(&p, sql, w).await?;
        if !self.slot.failed() {
            self.sql_prepared.insert(name.to_lowercase(), p);
        }
        Ok(())
    }

    async fn sql_execute(
        &mut self,
        name: String,
        using: Vec<String>,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        let Some(p) = self.sql_prepared.get(&name.to_lowercase()).cloned() else {
            return self.error(w, unknown(&name, "EXECUTE")).await;
        };
        if using.len() != p.params {
            let e = MysqlError::new(1210, "HY000", "Incorrect arguments to EXECUTE");
            return self.error(w, e).await;
        }
        // What was checked at PREPARE must still be what the text means: same node, same text
        // (a reload may have moved it, a user's access may have changed).
        match self.prepared_plan(&p.text, p.schema.as_deref()) {
            // A read any of several nodes answers (a global table) picks one at random: the
            // prepared node must be one of them, with the same text.
            Ok(plan)
                if plan.read_only == p.read_only
                    && plan
                        .targets
                        .iter()
                        .chain(&plan.fallback)
                        .any(|t| t.node == p.node && t.sql == p.sql) => {}
            Ok(_) => {
                let e = not_supported(format!(
                    "the prepared statement {name} routes elsewhere since it was prepared (a configuration reload): prepare it again"
                ));
                return self.error(w, e).await;
            }
            Err(e) => return self.error(w, e).await,
        }
        let mut sql = format!("EXECUTE {}", quote_name(&name));
        if !using.is_empty() {
            sql.push_str(" USING ");
            sql.push_str(&using.join(", "));
        }
        self.executing = Some(p.sql.clone());
        let answered = self.run_on(&p, sql, w).await;
        self.executing = None;
        answered
    }

    /// Runs `sql` on the session's connection to `p`'s dataNode, as a statement of `p`'s kind
    /// (its tables, read or write) on the dataNode's writeHost.
    async fn run_on(
        &mut self,
        p: &SqlPrepared,
        sql: String,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        let mut plan = Plan::simple(
            vec![Target {
                node: p.node.clone(),
                sql: sql.into(),
            }],
            p.read_only,
        );
        plan.host = HostHint::Master;
        plan.tables = p.tables.clone();
        self.execute(plan, w).await
    }
}

/// MariaDB's 1243 for a statement name it does not know.
fn unknown(name: &str, command: &str) -> MysqlError {
    MysqlError::new(
        1243,
        "HY000",
        format!("Unknown prepared statement handler ({name}) given to {command}"),
    )
}
