//! `peer-probe`: a process of another user at the hub's Unix socket, for `e2e/socket_peers.rs`.
//! The test starts it as uid 65534 (`CommandExt::uid`), so the other end sees a real process of
//! another user, as the kernel reports it. Each mode prints one line of outcome on stdout:
//!
//! - `peer-probe connect SOCKET` sends what the shim sends (an attach line, then an MCP
//!   `initialize`) and prints `unreachable <error kind>` when it cannot connect, `answered
//!   <line>` when something answers, `closed` when the connection is closed unanswered, and
//!   `silent` when nothing happens for 10 s.
//! - `peer-probe listen SOCKET` poses as the hub: it listens on SOCKET, prints `listening`, and
//!   for the first connection within 10 s prints `received <n>`, the bytes it got before the
//!   other side closed (or `no connection`).

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::{Duration, Instant};

use tabwire_protocol::{LocalControl, Selections};

const PATIENCE: Duration = Duration::from_secs(10);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.as_slice() {
        [mode, socket] if mode == "connect" => connect(Path::new(socket)),
        [mode, socket] if mode == "listen" => listen(Path::new(socket)),
        _ => {
            eprintln!("usage: peer-probe connect|listen SOCKET");
            std::process::exit(2);
        }
    };
    println!("{outcome}");
}

fn connect(socket: &Path) -> String {
    let mut stream = match UnixStream::connect(socket) {
        Ok(stream) => stream,
        Err(error) => return format!("unreachable {:?}", error.kind()),
    };
    let attach = LocalControl::attach("peer-probe".into(), Selections::default()).to_line();
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"peer-probe","version":"0"}}}"#;
    // A hub that closed the connection at once makes these writes fail; the read says so.
    let _ = stream.write_all(attach.as_bytes());
    let _ = stream.write_all(format!("{initialize}\n").as_bytes());
    stream
        .set_read_timeout(Some(PATIENCE))
        .expect("set a read timeout");
    let mut line = String::new();
    match BufReader::new(stream).read_line(&mut line) {
        Ok(0) => "closed".to_owned(),
        Ok(_) => format!("answered {}", line.trim_end()),
        Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            "silent".to_owned()
        }
        Err(error) if error.kind() == ErrorKind::ConnectionReset => "closed".to_owned(),
        Err(error) => format!("error {error}"),
    }
}

fn listen(socket: &Path) -> String {
    let listener = UnixListener::bind(socket).expect("bind the socket");
    println!("listening");
    std::io::stdout().flush().expect("stdout");
    // Polled, so a client that never comes ends the probe too.
    listener
        .set_nonblocking(true)
        .expect("non-blocking listener");
    let give_up = Instant::now() + PATIENCE;
    let mut stream = loop {
        match listener.accept() {
            Ok((stream, _)) => break stream,
            Err(error) if error.kind() == ErrorKind::WouldBlock && Instant::now() < give_up => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                return "no connection".to_owned();
            }
            Err(error) => return format!("error {error}"),
        }
    };
    stream.set_nonblocking(false).expect("blocking stream");
    stream
        .set_read_timeout(Some(PATIENCE))
        .expect("set a read timeout");
    let mut received = Vec::new();
    // A timeout keeps what arrived until then: that count is the outcome either way.
    let _ = stream.read_to_end(&mut received);
    format!("received {}", received.len())
}
