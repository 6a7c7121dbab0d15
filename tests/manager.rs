//! The manager port (issue 20): Mycat's commands through real clients, with the column names
//! and MySQL column types OPERATIONS.md §1 gives; offline/online; `switch @@datasource` on a
//! throwaway MariaDB pair; HAProxy's mysql-check draining the instance after `offline`;
//! graceful shutdown on SIGTERM.

mod common;

use std::io::Read;
use std::time::{Duration, Instant};

use common::mariadb::Throwaway;
use common::{Extra, Fixture, GatewayProcess, opts, server_error, start_gateway_with_manager};
use mysql_async::consts::ColumnType as T;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row};

/// A manager-port client logged in as `user`.
async fn manager(port: u16, user: &str, password: &str) -> Conn {
    Conn::new(opts(port, user, password, None))
        .await
        .expect("log in to the manager port")
}

/// Column (name, type) pairs and rows of `sql`.
async fn result(c: &mut Conn, sql: &str) -> (Vec<(String, T)>, Vec<Row>) {
    let mut r = c
        .query_iter(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let columns = r
        .columns()
        .map(|cols| {
            cols.iter()
                .map(|c| (c.name_str().into_owned(), c.column_type()))
                .collect()
        })
        .unwrap_or_default();
    let rows: Vec<Row> = r.collect().await.unwrap();
    (columns, rows)
}

/// Asserts that `sql` answers exactly these columns with these types.
async fn check_columns(c: &mut Conn, sql: &str, expected: &[(&str, T)]) -> Vec<Row> {
    let (columns, rows) = result(c, sql).await;
    let expected: Vec<(String, T)> = expected.iter().map(|(n, t)| (n.to_string(), *t)).collect();
    assert_eq!(columns, expected, "columns of `{sql}`");
    rows
}

fn s(row: &Row, name: &str) -> Option<String> {
    let i = row
        .columns_ref()
        .iter()
        .position(|c| c.name_str() == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    row.as_ref(i).and_then(|v| match v {
        mysql_async::Value::NULL => None,
        mysql_async::Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        other => Some(other.as_sql(true)),
    })
}

fn n(row: &Row, name: &str) -> i64 {
    s(row, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("column {name} is not a number: {row:?}"))
}

const V: T = T::MYSQL_TYPE_VAR_STRING;
const L: T = T::MYSQL_TYPE_LONG;
const LL: T = T::MYSQL_TYPE_LONGLONG;
const D: T = T::MYSQL_TYPE_DOUBLE;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_commands_answer_mycats_columns_and_types() {
    let f = Fixture::start("mgr_show", Extra::default()).await;
    let (port, mport) = start_gateway_with_manager(f.dir.path()).await;
    let mut m = manager(mport, "root", "123456").await;

    let help = check_columns(
        &mut m,
        "show @@help",
        &[("STATEMENT", V), ("DESCRIPTION", V)],
    )
    .await;
    let statements: Vec<String> = help.iter().filter_map(|r| s(r, "STATEMENT")).collect();
    for c in [
        "show @@datasource",
        "show @@heartbeat",
        "switch @@datasource name:index",
        "offline",
        "reload @@config_all",
        "rollback @@config",
    ] {
        assert!(statements.iter().any(|s| s == c), "{c} in {statements:?}");
    }
    let version = check_columns(&mut m, "SHOW @@VERSION", &[("VERSION", V)]).await;
    assert!(s(&version[0], "VERSION").unwrap().contains("manx"));
    let now = check_columns(&mut m, "show @@time.current", &[("TIMESTAMP", LL)]).await;
    let startup = check_columns(&mut m, "show  @@time.startup;", &[("TIMESTAMP", LL)]).await;
    assert!(n(&now[0], "TIMESTAMP") >= n(&startup[0], "TIMESTAMP"));
    let server = check_columns(
        &mut m,
        "show @@server",
        &[
            ("UPTIME", V),
            ("USED_MEMORY", LL),
            ("TOTAL_MEMORY", LL),
            ("MAX_MEMORY", LL),
            ("RELOAD_TIME", LL),
            ("ROLLBACK_TIME", LL),
            ("CHARSET", V),
            ("STATUS", V),
        ],
    )
    .await;
    assert_eq!(s(&server[0], "STATUS").as_deref(), Some("ON"));
    assert!(n(&server[0], "USED_MEMORY") > 0);
    let dbs = check_columns(&mut m, "show @@database", &[("DATABASE", V)]).await;
    assert_eq!(s(&dbs[0], "DATABASE").as_deref(), Some("TESTDB"));

    // Traffic on the server port, counted by @@datasource / @@datanode.
    let mut c = mysql_async::Conn::new(opts(port, "root", "123456", Some("TESTDB")))
        .await
        .unwrap();
    c.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (1, 'a')")
        .await
        .unwrap();
    let _: Vec<Row> = c
        .query("SELECT * FROM travelrecord WHERE id = 1")
        .await
        .unwrap();

    let datasource_columns = [
        ("DATANODE", V),
        ("NAME", V),
        ("TYPE", V),
        ("HOST", V),
        ("PORT", L),
        ("W/R", V),
        ("ACTIVE", L),
        ("IDLE", L),
        ("SIZE", L),
        ("EXECUTE", LL),
        ("READ_LOAD", L),
        ("WRITE_LOAD", L),
    ];
    let sources = check_columns(&mut m, "show @@datasource", &datasource_columns).await;
    // dn1..dn3 x (hostM1, its readHost, hostM2).
    assert_eq!(sources.len(), 9, "{sources:?}");
    let m1: Vec<&Row> = sources
        .iter()
        .filter(|r| s(r, "NAME").as_deref() == Some("hostM1"))
        .collect();
    assert_eq!(m1.len(), 3);
    assert!(
        m1.iter()
            .all(|r| n(r, "PORT") == 13306 && s(r, "W/R").as_deref() == Some("W"))
    );
    assert!(m1.iter().all(|r| n(r, "SIZE") == 100), "maxCon");
    // The same server serves dn1..dn3: its counters are the server's.
    assert!(n(m1[0], "WRITE_LOAD") >= 1, "the INSERT: {:?}", m1[0]);
    assert!(
        n(m1[0], "EXECUTE") >= 2,
        "the INSERT and the SELECT: {:?}",
        m1[0]
    );
    let one = check_columns(
        &mut m,
        "show @@datasource where dataNode = dn2",
        &datasource_columns,
    )
    .await;
    assert_eq!(one.len(), 3);
    assert!(
        one.iter()
            .all(|r| s(r, "DATANODE").as_deref() == Some("dn2"))
    );

    let datanode_columns = [
        ("NAME", V),
        ("DATHOST", V),
        ("INDEX", L),
        ("TYPE", V),
        ("ACTIVE", L),
        ("IDLE", L),
        ("SIZE", L),
        ("EXECUTE", LL),
        ("TOTAL_TIME", D),
        ("MAX_TIME", D),
        ("MAX_SQL", LL),
        ("RECOVERY_TIME", LL),
    ];
    let nodes = check_columns(&mut m, "show @@datanode", &datanode_columns).await;
    let names: Vec<String> = nodes.iter().filter_map(|r| s(r, "NAME")).collect();
    assert_eq!(names, ["dn1", "dn2", "dn3"]);
    assert_eq!(
        s(&nodes[0], "DATHOST"),
        Some(format!("localhost1/{}", f.databases[0]))
    );
    assert_eq!(n(&nodes[0], "INDEX"), 0);
    assert_eq!(n(&nodes[0], "RECOVERY_TIME"), -1);
    assert_eq!(s(&nodes[0], "TYPE").as_deref(), Some("mysql"));
    let testdb = check_columns(
        &mut m,
        "show @@datanode where schema = TESTDB",
        &datanode_columns,
    )
    .await;
    assert_eq!(testdb.len(), 3);

    let beats = check_columns(
        &mut m,
        "show @@heartbeat",
        &[
            ("NAME", V),
            ("TYPE", V),
            ("HOST", V),
            ("PORT", L),
            ("RS_CODE", L),
            ("RETRY", L),
            ("STATUS", V),
            ("TIMEOUT", LL),
            ("EXECUTE_TIME", V),
            ("LAST_ACTIVE_TIME", V),
            ("STOP", V),
        ],
    )
    .await;
    assert_eq!(beats.len(), 3, "hostM1, its readHost, hostM2: {beats:?}");
    assert_eq!(n(&beats[0], "TIMEOUT"), 30_000);
    assert_eq!(s(&beats[0], "STOP").as_deref(), Some("false"));

    // A session in a transaction on dn1, seen by @@connection and @@session.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (2, 'b')")
        .await
        .unwrap();
    let id: u32 = c.id();
    let connections = check_columns(
        &mut m,
        "show @@connection",
        &[
            ("PROCESSOR", V),
            ("ID", L),
            ("HOST", V),
            ("PORT", L),
            ("LOCAL_PORT", L),
            ("USER", V),
            ("SCHEMA", V),
            ("CHARSET", V),
            ("NET_IN", LL),
            ("NET_OUT", LL),
            ("ALIVE_TIME(S)", LL),
            ("RECV_BUFFER", L),
            ("SEND_QUEUE", L),
            ("txlevel", V),
            ("autocommit", V),
        ],
    )
    .await;
    let mine = connections
        .iter()
        .find(|r| n(r, "ID") == i64::from(id))
        .unwrap_or_else(|| panic!("connection {id} in {connections:?}"));
    assert_eq!(s(mine, "USER").as_deref(), Some("root"));
    assert_eq!(s(mine, "SCHEMA").as_deref(), Some("TESTDB"));
    assert_eq!(n(mine, "LOCAL_PORT"), i64::from(port));
    assert_eq!(s(mine, "HOST").as_deref(), Some("127.0.0.1"));
    // `show @@session`: this session's one row, its columns checked.
    async fn only_session(m: &mut mysql_async::Conn, id: u32) -> Row {
        let mut sessions = check_columns(
            m,
            "show @@session",
            &[("SESSION", V), ("DN_COUNT", V), ("DN_LIST", V)],
        )
        .await;
        assert_eq!(sessions.len(), 1, "{sessions:?}");
        let row = sessions.remove(0);
        assert_eq!(row.get::<String, _>("SESSION"), Some(id.to_string()));
        row
    }
    let session = only_session(&mut m, id).await;
    assert_eq!(s(&session, "DN_LIST").as_deref(), Some("dn1"));
    c.query_drop("ROLLBACK").await.unwrap();
    // A session keeping its backend connection for its state (a named lock) holds it too.
    let got: Option<i64> = c
        .query_first("SELECT GET_LOCK('manx_manager_test', 0)")
        .await
        .unwrap();
    assert_eq!(got, Some(1));
    let session = only_session(&mut m, id).await;
    assert_eq!(s(&session, "DN_COUNT").as_deref(), Some("1"));

    check_columns(
        &mut m,
        "show @@backend",
        &[
            ("processor", V),
            ("id", L),
            ("mysqlId", L),
            ("host", V),
            ("port", L),
            ("l_port", L),
            ("net_in", LL),
            ("net_out", LL),
            ("life", LL),
            ("closed", V),
            ("borrowed", V),
            ("SEND_QUEUE", L),
            ("schema", V),
            ("charset", V),
            ("txlevel", V),
            ("autocommit", V),
            ("tx_readonly", V),
        ],
    )
    .await;
    let processors = check_columns(
        &mut m,
        "show @@processor",
        &[
            ("NAME", V),
            ("NET_IN", LL),
            ("NET_OUT", LL),
            ("REACT_COUNT", LL),
            ("R_QUEUE", L),
            ("W_QUEUE", L),
            ("FREE_BUFFER", LL),
            ("TOTAL_BUFFER", LL),
            ("BU_PERCENT", T::MYSQL_TYPE_TINY),
            ("BU_WARNS", L),
            ("FC_COUNT", L),
            ("BC_COUNT", L),
        ],
    )
    .await;
    assert_eq!(processors.len(), 2, "one per worker of this test's runtime");
    let pool = check_columns(
        &mut m,
        "show @@threadpool",
        &[
            ("NAME", V),
            ("POOL_SIZE", L),
            ("ACTIVE_COUNT", L),
            ("TASK_QUEUE_SIZE", L),
            ("COMPLETED_TASK", LL),
            ("TOTAL_TASK", LL),
        ],
    )
    .await;
    assert_eq!(n(&pool[0], "POOL_SIZE"), 2);
    assert!(n(&pool[0], "ACTIVE_COUNT") > 0);
    let params = check_columns(
        &mut m,
        "show @@sysparam",
        &[("PARAM_NAME", V), ("PARAM_VALUE", V), ("PARAM_DESCR", V)],
    )
    .await;
    assert!(
        params
            .iter()
            .any(|r| s(r, "PARAM_NAME").as_deref() == Some("managerPort"))
    );
    check_columns(&mut m, "show @@white", &[("IP", V), ("USER", V)]).await;
    check_columns(
        &mut m,
        "show @@datasource.synstatus",
        &[
            ("name", V),
            ("host", V),
            ("port", L),
            ("Master_Host", V),
            ("Master_Port", L),
            ("Master_Use", V),
            ("Seconds_Behind_Master", L),
            ("Slave_IO_Running", V),
            ("Slave_SQL_Running", V),
            ("Slave_IO_State", V),
            ("Connect_Retry", L),
            ("Last_IO_Error", V),
            ("Last_SQL_Error", V),
            ("Last_SQL_Errno", L),
        ],
    )
    .await;
    // Drivers' connect-time questions, and `set`.
    let comment: Option<String> = m
        .query_first("select @@version_comment limit 1")
        .await
        .unwrap();
    assert!(comment.unwrap().contains("manx"));
    m.query_drop("set names utf8").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manager_port_uses_classic_eof_framing_and_the_cli_works() {
    let f = Fixture::start("mgr_eof", Extra::default()).await;
    let (_, mport) = start_gateway_with_manager(f.dir.path()).await;
    // The greeting: protocol 10, version, NUL, id (4), scramble (8), filler, caps low (2),
    // charset, status (2), caps high (2).
    let greeting = tokio::task::spawn_blocking(move || {
        let mut sock = std::net::TcpStream::connect(("127.0.0.1", mport)).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut head = [0u8; 4];
        sock.read_exact(&mut head).unwrap();
        let len = u32::from_le_bytes([head[0], head[1], head[2], 0]) as usize;
        let mut payload = vec![0u8; len];
        sock.read_exact(&mut payload).unwrap();
        payload
    })
    .await
    .unwrap();
    let nul = greeting.iter().position(|b| *b == 0).unwrap();
    let low = nul + 1 + 4 + 8 + 1;
    let high = low + 2 + 1 + 2;
    let caps = u32::from(u16::from_le_bytes([greeting[low], greeting[low + 1]]))
        | u32::from(u16::from_le_bytes([greeting[high], greeting[high + 1]])) << 16;
    assert_eq!(
        caps & (1 << 24),
        0,
        "CLIENT_DEPRECATE_EOF offered: {caps:#x}"
    );
    assert_ne!(caps & 0x0200, 0, "CLIENT_PROTOCOL_41");

    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("mariadb")
            .args([
                "-h127.0.0.1",
                &format!("-P{mport}"),
                "-uroot",
                "-p123456",
                "--batch",
                "--skip-ssl",
                "-e",
                "show @@datanode; show @@version",
            ])
            .output()
            .expect("the mariadb client is installed")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("NAME\tDATHOST\tINDEX\tTYPE\t"),
        "{stdout}"
    );
    assert!(stdout.contains("dn3\tlocalhost1/"), "{stdout}");
    assert!(stdout.contains("VERSION\n5.7.25-manx-"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_refused_and_forbidden_commands_get_errors() {
    let f = Fixture::start("mgr_err", Extra::default()).await;
    let (port, mport) = start_gateway_with_manager(f.dir.path()).await;
    let mut m = manager(mport, "root", "123456").await;
    let err = |e| server_error(e);
    let (code, _, message) = err(m.query_drop("show @@nonsense").await.unwrap_err());
    assert_eq!(code, 1003);
    assert!(message.contains("show @@help"), "{message}");
    let (code, _, message) = err(m.query_drop("show @@sql.condition").await.unwrap_err());
    assert_eq!(code, 1003);
    assert!(message.contains("does not keep"), "{message}");
    let (_, _, message) = err(m
        .query_drop("file @@upload schema.xml x")
        .await
        .unwrap_err());
    assert!(message.contains("refused"), "{message}");
    let (_, _, message) = err(m.query_drop("zk pull").await.unwrap_err());
    assert!(message.contains("refused"), "{message}");
    let (code, _, message) = err(m.query_drop("reload @@route").await.unwrap_err());
    assert_eq!((code, message.as_str()), (1003, "Unsupported statement"));
    let (code, _, message) = err(m.query_drop("rollback @@config").await.unwrap_err());
    assert_eq!(code, 1003);
    assert!(message.starts_with("Rollback config failure"), "{message}");
    let (code, _, _) = err(m.query_drop("select 1").await.unwrap_err());
    assert_eq!(code, 1003);

    // A readOnly user reads but may not change state.
    let mut ro = manager(mport, "user", "user").await;
    let _: Vec<Row> = ro.query("show @@datanode").await.unwrap();
    for cmd in [
        "offline",
        "kill @@connection 1",
        "reload @@config_all",
        "rollback @@config",
        "switch @@datasource localhost1",
        "stop @@heartbeat localhost1:5",
    ] {
        let (code, state, message) = err(ro.query_drop(cmd).await.unwrap_err());
        assert_eq!((code, state.as_str()), (1227, "42000"), "{cmd}: {message}");
        assert!(message.contains("managerUsers"), "{message}");
    }
    // Nothing changed: the server port still answers its probes.
    let mut c = mysql_async::Conn::new(opts(port, "root", "123456", Some("TESTDB")))
        .await
        .unwrap();
    c.ping().await.unwrap();
    // A wrong password is refused as on the server port.
    let (code, _, _) = err(Conn::new(opts(mport, "root", "wrong", None))
        .await
        .unwrap_err());
    assert_eq!(code, 1045);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managerusers_names_who_may_change_state() {
    let f = Fixture::start("mgr_users", Extra::system(&[("managerUsers", "user")])).await;
    let (_, mport) = start_gateway_with_manager(f.dir.path()).await;
    let mut root = manager(mport, "root", "123456").await;
    let (code, _, _) = server_error(root.query_drop("online").await.unwrap_err());
    assert_eq!(code, 1227, "root is not in managerUsers");
    let mut ro = manager(mport, "user", "user").await;
    ro.query_drop("online").await.unwrap();
    assert_eq!(ro.affected_rows(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_answers_1053_to_probes_while_open_sessions_keep_working() {
    let f = Fixture::start("mgr_offline", Extra::default()).await;
    let (port, mport) = start_gateway_with_manager(f.dir.path()).await;
    let client = || mysql_async::Conn::new(opts(port, "root", "123456", Some("TESTDB")));
    let mut open = client().await.unwrap();
    let mut m = manager(mport, "root", "123456").await;
    m.query_drop("offline").await.unwrap();
    assert_eq!(m.affected_rows(), 1);
    let status: Vec<Row> = m.query("show @@server").await.unwrap();
    assert_eq!(s(&status[0], "STATUS").as_deref(), Some("OFF"));

    // The four probes (the bundled heartbeat is `select user()`).
    for probe in ["select user()", "SELECT  CONNECTION_ID()", "select user();"] {
        let (code, state, message) = server_error(open.query_drop(probe).await.unwrap_err());
        assert_eq!(
            (code, state.as_str(), message.as_str()),
            (1053, "08S01", "The server has been shutdown"),
            "{probe}"
        );
    }
    let (code, _, _) = server_error(open.ping().await.unwrap_err());
    assert_eq!(code, 1053, "COM_PING");
    // The open session keeps working.
    open.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (7, 'x')")
        .await
        .unwrap();
    let ids: Vec<i64> = open.query("SELECT id FROM travelrecord").await.unwrap();
    assert_eq!(ids, [7]);
    // New logins are refused.
    let (code, _, message) = server_error(client().await.unwrap_err());
    assert_eq!(
        (code, message.as_str()),
        (1053, "The server has been shutdown")
    );

    m.query_drop("online").await.unwrap();
    assert_eq!(m.affected_rows(), 1);
    let mut fresh = client().await.unwrap();
    fresh.ping().await.unwrap();
    let user: Option<String> = fresh.query_first("select user()").await.unwrap();
    assert!(user.is_some());
    open.ping().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_connection_ends_the_named_sessions() {
    let f = Fixture::start("mgr_kill", Extra::default()).await;
    let (port, mport) = start_gateway_with_manager(f.dir.path()).await;
    let mut a = mysql_async::Conn::new(opts(port, "root", "123456", Some("TESTDB")))
        .await
        .unwrap();
    let mut b = mysql_async::Conn::new(opts(port, "root", "123456", Some("TESTDB")))
        .await
        .unwrap();
    let mut m = manager(mport, "root", "123456").await;
    m.query_drop(format!("kill @@connection {}, 999999", a.id()))
        .await
        .unwrap();
    assert_eq!(m.affected_rows(), 1, "one session existed");
    assert!(a.query_drop("SELECT 1").await.is_err(), "a was killed");
    b.query_drop("SELECT 1").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_heartbeat_pauses_the_named_datahost() {
    let f = Fixture::start("mgr_stop", Extra::default()).await;
    let (_, mport) = start_gateway_with_manager(f.dir.path()).await;
    let mut m = manager(mport, "root", "123456").await;
    m.query_drop("stop @@heartbeat localhost1,nosuchhost:60")
        .await
        .unwrap();
    assert_eq!(m.affected_rows(), 1);
    let beats: Vec<Row> = m.query("show @@heartbeat").await.unwrap();
    // Only the active writeHost's heartbeat is held.
    let stopped: Vec<String> = beats
        .iter()
        .filter(|r| s(r, "STOP").as_deref() == Some("true"))
        .filter_map(|r| s(r, "NAME"))
        .collect();
    assert_eq!(stopped, ["hostM1"], "{beats:?}");
    let nodes: Vec<Row> = m.query("show @@datanode").await.unwrap();
    let recovery = n(&nodes[0], "RECOVERY_TIME");
    assert!((50..=60).contains(&recovery), "{recovery}");
}

/// Two independent throwaway servers, each with database `mg` and table `t`, behind dataHost
/// `mh` (writeHosts `a` and `b`, writeType 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_datasource_moves_writes_and_rewrites_dnindex() {
    let a = Throwaway::start("mgsw_a", 11).await;
    let b = Throwaway::start("mgsw_b", 12).await;
    for s in [&a, &b] {
        let mut c = s.conn(None).await;
        c.query_drop("CREATE DATABASE mg").await.unwrap();
        c.query_drop("CREATE TABLE mg.t (id INT PRIMARY KEY)")
            .await
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    common::copy_rule_files(dir.path());
    std::fs::write(
        dir.path().join("schema.xml"),
        pair_schema("MG", "mg", "", a.port, b.port),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("server.xml"),
        r#"<?xml version="1.0"?>
<mycat:server xmlns:mycat="http://io.mycat/">
    <user name="mg"><property name="password">mg</property><property name="schemas">MG</property></user>
</mycat:server>"#,
    )
    .unwrap();
    let (port, mport) = start_gateway_with_manager(dir.path()).await;
    let mut c = Conn::new(opts(port, "mg", "mg", Some("MG"))).await.unwrap();
    let mut m = manager(mport, "mg", "mg").await;
    let dnindex = || std::fs::read_to_string(dir.path().join("dnindex.properties")).unwrap();
    assert!(dnindex().contains("mh=0"), "{}", dnindex());
    let on = |s: &Throwaway| {
        let s = s.opts(Some("mg"));
        async move {
            let mut c = Conn::new(s).await.unwrap();
            let ids: Vec<i64> = c.query("SELECT id FROM t ORDER BY id").await.unwrap();
            ids
        }
    };

    c.query_drop("INSERT INTO t VALUES (1)").await.unwrap();
    m.query_drop("switch @@datasource mh:1").await.unwrap();
    assert_eq!(m.affected_rows(), 1);
    assert!(dnindex().contains("mh=1"), "{}", dnindex());
    let nodes: Vec<Row> = m.query("show @@datanode").await.unwrap();
    assert_eq!(n(&nodes[0], "INDEX"), 1);
    c.query_drop("INSERT INTO t VALUES (2)").await.unwrap();
    assert_eq!(on(&a).await, [1]);
    assert_eq!(on(&b).await, [2]);

    // Already there: nothing switched. Out of range: an error. Without an index: the next one.
    m.query_drop("switch @@datasource mh:1").await.unwrap();
    assert_eq!(m.affected_rows(), 0);
    let (code, _, message) =
        server_error(m.query_drop("switch @@datasource mh:5").await.unwrap_err());
    assert_eq!(code, 1003, "{message}");
    m.query_drop("switch @@datasource mh,other").await.unwrap();
    assert_eq!(m.affected_rows(), 1);
    assert!(dnindex().contains("mh=0"), "{}", dnindex());
    c.query_drop("INSERT INTO t VALUES (3)").await.unwrap();
    assert_eq!(on(&a).await, [1, 3]);
    assert_eq!(on(&b).await, [2]);
}

/// schema.xml of logical schema `schema` whose default dataNode `dn<db>` is database `db` on
/// dataHost `mh`: writeHosts hostA (port `a`) and hostB (`b`), admin account, switchType=1,
/// heartbeat `select user()`; `tables` inside the schema.
fn pair_schema(schema: &str, db: &str, tables: &str, a: u16, b: u16) -> String {
    format!(
        r#"<?xml version="1.0"?>
<mycat:schema xmlns:mycat="http://io.mycat/">
    <schema name="{schema}" dataNode="dn{db}">{tables}</schema>
    <dataNode name="dn{db}" dataHost="mh" database="{db}" />
    <dataHost name="mh" maxCon="20" minCon="1" balance="0" writeType="0" switchType="1" dbType="mysql" dbDriver="native">
        <heartbeat>select user()</heartbeat>
        <writeHost host="hostA" url="127.0.0.1:{a}" user="manx" password="manx" />
        <writeHost host="hostB" url="127.0.0.1:{b}" user="manx" password="manx" />
    </dataHost>
</mycat:schema>"#
    )
}

/// SIGTERM to `g`, then its exit code (waited for at most 20 s) and the process.
async fn terminate(mut g: GatewayProcess) -> (Option<i32>, GatewayProcess) {
    signal(g.pid(), "TERM");
    tokio::task::spawn_blocking(move || {
        let code = wait_exit(&mut g, Duration::from_secs(20));
        (code, g)
    })
    .await
    .unwrap()
}

/// Sends `signal` to the process.
fn signal(pid: u32, signal: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

/// Waits (bounded) for the process to exit; its exit code.
fn wait_exit(g: &mut GatewayProcess, limit: Duration) -> Option<i32> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Ok(Some(status)) = g.child.try_wait() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the gateway did not exit within {limit:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_statements_finish_rolls_back_open_transactions_and_exits_0() {
    let f = Fixture::start("mgr_term", Extra::system(&[("shutdownTimeout", "3")])).await;
    let (g, mut tx) = GatewayProcess::start(f.dir.path(), "root", "123456", "TESTDB").await;
    let mut slow = Conn::new(opts(g.port, "root", "123456", Some("TESTDB")))
        .await
        .unwrap();
    slow.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (5000001, 's')")
        .await
        .unwrap();
    tx.query_drop("BEGIN").await.unwrap();
    tx.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (1, 'tx')")
        .await
        .unwrap();
    // A statement in progress when the signal arrives (1.5 s on dn2).
    let running = tokio::spawn(async move {
        let r: Result<Vec<Row>, _> = slow
            .query("SELECT SLEEP(1.5), id FROM travelrecord WHERE id = 5000001")
            .await;
        r
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let code = terminate(g).await;
    let (code, _g) = code;
    assert_eq!(code, Some(0));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(2500),
        "the open transaction had up to shutdownTimeout (3 s) to end: {took:?}"
    );
    let rows = running
        .await
        .unwrap()
        .expect("the running statement finished");
    assert_eq!(rows.len(), 1);
    assert!(
        tx.query_drop("COMMIT").await.is_err(),
        "the session was ended"
    );
    assert_eq!(
        f.ids_on(1, "travelrecord").await,
        Vec::<i64>::new(),
        "rolled back"
    );
    assert_eq!(f.ids_on(2, "travelrecord").await, [5000001]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_exits_at_once() {
    let f = Fixture::start("mgr_term2", Extra::system(&[("shutdownTimeout", "60")])).await;
    let (mut g, mut tx) = GatewayProcess::start(f.dir.path(), "root", "123456", "TESTDB").await;
    tx.query_drop("BEGIN").await.unwrap();
    tx.query_drop("INSERT INTO travelrecord (id, user_id) VALUES (1, 'tx')")
        .await
        .unwrap();
    signal(g.pid(), "TERM");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(g.alive(), "waiting for the open transaction (60 s)");
    signal(g.pid(), "INT");
    let code = tokio::task::spawn_blocking(move || wait_exit(&mut g, Duration::from_secs(10)))
        .await
        .unwrap();
    assert_eq!(code, Some(1));
    drop(tx);
}

/// `show stat` of the HAProxy whose stats socket is `socket`: the status of server `g`.
fn haproxy_status(socket: &std::path::Path) -> String {
    use std::io::Write;
    let Ok(mut s) = std::os::unix::net::UnixStream::connect(socket) else {
        return "no socket".to_string();
    };
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(b"show stat\n").unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    // CSV: pxname,svname,...; status is column 17 (0-based).
    out.lines()
        .find(|l| l.starts_with("b,g,"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            // status, then check_status and last_chk for the messages.
            format!(
                "{} ({} {})",
                f.get(17).unwrap_or(&""),
                f.get(36).unwrap_or(&""),
                f.get(56).unwrap_or(&"")
            )
        })
        .unwrap_or_else(|| format!("no row in {out}"))
}

/// Waits (bounded) until server `g`'s status starts with `want`.
async fn wait_status(socket: &std::path::Path, want: &str) {
    let started = Instant::now();
    loop {
        let status = haproxy_status(socket);
        if status.starts_with(want) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "HAProxy still says {status}, waiting for {want}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The HAProxy process of a test (killed on drop).
struct Haproxy(std::process::Child);

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An HAProxy (Debian's) in front of the gateway on `port`: TCP mode, `option mysql-check` as
/// user `haproxy` every 200 ms (2 failures mark it DOWN, 2 successes UP). Returns the process,
/// its frontend port and its stats socket (files in `dir`).
fn haproxy_in_front(dir: &std::path::Path, port: u16) -> (Haproxy, u16, std::path::PathBuf) {
    let haproxy = common::clients::clients().haproxy.clone();
    let hport = common::closed_port();
    let socket = dir.join("haproxy.sock");
    let cfg = dir.join("haproxy.cfg");
    std::fs::write(
        &cfg,
        format!(
            "global\n    stats socket {}\ndefaults\n    mode tcp\n    timeout connect 2s\n    timeout client 30s\n    timeout server 30s\nfrontend f\n    bind 127.0.0.1:{hport}\n    default_backend b\nbackend b\n    option mysql-check user haproxy post-41\n    server g 127.0.0.1:{port} check inter 200 fall 2 rise 2\n",
            socket.display()
        ),
    )
    .unwrap();
    let h = Haproxy(
        std::process::Command::new(haproxy)
            .arg("-db")
            .arg("-f")
            .arg(&cfg)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start haproxy"),
    );
    (h, hport, socket)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn haproxy_mysql_check_drains_the_instance_after_offline() {
    let f = Fixture::start(
        "mgr_haproxy",
        Extra {
            users_xml: r#"<user name="haproxy"><property name="password"></property><property name="schemas">TESTDB</property><property name="readOnly">true</property></user>"#.to_string(),
            ..Extra::default()
        },
    )
    .await;
    let (port, mport) = start_gateway_with_manager(f.dir.path()).await;
    let (_h, hport, socket) = haproxy_in_front(f.dir.path(), port);
    wait_status(&socket, "UP").await;
    // A session through HAProxy, opened while the instance is in rotation.
    let mut through = Conn::new(opts(hport, "root", "123456", Some("TESTDB")))
        .await
        .unwrap();
    let mut m = manager(mport, "root", "123456").await;
    m.query_drop("offline").await.unwrap();
    wait_status(&socket, "DOWN").await;
    // Drained: no new sessions through HAProxy; the open one keeps working.
    assert!(
        Conn::new(opts(hport, "root", "123456", Some("TESTDB")))
            .await
            .is_err()
    );
    through
        .query_drop("INSERT INTO travelrecord (id, user_id) VALUES (3, 'h')")
        .await
        .unwrap();
    m.query_drop("online").await.unwrap();
    wait_status(&socket, "UP").await;
    let mut again = Conn::new(opts(hport, "root", "123456", Some("TESTDB")))
        .await
        .unwrap();
    let ids: Vec<i64> = again.query("SELECT id FROM travelrecord").await.unwrap();
    assert_eq!(ids, [3]);
}

/// `sql` on the manager port through the mariadb CLI, as an operator types it: the command and
/// the CLI's table (or its error), for the runbook's transcript.
fn cli(mport: u16, sql: &str) -> String {
    let out = std::process::Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{mport}"),
            "-urb",
            "-prb",
            "-t",
            "-vv",
            "-e",
            sql,
        ])
        .output()
        .expect("run the mariadb CLI");
    format!(
        "$ mariadb -P9066 -e '{sql}'\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The ids a [`Writer`] was acknowledged, and the errors it got.
#[derive(Default)]
struct Acked {
    ids: Vec<i64>,
    errors: Vec<String>,
}

/// A client inserting rows one by one (autocommit) through one connection until stopped.
struct Writer {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    acked: std::sync::Arc<std::sync::Mutex<Acked>>,
    task: tokio::task::JoinHandle<()>,
}

impl Writer {
    /// Starts inserting ids `from`, `from + 1`, ... into `orders` on `port`.
    async fn start(port: u16, from: i64) -> Writer {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let acked = std::sync::Arc::new(std::sync::Mutex::new(Acked::default()));
        let mut c = Conn::new(opts(port, "rb", "rb", Some("RB"))).await.unwrap();
        let (s, a) = (stop.clone(), acked.clone());
        let task = tokio::spawn(async move {
            let mut id = from;
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                match c
                    .query_drop(format!("INSERT INTO orders (id) VALUES ({id})"))
                    .await
                {
                    Ok(()) => a.lock().unwrap().ids.push(id),
                    Err(e) => a.lock().unwrap().errors.push(format!("{id}: {e}")),
                }
                id += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        Writer { stop, acked, task }
    }

    fn count(&self) -> usize {
        self.acked.lock().unwrap().ids.len()
    }

    /// Waits (bounded) for `more` acknowledged rows.
    async fn wait_for(&self, more: usize) {
        let target = self.count() + more;
        let started = Instant::now();
        while self.count() < target {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the writer stalled: {:?}",
                self.acked.lock().unwrap().errors
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn stop(self) -> Acked {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.task.await.unwrap();
        std::mem::take(&mut *self.acked.lock().unwrap())
    }
}

/// The operator's runbook of issue 20, end to end against one manx process in front of a
/// MariaDB primary and its replica, with HAProxy (`mysql-check`) in front of manx:
/// 1. monitor (`show @@datasource`, `@@heartbeat`, `@@datanode`);
/// 2. add a table: create it on the backend, add it to schema.xml, `reload @@config_all`;
/// 3. switch: promote the replica, `switch @@datasource mh:1` (dnindex.properties rewritten);
/// 4. drain: `offline`, HAProxy marks the instance DOWN, the open session keeps writing;
/// 5. restart: SIGTERM (exit 0), start again on the same ports: it comes back on writeHost 1,
///    HAProxy marks it UP.
///
/// A writer keeps one session open through HAProxy from step 1 to the restart, and another
/// after it: no statement fails, and every acknowledged row is on the promoted server. `cargo
/// test --test manager runbook -- --nocapture` prints the transcript.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mycat_runbook_monitor_add_a_table_switch_drain_restart() {
    let a = Throwaway::start("rb_a", 31).await;
    let b = Throwaway::start("rb_b", 32).await;
    {
        let mut c = a.conn(None).await;
        c.query_drop("CREATE DATABASE rb").await.unwrap();
        c.query_drop("CREATE TABLE rb.orders (id BIGINT PRIMARY KEY)")
            .await
            .unwrap();
    }
    b.replicate_from(&a).await;
    b.catch_up(&a).await;
    let dir = tempfile::tempdir().unwrap();
    let schema = |tables: &str| {
        pair_schema(
            "RB",
            "rb",
            &format!(r#"<table name="orders" dataNode="dnrb" />{tables}"#),
            a.port,
            b.port,
        )
    };
    std::fs::write(dir.path().join("schema.xml"), schema("")).unwrap();
    std::fs::copy(common::repo().join("rule.xml"), dir.path().join("rule.xml")).unwrap();
    for f in ["autopartition-long.txt", "partition-hash-int.txt"] {
        std::fs::copy(common::repo().join(f), dir.path().join(f)).unwrap();
    }
    std::fs::write(
        dir.path().join("server.xml"),
        r#"<?xml version="1.0"?>
<mycat:server xmlns:mycat="http://io.mycat/">
    <system><property name="shutdownTimeout">5</property></system>
    <user name="rb"><property name="password">rb</property><property name="schemas">RB</property></user>
    <user name="haproxy"><property name="password"></property><property name="schemas">RB</property><property name="readOnly">true</property></user>
</mycat:server>"#,
    )
    .unwrap();
    let log = dir.path().join("manx.log");
    let (g, _) = GatewayProcess::start_logging(dir.path(), "rb", "rb", "RB", Some(&log)).await;
    let ports = (g.port, g.manager_port);
    let mport = g.manager_port;
    let (_h, hport, socket) = haproxy_in_front(dir.path(), g.port);
    wait_status(&socket, "UP").await;
    let mut transcript = String::new();
    let writer = Writer::start(hport, 1).await;
    writer.wait_for(20).await;

    // 1. Monitor.
    let mut m = manager(mport, "rb", "rb").await;
    let beats: Vec<Row> = m.query("show @@heartbeat").await.unwrap();
    assert!(
        beats.iter().all(|r| n(r, "RS_CODE") == 1),
        "both servers answer their heartbeat"
    );
    for sql in ["show @@datasource", "show @@heartbeat", "show @@datanode"] {
        transcript += &cli(mport, sql);
    }

    // 2. Add a table.
    a.conn(None)
        .await
        .query_drop("CREATE TABLE rb.items (id INT PRIMARY KEY)")
        .await
        .unwrap();
    transcript += "(on hostA) CREATE TABLE rb.items (id INT PRIMARY KEY); (schema.xml) <table name=\"items\" dataNode=\"dnrb\" />\n";
    std::fs::write(
        dir.path().join("schema.xml"),
        schema(r#"<table name="items" dataNode="dnrb" />"#),
    )
    .unwrap();
    let out = cli(mport, "reload @@config_all");
    assert!(out.contains("Reload config success"), "{out}");
    transcript += &out;
    let mut c = Conn::new(opts(hport, "rb", "rb", Some("RB")))
        .await
        .unwrap();
    c.query_drop("INSERT INTO items (id) VALUES (1)")
        .await
        .unwrap();
    writer.wait_for(20).await;

    // 3. Switch to the replica: writes paused (a planned switchover's window: a write that
    //    reached hostA after the replica's last catch-up would be lost, which manx cannot see
    //    yet — issue 22's fencing), the replica caught up and promoted, then the switch.
    let first = writer.stop().await;
    assert!(first.errors.is_empty(), "{:?}", first.errors);
    transcript += &format!("(writes paused after {} rows)\n", first.ids.len());
    b.catch_up(&a).await;
    b.conn(None)
        .await
        .query_drop("STOP SLAVE; RESET SLAVE ALL")
        .await
        .unwrap();
    transcript += "(on hostB, caught up) STOP SLAVE; RESET SLAVE ALL;\n";
    let out = cli(mport, "switch @@datasource mh:1");
    assert!(out.contains("1 row affected"), "{out}");
    transcript += &out;
    transcript += &cli(mport, "show @@datanode");
    let dnindex = std::fs::read_to_string(dir.path().join("dnindex.properties")).unwrap();
    assert!(dnindex.contains("mh=1"), "{dnindex}");
    transcript += &format!("$ cat dnindex.properties\n{dnindex}");
    let writer = Writer::start(hport, 500_000).await;
    writer.wait_for(20).await;

    // 4. Drain.
    transcript += &cli(mport, "offline");
    wait_status(&socket, "DOWN").await;
    transcript += &format!("(HAProxy) server g: {}\n", haproxy_status(&socket));
    assert!(
        Conn::new(opts(hport, "rb", "rb", Some("RB")))
            .await
            .is_err(),
        "no new session through HAProxy"
    );
    writer.wait_for(20).await;
    let second = writer.stop().await;
    assert!(second.errors.is_empty(), "{:?}", second.errors);

    // 5. Restart on the same ports.
    let code = terminate(g).await;
    assert_eq!(code.0, Some(0));
    transcript += "$ kill -TERM <manx>   # exit status 0\n";
    let (_g2, _) = GatewayProcess::start_at(dir.path(), "rb", "rb", "RB", Some(&log), ports).await;
    wait_status(&socket, "UP").await;
    transcript += &format!(
        "(restarted; HAProxy) server g: {}\n",
        haproxy_status(&socket)
    );
    transcript += &cli(mport, "show @@datanode");
    let writer = Writer::start(hport, 1_000_000).await;
    writer.wait_for(20).await;
    let third = writer.stop().await;
    assert!(third.errors.is_empty(), "{:?}", third.errors);

    // Every acknowledged row is on the promoted server; the old primary has only those
    // written before the switch.
    let on = |t: &Throwaway| {
        let o = t.opts(Some("rb"));
        async move {
            let mut c = Conn::new(o).await.unwrap();
            let ids: Vec<i64> = c.query("SELECT id FROM orders ORDER BY id").await.unwrap();
            ids
        }
    };
    let mut acked = [&first.ids[..], &second.ids, &third.ids].concat();
    acked.sort();
    assert_eq!(on(&b).await, acked);
    assert_eq!(
        on(&a).await,
        first.ids,
        "hostA has the rows written before the switch"
    );
    println!(
        "{transcript}\nrunbook: {} rows acknowledged ({} before the switch, {} on hostB before the restart, {} after it), all on hostB; no statement failed",
        acked.len(),
        first.ids.len(),
        second.ids.len(),
        third.ids.len()
    );
}
