//! The `tabwire` CLI end to end (issue 16): the real binary against a real hub with the real
//! extension in headless Chromium — text on a terminal and one JSON line when piped, exit codes
//! 0/1/2, `tools` and `TOOL --help`, `--browser` and `tabwire select`'s state file per shell
//! session, a hosted hub through nginx, and a hub started by the CLI itself.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::json;
use tabwire_e2e::cli::{Run, Shell, cli_path};
use tabwire_e2e::hosted::{Hosted, Role};
use tabwire_e2e::scenario::{OneBrowser, connected_browser, loaded_tab};
use tabwire_e2e::scratch::Scratch;
use tabwire_e2e::{Browser, Fixtures, Hub, McpClient, eventually};

/// The IDs' tabs' URLs `list_tabs` printed.
fn tab_urls(run: &Run) -> Vec<String> {
    run.data()["tabs"]
        .as_array()
        .expect("list_tabs lists tabs")
        .iter()
        .map(|tab| tab["url"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_print_text_by_default_one_json_line_when_asked_and_exit_by_outcome() {
    let setup = OneBrowser::on("Solo", "login.html").await;
    let shell = Shell::on(&setup.hub);
    let login = setup.fixtures.url("login.html");

    // As a script (--output json): exactly one JSON line, the tool's envelope; exit 0.
    let tabs = shell.run(&["list_tabs"]).await;
    assert!(tab_urls(&tabs).contains(&login), "{tabs:?}");
    let tab = tabs.data()["tabs"][0]["tabId"]
        .as_u64()
        .unwrap()
        .to_string();

    // On a terminal: the tool's text as the model reads it, fence lines around page text.
    let snapshot = shell.run_on_terminal(&["get_page_snapshot"]).await;
    snapshot.expect_code(0);
    assert!(
        snapshot.stdout.contains("button \"Sign in\""),
        "{snapshot:?}"
    );
    assert!(snapshot.stdout.contains("⟦page "), "{snapshot:?}");
    assert!(!snapshot.stdout.trim_start().starts_with('{'));
    // Piped without --output json, as a shell agent's stdout is: the same fenced text, so a
    // model never reads page text outside the fence.
    let agent = shell.run_as_agent(&["get_page_snapshot"]).await;
    agent.expect_code(0);
    assert!(agent.stdout.contains("button \"Sign in\""), "{agent:?}");
    assert!(
        agent.stdout.starts_with("⟦page ") || agent.stdout.contains("\n⟦page "),
        "{agent:?}"
    );
    assert!(!agent.stdout.trim_start().starts_with('{'), "{agent:?}");
    let failed = shell
        .run_as_agent(&["switch_tab", "--tab-id", "999999"])
        .await;
    assert_eq!(failed.code, 1, "{failed:?}");
    // The browser wrote the message, so it is fenced; the code leads it.
    assert!(failed.stdout.contains("\nTAB_NOT_FOUND: "), "{failed:?}");

    // Flags by the schema's name or its kebab-case spelling, values by type; --json merged.
    for spelling in ["--tab-id", "--tabId"] {
        let found = shell
            .run(&[
                "get_page_snapshot",
                spelling,
                &tab,
                "--query",
                "Sign in",
                "--max-nodes",
                "5",
            ])
            .await;
        let text = found.data().to_string();
        assert!(text.contains("Sign in"), "{text}");
    }
    let base = r#"{"format": "html", "maxChars": 20000}"#;
    let html = shell.run(&["get_page_content", "--json", base]).await;
    assert!(html.data().to_string().contains("<button"), "{html:?}");
    let merged = shell
        .run(&["get_page_content", "--json", base, "--format", "text"])
        .await;
    let merged = merged.data().to_string();
    assert!(
        merged.contains("Sign in") && !merged.contains("<button"),
        "--format text replaced the JSON's html: {merged}"
    );

    // A tool error: exit 1 and the tool's own envelope.
    let missing = shell.run(&["switch_tab", "--tab-id", "999999"]).await;
    assert_eq!(missing.error_code(1), "TAB_NOT_FOUND");
    let missing = shell
        .run_on_terminal(&["switch_tab", "--tab-id", "999999"])
        .await;
    missing.expect_code(1);
    assert!(missing.stdout.contains("999999"), "{missing:?}");

    // Usage errors: exit 2, said on stderr, and one JSON line for a script.
    let unknown = shell.run(&["list_tab"]).await;
    assert_eq!(unknown.error_code(2), "UNKNOWN_TOOL");
    assert!(
        unknown.stderr.contains("did you mean list_tabs"),
        "{unknown:?}"
    );
    let bogus = shell.run(&["list_tabs", "--bogus", "1"]).await;
    assert_eq!(bogus.error_code(2), "USAGE");
    assert!(
        bogus.stderr.contains("--browser-id"),
        "lists the tool's arguments: {bogus:?}"
    );
    let bad = shell.run(&["switch_tab", "--tab-id", "three"]).await;
    assert_eq!(bad.error_code(2), "USAGE");
    assert!(bad.stderr.contains("integer"), "{bad:?}");
    let not_json = shell.run(&["list_tabs", "--json", "[1]"]).await;
    assert_eq!(not_json.error_code(2), "USAGE");
    // On a terminal a usage error prints no JSON.
    let unknown = shell.run_on_terminal(&["list_tab"]).await;
    unknown.expect_code(2);
    assert!(!unknown.stdout.contains("\"ok\""), "{unknown:?}");

    // Images: --out writes the screenshot; without it the line says it was left out.
    let scratch = Scratch::new("cli-shot");
    let file = scratch.path().join("shot.img");
    let file_arg = file.display().to_string();
    let shot = shell
        .run_on_terminal(&["take_screenshot", "--out", &file_arg])
        .await;
    shot.expect_code(0);
    assert!(shot.stdout.contains("written to"), "{shot:?}");
    let bytes = std::fs::read(&file).expect("the screenshot was written");
    assert!(
        bytes.starts_with(b"RIFF")
            || bytes.starts_with(b"\x89PNG")
            || bytes.starts_with(b"\xff\xd8"),
        "an image file"
    );
    let shot = shell.run(&["take_screenshot"]).await;
    shot.data();
    assert!(shot.stderr.contains("pass --out"), "{shot:?}");

    // The manifest: every tool (opt-in groups included) with its input schema, and one tool's.
    let manifest = shell.run(&["tools"]).await;
    manifest.expect_code(0);
    let tools = manifest.json()["tools"].as_array().unwrap().clone();
    for name in ["list_tabs", "click_element", "get_cookies"] {
        let tool = tools
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap_or_else(|| panic!("{name} in the manifest"));
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    let readable = shell.run_on_terminal(&["tools"]).await;
    assert!(readable.stdout.contains("\nlist_tabs: "), "{readable:?}");
    let help = shell.run(&["switch_tab", "--help"]).await;
    help.expect_code(0);
    assert_eq!(help.json()["name"], "switch_tab");
    let help = shell.run_on_terminal(&["switch_tab", "--help"]).await;
    assert!(
        help.stdout.contains("Usage: tabwire switch_tab")
            && help.stdout.contains("--tab-id integer"),
        "{help:?}"
    );
    let usage = shell.run_on_terminal(&["--help"]).await;
    assert!(usage.stdout.contains("Exit codes"), "{usage:?}");
}

#[tokio::test]
async fn no_hub_and_no_start_is_a_connection_error() {
    let scratch = Scratch::new("cli-nohub");
    let socket = scratch.path().join("run").join("hub.sock");
    let shell = Shell::with_socket(&socket);
    let refused = shell.run(&["--no-start", "list_tabs"]).await;
    assert_eq!(refused.error_code(2), "HUB_UNREACHABLE");
    assert_eq!(refused.json()["error"]["category"], "connection");
    assert!(
        refused.stderr.contains(&socket.display().to_string()),
        "names the socket: {refused:?}"
    );
    let refused = shell
        .run_with(&["list_tabs"], &[("TABWIRE_NO_START", "1")])
        .await;
    assert_eq!(refused.error_code(2), "HUB_UNREACHABLE");
    assert!(!socket.exists(), "no hub was started");
    // The output choice itself is checked before anything else.
    let bad = shell.run(&["--output", "yaml", "list_tabs"]).await;
    assert_eq!(bad.error_code(2), "USAGE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_by_name_and_a_selection_kept_per_shell_session() {
    let fixtures = Fixtures::serve().await;
    let hub = Hub::spawn();
    let login = fixtures.url("login.html");
    let counter = fixtures.url("counter.html");
    let _work = Browser::launch(&hub, "Work", &login);
    let _home = Browser::launch(&hub, "Home", &counter);
    let client = McpClient::connect(&hub).await;
    connected_browser(&client, "Work").await;
    let home_id = connected_browser(&client, "Home").await;
    for (name, url) in [("Work", &login), ("Home", &counter)] {
        let id = connected_browser(&client, name).await;
        loaded_tab(&client, json!({"browserId": id}), url).await;
    }
    let shell = Shell::on(&hub);

    // Two browsers and no choice: never guessed, the hub's BROWSER_NOT_SELECTED (exit 1).
    let unchosen = shell.run(&["list_tabs"]).await;
    assert_eq!(unchosen.error_code(1), "BROWSER_NOT_SELECTED");
    assert!(unchosen.json()["error"]["candidates"].is_array());

    // Per call, by name (before the tool or among its flags) or by ID.
    assert_eq!(
        tab_urls(&shell.run(&["--browser", "Work", "list_tabs"]).await),
        [login.as_str()]
    );
    assert_eq!(
        tab_urls(&shell.run(&["list_tabs", "--browser", "home"]).await),
        [counter.as_str()]
    );
    assert_eq!(
        tab_urls(&shell.run(&["list_tabs", "--browser", &home_id]).await),
        [counter.as_str()]
    );
    let nobody = shell.run(&["list_tabs", "--browser", "Nobody"]).await;
    assert_eq!(nobody.error_code(2), "USAGE");
    assert_eq!(
        nobody.json()["error"]["candidates"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // `select` keeps a choice for one shell session (TABWIRE_SESSION here) and no other.
    let a = [("TABWIRE_SESSION", "agent-a")];
    let b = [("TABWIRE_SESSION", "agent-b")];
    let selected = shell.run_with(&["select", "--browser", "Home"], &a).await;
    assert_eq!(selected.data()["selected"]["browserId"], home_id.as_str());
    assert_eq!(
        tab_urls(&shell.run_with(&["list_tabs"], &a).await),
        [counter.as_str()]
    );
    assert_eq!(
        shell.run_with(&["list_tabs"], &b).await.error_code(1),
        "BROWSER_NOT_SELECTED"
    );
    // A flag wins over the kept choice.
    assert_eq!(
        tab_urls(
            &shell
                .run_with(&["--browser", "Work", "list_tabs"], &a)
                .await
        ),
        [login.as_str()]
    );
    let files: Vec<_> = std::fs::read_dir(shell.runtime_dir().join("tabwire-cli"))
        .unwrap()
        .collect();
    assert_eq!(files.len(), 1, "one state file, session A's");
    shell.run_with(&["select", "--clear"], &a).await.data();
    assert_eq!(
        shell.run_with(&["list_tabs"], &a).await.error_code(1),
        "BROWSER_NOT_SELECTED"
    );

    // Without TABWIRE_SESSION the session is the process's (getsid): two commands of one
    // shell share the choice, a shell of another session (setsid) does not.
    let cli = cli_path().display().to_string();
    let sh = Path::new("/usr/bin/setsid");
    let same_session = shell
        .run_program(
            sh,
            &[
                "sh",
                "-c",
                &format!("'{cli}' select --browser Work >/dev/null && '{cli}' list_tabs"),
            ],
            &[],
        )
        .await;
    assert_eq!(tab_urls(&same_session), [login.as_str()]);
    let other_session = shell
        .run_program(sh, &[cli.as_str(), "list_tabs"], &[])
        .await;
    assert_eq!(other_session.error_code(1), "BROWSER_NOT_SELECTED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_hub_through_nginx_with_url_and_token() {
    let fixtures = Fixtures::serve().await;
    let hosted = Hosted::start();
    let agent = hosted.issue("carol", Role::Agent);
    let login = fixtures.url("login.html");
    let _chrome = hosted.launch_browser(&hosted.issue("carol", Role::Browser), "Carol", &login);
    let session = hosted.session(&agent).await;
    connected_browser(&session, "Carol").await;
    loaded_tab(&session, json!({}), &login).await;

    let scratch = Scratch::new("cli-ca");
    let ca = scratch.path().join("ca.pem");
    std::fs::write(&ca, &hosted.proxy.certs.ca_pem).unwrap();
    let shell = Shell::new()
        .env("TABWIRE_URL", &hosted.mcp_url())
        .env("TABWIRE_CA_CERT", &ca.display().to_string());

    let tabs = shell
        .run_with(
            &["list_tabs", "--browser", "Carol"],
            &[("TABWIRE_TOKEN", &agent)],
        )
        .await;
    assert_eq!(tab_urls(&tabs), [login.as_str()]);
    // The origin alone names the hub too, and a token file of the user's alone gives the token.
    let origin = hosted.origin();
    let token_file = scratch.path().join("token");
    std::fs::write(&token_file, format!("{agent}\n")).unwrap();
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let from_file = |extra: &'static [&'static str]| {
        let mut args = vec![
            "--url".to_owned(),
            origin.clone(),
            "--token-file".to_owned(),
            token_file.display().to_string(),
            "--ca-cert".to_owned(),
            ca.display().to_string(),
        ];
        args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        args
    };
    let args = from_file(&["get_page_snapshot", "--query", "Sign in"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let snapshot = Shell::new().run(&args).await;
    assert!(
        snapshot.data().to_string().contains("Sign in"),
        "{snapshot:?}"
    );
    // A token file others may read is refused, and so is a token on the command line, each
    // with the way to do it instead; neither repeats the token.
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let args = from_file(&["list_tabs"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let readable = Shell::new().run(&args).await;
    assert_eq!(readable.error_code(2), "USAGE");
    assert!(readable.stderr.contains("chmod 600"), "{readable:?}");
    let flagged = Shell::new()
        .run(&["--url", &origin, "--token", &agent, "list_tabs"])
        .await;
    assert_eq!(flagged.error_code(2), "USAGE");
    assert!(flagged.stderr.contains("--token-file"), "{flagged:?}");
    for run in [&readable, &flagged] {
        assert!(!run.stdout.contains(&agent) && !run.stderr.contains(&agent));
    }

    // A refused token is a connection error, and no output ever shows a token.
    let refused = shell
        .run_with(&["list_tabs"], &[("TABWIRE_TOKEN", "not-a-token")])
        .await;
    assert_eq!(refused.error_code(2), "HUB_UNREACHABLE");
    let revealing = shell
        .run_with(&["list_tab"], &[("TABWIRE_TOKEN", &agent)])
        .await;
    assert_eq!(revealing.error_code(2), "UNKNOWN_TOOL");
    for run in [&tabs, &snapshot, &refused, &revealing] {
        assert!(!run.stdout.contains(&agent) && !run.stderr.contains(&agent));
    }
    // Plain http:// off loopback is refused before anything is sent.
    let clear = Shell::new()
        .run_with(
            &["--url", "http://hub.example/mcp", "list_tabs"],
            &[("TABWIRE_TOKEN", &agent)],
        )
        .await;
    assert_eq!(clear.error_code(2), "USAGE");
    assert!(clear.stderr.contains("https://"), "{clear:?}");
    // No token at all: a usage error naming the variable.
    let tokenless = shell.run(&["list_tabs"]).await;
    assert_eq!(tokenless.error_code(2), "USAGE");
    assert!(tokenless.stderr.contains("TABWIRE_TOKEN"), "{tokenless:?}");
}

/// A hub the CLI started, stopped by its PID when the test ends however it ends.
struct StartedHub(Option<i32>);

impl StartedHub {
    fn stop(&mut self) {
        if let Some(pid) = self.0.take() {
            // SAFETY: signalling a process by PID has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }
}

impl Drop for StartedHub {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The PID of the hub a run says it started.
fn started_pid(run: &Run) -> i32 {
    run.stderr
        .split("started tabwire-hub (pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("stderr names the hub's PID: {run:?}"))
}

/// Whether process `pid` is gone: no such process, or a zombie nobody reaped (a container's
/// PID 1 may not reap the orphans it inherits).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn with_no_hub_running_the_cli_starts_one_and_later_calls_use_it() {
    let scratch = Scratch::new("cli-autostart");
    let socket = scratch.path().join("run").join("hub.sock");
    let state = scratch.path().join("state");
    let shell = Shell::with_socket(&socket)
        .env("TABWIRE_STATE_DIR", &state.display().to_string())
        .env("TABWIRE_PORT", "0");

    let first = shell.run(&["--no-browser", "list_browsers"]).await;
    let pid = started_pid(&first);
    let mut started = StartedHub(Some(pid));
    assert_eq!(first.data()["browsers"], json!([]));
    let log = state.join("hub.log");
    assert!(
        first.stderr.contains(&log.display().to_string()),
        "{first:?}"
    );
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("tabwire-hub listening"),
        "the hub's output goes to its log"
    );
    // The process listening on the socket is the one the CLI said it started, in a session of
    // its own.
    let stream = tokio::net::UnixStream::connect(&socket).await.unwrap();
    assert_eq!(stream.peer_cred().unwrap().pid(), Some(pid));
    drop(stream);
    // SAFETY: getsid has no preconditions.
    assert_eq!(
        unsafe { libc::getsid(pid) },
        pid,
        "the hub leads its own session"
    );

    // The next call finds it running and starts nothing.
    let second = shell.run(&["--no-browser", "list_browsers"]).await;
    second.data();
    assert!(!second.stderr.contains("started"), "{second:?}");

    started.stop();
    eventually(
        "the started hub to stop",
        std::time::Duration::from_secs(20),
        || async { gone(pid).then_some(()) },
    )
    .await;
    let after = shell.run(&["--no-start", "list_browsers"]).await;
    assert_eq!(after.error_code(2), "HUB_UNREACHABLE");
}

/// A hub the CLI started runs with the hub's defaults — file URLs closed — and stops by itself
/// once no MCP session has been open for its `--idle-exit` (here shortened through the hub's
/// variable, which the CLI leaves to the hub when it is set).
#[tokio::test]
async fn a_hub_the_cli_started_refuses_file_urls_and_stops_when_unused() {
    let scratch = Scratch::new("cli-idle");
    let socket = scratch.path().join("run").join("hub.sock");
    let shell = Shell::with_socket(&socket)
        .env(
            "TABWIRE_STATE_DIR",
            &scratch.path().join("state").display().to_string(),
        )
        .env("TABWIRE_PORT", "0")
        .env("TABWIRE_IDLE_EXIT", "3");
    let first = shell
        .run(&[
            "--no-browser",
            "create_tab",
            "--url",
            "file:///etc/hostname",
        ])
        .await;
    let pid = started_pid(&first);
    let mut started = StartedHub(Some(pid));
    assert_eq!(first.error_code(1), "FORBIDDEN", "{first:?}");
    assert!(
        first.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--allow-file-urls"),
        "{first:?}"
    );
    // Calls keep it running; once none has come for 3 s, it is gone by itself.
    eventually(
        "the unused hub to stop by itself",
        std::time::Duration::from_secs(30),
        || async { gone(pid).then_some(()) },
    )
    .await;
    started.0 = None;
    let after = shell.run(&["--no-start", "list_browsers"]).await;
    assert_eq!(after.error_code(2), "HUB_UNREACHABLE");
}

/// A page's terminal escape sequences (clipboard writes, titles, erasing the fence's opening
/// line) reach the hub as data, and are shown — never obeyed — when the CLI prints them on a
/// terminal; piped JSON escapes them too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_escapes_in_page_text_are_shown_not_obeyed() {
    let setup = OneBrowser::on("Esc", "escapes.html").await;
    let shell = Shell::on(&setup.hub);
    let args = ["get_page_content", "--format", "text"];
    // The attack reaches the hub: the structured data keeps the page's characters.
    let piped = shell.run(&args).await;
    let data = piped.data().to_string();
    assert!(data.contains("world"), "{piped:?}");
    let content = piped.data()["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        content.contains('\u{1b}') || data.contains("\\u001b"),
        "the page's ESC should reach the hub as data: {data}"
    );
    for raw in ['\u{1b}', '\u{7}', '\u{9b}'] {
        assert!(!piped.stdout.contains(raw), "raw {raw:?} in piped output");
    }
    let shown = shell.run_on_terminal(&args).await;
    shown.expect_code(0);
    assert!(shown.stdout.contains("Hello ␛]52;c;"), "{shown:?}");
    for raw in ['\u{1b}', '\u{7}', '\u{9b}'] {
        assert!(
            !shown.stdout.contains(raw),
            "raw {raw:?} on the terminal: {shown:?}"
        );
    }
}
