//! TLS on the client connection (rustls), beneath the packet reader ([`super::commands`]) and
//! the packet writer ([`super::tap`]).
//!
//! opensrv-mysql 0.7 can only switch to TLS itself (`secure_run_with_options`), where it owns
//! both directions of the socket; manx's reader and writer layers must sit between it and the
//! socket, so the switch happens here instead, under both of them:
//!
//! 1. The greeting opensrv writes goes out with `CLIENT_SSL` added to its capabilities.
//! 2. The client's first packet is read here, exactly (never past its end). An `SSLRequest`
//!    (32 bytes, `CLIENT_SSL` set) is consumed: opensrv never sees it. The rustls handshake
//!    runs on the raw socket, and from then on both directions go through the TLS stream.
//! 3. The `HandshakeResponse` that follows (sequence id 2) is handed on with its sequence id
//!    unchanged, so opensrv answers with 3 as the client expects, but with `CLIENT_SSL`
//!    cleared: opensrv would otherwise take it for an SSLRequest and wait for another packet.
//! 4. When TLS is required, a first packet that is not an SSLRequest gets MySQL's error 3159
//!    (`ER_SECURE_TRANSPORT_REQUIRED`, HY000) and the connection ends; opensrv sees the client
//!    go away.
//!
//! `caching_sha2_password` full authentication over TLS ([`Link::full_authentication`]):
//! the session asks for the cleartext password (`0x01 0x04`, "perform full authentication")
//! while opensrv waits for its verdict, reads the client's answer here, and the packet opensrv
//! writes next (its OK or ERR) moves two sequence ids, past the two packets exchanged.
//!
//! Plain connections to a server without TLS settings do not use this layer at all
//! ([`ClientRead`] / [`ClientWrite`] are then the socket's own halves).

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio_rustls::TlsAcceptor;

mod client;

pub use client::{ClientRead, ClientWrite, Link, split, ssl_status};

/// `CLIENT_SSL` (0x0800) of the capability flags: bit 3 of their second byte.
const CLIENT_SSL_BYTE1: u8 = 0x08;

/// The payload length of an SSLRequest: capabilities (4), max packet size (4), collation (1),
/// 23 reserved bytes.
const SSL_REQUEST_LEN: usize = 32;

/// The longest cleartext password packet accepted during full authentication (bytes).
const MAX_PASSWORD_PACKET: usize = 64 * 1024;

/// Login packets up to this payload length (bytes) are read whole and handed on in one piece:
/// opensrv-mysql 0.7's packet reader grows its buffer to 1 MiB (zero-filled, kept for the
/// whole session) whenever a packet reaches it in more than one read. Longer ones (no real
/// HandshakeResponse is) pass through in pieces.
const MAX_LOGIN_PACKET: usize = 8 * 1024;

/// MySQL's `ER_SECURE_TRANSPORT_REQUIRED`: errno, SQLSTATE, message.
const SECURE_TRANSPORT_REQUIRED: (u16, &str, &str) = (
    3159,
    "HY000",
    "Connections using insecure transport are prohibited while --require_secure_transport=ON.",
);

/// Why the TLS settings cannot be used.
#[derive(Debug)]
pub enum TlsError {
    /// A PEM file could not be read or holds nothing usable; `what` names its role
    /// ("certificate" or "private key").
    Pem {
        what: &'static str,
        path: PathBuf,
        reason: String,
    },
    /// rustls refused the certificate chain and key (say, a key that does not match).
    Rustls(rustls::Error),
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::Pem { what, path, reason } => {
                write!(f, "TLS {what} file {}: {reason}", path.display())
            }
            TlsError::Rustls(e) => write!(f, "TLS certificate and key rejected: {e}"),
        }
    }
}

impl std::error::Error for TlsError {}

/// The front end's TLS settings: the server certificate and whether clients must use TLS.
#[derive(Clone)]
pub struct TlsSettings {
    acceptor: TlsAcceptor,
    required: bool,
}

impl fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSettings")
            .field("required", &self.required)
            .finish_non_exhaustive()
    }
}

impl TlsSettings {
    /// Loads the PEM certificate chain `cert` (server certificate first) and the PEM private key
    /// `key` (PKCS#8, PKCS#1 or SEC1); `required` refuses clients that do not switch to TLS.
    /// TLS 1.2 and 1.3 with rustls's default (ring) cipher suites.
    ///
    /// Errors: a file missing or unreadable, without a certificate / key, or a key rustls
    /// refuses for the certificate.
    pub fn load(cert: &Path, key: &Path, required: bool) -> Result<TlsSettings, TlsError> {
        let certs = CertificateDer::pem_file_iter(cert)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| TlsError::Pem {
                what: "certificate",
                path: cert.to_path_buf(),
                reason: e.to_string(),
            })?;
        if certs.is_empty() {
            return Err(TlsError::Pem {
                what: "certificate",
                path: cert.to_path_buf(),
                reason: "no CERTIFICATE section".to_string(),
            });
        }
        let private_key = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Pem {
            what: "private key",
            path: key.to_path_buf(),
            reason: e.to_string(),
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Rustls)?
            .with_no_client_auth()
            .with_single_cert(certs, private_key)
            .map_err(TlsError::Rustls)?;
        Ok(TlsSettings {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            required,
        })
    }

    /// Whether clients must switch to TLS (`requireSecureTransport`).
    pub fn required(&self) -> bool {
        self.required
    }
}

/// The socket under a TLS-capable connection, as it moves from plain to TLS.
enum Stream {
    Plain(TcpStream),
    Accepting(Box<tokio_rustls::Accept<TcpStream>>),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
    /// The handshake failed; nothing more can be read or written.
    Gone,
}

impl Stream {
    fn poll_read(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Stream::Accepting(_) | Stream::Gone => Poll::Ready(Err(not_connected())),
        }
    }

    fn poll_write(&mut self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        match self {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, data),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, data),
            Stream::Accepting(_) | Stream::Gone => Poll::Ready(Err(not_connected())),
        }
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Stream::Accepting(_) | Stream::Gone => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Stream::Accepting(_) | Stream::Gone => Poll::Ready(Ok(())),
        }
    }
}

fn not_connected() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotConnected,
        "TLS handshake did not complete",
    )
}

/// Where the login is, as seen by the read side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Login {
    /// The client's first packet (SSLRequest or plain HandshakeResponse) is being read.
    First,
    /// The rustls handshake is running.
    Accepting,
    /// The HandshakeResponse after the TLS handshake is being read.
    Response,
    /// A plain client was refused (3159): the error goes out, then the reader ends.
    Refused,
    /// Everything passes through.
    Done,
}

struct Inner {
    stream: Stream,
    acceptor: TlsAcceptor,
    required: bool,
    login: Login,
    /// The greeting has gone out (with `CLIENT_SSL` added).
    greeted: bool,
    /// The packet being read exactly (header, then as much payload as needed).
    head: Vec<u8>,
    /// Bytes ready for the reader, and how many of them it took.
    ready: Vec<u8>,
    ready_pos: usize,
    /// Bytes written before anything else (the patched greeting, an error, a full-auth request).
    out: Vec<u8>,
    out_pos: usize,
    /// Added to the sequence id of the next packet written.
    shift_next: u8,
    /// The sequence id of the client's HandshakeResponse.
    handshake_seq: u8,
    /// Bytes of a refused packet still to read (and drop).
    discard: usize,
    /// The protocol version and cipher suite once TLS is up.
    cipher: Option<(String, String)>,
    peer: String,
}

/// Reads from `stream` until `head` holds `want` bytes, never more. `Ok(false)` when the
/// client closed first.
fn poll_fill(
    stream: &mut Stream,
    cx: &mut Context<'_>,
    head: &mut Vec<u8>,
    want: usize,
) -> Poll<io::Result<bool>> {
    while head.len() < want {
        let mut chunk = [MaybeUninit::<u8>::uninit(); 512];
        let n = (want - head.len()).min(chunk.len());
        let mut rb = ReadBuf::uninit(&mut chunk[..n]);
        ready!(stream.poll_read(cx, &mut rb))?;
        if rb.filled().is_empty() {
            return Poll::Ready(Ok(false));
        }
        head.extend_from_slice(rb.filled());
    }
    Poll::Ready(Ok(true))
}

/// Reads one login packet into `head`: its 4-byte header, then its payload (at most
/// `MAX_LOGIN_PACKET` bytes of it). `true` once it is there, `false` when the stream ended first.
fn poll_login_packet(
    stream: &mut Stream,
    cx: &mut Context<'_>,
    head: &mut Vec<u8>,
) -> Poll<io::Result<bool>> {
    if !ready!(poll_fill(stream, cx, head, 4))? {
        return Poll::Ready(Ok(false));
    }
    let want = 4 + payload_len(head).min(MAX_LOGIN_PACKET);
    poll_fill(stream, cx, head, want)
}

/// The payload length in a packet header.
fn payload_len(header: &[u8]) -> usize {
    u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize
}

impl Inner {
    fn poll_drain_out(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.out_pos < self.out.len() {
            let n = ready!(self.stream.poll_write(cx, &self.out[self.out_pos..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.out_pos += n;
        }
        self.out.clear();
        self.out_pos = 0;
        Poll::Ready(Ok(()))
    }

    /// Queues an ERR packet with sequence id `seq`.
    fn queue_error(&mut self, seq: u8, (code, state, message): (u16, &str, &str)) {
        let mut payload = vec![0xFF];
        payload.extend_from_slice(&code.to_le_bytes());
        payload.push(b'#');
        payload.extend_from_slice(state.as_bytes());
        payload.extend_from_slice(message.as_bytes());
        let mut header = (payload.len() as u32).to_le_bytes();
        header[3] = seq;
        self.out.extend_from_slice(&header);
        self.out.extend_from_slice(&payload);
    }

    fn poll_read(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            if self.ready_pos < self.ready.len() {
                let n = buf.remaining().min(self.ready.len() - self.ready_pos);
                buf.put_slice(&self.ready[self.ready_pos..self.ready_pos + n]);
                self.ready_pos += n;
                if self.ready_pos == self.ready.len() {
                    self.ready = Vec::new();
                    self.ready_pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            match self.login {
                Login::Done => return self.stream.poll_read(cx, buf),
                Login::Refused => {
                    // The rest of the refused packet is read first: closing a socket with
                    // unread input resets the connection, and the client might miss the error.
                    while self.discard > 0 {
                        let mut chunk = [MaybeUninit::<u8>::uninit(); 512];
                        let n = self.discard.min(chunk.len());
                        let mut rb = ReadBuf::uninit(&mut chunk[..n]);
                        ready!(self.stream.poll_read(cx, &mut rb))?;
                        if rb.filled().is_empty() {
                            break;
                        }
                        self.discard -= rb.filled().len();
                    }
                    self.discard = 0;
                    ready!(self.poll_drain_out(cx))?;
                    ready!(self.stream.poll_flush(cx))?;
                    return Poll::Ready(Ok(())); // end of stream
                }
                Login::First => {
                    let mut head = std::mem::take(&mut self.head);
                    match poll_login_packet(&mut self.stream, cx, &mut head) {
                        Poll::Pending => {
                            self.head = head;
                            return Poll::Pending;
                        }
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Ready(Ok(false)) => {
                            // Closed mid-packet: hand on what came, then the end.
                            self.ready = head;
                            self.login = Login::Done;
                            continue;
                        }
                        Poll::Ready(Ok(true)) => {}
                    }
                    let seq = head[3];
                    let ssl_request =
                        payload_len(&head) == SSL_REQUEST_LEN && head[5] & CLIENT_SSL_BYTE1 != 0;
                    if ssl_request {
                        let Stream::Plain(tcp) = std::mem::replace(&mut self.stream, Stream::Gone)
                        else {
                            return Poll::Ready(Err(not_connected()));
                        };
                        self.stream = Stream::Accepting(Box::new(self.acceptor.accept(tcp)));
                        self.login = Login::Accepting;
                    } else if self.required {
                        tracing::info!(peer = %self.peer, "plain connection refused: TLS is required (requireSecureTransport)");
                        self.queue_error(seq.wrapping_add(1), SECURE_TRANSPORT_REQUIRED);
                        self.discard = (4 + payload_len(&head)).saturating_sub(head.len());
                        self.login = Login::Refused;
                    } else {
                        self.ready = head;
                        self.login = Login::Done;
                    }
                }
                Login::Accepting => {
                    let Stream::Accepting(accept) = &mut self.stream else {
                        return Poll::Ready(Err(not_connected()));
                    };
                    match ready!(Pin::new(accept.as_mut()).poll(cx)) {
                        Ok(tls) => {
                            let (_, conn) = tls.get_ref();
                            self.cipher = Some((
                                conn.protocol_version()
                                    .map_or_else(|| "?".to_string(), version_name),
                                conn.negotiated_cipher_suite()
                                    .map_or_else(|| "?".to_string(), |c| cipher_name(c.suite())),
                            ));
                            tracing::debug!(peer = %self.peer, cipher = ?self.cipher, "TLS established");
                            self.stream = Stream::Tls(Box::new(tls));
                            self.login = Login::Response;
                        }
                        Err(e) => {
                            self.stream = Stream::Gone;
                            tracing::info!(peer = %self.peer, error = %e, "TLS handshake failed");
                            return Poll::Ready(Err(e));
                        }
                    }
                }
                Login::Response => {
                    let mut head = std::mem::take(&mut self.head);
                    match poll_login_packet(&mut self.stream, cx, &mut head) {
                        Poll::Pending => {
                            self.head = head;
                            return Poll::Pending;
                        }
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Ready(Ok(true)) if head.len() >= 6 => {
                            self.handshake_seq = head[3];
                            head[5] &= !CLIENT_SSL_BYTE1;
                        }
                        Poll::Ready(Ok(_)) => {}
                    }
                    self.ready = head;
                    self.login = Login::Done;
                }
            }
        }
    }

    fn poll_write(&mut self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        if !self.greeted {
            // Held back until the whole greeting is here, to add CLIENT_SSL to it.
            self.out.extend_from_slice(data);
            if self.out.len() >= 4 && self.out.len() >= 4 + payload_len(&self.out) {
                self.greeted = true;
                let payload = &mut self.out[4..];
                if payload.first() == Some(&10)
                    && let Some(nul) = payload.iter().position(|b| *b == 0)
                    && let Some(b) = payload.get_mut(nul + 1 + 4 + 8 + 1 + 1)
                {
                    *b |= CLIENT_SSL_BYTE1;
                }
            }
            return Poll::Ready(Ok(data.len()));
        }
        ready!(self.poll_drain_out(cx))?;
        if self.shift_next != 0 && data.len() >= 4 {
            // The first write after a full-authentication exchange starts at a packet header.
            self.out.extend_from_slice(data);
            self.out[3] = self.out[3].wrapping_add(self.shift_next);
            self.shift_next = 0;
            return Poll::Ready(Ok(data.len()));
        }
        self.stream.poll_write(cx, data)
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain_out(cx))?;
        self.stream.poll_flush(cx)
    }

    fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain_out(cx))?;
        self.stream.poll_shutdown(cx)
    }
}

/// A protocol version as MySQL (OpenSSL) names it in `Ssl_version`: `TLSv1.3`, `TLSv1.2`.
fn version_name(v: rustls::ProtocolVersion) -> String {
    match v {
        rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".to_string(),
        rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".to_string(),
        other => format!("{other:?}"),
    }
}

/// A cipher suite as MySQL (OpenSSL) names it in `Ssl_cipher`: the IANA name for TLS 1.3
/// (`TLS_AES_256_GCM_SHA384`), OpenSSL's own for the TLS 1.2 suites rustls offers
/// (`ECDHE-RSA-AES128-GCM-SHA256`).
fn cipher_name(suite: rustls::CipherSuite) -> String {
    use rustls::CipherSuite as C;
    let name = match suite {
        C::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
        C::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
        C::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => "ECDHE-ECDSA-AES256-GCM-SHA384",
        C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => "ECDHE-ECDSA-AES128-GCM-SHA256",
        C::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-ECDSA-CHACHA20-POLY1305",
        C::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => "ECDHE-RSA-AES256-GCM-SHA384",
        C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => "ECDHE-RSA-AES128-GCM-SHA256",
        C::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-RSA-CHACHA20-POLY1305",
        other => {
            return other
                .as_str()
                .map_or_else(|| format!("{other:?}"), str::to_string);
        }
    };
    name.to_string()
}

type Shared = Arc<Mutex<Inner>>;

fn lock(shared: &Shared) -> MutexGuard<'_, Inner> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::{cipher_name, ssl_status, version_name};

    #[test]
    fn versions_and_ciphers_carry_mysqls_names() {
        assert_eq!(version_name(rustls::ProtocolVersion::TLSv1_2), "TLSv1.2");
        assert_eq!(
            cipher_name(rustls::CipherSuite::TLS13_AES_128_GCM_SHA256),
            "TLS_AES_128_GCM_SHA256"
        );
        assert_eq!(
            cipher_name(rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384),
            "ECDHE-RSA-AES256-GCM-SHA384"
        );
    }

    #[test]
    fn ssl_status_answers_only_the_exact_names() {
        let plain = |q: &str| ssl_status(q, None);
        assert_eq!(
            plain("show status like 'ssl_cipher';"),
            Some(("Ssl_cipher".to_string(), String::new()))
        );
        assert_eq!(
            plain("SHOW SESSION STATUS LIKE 'Ssl_version'"),
            Some(("Ssl_version".to_string(), String::new()))
        );
        assert_eq!(plain("SHOW STATUS LIKE 'Ssl%'"), None);
        assert_eq!(plain("SHOW GLOBAL STATUS LIKE 'Ssl_cipher'"), None);
        assert_eq!(plain("SHOW STATUS"), None);
        assert_eq!(plain("SELECT 1"), None);
        assert_eq!(plain("sh"), None);
    }
}
