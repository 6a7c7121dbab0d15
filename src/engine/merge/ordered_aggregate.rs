//! Group: adjacent rows with equal keys combined into one, aggregates folded exactly (COUNT and SUM added, MIN/MAX compared, AVG from sums and counts).

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
pub(super) fn double_text(x: f64) -> String {
    let a = x.abs();
    if a != 0.0 && !(1e-4..1e15).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Combines adjacent rows with equal `keys` (all rows when `keys` is empty).
pub(super) fn group<'a>(
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
