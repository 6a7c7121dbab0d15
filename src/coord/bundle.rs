//! The configuration files of a cluster as one znode's data (a "bundle"), and the proposals
//! that change it (module [`super`], issue 22 item 5).
//!
//! Znodes, under `/mycat/<clusterId>/manx`:
//! * `config` — the bundle in force cluster-wide; its first line is `#manx config version=<n>`
//!   (`n` is the sequence number of the proposal that made it, 0 for a first publication).
//!   An instance with `loadZk=true` writes these files into its configuration directory
//!   before it loads them (as Mycat writes ZooKeeper's configuration locally).
//! * `reload/p_<seq>` — a proposed bundle (`manx zk publish`); children `v_<myid>` hold each
//!   instance's vote (`ok`, or `error: <why>`), and `decision` the leader's (`commit`, or
//!   `abort: <why>`).
//!
//! Bundle text: per file `--- manx-file <name> <bytes>\n<bytes of content>\n`. ZooKeeper keeps
//! at most about 1 MiB per znode (`jute.maxbuffer`): larger bundles are refused.

use std::collections::BTreeMap;
use std::path::Path;

/// The most a bundle may weigh, in bytes (ZooKeeper's default `jute.maxbuffer` is 1 MiB, less
/// the request's own framing).
pub const MAX_BYTES: usize = 1_000_000;

/// Files of a configuration directory that are not configuration: kept per instance.
const LOCAL: [&str; 2] = ["dnindex.properties", "myid.properties"];

/// Whether `name` may be a file of a bundle: a plain file name (no `/`, `\\`, NUL, not `.` or
/// `..`, not hidden) ending in `.xml`, `.txt` or `.properties`, and not a per-instance file.
/// Anything else in a znode someone else wrote must never become a path.
pub fn allowed_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0'])
        && [".xml", ".txt", ".properties"]
            .iter()
            .any(|ext| name.ends_with(ext))
        && !LOCAL.contains(&name)
}

/// Why a bundle cannot be read, decoded or written.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// A directory or file cannot be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The files of `dir` weigh `size` bytes, more than a znode holds ([`MAX_BYTES`]).
    #[error("the configuration files of {} weigh {size} bytes; a ZooKeeper znode holds at most {MAX_BYTES}", dir.display())]
    TooBig {
        dir: std::path::PathBuf,
        size: usize,
    },
    /// A file name that is not [`allowed_name`].
    #[error(
        "file name {0:?} is not a configuration file name (a plain *.xml, *.txt or *.properties name, not dnindex.properties or myid.properties)"
    )]
    Name(String),
    /// The znode text is not a bundle: where it stops making sense.
    #[error("{0}")]
    Malformed(String),
}

fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> BundleError + '_ {
    move |source| BundleError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A set of configuration files: name → content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bundle {
    pub version: u64,
    pub files: BTreeMap<String, Vec<u8>>,
}

impl Bundle {
    /// The configuration files of `dir`: every regular `*.xml`, `*.txt` and `*.properties`
    /// file at its top level but `dnindex.properties` and `myid.properties` (per instance).
    ///
    /// Errors: the directory or a file cannot be read; the bundle exceeds [`MAX_BYTES`].
    pub fn read_dir(dir: &Path) -> Result<Bundle, BundleError> {
        let mut files = BTreeMap::new();
        let entries = std::fs::read_dir(dir).map_err(io_at(dir))?;
        for entry in entries {
            let entry = entry.map_err(io_at(dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !allowed_name(&name) || !entry.file_type().map(|t| t.is_file()).unwrap_or(false) {
                continue;
            }
            let path = entry.path();
            let content = std::fs::read(&path).map_err(io_at(&path))?;
            files.insert(name, content);
        }
        let bundle = Bundle { version: 0, files };
        let size = bundle.encode().len();
        if size > MAX_BYTES {
            return Err(BundleError::TooBig {
                dir: dir.to_path_buf(),
                size,
            });
        }
        Ok(bundle)
    }

    /// Writes every file into `dir`, each to a temporary file then renamed over the old one
    /// (a crash leaves old or new files, never torn ones). Files of `dir` the bundle lacks are
    /// left alone.
    ///
    /// Errors: a file name is not [`allowed_name`] (nothing is written), or a file cannot be
    /// written.
    pub fn write_dir(&self, dir: &Path) -> Result<(), BundleError> {
        if let Some(bad) = self.files.keys().find(|n| !allowed_name(n)) {
            return Err(BundleError::Name(bad.clone()));
        }
        for (name, content) in &self.files {
            let tmp = dir.join(format!(".{name}.zk-tmp"));
            let path = dir.join(name);
            std::fs::write(&tmp, content)
                .and_then(|()| std::fs::rename(&tmp, &path))
                .map_err(io_at(&path))?;
        }
        Ok(())
    }

    /// The znode text (module documentation).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = format!("#manx config version={}\n", self.version).into_bytes();
        for (name, content) in &self.files {
            out.extend_from_slice(format!("--- manx-file {name} {}\n", content.len()).as_bytes());
            out.extend_from_slice(content);
            out.push(b'\n');
        }
        out
    }

    /// Reads [`Bundle::encode`]'s text.
    ///
    /// Errors: the text is not a bundle (where it stops making sense), or names a file that
    /// is not [`allowed_name`] (a path, a per-instance file): the whole bundle is refused.
    pub fn decode(data: &[u8]) -> Result<Bundle, BundleError> {
        let malformed = |m: String| BundleError::Malformed(m);
        let mut rest = data;
        let line = |rest: &mut &[u8]| -> Option<String> {
            let end = rest.iter().position(|b| *b == b'\n')?;
            let l = String::from_utf8_lossy(&rest[..end]).into_owned();
            *rest = &rest[end + 1..];
            Some(l)
        };
        let head = line(&mut rest).ok_or_else(|| malformed("empty configuration znode".into()))?;
        let version = head
            .strip_prefix("#manx config version=")
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| malformed(format!("not a manx configuration bundle: '{head}'")))?;
        let mut files = BTreeMap::new();
        while !rest.is_empty() {
            let header = line(&mut rest)
                .ok_or_else(|| malformed("a file header without its end of line".into()))?;
            let mut words = header
                .strip_prefix("--- manx-file ")
                .map(|h| h.rsplitn(2, ' '));
            let (len, name) = match words.as_mut() {
                Some(w) => (w.next(), w.next()),
                None => (None, None),
            };
            let (Some(len), Some(name)) = (len.and_then(|l| l.parse::<usize>().ok()), name) else {
                return Err(malformed(format!("bad file header '{header}'")));
            };
            if !allowed_name(name) {
                return Err(BundleError::Name(name.to_string()));
            }
            if rest.len() < len + 1 || rest[len] != b'\n' {
                return Err(malformed(format!("file {name} is cut short")));
            }
            files.insert(name.to_string(), rest[..len].to_vec());
            rest = &rest[len + 1..];
        }
        Ok(Bundle { version, files })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_round_trip_through_text_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("schema.xml"),
            "<schema>\n--- manx-file x 3\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("partition-hash-int.txt"), "10000=0\n").unwrap();
        std::fs::write(dir.path().join("dnindex.properties"), "dh=1\n").unwrap();
        std::fs::write(dir.path().join("manx.log"), "not config").unwrap();
        let mut b = Bundle::read_dir(dir.path()).unwrap();
        assert_eq!(
            b.files.keys().collect::<Vec<_>>(),
            ["partition-hash-int.txt", "schema.xml"]
        );
        b.version = 42;
        assert_eq!(Bundle::decode(&b.encode()).unwrap(), b);
        let out = tempfile::tempdir().unwrap();
        b.write_dir(out.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(out.path().join("schema.xml")).unwrap(),
            "<schema>\n--- manx-file x 3\n"
        );
        assert!(Bundle::decode(b"junk").is_err());
        // Names someone else wrote never become paths or per-instance files.
        for bad in [
            "./../escaped.txt",
            "../x.xml",
            "/etc/passwd.txt",
            "a/b.xml",
            "myid.properties",
            "dnindex.properties",
            ".hidden.xml",
            "run.sh",
        ] {
            let text = format!("#manx config version=1\n--- manx-file {bad} 1\nx\n");
            assert!(Bundle::decode(text.as_bytes()).is_err(), "{bad}");
        }
        let mut cut = b.encode();
        cut.truncate(cut.len() - 3);
        assert!(Bundle::decode(&cut).is_err());
    }
}
