//! Range and pattern functions: PartitionByRangeMod, PartitionByPattern,
//! PartitionByPrefixPattern, PartitionDirectBySubString (SPEC §2.5.6, §2.5.17-2.5.19).

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
