//! WebDriverAgent's HTTP API, the one way this backend reaches a device: every call is
//! [`Wda::call`], one HTTP/1.1 request on its own connection, answered with WDA's envelope
//! (`{"value": …, "sessionId": …}`; an error's `value` is `{"error", "message"}`).
//!
//! WDA speaks plain HTTP and asks for no credentials: whoever reaches its port drives the
//! device. Its URL is therefore a loopback address (a simulator on this Mac, or a USB iPhone
//! forwarded with `iproxy`) unless the owner says otherwise (`--allow-remote-wda`), and typed
//! text never appears in an error.

use std::time::Duration;

use serde_json::Value;
use tabwire_protocol::local::{dialled_host, is_loopback_host};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The most bytes of one response: a screenshot of the largest iPad is some tens of
/// megabytes in base64, a page source a few megabytes.
pub const MAX_RESPONSE: usize = 64 * 1024 * 1024;
/// The longest response head.
const MAX_HEAD: usize = 64 * 1024;

/// A WebDriverAgent's address: `http://HOST:PORT` with an optional path prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WdaUrl {
    host: String,
    port: u16,
    prefix: String,
}

impl WdaUrl {
    /// Parses `http://HOST[:PORT][/PREFIX]` (the port defaults to WDA's 8100). A host off
    /// loopback is refused unless `remote` allows it.
    pub fn parse(text: &str, remote: bool) -> Result<WdaUrl, String> {
        let rest = text.strip_prefix("http://").ok_or_else(|| {
            format!(
                "--wda {text}: expected http://HOST:PORT (WebDriverAgent speaks plain HTTP; \
                 https:// and other schemes are not taken)"
            )
        })?;
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err(format!(
                "--wda {text}: a user or password in the URL is not taken"
            ));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(':') && !port.contains(']') => (
                host,
                port.parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0 && port.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| format!("--wda {text}: the port must be 1-65535"))?,
            ),
            _ => (authority, 8100),
        };
        let bracketed = host.starts_with('[') || host.ends_with(']');
        let host_ok = if bracketed {
            host.len() > 2 && host.starts_with('[') && host.ends_with(']')
        } else {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        };
        if !host_ok {
            return Err(format!("--wda {text}: not a host name or address"));
        }
        if !path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/_.~-".contains(&b))
        {
            return Err(format!(
                "--wda {text}: the path may hold only letters, digits and / _ . ~ -"
            ));
        }
        if !remote && !is_loopback_host(host) {
            return Err(format!(
                "--wda {text}: WebDriverAgent has no authentication and its traffic (typed text, \
                 screenshots) is plain HTTP, so only a loopback address is taken: forward a USB \
                 iPhone's port with `iproxy 8100 8100`, or pass --allow-remote-wda to accept \
                 {host} on a network you trust"
            ));
        }
        let prefix = path.trim_end_matches('/').to_owned();
        Ok(WdaUrl {
            host: host.to_owned(),
            port,
            prefix,
        })
    }

    /// The URL as given back: `http://127.0.0.1:8100`.
    pub fn display(&self) -> String {
        format!("http://{}:{}{}", self.host, self.port, self.prefix)
    }
}

/// Why a call to WDA failed.
#[derive(Debug, thiserror::Error)]
pub enum WdaError {
    /// Nothing answered at the address (WDA not running, the forward gone).
    #[error("WebDriverAgent at {url} did not answer: {reason}")]
    Unreachable {
        /// The address.
        url: String,
        /// The operating system's reason.
        reason: String,
    },
    /// It did not answer within its time.
    #[error("WebDriverAgent did not answer `{method} {path}` within {ms} ms")]
    Timeout {
        /// The HTTP method.
        method: &'static str,
        /// The route (never a body, which may hold typed text).
        path: String,
        /// The time it had.
        ms: u128,
    },
    /// It answered with an error: WDA's own `error` and `message`.
    #[error("WebDriverAgent answered `{method} {path}` with {status} {error}: {message}")]
    Answered {
        /// The HTTP method.
        method: &'static str,
        /// The route.
        path: String,
        /// The HTTP status.
        status: u16,
        /// WDA's error string (`no such alert`, `invalid session id`, …).
        error: String,
        /// Its message, cut short.
        message: String,
    },
    /// What it sent could not be read as WDA's answer.
    #[error("WebDriverAgent's answer to `{method} {path}` could not be read: {reason}")]
    Garbled {
        /// The HTTP method.
        method: &'static str,
        /// The route.
        path: String,
        /// What was wrong.
        reason: String,
    },
}

impl WdaError {
    /// WDA's error string, when it answered with one.
    pub fn wda_error(&self) -> Option<&str> {
        match self {
            WdaError::Answered { error, .. } => Some(error),
            _ => None,
        }
    }

    /// Whether WDA answered that the session is gone (it was replaced or WDA restarted).
    pub fn session_gone(&self) -> bool {
        self.wda_error() == Some("invalid session id")
    }
}

/// The HTTP method of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST` with a JSON body.
    Post,
    /// `DELETE`.
    Delete,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Delete => "DELETE",
        }
    }
}

/// One WebDriverAgent.
#[derive(Debug, Clone)]
pub struct Wda {
    url: WdaUrl,
}

impl Wda {
    /// The WDA at `url`.
    pub fn new(url: WdaUrl) -> Wda {
        Wda { url }
    }

    /// Its address.
    pub fn url(&self) -> &WdaUrl {
        &self.url
    }

    /// `METHOD PATH` with `body` (for a POST; `{}` when `None`), waiting at most `timeout`.
    /// Returns the envelope's `value`.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<Value, WdaError> {
        let name = method.name();
        match tokio::time::timeout(timeout, self.exchange(method, path, body)).await {
            Ok(answer) => answer,
            Err(_) => Err(WdaError::Timeout {
                method: name,
                path: path.to_owned(),
                ms: timeout.as_millis(),
            }),
        }
    }

    async fn exchange(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, WdaError> {
        let name = method.name();
        let garbled = |reason: String| WdaError::Garbled {
            method: name,
            path: path.to_owned(),
            reason,
        };
        let host = dialled_host(&self.url.host, false);
        let mut stream = TcpStream::connect((host.trim_matches(['[', ']']), self.url.port))
            .await
            .map_err(|e| WdaError::Unreachable {
                url: self.url.display(),
                reason: e.to_string(),
            })?;
        let payload = match method {
            Method::Post => serde_json::to_vec(body.unwrap_or(&Value::Object(Default::default())))
                .expect("JSON values serialise"),
            Method::Get | Method::Delete => Vec::new(),
        };
        let mut request = format!(
            "{name} {}{path} HTTP/1.1\r\nHost: {}:{}\r\nAccept: application/json\r\nConnection: close\r\n",
            self.url.prefix, self.url.host, self.url.port
        );
        if method == Method::Post {
            request.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                payload.len()
            ));
        }
        request.push_str("\r\n");
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(&payload);
        stream
            .write_all(&bytes)
            .await
            .map_err(|e| WdaError::Unreachable {
                url: self.url.display(),
                reason: e.to_string(),
            })?;
        let (status, body) = read_response(&mut stream).await.map_err(garbled)?;
        let envelope: Value = serde_json::from_slice(&body)
            .map_err(|e| garbled(format!("not JSON ({e}), HTTP status {status}")))?;
        let value = envelope.get("value").cloned().unwrap_or(Value::Null);
        let error = value
            .as_object()
            .and_then(|v| v.get("error"))
            .and_then(Value::as_str);
        if (200..300).contains(&status) && error.is_none() {
            return Ok(value);
        }
        // WDA's unknown-route answer echoes the request's body ("… with parameters {…}"), which
        // for typing is the typed text: it is cut off, never passed on.
        let message = value.get("message").and_then(Value::as_str).unwrap_or("");
        let message = message
            .split(" with parameters")
            .next()
            .unwrap_or("")
            .chars()
            .take(300)
            .collect();
        Err(WdaError::Answered {
            method: name,
            path: path.to_owned(),
            status,
            error: error.unwrap_or("unknown error").chars().take(80).collect(),
            message,
        })
    }
}

/// Reads an HTTP/1.1 response: its status and its body (by `Content-Length`, chunked, or to
/// the end of the connection), at most [`MAX_RESPONSE`] bytes.
async fn read_response(stream: &mut TcpStream) -> Result<(u16, Vec<u8>), String> {
    let mut buffer = Vec::with_capacity(8 * 1024);
    let head_end = loop {
        if let Some(at) = find(&buffer, b"\r\n\r\n") {
            break at;
        }
        if buffer.len() > MAX_HEAD {
            return Err("its head was too long".into());
        }
        let mut chunk = [0u8; 8 * 1024];
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the connection closed before an answer".into());
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| "no HTTP status line".to_owned())?;
    let mut length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| format!("a bad Content-Length {value:?}"))?,
            );
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        }
    }
    if length.is_some_and(|n| n > MAX_RESPONSE) {
        return Err(format!("it was larger than {MAX_RESPONSE} bytes"));
    }
    let mut body = buffer[head_end + 4..].to_vec();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        if let Some(n) = length
            && body.len() >= n
        {
            body.truncate(n);
            break;
        }
        if body.len() > MAX_RESPONSE + 64 * 1024 {
            return Err(format!("it was larger than {MAX_RESPONSE} bytes"));
        }
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            if length.is_some() {
                return Err("the connection closed in the middle of the answer".into());
            }
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    if chunked {
        body = dechunk(&body)?;
    }
    Ok((status, body))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A chunked body's data.
fn dechunk(mut body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = find(body, b"\r\n").ok_or("a chunk without its size line")?;
        let size_text = String::from_utf8_lossy(&body[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| format!("a bad chunk size {size_text:?}"))?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if size > MAX_RESPONSE
            || out.len() + size > MAX_RESPONSE
            || body.len() < size.saturating_add(2)
        {
            return Err("a chunk longer than what came, or than an answer may be".into());
        }
        out.extend_from_slice(&body[..size]);
        body = &body[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wda_urls_are_plain_http_on_loopback_unless_remote_is_allowed() {
        let url = WdaUrl::parse("http://127.0.0.1:8100", false).unwrap();
        assert_eq!(url.display(), "http://127.0.0.1:8100");
        assert_eq!(
            WdaUrl::parse("http://localhost", false).unwrap().display(),
            "http://localhost:8100"
        );
        assert_eq!(
            WdaUrl::parse("http://[::1]:8101/wda/", false)
                .unwrap()
                .display(),
            "http://[::1]:8101/wda"
        );
        for bad in [
            "https://127.0.0.1:8100",
            "ws://127.0.0.1:8100",
            "127.0.0.1:8100",
            "http://user:pw@127.0.0.1:8100",
            "http://127.0.0.1:0",
            "http://127.0.0.1:99999",
            "http://:8100",
            "http://192.168.1.5:8100",
            "http://[::1",
            "http://127.0.0.1:+8100",
            "http://127.0.0.1:8100/a b\r\nX: y",
            "http://127.0.0.1:8100/wda?x=1",
        ] {
            assert!(WdaUrl::parse(bad, false).is_err(), "{bad}");
        }
        assert!(WdaUrl::parse("http://192.168.1.5:8100", true).is_ok());
    }

    #[test]
    fn chunked_bodies_are_joined() {
        assert_eq!(
            dechunk(b"4\r\nWiki\r\n5;x=y\r\npedia\r\n0\r\n\r\n").unwrap(),
            b"Wikipedia"
        );
        assert!(dechunk(b"ff\r\nshort\r\n").is_err());
        // A hostile size (review finding, issue 27): refused, not an overflow's panic.
        assert!(dechunk(b"1\r\nA\r\nffffffffffffffff\r\nB\r\n0\r\n\r\n").is_err());
        assert!(dechunk(b"zz\r\n").is_err());
    }
}
