//! `io.mycat.route.function.PartitionByPrefixPattern` (sum of leading character codes,
//! SPEC §2.5.18).

use super::ranges::{self, BadLine, Bounds, Range};
use crate::route::function::FunctionError;
use crate::route::function::{
    BuildContext, JavaException, PartitionError, PartitionFunction, Props,
};

/// `sum` = Σ of the first `min(prefixLength, length)` UTF-16 code units of the value (Java
/// `int`, wrapping; nothing when `prefixLength <= 0`), `h = sum % patternValue` (Java int
/// remainder, computed per range line, so `patternValue` 0 is an `ArithmeticException` only
/// when the file has a range); the first range with `start <= h <= end` gives the node; none →
/// no partition. Never fails otherwise. BETWEEN: all partitions (Mycat's default).
#[derive(Debug)]
pub struct PartitionByPrefixPattern {
    pattern_value: i32,
    prefix_length: i32,
    ranges: Vec<Range>,
}

impl PartitionByPrefixPattern {
    /// Properties: `patternValue` (int, default 1024), `prefixLength` (int, default 0),
    /// `mapFile` (required; `start-end=node`, K/M allowed; lines that do not parse are skipped
    /// silently, as Mycat skips them).
    pub fn new(props: &Props<'_>, ctx: &BuildContext<'_>) -> Result<Self, FunctionError> {
        let pattern_value = props.int("patternValue", 1024)?;
        let prefix_length = props.int("prefixLength", 0)?;
        let file = props.required("mapFile")?;
        let content = (ctx.read_map_file)(file).map_err(FunctionError::File)?;
        Ok(PartitionByPrefixPattern {
            pattern_value,
            prefix_length,
            ranges: ranges::parse(file, &content, Bounds::Units, BadLine::Skip)?,
        })
    }
}

impl PartitionFunction for PartitionByPrefixPattern {
    fn hashes_text(&self) -> bool {
        true
    }

    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        let n = usize::try_from(self.prefix_length).unwrap_or(0);
        let sum = value
            .encode_utf16()
            .take(n)
            .fold(0i32, |s, u| s.wrapping_add(u as i32));
        for r in &self.ranges {
            if self.pattern_value == 0 {
                return Err(PartitionError {
                    exception: JavaException::Arithmetic,
                    message: "/ by zero".to_string(),
                });
            }
            // i32::MIN % -1 is 0 in Java, as with wrapping_rem.
            let h = sum.wrapping_rem(self.pattern_value) as i64;
            if r.contains(h) {
                return Ok(Some(r.value));
            }
        }
        Ok(None)
    }

    /// Distinct node indexes of the map file.
    fn partition_num(&self) -> Option<usize> {
        Some(ranges::distinct_values(&self.ranges))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::function::with_map_file;

    fn build(props: &[(&str, &str)], file: &str) -> PartitionByPrefixPattern {
        with_map_file(props, file, |p, ctx| {
            PartitionByPrefixPattern::new(p, ctx).unwrap()
        })
    }

    #[test]
    fn spec_vectors() {
        let file = "1-4=0\n5-8=1\n9-12=2\n13-16=3\n17-20=4\n21-24=5\n25-28=6\n29-32=7\n0-0=7\n";
        let f = build(
            &[
                ("patternValue", "32"),
                ("prefixLength", "5"),
                ("mapFile", "p.txt"),
            ],
            file,
        );
        assert_eq!(f.calculate("gf89f9a"), Ok(Some(0))); // 420 % 32 = 4
        assert_eq!(f.calculate("8df99a"), Ok(Some(4))); // 372 % 32 = 20
        assert_eq!(f.calculate("8dhdf99a"), Ok(Some(3))); // 462 % 32 = 14
        assert_eq!(f.calculate(""), Ok(Some(7))); // sum 0
        // U+1F600 is two UTF-16 units, 0xD83D + 0xDE00 = 112_189; 112_189 % 32 = 29.
        assert_eq!(f.calculate("😀"), Ok(Some(7)));
        assert_eq!(f.partition_num(), Some(8));
    }

    #[test]
    fn odd_configurations() {
        // No prefixLength: the sum is 0.
        let f = build(&[("mapFile", "p.txt")], "0-0=3\n1K-2k=4\n");
        assert_eq!(f.calculate("abc"), Ok(Some(3)));
        // K units: 1000..=2000.
        let f = build(&[("prefixLength", "9"), ("mapFile", "p.txt")], "1K-2k=4\n");
        assert_eq!(f.calculate("\u{3e8}"), Ok(Some(4)));
        assert_eq!(f.calculate("a"), Ok(None));
        let f = build(&[("patternValue", "0"), ("mapFile", "p.txt")], "0-0=1\n");
        let e = f.calculate("a").unwrap_err();
        assert_eq!(e.exception, JavaException::Arithmetic);
        let f = build(&[("patternValue", "0"), ("mapFile", "p.txt")], "# none\n");
        assert_eq!(f.calculate("a"), Ok(None));
        // The int sum wraps: 40_000 units of U+FFFF overflow i32.
        let f = build(
            &[
                ("patternValue", "7"),
                ("prefixLength", "40000"),
                ("mapFile", "p.txt"),
            ],
            "-=9\n0-6=1\n",
        );
        let s: String = std::iter::repeat_n('\u{FFFF}', 40_000).collect();
        let sum = 40_000i32.wrapping_mul(0xFFFF);
        assert!(sum < 0);
        assert_eq!(f.calculate(&s), Ok(None)); // negative remainder: no range
        assert_eq!(f.partition_num(), Some(1));
    }
}
