//! The differential check of the security boundary (issue 17 item 8, `tests/common/mirror.rs`):
//! a throwaway MariaDB server (started by this process under `target/h5-mariadb/`), one real
//! gateway per manx user whose backend account only holds the grants mirroring that user's
//! schemas, `readOnly` and `<privileges>`, and each input decoded into a case (user, sql_mode,
//! schema, COM_QUERY packets built from SQL fragments). A finding: the backend counted an
//! access-denied error or named the mirror account in an error (manx sent something the user
//! may not do), a gateway that dropped the session or did not answer within 20 s, or a panic.

#![no_main]

use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use tokio::runtime::Runtime;

// The test harness's modules, shared with `tests/mirror.rs` (`mariadb` takes the three
// helpers below from its parent, here the crate root).
#[allow(dead_code)]
#[path = "../../tests/common/mariadb.rs"]
mod mariadb;
#[allow(dead_code)]
#[path = "../../tests/common/mirror.rs"]
mod mirror;

fn repo() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn opts(port: u16, user: &str, password: &str, db: Option<&str>) -> mysql_async::Opts {
    mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some(user))
        .pass(Some(password))
        .db_name(db)
        .prefer_socket(false)
        .into()
}

use mariadb::Throwaway;
use mirror::{Case, World};

struct Harness {
    runtime: Runtime,
    world: Mutex<World>,
    _server: Throwaway,
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        std::panic::set_hook(Box::new(|info| {
            eprintln!("{info}");
            std::process::abort();
        }));
        let runtime = Runtime::new().unwrap();
        let (server, world) = runtime.block_on(async {
            let server = Throwaway::start("mirror-fuzz", 1).await;
            let dir = repo()
                .join("target/mirror-fuzz")
                .join(std::process::id().to_string());
            let world = World::start(server.port, &dir, &repo()).await;
            (server, world)
        });
        Harness {
            runtime,
            world: Mutex::new(world),
            _server: server,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(case) = Case::decode(data) else {
        return;
    };
    let h = harness();
    let mut world = h.world.lock().unwrap_or_else(|p| p.into_inner());
    if let Err(finding) = h.runtime.block_on(world.run(&case)) {
        panic!("FINDING: {finding}");
    }
});
