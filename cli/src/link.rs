//! One MCP session with a hub, for the length of one invocation: over the local hub's Unix
//! socket, or over HTTPS to a hosted hub's `/mcp`. Both are rmcp's client, so a call means the
//! same on either path.
//!
//! The local path connects only after the shim's checks ([`tabwire_mcp::socket::connect`]:
//! the socket's directory is this user's and private, the listener runs as this user), then
//! speaks plain MCP: no attach line, so the hub writes no control lines and the session is
//! anonymous. A browser or device chosen for a call travels as the tool's own `browserId` /
//! `deviceId` argument (SPEC §3's explicit routing), which works the same over stateless HTTP,
//! rather than as a session selection that would die with the session anyway.
//!
//! The hosted path probes with `server/discover` (the newest protocol, stateless: no session
//! to open or close) and falls back to `initialize` for a hub that does not know it.

use std::path::Path;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProtocolVersion, Tool,
};
use rmcp::service::{RunningService, ServiceError};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use tabwire_mcp::socket::{Failure, Refusal};

use crate::error::CliError;
use crate::hosted::HostedHub;

/// The name the CLI gives itself in `initialize` (tab leases and the audit log show it).
pub const CLIENT_NAME: &str = "tabwire-cli";

/// The client side of the session: it introduces itself and asks for results' structured
/// envelope, which `--output json` prints and `tabwire select` reads.
#[derive(Clone, Default)]
pub struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.experimental = Some(
            [(
                tabwire_protocol::local::ENVELOPE_CAPABILITY.to_owned(),
                Default::default(),
            )]
            .into(),
        );
        ClientConfig::new(
            capabilities,
            Implementation::new(CLIENT_NAME, env!("CARGO_PKG_VERSION")),
        )
    }
}

/// Why the local socket gave no session.
#[derive(Debug)]
pub enum LocalFailure {
    /// Nothing answers there (yet): a hub may be started.
    Unreachable(std::io::Error),
    /// Something answers that is not safely this user's hub: never talked to.
    Refused(Refusal),
    /// A hub answered but the MCP handshake failed.
    Handshake(String),
}

/// An open session.
pub struct Link {
    service: RunningService<RoleClient, Client>,
    /// Where it goes, for messages.
    pub place: String,
}

/// What a tool call came back with.
pub enum Called {
    /// The tool ran (it may have failed: `isError`).
    Result(CallToolResult),
    /// The hub refused the request at the protocol level (JSON-RPC error).
    Refused {
        /// The JSON-RPC error code.
        code: i32,
        /// The hub's message.
        message: String,
    },
}

impl Link {
    /// Opens a session with the local hub at `socket`, or, when nothing answers there, at
    /// `also` (the default socket's home fallback: `tabwire_mcp::socket::connect_either`).
    pub async fn local(socket: &Path, also: Option<&Path>) -> Result<Link, LocalFailure> {
        let (stream, socket) = tabwire_mcp::socket::connect_either(socket, also)
            .await
            .map_err(|failure| match failure {
                Failure::Unreachable(error) => LocalFailure::Unreachable(error),
                Failure::Refused(refusal) => LocalFailure::Refused(refusal),
            })?;
        let service = Client
            .serve(stream)
            .await
            .map_err(|error| LocalFailure::Handshake(error.to_string()))?;
        Ok(Link {
            service,
            place: socket.display().to_string(),
        })
    }

    /// Opens a session with a hosted hub.
    pub async fn hosted(hub: &HostedHub) -> Result<Link, CliError> {
        let transport = hub.transport()?;
        let lifecycle = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: None,
        };
        let service = Client
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .map_err(|error| {
                CliError::connection(format!(
                    "cannot open an MCP session with {}: {error}; check --url and the token \
                     (TABWIRE_TOKEN)",
                    hub.url
                ))
            })?;
        Ok(Link {
            service,
            place: hub.url.clone(),
        })
    }

    /// The tools the hub lists for this session.
    pub async fn tools(&self) -> Result<Vec<Tool>, CliError> {
        self.service
            .list_all_tools()
            .await
            .map_err(|error| self.broken("tools/list", error))
    }

    /// Every tool the hub has: the opt-in groups are listed first (`show_tools` with every
    /// group its schema names). Over stateless HTTP a listing lasts one request, so there the
    /// default listing is all there is.
    pub async fn all_tools(&self) -> Result<Vec<Tool>, CliError> {
        let listed = self.tools().await?;
        self.all_tools_after(listed).await
    }

    /// [`Link::all_tools`] from a default listing the caller already has.
    pub async fn all_tools_after(&self, listed: Vec<Tool>) -> Result<Vec<Tool>, CliError> {
        let groups = listed
            .iter()
            .find(|tool| tool.name == "show_tools")
            .and_then(|tool| {
                tool.input_schema
                    .get("properties")?
                    .get("groups")?
                    .get("items")?
                    .get("enum")
                    .cloned()
            });
        let Some(Value::Array(groups)) = groups else {
            return Ok(listed);
        };
        let mut arguments = Map::new();
        arguments.insert("groups".into(), Value::Array(groups));
        match self.call("show_tools", arguments).await? {
            Called::Result(result) if result.is_error != Some(true) => self.tools().await,
            _ => Ok(listed),
        }
    }

    /// Calls a tool.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<Called, CliError> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        match self.service.call_tool(params).await {
            Ok(result) => Ok(Called::Result(result)),
            Err(ServiceError::McpError(error)) => Ok(Called::Refused {
                code: error.code.0,
                message: error.message.to_string(),
            }),
            Err(error) => Err(self.broken(&format!("the call of {tool}"), error)),
        }
    }

    /// Calls a hub tool that must succeed (listing browsers, say) and returns its `data`.
    pub async fn data_of(&self, tool: &str) -> Result<Value, CliError> {
        match self.call(tool, Map::new()).await? {
            Called::Result(result) => {
                let envelope = result.structured_content.unwrap_or(Value::Null);
                if envelope["ok"] == json!(true) {
                    Ok(envelope["data"].clone())
                } else {
                    Err(CliError::connection(format!(
                        "{tool} failed on {}: {}",
                        self.place, envelope["error"]["message"]
                    )))
                }
            }
            Called::Refused { code, message } => Err(CliError::Rpc { code, message }),
        }
    }

    /// Ends the session (over HTTP with a session, this deletes it on the hub).
    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }

    fn broken(&self, what: &str, error: ServiceError) -> CliError {
        CliError::connection(format!(
            "the link to the hub at {} broke during {what} ({error}); if it was a tool call, it \
             may or may not have taken effect",
            self.place
        ))
    }
}
