//! Navigation with a load state, and waiting for conditions (SPEC §5).
//!
//! Conditions are polled: the page is asked every 100 ms (selectors, text), the tab's URL read,
//! or the tab's request counters looked at (`activity`). A page call that fails while the tab
//! is between documents counts as "not yet". Every wait ends at its own timeout with
//! `WAIT_TIMEOUT`, and never outlives its request's deadline.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use tabwire_protocol::{ActionFacts, ErrorCode, OpError, Outcome, TabId, WaitCondition, WaitUntil};

use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::get_tab;
use crate::ops::load::{self, load_url};
use crate::page::{self, MissingFrame, PageCommand};
use crate::refs::TOP_FRAME;
use crate::timer::{Either, now_ms, select, sleep};
use crate::{activity, debugger};

/// How often a page condition is checked.
const POLL_MS: f64 = 100.0;

/// How long after a click a navigation it caused must have started to be waited for.
const CLICK_NAVIGATION_START_MS: f64 = 500.0;

#[derive(Deserialize)]
struct Found {
    found: bool,
}

#[derive(Deserialize)]
struct Visible {
    visible: bool,
}

/// Loads `url`, waits for `wait_until`, then for `wait_for`.
pub async fn navigate(
    tab: TabId,
    url: &str,
    wait_until: WaitUntil,
    wait_for: Option<&str>,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    let mark = activity::load_mark(tab);
    load_url(tab, url, checkpoint).await?;
    // Chrome reports the start at once, however slow the server; a URL that differs only in
    // its fragment starts no load at all.
    load::settle(tab, mark, wait_until, checkpoint).await?;
    if let Some(css) = wait_for {
        until_selector(tab, css, checkpoint).await?;
    }
    // The title comes with the observation; the URL is news only after a redirect.
    let landed = get_tab(tab).await?;
    let landed_url = landed.url.unwrap_or_else(|| url.to_owned());
    let summary = if landed_url == url {
        "Loaded the page".to_owned()
    } else {
        format!("Loaded; redirected to {landed_url}")
    };
    Ok(Outcome::new(
        tab,
        summary,
        ActionFacts::Navigate { url: landed_url },
    ))
}

/// After a click: a navigation it started within 500 ms is waited for (to `wait_until`), then
/// `wait_for`.
pub async fn after_click(
    tab: TabId,
    mark: u64,
    wait_until: Option<WaitUntil>,
    wait_for: Option<&str>,
    checkpoint: &Checkpoint,
) -> Result<(), OpError> {
    let until = wait_until.unwrap_or_default();
    if activity::wait_load_start(tab, mark, CLICK_NAVIGATION_START_MS).await {
        load::loaded(tab, until, checkpoint).await?;
    }
    if let Some(css) = wait_for {
        until_selector(tab, css, checkpoint).await?;
    }
    Ok(())
}

/// Waits for `css` to be rendered until the deadline (clicks and navigations that wait).
async fn until_selector(tab: TabId, css: &str, checkpoint: &Checkpoint) -> Result<(), OpError> {
    let condition = WaitCondition::Selector {
        css: css.to_owned(),
        hidden: false,
    };
    let budget = checkpoint.budget_ms().max(0.0);
    poll(tab, &condition, budget, checkpoint)
        .await
        .map_err(OpError::action_may_have_occurred)
}

/// `Action::Wait`.
pub async fn wait(
    tab: TabId,
    condition: &WaitCondition,
    timeout_ms: u32,
    checkpoint: &Checkpoint,
) -> Result<Outcome, OpError> {
    let started = now_ms();
    let budget = f64::from(timeout_ms).min(checkpoint.budget_ms()).max(0.0);
    poll(tab, condition, budget, checkpoint).await?;
    let waited = (now_ms() - started).round();
    Ok(Outcome::new(
        tab,
        format!("{} after {waited:.0} ms", describe(condition, true)),
        ActionFacts::Wait { waited_ms: waited },
    ))
}

/// Checks `condition` until it holds or `budget_ms` has passed.
async fn poll(
    tab: TabId,
    condition: &WaitCondition,
    budget_ms: f64,
    checkpoint: &Checkpoint,
) -> Result<(), OpError> {
    let until = now_ms() + budget_ms;
    if let WaitCondition::Delay { ms } = condition {
        let ms = f64::from(*ms);
        if ms > budget_ms {
            return Err(OpError::new(
                ErrorCode::WaitTimeout,
                format!(
                    "Only {budget_ms:.0} ms are left before the deadline, less than the {ms:.0} \
                     ms wait; nothing was waited for."
                ),
            ));
        }
        sleep(ms).await;
        return Ok(());
    }
    if let WaitCondition::NetworkIdle { idle_ms } = condition {
        // Attached, tabwire sees the tab's requests from now on.
        debugger::ensure_attached(tab).await?;
        return match select(
            activity::wait_network_idle(tab, f64::from(*idle_ms)),
            sleep(budget_ms),
        )
        .await
        {
            Either::Left(()) => Ok(()),
            Either::Right(()) => Err(not_met(condition, budget_ms, tab)),
        };
    }
    loop {
        checkpoint.check_alive()?;
        if holds(tab, condition).await? {
            return Ok(());
        }
        if now_ms() + POLL_MS > until {
            return Err(not_met(condition, budget_ms, tab));
        }
        sleep(POLL_MS).await;
    }
}

/// Whether the condition holds now. Page calls that fail between documents count as "no".
async fn holds(tab: TabId, condition: &WaitCondition) -> Result<bool, OpError> {
    Ok(match condition {
        WaitCondition::Selector { css, hidden } => {
            let command = PageCommand::CheckSelector { css: css.clone() };
            page_check::<Visible>(tab, &command)
                .await?
                .is_some_and(|v| v.visible != *hidden)
        }
        WaitCondition::Text { text, gone } => {
            let command = PageCommand::CheckText { text: text.clone() };
            page_check::<Found>(tab, &command)
                .await?
                .is_some_and(|f| f.found != *gone)
        }
        WaitCondition::Url { pattern } => {
            let tab = get_tab(tab).await?;
            let url = tab.url.or(tab.pending_url).unwrap_or_default();
            url_matches(&url, pattern)
        }
        WaitCondition::NetworkIdle { .. } | WaitCondition::Delay { .. } => true,
    })
}

/// The page's answer to a check, or `None` when the page could not answer (between documents).
async fn page_check<T: DeserializeOwned>(
    tab: TabId,
    command: &PageCommand,
) -> Result<Option<T>, OpError> {
    match page::run::<T>(tab, TOP_FRAME, command, MissingFrame::Requested).await {
        Ok(reply) => Ok(Some(reply.value)),
        Err(error) if error.code == ErrorCode::InvalidSelector => Err(error),
        Err(_) => Ok(None),
    }
}

/// Equal, contained, or a `*` glob over the whole URL.
pub fn url_matches(url: &str, pattern: &str) -> bool {
    if !pattern.contains('*') {
        return url == pattern || url.contains(pattern);
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !url.starts_with(first) || url.len() < first.len() + last.len() || !url.ends_with(last) {
        return false;
    }
    let mut rest = &url[first.len()..url.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

fn describe(condition: &WaitCondition, met: bool) -> String {
    match (condition, met) {
        (WaitCondition::Selector { css, hidden: false }, true) => format!("`{css}` is shown"),
        (WaitCondition::Selector { css, hidden: true }, true) => format!("`{css}` is gone"),
        (WaitCondition::Selector { css, hidden: false }, false) => {
            format!("`{css}` did not appear")
        }
        (WaitCondition::Selector { css, hidden: true }, false) => {
            format!("`{css}` did not disappear")
        }
        (WaitCondition::Text { text, gone: false }, true) => format!("{text:?} appeared"),
        (WaitCondition::Text { text, gone: true }, true) => format!("{text:?} is gone"),
        (WaitCondition::Text { text, gone: false }, false) => format!("{text:?} did not appear"),
        (WaitCondition::Text { text, gone: true }, false) => format!("{text:?} did not go away"),
        (WaitCondition::Url { pattern }, true) => format!("The URL matches {pattern:?}"),
        (WaitCondition::Url { pattern }, false) => format!("The URL did not match {pattern:?}"),
        (WaitCondition::NetworkIdle { .. }, true) => "The network is idle".into(),
        (WaitCondition::NetworkIdle { .. }, false) => "The network did not go idle".into(),
        (WaitCondition::Delay { ms }, _) => format!("Waited {ms} ms"),
    }
}

fn not_met(condition: &WaitCondition, budget_ms: f64, tab: TabId) -> OpError {
    let mut message = format!("{} within {budget_ms:.0} ms.", describe(condition, false));
    match condition {
        WaitCondition::NetworkIdle { .. } => {
            let (in_flight, _) = activity::network(tab);
            message.push_str(&format!(
                " {in_flight} request(s) are still in flight (long polls and streams never end)."
            ));
        }
        _ => message.push_str(" Take a snapshot to see what the page shows."),
    }
    OpError::new(ErrorCode::WaitTimeout, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_patterns_match_equal_contained_or_glob() {
        let url = "http://127.0.0.1:8080/done?x=1";
        assert!(url_matches(url, url));
        assert!(url_matches(url, "/done"));
        assert!(url_matches(url, "http://*/done*"));
        assert!(url_matches(url, "*x=1"));
        assert!(!url_matches(url, "*/login*"));
        assert!(!url_matches(url, "https://*"));
        assert!(url_matches(url, "*"));
    }
}
