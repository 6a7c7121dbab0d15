//! `io.mycat.route.function.PartitionByJumpConsistentHash` (SPEC §2.5.8).

use super::super::{JavaException, PartitionError, PartitionFunction, Props, java};
use crate::route::function::FunctionError;

/// Lamping & Veach's jump consistent hash of Java's `String.hashCode` (sign-extended to 64
/// bits) over `totalBuckets` buckets, with Mycat's IEEE double arithmetic and saturating
/// `(long)` cast. `totalBuckets` 0 gives -1; a negative one fails every value. BETWEEN routes
/// to all partitions.
#[derive(Debug)]
pub struct PartitionByJumpConsistentHash {
    total_buckets: i32,
}

/// Mycat `jumpConsistentHash(key, buckets)` for `buckets >= 0`.
fn jump_consistent_hash(key: i64, buckets: i32) -> i32 {
    const CONSTANT: i64 = 2_862_933_555_777_941_757;
    const JUMP: f64 = (1u64 << 31) as f64;
    let mut k = key;
    let mut b: i64 = -1;
    let mut j: i64 = 0;
    while j < i64::from(buckets) {
        b = j;
        k = k.wrapping_mul(CONSTANT).wrapping_add(1);
        // (k >>> 33) + 1 is at most 2^31, exact in a double.
        let d = (((k as u64) >> 33) + 1) as f64;
        // Java's (long) of a double saturates (NaN → 0), as Rust's `as` does.
        j = ((b + 1) as f64 * (JUMP / d)) as i64;
    }
    b as i32
}

impl PartitionByJumpConsistentHash {
    /// Properties: `totalBuckets` (int, default 0).
    pub fn new(props: &Props<'_>) -> Result<Self, FunctionError> {
        Ok(PartitionByJumpConsistentHash {
            total_buckets: props.int("totalBuckets", 0)?,
        })
    }
}

impl PartitionFunction for PartitionByJumpConsistentHash {
    fn hashes_text(&self) -> bool {
        true
    }

    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        if self.total_buckets < 0 {
            return Err(PartitionError {
                exception: JavaException::IllegalArgument,
                message: "Buckets cannot be less than 0".to_string(),
            });
        }
        let key = i64::from(java::string_hash(value));
        Ok(Some(jump_consistent_hash(key, self.total_buckets)))
    }

    fn partition_num(&self) -> Option<usize> {
        usize::try_from(self.total_buckets).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mycat_test_vectors() {
        // Mycat's test: totalBuckets = 3, values "1" … "24".
        let expected = [
            1, 2, 1, 0, 0, 2, 1, 1, 1, 0, 2, 1, 1, 2, 1, 0, 0, 2, 1, 0, 0, 0, 2, 1,
        ];
        let f = PartitionByJumpConsistentHash { total_buckets: 3 };
        for (i, e) in expected.iter().enumerate() {
            let v = (i + 1).to_string();
            assert_eq!(f.calculate(&v), Ok(Some(*e)), "{v}");
        }
    }

    #[test]
    fn bucket_edge_cases() {
        let zero = PartitionByJumpConsistentHash { total_buckets: 0 };
        assert_eq!(zero.calculate("x"), Ok(Some(-1)));
        let one = PartitionByJumpConsistentHash { total_buckets: 1 };
        assert_eq!(one.calculate("x"), Ok(Some(0)));
        let neg = PartitionByJumpConsistentHash { total_buckets: -1 };
        assert!(neg.calculate("x").is_err());
        let max = PartitionByJumpConsistentHash {
            total_buckets: i32::MAX,
        };
        let p = max.calculate("x").unwrap().unwrap();
        assert!((0..i32::MAX).contains(&p));
    }
}
