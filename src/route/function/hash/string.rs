//! `io.mycat.route.function.PartitionByString` (Cobar's StringHash, SPEC §2.5.3).

use super::super::{PartitionError, PartitionFunction, Props, java};
use super::segment::SegmentTable;
use crate::route::function::FunctionError;

/// Hashes the UTF-16 units `[start, end)` of the value with a **64-bit** `h = 31*h + unit`
/// (wrapping) and returns `segment[h & 1023]` of the `partitionCount` × `partitionLength`
/// table. `hashSlice` `a:b` picks the units: a negative `a` counts from the end, `b > 0` is an
/// index and `b <= 0` counts back from the end (0 = the end); the slice is then clamped to the
/// value. Never fails; BETWEEN routes to all partitions.
#[derive(Debug)]
pub struct PartitionByString {
    table: SegmentTable,
    slice_start: i32,
    slice_end: i32,
}

/// Mycat `PartitionByString.sequenceSlicing`: `"n"` → `(0, n)` for `n >= 0`, `(n, 0)` otherwise;
/// `"a:b"` with each side Java-trimmed and an empty side meaning 0.
fn sequence_slicing(slice: &str) -> Result<(i32, i32), FunctionError> {
    let int = |s: &str| {
        java::parse_int(s).ok_or_else(|| FunctionError::NotAnInt {
            name: "hashSlice".to_string(),
            value: s.to_string(),
        })
    };
    match slice.split_once(':') {
        None => {
            let n = int(java::trim(slice))?;
            Ok(if n >= 0 { (0, n) } else { (n, 0) })
        }
        Some((left, right)) => {
            let side = |s: &str| match java::trim(s) {
                "" => Ok(0),
                s => int(s),
            };
            Ok((side(left)?, side(right)?))
        }
    }
}

impl PartitionByString {
    /// Properties: `partitionCount`, `partitionLength` (as PartitionByLong), `hashSlice`
    /// (default `0:8`) or the older `hashLength` (int, same as `hashSlice` `"n"`). Mycat's
    /// setters run in property-name order, so `hashSlice` wins over `hashLength`.
    pub fn new(props: &Props<'_>) -> Result<Self, FunctionError> {
        let mut slice = (0, 8);
        if props.string("hashLength").is_some() {
            slice = sequence_slicing(&props.int("hashLength", 0)?.to_string())?;
        }
        if let Some(s) = props.string("hashSlice") {
            slice = sequence_slicing(s)?;
        }
        Ok(PartitionByString {
            table: SegmentTable::from_props(props)?,
            slice_start: slice.0,
            slice_end: slice.1,
        })
    }

    /// Mycat `StringUtil.hash(s, start, end)` with the slice resolved against `s`.
    fn hash(&self, value: &str) -> i64 {
        let units: Vec<u16> = value.encode_utf16().collect();
        let len = i64::try_from(units.len()).unwrap_or(i64::MAX);
        let start = i64::from(self.slice_start);
        let end = i64::from(self.slice_end);
        // Java computes these in int; a String's length fits an int, so no overflow there.
        let start = if start >= 0 { start } else { len + start }.max(0);
        let end = if end > 0 { end } else { len + end }.min(len);
        let (Ok(start), Ok(end)) = (usize::try_from(start), usize::try_from(end)) else {
            return 0; // end < 0: the loop does not run
        };
        units
            .get(start..end)
            .unwrap_or(&[])
            .iter()
            .fold(0i64, |h, &u| h.wrapping_mul(31).wrapping_add(i64::from(u)))
    }
}

impl PartitionFunction for PartitionByString {
    fn hashes_text(&self) -> bool {
        true
    }

    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        Ok(Some(self.table.partition(self.hash(value))))
    }

    fn partition_num(&self) -> Option<usize> {
        self.table.partitions()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn build(count: &str, length: &str, slice: Option<&str>) -> PartitionByString {
        let mut map: BTreeMap<String, String> = [
            ("partitionCount".to_string(), count.to_string()),
            ("partitionLength".to_string(), length.to_string()),
        ]
        .into();
        if let Some(s) = slice {
            map.insert("hashSlice".to_string(), s.to_string());
        }
        PartitionByString::new(&Props(&map)).unwrap()
    }

    #[test]
    fn slicing() {
        assert_eq!(sequence_slicing("2"), Ok((0, 2)));
        assert_eq!(sequence_slicing("-4"), Ok((-4, 0)));
        assert_eq!(sequence_slicing(":8"), Ok((0, 8)));
        assert_eq!(sequence_slicing("-4:"), Ok((-4, 0)));
        assert_eq!(sequence_slicing(" 2 : 5 "), Ok((2, 5)));
        assert_eq!(sequence_slicing(":"), Ok((0, 0)));
        assert!(sequence_slicing("a:1").is_err());
        assert!(sequence_slicing("").is_err());
    }

    #[test]
    fn spec_examples() {
        // 128 × 8, ":8": "abc" → h = 96354 → slot 98 → partition 12.
        let f = build("128", "8", Some(":8"));
        assert_eq!(f.hash("abc"), 96354);
        assert_eq!(f.calculate("abc"), Ok(Some(12)));
        // Cobar: 2,1 / 256,512, default slice 0:8, "qiushuo" → partition 2.
        let f = build("2,1", "256,512", None);
        assert_eq!(f.calculate("qiushuo"), Ok(Some(2)));
        // "-1:" with 53,971 / 1,1: the last char decides ('0'..'4' → 0).
        let f = build("1,1", "53,971", Some("-1:"));
        assert_eq!(f.calculate("abc4"), Ok(Some(0)));
        assert_eq!(f.calculate("abc5"), Ok(Some(1)));
        assert_eq!(f.calculate(""), Ok(Some(0)));
        // Slices past either end are clamped; an empty slice hashes to 0.
        let f = build("1024", "1", Some("-100:100"));
        assert_eq!(f.hash("ab"), 97 * 31 + 98);
        let f = build("1024", "1", Some("5:-7"));
        assert_eq!(f.hash("ab"), 0);
        assert_eq!(f.partition_num(), Some(1024));
    }
}
