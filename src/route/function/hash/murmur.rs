//! `io.mycat.route.function.PartitionByMurmurHash` (consistent hash ring, SPEC §2.5.7).

use crate::route::function::FunctionError;
use std::collections::BTreeMap;

use super::super::{BuildContext, JavaException, PartitionError, PartitionFunction, Props, java};
use super::properties;

/// Most virtual buckets manx builds a ring of. Mycat hashes a buffer that grows with every
/// bucket (quadratic work), so it never finishes a configuration anywhere near this size.
const MAX_BUCKETS: i64 = 1 << 24;

/// Guava `Hashing.murmur3_32(seed).hashUnencodedChars`, fed incrementally: MurmurHash3 x86
/// 32-bit over UTF-16 code units, two units (low one first) per 32-bit block.
#[derive(Clone)]
struct Murmur3 {
    h1: u32,
    pending: Option<u16>,
    units: u32,
}

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

fn mix_k1(k1: u32) -> u32 {
    k1.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

impl Murmur3 {
    fn new(seed: i32) -> Self {
        Murmur3 {
            h1: seed as u32,
            pending: None,
            units: 0,
        }
    }

    fn push_str(&mut self, s: &str) {
        for unit in s.encode_utf16() {
            self.units = self.units.wrapping_add(1);
            match self.pending.take() {
                None => self.pending = Some(unit),
                Some(low) => {
                    let k1 = u32::from(low) | u32::from(unit) << 16;
                    self.h1 = (self.h1 ^ mix_k1(k1))
                        .rotate_left(13)
                        .wrapping_mul(5)
                        .wrapping_add(0xe654_6b64);
                }
            }
        }
    }

    /// The hash of everything pushed so far (the state itself is left as it is).
    fn finish(&self) -> i32 {
        let mut h = self.h1;
        if let Some(last) = self.pending {
            h ^= mix_k1(u32::from(last));
        }
        h ^= self.units.wrapping_mul(2); // Guava: Chars.BYTES * length, in int arithmetic
        h ^= h >> 16;
        h = h.wrapping_mul(0x85eb_ca6b);
        h ^= h >> 13;
        h = h.wrapping_mul(0xc2b2_ae35);
        h ^= h >> 16;
        h as i32
    }
}

fn murmur3(seed: i32, s: &str) -> i32 {
    let mut m = Murmur3::new(seed);
    m.push_str(s);
    m.finish()
}

/// A consistent-hash ring of Murmur3 hashes: node `i` gets `virtualBucketTimes * weight(i)`
/// points, hashed from one buffer that starts as `SHARD-i` and grows by `-NODE-n` for each
/// point (Mycat never resets it: `SHARD-0-NODE-0`, `SHARD-0-NODE-0-NODE-1`, …); a later point
/// overwrites an earlier one on a hash collision. A value goes to the first point at or after
/// its hash (signed order), wrapping to the smallest. BETWEEN routes to all partitions.
#[derive(Debug)]
pub struct PartitionByMurmurHash {
    seed: i32,
    count: i32,
    ring: BTreeMap<i32, i32>,
}

/// Reads the `weightMapFile` (`java.util.Properties`, node index = weight; a weight <= 0
/// counts as 1), failing like Mycat's setter: file missing, or a key or weight that is not an
/// int (`NumberFormatException`).
fn weights(file: &str, ctx: &BuildContext<'_>) -> Result<BTreeMap<i32, i32>, FunctionError> {
    let content = (ctx.read_map_file)(file).map_err(FunctionError::File)?;
    let bad = |s: &str| {
        FunctionError::Invalid(format!(
            "weightMapFile {file}: For input string: \"{s}\" (NumberFormatException)"
        ))
    };
    let mut map = BTreeMap::new();
    for (key, value) in properties::load(&content)
        .map_err(|e| FunctionError::Invalid(format!("weightMapFile {file}: {e}")))?
    {
        let weight = java::parse_int(&value).ok_or_else(|| bad(&value))?;
        let node = java::parse_int(&key).ok_or_else(|| bad(&key))?;
        map.insert(node, if weight > 0 { weight } else { 1 });
    }
    Ok(map)
}

impl PartitionByMurmurHash {
    /// Properties: `seed` (int, default 0), `count` (int, the node count), `virtualBucketTimes`
    /// (int, default 160), `weightMapFile` (optional). `bucketMapPath` has no setter in Mycat 1.6
    /// and is ignored.
    ///
    /// Errors: a bad int property or weight file, and rings too large to build (see
    /// [`MAX_BUCKETS`]).
    pub fn new(props: &Props<'_>, ctx: &BuildContext<'_>) -> Result<Self, FunctionError> {
        let seed = props.int("seed", 0)?;
        let count = props.int("count", 0)?;
        let times = props.int("virtualBucketTimes", 160)?;
        let weights = match props.string("weightMapFile") {
            Some(file) => weights(file, ctx)?,
            None => BTreeMap::new(),
        };
        let buckets = |node: i32| times.wrapping_mul(weights.get(&node).copied().unwrap_or(1));
        // Nodes with at least one point: all of 0..count when the default weight gives points,
        // otherwise only listed ones (a wrapping product can still be positive).
        let nodes: Vec<i32> = if times > 0 {
            if i64::from(count) * i64::from(times) > MAX_BUCKETS {
                return Err(too_large(count, times));
            }
            (0..count).collect()
        } else {
            weights
                .keys()
                .copied()
                .filter(|&n| (0..count).contains(&n) && buckets(n) > 0)
                .collect()
        };
        let total: i64 = nodes.iter().map(|&n| i64::from(buckets(n).max(0))).sum();
        if total > MAX_BUCKETS {
            return Err(too_large(count, times));
        }
        let mut ring = BTreeMap::new();
        for node in nodes {
            let mut name = Murmur3::new(seed);
            name.push_str(&format!("SHARD-{node}"));
            for n in 0..buckets(node) {
                name.push_str(&format!("-NODE-{n}"));
                ring.insert(name.finish(), node);
            }
        }
        Ok(PartitionByMurmurHash { seed, count, ring })
    }
}

fn too_large(count: i32, times: i32) -> FunctionError {
    FunctionError::Invalid(format!(
        "PartitionByMurmurHash: count {count} × virtualBucketTimes {times} (× weights) is more \
         than the {MAX_BUCKETS} virtual buckets manx builds (Mycat would not finish building it)"
    ))
}

impl PartitionFunction for PartitionByMurmurHash {
    fn hashes_text(&self) -> bool {
        true
    }

    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        let h = murmur3(self.seed, value);
        match self
            .ring
            .range(h..)
            .next()
            .or_else(|| self.ring.iter().next())
        {
            Some((_, &node)) => Ok(Some(node)),
            // An empty ring (count <= 0): TreeMap.firstKey() throws NoSuchElementException.
            None => Err(PartitionError {
                exception: JavaException::Runtime,
                message: "java.util.NoSuchElementException: PartitionByMurmurHash has no \
                          nodes (count <= 0)"
                    .to_string(),
            }),
        }
    }

    fn partition_num(&self) -> Option<usize> {
        usize::try_from(self.count).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur3_reference_values() {
        // Guava: murmur3_32().hashUnencodedChars("") = 0; over UTF-16LE bytes it equals the
        // byte-oriented MurmurHash3 x86_32 (reference: "a\0" with seed 0).
        assert_eq!(murmur3(0, ""), 0);
        assert_eq!(murmur3(1, ""), 0x514e_28b7);
        assert_eq!(murmur3(0, "\0\0"), 0x2362_f9de);
        // Incremental feeding gives the same hash as feeding at once, odd lengths included.
        let mut m = Murmur3::new(7);
        m.push_str("SHARD-1");
        m.push_str("-NODE-0");
        assert_eq!(m.finish(), murmur3(7, "SHARD-1-NODE-0"));
        m.push_str("-NODE-1");
        assert_eq!(m.finish(), murmur3(7, "SHARD-1-NODE-0-NODE-1"));
    }

    #[test]
    fn ring_and_lookup() {
        let map: BTreeMap<String, String> = [("count".to_string(), "2".to_string())].into();
        let read = |_: &str| Err("none".to_string());
        let ctx = BuildContext {
            version: crate::config::MycatVersion::V1_6_7_6,
            read_map_file: &read,
            time_zone: None,
            now_ms: None,
            table: None,
        };
        let f = PartitionByMurmurHash::new(&Props(&map), &ctx).unwrap();
        assert_eq!(f.ring.len(), 320);
        // Golden vectors (murmur-rulexml-count2): "0" → 1, "-1" → 0.
        assert_eq!(f.calculate("0"), Ok(Some(1)));
        assert_eq!(f.calculate("-1"), Ok(Some(0)));
        assert_eq!(f.partition_num(), Some(2));
        let empty: BTreeMap<String, String> = BTreeMap::new();
        let f = PartitionByMurmurHash::new(&Props(&empty), &ctx).unwrap();
        assert!(f.calculate("1").is_err());
        let huge: BTreeMap<String, String> =
            [("count".to_string(), "2000000000".to_string())].into();
        assert!(PartitionByMurmurHash::new(&Props(&huge), &ctx).is_err());
        let missing: BTreeMap<String, String> =
            [("weightMapFile".to_string(), "w.properties".to_string())].into();
        assert!(PartitionByMurmurHash::new(&Props(&missing), &ctx).is_err());
    }

    #[test]
    fn weight_files() {
        let map: BTreeMap<String, String> = [
            ("count".to_string(), "3".to_string()),
            ("virtualBucketTimes".to_string(), "2".to_string()),
            ("weightMapFile".to_string(), "w.properties".to_string()),
        ]
        .into();
        let with = |content: &'static str| {
            let read = move |_: &str| Ok(content.to_string());
            let ctx = BuildContext {
                version: crate::config::MycatVersion::V1_6_7_6,
                read_map_file: &read,
                time_zone: None,
                now_ms: None,
                table: None,
            };
            PartitionByMurmurHash::new(&Props(&map), &ctx).map(|f| f.ring.len())
        };
        // Weights 3, 1 (0 → 1) and 1 (missing): 2 × (3 + 1 + 1) points; node 7 is not built.
        assert_eq!(with("# w\n0 = 3\n1=0\n7=5\n"), Ok(10));
        // Mycat's config-errors case, and Java's parseInt on a value with trailing space.
        assert!(with("0=heavy\n").is_err());
        assert!(with("0=2 \n").is_err());
        assert!(with("x=2\n").is_err());
    }
}
