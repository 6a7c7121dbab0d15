//! The range map files of PartitionByRangeMod, PartitionByPattern and PartitionByPrefixPattern
//! (SPEC §2.4), read exactly as each class's `initialize()` reads them.
//!
//! Differences from `mapfile::long_ranges` that matter for these classes: lines end at `\n`,
//! `\r\n` or a lone `\r` (Java `BufferedReader.readLine`); K/M bounds wrap on overflow as Java's
//! `long` arithmetic does instead of failing; PartitionByPattern reads bounds without K/M; and
//! PartitionByPattern / PartitionByPrefixPattern skip a line that does not parse (their
//! per-line `catch (Exception e) {}`) where PartitionByRangeMod fails to start.

use crate::route::function::FunctionError;
use crate::route::function::java;

/// One `start-end=value` line; `value` is a node index or, for PartitionByRangeMod, a group size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Range {
    pub start: i64,
    pub end: i64,
    pub value: i32,
}

impl Range {
    pub fn contains(&self, x: i64) -> bool {
        x <= self.end && x >= self.start
    }
}

/// How a range bound is written.
#[derive(Debug, Clone, Copy)]
pub(super) enum Bounds {
    /// Mycat `NumberParseUtil.parseLong` (K = 1,000, M = 10,000).
    Units,
    /// Java `Long.parseLong`.
    Plain,
}

/// What a line that does not parse does.
#[derive(Debug, Clone, Copy)]
pub(super) enum BadLine {
    /// `init()` fails (PartitionByRangeMod).
    Fail,
    /// The line is ignored silently (PartitionByPattern, PartitionByPrefixPattern).
    Skip,
}

/// Mycat `NumberParseUtil.parseLong`: upper-case; `M` at index > 0 → `head * 10000 + rest`,
/// else `K` at index > 0 → `head * 1000 + rest` (`rest` an int, 0 when empty), else a plain
/// long. Java `long` arithmetic, so the multiplication and addition wrap.
pub(super) fn parse_units(text: &str) -> Option<i64> {
    let v = text.to_uppercase();
    let (i, mult) = match (v.find('M'), v.find('K')) {
        (Some(i), _) => (i, 10_000i64),
        (None, Some(i)) => (i, 1_000),
        (None, None) => return java::parse_long(&v),
    };
    if i == 0 {
        return java::parse_long(&v); // fails: the text starts with the unit letter
    }
    let head = java::parse_long(&v[..i])?.wrapping_mul(mult);
    let rest = &v[i + 1..]; // the unit letter is one byte
    if rest.is_empty() {
        Some(head)
    } else {
        Some(head.wrapping_add(java::parse_int(rest)? as i64))
    }
}

/// Java `BufferedReader.readLine` over a whole file: lines end at `\n`, `\r\n` or `\r`.
fn java_lines(content: &str) -> impl Iterator<Item = &str> {
    let mut rest = content;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let Some(i) = rest.find(['\r', '\n']) else {
            return Some(std::mem::take(&mut rest));
        };
        let line = &rest[..i];
        let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[i + skip..];
        Some(line)
    })
}

/// Parses a range map file. Each line is trimmed; `#` and `//` lines and lines without `=` are
/// skipped; `LEFT=RIGHT` with LEFT (trimmed) split on `-` into start and end (further pieces are
/// ignored, so negative bounds cannot be written) and RIGHT (trimmed) a Java int. File order is
/// kept: lookups take the first range containing the value.
///
/// Errors (`BadLine::Fail` only): a line whose bounds or value do not parse, naming the line.
pub(super) fn parse(
    file: &str,
    content: &str,
    bounds: Bounds,
    bad_line: BadLine,
) -> Result<Vec<Range>, FunctionError> {
    let bound = |s: &str| match bounds {
        Bounds::Units => parse_units(java::trim(s)),
        Bounds::Plain => java::parse_long(java::trim(s)),
    };
    let mut out = Vec::new();
    for (n, line) in java_lines(content).enumerate() {
        let line = java::trim(line);
        if line.starts_with('#') || line.starts_with("//") {
            continue;
        }
        let Some((left, right)) = line.split_once('=') else {
            continue;
        };
        // Java's split drops trailing empty pieces, so "5-" has no end: an empty piece never
        // parses either, which makes taking the first two pieces of Rust's split equivalent.
        let mut pieces = java::trim(left).split('-');
        let start = pieces.next().and_then(bound);
        let end = pieces.next().and_then(bound);
        let value = java::parse_int(java::trim(right));
        match (start, end, value) {
            (Some(start), Some(end), Some(value)) => out.push(Range { start, end, value }),
            _ => match bad_line {
                BadLine::Skip => {}
                BadLine::Fail => {
                    return Err(FunctionError::Invalid(format!(
                        "map file {file} line {} '{line}': expected START-END=INT with \
                         non-negative START and END (K = 1000, M = 10000)",
                        n + 1
                    )));
                }
            },
        }
    }
    Ok(out)
}

/// Number of distinct `value`s (Mycat's `getPartitionNum` for node-index range files).
pub(super) fn distinct_values(ranges: &[Range]) -> usize {
    let mut v: Vec<i32> = ranges.iter().map(|r| r.value).collect();
    v.sort_unstable();
    v.dedup();
    v.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_wrap_like_java_long() {
        assert_eq!(parse_units("200M1"), Some(2_000_001));
        assert_eq!(parse_units("2m500"), Some(20_500));
        assert_eq!(parse_units("10K"), Some(10_000));
        assert_eq!(parse_units("M5"), None);
        assert_eq!(parse_units(""), None);
        assert_eq!(
            parse_units("922337203685478M"),
            Some(922_337_203_685_478i64.wrapping_mul(10_000))
        );
        assert_eq!(parse_units("1M2147483648"), None);
    }

    #[test]
    fn lines_end_like_buffered_reader() {
        let l: Vec<&str> = java_lines("a\r\nb\rc\n\nd").collect();
        assert_eq!(l, ["a", "b", "c", "", "d"]);
        assert_eq!(java_lines("x\n").collect::<Vec<_>>(), ["x"]);
        assert_eq!(java_lines("").count(), 0);
    }

    #[test]
    fn strict_and_lenient_files() {
        let text = "# c\r// c\r\n 1-2M = 3 \nno equals\n5=1\n7-8=x\n0-0=7";
        assert!(
            parse("f", text, Bounds::Units, BadLine::Fail)
                .unwrap_err()
                .to_string()
                .contains("line 5")
        );
        let r = parse("f", text, Bounds::Units, BadLine::Skip).unwrap();
        assert_eq!(
            r,
            [
                Range {
                    start: 1,
                    end: 20_000,
                    value: 3
                },
                Range {
                    start: 0,
                    end: 0,
                    value: 7
                }
            ]
        );
        // Plain bounds: "2M" is not a long, so that line is skipped.
        assert_eq!(
            parse("f", text, Bounds::Plain, BadLine::Skip)
                .unwrap()
                .len(),
            1
        );
        assert!(parse("f", "-5-0=1", Bounds::Units, BadLine::Fail).is_err());
        assert_eq!(distinct_values(&r), 2);
    }
}
