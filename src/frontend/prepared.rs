//! Server-side prepared statements (COM_STMT_PREPARE / EXECUTE / CLOSE). manx keeps the text
//! and binds the parameters into it at each execution as SQL literals, so a `?` on the
//! sharding column routes by its value exactly as the literal would, and a statement survives
//! any change of backend connection (nothing is prepared on the backends).

use std::ops::Range;

use opensrv_mysql::{ColumnType, ParamValue, ValueInner};

use super::error::MysqlError;

/// A statement a client prepared.
#[derive(Debug, Clone)]
pub(super) struct Prepared {
    pub sql: String,
    /// Byte ranges of its `?` placeholders, in order.
    pub placeholders: Vec<Range<usize>>,
}

impl Prepared {
    /// The statement text with `literals` (one per placeholder, in order) in place of the `?`s.
    pub fn bind(&self, literals: &[String]) -> String {
        let mut out =
            String::with_capacity(self.sql.len() + literals.iter().map(String::len).sum::<usize>());
        let mut at = 0;
        for (r, lit) in self.placeholders.iter().zip(literals) {
            out.push_str(&self.sql[at..r.start]);
            out.push_str(lit);
            at = r.end;
        }
        out.push_str(&self.sql[at..]);
        out
    }
}

/// A literal that means `bytes`: a quoted string with MySQL's default escaping (backslash
/// escapes on, as without `NO_BACKSLASH_ESCAPES`) when they are UTF-8 text, else the
/// hexadecimal literal `X'..'` (the binary string MySQL itself would bind).
fn quoted(bytes: &[u8]) -> String {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return hex_literal(bytes);
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for ch in text.chars() {
        match ch {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// `X'<hex>'`: the binary string of `bytes`.
fn hex_literal(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2 + 3);
    out.push_str("X'");
    for b in bytes {
        out.push_str(&format!("{b:02X}"));
    }
    out.push('\'');
    out
}

/// The binary DATE / DATETIME / TIMESTAMP encoding as a quoted literal.
fn datetime_literal(b: &[u8]) -> Option<String> {
    let year = u16::from_le_bytes([*b.first()?, *b.get(1)?]);
    let (month, day) = (*b.get(2)?, *b.get(3)?);
    let mut s = format!("'{year:04}-{month:02}-{day:02}");
    if b.len() >= 7 {
        s.push_str(&format!(" {:02}:{:02}:{:02}", b[4], b[5], b[6]));
    }
    if b.len() >= 11 {
        let micros = u32::from_le_bytes([b[7], b[8], b[9], b[10]]);
        s.push_str(&format!(".{micros:06}"));
    }
    s.push('\'');
    Some(s)
}

/// The binary TIME encoding as a quoted literal.
fn time_literal(b: &[u8]) -> Option<String> {
    if b.is_empty() {
        return Some("'00:00:00'".to_string());
    }
    let negative = *b.first()? == 1;
    let days = u32::from_le_bytes([*b.get(1)?, *b.get(2)?, *b.get(3)?, *b.get(4)?]);
    let (h, m, s) = (*b.get(5)?, *b.get(6)?, *b.get(7)?);
    let hours = days * 24 + u32::from(h);
    let mut out = format!(
        "'{}{hours:02}:{m:02}:{s:02}",
        if negative { "-" } else { "" }
    );
    if b.len() >= 12 {
        let micros = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
        out.push_str(&format!(".{micros:06}"));
    }
    out.push('\'');
    Some(out)
}

/// Whether `b` is one number literal, `[+-]digits[.digits][e[+-]digits]` (at least one digit
/// before the exponent): only then is a DECIMAL parameter written unquoted. `1--` would open a
/// comment, `1-1` would be an expression.
fn is_number(b: &[u8]) -> bool {
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    if matches!(b.first(), Some(b'-' | b'+')) {
        i += 1;
    }
    let mut n = digits(&mut i);
    if b.get(i) == Some(&b'.') {
        i += 1;
        n += digits(&mut i);
    }
    if n == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// One bound parameter as the SQL literal that means the same value.
///
/// Errors: a malformed temporal value (1210).
pub(super) fn literal(p: ParamValue<'_>) -> Result<String, MysqlError> {
    let malformed = || MysqlError::new(1210, "HY000", "Incorrect arguments to mysqld_stmt_execute");
    Ok(match p.value.into_inner() {
        ValueInner::NULL => "NULL".to_string(),
        ValueInner::Int(i) => i.to_string(),
        ValueInner::UInt(u) => u.to_string(),
        ValueInner::Double(d) => {
            if d.is_finite() {
                format!("{d:e}")
            } else {
                return Err(malformed());
            }
        }
        ValueInner::Bytes(b) => match p.coltype {
            // A DECIMAL parameter is sent as its text: kept a number when it is one.
            ColumnType::MYSQL_TYPE_DECIMAL | ColumnType::MYSQL_TYPE_NEWDECIMAL if is_number(b) => {
                String::from_utf8_lossy(b).into_owned()
            }
            // A BLOB parameter is binary (JDBC's setBytes with server-side prepared
            // statements): its bytes, whatever they are.
            ColumnType::MYSQL_TYPE_TINY_BLOB
            | ColumnType::MYSQL_TYPE_MEDIUM_BLOB
            | ColumnType::MYSQL_TYPE_LONG_BLOB
            | ColumnType::MYSQL_TYPE_BLOB => hex_literal(b),
            _ => quoted(b),
        },
        ValueInner::Date(b) | ValueInner::Datetime(b) => {
            if b.is_empty() {
                "'0000-00-00 00:00:00'".to_string()
            } else {
                datetime_literal(b).ok_or_else(malformed)?
            }
        }
        ValueInner::Time(b) => time_literal(b).ok_or_else(malformed)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_parameters_are_unquoted_only_when_they_are_one_number() {
        for n in ["1", "-1.50", "+.5", "1e3", "1.5E-3", "0.", "007"] {
            assert!(is_number(n.as_bytes()), "{n}");
        }
        for n in [
            "", "1--", "1-1", "--1", "1e", "e1", ".", "1.2.3", "1e+", "-", "1 ",
        ] {
            assert!(!is_number(n.as_bytes()), "{n}");
        }
    }

    #[test]
    fn parameters_bind_as_literals_in_place_of_placeholders() {
        let sql = "SELECT * FROM t WHERE id = ? AND name = ? AND note = '?'";
        let p = Prepared {
            sql: sql.to_string(),
            placeholders: crate::route::placeholders(sql).unwrap(),
        };
        assert_eq!(p.placeholders.len(), 2);
        let bound = p.bind(&["7".to_string(), quoted(b"it's a \\ test")]);
        assert_eq!(
            bound,
            "SELECT * FROM t WHERE id = 7 AND name = 'it''s a \\\\ test' AND note = '?'"
        );
        assert_eq!(
            datetime_literal(&[0xE8, 0x07, 2, 29, 13, 4, 5]).unwrap(),
            "'2024-02-29 13:04:05'"
        );
        assert_eq!(
            time_literal(&[1, 1, 0, 0, 0, 1, 0, 1]).unwrap(),
            "'-25:00:01'"
        );
        assert_eq!(quoted(&[0xFF, 0xFE]), "X'FFFE'");
    }
}
