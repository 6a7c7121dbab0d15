//! `io.mycat.route.function.PartitionByHashMod` (SPEC §2.5.9).

use super::super::{JavaException, PartitionError, PartitionFunction, Props, java};
use crate::route::function::FunctionError;

/// Thomas Wang's 32-bit integer mix over Java's `String.hashCode`, then `|k| mod count`, with
/// `|k|` taken without overflow (`|i32::MIN|` = 2^31). When the `count` setter saw a power of
/// two (which includes 0), Mycat masks the truncated int instead: `(int)|k| & (count - 1)`.
/// Without a `count` property, or with a negative one that is not caught by the power-of-two
/// test, every value fails (`BigInteger: modulus not positive`). BETWEEN routes to all.
#[derive(Debug)]
pub struct PartitionByHashMod {
    count: i32,
    power_of_two: bool,
}

/// Wang/Jenkins 32-bit hash, Java int arithmetic (wrapping, `>>` arithmetic).
fn wang_hash(key: i32) -> i32 {
    let mut k = (!key).wrapping_add(key << 21);
    k ^= k >> 24;
    k = k.wrapping_add(k << 3).wrapping_add(k << 8);
    k ^= k >> 14;
    k = k.wrapping_add(k << 2).wrapping_add(k << 4);
    k ^= k >> 28;
    k.wrapping_add(k << 31)
}

impl PartitionByHashMod {
    /// Properties: `count` (int). Like Mycat's setter, the power-of-two test is made only when
    /// the property is given.
    pub fn new(props: &Props<'_>) -> Result<Self, FunctionError> {
        let given = props.string("count").is_some();
        let count = props.int("count", 0)?;
        Ok(PartitionByHashMod {
            count,
            power_of_two: given && count & count.wrapping_sub(1) == 0,
        })
    }
}

impl PartitionFunction for PartitionByHashMod {
    fn hashes_text(&self) -> bool {
        true
    }

    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        let n = u64::from(wang_hash(java::string_hash(value)).unsigned_abs());
        if self.power_of_two {
            // BigInteger.intValue() keeps the low 32 bits: 2^31 becomes i32::MIN.
            return Ok(Some((n as u32 as i32) & self.count.wrapping_sub(1)));
        }
        if self.count <= 0 {
            return Err(PartitionError {
                exception: JavaException::Arithmetic,
                message: "BigInteger: modulus not positive".to_string(),
            });
        }
        Ok(Some((n % self.count as u64) as i32))
    }

    fn partition_num(&self) -> Option<usize> {
        usize::try_from(self.count).ok()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn build(count: Option<&str>) -> PartitionByHashMod {
        let map: BTreeMap<String, String> = count
            .map(|c| ("count".to_string(), c.to_string()))
            .into_iter()
            .collect();
        PartitionByHashMod::new(&Props(&map)).unwrap()
    }

    #[test]
    fn hashes_like_mycat() {
        let f = build(Some("3"));
        // Golden vectors (hashmod-count3): "0" → 0, "1" → 2, "-1" → 0, "2" → 1.
        for (v, p) in [("0", 0), ("1", 2), ("-1", 0), ("2", 1)] {
            assert_eq!(f.calculate(v), Ok(Some(p)), "{v}");
        }
        // A power of two masks, which is the same as the modulus on the absolute value.
        let f4 = build(Some("4"));
        let m4 = PartitionByHashMod {
            count: 4,
            power_of_two: false,
        };
        for v in ["a", "polygenelubricants", "", "12345"] {
            assert_eq!(f4.calculate(v), m4.calculate(v), "{v}");
        }
    }

    #[test]
    fn degenerate_counts() {
        assert_eq!(
            build(None).calculate("1").unwrap_err().exception,
            JavaException::Arithmetic
        );
        assert_eq!(
            build(Some("-3")).calculate("1").unwrap_err().exception,
            JavaException::Arithmetic
        );
        // count 0 was "a power of two": the mask is -1, the value itself.
        let h = wang_hash(java::string_hash("1")).unsigned_abs() as i32;
        assert_eq!(build(Some("0")).calculate("1"), Ok(Some(h)));
    }
}
