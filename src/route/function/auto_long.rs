//! `io.mycat.route.function.AutoPartitionByLong` ("auto-sharding-long", SPEC §2.5.5).

use super::mapfile::{self, LongRange};
use super::{BuildContext, PartitionError, PartitionFunction, Props, RangePartitions, java};
use crate::route::function::FunctionError;

/// `x = Long.parseLong(v)`; the first map-file range with `start <= x <= end` gives the node;
/// none → `defaultNode` when it is >= 0, else no partition. BETWEEN uses Mycat's sequence range.
#[derive(Debug)]
pub struct AutoPartitionByLong {
    ranges: Vec<LongRange>,
    default_node: i32,
}

impl AutoPartitionByLong {
    /// Properties: `mapFile` (required), `defaultNode` (int, default -1).
    pub fn new(props: &Props<'_>, ctx: &BuildContext<'_>) -> Result<Self, FunctionError> {
        let file = props.required("mapFile")?;
        let content = (ctx.read_map_file)(file).map_err(FunctionError::File)?;
        Ok(AutoPartitionByLong {
            ranges: mapfile::long_ranges(file, &content)?,
            default_node: props.int("defaultNode", -1)?,
        })
    }
}

impl PartitionFunction for AutoPartitionByLong {
    fn reads_integers(&self) -> bool {
        true
    }

    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        let x = java::parse_long(value).ok_or_else(|| PartitionError::not_a_number(value))?;
        let hit = self.ranges.iter().find(|r| r.start <= x && x <= r.end);
        Ok(match hit {
            Some(r) => Some(r.node),
            None => (self.default_node >= 0).then_some(self.default_node),
        })
    }

    fn calculate_range(&self, begin: &str, end: &str) -> Result<RangePartitions, PartitionError> {
        super::sequence_range(self, begin, end)
    }

    /// Every node whose map-file range meets `[begin, end]`, plus `defaultNode` when part of
    /// the interval is covered by no range (first-match order does not matter for a union).
    fn route_range(&self, begin: &str, end: &str) -> Result<RangePartitions, PartitionError> {
        let parse = |v: &str| {
            let v = java::remove_backquote(v);
            java::parse_long(v).ok_or_else(|| PartitionError::not_a_number(v))
        };
        let (b, e) = (parse(begin)?, parse(end)?);
        let mut nodes: Vec<i32> = Vec::new();
        if e < b {
            return Ok(RangePartitions::Some(nodes));
        }
        let mut hits: Vec<&LongRange> = self
            .ranges
            .iter()
            .filter(|r| r.start <= e && r.end >= b)
            .collect();
        nodes.extend(hits.iter().map(|r| r.node));
        // Is [b, e] entirely covered by the ranges it meets?
        hits.sort_by_key(|r| r.start);
        let mut next = b; // first value not yet known to be covered
        let mut covered = false;
        for r in hits {
            if r.start > next {
                break;
            }
            if r.end >= e {
                covered = true;
                break;
            }
            next = next.max(r.end.saturating_add(1));
        }
        if !covered && self.default_node >= 0 {
            nodes.push(self.default_node);
        }
        nodes.sort_unstable();
        nodes.dedup();
        Ok(RangePartitions::Some(nodes))
    }

    fn partition_num(&self) -> Option<usize> {
        let mut nodes: Vec<i32> = self.ranges.iter().map(|r| r.node).collect();
        if self.default_node >= 0 {
            nodes.push(self.default_node);
        }
        nodes.sort_unstable();
        nodes.dedup();
        Some(nodes.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::function::with_map_file;

    fn build(map: &str, default_node: Option<&str>) -> AutoPartitionByLong {
        let mut props = vec![("mapFile", "m.txt")];
        if let Some(d) = default_node {
            props.push(("defaultNode", d));
        }
        with_map_file(&props, map, |p, ctx| {
            AutoPartitionByLong::new(p, ctx).unwrap()
        })
    }

    fn nodes(f: &AutoPartitionByLong, b: &str, e: &str) -> Vec<i32> {
        match f.route_range(b, e).unwrap() {
            RangePartitions::Some(v) => v,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn route_range_never_misses_a_node() {
        // Not monotone: Mycat's sequence range for 50..250 gives [0, 1] and misses node 2.
        let f = build("0-100=0\n101-200=2\n201-300=1", None);
        assert_eq!(
            f.calculate_range("50", "250").unwrap(),
            RangePartitions::Some(vec![0, 1])
        );
        assert_eq!(nodes(&f, "50", "250"), [0, 1, 2]);
        assert_eq!(nodes(&f, "'150'", "160"), [2]);
        assert_eq!(nodes(&f, "250", "50"), Vec::<i32>::new());
        // Gaps fall to the default node.
        let f = build("0-100=0\n201-300=1", Some("2"));
        assert_eq!(nodes(&f, "50", "250"), [0, 1, 2]);
        assert_eq!(nodes(&f, "0", "100"), [0]);
        assert_eq!(nodes(&f, "-5", "5"), [0, 2]);
        assert!(f.route_range("x", "5").is_err());
    }
}
