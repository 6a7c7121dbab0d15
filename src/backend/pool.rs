//! A connection pool for one physical server whose idle connections are kept per selected
//! database, so a checkout for a dataNode takes a connection already on that dataNode's database
//! when one is idle: no `USE` round trip. Mycat 1.6 keeps its pooled connections the same way
//! (SPEC §4.10: "pooled connections are kept per database (dataNode)"; a borrow takes one of the
//! statement's schema first, then one of any other schema, which is then re-synchronised).
//!
//! Shape: at most `max_size` connections exist (idle + checked out); a checkout first waits (up
//! to `wait_timeout`, first come first served) for one of `max_size` permits, then takes, in this
//! order, the most recently returned idle connection on the wanted database, the most recently
//! returned idle connection of the database with the most idle connections, or a new connection.
//! A taken idle connection is checked by [`Manage::recycle`] first; one that fails it is closed
//! and the next one tried. A checkout abandoned half way (its future dropped while a connection
//! is being created or checked) closes that connection: nothing half-checked returns to the pool.
//!
//! A connection returned dirty ([`Manage::dirty`]) is cleaned ([`Manage::clean`]) right away in a
//! task of its own, still counted as checked out, and only then listed idle: what a client left
//! on it (a `GET_LOCK` lock, say) is gone moments after its statement, not when some later
//! checkout happens to take that connection, and the cleaning round trip is off the next
//! statement's path.
//!
//! Most recently returned first (LIFO) keeps the working set of connections small and warm:
//! connections that the load no longer needs sit idle and are the ones the idle checks age out.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How connections of one server are opened, checked before reuse, and which database they have
/// selected.
pub(crate) trait Manage: Send + Sync + 'static {
    /// A connection.
    type Conn: Send + 'static;
    /// What opening or checking a connection fails with.
    type Error: Send;

    /// Opens a connection (the pool bounds it by its create timeout).
    fn create(&self) -> impl Future<Output = Result<Self::Conn, Self::Error>> + Send;

    /// Checks (and cleans) an idle connection before it is handed out again; `idle` is how long
    /// it sat in the pool since it was returned. An error closes the connection.
    fn recycle(
        &self,
        conn: &mut Self::Conn,
        idle: Duration,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// The database `conn` has selected, if any: the idle list it is kept in.
    fn database(conn: &Self::Conn) -> Option<&str>;

    /// Whether `conn`, just returned by its holder, may carry state of the holder's (session
    /// variables, locks, an unread result): then [`Manage::clean`] runs before it is idle.
    fn dirty(conn: &Self::Conn) -> bool;

    /// Clears what a holder left on `conn` (run in a task of its own as soon as the connection
    /// is returned, bounded by the recycle timeout). An error closes the connection.
    fn clean(&self, conn: &mut Self::Conn) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// Sizes and time limits of a [`Pool`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct PoolConfig {
    /// Most connections open at once, idle or checked out (Mycat's `maxCon`); at least 1.
    pub max_size: usize,
    /// Longest wait for a free permit when `max_size` connections are checked out.
    pub wait_timeout: Duration,
    /// Longest wait for [`Manage::create`].
    pub create_timeout: Duration,
    /// Longest wait for [`Manage::recycle`]; a check that takes longer closes the connection.
    pub recycle_timeout: Duration,
}

/// Which wait ran out in [`Pool::get`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeoutStage {
    /// Every permit stayed taken for `wait_timeout`: the pool is exhausted.
    Wait,
    /// A new connection did not open within `create_timeout`.
    Create,
}

/// Why [`Pool::get`] gave no connection.
#[derive(Debug)]
pub(crate) enum PoolError<E> {
    /// A time limit ran out.
    Timeout(TimeoutStage),
    /// Opening a new connection failed.
    Backend(E),
}

/// Counts of a pool's connections at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Status {
    /// Open connections, idle or checked out.
    pub size: usize,
    /// Idle connections.
    pub idle: usize,
    /// Connections being cleaned after their holder returned them.
    pub cleaning: usize,
}

/// A pool of connections to one server, idle ones listed per database (module documentation).
/// Cloning shares the pool.
pub(crate) struct Pool<M: Manage> {
    inner: Arc<Inner<M>>,
}

impl<M: Manage> Clone for Pool<M> {
    fn clone(&self) -> Self {
        Pool {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<M: Manage> {
    manager: M,
    config: PoolConfig,
    permits: Arc<Semaphore>,
    idle: Mutex<IdleLists<M::Conn>>,
    /// Open connections (idle, checked out, or being created, checked or cleaned).
    size: AtomicUsize,
    /// Connections returned dirty and being cleaned ([`Manage::clean`]): neither idle nor in
    /// a holder's hands.
    cleaning: AtomicUsize,
}

/// Idle connections by selected database ("" for none), each list oldest first.
struct IdleLists<C> {
    by_database: HashMap<Box<str>, Vec<Idle<C>>>,
    count: usize,
}

struct Idle<C> {
    conn: C,
    returned: Instant,
}

impl<C> IdleLists<C> {
    /// The most recently returned connection on `database`, else the most recently returned one
    /// of the database with the most idle connections.
    fn take(&mut self, database: &str) -> Option<Idle<C>> {
        let conn = match self.by_database.get_mut(database).and_then(Vec::pop) {
            Some(conn) => conn,
            None => self
                .by_database
                .values_mut()
                .max_by_key(|list| list.len())
                .and_then(Vec::pop)?,
        };
        self.count -= 1;
        Some(conn)
    }

    /// Adds `conn` to the list of the database `database_of` says it has selected.
    fn put(&mut self, conn: C, database_of: fn(&C) -> Option<&str>) {
        let returned = Instant::now();
        match self.by_database.get_mut(database_of(&conn).unwrap_or("")) {
            Some(list) => list.push(Idle { conn, returned }),
            None => {
                let key: Box<str> = database_of(&conn).unwrap_or("").into();
                self.by_database.insert(key, vec![Idle { conn, returned }]);
            }
        }
        self.count += 1;
    }
}

impl<M: Manage> Pool<M> {
    /// A pool that opens connections on demand (none is opened here). A `max_size` of 0 is taken
    /// as 1.
    pub fn new(manager: M, config: PoolConfig) -> Self {
        let max_size = config.max_size.max(1);
        Pool {
            inner: Arc::new(Inner {
                manager,
                config: PoolConfig { max_size, ..config },
                permits: Arc::new(Semaphore::new(max_size)),
                idle: Mutex::new(IdleLists {
                    by_database: HashMap::new(),
                    count: 0,
                }),
                size: AtomicUsize::new(0),
                cleaning: AtomicUsize::new(0),
            }),
        }
    }

    /// The manager that opens this pool's connections.
    pub fn manager(&self) -> &M {
        &self.inner.manager
    }

    /// Counts of open and idle connections.
    pub fn status(&self) -> Status {
        let idle = self.inner.lock().count;
        Status {
            size: self.inner.size.load(Ordering::Acquire),
            idle,
            cleaning: self.inner.cleaning.load(Ordering::Acquire),
        }
    }

    /// Closes every idle connection (checked-out ones return to the pool as usual).
    pub fn close_idle(&self) {
        let closed: Vec<Idle<M::Conn>> = {
            let mut idle = self.inner.lock();
            idle.count = 0;
            idle.by_database
                .drain()
                .flat_map(|(_, list)| list)
                .collect()
        };
        self.inner.size.fetch_sub(closed.len(), Ordering::AcqRel);
        drop(closed);
    }

    /// A connection, preferably one with `database` selected (module documentation for the
    /// order). The caller still selects the database: the connection may be on another one.
    ///
    /// Errors: [`PoolError::Timeout`] with [`TimeoutStage::Wait`] when every connection stays
    /// checked out for `wait_timeout`, with [`TimeoutStage::Create`] when a new connection does
    /// not open within `create_timeout`; [`PoolError::Backend`] when opening one fails.
    pub async fn get(&self, database: &str) -> Result<Object<M>, PoolError<M::Error>> {
        let inner = &self.inner;
        let permit = match tokio::time::timeout(
            inner.config.wait_timeout,
            inner.permits.clone().acquire_owned(),
        )
        .await
        {
            Ok(Ok(permit)) => permit,
            // The semaphore is never closed; treat it as exhaustion all the same.
            Ok(Err(_)) | Err(_) => return Err(PoolError::Timeout(TimeoutStage::Wait)),
        };
        loop {
            let taken = inner.lock().take(database);
            match taken {
                Some(idle) => {
                    let idle_for = idle.returned.elapsed();
                    let mut slot = Slot::new(inner, idle.conn);
                    let checked = tokio::time::timeout(
                        inner.config.recycle_timeout,
                        inner.manager.recycle(slot.conn_mut(), idle_for),
                    )
                    .await;
                    if let Ok(Ok(())) = checked {
                        return Ok(Object::new(inner, slot.take(), permit));
                    }
                    // Failed or too slow: `slot` closes it; try the next idle one.
                }
                None => {
                    inner.size.fetch_add(1, Ordering::AcqRel);
                    let reserved = Reserved(inner);
                    let created =
                        tokio::time::timeout(inner.config.create_timeout, inner.manager.create())
                            .await;
                    return match created {
                        Ok(Ok(conn)) => {
                            std::mem::forget(reserved);
                            Ok(Object::new(inner, conn, permit))
                        }
                        Ok(Err(e)) => Err(PoolError::Backend(e)),
                        Err(_) => Err(PoolError::Timeout(TimeoutStage::Create)),
                    };
                }
            }
        }
    }
}

impl<M: Manage> Inner<M> {
    fn lock(&self) -> std::sync::MutexGuard<'_, IdleLists<M::Conn>> {
        // The lists stay consistent under a panic elsewhere: every update is one push or pop.
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A connection taken from the idle lists while it is checked: closed (and uncounted) when
/// dropped still holding it.
struct Slot<'a, M: Manage> {
    inner: &'a Inner<M>,
    conn: Option<M::Conn>,
}

impl<'a, M: Manage> Slot<'a, M> {
    fn new(inner: &'a Inner<M>, conn: M::Conn) -> Self {
        Slot {
            inner,
            conn: Some(conn),
        }
    }

    fn conn_mut(&mut self) -> &mut M::Conn {
        self.conn
            .as_mut()
            .expect("a slot holds its connection until taken")
    }

    fn take(mut self) -> M::Conn {
        self.conn
            .take()
            .expect("a slot holds its connection until taken")
    }
}

impl<M: Manage> Drop for Slot<'_, M> {
    fn drop(&mut self) {
        if self.conn.take().is_some() {
            self.inner.size.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// A place counted in `size` for a connection being created: given back when creation fails or
/// is abandoned.
struct Reserved<'a, M: Manage>(&'a Inner<M>);

impl<M: Manage> Drop for Reserved<'_, M> {
    fn drop(&mut self) {
        self.0.size.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A checked-out connection: back to its database's idle list when dropped (then its permit is
/// released), or closed when [`Object::discard`]ed.
pub(crate) struct Object<M: Manage> {
    conn: Option<M::Conn>,
    inner: Arc<Inner<M>>,
    // Declared after `conn`: released after the connection is back in the idle lists, so the
    // checkout it wakes finds it there. Moved to the cleaning task of a dirty connection.
    permit: Option<OwnedSemaphorePermit>,
}

impl<M: Manage> Object<M> {
    fn new(inner: &Arc<Inner<M>>, conn: M::Conn, permit: OwnedSemaphorePermit) -> Self {
        Object {
            conn: Some(conn),
            inner: inner.clone(),
            permit: Some(permit),
        }
    }
}

impl<M: Manage> std::ops::Deref for Object<M> {
    type Target = M::Conn;
    fn deref(&self) -> &M::Conn {
        self.conn
            .as_ref()
            .expect("an object holds its connection until dropped")
    }
}

impl<M: Manage> std::ops::DerefMut for Object<M> {
    fn deref_mut(&mut self) -> &mut M::Conn {
        self.conn
            .as_mut()
            .expect("an object holds its connection until dropped")
    }
}

impl<M: Manage> Drop for Object<M> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        if M::dirty(&conn)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let inner = self.inner.clone();
            let permit = self.permit.take();
            inner.cleaning.fetch_add(1, Ordering::AcqRel);
            runtime.spawn(async move {
                let mut slot = Slot::new(&inner, conn);
                let cleaned = tokio::time::timeout(
                    inner.config.recycle_timeout,
                    inner.manager.clean(slot.conn_mut()),
                )
                .await;
                inner.cleaning.fetch_sub(1, Ordering::AcqRel);
                if let Ok(Ok(())) = cleaned {
                    inner.lock().put(slot.take(), M::database);
                }
                // Otherwise `slot` closes it. Then the permit goes.
                drop(permit);
            });
            return;
        }
        // Outside a runtime (nothing can await the cleaning): listed as it is; the checkout's
        // recycle check cleans it.
        self.inner.lock().put(conn, M::database);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// Connections are numbers with a database; `recycle` fails for the numbers in `broken`.
    struct Fake {
        next: AtomicUsize,
        create_delay: Duration,
        broken: Mutex<Vec<usize>>,
        recycled: AtomicUsize,
        fail_create: AtomicBool,
    }

    struct FakeConn {
        id: usize,
        database: Option<String>,
        dirty: bool,
    }

    impl Manage for Fake {
        type Conn = FakeConn;
        type Error = String;

        async fn create(&self) -> Result<FakeConn, String> {
            tokio::time::sleep(self.create_delay).await;
            if self.fail_create.load(Ordering::SeqCst) {
                return Err("refused".into());
            }
            Ok(FakeConn {
                id: self.next.fetch_add(1, Ordering::SeqCst),
                database: None,
                dirty: false,
            })
        }

        async fn recycle(&self, conn: &mut FakeConn, _idle: Duration) -> Result<(), String> {
            self.recycled.fetch_add(1, Ordering::SeqCst);
            if self.broken.lock().unwrap().contains(&conn.id) {
                return Err("gone".into());
            }
            Ok(())
        }

        fn database(conn: &FakeConn) -> Option<&str> {
            conn.database.as_deref()
        }

        fn dirty(conn: &FakeConn) -> bool {
            conn.dirty
        }

        /// Cleans in 20 ms; fails like `recycle` for the numbers in `broken`.
        async fn clean(&self, conn: &mut FakeConn) -> Result<(), String> {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if self.broken.lock().unwrap().contains(&conn.id) {
                return Err("gone".into());
            }
            conn.dirty = false;
            Ok(())
        }
    }

    fn pool(max_size: usize, create_delay: Duration) -> Pool<Fake> {
        Pool::new(
            Fake {
                next: AtomicUsize::new(0),
                create_delay,
                broken: Mutex::new(Vec::new()),
                recycled: AtomicUsize::new(0),
                fail_create: AtomicBool::new(false),
            },
            PoolConfig {
                max_size,
                wait_timeout: Duration::from_millis(100),
                create_timeout: Duration::from_millis(200),
                recycle_timeout: Duration::from_millis(200),
            },
        )
    }

    /// (open, idle, being cleaned) connections of `p`.
    fn counts(p: &Pool<Fake>) -> (usize, usize, usize) {
        let s = p.status();
        (s.size, s.idle, s.cleaning)
    }

    async fn on(pool: &Pool<Fake>, database: &str) -> Object<Fake> {
        let mut o = pool.get(database).await.unwrap();
        o.database = Some(database.to_string());
        o
    }

    #[tokio::test]
    async fn a_checkout_takes_a_connection_already_on_its_database() {
        let p = pool(4, Duration::ZERO);
        let (a, b, c) = (
            on(&p, "db1").await,
            on(&p, "db2").await,
            on(&p, "db3").await,
        );
        let ids = [a.id, b.id, c.id];
        // Returned in an order unlike the checkouts'.
        drop(b);
        drop(c);
        drop(a);
        for _ in 0..5 {
            for (i, db) in ["db1", "db2", "db3"].into_iter().enumerate() {
                let o = p.get(db).await.unwrap();
                assert_eq!(o.database.as_deref(), Some(db));
                assert_eq!(o.id, ids[i]);
            }
        }
        assert_eq!(counts(&p), (3, 3, 0));
    }

    #[tokio::test]
    async fn without_one_on_its_database_it_takes_another_before_opening_a_new_one() {
        let p = pool(4, Duration::ZERO);
        let a = on(&p, "db1").await;
        let id = a.id;
        drop(a);
        let o = p.get("db2").await.unwrap();
        assert_eq!((o.id, o.database.as_deref()), (id, Some("db1")));
        assert_eq!(counts(&p), (1, 0, 0));
    }

    #[tokio::test]
    async fn the_donor_is_the_database_with_the_most_idle_connections() {
        let p = pool(4, Duration::ZERO);
        let held = [
            on(&p, "db1").await,
            on(&p, "db2").await,
            on(&p, "db2").await,
        ];
        let on_db2: Vec<usize> = held[1..].iter().map(|o| o.id).collect();
        drop(held);
        let o = p.get("db3").await.unwrap();
        assert!(on_db2.contains(&o.id), "{} taken", o.id);
    }

    #[tokio::test]
    async fn at_most_max_size_connections_and_a_full_pool_times_out() {
        let p = pool(2, Duration::ZERO);
        let a = on(&p, "db1").await;
        let _b = on(&p, "db2").await;
        assert!(matches!(
            p.get("db1").await,
            Err(PoolError::Timeout(TimeoutStage::Wait))
        ));
        let a_id = a.id;
        let waiter = tokio::spawn({
            let p = p.clone();
            async move { p.get("db3").await.map(|o| o.id) }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(a);
        assert_eq!(waiter.await.unwrap().unwrap(), a_id);
        assert_eq!(p.status().size, 2);
    }

    #[tokio::test]
    async fn a_connection_failing_its_check_is_closed_and_the_next_one_tried() {
        let p = pool(3, Duration::ZERO);
        let (a, b) = (on(&p, "db1").await, on(&p, "db1").await);
        let (a_id, b_id) = (a.id, b.id);
        drop(a);
        drop(b);
        // b was returned last, so it is tried first.
        p.manager().broken.lock().unwrap().push(b_id);
        let o = p.get("db1").await.unwrap();
        assert_eq!(o.id, a_id);
        assert_eq!(counts(&p), (1, 0, 0));
        assert_eq!(p.manager().recycled.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn an_abandoned_or_failed_creation_gives_its_place_back() {
        let p = pool(1, Duration::from_millis(50));
        let abandoned = tokio::time::timeout(Duration::from_millis(10), p.get("db1")).await;
        assert!(abandoned.is_err());
        assert_eq!(counts(&p), (0, 0, 0));
        p.manager().fail_create.store(true, Ordering::SeqCst);
        assert!(matches!(p.get("db1").await, Err(PoolError::Backend(_))));
        assert_eq!(counts(&p), (0, 0, 0));
        p.manager().fail_create.store(false, Ordering::SeqCst);
        // The one permit is free again.
        assert!(p.get("db1").await.is_ok());
    }

    #[tokio::test]
    async fn a_slow_creation_times_out() {
        let p = pool(1, Duration::from_secs(5));
        assert!(matches!(
            p.get("db1").await,
            Err(PoolError::Timeout(TimeoutStage::Create))
        ));
        assert_eq!(p.status().size, 0);
    }

    #[tokio::test]
    async fn close_idle_closes_only_idle_connections() {
        let p = pool(3, Duration::ZERO);
        let (a, b) = (on(&p, "db1").await, on(&p, "db2").await);
        drop(a);
        p.close_idle();
        assert_eq!(counts(&p), (1, 0, 0));
        drop(b);
        assert_eq!(counts(&p), (1, 1, 0));
    }

    #[tokio::test]
    async fn a_dirty_connection_is_cleaned_when_returned_before_anyone_can_take_it() {
        let p = pool(1, Duration::ZERO);
        let mut a = on(&p, "db1").await;
        a.dirty = true;
        let id = a.id;
        drop(a);
        // Cleaning: neither idle nor held, and its permit still taken.
        assert_eq!(counts(&p), (1, 0, 1));
        let o = p.get("db1").await.unwrap();
        assert_eq!((o.id, o.dirty), (id, false));
        assert_eq!(p.manager().recycled.load(Ordering::SeqCst), 1);
        drop(o);
        assert_eq!(counts(&p), (1, 1, 0));
    }

    #[tokio::test]
    async fn a_dirty_connection_that_cannot_be_cleaned_is_closed() {
        let p = pool(1, Duration::ZERO);
        let mut a = on(&p, "db1").await;
        a.dirty = true;
        p.manager().broken.lock().unwrap().push(a.id);
        drop(a);
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(counts(&p), (0, 0, 0));
        // Its permit is free: a new connection opens.
        assert_eq!(p.get("db1").await.unwrap().id, 1);
    }
}
