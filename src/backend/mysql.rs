//! MySQL/MariaDB backend on `mysql_async`, pooled with `deadpool` (one pool per physical host,
//! `maxCon` connections at most, as Mycat sizes a source's pool, SPEC §4.10). The dataNode's
//! database is selected per connection, lazily (SPEC §1.6).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool::managed::{self, Metrics, Pool, PoolError, RecycleError, RecycleResult};
use futures::StreamExt;
use mysql_async::prelude::Queryable;

use super::{Backend, BackendConn, BackendError, Column, OkInfo, Response, Row, Value};

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
    address: String,
    pool: Pool<Manager>,
}

impl std::fmt::Debug for MysqlBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = self.pool.status();
        f.debug_struct("MysqlBackend")
            .field("address", &self.address)
            .field("size", &status.size)
            .field("available", &status.available)
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
        let pool = Pool::builder(manager)
            .max_size(settings.max_connections)
            .wait_timeout(Some(settings.wait_timeout))
            .create_timeout(Some(settings.connect_timeout))
            .recycle_timeout(Some(settings.connect_timeout))
            .runtime(deadpool::Runtime::Tokio1)
            .build()
            .expect("a runtime and a positive size are always given");
        MysqlBackend { address, pool }
    }
}

#[async_trait]
impl Backend for MysqlBackend {
    async fn acquire(&self) -> Result<Box<dyn BackendConn>, BackendError> {
        match self.pool.get().await {
            Ok(conn) => Ok(Box::new(PooledConn {
                conn: Holder::Pooled(conn),
            })),
            Err(PoolError::Backend(e)) => Err(e),
            Err(PoolError::Timeout(kind)) => Err(BackendError::Timeout(format!(
                "no connection to {} within the time limit ({kind:?}): pool exhausted or server not answering",
                self.address
            ))),
            Err(e) => Err(BackendError::Other(format!(
                "pool of {}: {e}",
                self.address
            ))),
        }
    }

    async fn warm_up(&self, connections: usize) -> Result<(), BackendError> {
        let missing = connections.saturating_sub(self.pool.status().size);
        let opened = futures::future::join_all((0..missing).map(|_| self.pool.get())).await;
        // Dropping the objects returns them to the pool, where they stay idle.
        for o in opened {
            if let Err(e) = o {
                return Err(match e {
                    PoolError::Backend(e) => e,
                    other => BackendError::Other(format!("pool of {}: {other}", self.address)),
                });
            }
        }
        Ok(())
    }

    async fn connect(&self) -> Result<Box<dyn BackendConn>, BackendError> {
        use managed::Manager as _;
        let conn = self.pool.manager().create().await?;
        Ok(Box::new(PooledConn {
            conn: Holder::Direct(conn),
        }))
    }

    fn close_idle(&self) {
        // Idle objects are the ones `retain` sees; connections in use are closed when they are
        // returned and fail their recycle check, or when their holder drops them.
        self.pool.retain(|_, _| false);
    }

    fn address(&self) -> &str {
        &self.address
    }
}

/// A raw connection and the database it has selected.
struct Conn {
    conn: mysql_async::Conn,
    database: Option<String>,
}

#[derive(Debug)]
struct Manager {
    opts: mysql_async::Opts,
    connect_timeout: Duration,
    address: String,
}

impl managed::Manager for Manager {
    type Type = Conn;
    type Error = BackendError;

    async fn create(&self) -> Result<Conn, BackendError> {
        let connect = mysql_async::Conn::new(self.opts.clone());
        match tokio::time::timeout(self.connect_timeout, connect).await {
            Ok(Ok(conn)) => Ok(Conn {
                conn,
                database: None,
            }),
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

    async fn recycle(&self, conn: &mut Conn, _: &Metrics) -> RecycleResult<BackendError> {
        // COM_RESET_CONNECTION clears what the previous session left on the connection (user
        // variables, GET_LOCK locks, temporary tables, session variables) so nothing leaks to
        // the next client; it keeps the selected database and doubles as the liveness check.
        // A connection dropped mid-result has its remaining rows read out first by mysql_async.
        match conn.conn.reset().await {
            Ok(true) => Ok(()),
            // Servers before MySQL 5.7.3 / MariaDB 10.2.4: only check that it is alive.
            Ok(false) => conn
                .conn
                .ping()
                .await
                .map_err(|e| RecycleError::Backend(convert_error(e))),
            Err(e) => Err(RecycleError::Backend(convert_error(e))),
        }
    }
}

struct PooledConn {
    conn: Holder,
}

/// A connection checked out of the pool, or one opened beside it ([`Backend::connect`]).
enum Holder {
    Pooled(managed::Object<Manager>),
    Direct(Conn),
}

impl std::ops::Deref for Holder {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        match self {
            Holder::Pooled(o) => o,
            Holder::Direct(c) => c,
        }
    }
}

impl std::ops::DerefMut for Holder {
    fn deref_mut(&mut self) -> &mut Conn {
        match self {
            Holder::Pooled(o) => o,
            Holder::Direct(c) => c,
        }
    }
}

#[async_trait]
impl BackendConn for PooledConn {
    async fn select_database(&mut self, database: &str) -> Result<(), BackendError> {
        if self.conn.database.as_deref() == Some(database) {
            return Ok(());
        }
        let sql = format!("USE `{}`", database.replace('`', "``"));
        self.conn
            .conn
            .query_drop(sql)
            .await
            .map_err(convert_error)?;
        self.conn.database = Some(database.to_string());
        Ok(())
    }

    async fn describe(&mut self, sql: &str) -> Result<(usize, Vec<Column>), BackendError> {
        describe(&mut self.conn.conn, sql).await
    }

    async fn query<'a>(&'a mut self, sql: &'a str) -> Result<Response<'a>, BackendError> {
        let result = self
            .conn
            .conn
            .query_iter(sql)
            .await
            .map_err(convert_error)?;
        let columns = result.columns_ref();
        if columns.is_empty() {
            let ok = OkInfo {
                affected_rows: result.affected_rows(),
                last_insert_id: result.last_insert_id(),
                warnings: result.warnings(),
                info: result.info().into_owned(),
            };
            result.drop_result().await.map_err(convert_error)?;
            return Ok(Response::Ok(ok));
        }
        let columns: Arc<[Column]> = columns.iter().map(convert_column).collect();
        let rows = futures::stream::try_unfold(result, |mut result| async move {
            match result.next().await {
                Ok(Some(row)) => Ok(Some((convert_row(row), result))),
                Ok(None) => Ok(None),
                Err(e) => Err(convert_error(e)),
            }
        });
        Ok(Response::Rows {
            columns,
            rows: rows.boxed(),
        })
    }
}

/// `describe` for MySQL: COM_STMT_PREPARE, then COM_STMT_CLOSE so no server-side statement
/// outlives the call.
async fn describe(
    conn: &mut mysql_async::Conn,
    sql: &str,
) -> Result<(usize, Vec<Column>), BackendError> {
    let stmt = conn.prep(sql).await.map_err(convert_error)?;
    let out = (
        usize::from(stmt.num_params()),
        stmt.columns().iter().map(convert_column).collect(),
    );
    conn.close(stmt).await.map_err(convert_error)?;
    Ok(out)
}

fn convert_column(c: &mysql_async::Column) -> Column {
    Column {
        name: c.name_str().into_owned(),
        table: c.table_str().into_owned(),
        column_type: c.column_type(),
        flags: c.flags(),
        charset: c.character_set(),
        length: c.column_length(),
        decimals: c.decimals(),
    }
}

fn convert_row(row: mysql_async::Row) -> Row {
    row.unwrap()
        .into_iter()
        .map(|v| match v {
            mysql_async::Value::NULL => Value::Null,
            mysql_async::Value::Bytes(b) => Value::Bytes(b),
            mysql_async::Value::Int(i) => Value::Int(i),
            mysql_async::Value::UInt(u) => Value::UInt(u),
            mysql_async::Value::Float(f) => Value::Double(f as f64),
            mysql_async::Value::Double(f) => Value::Double(f),
            // The text protocol never yields the temporal variants; render them as text if a
            // driver path ever does.
            other => Value::Bytes(other.as_sql(true).trim_matches('\'').as_bytes().to_vec()),
        })
        .collect()
}

fn convert_error(e: mysql_async::Error) -> BackendError {
    match e {
        mysql_async::Error::Server(s) => BackendError::Server {
            code: s.code,
            state: s.state,
            message: s.message,
        },
        mysql_async::Error::Io(io) => BackendError::Closed(io.to_string()),
        mysql_async::Error::Driver(mysql_async::DriverError::ConnectionClosed) => {
            BackendError::Closed("connection to the server is closed".to_string())
        }
        other => BackendError::Other(other.to_string()),
    }
}
