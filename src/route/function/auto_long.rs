//! `io.mycat.route.function.AutoPartitionByLong` ("auto-sharding-long", SPEC §2.5.5).

use super::mapfile::{self, LongRange};
use super::{BuildContext, PartitionError, PartitionFunction, Props, RangePartitions, java};

/// `x = Long.parseLong(v)`; the first map-file range with `start <= x <= end` gives the node;
/// none → `defaultNode` when it is >= 0, else no partition. BETWEEN uses Mycat's sequence range.
#[derive(Debug)]
pub struct AutoPartitionByLong {
    ranges: Vec<LongRange>,
    default_node: i32,
}

impl AutoPartitionByLong {
    /// Properties: `mapFile` (required), `defaultNode` (int, default -1).
    pub fn new(props: &Props<'_>, ctx: &BuildContext<'_>) -> Result<Self, String> {
        let file = props.required("mapFile")?;
        let content = (ctx.read_map_file)(file)?;
        Ok(AutoPartitionByLong {
            ranges: mapfile::long_ranges(file, &content)?,
            default_node: props.int("defaultNode", -1)?,
        })
    }
}

impl PartitionFunction for AutoPartitionByLong {
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
