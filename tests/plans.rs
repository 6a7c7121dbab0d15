//! Golden plan files: SQL in, the router's full answer out — the statement each dataNode gets,
//! and the merge the engine then runs (order, grouping, limit), in the tree `EXPLAIN
//! FORMAT=TREE` prints (`manx::route::explain`) — checked without a database.
//!
//! Each file under `tests/plans/` holds cases: a line `> SQL` (the statement, routed in the
//! schema the file's first line `schema: NAME` names, on the bundled configuration), then the
//! rendered answer, then a blank line. A line `columns: TABLE a, b, c` gives the router the
//! column order a session would have read from the nodes for an INSERT without a column list
//! (without it, such an INSERT gets Mycat's error). A change of routing shows as a diff of these files;
//! after checking it, `MANX_BLESS=1 cargo test --test plans` writes the new answers.

use std::path::{Path, PathBuf};

use manx::config::Config;
use manx::route::{ColumnOrders, Local, Routed, Router, SessionView};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The router's answer as the golden files spell it.
fn render(routed: Result<Routed, manx::route::RouteError>) -> String {
    match routed {
        Err(e) => {
            let (code, state) = manx::frontend::refusal_code(e.refusal);
            format!("error {code} {state}: {}", e.message)
        }
        Ok(Routed::Plan(p)) => {
            let mut out = format!(
                "plan read_only={} ok_merge={:?} ddl={} host={:?}",
                p.read_only, p.ok_merge, p.ddl, p.host
            );
            // The statements and the merge steps as `EXPLAIN FORMAT=TREE` prints them.
            for line in manx::route::explain::lines(&p) {
                out.push_str(&format!("\n  {line}"));
            }
            out
        }
        Ok(Routed::Local(Local::Explain(p))) => format!(
            "explain: the route as rows (DATA_NODE, SQL)\n  {}",
            manx::route::explain::lines(&p).join("\n  ")
        ),
        Ok(Routed::Local(Local::ExplainTree(p))) => format!(
            "explain format=tree: one cell\n  {}",
            manx::route::explain::lines(&p).join("\n  ")
        ),
        Ok(other) => format!("{other:?}"),
    }
}

/// Routes every case of `file` and returns the file as it should read.
fn answer(router: &Router, file: &Path) -> (String, String) {
    let text = std::fs::read_to_string(file).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let schema = header
        .strip_prefix("schema: ")
        .unwrap_or_else(|| panic!("{}: first line must be `schema: NAME`", file.display()));
    let mut out = format!("{header}\n");
    let orders = ColumnOrders::default();
    for line in lines {
        if let Some(sql) = line.strip_prefix("> ") {
            let view = SessionView {
                schema: Some(schema),
                columns: Some(&orders),
                ..SessionView::default()
            };
            out.push_str(&format!(
                "\n{line}\n{}\n",
                render(router.route_for(sql, &view, None))
            ));
        } else if let Some(spec) = line.strip_prefix("columns: ") {
            let (table, list) = spec.split_once(' ').unwrap_or((spec, ""));
            let columns: Vec<String> = list.split(',').map(|c| c.trim().to_string()).collect();
            orders.insert(schema, table, columns.into(), orders.epoch());
            out.push_str(&format!("\n{line}"));
        } else if line.starts_with('#') {
            out.push_str(&format!("\n{line}"));
        }
    }
    (text, out)
}

#[test]
fn plans_match_the_golden_files() {
    let config = Config::load(&repo()).unwrap();
    let router = Router::new(&config).unwrap();
    let bless = std::env::var_os("MANX_BLESS").is_some();
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/plans"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no golden plan files");
    let mut stale = Vec::new();
    for file in files {
        let (was, now) = answer(&router, &file);
        if was != now {
            if bless {
                std::fs::write(&file, now).unwrap();
            } else {
                stale.push(format!(
                    "{}:\n--- expected\n{was}\n--- got\n{now}",
                    file.display()
                ));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "plans changed (check, then MANX_BLESS=1 cargo test --test plans):\n{}",
        stale.join("\n")
    );
}
