//! The statement analyser: any text routed for schema TESTDB of the bundled config must give a
//! `Routed` or a `RouteError`, never a panic, and the per-session plan cache must give exactly
//! the answer of a plain `route` (one cache lives across inputs, so statements of the same
//! shape but different meaning meet in it).

#![no_main]

use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use manx::config::Config;
use manx::route::{Local, Plan, PlanCache, Routed, Router};

fn router() -> &'static Router {
    static ROUTER: OnceLock<Router> = OnceLock::new();
    ROUTER.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let config = Config::load(&dir).expect("the bundled config loads");
        Router::new(&config).expect("the bundled config routes")
    })
}

fn cache() -> &'static Mutex<PlanCache> {
    static CACHE: OnceLock<Mutex<PlanCache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(PlanCache::default()))
}

/// A read any dataNode can answer goes to a node picked at random, the others kept as its
/// fallbacks: compare such plans by their set of nodes.
fn normalize(mut plan: Plan) -> Plan {
    if !plan.fallback.is_empty() {
        plan.targets.append(&mut plan.fallback);
        plan.targets.sort_by(|a, b| a.node.cmp(&b.node));
    }
    plan
}

fn comparable(r: Routed) -> Routed {
    match r {
        Routed::Plan(p) => Routed::Plan(normalize(p)),
        Routed::Local(Local::Explain(p)) => Routed::Local(Local::Explain(normalize(p))),
        other => other,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(sql) = std::str::from_utf8(data) else {
        return;
    };
    let router = router();
    let plain = router.route(sql, Some("TESTDB")).map(comparable);
    let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
    for _ in 0..2 {
        let cached = router
            .route_cached(sql, Some("TESTDB"), &mut cache)
            .map(comparable);
        assert_eq!(
            plain, cached,
            "the plan cache changed the answer for {sql:?}"
        );
    }
});
