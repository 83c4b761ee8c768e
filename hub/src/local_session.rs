//! Serving one connection on the hub's Unix socket as one MCP session.
//!
//! `tabwire-mcp` starts every connection with an attach line ([`LocalControl::Attach`]) naming
//! its session and the browser it had selected; the hub restores that selection and, from then
//! on, writes a [`LocalControl::State`] line whenever the selection changes. Those lines are
//! interleaved with rmcp's output at line boundaries by a small pump, so rmcp itself only ever
//! sees ordinary MCP traffic. A client that connects without an attach line gets plain MCP.
//!
//! The end of the connection's input is the client going away (the shim closes the socket
//! when its own client closes stdin or dies): the session's running calls are cancelled then,
//! at once, rather than when rmcp gives up draining their responses.

use std::io::Cursor;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::ServiceExt;
use tabwire_protocol::{Attached, LocalControl};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use crate::mcp::TabwireMcp;
use crate::session::Session;
use crate::state::HubState;

/// Numbers sessions of clients that did not name themselves.
static ANONYMOUS_SESSIONS: AtomicU64 = AtomicU64::new(1);

/// The longest first line read while looking for an attach line. An MCP message can be long
/// (it is forwarded intact), but the read is bounded so a stray client cannot exhaust memory.
const MAX_FIRST_LINE: u64 = 16 * 1024 * 1024;

/// Serves one accepted connection until the client goes away.
pub async fn serve(hub: Arc<HubState>, stream: UnixStream) {
    let (read, write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut first = Vec::new();
    if let Err(error) = (&mut reader)
        .take(MAX_FIRST_LINE)
        .read_until(b'\n', &mut first)
        .await
    {
        tracing::debug!(%error, "local client left before its first line");
        return;
    }
    let attach = std::str::from_utf8(&first)
        .ok()
        .and_then(|line| LocalControl::parse(line.trim_end()))
        .and_then(LocalControl::attached);
    match attach {
        Some(Attached {
            session,
            selected,
            dialect,
        }) => {
            tracing::info!(session, ?selected, ?dialect, "shim attached");
            let (control, control_rx) = mpsc::unbounded_channel();
            let session = Session::new(session, selected, Some((control, dialect)));
            let (mcp_out, pump_in) = tokio::io::duplex(64 * 1024);
            tokio::spawn(pump(pump_in, write, control_rx));
            run(hub, session, reader, mcp_out).await;
        }
        _ => {
            let id = format!(
                "anonymous-{}",
                ANONYMOUS_SESSIONS.fetch_add(1, Ordering::Relaxed)
            );
            tracing::info!(session = id, "plain MCP client connected");
            let session = Session::new(id, Default::default(), None);
            run(hub, session, Cursor::new(first).chain(reader), write).await;
        }
    }
}

async fn run<R, W>(hub: Arc<HubState>, session: Session, reader: R, writer: W)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let session = Arc::new(session);
    let longest = longest_message(&hub.uploads);
    let server = TabwireMcp::new(hub, session.clone());
    let reader = HangsUp {
        inner: reader,
        session: session.clone(),
    };
    let transport =
        rmcp::transport::async_rw::AsyncRwTransport::<rmcp::RoleServer, _, _>::new(reader, writer)
            .with_max_line_length(longest);
    match server.serve(transport).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(error) => {
            tracing::debug!(session = session.id(), %error, "MCP session ended during start-up")
        }
    }
    tracing::info!(session = session.id(), "session closed");
}

/// The longest MCP message a local client may send: rmcp's default (16 MiB), or an upload of
/// the hub's per-call cap carried as base64 with room for the rest of the call, whichever is
/// larger. Longer lines are dropped unanswered by rmcp, so the cap must fit in one.
fn longest_message(uploads: &crate::uploads::Uploads) -> usize {
    let upload = uploads.max_call_bytes.div_ceil(3) * 4 + (1 << 20);
    usize::try_from(upload)
        .unwrap_or(usize::MAX)
        .max(rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH)
}

/// A session's input that tells the session when it ends (or fails): its client went away.
struct HangsUp<R> {
    inner: R,
    session: Arc<Session>,
}

impl<R: AsyncRead + Unpin> AsyncRead for HangsUp<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let read = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = match &read {
            std::task::Poll::Ready(Ok(())) => buf.filled().len() == before && buf.remaining() > 0,
            std::task::Poll::Ready(Err(_)) => true,
            std::task::Poll::Pending => false,
        };
        if ended {
            self.session.hang_up();
        }
        read
    }
}

/// Copies rmcp's output lines to the socket, slipping control lines in between them.
async fn pump(
    mcp_out: tokio::io::DuplexStream,
    mut socket: tokio::net::unix::OwnedWriteHalf,
    mut control: mpsc::UnboundedReceiver<LocalControl>,
) {
    let mut lines = BufReader::new(mcp_out);
    let mut line = Vec::new();
    loop {
        tokio::select! {
            // Control lines first: a selection made by a tool call is reported before that
            // call's result, so the shim knows it even if the link drops right after.
            biased;
            Some(message) = control.recv() => {
                if socket.write_all(message.to_line().as_bytes()).await.is_err() {
                    return;
                }
            }
            read = lines.read_until(b'\n', &mut line) => {
                match read {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if socket.write_all(&line).await.is_err() {
                            return;
                        }
                        line.clear();
                    }
                }
            }
        }
    }
}
