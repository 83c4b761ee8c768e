//! A real MCP client (rmcp) talking to the hub through the real `tabwire-mcp` binary.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProgressNotificationParam, Tool,
};
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

use crate::artifacts::artifacts;
use crate::hub::Hub;

const CALL_LIMIT: std::time::Duration = std::time::Duration::from_secs(90);

/// One MCP session.
pub struct McpClient {
    service: RunningService<RoleClient, Listener>,
    heard: Arc<Heard>,
}

/// The client side of a session: introduces itself under a name and keeps the notifications
/// the server sends. It asks for results' structured envelope (the tests read `data` and error
/// codes from it), unless made with [`Listener::model_client`].
#[derive(Clone)]
pub struct Listener {
    name: String,
    heard: Arc<Heard>,
    /// Whether it declares the `tabwire/envelope` capability.
    envelope: bool,
}

/// What the server told a client without being asked.
#[derive(Debug, Default)]
pub struct Heard {
    /// `notifications/tools/list_changed`, counted.
    pub tool_list_changed: std::sync::atomic::AtomicUsize,
    /// `notifications/progress`, in arrival order.
    pub progress: Mutex<Vec<ProgressNotificationParam>>,
}

impl Listener {
    /// A client that calls itself `name` in `initialize`.
    pub fn named(name: &str) -> Listener {
        Listener {
            name: name.to_owned(),
            heard: Arc::default(),
            envelope: true,
        }
    }

    /// A client like the ones models use (Claude Code, VS Code, Cursor): it declares no
    /// tabwire capability, so results carry their text (and images) alone.
    pub fn model_client(name: &str) -> Listener {
        Listener {
            envelope: false,
            ..Listener::named(name)
        }
    }
}

impl Default for Listener {
    fn default() -> Self {
        Listener::named("tabwire-e2e")
    }
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.envelope {
            capabilities.experimental = Some(
                [(
                    tabwire_protocol::local::ENVELOPE_CAPABILITY.to_owned(),
                    Default::default(),
                )]
                .into(),
            );
        }
        ClientConfig::new(
            capabilities,
            Implementation::new(self.name.clone(), "1.0.0"),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.heard
            .tool_list_changed
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.heard.progress.lock().unwrap().push(params);
    }
}

/// A tool's answer, split into what tests look at.
#[derive(Debug, Clone)]
pub struct Reply {
    /// MCP `isError`.
    pub is_error: bool,
    /// `structuredContent` (the `{ok, data | error}` envelope).
    pub structured: Value,
    /// The text content the model reads, without the fence lines around page text (checked
    /// to be well formed on every reply: see [`unfenced`]).
    pub text: String,
    /// The text content exactly as the model reads it, fence lines included.
    pub fenced: String,
    /// The image content blocks (screenshots), in order.
    pub images: Vec<Image>,
}

/// What the fence lines around page text start with, and what no other text of a result holds.
pub const FENCE_MARK: char = '⟦';

/// The boundary of a result's fence (`⟦page ID⟧` … `⟦/page ID⟧`), if it has one; panics unless
/// the fence is well formed: at most one opening line, then one closing line with the same
/// 8-hex-digit ID, and no other [`FENCE_MARK`] anywhere.
pub fn fence_id(text: &str) -> Option<String> {
    let fences: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with(FENCE_MARK))
        .collect();
    assert_eq!(
        text.matches(FENCE_MARK).count(),
        fences.len(),
        "a fence mark outside a fence line:\n{text}"
    );
    match fences.as_slice() {
        [] => None,
        [open, close] => {
            let id = open
                .strip_prefix("⟦page ")
                .and_then(|rest| rest.strip_suffix('⟧'))
                .unwrap_or_else(|| panic!("not an opening fence: {open}"));
            assert!(
                id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()),
                "{open}"
            );
            assert_eq!(*close, format!("⟦/page {id}⟧"), "{text}");
            Some(id.to_owned())
        }
        _ => panic!("more than one fence:\n{text}"),
    }
}

/// A result's text without its fence lines, after [`fence_id`] checked them.
pub fn unfenced(text: &str) -> String {
    if fence_id(text).is_none() {
        return text.to_owned();
    }
    text.lines()
        .filter(|line| !line.starts_with(FENCE_MARK))
        .collect::<Vec<_>>()
        .join("\n")
}

/// An MCP image content block.
#[derive(Debug, Clone)]
pub struct Image {
    /// The image, base64 as sent.
    pub data: String,
    /// Its MIME type, e.g. `image/webp`.
    pub mime_type: String,
}

/// A tool result's text blocks joined by newlines, and its image blocks.
pub fn text_and_images(result: &CallToolResult) -> (String, Vec<Image>) {
    let text = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    let images = result
        .content
        .iter()
        .filter_map(|block| block.as_image())
        .map(|image| Image {
            data: image.data.clone(),
            mime_type: image.mime_type.clone(),
        })
        .collect();
    (text, images)
}

impl Reply {
    /// `data` of a successful reply; panics with the error otherwise.
    pub fn data(&self) -> &Value {
        assert!(
            !self.is_error && self.structured["ok"] == true,
            "expected success, got: {}",
            self.text
        );
        &self.structured["data"]
    }

    /// The error code of a failed reply; panics on success.
    pub fn error_code(&self) -> &str {
        assert!(self.is_error, "expected an error, got: {}", self.text);
        assert_eq!(self.structured["ok"], false);
        self.structured["error"]["code"]
            .as_str()
            .expect("error envelope has a code")
    }

    /// The error envelope's body.
    pub fn error(&self) -> &Value {
        assert!(self.is_error, "expected an error, got: {}", self.text);
        &self.structured["error"]
    }

    /// The one image block of a reply; panics when there is none or several.
    pub fn image(&self) -> &Image {
        assert_eq!(
            self.images.len(),
            1,
            "expected one image block; text: {}; structured: {}",
            self.text,
            self.structured
        );
        &self.images[0]
    }

    /// Whether a failure says the action may have taken effect (`actionMayHaveOccurred`,
    /// absent when false); panics on success.
    pub fn may_have_acted(&self) -> bool {
        self.error()["actionMayHaveOccurred"] == true
    }
}

impl McpClient {
    /// Wraps a running rmcp client (e.g. one over streamable HTTP, see [`crate::hosted`]).
    pub fn from_service(service: RunningService<RoleClient, Listener>) -> McpClient {
        let heard = service.service().heard.clone();
        McpClient { service, heard }
    }

    /// What the server has told this client without being asked so far.
    pub fn heard(&self) -> &Heard {
        &self.heard
    }

    /// Starts `tabwire-mcp` against `hub` and completes the MCP handshake.
    pub async fn connect(hub: &Hub) -> McpClient {
        McpClient::connect_as(hub, Listener::default()).await
    }

    /// [`McpClient::connect`] with a client of one's own (its name, what it hears).
    pub async fn connect_as(hub: &Hub, listener: Listener) -> McpClient {
        McpClient::connect_shim(&artifacts().shim, &hub.socket, listener)
            .await
            .expect("MCP handshake")
    }

    /// Starts the shim at `shim` against the hub socket `socket` (a hub the tests did not
    /// start, such as the first-run check's) and completes the MCP handshake.
    pub async fn connect_shim(
        shim: &Path,
        socket: &Path,
        listener: Listener,
    ) -> Result<McpClient, String> {
        let mut command = tokio::process::Command::new(shim);
        command.arg("--socket").arg(socket);
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("start {}: {error}", shim.display()))?;
        if let Some(stderr) = stderr {
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    crate::logs::forward_log("shim", &line);
                }
            });
        }
        let service = listener
            .serve(transport)
            .await
            .map_err(|error| format!("MCP handshake: {error}"))?;
        Ok(McpClient::from_service(service))
    }

    /// Calls a tool; protocol-level failures panic.
    pub async fn call(&self, tool: &str, args: Value) -> Reply {
        self.try_call(tool, args)
            .await
            .unwrap_or_else(|error| panic!("{tool} failed at the protocol level: {error}"))
    }

    /// Calls a tool, returning protocol-level failures (such as the shim's "outcome unknown").
    pub async fn try_call(&self, tool: &str, args: Value) -> Result<Reply, ServiceError> {
        let result = self.try_call_raw(tool, args).await?;
        let (fenced, images) = text_and_images(&result);
        Ok(Reply {
            is_error: result.is_error == Some(true),
            structured: result.structured_content.unwrap_or(Value::Null),
            text: unfenced(&fenced),
            fenced,
            images,
        })
    }

    /// Calls a tool and returns the result as the client received it.
    pub async fn call_raw(&self, tool: &str, args: Value) -> CallToolResult {
        self.try_call_raw(tool, args)
            .await
            .unwrap_or_else(|error| panic!("{tool} failed at the protocol level: {error}"))
    }

    async fn try_call_raw(&self, tool: &str, args: Value) -> Result<CallToolResult, ServiceError> {
        let Value::Object(args) = args else {
            panic!("tool arguments must be an object");
        };
        // rmcp's client puts a progress token of its own on every request, so a tool's
        // progress notifications reach `heard`.
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let call = self.service.call_tool(params);
        // No tool waits longer than 60 s; a hang beyond that is a bug, not a slow machine.
        tokio::time::timeout(CALL_LIMIT, call)
            .await
            .unwrap_or_else(|_| panic!("{tool} did not answer within {CALL_LIMIT:?}"))
    }

    /// Starts a tool call and returns it in flight, for a test that cancels it.
    pub async fn start_call(&self, tool: &str, args: Value) -> InFlight {
        let Value::Object(args) = args else {
            panic!("tool arguments must be an object");
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let request =
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
        let handle = self
            .service
            .send_cancellable_request(request, rmcp::service::PeerRequestOptions::no_options())
            .await
            .unwrap_or_else(|error| panic!("{tool} was not sent: {error}"));
        InFlight { handle }
    }

    /// `tools/list`.
    pub async fn list_tools(&self) -> Vec<Tool> {
        self.service.list_all_tools().await.expect("tools/list")
    }
}

/// A tool call sent and not answered yet ([`McpClient::start_call`]).
pub struct InFlight {
    handle: rmcp::service::RequestHandle<RoleClient>,
}

impl InFlight {
    /// Cancels the call (`notifications/cancelled`): the server answers it no more.
    pub async fn cancel(self) {
        self.handle
            .cancel(Some("the test cancelled it".into()))
            .await
            .expect("notifications/cancelled sent");
    }
}

/// The bytes of the embedded resource (a blob) a tool's result carries, and its MIME type.
pub fn embedded(result: &rmcp::model::CallToolResult) -> (Vec<u8>, String) {
    use base64::Engine;
    let (blob, mime_type) = result
        .content
        .iter()
        .find_map(|content| match content {
            rmcp::model::ContentBlock::Resource(resource) => match &resource.resource {
                rmcp::model::ResourceContents::BlobResourceContents {
                    blob, mime_type, ..
                } => Some((blob.clone(), mime_type.clone().unwrap_or_default())),
                _ => None,
            },
            _ => None,
        })
        .expect("an embedded blob");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .expect("an embedded blob's base64");
    (bytes, mime_type)
}
