//! The statement timeout towards backends: Mycat's `sqlExecuteTimeout` (server.xml `<system>`,
//! seconds, default 300; SPEC §3.2, §4.10).
//!
//! [`Deadline`] wraps every connection a dataNode hands out (`datahost`), so every wait on a
//! backend goes through it: sending a statement and waiting for its answer (OK, error or the
//! start of a result set), each row of a result set, `COM_STMT_PREPARE`'s description, the
//! first statement of a transaction. A wait that sees nothing from the server for the
//! timeout fails with [`BackendError::Timeout`] instead of hanging the client: a backend that
//! was stopped (SIGSTOP, a frozen VM, a network partition that drops packets) or a statement
//! that runs longer than that without a row. As in Mycat, the time is of inactivity, not the
//! statement's total: a result that keeps streaming rows is never cut. Time the gateway spends
//! not asking (its client reads slowly) does not count either.
//!
//! A connection that timed out is never reused: the driver is told to close it instead of
//! returning it to its pool ([`BackendConn::abandon`]), later calls on it fail at once, and the
//! statement is ended on the server (`KILL CONNECTION` on a connection of its own, in the
//! background, bounded by the connect timeout) so that it does not go on holding locks.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use futures::{Stream, StreamExt};
use tokio::time::{Instant, Sleep};

use super::{
    BackendConn, BackendError, Canceller, Column, Response, Row, RowStream, StringWeights,
};

/// A backend connection whose every wait is bounded by the statement timeout (module docs).
pub struct Deadline {
    inner: Box<dyn BackendConn>,
    timeout: Duration,
    /// An answer did not come in time: the connection is finished.
    expired: Arc<AtomicBool>,
}

impl Deadline {
    /// `inner`, with each wait on its server bounded by `timeout`.
    pub fn new(inner: Box<dyn BackendConn>, timeout: Duration) -> Self {
        Deadline {
            inner,
            timeout,
            expired: Arc::default(),
        }
    }

    /// Errors when an earlier wait timed out (the connection must not be used any more).
    fn usable(&mut self) -> Result<(), BackendError> {
        if self.expired.load(Ordering::Acquire) {
            self.inner.abandon();
            return Err(BackendError::Timeout(format!(
                "the connection to {} gave no answer within {} s (sqlExecuteTimeout) earlier and was closed",
                self.inner.address(),
                self.timeout.as_secs()
            )));
        }
        Ok(())
    }

    fn expiry(&self) -> Expiry {
        Expiry {
            expired: self.expired.clone(),
            canceller: self.inner.canceller(),
            address: self.inner.address().into(),
            timeout: self.timeout,
        }
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        // Before the connection goes back to its pool.
        if self.expired.load(Ordering::Acquire) {
            self.inner.abandon();
        }
    }
}

/// `what`, bounded by `timeout`; on expiry the connection is finished ([`Expiry::fire`]).
async fn bounded<T>(
    timeout: Duration,
    expiry: Expiry,
    what: impl Future<Output = Result<T, BackendError>>,
) -> Result<T, BackendError> {
    match tokio::time::timeout(timeout, what).await {
        Ok(done) => done,
        Err(_) => Err(expiry.fire()),
    }
}

/// What a wait that timed out does: marks the connection finished, ends its statement on the
/// server, and gives the error.
#[derive(Clone)]
struct Expiry {
    expired: Arc<AtomicBool>,
    canceller: Option<Arc<dyn Canceller>>,
    address: Arc<str>,
    timeout: Duration,
}

impl Expiry {
    fn fire(&self) -> BackendError {
        self.expired.store(true, Ordering::Release);
        tracing::warn!(address = %self.address, timeout_s = self.timeout.as_secs(), "backend gave no answer within sqlExecuteTimeout: statement abandoned, connection closed");
        if let Some(c) = self.canceller.clone() {
            let address = self.address.clone();
            tokio::spawn(async move {
                if let Err(e) = c.close().await {
                    tracing::info!(%address, error = %e, "ending a timed-out statement on its server failed");
                }
            });
        }
        BackendError::Timeout(format!(
            "no answer from the server at {} within {} s (sqlExecuteTimeout): the statement was abandoned and its connection closed",
            self.address,
            self.timeout.as_secs()
        ))
    }
}

/// A result set's rows, each wait for the next one bounded by the timeout.
struct Rows<'a> {
    inner: RowStream<'a>,
    expiry: Expiry,
    /// Armed when the stream first had to wait since its last row; `None` before the first
    /// wait (created lazily: most results are read without one).
    sleep: Option<Pin<Box<Sleep>>>,
    /// The current wait's timer is armed (cleared by each row).
    waiting: bool,
    done: bool,
}

impl Stream for Rows<'_> {
    type Item = Result<Row, BackendError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Poll::Ready(item) = this.inner.poll_next_unpin(cx) {
            this.waiting = false;
            this.done = item.is_none();
            return Poll::Ready(item);
        }
        if !this.waiting {
            this.waiting = true;
            let deadline = Instant::now() + this.expiry.timeout;
            match this.sleep.as_mut() {
                Some(s) => s.as_mut().reset(deadline),
                None => this.sleep = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
        }
        let Some(sleep) = this.sleep.as_mut() else {
            return Poll::Pending;
        };
        match sleep.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => {
                this.done = true;
                Poll::Ready(Some(Err(this.expiry.fire())))
            }
        }
    }
}

#[async_trait]
impl BackendConn for Deadline {
    fn address(&self) -> &str {
        self.inner.address()
    }

    async fn select_database(&mut self, database: &str) -> Result<(), BackendError> {
        self.usable()?;
        bounded(
            self.timeout,
            self.expiry(),
            self.inner.select_database(database),
        )
        .await
    }

    async fn query<'a>(&'a mut self, sql: &'a str) -> Result<Response<'a>, BackendError> {
        self.usable()?;
        let expiry = self.expiry();
        // The answer borrows the inner connection for 'a: on expiry only the shared flag is
        // set here, and the connection is abandoned on the next call or when dropped.
        let answer = bounded(self.timeout, expiry.clone(), self.inner.query(sql)).await?;
        Ok(match answer {
            Response::Ok(ok) => Response::Ok(ok),
            Response::Rows { columns, rows } => Response::Rows {
                columns,
                rows: Rows {
                    inner: rows,
                    expiry,
                    sleep: None,
                    waiting: false,
                    done: false,
                }
                .boxed(),
            },
        })
    }

    async fn begin(&mut self) -> Result<(), BackendError> {
        self.usable()?;
        bounded(self.timeout, self.expiry(), self.inner.begin()).await
    }

    async fn savepoint(
        &mut self,
        op: super::SavepointOp,
        name: &crate::sqltext::SavepointName,
    ) -> Result<(), BackendError> {
        self.usable()?;
        bounded(self.timeout, self.expiry(), self.inner.savepoint(op, name)).await
    }

    async fn describe(&mut self, sql: &str) -> Result<(usize, Vec<Column>), BackendError> {
        self.usable()?;
        bounded(self.timeout, self.expiry(), self.inner.describe(sql)).await
    }

    async fn xa_start(&mut self, xid: &super::Xid) -> Result<(), BackendError> {
        self.usable()?;
        bounded(self.timeout, self.expiry(), self.inner.xa_start(xid)).await
    }

    async fn xa_prepare(&mut self, xid: &super::Xid) -> Result<(), BackendError> {
        self.usable()?;
        bounded(self.timeout, self.expiry(), self.inner.xa_prepare(xid)).await
    }

    async fn xa_commit(&mut self, xid: &super::Xid, one_phase: bool) -> Result<(), BackendError> {
        self.usable()?;
        bounded(
            self.timeout,
            self.expiry(),
            self.inner.xa_commit(xid, one_phase),
        )
        .await
    }

    async fn xa_rollback(&mut self, xid: &super::Xid, prepared: bool) -> Result<(), BackendError> {
        self.usable()?;
        bounded(
            self.timeout,
            self.expiry(),
            self.inner.xa_rollback(xid, prepared),
        )
        .await
    }

    async fn xa_unready(&mut self) -> Result<Option<String>, BackendError> {
        self.usable()?;
        bounded(self.timeout, self.expiry(), self.inner.xa_unready()).await
    }

    async fn xa_recover(&mut self) -> Result<Vec<super::Xid>, BackendError> {
        self.usable()?;
        bounded(self.timeout, self.expiry(), self.inner.xa_recover()).await
    }

    async fn in_recovery(&mut self) -> Result<Option<bool>, BackendError> {
        self.usable()?;
        bounded(self.timeout, self.expiry(), self.inner.in_recovery()).await
    }

    async fn excess_privileges(
        &mut self,
    ) -> Result<Vec<super::grants::ExcessPrivilege>, BackendError> {
        self.usable()?;
        bounded(self.timeout, self.expiry(), self.inner.excess_privileges()).await
    }

    fn string_weights(&self) -> StringWeights {
        self.inner.string_weights()
    }

    fn canceller(&self) -> Option<Arc<dyn Canceller>> {
        self.inner.canceller()
    }

    fn warning_count(&self) -> Option<Arc<AtomicU16>> {
        self.inner.warning_count()
    }

    fn abandon(&mut self) {
        self.expired.store(true, Ordering::Release);
        self.inner.abandon();
    }

    fn track_writes(&mut self, acked: Arc<super::position::Acked>) {
        self.inner.track_writes(acked);
    }

    async fn fence(&mut self) -> Result<(Result<(), String>, usize), BackendError> {
        self.inner.fence().await
    }

    async fn unfence(&mut self) -> Result<(), BackendError> {
        self.inner.unfence().await
    }
}
