//! The differential check of the security boundary (issue 17 item 8; the harness and its rules
//! are in `tests/common/mirror.rs`): every seed case and a fixed random sample of generated
//! cases run through real gateways whose backend accounts only hold the grants mirroring each
//! manx user; the backend must never deny one of them anything. The `mirror` fuzz target
//! (`fuzz/`, README "Fuzzing") searches the same space guided by coverage.

mod common;

use common::mariadb::Throwaway;
use common::mirror::{Case, Rng, USERS, World, seeds};

/// Generated cases per run, after the seeds (a few milliseconds each).
const SAMPLE: usize = 10000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backend_allows_whatever_manx_sends_for_a_user() {
    let server = Throwaway::start("mirror", 1).await;
    let dir = common::repo()
        .join("target/mirror-test")
        .join(std::process::id().to_string());
    let mut world = World::start(server.port, &dir, &common::repo()).await;

    // The judge can fail: user app logged in to the gateway of user ro, whose mirror account
    // may only read. manx lets app write; the backend must count the denial.
    let probe = Case::decode(&Case::encode(
        0,
        0,
        0,
        &["INSERT INTO orders (id, v, order_id) VALUES (7, 'p', 1)"],
    ))
    .unwrap();
    let ro = USERS.iter().position(|u| *u == "ro").unwrap();
    let verdict = world.run_on(&probe, ro).await;
    assert!(
        verdict.as_ref().is_err_and(|e| e.contains("access-denied")
            || e.contains("refused the mirror account")),
        "a write through a read-only mirror account went unnoticed: {verdict:?}"
    );

    let mut findings = Vec::new();
    let (mut ok, mut refused) = (0, 0);
    let mut rng = Rng(0x6d69_7272_6f72);
    let cases = seeds()
        .into_iter()
        .chain(std::iter::repeat_with(|| rng.case()).take(SAMPLE));
    for (i, bytes) in cases.enumerate() {
        let Some(case) = Case::decode(&bytes) else {
            continue;
        };
        match world.run(&case).await {
            Ok(o) => {
                ok += o.ok;
                refused += o.refused;
            }
            Err(f) => findings.push(format!("case {i}: {f}")),
        }
    }
    eprintln!(
        "mirror: {ok} packets answered, {refused} refused, {} findings",
        findings.len()
    );
    assert!(findings.is_empty(), "findings:\n{}", findings.join("\n"));
    // Not vacuous: the seeds alone have dozens of statements each user may run.
    assert!(
        ok >= 100,
        "only {ok} packets were answered without an error"
    );
}

/// The fuzz target's seed corpus (`fuzz/seeds/mirror/`) is exactly the harness's seeds, so a
/// fuzzing run starts from every class of issue 17. `MANX_WRITE_SEEDS=1` rewrites it.
#[test]
fn the_fuzz_seed_corpus_is_the_harness_seeds() {
    let dir = common::repo().join("fuzz/seeds/mirror");
    let expected: Vec<(String, Vec<u8>)> = seeds()
        .into_iter()
        .enumerate()
        .map(|(i, b)| (format!("seed-{i:03}"), b))
        .collect();
    if std::env::var_os("MANX_WRITE_SEEDS").is_some() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in &expected {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    let mut found: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (MANX_WRITE_SEEDS=1 writes it)", dir.display()))
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    found.sort();
    assert!(
        found == expected,
        "fuzz/seeds/mirror is not the harness's seeds: run MANX_WRITE_SEEDS=1 cargo test --test mirror the_fuzz_seed_corpus"
    );
}
