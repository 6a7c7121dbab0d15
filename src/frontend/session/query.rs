//! One statement from its text to its answer: routed (with the look-ups the router asks for), run
//! or answered locally, and recorded for the statistics.

use std::io;

use opensrv_mysql::QueryResultWriter;

use super::diagnostics::keeps_diagnostics;
use super::{Session, Tally, Writer};
use crate::frontend::error::MysqlError;
use crate::route::Routed;

impl Session {
    /// Routes and runs one statement (a COM_QUERY, or a COM_STMT_EXECUTE with its parameters
    /// bound), answering on `w`.
    /// Routes and runs one statement ([`Session::route_and_run`]) and hands what it did to the
    /// recorder.
    pub(super) async fn run_query(
        &mut self,
        query: &str,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        let started = std::time::SystemTime::now();
        let clock = std::time::Instant::now();
        let hits = self.plans.hits();
        self.plans.take_last_key();
        self.slot.take_outcome();
        self.tally = Tally {
            read: true,
            ..Tally::default()
        };
        let done = self.route_and_run(query, w).await;
        let elapsed = clock.elapsed();
        let stats = &self.server.stats;
        stats
            .metrics
            .plan_cache_hits
            .inc_by(self.plans.hits().saturating_sub(hits));
        let kind = match self.tally.nodes.len() {
            _ if !self.tally.planned => crate::stats::RouteKind::Local,
            0 | 1 => crate::stats::RouteKind::Single,
            _ => crate::stats::RouteKind::Multi,
        };
        // The plan cache's key when routing made one, else one made here (statistics only).
        let shape = match self.plans.take_last_key() {
            Some(key) => Some(key),
            None if stats.enabled() => crate::route::statistics_key(query),
            None => None,
        };
        let (error, affected) = self.slot.take_outcome();
        if let Some((code, message)) = &error {
            // MySQL's diagnostics area after a failed statement: SHOW WARNINGS and SHOW ERRORS
            // list the error, `@@warning_count` and `@@error_count` count it.
            self.warnings = vec![vec![
                Some("Error".to_string()),
                Some(code.to_string()),
                Some(message.clone()),
            ]];
            self.warning_count = 1;
        }
        // MariaDB's ROW_COUNT(): the OK's affected rows, -1 after a result set or an error.
        self.row_count = match (&error, affected) {
            (None, Some(n)) => i64::try_from(n).unwrap_or(i64::MAX),
            _ => -1,
        };
        let error = error.map(|(code, _)| code);
        stats.record(
            &crate::stats::Executed {
                user: self.user_name(),
                client: self.peer.ip(),
                connection: self.id,
                schema: self.schema.as_deref(),
                sql: query,
                started,
                elapsed,
                rows_sent: self.tally.rows,
                rows_affected: affected.unwrap_or(0),
                error,
                nodes: &self.tally.nodes,
                tables: &self.tally.tables,
                kind,
                read: self.tally.read,
            },
            shape.as_deref(),
        );
        done
    }

    async fn route_and_run(
        &mut self,
        query: &str,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        if let Some(d) = crate::route::dynamic::dynamic(query, self.sql_mode) {
            self.slot.set_status(self.status().bits());
            self.warnings.clear();
            self.warning_count = 0;
            return self.dynamic(d, w).await;
        }
        // A PREPARE of a form the gateway refuses (`FROM @var`) drops the statement of that
        // name all the same, as MariaDB's failed PREPARE does: a later EXECUTE must not run
        // the old one.
        if let Some(name) = crate::route::dynamic::prepare_name(query, self.sql_mode) {
            self.sql_prepared.remove(&name.to_lowercase());
        }
        self.route_plain(query, w).await
    }

    /// Routes and runs one statement that is not dynamic SQL (module `dynamic`): also the text
    /// of an `EXECUTE IMMEDIATE`.
    pub(super) async fn route_plain(
        &mut self,
        query: &str,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        self.server.registry.question();
        self.slot.set_status(self.status().bits());
        let mut plans = std::mem::take(&mut self.plans);
        let mut routed = self
            .generation()
            .router
            .route_for(query, &self.view(), Some(&mut plans));
        self.plans = plans;
        // An INSERT without a column list, a GROUP BY name that may be a column: the tables'
        // columns first, then again (one table at a time).
        if let Err(e) = self.with_columns(query, &mut routed).await {
            return self.error(w, e).await;
        }
        tracing::trace!(connection = self.id, sql = query, ?routed, "routed");
        // A statement that uses a table starts a new warnings list; others keep it unless
        // they raise a condition (MariaDB's).
        if (self.warning_count > 0 || !self.warnings.is_empty())
            && !keeps_diagnostics(&routed, query)
        {
            self.warnings.clear();
            self.warning_count = 0;
        }
        match routed {
            Err(e) => self.error(w, e.into()).await,
            Ok(Routed::Local(l)) => self.local(l, w).await,
            Ok(Routed::Plan(plan)) => self.execute(plan, w).await,
            Ok(Routed::Metadata(q)) => match self.metadata_plan(&q).await {
                Ok(plan) => self.execute(plan, w).await,
                Err(e) => self.error(w, e).await,
            },
            Ok(Routed::Sequence(rewrite)) => match self.draw_sequences(rewrite).await {
                Ok(sql) => match self.generation().router.route_for(&sql, &self.view(), None) {
                    Ok(Routed::Plan(plan)) => self.execute(plan, w).await,
                    Ok(Routed::Lookup(lookup)) => match self.find_parent(lookup).await {
                        Ok(plan) => self.execute(plan, w).await,
                        Err(e) => self.error(w, e).await,
                    },
                    Ok(Routed::Local(l)) => self.local(l, w).await,
                    Ok(Routed::Metadata(_)) | Ok(Routed::Sequence(_)) | Ok(Routed::Columns(_)) => {
                        self.next_insert_id = None;
                        let e = MysqlError::new(
                            1003,
                            "HY000",
                            "mycat sequnce err.the statement still needs sequence values after they were drawn",
                        );
                        self.error(w, e).await
                    }
                    Err(e) => {
                        self.next_insert_id = None;
                        self.error(w, e.into()).await
                    }
                },
                Err(e) => self.error(w, e).await,
            },
            Ok(Routed::Lookup(lookup)) => match self.find_parent(lookup).await {
                Ok(plan) => self.execute(plan, w).await,
                Err(e) => self.error(w, e).await,
            },
            Ok(Routed::Columns(lookup)) => {
                let e = MysqlError::new(
                    1105,
                    "HY000",
                    format!(
                        "the columns of table {} changed while the statement was routed: try again",
                        lookup.table
                    ),
                );
                self.error(w, e).await
            }
        }
    }

    /// Reads the columns `routed` asks for ([`Routed::Columns`]) and routes `query` again, as
    /// long as it asks for another table's: a statement over several tables needs each one's.
    /// A table asked for twice (its columns forgotten meanwhile by a DDL) is left in `routed`.
    ///
    /// Errors: those of [`Session::read_columns`].
    pub(super) async fn with_columns(
        &mut self,
        query: &str,
        routed: &mut Result<Routed, crate::route::RouteError>,
    ) -> Result<(), MysqlError> {
        let mut read: Vec<(String, String)> = Vec::new();
        while let Ok(Routed::Columns(lookup)) = routed {
            let table = (lookup.schema.clone(), lookup.table.clone());
            if read.contains(&table) {
                break;
            }
            self.read_columns(lookup.clone()).await?;
            read.push(table);
            *routed = self
                .generation()
                .router
                .route_for(query, &self.view(), None);
        }
        Ok(())
    }
}
