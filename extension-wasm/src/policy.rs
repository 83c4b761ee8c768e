//! The per-origin policy at the point of effect (issue 14 §1).
//!
//! Two owners' policies apply, and the stricter of them ([`tabwire_protocol::policy::stricter`]):
//! the operator's, which the hub sends with its welcome and again when it changes, and the
//! browser owner's, set in the popup (`chrome.storage.local`) or pushed by an administrator
//! through managed storage (which then replaces the popup's and cannot be edited there).
//!
//! An operation is checked against the URL of what it touches when it runs: the tab's top
//! document before it starts (`requests.rs`), a frame's document before a command runs in it
//! (`page.rs`) or an action's input goes into it (`ops::act`), and a navigation's destination
//! before it loads and its final URL once it has (a redirect into a denied origin stops it
//! there). While both policies allow everything (local mode's default) nothing is looked up.

use std::cell::RefCell;

use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::policy::{Gate, Need, Owner, Policy, Verdict, stricter};
use tabwire_protocol::{ErrorCode, OpError, TabId};
use wasm_bindgen::JsValue;

use crate::chrome;

/// Where the browser owner's policy is kept, as lines (`Policy::to_lines`), in
/// `chrome.storage.local` and in managed storage alike.
pub const OWNER_POLICY_KEY: &str = "agentPolicy";

#[derive(Default)]
struct Policies {
    /// Whether managed storage has been read once since the worker started.
    managed_read: bool,
    /// The operator's, from the hub of the current connection.
    operator: Policy,
    /// The owner's, from the popup.
    owner: Policy,
    /// The administrator's, from managed storage: when set, it is the owner's.
    managed: Option<Policy>,
}

thread_local! {
    static POLICIES: RefCell<Policies> = RefCell::default();
}

/// The operator's policy of the hub just connected (or its update).
pub fn set_operator(policy: Policy) {
    POLICIES.with(|p| p.borrow_mut().operator = policy);
}

/// The owner's policy as the popup saved it.
pub fn set_owner(policy: Policy) {
    POLICIES.with(|p| p.borrow_mut().owner = policy);
}

/// The browser owner's policy in force, and whether an administrator set it.
pub fn owner() -> (Policy, bool) {
    POLICIES.with(|p| {
        let p = p.borrow();
        match &p.managed {
            Some(managed) => (managed.clone(), true),
            None => (p.owner.clone(), false),
        }
    })
}

/// Whether neither owner restricts anything: no URL needs looking up.
pub fn allows_everything() -> bool {
    POLICIES.with(|p| {
        let p = p.borrow();
        p.operator.allows_everything() && p.managed.as_ref().unwrap_or(&p.owner).allows_everything()
    })
}

/// What both policies together say about `url`.
pub fn verdict(url: &str) -> Verdict {
    POLICIES.with(|p| {
        let p = p.borrow();
        let owner = p.managed.as_ref().unwrap_or(&p.owner);
        stricter(
            p.operator.verdict(url, Owner::Operator),
            owner.verdict(url, Owner::Browser),
        )
    })
}

/// Whether the policies are known (managed storage read): until then nothing is allowed
/// without [`settled`] first.
pub fn is_settled() -> bool {
    POLICIES.with(|p| p.borrow().managed_read)
}

/// [`check_url`] once the policies are known.
pub async fn check_url_settled(url: &str, need: Need) -> Result<bool, OpError> {
    settled().await;
    check_url(url, need)
}

/// `need` on `url`: `Ok(true)` to go ahead, `Ok(false)` when a person must approve first
/// (`ask`), or `ORIGIN_BLOCKED` naming the rule. Callers that may run before the policies are
/// known use [`check_url_settled`].
pub fn check_url(url: &str, need: Need) -> Result<bool, OpError> {
    if allows_everything() {
        return Ok(true);
    }
    match verdict(url).gate(need, url) {
        Gate::Allowed => Ok(true),
        Gate::Ask => Ok(false),
        Gate::Blocked(why) => Err(OpError::new(ErrorCode::OriginBlocked, why)),
    }
}

/// Whether a tab at `url` is listed with its URL and title (not on a denied origin).
pub fn shows(url: &str) -> bool {
    allows_everything() || verdict(url).access != tabwire_protocol::policy::Access::Deny
}

/// The URL of frame `frame` of `tab` (0: the tab's top document) as Chrome has it now.
pub async fn frame_url(tab: TabId, frame: u32) -> Result<String, OpError> {
    #[derive(Deserialize)]
    struct Frame {
        #[serde(default)]
        url: String,
    }
    let details = chrome::to_js(&json!({"tabId": tab, "frameId": frame}))
        .map_err(|e| OpError::new(ErrorCode::Internal, e.message))?;
    let found = chrome::call(chrome::web_navigation_get_frame(&details))
        .await
        .map_err(|failure| {
            OpError::new(
                ErrorCode::TabNotFound,
                format!(
                    "Could not read tab {tab}'s frame {frame}: {}",
                    failure.message
                ),
            )
        })?;
    if found.is_null() || found.is_undefined() {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!("Tab {tab} has no frame {frame} (any more). Call list_frames."),
        ));
    }
    let frame: Frame =
        chrome::from_js(found).map_err(|e| OpError::new(ErrorCode::Internal, e.message))?;
    Ok(frame.url)
}

/// `need` on what frame `frame` of `tab` shows now: `Ok(true)` to go ahead, `Ok(false)` when a
/// person must approve first.
pub async fn check_frame(tab: TabId, frame: u32, need: Need) -> Result<bool, OpError> {
    settled().await;
    if allows_everything() {
        return Ok(true);
    }
    check_url(&frame_url(tab, frame).await?, need)
}

/// Parses the owner's policy as the popup or managed storage hold it.
pub fn parse_owner(text: &str) -> Result<Policy, String> {
    Policy::from_lines(text).map_err(|e| e.0)
}

/// Reads the owner's policy as the popup saved it, at the worker's start.
pub async fn load_owner() {
    let keys = JsValue::from(js_sys::Array::of1(&JsValue::from_str(OWNER_POLICY_KEY)));
    if let Ok(items) = chrome::call(chrome::storage_local_get(&keys)).await {
        set_owner(read_item(items, "the popup's"));
    }
}

/// Waits until managed storage has been read once: it can take seconds on a worker's first
/// start, and an administrator's policy must hold from the first request on.
async fn settled() {
    while !POLICIES.with(|p| p.borrow().managed_read) {
        crate::timer::sleep(20.0).await;
    }
}

/// Reads the administrator's policy from managed storage (again, when it changed).
pub async fn load_managed() {
    let managed = match chrome::call(chrome::storage_managed_get()).await {
        Ok(items) => {
            let text: Option<String> =
                chrome::from_js::<serde_json::Map<String, serde_json::Value>>(items)
                    .ok()
                    .and_then(|items| items.get(OWNER_POLICY_KEY)?.as_str().map(str::to_owned));
            text.map(|text| {
                parse_owner(&text).unwrap_or_else(|why| {
                    // An unreadable administrator's policy must not open everything up.
                    crate::chrome::log!("managed agentPolicy does not parse ({why}); denying every origin until it is fixed");
                    Policy {
                        default: tabwire_protocol::policy::Access::Deny,
                        ..Policy::default()
                    }
                })
            })
        }
        Err(_) => None,
    };
    POLICIES.with(|p| {
        let mut p = p.borrow_mut();
        p.managed = managed;
        p.managed_read = true;
    });
}

fn read_item(items: JsValue, whose: &str) -> Policy {
    let text = chrome::from_js::<serde_json::Map<String, serde_json::Value>>(items)
        .ok()
        .and_then(|items| items.get(OWNER_POLICY_KEY)?.as_str().map(str::to_owned))
        .unwrap_or_default();
    parse_owner(&text).unwrap_or_else(|why| {
        crate::chrome::log!("{whose} agentPolicy does not parse ({why}); ignoring it");
        Policy::default()
    })
}

/// Saves the owner's policy from the popup: checked first, so a mistake is shown, not kept.
pub async fn save_owner(text: &str) -> Result<Policy, String> {
    let policy = parse_owner(text)?;
    let items =
        chrome::to_js(&json!({ OWNER_POLICY_KEY: policy.to_lines() })).map_err(|e| e.message)?;
    chrome::call(chrome::storage_local_set(&items))
        .await
        .map_err(|e| format!("could not save the policy: {}", e.message))?;
    set_owner(policy.clone());
    Ok(policy)
}
