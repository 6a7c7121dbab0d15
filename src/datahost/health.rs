//! What the heartbeat knows about one physical server (SPEC §4.1, §4.6).
//!
//! State machine (Mycat 1.6.7 counting): every server starts in `Init`. A heartbeat that
//! succeeds sets `Ok` and clears the failure count. A heartbeat that fails (error or timeout)
//! increments the count; while the count is below `maxRetryCount` the status is left as it was
//! (an `Ok` server stays `Ok`), and when it reaches `maxRetryCount` the status becomes `Error` or
//! `Timeout` and the count starts again. So a dead server is declared down after about
//! `maxRetryCount × dataNodeHeartbeatPeriod`. Only the server's own heartbeat task writes; the
//! per-statement path only loads atomics.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU32, Ordering};
use std::time::Instant;

/// A server's heartbeat status (Mycat's `INIT 0`, `OK 1`, `ERROR -1`, `TIMEOUT -2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// No heartbeat has decided yet (start-up).
    Init,
    /// The last decisive heartbeat succeeded: the server is alive.
    Ok,
    /// `maxRetryCount` consecutive heartbeats failed with an error.
    Error,
    /// `maxRetryCount` consecutive heartbeats failed, the last by timing out.
    Timeout,
}

impl Status {
    fn from_u8(v: u8) -> Status {
        match v {
            1 => Status::Ok,
            2 => Status::Error,
            3 => Status::Timeout,
            _ => Status::Init,
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            Status::Init => 0,
            Status::Ok => 1,
            Status::Error => 2,
            Status::Timeout => 3,
        }
    }

    /// Marked down: never receives a statement.
    pub fn is_down(self) -> bool {
        matches!(self, Status::Error | Status::Timeout)
    }
}

/// The outcome of one heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The statement answered. `replication` is what `SHOW SLAVE STATUS` said, when the
    /// heartbeat is that statement and the server is a replica; `recovery` is what
    /// `pg_is_in_recovery()` said on a PostgreSQL server (`None` for MySQL).
    Ok {
        replication: Option<Replication>,
        recovery: Option<bool>,
    },
    /// The server refused the connection, the login or the statement.
    Error(String),
    /// No answer within `heartbeatTimeout`.
    Timeout,
}

/// Replication state of a replica, from `SHOW SLAVE STATUS` (SPEC §4.7, switchType 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replication {
    /// Both replication threads run and there is no SQL error.
    pub normal: bool,
    /// `Seconds_Behind_Master`; `None` when the server reports NULL while replication is broken.
    /// A NULL with both threads running counts as 0 (Mycat 1.6.7).
    pub seconds_behind: Option<i64>,
}

/// The health of one server, shared between its heartbeat task and the statement path.
#[derive(Debug)]
pub struct Health {
    status: AtomicU8,
    failures: AtomicU32,
    /// `Seconds_Behind_Master` last recorded while replication was normal; -1 when never.
    lag: AtomicI64,
    /// The last heartbeat found replication normal (both threads running, no SQL error).
    normal: AtomicBool,
    /// The last successful heartbeat found a PostgreSQL server in recovery (a read-only
    /// standby). False until a heartbeat says otherwise, and always for MySQL.
    recovery: AtomicBool,
    changed: Mutex<Instant>,
    /// A heartbeat statement is running now (manager `STATUS` `checking`).
    checking: AtomicBool,
    /// When the last heartbeat ended and how long it took (manager `LAST_ACTIVE_TIME`,
    /// `EXECUTE_TIME`).
    last_beat: Mutex<Option<(std::time::SystemTime, std::time::Duration)>>,
}

impl Health {
    /// A server in `initial` state (`Init`, or `Ok` when the dataHost has no heartbeat statement
    /// and every server is taken as alive, as Mycat does for an empty heartbeat).
    pub fn new(initial: Status) -> Health {
        Health {
            status: AtomicU8::new(initial.to_u8()),
            failures: AtomicU32::new(0),
            lag: AtomicI64::new(-1),
            normal: AtomicBool::new(false),
            recovery: AtomicBool::new(false),
            changed: Mutex::new(Instant::now()),
            checking: AtomicBool::new(false),
            last_beat: Mutex::new(None),
        }
    }

    /// Consecutive failed heartbeats since the last success or status change (manager `RETRY`).
    pub fn failures(&self) -> u32 {
        self.failures.load(Ordering::Acquire)
    }

    /// A heartbeat starts (`true`) or ended after `took` (`false`).
    pub fn beating(&self, on: bool, took: std::time::Duration) {
        self.checking.store(on, Ordering::Release);
        if !on {
            *self.last_beat.lock().unwrap_or_else(|p| p.into_inner()) =
                Some((std::time::SystemTime::now(), took));
        }
    }

    /// Whether a heartbeat statement runs now.
    pub fn checking(&self) -> bool {
        self.checking.load(Ordering::Acquire)
    }

    /// When the last heartbeat ended and how long it took.
    pub fn last_beat(&self) -> Option<(std::time::SystemTime, std::time::Duration)> {
        *self.last_beat.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn status(&self) -> Status {
        Status::from_u8(self.status.load(Ordering::Acquire))
    }

    /// Alive in Mycat's sense: the status is `Ok`.
    pub fn alive(&self) -> bool {
        self.status() == Status::Ok
    }

    /// Seconds behind the master from the last heartbeat, when replication is normal (the
    /// figure the `slaveThreshold` read filter uses).
    pub fn lag(&self) -> Option<i64> {
        if !self.normal.load(Ordering::Acquire) {
            return None;
        }
        self.recorded_lag()
    }

    /// The last lag recorded while replication was normal, even if it has broken since (Mycat
    /// keeps it: switchType 2 fails over only to a standby whose recorded lag is exactly 0,
    /// SPEC §4.7; a standby's IO thread stops when its master dies).
    pub fn recorded_lag(&self) -> Option<i64> {
        let v = self.lag.load(Ordering::Acquire);
        (v >= 0).then_some(v)
    }

    /// The server is a read-only PostgreSQL standby (`pg_is_in_recovery()` was true at the last
    /// successful heartbeat): it may answer reads but never takes writes.
    pub fn in_recovery(&self) -> bool {
        self.recovery.load(Ordering::Acquire)
    }

    /// When the status last changed.
    pub fn since(&self) -> Instant {
        *self.changed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies one heartbeat outcome with Mycat 1.6.7's counting (`max_retry` = `maxRetryCount`,
    /// at least 1). Returns `(old, new)` when the status changed.
    pub fn record(&self, outcome: &Outcome, max_retry: u32) -> Option<(Status, Status)> {
        let old = self.status();
        let new = match outcome {
            Outcome::Ok {
                replication,
                recovery,
            } => {
                self.failures.store(0, Ordering::Release);
                self.recovery
                    .store(recovery.unwrap_or(false), Ordering::Release);
                match replication {
                    Some(Replication {
                        normal: true,
                        seconds_behind,
                    }) => {
                        self.lag
                            .store(seconds_behind.unwrap_or(0), Ordering::Release);
                        self.normal.store(true, Ordering::Release);
                    }
                    _ => self.normal.store(false, Ordering::Release),
                }
                Status::Ok
            }
            Outcome::Error(_) | Outcome::Timeout => {
                self.normal.store(false, Ordering::Release);
                let failures = self.failures.load(Ordering::Acquire) + 1;
                if failures < max_retry.max(1) {
                    self.failures.store(failures, Ordering::Release);
                    old
                } else {
                    self.failures.store(0, Ordering::Release);
                    if *outcome == Outcome::Timeout {
                        Status::Timeout
                    } else {
                        Status::Error
                    }
                }
            }
        };
        if new == old {
            return None;
        }
        self.status.store(new.to_u8(), Ordering::Release);
        *self.changed.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        Some((old, new))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_count_to_max_retry_then_success_recovers() {
        let h = Health::new(Status::Init);
        let ok = Outcome::Ok {
            replication: None,
            recovery: None,
        };
        assert_eq!(h.record(&ok, 3), Some((Status::Init, Status::Ok)));
        let err = Outcome::Error("refused".into());
        assert_eq!(h.record(&err, 3), None);
        assert_eq!(h.record(&Outcome::Timeout, 3), None);
        assert!(h.alive(), "below maxRetryCount the status is unchanged");
        assert_eq!(h.record(&err, 3), Some((Status::Ok, Status::Error)));
        assert!(h.status().is_down());
        assert_eq!(h.record(&Outcome::Timeout, 3), None, "count restarted");
        assert_eq!(h.record(&ok, 3), Some((Status::Error, Status::Ok)));
        // A success resets the count: two failures, a success, two failures stay up.
        for o in [&err, &err, &ok, &err, &err] {
            assert_eq!(h.record(o, 3), None);
        }
        assert!(h.alive());
        assert_eq!(
            h.record(&Outcome::Timeout, 3),
            Some((Status::Ok, Status::Timeout))
        );
        // maxRetryCount 1: the first failure decides.
        let h = Health::new(Status::Ok);
        assert_eq!(h.record(&err, 1), Some((Status::Ok, Status::Error)));
    }

    #[test]
    fn lag_is_known_only_when_replication_is_normal() {
        let h = Health::new(Status::Init);
        let rep = |normal, seconds_behind| Outcome::Ok {
            replication: Some(Replication {
                normal,
                seconds_behind,
            }),
            recovery: None,
        };
        h.record(&rep(true, Some(7)), 3);
        assert_eq!(h.lag(), Some(7));
        h.record(&rep(true, None), 3);
        assert_eq!(
            h.lag(),
            Some(0),
            "NULL with both threads running counts as 0"
        );
        h.record(&rep(false, Some(0)), 3);
        assert_eq!(h.lag(), None);
        assert_eq!(h.recorded_lag(), Some(0), "kept for switchType 2 failover");
        h.record(
            &Outcome::Ok {
                replication: None,
                recovery: None,
            },
            3,
        );
        assert_eq!(h.lag(), None);
    }

    #[test]
    fn recovery_follows_the_last_successful_heartbeat() {
        let h = Health::new(Status::Init);
        let pg = |recovery| Outcome::Ok {
            replication: None,
            recovery: Some(recovery),
        };
        assert!(!h.in_recovery(), "unknown counts as writable");
        h.record(&pg(true), 3);
        assert!(h.in_recovery() && h.alive());
        h.record(&Outcome::Error("refused".into()), 1);
        assert!(h.in_recovery(), "a failed heartbeat does not change it");
        h.record(&pg(false), 3);
        assert!(!h.in_recovery(), "promoted");
    }
}
