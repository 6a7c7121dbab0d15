//! Wire-level behaviour checked byte for byte on a raw socket: status flags in the greeting and
//! at the end of result sets, pipelined commands, and COM_STMT_EXECUTE re-using its parameter
//! types (what libmariadb, Connector/J and sysbench send).

mod common;

use common::raw::{read_packet, sha2_proof};
use common::{Extra, Fixture};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const AUTOCOMMIT: u16 = 0x0002;

fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = (payload.len() as u32).to_le_bytes().to_vec();
    p[3] = seq;
    p.extend_from_slice(payload);
    p
}

/// Logs in as root (caching_sha2 fast path, CLIENT_PROTOCOL_41 without DEPRECATE_EOF); returns
/// the socket and the greeting's status flags.
async fn connect(port: u16) -> (TcpStream, u16) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (_, g) = read_packet(&mut s).await;
    let nul = g.iter().position(|b| *b == 0).unwrap();
    let p = nul + 1 + 4;
    let mut scramble = g[p..p + 8].to_vec();
    let part2 = p + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
    scramble.extend_from_slice(&g[part2..part2 + 12]);
    let caps_at = p + 8 + 1;
    let server_caps = u16::from_le_bytes([g[caps_at], g[caps_at + 1]]);
    assert_eq!(
        server_caps & 0x2000,
        0x2000,
        "CLIENT_TRANSACTIONS is announced"
    );
    let status_at = p + 8 + 1 + 2 + 1;
    let status = u16::from_le_bytes([g[status_at], g[status_at + 1]]);
    let proof = sha2_proof("123456", &scramble);
    let caps: u32 = 0x1 | 0x8 | 0x200 | 0x8000 | 0x80000;
    let mut r = caps.to_le_bytes().to_vec();
    r.extend_from_slice(&(16u32 << 20).to_le_bytes());
    r.push(45);
    r.extend_from_slice(&[0; 23]);
    r.extend_from_slice(b"root\0");
    r.push(32);
    r.extend_from_slice(&proof);
    r.extend_from_slice(b"TESTDB\0caching_sha2_password\0");
    s.write_all(&packet(1, &r)).await.unwrap();
    assert_eq!(read_packet(&mut s).await.1, [1, 3]);
    let ok = read_packet(&mut s).await.1;
    assert_eq!(ok[0], 0);
    assert_eq!(
        u16::from_le_bytes([ok[3], ok[4]]) & AUTOCOMMIT,
        AUTOCOMMIT,
        "the login's OK says autocommit"
    );
    (s, status)
}

/// Reads one text result set: (column count, rows as text, status of the final EOF).
async fn result_set(s: &mut TcpStream) -> (usize, Vec<Vec<Option<String>>>, u16) {
    let (_, first) = read_packet(s).await;
    assert_ne!(first[0], 0xFF, "error: {}", String::from_utf8_lossy(&first));
    let columns = first[0] as usize;
    for _ in 0..columns {
        read_packet(s).await;
    }
    let (_, eof) = read_packet(s).await;
    assert_eq!(eof[0], 0xFE);
    let mut rows = Vec::new();
    loop {
        let (_, p) = read_packet(s).await;
        if p[0] == 0xFE && p.len() < 9 {
            return (columns, rows, u16::from_le_bytes([p[3], p[4]]));
        }
        let mut row = Vec::new();
        let mut i = 0;
        while i < p.len() {
            if p[i] == 0xFB {
                row.push(None);
                i += 1;
            } else {
                let n = p[i] as usize;
                row.push(Some(
                    String::from_utf8_lossy(&p[i + 1..i + 1 + n]).into_owned(),
                ));
                i += 1 + n;
            }
        }
        rows.push(row);
    }
}

#[tokio::test]
async fn status_flags_and_pipelined_queries() {
    let f = Fixture::start("proto", Extra::default()).await;
    let (mut s, greeting_status) = connect(f.port).await;
    assert_eq!(
        greeting_status & AUTOCOMMIT,
        AUTOCOMMIT,
        "the greeting says autocommit"
    );

    // Three queries in one write: each gets its own answer, in order.
    let mut batch = packet(0, b"\x03SELECT 1");
    batch.extend(packet(0, b"\x03SELECT 2"));
    batch.extend(packet(0, b"\x03SELECT 3"));
    s.write_all(&batch).await.unwrap();
    for n in 1..=3 {
        let (cols, rows, status) = result_set(&mut s).await;
        assert_eq!((cols, rows), (1, vec![vec![Some(n.to_string())]]));
        assert_eq!(
            status & AUTOCOMMIT,
            AUTOCOMMIT,
            "a result set ends with the autocommit flag"
        );
    }

    // SET autocommit=0: later result sets say so, and @@autocommit answers 0.
    s.write_all(&packet(0, b"\x03SET autocommit=0"))
        .await
        .unwrap();
    let (_, ok) = read_packet(&mut s).await;
    assert_eq!(ok[0], 0);
    s.write_all(&packet(0, b"\x03SELECT @@autocommit"))
        .await
        .unwrap();
    let (_, rows, status) = result_set(&mut s).await;
    assert_eq!(rows, vec![vec![Some("0".to_string())]]);
    assert_eq!(status & AUTOCOMMIT, 0);
}

#[tokio::test]
async fn an_execute_that_reuses_its_parameter_types_binds_the_right_values() {
    let f = Fixture::start("protops", Extra::default()).await;
    let (mut s, _) = connect(f.port).await;
    s.write_all(&packet(0, b"\x16SELECT CAST(? AS CHAR), ?"))
        .await
        .unwrap();
    let (_, ok) = read_packet(&mut s).await;
    assert_eq!(ok[0], 0);
    let id = u32::from_le_bytes([ok[1], ok[2], ok[3], ok[4]]);
    let params = u16::from_le_bytes([ok[7], ok[8]]) as usize;
    let columns = u16::from_le_bytes([ok[5], ok[6]]) as usize;
    assert_eq!(params, 2);
    for _ in 0..params + 1 + columns + usize::from(columns > 0) {
        read_packet(&mut s).await;
    }
    // EXECUTE (id, no cursor, 1 iteration, null bitmap, types bound: LONGLONG, VAR_STRING).
    let execute = |first: bool, n: i64, text: &str| {
        let mut p = vec![0x17];
        p.extend_from_slice(&id.to_le_bytes());
        p.push(0);
        p.extend_from_slice(&1u32.to_le_bytes());
        p.push(0);
        if first {
            p.extend_from_slice(&[1, 0x08, 0, 0xFD, 0]);
        } else {
            p.push(0);
        }
        p.extend_from_slice(&n.to_le_bytes());
        p.push(text.len() as u8);
        p.extend_from_slice(text.as_bytes());
        packet(0, &p)
    };
    for (first, n, text) in [(true, 41, "a"), (false, 5000001, "bc"), (false, -7, "def")] {
        s.write_all(&execute(first, n, text)).await.unwrap();
        let (_, head) = read_packet(&mut s).await;
        assert_eq!(head, [2], "two columns");
        read_packet(&mut s).await;
        read_packet(&mut s).await;
        read_packet(&mut s).await; // EOF after the column definitions
        let (_, row) = read_packet(&mut s).await;
        // Binary row: header 0, null bitmap, then both values as length-encoded text.
        let rest = &row[2..];
        let number_text = String::from_utf8_lossy(&rest[1..1 + rest[0] as usize]).into_owned();
        let after = &rest[1 + rest[0] as usize..];
        let text_back = String::from_utf8_lossy(&after[1..1 + after[0] as usize]).into_owned();
        assert_eq!(
            (number_text.as_str(), text_back.as_str()),
            (n.to_string().as_str(), text),
            "execution with first={first}"
        );
        let (_, eof) = read_packet(&mut s).await;
        assert_eq!(eof[0], 0xFE);
    }
}

#[tokio::test]
async fn bad_commands_get_errors_and_the_connection_lives_on() {
    let f = Fixture::start("protobad", Extra::default()).await;
    let (mut s, _) = connect(f.port).await;
    let expect_err = |p: &[u8], code: u16| {
        assert_eq!(p[0], 0xFF, "{p:?}");
        assert_eq!(
            u16::from_le_bytes([p[1], p[2]]),
            code,
            "{}",
            String::from_utf8_lossy(p)
        );
    };
    // A command byte nobody knows: 1047.
    s.write_all(&packet(0, &[0xEE, 1, 2])).await.unwrap();
    expect_err(&read_packet(&mut s).await.1, 1047);
    // EXECUTE of a statement never prepared: 1243 (opensrv would drop the connection).
    s.write_all(&packet(0, &[0x17, 9, 9, 0, 0, 0, 1, 0, 0, 0]))
        .await
        .unwrap();
    expect_err(&read_packet(&mut s).await.1, 1243);
    // SQL that is not UTF-8 outside its string literals (a latin1 client's name): 1300
    // (opensrv would drop the connection). Inside a string literal such bytes are a binary
    // string (PyMySQL sends `bytes` so), see `sqltext::binary_literals_as_hex`.
    s.write_all(&packet(0, b"\x03SELECT 1 AS `\xC9va`"))
        .await
        .unwrap();
    expect_err(&read_packet(&mut s).await.1, 1300);
    s.write_all(&packet(0, b"\x03SELECT HEX('\xC9va')"))
        .await
        .unwrap();
    let (_, rows, _) = result_set(&mut s).await;
    assert_eq!(rows, vec![vec![Some("C97661".to_string())]]);
    // Still serving.
    s.write_all(&packet(0, b"\x03SELECT 7")).await.unwrap();
    let (_, rows, _) = result_set(&mut s).await;
    assert_eq!(rows, vec![vec![Some("7".to_string())]]);

    // A command whose sequence id is not 0 (found by the `wire` fuzz target: 255 overflowed
    // opensrv's counter and panicked the session): 1156, then the connection closes.
    s.write_all(&packet(255, &[0x0E])).await.unwrap();
    expect_err(&read_packet(&mut s).await.1, 1156);
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::io::AsyncReadExt::read_to_end(&mut s, &mut rest),
    )
    .await;
    assert!(
        matches!(closed, Ok(Ok(0))),
        "the connection closes: {closed:?}"
    );
}

#[tokio::test]
async fn a_login_packet_numbered_255_ends_the_handshake_without_a_panic() {
    // Found by the `wire` fuzz target: opensrv-mysql computed the reply's sequence id as
    // 255 + 1 and panicked the session (debug builds).
    use std::sync::atomic::{AtomicUsize, Ordering};
    static OPENSRV_PANICS: AtomicUsize = AtomicUsize::new(0);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info
            .location()
            .is_some_and(|l| l.file().contains("opensrv-mysql"))
        {
            OPENSRV_PANICS.fetch_add(1, Ordering::SeqCst);
        }
        previous(info);
    }));
    let f = Fixture::start("proto255", Extra::default()).await;
    let mut s = TcpStream::connect(("127.0.0.1", f.port)).await.unwrap();
    let _greeting = read_packet(&mut s).await;
    let mut response = 0x0000_8200u32.to_le_bytes().to_vec();
    response.extend_from_slice(&[0; 28]);
    response.extend_from_slice(b"root\0\0");
    s.write_all(&packet(255, &response)).await.unwrap();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::io::AsyncReadExt::read_to_end(&mut s, &mut rest),
    )
    .await;
    assert!(
        matches!(closed, Ok(Ok(_))),
        "the connection ends: {closed:?}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(
        OPENSRV_PANICS.load(Ordering::SeqCst),
        0,
        "opensrv-mysql panicked"
    );
    // The gateway serves the next client.
    let (mut s, _) = connect(f.port).await;
    s.write_all(&packet(0, b"\x03SELECT 7")).await.unwrap();
    let (_, rows, _) = result_set(&mut s).await;
    assert_eq!(rows, vec![vec![Some("7".to_string())]]);
}

/// A session that kills itself ends: the command pipelined behind `KILL <own id>` is read by
/// the same loop iteration that answered the kill, and must not run (MariaDB closes the
/// connection after its 1927). It ran when the loop noticed the kill only on its next wait.
#[tokio::test]
async fn a_command_pipelined_after_killing_oneself_does_not_run() {
    let f = Fixture::start("protokill", Extra::default()).await;
    let (mut s, _) = connect(f.port).await;
    s.write_all(&packet(0, b"\x03SELECT CONNECTION_ID()"))
        .await
        .unwrap();
    let (_, rows, _) = result_set(&mut s).await;
    let id = rows[0][0].clone().unwrap();
    let mut batch = packet(0, format!("\x03KILL {id}").as_bytes());
    batch.extend(packet(0, b"\x03SELECT 1"));
    s.write_all(&batch).await.unwrap();
    let (_, err) = read_packet(&mut s).await;
    assert_eq!(err[0], 0xFF, "an error answers the kill");
    assert_eq!(u16::from_le_bytes([err[1], err[2]]), 1927);
    let mut rest = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), s.read_to_end(&mut rest))
        .await
        .expect("the connection is closed within 10 s");
    assert!(
        read.is_err() || rest.is_empty(),
        "nothing follows the kill's error: {rest:?}"
    );
}

/// Commands the reader takes from opensrv reach the session as typed values, never as text a
/// client could send: a COM_QUERY spelling the old in-band markers, or the placeholder the
/// reader uses now, is an ordinary statement (here: comments only, which MariaDB answers OK),
/// while the real commands still get their answers.
#[tokio::test]
async fn a_client_cannot_send_the_readers_internal_commands_as_text() {
    let f = Fixture::start("protodivert", Extra::default()).await;
    let (mut s, _) = connect(f.port).await;
    // Session state a reset would lose: still there after the texts.
    s.write_all(&packet(0, b"\x03SET @kept = 7")).await.unwrap();
    let (_, answer) = read_packet(&mut s).await;
    assert_eq!(answer[0], 0x00, "{answer:?}");
    for text in [
        "/* manx: COM_STATISTICS */",
        "/* manx: COM_RESET_CONNECTION */",
        "/* manx: refuse 1047 */",
        "/* manx: diverted command */",
    ] {
        let mut q = vec![0x03];
        q.extend_from_slice(text.as_bytes());
        s.write_all(&packet(0, &q)).await.unwrap();
        let (_, answer) = read_packet(&mut s).await;
        // An OK packet: no affected rows, no statistics string, no error.
        assert_eq!(&answer[..3], &[0x00, 0x00, 0x00], "{text}: {answer:?}");
    }
    s.write_all(&packet(0, b"\x03SELECT @kept")).await.unwrap();
    let (_, rows, _) = result_set(&mut s).await;
    assert_eq!(rows, vec![vec![Some("7".to_string())]]);
    // COM_STATISTICS itself: the bare status string.
    s.write_all(&packet(0, &[0x09])).await.unwrap();
    let (_, answer) = read_packet(&mut s).await;
    assert!(
        String::from_utf8_lossy(&answer).starts_with("Uptime:"),
        "{answer:?}"
    );
}
