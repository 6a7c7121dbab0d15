//! Mycat's map-file formats (SPEC §2.4).

use super::java;
use crate::route::function::FunctionError;

/// Mycat `NumberParseUtil.parseLong`: `M` = 10,000 and `K` = 1,000 (DECISIONS.md item 4), a
/// remainder may follow the unit (`2M1` = 20,001, `30K09` = 30,009); a leading unit is an error.
pub fn parse_units(text: &str) -> Option<i64> {
    let v = text.to_uppercase();
    let (i, mult) = match (v.find('M'), v.find('K')) {
        (Some(i), _) => (i, 10_000),
        (None, Some(i)) => (i, 1_000),
        (None, None) => return java::parse_long(&v),
    };
    if i == 0 {
        return java::parse_long(&v); // fails, as Mycat's does
    }
    let head = java::parse_long(&v[..i])?.checked_mul(mult)?;
    let rest = &v[i + 1..];
    let tail = if rest.is_empty() {
        0
    } else {
        java::parse_int(rest)? as i64
    };
    head.checked_add(tail)
}

/// The meaningful lines of a map file: trimmed, without empty lines and `#` / `//` comments.
pub fn lines(content: &str) -> impl Iterator<Item = (usize, &str)> {
    content
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, java::trim(l)))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#') && !l.starts_with("//"))
}

/// One `start-end=node` line of a range map file (inclusive at both ends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongRange {
    pub start: i64,
    pub end: i64,
    pub node: i32,
}

/// Parses a range map file (AutoPartitionByLong): lines without `=` are skipped, as Mycat skips
/// them with a warning; file order is kept (first match wins).
///
/// Errors: a bound or node that does not parse, naming the file's line.
pub fn long_ranges(file: &str, content: &str) -> Result<Vec<LongRange>, FunctionError> {
    let mut out = Vec::new();
    for (n, line) in lines(content) {
        let Some((left, right)) = line.split_once('=') else {
            continue;
        };
        let bad = |what: &str| {
            FunctionError::Invalid(format!("map file {file} line {n} '{line}': {what}"))
        };
        let mut bounds = left.split('-');
        let start = bounds.next().map(java::trim).and_then(parse_units);
        let end = bounds.next().map(java::trim).and_then(parse_units);
        let (Some(start), Some(end)) = (start, end) else {
            return Err(bad(
                "range must be START-END with non-negative numbers (K = 1000, M = 10000)",
            ));
        };
        let node =
            java::parse_int(java::trim(right)).ok_or_else(|| bad("node index is not an int"))?;
        out.push(LongRange { start, end, node });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_units("2M1"), Some(20_001));
        assert_eq!(parse_units("30K09"), Some(30_009));
        assert_eq!(parse_units("1000M"), Some(10_000_000));
        assert_eq!(parse_units("500m"), Some(5_000_000));
        assert_eq!(parse_units("M5"), None);
        assert_eq!(parse_units("17"), Some(17));
    }

    #[test]
    fn range_lines() {
        let r = long_ranges("f", "# c\n// c\n0-500M=0\nno equals\n  1M1 - 2M500 = 3 \n").unwrap();
        assert_eq!(
            r,
            [
                LongRange {
                    start: 0,
                    end: 5_000_000,
                    node: 0
                },
                LongRange {
                    start: 10_001,
                    end: 20_500,
                    node: 3
                }
            ]
        );
        assert!(
            long_ranges("f", "-5-0=1")
                .unwrap_err()
                .to_string()
                .contains("line 1")
        );
    }
}
