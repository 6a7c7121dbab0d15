//! TLS on the front end (issue 7, item 3): a certificate from `sslCertFile` / `sslKeyFile`,
//! optional or required (`requireSecureTransport`), through real clients — mysql_async with
//! rustls, the `mariadb` CLI, PyMySQL and mysql-connector-python — and byte for byte with a
//! rustls client: the SSLRequest, the handshake, caching_sha2_password's fast path and its full
//! authentication (cleartext password over TLS), and error 3159 for plain clients when TLS is
//! required. The certificate is made at test time with the `openssl` CLI.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use common::raw::{read_packet, sha2_proof, write_packet};
use common::{Extra, Fixture};
use mysql_async::prelude::Queryable;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

const CLIENT_SSL: u32 = 0x0800;
const REFUSAL: &str =
    "Connections using insecure transport are prohibited while --require_secure_transport=ON.";

/// A test CA and a server certificate it signed for `localhost` / 127.0.0.1 (P-256 keys), as
/// PEM: (CA certificate, server certificate, server key).
fn make_cert() -> (String, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .output()
            .expect("run openssl");
        assert!(
            out.status.success(),
            "openssl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let (ca_key, ca, key, csr, cert, ext) = (
        p("ca.key"),
        p("ca.pem"),
        p("key.pem"),
        p("server.csr"),
        p("cert.pem"),
        p("ext.cnf"),
    );
    let mut args = vec!["req", "-x509"];
    args.extend_from_slice(&ec);
    args.extend_from_slice(&["-days", "2", "-subj", "/CN=manx test CA"]);
    args.extend_from_slice(&["-keyout", &ca_key, "-out", &ca]);
    openssl(&args);
    let mut args = vec!["req"];
    args.extend_from_slice(&ec);
    args.extend_from_slice(&["-subj", "/CN=localhost", "-keyout", &key, "-out", &csr]);
    openssl(&args);
    std::fs::write(
        &ext,
        "basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        &ca,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        &ext,
        "-out",
        &cert,
    ]);
    let read = |f: &str| std::fs::read_to_string(f).unwrap();
    (read(&ca), read(&cert), read(&key))
}

/// A fixture serving TLS with a fresh certificate (files `cert.pem` and `key.pem`,
/// relative to the config directory); returns it and the path of the CA certificate clients
/// trust.
async fn start(prefix: &str, required: bool) -> (Fixture, PathBuf) {
    let (ca, cert, key) = make_cert();
    let system = format!(
        r#"<system><property name="sslCertFile">cert.pem</property><property name="sslKeyFile">key.pem</property><property name="requireSecureTransport">{required}</property></system>"#
    );
    let f = Fixture::start(
        prefix,
        Extra {
            users_xml: system,
            files: vec![
                ("cert.pem".into(), cert),
                ("key.pem".into(), key),
                ("ca.pem".into(), ca),
            ],
            ..Extra::default()
        },
    )
    .await;
    // Rows on each of the three dataNodes of travelrecord (dn1 < 5,000,000 <= dn2 < 10,000,000).
    let ca = f.dir.path().join("ca.pem");
    let mut c = tls_client(&f, &ca).await;
    c.query_drop(
        "INSERT INTO travelrecord (id, user_id) VALUES (1, 'a'), (5000001, 'b'), (10000001, 'c')",
    )
    .await
    .unwrap();
    (f, ca)
}

/// mysql_async over TLS, trusting `cert`.
async fn tls_client(f: &Fixture, cert: &Path) -> mysql_async::Conn {
    let ssl = mysql_async::SslOpts::default().with_root_certs(vec![cert.to_path_buf().into()]);
    let opts =
        mysql_async::OptsBuilder::from_opts(common::opts(f.port, "root", "123456", Some("TESTDB")))
            .ssl_opts(ssl);
    mysql_async::Conn::new(opts).await.expect("TLS connection")
}

/// The capability flags and the 20-byte scramble of a protocol-10 greeting.
fn parse_greeting(greeting: &[u8]) -> (u32, Vec<u8>) {
    assert_eq!(greeting[0], 10);
    let p = greeting.iter().position(|b| *b == 0).unwrap() + 1 + 4;
    let mut scramble = greeting[p..p + 8].to_vec();
    let low = u16::from_le_bytes([greeting[p + 9], greeting[p + 10]]) as u32;
    let high = u16::from_le_bytes([greeting[p + 14], greeting[p + 15]]) as u32;
    let part2 = p + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
    scramble.extend_from_slice(&greeting[part2..part2 + 12]);
    (low | high << 16, scramble)
}

/// CLIENT_LONG_PASSWORD | CLIENT_CONNECT_WITH_DB | CLIENT_PROTOCOL_41 |
/// CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH, plus CLIENT_SSL when asked.
fn capabilities(ssl: bool) -> u32 {
    0x1 | 0x8 | 0x200 | 0x8000 | 0x80000 | if ssl { CLIENT_SSL } else { 0 }
}

/// HandshakeResponse41 for root with `proof` and plugin caching_sha2_password.
fn handshake_response(ssl: bool, proof: &[u8]) -> Vec<u8> {
    let mut r = capabilities(ssl).to_le_bytes().to_vec();
    r.extend_from_slice(&(16u32 << 20).to_le_bytes());
    r.push(45);
    r.extend_from_slice(&[0; 23]);
    r.extend_from_slice(b"root\0");
    r.push(proof.len() as u8);
    r.extend_from_slice(proof);
    r.extend_from_slice(b"TESTDB\0caching_sha2_password\0");
    r
}

/// Connects, reads the greeting, sends an SSLRequest and completes the TLS handshake trusting
/// `cert`; returns the TLS stream and the greeting's scramble.
async fn tls_connect(
    port: u16,
    cert: &Path,
) -> (tokio_rustls::client::TlsStream<TcpStream>, Vec<u8>) {
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (seq, greeting) = read_packet(&mut tcp).await;
    assert_eq!(seq, 0);
    let (caps, scramble) = parse_greeting(&greeting);
    assert!(caps & CLIENT_SSL != 0, "the greeting advertises CLIENT_SSL");
    let mut ssl_request = capabilities(true).to_le_bytes().to_vec();
    ssl_request.extend_from_slice(&(16u32 << 20).to_le_bytes());
    ssl_request.push(45);
    ssl_request.extend_from_slice(&[0; 23]);
    write_packet(&mut tcp, 1, &ssl_request).await;
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    for c in rustls::pki_types::CertificateDer::pem_file_iter(cert).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = connector.connect(name, tcp).await.expect("TLS handshake");
    (tls, scramble)
}

/// `SELECT 1` on a logged-in connection answers a one-column result set.
async fn select_one<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S) {
    write_packet(s, 0, b"\x03SELECT 1").await;
    assert_eq!(read_packet(s).await, (1, vec![1]), "column count");
}

fn errno(payload: &[u8]) -> (u16, String, String) {
    assert_eq!(payload[0], 0xFF, "an ERR packet: {payload:?}");
    (
        u16::from_le_bytes([payload[1], payload[2]]),
        String::from_utf8_lossy(&payload[4..9]).into_owned(),
        String::from_utf8_lossy(&payload[9..]).into_owned(),
    )
}

#[tokio::test]
async fn caching_sha2_fast_path_and_full_authentication_over_tls() {
    let (f, cert) = start("tls_raw", false).await;

    // Fast path: proof for the scramble, then 0x01 0x03 and OK, with the sequence ids going on
    // from the SSLRequest's 1.
    let (mut s, scramble) = tls_connect(f.port, &cert).await;
    write_packet(
        &mut s,
        2,
        &handshake_response(true, &sha2_proof("123456", &scramble)),
    )
    .await;
    assert_eq!(read_packet(&mut s).await, (3, vec![0x01, 0x03]));
    let (seq, ok) = read_packet(&mut s).await;
    assert_eq!((seq, ok[0]), (4, 0x00), "OK after fast auth: {ok:?}");
    select_one(&mut s).await;

    // A proof that does not match: MySQL asks for the cleartext password over TLS (0x01 0x04);
    // the right one logs in.
    let (mut s, _) = tls_connect(f.port, &cert).await;
    write_packet(&mut s, 2, &handshake_response(true, &[7u8; 32])).await;
    assert_eq!(read_packet(&mut s).await, (3, vec![0x01, 0x04]));
    write_packet(&mut s, 4, b"123456\0").await;
    let (seq, ok) = read_packet(&mut s).await;
    assert_eq!((seq, ok[0]), (5, 0x00), "OK after full auth: {ok:?}");
    select_one(&mut s).await;

    // ... and a wrong one gets 1045.
    let (mut s, _) = tls_connect(f.port, &cert).await;
    write_packet(&mut s, 2, &handshake_response(true, &[7u8; 32])).await;
    assert_eq!(read_packet(&mut s).await, (3, vec![0x01, 0x04]));
    write_packet(&mut s, 4, b"12345\0").await;
    let (seq, err) = read_packet(&mut s).await;
    assert_eq!(seq, 5);
    let (code, state, message) = errno(&err);
    assert_eq!((code, state.as_str()), (1045, "28000"), "{message}");
    assert!(message.contains("'root'"), "{message}");

    // Optional TLS: a plain client logs in as before, and a wrong proof on a plain connection
    // is refused at once (no full authentication without TLS).
    let mut plain = mysql_async::Conn::new(common::opts(f.port, "root", "123456", Some("TESTDB")))
        .await
        .unwrap();
    let n: Option<i64> = plain
        .query_first("SELECT COUNT(*) FROM travelrecord")
        .await
        .unwrap();
    assert_eq!(n, Some(3));
    let cipher: Option<(String, String)> = plain
        .query_first("SHOW STATUS LIKE 'Ssl_cipher'")
        .await
        .unwrap();
    assert_eq!(cipher, Some(("Ssl_cipher".to_string(), String::new())));
    let mut tcp = TcpStream::connect(("127.0.0.1", f.port)).await.unwrap();
    read_packet(&mut tcp).await;
    write_packet(&mut tcp, 1, &handshake_response(false, &[7u8; 32])).await;
    let (seq, err) = read_packet(&mut tcp).await;
    assert_eq!((seq, errno(&err).0), (2, 1045));
}

#[tokio::test]
async fn mysql_async_over_tls_and_plain_clients_refused_when_required() {
    let (f, cert) = start("tls_req", true).await;
    let mut c = tls_client(&f, &cert).await;
    let ids: Vec<i64> = c
        .query("SELECT id FROM travelrecord ORDER BY id")
        .await
        .unwrap();
    assert_eq!(
        ids,
        vec![1, 5000001, 10000001],
        "rows from the three dataNodes"
    );
    // The session's own TLS state, not a backend connection's.
    let cipher: Option<(String, String)> = c
        .query_first("SHOW STATUS LIKE 'Ssl_cipher'")
        .await
        .unwrap();
    let (name, cipher) = cipher.unwrap();
    assert_eq!(name, "Ssl_cipher");
    assert!(cipher.starts_with("TLS_AES_"), "{cipher}");
    let version: Option<(String, String)> = c
        .query_first("show session status like 'ssl_version'")
        .await
        .unwrap();
    assert_eq!(version.unwrap().1, "TLSv1.3");
    // A prepared statement with the shard key bound, inside a transaction, over TLS.
    c.query_drop("BEGIN").await.unwrap();
    c.exec_drop(
        "INSERT INTO travelrecord (id, user_id) VALUES (?, ?)",
        (5000002i64, "tls ✓ 中文"),
    )
    .await
    .unwrap();
    c.query_drop("COMMIT").await.unwrap();
    let u: Option<String> = c
        .exec_first(
            "SELECT user_id FROM travelrecord WHERE id = ?",
            (5000002i64,),
        )
        .await
        .unwrap();
    assert_eq!(u.as_deref(), Some("tls ✓ 中文"));
    assert_eq!(f.ids_on(2, "travelrecord").await, vec![5000001, 5000002]);

    // A plain client: 3159 / HY000, MySQL's text.
    let e = mysql_async::Conn::new(common::opts(f.port, "root", "123456", Some("TESTDB")))
        .await
        .unwrap_err();
    let (code, state, message) = common::server_error(e);
    assert_eq!(
        (code, state.as_str(), message.as_str()),
        (3159, "HY000", REFUSAL)
    );

    // Byte for byte: the refusal answers the HandshakeResponse (sequence id 2), then the
    // connection closes.
    let mut tcp = TcpStream::connect(("127.0.0.1", f.port)).await.unwrap();
    let (_, greeting) = read_packet(&mut tcp).await;
    let (caps, scramble) = parse_greeting(&greeting);
    assert!(caps & CLIENT_SSL != 0);
    write_packet(
        &mut tcp,
        1,
        &handshake_response(false, &sha2_proof("123456", &scramble)),
    )
    .await;
    let (seq, err) = read_packet(&mut tcp).await;
    assert_eq!(seq, 2);
    assert_eq!(errno(&err).0, 3159);
    let mut rest = Vec::new();
    tcp.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty(), "nothing after the refusal");

    // A TLS handshake that fails (the client hangs up mid-handshake) leaves the server serving.
    let mut tcp = TcpStream::connect(("127.0.0.1", f.port)).await.unwrap();
    read_packet(&mut tcp).await;
    let mut ssl_request = capabilities(true).to_le_bytes().to_vec();
    ssl_request.extend_from_slice(&[0; 28]);
    write_packet(&mut tcp, 1, &ssl_request).await;
    tcp.write_all(b"not a TLS ClientHello at all")
        .await
        .unwrap();
    let mut rest = Vec::new();
    let _ = tcp.read_to_end(&mut rest).await;
    drop(tcp);
    let mut again = tls_client(&f, &cert).await;
    let one: Option<i64> = again.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
}

/// Runs `program args`, bounded in time; returns (success, stdout, stderr).
fn run(program: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new("timeout")
        .arg("120")
        .arg(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn mariadb_cli_over_tls() {
    let (f, _cert) = start("tls_cli", true).await;
    let port = f.port.to_string();
    let base = ["-h127.0.0.1", "-P", &port, "-uroot", "-p123456", "TESTDB"];
    let cli = |extra: &[&str], sql: &str| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-e", sql]);
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run("mariadb", &args)
        })
    };
    let tls = ["--ssl", "--skip-ssl-verify-server-cert"];
    let (ok, out, err) = cli(&tls, "status").await.unwrap();
    assert!(ok, "{err}");
    assert!(out.contains("Cipher in use is"), "\\s over TLS:\n{out}");
    let (ok, out, err) = cli(&tls, "SELECT id FROM travelrecord ORDER BY id")
        .await
        .unwrap();
    assert!(ok, "{err}");
    assert_eq!(out, "id\n1\n5000001\n10000001\n");
    let (ok, _, err) = cli(&["--skip-ssl"], "SELECT 1").await.unwrap();
    assert!(!ok);
    assert!(
        err.contains("ERROR 3159 (HY000)") && err.contains(REFUSAL),
        "{err}"
    );
}

/// The venv's python (installed by `scripts/clients.sh`, once per test process).
fn python() -> &'static str {
    &common::clients::clients().python
}

/// Runs a Python snippet with `argv[1]` = port and `argv[2]` = certificate path.
async fn python_run(script: &'static str, port: u16, cert: &Path) -> (bool, String, String) {
    let python = python();
    let port = port.to_string();
    let cert = cert.to_str().unwrap().to_string();
    tokio::task::spawn_blocking(move || run(python, &["-c", script, &port, &cert]))
        .await
        .unwrap()
}

const PYMYSQL: &str = r#"
import sys, pymysql
port, ca = int(sys.argv[1]), sys.argv[2]
c = pymysql.connect(host="127.0.0.1", port=port, user="root", password="123456",
                    database="TESTDB", ssl={"ca": ca})
print("tls", c._sock.version())
cur = c.cursor()
cur.execute("SELECT id FROM travelrecord ORDER BY id")
print("ids", [r[0] for r in cur.fetchall()])
cur.execute("SELECT user_id FROM travelrecord WHERE id = %s", (5000001,))
print("user", cur.fetchone()[0])
try:
    pymysql.connect(host="127.0.0.1", port=port, user="root", password="123456", database="TESTDB")
    print("plain connected")
except pymysql.err.OperationalError as e:
    print("plain", e.args[0])
"#;

const CONNECTOR: &str = r#"
import sys, mysql.connector
port, ca = int(sys.argv[1]), sys.argv[2]
def connect(password):
    return mysql.connector.connect(host="127.0.0.1", port=port, user="root", password=password,
        database="TESTDB", auth_plugin="caching_sha2_password", use_pure=True, ssl_ca=ca,
        ssl_verify_cert=True)
c = connect("123456")
cur = c.cursor()
cur.execute("SELECT id FROM travelrecord ORDER BY id")
print("ids", [r[0] for r in cur.fetchall()])
print("tls", c._socket.sock.version())
try:
    connect("wrong")
    print("wrong password connected")
except mysql.connector.Error as e:
    print("wrong", e.errno, e.sqlstate)
"#;

#[tokio::test]
async fn python_clients_over_tls() {
    let (f, cert) = start("tls_py", true).await;
    let (ok, out, err) = python_run(PYMYSQL, f.port, &cert).await;
    assert!(ok, "PyMySQL failed:\n{out}\n{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("tls TLSv1."), "{out}");
    assert_eq!(
        lines[1..],
        ["ids [1, 5000001, 10000001]", "user b", "plain 3159"],
        "{out}"
    );
    // mysql-connector-python with caching_sha2_password over TLS: the fast path, and a wrong
    // password refused after the full-authentication exchange.
    let (ok, out, err) = python_run(CONNECTOR, f.port, &cert).await;
    assert!(ok, "mysql-connector-python failed:\n{out}\n{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "ids [1, 5000001, 10000001]", "{out}");
    assert!(lines[1].starts_with("tls TLSv1."), "{out}");
    assert_eq!(lines[2], "wrong 1045 28000", "{out}");
}

/// The error `Server::new` gives for a config directory whose server.xml has `system` added.
fn settings_error(system: &str, files: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let databases: Vec<String> = (1..=3).map(|i| format!("t_tls_cfg_db{i}")).collect();
    common::write_config(
        dir.path(),
        &databases,
        &Extra {
            users_xml: format!("<system>{system}</system>"),
            ..Extra::default()
        },
    );
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let config = match manx::config::Config::load(dir.path()) {
        Ok(c) => c,
        Err(e) => return e.to_string(),
    };
    match manx::frontend::Server::new(config, manx::datahost::Timeouts::default()) {
        Ok(_) => "no error".to_string(),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn incomplete_or_broken_tls_settings_are_refused_by_name() {
    let prop = |name: &str, value: &str| format!(r#"<property name="{name}">{value}</property>"#);
    let e = settings_error(&prop("sslCertFile", "cert.pem"), &[]);
    assert!(e.contains("sslCertFile is set without sslKeyFile"), "{e}");
    let e = settings_error(&prop("requireSecureTransport", "true"), &[]);
    assert!(
        e.contains("requireSecureTransport is true but no sslCertFile"),
        "{e}"
    );
    let e = settings_error(&prop("requireSecureTransport", "yes"), &[]);
    assert!(
        e.contains("requireSecureTransport 'yes' is not true or false"),
        "{e}"
    );
    let both = prop("sslCertFile", "cert.pem") + &prop("sslKeyFile", "key.pem");
    let e = settings_error(&both, &[]);
    assert!(
        e.contains("server.xml:") && e.contains("TLS certificate file") && e.contains("cert.pem"),
        "{e}"
    );
    let (ca, cert, key) = make_cert();
    let e = settings_error(&both, &[("cert.pem", &cert), ("key.pem", "not a key")]);
    assert!(
        e.contains("sslKeyFile") && e.contains("TLS private key file"),
        "{e}"
    );
    // The CA's certificate with the server's key: the pair does not match.
    let e = settings_error(&both, &[("cert.pem", &ca), ("key.pem", &key)]);
    assert!(e.contains("TLS certificate and key rejected"), "{e}");
    assert_eq!(
        settings_error(&both, &[("cert.pem", &cert), ("key.pem", &key)]),
        "no error"
    );
}

#[tokio::test]
async fn command_line_flags_turn_tls_on_and_require_it() {
    // The fixture's server.xml has no TLS properties; the flags alone enable and require TLS.
    let f = Fixture::start("tls_flags", Extra::default()).await;
    let (ca, cert, key) = make_cert();
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in [("ca.pem", &ca), ("cert.pem", &cert), ("key.pem", &key)] {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let port = common::closed_port();
    let child = Command::new(env!("CARGO_BIN_EXE_manx"))
        .arg("--conf")
        .arg(f.dir.path())
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--manager-port", "0"])
        .arg("--tls-cert")
        .arg(dir.path().join("cert.pem"))
        .arg("--tls-key")
        .arg(dir.path().join("key.pem"))
        .arg("--require-secure-transport")
        .env("MANX_LOG", "error")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the manx binary");
    let _gateway = common::GatewayProcess {
        child,
        port,
        manager_port: 0,
    };
    let ssl =
        mysql_async::SslOpts::default().with_root_certs(vec![dir.path().join("ca.pem").into()]);
    let opts = mysql_async::OptsBuilder::from_opts(common::opts(port, "root", "123456", None))
        .ssl_opts(ssl);
    let started = std::time::Instant::now();
    let mut c = loop {
        match mysql_async::Conn::new(opts.clone()).await {
            Ok(c) => break c,
            Err(_) if started.elapsed() < std::time::Duration::from_secs(30) => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await
            }
            Err(e) => panic!("the gateway did not start: {e}"),
        }
    };
    let one: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    let e = mysql_async::Conn::new(common::opts(port, "root", "123456", None))
        .await
        .unwrap_err();
    assert_eq!(common::server_error(e).0, 3159);
}

/// manx's resident memory in KiB (`VmRSS` of `/proc/PID/status`).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

#[tokio::test]
async fn idle_tls_clients_stay_small() {
    // The HandshakeResponse once reached opensrv-mysql in two reads after the TLS switch, and
    // its packet reader then kept a zero-filled 1 MiB buffer for the whole session: 1 MiB of
    // RSS per idle TLS client. The gateway runs as its own process so its memory is measured
    // alone.
    let (f, ca) = start("tls_mem", false).await;
    let (gateway, conn) =
        common::GatewayProcess::start(f.dir.path(), "root", "123456", "TESTDB").await;
    drop(conn);
    let before = rss_kib(gateway.pid());
    let mut clients = Vec::new();
    for _ in 0..100 {
        let (mut s, scramble) = tls_connect(gateway.port, &ca).await;
        write_packet(
            &mut s,
            2,
            &handshake_response(true, &sha2_proof("123456", &scramble)),
        )
        .await;
        assert_eq!(read_packet(&mut s).await, (3, vec![0x01, 0x03]));
        assert_eq!(read_packet(&mut s).await.1[0], 0x00);
        select_one(&mut s).await;
        clients.push(s);
    }
    let per_client = (rss_kib(gateway.pid()).saturating_sub(before)) / 100;
    assert!(
        per_client < 200,
        "{per_client} KiB of manx's memory per idle TLS client"
    );
}

/// Statements running on the sandbox primary (other connections) whose text holds `marker`.
async fn running_on_primary(primary: &mut mysql_async::Conn, marker: &str) -> i64 {
    primary
        .exec_first(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE CONCAT('%', ?, '%') AND ID <> CONNECTION_ID()",
            (marker,),
        )
        .await
        .unwrap()
        .unwrap_or(0)
}

/// A TLS client that goes away while its statement runs (with a `close_notify`, or just the
/// TCP connection closed) has the statement stopped on the backend, as a plain one
/// (tests/cancel.rs): the watch reads the decrypted stream's end.
#[tokio::test]
async fn a_tls_client_that_leaves_mid_statement_stops_it_on_the_backend() {
    let (f, cert) = start("tls_gone", false).await;
    let mut primary = common::primary(None).await;
    for (marker, close_notify) in [("cancel_tls_notify", true), ("cancel_tls_drop", false)] {
        let (mut s, scramble) = tls_connect(f.port, &cert).await;
        write_packet(
            &mut s,
            2,
            &handshake_response(true, &sha2_proof("123456", &scramble)),
        )
        .await;
        assert_eq!(read_packet(&mut s).await, (3, vec![0x01, 0x03]));
        assert_eq!(read_packet(&mut s).await.1[0], 0x00);
        let sql = format!("\x03SELECT SLEEP(30) AS {marker} FROM travelrecord WHERE id = 1");
        write_packet(&mut s, 0, sql.as_bytes()).await;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while running_on_primary(&mut primary, marker).await == 0 {
            assert!(std::time::Instant::now() < deadline, "{marker} never ran");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        if close_notify {
            s.shutdown().await.unwrap();
        }
        drop(s);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while running_on_primary(&mut primary, marker).await > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "{marker} still runs on the backend after its client left"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}
