//! MariaDB sequences through the gateway (issue 18): CREATE / ALTER / DROP SEQUENCE, the
//! sequence functions and their `... VALUE FOR` spellings, column defaults, SHOW and
//! information_schema — each verdict read on the backend (the sequence's stored value, its
//! existence), never from what the gateway answered. Mycat's own global sequences are
//! `tests/sequence.rs`.
//!
//! The world: schema SQ (default dataNode dn1, `orders` sharded by mod-long over dn1..dn3),
//! schema SQ2 (default dataNode dn2), TESTDB (no default dataNode), and a victim database no
//! schema names, holding a sequence the gateway's backend account can reach.

mod common;

use common::{Extra, Fixture, primary, server_error};
use mysql_async::prelude::Queryable;

fn extra(prefix: &str) -> Extra {
    let _ = prefix;
    Extra {
        schema_xml: r#"<schema name="SQ" dataNode="dn1">
        <table name="orders" primaryKey="id" dataNode="dn1,dn2,dn3" rule="mod-long" />
    </schema>
    <schema name="SQ2" dataNode="dn2" />"#
            .to_string(),
        users_xml: r#"<user name="sq">
        <property name="password">sq</property>
        <property name="schemas">SQ,SQ2,TESTDB</property>
    </user>
    <user name="sqone">
        <property name="password">sqone</property>
        <property name="schemas">SQ</property>
    </user>
    <user name="sqro">
        <property name="password">sqro</property>
        <property name="schemas">SQ</property>
        <property name="readOnly">true</property>
    </user>
    <user name="sqpriv">
        <property name="password">sqpriv</property>
        <property name="schemas">SQ</property>
        <privileges check="true">
            <schema name="SQ" dml="1111">
                <table name="secseq" dml="0000" />
                <table name="roseq" dml="0010" />
                <table name="insseq" dml="1000" />
            </schema>
        </privileges>
    </user>"#
            .to_string(),
        files: Vec::new(),
    }
}

/// The tests share the victim database: one at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn login(f: &Fixture, user: &str, db: Option<&str>) -> mysql_async::Conn {
    mysql_async::Conn::new(common::opts(f.port, user, user, db))
        .await
        .unwrap_or_else(|e| panic!("login as {user}: {e}"))
}

/// The stored next value of sequence `db`.`seq` read directly on MariaDB; `None` when it does
/// not exist.
async fn stored(db: &str, seq: &str) -> Option<i64> {
    let mut a = primary(None).await;
    a.query_first(format!("SELECT next_not_cached_value FROM `{db}`.`{seq}`"))
        .await
        .ok()
        .flatten()
}

/// Whether `db`.`name` is a sequence on the backend.
async fn is_sequence(db: &str, name: &str) -> bool {
    let mut a = primary(None).await;
    let n: Option<i64> = a
        .query_first(format!(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = '{name}' AND TABLE_TYPE = 'SEQUENCE'"
        ))
        .await
        .unwrap();
    n == Some(1)
}

async fn one(c: &mut mysql_async::Conn, sql: &str) -> Option<i64> {
    c.query_first::<Option<i64>, _>(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .flatten()
}

/// `sql` is refused; returns (errno, message).
async fn refused(c: &mut mysql_async::Conn, sql: &str) -> (u16, String) {
    let e = c
        .query_drop(sql)
        .await
        .expect_err(&format!("{sql} should be refused"));
    let (code, _, message) = server_error(e);
    (code, message)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sequence_form_works_and_the_backend_shows_it() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = Fixture::start("mseq1", extra("mseq1")).await;
    let (db1, db2) = (f.databases[0].clone(), f.databases[1].clone());
    for db in &f.databases {
        primary(Some(db))
            .await
            .query_drop("CREATE TABLE orders (id INT PRIMARY KEY, v INT)")
            .await
            .unwrap();
    }
    let mut c = login(&f, "sq", Some("SQ")).await;

    c.query_drop("CREATE SEQUENCE s1 START WITH 10 INCREMENT BY 5 NOCACHE")
        .await
        .unwrap();
    assert!(is_sequence(&db1, "s1").await);
    assert_eq!(stored(&db1, "s1").await, Some(10));
    assert_eq!(one(&mut c, "SELECT NEXTVAL(s1)").await, Some(10));
    assert_eq!(stored(&db1, "s1").await, Some(15));
    assert_eq!(one(&mut c, "SELECT NEXT VALUE FOR s1").await, Some(15));
    assert_eq!(stored(&db1, "s1").await, Some(20));
    // The session keeps the connection whose last value it asks for.
    assert_eq!(one(&mut c, "SELECT LASTVAL(s1)").await, Some(15));
    assert_eq!(one(&mut c, "SELECT PREVIOUS VALUE FOR s1").await, Some(15));
    assert_eq!(one(&mut c, "SELECT SETVAL(s1, 100)").await, Some(100));
    assert_eq!(stored(&db1, "s1").await, Some(105));
    c.query_drop("ALTER SEQUENCE s1 RESTART WITH 500")
        .await
        .unwrap();
    assert_eq!(stored(&db1, "s1").await, Some(500));

    // Column defaults, and values in INSERT.
    c.query_drop("CREATE TABLE withseq (id INT DEFAULT NEXT VALUE FOR s1, v INT)")
        .await
        .unwrap();
    c.query_drop("CREATE TABLE withseq2 (id INT DEFAULT nextval(s1), v INT)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO withseq (v) VALUES (1)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO withseq2 (v) VALUES (2)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO withseq (id, v) VALUES (NEXTVAL(s1), 3)")
        .await
        .unwrap();
    let rows: Vec<(i64, i64)> = primary(Some(&db1))
        .await
        .query("SELECT id, v FROM withseq UNION ALL SELECT id, v FROM withseq2 ORDER BY v")
        .await
        .unwrap();
    assert_eq!(rows, [(500, 1), (505, 2), (510, 3)]);
    assert_eq!(stored(&db1, "s1").await, Some(515));

    // Qualified with the logical schema, from it and from another schema.
    assert_eq!(one(&mut c, "SELECT NEXTVAL(SQ.s1)").await, Some(515));
    assert_eq!(
        one(&mut c, "SELECT NEXT VALUE FOR `SQ`.`s1`").await,
        Some(520)
    );
    let mut c2 = login(&f, "sq", Some("SQ2")).await;
    assert_eq!(one(&mut c2, "SELECT NEXTVAL(SQ.s1)").await, Some(525));
    assert_eq!(stored(&db1, "s1").await, Some(530));
    // Created in SQ2 by qualification: on SQ2's default dataNode.
    c.query_drop("CREATE SEQUENCE IF NOT EXISTS SQ2.s2 NOCACHE")
        .await
        .unwrap();
    assert!(is_sequence(&db2, "s2").await);
    assert!(!is_sequence(&db1, "s2").await);
    assert_eq!(one(&mut c2, "SELECT NEXTVAL(s2)").await, Some(1));
    assert_eq!(stored(&db2, "s2").await, Some(2));

    // A statement of the session's schema naming another schema's sequence is refused, not
    // run as a statement of the other schema (its target would be the other schema's table).
    for sql in [
        "INSERT INTO withseq (id, v) VALUES (NEXTVAL(SQ2.s2), 9)",
        "CREATE TABLE withseq3 (id INT DEFAULT NEXTVAL(SQ2.s2))",
    ] {
        let (code, message) = refused(&mut c, sql).await;
        assert!(
            code == 1064 && message.contains("several schemas"),
            "{sql}: {code} {message}"
        );
    }
    assert_eq!(stored(&db2, "s2").await, Some(2));
    for db in &f.databases {
        let n: Option<i64> = primary(None)
            .await
            .query_first(format!(
                "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = 'withseq3'"
            ))
            .await
            .unwrap();
        assert_eq!(n, Some(0), "{db}");
    }

    // SHOW, information_schema, the sequence as a table.
    let create: (String, String) = c
        .query_first("SHOW CREATE SEQUENCE s1")
        .await
        .unwrap()
        .unwrap();
    assert!(create.1.contains("CREATE SEQUENCE"), "{create:?}");
    let full: Vec<(String, String)> = c.query("SHOW FULL TABLES").await.unwrap();
    assert!(
        full.contains(&("s1".to_string(), "SEQUENCE".to_string())),
        "{full:?}"
    );
    let found: Vec<String> = c
        .query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'SEQUENCE' AND TABLE_NAME = 's1' AND TABLE_SCHEMA = 'SQ'")
        .await
        .unwrap();
    assert_eq!(found, ["s1"]);
    let raw: Option<i64> = c
        .query_first("SELECT next_not_cached_value FROM s1")
        .await
        .unwrap();
    assert_eq!(raw, Some(530));

    // CREATE OR REPLACE, TEMPORARY (kept on the session's connection), DROP of a list.
    c.query_drop("CREATE OR REPLACE SEQUENCE s1 START WITH 7 NOCACHE")
        .await
        .unwrap();
    assert_eq!(stored(&db1, "s1").await, Some(7));
    c.query_drop("CREATE TEMPORARY SEQUENCE tmpseq START WITH 42")
        .await
        .unwrap();
    assert_eq!(one(&mut c, "SELECT NEXTVAL(tmpseq)").await, Some(42));
    assert_eq!(one(&mut c, "SELECT NEXTVAL(tmpseq)").await, Some(43));
    c.query_drop("DROP TEMPORARY SEQUENCE tmpseq")
        .await
        .unwrap();
    c.query_drop("CREATE SEQUENCE s3").await.unwrap();
    c.query_drop("DROP SEQUENCE IF EXISTS s1, SQ.s3, nosuch")
        .await
        .unwrap();
    assert!(!is_sequence(&db1, "s1").await && !is_sequence(&db1, "s3").await);
    assert_eq!(stored(&db1, "s1").await, None);

    // A sharded INSERT using a sequence runs only where the sequence is (dn1).
    c.query_drop("CREATE SEQUENCE s4 NOCACHE").await.unwrap();
    c.query_drop("INSERT INTO orders (id, v) VALUES (3, NEXTVAL(s4))")
        .await
        .unwrap();
    let on_dn1: Vec<(i64, i64)> = primary(Some(&db1))
        .await
        .query("SELECT id, v FROM orders WHERE id = 3")
        .await
        .unwrap();
    assert_eq!(on_dn1, [(3, 1)]);
    for sql in [
        // id 1 lands on dn2, where s4 is not.
        "INSERT INTO orders (id, v) VALUES (1, NEXTVAL(s4))",
        "INSERT INTO orders (id, v) VALUES (3, 1), (4, NEXTVAL(s4))",
        "SELECT NEXTVAL(s4) FROM orders",
        "UPDATE orders SET v = NEXTVAL(s4)",
    ] {
        let (code, message) = refused(&mut c, sql).await;
        assert!(
            code == 1064 && message.contains("S4"),
            "{sql}: {code} {message}"
        );
    }
    assert_eq!(stored(&db1, "s4").await, Some(2));

    // A schema without a default dataNode has no place for a sequence.
    let mut t = login(&f, "sq", Some("TESTDB")).await;
    for sql in [
        "CREATE SEQUENCE tseq",
        "SELECT NEXTVAL(tseq)",
        "SELECT NEXT VALUE FOR tseq",
    ] {
        let (code, message) = refused(&mut t, sql).await;
        assert!(
            code == 1064
                && message.to_ascii_lowercase().contains("tseq")
                && message.contains("default dataNode"),
            "{sql}: {code} {message}"
        );
    }
    for db in &f.databases {
        assert!(!is_sequence(db, "tseq").await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequence_is_reached_only_with_the_rights_a_table_would_need() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = Fixture::start("mseq2", extra("mseq2")).await;
    let (db1, db2) = (f.databases[0].clone(), f.databases[1].clone());
    let victim = "t_mseq2_victim";
    let mut admin = primary(None).await;
    admin
        .query_drop(format!(
            "DROP DATABASE IF EXISTS {victim}; CREATE DATABASE {victim};
             CREATE SEQUENCE {victim}.vs NOCACHE;
             CREATE SEQUENCE `{db2}`.other NOCACHE;
             CREATE SEQUENCE `{db1}`.secseq NOCACHE;
             CREATE SEQUENCE `{db1}`.roseq NOCACHE;
             CREATE SEQUENCE `{db1}`.insseq NOCACHE;
             CREATE SEQUENCE `{db1}`.open NOCACHE;
             CREATE TABLE `{db1}`.pubt (id INT)"
        ))
        .await
        .unwrap();
    let before = async || {
        let mut v = Vec::new();
        for (db, s) in [
            (victim, "vs"),
            (db2.as_str(), "other"),
            (db1.as_str(), "secseq"),
            (db1.as_str(), "roseq"),
            (db1.as_str(), "insseq"),
            (db1.as_str(), "open"),
        ] {
            v.push((s, stored(db, s).await, is_sequence(db, s).await));
        }
        v
    };
    let start = before().await;
    assert!(
        start.iter().all(|(_, v, e)| *v == Some(1) && *e),
        "{start:?}"
    );

    // 1. Another logical schema the user may not use, a physical database, the backend's own
    // schemas: by qualification, quoting, comments and version comments.
    let mut one_schema = login(&f, "sqone", Some("SQ")).await;
    for sql in [
        "SELECT NEXTVAL(SQ2.other)",
        "SELECT NEXTVAL(`SQ2`.`other`)",
        "SELECT NEXTVAL(SQ2 /* x */ . other)",
        "SELECT NEXTVAL(/*!SQ2.*/other)",
        "SELECT NEXTVAL(/*!100000 SQ2.other */)",
        "SELECT NEXT VALUE FOR SQ2.other",
        "SELECT SETVAL(SQ2.other, 1000)",
        "SELECT 1 FROM pubt WHERE 1 = NEXTVAL(SQ2.other)",
        "ALTER SEQUENCE SQ2.other RESTART WITH 1000",
        "DROP SEQUENCE SQ2.other",
        "DROP SEQUENCE open, SQ2.other",
        "CREATE OR REPLACE SEQUENCE SQ2.other START WITH 1000",
        "CREATE OR REPLACE SEQUENCE /*!SQ2.*/other START WITH 1000",
        &format!("SELECT NEXTVAL({db2}.other)"),
        &format!("SELECT NEXTVAL(`{db2}`.other)"),
        &format!("SELECT NEXT VALUE FOR {victim}.vs"),
        &format!("SELECT NEXTVAL({victim} . vs)"),
        &format!("SELECT SETVAL({victim}.vs, 1000)"),
        &format!("SELECT NEXTVAL(/*!{victim}.*/vs)"),
        &format!("DROP SEQUENCE {victim}.vs"),
        &format!("DROP SEQUENCE IF EXISTS open, {victim}.vs"),
        &format!("ALTER SEQUENCE {victim}.vs RESTART WITH 1000"),
        &format!("CREATE OR REPLACE SEQUENCE {victim}.vs START WITH 1000"),
        &format!("CREATE TABLE grab (id INT DEFAULT NEXTVAL({victim}.vs))"),
        &format!("INSERT INTO pubt (id) VALUES (NEXT VALUE FOR {victim}.vs)"),
        "SELECT NEXTVAL(mysql.user)",
        "CREATE SEQUENCE mysql.evil",
    ] {
        let _ = one_schema.query_drop(sql).await;
    }

    // 2. Privilege masks: secseq allows nothing, roseq SELECT only, insseq INSERT only.
    let mut p = login(&f, "sqpriv", Some("SQ")).await;
    for sql in [
        "SELECT NEXTVAL(secseq)",
        "SELECT NEXT VALUE FOR SQ.secseq",
        "SELECT SETVAL(secseq, 1000)",
        "SELECT LASTVAL(secseq)",
        "ALTER SEQUENCE secseq RESTART WITH 1000",
        "DROP SEQUENCE secseq",
        "DROP SEQUENCE open, secseq",
        "CREATE OR REPLACE SEQUENCE secseq START WITH 1000",
        "INSERT INTO pubt (id) VALUES (NEXTVAL(secseq))",
        "CREATE TABLE grab2 (id INT DEFAULT NEXT VALUE FOR secseq)",
        "SELECT NEXTVAL(roseq)",
        "SELECT SETVAL(roseq, 1000)",
        "ALTER SEQUENCE roseq RESTART WITH 1000",
        "DROP SEQUENCE roseq",
        // NEXTVAL needs SELECT as well (MariaDB 10.11); SETVAL INSERT only.
        "SELECT NEXTVAL(insseq)",
        "DROP SEQUENCE insseq",
    ] {
        let _ = p.query_drop(sql).await;
    }

    // 3. A readOnly user changes no sequence.
    let mut ro = login(&f, "sqro", Some("SQ")).await;
    for sql in [
        "SELECT NEXTVAL(open)",
        "SELECT NEXT VALUE FOR open",
        "SELECT SETVAL(open, 1000)",
        "ALTER SEQUENCE open RESTART WITH 1000",
        "DROP SEQUENCE open",
        "CREATE SEQUENCE rocreated",
    ] {
        let _ = ro.query_drop(sql).await;
    }
    assert_eq!(one(&mut ro, "SELECT LASTVAL(open)").await, None);

    // The verdict, on the backend.
    let end = before().await;
    assert_eq!(end, start);
    for db in &f.databases {
        assert!(!is_sequence(db, "rocreated").await);
        for t in ["grab", "grab2"] {
            let n: Option<i64> = admin
                .query_first(format!(
                    "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = '{t}'"
                ))
                .await
                .unwrap();
            assert_eq!(n, Some(0), "{db}.{t}");
        }
    }
    let evil: Option<i64> = admin
        .query_first("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'mysql' AND TABLE_NAME = 'evil'")
        .await
        .unwrap();
    assert_eq!(evil, Some(0));
    let pubt: Option<i64> = admin
        .query_first(format!("SELECT COUNT(*) FROM `{db1}`.pubt"))
        .await
        .unwrap();
    assert_eq!(pubt, Some(0));
    // What the masks allow still works (so the refusals above are the masks').
    assert_eq!(one(&mut p, "SELECT LASTVAL(roseq)").await, None);
    assert_eq!(one(&mut p, "SELECT SETVAL(insseq, 5)").await, Some(5));
    assert_eq!(stored(&db1, "insseq").await, Some(6));
    admin
        .query_drop(format!("DROP DATABASE {victim}"))
        .await
        .unwrap();
}
