//! The one-way module rule of `shared/DESIGN.md`: a lower module never names a higher one.

use std::path::Path;

const MODULES: &[&str] = &[
    "config", "backend", "coord", "route", "datahost", "sequence", "xa", "engine", "stats",
    "frontend",
];

/// What each module may use from the crate.
fn allowed(module: &str) -> &'static [&'static str] {
    match module {
        "config" | "backend" => &[],
        // ZooKeeper coordination sits below datahost (shared/DESIGN.md).
        "coord" => &["config"],
        "route" => &["config"],
        "datahost" => &["config", "backend", "coord"],
        "sequence" => &["config", "backend", "datahost"],
        "xa" => &["config", "backend", "datahost"],
        "engine" => &["route", "backend"],
        "stats" => &[],
        "frontend" => &[
            "config", "backend", "coord", "route", "datahost", "sequence", "xa", "engine", "stats",
        ],
        _ => unreachable!(),
    }
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn lower_modules_never_import_higher_ones() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut violations = Vec::new();
    for module in MODULES {
        let mut files = Vec::new();
        rust_files(&src.join(module), &mut files);
        assert!(!files.is_empty(), "src/{module} has no files");
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for (n, line) in text.lines().enumerate() {
                for other in MODULES.iter().filter(|o| *o != module) {
                    if line.contains(&format!("crate::{other}")) && !allowed(module).contains(other)
                    {
                        violations.push(format!(
                            "{}:{}: {module} uses {other}: {}",
                            f.display(),
                            n + 1,
                            line.trim()
                        ));
                    }
                }
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// External crates stay where they belong (issue 23): the MySQL wire library only in the front
/// end; the SQL parser only in `route` and in the PostgreSQL translation
/// (`backend/postgres/dialect`, which reads MySQL to print PostgreSQL); no async runtime in the
/// pure layers (`route`, `config`, `stats`), which therefore never wait on I/O.
#[test]
fn external_crates_stay_in_their_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    type Allowed = dyn Fn(&str) -> bool;
    let rules: &[(&str, &Allowed)] = &[
        ("opensrv_mysql", &|rel: &str| rel.starts_with("frontend/")),
        ("sqlparser", &|rel: &str| {
            rel.starts_with("route/")
                || rel.starts_with("backend/postgres/dialect/")
                || rel == "pgcatalog.rs"
        }),
        ("tokio", &|rel: &str| {
            !(rel.starts_with("route/") || rel.starts_with("config/") || rel.starts_with("stats/"))
        }),
    ];
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for (krate, allowed) in rules {
                let named =
                    code.contains(&format!("{krate}::")) || code.contains(&format!("use {krate}"));
                if named && !allowed(&rel) {
                    violations.push(format!("src/{rel}:{}: {krate}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// The wire layer (`src/frontend/wire/`, issue 23) knows packets, not statements: none of its
/// code names the router — as a `crate::route` path, inside a `use crate::{...}` group, or as
/// `super::super::super::route` (the crate root seen from a file of the layer). The step that
/// needs the router's lexer (cutting a multi-statement text) is handed in by the session. The
/// layer's unit tests, at the end of a file after `#[cfg(test)]`, may drive the reader with the
/// router's real splitter, as the session does.
#[test]
fn the_wire_layer_never_names_the_router() {
    let wire = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/frontend/wire");
    let mut files = Vec::new();
    rust_files(&wire, &mut files);
    assert!(!files.is_empty(), "src/frontend/wire has no files");
    let mut violations = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let mut in_crate_group = false;
        for (n, line) in text.lines().enumerate() {
            if line.starts_with("#[cfg(test)]") {
                break;
            }
            let code = line.split("//").next().unwrap_or("");
            if code.contains("use crate::{") {
                in_crate_group = true;
            }
            let names_route = code.contains("crate::route")
                || code.contains("super::super::super::route")
                || (in_crate_group
                    && code
                        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .any(|word| word == "route"));
            if names_route {
                violations.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
            if in_crate_group && code.contains("};") {
                in_crate_group = false;
            }
        }
    }
    assert!(
        violations.is_empty(),
        "the wire layer names the router:\n{}",
        violations.join("\n")
    );
}

/// The datahost layer (issue 23: transaction pinning lives there, `src/datahost/held.rs`) knows
/// dataNodes, servers and connections, not statements nor clients: none of its code names the
/// router or the front end — as a `crate::route` / `crate::frontend` path, inside a `use
/// crate::{...}` group, or through `super::` paths to the crate root. What it needs of them
/// (the session's settings as statements, the table locks as names) is handed in by the
/// session.
#[test]
fn datahost_names_neither_the_router_nor_the_front_end() {
    let datahost = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/datahost");
    let mut files = Vec::new();
    rust_files(&datahost, &mut files);
    assert!(!files.is_empty(), "src/datahost has no files");
    let mut violations = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let mut in_crate_group = false;
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("use crate::{") {
                in_crate_group = true;
            }
            for higher in ["route", "frontend"] {
                let names = code.contains(&format!("crate::{higher}"))
                    || code.contains(&format!("super::super::{higher}"))
                    || code.contains(&format!("super::{higher}::"))
                    || (in_crate_group
                        && code
                            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                            .any(|word| word == higher));
                if names {
                    violations.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                }
            }
            if in_crate_group && code.contains("};") {
                in_crate_group = false;
            }
        }
    }
    assert!(
        violations.is_empty(),
        "datahost names a higher layer:\n{}",
        violations.join("\n")
    );
}
