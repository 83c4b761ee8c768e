//! Counting what an MCP server actually sent: a reader between the server's stdout and rmcp
//! that keeps each complete message line, so the benchmark can report a response's size as
//! received rather than as re-serialised by the client library.
//!
//! Calls are made one at a time, so the lines that arrive during a call are that call's response
//! plus whatever the server sent unasked (notifications such as `tools/list_changed`, or requests
//! to the client); [`response_bytes`] keeps only the responses.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use serde::Deserialize;
use serde::de::IgnoredAny;
use tokio::io::{AsyncRead, ReadBuf};

/// Wraps a server's stdout; every byte passes through unchanged.
pub struct WireMeter<R> {
    /// The server's stdout.
    inner: R,
    /// Lines received so far, shared with the [`WireTap`] the benchmark reads.
    received: Arc<Mutex<Received>>,
}

/// The benchmark's handle on a [`WireMeter`]: takes the lines received since the last take.
#[derive(Clone)]
pub struct WireTap {
    received: Arc<Mutex<Received>>,
}

#[derive(Default)]
struct Received {
    /// The line being received (no newline yet).
    partial: Vec<u8>,
    /// Complete lines, without their line terminator.
    lines: Vec<Vec<u8>>,
}

impl<R> WireMeter<R> {
    /// Wraps `inner` and returns the tap that reads what passed through.
    pub fn new(inner: R) -> (WireMeter<R>, WireTap) {
        let received = Arc::new(Mutex::new(Received::default()));
        let tap = WireTap {
            received: received.clone(),
        };
        (WireMeter { inner, received }, tap)
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for WireMeter<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = poll {
            let fresh = &buf.filled()[before..];
            let mut received = self.received.lock().expect("wire meter lock");
            for chunk in fresh.split_inclusive(|&byte| byte == b'\n') {
                match chunk.strip_suffix(b"\n") {
                    Some(rest) => {
                        received.partial.extend_from_slice(rest);
                        let mut line = std::mem::take(&mut received.partial);
                        if line.last() == Some(&b'\r') {
                            line.pop();
                        }
                        received.lines.push(line);
                    }
                    None => received.partial.extend_from_slice(chunk),
                }
            }
        }
        poll
    }
}

impl WireTap {
    /// The complete lines received since the previous call.
    pub fn take(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.received.lock().expect("wire meter lock").lines)
    }

    /// Forgets whatever arrived so far (between measured calls).
    pub fn clear(&self) {
        self.take();
    }
}

/// The first level of a JSON-RPC message, enough to tell a response from the rest.
#[derive(Deserialize)]
struct Head {
    id: Option<IgnoredAny>,
    method: Option<IgnoredAny>,
}

/// Total size of the JSON-RPC responses among `lines` (a message with an `id` and no `method`),
/// and how many there were.
pub fn response_bytes(lines: &[Vec<u8>]) -> (usize, usize) {
    lines
        .iter()
        .filter(|line| {
            serde_json::from_slice::<Head>(line)
                .is_ok_and(|head| head.id.is_some() && head.method.is_none())
        })
        .fold((0, 0), |(bytes, count), line| {
            (bytes + line.len(), count + 1)
        })
}

/// Characters (not bytes) of the JSON-RPC responses among `lines`: what the client received,
/// for the token estimate (characters / 4).
pub fn response_chars(lines: &[Vec<u8>]) -> usize {
    lines
        .iter()
        .filter(|line| response_bytes(std::slice::from_ref(line)).1 == 1)
        .map(|line| String::from_utf8_lossy(line).chars().count())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_split_across_reads_are_kept_whole() {
        let wire: &[u8] = b"{\"method\":\"notifications/x\",\"jsonrpc\":\"2.0\"}\n{\"result\":{\"a\":1},\"jsonrpc\":\"2.0\",\"id\":3}\r\n{\"id\":";
        let (mut meter, tap) = WireMeter::new(wire);
        let mut sink = Vec::new();
        meter.read_to_end(&mut sink).await.unwrap();
        assert_eq!(sink, wire, "bytes pass through unchanged");
        let lines = tap.take();
        assert_eq!(lines.len(), 2, "the unfinished line is not counted yet");
        assert_eq!(
            response_bytes(&lines),
            (lines[1].len(), 1),
            "only the response counts, without its CRLF"
        );
        assert!(tap.take().is_empty());
    }

    #[test]
    fn requests_from_the_server_are_not_responses() {
        let lines = vec![
            br#"{"jsonrpc":"2.0","id":7,"method":"roots/list"}"#.to_vec(),
            br#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}"#.to_vec(),
        ];
        assert_eq!(response_bytes(&lines), (lines[1].len(), 1));
    }

    #[test]
    fn response_characters_count_characters_not_bytes() {
        let lines = vec![
            br#"{"jsonrpc":"2.0","method":"notifications/x"}"#.to_vec(),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"••••\"}"
                .as_bytes()
                .to_vec(),
        ];
        let response = r#"{"jsonrpc":"2.0","id":1,"result":"••••"}"#;
        assert_eq!(response_chars(&lines), response.chars().count());
        assert!(response_bytes(&lines).0 > response_chars(&lines));
    }
}
