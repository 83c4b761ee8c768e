//! `cargo run -p tabwire-e2e --bin bench-handshake [-- --hub PATH]...`: what oversized
//! handshakes cost a local hub in memory.
//!
//! Each hub (this checkout's `tabwire-hub` unless `--hub` names others, e.g. a build of an
//! older commit) is started on a free port, and sixteen strangers open its peer endpoints at
//! once (eight on `/browser` with an extension's Origin, eight on `/device`, each endpoint's
//! handshake places): each sends a 30 MiB first message in 1 MiB fragments, as fast as the hub
//! reads it, for at most 15 s. Prints the hub's peak resident memory (`VmHWM` in
//! `/proc/PID/status`) before and after, and how many bytes the strangers got through;
//! asserts nothing.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tabwire_e2e::scratch::Scratch;
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// The first message each stranger sends, and its fragments.
const MESSAGE: usize = 30 << 20;
const FRAGMENT: usize = 1 << 20;
/// How long one stranger keeps sending.
const SEND_FOR: Duration = Duration::from_secs(15);

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut hubs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--hub", Some(path)) => hubs.push(PathBuf::from(path)),
            _ => {
                eprintln!("usage: bench-handshake [--hub PATH]...");
                std::process::exit(2);
            }
        }
    }
    if hubs.is_empty() {
        hubs.push(tabwire_e2e::artifacts::artifacts().hub.clone());
    }
    println!(
        "peak memory of a local hub under 16 oversized handshakes (8 on /browser, 8 on /device; \
         each a {} MiB first message in {} MiB fragments, for at most {} s)",
        MESSAGE >> 20,
        FRAGMENT >> 20,
        SEND_FOR.as_secs()
    );
    println!("| hub | VmHWM at start | VmHWM after | grown by | sent by the strangers |");
    println!("| --- | --- | --- | --- | --- |");
    for hub in hubs {
        let (before, after, sent) = measure(&hub).await;
        println!(
            "| {} | {} MiB | {} MiB | {} MiB | {} MiB |",
            hub.display(),
            before / 1024,
            after / 1024,
            after.saturating_sub(before) / 1024,
            sent >> 20
        );
    }
}

/// Starts `program`, attacks it, and returns its VmHWM (KiB) before and after, and the bytes
/// sent.
async fn measure(program: &PathBuf) -> (u64, u64, usize) {
    let dir = Scratch::new("bench-handshake");
    let mut child = Command::new(program)
        .args(["--host", "127.0.0.1", "--port", "0", "--socket"])
        .arg(dir.path().join("run/hub.sock"))
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .env("TABWIRE_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("start {}: {error}", program.display()));
    let address = listening(&mut child);
    // Let the hub settle before its baseline.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = vm_hwm(child.id());
    let mut strangers = Vec::new();
    for index in 0..16 {
        let path = if index % 2 == 0 {
            "/browser"
        } else {
            "/device"
        };
        strangers.push(tokio::spawn(stranger(address.clone(), path)));
    }
    let mut sent = 0;
    for stranger in strangers {
        sent += stranger.await.unwrap_or(0);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = vm_hwm(child.id());
    let _ = child.kill();
    let _ = child.wait();
    (before, after, sent)
}

/// Waits for the hub's "listening" line; its HTTP address.
fn listening(child: &mut Child) -> String {
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stderr).lines();
    let address = loop {
        match lines.next() {
            Some(Ok(line)) => {
                if let Some(rest) = line.strip_prefix("tabwire-hub listening http=") {
                    break rest
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                }
            }
            _ => panic!("the hub printed no listening line"),
        }
    };
    // Keep draining its log, so the hub never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    address
}

/// One stranger: opens `path` and sends an oversized first message until the hub stops
/// reading or closes; the bytes that went out.
async fn stranger(address: String, path: &str) -> usize {
    let mut request = format!("ws://{address}{path}")
        .into_client_request()
        .expect("a request");
    if path == "/browser" {
        request.headers_mut().insert(
            "origin",
            "chrome-extension://hjpjigandemmiglamagndeppmlncdhag"
                .parse()
                .unwrap(),
        );
    }
    let Ok((mut ws, _)) = tokio_tungstenite::connect_async(request).await else {
        return 0;
    };
    let payload = vec![b'x'; FRAGMENT];
    let started = Instant::now();
    let mut sent = 0;
    let fragments = MESSAGE / FRAGMENT;
    for index in 0..fragments {
        let opcode = if index == 0 { 1 } else { 0 };
        let fin = if index + 1 == fragments { 0x80 } else { 0 };
        let mut frame = vec![fin | opcode, 0x80 | 127];
        frame.extend((FRAGMENT as u64).to_be_bytes());
        frame.extend([0, 0, 0, 0]);
        frame.extend_from_slice(&payload);
        let left = SEND_FOR.saturating_sub(started.elapsed());
        let socket = ws.get_mut();
        match tokio::time::timeout(left, socket.write_all(&frame)).await {
            Ok(Ok(())) => sent += frame.len(),
            _ => break,
        }
    }
    sent
}

/// `VmHWM` of a process, in KiB.
fn vm_hwm(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the hub runs");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}
