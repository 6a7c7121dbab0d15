//! Mycat partition functions (`rule.xml` `<function class=...>`), computed exactly as Mycat
//! computes them: the same value gives the same partition index, the same "no partition", or the
//! same failure (`shared/mycat-compat/routing-vectors/` is the oracle).
//!
//! One trait, [`PartitionFunction`], one small file per function family, and a registry keyed by
//! Mycat's class name ([`build`]). Values reach a function as text, the way Mycat's router passes
//! them (SPEC §2.2).

mod auto_long;
mod date;
mod error;
mod file_map;
pub(crate) mod hash;
pub mod java;
mod mapfile;
mod modulo;
mod pattern;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::config::MycatVersion;

pub use error::FunctionError;

/// The Java exception class Mycat would raise, kept so results can be compared with the golden
/// vectors and reported faithfully.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JavaException {
    IllegalArgument,
    NumberFormat,
    Arithmetic,
    Runtime,
    StringIndexOutOfBounds,
}

impl JavaException {
    /// The fully qualified Java class name.
    pub fn class_name(self) -> &'static str {
        match self {
            JavaException::IllegalArgument => "java.lang.IllegalArgumentException",
            JavaException::NumberFormat => "java.lang.NumberFormatException",
            JavaException::Arithmetic => "java.lang.ArithmeticException",
            JavaException::Runtime => "java.lang.RuntimeException",
            JavaException::StringIndexOutOfBounds => "java.lang.StringIndexOutOfBoundsException",
        }
    }
}

/// A value the function cannot partition, with Mycat's message (shown to the client, errno 1064).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionError {
    pub exception: JavaException,
    pub message: String,
}

impl PartitionError {
    /// Mycat's "Please eliminate any quote and non number within it." failure (PartitionByMod,
    /// PartitionByLong, AutoPartitionByLong).
    pub fn not_a_number(value: &str) -> Self {
        PartitionError {
            exception: JavaException::IllegalArgument,
            message: format!(
                "columnValue:{value} Please eliminate any quote and non number within it."
            ),
        }
    }
}

impl fmt::Display for PartitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The partitions a `BETWEEN` may touch (Mycat `calculateRange`, SPEC §2.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RangePartitions {
    /// Every partition of the table (Mycat's empty array).
    All,
    /// Exactly these partition indexes, in Mycat's order.
    Some(Vec<i32>),
    /// No partition (Mycat's `null`).
    None,
}

/// A Mycat partition function.
pub trait PartitionFunction: Send + Sync + fmt::Debug {
    /// Mycat `calculate(value)`: the partition index, `None` for no partition (Mycat's `null`),
    /// or the failure Mycat raises. The index is not range-checked here (Mycat leaves that to
    /// the router, which knows the table's dataNode count).
    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError>;

    /// Mycat `calculateRange(begin, end)`; the default is Mycat's base class: all partitions.
    fn calculate_range(&self, _begin: &str, _end: &str) -> Result<RangePartitions, PartitionError> {
        Ok(RangePartitions::All)
    }

    /// The partitions that can hold any value between `begin` and `end` (inclusive), for the
    /// router. Unlike Mycat's `calculate_range`, which several functions answer too narrowly
    /// (a sequence range over a non-monotone map misses nodes, SPEC §2.3), this may answer more
    /// partitions than needed but never fewer (DECISIONS.md item 14). The default is all.
    fn route_range(&self, _begin: &str, _end: &str) -> Result<RangePartitions, PartitionError> {
        Ok(RangePartitions::All)
    }

    /// Whether the function places text by its exact characters (hashes, map keys, prefixes),
    /// so that strings equal under a case- or accent-insensitive collation (`'a'`, `'A'`,
    /// `'ä'`) may be on different partitions: groups, DISTINCT values and joins on the column
    /// then span nodes. `false` for functions of numbers and dates.
    fn hashes_text(&self) -> bool {
        false
    }

    /// Whether the function reads its value as an integer (`Long.parseLong` and the like):
    /// then a row is placed by value only when the value is an integer the column stores as
    /// written, since MySQL reads `'7002 x'` as 7002 and clamps an integer out of range.
    fn reads_integers(&self) -> bool {
        false
    }

    /// Mycat `getPartitionNum()`: how many partitions the function can produce, if it knows.
    /// Used for the start-up check that a table has enough dataNodes (SPEC §2.6).
    fn partition_num(&self) -> Option<usize>;
}

/// What a function needs at build time besides its properties.
pub struct BuildContext<'a> {
    /// Which Mycat's placement rules to follow (DECISIONS.md item 2).
    pub version: MycatVersion,
    /// Reads a map file named by a property (`mapFile`, `weightMapFile`), relative to the
    /// config directory.
    pub read_map_file: &'a dyn Fn(&str) -> Result<String, String>,
    /// IANA time zone date functions parse in (Mycat uses the JVM default zone); `None` means
    /// the process's local zone (`TZ`), DECISIONS.md item 3.
    pub time_zone: Option<&'a str>,
    /// Fixed "now" in epoch milliseconds for functions that read the clock
    /// (PartitionByHotDate); `None` means the system clock.
    pub now_ms: Option<i64>,
    /// For functions built once per table (PartitionByCRC32PreSlot): the table's dataNode count
    /// and the content of its existing ruledata file, if any.
    pub table: Option<TableContext<'a>>,
}

/// The table a per-table function is built for.
#[derive(Debug, Clone, Copy)]
pub struct TableContext<'a> {
    pub data_node_count: usize,
    /// Content of `ruledata/<rule>.properties` when it exists (Mycat keeps the slot table there).
    pub rule_data: Option<&'a str>,
}

/// Builds the function Mycat's class `class` would be, from `properties` (trimmed values; empty
/// ones absent, SPEC §0.4). Unknown property names are ignored, as Mycat's setters ignore them.
///
/// Errors: a class that is not one of Mycat's built-ins (naming it), a property of the wrong type, or
/// a map file that cannot be read or parsed — each as Mycat's `init()` would fail.
pub fn build(
    class: &str,
    properties: &BTreeMap<String, String>,
    ctx: &BuildContext<'_>,
) -> Result<Arc<dyn PartitionFunction>, FunctionError> {
    let short = class
        .strip_prefix("io.mycat.route.function.")
        .unwrap_or(class);
    let props = Props(properties);
    let built = match short {
        "PartitionByMod" => Some(modulo::PartitionByMod::new(&props, ctx.version).map(to_arc)),
        "AutoPartitionByLong" => Some(auto_long::AutoPartitionByLong::new(&props, ctx).map(to_arc)),
        "PartitionByFileMap" => Some(file_map::PartitionByFileMap::new(&props, ctx).map(to_arc)),
        _ => hash::build(short, &props, ctx)
            .or_else(|| date::build(short, &props, ctx))
            .or_else(|| pattern::build(short, &props, ctx)),
    };
    // Custom classes of a Mycat deployment cannot run here: refuse them by name.
    built.unwrap_or_else(|| Err(FunctionError::UnknownClass(class.to_string())))
}

fn to_arc<F: PartitionFunction + 'static>(f: F) -> Arc<dyn PartitionFunction> {
    Arc::new(f)
}

/// Typed access to a function's properties, converting like Mycat's `ParameterMapping`.
pub(crate) struct Props<'a>(&'a BTreeMap<String, String>);

impl Props<'_> {
    pub fn string(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// An `int` setter: Java `Integer.parseInt` of the trimmed text; absent → `default`.
    pub fn int(&self, name: &str, default: i32) -> Result<i32, FunctionError> {
        match self.0.get(name) {
            None => Ok(default),
            Some(v) => java::parse_int(v).ok_or_else(|| FunctionError::NotAnInt {
                name: name.to_string(),
                value: v.clone(),
            }),
        }
    }

    pub fn required(&self, name: &str) -> Result<&str, FunctionError> {
        self.string(name)
            .ok_or_else(|| FunctionError::Required(name.to_string()))
    }
}

/// Mycat's sequence range (SPEC §2.3), used by monotone functions: quotes stripped, both ends
/// calculated; either `null` → all; `end >= begin` → `begin..=end`; otherwise all.
pub(crate) fn sequence_range(
    f: &dyn PartitionFunction,
    begin: &str,
    end: &str,
) -> Result<RangePartitions, PartitionError> {
    let b = f.calculate(java::remove_backquote(begin))?;
    let e = f.calculate(java::remove_backquote(end))?;
    Ok(match (b, e) {
        (Some(b), Some(e)) if e >= b => RangePartitions::Some((b..=e).collect()),
        _ => RangePartitions::All,
    })
}

/// The partitions of every integer in `[begin, end]`, for functions defined only on integers
/// (a column they shard holds integers, so a range of it holds exactly these values). A range
/// of more than `limit` values, or bounds that are not integers, may reach every partition:
/// all. Never fewer partitions than the rows can be on (DECISIONS.md item 14).
pub(crate) fn integer_range(
    f: &dyn PartitionFunction,
    begin: &str,
    end: &str,
    limit: i64,
) -> Result<RangePartitions, PartitionError> {
    let parse = |v: &str| java::parse_long(java::remove_backquote(v));
    let (Some(b), Some(e)) = (parse(begin), parse(end)) else {
        return Ok(RangePartitions::All);
    };
    if e < b {
        return Ok(RangePartitions::Some(Vec::new()));
    }
    if (e as i128) - (b as i128) >= limit as i128 {
        return Ok(RangePartitions::All);
    }
    let mut out: Vec<i32> = Vec::new();
    for v in b..=e {
        if let Some(p) = f.calculate(&v.to_string())? {
            out.push(p);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(RangePartitions::Some(out))
}

/// Test support: runs `f` with `props` and a context whose every map file reads `file`.
#[cfg(test)]
pub(crate) fn with_map_file<T>(
    props: &[(&str, &str)],
    file: &str,
    f: impl FnOnce(&Props<'_>, &BuildContext<'_>) -> T,
) -> T {
    let p: BTreeMap<String, String> = props
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let content = file.to_string();
    let read = move |_: &str| -> Result<String, String> { Ok(content.clone()) };
    let ctx = BuildContext {
        version: MycatVersion::V1_6_7_6,
        read_map_file: &read,
        time_zone: None,
        now_ms: None,
        table: None,
    };
    f(&Props(&p), &ctx)
}
