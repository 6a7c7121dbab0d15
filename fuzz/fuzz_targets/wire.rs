//! The front end's packet handling: a real gateway (in this process, on a loopback port) gets
//! the input as a client's bytes, either raw from the first byte (the handshake response and
//! login path) or after a valid `mysql_native_password` login as user `root` (the command
//! path: COM_QUERY, COM_STMT_*, unknown commands, bad lengths and sequence ids). Its backends
//! are a closed port, so no statement reaches a database. Findings: a panic anywhere in the
//! gateway (the panic hook aborts, which libFuzzer reports), or a session that does not end
//! within 5 s of the client closing its side.

#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use manx::config::Config;
use manx::datahost::Timeouts;
use manx::frontend::Server;
use sha1::{Digest, Sha1};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

struct Gateway {
    runtime: Runtime,
    port: u16,
    _dir: std::path::PathBuf,
}

fn gateway() -> &'static Gateway {
    static G: OnceLock<Gateway> = OnceLock::new();
    G.get_or_init(|| {
        std::panic::set_hook(Box::new(|info| {
            eprintln!("{info}");
            std::process::abort();
        }));
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = std::env::temp_dir().join(format!("manx-fuzz-wire-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in [
            "rule.xml",
            "server.xml",
            "autopartition-long.txt",
            "partition-hash-int.txt",
        ] {
            std::fs::copy(repo.join(f), dir.join(f)).unwrap();
        }
        // The bundled schema with every server on a closed port, and no heartbeat.
        let schema = std::fs::read_to_string(repo.join("schema.xml"))
            .unwrap()
            .replace("127.0.0.1:13306", "127.0.0.1:1")
            .replace("127.0.0.1:13307", "127.0.0.1:1")
            .replace("127.0.0.1:13308", "127.0.0.1:1")
            .replace("<heartbeat>select user()</heartbeat>", "");
        std::fs::write(dir.join("schema.xml"), schema).unwrap();
        let config = Config::load(&dir).expect("the fuzz config loads");
        let server = Arc::new(Server::new(config, Timeouts::default()).expect("server"));
        let runtime = Runtime::new().unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        runtime.spawn(server.serve(listener, std::future::pending()));
        Gateway {
            runtime,
            port,
            _dir: dir,
        }
    })
}

/// Reads one packet: (sequence id, payload).
async fn packet(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 4];
    s.read_exact(&mut head).await.ok()?;
    let len = u32::from_le_bytes([head[0], head[1], head[2], 0]) as usize;
    let mut body = vec![0; len];
    s.read_exact(&mut body).await.ok()?;
    Some((head[3], body))
}

/// Logs in as root/123456 with mysql_native_password; `None` if the gateway refused.
async fn login(s: &mut TcpStream) -> Option<()> {
    let (_, greeting) = packet(s).await?;
    // protocol version, server version NUL, thread id, salt part 1 (8), filler, caps, charset,
    // status, caps high, auth data length, reserved (10), salt part 2 (12) NUL.
    let nul = greeting.iter().skip(1).position(|b| *b == 0)? + 1;
    let p = nul + 1 + 4;
    let mut salt = greeting.get(p..p + 8)?.to_vec();
    let q = p + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
    salt.extend_from_slice(greeting.get(q..q + 12)?);
    let stage1 = Sha1::digest(b"123456");
    let stage2 = Sha1::digest(stage1);
    let mut h = Sha1::new();
    h.update(&salt);
    h.update(stage2);
    let scramble: Vec<u8> = h
        .finalize()
        .iter()
        .zip(stage1.iter())
        .map(|(a, b)| a ^ b)
        .collect();
    // CLIENT_PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | CONNECT_WITH_DB | MULTI_STATEMENTS
    // | MULTI_RESULTS | PS_MULTI_RESULTS
    let caps: u32 =
        0x0200 | 0x8000 | 0x0008_0000 | 0x0008 | 0x0001_0000 | 0x0002_0000 | 0x0004_0000;
    let mut body = Vec::new();
    body.extend_from_slice(&caps.to_le_bytes());
    body.extend_from_slice(&(16u32 << 20).to_le_bytes());
    body.push(45);
    body.extend_from_slice(&[0; 23]);
    body.extend_from_slice(b"root\0");
    body.push(scramble.len() as u8);
    body.extend_from_slice(&scramble);
    body.extend_from_slice(b"TESTDB\0");
    body.extend_from_slice(b"mysql_native_password\0");
    let mut out = (body.len() as u32).to_le_bytes();
    out[3] = 1;
    s.write_all(&out).await.ok()?;
    s.write_all(&body).await.ok()?;
    let (_, ok) = packet(s).await?;
    (ok.first() == Some(&0)).then_some(())
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else {
        return;
    };
    let g = gateway();
    g.runtime.block_on(async {
        let mut s = TcpStream::connect(("127.0.0.1", g.port)).await.unwrap();
        if mode & 1 == 1 {
            login(&mut s).await.expect("root logs in");
        }
        let _ = s.write_all(input).await;
        let _ = s.shutdown().await;
        // The session must end (EOF) once the client has closed its side.
        let mut sink = vec![0u8; 64 * 1024];
        let ended = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match s.read(&mut sink).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(
            ended.is_ok(),
            "the session did not end within 5 s of the client's EOF"
        );
    });
});
