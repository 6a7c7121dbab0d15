//! `io.mycat.route.function.PartitionByLong` ("fixed hash", Cobar's LongHash, SPEC §2.5.2).

use super::super::{BuildContext, PartitionError, PartitionFunction, Props, RangePartitions, java};
use super::segment::SegmentTable;
use crate::config::MycatVersion;
use crate::route::function::FunctionError;

/// `k = Long.parseLong(v)`; from Mycat 1.6.7.4 on the key is folded, `k ^= k >>> 32` (logical
/// shift), 1.6.5 uses it as is; the result is `segment[k & 1023]` of the
/// `partitionCount` × `partitionLength` table. A value that is not a Java long is an error.
/// BETWEEN uses Mycat's sequence range, which under-routes ranges that wrap past a multiple
/// of 1024, exactly as Mycat does.
#[derive(Debug)]
pub struct PartitionByLong {
    table: SegmentTable,
    fold: bool,
}

impl PartitionByLong {
    /// Properties: `partitionCount`, `partitionLength` (comma-separated int lists, required).
    pub fn new(props: &Props<'_>, ctx: &BuildContext<'_>) -> Result<Self, FunctionError> {
        Ok(PartitionByLong {
            table: SegmentTable::from_props(props)?,
            fold: ctx.version >= MycatVersion::V1_6_7_5,
        })
    }
}

impl PartitionFunction for PartitionByLong {
    fn reads_integers(&self) -> bool {
        true
    }

    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        let k = java::parse_long(value).ok_or_else(|| PartitionError::not_a_number(value))?;
        let k = if self.fold {
            k ^ ((k as u64) >> 32) as i64
        } else {
            k
        };
        Ok(Some(self.table.partition(k)))
    }

    fn calculate_range(&self, begin: &str, end: &str) -> Result<RangePartitions, PartitionError> {
        super::super::sequence_range(self, begin, end)
    }

    /// Every partition of the integers in the range (fewer than 1,024 of them; a longer range
    /// covers the whole segment table). Mycat's own sequence range misses partitions when the
    /// range wraps past a multiple of 1,024 (SPEC §2.3), so routing does not use it.
    fn route_range(&self, begin: &str, end: &str) -> Result<RangePartitions, PartitionError> {
        super::super::integer_range(self, begin, end, 1024)
    }

    /// Mycat's PartitionByLong does not report a count (-1), so it is never checked.
    fn partition_num(&self) -> Option<usize> {
        None
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::route::function::JavaException;

    fn build(count: &str, length: &str, version: MycatVersion) -> PartitionByLong {
        let map: BTreeMap<String, String> = [
            ("partitionCount".to_string(), count.to_string()),
            ("partitionLength".to_string(), length.to_string()),
        ]
        .into();
        let read = |_: &str| Err(String::new());
        let ctx = BuildContext {
            version,
            read_map_file: &read,
            time_zone: None,
            now_ms: None,
            table: None,
        };
        PartitionByLong::new(&Props(&map), &ctx).unwrap()
    }

    #[test]
    fn spec_examples() {
        // Mycat's route test: 128 × 8, 123 → slot 123 → partition 15.
        let f = build("128", "8", MycatVersion::V1_6_7_6);
        assert_eq!(f.calculate("123"), Ok(Some(15)));
        // 4 × 256, BETWEEN 200 AND 1100 → only partition 0 (the wrap is missed, as in Mycat).
        let f = build("4", "256", MycatVersion::V1_6_7_6);
        assert_eq!(
            f.calculate_range("200", "1100"),
            Ok(RangePartitions::Some(vec![0]))
        );
        assert_eq!(
            f.calculate("abc").unwrap_err().exception,
            JavaException::IllegalArgument
        );
    }

    #[test]
    fn fold_differs_by_version() {
        // -1: 1.6.5 → slot 1023; 1.6.7 → -1 ^ 0xFFFFFFFF = 0xFFFFFFFF00000000 → slot 0.
        let old = build("2,1", "256,512", MycatVersion::V1_6_5);
        let new = build("2,1", "256,512", MycatVersion::V1_6_7_6);
        assert_eq!(old.calculate("-1"), Ok(Some(2)));
        assert_eq!(new.calculate("-1"), Ok(Some(0)));
        // 2^32 + 5: old → slot 5; new → 5 ^ 1 = slot 4. Both partition 0 here.
        assert_eq!(old.calculate("4294967301"), Ok(Some(0)));
        let old = build("1024", "1", MycatVersion::V1_6_5);
        let new = build("1024", "1", MycatVersion::V1_6_7_6);
        assert_eq!(old.calculate("4294967301"), Ok(Some(5)));
        assert_eq!(new.calculate("4294967301"), Ok(Some(4)));
        assert_eq!(new.calculate("-9223372036854775808"), Ok(Some(0)));
    }
}
