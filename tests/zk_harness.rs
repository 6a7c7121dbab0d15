//! The ZooKeeper test harness itself (`tests/common/zookeeper.rs`, `tests/common/proxy.rs`),
//! against real throwaway servers: what the cluster-mode tests rely on it to do.

mod common;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::proxy::FaultProxy;
use common::zookeeper::ZkServer;
use zookeeper_client::{Acls, Client, CreateMode, CreateOptions, SessionState, StateWatcher};

/// A znode that stays, open to all.
const PERSISTENT: CreateOptions<'static> = CreateMode::Persistent.with_acls(Acls::anyone_all());
/// A znode that goes with its session, open to all.
const EPHEMERAL: CreateOptions<'static> = CreateMode::Ephemeral.with_acls(Acls::anyone_all());

/// The session timeout of the clients whose sessions these tests let expire.
const SHORT_SESSION: Duration = Duration::from_secs(2);

/// Waits until `states` reports `want`, panicking after `bound` with what it saw instead.
async fn wait_state(states: &mut StateWatcher, want: SessionState, bound: Duration) {
    let mut seen = vec![states.peek_state()];
    let wait = async {
        while *seen.last().unwrap() != want {
            seen.push(states.changed().await);
        }
    };
    let waited = tokio::time::timeout(bound, wait).await;
    assert!(
        waited.is_ok(),
        "no {want:?} within {bound:?}; states seen: {seen:?}"
    );
}

/// Polls `check` every 50 ms until it holds, panicking with `what` after `bound`.
async fn eventually<F: AsyncFnMut() -> bool>(what: &str, bound: Duration, mut check: F) {
    let deadline = Instant::now() + bound;
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within {bound:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Connects to `address` with a session timeout of `session_timeout`, trying it once (no retry
/// loop): bounded to 5 s.
async fn connect_once(
    address: &str,
    session_timeout: Duration,
) -> Result<Client, zookeeper_client::Error> {
    let connect = Client::connector()
        .with_session_timeout(session_timeout)
        .with_fail_eagerly()
        .connect(address);
    tokio::time::timeout(Duration::from_secs(5), connect)
        .await
        .unwrap_or_else(|_| panic!("connecting to {address} took over 5 s"))
}

/// A server named `name`, a proxy in front of it and a client connected to it directly.
async fn proxied(name: &str) -> (ZkServer, FaultProxy, Client) {
    let zk = ZkServer::start(name).await;
    let proxy = FaultProxy::start((Ipv4Addr::LOCALHOST, zk.port)).await;
    let direct = zk.client().await;
    (zk, proxy, direct)
}

async fn exists(client: &Client, path: &str) -> bool {
    client.check_stat(path).await.unwrap().is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_znodes_and_keeps_them_across_a_crash() {
    let mut zk = ZkServer::start("zk-crash").await;
    assert_eq!(zk.address(), format!("127.0.0.1:{}", zk.port));
    assert_eq!(zk.four_letter_word("ruok").await.unwrap(), "imok");

    // A session that outlives a slow restart (the client backs off between its retries).
    let writer = Client::connector()
        .with_session_timeout(Duration::from_secs(15))
        .connect(&zk.address())
        .await
        .unwrap();
    writer.create("/h5", b"kept", &PERSISTENT).await.unwrap();
    writer.create("/h5/child", b"", &PERSISTENT).await.unwrap();
    writer.create("/h5/mine", b"", &EPHEMERAL).await.unwrap();
    let reader = zk.client().await;
    assert_eq!(reader.get_data("/h5").await.unwrap().0, b"kept");
    assert_eq!(
        reader.list_children("/h5").await.unwrap().len(),
        2,
        "a second session sees the first one's znodes"
    );
    drop(reader);

    let mut states = writer.state_watcher();
    zk.kill();
    assert!(
        zk.four_letter_word("ruok").await.is_err(),
        "a killed server still answers"
    );
    wait_state(
        &mut states,
        SessionState::Disconnected,
        Duration::from_secs(5),
    )
    .await;
    assert!(
        connect_once(&zk.address(), SHORT_SESSION).await.is_err(),
        "a session was established with a killed server"
    );

    zk.restart().await;
    let after = zk.client().await;
    assert_eq!(after.get_data("/h5").await.unwrap().0, b"kept");
    let mut children = after.list_children("/h5").await.unwrap();
    children.sort();
    assert_eq!(
        children,
        ["child", "mine"],
        "znodes, and the ephemeral of a session not yet expired, survive a SIGKILL"
    );
    // ZooKeeper restores sessions from its log: a client back within its timeout resumes.
    wait_state(
        &mut states,
        SessionState::SyncConnected,
        Duration::from_secs(10),
    )
    .await;
    writer
        .create("/h5/resumed", b"", &PERSISTENT)
        .await
        .unwrap();
    drop(writer);
    // Closing the session removes its ephemeral.
    eventually(
        "the ephemeral of a closed session goes",
        Duration::from_secs(5),
        async || !exists(&after, "/h5/mine").await,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_proxy_drops_connections_and_refuses_new_ones_until_healed() {
    let (_zk, proxy, direct) = proxied("zk-cut").await;
    // The default 6 s session: it outlives the cut.
    let through = Client::connect(&proxy.address()).await.unwrap();
    through.create("/cut", b"", &EPHEMERAL).await.unwrap();
    let session = through.session_id();
    let mut states = through.state_watcher();

    proxy.cut();
    wait_state(
        &mut states,
        SessionState::Disconnected,
        Duration::from_secs(2),
    )
    .await;
    let refused = connect_once(&proxy.address(), SHORT_SESSION).await;
    assert!(
        refused.is_err(),
        "a session was established through a cut proxy"
    );
    assert!(
        exists(&direct, "/cut").await,
        "the server itself is fine and the session alive"
    );

    proxy.heal();
    wait_state(
        &mut states,
        SessionState::SyncConnected,
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(
        through.session_id().0,
        session.0,
        "the same session resumed"
    );
    assert!(exists(&through, "/cut").await);
    let fresh = connect_once(&proxy.address(), SHORT_SESSION)
        .await
        .expect("connect through the healed proxy");
    assert!(exists(&fresh, "/cut").await);

    // Dropping the proxy closes its connections and its listener.
    let port = proxy.port;
    drop(proxy);
    wait_state(
        &mut states,
        SessionState::Disconnected,
        Duration::from_secs(2),
    )
    .await;
    eventually("the listener closes", Duration::from_secs(2), async || {
        tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port))
            .await
            .is_err()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blackholed_proxy_keeps_tcp_up_until_the_session_expires() {
    let (_zk, proxy, direct) = proxied("zk-blackhole").await;
    let through = connect_once(&proxy.address(), SHORT_SESSION)
        .await
        .expect("connect through the proxy");
    assert_eq!(
        through.session_timeout(),
        SHORT_SESSION,
        "the server granted the requested session timeout"
    );
    through.create("/bh", b"", &EPHEMERAL).await.unwrap();
    let mut states = through.state_watcher();

    proxy.blackhole();
    let partitioned = Instant::now();
    // Unlike a cut, nothing tells the client at once: it only misses replies after a while
    // (2/5 of the session timeout).
    let early = tokio::time::timeout(Duration::from_millis(200), states.changed()).await;
    assert!(
        early.is_err(),
        "the client noticed the partition at once: {early:?}"
    );
    eventually(
        "the server expires the partitioned session",
        Duration::from_secs(10),
        async || !exists(&direct, "/bh").await,
    )
    .await;
    assert!(
        partitioned.elapsed() >= SHORT_SESSION / 2,
        "the session ended after {:?}, well before its timeout",
        partitioned.elapsed()
    );
    // The client concludes it on its own too (7/5 of the session timeout without a reply).
    wait_state(&mut states, SessionState::Expired, Duration::from_secs(10)).await;

    proxy.heal();
    let fresh = connect_once(&proxy.address(), SHORT_SESSION)
        .await
        .expect("connect through the healed proxy");
    assert!(!exists(&fresh, "/bh").await);
}
