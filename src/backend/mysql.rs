//! MySQL/MariaDB backend on `mysql_async`, one pool per physical host (`maxCon` connections at
//! most, as Mycat sizes a source's pool, SPEC §4.10) whose idle connections are kept per
//! selected database (module [`super::pool`]). The dataNode's database is selected per
//! connection, lazily (SPEC §1.6): only when the connection taken was on another one.

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use mysql_async::prelude::Queryable;

use super::grants::{self, ExcessPrivilege};
use super::pool::{Manage, Pool, PoolConfig, PoolError};
use super::{Backend, BackendConn, BackendError, Canceller, Column, OkInfo, Response, Row, Value};

mod conn;
mod handle;
use conn::{CLEAR_FOUND_ROWS, Conn, Kind, RECENTLY_USED, lexing_defaults};
use handle::{Holder, KillQuery, PooledConn, convert_error};

/// How to reach one MySQL server and how its pool behaves.
#[derive(Debug, Clone)]
pub struct MysqlSettings {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    /// Pool size (`maxCon`).
    pub max_connections: usize,
    /// Longest wait for the TCP connect and handshake of a new connection.
    pub connect_timeout: Duration,
    /// Longest wait for a free connection when the pool is full.
    pub wait_timeout: Duration,
}

/// A pooled MySQL server.
pub struct MysqlBackend {
    address: Arc<str>,
    pool: Pool<Manager>,
}

impl std::fmt::Debug for MysqlBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = self.pool.status();
        f.debug_struct("MysqlBackend")
            .field("address", &self.address)
            .field("size", &status.size)
            .field("idle", &status.idle)
            .finish()
    }
}

impl MysqlBackend {
    /// A pool that opens connections on demand (none is opened here).
    pub fn new(settings: MysqlSettings) -> Self {
        let address = format!("{}:{}", settings.host, settings.port);
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname(settings.host.clone())
            .tcp_port(settings.port)
            .user(Some(settings.user.clone()))
            .pass(Some(settings.password.clone()))
            .prefer_socket(false)
            .tcp_nodelay(true)
            .stmt_cache_size(0);
        let manager = Manager {
            opts: opts.into(),
            connect_timeout: settings.connect_timeout,
            address: address.clone(),
        };
        let address: Arc<str> = address.into();
        let pool = Pool::new(
            manager,
            PoolConfig {
                max_size: settings.max_connections,
                wait_timeout: settings.wait_timeout,
                create_timeout: settings.connect_timeout,
                recycle_timeout: settings.connect_timeout,
            },
        );
        MysqlBackend { address, pool }
    }
}

#[async_trait]
impl Backend for MysqlBackend {
    async fn acquire(&self, database: &str) -> Result<Box<dyn BackendConn>, BackendError> {
        match self.pool.get(database).await {
            Ok(conn) => Ok(Box::new(PooledConn {
                conn: Holder::Pooled(conn),
                address: self.address.clone(),
                use_pending: None,
                track: None,
            })),
            Err(PoolError::Backend(e)) => Err(e),
            Err(PoolError::Timeout(kind)) => Err(BackendError::Timeout(format!(
                "no connection to {} within the time limit ({kind:?}): pool exhausted or server not answering",
                self.address
            ))),
        }
    }

    async fn warm_up(&self, connections: usize) -> Result<(), BackendError> {
        let missing = connections.saturating_sub(self.pool.status().size);
        let opened = futures::future::join_all((0..missing).map(|_| self.pool.get(""))).await;
        // Dropping the objects returns them to the pool, where they stay idle.
        for o in opened {
            match o {
                Ok(_) => {}
                Err(PoolError::Backend(e)) => return Err(e),
                Err(PoolError::Timeout(stage)) => {
                    return Err(BackendError::Timeout(format!(
                        "warming the pool of {}: time limit reached ({stage:?})",
                        self.address
                    )));
                }
            }
        }
        Ok(())
    }

    async fn connect(&self) -> Result<Box<dyn BackendConn>, BackendError> {
        let conn = self.pool.manager().create().await?;
        Ok(Box::new(PooledConn {
            conn: Holder::Direct(conn),
            address: self.address.clone(),
            use_pending: None,
            track: None,
        }))
    }

    fn close_idle(&self) {
        // Connections in use are closed when they are returned and fail their recycle check,
        // or when their holder drops them.
        self.pool.close_idle();
    }

    fn address(&self) -> &str {
        &self.address
    }

    fn size(&self) -> usize {
        self.pool.status().size
    }

    fn in_use(&self) -> usize {
        // Connections being reset after their holder returned them serve no statement.
        let s = self.pool.status();
        s.size.saturating_sub(s.idle + s.cleaning)
    }
}

#[derive(Debug)]
struct Manager {
    opts: mysql_async::Opts,
    connect_timeout: Duration,
    address: String,
}

impl Manage for Manager {
    type Conn = Conn;
    type Error = BackendError;

    async fn create(&self) -> Result<Conn, BackendError> {
        let connect = mysql_async::Conn::new(self.opts.clone());
        match tokio::time::timeout(self.connect_timeout, connect).await {
            Ok(Ok(mut conn)) => {
                lexing_defaults(&mut conn, &self.address).await?;
                Ok(Conn::new(conn, self.opts.clone(), self.connect_timeout))
            }
            Ok(Err(e)) => Err(match convert_error(e) {
                BackendError::Server {
                    code,
                    state,
                    message,
                } => BackendError::Server {
                    code,
                    state,
                    message,
                },
                other => {
                    BackendError::Closed(format!("cannot connect to {}: {other}", self.address))
                }
            }),
            Err(_) => Err(BackendError::Timeout(format!(
                "cannot connect to {}: no answer within {} ms",
                self.address,
                self.connect_timeout.as_millis()
            ))),
        }
    }

    async fn recycle(&self, conn: &mut Conn, idle: Duration) -> Result<(), BackendError> {
        // A connection returned dirty was reset (`clean`) before it was listed idle. One that
        // only ran stateless statements (module `stateless`) since its last reset and was
        // returned moments ago is handed out as it is: no round trip. Otherwise (idle a while,
        // or dirty because it was returned outside a runtime) COM_RESET_CONNECTION clears what
        // a previous session may have left (user variables, GET_LOCK locks, temporary tables,
        // session variables) so nothing leaks to the next client; it keeps the selected
        // database and doubles as the liveness check. A connection dropped mid-result has its
        // remaining rows read out first by mysql_async.
        // Whatever else happens, a connection handed out again may show its last holder's
        // FOUND_ROWS() (a reset does not clear it).
        conn.check_in_step()?;
        conn.foreign_found_rows = true;
        if !conn.needs_reset() && idle < RECENTLY_USED {
            conn.inherited = conn.used;
            return Ok(());
        }
        conn.reset().await
    }

    fn database(conn: &Conn) -> Option<&str> {
        conn.database.as_deref()
    }

    /// A statement that may have left session state ran (or its result was not read to the end,
    /// or it ended with an error or warnings): see [`Conn::dirty`].
    fn dirty(conn: &Conn) -> bool {
        conn.needs_reset()
    }

    async fn clean(&self, conn: &mut Conn) -> Result<(), BackendError> {
        conn.reset().await
    }
}

#[cfg(test)]
mod tests {
    use super::handle::isolation_names;

    #[test]
    fn isolation_variables_are_renamed_for_servers_without_them() {
        let to = |v| isolation_names(v).map(|r| r[0].1);
        assert_eq!(to((10, 11, 19)), Some("tx_isolation"));
        assert_eq!(to((5, 6, 51)), Some("tx_isolation"));
        assert_eq!(to((5, 7, 25)), None);
        assert_eq!(to((8, 0, 36)), Some("transaction_isolation"));
        assert_eq!(to((11, 4, 2)), None);
    }
}
