//! Comparison of values as MySQL compares them: integers, DECIMAL by its text, floats, times, binary strings by bytes, other strings by collation weight.

use super::*;

/// How a column's values compare, from its type, flags and character set (`mixed_weights`: as
/// in [`rows`]).
pub(super) fn kind(
    c: &Column,
    weight: Option<usize>,
    mixed_weights: bool,
) -> Result<Kind, BackendError> {
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

pub(super) fn text(v: &Value) -> Option<std::borrow::Cow<'_, str>> {
    match v {
        Value::Null => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(b)),
        Value::Int(i) => Some(i.to_string().into()),
        Value::UInt(u) => Some(u.to_string().into()),
        Value::Double(d) => Some(d.to_string().into()),
    }
}

pub(super) fn bytes(v: &Value) -> std::borrow::Cow<'_, [u8]> {
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
pub(super) fn compare(keys: &[Key], a: &Row, b: &Row) -> Ordering {
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
pub(super) fn same(keys: &[Key], a: &Row, b: &Row) -> bool {
    keys.iter()
        .all(|k| compare_values(k.kind, &a[k.at], &b[k.at], a, b) == Ordering::Equal)
}

/// MySQL's order of two values of one column (NULL first). `ra` / `rb` are their rows, where
/// the collation weights are.
pub(super) fn compare_values(kind: Kind, a: &Value, b: &Value, ra: &Row, rb: &Row) -> Ordering {
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

pub(super) fn int(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(*i as i128),
        Value::UInt(u) => Some(*u as i128),
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// A TIME value (`[-]H+:MM:SS[.ffffff]`) in microseconds.
pub(super) fn time(v: &Value) -> Option<i128> {
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
pub(super) fn compare_decimal(a: &str, b: &str) -> Ordering {
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
