//! Every golden vector under `shared/mycat-compat/routing-vectors/` (computed by Mycat's own
//! classes): each configuration builds and reproduces every `calculate` and `calculateRange`
//! result, `getPartitionNum` and every exception class exactly.

use std::collections::BTreeMap;
use std::path::PathBuf;

use manx::config::MycatVersion;
use manx::route::function::{BuildContext, RangePartitions, TableContext, build};
use serde_json::Value;

fn vectors_dir() -> PathBuf {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/mycat-compat/routing-vectors");
    assert!(
        dir.is_dir(),
        "routing vectors not found at {}",
        dir.display()
    );
    dir
}

/// A configuration's properties as Mycat's ConfigUtil passes them: trimmed with Java's
/// String.trim (characters up to U+0020), empty ones left out.
fn properties(cfg: &Value) -> BTreeMap<String, String> {
    cfg["properties"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            let v = v.as_str().unwrap().trim_matches(|c: char| c <= '\u{20}');
            (k.clone(), v.to_string())
        })
        .filter(|(_, v)| !v.is_empty())
        .collect()
}

/// The content of a map file the configuration ships.
fn map_file(cfg: &Value, name: &str) -> Result<String, String> {
    cfg["map_files"]
        .get(name)
        .and_then(|f| f["content"].as_str())
        .map(String::from)
        .ok_or_else(|| format!("map file {name} not found"))
}

fn check_expected(
    id: &str,
    what: &str,
    got: Result<Value, (String, String)>,
    expected: &Value,
) -> Option<String> {
    let ok = match (&got, expected) {
        (Err((class, _)), Value::Object(e)) => {
            e.get("error").and_then(Value::as_str) == Some(class)
        }
        (Ok(v), e) => v == e,
        _ => false,
    };
    (!ok).then(|| format!("{id}: {what}: expected {expected}, got {got:?}"))
}

#[test]
fn golden_routing_vectors() {
    let dir = vectors_dir();
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).unwrap()).unwrap();
    let mut failures = Vec::new();
    let (mut implemented, mut checked) = (0, 0);
    for entry in index["configs"].as_array().unwrap() {
        let file = entry["file"].as_str().unwrap();
        let cfg: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap();
        let id = cfg["id"].as_str().unwrap().to_string();
        let class = cfg["function_class"].as_str().unwrap();
        let props = properties(&cfg);
        let read = |name: &str| map_file(&cfg, name);
        let version = if id.ends_with("-branch1.6") {
            MycatVersion::V1_6_7_5
        } else {
            MycatVersion::V1_6_7_6
        };
        let env = &cfg["environment"];
        let table = cfg.get("table").filter(|t| !t.is_null());
        let ctx = BuildContext {
            version,
            read_map_file: &read,
            time_zone: env["timezone"].as_str(),
            now_ms: env["now_epoch_ms"].as_i64(),
            table: table.map(|t| TableContext {
                data_node_count: t["data_node_count"].as_u64().unwrap() as usize,
                rule_data: t["ruledata_file"].as_str(),
            }),
        };
        let f = match build(class, &props, &ctx) {
            Ok(f) => f,
            Err(e) => panic!("{id}: {class} does not build: {e}"),
        };
        implemented += 1;
        let partition_num = cfg["partition_num"].as_i64().unwrap();
        let got_num = f.partition_num().map_or(-1, |n| n as i64);
        if got_num != partition_num {
            failures.push(format!(
                "{id}: partition_num expected {partition_num}, got {got_num}"
            ));
        }
        for v in cfg["vectors"].as_array().unwrap() {
            let input = v["input"].as_str().unwrap();
            let got = f
                .calculate(input)
                .map(|p| p.map_or(Value::Null, Value::from))
                .map_err(|e| (e.exception.class_name().to_string(), e.message));
            checked += 1;
            failures.extend(check_expected(
                &id,
                &format!("calculate({input:?})"),
                got,
                &v["expected"],
            ));
        }
        for v in cfg["range_vectors"].as_array().unwrap() {
            let (b, e) = (v["begin"].as_str().unwrap(), v["end"].as_str().unwrap());
            let got = f
                .calculate_range(b, e)
                .map(|r| match r {
                    RangePartitions::All => Value::Array(vec![]),
                    RangePartitions::None => Value::Null,
                    RangePartitions::Some(p) => p.into_iter().map(Value::from).collect(),
                })
                .map_err(|e| (e.exception.class_name().to_string(), e.message));
            checked += 1;
            let what = format!("calculateRange({b:?}, {e:?})");
            failures.extend(check_expected(&id, &what, got, &v["expected"]));
        }
    }
    eprintln!("{implemented} configurations checked ({checked} vectors)");
    let listed = index["configs"].as_array().unwrap().len();
    assert_eq!(implemented, listed, "every listed configuration is checked");
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// `config-errors.json`: configurations whose setup fails in Mycat (a setter or `init()`
/// throws) must be refused by manx too, with a message, never built.
#[test]
fn configurations_mycat_refuses_are_refused() {
    let dir = vectors_dir();
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("config-errors.json")).unwrap())
            .unwrap();
    let mut checked = 0;
    for cfg in doc["configs"].as_array().unwrap() {
        let id = cfg["id"].as_str().unwrap();
        let class = cfg["function_class"].as_str().unwrap();
        let props = properties(cfg);
        let read = |name: &str| map_file(cfg, name);
        let table = cfg.get("table").filter(|t| !t.is_null());
        let ctx = BuildContext {
            version: MycatVersion::V1_6_7_6,
            read_map_file: &read,
            time_zone: Some("UTC"),
            now_ms: Some(1_718_452_800_000),
            table: table.map(|t| TableContext {
                data_node_count: t["data_node_count"].as_u64().unwrap() as usize,
                rule_data: t["ruledata_file"].as_str(),
            }),
        };
        match build(class, &props, &ctx) {
            Ok(f) => panic!("{id}: Mycat refuses this configuration, manx built {f:?}"),
            Err(e) => {
                assert!(!e.to_string().is_empty(), "{id}");
                checked += 1;
            }
        }
    }
    assert!(checked > 0);
}
