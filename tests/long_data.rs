//! `COM_STMT_SEND_LONG_DATA` bounded by `maxPacketSize` (issue 17, part 6), spoken on a raw
//! socket against the sandbox MariaDB. A test binary of its own: the RSS it measures is the
//! whole process's, which other tests running beside it would disturb.

mod common;

use common::raw::{self, read_packet, write_packet};
use common::{Extra, Fixture};
use mysql_async::prelude::Queryable;
use tokio::net::TcpStream;

/// A logged-in raw session for prepared statements.
async fn raw_session(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    raw::login(&mut s, "root", "123456", "TESTDB")
        .await
        .unwrap();
    s
}

/// Prepares `sql` (one parameter) and returns its statement id.
async fn prepare(s: &mut TcpStream, sql: &str) -> u32 {
    let mut p = vec![0x16];
    p.extend_from_slice(sql.as_bytes());
    write_packet(s, 0, &p).await;
    let (_, ok) = read_packet(s).await;
    assert_eq!(ok[0], 0, "PREPARE: {}", String::from_utf8_lossy(&ok));
    let id = u32::from_le_bytes([ok[1], ok[2], ok[3], ok[4]]);
    let columns = u16::from_le_bytes([ok[5], ok[6]]);
    let params = u16::from_le_bytes([ok[7], ok[8]]);
    assert_eq!(params, 1);
    // Parameter definitions and column definitions, each list ended by EOF.
    for n in [params, columns] {
        if n > 0 {
            for _ in 0..=n {
                read_packet(s).await;
            }
        }
    }
    id
}

async fn send_long_data(s: &mut TcpStream, id: u32, data: &[u8]) {
    let mut p = vec![0x18];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&0u16.to_le_bytes());
    p.extend_from_slice(data);
    write_packet(s, 0, &p).await;
}

/// Executes statement `id` whose one parameter (a BLOB) came as long data; the answer's first
/// packet (an OK or ERR for an INSERT).
async fn execute(s: &mut TcpStream, id: u32) -> Vec<u8> {
    let mut p = vec![0x17];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(0); // no cursor
    p.extend_from_slice(&1u32.to_le_bytes());
    p.push(0); // NULL bitmap
    p.push(1); // types follow
    p.extend_from_slice(&[0xFC, 0]); // MYSQL_TYPE_BLOB; the value is the long data
    write_packet(s, 0, &p).await;
    read_packet(s).await.1
}

async fn stmt_reset(s: &mut TcpStream, id: u32) {
    let mut p = vec![0x1A];
    p.extend_from_slice(&id.to_le_bytes());
    write_packet(s, 0, &p).await;
    let (_, ok) = read_packet(s).await;
    assert_eq!(ok[0], 0, "COM_STMT_RESET: OK");
}

/// This process's resident set size in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

const LONG_DATA_TOO_LONG: &str = "Parameter of prepared statement which is set through mysql_send_long_data() is longer than 'max_allowed_packet' bytes";

#[tokio::test]
async fn long_data_within_the_packet_limit_arrives_and_a_reset_drops_it() {
    let f = Fixture::start("lim_ld", Extra::system(&[("maxPacketSize", "65536")])).await;
    let mut s = raw_session(f.port).await;
    let id = prepare(&mut s, "INSERT INTO hotnews (id, content) VALUES (7, ?)").await;
    let pieces = ["a".repeat(20_000), "b".repeat(20_000), "c".repeat(20_000)];
    for p in &pieces {
        send_long_data(&mut s, id, p.as_bytes()).await;
    }
    assert_eq!(execute(&mut s, id).await[0], 0, "an OK");
    let mut c = f.client().await;
    let content: Option<String> = c
        .query_first("SELECT content FROM hotnews WHERE id = 7")
        .await
        .unwrap();
    assert_eq!(content, Some(pieces.concat()));
    // COM_STMT_RESET drops what was sent before it (opensrv-mysql alone kept it).
    let id = prepare(&mut s, "INSERT INTO hotnews (id, content) VALUES (8, ?)").await;
    send_long_data(&mut s, id, b"stale").await;
    stmt_reset(&mut s, id).await;
    send_long_data(&mut s, id, b"fresh").await;
    assert_eq!(execute(&mut s, id).await[0], 0, "an OK");
    let content: Option<String> = c
        .query_first("SELECT content FROM hotnews WHERE id = 8")
        .await
        .unwrap();
    assert_eq!(content.as_deref(), Some("fresh"));
}

#[tokio::test]
async fn long_data_past_the_packet_limit_is_refused_and_not_kept() {
    let f = Fixture::start("lim_ldbig", Extra::system(&[("maxPacketSize", "65536")])).await;
    let mut s = raw_session(f.port).await;
    let id = prepare(&mut s, "INSERT INTO hotnews (id, content) VALUES (9, ?)").await;
    // 48 MiB in 16 KiB pieces, 768 times the limit.
    let piece = vec![b'x'; 16 * 1024];
    let before = rss();
    for _ in 0..48 * 64 {
        send_long_data(&mut s, id, &piece).await;
    }
    // A round trip: everything sent before it was read by the gateway.
    write_packet(&mut s, 0, &[0x0E]).await; // COM_PING
    assert_eq!(read_packet(&mut s).await.1[0], 0);
    let grown = rss().saturating_sub(before);
    assert!(
        grown < 16 << 20,
        "RSS grew by {} MiB while 48 MiB of long data were refused",
        grown >> 20
    );
    let answer = execute(&mut s, id).await;
    assert_eq!(
        raw::err_packet(&answer),
        (1105, "HY000".to_string(), LONG_DATA_TOO_LONG.to_string())
    );
    // The refusal ends with that execution: the statement and the session go on.
    send_long_data(&mut s, id, b"small").await;
    assert_eq!(execute(&mut s, id).await[0], 0, "an OK");
    let mut c = f.client().await;
    let content: Option<String> = c
        .query_first("SELECT content FROM hotnews WHERE id = 9")
        .await
        .unwrap();
    assert_eq!(content.as_deref(), Some("small"));
    // The connection's statements together are bounded too: 40 KB each, 64 KiB in all.
    let first = prepare(&mut s, "INSERT INTO hotnews (id, content) VALUES (10, ?)").await;
    let second = prepare(&mut s, "INSERT INTO hotnews (id, content) VALUES (11, ?)").await;
    send_long_data(&mut s, first, &vec![b'f'; 40_000]).await;
    send_long_data(&mut s, second, &vec![b's'; 40_000]).await;
    let (code, state, message) = raw::err_packet(&execute(&mut s, second).await);
    assert_eq!((code, state.as_str()), (1105, "HY000"), "{message}");
    assert!(message.contains("together on this connection"), "{message}");
    assert_eq!(
        execute(&mut s, first).await[0],
        0,
        "the first statement's data is intact"
    );
    let n: Option<i64> = c
        .query_first("SELECT LENGTH(content) FROM hotnews WHERE id = 10")
        .await
        .unwrap();
    assert_eq!(n, Some(40_000));
}

/// Executes statement `id` (one parameter) with `value` as the raw bytes after its type
/// (`MYSQL_TYPE_VAR_STRING`); the answer's first packet.
async fn execute_raw(s: &mut TcpStream, id: u32, value: &[u8]) -> Vec<u8> {
    let mut p = vec![0x17];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(0); // no cursor
    p.extend_from_slice(&1u32.to_le_bytes());
    p.push(0); // NULL bitmap
    p.push(1); // types follow
    p.extend_from_slice(&[0xFD, 0]); // MYSQL_TYPE_VAR_STRING
    p.extend_from_slice(value);
    write_packet(s, 0, &p).await;
    read_packet(s).await.1
}

/// A COM_STMT_EXECUTE whose value does not fit the packet (a length-encoded length of 2^64-1,
/// or one past the end) panicked the session's task inside opensrv-mysql (found by a
/// breaker): MySQL answers 1210 and the session goes on. Judged on the backend too: the
/// malformed executions wrote nothing, the well-formed one after them did.
#[tokio::test]
async fn a_malformed_execution_gets_1210_and_the_session_goes_on() {
    let f = Fixture::start("lim_ldbad", Extra::system(&[])).await;
    let mut s = raw_session(f.port).await;
    let id = prepare(&mut s, "INSERT INTO hotnews (id, content) VALUES (9, ?)").await;
    let mut huge = vec![0xFE];
    huge.extend_from_slice(&[0xFF; 8]);
    for value in [huge.as_slice(), &[5, b'a', b'b'], &[0xFC, 0x10], &[]] {
        let answer = execute_raw(&mut s, id, value).await;
        assert_eq!(answer[0], 0xFF, "an ERR for {value:?}");
        let (code, state, message) = raw::err_packet(&answer);
        assert_eq!(
            (code, state.as_str(), message.as_str()),
            (1210, "HY000", "Incorrect arguments to mysqld_stmt_execute")
        );
    }
    let mut c = f.client().await;
    let count: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM hotnews WHERE id = 9")
        .await
        .unwrap();
    assert_eq!(count, Some(0));
    assert_eq!(execute_raw(&mut s, id, b"\x02ok").await[0], 0, "an OK");
    let content: Option<String> = c
        .query_first("SELECT content FROM hotnews WHERE id = 9")
        .await
        .unwrap();
    assert_eq!(content.as_deref(), Some("ok"));
}
