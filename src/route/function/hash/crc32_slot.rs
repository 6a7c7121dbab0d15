//! `io.mycat.route.function.PartitionByCRC32PreSlot` (pre-sliced slots, SPEC §2.5.10).

use super::super::{BuildContext, PartitionError, PartitionFunction, Props, java};
use super::properties;
use crate::config::MycatVersion;
use crate::route::function::FunctionError;

/// Slots the CRC is reduced to.
const SLOTS: u32 = 102_400;

/// CRC-32/IEEE (zlib's, Mycat's `PureJavaCrc32`), reflected polynomial 0xEDB88320.
fn crc32(bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    !bytes.iter().fold(!0u32, |c, &b| {
        TABLE[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8)
    })
}

/// `slot = CRC-32(UTF-8 bytes of v) mod 102400`, and the slot's owner in the table's slot map
/// (`ruledata/<rule>.properties`: `node=a-b,c,…`; a slot listed nowhere belongs to node 0).
/// Without a slot file the map is Mycat's even split: `size = 102400 / N`, node `i` owns
/// `i*size ..= (i+1)*size - 1` and the last node runs to 102399. Never fails; BETWEEN routes to
/// all partitions.
///
/// `N` is the table's dataNode count from Mycat 1.6.7 on (the `count` property has no setter
/// there), the `count` property in 1.6.5 — and whenever the function is built without a table.
#[derive(Debug)]
pub struct PartitionByCRC32PreSlot {
    /// `(first slot, node)` runs covering 0..102400 in order.
    runs: Vec<(u32, i32)>,
    nodes: i32,
}

/// Each node's slot ranges (inclusive), nodes in ascending order.
type SlotMap = Vec<(i32, Vec<(i32, i32)>)>;

/// Mycat's `genarateP`: the even split of the slots over `nodes > 0` nodes.
fn even_split(nodes: i32) -> SlotMap {
    let slots = SLOTS as i32;
    let size = slots / nodes;
    (0..nodes)
        .map(|i| {
            let end = if i == nodes - 1 {
                slots - 1
            } else {
                (i + 1).wrapping_mul(size) - 1
            };
            (i, vec![(i.wrapping_mul(size), end)])
        })
        .collect()
}

/// Guava `Splitter.on(sep).omitEmptyStrings().trimResults()` (trimming Unicode white space).
fn guava_split(s: &str, sep: char) -> impl Iterator<Item = &str> {
    s.split(sep).map(str::trim).filter(|p| !p.is_empty())
}

/// Parses a slot file as Mycat's `convertToMap` does: nodes in ascending order, each with its
/// ranges in file order. Mycat reads the file with `Properties.load(InputStream)`, i.e. as
/// ISO-8859-1, so non-ASCII bytes never form digits or white space here either.
fn parse_rule_data(content: &str) -> Result<SlotMap, FunctionError> {
    let latin1: String = content.bytes().map(char::from).collect();
    let bad_int = |s: &str| {
        FunctionError::Invalid(format!(
            "ruledata: For input string: \"{s}\" (NumberFormatException)"
        ))
    };
    let mut nodes: SlotMap = Vec::new();
    for (key, value) in
        properties::load(&latin1).map_err(|e| FunctionError::Invalid(format!("ruledata: {e}")))?
    {
        let mut ranges = Vec::new();
        for range in guava_split(&value, ',') {
            let bounds: Vec<&str> = guava_split(range, '-').collect();
            let int = |s: &str| java::parse_int(s).ok_or_else(|| bad_int(s));
            match bounds.as_slice() {
                [a, b] => ranges.push((int(a)?, int(b)?)),
                [a] => ranges.push((int(a)?, int(a)?)),
                _ => {
                    return Err(FunctionError::Invalid(format!(
                        "load crc32slot datafile error:dn={key},value={range}"
                    )));
                }
            }
        }
        let node = java::parse_int(&key).ok_or_else(|| bad_int(&key))?;
        // Two spellings of one node ("1", "01"): the later line wins here; Mycat's order
        // depends on its Hashtable.
        match nodes.iter_mut().find(|(n, _)| *n == node) {
            Some(entry) => entry.1 = ranges,
            None => nodes.push((node, ranges)),
        }
    }
    nodes.sort_by_key(|(n, _)| *n);
    Ok(nodes)
}

/// Fills the slot → node array as Mycat's `hack()` does (ascending nodes, later writes win),
/// failing where Java's array index would be out of bounds, and compresses it into runs.
fn slot_runs(nodes: &SlotMap) -> Result<Vec<(u32, i32)>, FunctionError> {
    let mut owner = vec![0i32; SLOTS as usize];
    for (node, ranges) in nodes {
        for &(start, end) in ranges {
            if start > end {
                continue;
            }
            if start < 0 || end >= SLOTS as i32 {
                return Err(FunctionError::Invalid(format!(
                    "ruledata: node {node} range {start}-{end} is outside the slots 0-{} \
                     (ArrayIndexOutOfBoundsException)",
                    SLOTS - 1
                )));
            }
            for slot in &mut owner[start as usize..=end as usize] {
                *slot = *node;
            }
        }
    }
    let mut runs: Vec<(u32, i32)> = Vec::new();
    for (slot, &node) in (0u32..).zip(owner.iter()) {
        if runs.last().is_none_or(|&(_, n)| n != node) {
            runs.push((slot, node));
        }
    }
    Ok(runs)
}

/// The slot file Mycat writes when a table has none yet (`ruledata/<rule>.properties`): the
/// even split of the 102,400 slots over `nodes` nodes, in Java properties format.
pub fn default_rule_data(nodes: usize) -> String {
    let mut out = String::from("#WARNING   !!!Please do not modify or delete this file!!!\n");
    for (node, ranges) in even_split(i32::try_from(nodes).unwrap_or(i32::MAX).max(1)) {
        let ranges: Vec<String> = ranges.iter().map(|(a, b)| format!("{a}-{b}")).collect();
        out.push_str(&format!("{node}={}\n", ranges.join(",")));
    }
    out
}

impl PartitionByCRC32PreSlot {
    /// Built per table: `ctx.table` gives the dataNode count and the existing slot file, if any.
    /// Properties: `count` (int), used as the node count in Mycat 1.6.5 and when there is no
    /// table (then the slot table is always the even split).
    ///
    /// Errors: no node count (no table and no positive `count`), a slot file that does not
    /// parse, or (1.6.7) one that names a different number of nodes than the table has
    /// (Mycat: `<rule>数量与dataNode数量不符`).
    pub fn new(props: &Props<'_>, ctx: &BuildContext<'_>) -> Result<Self, FunctionError> {
        let count = props.int("count", 0)?;
        let per_table = ctx.version >= MycatVersion::V1_6_7_5;
        let (nodes, rule_data) = match ctx.table {
            Some(t) if per_table => (
                i32::try_from(t.data_node_count).unwrap_or(i32::MAX),
                t.rule_data,
            ),
            Some(t) => (count, t.rule_data),
            None => (count, None),
        };
        let slot_map = match rule_data {
            Some(content) => {
                let map = parse_rule_data(content)?;
                if per_table
                    && ctx.table.is_some()
                    && i64::try_from(map.len()) != Ok(i64::from(nodes))
                {
                    return Err(FunctionError::Invalid(format!(
                        "PartitionByCRC32PreSlot: the ruledata file names {} nodes but the table \
                         has {nodes} dataNodes (数量与dataNode数量不符)",
                        map.len()
                    )));
                }
                map
            }
            None if nodes > 0 => even_split(nodes),
            None => {
                return Err(FunctionError::Invalid(format!(
                    "PartitionByCRC32PreSlot needs a positive node count: property count is \
                     {count} and no table gives its dataNode count"
                )));
            }
        };
        Ok(PartitionByCRC32PreSlot {
            runs: slot_runs(&slot_map)?,
            nodes,
        })
    }
}

impl PartitionFunction for PartitionByCRC32PreSlot {
    fn hashes_text(&self) -> bool {
        true
    }

    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        let slot = crc32(value.as_bytes()) % SLOTS;
        let run = self.runs.partition_point(|&(first, _)| first <= slot);
        Ok(Some(
            run.checked_sub(1)
                .and_then(|i| self.runs.get(i))
                .map_or(0, |&(_, node)| node),
        ))
    }

    fn partition_num(&self) -> Option<usize> {
        usize::try_from(self.nodes).ok()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::route::function::TableContext;

    fn build(
        version: MycatVersion,
        count: Option<&str>,
        table: Option<TableContext<'_>>,
    ) -> Result<PartitionByCRC32PreSlot, FunctionError> {
        let map: BTreeMap<String, String> = count
            .map(|c| ("count".to_string(), c.to_string()))
            .into_iter()
            .collect();
        let read = |_: &str| Err("none".to_string());
        let ctx = BuildContext {
            version,
            read_map_file: &read,
            time_zone: None,
            now_ms: None,
            table,
        };
        PartitionByCRC32PreSlot::new(&Props(&map), &ctx)
    }

    fn table(n: usize, rule_data: Option<&str>) -> Option<TableContext<'_>> {
        Some(TableContext {
            data_node_count: n,
            rule_data,
        })
    }

    fn routes(f: &PartitionByCRC32PreSlot, values: &[&str]) -> Vec<i32> {
        values
            .iter()
            .map(|v| f.calculate(v).unwrap().unwrap())
            .collect()
    }

    #[test]
    fn crc32_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn mycat_test_vectors() {
        let v = [
            "1",
            "2",
            "3",
            "4",
            "5",
            "6",
            "7",
            "8",
            "9",
            "9999",
            "123456789",
            "35565",
        ];
        // 2 nodes: the table decides in 1.6.7 (count ignored), count in 1.6.5 / without table.
        let f = build(MycatVersion::V1_6_7_6, Some("7"), table(2, None)).unwrap();
        assert_eq!(routes(&f, &v), [0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1]);
        assert_eq!(f.partition_num(), Some(2));
        let f = build(MycatVersion::V1_6_7_6, Some("2"), None).unwrap();
        assert_eq!(routes(&f, &v), [0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1]);
        let f = build(MycatVersion::V1_6_5, Some("2"), table(5, None)).unwrap();
        assert_eq!(routes(&f, &v), [0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1]);
        let f = build(MycatVersion::V1_6_7_6, None, table(3, None)).unwrap();
        assert_eq!(routes(&f, &v), [1, 1, 0, 2, 0, 1, 1, 0, 0, 0, 2, 2]);
        let f = build(MycatVersion::V1_6_7_6, None, table(1000, None)).unwrap();
        assert_eq!(routes(&f, &["1000316", "2"]), [521, 637]);
    }

    #[test]
    fn default_rule_data_parses_back_to_the_even_split() {
        let text = default_rule_data(3);
        assert!(
            text.contains("\n0=0-34132\n1=34133-68265\n2=68266-102399\n"),
            "{text}"
        );
        assert_eq!(parse_rule_data(&text).unwrap(), even_split(3));
    }

    #[test]
    fn rule_data_files() {
        let migrated = "#c\n0=0-20000,60000-70000\n1=20001-40000 , 70001-102399\n2=40001-59999\n";
        let f = build(MycatVersion::V1_6_7_6, None, table(3, Some(migrated))).unwrap();
        assert_eq!(f.runs.len(), 5);
        // A slot listed nowhere is node 0; later nodes overwrite earlier ones.
        let f = build(MycatVersion::V1_6_7_6, None, table(2, Some("1=5\n0=0-10"))).unwrap();
        assert_eq!(f.runs, [(0, 0), (5, 1), (6, 0)]);
        let mismatch = build(
            MycatVersion::V1_6_7_6,
            Some("3"),
            table(3, Some("0=0-50000\n1=50001-102399\n")),
        );
        assert!(
            mismatch
                .unwrap_err()
                .to_string()
                .contains("数量与dataNode数量不符")
        );
        for bad in [
            "0=1-2-3\n",
            "0=x\n",
            "zero=1\n",
            "0=0-102400\n",
            "0=5-2147483648\n",
        ] {
            let r = build(MycatVersion::V1_6_7_6, None, table(1, Some(bad)));
            assert!(r.is_err(), "{bad:?}");
        }
        // "-5" splits to ["5"]: one slot. start > end writes nothing.
        assert!(build(MycatVersion::V1_6_7_6, None, table(2, Some("0=-5\n1=9-3"))).is_ok());
        // No node count at all.
        assert!(build(MycatVersion::V1_6_7_6, None, None).is_err());
        assert!(build(MycatVersion::V1_6_5, Some("0"), table(2, None)).is_err());
    }
}
