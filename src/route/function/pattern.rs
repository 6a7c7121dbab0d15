//! Range and pattern functions: PartitionByRangeMod, PartitionByPattern,
//! PartitionByPrefixPattern, PartitionDirectBySubString (SPEC §2.5.6, §2.5.17-2.5.19).

mod by_pattern;
mod direct_substring;
mod prefix_pattern;
mod range_mod;
mod ranges;

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
        "PartitionByRangeMod" => range_mod::PartitionByRangeMod::new(props, ctx).map(to_arc),
        "PartitionByPattern" => by_pattern::PartitionByPattern::new(props, ctx).map(to_arc),
        "PartitionByPrefixPattern" => {
            prefix_pattern::PartitionByPrefixPattern::new(props, ctx).map(to_arc)
        }
        "PartitionDirectBySubString" => {
            direct_substring::PartitionDirectBySubString::new(props).map(to_arc)
        }
        _ => return None,
    })
}
