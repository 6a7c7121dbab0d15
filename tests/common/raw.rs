//! The MySQL protocol spoken by hand on a TCP socket, for what client libraries cannot do:
//! logins from another loopback address, half-open connections, and commands sent one packet
//! at a time (`COM_STMT_SEND_LONG_DATA`).

use std::net::{IpAddr, SocketAddr};

use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Reads one packet from `s` (a TCP stream, or a TLS stream over one): (sequence id, payload).
pub async fn read_packet<S: AsyncRead + Unpin>(s: &mut S) -> (u8, Vec<u8>) {
    let mut header = [0u8; 4];
    s.read_exact(&mut header).await.unwrap();
    let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).await.unwrap();
    (header[3], payload)
}

/// Writes one packet of `payload` (shorter than 16 MiB) as sequence id `seq`, and flushes it.
pub async fn write_packet<S: AsyncWrite + Unpin>(s: &mut S, seq: u8, payload: &[u8]) {
    let mut p = (payload.len() as u32).to_le_bytes();
    p[3] = seq;
    s.write_all(&p).await.unwrap();
    s.write_all(payload).await.unwrap();
    s.flush().await.unwrap();
}

/// The 20-byte scramble of a protocol-10 greeting.
pub fn scramble(greeting: &[u8]) -> Vec<u8> {
    assert_eq!(greeting[0], 10, "a protocol-10 greeting");
    let version_end = greeting.iter().position(|b| *b == 0).unwrap();
    let p = version_end + 1 + 4;
    let mut s = greeting[p..p + 8].to_vec();
    // filler, capability (2), charset, status (2), capability (2), data length, reserved (10)
    let part2 = p + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
    s.extend_from_slice(&greeting[part2..part2 + 12]);
    s
}

/// The `caching_sha2_password` fast-path proof of `password` for `scramble`.
pub fn sha2_proof(password: &str, scramble: &[u8]) -> Vec<u8> {
    let stage1 = Sha256::digest(password.as_bytes());
    let stage2 = Sha256::digest(stage1);
    let mut h = Sha256::new();
    h.update(stage2);
    h.update(scramble);
    let mix = h.finalize();
    stage1.iter().zip(mix.iter()).map(|(a, b)| a ^ b).collect()
}

/// A TCP connection to the gateway on 127.0.0.1:`port` from the loopback address `from`
/// (any 127.x.y.z works on Linux without configuration).
pub async fn connect_from(from: IpAddr, port: u16) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(from, 0)).unwrap();
    socket
        .connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap()
}

/// An ERR packet's (errno, SQLSTATE, message), SQLSTATE empty when it has no `#` marker.
pub fn err_packet(p: &[u8]) -> (u16, String, String) {
    assert_eq!(p[0], 0xFF, "an ERR packet: {}", String::from_utf8_lossy(p));
    let code = u16::from_le_bytes([p[1], p[2]]);
    if p.get(3) == Some(&b'#') {
        let state = String::from_utf8_lossy(&p[4..9]).into_owned();
        (code, state, String::from_utf8_lossy(&p[9..]).into_owned())
    } else {
        (
            code,
            String::new(),
            String::from_utf8_lossy(&p[3..]).into_owned(),
        )
    }
}

/// The handshake response of a MySQL 8 client logging in as `user` / `password` into `db`
/// after `greeting`: `caching_sha2_password`, `CLIENT_PROTOCOL_41` without
/// `CLIENT_DEPRECATE_EOF`.
pub fn handshake_response(user: &str, password: &str, greeting: &[u8], db: &str) -> Vec<u8> {
    let proof = sha2_proof(password, &scramble(greeting));
    // CLIENT_LONG_PASSWORD | CLIENT_CONNECT_WITH_DB | CLIENT_PROTOCOL_41 |
    // CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH
    let caps: u32 = 0x1 | 0x8 | 0x200 | 0x8000 | 0x80000;
    let mut r = caps.to_le_bytes().to_vec();
    r.extend_from_slice(&(16u32 << 20).to_le_bytes());
    r.push(45);
    r.extend_from_slice(&[0; 23]);
    r.extend_from_slice(user.as_bytes());
    r.push(0);
    r.push(proof.len() as u8);
    r.extend_from_slice(&proof);
    r.extend_from_slice(db.as_bytes());
    r.extend_from_slice(b"\0caching_sha2_password\0");
    r
}

/// Logs in as `user` / `password` into `db` over `s` (caching_sha2_password, as a MySQL 8
/// client; `CLIENT_PROTOCOL_41` without `CLIENT_DEPRECATE_EOF`).
///
/// Errors: the server's ERR packet as (errno, SQLSTATE, message).
pub async fn login(
    s: &mut TcpStream,
    user: &str,
    password: &str,
    db: &str,
) -> Result<(), (u16, String, String)> {
    let (_, greeting) = read_packet(s).await;
    let r = handshake_response(user, password, &greeting, db);
    write_packet(s, 1, &r).await;
    let (_, mut answer) = read_packet(s).await;
    if answer == [0x01, 0x03] {
        answer = read_packet(s).await.1;
    }
    if answer[0] == 0xFF {
        return Err(err_packet(&answer));
    }
    assert_eq!(answer[0], 0, "an OK packet after the login");
    Ok(())
}
