//! Hash-based functions: PartitionByLong, PartitionByString, PartitionByHashMod,
//! PartitionByJumpConsistentHash, PartitionByMurmurHash, PartitionByCRC32PreSlot (SPEC §2.5.2-2.5.10).

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
