//! Navigation with a load state, and waiting for conditions (SPEC §5, `wait_for`).
//!
//! Conditions are polled: the page is asked every 100 ms (selectors, text), the tab's URL read,
//! or the tab's request counters looked at (`activity`). A page call that fails while the tab
//! is between documents counts as "not yet". Every wait ends at its own timeout with
//! `WAIT_TIMEOUT`, and never outlives its request's deadline. A selector or text that appeared
//! is answered with its line and ref ([`crate::ops::observe::found`]), a URL with the URL.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use tabwire_observation::PageNode;
use tabwire_protocol::{
    ActionFacts, ElementRef, ErrorCode, Node, OpError, Outcome, TabId, WaitCondition, WaitUntil,
};

use crate::checkpoint::Checkpoint;
use crate::chrome_tabs::get_tab;
use crate::ops::load::{self, load_url};
use crate::ops::observe::found::{self, Described};
use crate::page::{self, InPage, MissingFrame, PageCommand};
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
    /// With `describe`: the first rendered match, its document's token and URL.
    node: Option<PageNode>,
    doc: Option<String>,
    url: Option<String>,
}

/// What a condition that came true found, besides its being true.
#[derive(Default)]
struct Met {
    /// A selector's first rendered match.
    element: Option<Described>,
    /// The tab's URL, for a URL condition.
    url: Option<String>,
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
        .map(drop)
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
    let met = poll(tab, condition, budget, checkpoint).await?;
    let waited = (now_ms() - started).round();
    // What appeared, as a line with its ref: the agent can act on it at once.
    let element: Option<Node<ElementRef>> = match condition {
        WaitCondition::Selector { hidden: false, .. } => match &met.element {
            Some(element) => Some(found::line_of(tab, element).await),
            None => None,
        },
        // The page said the text shows; which line holds it takes one more look.
        WaitCondition::Text { text, gone: false } => {
            found::line_holding(tab, text).await.ok().flatten()
        }
        _ => None,
    };
    let mut summary = format!("{} after {waited:.0} ms", describe(condition, true));
    match (&element, &met.url) {
        (Some(line), _) => {
            if let Some(element_ref) = line.node_ref {
                summary.push_str(&format!(": {element_ref} {}", line.text));
            }
        }
        (None, Some(url)) => summary.push_str(&format!(": {url}")),
        (None, None) if matches!(condition, WaitCondition::Text { gone: false, .. }) => {
            summary.push_str(" (across lines: no one line holds it all)");
        }
        (None, None) => {}
    }
    Ok(Outcome::new(
        tab,
        summary,
        ActionFacts::Wait {
            waited_ms: waited,
            element,
            url: met.url,
        },
    ))
}

/// Checks `condition` until it holds or `budget_ms` has passed.
async fn poll(
    tab: TabId,
    condition: &WaitCondition,
    budget_ms: f64,
    checkpoint: &Checkpoint,
) -> Result<Met, OpError> {
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
        return Ok(Met::default());
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
            Either::Left(()) => Ok(Met::default()),
            Either::Right(()) => Err(not_met(condition, budget_ms, tab)),
        };
    }
    loop {
        checkpoint.check_alive()?;
        if let Some(met) = holds(tab, condition).await? {
            return Ok(met);
        }
        if now_ms() + POLL_MS > until {
            return Err(not_met(condition, budget_ms, tab));
        }
        sleep(POLL_MS).await;
    }
}

/// What the condition found when it holds now; `None` while it does not. Page calls that fail
/// between documents count as "not yet".
async fn holds(tab: TabId, condition: &WaitCondition) -> Result<Option<Met>, OpError> {
    Ok(match condition {
        WaitCondition::Selector { css, hidden } => {
            let command = PageCommand::CheckSelector {
                css: css.clone(),
                describe: !*hidden,
            };
            let Some(reply) = page_check::<Visible>(tab, &command).await? else {
                return Ok(None);
            };
            let (visible, document_id) = (reply.value, reply.document_id);
            (visible.visible != *hidden).then(|| Met {
                element: match (visible.node, visible.doc) {
                    (Some(node), Some(doc)) => Some(Described {
                        node,
                        doc,
                        document_id,
                        url: visible.url.unwrap_or_default(),
                    }),
                    _ => None,
                },
                url: None,
            })
        }
        WaitCondition::Text { text, gone } => {
            let command = PageCommand::CheckText { text: text.clone() };
            page_check::<Found>(tab, &command)
                .await?
                .is_some_and(|f| f.value.found != *gone)
                .then(Met::default)
        }
        WaitCondition::Url { pattern, gone } => {
            let tab = get_tab(tab).await?;
            let url = tab.url.or(tab.pending_url).unwrap_or_default();
            let holds = url_matches(&url, pattern) != *gone;
            holds.then_some(Met {
                element: None,
                url: Some(url),
            })
        }
        WaitCondition::NetworkIdle { .. } | WaitCondition::Delay { .. } => Some(Met::default()),
    })
}

/// The page's answer to a check (and the document that gave it), or `None` when the page could
/// not answer (between documents).
async fn page_check<T: DeserializeOwned>(
    tab: TabId,
    command: &PageCommand,
) -> Result<Option<InPage<T>>, OpError> {
    match page::run::<T>(tab, TOP_FRAME, command, MissingFrame::Requested).await {
        Ok(reply) => Ok(Some(reply)),
        Err(error) if error.code == ErrorCode::InvalidSelector => Err(error),
        Err(_) => Ok(None),
    }
}

/// Whether `url` matches `pattern` (docs/actions.md, "Waiting for something"): with a `*`, a
/// glob over the whole URL (`*` is any run of characters, `/` included); a pattern with a
/// scheme (`https://…`) is the URL's beginning; one starting with `/` is found in the URL's
/// path; any other is found anywhere in the URL. So neither `/dashboard` nor
/// `https://app.test/dashboard` is satisfied by a login page's `?next=` naming it.
pub fn url_matches(url: &str, pattern: &str) -> bool {
    if !pattern.contains('*') {
        return if pattern.contains("://") {
            url.starts_with(pattern)
        } else if pattern.starts_with('/') {
            path_of(url).contains(pattern)
        } else {
            url.contains(pattern)
        };
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

/// The path of `url`: from the first `/` after the authority to the query or fragment.
fn path_of(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |at| at + 3);
    let rest = &url[after_scheme..];
    let start = if after_scheme == 0 {
        0
    } else {
        rest.find(['/', '?', '#']).unwrap_or(rest.len())
    };
    let rest = &rest[start..];
    &rest[..rest.find(['?', '#']).unwrap_or(rest.len())]
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
        (
            WaitCondition::Url {
                pattern,
                gone: false,
            },
            true,
        ) => {
            format!("The URL matches {pattern:?}")
        }
        (
            WaitCondition::Url {
                pattern,
                gone: true,
            },
            true,
        ) => {
            format!("The URL no longer matches {pattern:?}")
        }
        (
            WaitCondition::Url {
                pattern,
                gone: false,
            },
            false,
        ) => {
            format!("The URL did not match {pattern:?}")
        }
        (
            WaitCondition::Url {
                pattern,
                gone: true,
            },
            false,
        ) => {
            format!("The URL still matches {pattern:?}")
        }
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

    #[test]
    fn a_path_or_a_url_is_not_found_in_another_urls_query() {
        let login = "https://app.test/login?next=/dashboard&to=https://app.test/dashboard#top";
        assert!(
            !url_matches(login, "/dashboard"),
            "a redirect target is no arrival"
        );
        assert!(!url_matches(login, "https://app.test/dashboard"));
        assert!(url_matches(login, "/login"));
        assert!(
            url_matches(login, "https://app.test/login"),
            "a URL's beginning"
        );
        assert!(
            url_matches(login, login),
            "the whole URL is its own beginning"
        );
        assert!(
            url_matches(login, "next=/dashboard"),
            "other text: anywhere"
        );
        assert!(url_matches(login, "#top"));
        assert!(url_matches(
            "https://app.test/app/dashboard?x=1",
            "/dashboard"
        ));
        assert!(
            url_matches(login, "*dashboard*"),
            "a glob reads the whole URL"
        );
        assert_eq!(path_of("https://a.test/p/q?x=/y#z"), "/p/q");
        assert_eq!(path_of("https://a.test?x=/y"), "");
        assert_eq!(path_of("about:blank"), "about:blank");
    }
}
