//! Real client programs against the gateway: the `mariadb` command-line client, and the `manx`
//! binary itself started as a process on a configuration directory.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Extra, Fixture, closed_port};

fn mariadb(port: u16, args: &[&str], sql: &str) -> (bool, String, String) {
    let out = Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{port}"),
            "-uroot",
            "-p123456",
            "--batch",
            "--skip-ssl",
        ])
        .args(args)
        .args(["-e", sql])
        .output()
        .expect("the mariadb client is installed (scripts/sandbox.sh installs it)");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mariadb_command_line_client_works() {
    let f = Fixture::start("cli", Extra::default()).await;
    let port = f.port;
    let (ok, out, err) = tokio::task::spawn_blocking(move || {
        mariadb(
            port,
            &["TESTDB"],
            "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000001, 'b'), (10000001, 'c');
             SELECT id, user_id FROM travelrecord WHERE id IN (1, 10000001);
             SHOW TABLES; SELECT DATABASE(); SHOW DATABASES;",
        )
    })
    .await
    .unwrap();
    assert!(ok, "{err}");
    let mut lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.remove(0), "id\tuser_id");
    let mut rows: Vec<&str> = lines.drain(..2).collect();
    rows.sort();
    assert_eq!(rows, ["1\ta", "10000001\tc"]);
    assert_eq!(
        lines,
        [
            "Tables_in_TESTDB",
            "company",
            "employee",
            "goods",
            "hotnews",
            "travelrecord",
            "DATABASE()",
            "TESTDB",
            "Database",
            "TESTDB"
        ]
    );
    assert_eq!(f.ids_on(2, "travelrecord").await, [5_000_001]);
    // Errors are printed with MySQL's errno and SQLSTATE, and the client exits non-zero.
    let (ok, _, err) =
        tokio::task::spawn_blocking(move || mariadb(port, &["TESTDB"], "SELECT * FROM nosuch"))
            .await
            .unwrap();
    assert!(!ok);
    assert!(
        err.contains("ERROR 1064 (42000)") && err.contains("NOSUCH"),
        "{err}"
    );
    let (ok, _, err) =
        tokio::task::spawn_blocking(move || mariadb(port, &["-pwrong", "TESTDB"], "SELECT 1"))
            .await
            .unwrap();
    assert!(!ok);
    assert!(err.contains("ERROR 1045 (28000)"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_a_config_directory_and_rejects_a_bad_one() {
    let f = Fixture::start("binary", Extra::default()).await;
    let port = closed_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_manx"))
        .args([
            "--conf",
            f.dir.path().to_str().unwrap(),
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--manager-port",
            "0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait (bounded) for the start-up log line, read on a thread so a silent child cannot hang us.
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("manx did not log that it is serving within 30 s");
        if line.contains("manx is serving MySQL clients") {
            break;
        }
    }
    let (ok, out, err) = tokio::task::spawn_blocking(move || {
        mariadb(port, &["TESTDB"], "SELECT COUNT(*) FROM company")
    })
    .await
    .unwrap();
    child.kill().unwrap();
    let _ = child.wait();
    assert!(ok, "{err}");
    assert_eq!(out, "COUNT(*)\n0\n");

    // A bad configuration stops start-up with the file and line, exit code 1.
    let bad = tempfile::tempdir().unwrap();
    for file in [
        "server.xml",
        "rule.xml",
        "autopartition-long.txt",
        "partition-hash-int.txt",
    ] {
        std::fs::copy(f.dir.path().join(file), bad.path().join(file)).unwrap();
    }
    let schema = std::fs::read_to_string(f.dir.path().join("schema.xml"))
        .unwrap()
        .replace("dataNode=\"dn1,dn2\"", "dataNode=\"dn1,dn7\"");
    std::fs::write(bad.path().join("schema.xml"), schema).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_manx"))
        .args(["--conf", bad.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("schema.xml:") && err.contains("dataNode 'dn7' is not found"),
        "{err}"
    );
}

#[test]
fn check_and_route_commands() {
    let repo = common::repo();
    let out = Command::new(env!("CARGO_BIN_EXE_manx"))
        .args(["check", "--conf"])
        .arg(&repo)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("schema TESTDB"), "{text}");
    assert!(
        text.contains("table TRAVELRECORD rule auto-sharding-long: column ID function rang-long (io.mycat.route.function.AutoPartitionByLong) dataNodes dn1,dn2,dn3"),
        "{text}"
    );
    assert!(text.contains("dataHost localhost1 balance=0"), "{text}");
    assert!(text.contains("readHost hostS1 127.0.0.1:13307"), "{text}");
    assert!(
        text.trim_end().ends_with("configuration OK: ") || text.contains("configuration OK"),
        "{text}"
    );

    let route = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_manx"))
            .arg("route")
            .args(args)
            .arg("--conf")
            .arg(&repo)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(
        route(&["travelrecord", "5000001"]).1,
        "TESTDB.TRAVELRECORD ID=5000001 -> dn2 (database db2)\n"
    );
    assert_eq!(
        route(&["TESTDB.hotnews", "-7"]).1,
        "TESTDB.HOTNEWS ID=-7 -> dn2 (database db2)\n"
    );
    assert_eq!(
        route(&["employee", "10010"]).1,
        "TESTDB.EMPLOYEE SHARDING_ID=10010 -> dn2 (database db2)\n"
    );
    assert_eq!(
        route(&["company", "1"]).1,
        "TESTDB.COMPANY is a global table: every row is on dn1,dn2,dn3\n"
    );
    let (ok, _, err) = route(&["employee", "123"]);
    assert!(
        !ok && err.contains("can't find datanode for sharding column:SHARDING_ID val:123"),
        "{err}"
    );
    let (ok, _, err) = route(&["nosuch", "1"]);
    assert!(
        !ok && err.contains("table nosuch is not configured"),
        "{err}"
    );

    // A broken directory: every error, exit 1.
    let bad = tempfile::tempdir().unwrap();
    std::fs::write(bad.path().join("server.xml"), "<mycat:server><user name=\"u\"><property name=\"password\">p</property><property name=\"schemas\">X</property></user></mycat:server>").unwrap();
    std::fs::write(bad.path().join("rule.xml"), "<mycat:rule></mycat:rule>").unwrap();
    std::fs::write(
        bad.path().join("schema.xml"),
        "<mycat:schema>\n<schema name=\"Y\" />\n</mycat:schema>",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_manx"))
        .args(["check", "--conf"])
        .arg(bad.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("server.xml:1: <user name=\"u\">: schema X referred by user u does not exist"),
        "{err}"
    );
    assert!(
        err.contains(
            "schema.xml:2: <schema name=\"Y\">: schema Y has no tables, so it must set dataNode"
        ),
        "{err}"
    );
}

/// The `mariadb` command-line client on a PostgreSQL-backed sharded schema (issue 19): it
/// connects (its `@@version_comment` probe), creates a sharded table with MySQL DDL, writes and
/// reads binary and boolean values, and `SHOW TABLES` / `DESC` / `SHOW CREATE TABLE` answer with
/// the declared MySQL types.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mariadb_command_line_client_works_on_postgresql() {
    let dbs = common::postgres::pg_databases("clipg", 3).await;
    let f = Fixture::start(
        "clipg",
        Extra {
            schema_xml: format!(
                r#"<schema name="PGCLI" dataNode="pgdn1"><table name="things" primaryKey="id" dataNode="pgdn1,pgdn2,pgdn3" rule="mod-long" /></schema>
{}"#,
                common::postgres::pg_nodes_xml(&dbs)
            ),
            users_xml: String::new(),
            ..Extra::default()
        },
    )
    .await;
    // root's schemas are set by the fixture: give it PGCLI too.
    let server = f.dir.path().join("server.xml");
    let text = std::fs::read_to_string(&server).unwrap();
    std::fs::write(
        &server,
        text.replacen("TESTDB</property>", "TESTDB,PGCLI</property>", 1),
    )
    .unwrap();
    let port = common::start_gateway(f.dir.path()).await;
    let (ok, out, err) = tokio::task::spawn_blocking(move || {
        mariadb(
            port,
            &["PGCLI"],
            "CREATE TABLE things (id INT NOT NULL PRIMARY KEY, done TINYINT(1) NOT NULL DEFAULT 0, raw VARBINARY(8), made YEAR);
             INSERT INTO things (id, done, raw, made) VALUES (1, TRUE, X'00FF', 2024), (2, 0, _binary'ab', 1999), (3, 1, NULL, NULL);
             SELECT id, done, HEX(raw), made FROM things WHERE done = 1 ORDER BY id;
             SHOW TABLES; DESC things; SELECT @@version_comment, @@max_allowed_packet;",
        )
    })
    .await
    .unwrap();
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "id\tdone\tHEX(raw)\tmade");
    assert_eq!(lines[1..3], ["1\t1\t00FF\t2024", "3\t1\tNULL\tNULL"]);
    assert_eq!(lines[3..5], ["Tables_in_PGCLI", "things"]);
    assert!(lines[5].starts_with("Field\tType"), "{out}");
    assert!(lines[7].starts_with("done\ttinyint(1)"), "{out}");
    assert!(lines[8].starts_with("raw\tvarbinary(8)"), "{out}");
    assert!(lines[9].starts_with("made\tyear"), "{out}");
    assert!(
        lines[11].contains("manx") && lines[11].ends_with("16777216"),
        "{out}"
    );
    // Each row is where mod-long puts it.
    for (i, db) in dbs.iter().enumerate() {
        let pg = common::postgres::pg(db).await;
        let n: i64 = pg
            .query_one(
                "SELECT count(*) FROM things WHERE id % 3 = $1",
                &[&(i as i32)],
            )
            .await
            .unwrap()
            .get(0);
        let all: i64 = pg
            .query_one("SELECT count(*) FROM things", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!((n, all), (all, all), "{db}");
    }
}
