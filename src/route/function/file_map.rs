//! `io.mycat.route.function.PartitionByFileMap` (enumeration, "sharding-by-intfile", SPEC §2.5.4).

use crate::route::function::FunctionError;
use std::collections::HashMap;

use super::mapfile;
use super::{BuildContext, JavaException, PartitionError, PartitionFunction, Props, java};

const DEFAULT_NODE: &str = "DEFAULT_NODE";

#[derive(Debug, Hash, PartialEq, Eq)]
enum Key {
    Int(i32),
    Text(String),
}

/// Looks the value up in a `key=node` map file. `type` 0 (default) compares keys as Java ints
/// (`Integer.valueOf(v)`; a value that is not one is an error), any other `type` compares the
/// trimmed key text exactly. A miss falls back to the `DEFAULT_NODE` entry (from `defaultNode`
/// when >= 0, which overrides a `DEFAULT_NODE=` line), else no partition.
#[derive(Debug)]
pub struct PartitionByFileMap {
    int_keys: bool,
    map: HashMap<Key, i32>,
}

impl PartitionByFileMap {
    /// Properties: `mapFile` (required), `type` (int, default 0), `defaultNode` (int, default -1).
    /// Lines whose key or node does not parse are skipped silently, as Mycat skips them.
    pub fn new(props: &Props<'_>, ctx: &BuildContext<'_>) -> Result<Self, FunctionError> {
        let file = props.required("mapFile")?;
        let int_keys = props.int("type", 0)? == 0;
        let default_node = props.int("defaultNode", -1)?;
        let content = (ctx.read_map_file)(file).map_err(FunctionError::File)?;
        let mut map = HashMap::new();
        for (_, line) in mapfile::lines(&content) {
            let Some((key, node)) = line.split_once('=') else {
                continue;
            };
            let key = java::trim(key);
            let Some(node) = java::parse_int(java::trim(node)) else {
                continue;
            };
            let key = if int_keys {
                match java::parse_int(key) {
                    Some(k) => Key::Int(k),
                    None => continue,
                }
            } else {
                Key::Text(key.to_string())
            };
            map.insert(key, node);
        }
        if default_node >= 0 {
            map.insert(Key::Text(DEFAULT_NODE.to_string()), default_node);
        }
        Ok(PartitionByFileMap { int_keys, map })
    }
}

impl PartitionFunction for PartitionByFileMap {
    fn reads_integers(&self) -> bool {
        self.int_keys
    }

    /// String keys (`type` other than 0) are looked up by their exact text.
    fn hashes_text(&self) -> bool {
        !self.int_keys
    }

    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        let key = if self.int_keys {
            Key::Int(java::parse_int(value).ok_or_else(|| PartitionError {
                exception: JavaException::IllegalArgument,
                message: format!("columnValue:{value} Please check if the format satisfied."),
            })?)
        } else {
            Key::Text(value.to_string())
        };
        Ok(self
            .map
            .get(&key)
            .or_else(|| self.map.get(&Key::Text(DEFAULT_NODE.to_string())))
            .copied())
    }

    fn partition_num(&self) -> Option<usize> {
        let mut nodes: Vec<i32> = self.map.values().copied().collect();
        nodes.sort_unstable();
        nodes.dedup();
        Some(nodes.len())
    }
}
