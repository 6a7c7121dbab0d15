//! The client socket watched while a statement runs: a client that goes away then is noticed
//! at once, not when the answer is written.
//!
//! opensrv-mysql reads the socket only between commands; while the session waits for the
//! backends' first packet (or a merge waits for every node), nothing reads it, and a client
//! that closed its connection would leave its statement running on the backends until it ends
//! (`SELECT SLEEP(60)`: a minute, holding a pooled connection). [`watched`] puts a layer under
//! the packet reader ([`super::commands`]) that the session can also poll ([`Watch::poll_gone`])
//! while a statement runs. A MySQL client sends nothing while it waits for an answer but
//! pipelined commands (or `COM_QUIT`, followed by its end of stream): the bytes such a poll
//! reads are kept, in order, for the packet reader's next reads (never looked at here, at most
//! [`AHEAD_LIMIT`] of them); only the end of the stream (EOF, a TLS `close_notify`) or a read
//! error (`ECONNRESET`) says the client is gone, and the packet reader sees that same end
//! once the kept bytes are handed on.
//!
//! It sits above TLS ([`super::tls`]): what it reads ahead is the decrypted stream.

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The most bytes read ahead of the packet reader: past it the watch stops reading (a client
/// that pipelines that much is not waiting for an answer) until the reader took them.
pub const AHEAD_LIMIT: usize = 64 * 1024;

/// Splits `inner` into the reader the packet reader reads ([`Watched`]) and the session's
/// [`Watch`] over the same stream.
pub fn watched<R>(inner: R) -> (Watched<R>, Watch<R>) {
    let shared = Arc::new(Mutex::new(Ahead {
        inner,
        bytes: Vec::new(),
        pos: 0,
        end: None,
    }));
    (Watched(shared.clone()), Watch(shared))
}

/// The client stream as the packet reader reads it: the bytes a [`Watch`] read ahead first,
/// then the stream itself.
pub struct Watched<R>(Arc<Mutex<Ahead<R>>>);

/// The session's side: polls whether the client went away ([`Watch::poll_gone`]).
pub struct Watch<R>(Arc<Mutex<Ahead<R>>>);

/// The stream, what was read ahead of the packet reader, and how the stream ended if a watch
/// saw it end.
struct Ahead<R> {
    inner: R,
    /// Bytes read by a watch, from `pos` on not yet handed to the packet reader.
    bytes: Vec<u8>,
    pos: usize,
    end: Option<End>,
}

/// How the stream ended, as a watch read it (told to the packet reader after the kept bytes).
enum End {
    /// End of stream.
    Eof,
    /// A read failed (`io::Error` is not `Clone`: its kind and text).
    Failed(io::ErrorKind, String),
}

fn lock<R>(shared: &Mutex<Ahead<R>>) -> MutexGuard<'_, Ahead<R>> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut a = lock(&self.0);
        let a = &mut *a;
        if a.pos < a.bytes.len() {
            let n = (a.bytes.len() - a.pos).min(buf.remaining());
            buf.put_slice(&a.bytes[a.pos..a.pos + n]);
            a.pos += n;
            if a.pos == a.bytes.len() {
                a.bytes.clear();
                a.pos = 0;
            }
            return Poll::Ready(Ok(()));
        }
        match &a.end {
            Some(End::Eof) => Poll::Ready(Ok(())),
            Some(End::Failed(kind, text)) => Poll::Ready(Err(io::Error::new(*kind, text.clone()))),
            None => Pin::new(&mut a.inner).poll_read(cx, buf),
        }
    }
}

impl<R: AsyncRead + Unpin> Watch<R> {
    /// Ready once the client's stream ended (end of stream or a read error), reading what
    /// arrives meanwhile into the packet reader's input (up to [`AHEAD_LIMIT`] bytes ahead;
    /// past that it stays pending without reading). Pending, with the task woken when more
    /// arrives, while the stream is open.
    ///
    /// Only while the packet reader is not reading (the session is answering a command): both
    /// would register the same task's waker, but the packet reader must see bytes in order.
    pub fn poll_gone(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut a = lock(&self.0);
        let a = &mut *a;
        loop {
            if a.end.is_some() {
                return Poll::Ready(());
            }
            if a.bytes.len() - a.pos >= AHEAD_LIMIT {
                return Poll::Pending;
            }
            let mut chunk = [MaybeUninit::<u8>::uninit(); 16 * 1024];
            let mut rb = ReadBuf::uninit(&mut chunk);
            match Pin::new(&mut a.inner).poll_read(cx, &mut rb) {
                Poll::Ready(Ok(())) if rb.filled().is_empty() => a.end = Some(End::Eof),
                Poll::Ready(Ok(())) => a.bytes.extend_from_slice(rb.filled()),
                Poll::Ready(Err(e)) => a.end = Some(End::Failed(e.kind(), e.to_string())),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Bytes a watch reads ahead reach the reader in order, before what follows; the end of
    /// the stream is the watch's signal and then the reader's.
    #[tokio::test]
    async fn read_ahead_bytes_are_kept_and_the_end_is_seen_by_both() {
        let (client, server) = tokio::io::duplex(1024);
        let (mut reader, watch) = watched(server);
        let mut client = client;
        client.write_all(b"pipelined").await.unwrap();
        // Pending: bytes are not an end.
        let polled = poll_fn(|cx| Poll::Ready(watch.poll_gone(cx))).await;
        assert!(polled.is_pending());
        client.write_all(b" more").await.unwrap();
        drop(client);
        poll_fn(|cx| watch.poll_gone(cx)).await;
        let mut all = Vec::new();
        reader.read_to_end(&mut all).await.unwrap();
        assert_eq!(all, b"pipelined more");
        // Seen again, not consumed.
        poll_fn(|cx| watch.poll_gone(cx)).await;
    }

    /// Past the limit the watch stops reading and cannot tell (a client pipelining that much).
    #[tokio::test]
    async fn reading_ahead_stops_at_the_limit() {
        let (mut client, server) = tokio::io::duplex(4 * AHEAD_LIMIT);
        let (mut reader, watch) = watched(server);
        client.write_all(&vec![7u8; 2 * AHEAD_LIMIT]).await.unwrap();
        drop(client);
        let polled = poll_fn(|cx| Poll::Ready(watch.poll_gone(cx))).await;
        assert!(polled.is_pending());
        let mut all = Vec::new();
        reader.read_to_end(&mut all).await.unwrap();
        assert_eq!(all.len(), 2 * AHEAD_LIMIT);
    }
}
