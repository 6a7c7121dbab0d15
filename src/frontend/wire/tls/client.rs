//! The session's side of a client connection: the read and write halves it is split into
//! ([`split`]), the [`Link`] to a TLS-capable one (cipher, full authentication), and the
//! `Ssl_cipher` / `Ssl_version` status rows only the connection itself can answer.

use super::*;

/// The session's handle on a TLS-capable connection.
#[derive(Clone)]
pub struct Link(Shared);

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Link").field(&self.cipher()).finish()
    }
}

impl Link {
    /// The TLS protocol version and cipher suite (MySQL's names, e.g. `TLSv1.3`,
    /// `TLS_AES_256_GCM_SHA384`) once the client switched to TLS; `None` on a plain
    /// connection.
    pub fn cipher(&self) -> Option<(String, String)> {
        lock(&self.0).cipher.clone()
    }

    /// Whether the client switched to TLS.
    pub fn is_secure(&self) -> bool {
        lock(&self.0).cipher.is_some()
    }

    /// `caching_sha2_password` full authentication over TLS: sends "perform full
    /// authentication" (`0x01 0x04`) and returns the client's answer, the cleartext password
    /// followed by a NUL. The next packet written (opensrv's verdict) moves two sequence ids.
    /// Only between the HandshakeResponse and opensrv's answer to it, on a TLS connection.
    ///
    /// Errors: the connection is not TLS, fails, closes, or the answer exceeds 64 KiB.
    pub async fn full_authentication(&self) -> io::Result<Vec<u8>> {
        {
            let mut inner = lock(&self.0);
            if inner.cipher.is_none() {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "full authentication needs TLS",
                ));
            }
            let seq = inner.handshake_seq.wrapping_add(1);
            inner.out.extend_from_slice(&[2, 0, 0, seq, 0x01, 0x04]);
        }
        poll_fn(|cx| lock(&self.0).poll_flush(cx)).await?;
        let mut head = Vec::new();
        let complete = poll_fn(|cx| {
            let mut inner = lock(&self.0);
            if !ready!(poll_fill(&mut inner.stream, cx, &mut head, 4))? {
                return Poll::Ready(Ok(false));
            }
            let len = payload_len(&head);
            if len > MAX_PASSWORD_PACKET {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "full authentication answer too long",
                )));
            }
            poll_fill(&mut inner.stream, cx, &mut head, 4 + len)
        })
        .await?;
        if !complete {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        lock(&self.0).shift_next = 2;
        Ok(head.split_off(4))
    }
}

/// The read side of a client connection, under [`super::super::commands::Commands`].
pub struct ClientRead(Side<OwnedReadHalf>);

/// The write side of a client connection, under [`super::super::tap::Tap`].
pub struct ClientWrite(Side<OwnedWriteHalf>);

/// A socket half as is, or the TLS-capable connection both halves share.
enum Side<T> {
    Plain(T),
    Tls(Shared),
}

/// Splits a client socket into the halves the session reads and writes, TLS-capable when
/// `settings` is given (then with the session's [`Link`]).
pub fn split(
    stream: TcpStream,
    settings: Option<&TlsSettings>,
    peer: String,
) -> (ClientRead, ClientWrite, Option<Link>) {
    let Some(settings) = settings else {
        let (r, w) = stream.into_split();
        return (
            ClientRead(Side::Plain(r)),
            ClientWrite(Side::Plain(w)),
            None,
        );
    };
    let shared = Arc::new(Mutex::new(Inner {
        stream: Stream::Plain(stream),
        acceptor: settings.acceptor.clone(),
        required: settings.required,
        login: Login::First,
        greeted: false,
        head: Vec::new(),
        ready: Vec::new(),
        ready_pos: 0,
        out: Vec::new(),
        out_pos: 0,
        shift_next: 0,
        handshake_seq: 0,
        discard: 0,
        cipher: None,
        peer,
    }));
    (
        ClientRead(Side::Tls(shared.clone())),
        ClientWrite(Side::Tls(shared.clone())),
        Some(Link(shared)),
    )
}

impl AsyncRead for ClientRead {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Side::Plain(r) => Pin::new(r).poll_read(cx, buf),
            Side::Tls(shared) => lock(shared).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ClientWrite {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            Side::Plain(w) => Pin::new(w).poll_write(cx, data),
            Side::Tls(shared) => lock(shared).poll_write(cx, data),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            Side::Plain(w) => Pin::new(w).poll_write_vectored(cx, bufs),
            Side::Tls(shared) => {
                let data = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| b);
                lock(shared).poll_write(cx, data)
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.0 {
            Side::Plain(w) => w.is_write_vectored(),
            Side::Tls(_) => false,
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Side::Plain(w) => Pin::new(w).poll_flush(cx),
            Side::Tls(shared) => lock(shared).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Side::Plain(w) => Pin::new(w).poll_shutdown(cx),
            Side::Tls(shared) => lock(shared).poll_shutdown(cx),
        }
    }
}

/// The rows of `SHOW [SESSION] STATUS LIKE 'Ssl_cipher'` (or `'Ssl_version'`), which describe
/// the client's own connection and so cannot come from a backend: `(Variable_name, Value)`,
/// the value empty on a plain connection, as MySQL answers. `None` for any other statement
/// (those go to a backend as before). Names and values as MySQL spells them (`TLSv1.3`,
/// `TLS_AES_128_GCM_SHA256`, `ECDHE-RSA-AES128-GCM-SHA256`).
pub fn ssl_status(query: &str, link: Option<&Link>) -> Option<(String, String)> {
    // Cheap refusal first: this runs before every statement.
    if query.len() > 64 || !query.get(..4)?.eq_ignore_ascii_case("SHOW") {
        return None;
    }
    let words: Vec<&str> = query
        .trim()
        .trim_end_matches(';')
        .split_ascii_whitespace()
        .collect();
    let pattern = match words.as_slice() {
        [show, status, like, p] | [show, _, status, like, p]
            if show.eq_ignore_ascii_case("SHOW")
                && status.eq_ignore_ascii_case("STATUS")
                && like.eq_ignore_ascii_case("LIKE")
                && (words.len() == 4 || words[1].eq_ignore_ascii_case("SESSION")) =>
        {
            p.strip_prefix('\'')?.strip_suffix('\'')?
        }
        _ => return None,
    };
    let cipher = link.and_then(Link::cipher);
    let (name, value) = if pattern.eq_ignore_ascii_case("Ssl_cipher") {
        ("Ssl_cipher", cipher.map(|c| c.1))
    } else if pattern.eq_ignore_ascii_case("Ssl_version") {
        ("Ssl_version", cipher.map(|c| c.0))
    } else {
        return None;
    };
    Some((name.to_string(), value.unwrap_or_default()))
}
