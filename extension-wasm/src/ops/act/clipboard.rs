//! The browser's clipboard (issue 26, docs/files.md), as a person's copy and paste see it: the
//! text tabwire's offscreen document reads or writes with `execCommand` (`js/clipboard.js`).
//!
//! It needs the `clipboardRead`/`clipboardWrite` permissions, which are optional: the person
//! turns them on in the popup, and until then the call is refused saying so. The request layer
//! judged the tab first (a read is a sensitive read of its page, a write an action there).
//! Nothing takes the focus: the offscreen document is not shown.

use js_sys::{Promise, Reflect};
use tabwire_protocol::files::{ClipboardRequest, ClipboardText, MAX_CLIPBOARD_CHARS};
use tabwire_protocol::{ErrorCode, OpError};
use wasm_bindgen::prelude::*;

use crate::checkpoint::Checkpoint;
use crate::chrome;

#[wasm_bindgen(module = "/js/clipboard.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = clipboardGranted)]
    fn clipboard_granted(permission: &str) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, js_name = clipboard)]
    fn clipboard_call(write: Option<String>, max: f64) -> Result<Promise, JsValue>;
}

/// Reads the clipboard, or writes `request.write` to it.
pub async fn clipboard(
    request: ClipboardRequest,
    checkpoint: &Checkpoint,
) -> Result<ClipboardText, OpError> {
    let permission = if request.write.is_some() {
        "clipboardWrite"
    } else {
        "clipboardRead"
    };
    let granted = chrome::call(clipboard_granted(permission))
        .await
        .map_err(|failure| failed(&failure.message))?;
    if granted.as_bool() != Some(true) {
        return Err(OpError::new(
            ErrorCode::Forbidden,
            format!(
                "The person has not let agents use this browser's clipboard: tabwire's popup \
                 has a Clipboard switch that asks Chrome for it ({permission})."
            ),
        ));
    }
    if let Some(text) = &request.write {
        let length = text.chars().count();
        if length > MAX_CLIPBOARD_CHARS {
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                format!("write holds {length} characters, more than {MAX_CLIPBOARD_CHARS}"),
            ));
        }
        checkpoint.check()?;
        chrome::call(clipboard_call(Some(text.clone()), 0.0))
            .await
            .map_err(|failure| failed(&failure.message).action_may_have_occurred())?;
        return Ok(ClipboardText { text: None, length });
    }
    checkpoint.check_alive()?;
    // JavaScript counts UTF-16 units: the offscreen document refuses past twice the cap, and
    // the characters are counted here.
    let answer = chrome::call(clipboard_call(None, 2.0 * MAX_CLIPBOARD_CHARS as f64))
        .await
        .map_err(|failure| failed(&failure.message))?;
    let text = Reflect::get(&answer, &"text".into())
        .ok()
        .and_then(|text| text.as_string());
    let length = text
        .as_ref()
        .map_or(usize::MAX, |text| text.chars().count());
    let Some(text) = text.filter(|_| length <= MAX_CLIPBOARD_CHARS) else {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!(
                "The clipboard holds more than the {MAX_CLIPBOARD_CHARS} characters returned at \
                 once."
            ),
        ));
    };
    Ok(ClipboardText {
        text: Some(text),
        length,
    })
}

fn failed(why: &str) -> OpError {
    OpError::new(
        ErrorCode::Internal,
        format!("tabwire could not use the clipboard: {why}"),
    )
}
