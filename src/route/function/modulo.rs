//! `io.mycat.route.function.PartitionByMod` (SPEC §2.5.1).

use super::{PartitionError, PartitionFunction, Props, RangePartitions, java};
use crate::config::MycatVersion;
use crate::route::function::FunctionError;

/// `|BigInteger(v)| mod count`. A non-numeric value: Mycat 1.6.7.6 (`main`) hashes it,
/// `|i64(v.hashCode())| mod count`; up to 1.6.7.5 it is an error (DECISIONS.md item 2).
#[derive(Debug)]
pub struct PartitionByMod {
    count: i32,
    hash_non_numeric: bool,
}

impl PartitionByMod {
    /// Properties: `count` (int).
    pub fn new(props: &Props<'_>, version: MycatVersion) -> Result<Self, FunctionError> {
        Ok(PartitionByMod {
            count: props.int("count", 0)?,
            hash_non_numeric: version >= MycatVersion::V1_6_7_6,
        })
    }
}

impl PartitionFunction for PartitionByMod {
    fn reads_integers(&self) -> bool {
        true
    }

    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        if self.count <= 0 {
            return Err(PartitionError {
                exception: super::JavaException::Arithmetic,
                message: format!("PartitionByMod count {} is not positive", self.count),
            });
        }
        let count = self.count as u64;
        if let Some(r) = java::big_integer_abs_mod(value, count) {
            return Ok(Some(r as i32));
        }
        if !self.hash_non_numeric {
            return Err(PartitionError::not_a_number(value));
        }
        let h = (java::string_hash(value) as i64).abs();
        Ok(Some((h % count as i64) as i32))
    }

    /// A range of fewer than `count` integers reaches only their residues; a longer one, all.
    fn route_range(&self, begin: &str, end: &str) -> Result<RangePartitions, PartitionError> {
        super::integer_range(self, begin, end, i64::from(self.count.max(1)))
    }

    fn partition_num(&self) -> Option<usize> {
        usize::try_from(self.count).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_ranges_reach_only_their_residues() {
        let f = PartitionByMod {
            count: 3,
            hash_non_numeric: true,
        };
        assert_eq!(
            f.route_range("4", "5"),
            Ok(RangePartitions::Some(vec![1, 2]))
        );
        assert_eq!(
            f.route_range("'6'", "6"),
            Ok(RangePartitions::Some(vec![0]))
        );
        assert_eq!(
            f.route_range("4", "6"),
            Ok(RangePartitions::Some(vec![0, 1, 2]))
        );
        assert_eq!(f.route_range("4", "7"), Ok(RangePartitions::All));
        assert_eq!(f.route_range("5", "4"), Ok(RangePartitions::Some(vec![])));
        assert_eq!(f.route_range("a", "4"), Ok(RangePartitions::All));
    }
}
