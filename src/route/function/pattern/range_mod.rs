//! `io.mycat.route.function.PartitionByRangeMod` (range, then modulo inside the range,
//! "auto-sharding-rang-mod", SPEC §2.5.6).

use super::ranges::{self, BadLine, Bounds, Range};
use crate::route::function::FunctionError;
use crate::route::function::{
    BuildContext, JavaException, PartitionError, PartitionFunction, Props, RangePartitions, java,
};

/// The longest BETWEEN answer built. Mycat allocates an `Integer[end - begin + 1]`; a list this
/// long can only come from absurd group sizes, and would name partitions far beyond any table,
/// so the query fails here (as it would fail in the router) instead of allocating gigabytes.
const MAX_RANGE_LEN: i32 = 1 << 20;

/// Map-file lines `start-end=groupSize`; range `j` owns the partitions
/// `base_j .. base_j + groupSize_j` where `base_j` = Σ earlier group sizes (Java `int`, wrapping).
///
/// `calculate(v)`: `x = Long.parseLong(v)` (failure → `IllegalArgumentException`); the first
/// range with `start <= x <= end` gives `base + (|BigInteger(v)| mod groupSize)` (a group size
/// <= 0 → `ArithmeticException`); none → `defaultNode` when >= 0, else no partition.
///
/// `calculateRange(b, e)` (no quote stripping; a bad number is a raw `NumberFormatException`):
/// `lo` = `base` of the range holding `b`, `hi` = `base + groupSize - 1` of the range holding
/// `e`, each falling back to `defaultNode` (>= 0) or null. Either null → all; `hi >= lo` →
/// `lo..=hi`; otherwise no partition.
#[derive(Debug)]
pub struct PartitionByRangeMod {
    ranges: Vec<Range>,
    default_node: i32,
}

impl PartitionByRangeMod {
    /// Properties: `mapFile` (required; K/M units; any bad line fails, as Mycat's `init()`
    /// fails), `defaultNode` (int, default -1).
    pub fn new(props: &Props<'_>, ctx: &BuildContext<'_>) -> Result<Self, FunctionError> {
        let default_node = props.int("defaultNode", -1)?;
        let file = props.required("mapFile")?;
        let content = (ctx.read_map_file)(file).map_err(FunctionError::File)?;
        Ok(PartitionByRangeMod {
            ranges: ranges::parse(file, &content, Bounds::Units, BadLine::Fail)?,
            default_node,
        })
    }

    /// The first range containing `x` and its base partition index.
    fn locate(&self, x: i64) -> Option<(i32, &Range)> {
        let mut base: i32 = 0;
        for r in &self.ranges {
            if r.contains(x) {
                return Some((base, r));
            }
            base = base.wrapping_add(r.value);
        }
        None
    }

    fn default(&self) -> Option<i32> {
        (self.default_node >= 0).then_some(self.default_node)
    }

    /// Mycat `calculateStart` / `calculateEnd`: `edge(base, groupSize)` of the range holding the
    /// value, else the default node.
    fn range_edge(
        &self,
        value: &str,
        edge: fn(i32, i32) -> i32,
    ) -> Result<Option<i32>, PartitionError> {
        let x = java::parse_long(value).ok_or_else(|| PartitionError {
            exception: JavaException::NumberFormat,
            message: format!("For input string: \"{value}\""),
        })?;
        Ok(match self.locate(x) {
            Some((base, r)) => Some(edge(base, r.value)),
            None => self.default(),
        })
    }
}

impl PartitionFunction for PartitionByRangeMod {
    fn reads_integers(&self) -> bool {
        true
    }

    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        let x = java::parse_long(value).ok_or_else(|| PartitionError::not_a_number(value))?;
        let Some((base, r)) = self.locate(x) else {
            return Ok(self.default());
        };
        if r.value <= 0 {
            return Err(PartitionError {
                exception: JavaException::Arithmetic,
                message: "BigInteger: modulus not positive".to_string(),
            });
        }
        let inner = (x.unsigned_abs() % r.value as u64) as i32;
        Ok(Some(base.wrapping_add(inner)))
    }

    fn calculate_range(&self, begin: &str, end: &str) -> Result<RangePartitions, PartitionError> {
        let lo = self.range_edge(begin, |base, _| base)?;
        let hi = self.range_edge(end, |base, size| base.wrapping_add(size).wrapping_sub(1))?;
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Ok(RangePartitions::All);
        };
        if hi < lo {
            return Ok(RangePartitions::None);
        }
        let len = hi.wrapping_sub(lo).wrapping_add(1);
        if len < 0 {
            return Err(PartitionError {
                exception: JavaException::Runtime,
                message: format!("java.lang.NegativeArraySizeException: {len}"),
            });
        }
        if len > MAX_RANGE_LEN {
            return Err(PartitionError {
                exception: JavaException::Runtime,
                message: format!(
                    "BETWEEN {begin} AND {end} spans {len} partitions ({lo}..={hi}); \
                     check the group sizes of the range-mod map file"
                ),
            });
        }
        Ok(RangePartitions::Some((lo..=hi).collect()))
    }

    /// Σ groupSize (Java `int`, wrapping); a negative sum reports no count.
    fn partition_num(&self) -> Option<usize> {
        let sum = self
            .ranges
            .iter()
            .fold(0i32, |s, r| s.wrapping_add(r.value));
        usize::try_from(sum).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::function::with_map_file;

    const SPEC_FILE: &str = "0-200M=5\n200M1-400M=1\n400M1-600M=4\n600M1-800M=4\n800M1-1000M=6\n";

    fn build(file: &str, default_node: Option<&str>) -> Result<PartitionByRangeMod, FunctionError> {
        let mut props = vec![("mapFile", "f.txt")];
        if let Some(d) = default_node {
            props.push(("defaultNode", d));
        }
        with_map_file(&props, file, PartitionByRangeMod::new)
    }

    #[test]
    fn spec_vectors() {
        let f = build(SPEC_FILE, None).unwrap();
        for (v, p) in [
            ("0", 0),
            ("1", 1),
            ("4", 4),
            ("5", 0),
            ("2000000", 0),
            ("2000001", 5),
            ("4000000", 5),
            ("4000001", 7),
        ] {
            assert_eq!(f.calculate(v), Ok(Some(p)), "{v}");
        }
        assert_eq!(f.calculate("-1"), Ok(None));
        assert_eq!(f.calculate("10000001"), Ok(None));
        let e = f.calculate("1.5").unwrap_err();
        assert_eq!(e.exception, JavaException::IllegalArgument);
        assert_eq!(f.partition_num(), Some(20));
    }

    #[test]
    fn spec_ranges() {
        let f = build(SPEC_FILE, None).unwrap();
        let n = |b, e| match f.calculate_range(b, e).unwrap() {
            RangePartitions::Some(p) => p.len(),
            other => panic!("{other:?}"),
        };
        assert_eq!(n("2000000", "4000001"), 10);
        assert_eq!(n("9", "2000"), 5);
        assert_eq!(n("4000001", "6005001"), 8);
        assert_eq!(
            f.calculate_range("2000001", "1999999"),
            Ok(RangePartitions::None)
        );
        assert_eq!(f.calculate_range("-5", "5"), Ok(RangePartitions::All));
        let e = f.calculate_range("'1'", "2").unwrap_err();
        assert_eq!(e.exception, JavaException::NumberFormat);
    }

    #[test]
    fn defaults_and_odd_group_sizes() {
        let f = build("0-9=2\n10-19=0\n20-29=-3\n", Some("7")).unwrap();
        assert_eq!(f.calculate("-3"), Ok(Some(7)));
        assert_eq!(f.calculate("9"), Ok(Some(1)));
        for v in ["15", "25"] {
            let e = f.calculate(v).unwrap_err();
            assert_eq!(e.exception, JavaException::Arithmetic, "{v}");
        }
        assert_eq!(f.partition_num(), None); // 2 + 0 - 3 < 0
        // "100" misses every range → default 7; "5" → 0 + 2 - 1 = 1 < 7 → no partition.
        assert_eq!(f.calculate_range("100", "5"), Ok(RangePartitions::None));
        assert_eq!(
            f.calculate_range("5", "100"),
            Ok(RangePartitions::Some((0..=7).collect()))
        );
        let big = build("0-9=2000000000\n10-19=2000000000\n20-29=1\n", None).unwrap();
        assert_eq!(big.calculate("15"), Ok(Some(2_000_000_015)));
        // Java int wrap: base of the third range is 4e9 - 2^32.
        assert_eq!(big.calculate("25"), Ok(Some(-294_967_296)));
        let e = big.calculate_range("0", "0").unwrap_err(); // 2e9 partitions
        assert_eq!(e.exception, JavaException::Runtime);
        let e = big.calculate_range("25", "5").unwrap_err(); // Integer[negative]
        assert!(e.message.contains("NegativeArraySize"), "{}", e.message);
    }

    #[test]
    fn refused_map_files() {
        assert!(build("5=1\n", None).is_err());
        assert!(build("-5-0=1\n", None).is_err());
        assert!(build("0-9=x\n", None).is_err());
        assert!(build("0-9=1\n", Some("x")).is_err());
    }
}
