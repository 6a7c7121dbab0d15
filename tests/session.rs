//! Session state follows the session onto every backend connection it takes: SET of system
//! variables, SET NAMES, the isolation level and user variables.

mod common;

use common::{Extra, Fixture, server_error};
use mysql_async::consts::{ColumnFlags, ColumnType};
use mysql_async::prelude::Queryable;

/// A connection to a fresh plain database `name` on the sandbox primary holding the sample
/// tables: the one database a differential test compares the gateway with.
async fn reference(name: &str) -> mysql_async::Conn {
    let mut r = common::primary(None).await;
    r.query_drop(format!("DROP DATABASE IF EXISTS {name}"))
        .await
        .unwrap();
    r.query_drop(format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    r.query_drop(format!("USE {name}")).await.unwrap();
    for stmt in common::sample_statements() {
        r.query_drop(stmt).await.unwrap();
    }
    r
}

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

    // A SET that would read a table is refused (its rows may be on several nodes, and a value
    // is a literal or an expression over no table).
    let (code, _, _) = server_error(
        c.query_drop("SET @n = (SELECT COUNT(*) FROM travelrecord)")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1235);

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

/// The warning count a direct connection to each of the fixture's first two databases gets
/// for `sql`, summed, and their `SHOW WARNINGS` rows in database order: what the gateway
/// must report for the same statement over those dataNodes.
async fn warnings_on_nodes(f: &Fixture, sql: &str) -> (u16, Vec<(String, u32, String)>) {
    let mut count = 0;
    let mut rows = Vec::new();
    for n in 1..=2 {
        let mut b = f.backend(n).await;
        let _: Vec<mysql_async::Row> = b.query(sql).await.unwrap();
        count += b.get_warnings();
        let shown: Vec<(String, u32, String)> = b.query("SHOW WARNINGS").await.unwrap();
        rows.extend(shown);
    }
    (count, rows)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_select_s_warnings_are_counted_in_its_eof_and_shown() {
    let f = Fixture::start("h7selw", Extra::default()).await;
    let mut c = f.client().await;
    // dn1 holds ids 1 and 7, dn2 id 5000001: two of the three user_ids are not numbers.
    c.query_drop(
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (7, '12'), (5000001, 'b')",
    )
    .await
    .unwrap();
    let sql = "SELECT id, CAST(user_id AS UNSIGNED) FROM travelrecord WHERE id < 6000000";
    let (count, shown) = warnings_on_nodes(&f, sql).await;
    assert_eq!(count, 2, "each node warns once: {shown:?}");

    // Text protocol, rows merged in order: the EOF (an OK with CLIENT_DEPRECATE_EOF, which
    // mysql_async sets) counts both nodes' warnings, and SHOW WARNINGS lists them.
    let rows: Vec<(i64, u64)> = c.query(format!("{sql} ORDER BY id")).await.unwrap();
    assert_eq!(rows, [(1, 0), (7, 12), (5000001, 0)]);
    assert_eq!(c.get_warnings(), count);
    let listed: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert_eq!(listed, shown);
    // The count as the session's own, not some node's: MySQL's three ways to ask.
    for ask in [
        "SELECT @@warning_count",
        "SELECT @@session.warning_count",
        "SHOW COUNT(*) WARNINGS",
    ] {
        let n: Option<u64> = c.query_first(ask).await.unwrap();
        assert_eq!(n, Some(u64::from(count)), "{ask}");
    }
    let listed: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert_eq!(listed, shown, "asking for the count keeps the list");
    // Typed as MySQL types them: Code is an INT UNSIGNED, in both protocols.
    let result = c.query_iter("SHOW WARNINGS").await.unwrap();
    let types: Vec<_> = result
        .columns_ref()
        .iter()
        .map(|c| {
            (
                c.column_type(),
                c.flags().contains(ColumnFlags::UNSIGNED_FLAG),
            )
        })
        .collect();
    drop(result);
    assert_eq!(types[1], (ColumnType::MYSQL_TYPE_LONG, true), "{types:?}");
    let binary: Vec<mysql_async::Row> = c.exec("SHOW WARNINGS", ()).await.unwrap();
    assert_eq!(binary.len(), shown.len());
    assert!(
        binary.iter().all(|r| matches!(
            r.as_ref(1),
            Some(mysql_async::Value::Int(1292) | mysql_async::Value::UInt(1292))
        )),
        "{binary:?}"
    );

    // Binary protocol, rows streamed as they come.
    let rows: Vec<(i64, u64)> = c
        .exec(
            "SELECT id, CAST(user_id AS UNSIGNED) FROM travelrecord WHERE id < ?",
            (6000000,),
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(c.get_warnings(), count);
    let listed: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert_eq!(listed, shown);

    // One node's; then a statement without warnings counts none and clears the list.
    let one: Option<u64> = c
        .query_first("SELECT CAST(user_id AS UNSIGNED) FROM travelrecord WHERE id = 5000001")
        .await
        .unwrap();
    assert_eq!(one, Some(0));
    assert_eq!(c.get_warnings(), 1);
    let listed: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert_eq!(listed, shown[1..]);
    let _: Vec<i64> = c.query("SELECT id FROM travelrecord").await.unwrap();
    assert_eq!(c.get_warnings(), 0);
    let listed: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert!(listed.is_empty(), "{listed:?}");
    let n: Option<u64> = c.query_first("SELECT @@warning_count").await.unwrap();
    assert_eq!(n, Some(0));

    // Inside a transaction (pinned connections) too.
    c.query_drop("BEGIN").await.unwrap();
    let _: Vec<(i64, u64)> = c.query(sql).await.unwrap();
    assert_eq!(c.get_warnings(), count);
    let listed: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert_eq!(listed.len(), shown.len());
    c.query_drop("COMMIT").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn found_rows_answers_as_one_database_holding_the_rows_does() {
    let f = Fixture::start("h7found", Extra::default()).await;
    // The reference: one database holding the same rows.
    let mut r = reference("t_h7found_ref").await;
    let mut c = f.client().await;
    let rows = "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5000001, 'e'), (5000002, 'f')";
    c.query_drop(rows).await.unwrap();
    r.query_drop(rows).await.unwrap();
    // Each step runs on both; after each, FOUND_ROWS() must agree. Outside a transaction
    // every statement may take another pooled connection: the count is the session's.
    let steps = [
        "SELECT SQL_CALC_FOUND_ROWS id FROM travelrecord WHERE id BETWEEN 1 AND 100 ORDER BY id LIMIT 2",
        "SELECT 1",
        "SELECT id FROM travelrecord ORDER BY id",
        "SELECT id FROM travelrecord ORDER BY id LIMIT 3",
        // On one dataNode, MariaDB counts the rows the offset skipped (3, 2), and past the
        // last row, all of them (4).
        "SELECT id FROM travelrecord WHERE id BETWEEN 1 AND 100 ORDER BY id LIMIT 2, 1",
        "SELECT id FROM travelrecord WHERE id BETWEEN 1 AND 100 ORDER BY id LIMIT 1 OFFSET 1",
        "SELECT id FROM travelrecord WHERE id BETWEEN 1 AND 100 LIMIT 10, 1",
        // Merged over several dataNodes, the rows the merge's offset skipped count too (5, 3,
        // 3, 3), and past the last row, all of them (6).
        "SELECT id FROM travelrecord ORDER BY id LIMIT 3, 2",
        "SELECT id FROM travelrecord ORDER BY id LIMIT 2 OFFSET 1",
        "SELECT user_id, COUNT(*) FROM travelrecord GROUP BY user_id ORDER BY user_id LIMIT 1, 2",
        "SELECT DISTINCT user_id FROM travelrecord ORDER BY user_id LIMIT 1, 2",
        "SELECT id FROM travelrecord ORDER BY id LIMIT 100, 2",
        "SHOW CREATE TABLE travelrecord",
        "EXPLAIN SELECT id FROM travelrecord WHERE id = 1",
        "DESCRIBE travelrecord",
        "UPDATE travelrecord SET user_id = 'z' WHERE id = 1",
        "SELECT LAST_INSERT_ID()",
        "SELECT id FROM travelrecord WHERE id = 5000001",
        "BEGIN",
        "SELECT SQL_CALC_FOUND_ROWS id FROM travelrecord WHERE id = 5000002 OR id = 5000001 LIMIT 1",
        "COMMIT",
        // SQL-level prepared statements on one dataNode: counted as the text prepared (4, 3,
        // 4), not as `EXECUTE s`. First one the node is asked about (past the last row), on
        // the connection the PREPARE took from the pool: the EXECUTE's own count, not cleared
        // as a previous holder's.
        "PREPARE s FROM 'SELECT id FROM travelrecord WHERE id BETWEEN 1 AND 100 LIMIT 10, 1'",
        "EXECUTE s",
        "PREPARE s FROM 'SELECT id FROM travelrecord WHERE id BETWEEN 1 AND 100 ORDER BY id LIMIT 1, 2'",
        "EXECUTE s",
        "PREPARE s FROM 'SELECT SQL_CALC_FOUND_ROWS id FROM travelrecord WHERE id BETWEEN 1 AND 100 ORDER BY id LIMIT 1, 2'",
        "EXECUTE s",
    ];
    let mut got = Vec::new();
    let mut want = Vec::new();
    for step in steps {
        let _: Vec<mysql_async::Row> = c.query(step).await.unwrap();
        let _: Vec<mysql_async::Row> = r.query(step).await.unwrap();
        // Asked twice: the first answer is itself a one-row SELECT.
        for _ in 0..2 {
            let g: Option<u64> = c.query_first("SELECT FOUND_ROWS()").await.unwrap();
            let w: Option<u64> = r.query_first("SELECT FOUND_ROWS()").await.unwrap();
            got.push((step, g));
            want.push((step, w));
        }
    }
    assert_eq!(got, want);
    assert_eq!(got[0].1, Some(4), "the rows without the LIMIT");
    // The label is the alias, or the expression as written.
    let result = c.query_iter("SELECT FOUND_ROWS() AS total").await.unwrap();
    assert_eq!(result.columns_ref()[0].name_str(), "total");
    drop(result);
    let result = c.query_iter("SELECT found_rows()").await.unwrap();
    assert_eq!(result.columns_ref()[0].name_str(), "found_rows()");
}

/// `FOUND_ROWS()`, `LAST_INSERT_ID()`, `@@identity`, `@@last_insert_id` and `ROW_COUNT()`
/// inside a larger statement answer the session's values, as one database holding the rows
/// does (forwarded, they were the pooled connection's, another statement's): in a select list
/// (labelled as written), in an expression, in `SET @y = ...`, in an INSERT's values, and in a
/// statement the plan cache would keep (the same shape twice, with other values).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_inside_statements_answer_as_one_database_holding_the_rows_does() {
    let f = Fixture::start("h7ctr", Extra::default()).await;
    let mut r = reference("t_h7ctr_ref").await;
    let mut c = f.client().await;
    // Another client's statements in between run on the same pooled connections and leave
    // them other values.
    let mut other = f.client().await;
    // Each step runs on both; its answer (column labels, rows as text) must agree.
    let steps = [
        "INSERT INTO travelrecord (id, user_id, days) VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3), (5000001, 'd', 4), (5000002, 'e', 5)",
        "SELECT row_count(), 1",
        "UPDATE travelrecord SET days = LAST_INSERT_ID(7) WHERE id = 1",
        "SELECT last_insert_id()+0, @@identity + 0, row_count() * 10",
        "SELECT @@last_insert_id",
        "SELECT @@session.identity, 1 AS one",
        "INSERT INTO travelrecord (id, user_id, days) VALUES (4, 'x', last_insert_id())",
        "SELECT id, days FROM travelrecord WHERE id = 4",
        "SELECT id FROM travelrecord ORDER BY id LIMIT 3",
        "SELECT found_rows(), 1",
        "SELECT found_rows()+0",
        "SET @y = found_rows()",
        "SELECT @y",
        "SELECT id, found_rows() FROM travelrecord WHERE id BETWEEN 1 AND 2",
        "SELECT id, found_rows() FROM travelrecord WHERE id BETWEEN 1 AND 3",
        "SELECT id, found_rows() FROM travelrecord WHERE id BETWEEN 1 AND 3",
        "UPDATE travelrecord SET user_id = 'q' WHERE id IN (1, 5000001)",
        "SELECT 5-row_count(), ROW_COUNT()",
        "SET @r = row_count()",
        "SELECT @r, row_count() + 0",
        "SELECT id FROM travelrecord WHERE id = 9",
        "SELECT found_rows()'x'",
    ];
    let answer = |rows: Vec<mysql_async::Row>| -> Vec<Vec<Option<String>>> {
        rows.into_iter()
            .map(|row| {
                (0..row.len())
                    .map(|i| match row.as_ref(i) {
                        Some(mysql_async::Value::NULL) | None => None,
                        Some(v) => Some(v.as_sql(true).trim_matches('\'').to_string()),
                    })
                    .collect()
            })
            .collect()
    };
    let mut got = Vec::new();
    let mut want = Vec::new();
    for step in steps {
        for (conn, out) in [(&mut c, &mut got), (&mut r, &mut want)] {
            let mut result = conn.query_iter(step).await.unwrap();
            let labels: Vec<String> = result
                .columns_ref()
                .iter()
                .map(|c| c.name_str().into_owned())
                .collect();
            let rows: Vec<mysql_async::Row> = result.collect().await.unwrap();
            out.push((step, labels, answer(rows)));
        }
        other
            .query_drop("UPDATE travelrecord SET days = LAST_INSERT_ID(99) WHERE id = 999")
            .await
            .unwrap();
        other.query_drop("SELECT 1 FROM DUAL").await.unwrap();
    }
    assert_eq!(got, want);
}

/// `SELECT ROW_COUNT()` answers the session's last statement as one database holding the
/// rows does (forwarded, a pooled connection answered its own last statement, which may be
/// another client's): the OK's affected rows, 0 after SET / DDL / BEGIN, -1 after a result
/// set or an error (mysql-test `foreign_key`: -1 after the client's SHOW WARNINGS).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_count_answers_as_one_database_holding_the_rows_does() {
    let f = Fixture::start("h7rowc", Extra::default()).await;
    let mut r = reference("t_h7rowc_ref").await;
    let mut c = f.client().await;
    // Another client's statements in between may run on the same pooled connections.
    let mut other = f.client().await;
    let steps = [
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (2, 'b'), (5000001, 'c')",
        "UPDATE travelrecord SET user_id = 'z' WHERE id IN (1, 5000001)",
        "UPDATE travelrecord SET user_id = 'z' WHERE id = 1",
        "SELECT id FROM travelrecord",
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'dup')",
        "SET @x = 1",
        "INSERT IGNORE INTO travelrecord (id, user_id) VALUES (2, 'dup'), (3, 'new')",
        "SHOW WARNINGS",
        "DELETE FROM travelrecord WHERE id > 0",
        "BEGIN",
        "INSERT INTO travelrecord (id, user_id) VALUES (7, 'q')",
        "COMMIT",
        "TRUNCATE TABLE travelrecord",
        "SELECT ROW_COUNT()",
    ];
    let mut got = Vec::new();
    let mut want = Vec::new();
    for step in steps {
        let _ = c.query_drop(step).await;
        let _ = r.query_drop(step).await;
        other
            .query_drop("UPDATE travelrecord SET user_id = 'o' WHERE id = 999")
            .await
            .unwrap();
        let g: Option<i64> = c.query_first("SELECT ROW_COUNT()").await.unwrap();
        let w: Option<i64> = r.query_first("SELECT ROW_COUNT()").await.unwrap();
        got.push((step, g));
        want.push((step, w));
    }
    assert_eq!(got, want);
    assert_eq!(got[0].1, Some(3));
    let result = c.query_iter("SELECT row_count() AS n").await.unwrap();
    assert_eq!(result.columns_ref()[0].name_str(), "n");
}

/// The OK packet's info text (`Records: 3  Duplicates: 0  Warnings: 0`, `Rows matched: 2
/// Changed: 2  Warnings: 0`, what the mariadb client prints and `mysql_info()` reads) is the one
/// one database holding the rows writes: the nodes' counts summed. The gateway sent none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ok_info_text_answers_as_one_database_holding_the_rows_does() {
    let f = Fixture::start("h7info", Extra::default()).await;
    let mut r = reference("t_h7info_ref").await;
    let mut c = f.client().await;
    let steps = [
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (2, 'b'), (5000001, 'c')",
        "INSERT IGNORE INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000002, 'd')",
        "UPDATE travelrecord SET user_id = 'z' WHERE id IN (1, 2, 5000001)",
        "UPDATE travelrecord SET user_id = 'z' WHERE id IN (1, 5000002)",
        "UPDATE travelrecord SET user_id = 'y' WHERE id = 2",
        "REPLACE INTO travelrecord (id, user_id) VALUES (1, 'r'), (10000001, 's')",
        "INSERT INTO travelrecord (id, user_id) VALUES (3, 'q')",
        "DELETE FROM travelrecord WHERE id > 0",
    ];
    let mut exact = 0;
    for step in steps {
        c.query_drop(step).await.unwrap();
        r.query_drop(step).await.unwrap();
        let (g, w) = (c.info().into_owned(), r.info().into_owned());
        assert_eq!(c.affected_rows(), r.affected_rows(), "{step}");
        // Where a node wrote none (a one-row INSERT there), the sum is unknown: none is sent.
        assert!(g.is_empty() || g == w, "{step}: {g:?} / {w:?}");
        if step.starts_with("UPDATE") || step.contains("(3, 'q')") {
            assert_eq!(g, w, "{step}");
            exact += 1;
        }
    }
    assert_eq!(exact, 4);
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
    assert_eq!(
        c.get_warnings(),
        2,
        "the OK packet counts both nodes' warnings"
    );
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
    // A statement refused before it reaches a node replaces them with its error, as a failed
    // statement does in MySQL.
    assert!(c.query_drop("SELECT * FROM no_such_table").await.is_err());
    let error: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert_eq!(error.len(), 1, "{error:?}");
    assert_eq!(
        (error[0].0.as_str(), error[0].1),
        ("Error", 1064),
        "{error:?}"
    );
    assert!(error[0].2.contains("NO_SUCH_TABLE"), "{error:?}");
    // A global table's write runs on every node: one warning, as one database gives.
    c.query_drop("INSERT INTO company (id, name) VALUES (1, 'a')")
        .await
        .unwrap();
    c.query_drop("INSERT IGNORE INTO company (id, name) VALUES (1, 'b')")
        .await
        .unwrap();
    assert_eq!(c.get_warnings(), 1);
    let global: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert_eq!(global.len(), 1, "{global:?}");
    // The next statement on a dataNode starts a clean list.
    c.query_drop("SELECT id FROM travelrecord WHERE id = 7")
        .await
        .unwrap();
    let none: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
    assert!(none.is_empty(), "{none:?}");
}

/// mysqldump's settings in version comments (`/*!40101 SET ... */`) run as their bodies would:
/// a restore through manx writes under the dump's time zone, sql_mode and checks, and puts the
/// session's own back at the end. (They were acknowledged and run nowhere, as Mycat does: a
/// dump's TIMESTAMPs were then restored in the server's time zone, not the dump's UTC.)
#[tokio::test]
async fn a_dump_s_version_comment_settings_take_effect_on_the_backends() {
    let f = Fixture::start("dumpset", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000001, 'b')")
        .await
        .unwrap();
    let own: (String, i64, String) = f
        .backend(1)
        .await
        .query_first("SELECT @@time_zone, @@foreign_key_checks, @@sql_mode")
        .await
        .unwrap()
        .unwrap();
    for s in [
        "/*!40103 SET @OLD_TIME_ZONE=@@TIME_ZONE */",
        "/*!40103 SET TIME_ZONE='+00:00' */",
        "/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */",
        "/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */",
    ] {
        c.query_drop(s).await.unwrap();
    }
    // Answered by the backends, on every node the read reaches.
    let seen: Vec<(i64, String, i64, String)> = c
        .query(
            "SELECT id, @@time_zone, @@foreign_key_checks, @@sql_mode FROM travelrecord ORDER BY id",
        )
        .await
        .unwrap();
    let dump = |id: i64| {
        (
            id,
            "+00:00".to_string(),
            0,
            "NO_AUTO_VALUE_ON_ZERO".to_string(),
        )
    };
    assert_eq!(seen, vec![dump(1), dump(5000001)]);
    for s in [
        "/*!40103 SET TIME_ZONE=@OLD_TIME_ZONE */",
        "/*!40014 SET FOREIGN_KEY_CHECKS=@OLD_FOREIGN_KEY_CHECKS */",
        "/*!40101 SET SQL_MODE=@OLD_SQL_MODE */",
    ] {
        c.query_drop(s).await.unwrap();
    }
    let back: Vec<(String, i64, String)> = c
        .query("SELECT @@time_zone, @@foreign_key_checks, @@sql_mode FROM travelrecord")
        .await
        .unwrap();
    assert_eq!(back, vec![own.clone(), own]);
}

/// mysqldump's `SET character_set_client = @saved_cs_client` puts back the charset it saved;
/// a charset from a variable is looked up in the gateway's table as one given by name (gbk is
/// converted by the gateway since issue 18: the backends stay utf8mb4).
#[tokio::test]
async fn a_client_charset_from_a_user_variable_is_checked_once_evaluated() {
    let f = Fixture::start("cs_var", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (1, 'a')")
        .await
        .unwrap();
    for s in [
        "/*!40101 SET @saved_cs_client     = @@character_set_client */",
        "/*!40101 SET character_set_client = latin1 */",
        "/*!40101 SET character_set_client = @saved_cs_client */",
    ] {
        c.query_drop(s).await.unwrap();
    }
    let cs: Option<String> = c
        .query_first("SELECT @@character_set_client FROM travelrecord WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(cs.as_deref(), Some("utf8mb4"));

    // The bytes of a name as a hex or bit value are not a name (they passed for one before:
    // the backend then read the session's statements as gbk, and `'丁\'` ended a string the
    // gateway thought went on — SQL injection).
    for sql in [
        "SET character_set_client = 0x67626b",
        "/*!40101 SET character_set_client = 0x62696735 */",
        "SET character_set_client = 0b011001110110001001101011",
        "SET NAMES 0x736a6973",
    ] {
        let (code, _, msg) = server_error(c.query_drop(sql).await.unwrap_err());
        assert_eq!(code, 1235, "{sql}: {msg}");
    }
    let cs: Option<String> = c
        .query_first("SELECT @@character_set_client FROM travelrecord WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(cs.as_deref(), Some("utf8mb4"));

    c.query_drop("SET @cs = 'gbk'").await.unwrap();
    c.query_drop("SET character_set_client = @cs")
        .await
        .unwrap();
    // On every statement the session sends, whichever connection it takes.
    for _ in 0..5 {
        let cs: Option<String> = c
            .query_first("SELECT @@character_set_client FROM travelrecord WHERE id = 1")
            .await
            .unwrap();
        assert_eq!(cs.as_deref(), Some("gbk"));
    }
    // A value that names no character set the gateway has: MariaDB's 1115.
    c.query_drop("SET @cs = 'nosuch'").await.unwrap();
    let (code, _, msg) = server_error(
        c.query_drop("SET character_set_client = @cs")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1115, "{msg}");
}

/// A user variable holding a geometry or a binary string is replayed as what it was on the
/// other connections the session takes (mysql-test `gis-precise`: `SET @geom = ..` then
/// `ST_BUFFER(@geom, 1)` got 4079 "Illegal parameter data type longblob").
#[tokio::test]
async fn geometry_and_binary_user_variables_keep_their_type_on_every_connection() {
    let f = Fixture::start("sessgeo", Extra::default()).await;
    let mut c = f.client().await;
    c.query_drop(
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000001, 'b'), (10000001, 'c')",
    )
    .await
    .unwrap();
    c.query_drop("SET @g = ST_GeomFromText('POLYGON((0 0, 1 1, 1 0, 0 0))', 4326), @b = X'FF00C3'")
        .await
        .unwrap();
    // Every node of a multi-node read: the other nodes' connections get the replayed state.
    let rows: Vec<(i64, String, i64, String, String)> = c
        .query(
            "SELECT id, ST_AsText(@g), ST_SRID(@g), HEX(@b), ST_AsText(ST_Buffer(@g, 0)) \
             FROM travelrecord ORDER BY id",
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 3);
    for (_, text, srid, hex, buffer) in &rows {
        assert_eq!(text, "POLYGON((0 0,1 1,1 0,0 0))", "{rows:?}");
        assert_eq!(*srid, 4326, "{rows:?}");
        assert_eq!(hex, "FF00C3", "{rows:?}");
        assert!(buffer.starts_with("POLYGON"), "{rows:?}");
    }
}

/// `CONNECTION_ID()` anywhere in a statement (and in a SET value) is the gateway's connection
/// id, as `SELECT CONNECTION_ID()` alone answers: forwarded, each statement got its pooled
/// connection's thread id (mysql-test `user_var`: `SET @a := connection_id() + 3; SELECT @a -
/// connection_id()` gave 1690 where MariaDB answers 3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_id_is_the_gateway_s_everywhere() {
    let f = Fixture::start("h7connid", Extra::default()).await;
    let mut c = f.client().await;
    let id: Option<u64> = c.query_first("SELECT CONNECTION_ID()").await.unwrap();
    let plus: Option<(u64, u8)> = c
        .query_first("SELECT connection_id() + 0, 1")
        .await
        .unwrap();
    assert_eq!(id, plus.map(|p| p.0));
    c.query_drop("SET @a := connection_id() + 3").await.unwrap();
    // Another client's statements may take the pooled connections in between.
    let mut other = f.client().await;
    other.query_drop("SELECT 1").await.unwrap();
    let d: Option<i64> = c.query_first("SELECT @a - connection_id()").await.unwrap();
    assert_eq!(d, Some(3));
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM travelrecord WHERE id = connection_id()")
        .await
        .unwrap();
    assert_eq!(n, Some(0));
}
