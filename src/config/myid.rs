//! `myid.properties`: Mycat's ZooKeeper cluster-mode settings (OPERATIONS.md §2), read from the
//! configuration directory.
//!
//! ```text
//! loadZk=true
//! zkURL=127.0.0.1:2181,127.0.0.1:2182
//! clusterId=mycat-cluster-1
//! myid=mycat_fz_01
//! clusterSize=3
//! clusterNodes=mycat_fz_01,mycat_fz_02,mycat_fz_03
//! ```
//!
//! `loadZk=false` (Mycat's shipped file) or no file: the instance runs alone, as before.
//! `clusterSize` and `clusterNodes` are read but not needed: the live instances are the ones
//! with a session in ZooKeeper.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use thiserror::Error;

/// Why `myid.properties` gives no cluster settings.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MyIdError {
    /// The file exists but cannot be read (the system's error as text).
    #[error("cannot read {}: {message}", .path.display())]
    Unreadable { path: PathBuf, message: String },
    /// A property of the file is wrong; the file's path comes first.
    #[error("{}: {source}", .path.display())]
    InFile {
        path: PathBuf,
        #[source]
        source: Box<MyIdError>,
    },
    /// `loadZk` is neither `true` nor `false`.
    #[error("loadZk '{0}' is not true or false")]
    LoadZk(String),
    /// With `loadZk=true`, a required key (`zkURL`, `clusterId`, `myid`) is absent or empty.
    #[error("loadZk=true but {0} is missing")]
    Missing(String),
    /// An entry of `zkURL` is not `host:port`.
    #[error("zkURL '{url}': '{entry}' is not host:port")]
    ZkUrl { url: String, entry: String },
    /// `clusterId` or `myid` is not 1 to 64 letters, digits, `_`, `-` or `.`.
    #[error("{key} '{value}' must be 1 to 64 letters, digits, '_', '-' or '.'")]
    BadId { key: String, value: String },
}

/// File name in the configuration directory.
pub const FILE: &str = "myid.properties";

/// The cluster-mode settings of one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MyId {
    /// `zkURL`: `host:port` pairs, comma-separated (ZooKeeper's connect string).
    pub zk_url: String,
    /// `clusterId`: every znode of the cluster is under `/mycat/<clusterId>`.
    pub cluster_id: String,
    /// `myid`: this instance's name in the cluster (unique among its instances).
    pub myid: String,
    /// `clusterNodes`, as written (informative).
    pub cluster_nodes: Vec<String>,
}

/// A Java `.properties` file's `key=value` / `key: value` lines (comments `#`, `!` and blank
/// lines skipped, keys and values trimmed; no escapes or continuation lines, which Mycat's
/// files do not use).
pub fn parse_properties(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .filter_map(|l| {
            let (k, v) = l.split_once(['=', ':'])?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// Reads `dir/myid.properties`. `Ok(None)`: no file, or `loadZk` is not `true`.
///
/// Errors: the file cannot be read; with `loadZk=true`, `zkURL`, `clusterId` or `myid` is
/// missing or malformed (ids: 1 to 64 letters, digits, `_`, `-`, `.`) — each message names
/// the file and key.
pub fn load(dir: &Path) -> Result<Option<MyId>, MyIdError> {
    let path = dir.join(FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(MyIdError::Unreadable {
                path,
                message: e.to_string(),
            });
        }
    };
    from_properties(&parse_properties(&text)).map_err(|e| MyIdError::InFile {
        path,
        source: Box::new(e),
    })
}

/// [`load`] over parsed properties.
///
/// Errors: as [`load`], without the file name.
pub fn from_properties(p: &BTreeMap<String, String>) -> Result<Option<MyId>, MyIdError> {
    match p.get("loadZk").map(|v| v.to_ascii_lowercase()) {
        Some(v) if v == "true" => {}
        Some(v) if v == "false" || v.is_empty() => return Ok(None),
        None => return Ok(None),
        Some(v) => return Err(MyIdError::LoadZk(v)),
    }
    let get = |key: &str| -> Result<String, MyIdError> {
        p.get(key)
            .filter(|v| !v.is_empty())
            .cloned()
            .ok_or_else(|| MyIdError::Missing(key.to_string()))
    };
    let zk_url = get("zkURL")?;
    for hostport in zk_url.split(',') {
        let ok = hostport
            .rsplit_once(':')
            .is_some_and(|(h, port)| !h.trim().is_empty() && port.trim().parse::<u16>().is_ok());
        if !ok {
            return Err(MyIdError::ZkUrl {
                url: zk_url.clone(),
                entry: hostport.to_string(),
            });
        }
    }
    let id = |key: &str| -> Result<String, MyIdError> {
        let v = get(key)?;
        if v.len() > 64
            || !v
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        {
            return Err(MyIdError::BadId {
                key: key.to_string(),
                value: v,
            });
        }
        Ok(v)
    };
    Ok(Some(MyId {
        zk_url,
        cluster_id: id("clusterId")?,
        myid: id("myid")?,
        cluster_nodes: p
            .get("clusterNodes")
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mycat_files_and_names_what_is_wrong() {
        // Mycat's shipped file: cluster mode off.
        let shipped = "loadZk=false\nzkURL=127.0.0.1:2181\nclusterId=mycat-cluster-1\nmyid=mycat_fz_01\nclusterSize=3\nclusterNodes=mycat_fz_01,mycat_fz_02,mycat_fz_04\n#server  booster  ;   booster install on db same server,will reset all minCon to 2\ntype=server\nboosterDataHosts=dataHost1\n";
        assert_eq!(from_properties(&parse_properties(shipped)), Ok(None));
        let on = shipped.replace("loadZk=false", "loadZk=true");
        let m = from_properties(&parse_properties(&on)).unwrap().unwrap();
        assert_eq!(m.zk_url, "127.0.0.1:2181");
        assert_eq!(m.cluster_id, "mycat-cluster-1");
        assert_eq!(m.myid, "mycat_fz_01");
        assert_eq!(m.cluster_nodes.len(), 3);
        let no_id = on.replace("myid=mycat_fz_01\n", "");
        assert_eq!(
            from_properties(&parse_properties(&no_id)),
            Err(MyIdError::Missing("myid".to_string()))
        );
        let bad_url = on.replace("127.0.0.1:2181", "127.0.0.1:2181,zk2");
        assert!(
            from_properties(&parse_properties(&bad_url))
                .unwrap_err()
                .to_string()
                .contains("'zk2' is not host:port")
        );
        let slash = on.replace("clusterId=mycat-cluster-1", "clusterId=a/b");
        assert!(
            from_properties(&parse_properties(&slash))
                .unwrap_err()
                .to_string()
                .starts_with("clusterId 'a/b'")
        );
    }
}
