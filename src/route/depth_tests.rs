//! Deep statements: nested as deep as the parser admits ([`super::forms::RECURSION_LIMIT`]),
//! every statement shape routes on a stack no larger than a worker thread's (16 MiB, `main.rs`)
//! — parse, checks, routing, rewrites and the tree's drop — and one level deeper is refused
//! with 1436, never a crash.

use super::{Refusal, Router};

fn router() -> Router {
    crate::route::bundled_router()
}

/// `n` nestings of `open` .. `close` around `inner`.
fn nest(open: &str, inner: &str, close: &str, n: usize) -> String {
    format!("{}{inner}{}", open.repeat(n), close.repeat(n))
}

/// The statements of each shape, `n` deep.
fn shapes(n: usize) -> Vec<String> {
    vec![
        format!("SELECT {}", nest("(", "1", ")", n)),
        format!(
            "SELECT * FROM travelrecord WHERE id = {}",
            nest("(", "1", ")", n)
        ),
        format!(
            "UPDATE travelrecord SET days = {} WHERE id = 1",
            nest("IF(id <= 5, 1, ", "0", ")", n)
        ),
        format!(
            "SELECT * FROM travelrecord WHERE id = {}",
            nest("IF(1, ", "1", ", 0)", n)
        ),
        format!("SELECT {} FROM travelrecord", nest("ABS(", "id", ")", n)),
        format!("SELECT {}", nest("(SELECT ", "1", ")", n)),
        format!(
            "SELECT * FROM {}",
            nest("(SELECT * FROM ", "travelrecord", ") t", n)
        ),
        format!("SELECT {}", nest("NOT ", "1", "", n)),
        format!("SELECT {}", nest("- ", "1", "", n)),
        format!("SELECT {}", nest("CONCAT('a', ", "'b'", ")", n)),
        format!("SELECT 1 {}", nest("+ (1 ", "", ")", n)),
        format!(
            "INSERT INTO travelrecord (id, days) VALUES (1, {})",
            nest("(", "1", ")", n)
        ),
        format!(
            "SELECT * FROM company WHERE id IN {}",
            nest("(SELECT id FROM company WHERE id IN ", "(1)", ")", n)
        ),
    ]
}

/// Runs `f` on a thread with a worker thread's stack.
fn on_worker_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(16 * 1024 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

/// The deepest nesting of `shape` the parser admits (binary search between 1 and 4000).
fn deepest(shape: &dyn Fn(usize) -> String) -> usize {
    let parses = |n: usize| super::forms::parse(&shape(n)).is_ok();
    assert!(parses(1));
    let (mut lo, mut hi) = (1usize, 4000usize);
    assert!(!parses(hi));
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if parses(mid) { lo = mid } else { hi = mid }
    }
    lo
}

#[test]
fn statements_as_deep_as_the_limit_route_and_deeper_ones_are_refused() {
    on_worker_stack(|| {
        let r = router();
        for k in 0..shapes(1).len() {
            let shape = |n: usize| shapes(n).swap_remove(k);
            let limit = deepest(&shape);
            // MariaDB's own mysql-test nests 225 parentheses and ~600 IF calls.
            assert!(limit >= 600, "{}: only {limit} deep", shape(1));
            // At the limit: whatever the router answers, it answers (no overflow); deeper:
            // refused (1436; 1064 for the operator cap, or where sqlparser tries another
            // reading after the limit, as for `NOT NOT ..`).
            let _ = r.route(&shape(limit), Some("TESTDB"));
            let e = r.route(&shape(limit + 1), Some("TESTDB")).unwrap_err();
            assert!(
                matches!(e.refusal, Refusal::TooDeep | Refusal::Routing),
                "{}: {e:?}",
                shape(1)
            );
        }
        let e = r
            .route(
                &format!("SELECT {}", nest("(", "1", ")", 3000)),
                Some("TESTDB"),
            )
            .unwrap_err();
        assert_eq!(e.refusal, Refusal::TooDeep, "{e:?}");
        // The mysql-test statements route (execution_constants nests ~600 IF calls).
        let sql = format!("SELECT {}", nest("(", "1", ")", 225));
        assert!(r.route(&sql, Some("TESTDB")).is_ok());
        let sql = format!(
            "UPDATE travelrecord SET days = {} WHERE id = 1",
            nest("IF(id <= 5, 1, ", "0", ")", 600)
        );
        assert!(r.route(&sql, Some("TESTDB")).is_ok());
    });
}
