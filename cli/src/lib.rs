//! `tabwire`: tabwire's tools from a shell, for agents that work best there (fewer tokens than
//! an MCP tool list) and for scripts.
//!
//! One invocation is one MCP session with a hub: the local hub's Unix socket (started when none
//! runs) or a hosted hub over HTTPS. The output contract — text on a terminal, one JSON line
//! otherwise; exit 0 ok, 1 tool error, 2 usage or connection error — is in `docs/cli.md`.
//!
//! # Layout
//! - [`command`]: the command line and environment, read without knowing any tool.
//! - [`arguments`]: a tool's flags turned into its arguments by its input schema.
//! - [`link`]: the MCP session (rmcp's client) over the socket or HTTPS; [`hosted`]: the
//!   hosted hub's URL rule, token and TLS; [`start`]: starting a local hub when none runs.
//! - [`select`]: which browser or device a call goes to, and the shell session's state file.
//! - [`output`]: printing answers and failures, and their exit codes; [`error`]: the CLI's
//!   own failures (exit 2).
//! - [`manifest`]: `tabwire tools` and `tabwire TOOL --help`.

pub mod arguments;
pub mod command;
pub mod error;
pub mod hosted;
pub mod link;
pub mod manifest;
pub mod output;
pub mod select;
pub mod start;

use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;

use rmcp::model::Tool;
use serde_json::{Map, Value, json};
use tabwire_protocol::local::default_socket_here;

use crate::command::{Command, Invocation, OutputChoice, ToolFlag};
use crate::error::CliError;
use crate::hosted::HostedHub;
use crate::link::{Called, Link, LocalFailure};
use crate::output::Format;
use crate::select::{Choices, PeerKind, ShellSession, StateFile};
use crate::start::StartPlan;

/// Runs one invocation; returns the process's exit code.
pub async fn run(args: impl IntoIterator<Item = OsString>) -> u8 {
    let env = |name: &str| std::env::var(name).ok();
    let invocation = match command::parse(args, env) {
        Ok(invocation) => invocation,
        Err(error) => {
            // The output choice itself may be what failed to parse: the variable's, if it
            // asks for JSON, else the default.
            let choice = match env("TABWIRE_OUTPUT").as_deref() {
                Some("json") => OutputChoice::Json,
                _ => OutputChoice::default(),
            };
            return output::print_error(&error, format_for(choice));
        }
    };
    let format = format_for(invocation.output);
    match execute(&invocation, format).await {
        Ok(code) => code,
        Err(error) => output::print_error(&error, format),
    }
}

fn format_for(choice: OutputChoice) -> Format {
    match choice {
        OutputChoice::Text => Format::Text,
        OutputChoice::Json => Format::Json,
    }
}

/// The hub an invocation talks to.
enum Hub {
    /// The local hub's socket, and the default's home fallback to try when nothing answers
    /// there (`DefaultSocket::also`).
    Local(PathBuf, Option<PathBuf>),
    Hosted(HostedHub),
}

impl Hub {
    fn of(invocation: &Invocation) -> Result<Hub, CliError> {
        let choice = &invocation.hub;
        match &choice.url {
            Some(url) => {
                // A token file (flag or variable) wins over TABWIRE_TOKEN.
                let token = match &choice.token_file {
                    Some(path) => Some(hosted::read_token_file(path)?),
                    None => choice.token.clone(),
                };
                Ok(Hub::Hosted(HostedHub::new(
                    url,
                    token.as_deref(),
                    choice.ca_cert.as_deref(),
                    choice.insecure_http,
                )?))
            }
            None => Ok(match choice.socket.clone() {
                Some(socket) => Hub::Local(socket, None),
                None => {
                    let chosen = default_socket_here();
                    if let Some(why) = &chosen.fell_back {
                        eprintln!("tabwire: {why}");
                    }
                    Hub::Local(chosen.path, chosen.also)
                }
            }),
        }
    }

    /// The state file's name for this hub.
    fn key(&self) -> String {
        match self {
            Hub::Local(socket, _) => format!(
                "socket:{}",
                std::path::absolute(socket)
                    .unwrap_or_else(|_| socket.clone())
                    .display()
            ),
            Hub::Hosted(hosted) => format!("url:{}", hosted.url),
        }
    }

    /// Opens a session, starting a local hub when none answers (unless told not to).
    async fn connect(&self, invocation: &Invocation) -> Result<Link, CliError> {
        let (socket, also) = match self {
            Hub::Hosted(hosted) => return Link::hosted(hosted).await,
            Hub::Local(socket, also) => (socket, also.as_deref()),
        };
        match Link::local(socket, also).await {
            Ok(link) => Ok(link),
            Err(LocalFailure::Refused(refusal)) => Err(CliError::connection(refusal.to_string())),
            Err(LocalFailure::Handshake(error)) => Err(CliError::connection(format!(
                "the hub on {} did not complete the MCP handshake ({error})",
                socket.display()
            ))),
            Err(LocalFailure::Unreachable(error)) if invocation.hub.no_start => {
                Err(CliError::connection(format!(
                    "no hub answers on {} ({error}); start one with `tabwire-hub`, or leave out \
                     --no-start (TABWIRE_NO_START) to let tabwire start it",
                    socket.display()
                )))
            }
            Err(LocalFailure::Unreachable(_)) => {
                let plan =
                    StartPlan::here(invocation.hub.socket.as_deref(), !invocation.hub.no_browser)?;
                start::start_and_connect(&plan, socket, also).await
            }
        }
    }
}

async fn execute(invocation: &Invocation, format: Format) -> Result<u8, CliError> {
    match &invocation.command {
        // Help is for people (and agents reading it): text, however stdout is connected.
        Command::Help => {
            output::print_either(Format::Text, &Value::Null, &command::help_text());
            Ok(0)
        }
        Command::Version => {
            let version = env!("CARGO_PKG_VERSION");
            output::print_either(Format::Text, &Value::Null, &format!("tabwire {version}"));
            Ok(0)
        }
        Command::Tools => {
            let hub = Hub::of(invocation)?;
            let link = hub.connect(invocation).await?;
            let tools = link.all_tools().await;
            link.close().await;
            manifest::print_tools(&tools?, format);
            Ok(0)
        }
        Command::ToolHelp { tool } => {
            let hub = Hub::of(invocation)?;
            let link = hub.connect(invocation).await?;
            // A listed tool takes one tools/list; the opt-in groups are listed only on a miss.
            let found = look_up_tool(&link, tool).await;
            link.close().await;
            match found? {
                Ok(found) => {
                    manifest::print_tool(&found, format);
                    Ok(0)
                }
                Err(every_tool) => Err(manifest::unknown_tool(tool, &every_tool, None)),
            }
        }
        Command::Select { clear } => select_command(invocation, *clear, format).await,
        Command::Call { tool, json, flags } => {
            call_command(invocation, tool, json.as_deref(), flags, format).await
        }
    }
}

/// `tabwire TOOL …`.
async fn call_command(
    invocation: &Invocation,
    tool: &str,
    json: Option<&str>,
    flags: &[ToolFlag],
    format: Format,
) -> Result<u8, CliError> {
    let json = json.map(read_json).transpose()?;
    let hub = Hub::of(invocation)?;
    let kept = kept_choices(&hub);
    let link = hub.connect(invocation).await?;
    let outcome = call_on(&link, invocation, tool, json, flags, kept, format).await;
    link.close().await;
    outcome
}

async fn call_on(
    link: &Link,
    invocation: &Invocation,
    tool: &str,
    json: Option<Map<String, Value>>,
    flags: &[ToolFlag],
    kept: Choices,
    format: Format,
) -> Result<u8, CliError> {
    // This call's peers: a flag (looked up by name or ID now), else this session's choice.
    let mut flagged = Vec::new();
    let mut chosen = Vec::new();
    for kind in PeerKind::ALL {
        let given = invocation.peers.get(kind);
        if let Some(given) = given {
            chosen.push((kind, select::resolve(link, kind, given).await?));
            flagged.push(kind);
        } else if let Some(id) = kept.get(kind) {
            chosen.push((kind, id.to_owned()));
        }
    }
    // The schema is needed to read flags and to know whether the tool takes a peer's ID; a
    // call with neither is one round trip.
    let definition = if flags.is_empty() && chosen.is_empty() {
        None
    } else {
        look_up_tool(link, tool).await?.ok()
    };
    let schema = definition.as_ref().map(|tool| &*tool.input_schema);
    let mut arguments =
        arguments::build(tool, schema, json, flags).map_err(|error| CliError::Usage {
            message: error.to_string(),
            help: Some(match schema {
                Some(schema) => manifest::arguments_help(tool, schema),
                None => format!("{tool} is not in the hub's tool list; see tabwire tools"),
            }),
            candidates: None,
        })?;
    for (kind, id) in chosen {
        let takes_id = match schema {
            Some(schema) => schema
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|properties| properties.contains_key(kind.spec().id_arg)),
            // A tool the hub does not list: only an explicit --browser/--device is passed on.
            None => flagged.contains(&kind),
        };
        if takes_id {
            // An ID in the call's own arguments wins.
            arguments
                .entry(kind.spec().id_arg)
                .or_insert_with(|| Value::String(id));
        } else if flagged.contains(&kind) {
            eprintln!(
                "tabwire: {tool} does not route to a {} (it takes no {}); --{} was not used",
                kind.spec().noun,
                kind.spec().id_arg,
                kind.spec().noun
            );
        }
    }
    match link.call(tool, arguments).await? {
        Called::Result(result) => {
            if format == Format::Text
                && PeerKind::of_peer_tool(tool).is_some_and(|kind| kind.spec().select_tool == tool)
            {
                eprintln!(
                    "tabwire: a selection made with {tool} lasts for this call only; use \
                     `tabwire select` to keep one for this shell session"
                );
            }
            output::print_result(&result, format, invocation.out.as_deref())
        }
        Called::Refused { code, message }
            if code == -32602 && message.starts_with("unknown tool") =>
        {
            let tools = link.all_tools().await.unwrap_or_default();
            Err(manifest::unknown_tool(tool, &tools, Some(&message)))
        }
        Called::Refused { code, message } => Err(CliError::Rpc { code, message }),
    }
}

/// The tool's definition from the hub's listing (the opt-in groups listed too when needed), or
/// every tool the hub has when none is `tool` (for suggestions).
async fn look_up_tool(link: &Link, tool: &str) -> Result<Result<Tool, Vec<Tool>>, CliError> {
    let listed = link.tools().await?;
    if let Some(found) = listed.iter().find(|t| t.name == tool) {
        return Ok(Ok(found.clone()));
    }
    let every_tool = link.all_tools_after(listed).await?;
    Ok(match every_tool.iter().find(|t| t.name == tool) {
        Some(found) => Ok(found.clone()),
        None => Err(every_tool),
    })
}

/// `--json` text (or `-`: stdin) as the arguments object.
fn read_json(given: &str) -> Result<Map<String, Value>, CliError> {
    let text = if given == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|error| CliError::usage(format!("--json -: cannot read stdin: {error}")))?;
        text
    } else {
        given.to_owned()
    };
    let value: Value = serde_json::from_str(&text)
        .map_err(|error| CliError::usage(format!("--json: not JSON ({error})")))?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(CliError::usage(format!(
            "--json: the arguments must be a JSON object, not {other}"
        ))),
    }
}

/// What `tabwire select` kept for this shell session and hub. A state directory that is
/// missing or not private gives nothing (and says why when it is not private).
fn kept_choices(hub: &Hub) -> Choices {
    let env = |name: &str| std::env::var(name).ok();
    let Ok(dir) = select::state_dir(&env) else {
        return Choices::default();
    };
    StateFile::new(&dir, ShellSession::here(env)).load(&hub.key())
}

/// `tabwire select …`.
async fn select_command(
    invocation: &Invocation,
    clear: bool,
    format: Format,
) -> Result<u8, CliError> {
    let env = |name: &str| std::env::var(name).ok();
    let hub = Hub::of(invocation)?;
    let file = StateFile::new(&select::state_dir(&env)?, ShellSession::here(env));
    let key = hub.key();
    let given = PeerKind::ALL.map(|kind| (kind, invocation.peers.get(kind)));
    if clear {
        file.store(&key, None)?;
    } else if given.iter().any(|(_, value)| value.is_some()) {
        let link = hub.connect(invocation).await?;
        let mut choices = Choices::default();
        let mut failure = None;
        for (kind, value) in given {
            let Some(value) = value else { continue };
            match select::resolve(&link, kind, value).await {
                Ok(id) => {
                    choices.ids.insert(kind.spec().noun.to_owned(), id);
                }
                Err(error) => {
                    failure = Some(error);
                    break;
                }
            }
        }
        link.close().await;
        if let Some(error) = failure {
            return Err(error);
        }
        file.store(&key, Some(&choices))?;
    }
    let kept = file.load(&key);
    let session = file.session().describe();
    let text = if kept.ids.is_empty() {
        format!("Nothing is selected for {session} on {key}.")
    } else {
        let chosen: Vec<String> = kept
            .ids
            .iter()
            .map(|(kind, id)| format!("{kind} {id}"))
            .collect();
        format!(
            "Selected for {session} on {key}: {} (kept in {}).",
            chosen.join(", "),
            file.path().display()
        )
    };
    let data: Map<String, Value> = kept
        .ids
        .iter()
        .map(|(kind, id)| (format!("{kind}Id"), json!(id)))
        .collect();
    output::print_either(
        format,
        &json!({"ok": true, "data": {"selected": data, "session": session, "hub": key}}),
        &text,
    );
    Ok(0)
}
