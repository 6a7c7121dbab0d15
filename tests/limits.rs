//! The gateway's limits (issue 17, part 6), each against the sandbox MariaDB through real
//! clients: the login timeout (`authTimeout`), the cap on client connections
//! (`maxConnections`) and Mycat's per-user `benchmark`, the statement timeout towards
//! backends (`sqlExecuteTimeout`), and the firewall's whitehost list. (`COM_STMT_SEND_LONG_DATA`
//! bounded by `maxPacketSize`: `tests/long_data.rs`, a process of its own for its RSS figure.)

mod common;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::raw::{self, read_packet};
use common::{Extra, Fixture};
use mysql_async::prelude::Queryable;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Reads from `s` until the peer closes it; the time that took, or `None` when it was still
/// open after `within`.
async fn closed_within(s: &mut TcpStream, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    let read_all = async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(within, read_all)
        .await
        .ok()
        .map(|()| started.elapsed())
}

#[tokio::test]
async fn clients_that_do_not_log_in_within_auth_timeout_are_closed() {
    let f = Fixture::start("lim_auth", Extra::system(&[("authTimeout", "1500")])).await;
    let started = Instant::now();
    // 60 sockets that send nothing and 60 that send half a login packet (a header announcing
    // 100 bytes, then 10 of them).
    let mut idle = Vec::new();
    for i in 0..120 {
        let mut s = TcpStream::connect(("127.0.0.1", f.port)).await.unwrap();
        if i % 2 == 1 {
            s.write_all(&[100, 0, 0, 1]).await.unwrap();
            s.write_all(&[0; 10]).await.unwrap();
        }
        idle.push(s);
    }
    // A client that logs in meanwhile is served, before and after the others' deadline.
    let mut c = f.client().await;
    let one: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    for (i, s) in idle.iter_mut().enumerate() {
        let waited = closed_within(s, Duration::from_secs(10))
            .await
            .unwrap_or_else(|| panic!("socket {i} still open 10 s later"));
        let total = started.elapsed();
        assert!(
            total >= Duration::from_millis(1400),
            "socket {i} closed after {total:?}, before authTimeout ({waited:?} of waiting)"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "all closed within authTimeout and some slack: {:?}",
        started.elapsed()
    );
    let two: Option<i64> = c.query_first("SELECT 2").await.unwrap();
    assert_eq!(two, Some(2), "a logged-in session outlives authTimeout");
    let mut d = f.client().await;
    let three: Option<i64> = d.query_first("SELECT 3").await.unwrap();
    assert_eq!(three, Some(3), "new clients are still served");
}

/// Connects as `user`/`password` to TESTDB, retrying while the gateway answers `code` (a slot
/// being given back after a disconnect is seen a moment later), for at most 5 s.
async fn connect_when_free(port: u16, user: &str, password: &str, code: u16) -> mysql_async::Conn {
    let started = Instant::now();
    loop {
        match mysql_async::Conn::new(common::opts(port, user, password, Some("TESTDB"))).await {
            Ok(c) => return c,
            Err(mysql_async::Error::Server(e))
                if e.code == code && started.elapsed() < Duration::from_secs(5) =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => panic!("no connection after a slot was freed: {e}"),
        }
    }
}

#[tokio::test]
async fn connections_past_max_connections_get_1040_until_one_leaves() {
    let f = Fixture::start("lim_max", Extra::system(&[("maxConnections", "3")])).await;
    let a = f.client().await;
    let mut b = f.client().await;
    // A socket that has not logged in holds a place too.
    let mut half_open = TcpStream::connect(("127.0.0.1", f.port)).await.unwrap();
    let _greeting = read_packet(&mut half_open).await;
    let e = mysql_async::Conn::new(common::opts(f.port, "root", "123456", Some("TESTDB")))
        .await
        .unwrap_err();
    let (code, _, message) = common::server_error(e);
    assert_eq!(code, 1040, "{message}");
    assert_eq!(message, "Too many connections");
    // The raw answer: an ERR packet in place of the greeting, then the close.
    let mut refused = TcpStream::connect(("127.0.0.1", f.port)).await.unwrap();
    let (seq, p) = read_packet(&mut refused).await;
    assert_eq!(seq, 0);
    assert_eq!(
        raw::err_packet(&p),
        (1040, String::new(), "Too many connections".to_string())
    );
    assert!(
        closed_within(&mut refused, Duration::from_secs(3))
            .await
            .is_some()
    );
    // The ones in are served; when one leaves, its place is taken again.
    let one: Option<i64> = b.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    a.disconnect().await.unwrap();
    let mut c = connect_when_free(f.port, "root", "123456", 1040).await;
    let two: Option<i64> = c.query_first("SELECT 2").await.unwrap();
    assert_eq!(two, Some(2));
    drop(half_open);
    let _d = connect_when_free(f.port, "root", "123456", 1040).await;
}

#[tokio::test]
async fn a_user_s_benchmark_refuses_its_logins_while_the_gateway_holds_more_connections() {
    let f = Fixture::start(
        "lim_bench",
        Extra {
            users_xml: r#"<user name="bench"><property name="password">bench</property><property name="schemas">TESTDB</property><property name="benchmark">3</property></user>"#.to_string(),
            ..Extra::default()
        },
    )
    .await;
    let root1 = f.client().await;
    let _root2 = f.client().await;
    // Three connections with this one: within the benchmark.
    let mut bench = mysql_async::Conn::new(common::opts(f.port, "bench", "bench", Some("TESTDB")))
        .await
        .unwrap();
    let one: Option<i64> = bench.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    let e = mysql_async::Conn::new(common::opts(f.port, "bench", "bench", Some("TESTDB")))
        .await
        .unwrap_err();
    let (code, state, message) = common::server_error(e);
    assert_eq!((code, state.as_str()), (1045, "28000"), "{message}");
    assert!(
        message.starts_with("Access denied for user 'bench', because service be degraded"),
        "{message}"
    );
    // A wrong password still gets the password's answer, not the benchmark's.
    let e = mysql_async::Conn::new(common::opts(f.port, "bench", "wrong", Some("TESTDB")))
        .await
        .unwrap_err();
    let (_, _, message) = common::server_error(e);
    assert!(!message.contains("degraded"), "{message}");
    // Users without a benchmark are not limited by it.
    let _root3 = f.client().await;
    drop(_root3);
    root1.disconnect().await.unwrap();
    let mut again = connect_when_free(f.port, "bench", "bench", 1045).await;
    let two: Option<i64> = again.query_first("SELECT 2").await.unwrap();
    assert_eq!(two, Some(2));
}

/// A raw login as `user` from the loopback address `from`: Ok, or the ERR packet's fields.
async fn login_from(
    port: u16,
    from: [u8; 4],
    user: &str,
    password: &str,
) -> Result<TcpStream, (u16, String, String)> {
    let mut s = raw::connect_from(IpAddr::from(from), port).await;
    raw::login(&mut s, user, password, "TESTDB")
        .await
        .map(|()| s)
}

#[tokio::test]
async fn whitehost_masks_match_whole_addresses_and_honour_their_user_lists() {
    // `127.0.0.*` admits root only; `27.0.0.*` and `0.0.1` would match 127.0.0.1 if searched
    // anywhere in it (as Mycat does); `127.0.0.3` admits `user` from that address only.
    let f = Fixture::start(
        "lim_fw",
        Extra {
            users_xml: r#"<firewall><whitehost>
                    <host host="127.0.0.*" user="root"/>
                    <host host="27.0.0.*,0.0.1" user="user"/>
                    <host host="127.0.0.3" user="user"/>
                </whitehost></firewall>"#
                .to_string(),
            ..Extra::default()
        },
    )
    .await;
    for from in [[127, 0, 0, 1], [127, 0, 0, 2], [127, 0, 0, 3]] {
        login_from(f.port, from, "root", "123456")
            .await
            .unwrap_or_else(|e| panic!("root from {from:?}: {e:?}"));
    }
    let refused = |from: [u8; 4]| {
        let ip = Ipv4Addr::from(from);
        (
            1045,
            "28000".to_string(),
            format!("Access denied for user 'user' with host '{ip}'"),
        )
    };
    for from in [[127, 0, 0, 1], [127, 0, 0, 2]] {
        let e = login_from(f.port, from, "user", "user").await.unwrap_err();
        assert_eq!(e, refused(from), "user from {from:?}");
    }
    login_from(f.port, [127, 0, 0, 3], "user", "user")
        .await
        .expect("user from 127.0.0.3");
    // mysql_async from 127.0.0.1 too.
    let e = mysql_async::Conn::new(common::opts(f.port, "user", "user", Some("TESTDB")))
        .await
        .unwrap_err();
    assert_eq!(common::server_error(e), refused([127, 0, 0, 1]));
}

#[tokio::test]
async fn a_refused_host_gets_the_same_answer_whatever_the_password() {
    let f = Fixture::start(
        "lim_fwpw",
        Extra {
            users_xml: r#"<firewall><whitehost>
                    <host host="127.0.0.2" user="root,user"/>
                </whitehost></firewall>"#
                .to_string(),
            ..Extra::default()
        },
    )
    .await;
    let from = [127, 0, 0, 1];
    let right = login_from(f.port, from, "user", "user").await.unwrap_err();
    let wrong = login_from(f.port, from, "user", "wrong").await.unwrap_err();
    let empty = login_from(f.port, from, "user", "").await.unwrap_err();
    assert_eq!(right, wrong, "no oracle for the password");
    assert_eq!(right, empty);
    assert_eq!(
        right,
        (
            1045,
            "28000".to_string(),
            "Access denied for user 'user' with host '127.0.0.1'".to_string()
        )
    );
    // An unknown user is refused the same way: the host is refused before anything else.
    let unknown = login_from(f.port, from, "nobody", "x").await.unwrap_err();
    assert_eq!(
        unknown.2,
        "Access denied for user 'nobody' with host '127.0.0.1'"
    );
    // From the admitted address the password decides.
    login_from(f.port, [127, 0, 0, 2], "user", "user")
        .await
        .expect("admitted host, right password");
    let e = login_from(f.port, [127, 0, 0, 2], "user", "wrong")
        .await
        .unwrap_err();
    assert_eq!(e.0, 1045);
    assert!(e.2.contains("(using password: YES)"), "{e:?}");
}

/// A TCP relay to the sandbox primary that stops passing bytes on while `frozen` is set (a
/// backend that stops answering), counting the connections it took and those the gateway
/// closed.
struct Relay {
    port: u16,
    frozen: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    closed_by_gateway: Arc<AtomicUsize>,
}

impl Relay {
    async fn start() -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let relay = Relay {
            port: listener.local_addr().unwrap().port(),
            frozen: Arc::default(),
            accepted: Arc::default(),
            closed_by_gateway: Arc::default(),
        };
        let (frozen, accepted, closed) = (
            relay.frozen.clone(),
            relay.accepted.clone(),
            relay.closed_by_gateway.clone(),
        );
        tokio::spawn(async move {
            loop {
                let Ok((gateway, _)) = listener.accept().await else {
                    return;
                };
                accepted.fetch_add(1, Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(("127.0.0.1", common::PRIMARY_PORT)).await
                else {
                    continue;
                };
                let (gr, gw) = gateway.into_split();
                let (sr, sw) = server.into_split();
                let closed = closed.clone();
                tokio::spawn(pass(gr, sw, frozen.clone(), Some(closed)));
                tokio::spawn(pass(sr, gw, frozen.clone(), None));
            }
        });
        relay
    }
}

/// Copies `from` to `to`, holding what it read while `frozen`; counts in `closed` when `from`
/// ends.
async fn pass(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    frozen: Arc<AtomicBool>,
    closed: Option<Arc<AtomicUsize>>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        while frozen.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    if let Some(c) = closed {
        c.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_backend_that_stops_answering_fails_the_statement_within_sql_execute_timeout() {
    let relay = Relay::start().await;
    // Schema FROZEN: everything to dataNode dnf, on a dataHost reached through the relay.
    let db = "t_lim_sqlto_db1";
    let f = Fixture::start(
        "lim_sqlto",
        Extra {
            schema_xml: format!(
                r#"<schema name="FROZEN" checkSQLschema="false" dataNode="dnf"></schema>
                <dataNode name="dnf" dataHost="relayed" database="{db}" />
                <dataHost name="relayed" maxCon="10" minCon="1" balance="0" writeType="0" dbType="mysql" dbDriver="native" switchType="-1">
                    <heartbeat></heartbeat>
                    <writeHost host="relayM1" url="127.0.0.1:{}" user="manx" password="manx"></writeHost>
                </dataHost>"#,
                relay.port
            ),
            users_xml: format!(
                r#"{}<user name="fz"><property name="password">fz</property><property name="schemas">FROZEN</property></user>"#,
                common::system_xml(&[("sqlExecuteTimeout", "2")])
            ),
            ..Extra::default()
        },
    )
    .await;
    let mut c = mysql_async::Conn::new(common::opts(f.port, "fz", "fz", Some("FROZEN")))
        .await
        .unwrap();
    let n: Option<i64> = c.query_first("SELECT COUNT(*) FROM company").await.unwrap();
    assert_eq!(n, Some(0));
    // The server stops answering: the statement fails within the timeout, naming the node.
    relay.frozen.store(true, Ordering::SeqCst);
    let closed_before = relay.closed_by_gateway.load(Ordering::SeqCst);
    let started = Instant::now();
    let e = tokio::time::timeout(
        Duration::from_secs(10),
        c.query_first::<i64, _>("SELECT COUNT(*) FROM company"),
    )
    .await
    .expect("the client is answered, not left hanging")
    .unwrap_err();
    let took = started.elapsed();
    let (code, state, message) = common::server_error(e);
    assert_eq!((code, state.as_str()), (1105, "HY000"), "{message}");
    assert!(message.contains("dataNode dnf"), "{message}");
    assert!(message.contains("sqlExecuteTimeout"), "{message}");
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(5),
        "answered after {took:?}"
    );
    // The connection that timed out is closed, never handed out again.
    relay.frozen.store(false, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(5);
    while relay.closed_by_gateway.load(Ordering::SeqCst) == closed_before {
        assert!(
            Instant::now() < deadline,
            "the timed-out connection was not closed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let n: Option<i64> = c.query_first("SELECT COUNT(*) FROM company").await.unwrap();
    assert_eq!(n, Some(0), "the session goes on, on a fresh connection");
    // A statement that runs longer than the timeout without a row is ended on the server too.
    let e = c.query_drop("SELECT SLEEP(6)").await.unwrap_err();
    let (_, _, message) = common::server_error(e);
    assert!(message.contains("sqlExecuteTimeout"), "{message}");
    let mut primary = common::primary(None).await;
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let running: Option<i64> = primary
            .query_first("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(6)'")
            .await
            .unwrap();
        if running == Some(0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the timed-out statement still runs on the server"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_backend_that_accepts_and_never_greets_fails_the_connection_in_bounded_time() {
    // A listener that accepts connections and never sends a byte.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let f = Fixture::start(
        "lim_mute",
        Extra {
            schema_xml: format!(
                r#"<schema name="MUTE" checkSQLschema="false" dataNode="dnm"></schema>
                <dataNode name="dnm" dataHost="mute" database="t_lim_mute_db1" />
                <dataHost name="mute" maxCon="10" minCon="1" balance="0" writeType="0" dbType="mysql" dbDriver="native" switchType="-1">
                    <heartbeat></heartbeat>
                    <writeHost host="muteM1" url="127.0.0.1:{port}" user="manx" password="manx"></writeHost>
                </dataHost>"#
            ),
            users_xml: r#"<user name="mu"><property name="password">mu</property><property name="schemas">MUTE</property></user>"#.to_string(),
            ..Extra::default()
        },
    )
    .await;
    // The login already asks the schema's dataNode (the connection fails then or at the
    // statement): either way in bounded time, with an error naming the dataNode.
    let started = Instant::now();
    let attempt = async {
        let mut c = mysql_async::Conn::new(common::opts(f.port, "mu", "mu", Some("MUTE"))).await?;
        c.query_drop("SELECT COUNT(*) FROM company").await
    };
    let e = tokio::time::timeout(Duration::from_secs(15), attempt)
        .await
        .expect("the client is answered, not left hanging")
        .unwrap_err();
    let (code, _, message) = common::server_error(e);
    assert_eq!(code, 1105, "{message}");
    assert!(message.contains("dataNode dnm"), "{message}");
    assert!(message.contains("no answer within"), "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "{:?}",
        started.elapsed()
    );
}

/// `SET wait_timeout = 1`, then idle: the gateway closes the client connection, as MariaDB does
/// (no packet: the client's next statement fails on the connection, not with a server error),
/// and the transaction the client left open is rolled back on the backend (its row lock is
/// gone: a backend session writes the same key at once).
#[tokio::test]
async fn an_idle_client_is_closed_after_its_wait_timeout_and_its_transaction_rolled_back() {
    let f = Fixture::start("lim_idle", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("SET wait_timeout = 1").await.unwrap();
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (1, 'idle')")
        .await
        .unwrap();
    // A client of the default wait_timeout idles as long and is still served afterwards.
    let mut other = f.client().await;
    let _: Option<i64> = other.query_first("SELECT 1").await.unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let e = c
        .query_drop("SELECT 1")
        .await
        .expect_err("the idle connection is closed");
    assert!(
        !matches!(e, mysql_async::Error::Server(_)),
        "closed without an answer, as MariaDB closes it: {e:?}"
    );
    // Rolled back: the key is free on the backend (a lock still held would time out, 1205).
    let mut b = f.backend(1).await;
    b.query_drop("SET innodb_lock_wait_timeout = 1")
        .await
        .unwrap();
    b.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (1, 'backend')")
        .await
        .expect("the gateway's transaction was rolled back, its lock released");
    assert_eq!(f.ids_on(1, "travelrecord").await, vec![1]);
    let who: Option<String> = b
        .query_first("SELECT user_id FROM travelrecord WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(who.as_deref(), Some("backend"));
    let two: Option<i64> = other.query_first("SELECT 2").await.unwrap();
    assert_eq!(
        two,
        Some(2),
        "a session of the default wait_timeout stays open"
    );
}

/// A statement that runs longer than the session's wait_timeout is not cut (the timeout counts
/// idle time only), nor is a client that sends a command more often than its timeout; once
/// they go quiet, they are closed. COM_RESET_CONNECTION puts the default back.
#[tokio::test]
async fn wait_timeout_counts_only_idle_time() {
    let f = Fixture::start("lim_busy", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("SET @@session.wait_timeout = 1")
        .await
        .unwrap();
    let slept: Option<i64> = c.query_first("SELECT SLEEP(2.5)").await.unwrap();
    assert_eq!(slept, Some(0), "a busy statement is not cut");
    let one: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1), "the session is open after its long statement");
    let mut d = f.client().await;
    d.query_drop("SET wait_timeout = 2").await.unwrap();
    for i in 0..5 {
        tokio::time::sleep(Duration::from_millis(800)).await;
        let n: Option<i64> = d.query_first(format!("SELECT {i}")).await.unwrap();
        assert_eq!(n, Some(i), "a client active within its timeout is served");
    }
    // A session reset gets the default timeout back.
    let mut r = f.client().await;
    r.query_drop("SET wait_timeout = 1").await.unwrap();
    r.reset().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1800)).await;
    let n: Option<i64> = r.query_first("SELECT 3").await.unwrap();
    assert_eq!(
        n,
        Some(3),
        "COM_RESET_CONNECTION restored the default wait_timeout"
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(
        c.query_drop("SELECT 1").await.is_err(),
        "idle again: closed"
    );
    assert!(
        d.query_drop("SELECT 1").await.is_err(),
        "idle again: closed"
    );
}
