//! PostgreSQL result columns as MySQL column definitions, and PostgreSQL text values as the
//! text a MySQL server sends for the same value (MySQL text protocol).
//!
//! The rows come through the simple query protocol, so every value arrives in PostgreSQL's
//! text output form (with the session settings manx fixes at connect: `DateStyle=ISO`,
//! `bytea_output=hex`). Most forms are already MySQL's; the ones that differ are converted
//! here: booleans (`t`/`f` → `1`/`0`), `bytea` (hex → raw bytes), `char(n)` (pad spaces
//! removed, as MySQL does without `PAD_CHAR_TO_FULL_LENGTH`), `timestamptz`/`timetz` (the UTC
//! offset removed: the value is the wall time in the PostgreSQL session's `TimeZone`),
//! fractional seconds padded to the column's precision, and float exponents (`1e+20` → `1e20`).

use tokio_postgres::types::Type;

use crate::backend::{Column, ColumnFlags, ColumnType, Value};

/// `utf8mb4_general_ci`, the collation id of every text column.
pub const UTF8MB4: u16 = 45;
/// The `binary` pseudo-collation of numbers, dates and blobs.
pub const BINARY: u16 = 63;

/// MySQL's `decimals` for a value whose scale is not fixed by its type.
pub const NOT_FIXED_DEC: u32 = 31;

/// How a column's text values are converted (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    /// Sent as PostgreSQL prints it.
    AsIs,
    Bool,
    Bytea,
    /// `char(n)`: trailing spaces removed.
    Bpchar,
    /// float4/float8: exponent written the MySQL way.
    Float,
    /// time / timestamp (tz: offset removed) with the fraction padded to `fsp` digits
    /// (`None`: as printed).
    Temporal {
        tz: bool,
        fsp: Option<u8>,
    },
    /// A `BIT(n)` column held as an integer: its value as MySQL's bytes (big-endian, the
    /// given number of bytes).
    Bits(u8),
}

/// A column's declared MySQL type that its PostgreSQL type does not show (kept in the column's
/// comment by the translation of CREATE TABLE / ADD COLUMN).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Declared {
    /// `tinyint(1)` / `bool`: Connector/J's Boolean.
    Bool,
    /// An integer type: MySQL's column type, display length and signedness.
    Integer {
        column_type: ColumnType,
        length: u32,
        unsigned: bool,
    },
    Year,
    /// `bit(n)`.
    Bit(u8),
    /// `tinytext` / `text` / `mediumtext`: the maximum length in bytes (utf8mb4).
    Text(u32),
    /// `tinyblob` / `blob` / `mediumblob`: the maximum length in bytes.
    Blob(u32),
    /// `varbinary(n)`.
    Varbinary(u32),
    /// `binary(n)`.
    Binary(u32),
    /// `enum(..)`: a VARCHAR on PostgreSQL (see the translation's `ValueList`).
    Enum,
    /// `set(..)`: likewise.
    Set,
}

impl Declared {
    /// Reads MySQL's spelling of a column type (`tinyint(1)`, `int unsigned`, `bit(8)`, ..);
    /// `None` for another text.
    pub fn parse(text: &str) -> Option<Declared> {
        let t = text.trim().to_ascii_lowercase();
        let (base, unsigned) = match t.strip_suffix(" unsigned") {
            Some(b) => (b, true),
            None => (t.as_str(), false),
        };
        let integer = |column_type, signed_length: u32, unsigned_length: u32| Declared::Integer {
            column_type,
            length: if unsigned {
                unsigned_length
            } else {
                signed_length
            },
            unsigned,
        };
        Some(match base {
            "tinyint(1)" if !unsigned => Declared::Bool,
            "tinyint" => integer(ColumnType::MYSQL_TYPE_TINY, 4, 3),
            "smallint" => integer(ColumnType::MYSQL_TYPE_SHORT, 6, 5),
            "mediumint" => integer(ColumnType::MYSQL_TYPE_INT24, 9, 8),
            "int" => integer(ColumnType::MYSQL_TYPE_LONG, 11, 10),
            "bigint" => integer(ColumnType::MYSQL_TYPE_LONGLONG, 20, 20),
            "year" if !unsigned => Declared::Year,
            "tinytext" if !unsigned => Declared::Text(255 * 4),
            "text" if !unsigned => Declared::Text(65_535 * 4),
            "mediumtext" if !unsigned => Declared::Text(16_777_215 * 4),
            "tinyblob" if !unsigned => Declared::Blob(255),
            "blob" if !unsigned => Declared::Blob(65_535),
            "mediumblob" if !unsigned => Declared::Blob(16_777_215),
            _ if base.starts_with("varbinary(") && !unsigned => {
                Declared::Varbinary(base["varbinary(".len()..].strip_suffix(')')?.parse().ok()?)
            }
            _ if base.starts_with("enum(") && base.ends_with(')') && !unsigned => Declared::Enum,
            _ if base.starts_with("set(") && base.ends_with(')') && !unsigned => Declared::Set,
            _ if base.starts_with("binary(") && !unsigned => {
                Declared::Binary(base["binary(".len()..].strip_suffix(')')?.parse().ok()?)
            }
            _ => {
                let n: u8 = base.strip_prefix("bit(")?.strip_suffix(')')?.parse().ok()?;
                if unsigned || n == 0 || n > 64 {
                    return None;
                }
                Declared::Bit(n)
            }
        })
    }

    /// `m` (the mapping of the column's PostgreSQL type) as the declared type shows it.
    pub fn apply(self, m: &mut Mapped) {
        let c = &mut m.column;
        match self {
            Declared::Text(length) => {
                c.length = length;
                return;
            }
            Declared::Blob(length) => {
                c.length = length;
                return;
            }
            // BINARY(n): MySQL pads a shorter value with zero bytes when it stores it;
            // PostgreSQL's bytea keeps it as it came (reads and comparisons agree with what is
            // stored: the value is not padded on the way out either).
            // MySQL sends both as a CHAR column with a flag; the VARCHAR's length is theirs.
            Declared::Enum => {
                c.column_type = ColumnType::MYSQL_TYPE_STRING;
                c.flags |= ColumnFlags::ENUM_FLAG;
                return;
            }
            Declared::Set => {
                c.column_type = ColumnType::MYSQL_TYPE_STRING;
                c.flags |= ColumnFlags::SET_FLAG;
                return;
            }
            Declared::Varbinary(n) | Declared::Binary(n) => {
                c.column_type = if matches!(self, Declared::Binary(_)) {
                    ColumnType::MYSQL_TYPE_STRING
                } else {
                    ColumnType::MYSQL_TYPE_VAR_STRING
                };
                c.length = n;
                c.flags.remove(ColumnFlags::BLOB_FLAG);
                return;
            }
            _ => {}
        }
        let numeric = ColumnFlags::BINARY_FLAG | ColumnFlags::NUM_FLAG;
        c.charset = BINARY;
        c.decimals = 0;
        c.flags
            .remove(ColumnFlags::UNSIGNED_FLAG | ColumnFlags::ZEROFILL_FLAG);
        c.flags |= numeric;
        match self {
            Declared::Bool => {
                c.column_type = ColumnType::MYSQL_TYPE_TINY;
                c.length = 1;
            }
            Declared::Integer {
                column_type,
                length,
                unsigned,
            } => {
                c.column_type = column_type;
                c.length = length;
                if unsigned {
                    c.flags |= ColumnFlags::UNSIGNED_FLAG;
                }
            }
            Declared::Year => {
                c.column_type = ColumnType::MYSQL_TYPE_YEAR;
                c.length = 4;
                c.flags |= ColumnFlags::UNSIGNED_FLAG | ColumnFlags::ZEROFILL_FLAG;
            }
            Declared::Bit(n) => {
                c.column_type = ColumnType::MYSQL_TYPE_BIT;
                c.length = u32::from(n);
                c.flags = (c.flags - ColumnFlags::NUM_FLAG) | ColumnFlags::UNSIGNED_FLAG;
                m.conversion = Conversion::Bits(n.div_ceil(8));
            }
            Declared::Text(_)
            | Declared::Blob(_)
            | Declared::Varbinary(_)
            | Declared::Binary(_)
            | Declared::Enum
            | Declared::Set => {}
        }
    }
}

/// A result column: the MySQL definition and how to convert its values.
#[derive(Debug, Clone)]
pub struct Mapped {
    pub column: Column,
    pub conversion: Conversion,
}

/// Fractional-second precision of a time/timestamp type modifier (`-1`: none given).
fn fsp(typmod: i32) -> Option<u8> {
    (0..=6).contains(&typmod).then_some(typmod as u8)
}

/// The MySQL column definition for a PostgreSQL result column of type `ty` with type
/// modifier `typmod` (`-1` when none), named `name`.
///
/// The rule for each type is MySQL's definition of the column type it maps to: int2 →
/// SMALLINT, int4 → INT, int8 → BIGINT, numeric(p,s) → DECIMAL(p,s) (unconstrained numeric:
/// DECIMAL(65) with decimals 31, "not fixed"), float4 → FLOAT, float8 → DOUBLE, bool → TINYINT(1),
/// varchar(n) → VARCHAR(n), char(n) → CHAR(n), text → LONGTEXT, bytea → LONGBLOB, date →
/// DATE, time(p) → TIME(p), timestamp(p)/timestamptz(p) → DATETIME(p), json/jsonb → JSON;
/// uuid, arrays and every other type → LONGTEXT (their PostgreSQL text form).
pub fn map_column(name: &str, ty: &Type, typmod: i32) -> Mapped {
    let numeric = ColumnFlags::BINARY_FLAG | ColumnFlags::NUM_FLAG;
    let mut conversion = Conversion::AsIs;
    let (column_type, flags, charset, length, decimals) = match *ty {
        Type::BOOL => {
            conversion = Conversion::Bool;
            (ColumnType::MYSQL_TYPE_TINY, numeric, BINARY, 1, 0)
        }
        Type::INT2 => (ColumnType::MYSQL_TYPE_SHORT, numeric, BINARY, 6, 0),
        Type::INT4 => (ColumnType::MYSQL_TYPE_LONG, numeric, BINARY, 11, 0),
        Type::INT8 => (ColumnType::MYSQL_TYPE_LONGLONG, numeric, BINARY, 20, 0),
        Type::OID => (
            ColumnType::MYSQL_TYPE_LONG,
            numeric | ColumnFlags::UNSIGNED_FLAG,
            BINARY,
            10,
            0,
        ),
        Type::NUMERIC => {
            let (precision, scale) = if typmod >= 4 {
                let t = typmod - 4;
                (((t >> 16) & 0xffff) as u32, ((t & 0xffff) as u32).min(30))
            } else {
                // Unconstrained (also what SUM/AVG of any numeric returns): each value has
                // its own scale, so decimals say "not fixed" (31, MySQL's NOT_FIXED_DEC).
                (65, NOT_FIXED_DEC)
            };
            let length = precision + u32::from(scale > 0) + 1;
            (
                ColumnType::MYSQL_TYPE_NEWDECIMAL,
                numeric,
                BINARY,
                length,
                scale as u8,
            )
        }
        Type::FLOAT4 => {
            conversion = Conversion::Float;
            (ColumnType::MYSQL_TYPE_FLOAT, numeric, BINARY, 12, 31)
        }
        Type::FLOAT8 => {
            conversion = Conversion::Float;
            (ColumnType::MYSQL_TYPE_DOUBLE, numeric, BINARY, 22, 31)
        }
        Type::VARCHAR if typmod >= 4 => (
            ColumnType::MYSQL_TYPE_VAR_STRING,
            ColumnFlags::empty(),
            UTF8MB4,
            (typmod as u32 - 4) * 4,
            0,
        ),
        Type::BPCHAR => {
            conversion = Conversion::Bpchar;
            let n = if typmod >= 4 { typmod as u32 - 4 } else { 1 };
            (
                ColumnType::MYSQL_TYPE_STRING,
                ColumnFlags::empty(),
                UTF8MB4,
                n * 4,
                0,
            )
        }
        Type::NAME => (
            ColumnType::MYSQL_TYPE_VAR_STRING,
            ColumnFlags::empty(),
            UTF8MB4,
            64 * 4,
            0,
        ),
        Type::UUID => (
            ColumnType::MYSQL_TYPE_VAR_STRING,
            ColumnFlags::empty(),
            UTF8MB4,
            36 * 4,
            0,
        ),
        Type::BYTEA => {
            conversion = Conversion::Bytea;
            (
                ColumnType::MYSQL_TYPE_BLOB,
                ColumnFlags::BLOB_FLAG | ColumnFlags::BINARY_FLAG,
                BINARY,
                u32::MAX,
                0,
            )
        }
        Type::DATE => (
            ColumnType::MYSQL_TYPE_DATE,
            ColumnFlags::BINARY_FLAG,
            BINARY,
            10,
            0,
        ),
        Type::TIME | Type::TIMETZ => {
            let p = fsp(typmod);
            conversion = Conversion::Temporal {
                tz: *ty == Type::TIMETZ,
                fsp: p,
            };
            let d = p.unwrap_or(6);
            (
                ColumnType::MYSQL_TYPE_TIME,
                ColumnFlags::BINARY_FLAG,
                BINARY,
                10 + if d > 0 { u32::from(d) + 1 } else { 0 },
                d,
            )
        }
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            let p = fsp(typmod);
            conversion = Conversion::Temporal {
                tz: *ty == Type::TIMESTAMPTZ,
                fsp: p,
            };
            let d = p.unwrap_or(6);
            (
                ColumnType::MYSQL_TYPE_DATETIME,
                ColumnFlags::BINARY_FLAG,
                BINARY,
                19 + if d > 0 { u32::from(d) + 1 } else { 0 },
                d,
            )
        }
        Type::JSON | Type::JSONB => (
            ColumnType::MYSQL_TYPE_JSON,
            ColumnFlags::BLOB_FLAG | ColumnFlags::BINARY_FLAG,
            BINARY,
            u32::MAX,
            0,
        ),
        // text, unconstrained varchar, and every other type as its text form.
        _ => (
            ColumnType::MYSQL_TYPE_BLOB,
            ColumnFlags::BLOB_FLAG,
            UTF8MB4,
            u32::MAX,
            0,
        ),
    };
    Mapped {
        column: Column {
            name: name.to_string(),
            table: String::new(),
            column_type,
            flags,
            charset,
            length,
            decimals,
        },
        conversion,
    }
}

/// A value in PostgreSQL's text form as the MySQL text-protocol value (`None`: NULL).
pub fn convert_value(text: Option<&str>, conversion: Conversion) -> Value {
    let Some(text) = text else {
        return Value::Null;
    };
    let bytes = match conversion {
        Conversion::AsIs => text.as_bytes().to_vec(),
        Conversion::Bool => match text {
            "t" => b"1".to_vec(),
            "f" => b"0".to_vec(),
            other => other.as_bytes().to_vec(),
        },
        Conversion::Bpchar => text.trim_end_matches(' ').as_bytes().to_vec(),
        Conversion::Bytea => decode_hex(text).unwrap_or_else(|| text.as_bytes().to_vec()),
        Conversion::Float => float_text(text).into_bytes(),
        Conversion::Temporal { tz, fsp } => temporal_text(text, tz, fsp).into_bytes(),
        Conversion::Bits(bytes) => match text.parse::<i64>() {
            Ok(n) => (n as u64).to_be_bytes()[8 - usize::from(bytes)..].to_vec(),
            Err(_) => text.as_bytes().to_vec(),
        },
    };
    Value::Bytes(bytes)
}

/// `\x` hex (bytea_output=hex) → bytes; `None` when `text` is not in that form.
fn decode_hex(text: &str) -> Option<Vec<u8>> {
    let hex = text.strip_prefix("\\x")?.as_bytes();
    if hex.len() % 2 != 0 {
        return None;
    }
    let digit = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    hex.chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

/// PostgreSQL's `1e+20` / `1.5e-07` as MySQL's `1e20` / `1.5e-7`.
fn float_text(text: &str) -> String {
    let Some((mantissa, exp)) = text.split_once('e') else {
        return text.to_string();
    };
    let (sign, digits) = match exp.as_bytes().first() {
        Some(b'+') => ("", &exp[1..]),
        Some(b'-') => ("-", &exp[1..]),
        _ => ("", exp),
    };
    let digits = digits.trim_start_matches('0');
    format!(
        "{mantissa}e{sign}{}",
        if digits.is_empty() { "0" } else { digits }
    )
}

/// A time/timestamp[tz] text: the UTC offset removed (tz) and the fraction padded to `fsp`.
fn temporal_text(text: &str, tz: bool, fsp: Option<u8>) -> String {
    // The time part starts after the date (timestamps) or at 0 (times).
    let time_start = if text.len() > 10 && text.as_bytes()[10] == b' ' {
        11
    } else {
        0
    };
    let mut body = text;
    let mut suffix = "";
    if let Some(bc) = body.strip_suffix(" BC") {
        body = bc;
        suffix = " BC";
    }
    if tz
        && body.len() > time_start
        && let Some(at) = body[time_start..].find(['+', '-'])
    {
        body = &body[..time_start + at];
    }
    let Some(p) = fsp else {
        return format!("{body}{suffix}");
    };
    // Only values with a time of day (hh:mm:ss…) get a fraction; infinity and the like pass.
    if !body[time_start.min(body.len())..].contains(':') {
        return format!("{body}{suffix}");
    }
    let (whole, frac) = body.split_once('.').unwrap_or((body, ""));
    let mut out = whole.to_string();
    if p > 0 {
        out.push('.');
        let frac: String = frac.chars().take(p as usize).collect();
        out.push_str(&format!("{frac:0<width$}", width = p as usize));
    }
    out.push_str(suffix);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: Value) -> String {
        match v {
            Value::Bytes(b) => String::from_utf8(b).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn numeric_precision_and_scale() {
        // numeric(10,2): typmod = (10 << 16 | 2) + 4
        let m = map_column("n", &Type::NUMERIC, (10 << 16 | 2) + 4);
        assert_eq!(m.column.column_type, ColumnType::MYSQL_TYPE_NEWDECIMAL);
        assert_eq!((m.column.length, m.column.decimals), (12, 2));
        let m = map_column("n", &Type::NUMERIC, (5 << 16) + 4);
        assert_eq!((m.column.length, m.column.decimals), (6, 0));
    }

    #[test]
    fn strings_have_utf8mb4_and_lengths() {
        let m = map_column("v", &Type::VARCHAR, 20 + 4);
        assert_eq!(m.column.column_type, ColumnType::MYSQL_TYPE_VAR_STRING);
        assert_eq!((m.column.charset, m.column.length), (UTF8MB4, 80));
        let m = map_column("t", &Type::TEXT, -1);
        assert_eq!(m.column.column_type, ColumnType::MYSQL_TYPE_BLOB);
        assert_eq!(m.column.charset, UTF8MB4);
        let m = map_column("b", &Type::BYTEA, -1);
        assert_eq!(m.column.charset, BINARY);
    }

    #[test]
    fn values() {
        assert_eq!(text(convert_value(Some("t"), Conversion::Bool)), "1");
        assert_eq!(text(convert_value(Some("f"), Conversion::Bool)), "0");
        assert_eq!(convert_value(None, Conversion::Bool), Value::Null);
        assert_eq!(
            convert_value(Some("\\x00ff41"), Conversion::Bytea),
            Value::Bytes(vec![0, 255, b'A'])
        );
        assert_eq!(text(convert_value(Some("ab  "), Conversion::Bpchar)), "ab");
        assert_eq!(
            text(convert_value(Some("1e+20"), Conversion::Float)),
            "1e20"
        );
        assert_eq!(
            text(convert_value(Some("1.5e-07"), Conversion::Float)),
            "1.5e-7"
        );
        assert_eq!(text(convert_value(Some("0.5"), Conversion::Float)), "0.5");
    }

    #[test]
    fn temporal_values() {
        let ts = |s, tz, fsp| text(convert_value(Some(s), Conversion::Temporal { tz, fsp }));
        assert_eq!(
            ts("2024-01-02 03:04:05+00", true, None),
            "2024-01-02 03:04:05"
        );
        assert_eq!(
            ts("2024-01-02 03:04:05.5-08:30", true, Some(3)),
            "2024-01-02 03:04:05.500"
        );
        assert_eq!(
            ts("2024-01-02 03:04:05", false, Some(0)),
            "2024-01-02 03:04:05"
        );
        assert_eq!(
            ts("2024-01-02 03:04:05.25", false, None),
            "2024-01-02 03:04:05.25"
        );
        assert_eq!(ts("10:11:12+02", true, Some(0)), "10:11:12");
        assert_eq!(ts("10:11:12.1", false, Some(2)), "10:11:12.10");
        assert_eq!(ts("infinity", true, Some(0)), "infinity");
    }

    #[test]
    fn declared_types_show_as_declared() {
        let declared = |pg: &Type, text: &str| {
            let mut m = map_column("c", pg, -1);
            Declared::parse(text).unwrap().apply(&mut m);
            m
        };
        let m = declared(&Type::INT2, "tinyint(1)");
        assert_eq!(
            (m.column.column_type, m.column.length),
            (ColumnType::MYSQL_TYPE_TINY, 1)
        );
        let m = declared(&Type::INT8, "int unsigned");
        assert_eq!(
            (m.column.column_type, m.column.length),
            (ColumnType::MYSQL_TYPE_LONG, 10)
        );
        assert!(m.column.flags.contains(ColumnFlags::UNSIGNED_FLAG));
        let m = declared(&Type::INT4, "mediumint");
        assert_eq!(m.column.column_type, ColumnType::MYSQL_TYPE_INT24);
        assert!(!m.column.flags.contains(ColumnFlags::UNSIGNED_FLAG));
        let m = declared(&Type::INT2, "year");
        assert_eq!(m.column.column_type, ColumnType::MYSQL_TYPE_YEAR);
        let m = declared(&Type::INT8, "bit(12)");
        assert_eq!(
            (m.column.column_type, m.column.length),
            (ColumnType::MYSQL_TYPE_BIT, 12)
        );
        assert_eq!(
            text(convert_value(Some("2565"), m.conversion)),
            "\u{a}\u{5}"
        );
        assert_eq!(
            convert_value(Some("-1"), Conversion::Bits(8)),
            Value::Bytes(vec![0xFF; 8])
        );
        let m = declared(&Type::BYTEA, "binary(4)");
        assert_eq!(m.column.column_type, ColumnType::MYSQL_TYPE_STRING);
        assert_eq!(
            convert_value(Some("\\x0102"), m.conversion),
            Value::Bytes(vec![1, 2])
        );
        let m = declared(&Type::TEXT, "text");
        assert_eq!(
            (m.column.column_type, m.column.length, m.column.charset),
            (ColumnType::MYSQL_TYPE_BLOB, 262_140, UTF8MB4)
        );
        for wrong in [
            "tinyint(1) unsigned",
            "bit(0)",
            "bit(65)",
            "year unsigned",
            "float",
        ] {
            assert_eq!(Declared::parse(wrong), None, "{wrong}");
        }
    }
}
