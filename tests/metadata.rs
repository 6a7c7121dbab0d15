//! Metadata that GUI tools and ORMs read (issue 7 item 6), through a real client against a
//! gateway with sharded tables: `information_schema.SCHEMATA/TABLES/COLUMNS/STATISTICS/...` and
//! `SHOW [FULL] TABLES`, `SHOW TABLE STATUS`, `SHOW [FULL] COLUMNS`, `SHOW CREATE TABLE`,
//! `SHOW INDEX`, `DESC` answer the logical schemas and tables, and no physical database name
//! (`t_meta7c_db1`, ...) appears in any answer.

mod common;

use common::{Extra, Fixture, primary, server_error};
use manx::config::Config;
use manx::route::{Routed, Router};
use mysql_async::prelude::Queryable;
use mysql_async::{Row, Value};

/// The prefix of every physical database of this test binary.
const PHYSICAL: &str = "t_meta7c_";

/// TESTDB (the bundled sharded tables) for `root`; user `meta` also sees MIXDB, whose default
/// dataNode `dnm` holds table `extra_t` and a physical `company` that must not be listed twice
/// (MIXDB's configured `company` is a global table on dn2, dn3).
async fn fixture(prefix: &str) -> Fixture {
    let mixdb = format!("t_{prefix}_dbm");
    let mut c = primary(None).await;
    c.query_drop(format!("DROP DATABASE IF EXISTS {mixdb}"))
        .await
        .unwrap();
    c.query_drop(format!("CREATE DATABASE {mixdb}"))
        .await
        .unwrap();
    c.query_drop(format!(
        "CREATE TABLE {mixdb}.extra_t (k INT NOT NULL PRIMARY KEY, v VARCHAR(10), KEY by_v (v))"
    ))
    .await
    .unwrap();
    c.query_drop(format!(
        "CREATE TABLE {mixdb}.company (id INT NOT NULL PRIMARY KEY)"
    ))
    .await
    .unwrap();
    // A foreign key: its referenced schema is physical on the server.
    c.query_drop(format!(
        "CREATE TABLE {mixdb}.child_t (id INT NOT NULL PRIMARY KEY, k INT, \
         CONSTRAINT child_k FOREIGN KEY (k) REFERENCES {mixdb}.extra_t (k))"
    ))
    .await
    .unwrap();
    // A table on a second dataHost (the same server under another name: the gateway asks it
    // separately), with more than 9 columns so ORDINAL_POSITION must order as a number.
    let remote = format!("t_{prefix}_dbr");
    c.query_drop(format!("DROP DATABASE IF EXISTS {remote}"))
        .await
        .unwrap();
    c.query_drop(format!("CREATE DATABASE {remote}"))
        .await
        .unwrap();
    let columns: Vec<String> = (1..=11).map(|i| format!("c{i} INT")).collect();
    c.query_drop(format!(
        "CREATE TABLE {remote}.remote_t (id INT NOT NULL PRIMARY KEY, {}, note VARCHAR(10) DEFAULT 'it''s')",
        columns.join(", ")
    ))
    .await
    .unwrap();
    drop(c);
    Fixture::start(
        prefix,
        Extra {
            schema_xml: format!(
                r#"<schema name="MIXDB" checkSQLschema="false" dataNode="dnm">
  <table name="company" type="global" dataNode="dn2,dn3" />
  <table name="remote_t" dataNode="dnr" />
</schema>
<dataNode name="dnm" dataHost="localhost1" database="{mixdb}" />
<dataNode name="dnr" dataHost="localhost2" database="{remote}" />
<dataHost name="localhost2" maxCon="10" minCon="1" balance="0" writeType="0" dbType="mysql" dbDriver="native" switchType="-1">
  <heartbeat>select user()</heartbeat>
  <writeHost host="hostM2" url="127.0.0.1:13306" user="manx" password="manx" />
</dataHost>"#
            ),
            users_xml: r#"<user name="meta">
  <property name="password">meta</property>
  <property name="schemas">TESTDB,MIXDB</property>
</user>"#
                .to_string(),
            ..Extra::default()
        },
    )
    .await
}

async fn as_user(f: &Fixture, user: &str, db: Option<&str>) -> mysql_async::Conn {
    mysql_async::Conn::new(common::opts(f.port, user, user, db))
        .await
        .expect("connect to the gateway")
}

fn text(v: &Value) -> String {
    match v {
        Value::NULL => "NULL".to_string(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        other => other.as_sql(true),
    }
}

/// Runs `sql` and returns every row as text, failing the test on an error; asserts that no cell
/// and no column name carries a physical database name.
async fn rows(c: &mut mysql_async::Conn, sql: &str) -> Vec<Vec<String>> {
    let result: Vec<Row> = c.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = Vec::new();
    for row in result {
        for col in row.columns_ref() {
            assert!(
                !col.name_str().contains(PHYSICAL),
                "{sql}: column {} names a physical database",
                col.name_str()
            );
        }
        let cells: Vec<String> = (0..row.len())
            .map(|i| text(row.as_ref(i).unwrap()))
            .collect();
        for cell in &cells {
            assert!(
                !cell.contains(PHYSICAL),
                "{sql}: physical database leaked in {cells:?}"
            );
        }
        out.push(cells);
    }
    out
}

/// The first column of every row.
async fn column(c: &mut mysql_async::Conn, sql: &str) -> Vec<String> {
    rows(c, sql)
        .await
        .into_iter()
        .map(|r| r[0].clone())
        .collect()
}

/// The column names of `sql`'s result.
async fn header(c: &mut mysql_async::Conn, sql: &str) -> Vec<String> {
    let result = c.query_iter(sql).await.unwrap();
    let names = result
        .columns_ref()
        .iter()
        .map(|c| c.name_str().into_owned())
        .collect();
    result.drop_result().await.unwrap();
    names
}

const TESTDB_TABLES: [&str; 5] = ["company", "employee", "goods", "hotnews", "travelrecord"];

#[tokio::test(flavor = "multi_thread")]
async fn information_schema_answers_the_logical_schemas() {
    let f = fixture("meta7c_is").await;
    let mut c = f.client().await;

    // SCHEMATA: the schemas the user may use, under their logical names.
    assert_eq!(
        column(
            &mut c,
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA"
        )
        .await,
        ["TESTDB"]
    );
    let mut m = as_user(&f, "meta", None).await;
    assert_eq!(
        column(
            &mut m,
            "select schema_name from information_schema.schemata order by schema_name"
        )
        .await,
        ["MIXDB", "TESTDB"]
    );
    assert_eq!(
        column(
            &mut m,
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'MIX%'"
        )
        .await,
        ["MIXDB"]
    );

    // TABLES: the configured tables, read from their first dataNode.
    let tables = rows(
        &mut c,
        "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA='TESTDB' ORDER BY TABLE_NAME",
    )
    .await;
    assert_eq!(
        tables,
        TESTDB_TABLES.map(|t| vec![t.to_string(), "BASE TABLE".to_string()])
    );
    assert_eq!(
        column(
            &mut c,
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'h%'"
        )
        .await,
        ["hotnews"]
    );
    // The physical names find nothing.
    assert!(
        column(
            &mut c,
            &format!(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{PHYSICAL}db1'"
            )
        )
        .await
        .is_empty()
    );
    // A default dataNode's own tables count, the configured ones once.
    assert_eq!(
        rows(
            &mut m,
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES t WHERE t.TABLE_SCHEMA = 'MIXDB' ORDER BY 2"
        )
        .await,
        [
            ["MIXDB", "child_t"],
            ["MIXDB", "company"],
            ["MIXDB", "extra_t"],
            ["MIXDB", "remote_t"]
        ]
        .map(|r| r.map(String::from).to_vec())
    );
    // The other dataHost's rows keep their types (numbers order as numbers) and text.
    let remote = rows(
        &mut m,
        "SELECT COLUMN_NAME, ORDINAL_POSITION, COLUMN_DEFAULT, TABLE_SCHEMA FROM information_schema.COLUMNS \
         WHERE TABLE_NAME = 'remote_t' ORDER BY ORDINAL_POSITION",
    )
    .await;
    let names: Vec<&str> = remote.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        names,
        [
            "id", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10", "c11", "note"
        ]
    );
    assert_eq!(remote[12][1], "13");
    assert_eq!(remote[12][2], "'it''s'", "MariaDB quotes string defaults");
    assert!(remote.iter().all(|r| r[3] == "MIXDB"));
    assert_eq!(
        column(
            &mut m,
            "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'MIXDB' AND INDEX_NAME = 'PRIMARY'"
        )
        .await,
        ["4"]
    );
    // Foreign keys name the logical schema on both sides; SHOW CREATE TABLE names no database.
    assert_eq!(
        rows(
            &mut m,
            "SELECT CONSTRAINT_SCHEMA, TABLE_SCHEMA, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME \
             FROM information_schema.KEY_COLUMN_USAGE WHERE CONSTRAINT_NAME = 'child_k'"
        )
        .await,
        [["MIXDB", "MIXDB", "MIXDB", "extra_t"].map(String::from).to_vec()]
    );
    assert_eq!(
        rows(
            &mut m,
            "SELECT CONSTRAINT_SCHEMA, UNIQUE_CONSTRAINT_SCHEMA, TABLE_NAME, REFERENCED_TABLE_NAME \
             FROM information_schema.REFERENTIAL_CONSTRAINTS"
        )
        .await,
        [["MIXDB", "MIXDB", "child_t", "extra_t"]
            .map(String::from)
            .to_vec()]
    );
    let create = rows(&mut m, "SHOW CREATE TABLE MIXDB.child_t").await;
    assert!(
        create[0][1].contains("REFERENCES `extra_t` (`k`)"),
        "{create:?}"
    );

    // COLUMNS as DBeaver asks for them: `*`, DATABASE(), ORDER BY.
    let cols = rows(
        &mut c,
        "SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME='travelrecord' ORDER BY ORDINAL_POSITION",
    )
    .await;
    let names = header(
        &mut c,
        "SELECT * FROM information_schema.COLUMNS WHERE 1 = 0",
    )
    .await;
    let at = |n: &str| names.iter().position(|x| x == n).unwrap();
    assert_eq!(
        cols.iter()
            .map(|r| r[at("COLUMN_NAME")].as_str())
            .collect::<Vec<_>>(),
        ["id", "user_id", "traveldate", "fee", "days"]
    );
    assert!(cols.iter().all(|r| r[at("TABLE_SCHEMA")] == "TESTDB"));
    assert_eq!(cols[0][at("COLUMN_KEY")], "PRI");

    // STATISTICS: the index schema is the logical one too.
    assert_eq!(
        rows(
            &mut c,
            "SELECT INDEX_SCHEMA, TABLE_NAME, INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'TESTDB' AND TABLE_NAME = 'hotnews'"
        )
        .await,
        [["TESTDB", "hotnews", "PRIMARY", "id"].map(String::from).to_vec()]
    );
    assert_eq!(
        rows(
            &mut m,
            "SELECT TABLE_SCHEMA, INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_NAME = 'extra_t' ORDER BY INDEX_NAME"
        )
        .await,
        // Ordered in information_schema's case-insensitive collation.
        [["MIXDB", "by_v"], ["MIXDB", "PRIMARY"]].map(|r| r.map(String::from).to_vec())
    );

    // Joins of views, aliases, constraints.
    assert_eq!(
        column(
            &mut c,
            "SELECT c.COLUMN_NAME FROM information_schema.TABLES t JOIN information_schema.COLUMNS c \
             ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME \
             WHERE t.TABLE_SCHEMA = 'TESTDB' AND t.TABLE_NAME = 'employee' ORDER BY c.ORDINAL_POSITION"
        )
        .await,
        ["id", "name", "sharding_id"]
    );
    assert_eq!(
        rows(
            &mut c,
            "SELECT CONSTRAINT_SCHEMA, TABLE_SCHEMA, COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = 'TESTDB' AND TABLE_NAME = 'goods'"
        )
        .await,
        [["TESTDB", "TESTDB", "id"].map(String::from).to_vec()]
    );
    assert_eq!(
        column(
            &mut c,
            "SELECT COUNT(*) FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = 'TESTDB'"
        )
        .await,
        ["5"]
    );

    // Everything a tool could list, without a filter: nothing physical (checked by `rows`).
    for view in [
        "SCHEMATA",
        "TABLES",
        "COLUMNS",
        "STATISTICS",
        "KEY_COLUMN_USAGE",
        "TABLE_CONSTRAINTS",
        "REFERENTIAL_CONSTRAINTS",
        "PARTITIONS",
        "ROUTINES",
        "VIEWS",
        "TRIGGERS",
        "INNODB_SYS_TABLES",
    ] {
        rows(&mut m, &format!("SELECT * FROM information_schema.{view}")).await;
    }
    assert!(
        column(
            &mut m,
            "SELECT ROUTINE_NAME FROM information_schema.ROUTINES"
        )
        .await
        .is_empty()
    );
    // Views describing the server are read as they are.
    assert!(
        !column(&mut c, "SELECT ENGINE FROM information_schema.ENGINES")
            .await
            .is_empty()
    );

    // Prepared (binary protocol), with the schema bound: described and answered the same way.
    let stmt = c
        .prep("SELECT TABLE_NAME, TABLE_SCHEMA FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE ? ORDER BY 1")
        .await
        .unwrap();
    assert_eq!(stmt.columns().len(), 2);
    let got: Vec<(String, String)> = c.exec(&stmt, ("TESTDB", "%o%s")).await.unwrap();
    assert_eq!(
        got,
        ["goods", "hotnews"].map(|t| (t.to_string(), "TESTDB".to_string()))
    );

    // Navicat's object counts: a UNION over several views.
    assert_eq!(
        column(
            &mut c,
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'TESTDB' \
             UNION ALL SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'TESTDB' \
             UNION ALL SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'TESTDB'"
        )
        .await,
        ["5", "16", "0"]
    );

    // Behind a catalog name too.
    assert_eq!(
        column(
            &mut c,
            "SELECT DISTINCT TABLE_SCHEMA FROM def.information_schema.COLUMNS"
        )
        .await,
        ["TESTDB"]
    );

    // The TABLES of a schema the user may not use stay hidden.
    assert!(
        column(
            &mut c,
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'MIXDB'"
        )
        .await
        .is_empty()
    );
    // Mixed with the schema's tables: refused by name.
    let e = server_error(
        c.query_drop("SELECT * FROM information_schema.TABLES t JOIN travelrecord r ON 1 = 1")
            .await
            .unwrap_err(),
    );
    assert_eq!(e.0, 1064, "{e:?}");
    assert!(e.2.contains("TRAVELRECORD"), "{e:?}");
    // The backend's private views stay refused.
    let e = server_error(
        c.query_drop("SELECT * FROM information_schema.PROCESSLIST")
            .await
            .unwrap_err(),
    );
    assert_eq!(e.0, 1044, "{e:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn show_statements_answer_the_logical_schemas() {
    let f = fixture("meta7c_show").await;
    let mut c = f.client().await;
    let mut m = as_user(&f, "meta", Some("MIXDB")).await;

    // A schema with a default dataNode: the logical header, configured tables included once.
    assert_eq!(
        header(&mut m, "SHOW FULL TABLES").await,
        ["Tables_in_MIXDB", "Table_type"]
    );
    assert_eq!(
        rows(&mut m, "SHOW FULL TABLES").await,
        [
            ["child_t", "BASE TABLE"],
            ["company", "BASE TABLE"],
            ["extra_t", "BASE TABLE"],
            ["remote_t", "BASE TABLE"]
        ]
        .map(|r| r.map(String::from).to_vec())
    );
    assert_eq!(
        column(&mut m, "SHOW TABLES FROM MIXDB LIKE 'ext%'").await,
        ["extra_t"]
    );
    assert_eq!(
        column(
            &mut c,
            "SHOW FULL TABLES FROM TESTDB WHERE Table_type = 'BASE TABLE'"
        )
        .await,
        TESTDB_TABLES
    );
    assert!(
        column(&mut c, "SHOW FULL TABLES WHERE Table_type = 'VIEW'")
            .await
            .is_empty()
    );
    // A schema the user may not use.
    let e = server_error(c.query_drop("SHOW TABLES FROM MIXDB").await.unwrap_err());
    assert_eq!(e.0, 1044, "{e:?}");

    // SHOW TABLE STATUS: MySQL's columns, the logical table names.
    let status = header(&mut c, "SHOW TABLE STATUS").await;
    assert_eq!(status[..4], ["Name", "Engine", "Version", "Row_format"]);
    assert_eq!(status.len(), 18);
    assert_eq!(column(&mut c, "SHOW TABLE STATUS").await, TESTDB_TABLES);
    assert_eq!(
        column(&mut c, "SHOW TABLE STATUS FROM TESTDB LIKE 'hot%'").await,
        ["hotnews"]
    );
    assert_eq!(
        column(&mut c, "SHOW TABLE STATUS WHERE Name = 'goods'").await,
        ["goods"]
    );
    let e = server_error(
        c.query_drop("SHOW TABLE STATUS FROM mysql")
            .await
            .unwrap_err(),
    );
    assert_eq!(e.0, 1227, "{e:?}");

    // A table missing from a default dataNode: MySQL's 1146, naming the logical schema.
    for sql in ["DESC nope", "SHOW CREATE TABLE nope", "SELECT * FROM nope"] {
        let e = server_error(m.query_drop(sql).await.unwrap_err());
        assert_eq!(e.0, 1146, "{sql}: {e:?}");
        assert_eq!(e.2, "Table 'MIXDB.nope' doesn't exist", "{sql}");
    }
    // And from a schema without one, answered by the gateway.
    let e = server_error(c.query_drop("DESCRIBE `TESTDB`.`nope`").await.unwrap_err());
    assert_eq!(
        (e.0, e.2.as_str()),
        (1146, "Table 'TESTDB.nope' doesn't exist")
    );

    // Routines, triggers and events are not reachable through the gateway: MySQL's columns,
    // no rows.
    for (sql, first, count) in [
        ("SHOW PROCEDURE STATUS WHERE Db = 'TESTDB'", "Db", 11),
        ("SHOW FUNCTION STATUS LIKE 'f%'", "Db", 11),
        ("SHOW TRIGGERS", "Trigger", 11),
        ("SHOW TRIGGERS FROM TESTDB LIKE 'travel%'", "Trigger", 11),
        ("SHOW EVENTS", "Db", 15),
    ] {
        let h = header(&mut c, sql).await;
        assert_eq!((h[0].as_str(), h.len()), (first, count), "{sql}: {h:?}");
        assert!(rows(&mut c, sql).await.is_empty(), "{sql}");
    }

    // Per-table statements: from the table's first dataNode, nothing physical in them.
    assert_eq!(
        column(&mut c, "SHOW FULL COLUMNS FROM travelrecord").await,
        ["id", "user_id", "traveldate", "fee", "days"]
    );
    assert_eq!(
        column(&mut c, "SHOW COLUMNS FROM employee FROM TESTDB").await,
        ["id", "name", "sharding_id"]
    );
    assert_eq!(
        column(&mut c, "DESC hotnews").await,
        ["id", "title", "content"]
    );
    let create = rows(&mut c, "SHOW CREATE TABLE TESTDB.travelrecord").await;
    assert_eq!(create[0][0], "travelrecord");
    assert!(create[0][1].starts_with("CREATE TABLE `travelrecord`"));
    let index = rows(&mut c, "SHOW INDEX FROM hotnews").await;
    assert_eq!(index.len(), 1);
    assert_eq!(index[0][0], "hotnews");
    assert_eq!(
        column(&mut m, "SHOW KEYS FROM extra_t").await,
        ["extra_t", "extra_t"]
    );
}

/// SQLAlchemy's reflection through PyMySQL, when the client venv of `scripts/clients.sh` is
/// there (tests/client_matrix.rs installs it; this test does not).
#[tokio::test(flavor = "multi_thread")]
async fn sqlalchemy_reflection() {
    let python = common::repo().join("target/clients-venv/bin/python");
    if !python.exists() {
        eprintln!(
            "skipped: {} is missing (scripts/clients.sh)",
            python.display()
        );
        return;
    }
    let f = fixture("meta7c_sa").await;
    let script = r#"
import sys
from sqlalchemy import create_engine, inspect
port = sys.argv[1]
engine = create_engine(f"mysql+pymysql://meta:meta@127.0.0.1:{port}/TESTDB")
i = inspect(engine)
print("schemas=" + ",".join(sorted(i.get_schema_names())))
print("tables=" + ",".join(sorted(i.get_table_names())))
print("mixdb=" + ",".join(sorted(i.get_table_names(schema="MIXDB"))))
print("columns=" + ",".join(c["name"] for c in i.get_columns("travelrecord")))
print("pk=" + ",".join(i.get_pk_constraint("travelrecord")["constrained_columns"]))
print("indexes=" + ",".join(x["name"] for x in i.get_indexes("extra_t", schema="MIXDB")))
print("has=" + str(i.has_table("hotnews")) + "," + str(i.has_table("nope")))
fk = i.get_foreign_keys("child_t", schema="MIXDB")[0]
print("fk=" + str(fk["referred_schema"]) + "." + fk["referred_table"] + "(" + ",".join(fk["referred_columns"]) + ")")
"#;
    let out = std::process::Command::new(&python)
        .args(["-c", script, &f.port.to_string()])
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains(PHYSICAL), "{stdout}");
    let want = "schemas=MIXDB,TESTDB\n\
                tables=company,employee,goods,hotnews,travelrecord\n\
                mixdb=child_t,company,extra_t,remote_t\n\
                columns=id,user_id,traveldate,fee,days\n\
                pk=id\n\
                indexes=by_v\n\
                has=True,False\n\
                fk=MIXDB.extra_t(k)\n";
    assert_eq!(stdout, want);
}

/// The rewrite itself, without a database: the view reference replaced at its span (quoted and
/// in any case), the alias kept, DATABASE() answered, the rest of the text untouched.
#[test]
fn information_schema_rewrite_is_span_exact() {
    let router = Router::new(&Config::load(&common::repo()).unwrap()).unwrap();
    let sql = "SELECT t.table_name FROM `INFORMATION_SCHEMA`.`tables`  t WHERE t.table_schema = DATABASE() AND t.table_comment <> 'a\\'b'";
    let Ok(Routed::Metadata(q)) = router.route(sql, Some("TESTDB")) else {
        panic!(
            "not a metadata query: {:?}",
            router.route(sql, Some("TESTDB"))
        );
    };
    let visible = vec!["TESTDB".to_string()];
    let node = router.metadata_node(Some("TESTDB"), &visible).unwrap();
    assert_eq!(node, "dn1");
    let columns: std::sync::Arc<[String]> = ["TABLE_SCHEMA", "TABLE_NAME"].map(String::from).into();
    let plan = router
        .metadata_plan(
            &q,
            &manx::route::Viewer {
                schemas: &visible,
                access: None,
            },
            &node,
            &|_| Some(columns.clone()),
            &|_| Vec::new(),
        )
        .unwrap();
    assert_eq!(
        &*plan.targets[0].sql,
        "SELECT t.table_name FROM (SELECT 'TESTDB' AS `TABLE_SCHEMA`, v.`TABLE_NAME` FROM information_schema.`TABLES` AS v \
         WHERE (v.`TABLE_SCHEMA` = 'db1' AND LOWER(v.`TABLE_NAME`) IN ('company', 'employee', 'goods', 'hotnews', 'travelrecord')))  t \
         WHERE t.table_schema = 'TESTDB' AND t.table_comment <> 'a\\'b'"
    );
    // A view without alias is aliased by its name as written; server views stay as they are.
    let Ok(Routed::Metadata(q)) = router.route(
        "SELECT COUNT(*) FROM information_schema.Tables JOIN information_schema.ENGINES ON 1 = 1 WHERE Tables.TABLE_NAME = 'x'",
        None,
    ) else {
        panic!("not a metadata query");
    };
    let plan = router
        .metadata_plan(
            &q,
            &manx::route::Viewer {
                schemas: &[],
                access: None,
            },
            "dn1",
            &|_| Some(columns.clone()),
            &|_| Vec::new(),
        )
        .unwrap();
    assert_eq!(
        &*plan.targets[0].sql,
        "SELECT COUNT(*) FROM (SELECT v.`TABLE_SCHEMA`, v.`TABLE_NAME` FROM information_schema.`TABLES` AS v WHERE 1 = 0) AS `Tables` \
         JOIN information_schema.ENGINES ON 1 = 1 WHERE Tables.TABLE_NAME = 'x'"
    );
}
