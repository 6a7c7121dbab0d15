//! Running one translated statement: the pipelined describe-and-run round trip, the columns'
//! catalog flags, `INSERT ... RETURNING` for the insert id, and the catalog facts the dialect
//! needs.

use super::*;

/// Runs a translated statement, with `prefix` (the statement savepoint, see
/// [`StatementGuard`]) sent in front of it in the same round trip.
pub(super) async fn run_statement(
    conn: &mut Conn,
    finished: &dialect::Finished,
    prefix: Option<String>,
) -> Result<Response<'static>, BackendError> {
    let client = &conn.client;
    let savepoint = async {
        match &prefix {
            Some(p) => client.batch_execute(p).await.map_err(error::convert),
            None => Ok(()),
        }
    };
    if finished.returning_id || finished.returning_inserted {
        let (set, ran) = futures::future::join(savepoint, insert_returning(client, finished)).await;
        set?;
        return ran.map(Response::Ok);
    }
    if !finished.returns_rows {
        let run = async {
            let mut stream = std::pin::pin!(
                client
                    .simple_query_raw(&finished.sql)
                    .await
                    .map_err(error::convert)?
            );
            let mut ok = OkInfo::default();
            while let Some(m) = stream.next().await {
                if let SimpleQueryMessage::CommandComplete(n) = m.map_err(error::convert)? {
                    ok.affected_rows = n;
                }
            }
            Ok(Response::Ok(ok))
        };
        let (set, ran) = futures::future::join(savepoint, run).await;
        set?;
        return ran;
    }
    // Describe, look up the column flags of tables not seen yet, and run, in one round
    // trip: the requests are queued in this order before any answer is read.
    let missing = unlooked(conn, finished);
    let catalog = flags_lookup(client, &missing);
    let (set, statement, catalog, stream) = futures::future::join4(
        savepoint,
        client.prepare(&finished.sql),
        catalog,
        client.simple_query_raw(&finished.sql),
    )
    .await;
    set?;
    // In a transaction a failed Describe aborts it and the query then fails with 25P02:
    // the Describe's error is the one to report.
    let statement = statement.map_err(error::convert)?;
    let catalog = catalog.map_err(error::convert)?;
    let stream = stream.map_err(error::convert)?;
    record_flags(conn, catalog, missing);
    let mapped = map_columns(conn, &statement);
    let columns: Arc<[Column]> = mapped.iter().map(|m| m.column.clone()).collect();
    let conversions: Vec<Conversion> = mapped.iter().map(|m| m.conversion).collect();
    let rows = stream.filter_map(move |m| {
        let out = match m {
            Ok(SimpleQueryMessage::Row(row)) => Some(Ok((0..row.len())
                .map(|i| {
                    types::convert_value(
                        row.get(i),
                        conversions.get(i).copied().unwrap_or(Conversion::AsIs),
                    )
                })
                .collect::<Row>())),
            Ok(_) => None,
            Err(e) => Some(Err(error::convert(e))),
        };
        futures::future::ready(out)
    });
    Ok(Response::Rows {
        columns,
        rows: rows.boxed(),
    })
}

/// The relations a row-returning statement reads whose column flags the connection has not
/// looked up yet.
pub(super) fn unlooked(conn: &Conn, finished: &dialect::Finished) -> Vec<String> {
    finished
        .tables
        .iter()
        .filter(|t| !conn.flags_looked_up.contains(*t))
        .cloned()
        .collect()
}

/// The catalog lookup of `missing` relations' column flags ([`dialect::column_flags_query`]),
/// nothing when there are none; queued on `client` when first polled.
pub(super) async fn flags_lookup(
    client: &tokio_postgres::Client,
    missing: &[String],
) -> Result<Vec<SimpleQueryMessage>, tokio_postgres::Error> {
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    client
        .simple_query(&dialect::column_flags_query(missing))
        .await
}

/// Records the column flags a [`dialect::column_flags_query`] answered, and that `looked_up`
/// relations were looked up (found or not).
pub(super) fn record_flags(
    conn: &mut Conn,
    catalog: Vec<SimpleQueryMessage>,
    looked_up: Vec<String>,
) {
    for m in catalog {
        if let SimpleQueryMessage::Row(row) = m {
            let (Some(oid), Some(name), Some(attnum)) = (
                row.get(0).and_then(|v| v.parse::<u32>().ok()),
                row.get(1),
                row.get(2).and_then(|v| v.parse::<i16>().ok()),
            ) else {
                continue;
            };
            let mut flags = ColumnFlags::empty();
            if row.get(3) == Some("t") {
                flags |= ColumnFlags::NOT_NULL_FLAG;
            }
            if row.get(4) == Some("t") {
                flags |= ColumnFlags::PRI_KEY_FLAG;
            }
            if row.get(5) == Some("t") {
                flags |= ColumnFlags::AUTO_INCREMENT_FLAG;
            }
            let declared = row.get(6).and_then(types::Declared::parse);
            conn.flags
                .entry(oid)
                .or_insert_with(|| (name.to_string(), HashMap::new()))
                .1
                .insert(attnum, (flags, declared));
        }
    }
    conn.flags_looked_up.extend(looked_up);
}

/// A described statement's result columns as MySQL columns, with the table name and flags the
/// connection knows from the catalog.
pub(super) fn map_columns(conn: &Conn, statement: &tokio_postgres::Statement) -> Vec<Mapped> {
    statement
        .columns()
        .iter()
        .map(|c| {
            let mut m = types::map_column(c.name(), c.type_(), c.type_modifier());
            if let (Some(oid), Some(attnum)) = (c.table_oid(), c.column_id())
                && let Some((table, columns)) = conn.flags.get(&oid)
            {
                m.column.table = table.clone();
                if let Some((f, declared)) = columns.get(&attnum) {
                    if let Some(d) = declared {
                        d.apply(&mut m);
                    }
                    m.column.flags |= *f;
                }
            }
            m
        })
        .collect()
}

/// An INSERT with manx's `RETURNING` (see [`dialect::Finished`]): the first id (MySQL's
/// `last_insert_id` of a multi-row INSERT is its first row's) and, for an upsert, MySQL's
/// affected rows (1 per row inserted, 2 per row updated).
pub(super) async fn insert_returning(
    client: &tokio_postgres::Client,
    finished: &dialect::Finished,
) -> Result<OkInfo, BackendError> {
    let mut ok = OkInfo::default();
    let mut upserted = 0;
    let mut stream = std::pin::pin!(
        client
            .simple_query_raw(&finished.sql)
            .await
            .map_err(error::convert)?
    );
    while let Some(m) = stream.next().await {
        match m.map_err(error::convert)? {
            SimpleQueryMessage::Row(row) => {
                if finished.returning_id && ok.last_insert_id.is_none() {
                    ok.last_insert_id = row.get(0).and_then(|v| v.parse().ok());
                }
                if finished.returning_inserted {
                    let inserted = row.len().checked_sub(1).and_then(|i| row.get(i)) == Some("t");
                    upserted += if inserted { 1 } else { 2 };
                }
            }
            SimpleQueryMessage::CommandComplete(n) => ok.affected_rows = n,
            _ => {}
        }
    }
    if finished.returning_inserted {
        ok.affected_rows = upserted;
    }
    Ok(ok)
}

/// What [`dialect::Translation::finish`] needs from the catalog: the INSERT target's
/// [`TableInfo`], and the boolean columns of the tables whose 0/1 literals may meet them.
pub(super) async fn catalog_facts(
    conn: &mut Conn,
    translation: &dialect::Translation,
) -> Result<(Option<TableInfo>, HashSet<String>), BackendError> {
    let info = match &translation.insert_table {
        Some(table) => Some(table_info(conn, table).await?),
        None => None,
    };
    let mut booleans = HashSet::new();
    for table in &translation.boolean_tables {
        booleans.extend(table_info(conn, table).await?.booleans);
    }
    Ok((info, booleans))
}

/// The primary key and identity column of `table`, from the catalog (cached per connection,
/// cleared by DDL on it).
pub(super) async fn table_info(conn: &mut Conn, table: &str) -> Result<TableInfo, BackendError> {
    if let Some(info) = conn.tables.get(table) {
        return Ok(info.clone());
    }
    let messages = conn
        .client
        .simple_query(&dialect::table_info_query(table))
        .await
        .map_err(error::convert)?;
    let mut info = TableInfo::default();
    for m in messages {
        if let SimpleQueryMessage::Row(row) = m {
            let name = row.get(0).unwrap_or_default().to_string();
            info.columns.push(name.to_lowercase());
            if row.get(3) == Some("t") {
                info.booleans.push(name.to_lowercase());
            }
            if row.get(1) == Some("t") {
                info.primary_key.push(name.clone());
            }
            if row.get(2) == Some("t") && info.auto_column.is_none() {
                info.auto_column = Some(name);
            }
        }
    }
    conn.tables.insert(table.to_string(), info.clone());
    Ok(info)
}

/// A translation failure as the client sees it, the gateway's refusal (no server saw the
/// statement): a statement that does not parse is a syntax
/// error (1064/42000); a refused construct is `ER_NOT_SUPPORTED_YET` (1235/42000); an error
/// MySQL would give keeps its code.
pub(super) fn dialect_error(e: dialect::DialectError) -> BackendError {
    let (code, state) = match e {
        dialect::DialectError::Parse(_) => (1064, "42000"),
        dialect::DialectError::Unsupported(_) => (1235, "42000"),
        dialect::DialectError::Server { code, state, .. } => (code, state),
    };
    BackendError::refused(code, state, e.to_string())
}
