//! Login with `caching_sha2_password`, MySQL 8's default plugin, spoken byte for byte as a
//! MySQL 8 client does: the proof for the greeting's scramble, then the server's
//! fast-auth-success (`0x01 0x03`) and OK.

mod common;

use common::raw::{handshake_response, read_packet, write_packet};
use common::{Extra, Fixture};
use tokio::net::TcpStream;

/// Logs in as `root` with `password` using caching_sha2_password; returns the packets the
/// server answered with.
async fn login(port: u16, password: &str) -> Vec<(u8, Vec<u8>)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (_, greeting) = read_packet(&mut s).await;
    let r = handshake_response("root", password, &greeting, "TESTDB");
    write_packet(&mut s, 1, &r).await;
    let mut answers = vec![read_packet(&mut s).await];
    if answers[0].1 == [0x01, 0x03] {
        answers.push(read_packet(&mut s).await);
        // The session works: COM_QUERY SELECT 1 gets a result set (column count 1).
        write_packet(&mut s, 0, b"\x03SELECT 1").await;
        answers.push(read_packet(&mut s).await);
    }
    answers
}

#[tokio::test]
async fn caching_sha2_password_fast_path_logs_in() {
    let f = Fixture::start("auth", Extra::default()).await;
    let answers = login(f.port, "123456").await;
    assert_eq!(answers[0], (2, vec![0x01, 0x03]), "fast auth success");
    assert_eq!(answers[1].0, 3);
    assert_eq!(answers[1].1[0], 0x00, "then OK: {:?}", answers[1].1);
    assert_eq!(answers[2], (1, vec![1]), "a query runs after the login");
    let answers = login(f.port, "wrong").await;
    assert_eq!(answers.len(), 1);
    let (seq, err) = &answers[0];
    assert_eq!(*seq, 2);
    assert_eq!(err[0], 0xFF);
    assert_eq!(u16::from_le_bytes([err[1], err[2]]), 1045);
    assert_eq!(&err[3..9], b"#28000");
}

#[tokio::test]
async fn a_user_with_an_encrypted_password_logs_in_with_the_plain_one() {
    // usingDecrypt="1": the password is Mycat DecryptUtil's ciphertext of `0:enc:enc`.
    let f = Fixture::start(
        "authenc",
        Extra {
            users_xml: r#"<user name="enc"><property name="password">lvOcJa2dR6ZDY3smdMusR/7eTwQuYmBmAyPE2XoJWqIbGoX7KU26pv+h05OR41zsMk2Un37OwZbqoIYy0mA0Qw==</property><property name="schemas">TESTDB</property><property name="usingDecrypt">1</property></user>"#.to_string(),
            ..Extra::default()
        },
    )
    .await;
    let mut c = mysql_async::Conn::new(common::opts(f.port, "enc", "enc", Some("TESTDB")))
        .await
        .unwrap();
    use mysql_async::prelude::Queryable;
    let one: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    let e = mysql_async::Conn::new(common::opts(
        f.port,
        "enc",
        "lvOcJa2dR6ZDY3smdMusR/7eTwQuYmBmAyPE2XoJWqIbGoX7KU26pv+h05OR41zsMk2Un37OwZbqoIYy0mA0Qw==",
        Some("TESTDB"),
    ))
    .await
    .unwrap_err();
    assert_eq!(
        common::server_error(e).0,
        1045,
        "the ciphertext itself is not the password"
    );
}

#[tokio::test]
async fn dml_privileges_are_enforced_per_schema_and_table() {
    let f = Fixture::start(
        "authpriv",
        Extra {
            users_xml: r#"<user name="priv"><property name="password">priv</property><property name="schemas">TESTDB</property>
                <privileges check="true">
                    <schema name="TESTDB" dml="0110">
                        <table name="travelrecord" dml="1111" />
                        <table name="hotnews" dml="0010" />
                    </schema>
                </privileges></user>"#
                .to_string(),
            ..Extra::default()
        },
    )
    .await;
    use mysql_async::prelude::Queryable;
    let mut c = mysql_async::Conn::new(common::opts(f.port, "priv", "priv", Some("TESTDB")))
        .await
        .unwrap();
    // travelrecord: everything; the schema's other tables: UPDATE and SELECT; hotnews: SELECT.
    c.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (1, 'a')")
        .await
        .unwrap();
    c.query_drop("UPDATE travelrecord SET days = 2 WHERE id = 1")
        .await
        .unwrap();
    c.query_drop("DELETE FROM travelrecord WHERE id = 1")
        .await
        .unwrap();
    let _: Vec<i64> = c.query("SELECT id FROM company").await.unwrap();
    c.query_drop("UPDATE company SET name = 'x' WHERE id = 999")
        .await
        .unwrap();
    let _: Vec<i64> = c.query("SELECT id FROM hotnews").await.unwrap();
    for sql in [
        "INSERT INTO company (id, name) VALUES (1, 'c')",
        "REPLACE INTO company (id, name) VALUES (1, 'c')",
        "DELETE FROM company WHERE id = 1",
        "UPDATE hotnews SET title = 't' WHERE id = 1",
        "INSERT INTO hotnews (id, title) VALUES (1, 't')",
    ] {
        let (code, _, msg) = common::server_error(c.query_drop(sql).await.unwrap_err());
        assert_eq!(code, 3012, "{sql}: {msg}");
        assert!(
            msg.contains("The statement DML privilege check is not passed, reject for user 'priv'"),
            "{msg}"
        );
    }
    // Nothing was written by the refused statements.
    for n in 1..=3 {
        assert!(f.ids_on(n, "company").await.is_empty());
    }
    // Other users are unrestricted.
    let mut root = f.client().await;
    root.query_drop("INSERT INTO company (id, name) VALUES (1, 'c')")
        .await
        .unwrap();
}

#[tokio::test]
async fn the_firewall_whitehost_list_admits_only_listed_addresses() {
    // 127.0.0.1 admits root only; the wildcard entry 10.* does not match loopback.
    let f = Fixture::start(
        "authfw",
        Extra {
            users_xml: r#"<firewall><whitehost>
                    <host host="127.0.0.1" user="root"/>
                    <host host="10.*" user="user"/>
                </whitehost></firewall>"#
                .to_string(),
            ..Extra::default()
        },
    )
    .await;
    use mysql_async::prelude::Queryable;
    let mut root = f.client().await;
    let one: Option<i64> = root.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    let e = mysql_async::Conn::new(common::opts(f.port, "user", "user", Some("TESTDB")))
        .await
        .unwrap_err();
    let (code, state, msg) = common::server_error(e);
    assert_eq!((code, state.as_str()), (1045, "28000"), "{msg}");
    assert!(msg.contains("with host '127.0.0.1'"), "{msg}");
}

/// COM_CHANGE_USER (mysql_async's `change_user`, as connection pools send it): the new user's
/// password is checked against server.xml and the session becomes that user (its `readOnly`
/// applies at once); a wrong password is MySQL's 1045 and the connection is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn change_user_re_authenticates_against_server_xml() {
    use mysql_async::prelude::Queryable;
    let f = Fixture::start(
        "chuser",
        Extra {
            users_xml: r#"<user name="ro"><property name="password">ro-pass</property><property name="schemas">TESTDB</property><property name="readOnly">true</property></user>"#.into(),
            ..Extra::default()
        },
    )
    .await;
    let mut c = f.client().await;
    c.query_drop("SET @kept = 1").await.unwrap();
    c.query_drop("LOCK TABLES travelrecord WRITE")
        .await
        .unwrap();
    c.change_user(
        mysql_async::ChangeUserOpts::default()
            .with_user(Some("ro".into()))
            .with_pass(Some("ro-pass".into()))
            .with_db_name(Some("TESTDB".into())),
    )
    .await
    .unwrap();
    let grants: Vec<String> = c.query("SHOW GRANTS").await.unwrap();
    assert_eq!(grants[0], "GRANT USAGE ON *.* TO 'ro'@'%'");
    let e = common::server_error(
        c.query_drop("INSERT INTO travelrecord (id) VALUES (1)")
            .await
            .unwrap_err(),
    );
    assert_eq!(e.0, 1495, "the new user's readOnly applies: {e:?}");
    let kept: Option<Option<i64>> = c.query_first("SELECT @kept").await.unwrap();
    assert_eq!(kept, Some(None), "session state is reset");
    // A schema the new user may not use: 1044 (MySQL's answer to such a login), connection gone.
    let mut other = f.client().await;
    let e = other
        .change_user(
            mysql_async::ChangeUserOpts::default()
                .with_user(Some("ro".into()))
                .with_pass(Some("ro-pass".into()))
                .with_db_name(Some("NOSUCH".into())),
        )
        .await
        .unwrap_err();
    match &e {
        mysql_async::Error::Server(s) => assert!(s.code == 1049 || s.code == 1044, "{e:?}"),
        other => panic!("expected 1044/1049, got {other:?}"),
    }
    assert!(other.query_drop("SELECT 1").await.is_err());
    assert!(f.ids_on(1, "travelrecord").await.is_empty());
    // The table locks went with the old user: another session writes at once.
    let mut direct = f.backend(1).await;
    direct
        .query_drop("SET SESSION lock_wait_timeout = 3")
        .await
        .unwrap();
    direct
        .query_drop("INSERT INTO travelrecord (id) VALUES (2)")
        .await
        .unwrap();
    // A wrong password: 1045, and the connection is gone.
    let e = c
        .change_user(
            mysql_async::ChangeUserOpts::default()
                .with_user(Some("root".into()))
                .with_pass(Some("wrong".into())),
        )
        .await
        .unwrap_err();
    match &e {
        mysql_async::Error::Server(s) => assert_eq!(s.code, 1045, "{e:?}"),
        other => panic!("expected 1045, got {other:?}"),
    }
    assert!(c.query_drop("SELECT 1").await.is_err());
}
