//! Group: adjacent rows with equal keys combined into one, aggregates folded exactly (COUNT and SUM added, MIN/MAX compared, AVG from sums and counts, DISTINCT aggregates over the distinct values, GROUP_CONCAT pieces joined).

use super::*;

/// How one aggregate column folds.
#[derive(Debug, Clone)]
pub(super) struct Fold {
    at: usize,
    op: FoldOp,
}

#[derive(Debug, Clone)]
pub(super) enum FoldOp {
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
    /// `COUNT(DISTINCT ...)`: the rows' counts (1, or 0 for a NULL value) added, repeats skipped.
    DistinctCount,
    /// `SUM(DISTINCT x)`: the rows' values added, repeats skipped.
    DistinctSum(Number),
    /// `AVG(DISTINCT x)`: the rows' values added and the non-NULL ones counted, repeats skipped.
    DistinctAvg {
        number: Number,
        decimals: u8,
    },
    /// `GROUP_CONCAT`: the pieces joined (repeats skipped when `distinct`).
    Concat {
        distinct: bool,
        /// The column holding the separator literal; `None`: `,`.
        separator: Option<usize>,
        /// The column holding `@@group_concat_max_len`.
        max_len: usize,
        /// The result is binary (cut at any byte) rather than text (cut at a UTF-8
        /// character boundary).
        binary: bool,
    },
}

/// The arithmetic a SUM needs, from its column type.
#[derive(Debug, Clone, Copy)]
pub(super) enum Number {
    Decimal,
    Float,
}

pub(super) fn fold(
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
        Aggregate::Distinct(DistinctOp::Count) => FoldOp::DistinctCount,
        Aggregate::Distinct(DistinctOp::Sum) => FoldOp::DistinctSum(number(&columns[at])),
        Aggregate::Distinct(DistinctOp::Avg) => FoldOp::DistinctAvg {
            number: number(&columns[at]),
            decimals: columns[at].decimals,
        },
        Aggregate::GroupConcat {
            distinct,
            separator,
            max_len,
        } => FoldOp::Concat {
            distinct: *distinct,
            separator: separator.map(resolve).transpose()?,
            max_len: resolve(*max_len)?,
            binary: columns[at].charset == BINARY_CHARSET,
        },
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
pub(super) struct GroupState {
    row: Row,
    acc: Vec<Acc>,
    /// The group's last row when it is not the first (its sub-keys tell a repeated distinct
    /// value); kept only with sub-keys.
    last: Option<Row>,
}

#[derive(Debug, Clone)]
pub(super) enum Acc {
    /// Nothing but NULL so far.
    Null,
    Int(i128),
    Decimal(BigDecimal),
    Float(f64),
    /// MIN / MAX keep their value in the row itself.
    Row,
    /// AVG: the sum (`Null` while every sum was NULL) and the count.
    Avg(Box<Acc>, i128),
    /// GROUP_CONCAT: the bytes so far (`None` while every piece was NULL) and whether they
    /// were cut at `group_concat_max_len` (later pieces are then dropped).
    Concat(Option<Vec<u8>>, bool),
}

/// Where bytes may be cut at most `max` bytes in: `max` for binary results, else the last
/// UTF-8 character boundary at or before `max` (MySQL cuts GROUP_CONCAT at a character).
fn cut_point(bytes: &[u8], max: usize, binary: bool) -> usize {
    if binary || max >= bytes.len() {
        return max.min(bytes.len());
    }
    let mut at = max;
    while at > 0 && (bytes[at] & 0xC0) == 0x80 {
        at -= 1;
    }
    at
}

/// Adds one GROUP_CONCAT piece: separator and value appended, the whole cut at `max_len`
/// (MySQL: `group_concat_max_len`, the separator counts), and at most `bound` bytes held.
///
/// Errors: 1235 when the concatenation would hold more than `bound` bytes
/// ([`crate::route::Grouping::max_group_bytes`]).
fn concat(
    acc: Acc,
    piece: &Value,
    separator: &[u8],
    max_len: usize,
    binary: bool,
    bound: usize,
) -> Result<Acc, BackendError> {
    let (mut bytes, cut) = match acc {
        Acc::Concat(b, cut) => (b, cut),
        _ => (None, false),
    };
    if cut || matches!(piece, Value::Null) {
        return Ok(Acc::Concat(bytes, cut));
    }
    let piece = super::compare::bytes(piece);
    // (An empty piece still counts: MySQL writes the separator after it.)
    let first = bytes.is_none();
    let out = bytes.get_or_insert_with(Vec::new);
    let added = piece.len() + if first { 0 } else { separator.len() };
    if out.len().saturating_add(added).min(max_len) > bound {
        return Err(not_supported(format!(
            "a GROUP_CONCAT over several dataNodes longer than {bound} bytes (maxPacketSize) while group_concat_max_len is {max_len}"
        )));
    }
    if !first {
        out.extend_from_slice(separator);
    }
    out.extend_from_slice(&piece);
    let mut cut = false;
    if out.len() > max_len {
        let at = cut_point(out, max_len, binary);
        out.truncate(at);
        cut = true;
    }
    Ok(Acc::Concat(bytes, cut))
}

pub(super) fn add(acc: Acc, v: &Value, number: Number) -> Acc {
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

/// What the group stream folds rows with.
pub(super) struct Folding {
    pub(super) folds: Vec<Fold>,
    /// The sub-keys ([`crate::route::Grouping::sub_keys`]): a row whose sub-keys equal the
    /// previous row's in its group repeats a distinct value (from another node).
    pub(super) sub: Vec<Key>,
    /// Each column's decimals.
    pub(super) decimals: Vec<u8>,
    /// [`crate::route::Grouping::max_group_bytes`].
    pub(super) bound: usize,
    /// Columns per row.
    pub(super) width: usize,
}

/// MySQL's default `group_concat_max_len`, for a row that carries none (the implicit group
/// of no rows, which has no GROUP_CONCAT piece anyway).
const GROUP_CONCAT_MAX_LEN: usize = 1024;

impl GroupState {
    fn new(row: Row, fx: &Folding) -> Result<GroupState, BackendError> {
        let mut acc = Vec::with_capacity(fx.folds.len());
        for f in &fx.folds {
            let v = &row[f.at];
            acc.push(match f.op {
                FoldOp::Count | FoldOp::DistinctCount => Acc::Int(int(v).unwrap_or(0)),
                FoldOp::Sum(n) | FoldOp::DistinctSum(n) => add(Acc::Null, v, n),
                FoldOp::Min(_) | FoldOp::Max(_) => Acc::Row,
                FoldOp::Avg {
                    sum, count, number, ..
                } => Acc::Avg(
                    Box::new(add(Acc::Null, &row[sum], number)),
                    int(&row[count]).unwrap_or(0),
                ),
                FoldOp::DistinctAvg { number, .. } => Acc::Avg(
                    Box::new(add(Acc::Null, v, number)),
                    i128::from(!matches!(v, Value::Null)),
                ),
                FoldOp::Concat { .. } => Self::concat_piece(&row, &row, f, Acc::Null, fx)?,
            });
        }
        Ok(GroupState {
            row,
            acc,
            last: None,
        })
    }

    /// `acc` with the GROUP_CONCAT piece of `row` added; `first` is the group's first row,
    /// which carries the separator and `group_concat_max_len`.
    fn concat_piece(
        first: &Row,
        row: &Row,
        f: &Fold,
        acc: Acc,
        fx: &Folding,
    ) -> Result<Acc, BackendError> {
        let FoldOp::Concat {
            separator,
            max_len,
            binary,
            ..
        } = f.op
        else {
            return Ok(acc);
        };
        let separator = match separator {
            Some(at) => bytes(&first[at]),
            None => std::borrow::Cow::Borrowed(&b","[..]),
        };
        let max_len = int(&first[max_len])
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(GROUP_CONCAT_MAX_LEN);
        concat(acc, &row[f.at], &separator, max_len, binary, fx.bound)
    }

    fn add(&mut self, row: Row, fx: &Folding) -> Result<(), BackendError> {
        let repeat =
            !fx.sub.is_empty() && same(&fx.sub, self.last.as_ref().unwrap_or(&self.row), &row);
        // Columns a MIN/MAX takes from `row`, written once every fold has compared with the
        // group's row as it was: two copies of one aggregate (`MAX(s) a, MAX(s) b`) share
        // their hidden weight column, and the second must not compare with what the first
        // just took.
        let mut taken: Vec<usize> = Vec::new();
        for (f, acc) in fx.folds.iter().zip(self.acc.iter_mut()) {
            let distinct = matches!(
                f.op,
                FoldOp::DistinctCount
                    | FoldOp::DistinctSum(_)
                    | FoldOp::DistinctAvg { .. }
                    | FoldOp::Concat { distinct: true, .. }
            );
            if repeat && distinct {
                continue;
            }
            *acc = match (std::mem::replace(acc, Acc::Null), &f.op) {
                (Acc::Int(c), FoldOp::Count | FoldOp::DistinctCount) => {
                    Acc::Int(c + int(&row[f.at]).unwrap_or(0))
                }
                (a, FoldOp::Sum(n) | FoldOp::DistinctSum(n)) => add(a, &row[f.at], *n),
                (a, FoldOp::Min(kind)) | (a, FoldOp::Max(kind)) => {
                    let o = compare_values(*kind, &row[f.at], &self.row[f.at], &row, &self.row);
                    let replace = !matches!(row[f.at], Value::Null)
                        && (matches!(self.row[f.at], Value::Null)
                            || match f.op {
                                FoldOp::Min(_) => o == Ordering::Less,
                                _ => o == Ordering::Greater,
                            });
                    if replace {
                        taken.push(f.at);
                        if let Kind::Weight(w) = kind {
                            taken.push(*w);
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
                (Acc::Avg(s, c), FoldOp::DistinctAvg { number, .. }) => Acc::Avg(
                    Box::new(add(*s, &row[f.at], *number)),
                    c + i128::from(!matches!(row[f.at], Value::Null)),
                ),
                (a, FoldOp::Concat { .. }) => Self::concat_piece(&self.row, &row, f, a, fx)?,
                (a, _) => a,
            };
        }
        for at in taken {
            self.row[at] = row[at].clone();
        }
        if !fx.sub.is_empty() {
            self.last = Some(row);
        }
        Ok(())
    }

    /// The group's row, aggregates written in MySQL's text form.
    fn finish(mut self, folds: &[Fold], columns_decimals: &[u8]) -> Row {
        for (f, acc) in folds.iter().zip(self.acc) {
            let value = match (acc, &f.op) {
                (Acc::Row, _) => continue,
                (Acc::Null, _) => Value::Null,
                (Acc::Concat(bytes, _), _) => bytes.map_or(Value::Null, Value::Bytes),
                (Acc::Int(i), FoldOp::Sum(_) | FoldOp::DistinctSum(_)) => {
                    decimal_text(&BigDecimal::from(i), columns_decimals[f.at])
                }
                (Acc::Int(i), _) => Value::Bytes(i.to_string().into_bytes()),
                (Acc::Decimal(d), _) => decimal_text(&d, columns_decimals[f.at]),
                (Acc::Float(x), _) => {
                    Value::Bytes(double_fixed(x, columns_decimals[f.at]).into_bytes())
                }
                (
                    Acc::Avg(sum, count),
                    FoldOp::Avg { decimals, .. } | FoldOp::DistinctAvg { decimals, .. },
                ) => {
                    if count == 0 {
                        Value::Null
                    } else {
                        match *sum {
                            Acc::Null => Value::Null,
                            Acc::Float(x) => {
                                Value::Bytes(double_fixed(x / count as f64, *decimals).into_bytes())
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
pub(super) fn avg_decimals(column_decimals: u8, sum_scale: i64) -> u8 {
    if column_decimals > 30 {
        (sum_scale.clamp(0, 26) + 4) as u8
    } else {
        column_decimals
    }
}

/// A DECIMAL in MySQL's text form: `decimals` places, rounded half away from zero. Decimals
/// 31 (`NOT_FIXED_DEC`, a PostgreSQL `numeric` without scale) keep the value's own scale.
pub(super) fn decimal_text(d: &BigDecimal, decimals: u8) -> Value {
    if decimals > 30 {
        return Value::Bytes(d.to_plain_string().into_bytes());
    }
    let d = d.with_scale_round(i64::from(decimals), RoundingMode::HalfUp);
    Value::Bytes(d.to_plain_string().into_bytes())
}

/// A DOUBLE as MySQL prints it: the shortest text that reads back the same value, in
/// scientific notation for very large and very small magnitudes.
/// A DOUBLE in MySQL's text form for a column of `decimals` places: fixed to that many places
/// when the column has them (below 31, `NOT_FIXED_DEC`), as MariaDB prints a `DOUBLE(M,D)`'s
/// SUM (D places) or AVG (D + 4); [`double_text`] otherwise.
pub(super) fn double_fixed(x: f64, decimals: u8) -> String {
    if decimals > 30 || !x.is_finite() {
        double_text(x)
    } else {
        format!("{x:.*}", usize::from(decimals))
    }
}

pub(super) fn double_text(x: f64) -> String {
    let a = x.abs();
    if a != 0.0 && !(1e-4..1e15).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Combines adjacent rows with equal `keys` (all rows when `keys` is empty). With sub-keys and
/// no keys, no input at all still gives the implicit group's row (COUNT 0, all else NULL).
pub(super) fn group<'a>(input: RowStream<'a>, keys: Vec<Key>, fx: Folding) -> RowStream<'a> {
    struct State<'a> {
        input: RowStream<'a>,
        current: Option<GroupState>,
        done: bool,
        keys: Vec<Key>,
        fx: Folding,
    }
    let state = State {
        input,
        current: None,
        done: false,
        keys,
        fx,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if st.done {
                return None;
            }
            let step = match st.input.next().await {
                Some(Ok(row)) => match st.current.take() {
                    Some(mut g) if same(&st.keys, &g.row, &row) => g.add(row, &st.fx).map(|()| {
                        st.current = Some(g);
                        None
                    }),
                    Some(g) => GroupState::new(row, &st.fx).map(|next| {
                        st.current = Some(next);
                        Some(g.finish(&st.fx.folds, &st.fx.decimals))
                    }),
                    None => GroupState::new(row, &st.fx).map(|g| {
                        st.current = Some(g);
                        None
                    }),
                },
                Some(Err(e)) => Err(e),
                None => {
                    st.done = true;
                    let g = match st.current.take() {
                        Some(g) => g,
                        None if st.keys.is_empty() && !st.fx.sub.is_empty() => {
                            match GroupState::new(vec![Value::Null; st.fx.width], &st.fx) {
                                Ok(g) => g,
                                Err(e) => return Some((Err(e), st)),
                            }
                        }
                        None => return None,
                    };
                    let out = g.finish(&st.fx.folds, &st.fx.decimals);
                    return Some((Ok(out), st));
                }
            };
            match step {
                Ok(Some(out)) => return Some((Ok(out), st)),
                Ok(None) => {}
                Err(e) => {
                    st.done = true;
                    return Some((Err(e), st));
                }
            }
        }
    })
    .boxed()
}
