//! Limits on client connections: how many the gateway holds, how long one may take to log in,
//! and Mycat's per-user `benchmark`.
//!
//! - `maxConnections` (server.xml `<system>`, manx only; Mycat 1.6 has no such cap): every
//!   accepted socket, logged in or not, takes a [`Slot`] until its session ends. Past the cap
//!   the socket gets MySQL's `Too many connections` (1040) as its first packet, in place of the
//!   greeting, as a MySQL server at `max_connections` sends it, and is closed.
//! - `authTimeout` (Mycat's, milliseconds, default 15 000): a session that has not logged in
//!   that long after it was accepted is closed ([`login_deadline`]); so is one stuck half way
//!   through its TLS handshake or its login packet.
//! - `wait_timeout` (the session variable, MariaDB's rule): a logged-in client connection that
//!   stays idle — no command read, no response written, no statement running — for the
//!   session's `wait_timeout` seconds is closed ([`idle_deadline`]), as MariaDB closes it:
//!   without a packet (the client's next command reads the end of the stream: PyMySQL 2013
//!   `Lost connection`, libmariadb 2006 `server has gone away`). Closing the session rolls back
//!   its open transaction and gives back the backend connections it held. A session starts
//!   with MariaDB's default, 28,800 s, whether or not the client sets `CLIENT_INTERACTIVE`
//!   (MariaDB then starts it at the global `interactive_timeout`, whose default is the same);
//!   `SET [SESSION] wait_timeout = n` changes it, COM_RESET_CONNECTION and COM_CHANGE_USER put
//!   it back. A `SET interactive_timeout` changes nothing for the session, as in MariaDB (it is
//!   only read when a connection starts).
//! - `benchmark` (a `<user>` property, SPEC §3.3): a user's login is refused while the gateway
//!   holds more client connections than the user's benchmark ([`degraded`]).

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::registry::Handle;
use super::wire::tap::{ErrPacket, ErrorSlot};
use crate::config::UserConfig;

/// The client connections the gateway holds (`maxConnections`).
#[derive(Debug)]
pub struct Connections {
    open: Arc<AtomicUsize>,
    max: usize,
}

/// One counted client connection; dropping it frees its place.
#[derive(Debug)]
pub struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Connections {
    /// A count of none, capped at `max` connections.
    pub fn new(max: usize) -> Self {
        Connections {
            open: Arc::default(),
            max,
        }
    }

    /// The cap (`maxConnections`).
    pub fn max(&self) -> usize {
        self.max
    }

    /// A place for one more connection, or `None` when `max` are open.
    pub fn open(&self) -> Option<Slot> {
        let before = self.open.fetch_add(1, Ordering::AcqRel);
        // Dropped at once when over the cap, which takes the increment back.
        let slot = Slot(self.open.clone());
        (before < self.max).then_some(slot)
    }

    /// Connections open now, counting those not logged in yet.
    pub fn count(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }
}

/// MySQL's `ER_CON_COUNT_ERROR`.
const TOO_MANY_CONNECTIONS: u16 = 1040;

/// How long a refused client gets to take its error before the socket is closed regardless.
const REFUSAL_WRITE: Duration = Duration::from_secs(1);

/// Answers a client over `maxConnections` with 1040 `Too many connections` and closes it, in a
/// task of its own (a client that does not read cannot hold up the accept loop).
///
/// The packet is an ERR with sequence id 0 and no SQLSTATE marker: before the handshake the
/// client's capabilities are unknown, and MySQL (and clients such as mysql_async) then write
/// and read an error without one (clients report SQLSTATE HY000 or 08004 on their own).
pub fn refuse_connection(stream: TcpStream) {
    refuse_with(stream, TOO_MANY_CONNECTIONS, "Too many connections");
}

/// Answers a new client with error `code` / `message` in place of the greeting and closes it,
/// as [`refuse_connection`] does (also while the gateway is offline: 1053, which load
/// balancers' MySQL checks read from the greeting, see `super::manager`).
pub fn refuse_with(mut stream: TcpStream, code: u16, message: &str) {
    let message = message.as_bytes();
    let mut packet = Vec::with_capacity(4 + 3 + message.len());
    let len = (3 + message.len()) as u32;
    packet.extend_from_slice(&len.to_le_bytes()[..3]);
    packet.push(0);
    packet.push(0xFF);
    packet.extend_from_slice(&code.to_le_bytes());
    packet.extend_from_slice(message);
    tokio::spawn(async move {
        let sent = tokio::time::timeout(REFUSAL_WRITE, async {
            stream.write_all(&packet).await?;
            stream.shutdown().await
        })
        .await;
        if let Ok(Err(e)) = sent {
            tracing::debug!(error = %e, "refusing a connection");
        }
        Ok::<(), io::Error>(())
    });
}

/// Completes `timeout` after the call unless the session of `handle` has logged in by then (it
/// then never completes): the session's end for a client that does not finish its login
/// within `authTimeout`.
pub async fn login_deadline(handle: &Handle, timeout: Duration) {
    tokio::time::sleep(timeout).await;
    if handle.user().is_some() {
        std::future::pending::<()>().await;
    }
}

/// Completes once the logged-in session of `handle` has been idle for its `wait_timeout`
/// (module docs): nothing read from or written to the client (`slot`'s activity, or the
/// session's start) for that long, and no statement running. Never completes before the
/// login (`authTimeout` governs then).
pub async fn idle_deadline(handle: &Handle, slot: &ErrorSlot) {
    // Rechecked at least this often while a statement runs, at most this often otherwise.
    const MIN_CHECK: Duration = Duration::from_millis(50);
    loop {
        let timeout = handle.wait_timeout();
        let idle = slot.idle_for().unwrap_or_else(|| handle.since.elapsed());
        let wait = if handle.user().is_none() || handle.statement_running() {
            // Not idle now: looked at again once a whole timeout could have passed.
            timeout
        } else if idle >= timeout {
            return;
        } else {
            timeout - idle
        };
        tokio::select! {
            _ = tokio::time::sleep(wait.max(MIN_CHECK)) => {}
            _ = handle.wait_timeout_changed() => {}
        }
    }
}

/// The refusal of `user`'s login while `connections` client connections are open (counting
/// the one logging in), if its `benchmark` says so: 1045 / 28000 with Mycat's message
/// `Access denied for user 'U', because service be degraded` (SPEC §3.3). Mycat refuses when
/// `connections >= benchmark`, so a benchmark of N admits N - 1 connections; manx admits N.
pub fn degraded(user: &UserConfig, connections: usize) -> Option<ErrPacket> {
    (user.benchmark > 0 && connections > user.benchmark).then(|| ErrPacket {
        code: 1045,
        state: "28000".to_string(),
        message: format!(
            "Access denied for user '{}', because service be degraded (the gateway holds {connections} client connections, benchmark {})",
            user.name, user.benchmark
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_capped_and_freed_when_dropped() {
        let c = Connections::new(2);
        let a = c.open().expect("first");
        let b = c.open().expect("second");
        assert!(c.open().is_none(), "a third is over the cap");
        assert_eq!(c.count(), 2, "a refused one is not counted");
        drop(a);
        let _c = c.open().expect("a freed place is taken again");
        drop(b);
        assert_eq!(c.count(), 1);
    }
}
