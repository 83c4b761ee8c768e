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
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::policy::{Gate, Need, Owner, Policy, Verdict, stricter};
use tabwire_protocol::{ErrorCode, OpError, TabId};
use wasm_bindgen::JsValue;

use crate::chrome::{self, ChromeFrame};

/// Where the browser owner's policy is kept, as lines (`Policy::to_lines`), in
/// `chrome.storage.local` and in managed storage alike.
pub const OWNER_POLICY_KEY: &str = "agentPolicy";

#[derive(Default)]
struct Policies {
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

/// The administrator's policy from managed storage (`None`: none set).
fn set_managed(policy: Option<Policy>) {
    POLICIES.with(|p| p.borrow_mut().managed = policy);
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

/// `need` on `url`: `Ok(true)` to go ahead, `Ok(false)` when a person must approve first
/// (`ask`), or `ORIGIN_BLOCKED` naming the rule.
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

/// The error for a tab that has no document yet: its first page has not been committed (it is
/// still on its way), so Chrome lists no top frame for it.
pub fn still_loading(tab: TabId) -> OpError {
    OpError::new(
        ErrorCode::TabLoading,
        format!(
            "Tab {tab} is still loading its first page: it has no document to work on yet. Call \
             again in a moment."
        ),
    )
}

/// The URL of frame `frame` of `tab` (0: the tab's top document) as Chrome has it now; a tab
/// without a top frame yet is [`still_loading`].
pub async fn frame_url(tab: TabId, frame: u32) -> Result<String, OpError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Frame {
        #[serde(default)]
        url: String,
        #[serde(default = "no_parent")]
        parent_frame_id: i64,
    }
    fn no_parent() -> i64 {
        -1
    }
    // A blank or srcdoc frame holds what its parent put there: it is judged by the first
    // ancestor with a URL of its own.
    let mut id = frame;
    for _ in 0..16 {
        let details = chrome::to_js(&json!({"tabId": tab, "frameId": id}))
            .map_err(|e| OpError::new(ErrorCode::Internal, e.message))?;
        let found = chrome::call(chrome::web_navigation_get_frame(&details))
            .await
            .map_err(|failure| {
                OpError::new(
                    ErrorCode::TabNotFound,
                    format!("Could not read tab {tab}'s frame {id}: {}", failure.message),
                )
            })?;
        if found.is_null() || found.is_undefined() {
            // A tab whose first page has not committed yet has no top frame at all: that is
            // a tab still loading, not a frame the caller named wrongly.
            if id == crate::refs::TOP_FRAME {
                return Err(still_loading(tab));
            }
            return Err(OpError::new(
                ErrorCode::InvalidArgument,
                format!("Tab {tab} has no frame {frame} (any more). Call list_frames."),
            ));
        }
        let found: Frame =
            chrome::from_js(found).map_err(|e| OpError::new(ErrorCode::Internal, e.message))?;
        let inherits = found.url.to_ascii_lowercase().starts_with("about:");
        match u32::try_from(found.parent_frame_id) {
            Ok(parent) if inherits => id = parent,
            _ => return Ok(found.url),
        }
    }
    Err(OpError::new(
        ErrorCode::Internal,
        format!("Tab {tab}'s frame {frame} is nested too deep to judge."),
    ))
}

/// How the policy sees one frame of a tab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameView {
    /// Its parent; `None` for the top document.
    pub parent: Option<u32>,
    /// The URL it is judged by: its own, or for a blank or `srcdoc` frame (which holds what its
    /// parent put there) the nearest ancestor's with a URL of its own.
    pub url: String,
    /// The nearest frame, itself included, that shows an origin the policy denies. Nothing in
    /// such a frame is read, and nothing under it either: what a denied page embeds is part of
    /// what it shows (a payment form a bank frames, an address in a frame's URL).
    pub denied_at: Option<u32>,
}

impl FrameView {
    /// Whether agents may read the frame (its own origin and every frame above it allow it).
    pub fn readable(&self) -> bool {
        self.denied_at.is_none()
    }
}

/// Judges every frame of `frames` (as `chrome.webNavigation.getAllFrames` lists them), `denies`
/// telling whether a URL is on a denied origin. A frame whose parent is not listed (it is being
/// torn down) cannot be placed, so it counts as denied.
pub fn view_frames(
    frames: &[ChromeFrame],
    denies: impl Fn(&str) -> bool,
) -> HashMap<u32, FrameView> {
    let by_id: HashMap<i64, &ChromeFrame> = frames.iter().map(|f| (f.frame_id, f)).collect();
    let mut views: HashMap<u32, FrameView> = HashMap::with_capacity(frames.len());
    for frame in frames {
        // The chain from this frame up to the top, or up to a frame already judged.
        let mut chain = vec![frame];
        let mut broken = false;
        loop {
            let at = chain[chain.len() - 1];
            if at.parent_frame_id < 0
                || u32::try_from(at.frame_id).is_ok_and(|id| views.contains_key(&id))
            {
                break;
            }
            match by_id.get(&at.parent_frame_id) {
                Some(parent) if chain.len() <= 64 => chain.push(parent),
                _ => {
                    broken = true;
                    break;
                }
            }
        }
        // Judged from the top down.
        for at in chain.into_iter().rev() {
            let Ok(id) = u32::try_from(at.frame_id) else {
                continue;
            };
            if views.contains_key(&id) {
                continue;
            }
            let parent = u32::try_from(at.parent_frame_id).ok();
            let above = parent.and_then(|p| views.get(&p));
            let url = match above {
                Some(above) if at.url.to_ascii_lowercase().starts_with("about:") => {
                    above.url.clone()
                }
                _ => at.url.clone(),
            };
            let denied_at = match above {
                Some(above) if above.denied_at.is_some() => above.denied_at,
                None if parent.is_some() && broken => Some(id),
                _ if denies(&url) => Some(id),
                _ => None,
            };
            views.insert(
                id,
                FrameView {
                    parent,
                    url,
                    denied_at,
                },
            );
        }
    }
    views
}

/// Whether agents may read the frame at `url` that opened a JavaScript dialog, among `frames`
/// (the tab's, as `webNavigation` lists them; `denies` as for [`view_frames`]). Chrome names
/// only the opener's URL, so every frame showing that URL must be readable, and a URL that
/// names no frame of its own (a blank or `srcdoc` document, which shows what its parent put
/// there, or a frame gone meanwhile) is readable only while no frame of the tab is denied.
pub fn dialog_readable(frames: &[ChromeFrame], url: &str, denies: impl Fn(&str) -> bool) -> bool {
    if denies(url) {
        return false;
    }
    let views = view_frames(frames, denies);
    let readable = |frame: &ChromeFrame| {
        u32::try_from(frame.frame_id)
            .ok()
            .and_then(|id| views.get(&id))
            .is_some_and(FrameView::readable)
    };
    let openers: Vec<&ChromeFrame> = frames.iter().filter(|f| f.url == url).collect();
    if openers.is_empty() || url.to_ascii_lowercase().starts_with("about:") {
        return views.values().all(FrameView::readable);
    }
    openers.into_iter().all(readable)
}

/// The policy's view of every frame of `tab` now.
pub async fn frame_views(tab: TabId) -> Result<HashMap<u32, FrameView>, OpError> {
    let frames = chrome::active_frames(tab).await.map_err(|failure| {
        OpError::new(
            ErrorCode::TabNotFound,
            format!("Could not read tab {tab}'s frames: {}", failure.message),
        )
    })?;
    Ok(view_frames(&frames, |url| {
        verdict(url).access == tabwire_protocol::policy::Access::Deny
    }))
}

/// `need` on what frame `frame` of `tab` shows now: `Ok(None)` to go ahead, `Ok(Some(origin))`
/// when a person must approve acting on `origin` first (`ask`).
pub async fn check_frame(tab: TabId, frame: u32, need: Need) -> Result<Option<String>, OpError> {
    if allows_everything() {
        return Ok(None);
    }
    // The tab's page has no frame above it: one `getFrame` reads it.
    if frame == 0 {
        return judge_url(&frame_url(tab, 0).await?, need);
    }
    check_view(tab, &frame_views(tab).await?, frame, need)
}

/// [`check_frame`] for a tab's top document whose URL is known: `None` when `need` may go
/// ahead, the origin when it needs a person's approval, the error when it is refused.
pub fn judge_url(url: &str, need: Need) -> Result<Option<String>, OpError> {
    if check_url(url, need)? {
        return Ok(None);
    }
    Ok(Some(
        tabwire_protocol::policy::origin_of(url).unwrap_or_else(|| url.to_owned()),
    ))
}

/// [`check_frame`] against views read already (one read for several frames).
pub fn check_view(
    tab: TabId,
    views: &HashMap<u32, FrameView>,
    frame: u32,
    need: Need,
) -> Result<Option<String>, OpError> {
    if allows_everything() {
        return Ok(None);
    }
    let Some(view) = views.get(&frame) else {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!("Tab {tab} has no frame {frame} (any more). Call list_frames."),
        ));
    };
    if let Some(at) = view.denied_at.filter(|at| *at != frame) {
        let url = views.get(&at).map(|v| v.url.as_str()).unwrap_or_default();
        let why = match verdict(url).gate(Need::Read, url) {
            Gate::Blocked(why) => why,
            _ => "its origin is denied.".to_owned(),
        };
        return Err(OpError::new(
            ErrorCode::OriginBlocked,
            format!(
                "Frame {frame} is inside frame {at}, and nothing inside a denied frame is read or \
                 acted on: {why}"
            ),
        ));
    }
    if check_url(&view.url, need)? {
        return Ok(None);
    }
    Ok(Some(
        tabwire_protocol::policy::origin_of(&view.url).unwrap_or_else(|| view.url.clone()),
    ))
}

/// Parses the owner's policy as the popup or managed storage hold it.
pub fn parse_owner(text: &str) -> Result<Policy, String> {
    Policy::from_lines(text).map_err(|e| e.0)
}

/// Where the last managed policy read is kept, so that a restarted worker applies it before its
/// first request (managed storage itself can take seconds to answer on a worker's first start).
const MANAGED_COPY_KEY: &str = "agentPolicyManagedCopy";

/// Reads, before the worker connects, the owner's policy as the popup saved it and the copy of
/// the administrator's last read.
pub async fn load_owner() {
    let keys = JsValue::from(js_sys::Array::of2(
        &JsValue::from_str(OWNER_POLICY_KEY),
        &JsValue::from_str(MANAGED_COPY_KEY),
    ));
    if let Ok(items) = chrome::call(chrome::storage_local_get(&keys)).await {
        let items: serde_json::Map<String, serde_json::Value> =
            chrome::from_js(items).unwrap_or_default();
        set_owner(read_lines(items.get(OWNER_POLICY_KEY), "the popup's"));
        if let Some(copy) = items.get(MANAGED_COPY_KEY).and_then(|v| v.as_str()) {
            set_managed(Some(managed_policy(copy)));
        }
    }
}

/// Reads the administrator's policy from managed storage (again, when it changed).
pub async fn load_managed() {
    let Ok(items) = chrome::call(chrome::storage_managed_get()).await else {
        return;
    };
    let text: Option<String> = chrome::from_js::<serde_json::Map<String, serde_json::Value>>(items)
        .ok()
        .and_then(|items| items.get(OWNER_POLICY_KEY)?.as_str().map(str::to_owned));
    set_managed(text.as_deref().map(managed_policy));
    // Kept for the next worker start, or forgotten when the administrator removed it.
    let copy = json!({ MANAGED_COPY_KEY: text });
    if let Ok(copy) = chrome::to_js(&copy)
        && let Err(e) = chrome::call(chrome::storage_local_set(&copy)).await
    {
        crate::chrome::log!("could not keep a copy of the managed policy: {}", e.message);
    }
}

/// The administrator's policy from its lines; one that does not parse denies everything rather
/// than opening everything up.
fn managed_policy(text: &str) -> Policy {
    parse_owner(text).unwrap_or_else(|why| {
        crate::chrome::log!(
            "managed agentPolicy does not parse ({why}); denying every origin until it is fixed"
        );
        Policy {
            default: tabwire_protocol::policy::Access::Deny,
            ..Policy::default()
        }
    })
}

/// The popup's policy from its stored lines (an unreadable one is ignored: it was checked when
/// saved, so only a hand edit can break it).
fn read_lines(value: Option<&serde_json::Value>, whose: &str) -> Policy {
    let text = value.and_then(|v| v.as_str()).unwrap_or_default();
    parse_owner(text).unwrap_or_else(|why| {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(id: i64, parent: i64, url: &str) -> ChromeFrame {
        ChromeFrame {
            frame_id: id,
            parent_frame_id: parent,
            url: url.into(),
            document_lifecycle: None,
        }
    }

    #[test]
    fn what_is_inside_a_denied_frame_is_denied_and_blank_frames_take_their_parents_url() {
        let frames = [
            frame(0, -1, "https://shop.example/"),
            frame(3, 0, "https://bank.example/account"),
            // Readable by its own origin, but the bank framed it.
            frame(7, 3, "https://pay.example/card"),
            frame(8, 3, "about:srcdoc"),
            frame(4, 0, "about:blank"),
            frame(5, 4, "https://pay.example/"),
            // Its parent is not listed (being torn down): it cannot be placed.
            frame(9, 66, "https://pay.example/"),
        ];
        let views = view_frames(&frames, |url| url.starts_with("https://bank.example"));
        let denied_at = |id: u32| views[&id].denied_at;
        assert_eq!(denied_at(0), None);
        assert_eq!(denied_at(3), Some(3));
        assert_eq!(denied_at(7), Some(3));
        assert_eq!(denied_at(8), Some(3));
        assert_eq!(views[&8].url, "https://bank.example/account");
        assert_eq!(views[&4].url, "https://shop.example/");
        assert!(views[&4].readable() && views[&5].readable());
        assert_eq!(denied_at(9), Some(9));
        assert_eq!(views[&7].parent, Some(3));
        assert_eq!(views[&0].parent, None);
    }

    #[test]
    fn a_dialog_is_readable_only_when_every_frame_that_may_have_opened_it_is() {
        let bank = |url: &str| url.starts_with("https://bank.example");
        let frames = [
            frame(0, -1, "https://shop.example/"),
            frame(3, 0, "https://bank.example/account"),
            // Allowed by its own origin, but framed by the bank.
            frame(7, 3, "https://pay.example/card"),
            frame(4, 0, "https://pay.example/card"),
            frame(5, 0, "https://news.example/"),
        ];
        assert!(dialog_readable(&frames, "https://shop.example/", bank));
        assert!(dialog_readable(&frames, "https://news.example/", bank));
        assert!(!dialog_readable(
            &frames,
            "https://bank.example/account",
            bank
        ));
        // Denied by its URL even when no listed frame shows it (navigated meanwhile).
        assert!(!dialog_readable(
            &frames,
            "https://bank.example/other",
            bank
        ));
        // The same URL allowed at the top level and inside the bank: it may be either.
        assert!(!dialog_readable(&frames, "https://pay.example/card", bank));
        // No URL of its own, or none listed: readable only while nothing is denied.
        assert!(!dialog_readable(&frames, "about:srcdoc", bank));
        assert!(!dialog_readable(&frames, "https://gone.example/", bank));
        let allowed = &frames[..1];
        assert!(dialog_readable(allowed, "about:blank", bank));
        assert!(dialog_readable(allowed, "https://gone.example/", bank));
    }
}
