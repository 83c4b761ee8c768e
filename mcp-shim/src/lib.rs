//! `tabwire-mcp`: what an MCP client launches. It pipes the client's stdio to `tabwire-hub`'s
//! Unix socket, line by line, and keeps the session alive across hub restarts.
//!
//! The shim has no MCP logic of its own. What it adds to a plain pipe is exactly what SPEC §3
//! asks:
//! - every connection starts with an attach line naming this process's random session ID and
//!   the browser the session had selected (the hub reports selection changes on control lines),
//!   so a restarted hub restores the session;
//! - it keeps the client's `initialize` request and replays it (under a fresh ID, swallowing the
//!   answer) after a reconnect, so the hub sees a properly initialised session;
//! - requests that were in flight when the link dropped are answered with a JSON-RPC error
//!   saying the outcome is unknown. **Nothing is ever replayed**: a tool call may already have
//!   clicked something;
//! - requests that arrive while the hub is away are held for a while and sent once it is back,
//!   or answered with a "not sent" error when it stays away.
//!
//! It connects only to a hub of its own user, in a directory only that user can enter
//! ([`socket`]); anything else stops it with a [`Refusal`], at start or on a reconnect.
//!
//! stdout carries protocol bytes only; diagnostics go to stderr.

pub mod jsonrpc;
pub mod socket;

use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::time::Duration;

use jsonrpc::Kind;
use serde_json::Value;
use socket::Failure;
pub use socket::Refusal;
use tabwire_protocol::{LocalControl, Selections};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How the shim behaves.
#[derive(Debug, Clone)]
pub struct Options {
    /// The hub's Unix socket.
    pub socket: PathBuf,
    /// Where else the hub may listen when nothing answers at `socket`: the default socket's
    /// home fallback, when the default is in `/tmp` (a hub that started while another user held
    /// `/tmp/tabwire-<uid>` stays there after that directory is gone). Tried on every
    /// connection, after `socket`.
    pub also: Option<PathBuf>,
    /// How long to keep trying when the hub is not reachable at start.
    pub startup_wait: Duration,
    /// How long a request that arrives while the hub is away is held before it is answered
    /// with a "not sent" error.
    pub hold: Duration,
}

impl Options {
    /// The defaults for a socket path.
    pub fn new(socket: PathBuf) -> Self {
        Options {
            socket,
            also: None,
            startup_wait: Duration::from_secs(5),
            hold: Duration::from_secs(20),
        }
    }
}

/// Why the shim stopped with an error.
#[derive(Debug)]
pub enum ShimError {
    /// No hub answered at start.
    HubUnreachable {
        /// The socket tried.
        socket: PathBuf,
        /// The last connection error.
        reason: std::io::Error,
    },
    /// The socket is not safely the user's own hub: nothing was sent to it.
    Refused(Refusal),
    /// Reading the client's stdin or writing its stdout failed.
    Stdio(std::io::Error),
}

impl std::fmt::Display for ShimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShimError::HubUnreachable { socket, reason } => write!(
                f,
                "cannot reach tabwire-hub at {} ({reason}); start it with `tabwire-hub` or pass --socket",
                socket.display()
            ),
            ShimError::Refused(refusal) => write!(f, "{refusal}"),
            ShimError::Stdio(error) => write!(f, "stdio failed: {error}"),
        }
    }
}

impl std::error::Error for ShimError {}

/// Runs the pipe until the client closes stdin.
pub async fn run<I, O>(options: Options, stdin: I, stdout: O) -> Result<(), ShimError>
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let first = connect_within(&options, options.startup_wait).await?;
    let client = spawn_client_reader(stdin);
    let (to_client, writer) = spawn_client_writer(stdout);
    let mut shim = Shim {
        options,
        session: uuid::Uuid::new_v4().to_string(),
        selected: Selections::default(),
        initialize: None,
        initialize_pending: None,
        initialized: None,
        replays: 0,
        in_flight: HashSet::new(),
        held: VecDeque::new(),
        client,
        to_client,
    };
    let outcome = shim.serve(first).await;
    drop(shim);
    // Let the writer flush what is queued; it reports stdout failures.
    let written = writer.await.unwrap_or(Ok(()));
    outcome.and(written.map_err(ShimError::Stdio))
}

struct Shim {
    options: Options,
    /// Random per process; names this session to the hub across reconnections.
    session: String,
    /// What the hub last reported as selected for this session (browser, device…).
    selected: Selections,
    /// The client's `initialize` request, replayed to a new hub connection. Kept only once
    /// the hub has accepted it: an `initialize` cut off by a drop is failed, not replayed.
    initialize: Option<Value>,
    /// An `initialize` sent and not yet answered: its ID and the request.
    initialize_pending: Option<(String, Value)>,
    /// The client's `notifications/initialized`, replayed after the replayed `initialize`.
    initialized: Option<String>,
    /// Counts replays, to give each replayed `initialize` a fresh ID.
    replays: u64,
    /// IDs of client requests sent to the hub and not yet answered.
    in_flight: HashSet<String>,
    /// Client lines that arrived while the hub was away, with their arrival time.
    held: VecDeque<(Instant, String)>,
    /// Lines from the client; closed when stdin ends.
    client: mpsc::Receiver<String>,
    /// Lines for the client's stdout.
    to_client: mpsc::UnboundedSender<String>,
}

/// Why serving one hub connection ended.
enum LinkEnd {
    ClientGone,
    HubGone,
}

impl Shim {
    async fn serve(&mut self, mut stream: UnixStream) -> Result<(), ShimError> {
        loop {
            let end = match self.attach(stream).await {
                Ok((reader, writer)) => self.pipe(reader, writer).await,
                Err(_) => LinkEnd::HubGone,
            };
            if let LinkEnd::ClientGone = end {
                return Ok(());
            }
            self.fail_in_flight();
            eprintln!("tabwire-mcp: lost the hub; reconnecting");
            match self.reconnect().await {
                Ok(Some(next)) => stream = next,
                Ok(None) => return Ok(()),
                Err(refusal) => {
                    let why = format!("this request was not sent: {refusal}");
                    while let Some((_, line)) = self.held.pop_front() {
                        self.answer_not_sent(&line, &why);
                    }
                    return Err(ShimError::Refused(refusal));
                }
            }
        }
    }

    /// Starts a session on a fresh connection: attach line, then the replayed handshake.
    async fn attach(
        &mut self,
        stream: UnixStream,
    ) -> std::io::Result<(Lines<BufReader<OwnedReadHalf>>, OwnedWriteHalf)> {
        let (read, mut write) = stream.into_split();
        let mut reader = BufReader::new(read).lines();
        let attach = LocalControl::attach(self.session.clone(), self.selected.clone());
        write.write_all(attach.to_line().as_bytes()).await?;
        if let Some(initialize) = &self.initialize {
            self.replays += 1;
            let id = format!("tabwire-reinit-{}", self.replays);
            let line = jsonrpc::with_id(initialize, &id);
            write.write_all(format!("{line}\n").as_bytes()).await?;
            let wanted = Value::String(id).to_string();
            tokio::time::timeout(Duration::from_secs(10), async {
                while let Some(line) = reader.next_line().await? {
                    match jsonrpc::classify(&line) {
                        Kind::Response { id } if id == wanted => return Ok(()),
                        _ => self.handle_hub_line(line),
                    }
                }
                Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof))
            })
            .await
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
            if let Some(initialized) = &self.initialized {
                write
                    .write_all(format!("{initialized}\n").as_bytes())
                    .await?;
            }
            eprintln!("tabwire-mcp: reconnected to the hub; session restored");
        }
        // Lines held during the outage go out now, in order. They were never sent, so this is
        // not a replay.
        while let Some((_, line)) = self.held.pop_front() {
            self.send_to_hub(&mut write, line).await?;
        }
        Ok((reader, write))
    }

    /// Pipes lines both ways until one side goes away.
    async fn pipe(
        &mut self,
        mut reader: Lines<BufReader<OwnedReadHalf>>,
        mut writer: OwnedWriteHalf,
    ) -> LinkEnd {
        loop {
            tokio::select! {
                line = self.client.recv() => {
                    let Some(line) = line else { return LinkEnd::ClientGone };
                    if self.send_to_hub(&mut writer, line).await.is_err() {
                        return LinkEnd::HubGone;
                    }
                }
                line = reader.next_line() => match line {
                    Ok(Some(line)) => self.handle_hub_line(line),
                    Ok(None) | Err(_) => return LinkEnd::HubGone,
                },
            }
        }
    }

    /// Sends a client line to the hub, noting requests in flight and the handshake.
    async fn send_to_hub(
        &mut self,
        writer: &mut OwnedWriteHalf,
        line: String,
    ) -> std::io::Result<()> {
        match jsonrpc::classify(&line) {
            Kind::Request { id, method } => {
                if method == "initialize" {
                    self.initialize_pending = serde_json::from_str(&line)
                        .ok()
                        .map(|request| (id.clone(), request));
                }
                // Counted as in flight before the write: if the write fails half-way the hub
                // may still have read it, so its outcome is unknown too.
                self.in_flight.insert(id);
            }
            Kind::Notification { method } if method == "notifications/initialized" => {
                self.initialized = Some(line.clone());
            }
            Kind::Notification { .. } => {
                // A cancelled request gets no response from the hub; it is no longer in
                // flight, and must not be reported as "outcome unknown" after a later drop.
                if let Some(id) = jsonrpc::cancelled_request(&line) {
                    self.in_flight.remove(&id);
                }
            }
            _ => {}
        }
        writer.write_all(line.as_bytes()).await?;
        writer.write_all(b"\n").await
    }

    /// Handles a hub line: control lines update the session, the rest goes to the client.
    fn handle_hub_line(&mut self, line: String) {
        if let Some(control) = LocalControl::parse(&line) {
            if let Some(selected) = control.reported() {
                self.selected = selected;
            }
            return;
        }
        if let Kind::Response { id } = jsonrpc::classify(&line) {
            self.in_flight.remove(&id);
            if self
                .initialize_pending
                .as_ref()
                .is_some_and(|(pending, _)| *pending == id)
            {
                let (_, request) = self.initialize_pending.take().expect("checked above");
                if jsonrpc::is_success(&line) {
                    self.initialize = Some(request);
                }
            }
        }
        let _ = self.to_client.send(line);
    }

    fn fail_in_flight(&mut self) {
        self.initialize_pending = None;
        for id in self.in_flight.drain() {
            let line = jsonrpc::error_response(
                &id,
                jsonrpc::OUTCOME_UNKNOWN,
                "the connection to tabwire-hub was lost while this request was in flight; its \
                 outcome is unknown (a browser action may or may not have happened). It was not \
                 retried: inspect the page before repeating it",
            );
            let _ = self.to_client.send(line);
        }
    }

    /// Retries the hub with backoff, holding client lines meanwhile. `None` when the client
    /// left first; a refusal ends the retries.
    async fn reconnect(&mut self) -> Result<Option<UnixStream>, Refusal> {
        let mut backoff = Duration::from_millis(100);
        loop {
            match socket::connect_either(&self.options.socket, self.options.also.as_deref()).await {
                Ok((stream, _)) => return Ok(Some(stream)),
                Err(Failure::Refused(refusal)) => return Err(refusal),
                Err(Failure::Unreachable(_)) => {}
            }
            let retry_at = Instant::now() + backoff;
            backoff = (backoff * 2).min(Duration::from_secs(2));
            loop {
                self.expire_held();
                let next_expiry = self
                    .held
                    .front()
                    .map(|(at, _)| *at + self.options.hold)
                    .unwrap_or(retry_at)
                    .min(retry_at);
                tokio::select! {
                    line = self.client.recv() => match line {
                        Some(line) => self.held.push_back((Instant::now(), line)),
                        None => return Ok(None),
                    },
                    _ = tokio::time::sleep_until(next_expiry) => {
                        if Instant::now() >= retry_at {
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Answers held requests that waited longer than the hold time; they were never sent.
    fn expire_held(&mut self) {
        while let Some((at, _)) = self.held.front() {
            if at.elapsed() < self.options.hold {
                break;
            }
            let (_, line) = self.held.pop_front().expect("front exists");
            self.answer_not_sent(
                &line,
                "tabwire-hub is unreachable; this request was not sent and is safe to retry once \
                 the hub is running",
            );
        }
    }

    /// Answers a client line that never reached the hub, if it is a request.
    fn answer_not_sent(&self, line: &str, why: &str) {
        if let Kind::Request { id, .. } = jsonrpc::classify(line) {
            let reply = jsonrpc::error_response(&id, jsonrpc::NOT_SENT, why);
            let _ = self.to_client.send(reply);
        }
    }
}

/// Connects, retrying with a short backoff while nothing answers, until `wait` has passed; a
/// refusal is final at once.
async fn connect_within(options: &Options, wait: Duration) -> Result<UnixStream, ShimError> {
    let path = &options.socket;
    let give_up = Instant::now() + wait;
    let mut backoff = Duration::from_millis(50);
    loop {
        match socket::connect_either(path, options.also.as_deref()).await {
            Ok((stream, _)) => return Ok(stream),
            Err(Failure::Refused(refusal)) => return Err(ShimError::Refused(refusal)),
            Err(Failure::Unreachable(reason)) if Instant::now() + backoff > give_up => {
                return Err(ShimError::HubUnreachable {
                    socket: path.to_owned(),
                    reason,
                });
            }
            Err(Failure::Unreachable(_)) => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
            }
        }
    }
}

/// Reads client lines from stdin into a channel; the channel closes at end of input.
fn spawn_client_reader<I: AsyncRead + Unpin + Send + 'static>(stdin: I) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdin).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim().is_empty() {
                continue;
            }
            if tx.send(line).await.is_err() {
                break;
            }
        }
    });
    rx
}

/// Writes lines to stdout, one JSON-RPC message per line, flushing each.
fn spawn_client_writer<O: AsyncWrite + Unpin + Send + 'static>(
    mut stdout: O,
) -> (
    mpsc::UnboundedSender<String>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let task = tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            stdout.write_all(line.as_bytes()).await?;
            stdout.write_all(b"\n").await?;
            stdout.flush().await?;
        }
        Ok(())
    });
    (tx, task)
}
