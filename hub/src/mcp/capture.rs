//! Network and console capture, cookies and local storage (SPEC §6).
//!
//! The extension keeps the records (at most 500 per tab and kind) and cuts every read to its
//! character budget; the hub checks the arguments and renders each record as one line, with a
//! footer saying where the page ends, what was evicted and what the budget cut. The data is
//! the protocol's struct as it came.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tabwire_protocol::{
    Records, RecordsRequest, ResponseBody, StorageEntries, TabId, TabOp, TabResult,
};

use super::args::{self, in_range};
use super::envelope::{ToolError, ToolOutput, quote_if_spaced, quoted};
use super::routing::{ToolContext, unexpected};
use super::screenshot::human_size;
use super::tabs::{TabArgs, tab_op};

const DEADLINE: Duration = Duration::from_secs(10);
const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = tabwire_protocol::capture::MAX_RECORDS as u32;
/// A page of records: the default and the most (SPEC §6).
const RECORDS_CHARS: u32 = 12_000;
const DEFAULT_BODY_CHARS: u32 = 10_000;
const MAX_BODY_CHARS: u32 = 50_000;
const DEFAULT_STORAGE_CHARS: u32 = 4000;
const MAX_STORAGE_CHARS: u32 = 20_000;
/// The smallest budget: one record, its strings cut to the minimum, still fits.
const MIN_CHARS: u32 = 300;
/// The longest filter, cookie name or request ID accepted.
const MAX_ARG_LEN: usize = 1000;
/// A URL in a record line is cut to this many characters (the data has it whole).
const MAX_LINE_URL: usize = 300;

/// Which records a capture tool is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Network,
    Console,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Network => "requests",
            Kind::Console => "console messages",
        }
    }

    fn start_tool(self) -> &'static str {
        match self {
            Kind::Network => "start_network_capture",
            Kind::Console => "start_console_capture",
        }
    }

    fn read_tool(self) -> &'static str {
        match self {
            Kind::Network => "get_captured_requests",
            Kind::Console => "get_console_logs",
        }
    }
}

pub const START_NETWORK_CAPTURE: &str = "Start recording a tab's network requests.";
pub const STOP_NETWORK_CAPTURE: &str = "Stop recording a tab's network requests.";
pub const START_CONSOLE_CAPTURE: &str = "Start recording a tab's console and uncaught errors.";
pub const STOP_CONSOLE_CAPTURE: &str = "Stop recording a tab's console messages.";

pub async fn start_network_capture(
    ctx: &ToolContext,
    args: TabArgs,
) -> Result<ToolOutput, ToolError> {
    switch(ctx, args, Kind::Network, true).await
}

pub async fn stop_network_capture(
    ctx: &ToolContext,
    args: TabArgs,
) -> Result<ToolOutput, ToolError> {
    switch(ctx, args, Kind::Network, false).await
}

pub async fn start_console_capture(
    ctx: &ToolContext,
    args: TabArgs,
) -> Result<ToolOutput, ToolError> {
    switch(ctx, args, Kind::Console, true).await
}

pub async fn stop_console_capture(
    ctx: &ToolContext,
    args: TabArgs,
) -> Result<ToolOutput, ToolError> {
    switch(ctx, args, Kind::Console, false).await
}

/// Turns capture on or off.
async fn switch(
    ctx: &ToolContext,
    args: TabArgs,
    kind: Kind,
    on: bool,
) -> Result<ToolOutput, ToolError> {
    let (tool, op) = match (kind, on) {
        (Kind::Network, true) => ("start_network_capture", TabOp::NetworkCapture { on }),
        (Kind::Network, false) => ("stop_network_capture", TabOp::NetworkCapture { on }),
        (Kind::Console, true) => ("start_console_capture", TabOp::ConsoleCapture { on }),
        (Kind::Console, false) => ("stop_console_capture", TabOp::ConsoleCapture { on }),
    };
    let result = tab_op(
        ctx,
        tool,
        args.browser_id.as_deref(),
        args.tab_id,
        op,
        DEADLINE,
    )
    .await?;
    let TabResult::Capture {
        tab_id,
        capturing,
        kept,
    } = result
    else {
        return Err(unexpected(tool));
    };
    Ok(ToolOutput::new(
        json!({"tabId": tab_id, "capturing": capturing, "kept": kept}),
        capture_text(kind, tab_id, capturing, kept),
    ))
}

fn capture_text(kind: Kind, tab_id: TabId, capturing: bool, kept: u32) -> String {
    let what = match kind {
        Kind::Network => "Network",
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
    pub tab_id: Option<TabId>,
    pub browser_id: Option<String>,
}

pub const GET_CAPTURED_REQUESTS: &str = "Read recorded requests: method, status, type, URL, size, \
time, requestId.";

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
    read_records(
        ctx,
        Kind::Network,
        args.browser_id.as_deref(),
        args.tab_id,
        TabOp::GetRequests(request),
    )
    .await
}

/// Console levels.
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
    pub tab_id: Option<TabId>,
    pub browser_id: Option<String>,
}

pub const GET_CONSOLE_LOGS: &str = "Read recorded console messages and uncaught errors.";

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
    read_records(
        ctx,
        Kind::Console,
        args.browser_id.as_deref(),
        args.tab_id,
        TabOp::GetConsole(request),
    )
    .await
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
fn records_request(
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
fn short_text(value: Option<String>, name: &str) -> Result<Option<String>, ToolError> {
    args::short_text(value, name, MAX_ARG_LEN)
}

async fn read_records(
    ctx: &ToolContext,
    kind: Kind,
    browser_id: Option<&str>,
    tab_id: Option<TabId>,
    op: TabOp,
) -> Result<ToolOutput, ToolError> {
    let tool = kind.read_tool();
    let result = tab_op(ctx, tool, browser_id, tab_id, op, DEADLINE).await?;
    let TabResult::Records(records) = result else {
        return Err(unexpected(tool));
    };
    Ok(ToolOutput::new(
        json!(records),
        render_records(kind, &records),
    ))
}

/// A header, one line per record, and a footer with where to continue and what is missing.
fn render_records(kind: Kind, records: &Records) -> String {
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
        head.push_str(&format!(
            " (capture is off: {} starts it)",
            kind.start_tool()
        ));
    }
    let mut lines = vec![head];
    lines.extend(records.records.iter().map(|record| match kind {
        Kind::Network => request_line(record),
        Kind::Console => console_line(record),
    }));
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
        lines.push(format!("[{}]", footer.join("; ")));
    }
    lines.join("\n")
}

fn string<'a>(record: &'a Value, key: &str) -> Option<&'a str> {
    record.get(key).and_then(Value::as_str)
}

fn number(record: &Value, key: &str) -> Option<u64> {
    record.get(key).and_then(Value::as_u64)
}

/// Cuts a text to `max` characters, marking the cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(max).collect();
        cut.push('…');
        cut
    }
}

/// `#12 GET 200 script https://x/app.js 14.2 KB 35 ms id=8812.4`
fn request_line(record: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(seq) = number(record, "seq") {
        parts.push(format!("#{seq}"));
    }
    if let Some(method) = string(record, "method") {
        parts.push(method.to_owned());
    }
    let error = string(record, "error").filter(|e| !e.is_empty());
    parts.push(match (number(record, "status"), error) {
        (Some(status), _) if status > 0 => status.to_string(),
        (_, Some(_)) => "failed".to_owned(),
        _ => "pending".to_owned(),
    });
    if let Some(kind) = string(record, "type") {
        parts.push(kind.to_owned());
    }
    if let Some(url) = string(record, "url") {
        parts.push(cut(url, MAX_LINE_URL));
    }
    if let Some(size) = number(record, "size") {
        parts.push(human_size(size));
    }
    if let Some(ms) = record.get("ms").and_then(Value::as_f64) {
        parts.push(format!("{} ms", ms.round()));
    }
    if let Some(error) = error {
        parts.push(format!("error={}", quote_if_spaced(error)));
    }
    if let Some(id) = string(record, "requestId") {
        parts.push(format!("id={id}"));
    }
    parts.join(" ")
}

/// `#3 error Uncaught TypeError: x is undefined (app.js:12)`; line breaks shown as `\n`.
fn console_line(record: &Value) -> String {
    let mut line = String::new();
    if let Some(seq) = number(record, "seq") {
        line.push_str(&format!("#{seq} "));
    }
    line.push_str(string(record, "level").unwrap_or("log"));
    if record.get("exception") == Some(&Value::Bool(true)) {
        line.push_str(" (uncaught)");
    }
    line.push(' ');
    line.push_str(&string(record, "text").unwrap_or("").replace('\n', "\\n"));
    if let Some(url) = string(record, "url").filter(|url| !url.is_empty()) {
        // The file name says enough; the data has the whole URL.
        let path = url.split(['?', '#']).next().unwrap_or(url);
        let file = path
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(path);
        let file = if file.is_empty() { url } else { file };
        match number(record, "line") {
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
    /// From get_captured_requests.
    pub request_id: String,
    /// Default 10000.
    pub max_chars: Option<u32>,
    pub tab_id: Option<TabId>,
    pub browser_id: Option<String>,
}

pub const GET_RESPONSE_BODY: &str = "A recorded response's body by requestId; large or binary \
bodies are cut or omitted.";

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
    let tool = "get_response_body";
    let result = tab_op(
        ctx,
        tool,
        args.browser_id.as_deref(),
        args.tab_id,
        TabOp::GetResponseBody {
            request_id,
            max_chars,
        },
        DEADLINE,
    )
    .await?;
    let TabResult::Body(body) = result else {
        return Err(unexpected(tool));
    };
    Ok(ToolOutput::new(json!(body), render_body(&body)))
}

fn render_body(body: &ResponseBody) -> String {
    let mime = if body.mime_type.is_empty() {
        "unknown type"
    } else {
        body.mime_type.as_str()
    };
    let mut text = format!(
        "tab {} response {} ({mime}, {} chars)",
        body.tab_id, body.request_id, body.total_chars
    );
    if let Some(note) = &body.note {
        text.push_str(&format!(": {note}"));
    }
    if !body.body.is_empty() {
        text.push('\n');
        text.push_str(&body.body);
    }
    if body.truncated {
        text.push_str(&format!(
            "\n[first {} of {} chars]",
            body.body.chars().count(),
            body.total_chars
        ));
    }
    text
}

/// Arguments of get_cookies.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CookiesArgs {
    pub url: Option<String>,
    pub name: Option<String>,
    /// Default 4000.
    pub max_chars: Option<u32>,
    pub tab_id: Option<TabId>,
    pub browser_id: Option<String>,
}

pub const GET_COOKIES: &str = "Cookies for url (default: the tab's URL), or one by name.";

pub async fn get_cookies(ctx: &ToolContext, args: CookiesArgs) -> Result<ToolOutput, ToolError> {
    if let Some(url) = &args.url {
        cookie_url(url)?;
    }
    let op = TabOp::Cookies {
        url: args.url,
        name: short_text(args.name, "name")?,
        max_chars: storage_chars(args.max_chars)?,
    };
    read_storage(
        ctx,
        "get_cookies",
        "cookies",
        args.browser_id,
        args.tab_id,
        op,
    )
    .await
}

/// Cookies belong to http(s) URLs.
fn cookie_url(url: &str) -> Result<(), ToolError> {
    super::tabs::check_url(url)?;
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        Ok(())
    } else {
        Err(ToolError::invalid(format!(
            "url must be an http:// or https:// URL for cookies; got {}",
            quoted(&cut(url, 100))
        )))
    }
}

fn storage_chars(max_chars: Option<u32>) -> Result<u32, ToolError> {
    in_range(
        max_chars,
        DEFAULT_STORAGE_CHARS,
        MIN_CHARS,
        MAX_STORAGE_CHARS,
        "maxChars",
    )
}

/// Arguments of get_local_storage.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalStorageArgs {
    /// Key contains.
    pub filter: Option<String>,
    /// Default 4000.
    pub max_chars: Option<u32>,
    pub tab_id: Option<TabId>,
    pub browser_id: Option<String>,
}

pub const GET_LOCAL_STORAGE: &str = "The tab's localStorage entries.";

pub async fn get_local_storage(
    ctx: &ToolContext,
    args: LocalStorageArgs,
) -> Result<ToolOutput, ToolError> {
    let op = TabOp::LocalStorage {
        filter: short_text(args.filter, "filter")?,
        max_chars: storage_chars(args.max_chars)?,
    };
    read_storage(
        ctx,
        "get_local_storage",
        "localStorage entries",
        args.browser_id,
        args.tab_id,
        op,
    )
    .await
}

async fn read_storage(
    ctx: &ToolContext,
    tool: &str,
    noun: &str,
    browser_id: Option<String>,
    tab_id: Option<TabId>,
    op: TabOp,
) -> Result<ToolOutput, ToolError> {
    let result = tab_op(ctx, tool, browser_id.as_deref(), tab_id, op, DEADLINE).await?;
    let TabResult::Storage(entries) = result else {
        return Err(unexpected(tool));
    };
    Ok(ToolOutput::new(
        json!(entries),
        render_storage(noun, &entries),
    ))
}

/// `tab 4 cookies for https://x/ (2)` and one `name=value flags…` line per entry.
fn render_storage(noun: &str, entries: &StorageEntries) -> String {
    let shown = entries.entries.len();
    let mut lines = vec![if shown == 0 && entries.total == 0 {
        format!("tab {}: no {noun} for {}", entries.tab_id, entries.origin)
    } else {
        format!(
            "tab {} {noun} for {} ({})",
            entries.tab_id, entries.origin, entries.total
        )
    }];
    lines.extend(entries.entries.iter().map(entry_line));
    if entries.truncated {
        lines.push(format!(
            "[{shown} of {} shown, values may be cut: raise maxChars or filter]",
            entries.total
        ));
    }
    lines.join("\n")
}

/// `name=value domain=.x.com path=/ secure httpOnly`: the name (or key) and value first, then
/// the other fields; true flags by name alone, false ones left out.
fn entry_line(entry: &Value) -> String {
    let Value::Object(fields) = entry else {
        return entry.to_string();
    };
    let mut parts = Vec::new();
    let key = ["name", "key"]
        .into_iter()
        .find(|key| fields.get(*key).is_some_and(Value::is_string));
    if let Some(key) = key {
        let name = fields[key].as_str().unwrap_or_default();
        let value = match fields.get("value") {
            Some(Value::String(value)) => quote_if_spaced(value),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        parts.push(format!("{}={value}", quote_if_spaced(name)));
    }
    for (name, value) in fields {
        if Some(name.as_str()) == key || (key.is_some() && name == "value") {
            continue;
        }
        match value {
            Value::Bool(true) => parts.push(name.clone()),
            Value::Bool(false) | Value::Null => {}
            Value::String(s) => parts.push(format!("{name}={}", quote_if_spaced(s))),
            other => parts.push(format!("{name}={other}")),
        }
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tabwire_protocol::ErrorCode;

    fn records(kind: Kind) -> Records {
        let records = match kind {
            Kind::Network => vec![
                json!({"seq": 12, "requestId": "8812.4", "method": "GET", "url": "https://x.test/app.js",
                       "type": "script", "status": 200, "mimeType": "text/javascript", "size": 14540, "ms": 35.2}),
                json!({"seq": 13, "requestId": "8812.5", "method": "POST", "url": "https://x.test/api",
                       "type": "fetch", "error": "net::ERR_FAILED", "ms": 3}),
                json!({"seq": 14, "requestId": "8812.6", "method": "GET", "url": "https://x.test/poll",
                       "type": "xhr"}),
            ],
            Kind::Console => vec![
                json!({"seq": 3, "level": "error", "text": "Uncaught TypeError: x is undefined",
                       "url": "https://x.test/js/app.js?v=2", "line": 12, "exception": true}),
                json!({"seq": 4, "level": "log", "text": "two\nlines"}),
            ],
        };
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

    #[test]
    fn requests_render_one_line_each_with_a_footer() {
        assert_eq!(
            render_records(Kind::Network, &records(Kind::Network)),
            "tab 4 requests 51-53 of 120\n\
             #12 GET 200 script https://x.test/app.js 14.2 KB 35 ms id=8812.4\n\
             #13 POST failed fetch https://x.test/api 3 ms error=net::ERR_FAILED id=8812.5\n\
             #14 GET pending xhr https://x.test/poll id=8812.6\n\
             [next: offset=53; cut to maxChars; 7 older requests evicted (buffer full)]"
        );
    }

    #[test]
    fn console_messages_render_one_line_each() {
        let mut page = records(Kind::Console);
        page.next_offset = None;
        page.truncated = false;
        page.evicted = 0;
        page.capturing = false;
        assert_eq!(
            render_records(Kind::Console, &page),
            "tab 4 console messages 51-52 of 120 (capture is off: start_console_capture starts it)\n\
             #3 error (uncaught) Uncaught TypeError: x is undefined (app.js:12)\n\
             #4 log two\\nlines"
        );
    }

    #[test]
    fn empty_pages_say_so() {
        let mut page = records(Kind::Network);
        page.records.clear();
        page.next_offset = None;
        page.truncated = false;
        page.evicted = 0;
        assert_eq!(
            render_records(Kind::Network, &page),
            "tab 4: no requests from offset 50 (120 in all)"
        );
        page.total = 0;
        page.offset = 0;
        assert_eq!(render_records(Kind::Network, &page), "tab 4: no requests");
        // The data is the protocol's struct.
        let data = json!(page);
        assert_eq!(data["capturing"], true);
        assert!(data.get("nextOffset").is_none());
    }

    #[test]
    fn unexpected_record_shapes_still_render() {
        assert_eq!(
            request_line(&json!({"url": "https://x/"})),
            "pending https://x/"
        );
        assert_eq!(console_line(&json!({})), "log ");
        let long = format!("https://x/{}", "a".repeat(400));
        assert!(request_line(&json!({"url": long})).ends_with("a…"));
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

    #[test]
    fn cookies_and_storage_render_as_name_value_lines() {
        let cookies = StorageEntries {
            tab_id: 4,
            origin: "https://x.test/".into(),
            entries: vec![
                json!({"name": "sid", "value": "abc", "domain": ".x.test", "path": "/",
                       "secure": true, "httpOnly": true, "session": false}),
                json!({"name": "pref", "value": "a b"}),
            ],
            total: 3,
            truncated: true,
        };
        assert_eq!(
            render_storage("cookies", &cookies),
            "tab 4 cookies for https://x.test/ (3)\n\
             sid=abc domain=.x.test httpOnly path=/ secure\n\
             pref=\"a b\"\n\
             [2 of 3 shown, values may be cut: raise maxChars or filter]"
        );
        let storage = StorageEntries {
            tab_id: 4,
            origin: "https://x.test".into(),
            entries: vec![json!({"key": "theme", "value": "dark"})],
            total: 1,
            truncated: false,
        };
        assert_eq!(
            render_storage("localStorage entries", &storage),
            "tab 4 localStorage entries for https://x.test (1)\ntheme=dark"
        );
        let empty = StorageEntries {
            entries: vec![],
            total: 0,
            ..storage
        };
        assert_eq!(
            render_storage("localStorage entries", &empty),
            "tab 4: no localStorage entries for https://x.test"
        );
    }

    #[test]
    fn cookie_urls_are_http() {
        assert!(cookie_url("https://x.test/a").is_ok());
        assert!(cookie_url("file:///tmp/a").is_err());
        assert!(cookie_url("about:blank").is_err());
        assert!(cookie_url("javascript:alert(1)").is_err());
        assert!(storage_chars(Some(20_001)).is_err());
        assert_eq!(storage_chars(None).unwrap(), 4000);
    }
}
