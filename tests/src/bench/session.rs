//! One MCP session with a stdio server the benchmark started, measured the same way for every
//! server: rmcp as the client, the wire bytes of each response counted by [`WireMeter`], the
//! round trip timed around the call.
//!
//! The client asks for tabwire's result envelope (the benchmark drives tabwire by its `data`),
//! which a model's client does not: a response's size is counted without its
//! `structuredContent`, as such a client receives it. Servers that never send one (the peers)
//! are counted as they are.
//!
//! The server runs in its own process group (so a Ctrl-C at the terminal reaches the benchmark,
//! which then stops it) under a [`ProcessTree`] guard, so it and everything it started die with
//! the session even when the benchmark fails half-way. The child is spawned here rather than by
//! rmcp's `TokioChildProcess` only so its stdout can pass through the meter; the transport and
//! codec are rmcp's own.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};

use super::process_tree::ProcessTree;
use super::wire::{WireMeter, WireTap, response_bytes, response_chars};
use crate::client::{Image, Listener, text_and_images};

/// Longest wait for the MCP handshake (playwright-mcp starts node and loads Playwright).
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(60);
/// Longest wait for one call; a 2,000-row snapshot from the peer takes about a second.
const CALL_LIMIT: Duration = Duration::from_secs(90);
/// How long a server may take to exit once its stdin is closed.
const EXIT_LIMIT: Duration = Duration::from_secs(5);
/// Lines of the server's stderr kept for error messages.
const STDERR_TAIL: usize = 30;

/// A running stdio MCP server and the client session with it.
pub struct Session {
    /// Kills the server's process tree if the session is dropped before [`Session::close`]
    /// (declared first so it runs while the server is still alive and its tree can be read).
    tree: ProcessTree,
    /// The rmcp client.
    service: RunningService<RoleClient, Listener>,
    /// The server process, for a clean exit in [`Session::close`].
    child: Child,
    /// What the server sent, line by line.
    tap: WireTap,
    /// The end of the server's stderr, for error messages.
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Names the server in messages.
    label: String,
}

/// One tool call as the benchmark sees it.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// MCP `isError`.
    pub is_error: bool,
    /// `structuredContent` (`Null` when absent).
    pub structured: Value,
    /// The text content the model reads (text blocks joined by newlines).
    pub text: String,
    /// The image content blocks (screenshots), in order.
    pub images: Vec<Image>,
    /// Size of the JSON-RPC response line as the server sent it (without the newline), less
    /// the `structuredContent` only a client that asks for it receives.
    pub bytes: usize,
    /// Characters of that line (likewise): everything a model's client receives, for the
    /// token estimate.
    pub chars: usize,
    /// Client-side round trip: from sending the request to having the parsed result.
    pub elapsed: Duration,
}

impl Exchange {
    /// Characters of the text content (not bytes: a non-ASCII character is one).
    pub fn text_chars(&self) -> usize {
        self.text.chars().count()
    }

    /// `data` of a successful tabwire envelope.
    pub fn data(&self) -> Result<&Value> {
        if self.is_error || self.structured["ok"] != true {
            bail!("the call failed: {}", clip(&self.text));
        }
        Ok(&self.structured["data"])
    }
}

/// The size of a server's `tools/list`.
#[derive(Debug, Clone, Copy)]
pub struct ToolsList {
    /// Number of tools.
    pub tools: usize,
    /// Characters of the response(s) as received.
    pub chars: usize,
}

impl Session {
    /// Starts `command` as a stdio MCP server and completes the handshake.
    pub async fn start(label: &str, mut command: Command) -> Result<Session> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {label}"))?;
        let tree = ProcessTree::new(child.id().context("the server exited at once")?);
        let stdin = child.stdin.take().context("piped stdin")?;
        let stdout = child.stdout.take().context("piped stdout")?;
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(pipe) = child.stderr.take() {
            let tail = stderr.clone();
            let source = label.to_owned();
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(pipe).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    crate::logs::forward_log(&source, &line);
                    let mut tail = tail.lock().expect("stderr tail lock");
                    if tail.len() == STDERR_TAIL {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            });
        }
        let (meter, tap) = WireMeter::new(stdout);
        let client = Listener::named("tabwire-bench");
        let handshake = tokio::time::timeout(HANDSHAKE_LIMIT, client.serve((meter, stdin))).await;
        let service = match handshake {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => bail!(
                "MCP handshake with {label} failed: {error}{}",
                tail_of(&stderr)
            ),
            Err(_) => bail!(
                "{label} did not complete the MCP handshake within {HANDSHAKE_LIMIT:?}{}",
                tail_of(&stderr)
            ),
        };
        Ok(Session {
            tree,
            service,
            child,
            tap,
            stderr,
            label: label.to_owned(),
        })
    }

    /// Calls a tool and measures the exchange. A tool error is a normal [`Exchange`]
    /// (`is_error`); a protocol failure or a timeout is an error.
    pub async fn call(&self, tool: &str, args: Value) -> Result<Exchange> {
        let Value::Object(args) = args else {
            bail!("tool arguments must be an object");
        };
        let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        self.tap.clear();
        let started = Instant::now();
        let result = tokio::time::timeout(CALL_LIMIT, self.service.call_tool(request))
            .await
            .map_err(|_| {
                anyhow::anyhow!(
                    "{} did not answer {tool} within {CALL_LIMIT:?}{}",
                    self.label,
                    tail_of(&self.stderr)
                )
            })?
            .with_context(|| format!("{tool} failed at the protocol level ({})", self.label))?;
        let elapsed = started.elapsed();
        let lines = self.tap.take();
        let (bytes, responses) = response_bytes(&lines);
        if responses != 1 {
            bail!("expected one response to {tool} on the wire, saw {responses}");
        }
        let (text, images) = text_and_images(&result);
        // `,"structuredContent":{…}`: what a client that did not ask for it would not receive.
        let (envelope_bytes, envelope_chars) = match &result.structured_content {
            Some(structured) => {
                let member = format!(",\"structuredContent\":{structured}");
                (member.len(), member.chars().count())
            }
            None => (0, 0),
        };
        Ok(Exchange {
            is_error: result.is_error == Some(true),
            structured: result.structured_content.unwrap_or(Value::Null),
            text,
            images,
            bytes: bytes.saturating_sub(envelope_bytes),
            chars: response_chars(&lines).saturating_sub(envelope_chars),
            elapsed,
        })
    }

    /// `tools/list` (every page of it), sized as received.
    pub async fn tools_list(&self) -> Result<ToolsList> {
        self.tap.clear();
        let tools = self
            .service
            .list_all_tools()
            .await
            .with_context(|| format!("tools/list of {}", self.label))?;
        let lines = self.tap.take();
        if response_bytes(&lines).1 == 0 {
            bail!("tools/list of {} came from rmcp's cache", self.label);
        }
        let chars = response_chars(&lines);
        Ok(ToolsList {
            tools: tools.len(),
            chars,
        })
    }

    /// The input schema of `tool` as the server's `tools/list` gives it; `None` when it has no
    /// such tool.
    pub async fn input_schema(&self, tool: &str) -> Result<Option<Value>> {
        let tools = self
            .service
            .list_all_tools()
            .await
            .with_context(|| format!("tools/list of {}", self.label))?;
        Ok(tools
            .into_iter()
            .find(|listed| listed.name == tool)
            .map(|listed| Value::Object((*listed.input_schema).clone())))
    }

    /// Ends the session the way an MCP client does (closing the server's stdin), gives the
    /// server a moment to exit and close its browser, then kills whatever is left.
    pub async fn close(self) {
        let Session {
            mut tree,
            service,
            mut child,
            ..
        } = self;
        tree.remember_descendants();
        let _ = tokio::time::timeout(EXIT_LIMIT, service.cancel()).await;
        let _ = tokio::time::timeout(EXIT_LIMIT, child.wait()).await;
        tree.kill_all();
    }
}

/// The end of a server's stderr, formatted to follow an error message.
fn tail_of(stderr: &Mutex<VecDeque<String>>) -> String {
    let tail = stderr.lock().expect("stderr tail lock");
    if tail.is_empty() {
        String::new()
    } else {
        let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
        format!("\n  its stderr ends with:\n    {}", lines.join("\n    "))
    }
}

/// The start of a long text, for error messages.
pub fn clip(text: &str) -> String {
    const LIMIT: usize = 300;
    match text.char_indices().nth(LIMIT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
