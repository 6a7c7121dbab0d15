//! The mysqldump round trip of issue 18: the real `mariadb-dump` dumps a logical schema through
//! the gateway (a sharded table, a global table, ER parent and child tables, with rows), with
//! its default options and with `--single-transaction`, `--complete-insert`,
//! `--skip-extended-insert` and `--add-locks`; the real `mariadb` client restores each dump
//! through the gateway into a second logical schema of the same tables on three empty
//! databases. Judged on the backends: every dataNode of the copy holds exactly the rows the
//! same dataNode of the original holds (so every row is where its partition function puts it).

mod common;

use common::{Extra, Fixture, primary};
use mysql_async::prelude::Queryable;

/// The tables of both schemas, as schema.xml spells them (each ordered by `id`).
const TABLES: [&str; 5] = ["travelrecord", "hotnews", "company", "customer", "orders"];

fn tables_xml(schema: &str, nodes: &str) -> String {
    format!(
        r#"<schema name="{schema}">
            <table name="travelrecord" dataNode="{nodes}" rule="auto-sharding-long" />
            <table name="hotnews" primaryKey="id" dataNode="{nodes}" rule="mod-long" />
            <table name="company" primaryKey="id" type="global" dataNode="{nodes}" />
            <table name="customer" primaryKey="id" dataNode="{nodes}" rule="mod-long">
                <childTable name="orders" primaryKey="id" joinKey="customer_id" parentKey="id" />
            </table>
        </schema>"#
    )
}

/// The copy's databases (dn4..dn6), empty.
async fn empty_copy(databases: &[String]) {
    let mut c = primary(None).await;
    for db in databases {
        c.query_drop(format!("DROP DATABASE IF EXISTS {db}"))
            .await
            .unwrap();
        c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
    }
}

/// Every row of `table` in database `db`, as text, in primary-key order.
async fn rows(db: &str, table: &str) -> Vec<Vec<Option<String>>> {
    let mut c = primary(Some(db)).await;
    let rows: Vec<mysql_async::Row> = c
        .query(format!("SELECT * FROM {table} ORDER BY id"))
        .await
        .unwrap_or_else(|e| panic!("{db}.{table}: {e}"));
    rows.into_iter().map(common::text_row).collect()
}

fn run(program: &str, args: &[String], stdin: Option<std::fs::File>) -> std::process::Output {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    if let Some(f) = stdin {
        cmd.stdin(f);
    }
    cmd.output()
        .unwrap_or_else(|e| panic!("{program} is installed (with the mariadb client): {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_dump_round_trip_keeps_every_row_on_its_data_node() {
    let copy: Vec<String> = (4..=6).map(|i| format!("t_dumprt_db{i}")).collect();
    empty_copy(&copy).await;
    let extra = Extra {
        schema_xml: format!(
            "{}\n{}\n{}",
            tables_xml("DUMPSRC", "dn1,dn2,dn3"),
            tables_xml("DUMPDST", "dn4,dn5,dn6"),
            (0..3)
                .map(|i| format!(
                    "<dataNode name=\"dn{}\" dataHost=\"localhost1\" database=\"{}\" />",
                    i + 4,
                    copy[i]
                ))
                .collect::<String>()
        ),
        users_xml: r#"<user name="dump"><property name="password">dump</property><property name="schemas">DUMPSRC,DUMPDST</property></user>"#
            .to_string(),
        ..Extra::default()
    };
    let f = Fixture::start("dumprt", extra).await;
    let mut c = mysql_async::Conn::new(common::opts(f.port, "dump", "dump", Some("DUMPSRC")))
        .await
        .unwrap();
    for ddl in [
        "CREATE TABLE customer (id INT PRIMARY KEY, name VARCHAR(20), note TEXT)",
        "CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT NOT NULL, amount DECIMAL(8,2), KEY (customer_id))",
    ] {
        c.query_drop(ddl).await.unwrap();
    }
    c.query_drop("INSERT INTO travelrecord (id, user_id, traveldate, fee, days) VALUES (1, 'a', '2024-01-02', 1.50, 3), (4999999, 'b''q', NULL, 2.00, 1), (5000001, 'c\\\\d', '2025-12-31', NULL, 7), (10000001, NULL, '2020-02-29', 9.99, NULL), (12, 'é', '2021-01-01', 0, 0)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO hotnews (id, title, content) VALUES (1, 't1', 'x'), (2, 't2', NULL), (3, 't3', 'line\\nbreak'), (4, 't4', ''), (5, 't5', 'z')")
        .await
        .unwrap();
    c.query_drop("INSERT INTO company (id, name) VALUES (1, 'acme'), (2, 'initech'), (3, NULL)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO customer (id, name, note) VALUES (1, 'a', NULL), (2, 'b', 'n'), (3, 'c', ''), (4, 'd', 'dd'), (5, 'e', NULL), (6, 'f', 'ff')")
        .await
        .unwrap();
    c.query_drop("INSERT INTO orders (id, customer_id, amount) VALUES (10, 1, 1.00), (11, 2, 2.00), (12, 3, 3.00), (13, 4, 4.00), (14, 4, 5.00), (15, 5, 6.00), (16, 6, 7.00)")
        .await
        .unwrap();
    // The original placement, read on the backends.
    let mut original = Vec::new();
    for t in TABLES {
        for db in &f.databases {
            original.push(rows(db, t).await);
        }
    }
    // Every table has rows on every dataNode (customer and orders by mod-long of the
    // customer id), so a row restored on the wrong node shows.
    assert!(original.iter().all(|r| !r.is_empty()), "{original:?}");

    let base = |db: &str| -> Vec<String> {
        vec![
            "-h127.0.0.1".to_string(),
            format!("-P{}", f.port),
            "-udump".to_string(),
            "-pdump".to_string(),
            "--skip-ssl".to_string(),
            db.to_string(),
        ]
    };
    let variants: [&[&str]; 6] = [
        &[],
        &["--single-transaction"],
        &["--complete-insert"],
        &["--skip-extended-insert"],
        &["--extended-insert", "--add-locks"],
        // SET @OLD_AUTOCOMMIT=@@AUTOCOMMIT, @@AUTOCOMMIT=0; LOCK TABLES ...; UNLOCK TABLES;
        // COMMIT; SET AUTOCOMMIT=@OLD_AUTOCOMMIT
        &["--no-autocommit"],
    ];
    for options in variants {
        empty_copy(&copy).await;
        let mut args: Vec<String> = options.iter().map(|o| o.to_string()).collect();
        args.extend(base("DUMPSRC"));
        let out = tokio::task::spawn_blocking(move || run("mariadb-dump", &args, None))
            .await
            .unwrap();
        let dump = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "mariadb-dump {options:?}: {}\n{dump}",
            String::from_utf8_lossy(&out.stderr)
        );
        if options.is_empty() {
            for expected in [
                "LOCK TABLES `travelrecord` WRITE",
                "/*!40000 ALTER TABLE `travelrecord` DISABLE KEYS */",
                // Extended inserts without a column list (MariaDB 10.11 breaks the line).
                "INSERT INTO `travelrecord` VALUES",
                "),\n(",
                "UNLOCK TABLES",
                "/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */",
                "=@OLD_CHARACTER_SET_CLIENT */",
                "CREATE TABLE `orders`",
            ] {
                assert!(dump.contains(expected), "{expected}: {dump}");
            }
        }
        if options.contains(&"--complete-insert") {
            assert!(
                dump.contains("INSERT INTO `travelrecord` (`id`, `user_id`"),
                "{dump}"
            );
        }
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &dump).unwrap();
        let args = base("DUMPDST");
        let input = std::fs::File::open(file.path()).unwrap();
        let out = tokio::task::spawn_blocking(move || run("mariadb", &args, Some(input)))
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "restore of mariadb-dump {options:?}: {}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        let mut restored = Vec::new();
        for t in TABLES {
            for db in &copy {
                restored.push(rows(db, t).await);
            }
        }
        for (i, (a, b)) in original.iter().zip(&restored).enumerate() {
            assert_eq!(
                a,
                b,
                "mariadb-dump {options:?}: table {} on dataNode dn{} / dn{}",
                TABLES[i / 3],
                i % 3 + 1,
                i % 3 + 4
            );
        }
    }
}
