//! `first-run-check --shim PATH --socket PATH --browser NAME [--wait SECS] [--while-running PID]`:
//! the MCP client of
//! the fresh-machine check in `.ci/run`. It waits for a hub that `scripts/start` is bringing up
//! (building, installing, launching its browser), through the real shim, until the browser named
//! NAME is listed as connected; then it opens a page in that browser and snapshots it.
//!
//! It prints how long the browser took to connect, counted from this program's start (`.ci/run`
//! starts it together with `scripts/start`, so this is the time from the command to a connected
//! browser), and exits 1 with the reason when anything fails, the wait runs out, or the process
//! PID (`scripts/start`, which becomes the hub) ends first.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::json;
use tabwire_e2e::{Fixtures, Listener, McpClient};

struct Args {
    shim: PathBuf,
    socket: PathBuf,
    browser: String,
    wait: Duration,
    /// The process whose end means nothing is coming (Linux: looked up in `/proc`).
    while_running: Option<u32>,
}

fn parse_args() -> Result<Args, String> {
    let mut shim = None;
    let mut socket = None;
    let mut browser = None;
    let mut wait = Duration::from_secs(1800);
    let mut while_running = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--shim" => shim = Some(PathBuf::from(value()?)),
            "--socket" => socket = Some(PathBuf::from(value()?)),
            "--browser" => browser = Some(value()?),
            "--wait" => {
                let seconds = value()?;
                let seconds: u64 = seconds
                    .parse()
                    .map_err(|_| format!("--wait takes whole seconds, not {seconds:?}"))?;
                wait = Duration::from_secs(seconds);
            }
            "--while-running" => {
                let pid = value()?;
                while_running = Some(pid.parse().map_err(|_| format!("not a PID: {pid:?}"))?);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Args {
        shim: shim.ok_or("--shim is required")?,
        socket: socket.ok_or("--socket is required")?,
        browser: browser.ok_or("--browser is required")?,
        wait,
        while_running,
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let started = Instant::now();
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("first-run-check: {message}");
            return ExitCode::from(2);
        }
    };
    match check(&args, started).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("first-run-check: FAILED: {message}");
            ExitCode::FAILURE
        }
    }
}

/// An error when the process the check waits on has ended.
fn still_running(args: &Args) -> Result<(), String> {
    let Some(pid) = args.while_running else {
        return Ok(());
    };
    // An ended child that its parent shell has not reaped yet is a zombie (`Z`), still listed.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next());
    match state {
        Some(state) if state != 'Z' => Ok(()),
        _ => Err(format!(
            "process {pid} (scripts/start, then the hub) ended before the check passed"
        )),
    }
}

async fn check(args: &Args, started: Instant) -> Result<(), String> {
    let deadline = started + args.wait;
    // The shim itself waits only a few seconds for a hub; the build before it takes minutes.
    let client = loop {
        if args.shim.exists() && args.socket.exists() {
            match McpClient::connect_shim(&args.shim, &args.socket, Listener::named("first-run"))
                .await
            {
                Ok(client) => break client,
                Err(error) if Instant::now() > deadline => return Err(error),
                Err(_) => {}
            }
        }
        still_running(args)?;
        if Instant::now() > deadline {
            return Err(format!(
                "no hub at {} after {:?}",
                args.socket.display(),
                args.wait
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    println!(
        "first-run-check: hub answering after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let browser_id = loop {
        let listed = client.call("list_browsers", json!({})).await;
        let found = listed.data()["browsers"].as_array().and_then(|browsers| {
            browsers.iter().find(|browser| {
                browser["connected"] == true && browser["name"] == args.browser.as_str()
            })
        });
        if let Some(browser) = found {
            break browser["browserId"].as_str().unwrap_or_default().to_owned();
        }
        still_running(args)?;
        if Instant::now() > deadline {
            return Err(format!(
                "no connected browser named {:?} after {:?}; list_browsers said: {}",
                args.browser, args.wait, listed.text
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    println!(
        "first-run-check: browser {:?} ({browser_id}) connected after {:.1} s",
        args.browser,
        started.elapsed().as_secs_f64()
    );

    let fixtures = Fixtures::serve().await;
    let url = fixtures.url("login.html");
    let created = client
        .call("create_tab", json!({ "browserId": browser_id, "url": url }))
        .await;
    if created.is_error {
        return Err(format!("create_tab failed: {}", created.text));
    }
    let tab = created.data()["tabId"].clone();
    let snapshot = client
        .call(
            "get_page_snapshot",
            json!({ "browserId": browser_id, "tabId": tab }),
        )
        .await;
    if snapshot.is_error || !snapshot.text.contains("button \"Sign in\"") {
        return Err(format!(
            "the snapshot of {url} lacks its Sign in button: {}",
            snapshot.text
        ));
    }
    let lines = snapshot.text.lines().count();
    println!(
        "first-run-check: OK: snapshot of {url} in the launched browser ({lines} lines), {:.1} s in all",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
