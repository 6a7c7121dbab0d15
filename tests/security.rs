//! The security boundary (issue 17), tried as an attacker with an application account would try
//! it, with the backend account behind the gateway holding `ALL ON *.* WITH GRANT OPTION` (the
//! sandbox's `manx`). Every verdict is read on the backend — rows, tables, users, globals, files
//! — never from what the gateway answered: a statement "refused" with an OK-looking error that
//! still ran would fail here.

mod common;

use common::{Extra, Fixture, primary, server_error};
use mysql_async::prelude::Queryable;

/// The PUB schema: a default dataNode (`t_sec_pub`, unconfigured tables go there) on a dataHost
/// whose account has every privilege; a victim database beside it that no schema names.
const PUB_DB: &str = "t_sec_pub";
const VICTIM_DB: &str = "t_sec_victim";

fn extra() -> Extra {
    Extra {
        schema_xml: format!(
            r#"<schema name="PUB" dataNode="dnpub" />
    <dataNode name="dnpub" dataHost="allpriv" database="{PUB_DB}" />
    <dataHost name="allpriv" maxCon="20" minCon="1" balance="0" writeType="0" dbType="mysql" dbDriver="native" switchType="-1">
        <heartbeat>select user()</heartbeat>
        <writeHost host="allprivM" url="127.0.0.1:13306" user="manx" password="manx" />
    </dataHost>"#
        ),
        users_xml: r#"<user name="app">
        <property name="password">app</property>
        <property name="schemas">PUB,TESTDB</property>
    </user>
    <user name="ro">
        <property name="password">ro</property>
        <property name="schemas">PUB</property>
        <property name="readOnly">true</property>
    </user>
    <user name="priv">
        <property name="password">priv</property>
        <property name="schemas">PUB</property>
        <privileges check="true">
            <schema name="PUB" dml="1111">
                <table name="secret" dml="0000" />
                <table name="year_month" dml="0000" />
                <table name="mt_noins" dml="0111" />
            </schema>
        </privileges>
    </user>
    <user name="privt">
        <property name="password">privt</property>
        <property name="schemas">TESTDB</property>
        <privileges check="true">
            <schema name="TESTDB" dml="1111">
                <table name="hotnews" dml="0000" />
            </schema>
        </privileges>
    </user>
    <user name="testonly">
        <property name="password">testonly</property>
        <property name="schemas">TESTDB</property>
    </user>"#
            .to_string(),
        files: Vec::new(),
    }
}

/// The tests share PUB's and the victim's databases: one at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The world of one test: the fixture, and PUB's and the victim's databases (re)created with
/// their rows: `pub` (3 rows), `secret` (1 row) in PUB; `vt` (1 row) and `canary` in the victim.
async fn world(prefix: &str) -> Fixture {
    let mut admin = primary(None).await;
    for db in [PUB_DB, VICTIM_DB] {
        admin
            .query_drop(format!("DROP DATABASE IF EXISTS {db}"))
            .await
            .unwrap();
        admin
            .query_drop(format!("CREATE DATABASE {db}"))
            .await
            .unwrap();
    }
    admin
        .query_drop(format!(
            "CREATE TABLE {PUB_DB}.pub (id INT PRIMARY KEY, v VARCHAR(64));
             INSERT INTO {PUB_DB}.pub VALUES (1, 'a'), (2, 'b'), (3, 'c');
             CREATE TABLE {PUB_DB}.secret (id INT PRIMARY KEY, v VARCHAR(64));
             INSERT INTO {PUB_DB}.secret VALUES (1, 'the secret');
             CREATE TABLE {VICTIM_DB}.vt (id INT PRIMARY KEY, v VARCHAR(64));
             INSERT INTO {VICTIM_DB}.vt VALUES (1, 'victim row');
             CREATE TABLE {VICTIM_DB}.canary (id INT)"
        ))
        .await
        .unwrap();
    admin
        .query_drop("DROP USER IF EXISTS 'evil'@'%'")
        .await
        .unwrap();
    Fixture::start(prefix, extra()).await
}

async fn login(f: &Fixture, user: &str, db: Option<&str>) -> mysql_async::Conn {
    mysql_async::Conn::new(common::opts(f.port, user, user, db))
        .await
        .unwrap_or_else(|e| panic!("login as {user}: {e}"))
}

/// Runs `sql` through the gateway, whatever it answers (the verdict is read elsewhere). Returns
/// the rows' text when it answered rows, for the leak checks.
async fn attempt(c: &mut mysql_async::Conn, sql: &str) -> Vec<String> {
    match c.query::<mysql_async::Row, _>(sql).await {
        Ok(rows) => rows
            .into_iter()
            .map(|r| {
                (0..r.len())
                    .map(|i| match r.as_ref(i) {
                        Some(mysql_async::Value::Bytes(b)) => {
                            String::from_utf8_lossy(b).into_owned()
                        }
                        Some(v) => format!("{v:?}"),
                        None => String::new(),
                    })
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// What the backend holds that an attack could change: PUB's rows, the secret, the victim's
/// rows and tables, the 'evil' account, and a few globals.
#[derive(Debug, PartialEq, Eq)]
struct Backend {
    pub_rows: Vec<(i64, String)>,
    secret: Vec<(i64, String)>,
    victim: Vec<(i64, String)>,
    victim_tables: Vec<String>,
    pub_tables: Vec<String>,
    databases: Vec<String>,
    evil_accounts: i64,
    globals: Vec<(String, String)>,
}

async fn backend() -> Backend {
    let mut a = primary(None).await;
    let q = |t: &str| format!("SELECT id, v FROM {t} ORDER BY id");
    Backend {
        pub_rows: a.query(q(&format!("{PUB_DB}.pub"))).await.unwrap_or_default(),
        secret: a.query(q(&format!("{PUB_DB}.secret"))).await.unwrap_or_default(),
        victim: a.query(q(&format!("{VICTIM_DB}.vt"))).await.unwrap_or_default(),
        victim_tables: a
            .query(format!("SHOW TABLES FROM {VICTIM_DB}"))
            .await
            .unwrap_or_default(),
        pub_tables: a
            .query(format!("SHOW TABLES FROM {PUB_DB}"))
            .await
            .unwrap_or_default(),
        databases: a
            .query("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 't\\_sec%' ORDER BY 1")
            .await
            .unwrap(),
        evil_accounts: a
            .query_first("SELECT COUNT(*) FROM mysql.user WHERE user = 'evil'")
            .await
            .unwrap()
            .unwrap(),
        globals: a
            .query("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('max_connections', 'sql_mode', 'general_log', 'max_connect_errors', 'read_only', 'event_scheduler')")
            .await
            .unwrap(),
    }
}

/// The verdict of an injection attempt: no row of the victim's came back in `seen` (the rows
/// the attempts answered), the backend is as it was `before`, the gateway account intact.
async fn nothing_leaked_or_changed(seen: &[String], before: Backend) {
    assert!(
        !seen.iter().any(|r| r.contains("victim row")),
        "a victim row leaked: {seen:?}"
    );
    assert_eq!(backend().await, before);
    gateway_account_intact().await;
}

/// The gateway account still logs in with its password.
async fn gateway_account_intact() {
    mysql_async::Conn::new(common::opts(common::PRIMARY_PORT, "manx", "manx", None))
        .await
        .expect("the backend account's password is unchanged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_an_application_user_sends_runs_outside_its_schemas_and_rights() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("sec").await;
    let before = backend().await;
    let rows_before = before.pub_rows.clone();
    assert_eq!(rows_before.len(), 3);

    // 1. A readOnly user: every way of wrapping a write.
    let mut ro = login(&f, "ro", Some("PUB")).await;
    for sql in [
        "DELETE FROM pub",
        "SET STATEMENT max_statement_time=10 FOR DELETE FROM pub",
        "/*!40101 DELETE FROM pub*/",
        "/*!mycat:dataNode=dnpub*/ DELETE FROM pub",
        "/*!mycat:sql=select * from pub*/ DELETE FROM pub",
        "SELECT 1; DELETE FROM pub",
        "SELECT 'x\\'; DELETE FROM pub; -- '",
        "REPLACE INTO pub VALUES (1, 'z')",
        "DROP TABLE pub",
        "TRUNCATE pub",
        "ALTER TABLE pub ADD COLUMN z INT",
        "RENAME TABLE pub TO pub2",
        "CREATE TABLE t2 (id INT)",
        "SET STATEMENT sql_mode='' FOR INSERT INTO pub VALUES (9, 'x')",
        "SELECT * FROM pub WHERE id = 1 FOR UPDATE; DELETE FROM pub",
    ] {
        attempt(&mut ro, sql).await;
    }
    attempt(&mut ro, "SET sql_mode = 'NO_BACKSLASH_ESCAPES'").await;
    for sql in [
        "SELECT 'x\\'; DELETE FROM pub; -- '",
        "SELECT v FROM pub WHERE v = 'x\\' UNION SELECT 1, 2; DELETE FROM pub; -- '",
    ] {
        attempt(&mut ro, sql).await;
    }
    // A client charset in which a backslash can end a character (found by a tester session:
    // the server read `中\'` as a character and a quote, the gateway as an escaped quote).
    for charset in [
        "SET NAMES gbk",
        "SET CHARACTER SET big5",
        "SET character_set_client = sjis",
    ] {
        attempt(&mut ro, charset).await;
        for sql in [
            "SELECT '中\\'; CREATE DATABASE t_sec_pwn; DELETE FROM pub -- '",
            "SELECT '丁\\'; CREATE DATABASE t_sec_pwn; DELETE FROM pub -- '",
        ] {
            attempt(&mut ro, sql).await;
        }
    }
    // `--` before Unicode white space: a comment to the parser, `- -name` to MariaDB.
    attempt(
        &mut ro,
        "SELECT 1 AS `\u{a0}` FROM pub HAVING 1 --\u{a0}INTO OUTFILE '/tmp/manx_sec_nbsp'",
    )
    .await;
    assert!(!std::path::Path::new("/tmp/manx_sec_nbsp").exists());
    assert_eq!(
        backend().await.pub_rows,
        rows_before,
        "a readOnly user wrote"
    );
    // A fresh connection of the same session (new backend connections replay its state).
    for _ in 0..3 {
        attempt(&mut ro, "SELECT COUNT(*) FROM pub").await;
    }
    assert_eq!(backend().await.pub_rows, rows_before);
    drop(ro);

    // 2. An ordinary user in a schema with a default dataNode: account, server and database
    // management, dynamic SQL, other databases.
    let mut app = login(&f, "app", Some("PUB")).await;
    for sql in [
        "CREATE USER 'evil'@'%' IDENTIFIED BY 'x'",
        "CREATE USER evil",
        "GRANT ALL ON *.* TO 'evil'@'%' IDENTIFIED BY 'x'",
        "GRANT ALL ON *.* TO evil",
        "SET STATEMENT max_statement_time=10 FOR GRANT ALL ON *.* TO 'evil'@'%' IDENTIFIED BY 'x'",
        "SET STATEMENT max_statement_time=10 FOR CREATE USER 'evil'@'%'",
        "EXECUTE IMMEDIATE 'CREATE USER evil'",
        "PREPARE s FROM 'CREATE USER evil'",
        "EXECUTE s",
        "EXECUTE IMMEDIATE 'DELETE FROM t_sec_victim.vt'",
        "PREPARE s FROM 'DELETE FROM t_sec_victim.vt'",
        "EXECUTE s",
        "DROP DATABASE t_sec_victim",
        "DROP SCHEMA t_sec_victim",
        "/*!40101 DROP DATABASE t_sec_victim */",
        "CREATE DATABASE t_sec_evil",
        "DELETE FROM t_sec_victim.vt",
        "DELETE FROM `t_sec_victim`.`vt`",
        "UPDATE pub, t_sec_victim.vt SET vt.v = 'owned'",
        "INSERT INTO t_sec_victim.vt VALUES (2, 'owned')",
        "RENAME TABLE pub TO t_sec_victim.stolen",
        "RENAME TABLE t_sec_victim.canary TO t_sec_victim.moved",
        "ALTER TABLE pub RENAME TO t_sec_victim.stolen",
        "DROP TABLE t_sec_victim.canary",
        "TRUNCATE t_sec_victim.vt",
        "CREATE TABLE copy LIKE t_sec_victim.vt",
        "CREATE TABLE copy2 AS SELECT * FROM t_sec_victim.vt",
        "CREATE TABLE f (id INT) ENGINE=CONNECT TABLE_TYPE=DOS FILE_NAME='/etc/passwd'",
        "CREATE TABLE g (id INT) DATA DIRECTORY='/tmp'",
        "CREATE TABLE m (id INT, v VARCHAR(64)) ENGINE=MERGE UNION=(t_sec_victim.vt)",
        "CREATE VIEW v AS SELECT * FROM pub",
        "CREATE TRIGGER tr BEFORE INSERT ON pub FOR EACH ROW DELETE FROM t_sec_victim.vt",
        "CREATE PROCEDURE p() DELETE FROM t_sec_victim.vt",
        "CREATE EVENT e ON SCHEDULE EVERY 1 SECOND DO DELETE FROM t_sec_victim.vt",
        "FLUSH PRIVILEGES",
        "FLUSH TABLES",
        "SET PASSWORD FOR 'manx'@'127.0.0.1' = PASSWORD('x')",
        "SET PASSWORD FOR 'manx'@'%' = PASSWORD('x')",
        "SET PASSWORD = PASSWORD('x')",
        "ALTER USER 'manx'@'127.0.0.1' IDENTIFIED BY 'x'",
        "ALTER USER 'manx'@'%' IDENTIFIED BY 'x'",
        "LOAD DATA INFILE '/etc/passwd' INTO TABLE pub",
        "HANDLER pub OPEN",
        "DO (SELECT 1 FROM t_sec_victim.vt)",
        "/*!mycat:dataNode=dnpub*/ DROP DATABASE t_sec_victim",
        "/*!mycat:dataNode=dnpub*/ DELETE FROM t_sec_victim.vt",
        "/*!mycat:sql=select 1*/ CREATE USER evil",
        "/*!mycat:sql=delete from t_sec_victim.vt*/ SELECT 1",
    ] {
        attempt(&mut app, sql).await;
    }
    let after = backend().await;
    assert_eq!(after.evil_accounts, 0, "an account was created");
    assert_eq!(after.victim, before.victim, "the victim's rows changed");
    assert_eq!(
        after.victim_tables, before.victim_tables,
        "the victim's tables changed"
    );
    assert_eq!(after.pub_tables, before.pub_tables, "PUB's tables changed");
    assert_eq!(after.databases, before.databases, "databases changed");
    gateway_account_intact().await;

    // 3. Globals and replication controls, in every spelling and position.
    for sql in [
        "SET GLOBAL max_connections = 77",
        "SET @@global.max_connections = 77",
        "SET @@Global . max_connections = 77",
        "SET /*!GLOBAL*/ max_connections = 77",
        "SET /*! GLOBAL */ max_connections = 77",
        "SET GLOBAL/**/max_connections = 77",
        "SET @a = 1, GLOBAL max_connections = 77",
        "SET @a = 1,@@global.max_connections = 77",
        "SET @a = (SELECT 1), GLOBAL max_connections = 77",
        "SET SESSION max_connections = 77",
        "SET max_connect_errors = 77",
        "SET GLOBAL general_log = 1",
        "SET GLOBAL read_only = 1",
        "SET GLOBAL event_scheduler = ON",
        "SET STATEMENT sql_mode='' FOR SET GLOBAL max_connections = 77",
        "SET SQL_LOG_BIN = 0",
        "SET @@session.sql_log_bin = 0",
        "SET sql_mode = 'ORACLE'",
        "SET NAMES gbk",
        "SET @a = '中\\', @@global.max_connections = 79 -- '",
    ] {
        attempt(&mut app, sql).await;
    }
    assert_eq!(backend().await.globals, before.globals, "a global changed");

    // 4. Reading what the user may not read: other databases, the backend's own schemas, files.
    let leaked = |rows: &[String]| {
        rows.iter().any(|r| {
            r.contains("victim row")
                || r.contains("the secret")
                || r.contains("root:")
                || r.contains("*") && r.contains("manx")
                || r.contains("mysql_native_password")
        })
    };
    let mut all = Vec::new();
    for sql in [
        "SELECT * FROM t_sec_victim.vt",
        "SELECT * FROM pub UNION SELECT * FROM t_sec_victim.vt",
        "SELECT * FROM pub /*!40101 UNION SELECT * FROM t_sec_victim.vt */",
        "SELECT * FROM pub /*!50000 UNION SELECT user, authentication_string FROM mysql.user */",
        "SELECT * FROM pub WHERE id IN (SELECT id FROM t_sec_victim.vt)",
        "SELECT user, authentication_string FROM mysql.user",
        "SELECT * FROM pub WHERE v = '' /*! OR 1 UNION SELECT user, password FROM mysql.user */",
        "SELECT LOAD_FILE('/etc/passwd'), 1",
        "SELECT * FROM pub INTO OUTFILE '/tmp/manx_sec_outfile'",
        "SELECT 1, 2 UNION SELECT id, v FROM pub INTO OUTFILE '/tmp/manx_sec_outfile2'",
        "SHOW COLUMNS FROM pub WHERE Field IN (SELECT v FROM t_sec_victim.vt)",
        "SHOW COLUMNS FROM pub LIKE 'v' UNION SELECT 1",
        "DESC pub UNION SELECT * FROM t_sec_victim.vt",
        "SHOW GRANTS",
        "SHOW CREATE USER manx",
        "SHOW BINLOG EVENTS",
        "SHOW ENGINE INNODB STATUS",
        "SHOW PROCESSLIST",
        "EXECUTE IMMEDIATE 'SELECT * FROM t_sec_victim.vt'",
        "SELECT * FROM information_schema.USER_PRIVILEGES",
        "SELECT NEXTVAL(t_sec_victim.vt)",
        "SELECT 1 AS `\u{a0}` FROM pub HAVING 1 --\u{a0}UNION SELECT v FROM t_sec_victim.vt",
        "SELECT 1 AS `\u{3000}` FROM pub HAVING 1 --\u{3000}UNION SELECT concat(user, authentication_string) FROM mysql.user",
        "SELECT * FROM pub WHERE id IN (TABLE t_sec_victim.vt)",
    ] {
        all.extend(attempt(&mut app, sql).await);
    }
    assert!(!leaked(&all), "leaked: {all:?}");
    // SET expressions are evaluated on a backend too.
    for sql in [
        "SET @x = LOAD_FILE('/etc/passwd')",
        "SET @x = (SELECT v FROM t_sec_victim.vt)",
        "SET @x := (SELECT authentication_string FROM mysql.user LIMIT 1)",
        "SET sql_mode = (SELECT v FROM t_sec_victim.vt)",
    ] {
        attempt(&mut app, sql).await;
        let rows = attempt(&mut app, "SELECT @x").await;
        assert!(!leaked(&rows), "{sql} leaked {rows:?}");
    }
    for file in ["/tmp/manx_sec_outfile", "/tmp/manx_sec_outfile2"] {
        assert!(!std::path::Path::new(file).exists(), "{file} was written");
    }
    drop(app);

    // 5. <privileges check="true">: every table a statement names, in every wrapping.
    let mut p = login(&f, "priv", Some("PUB")).await;
    let mut seen = Vec::new();
    for sql in [
        "SELECT * FROM secret",
        "SELECT * FROM pub WHERE id IN (SELECT id FROM secret)",
        "SELECT * FROM pub UNION SELECT * FROM secret",
        "SELECT * FROM (SELECT * FROM secret) AS s",
        "WITH s AS (SELECT * FROM secret) SELECT * FROM s",
        "SELECT * FROM pub JOIN secret ON pub.id = secret.id",
        "/*!40101 SELECT * FROM secret*/",
        "/*!mycat:dataNode=dnpub*/ SELECT * FROM secret",
        "SELECT * FROM PUB.secret",
    ] {
        seen.extend(attempt(&mut p, sql).await);
    }
    assert!(!leaked(&seen), "privileges leaked: {seen:?}");
    for sql in [
        "DELETE FROM secret",
        "/*!40101 DELETE FROM secret*/",
        "/*!mycat:dataNode=dnpub*/ DELETE FROM secret",
        "DELETE FROM PUB.secret",
        "DROP TABLE secret",
        "TRUNCATE secret",
        "ALTER TABLE secret ADD COLUMN z INT",
        "RENAME TABLE secret TO s2",
        "UPDATE pub JOIN secret ON pub.id = secret.id SET secret.v = 'x'",
        "DELETE pub, secret FROM pub JOIN secret ON pub.id = secret.id",
        "INSERT INTO secret VALUES (5, 'x')",
        "INSERT INTO pub SELECT * FROM secret",
    ] {
        attempt(&mut p, sql).await;
    }
    // Without a current schema.
    let mut p2 = login(&f, "priv", None).await;
    for sql in ["DELETE FROM PUB.secret", "DROP TABLE PUB.secret"] {
        attempt(&mut p2, sql).await;
    }
    let after = backend().await;
    assert_eq!(after.secret, before.secret, "the secret table changed");
    assert_eq!(after.pub_rows, before.pub_rows, "pub changed");
    assert_eq!(after.pub_tables, before.pub_tables);

    // 6. A user without PUB, with and without a current schema.
    let mut other = login(&f, "testonly", None).await;
    let mut rows = Vec::new();
    for sql in [
        "DELETE FROM PUB.pub",
        "DROP TABLE PUB.pub",
        "INSERT INTO PUB.pub VALUES (9, 'x')",
    ] {
        attempt(&mut other, sql).await;
    }
    rows.extend(attempt(&mut other, "SELECT * FROM PUB.secret").await);
    rows.extend(attempt(&mut other, "SHOW TABLES FROM PUB").await);
    rows.extend(attempt(&mut other, "SHOW COLUMNS FROM secret FROM PUB").await);
    let mut other_t = login(&f, "testonly", Some("TESTDB")).await;
    rows.extend(attempt(&mut other_t, "SELECT * FROM PUB.secret").await);
    attempt(&mut other_t, "DELETE FROM PUB.pub").await;
    assert!(!leaked(&rows), "{rows:?}");
    let after = backend().await;
    assert_eq!(after.pub_rows, before.pub_rows);
    assert_eq!(after.pub_tables, before.pub_tables);
    let (code, _, _) = server_error(
        other
            .query_drop("SELECT * FROM PUB.secret")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1044);
}

/// sql_mode decides how a statement is lexed: the gateway follows the backend session's mode,
/// and tells clients that escape parameters themselves (SERVER_STATUS_NO_BACKSLASH_ESCAPES).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lexing_follows_the_sessions_sql_mode() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("secmode").await;
    let mut c = login(&f, "app", Some("PUB")).await;
    c.query_drop("SET sql_mode = 'NO_BACKSLASH_ESCAPES'")
        .await
        .unwrap();
    let mode: String = c.query_first("SELECT @@sql_mode").await.unwrap().unwrap();
    assert!(mode.contains("NO_BACKSLASH_ESCAPES"), "{mode}");
    // PyMySQL's escaping of the parameter `nobody\' OR 1=1 -- ` under the flag: quotes doubled,
    // backslashes kept. The backend reads one string; nothing may read it otherwise.
    let injected = "SELECT v FROM pub WHERE v = 'nobody\\'' OR 1=1 -- '";
    let rows = attempt(&mut c, injected).await;
    assert!(rows.is_empty(), "{rows:?}");
    let leak = attempt(
        &mut c,
        "SELECT v, id FROM pub WHERE v = 'x\\' UNION SELECT user, authentication_string FROM mysql.user -- '",
    )
    .await;
    assert!(leak.iter().all(|r| !r.contains("manx")), "{leak:?}");
    // The mode holds on other backend connections of the session, and a plain string works.
    for _ in 0..4 {
        let n: i64 = c
            .query_first("SELECT COUNT(*) FROM pub WHERE v <> 'it''s'")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n, 3);
    }
    // Expressions: the mode read back from the backend is what is followed.
    c.query_drop("SET sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')")
        .await
        .unwrap();
    let n: i64 = c
        .query_first("SELECT COUNT(*) FROM \"pub\"")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 3, "under ANSI_QUOTES \"pub\" names the table");
    c.query_drop("SET @old = @@sql_mode, sql_mode = ''")
        .await
        .unwrap();
    c.query_drop("SET sql_mode = @old").await.unwrap();
    let mode: String = c.query_first("SELECT @@sql_mode").await.unwrap().unwrap();
    assert!(mode.contains("ANSI_QUOTES"), "{mode}");
    // ORACLE mode changes the grammar: refused, and the session keeps its mode.
    let (code, _, _) = server_error(c.query_drop("SET sql_mode = 'ORACLE'").await.unwrap_err());
    assert_eq!(code, 1235);
    let mode: String = c.query_first("SELECT @@sql_mode").await.unwrap().unwrap();
    assert!(!mode.contains("ORACLE"), "{mode}");
    assert_eq!(backend().await.pub_rows.len(), 3);
    // PyMySQL escapes parameters itself, by the status flag of the server's OK packets: with
    // the flag it doubles quotes and leaves backslashes, without it it escapes backslashes.
    let python = &common::clients::clients().python;
    let script = format!(
        r#"
import pymysql
c = pymysql.connect(host="127.0.0.1", port={port}, user="app", password="app", database="PUB", autocommit=True)
cur = c.cursor()
print("flag_before", bool(c.server_status & 512))
cur.execute("SET sql_mode = 'NO_BACKSLASH_ESCAPES'")
print("flag_after", bool(c.server_status & 512))
try:
    n = cur.execute("SELECT v FROM pub WHERE v = %s", ("nobody\' OR 1=1 -- ",))
    print("rows", n)
except pymysql.MySQLError as e:
    print("error", e.args[0])
cur.execute("SET sql_mode = ''")
print("flag_cleared", bool(c.server_status & 512))
n = cur.execute("SELECT v FROM pub WHERE v = %s", ("nobody\' OR 1=1 -- ",))
print("rows_default", n)
"#,
        port = f.port
    );
    let out = std::process::Command::new(python)
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "flag_before False");
    assert_eq!(lines[1], "flag_after True", "the client is told the mode");
    assert!(
        lines[2] == "rows 0" || lines[2] == "error 1235",
        "the injected parameter matched rows: {}",
        lines[2]
    );
    assert_eq!(lines[3], "flag_cleared False");
    assert_eq!(lines[4], "rows_default 0");
}

/// An INSERT's sharding value is placed by the value the row stores, never by its text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_placement_is_by_value_or_refused() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("secplace").await;
    let mut c = f.client().await;
    // Attacker round 4: without a strict sql_mode MariaDB stores '7002 x' as 7002 and clamps
    // integers beyond BIGINT; such values are refused, not placed by their text.
    c.query_drop("SET sql_mode = ''").await.unwrap();
    for value in [
        "'7002 x'",
        "'0007068 x'",
        "'18446744073709551617'",
        "18446744073709551617",
        "'99999999999999999999999'",
        "1 + 9",
        "' 10'",
        "10.5",
        "0x0a",
        "b'1010'",
        "@v",
        "(SELECT 10)",
        "CAST(10 AS SIGNED)",
        "10e0 + 0",
    ] {
        let sql = format!("INSERT INTO hotnews (id, title) VALUES ({value}, 'x')");
        let (code, _, msg) = server_error(c.query_drop(&sql).await.unwrap_err());
        assert_eq!(code, 1064, "{sql}: {msg}");
        assert!(msg.contains("HOTNEWS") && msg.contains("ID"), "{msg}");
    }
    for n in 1..=3 {
        assert!(f.ids_on(n, "hotnews").await.is_empty(), "a row was placed");
    }
    // Plain literals route by value: 10 mod 3 = 1 → dn2; '10' and 1e1 the same.
    c.query_drop("INSERT INTO hotnews (id, title) VALUES (10, 'x')")
        .await
        .unwrap();
    assert_eq!(f.ids_on(2, "hotnews").await, [10]);
    let (code, _, _) = server_error(
        c.query_drop("INSERT INTO hotnews (id, title) VALUES ('10', 'y')")
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 1062, "the same node refuses the duplicate");
}

/// A server whose *global* sql_mode lexes differently from MySQL's default is not used: the
/// gateway would check statements one way and the server read them another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_whose_global_sql_mode_lexes_differently_is_not_used() {
    let t = common::mariadb::Throwaway::start("secnbe", 1).await;
    let mut admin = t.conn(None).await;
    admin
        .query_drop(
            "CREATE DATABASE nbe; CREATE TABLE nbe.t (id INT, v VARCHAR(10));
             INSERT INTO nbe.t VALUES (1, 'a');
             SET GLOBAL sql_mode = 'STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES'",
        )
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "rule.xml",
        "autopartition-long.txt",
        "partition-hash-int.txt",
    ] {
        std::fs::copy(common::repo().join(f), dir.path().join(f)).unwrap();
    }
    std::fs::write(
        dir.path().join("schema.xml"),
        format!(
            r#"<?xml version="1.0"?>
<mycat:schema xmlns:mycat="http://io.mycat/">
    <schema name="NBE" dataNode="dnn"></schema>
    <dataNode name="dnn" dataHost="nbe" database="nbe" />
    <dataHost name="nbe" maxCon="4" minCon="0" balance="0" dbType="mysql" dbDriver="native">
        <heartbeat>select 1</heartbeat>
        <writeHost host="nbeM" url="127.0.0.1:{}" user="manx" password="manx" />
    </dataHost>
</mycat:schema>"#,
            t.port
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("server.xml"),
        r#"<?xml version="1.0"?>
<mycat:server xmlns:mycat="http://io.mycat/">
    <user name="u"><property name="password">u</property><property name="schemas">NBE</property></user>
</mycat:server>"#,
    )
    .unwrap();
    let port = common::start_gateway(dir.path()).await;
    // The login (which reads the schema's dataNode) or the first statement fails, naming why.
    let e = match mysql_async::Conn::new(common::opts(port, "u", "u", Some("NBE"))).await {
        Err(e) => e,
        Ok(mut c) => c
            .query_drop("SELECT * FROM t WHERE v = 'a\\' OR 1=1 -- '")
            .await
            .unwrap_err(),
    };
    assert!(
        e.to_string().contains("NO_BACKSLASH_ESCAPES"),
        "the error names the mode: {e}"
    );
}

/// Attacker round 3 (issue 17): a SHOW filter re-printed from the parse (sqlparser writes a
/// string's backslashes unescaped, so `'x\\'` ended the string elsewhere on the backend), a
/// server SHOW with `WHERE(` (no space) forwarded as written, and CTE names hiding the tables
/// they were named after. Judged on the backend: a victim sequence's value, the secret's and
/// PUB's rows, and whether a row of the victim or the secret came back at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_filters_and_cte_names_reach_nothing_else() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("sec3").await;
    let mut admin = primary(None).await;
    admin
        .query_drop(format!(
            "CREATE SEQUENCE {VICTIM_DB}.vseq; CREATE TABLE {VICTIM_DB}.geo (g GEOMETRY)"
        ))
        .await
        .unwrap();
    let seq_before: i64 = admin
        .query_first(format!(
            "SELECT next_not_cached_value FROM {VICTIM_DB}.vseq"
        ))
        .await
        .unwrap()
        .unwrap();
    let before = backend().await;

    let mut ro = login(&f, "ro", Some("PUB")).await;
    let mut leaked = Vec::new();
    for sql in [
        "SHOW TABLES WHERE Tables_in_PUB = 'x\\\\' OR Tables_in_PUB = ' /*M! UNION SELECT v FROM t_sec_victim.vt */ #'",
        "SHOW TABLES WHERE Tables_in_PUB = 'x\\\\' OR Tables_in_PUB = ' UNION SELECT v FROM t_sec_victim.vt #'",
        "SHOW TABLES WHERE Tables_in_PUB = 'x\\\\' OR Tables_in_PUB = ' /*M! UNION SELECT SETVAL(t_sec_victim.vseq, 424242) */ #'",
        "SHOW TABLE STATUS WHERE Name = 'x\\\\' OR Name = ' /*M! UNION SELECT v,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18 FROM t_sec_victim.vt */ #'",
        "SHOW TABLES WHERE Tables_in_PUB IN (SELECT v FROM t_sec_victim.vt)",
        "SHOW VARIABLES WHERE(Variable_name='version' AND (SELECT v FROM t_sec_victim.vt)='victim row')",
        "SHOW VARIABLES WHERE(Variable_name='x'OR(0=EXTRACTVALUE(1,CONCAT(0x7e,(SELECT v FROM t_sec_victim.vt)))))",
        "SHOW STATUS WHERE(Variable_name='Uptime' AND SETVAL(t_sec_victim.vseq, 777000))",
        "SHOW VARIABLES LIKE 'version' OR (SELECT 1 FROM t_sec_victim.vt)",
        "SHOW PLUGINS SONAME LIKE '%'",
    ] {
        leaked.extend(attempt(&mut ro, sql).await);
        if let Err(e) = ro.query_drop(sql).await {
            leaked.push(format!("{e}"));
        }
    }
    assert!(
        !leaked.iter().any(|r| r.contains("victim row")),
        "the victim's row came back: {leaked:?}"
    );
    // Attacker round 4: information_schema.GEOMETRY_COLUMNS lists every database's geometry
    // columns; it is answered with no rows like the other views of other databases.
    let geo = attempt(
        &mut ro,
        "SELECT F_TABLE_SCHEMA, F_TABLE_NAME FROM information_schema.GEOMETRY_COLUMNS",
    )
    .await;
    assert!(
        !geo.iter().any(|r| r.contains(VICTIM_DB)),
        "the victim's table was listed: {geo:?}"
    );
    // A legitimate SHOW TABLES WHERE with a backslash in its string still answers correctly.
    assert_eq!(
        attempt(
            &mut ro,
            "SHOW TABLES WHERE Tables_in_PUB = 'pub' OR Tables_in_PUB = 'x\\\\'"
        )
        .await,
        ["pub"]
    );

    let mut p = login(&f, "priv", Some("PUB")).await;
    let mut seen = Vec::new();
    for sql in [
        "WITH secret AS (SELECT * FROM secret) SELECT * FROM secret",
        "SELECT * FROM secret WHERE 1 IN (WITH secret AS (SELECT 1) SELECT * FROM secret)",
        "SELECT * FROM `secret`",
        "CREATE TABLE stolen AS WITH secret AS (SELECT * FROM secret) SELECT * FROM secret",
        "INSERT INTO secret SELECT * FROM (WITH secret AS (SELECT 9 AS id, 'x' AS v) SELECT * FROM secret) d",
    ] {
        seen.extend(attempt(&mut p, sql).await);
    }
    assert!(
        !seen.iter().any(|r| r.contains("the secret")),
        "the secret came back: {seen:?}"
    );
    // A CTE that names no table still works.
    assert_eq!(
        attempt(
            &mut p,
            "WITH c AS (SELECT id FROM pub WHERE id = 1) SELECT id FROM c"
        )
        .await,
        ["1"]
    );

    let seq_after: i64 = admin
        .query_first(format!(
            "SELECT next_not_cached_value FROM {VICTIM_DB}.vseq"
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seq_before, seq_after, "the victim's sequence moved");
    let after = backend().await;
    assert_eq!(before, after, "the backend changed");
}

/// Attacker round 3: a stored function in the user's own database runs with its definer's
/// rights (here: it changes the victim's row), so a call of any name that is not one of
/// MariaDB's built-in functions is refused, in a query, a write and a SET value. Judged on the
/// victim's row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_functions_are_not_called_through_the_gateway() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("sec4").await;
    let mut admin = primary(Some(PUB_DB)).await;
    admin
        .query_drop(format!(
            "CREATE DEFINER = 'manx'@'%' FUNCTION f_side() RETURNS INT DETERMINISTIC SQL SECURITY DEFINER \
             MODIFIES SQL DATA BEGIN UPDATE {VICTIM_DB}.vt SET v = 'changed'; RETURN 1; END"
        ))
        .await
        .unwrap();
    admin
        .query_drop(format!(
            "CREATE DEFINER = 'manx'@'%' FUNCTION `curdate`() RETURNS INT DETERMINISTIC \
             SQL SECURITY DEFINER MODIFIES SQL DATA \
             BEGIN UPDATE {VICTIM_DB}.vt SET v = 'written by curdate'; RETURN 1; END"
        ))
        .await
        .unwrap();
    // Attacker round 5: names the parser reads as expressions of their own (TRIM, SUBSTRING),
    // and geometry constructors at another argument count.
    // Issue 18: a native function's or keyword's name with a gap before `(` is the built-in to
    // MariaDB (`length ('ab')`, `IF (..)`), a function keyword's (`count (x)`) the stored one.
    for name in ["trim", "substring", "point", "length", "count"] {
        admin
            .query_drop(format!(
                "CREATE DEFINER = 'manx'@'%' FUNCTION `{name}`(x INT) RETURNS INT DETERMINISTIC \
                 SQL SECURITY DEFINER MODIFIES SQL DATA \
                 BEGIN UPDATE {VICTIM_DB}.vt SET v = 'written by {name}'; RETURN 1; END"
            ))
            .await
            .unwrap();
    }
    let before = backend().await;
    let mut ro = login(&f, "ro", Some("PUB")).await;
    let mut app = login(&f, "app", Some("PUB")).await;
    for (writer, sql) in [
        (false, "SELECT f_side()"),
        (false, "SELECT `f_side`()"),
        (false, "SELECT id FROM pub WHERE id = f_side()"),
        (false, "SET @x = f_side()"),
        (true, "INSERT INTO pub VALUES (f_side() + 10, 'f')"),
        (true, "UPDATE pub SET v = 'x' WHERE id = F_SIDE()"),
        // Attacker round 4: a built-in's name spelled so that MariaDB reads it as the stored
        // function of the same name (curdate() below writes the victim's row).
        (false, "SELECT curdate ()"),
        (false, "SELECT curdate/**/()"),
        (false, "SELECT `curdate`()"),
        (false, "SET @x = curdate ()"),
        (false, "SELECT trim (1)"),
        (false, "SELECT substring/**/(1)"),
        (false, "SELECT id FROM pub WHERE substring\n(1) = 1"),
        (false, "SELECT point(1)"),
        (true, "UPDATE pub SET v = trim (1) WHERE id = 2"),
        (false, "SELECT count (1)"),
        (false, "SELECT `length`(1)"),
    ] {
        let c = if writer { &mut app } else { &mut ro };
        let e = c.query_drop(sql).await.expect_err(sql);
        let (code, _, message) = server_error(e);
        assert_eq!(code, 1235, "{sql}: {message}");
        assert!(
            message.contains("built-in") || message.contains("unquoted"),
            "{sql}: {message}"
        );
    }
    // Built-in functions still work.
    let n: Option<i64> = ro
        .query_first("SELECT IFNULL(MAX(id), 0) + LENGTH(CONCAT('a', 'b')) FROM pub")
        .await
        .unwrap();
    assert_eq!(n, Some(5));
    let n: Option<i64> = ro
        .query_first("SELECT length (CONCAT ('ab', 'c')) + IF (1, 10, 20) + ceil (0.5)")
        .await
        .unwrap();
    assert_eq!(n, Some(14));
    assert_eq!(before, backend().await, "the function ran");
}

/// Attacker round 5: `B"\" # "` is the name `B` and a string to MariaDB but a byte-string
/// literal and a comment to the parser, so the rest of the line was checked by nobody: a
/// `<privileges>` user read its denied table, a readOnly user read `mysql.user`, wrote a file
/// and moved a sequence, and a derived table hid joins that updated and deleted the victim's
/// rows. Now the parser's and MariaDB's string, name and comment boundaries are compared and a
/// statement they read differently is refused. Judged on the backend and the rows returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn literal_prefixes_the_parser_reads_otherwise_hide_nothing() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("sec5").await;
    let before = backend().await;
    let mut admin = primary(None).await;
    admin
        .query_drop(format!("CREATE SEQUENCE {VICTIM_DB}.vseq"))
        .await
        .unwrap();
    let seq_sql = format!("SELECT next_not_cached_value FROM {VICTIM_DB}.vseq");
    let seq_before: i64 = admin.query_first(&seq_sql).await.unwrap().unwrap();
    let file = format!("/tmp/manx-sec5-{}.txt", std::process::id());
    let _ = std::fs::remove_file(&file);

    let mut seen = Vec::new();
    let mut p = login(&f, "priv", Some("PUB")).await;
    seen.extend(
        attempt(
            &mut p,
            "SELECT B\"\\\" # \" , (SELECT v FROM secret) AS leak FROM (SELECT 1 AS B) AS y",
        )
        .await,
    );
    let mut ro = login(&f, "ro", Some("PUB")).await;
    for sql in [
        "SELECT B\"\\\" # \" , (SELECT v FROM t_sec_victim.vt) AS leak\n FROM (SELECT 1 AS B) AS x".to_string(),
        "SELECT b\"\\\" -- \" , (SELECT GROUP_CONCAT(User) FROM mysql.user) AS leak FROM (SELECT 1 AS b) AS y".to_string(),
        format!("SELECT B\"\\\" # \" FROM (SELECT 1 AS B) AS y INTO OUTFILE '{file}'"),
        "SELECT B\"\\\" # \" , SETVAL(t_sec_victim.vseq, 4242) FROM (SELECT 1 AS B) AS y".to_string(),
    ] {
        seen.extend(attempt(&mut ro, &sql).await);
    }
    let mut app = login(&f, "app", Some("PUB")).await;
    for sql in [
        "UPDATE pub JOIN (SELECT B\"\\\" # \" FROM (SELECT 1 AS B) z) AS d ON 1=1 JOIN t_sec_victim.vt AS vt ON 1=1 SET vt.v = 'pwned' WHERE vt.id = 1 AND \"a\" <> \"\n) AS d ON 1=1 SET pub.v = pub.v WHERE pub.id = 0 # \"",
        "DELETE x FROM (SELECT B\"\\\" # \" FROM (SELECT 1 AS B) z) AS d JOIN t_sec_victim.vt AS x ON 1=1 WHERE x.id = 1 AND \"a\" <> \"\n) AS d JOIN pub AS x ON 1=1 WHERE x.id = 0 # \"",
        "UPDATE pub JOIN (SELECT b\"\\\" -- \" FROM (SELECT 1 AS b) z) AS d ON 1=1 JOIN t_sec_victim.vt AS vt ON 1=1 SET vt.v = 'pwned2' WHERE vt.id = 1 AND \"a\" <> \"\n) AS d ON 1=1 SET pub.v = pub.v WHERE pub.id = 0 -- \"",
    ] {
        seen.extend(attempt(&mut app, sql).await);
    }
    assert!(
        !seen
            .iter()
            .any(|r| r.contains("the secret") || r.contains("victim row") || r.contains("manx")),
        "rows outside the user's reach came back: {seen:?}"
    );
    assert!(
        !std::path::Path::new(&file).exists(),
        "INTO OUTFILE wrote {file}"
    );
    let seq_after: i64 = admin.query_first(&seq_sql).await.unwrap().unwrap();
    assert_eq!(seq_after, seq_before, "the victim's sequence moved");
    admin
        .query_drop(format!("DROP SEQUENCE {VICTIM_DB}.vseq"))
        .await
        .unwrap();
    assert_eq!(before, backend().await, "the backend changed");

    // The same literals written as both readers agree still work.
    assert_eq!(
        attempt(
            &mut app,
            "SELECT v FROM pub WHERE v = \"a\" OR v = b'1100010' ORDER BY id"
        )
        .await,
        ["a", "b"]
    );
    gateway_account_intact().await;
}

/// Attacker round 6: a table the user's `<privileges>` deny everything on (`dml="0000"`) was
/// listed with its columns, sizes and row count by `information_schema`, `SHOW TABLE STATUS`
/// and `SHOW TABLES`; MariaDB shows an account no table it holds no privilege on. Compared with
/// a user without masks, who sees them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_a_mask_denies_everything_on_are_not_listed() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("sec6").await;
    let first = |rows: Vec<String>| -> Vec<String> {
        rows.into_iter()
            .map(|r| r.split('|').next().unwrap_or_default().to_string())
            .collect()
    };
    let mut p = login(&f, "priv", Some("PUB")).await;
    let mut app = login(&f, "app", Some("PUB")).await;
    for (sql, for_priv, for_app) in [
        (
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'PUB' ORDER BY 1",
            vec!["pub"],
            vec!["pub", "secret"],
        ),
        (
            "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_NAME = 'secret'",
            vec!["0"],
            vec!["2"],
        ),
        ("SHOW TABLE STATUS LIKE 'secret'", vec![], vec!["secret"]),
        ("SHOW TABLES", vec!["pub"], vec!["pub", "secret"]),
    ] {
        assert_eq!(first(attempt(&mut p, sql).await), for_priv, "priv: {sql}");
        assert_eq!(first(attempt(&mut app, sql).await), for_app, "app: {sql}");
    }
    // A schema without a default dataNode lists its configured tables itself.
    let mut t = login(&f, "privt", Some("TESTDB")).await;
    let mut all = login(&f, "testonly", Some("TESTDB")).await;
    let listed = first(attempt(&mut t, "SHOW TABLES").await);
    assert!(!listed.iter().any(|n| n == "hotnews"), "{listed:?}");
    assert!(listed.iter().any(|n| n == "travelrecord"), "{listed:?}");
    let listed = first(attempt(&mut all, "SHOW TABLES").await);
    assert!(listed.iter().any(|n| n == "hotnews"), "{listed:?}");
}

/// The MariaDB forms the gateway now reads beside sqlparser (module `route::forms`: `UPDATE
/// t1, t2`, `DROP TABLES`, `x MOD y`, `CHAR(n) BINARY`, quoted engines, partitioning clauses,
/// ALTER TABLE options) and the backend's `EXPLAIN EXTENDED | FORMAT=JSON` / `ANALYZE` (which
/// runs its statement): each wrapped around what the users may not do. Judged on the backend
/// and on the rows returned; then the same forms, within the users' rights, run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_forms_the_gateway_reads_reach_nothing_else() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("sec7").await;
    let before = backend().await;
    let mut seen = Vec::new();
    let attempts: [(&str, &[&str]); 3] = [
        (
            "priv",
            &[
                "UPDATE pub, secret SET pub.v = secret.v WHERE pub.id = secret.id",
                "ANALYZE UPDATE pub, secret SET pub.v = secret.v WHERE pub.id = secret.id",
                "ANALYZE FORMAT=JSON DELETE FROM secret",
                "EXPLAIN EXTENDED SELECT v FROM secret",
                "SELECT v MOD 2, (SELECT v FROM secret) FROM pub",
                "DROP TABLES secret",
                "DROP TABLES pub, secret",
                "ALTER TABLE secret ENGINE = MyISAM",
            ],
        ),
        (
            "ro",
            &[
                "ANALYZE UPDATE pub SET v = 'ro'",
                "ANALYZE DELETE FROM pub",
                "ANALYZE FORMAT=JSON INSERT INTO pub VALUES (8, 'ro')",
                "UPDATE pub, pub AS p2 SET pub.v = 'ro' WHERE pub.id = p2.id",
                "DROP TABLES pub",
                "ALTER TABLE pub ENGINE = 'MyISAM', RENAME TO pub3",
                "CREATE TABLE rot (a CHAR(10) BINARY) ENGINE = 'MyISAM'",
            ],
        ),
        (
            "app",
            &[
                "UPDATE pub, t_sec_victim.vt SET vt.v = 'pwned' WHERE vt.id = 1",
                "UPDATE pub AS a, (SELECT 1) AS d, t_sec_victim.vt AS x SET x.v = 'pwned'",
                "ANALYZE DELETE FROM t_sec_victim.vt",
                "EXPLAIN FORMAT=JSON SELECT * FROM t_sec_victim.vt",
                "ANALYZE SELECT * FROM mysql.user",
                "SELECT v MOD 2, (SELECT v FROM t_sec_victim.vt) FROM pub",
                "DROP TABLES t_sec_victim.canary",
                "DROP TABLES pub, t_sec_victim.canary",
                "ALTER TABLE pub ENGINE = MyISAM, RENAME TO t_sec_victim.stolen",
                "ALTER TABLE pub UNION = (t_sec_victim.vt)",
                "ALTER TABLE pub ENGINE = 'FEDERATED' CONNECTION = 'mysql://manx:manx@127.0.0.1:13306/t_sec_victim/vt'",
                "CREATE TABLE evil (a CHAR(10) BINARY) ENGINE = 'CONNECT'",
                "CREATE TABLE evil (a INT) ENGINE = \"CONNECT\" TABLE_TYPE = DIR FILE_NAME = '/etc/*'",
                "ALTER TABLE pub ENGINE \"FEDERATED\"",
                "CREATE TABLE m (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE = \"MRG_MyISAM\"",
                "CREATE TABLE m2 (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE = 'MRG_MyISAM'",
                "CREATE TABLE evil (a INT) PARTITION BY HASH (a) (PARTITION p0 DATA DIRECTORY = '/tmp')",
                "CREATE TABLE evil (a INT) PARTITION BY HASH (a) PARTITIONS 2 SELECT v FROM t_sec_victim.vt",
                "CREATE TABLE t_sec_victim.evil (a CHAR(3) BINARY)",
            ],
        ),
    ];
    for (user, statements) in attempts {
        let mut c = login(&f, user, Some("PUB")).await;
        for sql in statements {
            seen.extend(attempt(&mut c, sql).await);
        }
    }
    let mut app = login(&f, "app", Some("PUB")).await;
    assert!(
        !seen
            .iter()
            .any(|r| r.contains("the secret") || r.contains("victim row") || r.contains("manx")),
        "rows outside the user's reach came back: {seen:?}"
    );
    assert_eq!(before, backend().await, "the backend changed");

    // Within the user's rights the same forms run, as MariaDB runs them.
    for sql in [
        "CREATE TABLE fresh (a CHAR(10) BINARY, b NATIONAL VARCHAR(3), c INT(4) ZEROFILL UNSIGNED) ENGINE = 'MyISAM' PARTITION BY HASH (c) PARTITIONS 2",
        "ALTER TABLE fresh ENGINE = InnoDB, CONVERT TO CHARACTER SET utf8mb4",
        "INSERT INTO fresh VALUES ('x', 'y', 7)",
        "UPDATE fresh, pub SET fresh.a = pub.v WHERE pub.id = 2",
    ] {
        app.query_drop(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    assert_eq!(
        attempt(&mut app, "SELECT a, c MOD 4 FROM fresh").await,
        ["b|3"]
    );
    let plan = attempt(
        &mut app,
        "EXPLAIN FORMAT=JSON SELECT * FROM fresh WHERE c = 7",
    )
    .await;
    assert!(
        plan.iter().any(|r| r.contains("\"query_block\"")),
        "{plan:?}"
    );
    let analyzed = attempt(&mut app, "ANALYZE DELETE FROM fresh WHERE c = 7").await;
    assert_eq!(analyzed.len(), 1, "{analyzed:?}");
    assert!(attempt(&mut app, "SELECT * FROM fresh").await.is_empty());
    let mut admin = primary(None).await;
    let engine: Option<String> = admin
        .query_first(format!(
            "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{PUB_DB}' AND TABLE_NAME = 'fresh'"
        ))
        .await
        .unwrap();
    assert_eq!(engine.as_deref(), Some("InnoDB"));
    app.query_drop("DROP TABLES fresh").await.unwrap();
    assert_eq!(before, backend().await);
    gateway_account_intact().await;
}

/// A table named like a compound interval unit (`year_month`, a reserved word MariaDB reads as
/// a name after a period) is checked as itself: the parser's rewrite of interval units once
/// turned `PUB.year_month` into the table `YEAR`, past the mask that denies it everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_named_like_an_interval_unit_keeps_its_privileges() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("sec9").await;
    let mut admin = primary(Some(PUB_DB)).await;
    admin
        .query_drop("CREATE TABLE `year_month` (v VARCHAR(16)); INSERT INTO `year_month` VALUES ('ym secret')")
        .await
        .unwrap();
    let mut c = login(&f, "priv", Some("PUB")).await;
    let mut seen = Vec::new();
    for sql in [
        "SELECT * FROM PUB.year_month",
        "SELECT v FROM pub WHERE id = 1 UNION SELECT v FROM PUB.year_month",
        "INSERT INTO PUB.year_month VALUES ('priv')",
        "UPDATE PUB.year_month SET v = 'priv'",
        "DELETE FROM PUB.year_month",
        "ALTER TABLE PUB.year_month COMMENT 'priv'",
        "EXPLAIN EXTENDED SELECT * FROM PUB.year_month",
        "ANALYZE SELECT * FROM PUB.year_month",
    ] {
        seen.extend(attempt(&mut c, sql).await);
    }
    assert!(
        !seen.iter().any(|r| r.contains("ym secret")),
        "the denied table leaked: {seen:?}"
    );
    let rows: Vec<String> = admin.query("SELECT v FROM `year_month`").await.unwrap();
    assert_eq!(rows, ["ym secret"]);
    let comment: Option<String> = admin
        .query_first(format!(
            "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{PUB_DB}' AND TABLE_NAME = 'year_month'"
        ))
        .await
        .unwrap();
    assert_eq!(comment.as_deref(), Some(""));
}

/// A client charset in which a backslash can end a character, set by the bytes of its name
/// (`0x67626b` is `gbk`), would make the backend read `'丁\'` as a finished string where the
/// gateway reads an escaped quote: everything after it ran unchecked (found by a breaker: a
/// readOnly user wrote to another database, created accounts, set globals). Judged on the
/// backend, after every spelling of the SET and the injection that would follow it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_charset_given_by_its_bytes_opens_no_injection() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("sec8").await;
    let before = backend().await;
    let mut seen = Vec::new();
    for user in ["ro", "app"] {
        for set in [
            "SET character_set_client = 0x67626b",
            "/*!40101 SET character_set_client = 0x62696735 */",
            "SET character_set_client = 0b011001110110001001101011",
            "SET NAMES 0x736a6973",
            "SET SESSION character_set_client = 0X67626B",
        ] {
            let mut c = login(&f, user, Some("PUB")).await;
            let _ = c.query_drop(set).await;
            for sql in [
                format!(
                    "SELECT id FROM pub WHERE v = '丁\\'; INSERT INTO {VICTIM_DB}.vt VALUES (9, 'pwned') -- '"
                ),
                "SELECT id FROM pub WHERE v = '丁\\'; SET GLOBAL max_connections = 99; CREATE USER evil@'%' IDENTIFIED BY 'evil' -- '".to_string(),
                format!(
                    "SELECT id, '丁\\' AS x, (SELECT v FROM {VICTIM_DB}.vt LIMIT 1) AS leak -- '\nFROM pub"
                ),
            ] {
                seen.extend(attempt(&mut c, &sql).await);
            }
            let cs: Option<String> = c
                .query_first("SELECT @@character_set_client FROM pub WHERE id = 1")
                .await
                .unwrap();
            assert_eq!(cs.as_deref(), Some("utf8mb4"), "{user}: {set}");
        }
    }
    nothing_leaked_or_changed(&seen, before).await;
}

/// The MariaDB forms read since the mysql-test parser gaps (module `route::forms`: partition
/// maintenance items of ALTER TABLE, `ALTER ONLINE | IGNORE TABLE`, `DROP KEY`, `ALTER c SET
/// DEFAULT`, `DISABLE KEYS` among other items, `ALTER INDEX .. IGNORED`, `CREATE OR REPLACE
/// INDEX`, `LONG BYTE`, hex ENUM members, Aria's table options, `CHAR(.. USING
/// cs)`, `MATCH a AGAINST`): each aimed at a table the user may not change or read. `secret`
/// and the victim's `vt` are partitioned, so a `TRUNCATE PARTITION` that reached them would
/// empty them. Judged on the backend (rows, tables, and every table's definition); then the
/// same forms, within the user's rights, run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_maintenance_and_other_alter_forms_reach_nothing_else() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("sec10").await;
    let mut admin = primary(None).await;
    admin
        .query_drop(format!(
            "ALTER TABLE {PUB_DB}.secret PARTITION BY HASH (id) PARTITIONS 2;
             ALTER TABLE {VICTIM_DB}.vt PARTITION BY HASH (id) PARTITIONS 2;
             ALTER TABLE {PUB_DB}.pub PARTITION BY HASH (id) PARTITIONS 2;
             CREATE INDEX kv ON {PUB_DB}.secret (v);
             CREATE INDEX kv ON {VICTIM_DB}.vt (v);
             CREATE INDEX kv ON {PUB_DB}.pub (v);
             CREATE TABLE {VICTIM_DB}.vt_np LIKE {PUB_DB}.pub;
             ALTER TABLE {VICTIM_DB}.vt_np REMOVE PARTITIONING;
             INSERT INTO {VICTIM_DB}.vt_np VALUES (2, 'victim row np')"
        ))
        .await
        .unwrap();
    let victim_np = || async {
        let mut a = primary(None).await;
        let rows: Vec<(i64, String)> = a
            .query(format!("SELECT id, v FROM {VICTIM_DB}.vt_np ORDER BY id"))
            .await
            .unwrap();
        rows
    };
    let victim_np_before = victim_np().await;
    let definitions = || async {
        let mut a = primary(None).await;
        let mut out = Vec::new();
        for t in [
            format!("{PUB_DB}.pub"),
            format!("{PUB_DB}.secret"),
            format!("{VICTIM_DB}.vt"),
        ] {
            let row: Option<(String, String)> = a
                .query_first(format!("SHOW CREATE TABLE {t}"))
                .await
                .unwrap();
            out.push(row.unwrap().1);
        }
        out
    };
    let before = backend().await;
    let defined = definitions().await;
    let mut seen = Vec::new();
    let attempts: [(&str, &[&str]); 3] = [
        (
            "priv",
            &[
                "ALTER TABLE secret TRUNCATE PARTITION ALL",
                "ALTER TABLE secret TRUNCATE PARTITION p0, p1",
                "ALTER TABLE secret DROP KEY kv",
                "ALTER ONLINE TABLE secret ALTER v SET DEFAULT 'x'",
                "ALTER IGNORE TABLE secret ALTER INDEX kv IGNORED",
                "ALTER TABLE secret COALESCE PARTITION 1",
                "ALTER TABLE secret REORGANIZE PARTITION p0, p1 INTO (PARTITION q0)",
                "ALTER TABLE secret DISABLE KEYS, COMMENT 'hi'",
                "CREATE OR REPLACE INDEX kv ON secret (id)",
                "CREATE INDEX kp ON secret (v(3))",
                "CREATE INDEX kq ON secret (v) WAIT 1 NOT IGNORED",
                "ALTER ONLINE TABLE secret",
                "ALTER TABLE secret ADD KEY kp (v(2)), ENGINE = Aria",
                "SELECT MATCH v AGAINST ('secret'), (SELECT v FROM secret) FROM pub",
                "SELECT CHAR(77 USING utf8), (SELECT v FROM secret) FROM pub",
                // Issue 18's forms.
                "ALTER TABLE pub EXCHANGE PARTITION p0 WITH TABLE secret",
                "ALTER TABLE secret EXCHANGE PARTITION p0 WITH TABLE pub",
                "CREATE FULLTEXT INDEX kf ON secret (v)",
                "ALTER TABLE secret ADD w BLOB COMPRESSED, ADD KEY (v) IGNORED",
                "ALTER TABLE secret ADD x CHAR(1) BYTE foo = bar",
                "SELECT id FROM pub WHERE id IN (SELECT id FROM secret GROUP BY id DESC)",
                "SELECT WEIGHT_STRING(v LEVEL 1), LENGTH (v) FROM secret",
            ],
        ),
        (
            "ro",
            &[
                "ALTER TABLE pub TRUNCATE PARTITION ALL",
                "ALTER TABLE pub DROP PARTITION p0",
                "ALTER TABLE pub DISABLE KEYS, RENAME TO pub3",
                "ALTER ONLINE TABLE pub DROP KEY kv",
                "ALTER TABLE pub ALTER v DROP DEFAULT",
                "CREATE OR REPLACE INDEX kv ON pub (id)",
                "CREATE TABLE rot (a LONG BYTE, b ENUM(0x61)) ENGINE = Aria TRANSACTIONAL = 0",
                "ALTER TABLE pub EXCHANGE PARTITION p0 WITH TABLE t_sec_victim.vt_np",
                "CREATE SPATIAL INDEX kg ON pub (v)",
                "CREATE TABLE rot2 (a INT foo = bar, b TEXT COMPRESSED, KEY (a) IGNORED)",
            ],
        ),
        (
            "app",
            &[
                "ALTER TABLE t_sec_victim.vt TRUNCATE PARTITION ALL",
                "ALTER ONLINE TABLE t_sec_victim.vt DROP KEY kv",
                "CREATE OR REPLACE INDEX kv ON t_sec_victim.vt (id)",
                "ALTER TABLE pub DROP PARTITION p0, EXCHANGE PARTITION p1 WITH TABLE t_sec_victim.vt",
                "ALTER TABLE pub TRUNCATE PARTITION p0, EXCHANGE PARTITION p1 WITH TABLE t_sec_victim.vt",
                "ALTER TABLE pub REORGANIZE PARTITION p0, p1 INTO (PARTITION q0 DATA DIRECTORY = '/tmp')",
                "ALTER TABLE pub ADD PARTITION (PARTITION p9 ENGINE = CONNECT)",
                "ALTER TABLE pub ANALYZE PARTITION p0",
                "CREATE TABLE evil (a LONG BYTE, b SET(0x41)) ENGINE = 'CONNECT'",
                "CREATE TABLE t_sec_victim.evil (a LONG BYTE) TRANSACTIONAL = 1",
                "SELECT MATCH v AGAINST ('x') FROM t_sec_victim.vt",
                "SELECT CHAR(77 USING utf8), (SELECT v FROM t_sec_victim.vt) FROM pub",
                "ALTER TABLE pub EXCHANGE PARTITION p0 WITH TABLE t_sec_victim.vt_np",
                "ALTER TABLE pub EXCHANGE PARTITION p0 WITH TABLE `t_sec_victim`.vt_np",
                "ALTER TABLE t_sec_victim.vt EXCHANGE PARTITION p0 WITH TABLE pub",
                "CREATE FULLTEXT INDEX kf ON t_sec_victim.vt (v)",
                "CREATE TABLE evil2 (a INT) ENGINE = CONNECT foo = bar",
                "CREATE TABLE evil3 (a INT foo = bar) CONNECTION = 'mysql://x'",
                "SELECT INTERVAL(1, 2), (SELECT v FROM t_sec_victim.vt GROUP BY v DESC) FROM pub",
            ],
        ),
    ];
    for (user, statements) in attempts {
        let mut c = login(&f, user, Some("PUB")).await;
        for sql in statements {
            seen.extend(attempt(&mut c, sql).await);
        }
    }
    assert!(
        !seen
            .iter()
            .any(|r| r.contains("the secret") || r.contains("victim row")),
        "rows outside the user's reach came back: {seen:?}"
    );
    assert_eq!(before, backend().await, "the backend changed");
    assert_eq!(defined, definitions().await, "a table's definition changed");
    assert_eq!(
        victim_np_before,
        victim_np().await,
        "the victim's rows were exchanged"
    );

    // Within the user's rights the same forms run, as MariaDB runs them.
    let mut app = login(&f, "app", Some("PUB")).await;
    for sql in [
        "CREATE TABLE fresh (a INT, b LONG BYTE, c ENUM(0x61, 'b') COMMENT 'c', KEY k (a)) ENGINE = Aria TRANSACTIONAL = 1 PAGE_CHECKSUM = 1 PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20), PARTITION p2 VALUES LESS THAN MAXVALUE)",
        "INSERT INTO fresh VALUES (1, 'x', 'a'), (11, 'y', 'b'), (21, 'z', 'a')",
        "ALTER TABLE fresh TRUNCATE PARTITION p0",
        "ALTER TABLE fresh ALTER c SET DEFAULT 'b', DROP KEY k, DISABLE KEYS",
        "CREATE OR REPLACE INDEX k ON fresh (a)",
        "ALTER TABLE fresh ALTER INDEX k IGNORED",
        "ALTER TABLE fresh REORGANIZE PARTITION p1, p2 INTO (PARTITION p12 VALUES LESS THAN MAXVALUE)",
        "ALTER TABLE fresh DROP PARTITION p0",
        "CREATE INDEX kb ON fresh (b(4), a)",
        "CREATE INDEX kw ON fresh (a) WAIT 1 IGNORED",
        "ALTER TABLE fresh ADD UNIQUE KEY ub (b(8), a)",
        "CREATE TABLE fresh2 (a INT, v INT DEFAULT 1) ENGINE = InnoDB",
        "ALTER ONLINE TABLE fresh2 ALTER v SET DEFAULT 2",
        "ALTER IGNORE TABLE fresh2 ALTER v DROP DEFAULT",
        "DROP TABLE fresh2",
        "CREATE TABLE fresh3 (a INT, t TEXT, z BLOB COMPRESSED, c CHAR(1) BYTE, KEY (a) IGNORED) ENGINE = InnoDB",
        "CREATE FULLTEXT INDEX kt ON fresh3 (t)",
        "INSERT INTO fresh3 (a, t) VALUES (2, 'x'), (1, 'y')",
        "SELECT a FROM fresh3 GROUP BY a DESC",
        "DROP TABLE fresh3",
        // An exchange between the user's own tables runs (and, done twice, undoes itself).
        "CREATE TABLE fresh_np LIKE pub",
        "ALTER TABLE fresh_np REMOVE PARTITIONING",
        "ALTER TABLE pub EXCHANGE PARTITION p0 WITH TABLE fresh_np",
        "ALTER TABLE pub EXCHANGE PARTITION p0 WITH TABLE fresh_np",
        "DROP TABLE fresh_np",
    ] {
        app.query_drop(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    assert_eq!(
        attempt(
            &mut app,
            "SELECT a, b, c, CHAR(77 USING latin1) FROM fresh ORDER BY a"
        )
        .await,
        ["11|y|b|M", "21|z|a|M"]
    );
    let parts: Vec<String> = admin
        .query(format!(
            "SELECT PARTITION_NAME FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = '{PUB_DB}' AND TABLE_NAME = 'fresh' ORDER BY 1"
        ))
        .await
        .unwrap();
    assert_eq!(parts, ["p12"]);
    app.query_drop("DROP TABLES fresh").await.unwrap();
    assert_eq!(before, backend().await);
    gateway_account_intact().await;
}

/// `SET default_storage_engine = @saved` (mysql-test's idiom) is checked on the engine the
/// server evaluated: an allowed one is kept for the session's CREATE TABLEs, a refused one gets
/// 1227 and the connection it was checked on (here the transaction's) keeps the engine it had.
/// Judged on the backend's tables.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storage_engine_from_a_user_variable_is_checked_on_its_value() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("sec11").await;
    let mut app = login(&f, "app", Some("PUB")).await;
    app.query_drop("SET @tmp = 'MyISAM'").await.unwrap();
    app.query_drop("SET default_storage_engine = @tmp")
        .await
        .unwrap();
    app.query_drop("CREATE TABLE e1 (a INT)").await.unwrap();
    app.query_drop("BEGIN").await.unwrap();
    app.query_drop("SELECT * FROM pub").await.unwrap();
    for (set, value) in [
        ("SET @e = 'MRG_MyISAM'", "SET default_storage_engine = @e"),
        (
            "SET @e = CONCAT('SEQ', 'UENCE')",
            "SET SESSION default_storage_engine = @e",
        ),
        (
            "SET @e = 'MRG_MYISAM'",
            "SET @@default_tmp_storage_engine = @e",
        ),
    ] {
        app.query_drop(set).await.unwrap();
        let e = app.query_drop(value).await.expect_err(value);
        assert_eq!(common::server_error(e).0, 1227, "{value}");
    }
    app.query_drop("CREATE TABLE e2 (a INT)").await.unwrap();
    let mut admin = primary(None).await;
    let engines: Vec<(String, String)> = admin
        .query(format!(
            "SELECT TABLE_NAME, ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{PUB_DB}' AND TABLE_NAME LIKE 'e_' ORDER BY 1"
        ))
        .await
        .unwrap();
    assert_eq!(
        engines,
        [
            ("e1".to_string(), "MyISAM".to_string()),
            ("e2".to_string(), "MyISAM".to_string())
        ]
    );
    app.query_drop("DROP TABLE e1, e2").await.unwrap();
}

/// A SET one of whose items is refused after the server evaluated it (an engine or a client
/// character set from a user variable) had run whole on the session's held connection, and
/// only the refused variable was put back: a `sql_mode = 'NO_BACKSLASH_ESCAPES'` beside it
/// stayed on the backend while the gateway still read backslashes as escapes, so `'a\'`
/// ended a string for MariaDB and not for the gateway, and what followed ran unchecked
/// (found by a breaker: a readOnly user read `mysql.user`, created a table in another
/// database and an account with every privilege). MySQL changes no variable of a SET that
/// fails; neither does the gateway now. Judged on the backend, and on the held connection's
/// own `sql_mode`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_set_leaves_no_other_variable_behind() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("sec12").await;
    let before = backend().await;
    let mut seen = Vec::new();
    for user in ["ro", "app"] {
        for (prepare, set) in [
            (
                "SET @e = 'MRG_MyISAM'",
                "SET default_storage_engine = @e, sql_mode = 'NO_BACKSLASH_ESCAPES'",
            ),
            (
                "SET @e = 'MRG_MyISAM'",
                "SET sql_mode = 'NO_BACKSLASH_ESCAPES', @@default_tmp_storage_engine = @e",
            ),
            (
                "SET @v = 'utf16'",
                "SET character_set_client = @v, sql_mode = 'NO_BACKSLASH_ESCAPES'",
            ),
            (
                "SET @m = 'ORACLE'",
                "SET sql_mode = 'NO_BACKSLASH_ESCAPES', @x = 1, sql_mode = @m",
            ),
        ] {
            for hold in ["BEGIN", "SELECT GET_LOCK('sec12', 0)"] {
                let mut c = login(&f, user, Some("PUB")).await;
                c.query_drop(hold).await.unwrap();
                c.query_drop("SELECT id FROM pub LIMIT 1").await.unwrap();
                c.query_drop(prepare).await.unwrap();
                c.query_drop(set).await.expect_err(set);
                for sql in [
                    format!(
                        "SELECT 'a\\' , (SELECT GROUP_CONCAT(v) FROM {VICTIM_DB}.vt) AS leak -- ' , 1 FROM pub"
                    ),
                    format!(
                        "SELECT 'a\\' ; INSERT INTO {VICTIM_DB}.vt VALUES (9, 'pwned'); CREATE USER evil@'%' IDENTIFIED BY 'evil'; -- ' FROM pub"
                    ),
                ] {
                    seen.extend(attempt(&mut c, &sql).await);
                }
                // The held connection reads backslashes as the gateway does.
                let escaped: Option<String> = c
                    .query_first("SELECT 'a\\'b' FROM pub WHERE id = 1")
                    .await
                    .unwrap();
                assert_eq!(escaped.as_deref(), Some("a'b"), "{user}: {set} ({hold})");
                let _ = c.query_drop("ROLLBACK").await;
            }
        }
    }
    nothing_leaked_or_changed(&seen, before).await;
}

/// A SET the checking connection took but another connection the session holds could not (it
/// had died): the gateway took the new `sql_mode` while the session's replayed state kept the
/// old one, so every connection taken afterwards read `'a\'` otherwise than the gateway and
/// what followed ran unchecked (found by a breaker: a readOnly user advanced a sequence of
/// another database). Now the session takes the SET as soon as the checking connection has
/// it, and a held connection that cannot take it is closed (its transaction rolled back).
/// Judged on what a new backend connection reads, and on the backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_a_held_connection_could_not_take_leaves_no_other_reading() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("sec13").await;
    let before = backend().await;
    let mut c = login(&f, "app", Some("TESTDB")).await;
    c.query_drop("SET sql_mode = 'NO_BACKSLASH_ESCAPES'")
        .await
        .unwrap();
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("SELECT * FROM hotnews").await.unwrap();
    // The connections the transaction holds on the second and third dataNodes die.
    let mut admin = primary(None).await;
    let ids: Vec<u64> = admin
        .query(format!(
            "SELECT ID FROM information_schema.PROCESSLIST WHERE USER IN ('manx', 'manx_gw') AND DB IN ('{}', '{}')",
            f.databases[1], f.databases[2]
        ))
        .await
        .unwrap();
    assert!(!ids.is_empty(), "the transaction's connections");
    for id in ids {
        let _ = admin.query_drop(format!("KILL {id}")).await;
    }
    let e = c
        .query_drop("SET sql_mode = DEFAULT")
        .await
        .expect_err("a dead connection");
    assert_ne!(common::server_error(e).0, 0);
    let _ = c.query_drop("ROLLBACK").await;
    let mut seen = Vec::new();
    for sql in [
        format!(
            "SELECT 'a\\' , (SELECT GROUP_CONCAT(v) FROM {VICTIM_DB}.vt) AS leak -- ' , 1 FROM hotnews"
        ),
        format!("SELECT 'a\\' ; INSERT INTO {VICTIM_DB}.vt VALUES (9, 'pwned'); -- ' FROM hotnews"),
    ] {
        seen.extend(attempt(&mut c, &sql).await);
    }
    // Every dataNode reads backslashes as the gateway does.
    let escaped: Vec<String> = c
        .query("SELECT 'a\\'b' FROM hotnews LIMIT 3")
        .await
        .unwrap();
    assert!(escaped.iter().all(|v| v == "a'b"), "{escaped:?}");
    nothing_leaked_or_changed(&seen, before).await;
}

/// The FOREIGN KEY constraints the backend holds whose parent is one of the attacks' targets
/// (`secret`, `vt`, `hotnews`), in every database: `(schema, constraint, parent table)`.
async fn foreign_keys_to_targets() -> Vec<(String, String, String)> {
    let mut a = primary(None).await;
    a.query(
        "SELECT CONSTRAINT_SCHEMA, CONSTRAINT_NAME, REFERENCED_TABLE_NAME \
         FROM information_schema.REFERENTIAL_CONSTRAINTS \
         WHERE REFERENCED_TABLE_NAME IN ('secret', 'vt', 'hotnews') ORDER BY 1, 2",
    )
    .await
    .unwrap()
}

/// Breaker's holes 1 and 2: a FOREIGN KEY to a table is a read of it (the child's inserts
/// answer which keys exist, the parent's deletes are blocked), and `CREATE TABLE x (LIKE t)` /
/// `(TABLE t)` copy or read `t`. Neither passes the gateway for a user who may not SELECT `t`
/// or whose schemas do not include it; the verdict is read on the backend (no constraint, no
/// table, the victim's rows as they were).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_keys_and_parenthesized_like_read_only_what_the_user_may() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("secfk").await;
    let before = backend().await;
    let fks_before = foreign_keys_to_targets().await;
    assert!(fks_before.is_empty(), "{fks_before:?}");
    let attempts: [(&str, &str, &[&str]); 3] = [
        (
            "priv",
            "PUB",
            &[
                "CREATE TABLE fkprobe (a INT, FOREIGN KEY (a) REFERENCES secret (id))",
                "CREATE TABLE fkprobe2 (a INT, CONSTRAINT c2 FOREIGN KEY (a) REFERENCES `secret` (id))",
                "CREATE TABLE fkprobe3 (a INT REFERENCES secret (id))",
                "CREATE TABLE fkprobe4 (a INT, FOREIGN KEY (a) REFERENCES PUB.secret (id))",
                "CREATE TABLE fkprobe5 (a INT, FOREIGN KEY (a) REFERENCES t_sec_victim.vt (id))",
                "CREATE TABLE lk2 (LIKE secret)",
                "CREATE TABLE lk3 ( like secret )",
                "CREATE TABLE cs7 (TABLE secret)",
                "ALTER TABLE pub ADD FOREIGN KEY (id) REFERENCES secret (id)",
                "ALTER TABLE pub ADD CONSTRAINT c9 FOREIGN KEY (id) REFERENCES secret (id)",
                "ALTER TABLE pub ADD COLUMN w INT REFERENCES secret (id)",
                "ALTER TABLE pub MODIFY v INT REFERENCES secret (id)",
            ],
        ),
        (
            "privt",
            "TESTDB",
            &[
                "ALTER TABLE company ADD FOREIGN KEY (id) REFERENCES hotnews (id)",
                "CREATE TABLE fkt (a BIGINT, FOREIGN KEY (a) REFERENCES hotnews (id))",
            ],
        ),
        (
            "app",
            "PUB",
            &[
                "CREATE TABLE fkx (a INT, FOREIGN KEY (a) REFERENCES t_sec_victim.vt (id))",
                "CREATE TABLE fkx2 (a INT REFERENCES `t_sec_victim`.`vt` (id))",
                "CREATE TABLE fkx3 (a INT, FOREIGN KEY (a) REFERENCES TESTDB.hotnews (id))",
                "CREATE TABLE TESTDB.fkx4 (a BIGINT, FOREIGN KEY (a) REFERENCES hotnews (id))",
                "CREATE TABLE lk4 (LIKE t_sec_victim.vt)",
                "CREATE TABLE lk5 (LIKE `t_sec_victim`.vt)",
                "CREATE TABLE cs8 (TABLE t_sec_victim.vt)",
            ],
        ),
    ];
    let mut seen = Vec::new();
    for (user, db, statements) in attempts {
        let mut c = login(&f, user, Some(db)).await;
        for sql in statements {
            seen.extend(attempt(&mut c, sql).await);
            // Also as a prepared statement (COM_STMT_PREPARE).
            let _ = c.exec_drop(*sql, ()).await;
        }
    }
    assert_eq!(
        foreign_keys_to_targets().await,
        fks_before,
        "a FOREIGN KEY to a table out of the user's reach was created"
    );
    let mut admin = primary(None).await;
    let created: Vec<String> = admin
        .query(
            "SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM information_schema.TABLES \
             WHERE TABLE_NAME IN ('fkprobe', 'fkprobe2', 'fkprobe3', 'fkprobe4', 'fkprobe5', \
             'lk2', 'lk3', 'lk4', 'lk5', 'cs7', 'cs8', 'fkt', 'fkx', 'fkx2', 'fkx3', 'fkx4')",
        )
        .await
        .unwrap();
    assert!(created.is_empty(), "tables were created: {created:?}");
    nothing_leaked_or_changed(&seen, before).await;

    // Within the user's rights a FOREIGN KEY to its own table runs, as MariaDB runs it.
    let mut app = login(&f, "app", Some("PUB")).await;
    common::run_all(
        &mut app,
        &[
            "CREATE TABLE parent_own (id INT PRIMARY KEY) ENGINE = InnoDB",
            "INSERT INTO parent_own VALUES (1)",
            "CREATE TABLE child_own (a INT, FOREIGN KEY (a) REFERENCES parent_own (id)) ENGINE = InnoDB",
            "CREATE TABLE child_own2 (a INT REFERENCES parent_own (id)) ENGINE = InnoDB",
            "INSERT INTO child_own VALUES (1)",
        ],
    )
    .await;
    let (code, _, _) = common::refused(&mut app, "INSERT INTO child_own VALUES (2)").await;
    assert_eq!(code, 1452, "the constraint holds");
    let own: Vec<(String, String)> = admin
        .query(format!(
            "SELECT TABLE_NAME, REFERENCED_TABLE_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS \
             WHERE CONSTRAINT_SCHEMA = '{PUB_DB}' ORDER BY 1"
        ))
        .await
        .unwrap();
    assert_eq!(
        own,
        [
            ("child_own".to_string(), "parent_own".to_string()),
            ("child_own2".to_string(), "parent_own".to_string()),
        ]
    );
    common::run_all(
        &mut app,
        &["DROP TABLE child_own, child_own2", "DROP TABLE parent_own"],
    )
    .await;
}

/// The forms of `route::forms::clauses` (ODBC escapes, `WAIT n` / `NOWAIT`, `CREATE TABLE t
/// WITH ..`, `PROCEDURE ANALYSE`, `INSERT .. SELECT 1 ON DUPLICATE KEY UPDATE`, engine-defined
/// options, system versioning, a column in AGAINST), ALTER TABLE's `RENAME INDEX | KEY`,
/// OPTIMIZE's `WAIT n` / `NOWAIT`, `CREATE TABLE t (SELECT ..)` and application-time periods:
/// every table they hold is checked as before, judged on the backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clause_forms_the_gateway_reads_reach_nothing_else() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("sec14").await;
    let before = backend().await;
    let mut seen = Vec::new();
    let attempts: [(&str, &[&str]); 3] = [
        (
            "priv",
            &[
                "SELECT * FROM {oj pub LEFT OUTER JOIN secret ON pub.id = secret.id}",
                "SELECT {fn concat((SELECT v FROM secret), 'x')}",
                "SELECT v FROM secret PROCEDURE ANALYSE()",
                "SELECT 1Ea, v FROM secret",
                "INSERT INTO pub (id, v) SELECT 9, (SELECT v FROM secret) ON DUPLICATE KEY UPDATE v = 'x'",
                "DROP TABLE secret WAIT 1",
                "DROP TABLE pub, secret NOWAIT",
                "TRUNCATE TABLE secret NOWAIT",
                "RENAME TABLE secret WAIT 1 TO s2",
                "ALTER TABLE secret WAIT 1 COMMENT = 'x'",
                "ALTER TABLE secret foo = 1",
                "ALTER TABLE secret RENAME INDEX PRIMARY TO p2",
                "ALTER TABLE secret RENAME KEY k TO k2, ADD COLUMN x INT",
                "OPTIMIZE TABLE secret WAIT 1",
                "CREATE TABLE leak WITH c AS (SELECT v FROM secret) SELECT v FROM c",
                "CREATE TABLE leak2 (SELECT v FROM secret)",
                "CREATE TABLE leak3 (SELECT v FROM pub) EXCEPT ALL (SELECT v FROM secret)",
            ],
        ),
        (
            "ro",
            &[
                "DROP TABLE pub WAIT 1",
                "TRUNCATE TABLE pub NOWAIT",
                "ALTER TABLE pub NOWAIT COMMENT = 'ro'",
                "ALTER TABLE pub `k` = 'v'",
                "ALTER TABLE pub RENAME INDEX k TO k2",
                "OPTIMIZE TABLE pub NOWAIT",
                "INSERT INTO pub SELECT 8, 'ro' ON DUPLICATE KEY UPDATE v = 'ro'",
                "CREATE TABLE rot WITH c AS (SELECT 1 AS a) SELECT a FROM c",
                "CREATE TABLE rot2 (a INT) `k` = 'v', foo = 1",
                "CREATE TABLE rot3 (SELECT 1 AS a)",
                "DELETE FROM pub FOR PORTION OF p FROM '2000-01-01' TO '2001-01-01'",
            ],
        ),
        (
            "app",
            &[
                "SELECT * FROM {oj pub LEFT JOIN t_sec_victim.vt ON 1 = 1}",
                "SELECT {fn length((SELECT v FROM t_sec_victim.vt))}",
                "SELECT * FROM t_sec_victim.vt PROCEDURE ANALYSE()",
                "SELECT * FROM pub WHERE MATCH (v) AGAINST (t_sec_victim.vt.v)",
                "DROP TABLE t_sec_victim.canary WAIT 1",
                "TRUNCATE TABLE t_sec_victim.vt NOWAIT",
                "RENAME TABLE pub WAIT 1 TO t_sec_victim.stolen",
                "ALTER TABLE t_sec_victim.vt WAIT 1 COMMENT = 'x'",
                "ALTER TABLE t_sec_victim.vt RENAME KEY k TO k2",
                "ALTER TABLE pub RENAME INDEX k TO k2, RENAME TO t_sec_victim.stolen",
                "OPTIMIZE TABLE pub, t_sec_victim.vt NOWAIT",
                "CREATE TABLE leak WITH RECURSIVE c AS (SELECT v FROM t_sec_victim.vt) SELECT v FROM c",
                "INSERT INTO pub (id, v) SELECT 9, (SELECT v FROM t_sec_victim.vt) ON DUPLICATE KEY UPDATE v = 'pwned'",
                "CREATE TABLE evil (a INT) foo = 1, ENGINE = CONNECT",
                "CREATE TABLE leak4 (SELECT v FROM pub) UNION (SELECT v FROM t_sec_victim.vt)",
                "CREATE TABLE t_sec_victim.leak5 (SELECT v FROM pub)",
                "DELETE FROM t_sec_victim.vt FOR PORTION OF p FROM '2000-01-01' TO '2001-01-01'",
                "UPDATE t_sec_victim.vt FOR PORTION OF p FROM 1 TO 2 SET v = 'pwned'",
                "CREATE TABLE t_sec_victim.evil3 (id INT, s DATE, e DATE, PERIOD FOR p(s, e), PRIMARY KEY (id, p WITHOUT OVERLAPS))",
                "CREATE TABLE evil2 (a INT, s TIMESTAMP(6) AS ROW START, e TIMESTAMP(6) AS ROW END, PERIOD FOR SYSTEM_TIME(s, e)) WITH SYSTEM VERSIONING ENGINE = 'CONNECT'",
            ],
        ),
    ];
    for (user, statements) in attempts {
        let mut c = login(&f, user, Some("PUB")).await;
        for sql in statements {
            seen.extend(attempt(&mut c, sql).await);
        }
    }
    assert!(
        !seen
            .iter()
            .any(|r| r.contains("the secret") || r.contains("victim row") || r.contains("manx")),
        "rows outside the user's reach came back: {seen:?}"
    );
    assert_eq!(before, backend().await, "the backend changed");

    // Within the user's rights the same forms run, as MariaDB runs them.
    let mut app = login(&f, "app", Some("PUB")).await;
    for sql in [
        "CREATE TABLE fresh WITH RECURSIVE c(a) AS (SELECT 1 UNION ALL SELECT a + 1 FROM c WHERE a < 3) SELECT a FROM c",
        "ALTER TABLE fresh WAIT 1 ADD PRIMARY KEY (a)",
        "INSERT INTO fresh SELECT 3 ON DUPLICATE KEY UPDATE a = 4",
        "RENAME TABLE fresh NOWAIT TO fresh2",
        "ALTER TABLE fresh2 ADD KEY k (a)",
        "ALTER TABLE fresh2 RENAME INDEX k TO k2",
        "OPTIMIZE TABLE fresh2 WAIT 1",
    ] {
        app.query_drop(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    assert_eq!(
        attempt(
            &mut app,
            "SELECT {fn concat(fresh2.a, coalesce(pub.v, ''))} FROM {oj fresh2 LEFT JOIN pub ON pub.id = fresh2.a} ORDER BY 1"
        )
        .await,
        ["1a", "2b", "4"]
    );
    // A rename of an index the table has, with a move to another database: refused whole.
    assert!(
        app.query_drop("ALTER TABLE fresh2 RENAME KEY k2 TO k3, RENAME TO t_sec_victim.stolen")
            .await
            .is_err()
    );
    app.query_drop("DROP TABLE fresh2 WAIT 1").await.unwrap();
    assert_eq!(before, backend().await);
    gateway_account_intact().await;
}

/// Statements of refused kinds that the parser cannot read (issue 18: `BACKUP STAGE`, `FLUSH
/// TABLE t`, `CHANGE MASTER`, client XA, `SELECT .. INTO OUTFILE ..
/// FIELDS`, ...) get the gateway's own refusal — 1227 where the server asks a privilege, 1064
/// naming the kind otherwise — and run nothing; and a plain comment inside a version comment,
/// now read as MariaDB reads it, hides nothing from the checks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_kinds_the_parser_cannot_read_get_the_gateway_refusal_and_run_nothing() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("sec11").await;
    let before = backend().await;
    let mut seen = Vec::new();
    let mut app = login(&f, "app", Some("PUB")).await;
    for (sql, code) in [
        ("BACKUP STAGE START", 1227),
        ("FLUSH TABLE pub", 1227),
        ("FLUSH TABLES secret FOR EXPORT", 1227),
        ("CHANGE MASTER TO MASTER_HOST='h1', MASTER_USER='u1'", 1227),
        ("RENAME DATABASE t_sec_victim TO t_sec_gone", 1064),
        (
            "ALTER DATABASE t_sec_victim UPGRADE DATA DIRECTORY NAME",
            1227,
        ),
        ("ALTER TABLE pub ANALYZE PARTITION p0", 1064),
        ("XA START 'x1', 'b1'", 1064),
        ("XA RECOVER", 1227),
        (
            "SELECT v INTO OUTFILE '/tmp/t_sec_outfile.txt' FIELDS TERMINATED BY ',' FROM t_sec_victim.vt",
            1227,
        ),
        (
            "CREATE DEFINER=root@localhost VIEW vv AS SELECT * FROM t_sec_victim.vt WITH CHECK OPTION FOO",
            1227,
        ),
    ] {
        let (got, _, message) = common::refused(&mut app, sql).await;
        assert_eq!(got, code, "{sql}: {message}");
        assert!(message.contains("gateway"), "{sql}: {message}");
    }
    // Plain comments inside version comments: the body is checked as MariaDB runs it.
    for (user, sql) in [
        (
            "app",
            "SELECT v FROM pub /*!40101 /* x */ UNION SELECT v FROM t_sec_victim.vt */",
        ),
        (
            "app",
            "SELECT v FROM pub /*!40101 /* */ */ UNION SELECT v FROM t_sec_victim.vt",
        ),
        (
            "app",
            "SELECT v FROM pub /*!40101 /*! */ UNION SELECT v FROM t_sec_victim.vt */",
        ),
        (
            "app",
            "SELECT v FROM pub /*!40101 /* ; */ ; DELETE FROM pub */",
        ),
        (
            "app",
            "SELECT v FROM pub /*!40101 /*/ */ UNION SELECT v FROM t_sec_victim.vt */",
        ),
        (
            "priv",
            "SELECT v FROM pub /*!40101 /* a */ UNION SELECT v FROM secret */",
        ),
        (
            "priv",
            "SELECT v FROM pub /*!40101 /* a */ WHERE id IN (SELECT id FROM secret) */",
        ),
    ] {
        let mut c = login(&f, user, Some("PUB")).await;
        seen.extend(attempt(&mut c, sql).await);
        common::refused(&mut c, sql).await;
    }
    // Within the schema the same form runs as MariaDB runs it.
    let rows: Vec<String> = app
        .query("SELECT v FROM pub WHERE id = 1 /*!40101 /* a */ UNION SELECT v FROM pub WHERE id = 2 */")
        .await
        .unwrap();
    assert_eq!(rows, ["a", "b"]);
    assert!(!std::path::Path::new("/tmp/t_sec_outfile.txt").exists());
    nothing_leaked_or_changed(&seen, before).await;
}

/// A MyISAM table of PUB's database as table maintenance leaves it: when a CHECK last passed
/// (`CHECK_TIME`), the space deleted rows left (`DATA_FREE`, emptied by an OPTIMIZE or a
/// REPAIR), and its rows of `mysql.table_stats` (written by `ANALYZE .. PERSISTENT FOR ALL`).
async fn maintained(table: &str) -> (Option<String>, u64, i64) {
    let mut a = primary(None).await;
    let (check, free): (Option<String>, u64) = a
        .query_first(format!(
            "SELECT CAST(CHECK_TIME AS CHAR), DATA_FREE FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = '{PUB_DB}' AND TABLE_NAME = '{table}'"
        ))
        .await
        .unwrap()
        .unwrap();
    let stats: i64 = a
        .query_first(format!(
            "SELECT COUNT(*) FROM mysql.table_stats WHERE db_name = '{PUB_DB}' AND table_name = '{table}'"
        ))
        .await
        .unwrap()
        .unwrap();
    (check, free, stats)
}

/// Table maintenance (`CHECK`, `CHECKSUM`, `ANALYZE`, `OPTIMIZE`, `REPAIR TABLE`) reaches only
/// the tables the user may read (CHECK, CHECKSUM) or write (the others, as MariaDB asks SELECT
/// and INSERT of them), judged on MyISAM tables the statements leave a mark on ([`maintained`]).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_maintenance_runs_only_where_the_user_may() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("secmaint").await;
    let mut admin = primary(None).await;
    for t in ["secret", "mt_noins", "mt"] {
        admin
            .query_drop(format!(
                "DROP TABLE IF EXISTS {PUB_DB}.{t};
                 CREATE TABLE {PUB_DB}.{t} (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=MyISAM;
                 INSERT INTO {PUB_DB}.{t} VALUES (1, 'a'), (2, 'b'), (3, 'c');
                 DELETE FROM {PUB_DB}.{t} WHERE id = 2"
            ))
            .await
            .unwrap();
    }
    let fresh = maintained("mt").await;
    assert!(
        fresh.0.is_none() && fresh.1 > 0 && fresh.2 == 0,
        "{fresh:?}"
    );
    let refused: [(&str, &str, u16); 21] = [
        // A table the user's `<privileges>` mask entirely.
        ("priv", "CHECK TABLE secret", 3012),
        ("priv", "CHECK TABLE pub, secret", 3012),
        ("priv", "check table PUB.`secret` extended", 3012),
        ("priv", "CHECKSUM TABLE secret", 3012),
        ("priv", "OPTIMIZE TABLE secret", 3012),
        ("priv", "REPAIR TABLE secret", 3012),
        // A table without INSERT: read, not maintained.
        ("priv", "OPTIMIZE TABLE mt_noins", 3012),
        (
            "priv",
            "OPTIMIZE NO_WRITE_TO_BINLOG TABLE mt, mt_noins",
            3012,
        ),
        ("priv", "REPAIR LOCAL TABLE mt_noins QUICK", 3012),
        ("priv", "ANALYZE TABLE mt_noins PERSISTENT FOR ALL", 3012),
        // A readOnly user writes nothing.
        ("ro", "ANALYZE TABLE mt PERSISTENT FOR ALL", 1495),
        (
            "ro",
            "ANALYZE LOCAL TABLES mt PERSISTENT FOR COLUMNS (id) INDEXES ()",
            1495,
        ),
        ("ro", "OPTIMIZE TABLE mt", 1495),
        ("ro", "REPAIR TABLE mt", 1495),
        // Schemas the user may not use, and databases no schema names.
        ("ro", "CHECK TABLE TESTDB.travelrecord", 1044),
        ("priv", "OPTIMIZE TABLE mt, TESTDB.company", 1044),
        ("ro", "CHECK TABLE t_sec_victim.vt", 1049),
        ("app", "CHECK TABLE mysql.user", 1049),
        ("app", "OPTIMIZE TABLE mt, t_sec_pub.mt", 1049),
        // Text outside the grammar.
        ("app", "OPTIMIZE TABLE mt PERSISTENT FOR ALL", 1064),
        ("app", "OPTIMIZE TABLE mt QUICK", 1064),
    ];
    for (user, sql, code) in refused {
        let mut c = login(&f, user, Some("PUB")).await;
        let e = c.query_drop(sql).await.expect_err(sql);
        assert_eq!(server_error(e).0, code, "{user}: {sql}");
        // Also as a prepared statement (COM_STMT_PREPARE).
        let _ = c.exec_drop(sql, ()).await;
    }
    assert_eq!(maintained("secret").await, (None, fresh.1, 0), "secret");
    assert_eq!(maintained("mt_noins").await, (None, fresh.1, 0), "mt_noins");
    assert_eq!(maintained("mt").await, fresh, "mt");

    // What the user may: the rows name the tables as the client does.
    let mut priv_ = login(&f, "priv", Some("PUB")).await;
    assert_eq!(
        attempt(&mut priv_, "CHECK TABLE mt_noins").await,
        ["PUB.mt_noins|check|status|OK"]
    );
    assert!(maintained("mt_noins").await.0.is_some());
    let mut app = login(&f, "app", Some("PUB")).await;
    assert_eq!(
        attempt(&mut app, "OPTIMIZE TABLE PUB.mt").await,
        ["PUB.mt|optimize|status|OK"]
    );
    assert_eq!(maintained("mt").await.1, 0);
    attempt(&mut app, "ANALYZE TABLE mt PERSISTENT FOR ALL").await;
    assert_eq!(maintained("mt").await.2, 1);
    // A sharded table: one row per dataNode, in dataNode order.
    app.query_drop("USE TESTDB").await.unwrap();
    assert_eq!(
        attempt(&mut app, "CHECK TABLE travelrecord").await,
        ["TESTDB.travelrecord|check|status|OK"; 3]
    );
    let sums = attempt(&mut app, "CHECKSUM TABLE company, PUB.pub").await;
    assert_eq!(sums.len(), 4, "{sums:?}");
    assert!(sums[..3].iter().all(|r| r.starts_with("TESTDB.company|")));
    assert!(sums[3].starts_with("PUB.pub|"), "{sums:?}");
}

/// SQL `PREPARE s FROM '<literal>'` / `EXECUTE s` / `EXECUTE IMMEDIATE '<literal>'`: the
/// literal's text gets every check a statement the client sent gets, the text prepared on the
/// backend is the one checked (quotes, backslashes, `NO_BACKSLASH_ESCAPES`), and a `USE`
/// between PREPARE and EXECUTE reaches no other table. Judged on the backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_prepared_statements_reach_only_what_was_checked() {
    let _one = ONE_AT_A_TIME.lock().await;
    let f = world("secprep").await;
    let before = backend().await;
    let mut seen = Vec::new();

    // What may run, runs, on the kept connection.
    let mut app = login(&f, "app", Some("PUB")).await;
    attempt(&mut app, "SET @a = 2").await;
    assert_eq!(
        attempt(&mut app, "PREPARE s FROM 'SELECT v FROM pub WHERE id = ?'").await,
        Vec::<String>::new()
    );
    assert_eq!(attempt(&mut app, "EXECUTE s USING @a").await, ["b"]);
    assert_eq!(
        attempt(
            &mut app,
            "EXECUTE IMMEDIATE 'SELECT v FROM pub WHERE id = 1'"
        )
        .await,
        ["a"]
    );
    attempt(
        &mut app,
        r"PREPARE q FROM 'SELECT ''a'', ''b\\c'', \'d\', ''\%'''",
    )
    .await;
    // MariaDB reads the literal, then the text: `'b\\c'` is `'b\c'`, which is `bc`.
    assert_eq!(attempt(&mut app, "EXECUTE q").await, [r"a|bc|d|\%"]);
    // A USE between PREPARE and EXECUTE: the statement still reads PUB's table.
    attempt(&mut app, "PREPARE u FROM 'SELECT COUNT(*) FROM pub'").await;
    attempt(&mut app, "USE TESTDB").await;
    assert_eq!(attempt(&mut app, "EXECUTE u").await, ["3"]);
    // A sharded schema: one node whatever the parameters are, or refused (1235); a global
    // table's read is on any of its nodes, each EXECUTE on the prepared one.
    attempt(&mut app, "PREPARE g FROM 'SELECT COUNT(*) FROM company'").await;
    let count = attempt(&mut app, "EXECUTE g").await;
    assert_eq!(count.len(), 1);
    for _ in 0..6 {
        assert_eq!(attempt(&mut app, "EXECUTE g").await, count);
    }
    for sql in [
        "PREPARE t FROM 'SELECT * FROM travelrecord WHERE id = ?'",
        "PREPARE t FROM 'DELETE FROM company WHERE id = ?'",
        "PREPARE t FROM 'SELECT COUNT(*) FROM travelrecord'",
    ] {
        let e = app.query_drop(sql).await.unwrap_err();
        assert_eq!(server_error(e).0, 1235, "{sql}");
    }
    attempt(
        &mut app,
        "PREPARE t FROM 'SELECT COUNT(*) FROM travelrecord WHERE id = 1'",
    )
    .await;
    assert_eq!(attempt(&mut app, "EXECUTE t").await.len(), 1);
    attempt(&mut app, "USE PUB").await;
    attempt(&mut app, "DEALLOCATE PREPARE u").await;
    // Prepared inside a transaction on a connection it pinned: still there after COMMIT.
    let mut tx = login(&f, "app", Some("PUB")).await;
    for sql in ["BEGIN", "SELECT COUNT(*) FROM pub"] {
        tx.query_drop(sql).await.unwrap();
    }
    tx.query_drop("PREPARE x FROM 'SELECT COUNT(*) FROM pub'")
        .await
        .unwrap();
    tx.query_drop("COMMIT").await.unwrap();
    assert_eq!(attempt(&mut tx, "EXECUTE x").await, ["3"]);
    drop(tx);
    let e = app.query_drop("EXECUTE u").await.unwrap_err();
    assert_eq!(server_error(e).0, 1243);

    // Other databases, account management, hidden second statements, quotes that would end
    // the literal early: refused, and nothing ran.
    for sql in [
        "PREPARE s FROM 'SELECT * FROM t_sec_victim.vt'",
        "EXECUTE s",
        "EXECUTE IMMEDIATE 'SELECT * FROM t_sec_victim.vt'",
        "PREPARE s FROM 'DELETE FROM t_sec_victim.vt'",
        "EXECUTE s",
        "PREPARE s FROM 'CREATE USER evil'",
        "EXECUTE s",
        "PREPARE s FROM 'SELECT 1; DROP TABLE pub'",
        "EXECUTE s",
        "EXECUTE IMMEDIATE 'SELECT 1; DROP TABLE pub'",
        "PREPARE s FROM 'SELECT ''x''; DROP TABLE pub'",
        "EXECUTE s",
        r"PREPARE s FROM 'SELECT ''x\\''; DROP TABLE pub; -- '''",
        "EXECUTE s",
        r"PREPARE s FROM 'SELECT \'x\\\'; DELETE FROM t_sec_victim.vt; -- \''",
        "EXECUTE s",
        "PREPARE s FROM 'SELECT * FROM pub' 'UNION SELECT * FROM t_sec_victim.vt'",
        "EXECUTE s",
        "SET @q = 'SELECT * FROM t_sec_victim.vt'",
        "PREPARE s FROM @q",
        "EXECUTE s",
        "EXECUTE IMMEDIATE @q",
        "EXECUTE IMMEDIATE CONCAT('DELETE FROM ', 't_sec_victim.vt')",
        "PREPARE s FROM '/*!40101 DELETE FROM t_sec_victim.vt */'",
        "EXECUTE s",
        "PREPARE s FROM 'EXECUTE IMMEDIATE ''DELETE FROM t_sec_victim.vt'''",
        "EXECUTE s",
        "EXECUTE IMMEDIATE 'EXECUTE IMMEDIATE ''DELETE FROM t_sec_victim.vt'''",
    ] {
        seen.extend(attempt(&mut app, sql).await);
    }
    attempt(&mut app, "SET sql_mode = 'NO_BACKSLASH_ESCAPES'").await;
    for sql in [
        r"PREPARE s FROM 'SELECT ''x\''; DROP TABLE pub; -- '",
        "EXECUTE s",
        r#"PREPARE s FROM "SELECT 'x\'; DELETE FROM t_sec_victim.vt; -- '""#,
        "EXECUTE s",
        r"EXECUTE IMMEDIATE 'SELECT ''x\''; DROP TABLE pub; -- '",
    ] {
        seen.extend(attempt(&mut app, sql).await);
    }
    attempt(&mut app, "PREPARE n FROM 'SELECT ''a'''").await;
    assert_eq!(attempt(&mut app, "EXECUTE n").await, ["a"]);
    // A refused PREPARE of the same name drops the old statement, as MariaDB's failed
    // PREPARE does: EXECUTE does not run the old text.
    app.query_drop("SET @q = 'SELECT 2'").await.unwrap();
    let e = app.query_drop("PREPARE n FROM @q").await.unwrap_err();
    assert_eq!(server_error(e).0, 1227);
    let e = app.query_drop("EXECUTE n").await.unwrap_err();
    assert_eq!(server_error(e).0, 1243);
    attempt(&mut app, "PREPARE n FROM 'SELECT ''a'''").await;
    // COM_RESET_CONNECTION forgets them (the backend connection is reset too).
    app.reset().await.unwrap();
    let e = app.query_drop("EXECUTE n").await.unwrap_err();
    assert_eq!(server_error(e).0, 1243);
    drop(app);

    // A masked table, through every readable form.
    let mut privu = login(&f, "priv", Some("PUB")).await;
    for sql in [
        "PREPARE s FROM 'SELECT * FROM secret'",
        "EXECUTE s",
        "EXECUTE IMMEDIATE 'SELECT * FROM secret'",
        "PREPARE s FROM 'SELECT * FROM pub WHERE id IN (SELECT id FROM secret)'",
        "EXECUTE s",
        "PREPARE s FROM 'DELETE FROM secret'",
        "EXECUTE s",
    ] {
        let rows = attempt(&mut privu, sql).await;
        assert!(
            !rows.iter().any(|r| r.contains("the secret")),
            "{sql}: {rows:?}"
        );
        seen.extend(rows);
    }
    drop(privu);

    // A readOnly user's writes are refused at PREPARE.
    let mut ro = login(&f, "ro", Some("PUB")).await;
    attempt(&mut ro, "SET @a = 1").await;
    for sql in [
        "PREPARE w FROM 'DELETE FROM pub'",
        "EXECUTE w",
        "PREPARE w FROM 'DELETE FROM pub WHERE id = ?'",
        "EXECUTE w USING @a",
        "EXECUTE IMMEDIATE 'DELETE FROM pub'",
        "PREPARE w FROM 'SELECT 1 FROM pub FOR UPDATE; DELETE FROM pub'",
        "EXECUTE w",
    ] {
        let e = ro.query_drop(sql).await;
        assert!(e.is_err(), "{sql} was accepted");
    }
    attempt(&mut ro, "PREPARE r FROM 'SELECT COUNT(*) FROM pub'").await;
    assert_eq!(attempt(&mut ro, "EXECUTE r").await, ["3"]);
    drop(ro);

    nothing_leaked_or_changed(&seen, before).await;
}
