//! `io.mycat.route.function.PartitionDirectBySubString` (SPEC §2.5.19).

use crate::route::function::FunctionError;
use crate::route::function::{JavaException, PartitionError, PartitionFunction, Props, java};

/// The exception Java's `String.substring` raises on bad indexes. `JavaException` has no
/// `StringIndexOutOfBoundsException` yet; `RuntimeException` (its ancestor) stands in.
const STRING_INDEX_OUT_OF_BOUNDS: JavaException = JavaException::StringIndexOutOfBounds;

/// `p = Integer.parseInt(v.substring(startIndex, startIndex + size), 10)` with UTF-16 indexes
/// (`startIndex + size` wraps as a Java int). Bad indexes → `StringIndexOutOfBoundsException`;
/// a substring that is not an int (a sign and Unicode digits are allowed) → raw
/// `NumberFormatException`. Result: `defaultPartition` when `partitionCount > 0 &&
/// p >= partitionCount`, else `p` (negative `p` included). BETWEEN: all partitions.
#[derive(Debug)]
pub struct PartitionDirectBySubString {
    start_index: i32,
    size: i32,
    partition_count: i32,
    default_partition: i32,
}

impl PartitionDirectBySubString {
    /// Properties: `startIndex`, `size`, `partitionCount`, `defaultPartition` (String setters
    /// doing `Integer.parseInt`; absent → 0).
    pub fn new(props: &Props<'_>) -> Result<Self, FunctionError> {
        Ok(PartitionDirectBySubString {
            start_index: props.int("startIndex", 0)?,
            size: props.int("size", 0)?,
            partition_count: props.int("partitionCount", 0)?,
            default_partition: props.int("defaultPartition", 0)?,
        })
    }
}

impl PartitionFunction for PartitionDirectBySubString {
    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        let units: Vec<u16> = value.encode_utf16().collect();
        let begin = self.start_index;
        let end = self.start_index.wrapping_add(self.size);
        let (Ok(b), Ok(e)) = (usize::try_from(begin), usize::try_from(end)) else {
            return Err(out_of_bounds(begin, end, units.len()));
        };
        let Some(sub) = units.get(b..e) else {
            return Err(out_of_bounds(begin, end, units.len()));
        };
        // A slice cutting a surrogate pair is not a number (Java sees a lone surrogate).
        let p = String::from_utf16(sub)
            .ok()
            .and_then(|s| java::parse_int(&s))
            .ok_or_else(|| PartitionError {
                exception: JavaException::NumberFormat,
                message: format!("For input string: \"{}\"", String::from_utf16_lossy(sub)),
            })?;
        Ok(Some(
            if self.partition_count > 0 && p >= self.partition_count {
                self.default_partition
            } else {
                p
            },
        ))
    }

    /// `partitionCount`; 0 or negative reports no usable count.
    fn partition_num(&self) -> Option<usize> {
        usize::try_from(self.partition_count).ok()
    }
}

fn out_of_bounds(begin: i32, end: i32, length: usize) -> PartitionError {
    PartitionError {
        exception: STRING_INDEX_OUT_OF_BOUNDS,
        message: format!("begin {begin}, end {end}, length {length}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn build(props: &[(&str, &str)]) -> Result<PartitionDirectBySubString, FunctionError> {
        let p: BTreeMap<String, String> = props
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        PartitionDirectBySubString::new(&Props(&p))
    }

    fn doc() -> PartitionDirectBySubString {
        build(&[
            ("startIndex", "9"),
            ("size", "2"),
            ("partitionCount", "8"),
            ("defaultPartition", "0"),
        ])
        .unwrap()
    }

    #[test]
    fn javadoc_example() {
        let f = doc();
        assert_eq!(f.calculate("01234567805xyz"), Ok(Some(5)));
        assert_eq!(f.calculate("01234567807"), Ok(Some(7)));
        assert_eq!(f.calculate("01234567808"), Ok(Some(0))); // >= 8 → default
        assert_eq!(f.calculate("012345678-3"), Ok(Some(-3)));
        assert_eq!(f.calculate("012345678+3"), Ok(Some(3)));
        assert_eq!(f.calculate("012345678１２"), Ok(Some(0))); // full-width 12 >= 8
        assert_eq!(f.calculate("一二三四五六七八九05"), Ok(Some(5)));
        assert_eq!(f.partition_num(), Some(8));
    }

    #[test]
    fn failures() {
        let f = doc();
        let e = f.calculate("0123456780").unwrap_err();
        assert_eq!(e.exception, STRING_INDEX_OUT_OF_BOUNDS);
        assert_eq!(e.message, "begin 9, end 11, length 10");
        let e = f.calculate("012345678XA").unwrap_err();
        assert_eq!(e.exception, JavaException::NumberFormat);
        assert_eq!(e.message, "For input string: \"XA\"");
        // "😀" is two UTF-16 units: index 9 is its low surrogate.
        let e = f.calculate("012345678😀").unwrap_err();
        assert_eq!(e.exception, JavaException::NumberFormat);
        let e = f.calculate("01234567😀1").unwrap_err();
        assert_eq!(e.exception, JavaException::NumberFormat);
        let e = f.calculate("01234567😀5").unwrap_err();
        assert_eq!(e.message, "For input string: \"\u{FFFD}5\"");
    }

    #[test]
    fn odd_configurations() {
        // Nothing set: substring(0, 0) = "" is not an int.
        let f = build(&[]).unwrap();
        assert_eq!(
            f.calculate("123").unwrap_err().exception,
            JavaException::NumberFormat
        );
        assert_eq!(f.partition_num(), Some(0));
        // Negative start, negative size, and startIndex + size wrapping past i32::MAX.
        for (s, n) in [("-1", "2"), ("2", "-1"), ("2147483647", "1")] {
            let f = build(&[("startIndex", s), ("size", n)]).unwrap();
            let e = f.calculate("12345").unwrap_err();
            assert_eq!(e.exception, STRING_INDEX_OUT_OF_BOUNDS, "{s} {n}");
        }
        let f = build(&[("startIndex", "2147483647"), ("size", "1")]).unwrap();
        assert_eq!(
            f.calculate("1").unwrap_err().message,
            "begin 2147483647, end -2147483648, length 1"
        );
        assert!(build(&[("size", "two")]).is_err());
        let f = build(&[("size", "3"), ("partitionCount", "-1")]).unwrap();
        assert_eq!(f.calculate("999"), Ok(Some(999)));
        assert_eq!(f.partition_num(), None);
    }
}
