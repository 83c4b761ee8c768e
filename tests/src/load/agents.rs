//! Agent sessions over MCP streamable HTTP, as plain JSON-RPC on HTTP/1.1 keep-alive: an
//! `initialize` with the account's `agent` token, the `initialized` notification, then
//! `tools/call`s carrying the `Mcp-Session-Id`, each answered as an SSE stream that ends with the
//! result. Written on reqwest rather than rmcp's client so that the load generator's own cost per
//! call stays small beside the hub's: it shares the machine's cores with the hub it measures.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

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
        let response = session
            .post(&crate::hosted::initialize_body(), None)
            .await?;
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
