//! Bindings to the `chrome.*` extension APIs and the few worker globals the extension uses.
//!
//! web-sys covers web platform APIs (the WebSocket) but not Chrome's extension APIs, so they
//! are declared here, in one place, with the shapes tabwire reads. Every MV3 API used returns a
//! promise when called without a callback; [`call`] awaits one and turns a rejection into a
//! [`JsFailure`] carrying Chrome's message, which callers map to an `ErrorCode`.
//!
//! The externs compile for the host too (so native unit tests build), but calling them there
//! panics: only code that runs in the worker uses this module.

use js_sys::{Function, Promise};
use serde::Deserialize;
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    // --- chrome.storage ---
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "local"], js_name = get)]
    pub fn storage_local_get(keys: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "local"], js_name = set)]
    pub fn storage_local_set(items: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "local"], js_name = setAccessLevel)]
    pub fn storage_local_set_access_level(options: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "session"], js_name = get)]
    pub fn storage_session_get(keys: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "session"], js_name = set)]
    pub fn storage_session_set(items: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "session"], js_name = remove)]
    pub fn storage_session_remove(key: &str) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "managed"], js_name = get)]
    pub fn storage_managed_get() -> Result<Promise, JsValue>;
    #[wasm_bindgen(js_namespace = ["chrome", "storage", "onChanged"], js_name = addListener)]
    pub fn storage_on_changed(listener: &Function);

    // --- chrome.runtime ---
    #[wasm_bindgen(js_namespace = ["chrome", "runtime"], js_name = getURL)]
    pub fn runtime_get_url(path: &str) -> String;
    #[wasm_bindgen(js_namespace = ["chrome", "runtime"], js_name = getManifest)]
    pub fn runtime_get_manifest() -> JsValue;

    // --- chrome.tabs ---
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = query)]
    pub fn tabs_query(query: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = get)]
    pub fn tabs_get(tab_id: u32) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = update)]
    pub fn tabs_update(tab_id: u32, properties: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = create)]
    pub fn tabs_create(properties: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = remove)]
    pub fn tabs_remove(tab_id: u32) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = goBack)]
    pub fn tabs_go_back(tab_id: u32) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = goForward)]
    pub fn tabs_go_forward(tab_id: u32) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = reload)]
    pub fn tabs_reload(tab_id: u32, properties: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = group)]
    pub fn tabs_group(options: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = ungroup)]
    pub fn tabs_ungroup(tab_id: u32) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabGroups"], js_name = update)]
    pub fn tab_groups_update(group_id: f64, properties: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "windows"], js_name = create)]
    pub fn windows_create(properties: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "windows"], js_name = update)]
    pub fn windows_update(window_id: u32, properties: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(js_namespace = ["chrome", "tabs", "onUpdated"], js_name = addListener)]
    pub fn tabs_on_updated_add(listener: &Function);
    #[wasm_bindgen(js_namespace = ["chrome", "tabs", "onUpdated"], js_name = removeListener)]
    pub fn tabs_on_updated_remove(listener: &Function);
    // --- chrome.downloads ---
    #[wasm_bindgen(js_namespace = ["chrome", "downloads", "onCreated"], js_name = addListener)]
    pub fn downloads_on_created(listener: &Function);
    #[wasm_bindgen(js_namespace = ["chrome", "downloads", "onChanged"], js_name = addListener)]
    pub fn downloads_on_changed(listener: &Function);
    #[wasm_bindgen(js_namespace = ["chrome", "tabs", "onCreated"], js_name = addListener)]
    pub fn tabs_on_created_add(listener: &Function);
    #[wasm_bindgen(js_namespace = ["chrome", "tabs", "onRemoved"], js_name = addListener)]
    pub fn tabs_on_removed_add(listener: &Function);
    #[wasm_bindgen(js_namespace = ["chrome", "tabs", "onRemoved"], js_name = removeListener)]
    pub fn tabs_on_removed_remove(listener: &Function);

    // --- chrome.notifications ---
    #[wasm_bindgen(catch, js_namespace = ["chrome", "notifications"], js_name = create)]
    pub fn notifications_create(id: &str, options: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(catch, js_namespace = ["chrome", "notifications"], js_name = clear)]
    pub fn notifications_clear(id: &str) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "notifications", "onButtonClicked"], js_name = addListener)]
    pub fn notifications_on_button_clicked(listener: &Function);

    // --- chrome.webNavigation ---
    #[wasm_bindgen(catch, js_namespace = ["chrome", "webNavigation"], js_name = getAllFrames)]
    pub fn web_navigation_get_all_frames(details: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(catch, js_namespace = ["chrome", "webNavigation"], js_name = getFrame)]
    pub fn web_navigation_get_frame(details: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "webNavigation", "onBeforeNavigate"], js_name = addListener)]
    pub fn web_navigation_on_before_navigate(listener: &Function);
    #[wasm_bindgen(js_namespace = ["chrome", "webNavigation", "onDOMContentLoaded"], js_name = addListener)]
    pub fn web_navigation_on_dom_content_loaded(listener: &Function);
    #[wasm_bindgen(js_namespace = ["chrome", "webNavigation", "onCompleted"], js_name = addListener)]
    pub fn web_navigation_on_completed(listener: &Function);
    #[wasm_bindgen(js_namespace = ["chrome", "webNavigation", "onErrorOccurred"], js_name = addListener)]
    pub fn web_navigation_on_error_occurred(listener: &Function);
    #[wasm_bindgen(js_namespace = ["chrome", "webNavigation", "onHistoryStateUpdated"], js_name = addListener)]
    pub fn web_navigation_on_history_state_updated(listener: &Function);
    #[wasm_bindgen(js_namespace = ["chrome", "webNavigation", "onCommitted"], js_name = addListener)]
    pub fn web_navigation_on_committed(listener: &Function);

    // --- chrome.action (the toolbar button's badge) ---
    #[wasm_bindgen(catch, js_namespace = ["chrome", "action"], js_name = setBadgeText)]
    pub fn action_set_badge_text(details: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "action"], js_name = setBadgeBackgroundColor)]
    pub fn action_set_badge_background_color(details: &JsValue) -> Result<Promise, JsValue>;

    // --- chrome.scripting (styles; scripts go through the collector's glue) ---
    #[wasm_bindgen(catch, js_namespace = ["chrome", "scripting"], js_name = insertCSS)]
    pub fn scripting_insert_css(injection: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "scripting"], js_name = removeCSS)]
    pub fn scripting_remove_css(injection: &JsValue) -> Result<Promise, JsValue>;

    // --- chrome.debugger ---
    #[wasm_bindgen(catch, js_namespace = ["chrome", "debugger"], js_name = attach)]
    pub fn debugger_attach(target: &JsValue, version: &str) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "debugger"], js_name = sendCommand)]
    pub fn debugger_send_command(
        target: &JsValue,
        method: &str,
        params: &JsValue,
    ) -> Result<Promise, JsValue>;
    #[wasm_bindgen(js_namespace = ["chrome", "debugger", "onDetach"], js_name = addListener)]
    pub fn debugger_on_detach(listener: &Function);
    #[wasm_bindgen(js_namespace = ["chrome", "debugger", "onEvent"], js_name = addListener)]
    pub fn debugger_on_event(listener: &Function);
    #[wasm_bindgen(catch, js_namespace = ["chrome", "debugger"], js_name = detach)]
    pub fn debugger_detach(target: &JsValue) -> Result<Promise, JsValue>;

    // --- worker globals ---
    #[wasm_bindgen(js_namespace = crypto, js_name = randomUUID)]
    pub fn random_uuid() -> String;
    /// Fills `bytes` from the platform's cryptographic random source.
    #[wasm_bindgen(js_namespace = crypto, js_name = getRandomValues)]
    pub fn get_random_values(bytes: &mut [u8]);
    #[wasm_bindgen(js_name = setTimeout)]
    pub fn set_timeout(handler: &Function, ms: f64) -> JsValue;
    #[wasm_bindgen(catch, js_name = fetch)]
    pub fn fetch(url: &str) -> Result<Promise, JsValue>;

    /// A `fetch()` response.
    pub type FetchResponse;
    #[wasm_bindgen(method, getter)]
    pub fn ok(this: &FetchResponse) -> bool;
    #[wasm_bindgen(catch, method)]
    pub fn text(this: &FetchResponse) -> Result<Promise, JsValue>;
}

/// Logs a line prefixed `tabwire: ` to the worker console (and so to Chromium's stderr with
/// `--enable-logging=stderr`): `chrome::log!("…", …)`. Never pass page content or typed text.
macro_rules! log {
    ($($arg:tt)*) => {
        $crate::chrome::console_log(&format!($($arg)*))
    };
}
pub(crate) use log;

/// What [`log!`] writes.
#[doc(hidden)]
pub fn console_log(line: &str) {
    #[cfg(target_arch = "wasm32")]
    web_sys::console::log_1(&JsValue::from_str(&format!("tabwire: {line}")));
    // Native unit tests have no console; what they log goes to the test's output.
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("tabwire: {line}");
}

/// A Chrome API call that threw or whose promise rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsFailure {
    /// Chrome's message, e.g. `No tab with id: 5.`
    pub message: String,
}

impl std::fmt::Display for JsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JsFailure {}

/// A failure to hand a value to Chrome or read one back is a fault of tabwire's, not of the
/// page: [`ErrorCode::Internal`](tabwire_protocol::ErrorCode::Internal), with Chrome's message.
impl From<JsFailure> for tabwire_protocol::OpError {
    fn from(failure: JsFailure) -> Self {
        tabwire_protocol::OpError::new(tabwire_protocol::ErrorCode::Internal, failure.message)
    }
}

impl From<JsValue> for JsFailure {
    fn from(value: JsValue) -> Self {
        JsFailure {
            message: js_message(&value),
        }
    }
}

/// The human-readable message of a thrown JS value.
pub fn js_message(value: &JsValue) -> String {
    if let Some(error) = value.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    if let Some(text) = value.as_string() {
        return text;
    }
    js_sys::JSON::stringify(value)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_else(|| "unknown JavaScript error".to_owned())
}

/// Awaits a promise-returning call, turning both a synchronous throw and a rejection into a
/// [`JsFailure`].
pub async fn call(promise: Result<Promise, JsValue>) -> Result<JsValue, JsFailure> {
    let promise = promise?;
    Ok(JsFuture::from(promise).await?)
}

/// Converts a Rust value into a plain JS object (not a `Map`) for a Chrome API argument.
pub fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsFailure> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsFailure {
            message: e.to_string(),
        })
}

/// Reads a Chrome API result into a Rust type. Unknown fields are ignored: Chrome adds fields
/// to its objects over time.
pub fn from_js<T: for<'de> Deserialize<'de>>(value: JsValue) -> Result<T, JsFailure> {
    serde_wasm_bindgen::from_value(value).map_err(|e| JsFailure {
        message: e.to_string(),
    })
}

/// The fields of a `chrome.tabs.Tab` that tabwire reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ChromeTab {
    /// Absent or -1 (`TAB_ID_NONE`) for tabs outside the tab strip (DevTools).
    pub id: Option<i64>,
    /// The containing window.
    pub window_id: Option<i64>,
    /// Selected in its window.
    pub active: bool,
    /// Present with the `tabs` permission.
    pub url: Option<String>,
    /// The URL being loaded, before it commits.
    pub pending_url: Option<String>,
    /// The page title.
    pub title: Option<String>,
    /// `loading`, `complete` or `unloaded`.
    pub status: Option<String>,
}

impl ChromeTab {
    /// The tab ID when it is an ordinary tab.
    pub fn tab_id(&self) -> Option<u32> {
        self.id.and_then(|id| u32::try_from(id).ok())
    }
}

/// The fields of a `chrome.webNavigation` frame that tabwire reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ChromeFrame {
    /// 0 for the top document.
    pub frame_id: i64,
    /// -1 for the top document.
    pub parent_frame_id: i64,
    /// The frame's URL.
    pub url: String,
    /// `active`, `prerender`, `cached` or `pending_deletion` (Chrome 106+).
    pub document_lifecycle: Option<String>,
}

/// The frames of a tab whose documents are the active ones
/// (`chrome.webNavigation.getAllFrames`, cross-origin frames included): documents that are
/// prerendered, kept in the back-forward cache or being deleted are left out.
pub async fn active_frames(tab: u32) -> Result<Vec<ChromeFrame>, JsFailure> {
    let details = to_js(&serde_json::json!({ "tabId": tab }))?;
    let value = call(web_navigation_get_all_frames(&details)).await?;
    if value.is_null() || value.is_undefined() {
        return Ok(Vec::new());
    }
    let frames: Vec<ChromeFrame> = from_js(value).map_err(|e| JsFailure {
        message: format!("could not read chrome.webNavigation.getAllFrames: {e}"),
    })?;
    Ok(frames
        .into_iter()
        .filter(|f| {
            f.document_lifecycle
                .as_deref()
                .is_none_or(|l| l == "active")
        })
        .collect())
}

/// The version string from `chrome.runtime.getManifest()`.
pub fn extension_version() -> String {
    js_sys::Reflect::get(&runtime_get_manifest(), &JsValue::from_str("version"))
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_default()
}

/// `navigator.userAgent` of the worker.
pub fn user_agent() -> String {
    let navigator = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("navigator"))
        .unwrap_or(JsValue::UNDEFINED);
    js_sys::Reflect::get(&navigator, &JsValue::from_str("userAgent"))
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_default()
}

/// Extracts `x.y.z.w` from a user agent's `Chrome/x.y.z.w` token (headless Chromium says
/// `HeadlessChrome/…`, which contains it too).
pub fn chrome_version_from_user_agent(user_agent: &str) -> String {
    user_agent
        .split_whitespace()
        .find_map(|token| {
            let (product, version) = token.split_once('/')?;
            product.ends_with("Chrome").then(|| version.to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chrome_version_is_read_from_the_user_agent() {
        let ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
                  Chrome/156.0.7390.54 Safari/537.36";
        assert_eq!(chrome_version_from_user_agent(ua), "156.0.7390.54");
        let headless = "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/156.0.1.2 Safari/537.36";
        assert_eq!(chrome_version_from_user_agent(headless), "156.0.1.2");
        assert_eq!(chrome_version_from_user_agent("curl/8"), "unknown");
    }
}
