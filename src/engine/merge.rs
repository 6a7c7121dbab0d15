//! The merge primitives: the rows of several dataNodes combined as one server holding every
//! row would return them ([`Merge`] says which primitives a statement needs).
//!
//! - **MergeSort**: a k-way merge of the nodes' sorted streams; one row per node is held.
//! - **Group**: adjacent rows with equal keys (the input is sorted by them) combined into one,
//!   aggregates folded: `COUNT` and `SUM` added exactly, `MIN` / `MAX` compared, `AVG` from the
//!   nodes' sums and counts. One group is held at a time.
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

use bigdecimal::{BigDecimal, RoundingMode};
use futures::StreamExt;

use crate::backend::{BackendError, Column, ColumnFlags, ColumnType, Row, RowStream, Value};
use crate::route::{Aggregate, ColumnRef, CompareOp, Having, Merge, SortKey};

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

/// 1235 `ER_NOT_SUPPORTED_YET`, for a merge the result's column types do not allow.
fn not_supported(what: String) -> BackendError {
    BackendError::Server {
        code: 1235,
        state: "42000".to_string(),
        message: format!("This version of manx doesn't yet support '{what}'"),
    }
}

/// Combines the nodes' row streams as `merge` says. `columns` are the nodes' columns (extra
/// columns included); returns the client's columns and rows. `mixed_weights`: the nodes compute
/// string weights in different ways (MySQL and PostgreSQL dataNodes at once).
///
/// Errors: `Server` 1235 when a key's column type cannot be merged exactly (ENUM / SET, JSON,
/// geometry, a string key given only by its position in `*`, or any string key when
/// `mixed_weights`: a MySQL collation's order and PostgreSQL's byte order cannot be reconciled).
pub(super) fn rows<'a>(
    merge: &'a Merge,
    columns: Arc<[Column]>,
    streams: Vec<RowStream<'a>>,
    mixed_weights: bool,
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
            Err(BackendError::Server {
                code: 1054,
                state: "42S22".to_string(),
                message: format!("Unknown column '{}' in 'order clause'", i + 1),
            })
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
        let decimals = columns.iter().map(|c| c.decimals).collect();
        rows = group(rows, keys, folds, decimals);
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
        rows = limit(rows, offset, count);
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

/// How a column's values compare, from its type, flags and character set (`mixed_weights`: as
/// in [`rows`]).
fn kind(c: &Column, weight: Option<usize>, mixed_weights: bool) -> Result<Kind, BackendError> {
    use ColumnType::*;
    Ok(match c.column_type {
        MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_LONG | MYSQL_TYPE_LONGLONG
        | MYSQL_TYPE_INT24 | MYSQL_TYPE_YEAR => Kind::Int,
        MYSQL_TYPE_DECIMAL | MYSQL_TYPE_NEWDECIMAL => Kind::Decimal,
        MYSQL_TYPE_FLOAT | MYSQL_TYPE_DOUBLE => Kind::Float,
        MYSQL_TYPE_TIME | MYSQL_TYPE_TIME2 => Kind::Time,
        MYSQL_TYPE_DATE
        | MYSQL_TYPE_NEWDATE
        | MYSQL_TYPE_DATETIME
        | MYSQL_TYPE_DATETIME2
        | MYSQL_TYPE_TIMESTAMP
        | MYSQL_TYPE_TIMESTAMP2
        | MYSQL_TYPE_BIT
        | MYSQL_TYPE_NULL => Kind::Bytes,
        MYSQL_TYPE_VARCHAR
        | MYSQL_TYPE_VAR_STRING
        | MYSQL_TYPE_STRING
        | MYSQL_TYPE_TINY_BLOB
        | MYSQL_TYPE_MEDIUM_BLOB
        | MYSQL_TYPE_LONG_BLOB
        | MYSQL_TYPE_BLOB => {
            if c.flags
                .intersects(ColumnFlags::ENUM_FLAG | ColumnFlags::SET_FLAG)
            {
                return Err(not_supported(format!(
                    "ordering or grouping by ENUM/SET column {} over several dataNodes",
                    c.name
                )));
            }
            if c.charset == BINARY_CHARSET {
                Kind::Bytes
            } else if mixed_weights {
                return Err(not_supported(format!(
                    "ordering, grouping or MIN/MAX by string column {} over MySQL and PostgreSQL dataNodes at once (a MySQL collation and PostgreSQL byte order sort strings differently)",
                    c.name
                )));
            } else {
                match weight {
                    Some(w) => Kind::Weight(w),
                    None => {
                        return Err(not_supported(format!(
                            "ordering or grouping by string column {} given by its position in * over several dataNodes (name the column)",
                            c.name
                        )));
                    }
                }
            }
        }
        other => {
            return Err(not_supported(format!(
                "ordering, grouping or MIN/MAX by column {} of type {other:?} over several dataNodes",
                c.name
            )));
        }
    })
}

fn text(v: &Value) -> Option<std::borrow::Cow<'_, str>> {
    match v {
        Value::Null => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(b)),
        Value::Int(i) => Some(i.to_string().into()),
        Value::UInt(u) => Some(u.to_string().into()),
        Value::Double(d) => Some(d.to_string().into()),
    }
}

fn bytes(v: &Value) -> std::borrow::Cow<'_, [u8]> {
    match v {
        Value::Bytes(b) => std::borrow::Cow::Borrowed(b),
        other => std::borrow::Cow::Owned(
            text(other)
                .map(|t| t.into_owned().into_bytes())
                .unwrap_or_default(),
        ),
    }
}

/// Compares two rows by `keys` (each key's direction applied).
fn compare(keys: &[Key], a: &Row, b: &Row) -> Ordering {
    for k in keys {
        let o = compare_values(k.kind, &a[k.at], &b[k.at], a, b);
        let o = if k.desc { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Whether two rows have equal keys (directions ignored).
fn same(keys: &[Key], a: &Row, b: &Row) -> bool {
    keys.iter()
        .all(|k| compare_values(k.kind, &a[k.at], &b[k.at], a, b) == Ordering::Equal)
}

/// MySQL's order of two values of one column (NULL first). `ra` / `rb` are their rows, where
/// the collation weights are.
fn compare_values(kind: Kind, a: &Value, b: &Value, ra: &Row, rb: &Row) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => return Ordering::Equal,
        (Value::Null, _) => return Ordering::Less,
        (_, Value::Null) => return Ordering::Greater,
        _ => {}
    }
    match kind {
        Kind::Int => match (int(a), int(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => compare_decimal(&text(a).unwrap_or_default(), &text(b).unwrap_or_default()),
        },
        Kind::Decimal => {
            compare_decimal(&text(a).unwrap_or_default(), &text(b).unwrap_or_default())
        }
        Kind::Float => {
            let x = text(a).and_then(|t| t.trim().parse::<f64>().ok());
            let y = text(b).and_then(|t| t.trim().parse::<f64>().ok());
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
        Kind::Time => match (time(a), time(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => bytes(a).cmp(&bytes(b)),
        },
        Kind::Bytes => bytes(a).cmp(&bytes(b)),
        Kind::Weight(w) => bytes(&ra[w]).cmp(&bytes(&rb[w])),
    }
}

fn int(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(*i as i128),
        Value::UInt(u) => Some(*u as i128),
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// A TIME value (`[-]H+:MM:SS[.ffffff]`) in microseconds.
fn time(v: &Value) -> Option<i128> {
    let t = text(v)?;
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, &*t),
    };
    let (hms, frac) = t.split_once('.').unwrap_or((t, ""));
    let mut parts = hms.split(':');
    let h: i128 = parts.next()?.parse().ok()?;
    let m: i128 = parts.next()?.parse().ok()?;
    let s: i128 = parts.next()?.parse().ok()?;
    let mut micros: i128 = 0;
    for (i, d) in frac.bytes().take(6).enumerate() {
        micros += ((d as char).to_digit(10)? as i128) * 10i128.pow(5 - i as u32);
    }
    let v = ((h * 60 + m) * 60 + s) * 1_000_000 + micros;
    Some(if neg { -v } else { v })
}

/// Compares two decimal numbers written as text (`-12.3400`), exactly.
fn compare_decimal(a: &str, b: &str) -> Ordering {
    fn parts(s: &str) -> (bool, &str, &str) {
        let s = s.trim();
        let (neg, s) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s.strip_prefix('+').unwrap_or(s)),
        };
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        let int = int.trim_start_matches('0');
        let frac = frac.trim_end_matches('0');
        let zero = int.is_empty() && frac.is_empty();
        (neg && !zero, int, frac)
    }
    let (na, ia, fa) = parts(a);
    let (nb, ib, fb) = parts(b);
    let magnitude = ia.len().cmp(&ib.len()).then(ia.cmp(ib)).then(fa.cmp(fb));
    match (na, nb) {
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
        (false, false) => magnitude,
        (true, true) => magnitude.reverse(),
    }
}

/// Rows a cut stream may still read after its `LIMIT` is reached, so that the nodes' results end
/// cleanly (see [`limit`]).
const DRAIN_AFTER_LIMIT: usize = 256;

/// `LIMIT offset, count` over `rows`. Once `count` rows are out, up to [`DRAIN_AFTER_LIMIT`] more
/// are read and dropped before the stream ends: a node's result read to its end leaves its
/// connection clean, so the pool hands it out again without a reset round trip. A node told
/// `LIMIT offset + count` (as the router pushes it down) has at most that many rows left, which
/// are mostly in the socket already; a longer remainder is left for the pool's reset.
fn limit(rows: RowStream<'_>, offset: u64, count: u64) -> RowStream<'_> {
    struct State<'a> {
        rows: RowStream<'a>,
        skip: u64,
        left: u64,
    }
    let state = State {
        rows,
        skip: offset,
        left: count,
    };
    futures::stream::unfold(state, |mut st| async move {
        while st.left > 0 {
            match st.rows.next().await? {
                Ok(_) if st.skip > 0 => st.skip -= 1,
                Ok(row) => {
                    st.left -= 1;
                    return Some((Ok(row), st));
                }
                Err(e) => {
                    st.left = 0;
                    return Some((Err(e), st));
                }
            }
        }
        let mut drained = 0;
        while drained < DRAIN_AFTER_LIMIT {
            match st.rows.next().await {
                Some(Ok(_)) => drained += 1,
                Some(Err(_)) | None => break,
            }
        }
        None
    })
    .boxed()
}

/// A k-way merge of streams each sorted by `keys`: holds the head row of every stream and
/// yields the smallest (ties go to the earlier stream).
fn merge_sorted<'a>(streams: Vec<RowStream<'a>>, keys: Vec<Key>) -> RowStream<'a> {
    struct State<'a> {
        streams: Vec<RowStream<'a>>,
        heads: Vec<Option<Row>>,
        started: bool,
        failed: bool,
        pending: Option<BackendError>,
        keys: Vec<Key>,
    }
    let n = streams.len();
    let state = State {
        streams,
        heads: vec![None; n],
        started: false,
        failed: false,
        pending: None,
        keys,
    };
    futures::stream::unfold(state, |mut st| async move {
        if st.failed {
            return None;
        }
        if let Some(e) = st.pending.take() {
            st.failed = true;
            return Some((Err(e), st));
        }
        if !st.started {
            st.started = true;
            for i in 0..st.streams.len() {
                match st.streams[i].next().await {
                    Some(Ok(row)) => st.heads[i] = Some(row),
                    Some(Err(e)) => {
                        st.failed = true;
                        return Some((Err(e), st));
                    }
                    None => {}
                }
            }
        }
        let mut best: Option<usize> = None;
        for i in 0..st.heads.len() {
            if let Some(row) = &st.heads[i] {
                let better = match best {
                    None => true,
                    Some(b) => {
                        compare(&st.keys, row, st.heads[b].as_ref().expect("head"))
                            == Ordering::Less
                    }
                };
                if better {
                    best = Some(i);
                }
            }
        }
        let i = best?;
        let row = st.heads[i].take().expect("head");
        match st.streams[i].next().await {
            Some(Ok(next)) => st.heads[i] = Some(next),
            // The row in hand is good; the failure is reported right after it.
            Some(Err(e)) => st.pending = Some(e),
            None => {}
        }
        Some((Ok(row), st))
    })
    .boxed()
}

/// How one aggregate column folds.
#[derive(Debug, Clone)]
struct Fold {
    at: usize,
    op: FoldOp,
}

#[derive(Debug, Clone)]
enum FoldOp {
    Count,
    Sum(Number),
    Min(Kind),
    Max(Kind),
    Avg {
        sum: usize,
        count: usize,
        number: Number,
        /// Decimals of the AVG column (MySQL: the argument's scale + div_precision_increment).
        decimals: u8,
    },
}

/// The arithmetic a SUM needs, from its column type.
#[derive(Debug, Clone, Copy)]
enum Number {
    Decimal,
    Float,
}

fn fold(
    columns: &[Column],
    at: usize,
    a: &Aggregate,
    resolve: &dyn Fn(ColumnRef) -> Result<usize, BackendError>,
    mixed_weights: bool,
) -> Result<Fold, BackendError> {
    let number = |c: &Column| match c.column_type {
        ColumnType::MYSQL_TYPE_FLOAT | ColumnType::MYSQL_TYPE_DOUBLE => Number::Float,
        _ => Number::Decimal,
    };
    let op = match a {
        Aggregate::Count => FoldOp::Count,
        Aggregate::Sum => FoldOp::Sum(number(&columns[at])),
        Aggregate::Min { weight } => FoldOp::Min(kind(
            &columns[at],
            weight.map(resolve).transpose()?,
            mixed_weights,
        )?),
        Aggregate::Max { weight } => FoldOp::Max(kind(
            &columns[at],
            weight.map(resolve).transpose()?,
            mixed_weights,
        )?),
        Aggregate::Avg { sum, count } => {
            let sum = resolve(*sum)?;
            FoldOp::Avg {
                sum,
                count: resolve(*count)?,
                number: number(&columns[at]),
                decimals: columns[at].decimals,
            }
        }
    };
    Ok(Fold { at, op })
}

/// A group being combined: its first row and the running values of its aggregates.
struct GroupState {
    row: Row,
    acc: Vec<Acc>,
}

#[derive(Debug, Clone)]
enum Acc {
    /// Nothing but NULL so far.
    Null,
    Int(i128),
    Decimal(BigDecimal),
    Float(f64),
    /// MIN / MAX keep their value in the row itself.
    Row,
    /// AVG: the sum (`Null` while every sum was NULL) and the count.
    Avg(Box<Acc>, i128),
}

fn add(acc: Acc, v: &Value, number: Number) -> Acc {
    let Some(t) = text(v) else { return acc };
    match (acc, number) {
        (Acc::Null, Number::Float) | (Acc::Float(_), Number::Float)
            if t.parse::<f64>().is_err() =>
        {
            Acc::Null
        }
        (Acc::Null, Number::Float) => Acc::Float(t.trim().parse().unwrap_or(0.0)),
        (Acc::Float(x), Number::Float) => Acc::Float(x + t.trim().parse::<f64>().unwrap_or(0.0)),
        (Acc::Null, Number::Decimal) => match t.trim().parse::<i128>() {
            Ok(i) => Acc::Int(i),
            Err(_) => BigDecimal::from_str(t.trim())
                .map(Acc::Decimal)
                .unwrap_or(Acc::Null),
        },
        (Acc::Int(x), Number::Decimal) => {
            match t.trim().parse::<i128>().ok().and_then(|i| x.checked_add(i)) {
                Some(s) => Acc::Int(s),
                None => match BigDecimal::from_str(t.trim()) {
                    Ok(d) => Acc::Decimal(BigDecimal::from(x) + d),
                    Err(_) => Acc::Int(x),
                },
            }
        }
        (Acc::Decimal(x), Number::Decimal) => match BigDecimal::from_str(t.trim()) {
            Ok(d) => Acc::Decimal(x + d),
            Err(_) => Acc::Decimal(x),
        },
        (acc, _) => acc,
    }
}

impl GroupState {
    fn new(row: Row, folds: &[Fold]) -> GroupState {
        let acc = folds
            .iter()
            .map(|f| match f.op {
                FoldOp::Count => Acc::Int(int(&row[f.at]).unwrap_or(0)),
                FoldOp::Sum(n) => add(Acc::Null, &row[f.at], n),
                FoldOp::Min(_) | FoldOp::Max(_) => Acc::Row,
                FoldOp::Avg {
                    sum, count, number, ..
                } => Acc::Avg(
                    Box::new(add(Acc::Null, &row[sum], number)),
                    int(&row[count]).unwrap_or(0),
                ),
            })
            .collect();
        GroupState { row, acc }
    }

    fn add(&mut self, row: Row, folds: &[Fold]) {
        for (f, acc) in folds.iter().zip(self.acc.iter_mut()) {
            *acc = match (std::mem::replace(acc, Acc::Null), &f.op) {
                (Acc::Int(c), FoldOp::Count) => Acc::Int(c + int(&row[f.at]).unwrap_or(0)),
                (a, FoldOp::Sum(n)) => add(a, &row[f.at], *n),
                (a, FoldOp::Min(kind)) | (a, FoldOp::Max(kind)) => {
                    let o = compare_values(*kind, &row[f.at], &self.row[f.at], &row, &self.row);
                    let replace = !matches!(row[f.at], Value::Null)
                        && (matches!(self.row[f.at], Value::Null)
                            || match f.op {
                                FoldOp::Min(_) => o == Ordering::Less,
                                _ => o == Ordering::Greater,
                            });
                    if replace {
                        self.row[f.at] = row[f.at].clone();
                        if let Kind::Weight(w) = kind {
                            self.row[*w] = row[*w].clone();
                        }
                    }
                    a
                }
                (
                    Acc::Avg(s, c),
                    FoldOp::Avg {
                        sum, count, number, ..
                    },
                ) => Acc::Avg(
                    Box::new(add(*s, &row[*sum], *number)),
                    c + int(&row[*count]).unwrap_or(0),
                ),
                (a, _) => a,
            };
        }
    }

    /// The group's row, aggregates written in MySQL's text form.
    fn finish(mut self, folds: &[Fold], columns_decimals: &[u8]) -> Row {
        for (f, acc) in folds.iter().zip(self.acc) {
            let value = match (acc, &f.op) {
                (Acc::Row, _) => continue,
                (Acc::Null, _) => Value::Null,
                (Acc::Int(i), FoldOp::Sum(_)) => {
                    decimal_text(&BigDecimal::from(i), columns_decimals[f.at])
                }
                (Acc::Int(i), _) => Value::Bytes(i.to_string().into_bytes()),
                (Acc::Decimal(d), _) => decimal_text(&d, columns_decimals[f.at]),
                (Acc::Float(x), _) => Value::Bytes(double_text(x).into_bytes()),
                (Acc::Avg(sum, count), FoldOp::Avg { decimals, .. }) => {
                    if count == 0 {
                        Value::Null
                    } else {
                        match *sum {
                            Acc::Null => Value::Null,
                            Acc::Float(x) => {
                                Value::Bytes(double_text(x / count as f64).into_bytes())
                            }
                            Acc::Int(i) => decimal_text(
                                &(BigDecimal::from(i) / BigDecimal::from(count)),
                                avg_decimals(*decimals, 0),
                            ),
                            Acc::Decimal(d) => {
                                let scale = d.as_bigint_and_exponent().1;
                                decimal_text(
                                    &(d / BigDecimal::from(count)),
                                    avg_decimals(*decimals, scale),
                                )
                            }
                            _ => Value::Null,
                        }
                    }
                }
                (Acc::Avg(..), _) => Value::Null,
            };
            self.row[f.at] = value;
        }
        self.row
    }
}

/// The decimals of an AVG: the column's, or when the node did not fix them (31, a PostgreSQL
/// `numeric` AVG) MySQL's rule on the summed values' scale: scale + `div_precision_increment`
/// (4), at most 30.
fn avg_decimals(column_decimals: u8, sum_scale: i64) -> u8 {
    if column_decimals > 30 {
        (sum_scale.clamp(0, 26) + 4) as u8
    } else {
        column_decimals
    }
}

/// A DECIMAL in MySQL's text form: `decimals` places, rounded half away from zero. Decimals
/// 31 (`NOT_FIXED_DEC`, a PostgreSQL `numeric` without scale) keep the value's own scale.
fn decimal_text(d: &BigDecimal, decimals: u8) -> Value {
    if decimals > 30 {
        return Value::Bytes(d.to_plain_string().into_bytes());
    }
    let d = d.with_scale_round(i64::from(decimals), RoundingMode::HalfUp);
    Value::Bytes(d.to_plain_string().into_bytes())
}

/// A DOUBLE as MySQL prints it: the shortest text that reads back the same value, in
/// scientific notation for very large and very small magnitudes.
fn double_text(x: f64) -> String {
    let a = x.abs();
    if a != 0.0 && !(1e-4..1e15).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Combines adjacent rows with equal `keys` (all rows when `keys` is empty).
fn group<'a>(
    input: RowStream<'a>,
    keys: Vec<Key>,
    folds: Vec<Fold>,
    decimals: Vec<u8>,
) -> RowStream<'a> {
    struct State<'a> {
        input: RowStream<'a>,
        current: Option<GroupState>,
        done: bool,
        keys: Vec<Key>,
        folds: Vec<Fold>,
        decimals: Vec<u8>,
    }
    let state = State {
        input,
        current: None,
        done: false,
        keys,
        folds,
        decimals,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if st.done {
                return None;
            }
            match st.input.next().await {
                Some(Ok(row)) => match st.current.take() {
                    Some(mut g) if same(&st.keys, &g.row, &row) => {
                        g.add(row, &st.folds);
                        st.current = Some(g);
                    }
                    Some(g) => {
                        st.current = Some(GroupState::new(row, &st.folds));
                        let out = g.finish(&st.folds, &st.decimals);
                        return Some((Ok(out), st));
                    }
                    None => {
                        st.current = Some(GroupState::new(row, &st.folds));
                    }
                },
                Some(Err(e)) => {
                    st.done = true;
                    return Some((Err(e), st));
                }
                None => {
                    st.done = true;
                    let g = st.current.take()?;
                    let out = g.finish(&st.folds, &st.decimals);
                    return Some((Ok(out), st));
                }
            }
        }
    })
    .boxed()
}

/// A HAVING condition resolved to column indexes.
enum Condition {
    And(Box<Condition>, Box<Condition>),
    Or(Box<Condition>, Box<Condition>),
    Not(Box<Condition>),
    Compare {
        at: usize,
        float: bool,
        op: CompareOp,
        number: String,
    },
    IsNull {
        at: usize,
        negated: bool,
    },
}

impl Condition {
    fn new(
        h: &Having,
        columns: &[Column],
        resolve: &dyn Fn(ColumnRef) -> Result<usize, BackendError>,
    ) -> Result<Condition, BackendError> {
        Ok(match h {
            Having::And(a, b) => Condition::And(
                Box::new(Condition::new(a, columns, resolve)?),
                Box::new(Condition::new(b, columns, resolve)?),
            ),
            Having::Or(a, b) => Condition::Or(
                Box::new(Condition::new(a, columns, resolve)?),
                Box::new(Condition::new(b, columns, resolve)?),
            ),
            Having::Not(a) => Condition::Not(Box::new(Condition::new(a, columns, resolve)?)),
            Having::IsNull { column, negated } => Condition::IsNull {
                at: resolve(*column)?,
                negated: *negated,
            },
            Having::Compare { column, op, number } => {
                let at = resolve(*column)?;
                let float = match kind(&columns[at], None, false) {
                    Ok(Kind::Int | Kind::Decimal) => false,
                    Ok(Kind::Float) => true,
                    _ => {
                        return Err(not_supported(format!(
                            "HAVING comparing non-numeric column {} with a number over several dataNodes",
                            columns[at].name
                        )));
                    }
                };
                Condition::Compare {
                    at,
                    float,
                    op: *op,
                    number: number.clone(),
                }
            }
        })
    }

    /// SQL's three-valued result: `None` is unknown (a comparison with NULL).
    fn eval(&self, row: &Row) -> Option<bool> {
        match self {
            Condition::And(a, b) => match (a.eval(row), b.eval(row)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Condition::Or(a, b) => match (a.eval(row), b.eval(row)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            Condition::Not(a) => a.eval(row).map(|v| !v),
            Condition::IsNull { at, negated } => Some(matches!(row[*at], Value::Null) != *negated),
            Condition::Compare {
                at,
                float,
                op,
                number,
            } => {
                let value = text(&row[*at])?;
                let o = if *float {
                    let x: f64 = value.trim().parse().ok()?;
                    let y: f64 = number.parse().ok()?;
                    x.partial_cmp(&y)?
                } else if number.contains(['e', 'E']) || value.contains(['e', 'E']) {
                    // Scientific notation (`> 1e0`): compared as exact decimals.
                    let x = BigDecimal::from_str(value.trim()).ok()?;
                    let y = BigDecimal::from_str(number).ok()?;
                    x.cmp(&y)
                } else {
                    compare_decimal(&value, number)
                };
                Some(match op {
                    CompareOp::Eq => o == Ordering::Equal,
                    CompareOp::NotEq => o != Ordering::Equal,
                    CompareOp::Lt => o == Ordering::Less,
                    CompareOp::LtEq => o != Ordering::Greater,
                    CompareOp::Gt => o == Ordering::Greater,
                    CompareOp::GtEq => o != Ordering::Less,
                })
            }
        }
    }
}

/// Collects every row and sorts them by `keys` (stable: equal rows keep their order).
fn sort<'a>(input: RowStream<'a>, keys: Vec<Key>) -> RowStream<'a> {
    futures::stream::once(async move {
        let rows: Vec<Result<Row, BackendError>> = input.collect().await;
        let mut rows: Vec<Row> = match rows.into_iter().collect::<Result<_, _>>() {
            Ok(r) => r,
            Err(e) => return futures::stream::iter(vec![Err(e)]),
        };
        rows.sort_by(|a, b| compare(&keys, a, b));
        futures::stream::iter(rows.into_iter().map(Ok).collect::<Vec<_>>())
    })
    .flatten()
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::Grouping;

    fn column(name: &str, column_type: ColumnType, charset: u16, decimals: u8) -> Column {
        Column {
            name: name.to_string(),
            table: String::new(),
            column_type,
            flags: ColumnFlags::empty(),
            charset,
            length: 20,
            decimals,
        }
    }

    fn v(s: Option<&str>) -> Value {
        s.map_or(Value::Null, |s| Value::Bytes(s.as_bytes().to_vec()))
    }

    fn stream(rows: Vec<Vec<Option<&str>>>) -> RowStream<'static> {
        let rows: Vec<Result<Row, BackendError>> = rows
            .into_iter()
            .map(|r| Ok(r.into_iter().map(v).collect()))
            .collect();
        futures::stream::iter(rows).boxed()
    }

    async fn run(
        m: &Merge,
        columns: Vec<Column>,
        streams: Vec<RowStream<'static>>,
    ) -> Vec<Vec<Option<String>>> {
        let (_, rows) = super::rows(m, Arc::from(columns), streams, false).unwrap();
        rows.map(|r| {
            r.unwrap()
                .into_iter()
                .map(|v| text(&v).map(|t| t.into_owned()))
                .collect()
        })
        .collect()
        .await
    }

    fn merge(node_order: Vec<SortKey>) -> Merge {
        Merge {
            hidden: 0,
            node_order,
            grouping: None,
            order: Vec::new(),
            limit: None,
        }
    }

    fn key(i: usize, desc: bool) -> SortKey {
        SortKey {
            column: ColumnRef::Visible(i),
            weight: None,
            desc,
        }
    }

    #[tokio::test]
    async fn merge_sort_puts_null_first_and_compares_numbers_as_numbers() {
        let cols = vec![column("d", ColumnType::MYSQL_TYPE_NEWDECIMAL, 63, 2)];
        let m = merge(vec![key(0, false)]);
        let out = run(
            &m,
            cols.clone(),
            vec![
                stream(vec![vec![None], vec![Some("-10.50")], vec![Some("9.00")]]),
                stream(vec![]),
                stream(vec![vec![Some("-2.00")], vec![Some("10.00")]]),
            ],
        )
        .await;
        let got: Vec<Option<&str>> = out.iter().map(|r| r[0].as_deref()).collect();
        assert_eq!(
            got,
            [
                None,
                Some("-10.50"),
                Some("-2.00"),
                Some("9.00"),
                Some("10.00")
            ]
        );
        // Descending: NULL last.
        let m = merge(vec![key(0, true)]);
        let out = run(
            &m,
            cols,
            vec![
                stream(vec![vec![Some("9.00")], vec![None]]),
                stream(vec![vec![Some("10.00")], vec![Some("-2.00")]]),
            ],
        )
        .await;
        let got: Vec<Option<&str>> = out.iter().map(|r| r[0].as_deref()).collect();
        assert_eq!(got, [Some("10.00"), Some("9.00"), Some("-2.00"), None]);
    }

    #[tokio::test]
    async fn strings_compare_by_weight_and_extra_columns_are_cut() {
        // utf8mb4_general_ci (45): the weight column decides, so 'B' sorts after 'a'.
        let cols = vec![
            column("s", ColumnType::MYSQL_TYPE_VAR_STRING, 45, 0),
            column("w", ColumnType::MYSQL_TYPE_VAR_STRING, 63, 0),
        ];
        let m = Merge {
            hidden: 1,
            node_order: vec![SortKey {
                column: ColumnRef::Visible(0),
                weight: Some(ColumnRef::Hidden(0)),
                desc: false,
            }],
            grouping: None,
            order: Vec::new(),
            limit: Some((1, 2)),
        };
        let out = run(
            &m,
            cols,
            vec![
                stream(vec![vec![Some("a"), Some("A")], vec![Some("c"), Some("C")]]),
                stream(vec![vec![Some("B"), Some("B")], vec![Some("d"), Some("D")]]),
            ],
        )
        .await;
        assert_eq!(
            out,
            [vec![Some("B".to_string())], vec![Some("c".to_string())]]
        );
    }

    #[tokio::test]
    async fn groups_spanning_nodes_fold_their_aggregates() {
        // g, COUNT(*), SUM(d), MIN(s), AVG(i) | weight(g), weight(MIN(s)), SUM(i), COUNT(i)
        let cols = vec![
            column("g", ColumnType::MYSQL_TYPE_LONG, 63, 0),
            column("c", ColumnType::MYSQL_TYPE_LONGLONG, 63, 0),
            column("s", ColumnType::MYSQL_TYPE_NEWDECIMAL, 63, 2),
            column("m", ColumnType::MYSQL_TYPE_VAR_STRING, 45, 0),
            column("a", ColumnType::MYSQL_TYPE_NEWDECIMAL, 63, 4),
            column("wm", ColumnType::MYSQL_TYPE_VAR_STRING, 63, 0),
            column("si", ColumnType::MYSQL_TYPE_NEWDECIMAL, 63, 0),
            column("ci", ColumnType::MYSQL_TYPE_LONGLONG, 63, 0),
        ];
        let m = Merge {
            hidden: 3,
            node_order: vec![key(0, false)],
            grouping: Some(Grouping {
                keys: vec![key(0, false)],
                aggregates: vec![
                    (ColumnRef::Visible(1), Aggregate::Count),
                    (ColumnRef::Visible(2), Aggregate::Sum),
                    (
                        ColumnRef::Visible(3),
                        Aggregate::Min {
                            weight: Some(ColumnRef::Hidden(0)),
                        },
                    ),
                    (
                        ColumnRef::Visible(4),
                        Aggregate::Avg {
                            sum: ColumnRef::Hidden(1),
                            count: ColumnRef::Hidden(2),
                        },
                    ),
                ],
                having: None,
            }),
            order: vec![key(1, true)],
            limit: None,
        };
        let row = |g, c, s, m: Option<&'static str>, a, wm: Option<&'static str>, si, ci| {
            vec![Some(g), Some(c), s, m, a, wm, si, Some(ci)]
        };
        let out = run(
            &m,
            cols,
            vec![
                stream(vec![
                    row(
                        "1",
                        "2",
                        Some("1.25"),
                        Some("b"),
                        Some("1.5000"),
                        Some("B"),
                        Some("3"),
                        "2",
                    ),
                    row("2", "1", None, None, None, None, None, "0"),
                ]),
                stream(vec![row(
                    "1",
                    "3",
                    Some("2.50"),
                    Some("A"),
                    Some("0.3333"),
                    Some("A"),
                    Some("1"),
                    "3",
                )]),
            ],
        )
        .await;
        let s = |x: &str| Some(x.to_string());
        assert_eq!(
            out,
            [
                // COUNT 5, SUM 3.75, MIN by weight 'A', AVG (3+1)/(2+3) = 0.8 at 4 places.
                vec![s("1"), s("5"), s("3.75"), s("A"), s("0.8000")],
                // All-NULL SUM, MIN and AVG stay NULL.
                vec![s("2"), s("1"), None, None, None],
            ]
        );
    }

    #[tokio::test]
    async fn a_node_failure_mid_merge_reaches_the_client() {
        let cols = vec![column("i", ColumnType::MYSQL_TYPE_LONG, 63, 0)];
        let m = merge(vec![key(0, false)]);
        let failing: RowStream<'static> = futures::stream::iter(vec![
            Ok(vec![v(Some("1"))]),
            Err(BackendError::Closed("gone".into())),
        ])
        .boxed();
        let (_, rows) = super::rows(
            &m,
            Arc::from(cols),
            vec![failing, stream(vec![vec![Some("2")]])],
            false,
        )
        .unwrap();
        let got: Vec<Result<Row, BackendError>> = rows.collect().await;
        assert!(got.iter().any(|r| r.is_err()), "{got:?}");
    }

    #[test]
    fn string_keys_over_mixed_weights_are_refused_and_numbers_are_not() {
        let s = column("s", ColumnType::MYSQL_TYPE_VAR_STRING, 45, 0);
        let e = kind(&s, Some(1), true).unwrap_err();
        let (code, _, message) = e.server_error().unwrap();
        assert_eq!(code, 1235);
        assert!(message.contains("MySQL and PostgreSQL"), "{message}");
        assert_eq!(kind(&s, Some(1), false).unwrap(), Kind::Weight(1));
        let i = column("i", ColumnType::MYSQL_TYPE_LONG, 63, 0);
        assert_eq!(kind(&i, None, true).unwrap(), Kind::Int);
        let d = column("d", ColumnType::MYSQL_TYPE_NEWDECIMAL, 63, 2);
        assert_eq!(kind(&d, None, true).unwrap(), Kind::Decimal);
    }

    #[test]
    fn decimal_and_time_text_compare_by_value() {
        assert_eq!(compare_decimal("-0.00", "0"), Ordering::Equal);
        assert_eq!(compare_decimal("10.5", "9.99"), Ordering::Greater);
        assert_eq!(compare_decimal("-10.5", "-9.99"), Ordering::Less);
        assert_eq!(compare_decimal("0012.3400", "12.34"), Ordering::Equal);
        assert!(time(&v(Some("-01:00:00"))) < time(&v(Some("00:00:00.5"))));
        assert!(time(&v(Some("100:00:00"))) > time(&v(Some("23:59:59.999999"))));
        assert_eq!(
            decimal_text(
                &(BigDecimal::from_str("2").unwrap() / BigDecimal::from(3)),
                4
            ),
            v(Some("0.6667"))
        );
        assert_eq!(double_text(3.0), "3");
        assert_eq!(double_text(1e20), "1e20");
    }
}
