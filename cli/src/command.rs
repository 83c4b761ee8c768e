//! The command line, read without knowing any tool: which command, the options that choose the
//! hub and the output, and a tool's own flags as `--name[=value]` pairs for
//! [`crate::arguments`] to check against the tool's schema.
//!
//! The rules, so that tool arguments and the CLI's options never shadow each other:
//! - Options that choose the hub or the output (`--socket`, `--url`, `--token-file`,
//!   `--ca-cert`, `--insecure-http`, `--no-start`, `--no-browser`, `--output`) come before the
//!   command; after a tool's name a tool may have arguments of the same names
//!   (`navigate_to --url`).
//! - `--browser`, `--device` and `--out` may come before the command or among the tool's flags;
//!   `--json` and `--help` belong to the tool. No tool has arguments of those names.
//! - A token that starts with `--` is always a flag, so a value that starts with `--` is given
//!   as `--name=--value`. A flag with no value is a boolean's `true` (the schema checks it).
//!
//! Settings also come from the environment (`TABWIRE_SOCKET`, `TABWIRE_URL`, `TABWIRE_TOKEN`,
//! `TABWIRE_TOKEN_FILE`, `TABWIRE_CA_CERT`, `TABWIRE_INSECURE_HTTP`, `TABWIRE_NO_START`,
//! `TABWIRE_NO_BROWSER`, `TABWIRE_OUTPUT`); a flag wins. The token itself is never a flag: every
//! user of the machine reads a command line in `ps`.

use std::ffi::OsString;
use std::path::PathBuf;

use tabwire_protocol::{KINDS, Kind};

use crate::error::CliError;

/// What one invocation asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// Where the hub is and how to reach it.
    pub hub: HubChoice,
    /// How results are printed.
    pub output: OutputChoice,
    /// `--browser` / `--device`: this call's peers, by name or ID.
    pub peers: PeerChoice,
    /// `--out FILE`: where an image in the answer is written.
    pub out: Option<PathBuf>,
    /// The command.
    pub command: Command,
}

/// The hub to talk to.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HubChoice {
    /// `--socket` / `TABWIRE_SOCKET`: the local hub's socket (else the default path).
    pub socket: Option<PathBuf>,
    /// `--url` / `TABWIRE_URL`: a hosted hub (its origin or its `/mcp` URL).
    pub url: Option<String>,
    /// `TABWIRE_TOKEN`: the hosted hub's agent token. Never printed.
    pub token: Option<String>,
    /// `--token-file` / `TABWIRE_TOKEN_FILE`: a file of the user's alone holding the token;
    /// wins over `TABWIRE_TOKEN`.
    pub token_file: Option<PathBuf>,
    /// `--insecure-http` / `TABWIRE_INSECURE_HTTP=1`: send the token over plain `http://` to a
    /// loopback address, where another local user could be listening.
    pub insecure_http: bool,
    /// `--ca-cert` / `TABWIRE_CA_CERT`: a PEM file of extra certificate authorities to trust
    /// for the hosted hub (a private CA).
    pub ca_cert: Option<PathBuf>,
    /// `--no-start` / `TABWIRE_NO_START=1`: never start a local hub.
    pub no_start: bool,
    /// `--no-browser` / `TABWIRE_NO_BROWSER=1`: a hub started here launches no browser.
    pub no_browser: bool,
}

/// How the answer is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputChoice {
    /// The tool's text rendering, terminal or not: what a model reads (a shell agent's stdout
    /// is a pipe), with page text fenced.
    #[default]
    Text,
    /// One JSON line: the structured envelope, for scripts that ask for it.
    Json,
}

/// Peers chosen for this call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PeerChoice {
    /// `--browser NAME|ID`, `--device NAME|ID`: a flag per kind of the kinds table, by noun.
    pub given: std::collections::BTreeMap<Kind, String>,
}

impl PeerChoice {
    /// The peer of `kind` given for this call.
    pub fn get(&self, kind: Kind) -> Option<&str> {
        self.given.get(&kind).map(String::as_str)
    }
}

/// The kind whose flag (`--browser`) is `--name`.
fn peer_flag(name: &str) -> Option<Kind> {
    Kind::from_noun(name)
}

/// The commands.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// `tabwire --help` (or no command at all).
    Help,
    /// `tabwire --version`.
    Version,
    /// `tabwire tools`: the manifest.
    Tools,
    /// `tabwire select [--browser X] [--device Y] [--clear]`.
    Select {
        /// Forget this shell session's choices for this hub.
        clear: bool,
    },
    /// `tabwire TOOL --help`.
    ToolHelp {
        /// The tool.
        tool: String,
    },
    /// `tabwire TOOL [--arg value]… [--json '{…}']`.
    Call {
        /// The tool.
        tool: String,
        /// `--json`: the whole arguments object, as given (`-` reads it from stdin).
        json: Option<String>,
        /// The tool's flags, in order.
        flags: Vec<ToolFlag>,
    },
}

/// One `--name[=value]` among a tool's flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFlag {
    /// The name as written, without the dashes.
    pub name: String,
    /// Its value; `None` for a bare flag.
    pub value: Option<String>,
}

/// The CLI's usage, for `--help`: [`USAGE`] with a `--NOUN` flag per kind of the kinds table.
pub fn help_text() -> String {
    let choices: Vec<String> = KINDS
        .iter()
        .map(|spec| format!("[--{} NAME|ID]", spec.noun))
        .collect();
    let options: Vec<String> = KINDS
        .iter()
        .enumerate()
        .map(|(at, spec)| {
            let flag = format!("--{} NAME|ID", spec.noun);
            let rule = if at == 0 {
                " (else this shell session's `select`, else the hub's rule)"
            } else {
                ""
            };
            format!("  {flag:<17} this call's {}{rule}", spec.noun)
        })
        .collect();
    USAGE
        .replace("{choices}", &choices.join(" "))
        .replace("{options}\n", &format!("{}\n", options.join("\n")))
}

/// The CLI's usage, with `{choices}` and `{options}` where the kinds' flags go.
const USAGE: &str = "\
tabwire: call tabwire's browser and device tools from a shell.

Usage:
  tabwire [OPTIONS] TOOL [--ARG VALUE]... [--json '{...}']   call a tool
  tabwire [OPTIONS] TOOL --help                             one tool's description and arguments
  tabwire [OPTIONS] tools                                   every tool with its input schema
  tabwire [OPTIONS] select {choices} [--clear]
                                                           keep a choice for this shell session

Tool arguments: --tabId 3 or --tab-id 3; values are read by the argument's type (integer,
number, boolean, string; arrays and objects as JSON); a bare --flag is true, --no-flag false;
a value starting with -- is written --name=VALUE. --json gives the whole arguments object
(- reads it from stdin); flags given beside it replace its keys.

Options (before the command):
  --socket PATH     the local hub's socket [TABWIRE_SOCKET]
  --no-start        fail instead of starting a local hub when none runs [TABWIRE_NO_START=1]
  --no-browser      a hub started here launches no browser [TABWIRE_NO_BROWSER=1]
  --url URL         a hosted hub: https://host[/prefix][/mcp] [TABWIRE_URL]; its agent
                    token comes from TABWIRE_TOKEN, never from a flag (others see flags in ps)
  --token-file FILE the token from a file only you can read (chmod 600) [TABWIRE_TOKEN_FILE]
  --ca-cert FILE    extra CA certificates (PEM) for the hosted hub [TABWIRE_CA_CERT]
  --insecure-http   allow http:// to a loopback address, where another local user may
                    listen on a port the proxy left free [TABWIRE_INSECURE_HTTP=1]
  --output text|json  the tool's text (default), or one JSON line for scripts [TABWIRE_OUTPUT]
Options (before the command or among a tool's flags):
{options}
  --out FILE        write an image in the answer (a screenshot) to FILE

Output: the tool's text, page text between fence lines; with --output json exactly one JSON
line, the tool's envelope {\"ok\":true,\"data\":...} or {\"ok\":false,\"error\":{...}}.
Exit codes: 0 ok, 1 the tool failed, 2 usage or connection error (also one JSON line when
output is JSON). Without --url the local hub is used, and started when none runs (with the
browser it launches, unless --no-browser); its log is hub.log in the hub's state directory.
See docs/cli.md.";

/// What `--token` (removed) says: the migration.
const TOKEN_FLAG_GONE: &str = "--token is no longer taken: other users of the machine read \
    every command line in ps. Set TABWIRE_TOKEN in the environment, or put the token in a file \
    only you can read (chmod 600) and pass --token-file FILE";

/// Reads the command line (without the program name) and the environment.
pub fn parse(
    args: impl IntoIterator<Item = OsString>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Invocation, CliError> {
    let args: Vec<String> = args
        .into_iter()
        .map(|arg| {
            arg.into_string()
                .map_err(|arg| usage(format!("{arg:?} is not valid UTF-8")))
        })
        .collect::<Result<_, _>>()?;
    let mut invocation = Invocation {
        hub: HubChoice {
            socket: env("TABWIRE_SOCKET")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
            url: env("TABWIRE_URL").filter(|s| !s.is_empty()),
            token: env("TABWIRE_TOKEN").filter(|s| !s.is_empty()),
            token_file: env("TABWIRE_TOKEN_FILE")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
            insecure_http: env_flag(&env, "TABWIRE_INSECURE_HTTP")?,
            ca_cert: env("TABWIRE_CA_CERT")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
            no_start: env_flag(&env, "TABWIRE_NO_START")?,
            no_browser: env_flag(&env, "TABWIRE_NO_BROWSER")?,
        },
        output: match env("TABWIRE_OUTPUT").filter(|s| !s.is_empty()) {
            Some(value) => output_choice(&value, "TABWIRE_OUTPUT")?,
            None => OutputChoice::Text,
        },
        peers: PeerChoice::default(),
        out: None,
        command: Command::Help,
    };
    let mut words = args.into_iter().peekable();
    // The options before the command.
    let command = loop {
        let Some(word) = words.next() else {
            break None;
        };
        let Some(flag) = word.strip_prefix("--") else {
            if word == "-h" {
                invocation.command = Command::Help;
                return Ok(invocation);
            }
            break Some(word);
        };
        let (name, inline) = split_flag(flag);
        let mut value = |what: &str| -> Result<String, CliError> {
            match &inline {
                Some(value) => Ok(value.clone()),
                None => match words.next_if(|next| !next.starts_with("--")) {
                    Some(value) => Ok(value),
                    None => Err(usage(format!("--{name} needs {what}"))),
                },
            }
        };
        match name {
            "help" => {
                invocation.command = Command::Help;
                return Ok(invocation);
            }
            "version" => {
                invocation.command = Command::Version;
                return Ok(invocation);
            }
            "socket" => invocation.hub.socket = Some(PathBuf::from(value("a path")?)),
            "url" => invocation.hub.url = Some(value("a URL")?),
            "token" => return Err(usage(TOKEN_FLAG_GONE)),
            "token-file" => invocation.hub.token_file = Some(PathBuf::from(value("a file")?)),
            "insecure-http" => invocation.hub.insecure_http = switch(name, inline.as_deref())?,
            "ca-cert" => invocation.hub.ca_cert = Some(PathBuf::from(value("a PEM file")?)),
            "output" => invocation.output = output_choice(&value("text or json")?, "--output")?,
            name if peer_flag(name).is_some() => {
                let kind = peer_flag(name).expect("a peer flag");
                let value = value(&format!("a {}'s name or ID", kind.spec().noun))?;
                invocation.peers.given.insert(kind, value);
            }
            "out" => invocation.out = Some(PathBuf::from(value("a file")?)),
            "no-start" => invocation.hub.no_start = switch(name, inline.as_deref())?,
            "no-browser" => invocation.hub.no_browser = switch(name, inline.as_deref())?,
            _ => {
                return Err(usage(format!(
                    "unknown option --{name} (options that choose the hub go before the command; \
                     see tabwire --help)"
                )));
            }
        }
    };
    let Some(command) = command else {
        invocation.command = Command::Help;
        return Ok(invocation);
    };
    let rest: Vec<String> = words.collect();
    invocation.command = match command.as_str() {
        "help" => Command::Help,
        "tools" => {
            if let Some(extra) = rest.first() {
                return Err(usage(format!("tabwire tools takes no arguments ({extra})")));
            }
            Command::Tools
        }
        "select" => select(&rest, &mut invocation)?,
        tool => tool_call(tool, rest, &mut invocation)?,
    };
    Ok(invocation)
}

/// `select`'s own flags.
fn select(rest: &[String], invocation: &mut Invocation) -> Result<Command, CliError> {
    let mut clear = false;
    for flag in flags(rest)? {
        match (flag.name.as_str(), flag.value) {
            ("clear", value) => clear = switch("clear", value.as_deref())?,
            (name, Some(value)) if peer_flag(name).is_some() => {
                let kind = peer_flag(name).expect("a peer flag");
                invocation.peers.given.insert(kind, value);
            }
            (name, None) if peer_flag(name).is_some() => {
                return Err(usage(format!("--{} needs a name or ID", flag.name)));
            }
            ("help", _) => return Ok(Command::Help),
            (name, _) => {
                let flags: Vec<String> = KINDS
                    .iter()
                    .map(|spec| format!("--{}", spec.noun))
                    .collect();
                return Err(usage(format!(
                    "tabwire select takes {} and --clear, not --{name}",
                    flags.join(", ")
                )));
            }
        }
    }
    if clear && !invocation.peers.given.is_empty() {
        return Err(usage(
            "tabwire select: --clear forgets the choices; give it alone",
        ));
    }
    Ok(Command::Select { clear })
}

/// A tool's flags, with the CLI's own (`--json`, `--help`, `--browser`, `--device`, `--out`)
/// taken out.
fn tool_call(
    tool: &str,
    rest: Vec<String>,
    invocation: &mut Invocation,
) -> Result<Command, CliError> {
    if tool.starts_with('-') || tool.is_empty() {
        return Err(usage(format!("unknown option {tool}; see tabwire --help")));
    }
    let mut json = None;
    let mut tool_flags = Vec::new();
    for flag in flags(&rest)? {
        let value = |flag: ToolFlag, what: &str| {
            flag.value
                .ok_or_else(|| usage(format!("--{} needs {what}", flag.name)))
        };
        match flag.name.as_str() {
            "help" | "h" => {
                return Ok(Command::ToolHelp {
                    tool: tool.to_owned(),
                });
            }
            "json" => {
                if json.is_some() {
                    return Err(usage("--json is given twice"));
                }
                json = Some(value(flag, "a JSON object (or - for stdin)")?);
            }
            name if peer_flag(name).is_some() => {
                let kind = peer_flag(name).expect("a peer flag");
                let value = value(flag, &format!("a {}'s name or ID", kind.spec().noun))?;
                invocation.peers.given.insert(kind, value);
            }
            "out" => invocation.out = Some(PathBuf::from(value(flag, "a file")?)),
            _ => tool_flags.push(flag),
        }
    }
    Ok(Command::Call {
        tool: tool.to_owned(),
        json,
        flags: tool_flags,
    })
}

/// Splits words into `--name[=value]` flags: a word that does not start with `--` is the value
/// of the flag before it.
fn flags(words: &[String]) -> Result<Vec<ToolFlag>, CliError> {
    let mut out = Vec::new();
    let mut words = words.iter().peekable();
    while let Some(word) = words.next() {
        let Some(flag) = word.strip_prefix("--") else {
            if word == "-h" {
                out.push(ToolFlag {
                    name: "help".into(),
                    value: None,
                });
                continue;
            }
            return Err(usage(format!(
                "unexpected {word:?}: arguments are given as --name value"
            )));
        };
        let (name, inline) = split_flag(flag);
        if name.is_empty() {
            return Err(usage(format!("{word:?} names no argument")));
        }
        let value = match inline {
            Some(value) => Some(value),
            None => words.next_if(|next| !next.starts_with("--")).cloned(),
        };
        out.push(ToolFlag {
            name: name.to_owned(),
            value,
        });
    }
    Ok(out)
}

/// `name=value` or `name`.
fn split_flag(flag: &str) -> (&str, Option<String>) {
    match flag.split_once('=') {
        Some((name, value)) => (name, Some(value.to_owned())),
        None => (flag, None),
    }
}

/// A switch: bare, or `=true`/`=false`.
fn switch(name: &str, value: Option<&str>) -> Result<bool, CliError> {
    match value {
        None => Ok(true),
        Some(value) => {
            truth(value).ok_or_else(|| usage(format!("--{name}={value}: expected true or false")))
        }
    }
}

/// An environment switch: `1`/`true`/`yes` or `0`/`false`/`no` (empty is off).
fn env_flag(env: &impl Fn(&str) -> Option<String>, name: &str) -> Result<bool, CliError> {
    match env(name) {
        None => Ok(false),
        Some(value) if value.is_empty() => Ok(false),
        Some(value) => {
            truth(&value).ok_or_else(|| usage(format!("{name}={value}: expected 1 or 0")))
        }
    }
}

fn truth(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn output_choice(value: &str, source: &str) -> Result<OutputChoice, CliError> {
    match value {
        "text" => Ok(OutputChoice::Text),
        "json" => Ok(OutputChoice::Json),
        _ => Err(usage(format!("{source} {value:?}: expected text or json"))),
    }
}

fn usage(message: impl Into<String>) -> CliError {
    CliError::usage(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_with(args: &[&str], env: &[(&str, &str)]) -> Result<Invocation, CliError> {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        parse(args.iter().map(OsString::from), move |name| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    fn call(args: &[&str]) -> Invocation {
        parse_with(args, &[]).unwrap()
    }

    #[test]
    fn a_tool_call_with_flags_and_json() {
        let invocation = call(&[
            "--url",
            "https://hub.example/mcp",
            "navigate_to",
            "--url",
            "https://a.example/",
            "--tab-id=3",
            "--observe",
            "--json",
            "{\"x\":1}",
            "--browser",
            "Work",
        ]);
        assert_eq!(
            invocation.hub.url.as_deref(),
            Some("https://hub.example/mcp")
        );
        assert_eq!(invocation.peers.get(Kind::Browser), Some("Work"));
        assert_eq!(
            invocation.command,
            Command::Call {
                tool: "navigate_to".into(),
                json: Some("{\"x\":1}".into()),
                flags: vec![
                    ToolFlag {
                        name: "url".into(),
                        value: Some("https://a.example/".into())
                    },
                    ToolFlag {
                        name: "tab-id".into(),
                        value: Some("3".into())
                    },
                    ToolFlag {
                        name: "observe".into(),
                        value: None
                    },
                ],
            }
        );
    }

    #[test]
    fn help_forms() {
        assert_eq!(call(&[]).command, Command::Help);
        assert_eq!(call(&["--help"]).command, Command::Help);
        assert_eq!(call(&["-h"]).command, Command::Help);
        assert_eq!(
            call(&["list_tabs", "--help"]).command,
            Command::ToolHelp {
                tool: "list_tabs".into()
            }
        );
        assert_eq!(call(&["tools"]).command, Command::Tools);
        assert_eq!(call(&["--version"]).command, Command::Version);
    }

    #[test]
    fn environment_and_flags() {
        let invocation = parse_with(
            &["--no-start", "list_tabs"],
            &[
                ("TABWIRE_TOKEN", "t0k"),
                ("TABWIRE_NO_BROWSER", "1"),
                ("TABWIRE_OUTPUT", "json"),
            ],
        )
        .unwrap();
        assert!(invocation.hub.no_start && invocation.hub.no_browser);
        assert_eq!(invocation.hub.token.as_deref(), Some("t0k"));
        assert_eq!(invocation.output, OutputChoice::Json);
        let invocation = parse_with(
            &["--url", "https://h/", "x"],
            &[("TABWIRE_URL", "https://e/")],
        )
        .unwrap();
        assert_eq!(invocation.hub.url.as_deref(), Some("https://h/"));
        assert!(parse_with(&["x"], &[("TABWIRE_NO_START", "maybe")]).is_err());
        let invocation = parse_with(
            &["--token-file", "/t", "--insecure-http", "x"],
            &[("TABWIRE_TOKEN_FILE", "/e")],
        )
        .unwrap();
        assert_eq!(invocation.hub.token_file, Some(PathBuf::from("/t")));
        assert!(invocation.hub.insecure_http);
        let invocation = parse_with(
            &["x"],
            &[("TABWIRE_TOKEN_FILE", "/e"), ("TABWIRE_INSECURE_HTTP", "1")],
        )
        .unwrap();
        assert_eq!(invocation.hub.token_file, Some(PathBuf::from("/e")));
        assert!(invocation.hub.insecure_http);
    }

    #[test]
    fn a_token_on_the_command_line_is_refused_with_the_way_instead() {
        for args in [
            &["--token", "s3cret", "list_tabs"][..],
            &["--token=s3cret", "x"],
        ] {
            let error = parse_with(args, &[]).unwrap_err();
            assert_eq!(error.exit_code(), 2);
            let said = error.to_string();
            assert!(
                said.contains("TABWIRE_TOKEN") && said.contains("--token-file"),
                "{said}"
            );
            assert!(!said.contains("s3cret"), "{said}");
        }
    }

    #[test]
    fn select_forms() {
        let invocation = call(&["select", "--browser", "Work Chrome"]);
        assert_eq!(invocation.command, Command::Select { clear: false });
        assert_eq!(invocation.peers.get(Kind::Browser), Some("Work Chrome"));
        assert_eq!(
            call(&["select", "--clear"]).command,
            Command::Select { clear: true }
        );
        assert!(parse_with(&["select", "--clear", "--browser", "x"], &[]).is_err());
        assert!(parse_with(&["select", "--tab", "3"], &[]).is_err());
    }

    #[test]
    fn mistakes_are_usage_errors() {
        for args in [
            &["--bogus", "list_tabs"][..],
            &["--socket"],
            &["list_tabs", "stray"],
            &["list_tabs", "--json"],
            &["list_tabs", "--json", "{}", "--json", "{}"],
            &["tools", "extra"],
            &["--output", "yaml", "list_tabs"],
        ] {
            let error = parse_with(args, &[]).unwrap_err();
            assert_eq!(error.exit_code(), 2, "{args:?}");
        }
    }

    #[test]
    fn a_value_starting_with_dashes_goes_after_an_equals_sign() {
        let Command::Call { flags, .. } = call(&["type_text", "--text=--not-a-flag"]).command
        else {
            panic!("a call");
        };
        assert_eq!(flags[0].value.as_deref(), Some("--not-a-flag"));
        // Negative numbers are values.
        let Command::Call { flags, .. } = call(&["scroll", "--deltaY", "-200"]).command else {
            panic!("a call");
        };
        assert_eq!(flags[0].value.as_deref(), Some("-200"));
    }

    #[test]
    fn usage_names_a_flag_per_kind() {
        let text = help_text();
        assert!(
            !text.contains("{choices}") && !text.contains("{options}"),
            "{text}"
        );
        assert!(
            text.contains("select [--browser NAME|ID] [--device NAME|ID] [--clear]"),
            "{text}"
        );
        assert!(text.contains(
            "  --browser NAME|ID this call's browser (else this shell session's `select`, else \
             the hub's rule)\n  --device NAME|ID  this call's device\n  --out FILE"
        ));
    }
}
