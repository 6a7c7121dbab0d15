//! The client libraries of other languages, installed by `scripts/clients.sh` (Debian packages,
//! a Python venv under `target/clients-venv`, npm packages under `target/clients-node`, a Java
//! class under `target/clients-java`), once per test process.

use std::collections::HashMap;
use std::process::Command;
use std::sync::OnceLock;

/// Paths printed by `scripts/clients.sh`.
pub struct Clients {
    pub python: String,
    pub node_dir: String,
    pub java_cp: String,
    pub sysbench: String,
    pub haproxy: String,
    pub prometheus: String,
    pub promtool: String,
    pub pt_query_digest: String,
}

/// Installs the clients (once per test process; the script is idempotent and takes a lock).
pub fn clients() -> &'static Clients {
    static CLIENTS: OnceLock<Clients> = OnceLock::new();
    CLIENTS.get_or_init(|| {
        let mut c = Command::new("bash");
        c.arg(super::repo().join("scripts/clients.sh"));
        let out = super::checked(c, "scripts/clients.sh");
        let vars: HashMap<String, String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let get = |k: &str| {
            vars.get(k)
                .unwrap_or_else(|| panic!("scripts/clients.sh did not print {k}"))
                .clone()
        };
        Clients {
            python: get("PYTHON"),
            node_dir: get("NODE_DIR"),
            java_cp: get("JAVA_CP"),
            sysbench: get("SYSBENCH"),
            haproxy: get("HAPROXY"),
            prometheus: get("PROMETHEUS"),
            promtool: get("PROMTOOL"),
            pt_query_digest: get("PT_QUERY_DIGEST"),
        }
    })
}

/// Runs a client program (bounded by `timeout`, so a hung client fails the test instead of
/// hanging it) and returns (exit success, stdout, stderr).
pub async fn run(
    program: &str,
    args: Vec<String>,
    env: Vec<(String, String)>,
) -> (bool, String, String) {
    let program = program.to_string();
    tokio::task::spawn_blocking(move || {
        let out = Command::new("timeout")
            .arg("180")
            .arg(&program)
            .args(&args)
            .envs(env)
            .output()
            .unwrap_or_else(|e| panic!("run {program}: {e}"));
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .unwrap()
}
