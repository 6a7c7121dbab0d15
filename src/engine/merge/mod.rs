//! The merge primitives: the rows of several dataNodes combined as one server holding every
//! row would return them ([`Merge`] says which primitives a statement needs).
//!
//! - **MergeSort**: a k-way merge of the nodes' sorted streams; one row per node is held.
//! - **Group**: adjacent rows with equal keys (the input is sorted by them) combined into one,
//!   aggregates folded: `COUNT` and `SUM` added exactly, `MIN` / `MAX` compared, `AVG` from the
//!   nodes' sums and counts; `COUNT/SUM/AVG(DISTINCT)` over rows whose sub-keys (the DISTINCT
//!   values, sorted after the group keys) differ from the previous row's; `GROUP_CONCAT`'s
//!   pieces joined and cut at `group_concat_max_len`. One group (and its last row) is held at
//!   a time; a concatenation past `maxPacketSize` is refused.
//! - **Sort**: only when groups must be ordered by something the nodes could not sort by (an
//!   aggregate): the groups are collected and sorted.
//! - **Limit**, then the extra columns are cut off.
//!
//! Comparison follows MySQL: NULL is smaller than every value; numbers compare as numbers
//! (DECIMAL exactly, by its text), dates and times in time order, binary strings by bytes, and
//! other strings by the collation weight the node computed (`WEIGHT_STRING`), so `_ci`
//! collations compare case- and accent-insensitively exactly as the server does.

use std::cmp::Ordering;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use bigdecimal::{BigDecimal, RoundingMode};
use futures::StreamExt;

use crate::backend::{BackendError, Column, ColumnFlags, ColumnType, Row, RowStream, Value};
use crate::route::{Aggregate, ColumnRef, CompareOp, DistinctOp, Having, Merge, SortKey};

mod compare;
mod filter;
mod limit;
mod memory_sort;
mod merge_sort;
mod ordered_aggregate;

use self::compare::*;
use self::filter::*;
use self::limit::*;
use self::memory_sort::*;
use self::merge_sort::*;
use self::ordered_aggregate::*;

/// Collation id of the `binary` character set (binary strings compare by bytes).
const BINARY_CHARSET: u16 = 63;

/// How a key's values compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Integers (any width, signed or not).
    Int,
    /// DECIMAL, by its decimal text.
    Decimal,
    /// FLOAT / DOUBLE.
    Float,
    /// TIME, which may be negative or exceed 24 hours.
    Time,
    /// DATE / DATETIME / TIMESTAMP text, BIT and binary strings: byte order is value order.
    Bytes,
    /// A string compared by the collation weights in this column.
    Weight(usize),
}

/// A resolved sort key: column index, comparison, direction.
#[derive(Debug, Clone, Copy)]
struct Key {
    at: usize,
    kind: Kind,
    desc: bool,
}

/// A string or BLOB column type (text or binary).
fn is_text_type(c: &Column) -> bool {
    use ColumnType::*;
    matches!(
        c.column_type,
        MYSQL_TYPE_VARCHAR
            | MYSQL_TYPE_VAR_STRING
            | MYSQL_TYPE_STRING
            | MYSQL_TYPE_TINY_BLOB
            | MYSQL_TYPE_MEDIUM_BLOB
            | MYSQL_TYPE_LONG_BLOB
            | MYSQL_TYPE_BLOB
    )
}

/// 1235 `ER_NOT_SUPPORTED_YET`, for a merge the result's column types do not allow.
fn not_supported(what: String) -> BackendError {
    BackendError::refused(
        1235,
        "42000",
        format!("This version of manx doesn't yet support '{what}'"),
    )
}

/// Combines the nodes' row streams as `merge` says. `columns` are the nodes' columns (extra
/// columns included); returns the client's columns and rows. `mixed_weights`: the nodes compute
/// string weights in different ways (MySQL and PostgreSQL dataNodes at once). `skipped` counts
/// the rows the merge's `LIMIT` offset reads and drops (the client's `FOUND_ROWS()` counts them).
///
/// Errors: `Refused` 1235 when a key's column type cannot be merged exactly (ENUM / SET, JSON,
/// geometry, a string key given only by its position in `*`, or any string key when
/// `mixed_weights`: a MySQL collation's order and PostgreSQL's byte order cannot be reconciled).
pub(super) fn rows<'a>(
    merge: &'a Merge,
    columns: Arc<[Column]>,
    streams: Vec<RowStream<'a>>,
    mixed_weights: bool,
    skipped: Arc<AtomicU64>,
) -> Result<(Arc<[Column]>, RowStream<'a>), BackendError> {
    let total = columns.len();
    let visible = total.checked_sub(merge.hidden).ok_or_else(|| {
        BackendError::Other(format!(
            "a dataNode returned {total} columns, fewer than the merge's {} extra columns",
            merge.hidden
        ))
    })?;
    let at = |c: ColumnRef| -> Result<usize, BackendError> {
        let i = match c {
            ColumnRef::Visible(i) => i,
            ColumnRef::Hidden(i) => visible + i,
        };
        if i < total {
            Ok(i)
        } else {
            Err(BackendError::refused(
                1054,
                "42S22",
                format!("Unknown column '{}' in 'order clause'", i + 1),
            ))
        }
    };
    let key = |k: &SortKey| -> Result<Key, BackendError> {
        let i = at(k.column)?;
        let weight = k.weight.map(at).transpose()?;
        Ok(Key {
            at: i,
            kind: kind(&columns[i], weight, mixed_weights)?,
            desc: k.desc,
        })
    };
    let node_order: Vec<Key> = merge.node_order.iter().map(key).collect::<Result<_, _>>()?;
    let order: Vec<Key> = merge.order.iter().map(key).collect::<Result<_, _>>()?;

    let mut rows: RowStream<'a> = if node_order.is_empty() {
        futures::stream::select_all(streams).boxed()
    } else {
        merge_sorted(streams, node_order)
    };
    if let Some(g) = &merge.grouping {
        let keys: Vec<Key> = g.keys.iter().map(key).collect::<Result<_, _>>()?;
        let folds: Vec<Fold> = g
            .aggregates
            .iter()
            .map(|(c, a)| fold(&columns, at(*c)?, a, &at, mixed_weights))
            .collect::<Result<_, _>>()?;
        let sub: Vec<Key> = g.sub_keys.iter().map(key).collect::<Result<_, _>>()?;
        // SUM / AVG (DISTINCT x) of a string x: MySQL tells the values apart as numbers ('1'
        // and '1.0' are one), the sub-keys as strings.
        if let Some(k) = sub.iter().find(|k| {
            matches!(k.kind, Kind::Weight(_))
                || columns[k.at].charset == BINARY_CHARSET && is_text_type(&columns[k.at])
        }) && g
            .aggregates
            .iter()
            .any(|(_, a)| matches!(a, Aggregate::Distinct(DistinctOp::Sum | DistinctOp::Avg)))
        {
            return Err(not_supported(format!(
                "SUM/AVG(DISTINCT) of string column {} over several dataNodes",
                columns[k.at].name
            )));
        }
        let fx = Folding {
            folds,
            sub,
            decimals: columns.iter().map(|c| c.decimals).collect(),
            bound: g.max_group_bytes,
            width: total,
        };
        rows = group(rows, keys, fx);
        if let Some(h) = &g.having {
            let condition = Condition::new(h, &columns, &at)?;
            rows = rows
                .filter(move |r| {
                    let keep = match r {
                        Ok(row) => condition.eval(row) == Some(true),
                        Err(_) => true,
                    };
                    futures::future::ready(keep)
                })
                .boxed();
        }
    }
    if !order.is_empty() {
        rows = sort(rows, order);
    }
    if let Some((offset, count)) = merge.limit {
        rows = limit(rows, offset, count, skipped);
    }
    if visible < total {
        rows = rows
            .map(move |r| {
                r.map(|mut row| {
                    row.truncate(visible);
                    row
                })
            })
            .boxed();
    }
    let columns: Arc<[Column]> = Arc::from(&columns[..visible]);
    Ok((columns, rows))
}

#[cfg(test)]
mod tests;
