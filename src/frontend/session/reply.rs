//! Writing answers to the client: OK packets, result sets streamed from the dataNodes or made by
//! the gateway, column definitions, and error packets (through the shared error slot).

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

use futures::StreamExt;
use opensrv_mysql::{
    Column as WireColumn, ColumnFlags, ColumnType, ErrorKind, OkResponse, QueryResultWriter,
    StatusFlags,
};

use super::Writer;
use crate::backend::{Column, OkInfo};
use crate::frontend::error::MysqlError;
use crate::frontend::wire::binary::{Cell, TextRow};
use crate::frontend::wire::tap::{ColumnMeta, ErrPacket, ErrorSlot};

/// An OK packet. The server's `info` text ("Records: 2  Duplicates: 0 ...", summed over the
/// nodes by [`crate::engine::merge_ok`]) is written length-encoded as MySQL writes it
/// ([`ok_payload`], swapped in for opensrv-mysql 0.7's, which writes it raw unless the client
/// negotiated session tracking: clients (mysql_common) then misread the whole packet).
/// Its warning count goes through `slot`: opensrv-mysql 0.7 writes 0 whatever it is given.
pub(super) async fn write_ok(
    slot: &ErrorSlot,
    w: QueryResultWriter<'_, Writer>,
    ok: OkInfo,
    status: StatusFlags,
) -> io::Result<()> {
    if ok.warnings > 0 {
        slot.set_end_warnings(ok.warnings);
    }
    slot.note_ok(ok.affected_rows);
    if !ok.info.is_empty() {
        slot.replace_next(vec![ok_payload_with(
            ok.affected_rows,
            ok.last_insert_id.unwrap_or(0),
            status,
            ok.warnings,
            &ok.info,
        )]);
    }
    w.completed(OkResponse {
        affected_rows: ok.affected_rows,
        last_insert_id: ok.last_insert_id.unwrap_or(0),
        status_flags: status,
        warnings: ok.warnings,
        ..Default::default()
    })
    .await
}

/// An OK packet's payload as a MySQL server writes it (`00`, affected rows, insert id 0,
/// status flags, no warnings, `info`), the message length-encoded whatever the client's
/// capabilities, as MySQL's `net_send_ok` stores it: opensrv-mysql 0.7 writes it bare to a
/// client without `CLIENT_SESSION_TRACK`, and such clients (mysql_async, Connector/J) then read
/// a length out of its first letter and lose the message (Mycat's `Reload config success`).
pub(super) fn ok_payload(affected: u64, status: StatusFlags, info: &str) -> Vec<u8> {
    ok_payload_with(affected, 0, status, 0, info)
}

/// [`ok_payload`] with an insert id and a warning count.
pub(super) fn ok_payload_with(
    affected: u64,
    insert_id: u64,
    status: StatusFlags,
    warnings: u16,
    info: &str,
) -> Vec<u8> {
    use mysql_common::io::WriteMysqlExt;
    let mut p = vec![0x00];
    // Writing into a Vec cannot fail.
    let _ = p.write_lenenc_int(affected);
    let _ = p.write_lenenc_int(insert_id);
    p.extend_from_slice(&status.bits().to_le_bytes());
    p.extend_from_slice(&warnings.to_le_bytes());
    let _ = p.write_lenenc_str(info.as_bytes());
    p
}

/// Streams a result set to the client as the dataNodes deliver it, and ends it with the sum of
/// the nodes' warning counts (`warning_counts`,
/// [`BackendConn::warning_count`](crate::backend::BackendConn::warning_count), read once the
/// rows are all in).
pub(super) async fn stream_rows(
    w: QueryResultWriter<'_, Writer>,
    columns: &[Column],
    mut rows: crate::backend::RowStream<'_>,
    slot: &ErrorSlot,
    binary: bool,
    warning_counts: &[Arc<AtomicU16>],
) -> io::Result<Sent> {
    let wire: Vec<WireColumn> = columns.iter().map(wire_column).collect();
    // A client whose `character_set_results` is not UTF-8 gets its text columns' values in
    // that character set (their definitions say so: the writer, module `tap`).
    let results = slot.charsets().results.filter(|r| !r.is_utf8());
    let text: Vec<bool> = columns.iter().map(|c| c.charset != BINARY).collect();
    slot.set_columns(columns.iter().map(|c| ColumnMeta {
        charset: c.charset,
        length: c.length,
        decimals: c.decimals,
    }));
    let mut rw = w.start(&wire).await?;
    // The text-protocol encoding of the current row (see `TextRow`), reused row after row.
    let mut encoded = Vec::new();
    let mut sent = 0u64;
    while let Some(row) = rows.next().await {
        match row {
            Ok(row) if row.len() != wire.len() => {
                let message = format!(
                    "dataNodes returned different columns for the same statement ({} and {}): their tables differ",
                    wire.len(),
                    row.len()
                );
                return abort_rows(rw, slot, MysqlError::new(1105, "HY000", message))
                    .await
                    .map(|_| Sent::default());
            }
            Ok(mut row) => {
                if let Some(r) = results {
                    for (v, _) in row.iter_mut().zip(&text).filter(|(_, t)| **t) {
                        if let crate::backend::Value::Bytes(b) = v
                            && let std::borrow::Cow::Owned(encoded) = r.encode_bytes(b)
                        {
                            *b = encoded;
                        }
                    }
                }
                if binary {
                    for v in &row {
                        rw.write_col(Cell(v))?;
                    }
                } else {
                    rw.write_col(TextRow::encode(&row, &mut encoded)?)?;
                    for _ in 1..row.len() {
                        rw.write_col(TextRow::REST)?;
                    }
                }
                if let Some(chunks) = full_chunks(&row, &wire, binary) {
                    slot.pad_after_full_chunks(chunks);
                }
                rw.end_row().await?;
                sent += 1;
            }
            Err(e) => {
                // A server error (or the merge's refusal) mid-result keeps its errno; a broken
                // connection is named.
                let e = MysqlError::backend("a dataNode failed while sending rows".into(), &e);
                return abort_rows(rw, slot, e).await.map(|_| Sent::default());
            }
        }
    }
    let warnings = warning_counts
        .iter()
        .fold(0u16, |n, c| n.saturating_add(c.load(Ordering::Relaxed)));
    if warnings > 0 {
        slot.set_end_warnings(warnings);
    }
    rw.finish().await?;
    Ok(Sent {
        rows: sent,
        warnings,
        complete: true,
        skipped: 0,
    })
}

/// The collation id of binary strings and of every column that is not text.
const BINARY: u16 = 63;

/// What [`stream_rows`] sent.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Sent {
    /// Rows written.
    pub(super) rows: u64,
    /// The warning count the result set ended with.
    pub(super) warnings: u16,
    /// The result set ended with its EOF, not with an error.
    pub(super) complete: bool,
    /// The rows the gateway's merge read and dropped for a `LIMIT` offset before those sent
    /// ([`Output::Rows`](crate::engine::Output::Rows)).
    pub(super) skipped: u64,
}

/// A one-row, one-column `BIGINT UNSIGNED` result the session answers itself.
pub(super) async fn write_unsigned(
    w: QueryResultWriter<'_, Writer>,
    label: String,
    value: u64,
) -> io::Result<()> {
    let column = WireColumn {
        table: String::new(),
        column: label,
        coltype: ColumnType::MYSQL_TYPE_LONGLONG,
        colflags: ColumnFlags::UNSIGNED_FLAG | ColumnFlags::NOT_NULL_FLAG,
    };
    let mut rw = w.start(std::slice::from_ref(&column)).await?;
    rw.write_col(value)?;
    rw.end_row().await?;
    rw.finish().await
}

/// A one-row, one-column `BIGINT` result the session answers itself.
pub(super) async fn write_signed(
    w: QueryResultWriter<'_, Writer>,
    label: String,
    value: i64,
) -> io::Result<()> {
    let column = WireColumn {
        table: String::new(),
        column: label,
        coltype: ColumnType::MYSQL_TYPE_LONGLONG,
        colflags: ColumnFlags::NOT_NULL_FLAG,
    };
    let mut rw = w.start(std::slice::from_ref(&column)).await?;
    rw.write_col(value)?;
    rw.end_row().await?;
    rw.finish().await
}

/// How many 0xFFFFFF-byte packets a row's payload fills exactly, when it does: such a row must
/// be followed by an empty packet, which opensrv-mysql 0.7 does not send (the client would wait
/// for the rest of the row forever). `None` for every other row (checked cheaply: only rows
/// holding nearly 16 MiB are measured).
fn full_chunks(row: &[crate::backend::Value], wire: &[WireColumn], binary: bool) -> Option<usize> {
    use opensrv_mysql::ToMysqlValue;
    const CHUNK: usize = 0xFF_FFFF;
    let bytes: usize = row
        .iter()
        .map(|v| match v {
            crate::backend::Value::Bytes(b) => b.len(),
            _ => 0,
        })
        .sum();
    if bytes + 9 * row.len() + 16 < CHUNK {
        return None;
    }
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    if binary {
        n.0 = 1 + (row.len() + 7 + 2) / 8;
        for (v, c) in row.iter().zip(wire) {
            let cell = Cell(v);
            if !cell.is_null() {
                cell.to_mysql_bin(&mut n, c).ok()?;
            }
        }
    } else {
        for v in row {
            Cell(v).to_mysql_text(&mut n).ok()?;
        }
    }
    n.0.is_multiple_of(CHUNK).then_some(n.0 / CHUNK)
}

/// Ends a result set with an error (the client sees the rows so far, then the ERR packet).
async fn abort_rows(
    rw: opensrv_mysql::RowWriter<'_, Writer>,
    slot: &ErrorSlot,
    e: MysqlError,
) -> io::Result<()> {
    slot.set(ErrPacket::from(&e));
    rw.finish_error(ErrorKind::ER_UNKNOWN_ERROR, &e.message.into_bytes())
        .await
}

pub(super) async fn send_error(
    slot: &ErrorSlot,
    w: QueryResultWriter<'_, Writer>,
    e: MysqlError,
) -> io::Result<()> {
    slot.set(ErrPacket::from(&e));
    w.error(ErrorKind::ER_UNKNOWN_ERROR, e.message.as_bytes())
        .await
}

/// The backend's column definition in opensrv's terms (it carries type and flags; opensrv writes
/// its own charset, length and decimals).
pub(super) fn wire_column(c: &Column) -> WireColumn {
    WireColumn {
        table: c.table.clone(),
        column: c.name.clone(),
        coltype: ColumnType::try_from(c.column_type as u8)
            .unwrap_or(ColumnType::MYSQL_TYPE_VAR_STRING),
        colflags: ColumnFlags::from_bits_truncate(c.flags.bits()),
    }
}

/// A result set of text columns answered by the gateway itself.
pub(super) async fn write_text_rows(
    w: QueryResultWriter<'_, Writer>,
    names: &[&str],
    rows: impl IntoIterator<Item = Vec<Option<String>>>,
) -> io::Result<()> {
    let columns = names
        .iter()
        .map(|n| (*n, ColumnType::MYSQL_TYPE_VAR_STRING));
    write_typed_rows(w, columns, rows).await
}

/// A result set answered by the gateway itself, each column named and typed (`columns`), each
/// value sent as text (the manager's answers type their numbers, as Mycat's do).
pub(super) async fn write_typed_rows<'n>(
    w: QueryResultWriter<'_, Writer>,
    columns: impl IntoIterator<Item = (&'n str, ColumnType)>,
    rows: impl IntoIterator<Item = Vec<Option<String>>>,
) -> io::Result<()> {
    let cols: Vec<WireColumn> = columns
        .into_iter()
        .map(|(name, coltype)| WireColumn {
            table: String::new(),
            column: name.to_string(),
            coltype,
            colflags: ColumnFlags::empty(),
        })
        .collect();
    let mut rw = w.start(&cols).await?;
    for row in rows {
        for v in row {
            rw.write_col(v)?;
        }
        rw.end_row().await?;
    }
    rw.finish().await
}
