//! What a person decides for an agent (issue 14 §2): approvals of actions on `ask` origins,
//! handoffs (`request_human`), where the agent gives a tab to a person until they say they
//! are done, and consent to recording what they do (`record_actions`, issue 28).
//!
//! Each question waits in a list the popup shows (with *Allow once*, *Allow for this session*,
//! *Deny*, or *Done* / *Decline*) and is announced by a notification (with *Allow once* and
//! *Deny*: a notification holds two buttons). The question's request waits, within its own
//! deadline, until someone answers; an unanswered question disappears when its request ends. An
//! approval *for this session* is remembered for the agent's MCP session and the origin until
//! the worker restarts. While a person has a tab, the agent's other calls on it fail at once
//! with `HUMAN_IN_CONTROL`. What a question says, and how, is [`wording`]'s.

use std::cell::RefCell;
use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::json;
use tabwire_protocol::{ErrorCode, HandedBack, HandoffChoice, OpError, TabId};
use wasm_bindgen::prelude::*;

mod wording;

pub use self::wording::{Asker, Question, Subject, Wording};

use crate::chrome;
use crate::timer::{now_ms, sleep};

/// The longest an approval waits, whatever the request's deadline.
pub const APPROVAL_MAX_MS: f64 = 120_000.0;

thread_local! {
    /// The browser's name as the hub knows it, for questions.
    static BROWSER_NAME: RefCell<String> = RefCell::new("this browser".to_owned());
}

/// The browser's name, for the questions asked from now on (the connection sets it).
pub fn set_browser_name(name: &str) {
    BROWSER_NAME.with(|n| *n.borrow_mut() = name.to_owned());
}

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Answer {
    /// Let this one action through.
    Once,
    /// Let this session's actions on this origin through from now on.
    Session,
    /// Refuse.
    Deny,
    /// The person did what the handoff asked.
    Done,
    /// The person will not.
    Decline,
}

/// One open question, as the popup shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    /// Its number, for the answer.
    pub id: u32,
    /// The tab it is about.
    pub tab_id: TabId,
    /// The origin (or URL) it is about.
    pub origin: String,
    /// Who asks.
    pub asker: Asker,
    /// What is asked.
    #[serde(flatten)]
    pub question: Question,
    /// How it reads.
    pub wording: Wording,
    /// When it was asked (ms since the epoch).
    pub at: f64,
}

/// An approval in force while its request runs: the tab and the origin a person approved (or
/// their session was allowed on). Actions on a tab run one at a time, so a page that changed
/// origin since is caught by [`admitted`].
pub struct Admitted {
    tab: TabId,
    origin: String,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        BOOK.with(|b| {
            let mut book = b.borrow_mut();
            if book.admitted.get(&self.tab) == Some(&self.origin) {
                book.admitted.remove(&self.tab);
            }
        });
    }
}

/// Whether the request running on `tab` was approved for `origin`.
pub fn admitted(tab: TabId, origin: &str) -> bool {
    BOOK.with(|b| b.borrow().admitted.get(&tab).is_some_and(|o| o == origin))
}

fn admit(tab: TabId, origin: &str) -> Admitted {
    BOOK.with(|b| b.borrow_mut().admitted.insert(tab, origin.to_owned()));
    Admitted {
        tab,
        origin: origin.to_owned(),
    }
}

/// Forgets what a session was allowed (its MCP session ended).
pub fn forget_session(session: &str) {
    BOOK.with(|b| b.borrow_mut().allowed.retain(|(s, _)| s != session));
}

/// Forgets every session's allowances (the connection to the hub ended: its sessions with it).
pub fn forget_sessions() {
    BOOK.with(|b| b.borrow_mut().allowed.clear());
}

#[derive(Default)]
struct Book {
    /// The origin approved for the request running on a tab.
    admitted: std::collections::HashMap<TabId, String>,
    next: u32,
    open: Vec<(Pending, Option<Answer>)>,
    /// (session, origin) pairs allowed for the session.
    allowed: HashSet<(String, String)>,
}

thread_local! {
    static BOOK: RefCell<Book> = RefCell::default();
}

/// The open questions, oldest first.
pub fn pending() -> Vec<Pending> {
    BOOK.with(|b| {
        b.borrow()
            .open
            .iter()
            .filter(|(_, answer)| answer.is_none())
            .map(|(p, _)| p.clone())
            .collect()
    })
}

/// Records a person's answer to question `id`; `false` when it is no longer open or the answer
/// does not fit the question.
pub fn answer(id: u32, answer: Answer) -> bool {
    BOOK.with(|b| {
        let mut book = b.borrow_mut();
        let Some((pending, slot)) = book
            .open
            .iter_mut()
            .find(|(p, a)| p.id == id && a.is_none())
        else {
            return false;
        };
        let fits = match pending.question {
            Question::Approval { .. } => {
                matches!(answer, Answer::Once | Answer::Session | Answer::Deny)
            }
            Question::Handoff { .. } => matches!(answer, Answer::Done | Answer::Decline),
            Question::Recording => matches!(answer, Answer::Once | Answer::Deny),
        };
        if fits {
            *slot = Some(answer);
        }
        fits
    })
}

/// Whether a person has `tab` (a handoff is open on it).
pub fn person_has(tab: TabId) -> bool {
    BOOK.with(|b| {
        b.borrow().open.iter().any(|(p, a)| {
            p.tab_id == tab && a.is_none() && matches!(p.question, Question::Handoff { .. })
        })
    })
}

/// The error for a call on a tab a person has.
pub fn person_has_error(tab: TabId) -> OpError {
    OpError::new(
        ErrorCode::HumanInControl,
        format!(
            "A person has tab {tab} (request_human) and has not answered yet; nothing was done. \
             Wait for the request_human call to return, or use another tab."
        ),
    )
}

/// Opens a question; returns its number.
fn register(tab: TabId, origin: &str, asker: Asker, question: Question) -> u32 {
    BOOK.with(|b| {
        let browser = BROWSER_NAME.with(|n| n.borrow().clone());
        let wording = wording::wording(&browser, origin, tab, &asker, &question);
        let mut book = b.borrow_mut();
        book.next += 1;
        let id = book.next;
        book.open.push((
            Pending {
                id,
                tab_id: tab,
                origin: origin.to_owned(),
                asker,
                question,
                wording,
                at: now_ms(),
            },
            None,
        ));
        id
    })
}

/// Removes a question when its request ends, answered or not.
struct Open(u32);

impl Drop for Open {
    fn drop(&mut self) {
        let id = self.0;
        BOOK.with(|b| b.borrow_mut().open.retain(|(p, _)| p.id != id));
        clear_notification(id);
    }
}

/// Puts `question` to a person and waits at most `budget_ms` for the answer (`None`: none came).
async fn ask(
    tab: TabId,
    origin: &str,
    asker: Asker,
    question: Question,
    budget_ms: f64,
) -> Option<Answer> {
    let id = register(tab, origin, asker, question.clone());
    let _open = Open(id);
    let wording = BOOK.with(|b| {
        b.borrow()
            .open
            .iter()
            .find(|(p, _)| p.id == id)
            .map(|(p, _)| p.wording.clone())
    });
    if let Some(wording) = wording {
        notify(id, &question, &wording);
    }
    let until = now_ms() + budget_ms;
    loop {
        let answer = BOOK.with(|b| {
            b.borrow()
                .open
                .iter()
                .find(|(p, _)| p.id == id)
                .and_then(|(_, a)| *a)
        });
        if answer.is_some() {
            return answer;
        }
        if now_ms() >= until {
            return None;
        }
        sleep(100.0_f64.min(until - now_ms()).max(1.0)).await;
    }
}

/// Asks a person whether `asker` may run `tool` on `subject` at `origin` (an `ask` origin),
/// waiting at most `budget_ms` (capped at two minutes): `Ok` to go ahead, with the approval in
/// force until the returned [`Admitted`] is dropped (when the request ends).
pub async fn approve(
    tab: TabId,
    origin: &str,
    asker: Asker,
    tool: &str,
    subject: Subject,
    budget_ms: f64,
) -> Result<Admitted, OpError> {
    if let Some(session) = &asker.session
        && BOOK.with(|b| {
            b.borrow()
                .allowed
                .contains(&(session.clone(), origin.to_owned()))
        })
    {
        return Ok(admit(tab, origin));
    }
    let session = asker.session.clone();
    let question = Question::Approval {
        tool: tool.to_owned(),
        subject,
    };
    let budget = if budget_ms > 0.0 {
        budget_ms.min(APPROVAL_MAX_MS)
    } else {
        0.0
    };
    match ask(tab, origin, asker, question, budget).await {
        Some(Answer::Once) => Ok(admit(tab, origin)),
        Some(Answer::Session) => {
            if let Some(session) = session {
                BOOK.with(|b| b.borrow_mut().allowed.insert((session, origin.to_owned())));
            }
            Ok(admit(tab, origin))
        }
        Some(_) => Err(OpError::new(
            ErrorCode::ApprovalDenied,
            format!(
                "The person at the browser denied {tool} on {origin}; nothing was done. Do not \
                 retry it; ask them, or do something else."
            ),
        )),
        None => Err(OpError::new(
            ErrorCode::ApprovalTimeout,
            format!(
                "{origin} needs a person's approval for {tool}, and nobody answered within {} \
                 s; nothing was done. Retry with a longer timeoutMs (approvals wait up to 120 \
                 s) when someone is at the browser.",
                (budget / 1000.0).round()
            ),
        )),
    }
}

/// Asks the person at the browser whether `asker` may record what they do in `tab`, whose page
/// is on `origin` (`record_actions`), waiting at most `budget_ms` (capped at two minutes).
pub async fn consent_to_recording(
    tab: TabId,
    origin: &str,
    asker: Asker,
    budget_ms: f64,
) -> Result<(), OpError> {
    let budget = budget_ms.clamp(0.0, APPROVAL_MAX_MS);
    match ask(tab, origin, asker, Question::Recording, budget).await {
        Some(Answer::Once) => Ok(()),
        Some(_) => Err(OpError::new(
            ErrorCode::ApprovalDenied,
            "The person at the browser did not allow recording this tab; nothing is recorded. \
             Do not ask again unless they tell you to.",
        )),
        None => Err(OpError::new(
            ErrorCode::ApprovalTimeout,
            format!(
                "Nobody at the browser answered within {} s whether this tab may be recorded; \
                 nothing is recorded. Retry with a longer timeoutMs when someone is there.",
                (budget / 1000.0).round()
            ),
        )),
    }
}

/// Hands `tab` to a person for `reason` (`request_human`): the tab becomes the selected tab of
/// its window (the window is not focused), and the answer is awaited for at most `budget_ms`.
/// `recorded`: what they do meanwhile is recorded, which the question tells them.
pub async fn hand_over(
    tab: TabId,
    asker: Asker,
    reason: String,
    recorded: bool,
    budget_ms: f64,
) -> Result<HandedBack, OpError> {
    if person_has(tab) {
        return Err(OpError::new(
            ErrorCode::HumanInControl,
            format!("Tab {tab} is already handed to a person; wait for that request_human call."),
        ));
    }
    let url = crate::chrome_tabs::get_tab(tab)
        .await?
        .url
        .unwrap_or_default();
    let origin = tabwire_protocol::policy::origin_of(&url).unwrap_or(url);
    crate::chrome_tabs::select_in_window(tab).await?;
    let question = Question::Handoff { reason, recorded };
    let back = |choice| HandedBack {
        tab_id: tab,
        choice,
        steps: Vec::new(),
        omitted: 0,
    };
    match ask(tab, &origin, asker, question, budget_ms.max(0.0)).await {
        Some(Answer::Done) => Ok(back(HandoffChoice::Done)),
        Some(_) => Ok(back(HandoffChoice::Declined)),
        None => Err(OpError::new(
            ErrorCode::ApprovalTimeout,
            format!(
                "Nobody at the browser answered within {} s; the tab is the agent's again. Retry \
                 when someone is there.",
                (budget_ms / 1000.0).round()
            ),
        )),
    }
}

fn notification_id(id: u32) -> String {
    format!("tabwire-question-{id}")
}

/// Announces question `id` with a notification (a failure to show one is only logged: the
/// popup shows every question anyway). The origin and the browser are the title; the message
/// holds the other facts, what the agent or the page wrote capped and marked.
fn notify(id: u32, question: &Question, wording: &Wording) {
    let buttons = match question {
        Question::Approval { .. } => json!([{"title": "Allow once"}, {"title": "Deny"}]),
        Question::Handoff { .. } => json!([{"title": "Done"}, {"title": "Decline"}]),
        Question::Recording => json!([{"title": "Allow recording"}, {"title": "Deny"}]),
    };
    let options = json!({
        "type": "basic",
        "iconUrl": chrome::runtime_get_url("icon.png"),
        "title": wording.title,
        "message": crate::text::cap(&wording.message(), 600),
        "buttons": buttons,
        "requireInteraction": true,
        "priority": 2,
    });
    let Ok(options) = chrome::to_js(&options) else {
        return;
    };
    let id = notification_id(id);
    wasm_bindgen_futures::spawn_local(async move {
        if let Err(e) = chrome::call(chrome::notifications_create(&id, &options)).await {
            crate::chrome::log!("could not show a notification: {}", e.message);
        }
    });
}

fn clear_notification(id: u32) {
    let id = notification_id(id);
    wasm_bindgen_futures::spawn_local(async move {
        let _ = chrome::call(chrome::notifications_clear(&id)).await;
    });
}

/// Listens to the notifications' buttons: the first is *Allow once* / *Done*, the second
/// *Deny* / *Decline*.
pub fn install_listener() {
    let on_button = Closure::<dyn FnMut(JsValue, JsValue)>::new(|id: JsValue, index: JsValue| {
        let Some(id) = id
            .as_string()
            .and_then(|id| id.strip_prefix("tabwire-question-")?.parse::<u32>().ok())
        else {
            return;
        };
        let first = index.as_f64() == Some(0.0);
        let is_handoff = BOOK.with(|b| {
            b.borrow()
                .open
                .iter()
                .any(|(p, _)| p.id == id && matches!(p.question, Question::Handoff { .. }))
        });
        let chosen = match (is_handoff, first) {
            (false, true) => Answer::Once,
            (false, false) => Answer::Deny,
            (true, true) => Answer::Done,
            (true, false) => Answer::Decline,
        };
        answer(id, chosen);
    });
    chrome::notifications_on_button_clicked(on_button.as_ref().unchecked_ref());
    // Lives as long as the worker.
    on_button.forget();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(question: Question) -> u32 {
        let asker = Asker {
            session: Some("s1".into()),
            client: "Agent · 1".into(),
        };
        register(7, "https://a.example", asker, question)
    }

    #[test]
    fn answers_must_fit_their_question_and_come_once() {
        let approval = open(Question::Approval {
            tool: "click_element".into(),
            subject: Subject::Selector {
                selector: "@e5".into(),
            },
        });
        let handoff = open(Question::Handoff {
            reason: "log in".into(),
            recorded: false,
        });
        assert!(person_has(7));
        assert!(!answer(approval, Answer::Done));
        assert!(!answer(handoff, Answer::Once));
        assert!(answer(approval, Answer::Deny));
        assert!(!answer(approval, Answer::Once), "answered already");
        assert_eq!(pending().len(), 1);
        assert!(answer(handoff, Answer::Decline));
        assert!(!person_has(7));
        assert!(pending().is_empty());
    }
}
