//! The seam through which the engine reaches dataNodes: [`ExecCtx`] (Vitess's VCursor,
//! DESIGN.md's `ExecCtx`).
//!
//! The engine decides *which* connections a plan needs and what to do when one cannot be had:
//! a read any of several dataNodes can answer moves on to the next node when the chosen one's
//! server cannot be reached ([`connect`]), and a read whose connection broke before its result
//! began runs once more, on another server for the failed node ([`retryable`],
//! [`reconnect`]). *How* a connection is had — which physical server per `balance` and the
//! hint, the pool, health, the session's settings — is the implementor's: the session
//! implements the trait over `datahost`; tests implement it with a recording fake (below), so
//! these policies are checked without a database.
//!
//! The look-ups that come before a plan — Mycat sequence draws, the column order of a table
//! an INSERT fills without a column list, the dataNode of an ER child row's parent, the
//! `information_schema` reads of a metadata query — run through the same seam
//! ([`ExecCtx::draw`], [`ExecCtx::session_conn`]; module [`super::lookup`]). For them the
//! implementor decides, once, whether the session's own connection for a node answers (the
//! one pinned to its transaction, so rows it wrote itself are seen, or one kept for its state)
//! or a fresh one ([`Lease`]). Connections pinned to a transaction for the statement itself are
//! still handed to [`super::execute`] by the session.

use std::future::Future;

use futures::future::join_all;

use super::EngineError;
use crate::backend::BackendConn;
use crate::route::{Plan, Target};

/// Where the engine gets connections from (module docs).
///
/// `connect` takes `&self` so that the engine can ask for several dataNodes' connections at
/// once; implementors hold shared references (the datahost cluster, the session's settings).
pub trait ExecCtx: Sync {
    /// A failure to get a connection, as the implementor reports it (it names the dataNode
    /// and the server); [`ExecCtx::unreachable`] classifies it.
    type Error: std::fmt::Display + Send;

    /// A connection on `node` for running `plan`'s statement there (the plan says whether it
    /// reads or writes and which server a hint asked for). `instead_of`: the `host:port` of a
    /// server that just failed for this node, to be avoided when another eligible one exists.
    fn connect(
        &self,
        node: &str,
        plan: &Plan,
        instead_of: Option<&str>,
    ) -> impl Future<Output = Result<Box<dyn BackendConn>, Self::Error>> + Send;

    /// Whether `e` says the server could not be reached (refused, broken, timed out, marked
    /// down), so that another server holding the same rows may answer; `false` for what a
    /// server or the gateway refused, which another node would refuse alike.
    fn unreachable(e: &Self::Error) -> bool;

    /// The connection a look-up on `node` runs on: the session's own for that node (pinned to
    /// its transaction, or kept for its state) when `purpose` may use it, else a fresh one
    /// (module docs). A fresh one is dropped (back to its pool) with the [`Lease`].
    fn session_conn(
        &mut self,
        node: &str,
        purpose: Purpose<'_>,
    ) -> impl Future<Output = Result<Lease<'_>, Self::Error>> + Send;

    /// A connection for `node` that the session takes for itself, to pin it to its transaction
    /// or keep it for its state: the one it keeps for its state when `kept` allows and it has
    /// one ([`Taken::kept`]), else a fresh one on the writeHost with the session's settings.
    fn take_conn(
        &mut self,
        node: &str,
        kept: bool,
    ) -> impl Future<Output = Result<Taken, Self::Error>> + Send;

    /// The connections the session has pinned to its transaction for `targets`' nodes, in
    /// target order (a node without one is left out).
    fn pinned_for(&mut self, targets: &[Target]) -> Vec<&mut (dyn BackendConn + 'static)>;

    /// `count` new values of Mycat global sequence `name` (upper-cased), from the handler the
    /// configuration selects (SPEC §5.17), in increasing order for the file and database
    /// handlers.
    ///
    /// Errors: the handler's (an unknown sequence, a database that cannot be asked), worded
    /// with Mycat's `mycat sequnce err.` prefix.
    fn draw(
        &mut self,
        name: &str,
        count: usize,
    ) -> impl Future<Output = Result<Vec<i64>, Self::Error>> + Send;
}

/// A connection the session took for itself ([`ExecCtx::take_conn`]).
pub struct Taken {
    pub conn: Box<dyn BackendConn>,
    /// It was the one the session kept for its state (its settings are on it already); a
    /// fresh one had them replayed.
    pub kept: bool,
}

/// The connections a statement runs on, in target order: inside the session's transaction
/// the ones pinned to it ([`ExecCtx::pinned_for`]), else `fresh`, those taken for it.
pub fn statement_conns<'a, C: ExecCtx>(
    ctx: &'a mut C,
    in_transaction: bool,
    fresh: &'a mut [Box<dyn BackendConn>],
    targets: &[Target],
) -> Vec<&'a mut (dyn BackendConn + 'static)> {
    if in_transaction {
        ctx.pinned_for(targets)
    } else {
        fresh.iter_mut().map(|b| b.as_mut()).collect()
    }
}

/// What a look-up's connection is for ([`ExecCtx::session_conn`]), which decides the fresh
/// connection's server and set-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose<'a> {
    /// A statement the gateway runs for the session (an ER parent's row, a table's column
    /// order, a statement's description, a `SET` check) reading `table` (as spelled; `None`
    /// when it names none): the session's own connection unless tables are locked and `table`
    /// is not among them (the backend would refuse it there with 1100); a fresh one is the
    /// writeHost's, with the session's settings replayed on it.
    Session(Option<&'a str>),
    /// A read of `information_schema` for a metadata query: the session's own connection
    /// whatever it locked, else a fresh one chosen as for a read (`balance`), without the
    /// session's settings.
    Metadata,
}

/// The connection of a look-up ([`ExecCtx::session_conn`]).
pub enum Lease<'a> {
    /// The session's own, lent for the look-up.
    Held(&'a mut (dyn BackendConn + 'static)),
    /// Taken for the look-up; back to its pool when dropped.
    Fresh(Box<dyn BackendConn>),
}

impl Lease<'_> {
    /// The connection, whichever it is.
    pub fn conn(&mut self) -> &mut (dyn BackendConn + 'static) {
        match self {
            Lease::Held(c) => &mut **c,
            Lease::Fresh(c) => c.as_mut(),
        }
    }
}

/// Connections for every target of `plan`, in target order, for a statement run outside a
/// transaction on connections taken for it.
///
/// A read any of several dataNodes can answer (`plan.fallback` not empty; its one target is
/// the chosen node): when the chosen node's server cannot be reached, the next candidate takes
/// its place in `plan.targets[0]` (so the statement sent is that node's), until one answers;
/// `plan.fallback` is emptied. Other plans get one connection per target, asked for at once.
///
/// Errors: the first target's failure in target order; for a fallback read, the last
/// candidate's when none could be reached, or at once the first failure that is not
/// [`ExecCtx::unreachable`].
pub async fn connect<C: ExecCtx>(
    ctx: &C,
    plan: &mut Plan,
) -> Result<Vec<Box<dyn BackendConn>>, C::Error> {
    if !plan.fallback.is_empty() {
        let mut candidates = std::mem::take(&mut plan.fallback).into_iter();
        loop {
            match ctx.connect(&plan.targets[0].node, plan, None).await {
                Ok(c) => return Ok(vec![c]),
                Err(e) if C::unreachable(&e) => match candidates.next() {
                    Some(next) => {
                        tracing::warn!(error = %e, next = %next.node, "trying another dataNode");
                        plan.targets[0] = next;
                    }
                    None => return Err(e),
                },
                Err(e) => return Err(e),
            }
        }
    }
    let plan = &*plan;
    join_all(
        plan.targets
            .iter()
            .map(|t| ctx.connect(&t.node, plan, None)),
    )
    .await
    .into_iter()
    .collect()
}

/// Whether a statement that failed with `e` may run once more on new connections: a read
/// whose connection broke (the server died or dropped a pooled connection). Writes never are:
/// a write may have been applied before its connection broke. The caller adds what only it
/// knows: nothing has reached the client yet, the statement is outside a transaction and
/// outside a session keeping its connections, and the session is not being killed.
pub fn retryable(plan: &Plan, e: &EngineError) -> bool {
    plan.read_only && e.source.is_closed()
}

/// Connections for running `plan` once more after `failed` ([`retryable`]): for the failed
/// dataNode another eligible server than `failed_address` (the `host:port` its connection
/// was on) where there is one, for the others a connection as for a first run.
///
/// Errors: the first target's failure in target order.
pub async fn reconnect<C: ExecCtx>(
    ctx: &C,
    plan: &Plan,
    failed: &EngineError,
    failed_address: &str,
) -> Result<Vec<Box<dyn BackendConn>>, C::Error> {
    join_all(plan.targets.iter().map(|t| {
        let instead_of = (t.node == failed.node).then_some(failed_address);
        ctx.connect(&t.node, plan, instead_of)
    }))
    .await
    .into_iter()
    .collect()
}

#[cfg(test)]
pub(crate) mod fake;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures::StreamExt;

    use super::fake::{Answer, Reach, Recorder, target};
    use super::*;
    use crate::backend::BackendError;
    use crate::engine::{Output, execute};
    use crate::route::{HostHint, OkMerge};

    fn plan(read_only: bool, targets: Vec<Target>, fallback: Vec<Target>) -> Plan {
        Plan {
            targets,
            read_only,
            ok_merge: OkMerge::Sum,
            merge: None,
            fallback,
            ddl: false,
            host: HostHint::None,
            tables: Arc::from(Vec::new()),
            server_variables: false,
            table_names: None,
        }
    }

    fn rows() -> Answer {
        Answer::Rows(vec!["c"], vec![vec!["1"]])
    }

    fn broken() -> BackendError {
        BackendError::Closed("connection reset".to_string())
    }

    #[tokio::test]
    async fn a_read_any_node_can_answer_moves_on_past_unreachable_servers_only() {
        let ctx = Recorder::default()
            .node("dn1", vec![Reach::Fails(true)], rows())
            .node("dn2", vec![Reach::Server("h2:3306")], rows())
            .node("dn3", vec![Reach::Server("h3:3306")], rows());
        let mut p = plan(
            true,
            vec![target("dn1", "SELECT 1")],
            vec![target("dn2", "SELECT 2"), target("dn3", "SELECT 3")],
        );
        let conns = connect(&ctx, &mut p).await.unwrap();
        assert_eq!(conns.len(), 1);
        assert_eq!(conns[0].address(), "h2:3306");
        // The statement is now the one written for the node that answers.
        assert_eq!(&*p.targets[0].sql, "SELECT 2");
        assert!(p.fallback.is_empty());
        assert_eq!(ctx.log(), ["connect dn1", "connect dn2"]);

        // A refusal is not a reason to ask another node: it would refuse alike.
        let ctx = Recorder::default()
            .node("dn1", vec![Reach::Fails(false)], rows())
            .node("dn2", vec![Reach::Server("h2:3306")], rows());
        let mut p = plan(
            true,
            vec![target("dn1", "SELECT 1")],
            vec![target("dn2", "SELECT 2")],
        );
        assert!(connect(&ctx, &mut p).await.is_err());
        assert_eq!(ctx.log(), ["connect dn1"]);

        // No candidate left: the last failure.
        let ctx = Recorder::default()
            .node("dn1", vec![Reach::Fails(true)], rows())
            .node("dn2", vec![Reach::Fails(true)], rows());
        let mut p = plan(
            true,
            vec![target("dn1", "SELECT 1")],
            vec![target("dn2", "SELECT 2")],
        );
        let e = connect(&ctx, &mut p).await.err().unwrap();
        assert_eq!(e.to_string(), "dataNode dn2: no connection");
    }

    #[tokio::test]
    async fn every_target_gets_a_connection_in_target_order() {
        let ctx = Recorder::default()
            .node("dn1", vec![Reach::Server("h1:3306")], rows())
            .node("dn2", vec![Reach::Server("h2:3306")], rows());
        let mut p = plan(
            true,
            vec![target("dn1", "SELECT 1"), target("dn2", "SELECT 1")],
            Vec::new(),
        );
        let conns = connect(&ctx, &mut p).await.unwrap();
        let addresses: Vec<_> = conns.iter().map(|c| c.address()).collect();
        assert_eq!(addresses, ["h1:3306", "h2:3306"]);

        let ctx = Recorder::default()
            .node("dn1", vec![Reach::Server("h1:3306")], rows())
            .node("dn2", vec![Reach::Fails(true)], rows());
        let e = connect(&ctx, &mut p).await.err().unwrap();
        assert_eq!(e.to_string(), "dataNode dn2: no connection");
    }

    #[tokio::test]
    async fn a_broken_read_runs_again_elsewhere_and_a_broken_write_does_not() {
        let ctx = Recorder::default()
            .node(
                "dn1",
                vec![Reach::Server("h1:3306"), Reach::Server("r1:3306")],
                rows(),
            )
            .node("dn2", vec![Reach::Server("h2:3306")], rows());
        let p = plan(
            true,
            vec![target("dn1", "SELECT c"), target("dn2", "SELECT c")],
            Vec::new(),
        );
        let failed = EngineError {
            node: "dn1".to_string(),
            source: broken(),
            applied: None,
        };
        assert!(retryable(&p, &failed));
        let conns = reconnect(&ctx, &p, &failed, "h1:3306").await.unwrap();
        assert_eq!(conns[0].address(), "h1:3306"); // the fake's first turn, as asked
        assert_eq!(
            ctx.log(),
            ["connect dn1 instead of h1:3306", "connect dn2"],
            "only the failed node avoids its server"
        );

        let write = plan(false, vec![target("dn1", "DELETE FROM t")], Vec::new());
        assert!(!retryable(&write, &failed));
        let refused = EngineError {
            node: "dn1".to_string(),
            source: BackendError::Server {
                code: 1146,
                state: "42S02".to_string(),
                message: "Table 'db1.t' doesn't exist".to_string(),
            },
            applied: None,
        };
        assert!(!retryable(&p, &refused));
    }

    #[tokio::test]
    async fn writes_to_several_nodes_run_in_node_order_and_stop_at_the_first_failure() {
        let ctx = Recorder::default()
            .node("dn1", vec![Reach::Server("h1:3306")], Answer::Ok(2))
            .node(
                "dn2",
                vec![Reach::Server("h2:3306")],
                Answer::Fails(BackendError::Server {
                    code: 1062,
                    state: "23000".to_string(),
                    message: "Duplicate entry '5' for key 'PRIMARY'".to_string(),
                }),
            )
            .node("dn3", vec![Reach::Server("h3:3306")], Answer::Ok(1));
        let mut p = plan(
            false,
            vec![
                target("dn1", "UPDATE t SET a = 1"),
                target("dn2", "UPDATE t SET a = 1"),
                target("dn3", "UPDATE t SET a = 1"),
            ],
            Vec::new(),
        );
        let mut conns = connect(&ctx, &mut p).await.unwrap();
        let refs = conns.iter_mut().map(|c| c.as_mut()).collect();
        let e = match execute(&p, refs).await {
            Err(e) => e,
            Ok(_) => panic!("dn2's failure must fail the statement"),
        };
        assert_eq!((e.node.as_str(), e.applied), ("dn2", Some(1)));
        assert_eq!(
            ctx.log()[3..],
            [
                "dn1@h1:3306: UPDATE t SET a = 1",
                "dn2@h2:3306: UPDATE t SET a = 1"
            ],
            "dn3 is never written once dn2 failed"
        );
    }

    #[tokio::test]
    async fn reads_of_several_nodes_are_concatenated_and_oks_summed() {
        let ctx = Recorder::default()
            .node(
                "dn1",
                vec![Reach::Server("h1:3306")],
                Answer::Rows(vec!["c"], vec![vec!["1"], vec!["2"]]),
            )
            .node(
                "dn2",
                vec![Reach::Server("h2:3306")],
                Answer::Rows(vec!["c"], vec![vec!["3"]]),
            );
        let mut p = plan(
            true,
            vec![
                target("dn1", "SELECT c FROM t"),
                target("dn2", "SELECT c FROM t"),
            ],
            Vec::new(),
        );
        let mut conns = connect(&ctx, &mut p).await.unwrap();
        let refs = conns.iter_mut().map(|c| c.as_mut()).collect();
        let mut got: Vec<String> = {
            match execute(&p, refs).await {
                Ok(Output::Rows { rows, .. }) => {
                    rows.map(|r| r.unwrap()[0].to_text().unwrap())
                        .collect()
                        .await
                }
                _ => panic!("a result set"),
            }
        };
        got.sort();
        assert_eq!(got, ["1", "2", "3"]);

        let ctx = Recorder::default()
            .node("dn1", vec![Reach::Server("h1:3306")], Answer::Ok(2))
            .node("dn2", vec![Reach::Server("h2:3306")], Answer::Ok(3));
        let mut p = plan(
            false,
            vec![
                target("dn1", "DELETE FROM t"),
                target("dn2", "DELETE FROM t"),
            ],
            Vec::new(),
        );
        let mut conns = connect(&ctx, &mut p).await.unwrap();
        let refs = conns.iter_mut().map(|c| c.as_mut()).collect();
        match execute(&p, refs).await {
            Ok(Output::Ok(ok)) => assert_eq!(ok.affected_rows, 5),
            _ => panic!("an OK"),
        }
    }

    #[tokio::test]
    async fn in_a_transaction_a_statement_runs_on_the_pinned_connections_in_target_order() {
        let mut ctx = Recorder::default()
            .node("dn1", vec![Reach::Server("h1:3306")], Answer::Ok(1))
            .node("dn2", vec![Reach::Server("h2:3306")], Answer::Ok(1))
            .node("dn3", vec![Reach::Server("h3:3306")], Answer::Ok(1))
            .holding("dn2", "pinned2:3306")
            .holding("dn1", "pinned1:3306");
        let p = plan(
            false,
            vec![
                target("dn2", "UPDATE t SET a = 1"),
                target("dn1", "UPDATE t SET a = 1"),
            ],
            Vec::new(),
        );
        let mut fresh = Vec::new();
        let conns = statement_conns(&mut ctx, true, &mut fresh, &p.targets);
        let addresses: Vec<_> = conns.iter().map(|c| c.address().to_string()).collect();
        assert_eq!(addresses, ["pinned2:3306", "pinned1:3306"]);
        assert!(ctx.log().is_empty(), "no connection taken: {:?}", ctx.log());

        // Outside it: the connections taken for the statement, whatever the session holds.
        let mut p = plan(false, vec![target("dn3", "DELETE FROM t")], Vec::new());
        let mut fresh = connect(&ctx, &mut p).await.unwrap();
        let conns = statement_conns(&mut ctx, false, &mut fresh, &p.targets);
        assert_eq!(conns[0].address(), "h3:3306");

        // What the session takes for itself: its kept connection, once; then a fresh one.
        let kept = ctx.take_conn("dn1", true).await.unwrap();
        assert!(kept.kept);
        assert_eq!(kept.conn.address(), "pinned1:3306");
        let again = ctx.take_conn("dn1", true).await.unwrap();
        assert!(!again.kept);
        assert_eq!(again.conn.address(), "h1:3306");
        assert_eq!(ctx.log(), ["connect dn3", "take dn1 kept", "connect dn1"]);
    }

    #[tokio::test]
    async fn nodes_disagreeing_on_the_columns_fail_by_name() {
        let ctx = Recorder::default()
            .node(
                "dn1",
                vec![Reach::Server("h1:3306")],
                Answer::Rows(vec!["a"], vec![]),
            )
            .node(
                "dn2",
                vec![Reach::Server("h2:3306")],
                Answer::Rows(vec!["a", "b"], vec![]),
            );
        let mut p = plan(
            true,
            vec![
                target("dn1", "SELECT * FROM t"),
                target("dn2", "SELECT * FROM t"),
            ],
            Vec::new(),
        );
        let mut conns = connect(&ctx, &mut p).await.unwrap();
        let refs = conns.iter_mut().map(|c| c.as_mut()).collect();
        let e = match execute(&p, refs).await {
            Err(e) => e,
            Ok(_) => panic!("the column counts differ"),
        };
        assert!(e.to_string().contains("returned 1 and 2 columns"), "{e}");
    }
}
