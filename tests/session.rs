//! Session state follows the session onto every backend connection it takes: SET of system
//! variables, SET NAMES, the isolation level and user variables.

mod common;

use common::{Extra, Fixture, server_error};
use mysql_async::prelude::Queryable;

#[tokio::test]
async fn session_variables_follow_the_session_onto_every_connection() {
    let f = Fixture::start("sess", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop(
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000001, 'b'), (10000001, 'c')",
    )
    .await
    .unwrap();
    c.query_drop("SET time_zone = '+08:00', @x = 42, @s = CONCAT('a', 'b'), SESSION sql_mode = 'ANSI_QUOTES', @q = 'select it''s'")
        .await
        .unwrap();
    c.query_drop("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        .await
        .unwrap();
    // Many statements, so several pooled connections serve them: each gets the state.
    for _ in 0..10 {
        let (tz, x, s, mode, iso): (String, i64, String, String, String) = c
            .query_first("SELECT @@time_zone, @x, @s, @@sql_mode, @@tx_isolation")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (tz.as_str(), x, s.as_str(), mode.as_str(), iso.as_str()),
            ("+08:00", 42, "ab", "ANSI_QUOTES", "READ-COMMITTED")
        );
    }
    let q: Option<String> = c.query_first("SELECT @q").await.unwrap();
    assert_eq!(q.as_deref(), Some("select it's"));
    // On every node of a multi-node read.
    let zones: Vec<(i64, String)> = c
        .query("SELECT id, @@time_zone FROM travelrecord ORDER BY id")
        .await
        .unwrap();
    assert_eq!(zones.len(), 3);
    assert!(zones.iter().all(|(_, z)| z == "+08:00"), "{zones:?}");
    // ANSI_QUOTES is in force: "..." is an identifier.
    let id: Option<i64> = c
        .query_first(r#"SELECT "id" FROM travelrecord WHERE id = 1"#)
        .await
        .unwrap();
    assert_eq!(id, Some(1));

    // A bad value gets the server's error and changes nothing.
    let (code, _, msg) = server_error(
        c.query_drop("SET sql_mode = 'NO_SUCH_MODE'")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1231, "{msg}");
    let mode: Option<String> = c.query_first("SELECT @@sql_mode").await.unwrap();
    assert_eq!(mode.as_deref(), Some("ANSI_QUOTES"));

    // Inside a transaction the pinned connections get a new SET too.
    c.query_drop("BEGIN").await.unwrap();
    let _: Vec<i64> = c.query("SELECT id FROM travelrecord").await.unwrap();
    c.query_drop("SET @y = 7").await.unwrap();
    let y: Vec<(i64, Option<i64>)> = c
        .query("SELECT id, @y FROM travelrecord ORDER BY id")
        .await
        .unwrap();
    assert_eq!(y, [(1, Some(7)), (5000001, Some(7)), (10000001, Some(7))]);
    c.query_drop("COMMIT").await.unwrap();

    // A SET that would read a table is refused (its rows may be on several nodes).
    let (code, _, _) = server_error(
        c.query_drop("SET @n = (SELECT COUNT(*) FROM travelrecord)")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1064);

    // Another session does not see this one's state.
    let mut other = f.client().await;
    let (tz, x): (String, Option<i64>) = other
        .query_first("SELECT @@time_zone, @x")
        .await
        .unwrap()
        .unwrap();
    assert_ne!(tz, "+08:00");
    assert_eq!(x, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_warnings_reads_the_last_statement_s_warnings_from_its_nodes() {
    let f = Fixture::start("h7warn", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000001, 'b')")
        .await
        .unwrap();
    // Two duplicates, one on dn1 and one on dn2: each node's warning, in dataNode order.
    c.query_drop(
        "INSERT IGNORE INTO travelrecord (id, user_id) VALUES (1, 'x'), (5000001, 'y'), (7, 'z')",
    )
    .await
    .unwrap();
    assert_eq!(c.affected_rows(), 1);
    let warnings: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings
            .iter()
            .all(|(level, code, _)| level == "Warning" && *code == 1062)
    );
    assert!(warnings[0].2.contains("'1'"), "{warnings:?}");
    assert!(warnings[1].2.contains("'5000001'"), "{warnings:?}");
    let limited: Vec<(String, u32, String)> = c.query("SHOW WARNINGS LIMIT 1, 1").await.unwrap();
    assert_eq!(limited, warnings[1..]);
    // Statements that read the diagnostics leave them as they are.
    c.query_drop("SHOW COUNT(*) WARNINGS").await.unwrap();
    let again: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert_eq!(again, warnings);
    // A statement refused before it reaches a node clears them too.
    assert!(c.query_drop("SELECT * FROM no_such_table").await.is_err());
    let none: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert!(none.is_empty(), "{none:?}");
    // A global table's write runs on every node: one warning, as one database gives.
    c.query_drop("INSERT INTO company (id, name) VALUES (1, 'a')")
        .await
        .unwrap();
    c.query_drop("INSERT IGNORE INTO company (id, name) VALUES (1, 'b')")
        .await
        .unwrap();
    let global: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert_eq!(global.len(), 1, "{global:?}");
    // The next statement on a dataNode starts a clean list.
    c.query_drop("SELECT id FROM travelrecord WHERE id = 7")
        .await
        .unwrap();
    let none: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert!(none.is_empty(), "{none:?}");
}
