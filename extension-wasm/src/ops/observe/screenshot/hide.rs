//! Hiding, for a capture's duration, every frame element of the documents that hold a frame
//! agents may not read, so that such a frame is not drawn at all wherever the page puts it
//! meanwhile: painting over where it was measured ([`super::cover`]) cannot catch a page that
//! keeps it away during both measurements and brings it in for the capture.
//!
//! The style is a user-origin stylesheet (`chrome.scripting.insertCSS` with `origin: "USER"`):
//! in the cascade a user `!important` declaration beats every author one, inline `!important`
//! included, and only transitions rank above it, which it turns off on the same elements
//! (animations rank below it). A hidden frame element hides its frame's pixels, in-process or
//! not, whatever the framed page's own styles say (measured: docs/policy.md). The allowed
//! frames of those documents go blank in the image too; the frames of other documents are left
//! alone.

use std::collections::BTreeSet;

use serde_json::json;
use tabwire_protocol::TabId;

use crate::chrome;

/// The style, on every element that can hold a frame (as the collector's `FRAME_ELEMENTS`).
const CSS: &str = "iframe, frame, object, embed, fencedframe { visibility: hidden !important; \
                   transition: none !important; animation: none !important; }";

/// The documents of a tab whose frame elements are hidden; shown again when dropped.
pub struct Hiding {
    tab: TabId,
    /// Where the style is.
    documents: BTreeSet<u32>,
    /// Where it was tried: a document Chrome refused (going away, or not scriptable) is
    /// painted over as measured, as before hiding existed.
    tried: BTreeSet<u32>,
}

impl Hiding {
    /// Nothing hidden yet.
    pub fn new(tab: TabId) -> Self {
        Self {
            tab,
            documents: BTreeSet::new(),
            tried: BTreeSet::new(),
        }
    }

    /// Hides the frame elements of those of `documents` not hidden yet (in one call, or one
    /// document at a time when Chrome refuses one: a document going away must not keep the
    /// others shown).
    pub async fn hide(&mut self, documents: &BTreeSet<u32>) {
        let new: Vec<u32> = documents.difference(&self.tried).copied().collect();
        if new.is_empty() {
            return;
        }
        self.tried.extend(new.iter().copied());
        if style(self.tab, &new, true).await {
            self.documents.extend(new);
            return;
        }
        for frame in new {
            if style(self.tab, &[frame], true).await {
                self.documents.insert(frame);
            }
        }
    }

    /// Whether hiding was tried in every one of `documents`.
    pub fn tried(&self, documents: &BTreeSet<u32>) -> bool {
        documents.is_subset(&self.tried)
    }
}

impl Drop for Hiding {
    fn drop(&mut self) {
        if self.documents.is_empty() {
            return;
        }
        let tab = self.tab;
        let documents: Vec<u32> = std::mem::take(&mut self.documents).into_iter().collect();
        // A document gone meanwhile took its style with it; the others are shown again.
        wasm_bindgen_futures::spawn_local(async move {
            if !style(tab, &documents, false).await {
                for frame in documents {
                    style(tab, &[frame], false).await;
                }
            }
        });
    }
}

/// Inserts (`on`) or removes the style in `frames` of `tab`; whether Chrome did.
async fn style(tab: TabId, frames: &[u32], on: bool) -> bool {
    let Ok(injection) = chrome::to_js(&json!({
        "target": {"tabId": tab, "frameIds": frames},
        "css": CSS,
        "origin": "USER",
    })) else {
        return false;
    };
    let call = if on {
        chrome::scripting_insert_css(&injection)
    } else {
        chrome::scripting_remove_css(&injection)
    };
    chrome::call(call).await.is_ok()
}
