//! A TCP proxy that injects network faults between a process under test and a server: it
//! forwards bytes both ways per accepted connection until told to [`FaultProxy::cut`] them
//! (connections closed, refused in effect) or to [`FaultProxy::blackhole`] them (connections kept
//! open, nothing delivered: the partition that lets a ZooKeeper session expire while TCP stays
//! up), and again after [`FaultProxy::heal`].

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// How long a connection waits for the target to accept.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Forward,
    Cut,
    Blackhole,
}

/// A fault-injecting TCP proxy on 127.0.0.1 in front of one target address. Dropping it closes
/// its listener and every connection through it (their tasks are aborted).
pub struct FaultProxy {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    mode: watch::Sender<Mode>,
    accept: JoinHandle<()>,
}

impl FaultProxy {
    /// Listens on a free port of 127.0.0.1 and forwards every connection to `target` (connected
    /// when the client connects, or once healed; a target that refuses, or does not accept
    /// within 5 s, closes the client's connection).
    ///
    /// Panics if it cannot listen. Needs a tokio runtime.
    pub async fn start(target: impl Into<SocketAddr>) -> FaultProxy {
        let target = target.into();
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bind the fault proxy");
        let port = listener.local_addr().unwrap().port();
        let (mode, modes) = watch::channel(Mode::Forward);
        let accept = tokio::spawn(accept_loop(listener, target, modes));
        FaultProxy { port, mode, accept }
    }

    /// "127.0.0.1:<port>", the address to give the process under test.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Closes every current connection at once and, until [`FaultProxy::heal`], closes new ones
    /// as soon as they are accepted: the target looks down.
    pub fn cut(&self) {
        self.mode.send_replace(Mode::Cut);
    }

    /// Until [`FaultProxy::heal`], forwards nothing in either direction, while connections stay
    /// open and new ones are accepted (and connected to the target only once healed): a network
    /// partition that TCP does not notice. Bytes read before are held, not lost.
    pub fn blackhole(&self) {
        self.mode.send_replace(Mode::Blackhole);
    }

    /// Forwards again: held bytes are delivered, connections still open resume.
    pub fn heal(&self) {
        self.mode.send_replace(Mode::Forward);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        // Aborting the accept task drops its listener and its JoinSet, which aborts every
        // connection's task (they would also end on their own: `mode` is gone).
        self.accept.abort();
    }
}

async fn accept_loop(listener: TcpListener, target: SocketAddr, modes: watch::Receiver<Mode>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else {
                    // Out of file descriptors, say: not a busy loop meanwhile.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                if *modes.borrow() != Mode::Cut {
                    connections.spawn(connection(client, target, modes.clone()));
                }
                // Cut: `client` is dropped here, closing it.
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Waits until `modes` says forward: false if it says cut (or the proxy is gone) first.
async fn forwarding(modes: &mut watch::Receiver<Mode>) -> bool {
    loop {
        match *modes.borrow_and_update() {
            Mode::Forward => return true,
            Mode::Cut => return false,
            Mode::Blackhole => {}
        }
        if modes.changed().await.is_err() {
            return false;
        }
    }
}

async fn connection(client: TcpStream, target: SocketAddr, mut modes: watch::Receiver<Mode>) {
    if !forwarding(&mut modes).await {
        return;
    }
    let server = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(target)).await {
        Ok(Ok(server)) => server,
        _ => return,
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    tokio::join!(
        pipe(client_read, server_write, modes.clone()),
        pipe(server_read, client_write, modes),
    );
}

/// Copies `from` to `to` while `modes` lets it, holding what it has read while blackholed;
/// returns (dropping both halves: the write half sends FIN) on end of stream, an error or a cut.
async fn pipe(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut modes: watch::Receiver<Mode>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if !forwarding(&mut modes).await {
            return;
        }
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            // Looked at again at the top of the loop.
            changed = modes.changed() => match changed {
                Ok(()) => continue,
                Err(_) => return,
            },
        };
        let mut written = 0;
        while written < n {
            if !forwarding(&mut modes).await {
                return;
            }
            // `write` rather than `write_all`: cancel-safe, nothing is written twice or lost.
            tokio::select! {
                w = to.write(&buf[written..n]) => match w {
                    Ok(0) | Err(_) => return,
                    Ok(k) => written += k,
                },
                changed = modes.changed() => if changed.is_err() {
                    return;
                },
            }
        }
    }
}
