//! Client character sets other than UTF-8 (issue 18, item 7; module `manx::charset`): clients
//! in latin1, gbk, cp1251 and cp932 through a real gateway, each answer compared byte for byte with the
//! same client talking to the sandbox MariaDB directly; what is stored judged on the backend;
//! and the GBK trick of a character whose second byte is `\` hiding a quote, judged on the
//! backend too.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::raw::{err_packet, read_packet, scramble, write_packet};
use common::{Extra, Fixture, PRIMARY_PORT, sample_database, server_error};
use mysql_async::prelude::*;
use tokio::net::TcpStream;

/// The reference databases on the sandbox primary (the same sample tables as the gateway's),
/// one per test (tests run at the same time).
const REFERENCE: &str = "t_cs_ref1";
const REFERENCE_PREPARED: &str = "t_cs_ref3";
const REFERENCE_SINGLE_BYTE: &str = "t_cs_ref5";

/// Runs `script` (bytes in `charset`) with the `mariadb` client in `--batch` mode against
/// 127.0.0.1:`port` as `user`/`password` in `db`: (success, stdout bytes, stderr).
fn mariadb(
    port: u16,
    user: &str,
    password: &str,
    db: &str,
    charset: &str,
    script: &[u8],
) -> (bool, Vec<u8>, String) {
    let mut child = Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{port}"),
            &format!("-u{user}"),
            &format!("-p{password}"),
            "--batch",
            "--skip-ssl",
            &format!("--default-character-set={charset}"),
            db,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the mariadb client is installed (scripts/sandbox.sh installs it)");
    child.stdin.take().unwrap().write_all(script).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `text` in `charset` (through the gateway's own table: the test checks the conversions
/// against MariaDB, not against themselves, since the reference run gets the same bytes).
fn encoded(charset: &str, text: &str) -> Vec<u8> {
    manx::charset::Charset::by_name(charset)
        .unwrap()
        .encode(text)
        .into_owned()
}

/// The script each client runs: writes non-ASCII text, reads it back under a non-ASCII label,
/// matches it in a WHERE clause, asks for the session's character sets, switches to utf8mb4
/// mid-session and reads it again. `id` keeps each character set's row apart.
fn script(id: u32, text: &str, label: &str) -> String {
    format!(
        "INSERT INTO hotnews (id, title) VALUES ({id}, '{text}');\n\
         SELECT id, title, title AS `{label}`, CHAR_LENGTH(title) AS n, LENGTH('{text}') AS bytes FROM hotnews WHERE id = {id};\n\
         SELECT @@character_set_client, @@character_set_connection, @@character_set_results, @@collation_connection;\n\
         SELECT @@session.character_set_client AS c, @@character_set_results r;\n\
         SELECT id FROM hotnews WHERE title = '{text}' AND id = {id};\n\
         SELECT CONCAT(title, '|', '{text}') AS `{label}` FROM hotnews WHERE id = {id};\n\
         SET NAMES utf8mb4;\n\
         SELECT title, @@character_set_client FROM hotnews WHERE id = {id};\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latin1_gbk_cp1251_and_cp932_clients_get_the_bytes_mariadb_gives() {
    let f = Fixture::start("cs1", Extra::default()).await;
    sample_database(REFERENCE).await;
    let cases = [
        ("latin1", 11, "café Ünïcödé € ¿\\\\", "naïve"),
        ("gbk", 12, "中文標題 縗 丁 kā", "名字"),
        ("cp1251", 13, "Привет, мир ёЁ", "имя"),
        // 0x835C (ソ) and 0x955C (表): a second byte that is `\`; half-width katakana, NEC
        // row 13 (①, Ⅰ).
        ("cp932", 14, "ソ表示 ｱｲｳ ①Ⅰ", "名前"),
    ];
    round_trips(&f, REFERENCE, &cases).await;
}

/// MariaDB's single-byte sets the gateway converts by MariaDB's own tables
/// (`manx::charset::single_byte`): the same answers, byte for byte, as directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dec8_cp850_tis620_and_koi8u_clients_get_the_bytes_mariadb_gives() {
    let f = Fixture::start("cs5", Extra::default()).await;
    sample_database(REFERENCE_SINGLE_BYTE).await;
    let cases = [
        ("dec8", 21, "café Ünïcödé £ ¿", "naïve"),
        ("cp850", 22, "Ñandú çà ½ ░▒ ß", "año"),
        ("tis620", 23, "ภาษาไทย ๑๒๓", "ชื่อ"),
        ("koi8u", 24, "Україна ґЄї", "імя"),
    ];
    round_trips(&f, REFERENCE_SINGLE_BYTE, &cases).await;
}

/// Each case's [`script`] (character set, row id, text, label) through the gateway `f` and
/// directly on the sandbox's `reference` database: the same bytes back, the same text stored.
async fn round_trips(
    f: &Fixture,
    reference: &'static str,
    cases: &[(&'static str, u32, &str, &str)],
) {
    for &(charset, id, text, label) in cases {
        let bytes = encoded(charset, &script(id, text, label));
        let (port, bytes2) = (f.port, bytes.clone());
        let through = tokio::task::spawn_blocking(move || {
            mariadb(port, "root", "123456", "TESTDB", charset, &bytes2)
        })
        .await
        .unwrap();
        let direct = tokio::task::spawn_blocking(move || {
            mariadb(PRIMARY_PORT, "manx", "manx", reference, charset, &bytes)
        })
        .await
        .unwrap();
        assert!(direct.0, "{charset} directly: {}", direct.2);
        assert!(through.0, "{charset} through manx: {}", through.2);
        assert_eq!(
            String::from_utf8_lossy(&through.1),
            String::from_utf8_lossy(&direct.1),
            "{charset}"
        );
        assert_eq!(through.1, direct.1, "{charset}: the same bytes both ways");
        // Judged on the backend: what was stored is the text, in UTF-8, as directly.
        let on = |mut c: mysql_async::Conn| async move {
            let v: Vec<String> = c
                .query(format!("SELECT title FROM hotnews WHERE id = {id}"))
                .await
                .unwrap();
            v
        };
        let mut stored = Vec::new();
        for n in 1..=3 {
            stored.extend(on(f.backend(n).await).await);
        }
        let expected = text.replace("\\\\", "\\");
        assert_eq!(stored, std::slice::from_ref(&expected), "{charset}");
        let stored_directly = on(common::primary(Some(reference)).await).await;
        assert_eq!(stored_directly, [expected], "{charset}");
    }
}

/// The handshake response of a client in collation `charset` (`mysql_native_password`,
/// `CLIENT_PROTOCOL_41`, with `CLIENT_MULTI_STATEMENTS` when `multi`).
fn handshake(
    user: &str,
    password: &str,
    greeting: &[u8],
    db: &str,
    charset: u8,
    multi: bool,
) -> Vec<u8> {
    use sha1::{Digest, Sha1};
    let s = scramble(greeting);
    let stage1 = Sha1::digest(password.as_bytes());
    let stage2 = Sha1::digest(stage1);
    let mut h = Sha1::new();
    h.update(&s);
    h.update(stage2);
    let mix = h.finalize();
    let proof: Vec<u8> = stage1.iter().zip(mix.iter()).map(|(a, b)| a ^ b).collect();
    // CLIENT_LONG_PASSWORD | CLIENT_CONNECT_WITH_DB | CLIENT_PROTOCOL_41 |
    // CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH (| CLIENT_MULTI_STATEMENTS |
    // CLIENT_MULTI_RESULTS)
    let mut caps: u32 = 0x1 | 0x8 | 0x200 | 0x8000 | 0x80000;
    if multi {
        caps |= 0x10000 | 0x20000;
    }
    let mut r = caps.to_le_bytes().to_vec();
    r.extend_from_slice(&(16u32 << 20).to_le_bytes());
    r.push(charset);
    r.extend_from_slice(&[0; 23]);
    r.extend_from_slice(user.as_bytes());
    r.push(0);
    r.push(proof.len() as u8);
    r.extend_from_slice(&proof);
    r.extend_from_slice(db.as_bytes());
    r.extend_from_slice(b"\0mysql_native_password\0");
    r
}

/// A raw session on the gateway as `user` in collation `charset`.
async fn raw_session(port: u16, user: &str, password: &str, charset: u8, multi: bool) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (_, greeting) = read_packet(&mut s).await;
    let r = handshake(user, password, &greeting, "TESTDB", charset, multi);
    write_packet(&mut s, 1, &r).await;
    let (_, answer) = read_packet(&mut s).await;
    assert_eq!(
        answer[0],
        0,
        "logged in: {:?}",
        String::from_utf8_lossy(&answer)
    );
    s
}

/// One statement's answer: rows of text values (each a cell's bytes, `None` for NULL), or
/// an OK, or an error.
#[derive(Debug, PartialEq)]
enum Answer {
    Rows(Vec<Vec<Option<Vec<u8>>>>),
    Ok,
    Err(u16, String),
}

/// Sends a COM_QUERY of `sql` (any bytes) and reads every answer of it (several for a
/// multi-statement text), classic EOF framing.
async fn raw_query(s: &mut TcpStream, sql: &[u8]) -> Vec<Answer> {
    let mut payload = vec![0x03];
    payload.extend_from_slice(sql);
    write_packet(s, 0, &payload).await;
    let mut answers = Vec::new();
    loop {
        let (_, first) = read_packet(s).await;
        let more = match first[0] {
            0xFF => {
                let (code, _, message) = err_packet(&first);
                answers.push(Answer::Err(code, message));
                return answers;
            }
            0x00 => {
                answers.push(Answer::Ok);
                // affected rows and insert id (length-encoded, small here), then status.
                let status = u16::from_le_bytes([first[3], first[4]]);
                status & 0x0008 != 0
            }
            n => {
                for _ in 0..n {
                    read_packet(s).await;
                }
                let (_, eof) = read_packet(s).await;
                assert_eq!(eof[0], 0xFE);
                let mut rows = Vec::new();
                let status = loop {
                    let (_, p) = read_packet(s).await;
                    if p[0] == 0xFE && p.len() < 9 {
                        break u16::from_le_bytes([p[3], p[4]]);
                    }
                    if p[0] == 0xFF {
                        let (code, _, message) = err_packet(&p);
                        answers.push(Answer::Err(code, message));
                        return answers;
                    }
                    let mut row = Vec::new();
                    let mut at = 0;
                    while at < p.len() {
                        if p[at] == 0xFB {
                            row.push(None);
                            at += 1;
                            continue;
                        }
                        let len = p[at] as usize;
                        assert!(len < 0xFB, "short values only");
                        row.push(Some(p[at + 1..at + 1 + len].to_vec()));
                        at += 1 + len;
                    }
                    rows.push(row);
                };
                answers.push(Answer::Rows(rows));
                status & 0x0008 != 0
            }
        };
        if !more {
            return answers;
        }
    }
}

/// The rows of the global table `company` on each of the fixture's three databases.
async fn rows_on(f: &Fixture) -> Vec<Vec<(i32, String)>> {
    let mut all = Vec::new();
    for n in 1..=3 {
        let mut b = f.backend(n).await;
        let r: Vec<(i32, String)> = b
            .query("SELECT id, name FROM company ORDER BY id")
            .await
            .unwrap();
        all.push(r);
    }
    all
}

/// A GBK client whose text holds 0xBF5C (one character, 縗, whose second byte is a
/// backslash) right before a quote: the quote ends the string, as MariaDB reads it, so what
/// follows is a statement of its own, checked as such (a readOnly user's DELETE is refused).
/// A latin1 client sending the same bytes has an escaped quote there: it is all one string,
/// and the statement after it never runs, even for a user who may delete. Judged on the
/// backend: the global table's rows on every node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backslash_inside_a_multibyte_character_hides_no_quote() {
    let f = Fixture::start("cs2", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("INSERT INTO company (id, name) VALUES (1, 'keep'), (2, 'keep too')")
        .await
        .unwrap();
    let before = rows_on(&f).await;
    assert_eq!(before[0].len(), 2);
    let attack: &[u8] = b"SELECT id FROM company WHERE name = '\xbf\\'; DELETE FROM company; -- '";

    // GBK (collation 28), readOnly user, multi-statements on: two statements, the second
    // refused.
    let mut s = raw_session(f.port, "user", "user", 28, true).await;
    let answers = raw_query(&mut s, attack).await;
    assert_eq!(answers.first(), Some(&Answer::Rows(vec![])), "{answers:?}");
    assert!(
        matches!(answers.get(1), Some(Answer::Err(..))),
        "the DELETE is refused: {answers:?}"
    );
    // The same with SET NAMES gbk on a utf8mb4 login.
    let mut s = raw_session(f.port, "user", "user", 45, true).await;
    assert_eq!(raw_query(&mut s, b"SET NAMES gbk").await, [Answer::Ok]);
    let answers = raw_query(&mut s, attack).await;
    assert!(
        matches!(answers.get(1), Some(Answer::Err(..))),
        "{answers:?}"
    );
    // Without multi-statements: refused whole, as MariaDB refuses it (1064).
    let mut s = raw_session(f.port, "user", "user", 28, false).await;
    let answers = raw_query(&mut s, attack).await;
    assert!(
        matches!(answers.as_slice(), [Answer::Err(..)]),
        "{answers:?}"
    );

    // latin1 (collation 8), root (who may delete): one SELECT of one string.
    let mut s = raw_session(f.port, "root", "123456", 8, true).await;
    let answers = raw_query(&mut s, b"SELECT '\xbf\\'; DELETE FROM company; -- ' AS v").await;
    assert_eq!(
        answers,
        [Answer::Rows(vec![vec![Some(
            b"\xbf'; DELETE FROM company; -- ".to_vec()
        )]])]
    );
    assert_eq!(rows_on(&f).await, before, "company changed");

    // What a GBK client stores is the character, in UTF-8, judged on the backend.
    let mut s = raw_session(f.port, "root", "123456", 28, false).await;
    assert_eq!(
        raw_query(&mut s, b"UPDATE company SET name = '\xbf\\' WHERE id = 2").await,
        [Answer::Ok]
    );
    let mut b = f.backend(1).await;
    let name: Option<String> = b
        .query_first("SELECT name FROM company WHERE id = 2")
        .await
        .unwrap();
    assert_eq!(name.as_deref(), Some("\u{7e17}"));
    // Read back in GBK: the two bytes again.
    assert_eq!(
        raw_query(&mut s, b"SELECT name FROM company WHERE id = 2").await,
        [Answer::Rows(vec![vec![Some(b"\xbf\\".to_vec())]])]
    );
    // Bytes that are not GBK: MariaDB's 1300, nothing forwarded.
    let answers = raw_query(&mut s, b"UPDATE company SET name = 'x\x81' WHERE id = 2").await;
    assert!(
        matches!(&answers[..], [Answer::Err(1300, m)] if m.contains("gbk")),
        "{answers:?}"
    );
    let name: Option<String> = b
        .query_first("SELECT name FROM company WHERE id = 2")
        .await
        .unwrap();
    assert_eq!(name.as_deref(), Some("\u{7e17}"));
}

/// Prepared statements: their text is decoded from the client's character set too, and
/// their results (binary protocol) encoded back; the same bytes as MariaDB gives, with the
/// statement text sent as the same bytes both ways (mysql_async sends UTF-8 bytes, which a
/// latin1 session reads as latin1: `é` is `Ã©` to both servers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_in_latin1_answer_as_mariadb_does() {
    let f = Fixture::start("cs3", Extra::default()).await;
    let mut reference = sample_database(REFERENCE_PREPARED).await;
    let mut through = f.client().await;
    let mut out = Vec::new();
    let mut ids = Vec::new();
    for c in [&mut through, &mut reference] {
        c.query_drop("INSERT INTO hotnews (id, title) VALUES (21, 'ab')")
            .await
            .unwrap();
        c.query_drop("SET NAMES latin1").await.unwrap();
        let mut rows: Vec<(Vec<u8>, Vec<u8>)> = c
            .exec(
                "SELECT CONCAT('é', title, 'ü'), title FROM hotnews WHERE id = ? AND title <> 'é'",
                (21,),
            )
            .await
            .unwrap();
        // A text parameter is in the client's character set too (a blob one is bytes).
        let params: Vec<(Vec<u8>, Vec<u8>, usize)> = c
            .exec(
                "SELECT CONCAT(?, title), ?, LENGTH(?) FROM hotnews WHERE id = ?",
                ("é\\'", b"\xff\xfe".to_vec(), "ü", 21),
            )
            .await
            .unwrap();
        rows.extend(
            params
                .into_iter()
                .map(|(a, b, n)| (a, [b, n.to_string().into_bytes()].concat())),
        );
        let text: Vec<(Vec<u8>, Vec<u8>)> = c
            .query("SELECT CONCAT('é', title, 'ü'), title FROM hotnews WHERE id = 21")
            .await
            .unwrap();
        out.push((rows, text));
        // The column definitions' collation ids: latin1's for text, 63 for binary and numbers,
        // in the text protocol and in a prepare response.
        let sql = "SELECT title, id, CAST(title AS BINARY) AS b FROM hotnews WHERE id = 21";
        let result = c.query_iter(sql).await.unwrap();
        let text_ids: Vec<u16> = result
            .columns()
            .unwrap()
            .iter()
            .map(|c| c.character_set())
            .collect();
        result.drop_result().await.unwrap();
        let stmt = c.prep(sql).await.unwrap();
        let prepared_ids: Vec<u16> = stmt.columns().iter().map(|c| c.character_set()).collect();
        ids.push((text_ids, prepared_ids));
    }
    assert_eq!(out[0], out[1]);
    assert_eq!(out[0].0[0].0, b"\xc3\xa9ab\xc3\xbc".to_vec());
    assert_eq!(ids[0], ids[1]);
    assert_eq!(ids[0].0, [8, 63, 63]);
}

/// Character sets the gateway cannot convert, and names that are not names, are refused
/// with MySQL's errors; the session stays in the character set it had.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_unconverted_character_sets_are_refused() {
    let f = Fixture::start("cs4", Extra::default()).await;
    let mut c = f.client().await;
    for (sql, code) in [
        ("SET NAMES nosuch", 1115),
        ("SET NAMES ucs2", 1231),
        // Their WHATWG tables differ from MariaDB's: refused, not converted wrongly.
        ("SET NAMES big5", 1235),
        ("SET NAMES sjis", 1235),
        ("SET CHARACTER SET gb2312", 1235),
        ("SET character_set_results = 0x67626b", 1235),
        ("SET NAMES latin1 COLLATE gbk_bin", 1273),
        (
            "SET collation_connection = 'latin1_bin''; DROP TABLE x; --'",
            1273,
        ),
    ] {
        let (got, _, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        assert_eq!(got, code, "{sql}: {msg}");
    }
    // A character set MariaDB refuses for a client: its errno, SQLSTATE and message.
    let mut direct = common::primary(None).await;
    for sql in [
        "SET NAMES filename",
        "SET NAMES 'FILENAME'",
        "SET CHARACTER SET filename",
        "SET character_set_client = 'FileName'",
        "SET character_set_client = utf32",
    ] {
        let through = server_error(c.query_drop(sql).await.unwrap_err());
        let directly = server_error(direct.query_drop(sql).await.unwrap_err());
        assert_eq!(through, directly, "{sql}");
        assert_eq!(through.0, 1231, "{sql}");
    }
    let cs: Option<String> = c
        .query_first("SELECT @@character_set_client")
        .await
        .unwrap();
    assert_eq!(cs.as_deref(), Some("utf8mb4"));
    // The connection's character set may be one the gateway does not convert: only the
    // backend uses it (mysql-test's ctype_ucs2 files); the backend checks the name.
    c.query_drop("SET collation_connection = ucs2_general_ci")
        .await
        .unwrap();
    let row: Option<(String, String)> = c
        .query_first("SELECT @@collation_connection, CHARSET('a')")
        .await
        .unwrap();
    assert_eq!(row, Some(("ucs2_general_ci".into(), "ucs2".into())));
    c.query_drop("SET character_set_connection = utf16")
        .await
        .unwrap();
    let (code, _, msg) = server_error(
        c.query_drop("SET collation_connection = nosuch_ci")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1273, "{msg}");
    c.query_drop("SET NAMES utf8mb4").await.unwrap();
    // mysqldump's save and restore go through the session's own values.
    c.query_drop("SET NAMES latin1").await.unwrap();
    c.query_drop("SET @saved_cs_client = @@character_set_client")
        .await
        .unwrap();
    c.query_drop("SET character_set_client = utf8")
        .await
        .unwrap();
    let saved: Option<String> = c.query_first("SELECT @saved_cs_client").await.unwrap();
    assert_eq!(saved.as_deref(), Some("latin1"));
    c.query_drop("SET character_set_client = @saved_cs_client")
        .await
        .unwrap();
    let cs: Option<String> = c
        .query_first("SELECT @@character_set_client")
        .await
        .unwrap();
    assert_eq!(cs.as_deref(), Some("latin1"));
    // COM_RESET_CONNECTION puts the defaults back.
    c.reset().await.unwrap();
    let cs: Option<String> = c
        .query_first("SELECT @@character_set_client")
        .await
        .unwrap();
    assert_eq!(cs.as_deref(), Some("utf8mb4"));
}
