//! The gateway's client sessions by connection id (the id of the handshake, `CONNECTION_ID()`):
//! what `KILL` / COM_PROCESS_KILL act on, and the counters COM_STATISTICS reports.
//!
//! Each session registers a [`Handle`] for its lifetime. While a statement runs, the handle
//! holds the cancellers of the backend connections it uses ([`Handle::running`]), so another
//! session's `KILL QUERY` can interrupt it on the backends (`KILL QUERY <thread>` there), and
//! `KILL [CONNECTION]` ends those backend connections (`KILL CONNECTION <thread>`: a backend
//! blocked sending rows stops at once) and then the session ([`Handle::killed`]).
//!
//! A canceller is dropped from the handle when its statement ends, but a `KILL QUERY` that
//! took it a moment before may still reach the backend connection after it went back to its
//! pool and another session's statement started on it; MySQL has no such window.
//!
//! Who may kill what (manx's rule, simpler than MySQL's `SUPER`/`CONNECTION_ADMIN`): a user may
//! kill the sessions logged in as the same `server.xml` user, its own included; any other id
//! gets 1095 `You are not owner of thread N`, an id no session has 1094 `Unknown thread id: N`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use tokio::sync::Notify;

use crate::backend::Canceller;

/// The `wait_timeout` (and `interactive_timeout`) a session starts with, in seconds:
/// MariaDB's and MySQL's default global value (8 hours).
pub const DEFAULT_WAIT_TIMEOUT: u64 = 28_800;

/// The largest `wait_timeout` MariaDB takes, in seconds (a year); larger values are clamped.
const MAX_WAIT_TIMEOUT: u64 = 31_536_000;

/// Sessions by connection id, and the server-wide counters.
#[derive(Debug)]
pub struct Registry {
    sessions: Mutex<HashMap<u32, Arc<Handle>>>,
    /// Statements clients sent (each statement of a multi-statement, each execution of a
    /// prepared statement): MySQL's `Questions`.
    questions: AtomicU64,
    started: Instant,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            sessions: Mutex::new(HashMap::new()),
            questions: AtomicU64::new(0),
            started: Instant::now(),
        }
    }
}

/// What the manager port shows of a session (`show @@connection`, `show @@session`), as the
/// session last published it (after each command).
#[derive(Debug, Default, Clone)]
pub struct Published {
    pub schema: Option<String>,
    pub autocommit: bool,
    /// dataNodes whose connections are pinned to the open transaction.
    pub nodes: Vec<String>,
}

/// One session as other sessions see it.
#[derive(Debug)]
pub struct Handle {
    /// The client's address, the gateway's local port, when the client connected.
    pub peer: std::net::SocketAddr,
    pub local_port: u16,
    pub since: Instant,
    published: Mutex<Published>,
    /// A statement of the session runs now (a graceful shutdown waits for it).
    running_statement: AtomicBool,
    /// The `server.xml` user, once logged in.
    user: OnceLock<String>,
    /// Interrupters of the backend statements the session's current statement runs.
    running: Mutex<Vec<Arc<dyn Canceller>>>,
    killed: Notify,
    /// Set by [`Handle::kill`] before anything else happens to the session: a statement whose
    /// backend connection the kill ends must not be retried elsewhere ([`Handle::is_killed`]).
    kill_requested: AtomicBool,
    /// The number of the configuration generation the session holds (module `reload`),
    /// `u64::MAX` when it holds none.
    generation: std::sync::atomic::AtomicU64,
    /// The session's `wait_timeout`, in seconds: how long the client connection may stay idle
    /// before the gateway closes it (`super::limits::idle_deadline`).
    wait_timeout: AtomicU64,
    /// Told when `wait_timeout` changes (the idle deadline then starts over).
    wait_timeout_changed: Notify,
}

impl Handle {
    /// Records the configuration generation the session holds (`None`: none).
    pub fn hold_generation(&self, number: Option<u64>) {
        self.generation
            .store(number.unwrap_or(u64::MAX), Ordering::Release);
    }

    /// The configuration generation the session holds, if any.
    pub fn held_generation(&self) -> Option<u64> {
        Some(self.generation.load(Ordering::Acquire)).filter(|n| *n != u64::MAX)
    }

    /// A session of the client at `peer`, connected to local port `local_port`.
    pub fn new(peer: std::net::SocketAddr, local_port: u16) -> Handle {
        Handle {
            peer,
            local_port,
            since: Instant::now(),
            published: Mutex::new(Published {
                autocommit: true,
                ..Published::default()
            }),
            running_statement: AtomicBool::new(false),
            user: OnceLock::new(),
            running: Mutex::new(Vec::new()),
            killed: Notify::new(),
            kill_requested: AtomicBool::new(false),
            generation: std::sync::atomic::AtomicU64::new(u64::MAX),
            wait_timeout: AtomicU64::new(DEFAULT_WAIT_TIMEOUT),
            wait_timeout_changed: Notify::new(),
        }
    }

    /// The session's state for the manager port.
    pub fn published(&self) -> Published {
        self.published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Marks a statement of the session as running until the guard is dropped.
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.running_statement.store(true, Ordering::Release);
        Busy(self.clone())
    }

    /// Whether a statement of the session runs now, or its connections are pinned to an open
    /// transaction: what a graceful shutdown waits for.
    pub fn in_flight(&self) -> bool {
        self.running_statement.load(Ordering::Acquire) || !self.published().nodes.is_empty()
    }

    /// What [`Handle::published`] answers, to update in place.
    pub fn published_mut(&self) -> std::sync::MutexGuard<'_, Published> {
        self.published.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a statement of the session runs now (its idle time does not count meanwhile).
    pub fn statement_running(&self) -> bool {
        self.running_statement.load(Ordering::Acquire)
    }

    /// Sets the session's `wait_timeout` to `seconds` (clamped to MariaDB's range, 1 to
    /// 31,536,000): a client connection idle that long is closed.
    pub fn set_wait_timeout(&self, seconds: u64) {
        let seconds = seconds.clamp(1, MAX_WAIT_TIMEOUT);
        if self.wait_timeout.swap(seconds, Ordering::AcqRel) != seconds {
            self.wait_timeout_changed.notify_one();
        }
    }

    /// The session's `wait_timeout`.
    pub fn wait_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.wait_timeout.load(Ordering::Acquire))
    }

    /// Completes once [`Handle::set_wait_timeout`] changed the timeout since the last call
    /// completed (a change while nobody waits is kept for the next call).
    pub async fn wait_timeout_changed(&self) {
        self.wait_timeout_changed.notified().await
    }

    /// The session logged in as `user`.
    pub fn set_user(&self, user: &str) {
        let _ = self.user.set(user.to_string());
    }

    /// The logged-in user (`None` before the login).
    pub fn user(&self) -> Option<&str> {
        self.user.get().map(String::as_str)
    }

    /// The backend statements a statement of the session now runs (replacing earlier ones;
    /// none when it ended). Called for every statement: keeps its allocation.
    pub fn running(&self, cancellers: impl IntoIterator<Item = Arc<dyn Canceller>>) {
        let mut running = self.lock();
        running.clear();
        running.extend(cancellers);
    }

    /// Whether a statement of the session runs on backend connections now (their cancellers
    /// are held, [`Handle::running`]).
    pub fn has_running(&self) -> bool {
        !self.lock().is_empty()
    }

    /// Interrupts the backend statements the session is running, if any (`KILL QUERY`), or
    /// with `close` ends their connections (`KILL CONNECTION`). Failures are logged: the
    /// statement then runs to its end.
    pub async fn cancel_running(&self, close: bool) {
        let running = std::mem::take(&mut *self.lock());
        for c in running {
            let done = if close {
                c.close().await
            } else {
                c.cancel().await
            };
            if let Err(e) = done {
                tracing::warn!(error = %e, "interrupting a backend statement failed");
            }
        }
    }

    /// Asks the session to end (`KILL CONNECTION`); it closes the client connection. Call it
    /// before [`Handle::cancel_running`] ends the backend connections, so that the session,
    /// seeing them fail, knows why ([`Handle::is_killed`]) and does not run the statement again.
    pub fn kill(&self) {
        self.kill_requested.store(true, Ordering::Release);
        self.killed.notify_one();
    }

    /// `true` once [`Handle::kill`] was called: the session is ending, and a read whose
    /// connection broke is not retried.
    pub fn is_killed(&self) -> bool {
        self.kill_requested.load(Ordering::Acquire)
    }

    /// Completes once [`Handle::kill`] was called.
    pub async fn killed(&self) {
        self.killed.notified().await
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<dyn Canceller>>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A statement runs (see [`Handle::busy`]).
#[derive(Debug)]
pub struct Busy(Arc<Handle>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.running_statement.store(false, Ordering::Release);
    }
}

/// Removes its session from the registry when dropped (the session ended, however).
#[derive(Debug)]
pub struct Registered {
    registry: Arc<super::Server>,
    id: u32,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.registry.registry.lock().remove(&self.id);
    }
}

impl Registry {
    /// Registers session `id` of `server` until the returned guard is dropped.
    pub fn register(
        server: &Arc<super::Server>,
        id: u32,
        handle: Arc<Handle>,
    ) -> (Arc<Handle>, Registered) {
        server.registry.lock().insert(id, handle.clone());
        (
            handle,
            Registered {
                registry: server.clone(),
                id,
            },
        )
    }

    /// The session with connection id `id`, if it is connected.
    pub fn get(&self, id: u64) -> Option<Arc<Handle>> {
        let id = u32::try_from(id).ok()?;
        self.lock().get(&id).cloned()
    }

    /// Whether no session is connected.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Every connected session, by connection id.
    pub fn sessions(&self) -> Vec<(u32, Arc<Handle>)> {
        let mut all: Vec<_> = self.lock().iter().map(|(id, h)| (*id, h.clone())).collect();
        all.sort_by_key(|(id, _)| *id);
        all
    }

    /// Counts one statement a client sent.
    pub fn question(&self) {
        self.questions.fetch_add(1, Ordering::Relaxed);
    }

    /// The COM_STATISTICS answer, in MariaDB's format: `Uptime: N  Threads: N  Questions: N
    /// Slow queries: 0  Opens: 0  Open tables: 0  Queries per second avg: X.XXX` (uptime in
    /// seconds; threads = connected clients; manx keeps no slow-query or table counters).
    pub fn statistics(&self) -> String {
        let uptime = self.started.elapsed().as_secs();
        let threads = self.lock().len();
        let questions = self.questions.load(Ordering::Relaxed);
        let qps = if uptime == 0 {
            0.0
        } else {
            questions as f64 / uptime as f64
        };
        format!(
            "Uptime: {uptime}  Threads: {threads}  Questions: {questions}  Slow queries: 0  Opens: 0  Open tables: 0  Queries per second avg: {qps:.3}"
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Arc<Handle>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }
}
