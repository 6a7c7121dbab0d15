//! `dnindex.properties`: which writeHost of each dataHost is active (Mycat §4.2). The only
//! persisted failover state: read at start-up, rewritten atomically whenever an index changes.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// File name in the configuration directory.
pub const FILE: &str = "dnindex.properties";

/// Reads `dir/dnindex.properties`: dataHost name → active writeHost index. A missing file means
/// every index is 0. Lines that are comments (`#`, `!`), blank, or not `name=number` are skipped,
/// as Java's `Properties` would not give them a numeric value either.
///
/// Errors: the file exists but cannot be read.
pub fn load(dir: &Path) -> std::io::Result<BTreeMap<String, usize>> {
    let text = match std::fs::read_to_string(dir.join(FILE)) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e),
    };
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .filter_map(|l| {
            let (k, v) = l.split_once(['=', ':'])?;
            Some((k.trim().to_string(), v.trim().parse().ok()?))
        })
        .collect())
}

/// Writes the indexes in Mycat's format (`#update`, a timestamp comment, `name=index` lines):
/// to a temporary file, fsync, then rename over the old one, so a crash leaves either the old
/// or the new file, never a torn one.
///
/// Errors: the directory is not writable, or the disk fails.
pub fn save(dir: &Path, indexes: &BTreeMap<String, usize>) -> std::io::Result<()> {
    let mut body = String::from("#update\n");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    body.push_str(&format!("#written by manx at unix time {now}\n"));
    for (name, index) in indexes {
        body.push_str(&format!("{name}={index}\n"));
    }
    let tmp = dir.join(format!(".{FILE}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(body.as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join(FILE))?;
    // Make the rename itself durable.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_mycat_format() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_empty());
        let mut m = BTreeMap::new();
        m.insert("localhost1".to_string(), 1);
        m.insert("h2".to_string(), 0);
        save(dir.path(), &m).unwrap();
        assert_eq!(load(dir.path()).unwrap(), m);
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        assert!(text.starts_with("#update\n#"));
        assert!(text.contains("\nlocalhost1=1\n"));
        // Mycat's own file: a date comment, then the entries.
        std::fs::write(
            dir.path().join(FILE),
            "#update\n#Tue Mar 10 10:00:00 CST 2020\nlocalhost1=2\nbad=x\n",
        )
        .unwrap();
        assert_eq!(
            load(dir.path()).unwrap(),
            BTreeMap::from([("localhost1".to_string(), 2)])
        );
    }
}
