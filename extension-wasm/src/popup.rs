//! The popup's requests to the worker (`chrome.runtime.sendMessage`) and their answers.
//!
//! `{type: "getState"}` → the configuration, the connection status and the call log (polled
//! every second while the popup is open); `{type: "connect", serverUrl, browserName,
//! accessToken, pairingCode}` → validates, saves to `chrome.storage.local` and reconnects,
//! answering `{ok: true}` or `{ok: false, error}` with a sentence the popup shows as is;
//! `{type: "forgetToken"}` → saves "no token" and reconnects, with the same answer.
//!
//! A pairing code typed on Connect means "pair (again)": the key of an earlier pairing is
//! forgotten and the code is used on the next connection. The state says whether the browser
//! is paired, never the key or the code.
//!
//! The access token only ever travels from the popup to the worker: the state says whether a
//! token is set and whether policy set it, never the token. A blank Access token field on
//! Connect keeps the token in use; Forget token is the way to drop it.
//!
//! The agents' side: the state lists the open questions (approvals on `ask` origins, handoffs
//! from `request_human`) and the browser owner's policy as lines; `{type: "answer", id,
//! answer}` answers a question (`once`, `session`, `deny`, `done`, `decline`);
//! `{type: "savePolicy", text}` checks and saves the owner's policy; `{type: "verdict", url}`
//! says what applies to a URL (the popup asks for its window's current tab).

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;

use crate::approvals::{self, Answer, Pending};
use crate::calllog::{self, CallRecord};
use crate::chrome;
use crate::config::{
    ConfigLayer, Source, normalize_server_url, store, validate_access_token, validate_browser_name,
};
use crate::connection::{self, Control, Status};
use crate::policy;
use tabwire_protocol::pairing::PairingCode;
use tabwire_protocol::policy::Verdict;

/// A message from the popup.
#[derive(Debug, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum PopupRequest {
    /// Everything the popup shows.
    GetState,
    /// Save these values and connect with them.
    Connect {
        /// The Server URL as typed.
        server_url: String,
        /// The browser name as typed.
        browser_name: String,
        /// A new access token as typed; absent or blank keeps the token in use.
        #[serde(default)]
        access_token: Option<String>,
        /// A pairing code as typed; absent or blank keeps the pairing in use.
        #[serde(default)]
        pairing_code: Option<String>,
    },
    /// Drop the saved access token and reconnect without one.
    ForgetToken,
    /// A person's answer to an open question.
    Answer {
        /// The question's number.
        id: u32,
        /// The answer.
        answer: Answer,
    },
    /// Save the browser owner's policy, as lines.
    SavePolicy {
        /// The rules as typed.
        text: String,
    },
    /// What the effective policy says about a URL.
    Verdict {
        /// The URL (the current tab's).
        url: String,
    },
    /// The person's *Stop* on a recording.
    StopRecording {
        /// The recorded tab.
        tab_id: u32,
    },
}

/// The owner's policy as the popup shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct OwnerPolicy {
    /// The rules, one per line.
    lines: String,
    /// Set by an administrator (read-only in the popup).
    managed: bool,
}

/// The answer to `savePolicy` and `verdict`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PolicyReply {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verdict: Option<Verdict>,
}

/// What the popup shows.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PopupState {
    server_url: String,
    browser_name: String,
    /// Whether an access token is in use (never the token itself).
    access_token_set: bool,
    /// Whether this browser holds a pairing key (never the key itself).
    paired: bool,
    /// Fields set by policy, shown read-only.
    managed: ManagedFields,
    /// The WebSocket URL in use.
    endpoint: Option<String>,
    status: &'static str,
    /// The hub's refusal, when refused.
    refusal: Option<String>,
    hub_version: Option<String>,
    last_error: Option<String>,
    browser_id: Option<String>,
    extension_version: String,
    calls: Vec<CallRecord>,
    /// Questions waiting for a person's answer.
    questions: Vec<Pending>,
    /// The tabs being recorded.
    recordings: Vec<crate::recording::Shown>,
    /// The browser owner's policy.
    policy: OwnerPolicy,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ManagedFields {
    server_url: bool,
    browser_name: bool,
    access_token: bool,
    pairing_code: bool,
}

/// The answer to `connect`.
#[derive(Debug, Serialize)]
pub struct ConnectReply {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Handles one popup message.
pub async fn handle(message: JsValue) -> JsValue {
    let reply = match chrome::from_js::<PopupRequest>(message) {
        Ok(PopupRequest::GetState) => chrome::to_js(&state()),
        Ok(PopupRequest::Connect {
            server_url,
            browser_name,
            access_token,
            pairing_code,
        }) => chrome::to_js(
            &connect(
                &server_url,
                &browser_name,
                access_token.as_deref(),
                pairing_code.as_deref(),
            )
            .await,
        ),
        Ok(PopupRequest::ForgetToken) => chrome::to_js(&forget_token().await),
        Ok(PopupRequest::Answer { id, answer }) => {
            let taken = approvals::answer(id, answer);
            chrome::to_js(&ConnectReply {
                ok: taken,
                error: (!taken).then(|| "That question is no longer open.".to_owned()),
            })
        }
        Ok(PopupRequest::StopRecording { tab_id }) => {
            let stopped = crate::recording::stop_by_person(tab_id);
            chrome::to_js(&ConnectReply {
                ok: stopped,
                error: (!stopped).then(|| "That tab is no longer recorded.".to_owned()),
            })
        }
        Ok(PopupRequest::SavePolicy { text }) => chrome::to_js(&match policy::owner() {
            (_, true) => PolicyReply {
                ok: false,
                error: Some("Your administrator set this browser's policy.".into()),
                verdict: None,
            },
            _ => match policy::save_owner(&text).await {
                Ok(_) => PolicyReply {
                    ok: true,
                    error: None,
                    verdict: None,
                },
                Err(error) => PolicyReply {
                    ok: false,
                    error: Some(error),
                    verdict: None,
                },
            },
        }),
        Ok(PopupRequest::Verdict { url }) => chrome::to_js(&PolicyReply {
            ok: true,
            error: None,
            verdict: Some(policy::verdict(&url)),
        }),
        Err(e) => chrome::to_js(&ConnectReply {
            ok: false,
            error: Some(format!("unknown popup request: {e}")),
        }),
    };
    reply.unwrap_or(JsValue::NULL)
}

fn state() -> PopupState {
    connection::with(|w| {
        let url = w.layers.server_url();
        let name = w.layers.browser_name();
        let token = w.layers.access_token();
        let code = w.layers.pairing_code();
        let status = if w.config_loaded {
            w.status.clone()
        } else {
            Status::Connecting
        };
        PopupState {
            server_url: url.value,
            browser_name: name.value,
            access_token_set: !token.value.trim().is_empty(),
            paired: w.pairing_key.is_some(),
            managed: ManagedFields {
                server_url: url.source == Source::Managed,
                browser_name: name.source == Source::Managed,
                access_token: token.source == Source::Managed,
                pairing_code: code.source == Source::Managed,
            },
            endpoint: w.endpoint.clone(),
            status: status.as_str(),
            refusal: match &status {
                Status::Refused(message) => Some(message.clone()),
                _ => None,
            },
            hub_version: w.hub_version.clone(),
            last_error: w.last_error.clone(),
            browser_id: w.browser_id.clone(),
            extension_version: chrome::extension_version(),
            calls: calllog::recent(),
            questions: approvals::pending(),
            recordings: crate::recording::shown(),
            policy: {
                let (policy, managed) = policy::owner();
                OwnerPolicy {
                    lines: policy.to_lines(),
                    managed,
                }
            },
        }
    })
}

fn failed(error: String) -> ConnectReply {
    ConnectReply {
        ok: false,
        error: Some(error),
    }
}

async fn connect(
    server_url: &str,
    browser_name: &str,
    access_token: Option<&str>,
    pairing_code: Option<&str>,
) -> ConnectReply {
    if let Err(e) = normalize_server_url(server_url) {
        return failed(e.to_string());
    }
    let name = match validate_browser_name(browser_name) {
        Ok(_) => browser_name.trim().to_owned(),
        Err(e) => return failed(e.to_string()),
    };
    // `None`: keep the token in use (the saved one, or none saved).
    let new_token = match validate_access_token(access_token.unwrap_or_default()) {
        Ok(token) => token.map(|t| t.as_str().to_owned()),
        Err(e) => return failed(e.to_string()),
    };
    // `None`: keep the pairing in use (the key, or the configured code).
    let new_code = match pairing_code.map(str::trim).filter(|code| !code.is_empty()) {
        None => None,
        Some(code) => match PairingCode::parse(code) {
            Ok(code) => Some(code.to_string()),
            Err(e) => return failed(e.to_string()),
        },
    };
    wait_for_config().await;
    if new_code.is_some() {
        if let Err(e) = store::save_pairing_key(None).await {
            return failed(format!("could not forget the old pairing: {e}"));
        }
        connection::with(|state| state.pairing_key = None);
    }
    let layer = ConfigLayer {
        server_url: Some(server_url.trim().to_owned()),
        browser_name: Some(name),
        access_token: new_token,
        pairing_code: new_code,
    };
    save_and_apply(layer, true).await
}

async fn forget_token() -> ConnectReply {
    wait_for_config().await;
    let layer = ConfigLayer {
        access_token: Some(String::new()),
        ..ConfigLayer::default()
    };
    save_and_apply(layer, false).await
}

/// Until the worker has read its saved settings, they would overwrite what the popup saves.
async fn wait_for_config() {
    while !connection::with(|state| state.config_loaded) {
        crate::timer::sleep(20.0).await;
    }
}

/// Saves the fields `changes` sets, applies them to the user layer and reconnects if that
/// changes the target (or, with `nudge`, in any case: the user pressed Connect).
async fn save_and_apply(changes: ConfigLayer, nudge: bool) -> ConnectReply {
    if let Err(e) = store::save_user(&changes).await {
        return failed(format!("could not save the settings: {e}"));
    }
    let merge = |user: &mut ConfigLayer| {
        let ConfigLayer {
            server_url,
            browser_name,
            access_token,
            pairing_code,
        } = changes;
        user.server_url = server_url.or(user.server_url.take());
        user.browser_name = browser_name.or(user.browser_name.take());
        user.access_token = access_token.or(user.access_token.take());
        user.pairing_code = pairing_code.or(user.pairing_code.take());
    };
    // A changed target already restarts the connection; posting Connect as well would restart
    // the new socket again while it is still opening.
    if !connection::reconfigure(|layers| merge(&mut layers.user)) && nudge {
        connection::nudge(Control::Connect);
    }
    ConnectReply {
        ok: true,
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn popup_requests_parse() {
        let get: PopupRequest = serde_json::from_str(r#"{"type":"getState"}"#).unwrap();
        assert!(matches!(get, PopupRequest::GetState));
        let connect: PopupRequest = serde_json::from_str(
            r#"{"type":"connect","serverUrl":"ws://h:1","browserName":"Work"}"#,
        )
        .unwrap();
        assert!(matches!(
            connect,
            PopupRequest::Connect { ref server_url, access_token: None, .. }
                if server_url == "ws://h:1"
        ));
        let with_token: PopupRequest = serde_json::from_str(
            r#"{"type":"connect","serverUrl":"","browserName":"","accessToken":"a.b"}"#,
        )
        .unwrap();
        assert!(matches!(
            with_token,
            PopupRequest::Connect { access_token: Some(ref t), .. } if t == "a.b"
        ));
        let forget: PopupRequest = serde_json::from_str(r#"{"type":"forgetToken"}"#).unwrap();
        assert!(matches!(forget, PopupRequest::ForgetToken));
    }
}
