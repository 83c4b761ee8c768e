//! Every snippet parses as what its client reads (JSON, TOML, a shell line), names
//! `tabwire-mcp` by an absolute path (local) or the hub's `/mcp` URL and no token (hosted).

use clap::Parser;
use serde_json::Value;

use super::*;

/// `tabwire-hub config` as the binary parses it, with nothing from the environment but what
/// clap reads.
#[derive(Parser)]
struct Command {
    #[command(flatten)]
    config: ConfigArgs,
}

fn args(flags: &[&str]) -> Result<ConfigArgs, clap::Error> {
    let mut argv = vec!["config"];
    argv.extend(flags);
    Command::try_parse_from(argv).map(|command| command.config)
}

const SOCKET: &str = "/run/user/1000/tabwire/hub.sock";
const ALL: [Client; 8] = [
    Client::ClaudeCode,
    Client::ClaudeDesktop,
    Client::Cursor,
    Client::Vscode,
    Client::Codex,
    Client::Windsurf,
    Client::Stdio,
    Client::Http,
];

/// The command and arguments a local snippet tells its client to run.
fn command_of(client: Client, text: &str) -> (String, Vec<String>) {
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .unwrap_or_else(|| panic!("{client:?}: args is no array: {value}"))
            .iter()
            .map(|arg| arg.as_str().unwrap().to_owned())
            .collect()
    };
    match client {
        Client::ClaudeCode => {
            let rest = text
                .strip_prefix("claude mcp add tabwire -- ")
                .unwrap_or_else(|| panic!("{text}"));
            let words = shell_words(rest);
            (words[0].clone(), words[1..].to_vec())
        }
        Client::Codex => {
            let table: toml::Table = toml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let server = &table["mcp_servers"]["tabwire"];
            let args = server["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|arg| arg.as_str().unwrap().to_owned())
                .collect();
            (server["command"].as_str().unwrap().to_owned(), args)
        }
        _ => {
            let json: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let server = if client == Client::Vscode {
                assert_eq!(json["servers"]["tabwire"]["type"], "stdio", "{text}");
                &json["servers"]["tabwire"]
            } else {
                assert!(json.get("servers").is_none(), "{text}");
                &json["mcpServers"]["tabwire"]
            };
            (
                server["command"].as_str().unwrap().to_owned(),
                strings(&server["args"]),
            )
        }
    }
}

/// Splits a POSIX shell line the way `shell_word` quotes: plain words and single-quoted ones
/// (with `'\''` for a quote).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    let mut started = false;
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('\'', false) => {
                quoted = true;
                started = true;
            }
            ('\'', true) => quoted = false,
            ('\\', false) if chars.peek() == Some(&'\'') => {
                word.push(chars.next().unwrap());
            }
            (' ', false) => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (c, _) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

#[test]
fn local_snippets_run_the_shim_beside_this_executable_by_its_absolute_path() {
    for socket in [None, Some(SOCKET)] {
        let mut flags = vec![];
        if let Some(socket) = socket {
            flags.extend(["--socket", socket]);
        }
        for client in ALL {
            let mut flags = flags.clone();
            let name = client.to_possible_value().unwrap().get_name().to_owned();
            flags.extend(["--client", &name]);
            let args = args(&flags).unwrap();
            assert_eq!(args.client, client);
            let target = target(&args).unwrap();
            let result = snippet(client, &target);
            if client == Client::Http {
                let refusal = result.unwrap_err();
                assert!(refusal.contains("--url"), "{refusal}");
                continue;
            }
            let snippet = result.unwrap_or_else(|e| panic!("{name}: {e}"));
            let (command, rest) = command_of(client, &snippet.text);
            let command = Path::new(&command);
            assert!(command.is_absolute(), "{name}: {}", command.display());
            assert_eq!(command.file_name().unwrap(), "tabwire-mcp", "{name}");
            let here = std::env::current_exe().unwrap().canonicalize().unwrap();
            assert_eq!(
                command.parent(),
                here.parent(),
                "{name}: beside tabwire-hub"
            );
            match socket {
                Some(socket) => assert_eq!(rest, ["--socket", socket], "{name}"),
                None => assert!(rest.is_empty(), "{name}: {rest:?}"),
            }
        }
    }
}

#[test]
fn paths_with_spaces_and_quotes_survive_the_shell_line_and_toml() {
    let shim = PathBuf::from("/opt/tab wire/it's/tabwire-mcp");
    let target = Target::Local {
        shim: shim.clone(),
        socket: Some(PathBuf::from("/tmp/a \"b\"/hub.sock")),
    };
    for client in [Client::ClaudeCode, Client::Codex, Client::Cursor] {
        let text = snippet(client, &target).unwrap().text;
        let (command, rest) = command_of(client, &text);
        assert_eq!(Path::new(&command), shim, "{client:?}: {text}");
        assert_eq!(
            rest,
            ["--socket", "/tmp/a \"b\"/hub.sock"],
            "{client:?}: {text}"
        );
    }
}

#[test]
fn a_relative_socket_is_made_absolute() {
    let args = args(&["--client", "cursor", "--socket", "run/hub.sock"]).unwrap();
    let Target::Local { socket, .. } = target(&args).unwrap() else {
        panic!("no --url: a local target");
    };
    let socket = socket.unwrap();
    assert!(
        socket.is_absolute() && socket.ends_with("run/hub.sock"),
        "{}",
        socket.display()
    );
}

#[test]
fn hosted_snippets_name_the_mcp_url_and_no_token() {
    let target = Target::Hosted {
        url: hosted_url("https://hub.example/team").unwrap(),
    };
    let url = "https://hub.example/team/mcp";
    for client in ALL {
        let result = snippet(client, &target);
        if matches!(client, Client::ClaudeDesktop | Client::Stdio) {
            assert!(result.is_err(), "{client:?} has no hosted snippet");
            continue;
        }
        let text = result.unwrap().text;
        // The only credential in a snippet is a placeholder or the name of a variable.
        let authorization = match client {
            Client::ClaudeCode => {
                assert!(
                    text.starts_with(&format!("claude mcp add --transport http tabwire {url} ")),
                    "{text}"
                );
                let header = text.split("--header ").nth(1).unwrap();
                header.trim_matches('"').to_owned()
            }
            Client::Codex => {
                let table: toml::Table = toml::from_str(&text).unwrap();
                let server = table["mcp_servers"]["tabwire"].as_table().unwrap();
                assert_eq!(server["url"].as_str(), Some(url));
                assert_eq!(
                    server["bearer_token_env_var"].as_str(),
                    Some("TABWIRE_TOKEN")
                );
                assert_eq!(server.len(), 2, "{text}");
                continue;
            }
            _ => {
                let json: Value = serde_json::from_str(&text).unwrap();
                let server = match client {
                    Client::Vscode => {
                        assert_eq!(json["inputs"][0]["password"], true);
                        assert_eq!(json["servers"]["tabwire"]["type"], "http");
                        &json["servers"]["tabwire"]
                    }
                    Client::Http => &json,
                    _ => &json["mcpServers"]["tabwire"],
                };
                let key = if client == Client::Windsurf {
                    "serverUrl"
                } else {
                    "url"
                };
                assert_eq!(server[key], url, "{client:?}: {text}");
                server["headers"]["Authorization"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            }
        };
        let expected = match client {
            Client::ClaudeCode => "Authorization: Bearer $TABWIRE_TOKEN",
            Client::Cursor | Client::Windsurf => "Bearer ${env:TABWIRE_TOKEN}",
            Client::Vscode => "Bearer ${input:tabwire-token}",
            _ => "Bearer <token>",
        };
        assert_eq!(authorization, expected, "{client:?}");
    }
}

#[test]
fn a_hosted_url_is_its_origin_and_mcp() {
    for given in [
        "https://hub.example/team",
        "https://hub.example/team/",
        "https://hub.example/team/mcp",
        "https://HUB.example:443/team/mcp/",
    ] {
        assert_eq!(
            hosted_url(given).unwrap(),
            "https://hub.example/team/mcp",
            "{given}"
        );
    }
    for bad in [
        "hub.example",
        "ftp://hub.example",
        "https://user@hub.example",
    ] {
        assert!(hosted_url(bad).is_err(), "{bad}");
    }
}

/// The snippet sends the agent token with every request: `http://` only to this machine.
#[test]
fn a_token_never_goes_in_clear_over_a_network() {
    for clear in [
        "http://hub.example",
        "http://hub.example:8080/team/mcp",
        "http://10.0.0.5",
        "http://127.0.0.1.evil.example",
        "http://[2001:db8::1]",
    ] {
        let refusal = hosted_url(clear).unwrap_err();
        assert!(refusal.contains("in clear"), "{clear}: {refusal}");
    }
    for local in [
        "http://127.0.0.1:17841",
        "http://localhost:8080/team",
        "http://[::1]:8080",
        "http://127.0.0.2",
    ] {
        assert!(hosted_url(local).is_ok(), "{local}");
    }
    let usage =
        super::run(args(&["--url", "http://hub.example", "--client", "claude-code"]).unwrap());
    assert_eq!(usage, std::process::ExitCode::from(2));
}

#[test]
fn an_unknown_client_is_a_usage_error_that_lists_the_names() {
    let error = args(&["--client", "emacs"]).err().unwrap();
    assert_eq!(error.kind(), clap::error::ErrorKind::InvalidValue);
    assert_eq!(error.exit_code(), 2);
    let message = error.to_string();
    for name in [
        "claude-code",
        "claude-desktop",
        "cursor",
        "vscode",
        "codex",
        "windsurf",
        "stdio",
        "http",
    ] {
        assert!(message.contains(name), "{name}: {message}");
    }
}
