//! Network and console capture (SPEC §6): `start_*_capture`, `stop_*_capture`,
//! `get_captured_requests`, `get_console_logs`, `get_response_body`.
//!
//! The extension keeps the records (at most 500 per tab and kind) and cuts every read to its
//! character budget; the hub checks the arguments and renders each record as one line, with a
//! footer saying where the page ends, what was evicted and what the budget cut. The data is
//! the protocol's struct as it came.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::json;
use tabwire_protocol::{
    ConsoleRecord, GetConsole, GetRequests, GetResponseBody, NetworkRecord, Records,
    RecordsRequest, ResponseBody, SetConsoleCapture, SetNetworkCapture, TabId,
};

use super::args::{self, NoArgs, in_range};
use super::envelope::{Rendering, ToolError, ToolOutput, quote_if_spaced};
use super::routing::ToolContext;
use super::screenshot::human_size;

/// Capture, cookie and storage reads: what the extension keeps, or one page call.
pub(super) const DEADLINE: Duration = Duration::from_secs(10);
const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = tabwire_protocol::capture::MAX_RECORDS as u32;
/// A page of records: the default and the most (SPEC §6).
const RECORDS_CHARS: u32 = 12_000;
const DEFAULT_BODY_CHARS: u32 = 10_000;
const MAX_BODY_CHARS: u32 = 50_000;
/// The smallest budget: one record, its strings cut to the minimum, still fits.
pub(super) const MIN_CHARS: u32 = 300;
/// The longest filter, cookie name or request ID accepted.
const MAX_ARG_LEN: usize = 1000;
/// A URL in a record line is cut to this many characters (the data has it whole).
pub(super) const MAX_LINE_URL: usize = 300;

/// Which records a capture tool is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Network,
    Console,
    /// The requests network mocks saw (`mock_network`).
    Mocks,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Network => "requests",
            Kind::Console => "console messages",
            Kind::Mocks => "requests seen by mocks",
        }
    }

    fn start_tool(self) -> &'static str {
        match self {
            Kind::Network => "start_network_capture",
            Kind::Console => "start_console_capture",
            Kind::Mocks => "mock_network {add}",
        }
    }

    fn read_tool(self) -> &'static str {
        match self {
            Kind::Network => "get_captured_requests",
            Kind::Console => "get_console_logs",
            Kind::Mocks => "mock_network {requests}",
        }
    }
}

pub const START_NETWORK_CAPTURE: &str = "Start recording a tab's network requests.";
pub const STOP_NETWORK_CAPTURE: &str = "Ends start_network_capture.";
pub const START_CONSOLE_CAPTURE: &str = "Start recording a tab's console and uncaught errors.";
pub const STOP_CONSOLE_CAPTURE: &str = "Ends start_console_capture.";

pub async fn start_network_capture(
    ctx: &ToolContext,
    _args: NoArgs,
) -> Result<ToolOutput, ToolError> {
    let state = ctx.call(SetNetworkCapture { on: true }, DEADLINE).await?;
    Ok(switched(Kind::Network, state))
}

pub async fn stop_network_capture(
    ctx: &ToolContext,
    _args: NoArgs,
) -> Result<ToolOutput, ToolError> {
    let state = ctx.call(SetNetworkCapture { on: false }, DEADLINE).await?;
    Ok(switched(Kind::Network, state))
}

pub async fn start_console_capture(
    ctx: &ToolContext,
    _args: NoArgs,
) -> Result<ToolOutput, ToolError> {
    let state = ctx.call(SetConsoleCapture { on: true }, DEADLINE).await?;
    Ok(switched(Kind::Console, state))
}

pub async fn stop_console_capture(
    ctx: &ToolContext,
    _args: NoArgs,
) -> Result<ToolOutput, ToolError> {
    let state = ctx.call(SetConsoleCapture { on: false }, DEADLINE).await?;
    Ok(switched(Kind::Console, state))
}

/// Capture switched on or off.
fn switched(kind: Kind, state: tabwire_protocol::CaptureState) -> ToolOutput {
    ToolOutput::new(
        json!(state),
        capture_text(kind, state.tab_id, state.capturing, state.kept),
    )
}

fn capture_text(kind: Kind, tab_id: TabId, capturing: bool, kept: u32) -> String {
    let what = match kind {
        Kind::Network | Kind::Mocks => "Network",
        Kind::Console => "Console",
    };
    if capturing {
        format!(
            "{what} capture on in tab {tab_id}; read with {}.",
            kind.read_tool()
        )
    } else {
        format!(
            "{what} capture off in tab {tab_id}; {kept} {} kept.",
            kind.noun()
        )
    }
}

/// Arguments of get_captured_requests.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestsArgs {
    /// URL contains.
    pub filter: Option<String>,
    pub limit: Option<u32>,
    pub offset: Option<u32>,
    pub clear_after: Option<bool>,
    pub max_chars: Option<u32>,
}

pub const GET_CAPTURED_REQUESTS: &str = "Recorded requests: method, status, type, URL, size, time, \
requestId.";

pub async fn get_captured_requests(
    ctx: &ToolContext,
    args: RequestsArgs,
) -> Result<ToolOutput, ToolError> {
    let request = records_request(
        args.limit,
        args.offset,
        args.filter,
        Vec::new(),
        args.clear_after,
        args.max_chars,
    )?;
    let records = ctx.call(GetRequests(request), DEADLINE).await?;
    Ok(records_output(Kind::Network, records, request_line))
}

// Console levels (no doc comment: it would describe every item of `levels` again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Level {
    Log,
    Info,
    Warning,
    Error,
    Debug,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Log => "log",
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
            Level::Debug => "debug",
        }
    }
}

/// Arguments of get_console_logs.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsoleArgs {
    /// Text contains.
    pub filter: Option<String>,
    pub levels: Option<Vec<Level>>,
    pub limit: Option<u32>,
    pub offset: Option<u32>,
    pub clear_after: Option<bool>,
    pub max_chars: Option<u32>,
}

pub const GET_CONSOLE_LOGS: &str = "Recorded console messages and uncaught errors.";

pub async fn get_console_logs(
    ctx: &ToolContext,
    args: ConsoleArgs,
) -> Result<ToolOutput, ToolError> {
    let request = records_request(
        args.limit,
        args.offset,
        args.filter,
        levels(args.levels)?,
        args.clear_after,
        args.max_chars,
    )?;
    let records = ctx.call(GetConsole(request), DEADLINE).await?;
    Ok(records_output(Kind::Console, records, console_line))
}

/// The levels asked for, without repeats; an empty list would match nothing and is refused.
fn levels(levels: Option<Vec<Level>>) -> Result<Vec<String>, ToolError> {
    let Some(levels) = levels else {
        return Ok(Vec::new());
    };
    if levels.is_empty() {
        return Err(ToolError::invalid(
            "levels is empty; omit it for every level",
        ));
    }
    let mut names: Vec<String> = Vec::new();
    for level in levels {
        let name = level.as_str().to_owned();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Ok(names)
}

/// Checks a records read's arguments and applies the defaults.
pub(super) fn records_request(
    limit: Option<u32>,
    offset: Option<u32>,
    filter: Option<String>,
    levels: Vec<String>,
    clear_after: Option<bool>,
    max_chars: Option<u32>,
) -> Result<RecordsRequest, ToolError> {
    Ok(RecordsRequest {
        limit: in_range(limit, DEFAULT_LIMIT, 1, MAX_LIMIT, "limit")?,
        offset: offset.unwrap_or(0),
        filter: short_text(filter, "filter")?,
        levels,
        max_chars: in_range(
            max_chars,
            RECORDS_CHARS,
            MIN_CHARS,
            RECORDS_CHARS,
            "maxChars",
        )?,
        clear_after: clear_after.unwrap_or(false),
    })
}

/// An optional text argument: not blank, at most [`MAX_ARG_LEN`] characters.
pub(super) fn short_text(value: Option<String>, name: &str) -> Result<Option<String>, ToolError> {
    args::short_text(value, name, MAX_ARG_LEN)
}

/// A page of records: the protocol's struct as data, and its rendering.
fn records_output<R: Serialize>(
    kind: Kind,
    records: Records<R>,
    line: fn(&R) -> String,
) -> ToolOutput {
    let text = render_records(kind, &records, line);
    ToolOutput::new(json!(records), text)
}

/// A header, one `line` per record (the page's: URLs, console text), and a footer with where to
/// continue and what is missing.
pub(super) fn render_records<R>(
    kind: Kind,
    records: &Records<R>,
    line: fn(&R) -> String,
) -> Rendering {
    let shown = records.records.len() as u32;
    let mut head = if shown > 0 {
        format!(
            "tab {} {} {}-{} of {}",
            records.tab_id,
            kind.noun(),
            records.offset + 1,
            records.offset + shown,
            records.total
        )
    } else if records.total > 0 {
        format!(
            "tab {}: no {} from offset {} ({} in all)",
            records.tab_id,
            kind.noun(),
            records.offset,
            records.total
        )
    } else {
        format!("tab {}: no {}", records.tab_id, kind.noun())
    };
    if !records.capturing {
        let off = match kind {
            Kind::Mocks => "no mock answers now",
            Kind::Network | Kind::Console => "capture is off",
        };
        head.push_str(&format!(" ({off}: {} starts it)", kind.start_tool()));
    }
    let mut lines = vec![Rendering::hub(head)];
    lines.extend(
        records
            .records
            .iter()
            .map(|record| Rendering::page(line(record))),
    );
    let mut footer = Vec::new();
    if let Some(next) = records.next_offset {
        footer.push(format!("next: offset={next}"));
    }
    if records.truncated {
        footer.push("cut to maxChars".to_owned());
    }
    if records.evicted > 0 {
        footer.push(format!(
            "{} older {} evicted (buffer full)",
            records.evicted,
            kind.noun()
        ));
    }
    if !footer.is_empty() {
        lines.push(Rendering::hub(format!("[{}]", footer.join("; "))));
    }
    Rendering::lines(lines)
}

/// Cuts a text to `max` characters, marking the cut.
pub(super) fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(max).collect();
        cut.push('…');
        cut
    }
}

/// Present and not empty.
fn given(text: &Option<String>) -> Option<&str> {
    text.as_deref().filter(|text| !text.is_empty())
}

/// `#12 GET 200 script https://x/app.js 14.2 KB 35 ms id=8812.4`
fn request_line(record: &NetworkRecord) -> String {
    let mut parts = vec![format!("#{}", record.seq)];
    if !record.method.is_empty() {
        parts.push(record.method.clone());
    }
    let error = given(&record.error);
    parts.push(match (record.status, error) {
        (Some(status), _) if status > 0 => status.to_string(),
        (_, Some(_)) => "failed".to_owned(),
        _ => "pending".to_owned(),
    });
    if let Some(kind) = &record.resource_type {
        parts.push(kind.clone());
    }
    if !record.url.is_empty() {
        parts.push(cut(&record.url, MAX_LINE_URL));
    }
    if let Some(size) = record.size {
        parts.push(human_size(size));
    }
    if let Some(ms) = record.ms {
        parts.push(format!("{ms} ms"));
    }
    if let Some(error) = error {
        parts.push(format!("error={}", quote_if_spaced(error)));
    }
    if !record.request_id.is_empty() {
        parts.push(format!("id={}", record.request_id));
    }
    parts.join(" ")
}

/// `#3 error Uncaught TypeError: x is undefined (app.js:12)`; line breaks shown as `\n`.
fn console_line(record: &ConsoleRecord) -> String {
    let mut line = format!("#{} ", record.seq);
    line.push_str(if record.level.is_empty() {
        "log"
    } else {
        &record.level
    });
    if record.exception {
        line.push_str(" (uncaught)");
    }
    line.push(' ');
    line.push_str(&record.text.replace('\n', "\\n"));
    if let Some(url) = given(&record.url) {
        // The file name says enough; the data has the whole URL.
        let path = url.split(['?', '#']).next().unwrap_or(url);
        let file = path
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(path);
        let file = if file.is_empty() { url } else { file };
        match record.line {
            Some(number) => line.push_str(&format!(" ({}:{number})", cut(file, 100))),
            None => line.push_str(&format!(" ({})", cut(file, 100))),
        }
    }
    line
}

/// Arguments of get_response_body.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResponseBodyArgs {
    pub request_id: String,
    #[schemars(extend("default" = 10000))]
    pub max_chars: Option<u32>,
}

pub const GET_RESPONSE_BODY: &str = "A recorded response's body; large or binary ones are cut or \
omitted.";

pub async fn get_response_body(
    ctx: &ToolContext,
    args: ResponseBodyArgs,
) -> Result<ToolOutput, ToolError> {
    let request_id = short_text(Some(args.request_id), "requestId")?.unwrap_or_default();
    let max_chars = in_range(
        args.max_chars,
        DEFAULT_BODY_CHARS,
        MIN_CHARS,
        MAX_BODY_CHARS,
        "maxChars",
    )?;
    let request = GetResponseBody {
        request_id,
        max_chars,
    };
    let body = ctx.call(request, DEADLINE).await?;
    Ok(ToolOutput::new(json!(body), render_body(&body)))
}

fn render_body(body: &ResponseBody) -> Rendering {
    let mime = if body.mime_type.is_empty() {
        "unknown type"
    } else {
        body.mime_type.as_str()
    };
    // The MIME type is the server's header.
    let mut text = Rendering::hub(format!(
        "tab {} response {} (",
        body.tab_id, body.request_id
    ));
    text.push_page(mime);
    text.push(&format!(", {} chars)", body.total_chars));
    if let Some(note) = &body.note {
        text.push(&format!(": {note}"));
    }
    if !body.body.is_empty() {
        text.push("\n");
        text.push_page(&body.body);
    }
    if body.truncated {
        text.push(&format!(
            "\n[first {} of {} chars]",
            body.body.chars().count(),
            body.total_chars
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use tabwire_protocol::ErrorCode;

    fn page<R>(records: Vec<R>) -> Records<R> {
        Records {
            tab_id: 4,
            capturing: true,
            total: 120,
            offset: 50,
            next_offset: Some(50 + records.len() as u32),
            records,
            evicted: 7,
            truncated: true,
        }
    }

    fn typed<R: serde::de::DeserializeOwned>(records: Vec<Value>) -> Vec<R> {
        records
            .into_iter()
            .map(|record| serde_json::from_value(record).unwrap())
            .collect()
    }

    fn requests() -> Records<NetworkRecord> {
        page(typed(vec![
            json!({"seq": 12, "requestId": "8812.4", "method": "GET", "url": "https://x.test/app.js",
                       "type": "script", "status": 200, "mimeType": "text/javascript", "size": 14540, "ms": 35}),
            json!({"seq": 13, "requestId": "8812.5", "method": "POST", "url": "https://x.test/api",
                       "type": "fetch", "error": "net::ERR_FAILED", "ms": 3}),
            json!({"seq": 14, "requestId": "8812.6", "method": "GET", "url": "https://x.test/poll",
                       "type": "xhr"}),
        ]))
    }

    fn console() -> Records<ConsoleRecord> {
        page(typed(vec![
            json!({"seq": 3, "level": "error", "text": "Uncaught TypeError: x is undefined",
                   "url": "https://x.test/js/app.js?v=2", "line": 12, "exception": true}),
            json!({"seq": 4, "level": "log", "text": "two\nlines"}),
        ]))
    }

    #[test]
    fn requests_render_one_line_each_with_a_footer() {
        assert_eq!(
            render_records(Kind::Network, &requests(), request_line),
            "tab 4 requests 51-53 of 120\n\
             #12 GET 200 script https://x.test/app.js 14.2 KB 35 ms id=8812.4\n\
             #13 POST failed fetch https://x.test/api 3 ms error=net::ERR_FAILED id=8812.5\n\
             #14 GET pending xhr https://x.test/poll id=8812.6\n\
             [next: offset=53; cut to maxChars; 7 older requests evicted (buffer full)]"
        );
    }

    #[test]
    fn console_messages_render_one_line_each() {
        let mut page = console();
        page.next_offset = None;
        page.truncated = false;
        page.evicted = 0;
        page.capturing = false;
        assert_eq!(
            render_records(Kind::Console, &page, console_line),
            "tab 4 console messages 51-52 of 120 (capture is off: start_console_capture starts it)\n\
             #3 error (uncaught) Uncaught TypeError: x is undefined (app.js:12)\n\
             #4 log two\\nlines"
        );
    }

    #[test]
    fn empty_pages_say_so() {
        let mut page = requests();
        page.records.clear();
        page.next_offset = None;
        page.truncated = false;
        page.evicted = 0;
        assert_eq!(
            render_records(Kind::Network, &page, request_line),
            "tab 4: no requests from offset 50 (120 in all)"
        );
        page.total = 0;
        page.offset = 0;
        assert_eq!(
            render_records(Kind::Network, &page, request_line),
            "tab 4: no requests"
        );
        // The data is the protocol's struct.
        let data = json!(page);
        assert_eq!(data["capturing"], true);
        assert!(data.get("nextOffset").is_none());
    }

    #[test]
    fn records_with_nothing_yet_still_render() {
        let bare = NetworkRecord {
            seq: 1,
            url: "https://x/".into(),
            ..Default::default()
        };
        assert_eq!(request_line(&bare), "#1 pending https://x/");
        assert_eq!(
            console_line(&ConsoleRecord {
                seq: 2,
                ..Default::default()
            }),
            "#2 log "
        );
        let long = NetworkRecord {
            url: format!("https://x/{}", "a".repeat(400)),
            ..bare
        };
        assert!(request_line(&long).ends_with("a…"));
    }

    #[test]
    fn record_reads_are_bounded() {
        let request = records_request(None, None, None, vec![], None, None).unwrap();
        assert_eq!(
            request,
            RecordsRequest {
                limit: 50,
                offset: 0,
                filter: None,
                levels: vec![],
                max_chars: 12_000,
                clear_after: false,
            }
        );
        for (limit, filter, max_chars, name) in [
            (Some(0), None, None, "limit"),
            (Some(501), None, None, "limit"),
            (None, Some(" "), None, "filter"),
            (None, None, Some(12_001), "maxChars"),
            (None, None, Some(99), "maxChars"),
        ] {
            let error =
                records_request(limit, None, filter.map(Into::into), vec![], None, max_chars)
                    .unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidArgument);
            assert!(error.message.starts_with(name), "{}", error.message);
        }
        assert_eq!(
            levels(Some(vec![Level::Error, Level::Warning, Level::Error])).unwrap(),
            vec!["error", "warning"]
        );
        assert!(levels(Some(vec![])).is_err());
        assert!(levels(None).unwrap().is_empty());
    }

    #[test]
    fn bodies_say_what_was_cut() {
        let body = ResponseBody {
            tab_id: 4,
            request_id: "8812.4".into(),
            mime_type: "application/json".into(),
            body: "{\"a\":".into(),
            total_chars: 5230,
            truncated: true,
            note: None,
        };
        assert_eq!(
            render_body(&body),
            "tab 4 response 8812.4 (application/json, 5230 chars)\n{\"a\":\n[first 5 of 5230 chars]"
        );
        let binary = ResponseBody {
            body: String::new(),
            truncated: false,
            mime_type: "image/png".into(),
            total_chars: 20_000,
            note: Some("binary body left out".into()),
            ..body
        };
        assert_eq!(
            render_body(&binary),
            "tab 4 response 8812.4 (image/png, 20000 chars): binary body left out"
        );
    }
}
