//! `tabwire-hub config --client NAME`: the configuration an MCP client needs to use tabwire,
//! ready to paste. The snippet goes to stdout alone (a script can capture it); where to put it
//! goes to stderr.
//!
//! A local hub is reached through `tabwire-mcp`, the stdio server beside this executable,
//! named by its absolute path (with `--socket` passed on when one was given). A hosted hub
//! (`--url`) is reached over streamable HTTP at its `/mcp` with a bearer token: snippets carry
//! the URL and a placeholder or an environment variable for the token, never a token.
//!
//! Each client's format, from its own documentation:
//! - Claude Code: `claude mcp add [options] NAME -- COMMAND [ARGS…]`, and
//!   `claude mcp add --transport http NAME URL --header "…"`; options before the name
//!   (<https://code.claude.com/docs/en/mcp>).
//! - Claude Desktop: `claude_desktop_config.json`, `mcpServers.NAME.{command, args}`; the file
//!   takes local (stdio) servers only, and its remote connectors (Settings → Connectors) take
//!   no bearer token, so there is no hosted snippet for it
//!   (<https://modelcontextprotocol.io/quickstart/user>).
//! - Cursor: `~/.cursor/mcp.json`, `mcpServers.NAME.{command, args}` or `{url, headers}`, with
//!   `${env:NAME}` interpolated in `headers` (<https://cursor.com/docs/mcp>).
//! - VS Code: `mcp.json`, `servers.NAME.{type: "stdio", command, args}` or
//!   `{type: "http", url, headers}`, secrets through `inputs` and `${input:ID}`
//!   (<https://code.visualstudio.com/docs/copilot/reference/mcp-configuration>).
//! - Codex: `~/.codex/config.toml`, `[mcp_servers.NAME]` with `command`/`args`, or `url` and
//!   `bearer_token_env_var` (<https://developers.openai.com/codex/mcp>).
//! - Windsurf: `~/.codeium/windsurf/mcp_config.json`, `mcpServers.NAME.{command, args}` or
//!   `{serverUrl, headers}`, with `${env:NAME}` interpolated in `headers`
//!   (<https://docs.windsurf.com/windsurf/cascade/mcp>).
//! - Any other stdio client: the common `mcpServers` JSON; any streamable-HTTP client: the URL
//!   and the `Authorization` header.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use tabwire_hub::hosted::PublicOrigin;

/// The name the server gets in every client's configuration.
const SERVER: &str = "tabwire";
/// The environment variable hosted snippets read the token from.
const TOKEN_VARIABLE: &str = "TABWIRE_TOKEN";
/// What stands for the token where a client reads no environment variable.
const TOKEN_PLACEHOLDER: &str = "<token>";

/// `tabwire-hub config --client NAME [--socket PATH | --url URL]`.
#[derive(Args)]
pub struct ConfigArgs {
    /// The MCP client to configure.
    #[arg(long, value_enum)]
    client: Client,
    /// The socket the hub was given, passed on to tabwire-mcp (local mode).
    #[arg(long, env = "TABWIRE_SOCKET")]
    socket: Option<PathBuf>,
    /// A hosted hub: its public origin or its /mcp URL (https://hub.example/team). Snippets
    /// then name that URL and a token placeholder.
    #[arg(long, env = "TABWIRE_URL")]
    url: Option<String>,
}

/// The clients there are snippets for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Client {
    /// Claude Code: a `claude mcp add` line.
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Cursor: `mcp.json`.
    Cursor,
    /// VS Code: `mcp.json`.
    Vscode,
    /// Codex: `config.toml`.
    Codex,
    /// Windsurf: `mcp_config.json`.
    Windsurf,
    /// Any client that starts a stdio server from JSON.
    Stdio,
    /// Any streamable-HTTP client (hosted hubs).
    Http,
}

/// Which hub the client is to reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A local hub, through `tabwire-mcp`.
    Local {
        /// The absolute path of `tabwire-mcp`.
        shim: PathBuf,
        /// The socket to pass on, when not the default.
        socket: Option<PathBuf>,
    },
    /// A hosted hub's `/mcp` URL.
    Hosted {
        /// `https://host/prefix/mcp`.
        url: String,
    },
}

/// A snippet and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    /// What to paste or run.
    pub text: String,
    /// Where, for a person.
    pub place: String,
}

/// Runs `config`: exit code 2 for a combination with no snippet.
pub fn run(args: ConfigArgs) -> ExitCode {
    let target = match target(&args) {
        Ok(target) => target,
        Err(message) => {
            eprintln!("tabwire-hub config: {message}");
            return ExitCode::from(2);
        }
    };
    if let Target::Local { shim, .. } = &target
        && !shim.exists()
    {
        eprintln!(
            "note: {} does not exist yet; build it beside tabwire-hub (cargo build --release -p \
             tabwire-mcp)",
            shim.display()
        );
    }
    match snippet(args.client, &target) {
        Ok(snippet) => {
            eprintln!("{}", snippet.place);
            println!("{}", snippet.text);
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("tabwire-hub config: {message}");
            ExitCode::from(2)
        }
    }
}

/// The hub the arguments name: hosted with `--url`, else local through the `tabwire-mcp`
/// beside this executable.
fn target(args: &ConfigArgs) -> Result<Target, String> {
    if let Some(url) = &args.url {
        return hosted_url(url).map(|url| Target::Hosted { url });
    }
    let exe = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .map_err(|error| format!("cannot tell where tabwire-hub is: {error}"))?;
    let shim = exe
        .parent()
        .ok_or("tabwire-hub is in no directory")?
        .join("tabwire-mcp");
    let socket = match &args.socket {
        None => None,
        Some(path) => Some(absolute(path)?),
    };
    Ok(Target::Local { shim, socket })
}

fn absolute(path: &Path) -> Result<PathBuf, String> {
    std::path::absolute(path).map_err(|error| format!("{}: {error}", path.display()))
}

/// A hosted hub's `/mcp` URL from its public origin or the URL itself.
fn hosted_url(given: &str) -> Result<String, String> {
    let trimmed = given.trim().trim_end_matches('/');
    let origin = trimmed.strip_suffix("/mcp").unwrap_or(trimmed);
    let origin = PublicOrigin::parse(origin)
        .map_err(|invalid| format!("--url {given:?}: {}", invalid.why))?;
    // The snippet sends an agent token with every request: never in clear over a network.
    if !origin.private_in_transit() {
        return Err(format!(
            "--url {given:?}: the agent token would cross the network in clear; use https:// \
             (http:// only for a loopback host such as 127.0.0.1 behind a local proxy)"
        ));
    }
    Ok(format!("{origin}/mcp"))
}

/// The snippet of `client` for `target`, or why there is none.
pub fn snippet(client: Client, target: &Target) -> Result<Snippet, String> {
    match target {
        Target::Local { shim, socket } => local(client, shim, socket.as_deref()),
        Target::Hosted { url } => hosted(client, url),
    }
}

fn local(client: Client, shim: &Path, socket: Option<&Path>) -> Result<Snippet, String> {
    let command = shim.display().to_string();
    let args: Vec<String> = match socket {
        Some(socket) => vec!["--socket".into(), socket.display().to_string()],
        None => Vec::new(),
    };
    let mcp_servers =
        || pretty(&json!({"mcpServers": {SERVER: {"command": command, "args": args}}}));
    let (text, place) = match client {
        Client::ClaudeCode => {
            let mut line = format!("claude mcp add {SERVER} -- {}", shell_word(&command));
            for arg in &args {
                line.push(' ');
                line.push_str(&shell_word(arg));
            }
            (line, "Run (add --scope user to use it in every project):")
        }
        Client::ClaudeDesktop => (
            mcp_servers(),
            "Merge into claude_desktop_config.json (Settings → Developer → Edit Config), then \
             restart Claude Desktop:",
        ),
        Client::Cursor => (
            mcp_servers(),
            "Merge into ~/.cursor/mcp.json (or .cursor/mcp.json in a project):",
        ),
        Client::Vscode => (
            pretty(
                &json!({"servers": {SERVER: {"type": "stdio", "command": command, "args": args}}}),
            ),
            "Merge into .vscode/mcp.json (or MCP: Open User Configuration):",
        ),
        Client::Codex => (toml_table(&command, &args), "Add to ~/.codex/config.toml:"),
        Client::Windsurf => (
            mcp_servers(),
            "Merge into ~/.codeium/windsurf/mcp_config.json, then refresh Windsurf's MCP servers:",
        ),
        Client::Stdio => (
            mcp_servers(),
            "A stdio server: the client starts this command and speaks MCP on its stdin and stdout:",
        ),
        Client::Http => return Err(local_http_refusal()),
    };
    Ok(Snippet {
        text,
        place: place.to_owned(),
    })
}

fn hosted(client: Client, url: &str) -> Result<Snippet, String> {
    let env_header = format!("Bearer ${{env:{TOKEN_VARIABLE}}}");
    let (text, place) = match client {
        Client::ClaudeCode => (
            format!(
                "claude mcp add --transport http {SERVER} {} --header \"Authorization: Bearer \
                 ${TOKEN_VARIABLE}\"",
                shell_word(url)
            ),
            format!(
                "Set {TOKEN_VARIABLE} to an agent token of your account, then run (the shell puts \
                 the token in):"
            ),
        ),
        Client::ClaudeDesktop => {
            return Err(
                "Claude Desktop's configuration file takes only local (stdio) servers, and its \
                 connectors take no bearer token; use another client (claude-code, cursor, \
                 vscode, codex, windsurf, http) for a hosted hub, or a local hub"
                    .to_owned(),
            );
        }
        Client::Cursor => (
            pretty(&json!({"mcpServers": {SERVER: {
                "url": url, "headers": {"Authorization": env_header},
            }}})),
            format!(
                "Merge into ~/.cursor/mcp.json; Cursor reads the token from {TOKEN_VARIABLE} in \
                 its environment:"
            ),
        ),
        Client::Vscode => (
            pretty(&json!({
                "inputs": [{
                    "type": "promptString",
                    "id": "tabwire-token",
                    "description": "tabwire agent token",
                    "password": true,
                }],
                "servers": {SERVER: {
                    "type": "http",
                    "url": url,
                    "headers": {"Authorization": "Bearer ${input:tabwire-token}"},
                }},
            })),
            "Merge into .vscode/mcp.json; VS Code asks for the token once and keeps it:".to_owned(),
        ),
        Client::Codex => (
            format!(
                "[mcp_servers.{SERVER}]\nurl = {}\nbearer_token_env_var = {}",
                toml_string(url),
                toml_string(TOKEN_VARIABLE)
            ),
            format!("Add to ~/.codex/config.toml; Codex reads the token from {TOKEN_VARIABLE}:"),
        ),
        Client::Windsurf => (
            pretty(&json!({"mcpServers": {SERVER: {
                "serverUrl": url, "headers": {"Authorization": env_header},
            }}})),
            format!(
                "Merge into ~/.codeium/windsurf/mcp_config.json; Windsurf reads the token from \
                 {TOKEN_VARIABLE}:"
            ),
        ),
        Client::Stdio => {
            return Err(
                "a hosted hub is reached over streamable HTTP, not stdio: use --client http (or a \
                 named client)"
                    .to_owned(),
            );
        }
        Client::Http => (
            pretty(&json!({
                "url": url,
                "transport": "streamable-http",
                "headers": {"Authorization": format!("Bearer {TOKEN_PLACEHOLDER}")},
            })),
            format!(
                "A streamable-HTTP MCP endpoint; put an agent token of your account in place of \
                 {TOKEN_PLACEHOLDER}:"
            ),
        ),
    };
    Ok(Snippet { text, place })
}

/// Why a local hub has no snippet for a streamable-HTTP client.
fn local_http_refusal() -> String {
    "a local hub serves MCP through tabwire-mcp (stdio), not over HTTP: use --client stdio (or a \
     named client), or --url for a hosted hub"
        .to_owned()
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).expect("JSON values serialise")
}

/// `[mcp_servers.tabwire]` with a command and its arguments, as TOML.
fn toml_table(command: &str, args: &[String]) -> String {
    let args: Vec<String> = args.iter().map(|arg| toml_string(arg)).collect();
    format!(
        "[mcp_servers.{SERVER}]\ncommand = {}\nargs = [{}]",
        toml_string(command),
        args.join(", ")
    )
}

/// A TOML basic string: JSON's escaping is TOML's for these characters.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).expect("strings serialise")
}

/// A word for a POSIX shell: as is when it holds only safe characters, else single-quoted.
fn shell_word(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-:+=@%,".contains(c));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
#[path = "config_cli_tests.rs"]
mod tests;
