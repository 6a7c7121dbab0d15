//! `io.mycat.route.function.PartitionByPattern` (numeric value mod pattern, then range table,
//! SPEC §2.5.17).

use super::ranges::{self, BadLine, Bounds, Range};
use crate::route::function::FunctionError;
use crate::route::function::{
    BuildContext, JavaException, PartitionError, PartitionFunction, Props, java,
};

/// `calculate(v)`: `v` not matching the regex `[0-9]*` (ASCII digits only; `-5`, `１２`,
/// `12ab` do not) → `defaultNode`. Otherwise `x = Long.parseLong(v)` (the empty string and
/// values above 2^63-1 throw a raw `NumberFormatException`), `h = x % patternValue` (Java long
/// remainder, computed per range line, so `patternValue` 0 is an `ArithmeticException` only
/// when the file has a range), and the first range with `start <= h <= end` gives the node;
/// none → no partition. BETWEEN: all partitions (Mycat's default).
#[derive(Debug)]
pub struct PartitionByPattern {
    pattern_value: i32,
    default_node: i32,
    ranges: Vec<Range>,
}

impl PartitionByPattern {
    /// Properties: `patternValue` (int, default 1024), `defaultNode` (int, default 0),
    /// `mapFile` (required; `start-end=node` with plain-long bounds, no K/M; lines that do not
    /// parse are skipped silently, as Mycat skips them).
    pub fn new(props: &Props<'_>, ctx: &BuildContext<'_>) -> Result<Self, FunctionError> {
        let pattern_value = props.int("patternValue", 1024)?;
        let default_node = props.int("defaultNode", 0)?;
        let file = props.required("mapFile")?;
        let content = (ctx.read_map_file)(file).map_err(FunctionError::File)?;
        Ok(PartitionByPattern {
            pattern_value,
            default_node,
            ranges: ranges::parse(file, &content, Bounds::Plain, BadLine::Skip)?,
        })
    }
}

impl PartitionFunction for PartitionByPattern {
    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        if !value.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(Some(self.default_node));
        }
        let x = java::parse_long(value).ok_or_else(|| PartitionError {
            exception: JavaException::NumberFormat,
            message: format!("For input string: \"{value}\""),
        })?;
        for r in &self.ranges {
            let h = x
                .checked_rem(self.pattern_value as i64)
                .ok_or_else(|| PartitionError {
                    exception: JavaException::Arithmetic,
                    message: "/ by zero".to_string(),
                })?;
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

    fn build(props: &[(&str, &str)], file: &str) -> PartitionByPattern {
        with_map_file(props, file, |p, ctx| {
            PartitionByPattern::new(p, ctx).unwrap()
        })
    }

    #[test]
    fn spec_vectors() {
        let file = "# c\n1-32=0\n33-64=1\n65-96=2\n97-128=3\n129-160=4\n161-192=5\n193-224=6\n\
                    225-256=7\n0-0=7";
        let f = build(
            &[
                ("patternValue", "256"),
                ("defaultNode", "2"),
                ("mapFile", "p.txt"),
            ],
            file,
        );
        assert_eq!(f.calculate("0"), Ok(Some(7)));
        assert_eq!(f.calculate("45a"), Ok(Some(2)));
        assert_eq!(f.calculate("257"), Ok(Some(0)));
        for v in ["-1", "+5", "１２", " 1"] {
            assert_eq!(f.calculate(v), Ok(Some(2)), "{v}");
        }
        for v in ["", "9223372036854775808"] {
            let e = f.calculate(v).unwrap_err();
            assert_eq!(e.exception, JavaException::NumberFormat, "{v}");
        }
        assert_eq!(f.partition_num(), Some(8));
    }

    #[test]
    fn lenient_file_and_zero_pattern() {
        // "1M-2M" is not a plain long: skipped, like "x" and "5=1".
        let f = build(
            &[("patternValue", "0"), ("mapFile", "p.txt")],
            "1M-2M=1\n5=1\nx\n",
        );
        assert_eq!(f.calculate("5"), Ok(None)); // no range: the remainder is never computed
        assert_eq!(f.calculate("a"), Ok(Some(0)));
        assert_eq!(f.partition_num(), Some(0));
        let f = build(&[("patternValue", "0"), ("mapFile", "p.txt")], "0-9=1\n");
        let e = f.calculate("5").unwrap_err();
        assert_eq!(e.exception, JavaException::Arithmetic);
        let f = build(&[("patternValue", "-10"), ("mapFile", "p.txt")], "5-5=3\n");
        assert_eq!(f.calculate("15"), Ok(Some(3)));
    }
}
