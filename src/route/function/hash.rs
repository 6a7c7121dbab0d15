//! Hash-based functions: PartitionByLong, PartitionByString, PartitionByHashMod,
//! PartitionByJumpConsistentHash, PartitionByMurmurHash, PartitionByCRC32PreSlot (SPEC §2.5.2-2.5.10).

mod crc32_slot;
pub use crc32_slot::default_rule_data as crc32_default_rule_data;
mod hash_mod;
mod jump;
mod long;
mod murmur;
mod properties;
mod segment;
mod string;

use crate::route::function::FunctionError;
use std::sync::Arc;

use super::{BuildContext, PartitionFunction, Props, to_arc};

/// The family's function for Mycat class `short` (without the package), or `None` when the
/// class is not one of this family's.
pub(super) fn build(
    short: &str,
    props: &Props<'_>,
    ctx: &BuildContext<'_>,
) -> Option<Result<Arc<dyn PartitionFunction>, FunctionError>> {
    Some(match short {
        "PartitionByLong" => long::PartitionByLong::new(props, ctx).map(to_arc),
        "PartitionByString" => string::PartitionByString::new(props).map(to_arc),
        "PartitionByHashMod" => hash_mod::PartitionByHashMod::new(props).map(to_arc),
        "PartitionByJumpConsistentHash" => {
            jump::PartitionByJumpConsistentHash::new(props).map(to_arc)
        }
        "PartitionByMurmurHash" => murmur::PartitionByMurmurHash::new(props, ctx).map(to_arc),
        "PartitionByCRC32PreSlot" => {
            crc32_slot::PartitionByCRC32PreSlot::new(props, ctx).map(to_arc)
        }
        _ => return None,
    })
}
