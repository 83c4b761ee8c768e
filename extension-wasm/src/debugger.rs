//! Trusted input through `chrome.debugger` (the Chrome DevTools Protocol).
//!
//! Attaching takes tens of milliseconds and shows Chrome's "is debugging this browser" bar, so
//! tabwire attaches to a tab once, on its first click, and stays attached; the set of attached
//! tabs is forgotten on `chrome.debugger.onDetach` (DevTools took over, the user cancelled the
//! bar, the tab crashed) and when the tab closes. Concurrent first clicks on one tab share a
//! single attach.

use std::cell::RefCell;
use std::collections::HashMap;

use js_sys::Promise;
use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::{ErrorCode, OpError, TabId};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::chrome;

/// The CDP version Chrome's debugger API speaks.
const PROTOCOL_VERSION: &str = "1.3";

enum Attachment {
    /// An attach is under way; later callers await the same promise.
    Attaching(Promise),
    Attached,
}

thread_local! {
    static ATTACHED: RefCell<HashMap<TabId, Attachment>> = RefCell::new(HashMap::new());
}

/// Registers the `onDetach` listener. Called once at worker start.
pub fn install_listeners() {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Debuggee {
        tab_id: Option<TabId>,
    }
    let on_detach =
        Closure::<dyn FnMut(JsValue, JsValue)>::new(|source: JsValue, reason: JsValue| {
            if let Ok(Debuggee { tab_id: Some(tab) }) = chrome::from_js::<Debuggee>(source) {
                forget(tab);
                crate::log!(
                    "debugger detached from tab {tab} ({})",
                    reason.as_string().unwrap_or_default()
                );
            }
        });
    chrome::debugger_on_detach(on_detach.as_ref().unchecked_ref());
    // The listener lives as long as the worker.
    on_detach.forget();
}

/// Forgets that tabwire is attached to `tab`.
pub fn forget(tab: TabId) {
    ATTACHED.with(|attached| attached.borrow_mut().remove(&tab));
}

fn debuggee(tab: TabId) -> Result<JsValue, OpError> {
    chrome::to_js(&json!({ "tabId": tab }))
        .map_err(|e| OpError::new(ErrorCode::Internal, e.to_string()))
}

/// Attaches to `tab` unless already attached.
pub async fn ensure_attached(tab: TabId) -> Result<(), OpError> {
    let pending = ATTACHED.with(|attached| match attached.borrow().get(&tab) {
        Some(Attachment::Attached) => Ok(None),
        Some(Attachment::Attaching(promise)) => Ok(Some(promise.clone())),
        None => Err(()),
    });
    let promise = match pending {
        Ok(None) => return Ok(()),
        Ok(Some(promise)) => promise,
        Err(()) => {
            let promise = chrome::debugger_attach(&debuggee(tab)?, PROTOCOL_VERSION)
                .map_err(|e| attach_error(tab, &chrome::js_message(&e)))?;
            ATTACHED.with(|attached| {
                attached
                    .borrow_mut()
                    .insert(tab, Attachment::Attaching(promise.clone()))
            });
            promise
        }
    };
    match JsFuture::from(promise).await {
        Ok(_) => {
            ATTACHED.with(|attached| attached.borrow_mut().insert(tab, Attachment::Attached));
            Ok(())
        }
        Err(error) => {
            forget(tab);
            let message = chrome::js_message(&error);
            // After a worker restart Chrome may still hold tabwire's own earlier session; a
            // command that succeeds proves the session is ours.
            if message.contains("already attached") && probe(tab).await {
                ATTACHED.with(|attached| attached.borrow_mut().insert(tab, Attachment::Attached));
                return Ok(());
            }
            Err(attach_error(tab, &message))
        }
    }
}

async fn probe(tab: TabId) -> bool {
    let Ok(target) = debuggee(tab) else {
        return false;
    };
    chrome::call(chrome::debugger_send_command(
        &target,
        "Page.getLayoutMetrics",
        &JsValue::UNDEFINED,
    ))
    .await
    .is_ok()
}

/// Maps a failed attach.
pub fn attach_error(tab: TabId, message: &str) -> OpError {
    let lower = message.to_ascii_lowercase();
    if lower.contains("already attached") {
        return OpError::new(
            ErrorCode::DebuggerUnavailable,
            "Another debugger (DevTools or another extension) is attached to this tab, so \
             tabwire cannot send trusted input. Close DevTools for this tab or stop the other \
             tool, then retry.",
        );
    }
    if lower.contains("no tab with") {
        return OpError::new(
            ErrorCode::TabNotFound,
            format!("No tab with ID {tab} exists. Call list_tabs to see the open tabs."),
        );
    }
    if lower.contains("cannot access") || lower.contains("cannot attach") {
        return OpError::new(
            ErrorCode::RestrictedPage,
            format!(
                "Chrome does not allow debugging this page: {message} Use an ordinary web page."
            ),
        );
    }
    OpError::new(
        ErrorCode::DebuggerUnavailable,
        format!(
            "Chrome would not let tabwire attach its debugger to the tab: {message} Retry in a moment."
        ),
    )
}

/// Sends one CDP command, reattaching once if Chrome says the session is gone.
async fn send(tab: TabId, method: &str, params: &serde_json::Value) -> Result<JsValue, OpError> {
    let params =
        chrome::to_js(params).map_err(|e| OpError::new(ErrorCode::Internal, e.to_string()))?;
    let mut reattached = false;
    loop {
        ensure_attached(tab).await?;
        match chrome::call(chrome::debugger_send_command(
            &debuggee(tab)?,
            method,
            &params,
        ))
        .await
        {
            Ok(value) => return Ok(value),
            Err(failure) if !reattached && failure.message.contains("not attached") => {
                forget(tab);
                reattached = true;
            }
            Err(failure) => {
                return Err(OpError::new(
                    ErrorCode::DebuggerUnavailable,
                    format!("Chrome's debugger rejected {method}: {failure}"),
                ));
            }
        }
    }
}

/// Moves the mouse to (x, y) in CSS pixels of the viewport and clicks the left button.
///
/// Press and release run in a task of their own that finishes even if the caller stops
/// waiting (deadline, closed connection): a press without its release would leave the page with
/// the button held, turning later mouse moves into drags.
pub async fn click_at(tab: TabId, x: f64, y: f64) -> Result<(), OpError> {
    send(
        tab,
        "Input.dispatchMouseEvent",
        &json!({"type": "mouseMoved", "x": x, "y": y, "button": "none", "buttons": 0}),
    )
    .await?;
    let press_and_release = wasm_bindgen_futures::future_to_promise(async move {
        for (kind, buttons) in [("mousePressed", 1), ("mouseReleased", 0)] {
            let event = json!({"type": kind, "x": x, "y": y, "button": "left", "buttons": buttons, "clickCount": 1});
            if let Err(error) = send(tab, "Input.dispatchMouseEvent", &event).await {
                return Err(JsValue::from_str(&error.message));
            }
        }
        Ok(JsValue::UNDEFINED)
    });
    // From the press on, the page may already have reacted: say so if anything fails.
    wasm_bindgen_futures::JsFuture::from(press_and_release)
        .await
        .map(|_| ())
        .map_err(|message| {
            OpError::new(
                ErrorCode::DebuggerUnavailable,
                message
                    .as_string()
                    .unwrap_or_else(|| "the click failed".into()),
            )
            .action_may_have_occurred()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_failures_map_to_codes() {
        let other = attach_error(
            3,
            "Another debugger is already attached to the tab with id: 3.",
        );
        assert_eq!(other.code, ErrorCode::DebuggerUnavailable);
        assert!(other.message.contains("Close DevTools"));
        assert_eq!(
            attach_error(3, "No tab with given id 3.").code,
            ErrorCode::TabNotFound
        );
        assert_eq!(
            attach_error(3, "Cannot access a chrome:// URL").code,
            ErrorCode::RestrictedPage
        );
    }
}
