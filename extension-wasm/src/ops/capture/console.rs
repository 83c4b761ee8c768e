//! Console capture: console messages, uncaught exceptions and the browser's own log entries of
//! one tab, as records `{seq, level, text, url?, line?, exception?, source?}`.
//!
//! Three CDP events feed it: `Runtime.consoleAPICalled` (`console.log` and friends),
//! `Runtime.exceptionThrown` (uncaught errors and unhandled rejections) and `Log.entryAdded`
//! (what the browser itself reports: failed resources, CSP violations, interventions). A
//! message's text is built from the call's arguments the way DevTools shows it (`args`), and
//! capped.
//!
//! Enabling `Runtime` and `Log` makes Chrome replay the messages the page logged before; capture
//! records "from then on", so events stamped before the capture started are dropped.

use serde::Deserialize;
use serde_json::Value;
use tabwire_protocol::ConsoleRecord;

use super::args::{format_arg, format_args};
use super::buffer::{Record, RecordBuffer};
use crate::ops::budget::Fitted;
use crate::text::cap;

/// Longest text kept in a record.
const TEXT_CHARS: usize = 1000;
/// Longest URL kept in a record.
const URL_CHARS: usize = 500;

/// `Runtime.consoleAPICalled`, the fields read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleApiCalled {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    args: Vec<Value>,
    /// Milliseconds since the epoch.
    #[serde(default)]
    timestamp: f64,
    #[serde(default)]
    stack_trace: Option<StackTrace>,
    /// The JavaScript context that logged it.
    #[serde(default)]
    execution_context_id: Option<i64>,
}

impl ConsoleApiCalled {
    /// The JavaScript context that logged it.
    pub fn context(&self) -> Option<i64> {
        self.execution_context_id
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StackTrace {
    #[serde(default)]
    call_frames: Vec<CallFrame>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallFrame {
    #[serde(default)]
    url: String,
    /// 0-based.
    #[serde(default)]
    line_number: f64,
}

/// `Runtime.exceptionThrown`, the fields read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionThrown {
    /// Milliseconds since the epoch.
    #[serde(default)]
    timestamp: f64,
    exception_details: ExceptionDetails,
}

impl ExceptionThrown {
    /// The JavaScript context that threw.
    pub fn context(&self) -> Option<i64> {
        self.exception_details.execution_context_id
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExceptionDetails {
    /// "Uncaught", "Uncaught (in promise)".
    #[serde(default)]
    text: String,
    /// 0-based.
    #[serde(default)]
    line_number: f64,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    stack_trace: Option<StackTrace>,
    /// The thrown value, a `RemoteObject`.
    #[serde(default)]
    exception: Option<Value>,
    /// The JavaScript context that threw.
    #[serde(default)]
    execution_context_id: Option<i64>,
}

/// `Log.entryAdded`, the fields read.
#[derive(Debug, Deserialize)]
pub struct EntryAdded {
    entry: LogEntry,
}

impl EntryAdded {
    /// The request the entry is about, if any.
    pub fn request(&self) -> Option<&str> {
        self.entry.network_request_id.as_deref()
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogEntry {
    #[serde(default)]
    source: String,
    #[serde(default)]
    level: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    url: Option<String>,
    /// 0-based.
    #[serde(default)]
    line_number: Option<f64>,
    /// Milliseconds since the epoch.
    #[serde(default)]
    timestamp: f64,
    /// The request the entry is about.
    #[serde(default)]
    network_request_id: Option<String>,
}

/// The console capture of one tab.
#[derive(Debug)]
pub struct ConsoleCapture {
    /// Whether events become records.
    pub on: bool,
    /// The records.
    pub records: RecordBuffer<ConsoleRecord>,
    /// When capture started, milliseconds since the epoch: earlier events are replays.
    started_at: f64,
}

impl ConsoleCapture {
    /// A capture that records events stamped from `now_ms` on.
    pub fn started(now_ms: f64) -> Self {
        Self {
            on: true,
            records: RecordBuffer::default(),
            started_at: now_ms,
        }
    }

    /// Messages stamped before `now_ms` are replays from now on (a reattach makes Chrome replay
    /// everything it kept, which was recorded already).
    pub fn resume(&mut self, now_ms: f64) {
        self.started_at = now_ms;
    }

    fn is_replay(&self, timestamp: f64) -> bool {
        timestamp > 0.0 && timestamp < self.started_at
    }

    /// A `console.*` call.
    pub fn console_api_called(&mut self, event: ConsoleApiCalled) {
        if self.is_replay(event.timestamp) {
            return;
        }
        let level = match event.kind.as_str() {
            // Closing a group says nothing.
            "endGroup" => return,
            "error" | "assert" => "error",
            "warning" | "warn" => "warning",
            "info" => "info",
            "debug" => "debug",
            _ => "log",
        };
        let mut text = format_args(&event.args);
        if event.kind == "assert" {
            text = if text.is_empty() {
                "Assertion failed".to_owned()
            } else {
                format!("Assertion failed: {text}")
            };
        }
        let mut record = message(level, &text);
        if let Some(frame) = event.stack_trace.as_ref().and_then(top_frame) {
            locate(&mut record, &frame.url, Some(frame.line_number));
        }
        self.keep(record);
    }

    /// Keeps `record` unless it comes from an origin the policy denies.
    fn keep(&mut self, record: ConsoleRecord) {
        if record
            .url
            .as_deref()
            .is_some_and(|url| !crate::policy::shows(url))
        {
            return;
        }
        self.records.push(record);
    }

    /// An uncaught exception or unhandled rejection.
    pub fn exception_thrown(&mut self, event: ExceptionThrown) {
        if self.is_replay(event.timestamp) {
            return;
        }
        let details = event.exception_details;
        let thrown = details
            .exception
            .as_ref()
            .map(format_arg)
            .unwrap_or_default();
        let text = match (details.text.is_empty(), thrown.is_empty()) {
            (_, true) => details.text.clone(),
            (true, false) => thrown,
            (false, false) => format!("{} {thrown}", details.text),
        };
        let mut record = message("error", &text);
        record.exception = true;
        let frame = details.stack_trace.as_ref().and_then(top_frame);
        match (&details.url, frame) {
            (Some(url), _) if !url.is_empty() => {
                locate(&mut record, url, Some(details.line_number));
            }
            (_, Some(frame)) => locate(&mut record, &frame.url, Some(frame.line_number)),
            _ => {}
        }
        self.keep(record);
    }

    /// An entry of the browser's log.
    pub fn entry_added(&mut self, event: EntryAdded) {
        let entry = event.entry;
        if self.is_replay(entry.timestamp) {
            return;
        }
        let mut record = message(&normalize_level(&entry.level), &entry.text);
        if !entry.source.is_empty() {
            record.source = Some(cap(&entry.source, 50));
        }
        if let Some(url) = &entry.url {
            locate(&mut record, url, entry.line_number);
        }
        self.keep(record);
    }
}

fn message(level: &str, text: &str) -> ConsoleRecord {
    ConsoleRecord {
        level: level.to_owned(),
        text: cap(text, TEXT_CHARS),
        ..ConsoleRecord::default()
    }
}

fn top_frame(trace: &StackTrace) -> Option<&CallFrame> {
    trace.call_frames.iter().find(|f| !f.url.is_empty())
}

/// Sets `url` and the 1-based `line` (from CDP's 0-based line).
fn locate(record: &mut ConsoleRecord, url: &str, line: Option<f64>) {
    if url.is_empty() {
        return;
    }
    record.url = Some(cap(url, URL_CHARS));
    if let Some(line) = line.filter(|l| l.is_finite() && *l >= 0.0) {
        record.line = Some(line.round() as u64 + 1);
    }
}

impl Fitted for ConsoleRecord {
    fn strings(&mut self) -> Vec<&mut String> {
        // The order of their JSON names: level, source, text, url.
        let mut strings = vec![&mut self.level];
        if let Some(source) = &mut self.source {
            strings.push(source);
        }
        strings.push(&mut self.text);
        if let Some(url) = &mut self.url {
            strings.push(url);
        }
        strings
    }
}

impl Record for ConsoleRecord {
    fn set_seq(&mut self, seq: u64) {
        self.seq = seq;
    }
}

/// A level as records and filters spell it: `log`, `info`, `warning`, `error`, `debug`
/// (`warn` and `verbose` are taken for `warning` and `debug`).
pub fn normalize_level(level: &str) -> String {
    match level.to_ascii_lowercase().as_str() {
        "warn" => "warning".to_owned(),
        "verbose" => "debug".to_owned(),
        other => other.to_owned(),
    }
}

/// Whether a console record matches a read's filter: its text contains `filter` (ignoring
/// ASCII case), and its level is one of `levels` when any are given.
pub fn matcher(filter: Option<&str>, levels: &[String]) -> impl Fn(&ConsoleRecord) -> bool + use<> {
    let needle = filter.unwrap_or_default().to_ascii_lowercase();
    let levels: Vec<String> = levels.iter().map(|l| normalize_level(l)).collect();
    move |record| {
        let text_matches = needle.is_empty() || record.text.to_ascii_lowercase().contains(&needle);
        let level_matches = levels.is_empty() || levels.contains(&record.level);
        text_matches && level_matches
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tabwire_protocol::RecordsRequest;

    fn event<T: for<'de> Deserialize<'de>>(value: Value) -> T {
        match serde_json::from_value(value) {
            Ok(event) => event,
            Err(e) => panic!("bad test event: {e}"),
        }
    }

    fn read(capture: &mut ConsoleCapture, filter: Option<&str>, levels: &[&str]) -> Vec<Value> {
        let levels: Vec<String> = levels.iter().map(|l| (*l).to_owned()).collect();
        let request = RecordsRequest {
            limit: 100,
            offset: 0,
            filter: filter.map(str::to_owned),
            levels: levels.clone(),
            max_chars: 100_000,
            clear_after: false,
        };
        let records = capture
            .records
            .read(&request, matcher(filter, &levels))
            .records;
        records
            .iter()
            .map(|record| serde_json::to_value(record).unwrap())
            .collect()
    }

    fn log(capture: &mut ConsoleCapture, kind: &str, text: &str, timestamp: f64) {
        capture.console_api_called(event(json!({
            "type": kind, "timestamp": timestamp, "executionContextId": 1,
            "args": [{ "type": "string", "value": text }],
            "stackTrace": { "callFrames": [
                { "functionName": "", "url": "https://x.example/app.js", "lineNumber": 41,
                  "columnNumber": 3, "scriptId": "9" }
            ] }
        })));
    }

    #[test]
    fn console_calls_become_records_with_their_level_and_place() {
        let mut capture = ConsoleCapture::started(1000.0);
        log(&mut capture, "warning", "low stock", 1001.0);
        log(&mut capture, "assert", "cart empty", 1002.0);
        log(&mut capture, "endGroup", "", 1003.0);
        log(&mut capture, "table", "rows", 1004.0);
        assert_eq!(
            read(&mut capture, None, &[]),
            [
                json!({ "seq": 1, "level": "warning", "text": "low stock",
                        "url": "https://x.example/app.js", "line": 42 }),
                json!({ "seq": 2, "level": "error", "text": "Assertion failed: cart empty",
                        "url": "https://x.example/app.js", "line": 42 }),
                json!({ "seq": 3, "level": "log", "text": "rows",
                        "url": "https://x.example/app.js", "line": 42 }),
            ]
        );
    }

    #[test]
    fn replayed_messages_from_before_the_start_are_dropped() {
        let mut capture = ConsoleCapture::started(1000.0);
        log(&mut capture, "log", "old", 999.0);
        log(&mut capture, "log", "new", 1000.0);
        let records = read(&mut capture, None, &[]);
        assert_eq!(records.len(), 1);
        assert_eq!(records[0]["text"], json!("new"));
    }

    #[test]
    fn exceptions_say_what_was_thrown_and_where() {
        let mut capture = ConsoleCapture::started(0.0);
        capture.exception_thrown(event(json!({
            "timestamp": 5.0,
            "exceptionDetails": {
                "exceptionId": 1, "text": "Uncaught", "lineNumber": 9, "columnNumber": 2,
                "url": "https://x.example/app.js",
                "exception": { "type": "object", "subtype": "error", "className": "TypeError",
                               "description": "TypeError: x is undefined\n    at f (app.js:10:3)" }
            }
        })));
        capture.exception_thrown(event(json!({
            "timestamp": 6.0,
            "exceptionDetails": {
                "exceptionId": 2, "text": "Uncaught (in promise)", "lineNumber": 0,
                "columnNumber": 0, "exception": { "type": "string", "value": "nope" },
                "stackTrace": { "callFrames": [
                    { "url": "https://x.example/b.js", "lineNumber": 4, "columnNumber": 0 }
                ] }
            }
        })));
        let records = read(&mut capture, None, &[]);
        assert_eq!(
            records[0],
            json!({ "seq": 1, "level": "error", "exception": true,
                    "text": "Uncaught TypeError: x is undefined\n    at f (app.js:10:3)",
                    "url": "https://x.example/app.js", "line": 10 })
        );
        assert_eq!(records[1]["text"], json!("Uncaught (in promise) nope"));
        assert_eq!(records[1]["url"], json!("https://x.example/b.js"));
        assert_eq!(records[1]["line"], json!(5));
    }

    #[test]
    fn browser_log_entries_keep_their_source() {
        let mut capture = ConsoleCapture::started(0.0);
        capture.entry_added(event(json!({ "entry": {
            "source": "network", "level": "error", "timestamp": 3.0,
            "text": "Failed to load resource: the server responded with a status of 404 ()",
            "url": "https://x.example/missing.png", "networkRequestId": "5.2"
        } })));
        capture.entry_added(event(json!({ "entry": {
            "source": "other", "level": "verbose", "timestamp": 3.0, "text": "hint"
        } })));
        let records = read(&mut capture, None, &[]);
        assert_eq!(records[0]["level"], json!("error"));
        assert_eq!(records[0]["source"], json!("network"));
        assert_eq!(records[0]["url"], json!("https://x.example/missing.png"));
        assert!(records[0].get("line").is_none());
        assert_eq!(records[1]["level"], json!("debug"));
    }

    #[test]
    fn reads_filter_by_text_and_level() {
        let mut capture = ConsoleCapture::started(0.0);
        log(&mut capture, "log", "Loaded cart", 1.0);
        log(&mut capture, "warning", "cart is slow", 1.0);
        log(&mut capture, "error", "payment failed", 1.0);
        let texts = |records: Vec<Value>| -> Vec<Value> {
            records.into_iter().map(|r| r["text"].clone()).collect()
        };
        assert_eq!(
            texts(read(&mut capture, Some("CART"), &[])),
            [json!("Loaded cart"), json!("cart is slow")]
        );
        assert_eq!(
            texts(read(&mut capture, None, &["warn", "error"])),
            [json!("cart is slow"), json!("payment failed")]
        );
        assert_eq!(
            texts(read(&mut capture, Some("cart"), &["error"])),
            Vec::<Value>::new()
        );
    }

    #[test]
    fn long_messages_are_capped() {
        let mut capture = ConsoleCapture::started(0.0);
        let args: Vec<Value> = (0..5)
            .map(|_| json!({ "type": "string", "value": "y".repeat(400) }))
            .collect();
        capture.console_api_called(event(json!({ "type": "log", "args": args })));
        let records = read(&mut capture, None, &[]);
        let text = records[0]["text"].as_str().unwrap_or_default();
        assert_eq!(text.chars().count(), TEXT_CHARS);
        assert!(text.ends_with('…'));
    }
}
