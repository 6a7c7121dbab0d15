//! Mycat `PartitionUtil` (the 1024-slot segment table shared by PartitionByLong and
//! PartitionByString, SPEC §2.4) and the `partitionCount` / `partitionLength` list setters.

use super::super::{Props, java};
use crate::route::function::FunctionError;

/// Slots in the table; a hash picks `segment[h & 1023]`.
const SLOTS: usize = 1024;

/// Mycat's `toIntArray`: `SplitUtil.split(text, ',', true)` (empty items between commas are
/// dropped, the others Java-trimmed, so `"8, ,8"` keeps an empty item) then `Integer.parseInt`
/// of each item. An absent property is Java's `null` array.
fn int_list(props: &Props<'_>, name: &str) -> Result<Option<Vec<i32>>, FunctionError> {
    let Some(text) = props.string(name) else {
        return Ok(None);
    };
    text.split(',')
        .filter(|item| !item.is_empty())
        .map(|item| {
            let item = java::trim(item);
            java::parse_int(item).ok_or_else(|| FunctionError::NotAnInt {
                name: name.to_string(),
                value: item.to_string(),
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Which partition owns each of the 1024 slots: partitions are laid out left to right, group `i`
/// of the `partitionCount` / `partitionLength` lists giving `count[i]` consecutive partitions of
/// `length[i]` slots each.
#[derive(Debug)]
pub(super) struct SegmentTable {
    segment: Box<[i32; SLOTS]>,
    /// Σ count (Java int arithmetic): the number of partitions.
    partitions: i32,
}

impl SegmentTable {
    /// Reads `partitionCount` and `partitionLength` and builds the table as
    /// `new PartitionUtil(count, length)` does.
    ///
    /// Errors, as Mycat's `init()` fails: a property missing or the lists of different lengths
    /// (`error,check your scope & scopeLength definition.`), Σ count·length ≠ 1024
    /// (`error,check your partitionScope definition.`), and the Java array errors the
    /// constructor runs into with negative or overflowing counts and lengths.
    pub fn from_props(props: &Props<'_>) -> Result<SegmentTable, FunctionError> {
        let count = int_list(props, "partitionCount")?;
        let length = int_list(props, "partitionLength")?;
        match (count, length) {
            (Some(count), Some(length)) if count.len() == length.len() => {
                SegmentTable::new(&count, &length)
            }
            _ => Err(FunctionError::Invalid(
                "error,check your scope & scopeLength definition.".to_string(),
            )),
        }
    }

    /// `PartitionUtil(count, length)` for lists of equal length, simulated without Java's
    /// `int[Σ count + 1]` boundary array (whose size a configuration controls) but failing
    /// exactly where Java's constructor throws.
    fn new(count: &[i32], length: &[i32]) -> Result<SegmentTable, FunctionError> {
        let array_error = |what: &str| {
            FunctionError::Invalid(format!(
                "error,check your partitionScope definition ({what})."
            ))
        };
        // ai = new int[segmentLength + 1], segmentLength = Σ count (wrapping int).
        let partitions = count.iter().fold(0i32, |s, &c| s.wrapping_add(c));
        if partitions.wrapping_add(1) < 0 {
            return Err(array_error("NegativeArraySizeException"));
        }
        // ai[1..] is written once per partition of a positive count; writing past the array
        // (negative counts, or a sum that wrapped) is an ArrayIndexOutOfBoundsException.
        let written: i64 = count.iter().map(|&c| i64::from(c.max(0))).sum();
        if written > i64::from(partitions) {
            return Err(array_error("ArrayIndexOutOfBoundsException"));
        }
        // The last boundary, Σ count·length in wrapping int arithmetic, must be 1024 (an
        // unwritten last entry is 0).
        let last = if written < i64::from(partitions) {
            0
        } else {
            count.iter().zip(length).fold(0i32, |s, (&c, &l)| {
                if c > 0 {
                    s.wrapping_add(c.wrapping_mul(l))
                } else {
                    s
                }
            })
        };
        if last != SLOTS as i32 {
            return Err(FunctionError::Invalid(
                "error,check your partitionScope definition.".to_string(),
            ));
        }
        // segment[j] = p for j in [ai[p], ai[p+1]); a non-empty interval outside 0..1024 is an
        // ArrayIndexOutOfBoundsException.
        let mut segment = Box::new([0i32; SLOTS]);
        let mut partition: i64 = 0;
        let mut boundary: i32 = 0;
        for (&c, &l) in count.iter().zip(length) {
            if c <= 0 {
                continue;
            }
            match l {
                0 => partition += i64::from(c),
                l if l > 0 => {
                    // Each step either moves right inside 0..=1024 (at most 1024 of those in a
                    // row), wraps to a negative boundary (the next step then fails), or fails,
                    // so this loop ends after a bounded number of iterations.
                    for _ in 0..c {
                        let next = boundary.wrapping_add(l);
                        if next > boundary {
                            if boundary < 0 || next > SLOTS as i32 {
                                return Err(array_error("ArrayIndexOutOfBoundsException"));
                            }
                            for slot in &mut segment[boundary as usize..next as usize] {
                                *slot = partition as i32;
                            }
                        }
                        boundary = next;
                        partition += 1;
                    }
                }
                l => {
                    // Moving left writes nothing until the boundary wraps past i32::MIN, which
                    // makes an interval starting at a negative index.
                    let steps_before_wrap =
                        (i64::from(boundary) - i64::from(i32::MIN)) / -i64::from(l);
                    if i64::from(c) > steps_before_wrap {
                        return Err(array_error("ArrayIndexOutOfBoundsException"));
                    }
                    boundary = (i64::from(boundary) + i64::from(c) * i64::from(l)) as i32;
                    partition += i64::from(c);
                }
            }
        }
        Ok(SegmentTable {
            segment,
            partitions,
        })
    }

    /// `partition(h)`: the owner of slot `h & 1023` (two's complement, so negative hashes map
    /// by their low 10 bits).
    pub fn partition(&self, hash: i64) -> i32 {
        self.segment[(hash & (SLOTS as i64 - 1)) as usize]
    }

    /// Σ partitionCount (Mycat's `getPartitionNum` for PartitionByString); `None` if negative.
    pub fn partitions(&self) -> Option<usize> {
        usize::try_from(self.partitions).ok()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn table(count: &str, length: &str) -> Result<SegmentTable, FunctionError> {
        let map: BTreeMap<String, String> = [
            ("partitionCount".to_string(), count.to_string()),
            ("partitionLength".to_string(), length.to_string()),
        ]
        .into();
        SegmentTable::from_props(&Props(&map))
    }

    #[test]
    fn spec_example_layout() {
        // count 2,1 / length 256,512: 0-255 → 0, 256-511 → 1, 512-1023 → 2.
        let t = table("2, 1", "256 ,512").unwrap();
        assert_eq!(
            [0, 255, 256, 511, 512, 1023].map(|h| t.partition(h)),
            [0, 0, 1, 1, 2, 2]
        );
        assert_eq!(t.partition(-1), 2);
        assert_eq!(t.partition(1024), 0);
        assert_eq!(t.partitions(), Some(3));
        let t = table("8", "128").unwrap();
        assert_eq!(t.partition(123), 0);
        assert_eq!(t.partitions(), Some(8));
    }

    #[test]
    fn java_failures() {
        let scope = "error,check your partitionScope definition.";
        assert_eq!(table("2", "256").unwrap_err().to_string(), scope);
        assert_eq!(table("4", "512").unwrap_err().to_string(), scope);
        assert!(
            table("2,1", "512")
                .unwrap_err()
                .to_string()
                .contains("scope & scopeLength")
        );
        assert!(
            table("8, ,", "128")
                .unwrap_err()
                .to_string()
                .contains("not an int")
        );
        assert!(table("-1,2", "0,512").is_err());
        assert!(table("2147483647,1", "0,1024").is_err());
        assert!(table("1,1", "2048,-1024").is_err());
        assert!(table("1,1", "-100,1124").is_err());
        assert!(table("2147483647", "-1").is_err());
        assert!(table("1", "2147483647").is_err());
        // Valid in Java, however odd: empty partitions, and a rewind that hands every slot to
        // the last partition.
        let t = table("1000000,1", "0,1024").unwrap();
        assert_eq!(t.partition(5), 1_000_000);
        let t = table("1,1,1", "1024,-1024,1024").unwrap();
        assert_eq!(t.partition(5), 2);
        // Wrapping counts that happen to sum right: `int[2]`, one partition written.
        let t = table("-2147483648,-2147483648,1", "7,7,1024").unwrap();
        assert_eq!((t.partition(5), t.partitions()), (0, Some(1)));
    }
}
