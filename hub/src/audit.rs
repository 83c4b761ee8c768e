//! The audit log: one append-only JSON-lines file per account recording every tool call — who
//! (account, token ID, MCP session and client), where (the peer and tab), what (the tool, with
//! a URL it was given but typed text and form values by length only), and how it ended.
//!
//! Writing never holds up a tool call: [`AuditLog::record`] puts the record on a bounded
//! channel read by one writer thread; when the channel is full, or a write fails (a full disk,
//! a directory gone), the record is dropped and counted, and every drop is logged with the
//! count so far. The files rotate by size (`local.jsonl` → `local.jsonl.1` …), keeping
//! [`KEEP`] old ones. `tabwire-hub audit` reads them back.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value, json};
use tabwire_protocol::local::PrivateDirProblem;
use tokio::sync::mpsc;

/// A file is rotated once the next line would take it past this size.
pub const MAX_BYTES: u64 = 10 * 1024 * 1024;
/// How many rotated files are kept (`.1` is the newest).
pub const KEEP: usize = 3;
/// Records waiting for the writer; more are dropped.
const QUEUE: usize = 4096;

/// One tool call, as the log keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// When the call ended.
    pub time: SystemTime,
    /// The account.
    pub account: String,
    /// The token's ID (`jti`), or `local`.
    pub token_id: String,
    /// The MCP session.
    pub session: String,
    /// The MCP client's name, from `initialize`.
    pub client: Option<String>,
    /// The peer called: its kind's noun (`browser`) and ID, recorded as `browserId`.
    pub peer: Option<(&'static str, String)>,
    /// The tab, when the call named or reached one.
    pub tab_id: Option<u32>,
    /// The tool.
    pub tool: String,
    /// `ok`, the error code, or [`CANCELLED`].
    pub outcome: String,
    /// From the error: the action may have happened. For a cancelled call: whether any of its
    /// input may have gone out.
    pub action_may_have_occurred: bool,
    /// How long the call took.
    pub duration: Duration,
    /// What of the arguments may be kept.
    pub args: ArgsSummary,
    /// In a cluster: the replica the call came through (its node ID).
    pub replica: Option<String>,
    /// In a cluster: the replica holding the peer, when not the one the call came through.
    pub owner: Option<String>,
}

/// The outcome of a call its MCP client cancelled (or abandoned by going away) before it
/// ended: not an error code, as nobody was answered.
pub const CANCELLED: &str = "cancelled";

/// What the log keeps of a call's arguments: a URL as given, and the length of typed text and
/// form values — never the text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArgsSummary {
    /// A top-level `url` argument (`navigate_to`, `create_tab`…).
    pub url: Option<String>,
    /// The characters of every `text`, `value` and `values` argument, at any depth (a batch's
    /// steps, a form's fields); `None` when there is none.
    pub text_length: Option<usize>,
    /// The `tabId` argument, for a call refused before it was routed.
    pub tab_id: Option<u32>,
    /// The files an upload read or received: each one's name and size, never its bytes
    /// (filled in from the call's trace once it has ended).
    pub files: Vec<(String, u64)>,
    /// The clipboard's characters read or written, never the text (from the call's trace).
    pub clipboard: Option<(&'static str, usize)>,
    /// A recording started, stopped or returned by a handoff, with its number of steps, never
    /// what they hold (from the call's trace).
    pub recording: Option<(&'static str, usize)>,
}

impl ArgsSummary {
    /// The summary of `args`.
    pub fn of(args: &Map<String, Value>) -> ArgsSummary {
        /// Adds the characters of the strings in `value` (one, or an array of them).
        fn add(value: &Value, total: &mut Option<usize>) {
            match value {
                Value::String(text) => *total = Some(total.unwrap_or(0) + text.chars().count()),
                Value::Array(items) => items.iter().for_each(|item| add(item, total)),
                _ => {}
            }
        }
        fn walk(value: &Value, total: &mut Option<usize>) {
            match value {
                Value::Object(object) => {
                    for (key, value) in object {
                        if matches!(key.as_str(), "text" | "value" | "values") {
                            add(value, total);
                        } else {
                            walk(value, total);
                        }
                    }
                }
                Value::Array(items) => items.iter().for_each(|item| walk(item, total)),
                _ => {}
            }
        }
        let mut text_length = None;
        for (key, value) in args {
            if matches!(key.as_str(), "text" | "value" | "values") {
                add(value, &mut text_length);
            } else {
                walk(value, &mut text_length);
            }
        }
        ArgsSummary {
            url: args.get("url").and_then(Value::as_str).map(str::to_owned),
            text_length,
            tab_id: args
                .get("tabId")
                .and_then(Value::as_u64)
                .and_then(|id| u32::try_from(id).ok()),
            files: Vec::new(),
            clipboard: None,
            recording: None,
        }
    }
}

impl Record {
    /// The record as one JSON line (with its newline).
    pub fn to_line(&self) -> String {
        let mut line = Map::new();
        line.insert("time".into(), rfc3339(self.time).into());
        line.insert("account".into(), self.account.clone().into());
        line.insert("tokenId".into(), self.token_id.clone().into());
        line.insert("session".into(), self.session.clone().into());
        if let Some(client) = &self.client {
            line.insert("client".into(), client.clone().into());
        }
        if let Some((noun, id)) = &self.peer {
            line.insert(format!("{noun}Id"), id.clone().into());
        }
        if let Some(tab_id) = self.tab_id {
            line.insert("tabId".into(), tab_id.into());
        }
        line.insert("tool".into(), self.tool.clone().into());
        line.insert("outcome".into(), self.outcome.clone().into());
        line.insert(
            "actionMayHaveOccurred".into(),
            self.action_may_have_occurred.into(),
        );
        line.insert(
            "durationMs".into(),
            // Microseconds are enough, and keep the line short.
            json!(self.duration.as_micros() as f64 / 1000.0),
        );
        if let Some(url) = &self.args.url {
            line.insert("url".into(), url.clone().into());
        }
        if let Some(length) = self.args.text_length {
            line.insert("textLength".into(), length.into());
        }
        if !self.args.files.is_empty() {
            let files = self.args.files.iter();
            line.insert(
                "files".into(),
                files
                    .map(|(name, size)| json!({"name": name, "size": size}))
                    .collect(),
            );
        }
        if let Some((how, length)) = self.args.clipboard {
            line.insert("clipboard".into(), json!({ how: length }));
        }
        if let Some((how, steps)) = self.args.recording {
            line.insert("recording".into(), json!({ how: steps }));
        }
        if let Some(replica) = &self.replica {
            line.insert("replica".into(), replica.clone().into());
        }
        if let Some(owner) = &self.owner {
            line.insert("owner".into(), owner.clone().into());
        }
        let mut text = Value::Object(line).to_string();
        text.push('\n');
        text
    }
}

/// The hub's end of the audit log.
pub struct AuditLog {
    queue: mpsc::Sender<Record>,
    dropped: Arc<AtomicU64>,
}

impl AuditLog {
    /// Opens the log in `dir` (created private, or checked to be) and starts its writer thread.
    pub fn open(dir: &Path) -> Result<AuditLog, AuditError> {
        crate::private_dir::ensure(dir).map_err(|unfit| AuditError {
            dir: dir.to_owned(),
            problem: match unfit {
                crate::private_dir::Unfit::Io(error) => error.to_string(),
                crate::private_dir::Unfit::Problem(problem) => match problem {
                    PrivateDirProblem::NotADirectory => "it is not a directory".into(),
                    PrivateDirProblem::Owner(owner) => format!(
                        "it belongs to user {owner}, who could read what agents did; choose \
                         another --audit-dir"
                    ),
                    PrivateDirProblem::OpenToOthers { mode } => format!(
                        "it is open to other users (mode {mode:o}): chmod 700 {}",
                        dir.display()
                    ),
                },
            },
        })?;
        let (log, mut records) = AuditLog::queue(QUEUE);
        let mut writer = Writer::new(dir.to_owned(), MAX_BYTES);
        let dropped = log.dropped.clone();
        std::thread::Builder::new()
            .name("tabwire-audit".into())
            .spawn(move || {
                while let Some(record) = records.blocking_recv() {
                    if let Err(error) = writer.write(&record) {
                        count_drop(&dropped, &error.to_string());
                    }
                }
            })
            .map_err(|error| AuditError {
                dir: dir.to_owned(),
                problem: error.to_string(),
            })?;
        Ok(log)
    }

    /// A log whose records wait on a queue of `capacity` for whoever reads the receiver.
    pub(crate) fn queue(capacity: usize) -> (AuditLog, mpsc::Receiver<Record>) {
        let (queue, records) = mpsc::channel(capacity);
        let log = AuditLog {
            queue,
            dropped: Arc::new(AtomicU64::new(0)),
        };
        (log, records)
    }

    /// Queues `record` for writing, or drops and counts it when the writer is behind.
    pub fn record(&self, record: Record) {
        if self.queue.try_send(record).is_err() {
            count_drop(&self.dropped, "the writer is behind");
        }
    }

    /// Records dropped since the hub started.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// The audit directory cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("cannot keep the audit log in {}: {problem}", dir.display())]
pub struct AuditError {
    dir: PathBuf,
    problem: String,
}

fn count_drop(dropped: &AtomicU64, why: &str) {
    let count = dropped.fetch_add(1, Ordering::Relaxed) + 1;
    tracing::warn!(dropped = count, "audit log: dropped a record ({why})");
}

/// The file of `account` in an audit directory: its name with every character but ASCII
/// letters, digits, `-` and `_` percent-encoded, so a token's subject cannot name a path.
pub fn file_of(dir: &Path, account: &str) -> PathBuf {
    let mut name = String::new();
    for byte in account.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' {
            name.push(byte as char);
        } else {
            name.push_str(&format!("%{byte:02X}"));
        }
    }
    dir.join(format!("{name}.jsonl"))
}

/// The `n`th rotated file of `path` (`.1` is the newest).
pub fn rotated(path: &Path, n: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// Appends records to their account's file, rotating by size.
struct Writer {
    dir: PathBuf,
    max_bytes: u64,
    open: HashMap<String, (File, u64)>,
}

impl Writer {
    fn new(dir: PathBuf, max_bytes: u64) -> Writer {
        Writer {
            dir,
            max_bytes,
            open: HashMap::new(),
        }
    }

    fn write(&mut self, record: &Record) -> io::Result<()> {
        let line = record.to_line();
        let path = file_of(&self.dir, &record.account);
        let (_, size) = match self.open.get_mut(&record.account) {
            Some(open) => open,
            None => {
                let file = append(&path)?;
                let size = file.metadata()?.len();
                self.open
                    .entry(record.account.clone())
                    .or_insert((file, size))
            }
        };
        if *size > 0 && *size + line.len() as u64 > self.max_bytes {
            self.open.remove(&record.account);
            for n in (1..KEEP).rev() {
                let older = rotated(&path, n);
                if older.exists() {
                    std::fs::rename(&older, rotated(&path, n + 1))?;
                }
            }
            std::fs::rename(&path, rotated(&path, 1))?;
            let file = append(&path)?;
            self.open.insert(record.account.clone(), (file, 0));
        }
        let (file, size) = self.open.get_mut(&record.account).expect("opened above");
        if let Err(error) = file.write_all(line.as_bytes()) {
            // Reopen next time: the file may have been moved or its disk freed.
            self.open.remove(&record.account);
            return Err(error);
        }
        *size += line.len() as u64;
        Ok(())
    }
}

fn append(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

/// `YYYY-MM-DD HH:MM UTC` for seconds since the epoch ([`rfc3339`], shortened), as the CLI's
/// listings and the hub's sentences show a time.
pub fn minute_utc(secs: u64) -> String {
    let full = rfc3339(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs));
    format!("{} {} UTC", &full[..10], &full[11..16])
}

/// `time` in RFC 3339, UTC, with milliseconds: `2026-12-02T04:05:06.789Z`.
pub fn rfc3339(time: SystemTime) -> String {
    let since = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since.as_secs();
    let days = secs / 86_400;
    let (hour, minute, second) = ((secs % 86_400) / 3600, (secs % 3600) / 60, secs % 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{:03}Z",
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    fn dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "tabwire-audit-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        crate::private_dir::ensure(&dir).unwrap();
        dir
    }

    fn record(account: &str, args: Value) -> Record {
        Record {
            time: SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_996_800_123),
            account: account.into(),
            token_id: "local".into(),
            session: "s1".into(),
            client: Some("claude-code".into()),
            peer: Some(("browser", "b1".into())),
            tab_id: Some(7),
            tool: "type_text".into(),
            outcome: "ok".into(),
            action_may_have_occurred: false,
            duration: Duration::from_micros(12_500),
            args: ArgsSummary::of(args.as_object().unwrap()),
            replica: None,
            owner: None,
        }
    }

    #[test]
    fn a_clustered_record_names_its_replica_and_the_peer_s_owner() {
        let mut clustered = record("acme", json!({}));
        assert!(
            !clustered.to_line().contains("replica"),
            "a lone hub says nothing"
        );
        clustered.replica = Some("n2".into());
        clustered.owner = Some("n1".into());
        let line: Value = serde_json::from_str(&clustered.to_line()).unwrap();
        assert_eq!(line["replica"], "n2");
        assert_eq!(line["owner"], "n1");
    }

    #[test]
    fn a_record_keeps_urls_and_only_the_length_of_what_is_typed() {
        let typed = record(
            "local",
            json!({"selector": "@e3", "text": "hunter2é", "tabId": 7}),
        );
        let line = typed.to_line();
        assert!(line.ends_with('\n'));
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            value,
            json!({"time": "2026-11-30T00:00:00.123Z", "account": "local", "tokenId": "local",
                   "session": "s1", "client": "claude-code", "browserId": "b1", "tabId": 7,
                   "tool": "type_text", "outcome": "ok", "actionMayHaveOccurred": false,
                   "durationMs": 12.5, "textLength": 8})
        );
        let form = record(
            "local",
            json!({"fields": [{"selector": "#u", "value": "ada"},
                              {"selector": "#p", "value": "s3cret!"},
                              {"selector": "#c", "value": true}]}),
        );
        let line = form.to_line();
        assert!(!line.contains("s3cret") && !line.contains("ada"), "{line}");
        assert_eq!(form.args.text_length, Some(10));
        let batch = record(
            "local",
            json!({"steps": [{"tool": "type_text", "text": "pw"}, {"tool": "select_option", "values": ["x", "yz"]}]}),
        );
        assert_eq!(batch.args.text_length, Some(5));
        assert!(!batch.to_line().contains("\"pw\""));
        let refused = record("local", json!({"text": 42, "tabId": 7}));
        assert_eq!(refused.args.text_length, None, "no text, no length");
        assert_eq!(refused.args.tab_id, Some(7));
        let nav = record("local", json!({"url": "https://example.com/a?b=1"}));
        let value: Value = serde_json::from_str(&nav.to_line()).unwrap();
        assert_eq!(value["url"], "https://example.com/a?b=1");
        assert!(value.get("textLength").is_none());
    }

    #[test]
    fn a_device_call_names_its_device_and_only_the_length_of_what_is_typed() {
        let mut typed = record(
            "local",
            json!({"ref": "@d4", "text": "s3cret pass;$(x)", "deviceId": "android-1"}),
        );
        typed.peer = Some(("device", "android-1".into()));
        typed.tab_id = None;
        typed.tool = "device_type".into();
        let line = typed.to_line();
        assert!(!line.contains("s3cret"), "{line}");
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["deviceId"], "android-1");
        assert_eq!(value["textLength"], 16);
        assert!(value.get("browserId").is_none() && value.get("tabId").is_none());
    }

    #[test]
    fn account_names_cannot_name_paths() {
        let dir = Path::new("/a");
        assert_eq!(file_of(dir, "local"), Path::new("/a/local.jsonl"));
        assert_eq!(file_of(dir, "../x/y"), Path::new("/a/%2E%2E%2Fx%2Fy.jsonl"));
    }

    #[test]
    fn files_rotate_by_size_and_keep_a_few() {
        let dir = dir();
        let line_len = record("local", json!({})).to_line().len() as u64;
        // Two lines fit in a file; the third starts a new one.
        let mut writer = Writer::new(dir.clone(), line_len * 2);
        for _ in 0..9 {
            writer.write(&record("local", json!({}))).unwrap();
        }
        writer.write(&record("bob", json!({}))).unwrap();
        let path = file_of(&dir, "local");
        let lines = |path: &Path| std::fs::read_to_string(path).unwrap().lines().count();
        // 9 lines: .3 has 2, .2 has 2, .1 has 2, the current 1; the oldest 2 are gone.
        assert_eq!(lines(&path), 1);
        for n in 1..=KEEP {
            assert_eq!(lines(&rotated(&path, n)), 2, "{n}");
        }
        assert!(!rotated(&path, KEEP + 1).exists());
        assert_eq!(lines(&file_of(&dir, "bob")), 1);
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_writer_that_cannot_keep_up_drops_and_counts() {
        // Nobody reads the queue: the third record onwards finds it full.
        let (log, _records) = AuditLog::queue(2);
        for _ in 0..5 {
            log.record(record("local", json!({})));
        }
        assert_eq!(log.dropped(), 3);
    }

    #[test]
    fn a_failed_write_is_dropped_and_counted_without_failing() {
        let dir = dir();
        let log = AuditLog::open(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        log.record(record("local", json!({})));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while log.dropped() == 0 {
            assert!(std::time::Instant::now() < deadline, "no drop counted");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(log.dropped(), 1);
    }
}
