//! Date-based functions: PartitionByDate, PartitionByMonth, PartitionByMonthAndHistory,
//! PartitionByHotDate, LatestMonthPartion, PartitionByRangeDateHash (SPEC §2.5.11-2.5.16).

use std::sync::Arc;

use super::{BuildContext, PartitionFunction, Props};

/// The family's function for Mycat class `short` (without the package), or `None` when the
/// class is not one of this family's.
pub(super) fn build(
    short: &str,
    props: &Props<'_>,
    ctx: &BuildContext<'_>,
) -> Option<Result<Arc<dyn PartitionFunction>, String>> {
    let _ = (short, props, ctx);
    None
}
