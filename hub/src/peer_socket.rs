//! The WebSocket under a peer endpoint (`/browser`, `/device`): the upgrade, and a limit on
//! what the hub reads from a peer before it is welcomed.
//!
//! Until its welcome a peer is nobody: anyone on the machine (local mode) or anyone with the
//! URL can open the socket. tungstenite reads a whole message before the hub can look at its
//! size, up to the message limit that fits a big page's observation (32 MiB), so eight sockets
//! sending a 30 MiB first message in 1 MiB fragments once grew the hub by 78 MiB. A peer
//! being welcomed therefore reads through [`Guarded`], which lets through at most one
//! handshake message's worth of bytes (4 KiB, a frame header and a few control frames) before
//! the hub has looked at that message; it refuses any more with an I/O error that ends the
//! connection. After the welcome the guard is lifted and the normal limits apply.
//!
//! The upgrade is done here, not by axum's `WebSocketUpgrade`, because that fixes the
//! tungstenite configuration at the upgrade and hides the stream under it: tokio-tungstenite
//! keeps `WebSocket::set_config` to itself, so no frame or message limit can change after the
//! welcome. Owning the upgrade (hyper's `OnUpgrade` and tokio-tungstenite's `from_raw_socket`)
//! puts the guard under tungstenite instead, where a byte count needs no knowledge of frames
//! and cannot be talked past by fragmenting a message or padding it with pings. The checks are
//! the RFC 6455 ones axum made: `GET` (the route's), `Connection: upgrade`,
//! `Upgrade: websocket`, version 13 and a key.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

/// A peer's WebSocket.
pub type PeerSocket = WebSocketStream<Guarded<TokioIo<hyper::upgrade::Upgraded>>>;

/// The most the hub reads from a peer for one handshake message before it has looked at it:
/// the message itself, the largest frame header a client sends (2 + 8 + a 4-byte mask), and
/// room for a couple of control frames (a ping is at most 131 bytes).
pub fn handshake_allowance(max_message: usize) -> usize {
    max_message + 14 + 2 * 131
}

/// A request to open a WebSocket, checked: what the answer needs, and the connection to take
/// over once the answer has gone.
pub struct Upgrade {
    key: HeaderValue,
    on_upgrade: OnUpgrade,
}

/// Why a request cannot be upgraded (axum's statuses for the same faults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotUpgradable {
    /// Not a WebSocket handshake: missing or wrong `Connection`, `Upgrade`, version or key.
    BadRequest(&'static str),
    /// A WebSocket handshake on a connection that cannot be taken over (an in-process call).
    NotUpgradable,
}

impl IntoResponse for NotUpgradable {
    fn into_response(self) -> Response {
        match self {
            NotUpgradable::BadRequest(why) => {
                (StatusCode::BAD_REQUEST, format!("{why}\n")).into_response()
            }
            NotUpgradable::NotUpgradable => (
                StatusCode::UPGRADE_REQUIRED,
                "this connection cannot be upgraded to a WebSocket\n",
            )
                .into_response(),
        }
    }
}

impl Upgrade {
    /// Checks that `request` opens a WebSocket, and takes its connection's upgrade.
    pub fn from_request(request: &mut Request<Body>) -> Result<Upgrade, NotUpgradable> {
        let headers = request.headers();
        if !header_has_token(headers, header::CONNECTION, "upgrade") {
            return Err(NotUpgradable::BadRequest(
                "Connection header did not include 'upgrade'",
            ));
        }
        if !header_has_token(headers, header::UPGRADE, "websocket") {
            return Err(NotUpgradable::BadRequest(
                "`Upgrade` header did not include 'websocket'",
            ));
        }
        if headers
            .get(header::SEC_WEBSOCKET_VERSION)
            .is_none_or(|version| version.as_bytes() != b"13")
        {
            return Err(NotUpgradable::BadRequest(
                "`Sec-WebSocket-Version` header did not include '13'",
            ));
        }
        let key =
            headers
                .get(header::SEC_WEBSOCKET_KEY)
                .cloned()
                .ok_or(NotUpgradable::BadRequest(
                    "`Sec-WebSocket-Key` header missing",
                ))?;
        let on_upgrade = request
            .extensions_mut()
            .remove::<OnUpgrade>()
            .ok_or(NotUpgradable::NotUpgradable)?;
        Ok(Upgrade { key, on_upgrade })
    }

    /// The `101 Switching Protocols` answer (selecting `protocol` when given), and the socket
    /// once the answer has gone out. The socket starts guarded with `allowance` bytes to read.
    pub fn accept(
        self,
        protocol: Option<&'static str>,
        config: WebSocketConfig,
        allowance: usize,
    ) -> (
        Response,
        impl Future<Output = Result<PeerSocket, hyper::Error>> + Send + 'static,
    ) {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        let headers = response.headers_mut();
        headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        let accept = derive_accept_key(self.key.as_bytes());
        headers.insert(
            header::SEC_WEBSOCKET_ACCEPT,
            HeaderValue::from_str(&accept).expect("base64 is a header value"),
        );
        if let Some(protocol) = protocol {
            headers.insert(
                header::SEC_WEBSOCKET_PROTOCOL,
                HeaderValue::from_static(protocol),
            );
        }
        let on_upgrade = self.on_upgrade;
        let socket = async move {
            let upgraded = on_upgrade.await?;
            let io = Guarded::new(TokioIo::new(upgraded), allowance);
            Ok(WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await)
        };
        (response, socket)
    }
}

/// Whether a comma-separated header holds `token` (ASCII case-insensitive).
fn header_has_token(headers: &HeaderMap, name: header::HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|item| item.trim().eq_ignore_ascii_case(token))
}

/// A connection's reads, limited while its peer is not welcomed.
pub struct Guarded<S> {
    inner: S,
    /// Bytes that may still be read; `None` once the guard is lifted.
    remaining: Option<usize>,
    /// Set when the peer sent more than it was allowed.
    exceeded: bool,
}

impl<S> Guarded<S> {
    fn new(inner: S, allowance: usize) -> Self {
        Guarded {
            inner,
            remaining: Some(allowance),
            exceeded: false,
        }
    }

    /// Allows `allowance` bytes from now on (not added to what was left): called once a
    /// handshake message has been read and checked, before waiting for the next.
    pub fn allow(&mut self, allowance: usize) {
        if self.remaining.is_some() {
            self.remaining = Some(allowance);
        }
    }

    /// Lifts the guard: the peer is welcomed.
    pub fn lift(&mut self) {
        self.remaining = None;
    }

    /// Whether the peer sent more than it was allowed (the reads then failed).
    pub fn exceeded(&self) -> bool {
        self.exceeded
    }
}

/// What [`Guarded::discard`] reads at most, and for how long.
const DISCARD_BYTES: usize = 1 << 20;
const DISCARD_TIME: std::time::Duration = std::time::Duration::from_secs(1);

impl<S: AsyncRead + Unpin> Guarded<S> {
    /// Reads and throws away what the peer is still sending (at most 1 MiB, for at most 1 s,
    /// through an 8 KiB buffer): a socket closed with unread bytes is reset, and the peer would
    /// lose the refusal sent just before.
    pub async fn discard(&mut self) {
        use tokio::io::AsyncReadExt;
        let mut buffer = [0u8; 8192];
        let mut left = DISCARD_BYTES;
        let draining = async {
            while left > 0 {
                match self.inner.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(read) => left = left.saturating_sub(read),
                }
            }
        };
        let _ = tokio::time::timeout(DISCARD_TIME, draining).await;
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some(remaining) = this.remaining else {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        };
        if remaining == 0 {
            this.exceeded = true;
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the peer sent more than a handshake message before its welcome",
            )));
        }
        let mut limited = buf.take(remaining);
        ready!(Pin::new(&mut this.inner).poll_read(cx, &mut limited))?;
        let read = limited.filled().len();
        // SAFETY: `limited` is a view of `buf`'s unfilled part, and the inner reader
        // initialised and filled its first `read` bytes.
        unsafe { buf.assume_init(read) };
        buf.advance(read);
        this.remaining = Some(remaining - read);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn the_guard_reads_no_more_than_allowed_until_lifted() {
        let (mut peer, hub) = tokio::io::duplex(1 << 20);
        let mut guarded = Guarded::new(hub, 10);
        peer.write_all(&[7u8; 64]).await.unwrap();
        let mut buf = [0u8; 64];
        // Asked for 64, given at most the 10 allowed.
        let mut read = 0;
        while read < 10 {
            read += guarded.read(&mut buf[read..]).await.unwrap();
        }
        assert_eq!(read, 10);
        let error = guarded.read(&mut buf).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(guarded.exceeded());
        // A new allowance replaces the old one; lifting ends the count.
        guarded.allow(4);
        assert_eq!(guarded.read(&mut buf).await.unwrap(), 4);
        guarded.lift();
        guarded.allow(1);
        assert_eq!(guarded.read(&mut buf).await.unwrap(), 50);
    }

    #[test]
    fn tokens_in_headers() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, Upgrade"),
        );
        assert!(header_has_token(&headers, header::CONNECTION, "upgrade"));
        assert!(!header_has_token(&headers, header::UPGRADE, "websocket"));
    }
}
