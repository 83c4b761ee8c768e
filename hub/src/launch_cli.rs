//! What `tabwire-hub --launch-browser` tells the person on stdout, and `tabwire-hub
//! find-chrome`.
//!
//! The hub's log goes to stderr as always; stdout gets a few lines a person (or the start
//! script) acts on: that Chromium started, then — once its extension is connected — the ready
//! block (the MCP client configuration with absolute paths, from `config_cli`, and how to
//! connect one's own Chrome profile instead), or, when it does not connect, what is known and
//! the doctor hint. A hub without `--launch-browser` prints nothing here.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tabwire_hub::chrome::{self, Kind};
use tabwire_hub::launch::Event;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::config_cli::{self, Client, Target};

/// `tabwire-hub find-chrome`: the path on stdout and exit code 0, or what was looked at on
/// stderr and exit code 1.
pub fn find_chrome() -> ExitCode {
    match chrome::find() {
        Ok(found) => {
            println!("{}", found.path.display());
            if found.kind == Kind::GoogleChrome {
                eprintln!("note: {}", tabwire_hub::launch::chrome_hint());
            }
            ExitCode::SUCCESS
        }
        Err(not_found) => {
            eprintln!("{not_found}");
            ExitCode::FAILURE
        }
    }
}

/// What the ready block names: how this hub is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    /// This `tabwire-hub`, absolute.
    pub hub: PathBuf,
    /// The `tabwire-mcp` beside it.
    pub shim: PathBuf,
    /// The socket, when not the default (passed on to `tabwire-mcp` and the subcommands).
    pub socket: Option<PathBuf>,
    /// The state directory, when not the default (for `tabwire-hub pair`).
    pub state_dir: Option<PathBuf>,
    /// The URL extensions connect to.
    pub browser_url: String,
    /// The extension folder to load unpacked into one's own Chrome.
    pub extension: PathBuf,
}

/// Prints each event as it comes, until the hub drops the sender.
pub async fn report(mut events: UnboundedReceiver<Event>, reach: Reach) {
    while let Some(event) = events.recv().await {
        println!("{}", describe(&event, &reach));
    }
}

/// The text for `event`.
pub fn describe(event: &Event, reach: &Reach) -> String {
    match event {
        Event::Launched {
            pid,
            browser,
            headless,
            profile,
            ..
        } => {
            let mut text = format!(
                "tabwire-hub: launched {} (PID {pid}, {}) from {}; profile {}",
                browser.kind,
                if *headless {
                    "headless"
                } else {
                    "with a window"
                },
                browser.path.display(),
                profile.display()
            );
            if tabwire_protocol::local::current_uid() == 0 {
                text.push_str(
                    "\nwarning: running as root, so Chromium runs without its sandbox (it \
                     refuses root otherwise): pages the agent opens are not confined; run the \
                     hub as an ordinary user for everyday use",
                );
            }
            if browser.kind == Kind::GoogleChrome {
                text.push_str(&format!(
                    "\nwarning: {}",
                    tabwire_hub::launch::chrome_hint()
                ));
            }
            text
        }
        Event::InUse { pid, profile } => format!(
            "tabwire-hub: the browser profile {} is in use by Chromium (PID {pid}), which this hub \
             did not start; waiting for its extension to connect instead of starting another \
             (if it does not, stop it with `kill {pid}` and start the hub again)",
            profile.display()
        ),
        Event::Connected { browser_id, name } => ready(reach, browser_id, name),
        Event::NotConnected { reason } => format!(
            "tabwire-hub: the launched browser is not connected: {reason}\nFor the whole \
             picture run: {}\nThe hub keeps serving; the extension retries by itself.",
            command(reach, "doctor", &[])
        ),
        Event::Exited { how } => format!(
            "tabwire-hub: the launched browser exited ({how}); the hub keeps serving and does not \
             start it again (start the hub again to get it back)"
        ),
    }
}

/// The ready block.
pub fn ready(reach: &Reach, browser_id: &str, name: &str) -> String {
    let target = Target::Local {
        shim: reach.shim.clone(),
        socket: reach.socket.clone(),
    };
    let snippet = |client| {
        config_cli::snippet(client, &target)
            .map(|snippet| indent(&snippet.text, "    "))
            .unwrap_or_else(|why| format!("    ({why})"))
    };
    let name = serde_json::Value::String(name.to_owned());
    format!(
        "\ntabwire is ready: the launched browser {name} is connected (browser ID {browser_id}).\n\
         \n\
         Let an agent use it through tabwire-mcp ({shim}):\n  \
         Claude Code:\n{claude}\n  \
         Claude Desktop, Cursor, Windsurf and other stdio clients (mcpServers):\n{json}\n  \
         Other clients: {config}\n\
         \n\
         To use your own Chrome profile as well (or instead):\n  \
         1. open chrome://extensions, switch on Developer mode, Load unpacked: {extension}\n  \
         2. in tabwire's popup: Server URL {url}, a browser name, and the pairing code\n     \
         that `{pair}` prints; press Connect.\n",
        shim = reach.shim.display(),
        claude = snippet(Client::ClaudeCode),
        json = snippet(Client::Stdio),
        config = command(
            reach,
            "config",
            &["--client", "claude-desktop|cursor|vscode|codex|windsurf"]
        ),
        extension = reach.extension.display(),
        url = reach.browser_url,
        pair = command(reach, "pair", &[]),
    )
}

/// `tabwire-hub SUBCOMMAND` with this hub's non-default places.
fn command(reach: &Reach, subcommand: &str, args: &[&str]) -> String {
    let mut words = vec![word(&reach.hub), subcommand.to_owned()];
    words.extend(args.iter().map(|arg| (*arg).to_owned()));
    let takes_socket = matches!(subcommand, "doctor" | "config");
    if let (true, Some(socket)) = (takes_socket, &reach.socket) {
        words.extend(["--socket".to_owned(), word(socket)]);
    }
    if let (true, Some(dir)) = (subcommand != "config", &reach.state_dir) {
        words.extend(["--state-dir".to_owned(), word(dir)]);
    }
    words.join(" ")
}

/// A path as a shell word (quoted when it holds anything but safe characters).
fn word(path: &Path) -> String {
    let text = path.display().to_string();
    let safe = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=@%,:".contains(c));
    if safe {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

fn indent(text: &str, by: &str) -> String {
    text.lines()
        .map(|line| format!("{by}{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach() -> Reach {
        Reach {
            hub: "/repo/target/debug/tabwire-hub".into(),
            shim: "/repo/target/debug/tabwire-mcp".into(),
            socket: None,
            state_dir: None,
            browser_url: "ws://127.0.0.1:17841/browser".into(),
            extension: "/repo/extension".into(),
        }
    }

    #[test]
    fn the_ready_block_has_the_client_configuration_and_the_own_chrome_route() {
        let text = ready(&reach(), "b-1", "tabwire Chromium");
        assert!(
            text.contains(
                "tabwire is ready: the launched browser \"tabwire Chromium\" is connected \
                 (browser ID b-1)."
            ),
            "{text}"
        );
        assert!(
            text.contains("    claude mcp add tabwire -- /repo/target/debug/tabwire-mcp\n"),
            "{text}"
        );
        assert!(
            text.contains("\"command\": \"/repo/target/debug/tabwire-mcp\""),
            "{text}"
        );
        assert!(
            text.contains("/repo/target/debug/tabwire-hub config --client claude-desktop|"),
            "{text}"
        );
        assert!(text.contains("Load unpacked: /repo/extension"), "{text}");
        assert!(
            text.contains("Server URL ws://127.0.0.1:17841/browser"),
            "{text}"
        );
        assert!(
            text.contains("`/repo/target/debug/tabwire-hub pair`"),
            "{text}"
        );
    }

    #[test]
    fn non_default_places_are_passed_on() {
        let reach = Reach {
            socket: Some("/run/x y/hub.sock".into()),
            state_dir: Some("/s".into()),
            ..reach()
        };
        let text = ready(&reach, "b-1", "Bot");
        assert!(
            text.contains("tabwire-mcp --socket '/run/x y/hub.sock'"),
            "{text}"
        );
        assert!(text.contains("tabwire-hub pair --state-dir /s`"), "{text}");
        let not_connected = describe(
            &Event::NotConnected {
                reason: "Chromium exited (exit code 3) before its extension connected.".into(),
            },
            &reach,
        );
        assert!(
            not_connected.contains(
                "run: /repo/target/debug/tabwire-hub doctor --socket '/run/x y/hub.sock' \
                 --state-dir /s"
            ),
            "{not_connected}"
        );
    }
}
