//! A real MCP client (rmcp) talking to the hub through the real `tabwire-mcp` binary.

use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, Implementation, Tool};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

use crate::artifacts::artifacts;
use crate::hub::Hub;

const CALL_LIMIT: std::time::Duration = std::time::Duration::from_secs(90);

/// One MCP session. `H` is what the client tells the hub about itself at `initialize`
/// (`()`: rmcp's defaults; [`ClientConfig`]: a name of its own, see [`McpClient::connect_as`]).
pub struct McpClient<H: ClientHandler = ()> {
    service: RunningService<RoleClient, H>,
}

/// A tool's answer, split into what tests look at.
#[derive(Debug, Clone)]
pub struct Reply {
    /// MCP `isError`.
    pub is_error: bool,
    /// `structuredContent` (the `{ok, data | error}` envelope).
    pub structured: Value,
    /// The text content the model reads.
    pub text: String,
    /// The image content blocks (screenshots), in order.
    pub images: Vec<Image>,
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
    pub fn from_service(service: RunningService<RoleClient, ()>) -> McpClient {
        McpClient { service }
    }

    /// Starts `tabwire-mcp` against `hub` and completes the MCP handshake.
    pub async fn connect(hub: &Hub) -> McpClient {
        McpClient {
            service: serve_through_shim(hub, ()).await,
        }
    }

    /// [`McpClient::connect`] as a client that calls itself `name` at `initialize` (two agents'
    /// sessions, told apart by their client's name).
    pub async fn connect_as(hub: &Hub, name: &str) -> McpClient<ClientConfig> {
        let config = ClientConfig::new(Default::default(), Implementation::new(name, "1.0"));
        McpClient {
            service: serve_through_shim(hub, config).await,
        }
    }
}

/// Starts `tabwire-mcp` against `hub` and completes the MCP handshake as `handler`.
async fn serve_through_shim<H: ClientHandler>(
    hub: &Hub,
    handler: H,
) -> RunningService<RoleClient, H> {
    {
        let mut command = tokio::process::Command::new(&artifacts().shim);
        command.arg("--socket").arg(&hub.socket);
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tabwire-mcp");
        if let Some(stderr) = stderr {
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    crate::logs::forward_log("shim", &line);
                }
            });
        }
        handler.serve(transport).await.expect("MCP handshake")
    }
}

impl<H: ClientHandler> McpClient<H> {
    /// Calls a tool; protocol-level failures panic.
    pub async fn call(&self, tool: &str, args: Value) -> Reply {
        self.try_call(tool, args)
            .await
            .unwrap_or_else(|error| panic!("{tool} failed at the protocol level: {error}"))
    }

    /// Calls a tool, returning protocol-level failures (such as the shim's "outcome unknown").
    pub async fn try_call(&self, tool: &str, args: Value) -> Result<Reply, ServiceError> {
        let Value::Object(args) = args else {
            panic!("tool arguments must be an object");
        };
        let call = self
            .service
            .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args));
        // No tool waits longer than 60 s; a hang beyond that is a bug, not a slow machine.
        let result = tokio::time::timeout(CALL_LIMIT, call)
            .await
            .unwrap_or_else(|_| panic!("{tool} did not answer within {CALL_LIMIT:?}"))?;
        let (text, images) = text_and_images(&result);
        Ok(Reply {
            is_error: result.is_error == Some(true),
            structured: result.structured_content.unwrap_or(Value::Null),
            text,
            images,
        })
    }

    /// `tools/list`.
    pub async fn list_tools(&self) -> Vec<Tool> {
        self.service.list_all_tools().await.expect("tools/list")
    }
}
