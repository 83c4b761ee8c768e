//! Tool calls' arguments as an MCP client sends them, through the catalogue's dispatch (the strict
//! parse, each tool's own checks, the routing), and the selector check on its own.

use std::sync::Arc;

use serde_json::{Map, Number, Value};
use tabwire_hub::HubState;
use tabwire_hub::mcp::Caller;
use tabwire_hub::mcp::catalogue::{catalogue, dispatch};
use tabwire_hub::pairing::Pairings;
use tabwire_hub::peer::{Browser, Device};
use tabwire_hub::registry::{Connection, Owner};
use tabwire_hub::session::Session;
use tabwire_protocol::devices::{DeviceHello, Platform, ScreenSize};
use tabwire_protocol::{
    DeviceRef, ElementRef, ErrorCode, Hello, HubMessage, LeaseHolder, OpError, PROTOCOL_VERSION,
};
use tokio::sync::mpsc::UnboundedReceiver;

use super::Samples;
use super::peers::TempDir;
use crate::mutate;
use crate::rng::Rng;
use crate::runner::{Harness, Target};

/// Selectors as agents write them: CSS of every kind, refs, Playwright's syntax (refused).
pub const SELECTORS: &[&str] = &[
    "@e12",
    "@f2e5",
    "@d3",
    "#login button[type=submit]",
    "input[name=\"q\"]",
    "a[href^='http' i]",
    "[ data-x = \"y\" s ]",
    "ul > li:nth-child(2n+1)",
    "div:not(.a, .b) ~ p + span",
    ":is(h1, h2)::before",
    "a:has(> img)",
    "svg|rect",
    "*|*",
    ".a\\:b",
    ".\\31 23",
    "é.ü",
    "button[data-testid='submit'], a.link",
    "a /* note */ b",
    "&.active",
    "li:nth-child(2 of .x)",
    "a:not([href=\")\"])",
    "text=Sign in",
    "button:has-text(\"Go\")",
    "div >> span",
    "//div",
    "div[",
    "a:not(b",
];
/// CSS's own tokens, inserted and nested.
const CSS_TOKENS: &[&str] = &[
    "(", ")", "[", "]", ":not(", ":has(", ":is(", "::", "\\", "/*", "*/", "\"", "'", ",", ">", "+",
    "~", "|", "*", "#", ".", "=", "^=", "$=", "*=", "~=", "|=", " i]", "@e", "@f", "@d",
];

struct Selector(Samples);

impl Harness for Selector {
    fn generate(&mut self, rng: &mut Rng) -> String {
        self.0.generate(rng)
    }

    fn run(&mut self, input: &str) {
        let _ = tabwire_hub::mcp::selector::parse(input);
        // A ref that parses prints as itself: what the model was shown is what it sends.
        if let Some(element) = ElementRef::parse(input) {
            assert_eq!(ElementRef::parse(&element.to_string()), Some(element));
        }
        if let Some(device) = DeviceRef::parse(input) {
            assert_eq!(DeviceRef::parse(&device.to_string()), Some(device));
        }
    }
}

/// The `selector` argument of element tools, and `@ref`s.
pub const SELECTOR: Target = Target {
    name: "selector",
    entry: "tabwire_hub::mcp::selector::parse (css::check), ElementRef::parse, DeviceRef::parse",
    build: || {
        let texts = SELECTORS.iter().map(|s| s.to_string()).collect();
        Box::new(Selector(Samples::new(texts, &[], CSS_TOKENS)))
    },
};

/// Strings for arguments, by what the argument's name says it is.
fn string_for(rng: &mut Rng, name: &str) -> String {
    const URLS: &[&str] = &[
        "https://example.com/",
        "http://127.0.0.1:8080/a?b=c#d",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "about:blank",
        "chrome://settings",
        "data:text/html,<b>x</b>",
        "https://user:pw@example.com:99999/",
        "example.com",
    ];
    const KEYS: &[&str] = &[
        "Enter",
        "Control+A",
        "Shift+Tab",
        "Meta+Alt+Delete",
        "F13",
        "a",
        "+",
    ];
    const IDS: &[&str] = &["b1", "android-R58M12ABCDE", "", "b2", "d-1"];
    const PACKAGES: &[&str] = &["com.acme.shop", "com.acme.bank", "a", "com..x", "*"];
    let lower = name.to_ascii_lowercase();
    let pool: &[&str] = if lower.contains("selector") || lower.contains("target") || lower == "ref"
    {
        SELECTORS
    } else if lower.contains("url") || lower.contains("origin") {
        URLS
    } else if lower.contains("key") || lower.contains("button") {
        KEYS
    } else if lower.ends_with("id") {
        IDS
    } else if lower.contains("package") || lower.contains("app") {
        PACKAGES
    } else {
        &[
            "hello",
            "ann@example.com",
            "a b;$(x)",
            "Work",
            "network",
            "console",
            "storage",
        ]
    };
    if rng.one_in(6) {
        rng.pick(mutate::NASTY_STRINGS).to_string()
    } else {
        rng.pick(pool).to_string()
    }
}

/// A value for `schema` (JSON Schema as the hub emits it), sometimes just outside its bounds.
fn from_schema(rng: &mut Rng, root: &Value, schema: &Value, name: &str, depth: usize) -> Value {
    let Some(schema) = schema.as_object() else {
        return mutate::value(rng, &[]);
    };
    if depth > 6 {
        return Value::Null;
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let resolved = reference
            .strip_prefix("#/")
            .map(|path| path.split('/').fold(root, |node, part| &node[part]));
        if let Some(resolved) = resolved {
            return from_schema(rng, root, resolved, name, depth + 1);
        }
    }
    if let Some(choices) = schema.get("enum").and_then(Value::as_array)
        && !choices.is_empty()
        && !rng.one_in(10)
    {
        return rng.pick(choices).clone();
    }
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    for union in ["oneOf", "anyOf"] {
        if let Some(branches) = schema.get(union).and_then(Value::as_array)
            && !branches.is_empty()
        {
            let branch = &branches[rng.below(branches.len())];
            return from_schema(rng, root, branch, name, depth + 1);
        }
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) if !kinds.is_empty() => {
            rng.pick(kinds).as_str().unwrap_or("null")
        }
        _ if schema.contains_key("properties") => "object",
        _ => "any",
    };
    match kind {
        "object" => {
            let mut object = Map::new();
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (key, property) in properties {
                    if required.contains(&key.as_str()) && !rng.one_in(20) || rng.one_in(2) {
                        object.insert(
                            key.clone(),
                            from_schema(rng, root, property, key, depth + 1),
                        );
                    }
                }
            }
            Value::Object(object)
        }
        "array" => {
            let items = schema.get("items").cloned().unwrap_or(Value::Null);
            let count = if rng.one_in(10) {
                rng.size()
            } else {
                rng.below(4)
            };
            Value::Array(
                (0..count.min(300))
                    .map(|_| from_schema(rng, root, &items, name, depth + 1))
                    .collect(),
            )
        }
        "string" => Value::String(string_for(rng, name)),
        "integer" | "number" => {
            let low = schema.get("minimum").and_then(Value::as_i64).unwrap_or(0);
            let high = schema
                .get("maximum")
                .and_then(Value::as_i64)
                .unwrap_or(100_000);
            let n = match rng.below(16) {
                0 => low,
                1 => high,
                2 => low.saturating_sub(1),
                3 => high.saturating_add(1),
                4 => i64::MAX,
                5 => -1,
                _ => low.saturating_add(
                    (rng.next_u64() % (high.saturating_sub(low).max(1) as u64)) as i64,
                ),
            };
            if kind == "number" && rng.one_in(4) {
                Number::from_f64(n as f64 + 0.5).map_or(Value::Null, Value::Number)
            } else {
                Value::Number(n.into())
            }
        }
        "boolean" => Value::Bool(rng.one_in(2)),
        "null" => Value::Null,
        _ => mutate::value(rng, SELECTORS),
    }
}

/// A session on a local hub with one browser and one device connected, each answering every
/// request with an error at once, so a call runs its checks, its routing and its error path.
struct ToolArgs {
    runtime: tokio::runtime::Runtime,
    caller: Arc<Caller>,
    tools: Vec<(String, Value)>,
    _peers: Vec<Arc<Connection>>,
    _dir: TempDir,
}

/// Names of arguments worth adding to an object (other tools' names too).
const ARG_KEYS: &[&str] = &[
    "browserId",
    "tabId",
    "deviceId",
    "selector",
    "target",
    "url",
    "text",
    "value",
    "timeoutMs",
    "deadlineMs",
    "observe",
    "maxNodes",
    "maxChars",
    "offset",
    "since",
    "query",
    "steps",
    "action",
    "fields",
    "key",
    "x",
    "y",
    "to",
    "frameId",
    "format",
    "quality",
    "fullPage",
    "package",
    "clearAfter",
    "limit",
    "filter",
    "levels",
];

fn answer_errors(
    runtime: &tokio::runtime::Runtime,
    connection: Arc<Connection>,
    mut inbox: UnboundedReceiver<HubMessage>,
) {
    runtime.spawn(async move {
        while let Some(message) = inbox.recv().await {
            if let HubMessage::Request(request) = message {
                connection.complete(
                    request.id,
                    Err(OpError::new(
                        ErrorCode::Internal,
                        "the fuzz peer answers every request so",
                    )),
                );
            }
        }
    });
}

fn tool_args() -> ToolArgs {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let dir = TempDir::new("tools");
    let pairings = Arc::new(Pairings::open(&dir.0.join("state")).expect("the pairing state"));
    let hub = Arc::new(HubState::local("ws://127.0.0.1:1/browser".into(), pairings));
    let account = hub.accounts.local_account();
    let (browser, browser_inbox) = account
        .registry::<Browser>()
        .connect(
            Hello {
                browser_id: "b1".into(),
                browser_name: "Work".into(),
                extension_version: "0.1.0".into(),
                protocol_version: PROTOCOL_VERSION,
                chrome_version: "141".into(),
                proof: None,
                managed_code: false,
            },
            Owner::fixed("fuzz"),
        )
        .expect("a browser");
    let (device, device_inbox) = account
        .registry::<Device>()
        .connect(
            DeviceHello {
                device_id: "android-R58M12ABCDE".into(),
                device_name: "Pixel 7".into(),
                platform: Platform::Android,
                model: "Google Pixel 7".into(),
                os_version: "14".into(),
                screen: ScreenSize {
                    width: 1080,
                    height: 2400,
                },
                backend_version: "0.1.0".into(),
                protocol_version: PROTOCOL_VERSION,
                proof: None,
            },
            Owner::fixed("fuzz"),
        )
        .expect("a device");
    answer_errors(&runtime, browser.clone(), browser_inbox);
    answer_errors(&runtime, device.clone(), device_inbox);
    let session = Arc::new(Session::new("s1".into(), Default::default(), None));
    let caller = Arc::new(Caller {
        hub,
        session,
        account,
        holder: LeaseHolder {
            session: "s1".into(),
            client: "Fuzz · 1".into(),
            idle_ms: 600_000,
        },
        trace: Default::default(),
        progress: None,
        cancel: Default::default(),
    });
    let tools = catalogue()
        .iter()
        .map(|entry| {
            (
                entry.tool.name.to_string(),
                Value::Object((*entry.tool.input_schema).clone()),
            )
        })
        .collect();
    ToolArgs {
        runtime,
        caller,
        tools,
        _peers: vec![browser, device],
        _dir: dir,
    }
}

impl Harness for ToolArgs {
    fn generate(&mut self, rng: &mut Rng) -> String {
        let (name, schema) = rng.pick(&self.tools);
        let mut args = from_schema(rng, schema, schema, "", 0);
        if rng.one_in(2) {
            mutate::json(rng, &mut args, ARG_KEYS, SELECTORS, &[]);
        }
        format!("{name}\n{args}")
    }

    fn run(&mut self, input: &str) {
        let (name, args) = input.split_once('\n').unwrap_or((input, "{}"));
        // rmcp refuses arguments that are not an object before the hub sees them.
        let Ok(Value::Object(args)) = serde_json::from_str::<Value>(args) else {
            return;
        };
        let caller = self.caller.clone();
        let outcome = self
            .runtime
            .block_on(async move { dispatch(&caller, name, args).await });
        assert!(
            outcome.is_some() || !self.tools.iter().any(|(tool, _)| tool == name),
            "a catalogued tool was not dispatched"
        );
    }
}

/// Every tool's arguments, made from its input schema and mutated.
pub const TOOL_ARGS: Target = Target {
    name: "tool-args",
    entry: "tabwire_hub::mcp::catalogue::dispatch (schema::parse_args, each tool's checks)",
    build: || Box::new(tool_args()),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_generated_arguments_of_a_tool_pass_its_strict_parse() {
        // A generator whose arguments the strict parse refused would never reach a tool's own
        // checks.
        let mut harness = tool_args();
        let mut rng = Rng::new(3);
        let tools = harness.tools.clone();
        let mut valid = 0;
        let mut refused = Vec::new();
        for (name, schema) in &tools {
            let args = from_schema(&mut rng, schema, schema, "", 0);
            let Value::Object(args) = args else { continue };
            let caller = harness.caller.clone();
            let outcome = harness
                .runtime
                .block_on(async move { dispatch(&caller, name, args).await })
                .expect("catalogued");
            match &outcome {
                // Refused by the strict parse, before the tool's own checks.
                Err(error) if error.message.starts_with("invalid arguments") => {
                    refused.push(format!("{name}: {}", error.message));
                }
                _ => valid += 1,
            }
        }
        assert!(
            valid * 3 > tools.len() * 2,
            "{valid} of {} tools took their generated arguments; refused: {refused:#?}",
            tools.len()
        );
        harness.run("no_such_tool\n{}");
    }
}
