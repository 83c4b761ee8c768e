//! Network capture: the debugger's `Network` events of one tab turned into request records.
//!
//! The `Network` domain is on from tabwire's first attach to a tab (for network-idle waits), so
//! capture only decides which events become records. One record per request (and one more per
//! redirect, which Chrome reports under the same `requestId`):
//! `{seq, requestId, method, url, type, status?, statusText?, mimeType?, size?, ms?, error?,
//! canceled?}`, filled in as `requestWillBeSent`, `responseReceived` and `loadingFinished` or
//! `loadingFailed` arrive. Requests already under way when capture started are not recorded.
//!
//! Apart from the records, the capture remembers the requests it saw (their MIME type and how
//! they ended), so `get_response_body` can answer for a request whose record was read with
//! `clearAfter` or evicted.

use std::collections::{HashMap, VecDeque};

use serde::Deserialize;
use tabwire_protocol::NetworkRecord;
use tabwire_protocol::capture::MAX_RECORDS;

use super::buffer::{Record, RecordBuffer};
use crate::ops::budget::Fitted;
use crate::text::cap;

/// Longest URL kept in a record.
const URL_CHARS: usize = 500;
/// Longest of the other strings (method, type, status text, MIME type, error).
const SHORT_CHARS: usize = 200;
/// How many requests are remembered for their bodies.
const REMEMBERED: usize = 2 * MAX_RECORDS;

/// `Network.requestWillBeSent`, the fields read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestWillBeSent {
    request_id: String,
    request: Request,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    /// Seconds, monotonic.
    #[serde(default)]
    timestamp: f64,
    /// Present when this continues a redirect of the same `requestId`.
    #[serde(default)]
    redirect_response: Option<Response>,
    /// The document that made the request.
    #[serde(default, rename = "documentURL")]
    document_url: Option<String>,
    /// CDP's ID of the frame that made it.
    #[serde(default)]
    frame_id: Option<String>,
}

impl RequestWillBeSent {
    /// Chrome's ID of the request.
    pub fn request_id(&self) -> &str {
        &self.request_id
    }

    /// CDP's ID of the frame that made the request.
    pub fn frame_id(&self) -> Option<&str> {
        self.frame_id.as_deref()
    }
}

#[derive(Debug, Deserialize)]
struct Request {
    url: String,
    method: String,
}

/// `Network.responseReceived`, the fields read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResponseReceived {
    request_id: String,
    response: Response,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    #[serde(default)]
    status: f64,
    #[serde(default)]
    status_text: String,
    #[serde(default)]
    mime_type: String,
}

/// `Network.loadingFinished`, the fields read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadingFinished {
    request_id: String,
    #[serde(default)]
    timestamp: f64,
    #[serde(default)]
    encoded_data_length: f64,
}

/// `Network.loadingFailed`, the fields read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadingFailed {
    request_id: String,
    #[serde(default)]
    timestamp: f64,
    #[serde(default)]
    error_text: String,
    #[serde(default)]
    canceled: bool,
    #[serde(default)]
    blocked_reason: Option<String>,
}

/// How a remembered request ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Still loading.
    Loading,
    /// Loaded; Chrome may hold its body.
    Finished,
    /// Failed with this error: there is no body.
    Failed(String),
}

/// What `get_response_body` needs to know about a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    /// The response's MIME type (empty until the response arrives).
    pub mime_type: String,
    /// How it ended.
    pub outcome: Outcome,
}

/// A request whose record may still change.
#[derive(Debug)]
struct Open {
    seq: u64,
    /// `requestWillBeSent`'s timestamp, seconds.
    started: f64,
}

/// The network capture of one tab.
#[derive(Debug, Default)]
pub struct NetworkCapture {
    /// Whether events become records.
    pub on: bool,
    /// The records.
    pub records: RecordBuffer<NetworkRecord>,
    /// Requests not finished yet, by `requestId`.
    open: HashMap<String, Open>,
    /// Requests seen since capture started, by `requestId`, at most [`REMEMBERED`].
    seen: HashMap<String, Seen>,
    /// The keys of `seen`, oldest first.
    seen_order: VecDeque<String>,
}

impl NetworkCapture {
    /// A capture that records from now on.
    pub fn started() -> Self {
        Self {
            on: true,
            ..Self::default()
        }
    }

    /// What is remembered of a request, for its body.
    pub fn seen(&self, request_id: &str) -> Option<&Seen> {
        self.seen.get(request_id)
    }

    /// A request starts (or continues after a redirect); `hidden` when the frame that made it
    /// may not be read under the policy (see `frames.rs`).
    pub fn request_will_be_sent(&mut self, event: RequestWillBeSent, hidden: bool) {
        if let Some(redirect) = &event.redirect_response
            && let Some(open) = self.open.remove(&event.request_id)
            && let Some(record) = self.records.get_mut(open.seq)
        {
            set_response(record, redirect);
            set_ms(record, open.started, event.timestamp);
        }
        // Nothing of an origin the policy denies is kept: neither requests to it nor those its
        // pages make (a redirect into one is dropped from there on).
        let denied = |url: &str| !crate::policy::shows(url);
        if hidden || denied(&event.request.url) || event.document_url.as_deref().is_some_and(denied)
        {
            return;
        }
        let record = NetworkRecord {
            request_id: cap(&event.request_id, SHORT_CHARS),
            method: cap(&event.request.method, SHORT_CHARS),
            url: cap(&event.request.url, URL_CHARS),
            resource_type: event
                .kind
                .filter(|k| !k.is_empty())
                .map(|kind| cap(&kind, SHORT_CHARS)),
            ..NetworkRecord::default()
        };
        let seq = self.records.push(record);
        self.open.insert(
            event.request_id.clone(),
            Open {
                seq,
                started: event.timestamp,
            },
        );
        self.prune_open();
        self.remember(event.request_id, |seen| {
            seen.mime_type.clear();
            seen.outcome = Outcome::Loading;
        });
    }

    /// The response's headers arrived.
    pub fn response_received(&mut self, event: ResponseReceived) {
        if let Some(record) = self.open_record(&event.request_id) {
            set_response(record, &event.response);
        }
        if let Some(seen) = self.seen.get_mut(&event.request_id) {
            seen.mime_type = event.response.mime_type;
        }
    }

    /// The request finished loading.
    pub fn loading_finished(&mut self, event: LoadingFinished) {
        if let Some(open) = self.open.remove(&event.request_id)
            && let Some(record) = self.records.get_mut(open.seq)
        {
            if event.encoded_data_length.is_finite() && event.encoded_data_length >= 0.0 {
                record.size = Some(event.encoded_data_length.round() as u64);
            }
            set_ms(record, open.started, event.timestamp);
        }
        if let Some(seen) = self.seen.get_mut(&event.request_id) {
            seen.outcome = Outcome::Finished;
        }
    }

    /// The request failed (or was cancelled or blocked).
    pub fn loading_failed(&mut self, event: LoadingFailed) {
        let mut error = event.error_text;
        if let Some(reason) = event.blocked_reason.filter(|r| !r.is_empty()) {
            error = format!("{error} (blocked: {reason})");
        }
        let error = cap(&error, SHORT_CHARS);
        if let Some(open) = self.open.remove(&event.request_id)
            && let Some(record) = self.records.get_mut(open.seq)
        {
            record.error = Some(error.clone());
            if event.canceled {
                record.canceled = true;
            }
            set_ms(record, open.started, event.timestamp);
        }
        if let Some(seen) = self.seen.get_mut(&event.request_id) {
            seen.outcome = Outcome::Failed(error);
        }
    }

    fn open_record(&mut self, request_id: &str) -> Option<&mut NetworkRecord> {
        let seq = self.open.get(request_id)?.seq;
        self.records.get_mut(seq)
    }

    /// Forgets open requests whose records were evicted or cleared: their events have nothing
    /// left to fill in. Only when the map has grown, so this stays cheap.
    fn prune_open(&mut self) {
        if self.open.len() <= MAX_RECORDS {
            return;
        }
        let oldest = self.records.oldest_seq().unwrap_or(u64::MAX);
        self.open.retain(|_, open| open.seq >= oldest);
    }

    fn remember(&mut self, request_id: String, update: impl FnOnce(&mut Seen)) {
        if let Some(seen) = self.seen.get_mut(&request_id) {
            update(seen);
            return;
        }
        let mut seen = Seen {
            mime_type: String::new(),
            outcome: Outcome::Loading,
        };
        update(&mut seen);
        self.seen.insert(request_id.clone(), seen);
        self.seen_order.push_back(request_id);
        while self.seen_order.len() > REMEMBERED {
            if let Some(oldest) = self.seen_order.pop_front() {
                self.seen.remove(&oldest);
            }
        }
    }
}

fn set_response(record: &mut NetworkRecord, response: &Response) {
    if response.status.is_finite() && response.status > 0.0 {
        record.status = Some(response.status.round() as u32);
    }
    if !response.status_text.is_empty() {
        record.status_text = Some(cap(&response.status_text, SHORT_CHARS));
    }
    if !response.mime_type.is_empty() {
        record.mime_type = Some(cap(&response.mime_type, SHORT_CHARS));
    }
}

/// Sets the request's duration in milliseconds, from two monotonic timestamps in seconds.
fn set_ms(record: &mut NetworkRecord, started: f64, ended: f64) {
    let ms = (ended - started) * 1000.0;
    if started > 0.0 && ms.is_finite() && ms >= 0.0 {
        record.ms = Some(ms.round() as u64);
    }
}

impl Fitted for NetworkRecord {
    fn strings(&mut self) -> Vec<&mut String> {
        // The order of their JSON names: error, method, mimeType, requestId, statusText, type,
        // url.
        let mut strings = Vec::new();
        if let Some(error) = &mut self.error {
            strings.push(error);
        }
        strings.push(&mut self.method);
        if let Some(mime) = &mut self.mime_type {
            strings.push(mime);
        }
        strings.push(&mut self.request_id);
        if let Some(status_text) = &mut self.status_text {
            strings.push(status_text);
        }
        if let Some(kind) = &mut self.resource_type {
            strings.push(kind);
        }
        strings.push(&mut self.url);
        strings
    }
}

impl Record for NetworkRecord {
    fn set_seq(&mut self, seq: u64) {
        self.seq = seq;
    }
}

/// Whether a network record matches a read's filter (its URL contains the text, ignoring
/// ASCII case).
pub fn matcher(filter: Option<&str>) -> impl Fn(&NetworkRecord) -> bool + use<> {
    let needle = filter.unwrap_or_default().to_ascii_lowercase();
    move |record| needle.is_empty() || record.url.to_ascii_lowercase().contains(&needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use tabwire_protocol::RecordsRequest;

    fn event<T: for<'de> Deserialize<'de>>(value: Value) -> T {
        match serde_json::from_value(value) {
            Ok(event) => event,
            Err(e) => panic!("bad test event: {e}"),
        }
    }

    fn sent(capture: &mut NetworkCapture, id: &str, url: &str, timestamp: f64) {
        capture.request_will_be_sent(
            event(json!({
                "requestId": id, "timestamp": timestamp, "type": "Fetch",
                "request": { "url": url, "method": "GET", "headers": {} },
                "initiator": { "type": "script" }
            })),
            false,
        );
    }

    fn all(capture: &mut NetworkCapture, filter: Option<&str>) -> Vec<Value> {
        let request = RecordsRequest {
            limit: 100,
            offset: 0,
            filter: filter.map(str::to_owned),
            levels: Vec::new(),
            max_chars: 100_000,
            clear_after: false,
        };
        let records = capture.records.read(&request, matcher(filter)).records;
        records
            .iter()
            .map(|record| serde_json::to_value(record).unwrap())
            .collect()
    }

    #[test]
    fn a_request_is_filled_in_as_its_events_arrive() {
        let mut capture = NetworkCapture::started();
        sent(&mut capture, "7.1", "https://shop.example/api/cart", 10.0);
        capture.response_received(event(json!({
            "requestId": "7.1", "type": "Fetch",
            "response": { "status": 200, "statusText": "OK", "mimeType": "application/json",
                          "headers": {}, "url": "https://shop.example/api/cart" }
        })));
        capture.loading_finished(event(json!({
            "requestId": "7.1", "timestamp": 10.25, "encodedDataLength": 1234.0
        })));
        assert_eq!(
            all(&mut capture, None),
            [json!({
                "seq": 1, "requestId": "7.1", "method": "GET",
                "url": "https://shop.example/api/cart", "type": "Fetch", "status": 200,
                "statusText": "OK", "mimeType": "application/json", "size": 1234, "ms": 250
            })]
        );
        assert_eq!(
            capture.seen("7.1"),
            Some(&Seen {
                mime_type: "application/json".into(),
                outcome: Outcome::Finished
            })
        );
    }

    #[test]
    fn failures_redirects_and_long_urls() {
        let mut capture = NetworkCapture::started();
        sent(
            &mut capture,
            "1",
            &format!("https://x.example/{}", "a".repeat(600)),
            1.0,
        );
        capture.loading_failed(event(json!({
            "requestId": "1", "timestamp": 1.5, "type": "Image",
            "errorText": "net::ERR_BLOCKED_BY_CLIENT", "canceled": false,
            "blockedReason": "inspector"
        })));
        sent(&mut capture, "2", "http://x.example/old", 2.0);
        capture.request_will_be_sent(event(json!({
            "requestId": "2", "timestamp": 2.1, "type": "Document",
            "request": { "url": "https://x.example/new", "method": "GET" },
            "redirectResponse": { "status": 301, "statusText": "Moved", "mimeType": "text/html" }
        })), false);
        let records = all(&mut capture, None);
        assert_eq!(records.len(), 3);
        assert_eq!(
            records[0]["url"].as_str().map(|u| u.chars().count()),
            Some(URL_CHARS)
        );
        assert_eq!(
            records[0]["error"],
            json!("net::ERR_BLOCKED_BY_CLIENT (blocked: inspector)")
        );
        assert_eq!(records[0]["ms"], json!(500));
        assert_eq!(records[1]["status"], json!(301));
        assert_eq!(records[1]["ms"], json!(100));
        assert_eq!(records[2]["url"], json!("https://x.example/new"));
        assert!(records[2].get("status").is_none());
        assert!(matches!(
            capture.seen("1").map(|s| &s.outcome),
            Some(Outcome::Failed(e)) if e.starts_with("net::ERR_BLOCKED")
        ));
    }

    #[test]
    fn events_of_requests_from_before_the_capture_are_ignored() {
        let mut capture = NetworkCapture::started();
        capture.loading_finished(event(json!({ "requestId": "old", "timestamp": 3.0 })));
        assert!(all(&mut capture, None).is_empty());
        assert!(capture.seen("old").is_none());
    }

    #[test]
    fn the_url_filter_ignores_case() {
        let mut capture = NetworkCapture::started();
        sent(&mut capture, "1", "https://x.example/API/items", 1.0);
        sent(&mut capture, "2", "https://x.example/logo.png", 1.0);
        let api = all(&mut capture, Some("/api/"));
        assert_eq!(api.len(), 1);
        assert_eq!(api[0]["requestId"], json!("1"));
    }

    #[test]
    fn evicted_requests_stop_being_tracked() {
        let mut capture = NetworkCapture::started();
        for n in 0..(MAX_RECORDS + 100) {
            sent(&mut capture, &n.to_string(), "https://x.example/poll", 1.0);
        }
        assert_eq!(capture.records.evicted(), 100);
        assert!(capture.open.len() <= MAX_RECORDS + 1);
        // A body can still be asked for: the request is remembered apart from its record.
        assert!(capture.seen("0").is_some());
        for n in 0..REMEMBERED {
            sent(
                &mut capture,
                &format!("more{n}"),
                "https://x.example/poll",
                1.0,
            );
        }
        assert!(capture.seen("0").is_none());
        assert_eq!(capture.seen.len(), REMEMBERED);
    }
}
