//! Issue 7's protocol corners, each through real clients: multi-statements
//! (CLIENT_MULTI_STATEMENTS), COM_STATISTICS and COM_FIELD_LIST, packets of 16 MiB and more and
//! `max_allowed_packet`, `KILL` / COM_PROCESS_KILL and the cancelling of a backend statement
//! whose client left.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{Extra, Fixture, server_error};
use mysql_async::Row;
use mysql_async::prelude::Queryable;

/// The Python of `scripts/clients.sh`'s venv (PyMySQL), installed once per test binary.
fn python() -> &'static str {
    &common::clients::clients().python
}

/// Runs a Python program (argv: the gateway's port) and returns its stdout.
fn run_python(program: &str, port: u16) -> String {
    let out = Command::new(python())
        .arg("-c")
        .arg(program)
        .arg(port.to_string())
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs the `mariadb` CLI (or another MariaDB client program) against the gateway.
fn mariadb(program: &str, port: u16, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(program)
        .args([
            "-h127.0.0.1",
            &format!("-P{port}"),
            "-uroot",
            "-p123456",
            "--protocol=TCP",
        ])
        .args(args)
        .output()
        .expect("run the mariadb client");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_statements_answer_one_result_per_statement() {
    let f = Fixture::start("w7multi", Extra::default()).await;
    // mysql_async sets CLIENT_MULTI_STATEMENTS: rows, OKs and a USE in one COM_QUERY, across
    // shards; it checks every sequence id and the more-results flag.
    let mut c = f.client().await;
    let mut r = c
        .query_iter(
            "SELECT 1 AS a; INSERT INTO travelrecord (id, user_id) VALUES (1, 'a;b'), (5000001, 'c'); \
             SELECT id, user_id FROM travelrecord ORDER BY id; UPDATE travelrecord SET days = 3 WHERE id = 1; \
             USE TESTDB; SELECT DATABASE()",
        )
        .await
        .unwrap();
    let mut sets: Vec<Vec<Row>> = Vec::new();
    let mut affected = Vec::new();
    while !r.is_empty() {
        let rows: Vec<Row> = r.collect().await.unwrap();
        affected.push(r.affected_rows());
        sets.push(rows);
    }
    drop(r);
    assert_eq!(sets.len(), 6, "one result per statement");
    assert_eq!(sets[0][0].get::<i64, _>(0), Some(1));
    // mysql_async reads the next result's header (here the OK) when it finishes a result set:
    // after set i, `affected_rows` is that of set i + 1.
    assert_eq!(affected[0], 2, "the INSERT's OK: {affected:?}");
    let ids: Vec<(i64, String)> = sets[2]
        .iter()
        .map(|r| (r.get(0).unwrap(), r.get(1).unwrap()))
        .collect();
    assert_eq!(ids, [(1, "a;b".to_string()), (5000001, "c".to_string())]);
    assert_eq!(affected[2], 1, "the UPDATE's OK: {affected:?}");
    assert_eq!(sets[5][0].get::<String, _>(0).as_deref(), Some("TESTDB"));
    assert_eq!(f.ids_on(1, "travelrecord").await, [1]);
    assert_eq!(f.ids_on(2, "travelrecord").await, [5000001]);
    // The connection is in step afterwards.
    let one: Option<i64> = c.query_first("SELECT 7").await.unwrap();
    assert_eq!(one, Some(7));

    // An error ends the batch: what follows it is not run.
    let mut r = c
        .query_iter(
            "SELECT 2; SELECT nope FROM travelrecord; INSERT INTO travelrecord (id) VALUES (2)",
        )
        .await
        .unwrap();
    let first: Vec<Row> = r.collect().await.unwrap();
    assert_eq!(first.len(), 1);
    let e = r.collect::<Row>().await.unwrap_err();
    assert_eq!(server_error(e).0, 1054);
    drop(r);
    assert_eq!(
        f.ids_on(1, "travelrecord").await,
        [1],
        "no statement after the error ran"
    );
    let one: Option<i64> = c.query_first("SELECT 8").await.unwrap();
    assert_eq!(one, Some(8));

    // A USE first in the batch (opensrv would take the whole text as the schema name).
    let mut bare = mysql_async::Conn::new(common::opts(f.port, "root", "123456", None))
        .await
        .unwrap();
    let mut r = bare
        .query_iter("USE TESTDB; SELECT COUNT(*) FROM travelrecord")
        .await
        .unwrap();
    let _: Vec<Row> = r.collect().await.unwrap();
    let counts: Vec<i64> = r.collect().await.unwrap();
    assert_eq!(counts, [2]);
    drop(r);

    // The mariadb CLI, whose delimiter is changed so that it sends both statements at once.
    let (ok, out, err) = mariadb(
        "mariadb",
        f.port,
        &[
            "TESTDB",
            "--delimiter=$$",
            "-N",
            "-e",
            "SELECT 'x;1'; SELECT id FROM travelrecord WHERE id = 5000001$$",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out, "x;1\n5000001\n");

    // PyMySQL: with the flag, several result sets; without it, MySQL's syntax error.
    let out = run_python(
        r#"
import sys, pymysql
from pymysql.constants import CLIENT
port = int(sys.argv[1])
c = pymysql.connect(host="127.0.0.1", port=port, user="root", password="123456", database="TESTDB",
                    client_flag=CLIENT.MULTI_STATEMENTS)
cur = c.cursor()
cur.execute("SELECT 1; SELECT id FROM travelrecord ORDER BY id; DELETE FROM travelrecord WHERE id = 5000001")
print(cur.fetchall())
cur.nextset(); print(cur.fetchall())
cur.nextset(); print(cur.rowcount)
print(cur.nextset())
c.commit()
plain = pymysql.connect(host="127.0.0.1", port=port, user="root", password="123456", database="TESTDB")
try:
    plain.cursor().execute("SELECT 1; SELECT 2")
except pymysql.err.MySQLError as e:
    print(e.args[0])
"#,
        f.port,
    );
    assert_eq!(out, "((1,),)\n((1,), (5000001,))\n1\nNone\n1064\n");
    assert!(f.ids_on(2, "travelrecord").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_and_field_list() {
    let f = Fixture::start("w7stat", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("SELECT 1").await.unwrap();
    // `mariadb-admin status` sends COM_STATISTICS and prints the string.
    let (ok, out, err) = mariadb("mariadb-admin", f.port, &["status"]);
    assert!(ok, "{err}");
    // `Key: value` pairs separated by two spaces, in MariaDB's order.
    let pairs: Vec<(&str, &str)> = out
        .trim_end()
        .split("  ")
        .map(|p| p.split_once(": ").unwrap_or((p, "")))
        .collect();
    let keys: Vec<&str> = pairs.iter().map(|p| p.0).collect();
    assert_eq!(
        keys,
        [
            "Uptime",
            "Threads",
            "Questions",
            "Slow queries",
            "Opens",
            "Open tables",
            "Queries per second avg"
        ],
        "{out}"
    );
    let threads: usize = pairs[1].1.parse().unwrap();
    assert!(threads >= 2, "this client and the mysql_async one: {out}");
    let questions: u64 = pairs[2].1.parse().unwrap();
    assert!(questions >= 1, "{out}");
    assert!(pairs[6].1.parse::<f64>().is_ok(), "{out}");

    // COM_FIELD_LIST, COM_STATISTICS and COM_PROCESS_KILL through libmariadb's own calls.
    let out = run_python(
        r#"
import sys, ctypes, ctypes.util
lib = ctypes.CDLL(ctypes.util.find_library("mariadb") or "libmariadb.so.3")
lib.mysql_init.restype = ctypes.c_void_p
lib.mysql_init.argtypes = [ctypes.c_void_p]
lib.mysql_real_connect.restype = ctypes.c_void_p
lib.mysql_real_connect.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                   ctypes.c_char_p, ctypes.c_uint, ctypes.c_char_p, ctypes.c_ulong]
lib.mysql_list_fields.restype = ctypes.c_void_p
lib.mysql_list_fields.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
lib.mysql_num_fields.argtypes = [ctypes.c_void_p]
lib.mysql_fetch_field_direct.restype = ctypes.POINTER(ctypes.c_char_p)
lib.mysql_fetch_field_direct.argtypes = [ctypes.c_void_p, ctypes.c_uint]
lib.mysql_free_result.argtypes = [ctypes.c_void_p]
lib.mysql_errno.argtypes = [ctypes.c_void_p]
lib.mysql_stat.restype = ctypes.c_char_p
lib.mysql_stat.argtypes = [ctypes.c_void_p]
lib.mysql_kill.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
lib.mysql_query.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
lib.mysql_thread_id.restype = ctypes.c_ulong
lib.mysql_thread_id.argtypes = [ctypes.c_void_p]
def connect():
    m = lib.mysql_init(None)
    assert lib.mysql_real_connect(m, b"127.0.0.1", b"root", b"123456", b"TESTDB", int(sys.argv[1]), None, 0)
    return m
m = connect()
for table, wild in [(b"travelrecord", None), (b"travelrecord", b"%e"), (b"nothere", None)]:
    res = lib.mysql_list_fields(m, table, wild)
    if not res:
        print("error", lib.mysql_errno(m))
        continue
    print([lib.mysql_fetch_field_direct(res, i)[0].decode() for i in range(lib.mysql_num_fields(res))])
    lib.mysql_free_result(res)
print(lib.mysql_stat(m).decode().split("  ")[0].split(":")[0])
victim = connect()
print(lib.mysql_kill(m, lib.mysql_thread_id(victim)))
print(lib.mysql_query(victim, b"SELECT 1") != 0)
print(lib.mysql_kill(m, 999999), lib.mysql_errno(m))
"#,
        f.port,
    );
    assert_eq!(
        out,
        "['id', 'user_id', 'traveldate', 'fee', 'days']\n['traveldate', 'fee']\nerror 1146\nUptime\n0\nTrue\n1 1094\n"
    );
}

/// A pseudo-random lowercase text of `n` bytes (a value whose corruption or truncation shows).
fn text(n: usize) -> String {
    let mut x: u32 = 2_463_534_242;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (b'a' + (x % 26) as u8) as char
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packets_of_16_mib_and_more_go_both_ways() {
    let extra = Extra {
        users_xml: r#"<system><property name="maxPacketSize">67108864</property></system>"#.into(),
        ..Default::default()
    };
    let f = Fixture::start("w7big", extra).await;
    let mut c = f.client().await;
    let limit: Option<u64> = c.query_first("SELECT @@max_allowed_packet").await.unwrap();
    assert_eq!(limit, Some(64 << 20), "the gateway's maxPacketSize");
    c.query_drop("ALTER TABLE hotnews ADD COLUMN body LONGBLOB")
        .await
        .unwrap();
    // A 20 MiB INSERT (two packets from the client) into the sharded table: id 4 is on dn2.
    let blob = text(20 << 20);
    c.query_drop(format!(
        "INSERT INTO hotnews (id, title, body) VALUES (4, 'big', '{blob}')"
    ))
    .await
    .unwrap();
    let mut n2 = f.backend(2).await;
    let stored: Option<u64> = n2
        .query_first("SELECT LENGTH(body) FROM hotnews WHERE id = 4")
        .await
        .unwrap();
    assert_eq!(stored, Some(20 << 20));
    // Read back as a 20 MiB row (two packets to the client), text and binary protocol.
    let back: Option<Vec<u8>> = c
        .query_first("SELECT body FROM hotnews WHERE id = 4")
        .await
        .unwrap();
    assert!(back.as_deref() == Some(blob.as_bytes()), "text row differs");
    let back: Option<(i64, Vec<u8>)> = c
        .exec_first("SELECT id, body FROM hotnews WHERE id = ?", (4,))
        .await
        .unwrap();
    assert!(
        back.as_ref().map(|b| b.1.as_slice()) == Some(blob.as_bytes()),
        "binary row differs"
    );
    // A row whose payload is exactly 0xFFFFFF bytes (an empty packet must follow it): 2 bytes
    // of title, 4 of body length, the body.
    let exact = text(0xFF_FFFF - 2 - 4);
    c.query_drop(format!(
        "INSERT INTO hotnews (id, title, body) VALUES (7, 'x', '{exact}')"
    ))
    .await
    .unwrap();
    let back: Option<(String, Vec<u8>)> = c
        .query_first("SELECT title, body FROM hotnews WHERE id = 7")
        .await
        .unwrap();
    assert!(back.map(|b| b.1).as_deref() == Some(exact.as_bytes()));
    // The same row in the binary protocol: header, NULL bitmap, title, body = 0xFFFFFF bytes.
    let exact = text(0xFF_FFFF - 1 - 1 - 2 - 4);
    c.query_drop(format!("UPDATE hotnews SET body = '{exact}' WHERE id = 7"))
        .await
        .unwrap();
    let back: Option<(String, Vec<u8>)> = c
        .exec_first("SELECT title, body FROM hotnews WHERE id = ?", (7,))
        .await
        .unwrap();
    assert!(back.map(|b| b.1).as_deref() == Some(exact.as_bytes()));
    let one: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1), "the connection is in step afterwards");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_over_max_allowed_packet_gets_1153_and_a_close() {
    let f = Fixture::start("w7limit", Extra::default()).await;
    let mut c = f.client().await;
    let limit: Option<u64> = c.query_first("SELECT @@max_allowed_packet").await.unwrap();
    assert_eq!(limit, Some(16 << 20), "Mycat's default maxPacketSize");
    let big = format!("SELECT LENGTH('{}')", "x".repeat(17 << 20));
    let (code, state, message) = server_error(c.query_drop(&big).await.unwrap_err());
    assert_eq!((code, state.as_str()), (1153, "08S01"), "{message}");
    assert_eq!(
        message,
        "Got a packet bigger than 'max_allowed_packet' bytes"
    );
    assert!(
        c.query_drop("SELECT 1").await.is_err(),
        "the connection is closed after the error"
    );
    // Just under the limit passes, in one packet.
    let mut d = f.client().await;
    let n: Option<u64> = d
        .query_first(format!("SELECT LENGTH('{}')", "y".repeat(15 << 20)))
        .await
        .unwrap();
    assert_eq!(n, Some(15 << 20));
}

/// Waits until the sandbox primary runs a statement whose text starts with `prefix`; its
/// thread id.
async fn running(prefix: &str) -> u64 {
    let mut p = common::primary(None).await;
    let started = Instant::now();
    loop {
        let id: Option<u64> = p
            .exec_first(
                "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE CONCAT(?, '%') AND COMMAND = 'Query'",
                (prefix,),
            )
            .await
            .unwrap();
        if let Some(id) = id {
            return id;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{prefix} never ran on the backend"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How many statements whose text starts with `prefix` the sandbox primary runs now.
async fn running_now(prefix: &str) -> u64 {
    let mut p = common::primary(None).await;
    p.exec_first(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE CONCAT(?, '%') AND COMMAND = 'Query'",
        (prefix,),
    )
    .await
    .unwrap()
    .unwrap_or(0)
}

/// Waits (bounded) until the sandbox primary no longer runs backend thread `id`'s statement.
async fn stopped(id: u64) -> bool {
    let mut p = common::primary(None).await;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        let info: Option<Option<String>> = p
            .exec_first(
                "SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = ?",
                (id,),
            )
            .await
            .unwrap();
        if info.flatten().is_none() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_query_and_kill_connection() {
    let f = Fixture::start("w7kill", Extra::default()).await;
    let mut a = f.client().await;
    let mut b = f.client().await;
    let id: Option<u64> = a.query_first("SELECT CONNECTION_ID()").await.unwrap();
    assert_eq!(id, Some(u64::from(a.id())), "the handshake's id");
    let id = id.unwrap();

    // KILL QUERY interrupts the backend statement; the session goes on.
    let started = Instant::now();
    let sleeper = tokio::spawn(async move {
        let r = a.query_drop("SELECT SLEEP(29.71)").await;
        (a, r)
    });
    let thread = running("SELECT SLEEP(29.71)").await;
    b.query_drop(format!("KILL QUERY {id}")).await.unwrap();
    let (mut a, r) = sleeper.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "interrupted");
    if let Err(e) = r {
        assert_eq!(server_error(e).0, 1317);
    }
    assert!(stopped(thread).await);
    let one: Option<i64> = a.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1), "KILL QUERY keeps the connection");

    // KILL [CONNECTION] interrupts it and closes the client connection.
    let started = Instant::now();
    let sleeper = tokio::spawn(async move {
        let r = a.query_drop("SELECT SLEEP(29.72)").await;
        (a, r)
    });
    let thread = running("SELECT SLEEP(29.72)").await;
    b.query_drop(format!("KILL {id}")).await.unwrap();
    let (mut a, _) = sleeper.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "interrupted");
    assert!(stopped(thread).await);
    // Not run again elsewhere: the read's connection broke because of the kill, and a killed
    // session's read is not retried (it was, on a fresh connection, and ran on to its end).
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        running_now("SELECT SLEEP(29.72)").await,
        0,
        "the killed statement was retried"
    );
    assert!(
        a.query_drop("SELECT 1").await.is_err(),
        "the connection is closed"
    );

    // Errors: unknown ids, another user's session; killing oneself.
    let (code, _, msg) = server_error(b.query_drop("KILL 4000000000").await.unwrap_err());
    assert_eq!(
        (code, msg.as_str()),
        (1094, "Unknown thread id: 4000000000")
    );
    let (code, _, _) = server_error(b.query_drop(format!("KILL QUERY {id}")).await.unwrap_err());
    assert_eq!(code, 1094, "the killed session is gone");
    let other = mysql_async::Conn::new(common::opts(f.port, "user", "user", Some("TESTDB")))
        .await
        .unwrap();
    let (code, _, msg) = server_error(
        b.query_drop(format!("KILL {}", other.id()))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1095, "{msg}");
    let own = b.id();
    let (code, _, _) = server_error(b.query_drop(format!("KILL {own}")).await.unwrap_err());
    assert_eq!(code, 1927);
    assert!(b.query_drop("SELECT 1").await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_query_of_a_read_over_several_nodes_in_a_transaction_spares_the_next_statement() {
    let f = Fixture::start("w7killtx", Extra::default()).await;
    let mut a = f.client().await;
    let mut b = f.client().await;
    // One row on each of the three dataNodes.
    a.query_drop(
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000001, 'b'), (10000001, 'c')",
    )
    .await
    .unwrap();
    let id = a.id();
    a.query_drop("BEGIN").await.unwrap();
    let sleeper = tokio::spawn(async move {
        let r = a
            .query_drop("SELECT id, SLEEP(29.74) FROM travelrecord")
            .await;
        (a, r)
    });
    running("SELECT id, SLEEP(29.74)").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    b.query_drop(format!("KILL QUERY {id}")).await.unwrap();
    let (mut a, r) = sleeper.await.unwrap();
    assert_eq!(server_error(r.unwrap_err()).0, 1317);
    // The first node's interruption ended the statement while the others' were still being
    // interrupted: their ends must not be taken for the next statements' answers.
    let n: Option<i64> = a
        .query_first("SELECT COUNT(*) FROM travelrecord")
        .await
        .unwrap();
    assert_eq!(n, Some(3));
    a.query_drop("COMMIT").await.unwrap();
    assert_eq!(
        running_now("SELECT id, SLEEP(29.74)").await,
        0,
        "no node still runs it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_mid_result_stops_the_backend_statement() {
    // A schema whose default dataNode is dn1: MariaDB's sequence table `seq_1_to_N` (a long
    // result of no stored rows) is a table of no schema.xml, reachable there only.
    let extra = Extra {
        schema_xml: r#"<schema name="SEQ" dataNode="dn1" />"#.to_string(),
        users_xml: r#"<user name="sequser">
        <property name="password">sequser</property>
        <property name="schemas">SEQ</property>
    </user>"#
            .to_string(),
        files: Vec::new(),
    };
    let f = Fixture::start("w7gone", extra).await;
    // In a transaction (PyMySQL's default: the connection is pinned), then with autocommit
    // (a pooled connection).
    leave_mid_result(&f, "False", "w7gone_tx").await;
    leave_mid_result(&f, "True", "w7gone_ac").await;
}

async fn leave_mid_result(f: &Fixture, autocommit: &str, label: &str) {
    use std::io::{BufRead, Write};
    // PyMySQL's unbuffered cursor reads a few rows of a long result, waits for a line on
    // stdin, then the process ends (as a killed client does: its socket is closed with rows
    // unread, which resets the connection).
    let query = format!("SELECT seq AS {label}, SLEEP(0) FROM seq_1_to_1000000000");
    let program = format!(
        r#"
import os, sys, pymysql, pymysql.cursors
c = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="sequser", password="sequser",
                    database="SEQ", cursorclass=pymysql.cursors.SSCursor, autocommit={autocommit})
cur = c.cursor()
cur.execute("{query}")
print(len(cur.fetchmany(1000)))
sys.stdout.flush()
sys.stdin.readline()
os._exit(0)
"#
    );
    let mut child = Command::new(python())
        .arg("-c")
        .arg(&program)
        .arg(f.port.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "1000\n");
    let thread = running(&format!("SELECT seq AS {label}")).await;
    // Long enough for the backend to fill the socket buffers and block sending rows.
    tokio::time::sleep(Duration::from_millis(500)).await;
    writeln!(child.stdin.as_mut().unwrap()).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(
        stopped(thread).await,
        "{label}: the backend statement was interrupted, not left to run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warning_counts_reach_a_client_reading_eof_packets() {
    let f = Fixture::start("w7eofw", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000001, 'b')")
        .await
        .unwrap();
    // PyMySQL does not set CLIENT_DEPRECATE_EOF: its result sets end with an EOF packet
    // (warnings, then status flags), which must carry both nodes' warnings and the session's
    // autocommit flag (2).
    let program = r#"
import sys, pymysql
c = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="root", password="123456",
                    database="TESTDB", autocommit=True)
cur = c.cursor()
cur.execute("SELECT id, CAST(user_id AS UNSIGNED) FROM travelrecord ORDER BY id")
rows = cur.fetchall()
print(len(rows), cur.warning_count, c.server_status & 2)
cur.execute("SELECT id FROM travelrecord ORDER BY id")
cur.fetchall()
print(cur.warning_count)
cur.execute("INSERT IGNORE INTO travelrecord (id, user_id) VALUES (1, 'x'), (5000001, 'y')")
print(cur.rowcount, cur.warning_count)
"#;
    let out = Command::new(python())
        .arg("-c")
        .arg(program)
        .arg(f.port.to_string())
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2 2 2\n0\n0 2\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connector_j_allow_multi_queries() {
    let _ = python(); // scripts/clients.sh installs Connector/J and a JDK
    let f = Fixture::start("w7connj", Extra::default()).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Multi.java"),
        r#"
import java.sql.*;
public class Multi {
    public static void main(String[] a) throws Exception {
        String url = "jdbc:mariadb://127.0.0.1:" + a[0] + "/TESTDB?allowMultiQueries=true";
        try (Connection c = DriverManager.getConnection(url, "root", "123456");
             Statement s = c.createStatement()) {
            boolean rs = s.execute("INSERT INTO travelrecord (id, user_id) VALUES (10000005, 'j'); SELECT user_id FROM travelrecord WHERE id = 10000005; SELECT 2");
            StringBuilder out = new StringBuilder();
            while (true) {
                if (rs) {
                    try (ResultSet r = s.getResultSet()) { while (r.next()) out.append(r.getString(1)).append(';'); }
                } else {
                    int n = s.getUpdateCount();
                    if (n == -1) break;
                    out.append("updated ").append(n).append(';');
                }
                rs = s.getMoreResults();
            }
            System.out.println(out);
        }
    }
}
"#,
    )
    .unwrap();
    let jar = "/usr/share/java/mariadb-java-client.jar";
    let javac = Command::new("javac")
        .args(["-cp", jar, "-d"])
        .arg(dir.path())
        .arg(dir.path().join("Multi.java"))
        .output()
        .expect("run javac");
    assert!(
        javac.status.success(),
        "{}",
        String::from_utf8_lossy(&javac.stderr)
    );
    let cp = format!("{}:{jar}", dir.path().display());
    let out = Command::new("java")
        .args(["-cp", &cp, "Multi", &f.port.to_string()])
        .output()
        .expect("run java");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "updated 1;j;2;\n");
    assert_eq!(f.ids_on(3, "travelrecord").await, [10000005]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_query_interrupts_a_postgresql_statement() {
    const PG_PORT: u16 = 15432;
    let extra = Extra {
        schema_xml: format!(
            r#"<schema name="W7PG" dataNode="w7pgdn"></schema>
<dataNode name="w7pgdn" dataHost="w7pghost" database="postgres" />
<dataHost name="w7pghost" maxCon="5" minCon="0" balance="0" writeType="0" dbType="postgresql" dbDriver="native" switchType="-1">
  <heartbeat>select 1</heartbeat>
  <writeHost host="w7pgM1" url="127.0.0.1:{PG_PORT}" user="manx" password="manx" />
</dataHost>"#
        ),
        users_xml: r#"<user name="w7pg"><property name="password">w7pg</property><property name="schemas">W7PG</property></user>"#.into(),
        ..Default::default()
    };
    let f = Fixture::start("w7pg", extra).await;
    let (pg, connection) = tokio_postgres::Config::new()
        .host("127.0.0.1")
        .port(PG_PORT)
        .user("manx")
        .password("manx")
        .dbname("postgres")
        .connect(tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut a = mysql_async::Conn::new(common::opts(f.port, "w7pg", "w7pg", Some("W7PG")))
        .await
        .unwrap();
    let mut b = mysql_async::Conn::new(common::opts(f.port, "w7pg", "w7pg", Some("W7PG")))
        .await
        .unwrap();
    let id = a.id();
    let started = Instant::now();
    let sleeper = tokio::spawn(async move {
        let r = a.query_drop("SELECT pg_sleep(29.73)").await;
        (a, r)
    });
    // Until the sleep itself runs: pg_stat_activity shows the text from the Describe manx
    // sends first (and keeps it while idle), and a cancel request that reaches a backend
    // between two messages is ignored by PostgreSQL.
    loop {
        let n: i64 = pg
            .query_one(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(29.73)%' AND wait_event = 'PgSleep' AND pid <> pg_backend_pid()",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if n > 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "never ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b.query_drop(format!("KILL QUERY {id}")).await.unwrap();
    let (mut a, r) = sleeper.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "interrupted");
    assert!(
        r.is_err(),
        "PostgreSQL's cancel ends the statement with an error"
    );
    let one: Option<i64> = a.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1), "the session goes on");
}
