//! Running a plan: the connections it runs on (pinned, kept, or taken from pools, with the
//! session's state), the engine's run, the one retry of a read whose connection broke, and the
//! answer (OK, error, or the rows streamed).

use std::io;
use std::sync::Arc;

use opensrv_mysql::QueryResultWriter;

use super::diagnostics::collect_warnings;
use super::reply::{Sent, send_error, stream_rows, write_ok};
use super::transaction::{ends_transaction, finish_implicit, xa_start_on};
use super::{Session, Writer};
use crate::backend::{BackendConn, OkInfo};
use crate::datahost::Intent;
use crate::datahost::held::{self, Fresh, HeldConns, HeldError, Leased, Opening};
use crate::engine::cursor::{ExecCtx, Lease, Purpose, Taken};
use crate::engine::lookup::LookupError;
use crate::engine::{self, Output};
use crate::frontend::error::MysqlError;
use crate::frontend::registry::Handle;
use crate::frontend::reload::Generation;
use crate::frontend::wire::tap::ErrorSlot;
use crate::route::{HostHint, OkMerge, Plan, SessionSet, Target};

/// Which server a statement outside a transaction asks for: writes and master-forced reads the
/// active writeHost, `db_type=slave` reads a readHost, other reads per `balance`. (Inside a
/// transaction every statement uses its pinned writeHost connection, DECISIONS.md item 12.)
fn intent(plan: &Plan) -> Intent {
    match (plan.read_only, plan.host) {
        (false, _) | (true, HostHint::Master) => Intent::Write,
        (true, HostHint::Slave) => Intent::Replica,
        (true, HostHint::None) => Intent::Read,
    }
}

/// The session's side of the engine's seam ([`engine::cursor::ExecCtx`]): connections from
/// its generation's datahost cluster, for the server the statement's intent asks for
/// ([`intent`]); for look-ups the session's own connections where they may serve, else fresh
/// ones with its settings (both decided by [`HeldConns::lease`] and [`HeldConns::take`]);
/// sequence values from the server's handler. Made by [`Session::ctx`], over the session's
/// fields it needs.
pub(super) struct SessionCtx<'a> {
    generation: Arc<Generation>,
    sequences: &'a crate::sequence::Sequences,
    state: &'a [SessionSet],
    held: &'a mut HeldConns,
}

/// A failure of [`SessionCtx`]: the held connections' (no connection, the session's settings
/// refused on a fresh one), or the gateway's error for the client (a sequence draw).
#[derive(Debug)]
pub(super) enum CtxError {
    Held(HeldError),
    Refused(MysqlError),
}

impl std::fmt::Display for CtxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CtxError::Held(e) => write!(f, "{e}"),
            CtxError::Refused(e) => f.write_str(&e.message),
        }
    }
}

impl From<CtxError> for MysqlError {
    fn from(e: CtxError) -> MysqlError {
        match e {
            CtxError::Held(e) => e.into(),
            CtxError::Refused(e) => e,
        }
    }
}

impl From<LookupError<CtxError>> for MysqlError {
    /// The client's error for a failed look-up (errno per [`LookupError`]'s variants).
    fn from(e: LookupError<CtxError>) -> MysqlError {
        match e {
            LookupError::Ctx(e) => e.into(),
            LookupError::Node(e) => e.into(),
            LookupError::NoValueDrawn => MysqlError::new(1003, "HY000", e.to_string()),
            LookupError::ColumnsDiffer { .. } | LookupError::NoColumns { .. } => {
                MysqlError::new(1105, "HY000", e.to_string())
            }
            LookupError::NoParent { .. } => MysqlError::new(1064, "42000", e.to_string()),
        }
    }
}

impl engine::cursor::ExecCtx for SessionCtx<'_> {
    type Error = CtxError;

    async fn connect(
        &self,
        node: &str,
        plan: &Plan,
        instead_of: Option<&str>,
    ) -> Result<Box<dyn BackendConn>, Self::Error> {
        let cluster = &self.generation.cluster;
        match instead_of {
            Some(failed) => cluster.acquire_instead(node, intent(plan), failed).await,
            None => cluster.acquire_for(node, intent(plan)).await,
        }
        .map_err(|e| CtxError::Held(HeldError::Datahost(Box::new(e))))
    }

    fn unreachable(e: &Self::Error) -> bool {
        // An answer (the server's error or the gateway's refusal) would be the same elsewhere.
        match e {
            CtxError::Held(HeldError::Datahost(e)) => !e.source.is_answer(),
            CtxError::Held(_) | CtxError::Refused(_) => false,
        }
    }

    async fn session_conn(
        &mut self,
        node: &str,
        purpose: Purpose<'_>,
    ) -> Result<Lease<'_>, Self::Error> {
        let (table, fresh) = match purpose {
            Purpose::Session(table) => (table, Fresh::Session),
            Purpose::Metadata => (None, Fresh::Metadata),
        };
        let state = self.state;
        let leased = self
            .held
            .lease(self.generation.cluster.as_ref(), node, table, fresh, || {
                Session::state_statements(state)
            })
            .await
            .map_err(CtxError::Held)?;
        Ok(match leased {
            Leased::Held(c) => Lease::Held(c),
            Leased::Fresh(c) => Lease::Fresh(c),
        })
    }

    async fn take_conn(&mut self, node: &str, kept: bool) -> Result<Taken, Self::Error> {
        let state = self.state;
        let taken = self
            .held
            .take(self.generation.cluster.as_ref(), node, kept, || {
                Session::state_statements(state)
            })
            .await
            .map_err(CtxError::Held)?;
        Ok(Taken {
            conn: taken.conn,
            kept: taken.kept,
        })
    }

    fn pinned_for(&mut self, targets: &[Target]) -> Vec<&mut (dyn BackendConn + 'static)> {
        self.held
            .pinned_for(targets.iter().map(|t| t.node.as_str()))
    }

    async fn draw(&mut self, name: &str, count: usize) -> Result<Vec<i64>, Self::Error> {
        self.sequences
            .next(self.generation.cluster.as_ref(), name, count)
            .await
            .map_err(|e| CtxError::Refused(MysqlError::new(1003, "HY000", e.to_string())))
    }
}

impl Session {
    /// The engine's context over this session ([`SessionCtx`]).
    pub(super) fn ctx(&mut self) -> SessionCtx<'_> {
        SessionCtx {
            generation: self.generation(),
            sequences: &self.server.sequences,
            state: &self.state,
            held: &mut self.held,
        }
    }

    /// Runs a plan ([`Session::execute_on`]); afterwards the connections it took from pools
    /// are kept when the session keeps its connections ([`Session::held`]), which the
    /// statement itself may have begun (a temporary table, `SELECT @x := ...`, `GET_LOCK`).
    /// Around DDL the tables' column orders are forgotten, before (the statement may change
    /// any table) and after (an order read by another session while it ran may predate it).
    pub(super) async fn execute(
        &mut self,
        plan: Plan,
        w: QueryResultWriter<'_, Writer>,
    ) -> io::Result<()> {
        let ddl = plan.ddl;
        if ddl {
            self.generation().column_orders.clear();
        }
        if self.held.sticky().is_none()
            && let Some(reason) = plan
                .targets
                .iter()
                .find_map(|t| crate::route::session_state(&t.sql))
        {
            tracing::debug!(
                connection = self.id,
                reason,
                "the session keeps its backend connections from now on"
            );
            self.held.make_sticky(reason);
        }
        let mut fresh = Vec::new();
        let mut nodes = Vec::new();
        let done = self.execute_on(plan, w, &mut fresh, &mut nodes).await;
        if self.held.keeps() {
            for (node, conn) in nodes.into_iter().zip(fresh) {
                self.held.keep_unless_kept(node, conn);
            }
        }
        if ddl {
            self.generation().column_orders.clear();
        }
        // A DROP TABLE of the last locked tables ends LOCK TABLES mode, as on MariaDB: so do
        // the session's locks (on the connections now kept again), and a new LOCK TABLES is
        // not refused as a second one.
        if self.held.locks().is_some_and(|l| l.is_empty())
            && let Err(e) = self.unlock_tables().await
        {
            tracing::warn!(connection = self.id, error = %e, "UNLOCK TABLES after the last locked table was dropped failed");
        }
        done
    }

    /// Runs a plan on the transaction's pinned connections, the session's kept ones, or
    /// connections taken for it, which are left in `fresh` (their dataNodes in `nodes`, in
    /// the same order) for [`Session::execute`].
    async fn execute_on(
        &mut self,
        mut plan: Plan,
        w: QueryResultWriter<'_, Writer>,
        fresh: &mut Vec<Box<dyn BackendConn>>,
        nodes: &mut Vec<String>,
    ) -> io::Result<()> {
        self.tally.planned = true;
        self.tally.read = plan.read_only;
        self.tally.nodes = plan.targets.iter().map(|t| t.node.clone()).collect();
        self.tally.tables = plan.tables.clone();
        let read_only_user = self
            .server
            .current()
            .config
            .users
            .get(self.user_name())
            .is_some_and(|u| u.read_only);
        if read_only_user && !plan.read_only {
            return self
                .error(w, MysqlError::new(1495, "HY000", "User readonly"))
                .await;
        }
        if let Some(reason) = self.held.interrupted() {
            let message = format!("Transaction error, need to rollback: {reason}");
            return self.error(w, MysqlError::new(1003, "HY000", message)).await;
        }
        if let Some(e) = self.unlocked_table(&plan) {
            return self.error(w, e).await;
        }
        let keeps = self.held.keeps();
        // DDL commits the open transaction first, as in MySQL, and runs outside it.
        if plan.ddl
            && (self.in_transaction || self.held.has_pinned())
            && let Err(e) = self.end_transaction("COMMIT").await
        {
            return self.error(w, e).await;
        }
        let transactional = !plan.ddl && (self.in_transaction || !self.autocommit);
        // A write to several dataNodes outside a transaction runs in one on each node and is
        // committed only where all succeeded, so a failure leaves nothing half applied.
        let implicit = !transactional && !plan.read_only && !plan.ddl && plan.targets.len() > 1;
        let server = self.generation();
        // A read any node can answer, in a session that keeps connections: one it holds.
        if keeps
            && !plan.fallback.is_empty()
            && !self.held.is_kept(&plan.targets[0].node)
            && let Some(i) = plan
                .fallback
                .iter()
                .position(|t| self.held.is_kept(&t.node))
        {
            std::mem::swap(&mut plan.targets[0], &mut plan.fallback[i]);
        }
        // A read any node can answer: when the chosen node's server cannot be reached, the next.
        let on_held = self.held.is_pinned(&plan.targets[0].node)
            || (keeps && self.held.is_kept(&plan.targets[0].node));
        if !plan.fallback.is_empty() && !on_held {
            let connected = engine::cursor::connect(&self.ctx(), &mut plan).await;
            match connected {
                Ok(conns) => {
                    fresh.extend(conns);
                    nodes.push(plan.targets[0].node.clone());
                }
                Err(e) => return self.error(w, e.into()).await,
            }
        }
        if transactional {
            for t in &plan.targets {
                if self.held.is_pinned(&t.node) {
                    continue;
                }
                // The session's kept connection joins the transaction (it holds the session's
                // state, or its table locks).
                // Not into an XA transaction: the coordinator keeps its connections at the
                // end, and the kept state would go with them; the XA transaction takes pooled
                // connections, and the kept ones wait for it to end.
                let xa = self.held.locks().is_none()
                    && (self.xa.is_some() || self.xa_on || server.config.system.two_phase_commit);
                // The connection a fallback read took above, when the kept one does not serve.
                let taken = if (xa || !self.held.is_kept(&t.node))
                    && let Some(mut conn) = fresh.pop()
                {
                    nodes.pop();
                    Self::apply_state(&self.state, conn.as_mut(), &t.node)
                        .await
                        .map(|()| held::Taken { conn, kept: false })
                } else {
                    let state = &self.state;
                    self.held
                        .take(server.cluster.as_ref(), &t.node, !xa, || {
                            Self::state_statements(state)
                        })
                        .await
                        .map_err(MysqlError::from)
                };
                let taken = match taken {
                    Ok(t) => t,
                    Err(e) => return self.error(w, e).await,
                };
                if let Err(e) = self.join(&t.node, taken).await {
                    return self.error(w, e).await;
                }
            }
        } else if fresh.is_empty() && keeps {
            // Session affinity: the kept connections, and new ones (on the writeHost, as the
            // state may be a write's) for the other nodes, kept afterwards.
            for t in &plan.targets {
                let taken = self.ctx().take_conn(&t.node, true).await;
                let conn = match taken {
                    Ok(t) => t.conn,
                    Err(e) => return self.error(w, e.into()).await,
                };
                fresh.push(conn);
                nodes.push(t.node.clone());
            }
        } else if fresh.is_empty() {
            // One connection per target (a fallback read was served above, unless a held
            // connection answers its node: then there is nothing to fall back from).
            plan.fallback.clear();
            let connected = engine::cursor::connect(&self.ctx(), &mut plan).await;
            match connected {
                Ok(conns) => {
                    nodes.extend(plan.targets.iter().map(|t| t.node.clone()));
                    fresh.extend(conns);
                }
                Err(e) => return self.error(w, e.into()).await,
            }
        }
        if !transactional && !self.state.is_empty() && !keeps {
            for (conn, t) in fresh.iter_mut().zip(&plan.targets) {
                if let Err(e) = Self::apply_state(&self.state, conn.as_mut(), &t.node).await {
                    return self.error(w, e).await;
                }
            }
        }
        // With `twoPhaseCommit`, that implicit transaction is an XA transaction.
        // (Not for a session that keeps its connections: the coordinator would take them.)
        let implicit_xa = (implicit && server.config.system.two_phase_commit && !keeps)
            .then(|| self.server.xa.begin(self.id));
        let locked = self.held.locks().is_some();
        if implicit {
            for (conn, t) in fresh.iter_mut().zip(&plan.targets) {
                let started = match &implicit_xa {
                    Some(gtrid) => {
                        xa_start_on(&self.server.xa, conn.as_mut(), gtrid, &t.node).await
                    }
                    // START TRANSACTION would release the table locks.
                    None if locked => held::open_on(conn.as_mut(), &t.node, Opening::AutocommitOff)
                        .await
                        .map_err(MysqlError::from),
                    None => held::open_on(conn.as_mut(), &t.node, Opening::Begin)
                        .await
                        .map_err(MysqlError::from),
                };
                if let Err(e) = started {
                    if let Some(gtrid) = &implicit_xa {
                        let _ = finish_implicit(
                            &self.server.xa,
                            fresh,
                            &plan,
                            "ROLLBACK",
                            Some(gtrid),
                            self.id,
                            false,
                        )
                        .await;
                    }
                    return self.error(w, e).await;
                }
            }
        }
        if transactional
            && !plan.read_only
            && let Some(tx) = &mut self.xa
        {
            tx.written
                .extend(plan.targets.iter().map(|t| t.node.clone()));
        }
        let slot = self.slot.clone();
        let status = self.status();
        slot.set_status(status.bits());
        let id = self.id;
        let handle = self.handle.clone();
        let binary = self.binary;
        let ran = {
            let mut ctx = self.ctx();
            let conns =
                engine::cursor::statement_conns(&mut ctx, transactional, fresh, &plan.targets);
            run_plan(&plan, conns, w, &slot, binary, &handle, transactional).await
        };
        let (w, finished) = match ran {
            Ran::Rows(sent) => {
                return self
                    .rows_sent(sent, transactional, fresh, &plan.targets)
                    .await;
            }
            Ran::Done(w, finished) => (w, finished),
        };
        // A read outside a transaction whose connection broke before its result began (the
        // server died or dropped a pooled connection) runs once more, on another eligible server
        // for the failed node. Nothing has reached the client yet. Writes and statements in a
        // transaction are never retried: the client gets the error. Nor is the read of a
        // session being killed: `KILL` broke its connection, and the session is ending.
        let (w, finished) = match finished {
            Err(e)
                if !transactional
                    && !keeps
                    && engine::cursor::retryable(&plan, &e)
                    && !handle.is_killed() =>
            {
                let failed = plan
                    .targets
                    .iter()
                    .position(|t| t.node == e.node)
                    .and_then(|i| fresh.get(i))
                    .map(|c| c.address().to_string())
                    .unwrap_or_default();
                tracing::warn!(connection = id, error = %e, "read retried after its connection broke");
                // The first attempt's connections go back to their pools (reset there).
                fresh.clear();
                let connected = engine::cursor::reconnect(&self.ctx(), &plan, &e, &failed).await;
                match connected {
                    Ok(conns) => fresh.extend(conns),
                    Err(e) => return self.error(w, e.into()).await,
                }
                for (conn, t) in fresh.iter_mut().zip(&plan.targets) {
                    if let Err(e) = Self::apply_state(&self.state, conn.as_mut(), &t.node).await {
                        return self.error(w, e).await;
                    }
                }
                let conns: Vec<&mut (dyn BackendConn + 'static)> =
                    fresh.iter_mut().map(|b| b.as_mut()).collect();
                match run_plan(&plan, conns, w, &slot, binary, &handle, false).await {
                    Ran::Rows(sent) => {
                        return self.rows_sent(sent, false, fresh, &plan.targets).await;
                    }
                    Ran::Done(w, again) => (w, again),
                }
            }
            other => (w, other),
        };
        match finished {
            Err(e) if transactional && ends_transaction(&e.source) => {
                // The server rolled its part of the transaction back (a deadlock victim), as
                // MySQL rolls back the whole transaction: so are the other dataNodes' parts,
                // which the client's next BEGIN or COMMIT would otherwise commit alone.
                self.next_insert_id = None;
                tracing::info!(connection = id, node = %e.node, error = %e, "the transaction was rolled back on every dataNode");
                let _ = self.end_transaction("ROLLBACK").await;
                self.held.take_interrupted();
                let e = self.logical_names(&e.node.clone(), e.into());
                send_error(&slot, w, e).await
            }
            Err(e) => {
                self.next_insert_id = None;
                if implicit {
                    let _ = finish_implicit(
                        &self.server.xa,
                        fresh,
                        &plan,
                        "ROLLBACK",
                        implicit_xa.as_deref(),
                        id,
                        locked,
                    )
                    .await;
                } else if transactional
                    && plan.targets.len() > 1
                    && !plan.read_only
                    && e.applied != Some(0)
                {
                    self.held
                        .interrupt(format!("a write to several dataNodes failed ({e})"));
                }
                // A connection the session keeps for its state (temporary tables, table
                // locks...) was lost: that state is gone on its server, and going on with a
                // fresh connection would hide it (a table thought locked, a temporary table
                // missing). As when a MySQL server connection is lost, the client's ends,
                // after this error.
                let lost = keeps && (e.source.is_closed() || e.source.is_timeout());
                let e = self.logical_names(&e.node.clone(), e.into());
                let answered = send_error(&slot, w, e).await;
                if lost {
                    tracing::warn!(
                        connection = id,
                        "a backend connection holding the session's state was lost: the session is closed"
                    );
                    self.handle.kill();
                }
                answered
            }
            Ok(mut ok) => {
                // The warnings stay on the backend connections, which go back to their pools
                // now: read them while they are held, for a later SHOW WARNINGS.
                if ok.warnings > 0 {
                    let warnings = {
                        let mut ctx = self.ctx();
                        let mut conns = engine::cursor::statement_conns(
                            &mut ctx,
                            transactional,
                            fresh,
                            &plan.targets,
                        );
                        // A global table's write ran on every node: its first node's warnings
                        // are the statement's (as its OK packet is).
                        if plan.ok_merge == OkMerge::First {
                            conns.truncate(1);
                        }
                        collect_warnings(&mut conns).await
                    };
                    self.warnings = warnings;
                    self.warning_count = ok.warnings;
                }
                if implicit
                    && let Err(e) = finish_implicit(
                        &self.server.xa,
                        fresh,
                        &plan,
                        "COMMIT",
                        implicit_xa.as_deref(),
                        id,
                        locked,
                    )
                    .await
                {
                    self.next_insert_id = None;
                    return send_error(&slot, w, e).await;
                }
                // Dropped tables leave the lock set ([`Session::execute`] ends an empty one).
                if locked && let Some(dropped) = crate::route::dropped_tables(&plan.targets[0].sql)
                {
                    self.held.drop_locked(&dropped);
                }
                if let Some(key) = self.next_insert_id.take() {
                    ok.last_insert_id = Some(key);
                }
                if let Some(key) = ok.last_insert_id.filter(|k| *k > 0) {
                    self.last_insert_id = key;
                }
                write_ok(&slot, w, ok, status).await
            }
        }
    }
}

/// How a statement went before the rest of its answer is written ([`run_plan`]).
enum Ran<'w> {
    /// Its result set went to the client (or did not: the client left).
    Rows(io::Result<Sent>),
    /// An OK or the first failing node's error, with the writer that is to answer.
    Done(
        QueryResultWriter<'w, Writer>,
        Result<OkInfo, engine::EngineError>,
    ),
}

/// Runs `plan` on `conns` (one per target, in order) and streams a result set to the client;
/// `handle` holds the connections' cancellers meanwhile, for `KILL QUERY`. When the client
/// leaves mid-result, the backend statements are stopped at once rather than left to run until
/// the connections are reset in their pools: a backend blocked sending rows notices an
/// interrupted statement only once they are read, which a pooled connection's next holder
/// would do, so outside a transaction those connections are closed instead (the pool replaces
/// them); pinned ones are read out by the ROLLBACK that follows.
async fn run_plan<'w>(
    plan: &Plan,
    conns: Vec<&mut (dyn BackendConn + 'static)>,
    w: QueryResultWriter<'w, Writer>,
    slot: &ErrorSlot,
    binary: bool,
    handle: &Handle,
    transactional: bool,
) -> Ran<'w> {
    handle.running(conns.iter().filter_map(|c| c.canceller()));
    let warning_counts: Vec<_> = conns.iter().filter_map(|c| c.warning_count()).collect();
    let ran = match engine::execute(plan, conns).await {
        Ok(Output::Rows {
            columns,
            rows,
            skipped,
        }) => {
            let sent = stream_rows(w, &columns, rows, slot, binary, &warning_counts).await;
            if sent.is_err() {
                handle.cancel_running(!transactional).await;
            }
            Ran::Rows(sent.map(|s| Sent {
                skipped: skipped.load(std::sync::atomic::Ordering::Relaxed),
                ..s
            }))
        }
        Ok(Output::Ok(ok)) => Ran::Done(w, Ok(ok)),
        Err(e) => Ran::Done(w, Err(e)),
    };
    handle.running(None);
    ran
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a failed look-up answers the client: Mycat's errno for each, the text as the
    /// engine words it, a context's own error passed through.
    #[test]
    fn lookup_failures_get_mycats_errnos() {
        let to = |e: LookupError<CtxError>| {
            let e = MysqlError::from(e);
            (e.code, e.state, e.message)
        };
        let (code, state, message) = to(LookupError::NoParent {
            child: "ORDER_ITEM".to_string(),
            parent: "ORDERS".to_string(),
        });
        assert_eq!((code, state.as_str()), (1064, "42000"));
        assert!(
            message.starts_with("can't find (root) parent sharding node for sql"),
            "{message}"
        );
        assert_eq!(to(LookupError::NoValueDrawn).0, 1003);
        let differ = LookupError::ColumnsDiffer {
            table: "t".to_string(),
            first_node: "dn1".to_string(),
            first: vec!["a".to_string()],
            node: "dn2".to_string(),
            columns: vec!["b".to_string()],
        };
        assert_eq!(to(differ).0, 1105);
        let refused = MysqlError::new(1003, "HY000", "mycat sequnce err.x");
        assert_eq!(
            to(LookupError::Ctx(CtxError::Refused(refused))),
            (1003, "HY000".to_string(), "mycat sequnce err.x".to_string())
        );
        let node = crate::engine::EngineError {
            node: "dn1".to_string(),
            source: crate::backend::BackendError::Server {
                code: 1146,
                state: "42S02".to_string(),
                message: "Table 'db1.t' doesn't exist".to_string(),
            },
            applied: None,
        };
        assert_eq!(to(LookupError::Node(node)).0, 1146);
    }
}
