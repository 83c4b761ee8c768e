//! Agent sessions over MCP streamable HTTP, as plain JSON-RPC on HTTP/1.1 keep-alive: an
//! `initialize` with the account's `agent` token, the `initialized` notification, then
//! `tools/call`s carrying the `Mcp-Session-Id`, each answered as an SSE stream that ends with the
//! result. Written on reqwest rather than rmcp's client so that the load generator's own cost per
//! call stays small beside the hub's: it shares the machine's cores with the hub it measures.
//!
//! The soak's sessions ask for the result envelope (so a failure's code is read from
//! `structuredContent`, not parsed from text), time each call against a limit of their own and
//! cancel calls with `notifications/cancelled` ([`Session::call_timed`],
//! [`Session::call_and_cancel`]). There is no Unix-socket transport here: the hosted hub serves
//! MCP over streamable HTTP only.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long one call may take before the load tool counts it failed.
const CALL_LIMIT: Duration = Duration::from_secs(30);

/// How a call ended ([`Session::outcome`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The tool succeeded.
    Done,
    /// The tool failed with an error envelope.
    Refused {
        /// Its code (`BROWSER_DISCONNECTED`, …).
        code: String,
        /// Whether it says the action may have happened (`actionMayHaveOccurred`).
        may_have_acted: bool,
        /// The text the agent reads.
        text: String,
    },
    /// No tool answer: the HTTP request, the session or the JSON-RPC call failed.
    Failed(String),
}

/// One MCP session.
pub struct Session {
    client: reqwest::Client,
    url: String,
    token: String,
    id: String,
    next: AtomicU64,
}

impl Session {
    /// `initialize` and `notifications/initialized` at the hub's `/mcp` with `token`, sending
    /// `host` (the public origin's) as `Host`. `connections`: how many calls this session
    /// makes at once (each keeps its own HTTP connection).
    pub async fn open(
        addr: SocketAddr,
        host: &str,
        token: &str,
        connections: usize,
    ) -> Result<Session, String> {
        Session::open_as(addr, host, token, connections, false).await
    }

    /// [`Session::open`] declaring the `tabwire/envelope` capability: failures then carry their
    /// code in `structuredContent`.
    pub async fn open_with_envelope(
        addr: SocketAddr,
        host: &str,
        token: &str,
        connections: usize,
    ) -> Result<Session, String> {
        Session::open_as(addr, host, token, connections, true).await
    }

    async fn open_as(
        addr: SocketAddr,
        host: &str,
        token: &str,
        connections: usize,
        envelope: bool,
    ) -> Result<Session, String> {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::HOST, host.parse().map_err(|_| "bad host")?);
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .no_proxy()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(connections)
            .http1_only()
            .build()
            .map_err(|e| e.to_string())?;
        let mut session = Session {
            client,
            url: format!("http://{addr}/mcp"),
            token: token.to_owned(),
            id: String::new(),
            next: AtomicU64::new(2),
        };
        let mut initialize = crate::hosted::initialize_body();
        if envelope {
            let mut experimental = serde_json::Map::new();
            experimental.insert(
                tabwire_protocol::local::ENVELOPE_CAPABILITY.to_owned(),
                json!({}),
            );
            initialize["params"]["capabilities"] = json!({ "experimental": experimental });
        }
        let response = session.post(&initialize, None).await?;
        let status = response.status();
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let body = response.text().await.map_err(|e| e.to_string())?;
        let Some(id) = id.filter(|_| status.is_success()) else {
            return Err(format!("initialize: HTTP {status}: {body}"));
        };
        session.id = id;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = session.post(&initialized, Some(&session.id)).await?;
        if !response.status().is_success() {
            return Err(format!(
                "notifications/initialized: HTTP {}",
                response.status()
            ));
        }
        Ok(session)
    }

    async fn post(&self, body: &Value, session: Option<&str>) -> Result<reqwest::Response, String> {
        let mut request = self
            .client
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(session) = session {
            request = request
                .header("Mcp-Session-Id", session)
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        request.send().await.map_err(|e| format!("POST /mcp: {e}"))
    }

    /// Calls `tool` with `arguments`; `Err` with a line saying why when the HTTP request, the
    /// JSON-RPC call or the tool failed.
    pub async fn call(&self, tool: &str, arguments: Value) -> Result<(), String> {
        match self.outcome(tool, arguments).await {
            Outcome::Done => Ok(()),
            Outcome::Refused { text, .. } => Err(format!("tool error: {}", cut(&text))),
            Outcome::Failed(why) => Err(why),
        }
    }

    /// Calls `tool` with `arguments` and says how it ended: the tool's error code apart from
    /// failures of HTTP or JSON-RPC (a replica that died, a session it no longer knows).
    pub async fn outcome(&self, tool: &str, arguments: Value) -> Outcome {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let body = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}
        });
        let exchange = async {
            let response = self.post(&body, Some(&self.id)).await?;
            let status = response.status();
            let text = response.text().await.map_err(|e| format!("body: {e}"))?;
            if !status.is_success() {
                return Err(format!("HTTP {status}: {}", cut(&text)));
            }
            Ok(text)
        };
        let text = match tokio::time::timeout(CALL_LIMIT, exchange).await {
            Ok(Ok(text)) => text,
            Ok(Err(why)) => return Outcome::Failed(why),
            Err(_) => {
                return Outcome::Failed(format!("no answer within {} s", CALL_LIMIT.as_secs()));
            }
        };
        let Some(message) = answer_of(&text, id) else {
            return Outcome::Failed(format!("no answer in: {}", cut(&text)));
        };
        if let Some(error) = message.get("error") {
            return Outcome::Failed(format!("JSON-RPC error: {error}"));
        }
        let result = &message["result"];
        if result["isError"] == true {
            let error = &result["structuredContent"]["error"];
            return Outcome::Refused {
                code: error["code"].as_str().unwrap_or("").to_owned(),
                may_have_acted: error["actionMayHaveOccurred"] == true,
                text: result["content"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            };
        }
        Outcome::Done
    }

    /// Calls `tool` with `arguments`, waiting at most `limit` for the whole answer: how it ended
    /// and how long it took. Never fails: every way a call can end is a [`Called`].
    pub async fn call_timed(&self, tool: &str, arguments: Value, limit: Duration) -> Called {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let began = Instant::now();
        let body = call_body(id, tool, arguments);
        let exchange = self.exchange(&body);
        let outcome = tokio::time::timeout(limit, exchange).await;
        Called::read(outcome, id, began.elapsed())
    }

    /// Calls `tool`, and after `after` sends `notifications/cancelled` for it; then waits at most
    /// `limit` (from the call's start) for the call's answer stream to end. A cancelled call is
    /// owed no answer (MCP): the hub ends its stream with none, which is `CANCELLED` here. A
    /// stream still open at the limit is `NO_ANSWER` with [`Called::no_answer`]: the hub holds
    /// the call past its deadline for nobody.
    pub async fn call_and_cancel(
        &self,
        tool: &str,
        arguments: Value,
        after: Duration,
        limit: Duration,
    ) -> Called {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let began = Instant::now();
        let body = call_body(id, tool, arguments);
        let exchange = self.exchange(&body);
        tokio::pin!(exchange);
        let early = tokio::select! {
            done = &mut exchange => Some(done),
            () = tokio::time::sleep(after) => None,
        };
        if let Some(done) = early {
            return Called::read(Ok(done), id, began.elapsed());
        }
        let cancelled = json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "the soak cancels a few calls"}
        });
        let told = match self.post(&cancelled, Some(&self.id)).await {
            Ok(response) if response.status().is_success() => {
                let _ = response.bytes().await;
                None
            }
            Ok(response) => Some(format!(
                "notifications/cancelled: HTTP {}",
                response.status()
            )),
            Err(error) => Some(format!("notifications/cancelled: {error}")),
        };
        let rest = limit.saturating_sub(began.elapsed());
        let outcome = tokio::time::timeout(rest, &mut exchange).await;
        let mut called = match outcome {
            Ok(done) => {
                let mut called = Called::read(Ok(done), id, began.elapsed());
                // The hub ends a cancelled call's stream with no answer in it (none is owed).
                if called.error.as_deref() == Some("UNREADABLE") {
                    called.error = Some("CANCELLED".to_owned());
                    called.detail = "the stream ended with no answer after the cancel".into();
                }
                called
            }
            // The stream stayed open past the limit: the hub holds the call for nobody.
            Err(_) => Called {
                error: Some("NO_ANSWER".to_owned()),
                detail: "the stream stayed open after the cancel, past the limit".to_owned(),
                bytes: 0,
                took: began.elapsed(),
                no_answer: true,
            },
        };
        if let Some(told) = told {
            called.error = Some("CANCEL_NOT_SENT".to_owned());
            called.detail = told;
        }
        called
    }

    /// One POST of `body` in this session, read to its end: the body, or why there is none.
    async fn exchange(&self, body: &Value) -> Result<String, String> {
        let response = self.post(body, Some(&self.id)).await?;
        let status = response.status();
        let text = response.text().await.map_err(|e| format!("body: {e}"))?;
        if !status.is_success() {
            return Err(format!("HTTP {}: {}", status.as_u16(), cut(&text)));
        }
        Ok(text)
    }

    /// Ends the session (`DELETE /mcp`).
    pub async fn close(&self) {
        let _ = self
            .client
            .delete(&self.url)
            .bearer_auth(&self.token)
            .header("Mcp-Session-Id", &self.id)
            .send()
            .await;
    }
}

/// The body of `tools/call` number `id`.
fn call_body(id: u64, tool: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}
    })
}

/// How one call ended.
#[derive(Debug, Clone)]
pub struct Called {
    /// `None` when it succeeded; else the tool error's code (`BROWSER_DISCONNECTED`), or
    /// `HTTP 429`, `JSON-RPC`, `NO_ANSWER` (the limit passed), `TRANSPORT` (the connection
    /// failed), `UNREADABLE` (no answer with the call's ID in the body).
    pub error: Option<String>,
    /// A line saying more about the error.
    pub detail: String,
    /// Bytes of the answer's body.
    pub bytes: usize,
    /// From sending the call to the end of its answer (or to the limit).
    pub took: Duration,
    /// The limit passed with no answer.
    pub no_answer: bool,
}

impl Called {
    fn read(
        outcome: Result<Result<String, String>, tokio::time::error::Elapsed>,
        id: u64,
        took: Duration,
    ) -> Called {
        let failed = |code: &str, detail: String| Called {
            error: Some(code.to_owned()),
            detail,
            bytes: 0,
            took,
            no_answer: false,
        };
        let text = match outcome {
            Err(_) => {
                let mut called = failed("NO_ANSWER", "the limit passed with no answer".into());
                called.no_answer = true;
                return called;
            }
            Ok(Err(error)) if error.starts_with("HTTP ") => {
                let code = error.split(':').next().unwrap_or("HTTP").to_owned();
                return failed(&code, error);
            }
            Ok(Err(error)) => return failed("TRANSPORT", error),
            Ok(Ok(text)) => text,
        };
        let Some(message) = answer_of(&text, id) else {
            return failed("UNREADABLE", format!("no answer in: {}", cut(&text)));
        };
        let mut called = Called {
            error: None,
            detail: String::new(),
            bytes: text.len(),
            took,
            no_answer: false,
        };
        if let Some(error) = message.get("error") {
            called.error = Some("JSON-RPC".to_owned());
            called.detail = cut(&error.to_string());
        } else if message["result"]["isError"] == true {
            let result = &message["result"];
            let said = result["content"][0]["text"].as_str().unwrap_or("");
            let code = result["structuredContent"]["error"]["code"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| said.split(':').next().map(str::to_owned))
                .unwrap_or_default();
            called.error = Some(code);
            called.detail = cut(said);
        }
        called
    }
}

/// The JSON-RPC answer with `id` in a body: an SSE stream's `data:` lines, or plain JSON.
fn answer_of(body: &str, id: u64) -> Option<Value> {
    let is_ours = |message: &Value| message.get("id").and_then(Value::as_u64) == Some(id);
    if let Ok(message) = serde_json::from_str::<Value>(body) {
        return is_ours(&message).then_some(message);
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(is_ours)
}

/// At most a line's worth of `text`, for error samples.
fn cut(text: &str) -> String {
    text.chars()
        .take(160)
        .collect::<String>()
        .replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_ends_with_its_tool_errors_code_or_the_transports() {
        let took = Duration::from_millis(3);
        let failed = r#"data: {"jsonrpc":"2.0","id":4,"result":{"isError":true,
            "content":[{"type":"text","text":"BROWSER_DISCONNECTED: gone"}],
            "structuredContent":{"ok":false,"error":{"code":"BROWSER_DISCONNECTED"}}}}"#
            .replace('\n', "");
        let called = Called::read(Ok(Ok(failed)), 4, took);
        assert_eq!(called.error.as_deref(), Some("BROWSER_DISCONNECTED"));
        let answered = r#"{"jsonrpc":"2.0","id":5,"result":{"content":[]}}"#.to_owned();
        let called = Called::read(Ok(Ok(answered.clone())), 5, took);
        assert_eq!((called.error, called.bytes), (None, answered.len()));
        let other = Called::read(Ok(Ok(answered)), 6, took);
        assert_eq!(other.error.as_deref(), Some("UNREADABLE"));
        let refused = Called::read(Ok(Err("HTTP 429: busy".into())), 7, took);
        assert_eq!(refused.error.as_deref(), Some("HTTP 429"));
    }

    #[test]
    fn the_answer_is_found_in_an_sse_stream_or_plain_json() {
        let sse = "id: 0\ndata:\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n\
                   data: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n\n";
        assert_eq!(answer_of(sse, 5).unwrap()["id"], 5);
        assert!(answer_of(sse, 6).is_none());
        assert_eq!(
            answer_of(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#, 3).unwrap()["id"],
            3
        );
    }
}
