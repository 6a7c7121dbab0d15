//! The backend accounts' privileges (issue 17, part 7), against the sandbox: its
//! all-privileged admin account `manx` is reported (start-up warnings, `manx check --backends`
//! warnings, `manx check --strict` errors), its least-privileged gateway account `manx_gw` is
//! not, and `manx_gw` can do what the gateway's heartbeats need.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{
    Extra, GATEWAY_PASSWORD, GATEWAY_USER, GatewayProcess, closed_port, ensure_sandbox, opts,
    write_config,
};
use mysql_async::prelude::Queryable;

const REPLICA_PORT: u16 = 13307;
const PG_PORT: u16 = 15432;

/// A PostgreSQL dataHost on the sandbox's db1 logging in as `user`, and a user that can see it
/// (a schema nobody may use would be a configuration warning of its own).
fn pg_extra(user: &str) -> Extra {
    Extra {
        schema_xml: format!(
            r#"<schema name="PGDB" checkSQLschema="false" dataNode="dnp"></schema>
<dataNode name="dnp" dataHost="pghost" database="db1" />
<dataHost name="pghost" maxCon="4" minCon="1" balance="0" writeType="0" dbType="postgresql" dbDriver="native" switchType="-1">
  <heartbeat>select 1</heartbeat>
  <writeHost host="pgM1" url="127.0.0.1:{PG_PORT}" user="{user}" password="{user}" />
</dataHost>"#
        ),
        users_xml: r#"<user name="pguser">
  <property name="password">pguser</property>
  <property name="schemas">PGDB</property>
</user>"#
            .to_string(),
        ..Extra::default()
    }
}

/// The bundled config on the sandbox's db1..db3, with `edit` applied to its schema.xml.
fn config(extra: &Extra, edit: impl FnOnce(String) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let dbs: Vec<String> = ["db1", "db2", "db3"].map(String::from).to_vec();
    write_config(dir.path(), &dbs, extra);
    let path = dir.path().join("schema.xml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, edit(text)).unwrap();
    dir
}

/// schema.xml with dataHost localhost1's servers logging in as the admin account `manx`.
fn as_admin(schema: String) -> String {
    schema.replace(
        &format!(r#"user="{GATEWAY_USER}" password="{GATEWAY_PASSWORD}""#),
        r#"user="manx" password="manx""#,
    )
}

fn manx_check(dir: &Path, flags: &[&str]) -> (Option<i32>, String) {
    let mut args = vec!["check"];
    args.extend_from_slice(flags);
    args.extend(["--conf", dir.to_str().unwrap()]);
    common::manx_command(&args)
}

#[test]
fn check_strict_fails_on_the_admin_account_and_passes_the_gateway_account() {
    ensure_sandbox();
    // The bundled account: nothing to report on any of the three servers, exit 0.
    let dir = config(&Extra::default(), |s| s);
    let (code, text) = manx_check(dir.path(), &["--strict"]);
    assert_eq!(code, Some(0), "{text}");
    for server in [
        "writeHost hostM1 (127.0.0.1:13306, user manx_gw)",
        "readHost hostS1 (127.0.0.1:13307, user manx_gw)",
        "writeHost hostM2 (127.0.0.1:13308, user manx_gw)",
    ] {
        assert!(
            text.contains(&format!(
                "dataHost localhost1 {server}: the backend account holds nothing beyond what manx needs"
            )),
            "{text}"
        );
    }
    assert!(!text.contains("error:"), "{text}");

    // The admin account: each server's ALL PRIVILEGES and GRANT OPTION are errors, exit 1.
    let dir = config(&Extra::default(), as_admin);
    let (code, text) = manx_check(dir.path(), &["--strict"]);
    assert_eq!(code, Some(1), "{text}");
    for server in [
        "writeHost hostM1 (127.0.0.1:13306, user manx)",
        "readHost hostS1 (127.0.0.1:13307, user manx)",
        "writeHost hostM2 (127.0.0.1:13308, user manx)",
    ] {
        for privilege in [
            "ALL PRIVILEGES on *.*: every privilege",
            "GRANT OPTION on *.*",
        ] {
            assert!(
                text.contains(&format!(
                    "error: dataHost localhost1 {server}: the backend account holds {privilege}"
                )),
                "{text}"
            );
        }
    }
    assert!(text.contains("6 problem(s)"), "{text}");
    // The password hash SHOW GRANTS prints is not repeated.
    assert!(!text.contains("IDENTIFIED"), "{text}");

    // --backends reports the same as warnings; plain check connects nowhere.
    let (code, text) = manx_check(dir.path(), &["--backends"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("warning: dataHost localhost1 writeHost hostM1 (127.0.0.1:13306, user manx): the backend account holds ALL PRIVILEGES on *.*"),
        "{text}"
    );
    let (code, text) = manx_check(dir.path(), &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("backend account"), "{text}");
}

#[test]
fn check_strict_fails_when_a_server_cannot_be_checked() {
    ensure_sandbox();
    let port = closed_port();
    let dir = config(&Extra::default(), |s| {
        s.replace("127.0.0.1:13308", &format!("127.0.0.1:{port}"))
    });
    let (code, text) = manx_check(dir.path(), &["--strict"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "error: dataHost localhost1 writeHost hostM2 (127.0.0.1:{port}, user manx_gw): cannot read the backend account's privileges"
        )),
        "{text}"
    );
    assert!(text.contains("1 problem(s)"), "{text}");
}

#[test]
fn check_strict_judges_postgresql_roles() {
    ensure_sandbox();
    let dir = config(&pg_extra("manx"), |s| s);
    let (code, text) = manx_check(dir.path(), &["--strict"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("error: dataHost pghost writeHost pgM1 (127.0.0.1:15432, user manx): the backend account holds SUPERUSER on role attribute: bypasses every permission check"),
        "{text}"
    );
    let dir = config(&pg_extra(GATEWAY_USER), |s| s);
    let (code, text) = manx_check(dir.path(), &["--strict"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("dataHost pghost writeHost pgM1 (127.0.0.1:15432, user manx_gw): the backend account holds nothing beyond what manx needs"),
        "{text}"
    );
}

/// Waits (at most 20 s) until the gateway's log satisfies `done`; returns the log.
async fn log_until(path: &Path, done: impl Fn(&str) -> bool) -> String {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if done(&text) || started.elapsed() > Duration::from_secs(20) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_warns_about_the_admin_account_and_not_the_gateway_account() {
    ensure_sandbox();
    let logs = tempfile::tempdir().unwrap();

    let dir = config(&Extra::default(), as_admin);
    let log = logs.path().join("admin.log");
    let (gateway, _c) =
        GatewayProcess::start_logging(dir.path(), "root", "123456", "TESTDB", Some(&log)).await;
    let text = log_until(&log, |t| {
        t.matches(" holds GRANT OPTION on *.*").count() == 3
    })
    .await;
    drop(gateway);
    for server in ["writeHost hostM1", "readHost hostS1", "writeHost hostM2"] {
        for privilege in ["ALL PRIVILEGES on *.*", "GRANT OPTION on *.*"] {
            let line = text
                .lines()
                .find(|l| {
                    l.contains(&format!(
                        "backend account of dataHost localhost1 {server} holds {privilege}"
                    ))
                })
                .unwrap_or_else(|| panic!("no warning for {server} {privilege}:\n{text}"));
            assert!(line.contains("WARN"), "{line}");
            assert!(line.contains("user=manx"), "{line}");
        }
    }

    let dir = config(&Extra::default(), |s| s);
    let log = logs.path().join("gateway.log");
    let (gateway, mut c) =
        GatewayProcess::start_logging(dir.path(), "root", "123456", "TESTDB", Some(&log)).await;
    // The gateway serves through the account (a read and a write on every dataNode).
    c.query_drop("SELECT COUNT(*) FROM travelrecord")
        .await
        .unwrap();
    let text = log_until(&log, |t| {
        t.matches("holds nothing beyond what manx needs").count() == 3
    })
    .await;
    drop(gateway);
    assert_eq!(
        text.matches("backend account holds nothing beyond what manx needs")
            .count(),
        3,
        "{text}"
    );
    assert!(!text.contains(" holds ALL"), "{text}");
    assert!(!text.contains("cannot read the privileges"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_account_reads_replication_status_and_nothing_more() {
    ensure_sandbox();
    // What the switchType=2 heartbeat runs on a replica.
    let mut r = mysql_async::Conn::new(opts(REPLICA_PORT, GATEWAY_USER, GATEWAY_PASSWORD, None))
        .await
        .unwrap();
    let rows: Vec<mysql_async::Row> = r.query("SHOW SLAVE STATUS").await.unwrap();
    assert_eq!(rows.len(), 1, "the replica's own replication status");
    // What it must not do: read the password hashes, write files, stop the server.
    for sql in [
        "SELECT user, authentication_string FROM mysql.user",
        "SELECT 1 INTO OUTFILE '/tmp/manx_gw_outfile'",
        "SHUTDOWN",
        "CREATE USER 'evil'@'%'",
        "SET GLOBAL max_connections = 5",
    ] {
        let e = r.query_drop(sql).await.unwrap_err();
        let (code, _, message) = common::server_error(e);
        assert!(
            matches!(code, 1044 | 1045 | 1142 | 1227),
            "{sql}: {code} {message}"
        );
    }
}

#[test]
fn check_strict_turns_configuration_warnings_into_errors() {
    ensure_sandbox();
    // An attribute Mycat does not know: a warning (DECISIONS.md item 8).
    let dir = config(&Extra::default(), |s| {
        s.replace(
            r#"<schema name="TESTDB" checkSQLschema="false">"#,
            r#"<schema name="TESTDB" checkSQLschema="false" colour="blue">"#,
        )
    });
    let (code, text) = manx_check(dir.path(), &[]);
    assert_eq!(code, Some(0), "{text}");
    let warning = text
        .lines()
        .find(|l| l.starts_with("warning: ") && l.contains("colour"))
        .unwrap_or_else(|| panic!("no warning about the attribute:\n{text}"))
        .to_string();
    let (code, text) = manx_check(dir.path(), &["--strict"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains(&warning.replacen("warning: ", "error: ", 1)),
        "{text}"
    );
    assert!(text.contains("1 problem(s)"), "{text}");
}
