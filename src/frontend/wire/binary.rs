//! Result values in both MySQL row encodings. Backends hand rows over as text (the text
//! protocol's form); a COM_STMT_EXECUTE result must be sent in the binary protocol, where
//! numbers are fixed-width little-endian integers and IEEE floats and temporal values are
//! packed structs (MySQL client/server protocol, "Binary Protocol Resultset Row").

use std::io::{self, Write};

use opensrv_mysql::{Column as WireColumn, ColumnType, ToMysqlValue};

use crate::backend::Value;

/// One value of a row, written as the result set's protocol requires.
pub(in crate::frontend) struct Cell<'a>(pub &'a Value);

fn invalid(what: &str, text: &[u8], c: &WireColumn) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "cannot send {:?} as {what} for column {} ({:?})",
            String::from_utf8_lossy(text),
            c.column,
            c.coltype
        ),
    )
}

fn lenenc<W: Write>(w: &mut W, b: &[u8]) -> io::Result<()> {
    super::lenenc::write_str(w, b)
}

/// `YYYY-MM-DD[ hh:mm:ss[.ffffff]]` as the binary DATE / DATETIME / TIMESTAMP encoding: a
/// length byte (0, 4, 7 or 11) and the fields.
fn datetime<W: Write>(w: &mut W, t: &str) -> Option<io::Result<()>> {
    let (date, time) = t.split_once(' ').unwrap_or((t, ""));
    let mut d = date.split('-');
    let year: u16 = d.next()?.parse().ok()?;
    let month: u8 = d.next()?.parse().ok()?;
    let day: u8 = d.next()?.parse().ok()?;
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let (mut h, mut m, mut s) = (0u8, 0u8, 0u8);
    if !hms.is_empty() {
        let mut p = hms.split(':');
        h = p.next()?.parse().ok()?;
        m = p.next()?.parse().ok()?;
        s = p.next()?.parse().ok()?;
    }
    let micros = micros(frac)?;
    let mut out = vec![];
    if micros != 0 {
        out.push(11);
    } else if h != 0 || m != 0 || s != 0 {
        out.push(7);
    } else if year != 0 || month != 0 || day != 0 {
        out.push(4);
    } else {
        out.push(0);
    }
    if out[0] >= 4 {
        out.extend_from_slice(&year.to_le_bytes());
        out.extend_from_slice(&[month, day]);
    }
    if out[0] >= 7 {
        out.extend_from_slice(&[h, m, s]);
    }
    if out[0] == 11 {
        out.extend_from_slice(&micros.to_le_bytes());
    }
    Some(w.write_all(&out))
}

/// Fractional seconds (`123` means .123) as microseconds.
fn micros(frac: &str) -> Option<u32> {
    if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut digits = frac.to_string();
    while digits.len() < 6 {
        digits.push('0');
    }
    digits.parse().ok()
}

/// `[-]h:mm:ss[.ffffff]` as the binary TIME encoding: a length byte (0, 8 or 12), the sign,
/// days, hours, minutes, seconds and microseconds.
fn time<W: Write>(w: &mut W, t: &str) -> Option<io::Result<()>> {
    let (negative, t) = match t.strip_prefix('-') {
        Some(rest) => (1u8, rest),
        None => (0u8, t),
    };
    let (hms, frac) = t.split_once('.').unwrap_or((t, ""));
    let mut p = hms.split(':');
    let hours: u32 = p.next()?.parse().ok()?;
    let m: u8 = p.next()?.parse().ok()?;
    let s: u8 = p.next()?.parse().ok()?;
    let micros = micros(frac)?;
    let (days, h) = (hours / 24, (hours % 24) as u8);
    let len: u8 = if micros != 0 {
        12
    } else if hours != 0 || m != 0 || s != 0 {
        8
    } else {
        0
    };
    let mut out = vec![len];
    if len >= 8 {
        out.push(negative);
        out.extend_from_slice(&days.to_le_bytes());
        out.extend_from_slice(&[h, m, s]);
    }
    if len == 12 {
        out.extend_from_slice(&micros.to_le_bytes());
    }
    Some(w.write_all(&out))
}

/// A whole text-protocol row, already encoded (each value length-encoded, NULL as 0xFB),
/// written through opensrv-mysql's `RowWriter` as its first column, the other columns as
/// [`TextRow::REST`] (nothing).
///
/// opensrv-mysql 0.7 hands each packet's buffer to the socket writer and starts the next from an
/// empty `Vec`, so a row written value by value grows it from 8 bytes by reallocation (two to
/// five times for a sysbench row); one write of the encoded row allocates it once, at its size.
/// Text protocol only: the binary protocol's row goes through opensrv's own reused buffer (and
/// its NULL bitmap needs a value per column).
pub(in crate::frontend) struct TextRow<'a>(&'a [u8]);

impl<'a> TextRow<'a> {
    /// The columns after the first: their bytes are in the first.
    pub(in crate::frontend) const REST: TextRow<'static> = TextRow(&[]);

    /// Encodes `row` into `buf` (cleared first) and returns the first column's value.
    pub(in crate::frontend) fn encode(
        row: &[Value],
        buf: &'a mut Vec<u8>,
    ) -> io::Result<TextRow<'a>> {
        buf.clear();
        for v in row {
            Cell(v).to_mysql_text(buf)?;
        }
        Ok(TextRow(buf))
    }
}

impl ToMysqlValue for TextRow<'_> {
    fn to_mysql_text<W: Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(self.0)
    }

    fn to_mysql_bin<W: Write>(&self, _: &mut W, c: &WireColumn) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a text-protocol row cannot be sent in the binary protocol (column {})",
                c.column
            ),
        ))
    }

    fn is_null(&self) -> bool {
        false
    }
}

impl ToMysqlValue for Cell<'_> {
    fn to_mysql_text<W: Write>(&self, w: &mut W) -> io::Result<()> {
        match self.0 {
            Value::Null => w.write_all(&[0xFB]),
            Value::Bytes(b) => lenenc(w, b),
            Value::Int(i) => lenenc(w, i.to_string().as_bytes()),
            Value::UInt(u) => lenenc(w, u.to_string().as_bytes()),
            Value::Double(d) => lenenc(w, d.to_string().as_bytes()),
        }
    }

    fn to_mysql_bin<W: Write>(&self, w: &mut W, c: &WireColumn) -> io::Result<()> {
        let owned;
        let text: &[u8] = match self.0 {
            Value::Null => return Ok(()),
            Value::Bytes(b) => b,
            Value::Int(i) => {
                owned = i.to_string().into_bytes();
                &owned
            }
            Value::UInt(u) => {
                owned = u.to_string().into_bytes();
                &owned
            }
            Value::Double(d) => {
                owned = d.to_string().into_bytes();
                &owned
            }
        };
        let s = std::str::from_utf8(text).map(str::trim);
        let width = match c.coltype {
            ColumnType::MYSQL_TYPE_TINY => Some(1),
            ColumnType::MYSQL_TYPE_SHORT | ColumnType::MYSQL_TYPE_YEAR => Some(2),
            ColumnType::MYSQL_TYPE_LONG | ColumnType::MYSQL_TYPE_INT24 => Some(4),
            ColumnType::MYSQL_TYPE_LONGLONG => Some(8),
            _ => None,
        };
        if let Some(width) = width {
            let s = s.map_err(|_| invalid("an integer", text, c))?;
            let v: i128 = s.parse().map_err(|_| invalid("an integer", text, c))?;
            // Two's complement of the value in `width` bytes: UNSIGNED values above the
            // signed maximum come out right too (the flag tells the client how to read them).
            return w.write_all(&v.to_le_bytes()[..width]);
        }
        match c.coltype {
            ColumnType::MYSQL_TYPE_FLOAT => {
                let v: f32 = s
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| invalid("a FLOAT", text, c))?;
                w.write_all(&v.to_le_bytes())
            }
            ColumnType::MYSQL_TYPE_DOUBLE => {
                let v: f64 = s
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| invalid("a DOUBLE", text, c))?;
                w.write_all(&v.to_le_bytes())
            }
            ColumnType::MYSQL_TYPE_DATE
            | ColumnType::MYSQL_TYPE_NEWDATE
            | ColumnType::MYSQL_TYPE_DATETIME
            | ColumnType::MYSQL_TYPE_DATETIME2
            | ColumnType::MYSQL_TYPE_TIMESTAMP
            | ColumnType::MYSQL_TYPE_TIMESTAMP2 => s
                .ok()
                .and_then(|s| datetime(w, s))
                .unwrap_or_else(|| Err(invalid("a date", text, c))),
            ColumnType::MYSQL_TYPE_TIME | ColumnType::MYSQL_TYPE_TIME2 => s
                .ok()
                .and_then(|s| time(w, s))
                .unwrap_or_else(|| Err(invalid("a time", text, c))),
            _ => lenenc(w, text),
        }
    }

    fn is_null(&self) -> bool {
        matches!(self.0, Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opensrv_mysql::ColumnFlags;

    fn column(coltype: ColumnType) -> WireColumn {
        WireColumn {
            table: String::new(),
            column: "c".to_string(),
            coltype,
            colflags: ColumnFlags::empty(),
        }
    }

    fn bin(text: &str, coltype: ColumnType) -> Vec<u8> {
        let v = Value::Bytes(text.as_bytes().to_vec());
        let mut out = Vec::new();
        Cell(&v).to_mysql_bin(&mut out, &column(coltype)).unwrap();
        out
    }

    #[test]
    fn numbers_are_fixed_width_little_endian() {
        assert_eq!(bin("-2", ColumnType::MYSQL_TYPE_TINY), [0xFE]);
        assert_eq!(bin("300", ColumnType::MYSQL_TYPE_SHORT), [0x2C, 0x01]);
        assert_eq!(bin("-1", ColumnType::MYSQL_TYPE_LONG), [0xFF; 4]);
        assert_eq!(
            bin("18446744073709551615", ColumnType::MYSQL_TYPE_LONGLONG),
            [0xFF; 8]
        );
        assert_eq!(
            bin("1.5", ColumnType::MYSQL_TYPE_DOUBLE),
            1.5f64.to_le_bytes()
        );
        assert_eq!(
            bin("12.30", ColumnType::MYSQL_TYPE_NEWDECIMAL),
            b"\x0512.30"
        );
    }

    #[test]
    fn temporal_values_are_packed() {
        assert_eq!(
            bin("2024-02-29", ColumnType::MYSQL_TYPE_DATE),
            [4, 0xE8, 0x07, 2, 29]
        );
        assert_eq!(
            bin("2024-02-29 13:04:05", ColumnType::MYSQL_TYPE_DATETIME),
            [7, 0xE8, 0x07, 2, 29, 13, 4, 5]
        );
        assert_eq!(
            bin("2024-02-29 13:04:05.5", ColumnType::MYSQL_TYPE_DATETIME),
            [11, 0xE8, 0x07, 2, 29, 13, 4, 5, 0x20, 0xA1, 0x07, 0]
        );
        assert_eq!(
            bin("0000-00-00 00:00:00", ColumnType::MYSQL_TYPE_DATETIME),
            [0]
        );
        assert_eq!(
            bin("-25:00:01", ColumnType::MYSQL_TYPE_TIME),
            [8, 1, 1, 0, 0, 0, 1, 0, 1]
        );
        assert!(
            Cell(&Value::Bytes(b"x".to_vec()))
                .to_mysql_bin(&mut Vec::new(), &column(ColumnType::MYSQL_TYPE_LONG))
                .is_err()
        );
    }
}
