//! The tab tools: `list_tabs`, `get_active_tab`, `switch_tab`, `close_tab`, `create_tab`,
//! `navigate_to`, `go_back`, `go_forward`, `reload_tab` (SPEC §3, §6), and `release_tab`, which
//! gives up the session's lease on a tab (issue 14 §3).
//!
//! `create_tab` opens its tab behind the one the person is looking at unless asked for
//! `active: true`: no tool selects a tab or focuses a window unless its call says so.
//!
//! `switch_tab` and `close_tab` also find a tab by URL or title text. The matching happens
//! here, on a fresh `ListTabs` of the same browser connection, and must find exactly one tab:
//! none is `TAB_NOT_FOUND`, several are `AMBIGUOUS_MATCH`, each listing the tabs as candidates
//! so the agent can retry with a tabId.
//!
//! `tabId` and `browserId` carry no description in the schemas: the server instructions
//! explain them once instead of in every tool (every word of `tools/list` costs tokens).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tabwire_protocol::tabs::check_navigable_url;
use tabwire_protocol::{
    Ask, CloseTab, CreateTab, ErrorCode, GetActiveTab, HistoryDirection, HistoryStep, ListTabs,
    Navigate, ReleaseTab, ReloadTab, SwitchTab, TabId, TabInfo,
};

use super::args::{NoArgs, short_text};
use super::envelope::{Rendering, ToolError, ToolOutput, quoted};
use super::routing::ToolContext;
use crate::state::{Destinations, FileUrls};
use tabwire_protocol::policy::{Gate, Need, Owner};

/// Listing, selecting, opening and closing tabs.
const TAB_DEADLINE: Duration = Duration::from_secs(10);
/// Loads: navigation, history, reload.
const LOAD_DEADLINE: Duration = Duration::from_secs(30);
const MAX_URL_LEN: usize = 8192;
/// The longest URL or title text a tab is matched by.
const MAX_MATCH_LEN: usize = 2000;
/// At most this many tabs are listed as candidates.
const MAX_CANDIDATES: usize = 20;

/// `tab 5 [active] "Title" https://…` (the title and URL are the page's).
fn tab_line(tab: &TabInfo) -> Rendering {
    if tab.blocked {
        return Rendering::hub(format!(
            "tab {}{} (blocked by policy: URL and title hidden)",
            tab.tab_id,
            if tab.active { " [active]" } else { "" }
        ));
    }
    let mut line = Rendering::hub(format!(
        "tab {}{} ",
        tab.tab_id,
        if tab.active { " [active]" } else { "" }
    ));
    line.push_page(&format!("{} {}", quoted(&tab.title), tab.url));
    line
}

/// A tab afterwards: its data and its line after `verb`.
fn tab_output(verb: &str, tab: TabInfo) -> ToolOutput {
    let mut text = Rendering::hub(format!("{verb} "));
    text.append(tab_line(&tab));
    ToolOutput::new(json!(tab), text)
}

pub const LIST_TABS: &str = "The browser's tabs: tabId, title, URL, active.";

pub async fn list_tabs(ctx: &ToolContext, _args: NoArgs) -> Result<ToolOutput, ToolError> {
    let tabs = ctx.call(ListTabs {}, TAB_DEADLINE).await?.tabs;
    let text = if tabs.is_empty() {
        "No tabs.".into()
    } else {
        Rendering::lines(tabs.iter().map(tab_line))
    };
    Ok(ToolOutput::new(json!({ "tabs": tabs }), text))
}

/// Arguments of navigate_to.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NavigateArgs {
    pub url: String,
}

pub const NAVIGATE_TO: &str = "Load a URL and wait for it; the tab's earlier refs become stale.";

pub async fn navigate_to(ctx: &ToolContext, args: NavigateArgs) -> Result<ToolOutput, ToolError> {
    check_url(&args.url, &ctx.destinations())?;
    let navigated = ctx.call(Navigate { url: args.url }, LOAD_DEADLINE).await?;
    let mut text = Rendering::hub(format!("tab {} ", navigated.tab_id));
    match &navigated.download {
        None => text.push("loaded "),
        Some(download) => {
            text.push(&format!("started download {} ", download.id));
            text.push_page(&quoted(&download.name));
            text.push(" (get_downloads has it) and stays on ");
        }
    }
    text.push_page(&format!("{} {}", quoted(&navigated.title), navigated.url));
    Ok(ToolOutput::new(json!(navigated), text))
}

pub const GET_ACTIVE_TAB: &str = "The active tab of the last-focused window.";

pub async fn get_active_tab(ctx: &ToolContext, _args: NoArgs) -> Result<ToolOutput, ToolError> {
    let tab = ctx.call(GetActiveTab {}, TAB_DEADLINE).await?;
    Ok(tab_output("Active:", tab))
}

/// Arguments of switch_tab and close_tab: one of tabId, url, title. (A tabId here is the tab
/// named, not a route: these tools take only browserId as their route.)
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PickTabArgs {
    pub tab_id: Option<TabId>,
    pub url: Option<String>,
    pub title: Option<String>,
}

/// How the caller named the tab.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pick {
    Id(TabId),
    Url(String),
    Title(String),
}

impl Pick {
    /// Exactly one of the three, with non-empty text of a sane length.
    fn from_args(args: &PickTabArgs) -> Result<Pick, ToolError> {
        let given: Vec<&str> = [
            args.tab_id.map(|_| "tabId"),
            args.url.as_ref().map(|_| "url"),
            args.title.as_ref().map(|_| "title"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if given.len() != 1 {
            return Err(ToolError::invalid(if given.is_empty() {
                "give the tab: tabId, or url or title text that matches one tab".to_owned()
            } else {
                format!(
                    "give only one of tabId, url and title; got {}",
                    given.join(" and ")
                )
            }));
        }
        let url = short_text(args.url.clone(), "url", MAX_MATCH_LEN)?;
        let title = short_text(args.title.clone(), "title", MAX_MATCH_LEN)?;
        Ok(match (args.tab_id, url, title) {
            (Some(id), _, _) => Pick::Id(id),
            (_, Some(url), _) => Pick::Url(url),
            (_, _, Some(title)) => Pick::Title(title),
            (None, None, None) => unreachable!("one was given"),
        })
    }

    /// What was searched, for messages: `URL containing "x"`.
    fn describe(&self) -> String {
        match self {
            Pick::Id(id) => format!("ID {id}"),
            Pick::Url(url) => format!("a URL containing {}", quoted(url)),
            Pick::Title(title) => format!("a title containing {} (any case)", quoted(title)),
        }
    }

    fn matches(&self, tab: &TabInfo) -> bool {
        match self {
            Pick::Id(id) => tab.tab_id == *id,
            Pick::Url(url) => tab.url.contains(url.as_str()),
            Pick::Title(title) => tab.title.to_lowercase().contains(&title.to_lowercase()),
        }
    }
}

/// The one tab `pick` matches among `tabs`. None is `TAB_NOT_FOUND` and several are
/// `AMBIGUOUS_MATCH`; both list tabs (all of them, or the matches) as candidates.
fn match_tab<'a>(tabs: &'a [TabInfo], pick: &Pick) -> Result<&'a TabInfo, ToolError> {
    let matches: Vec<&TabInfo> = tabs.iter().filter(|tab| pick.matches(tab)).collect();
    let (mut error, listed) = match matches.as_slice() {
        [only] => return Ok(only),
        [] => (
            ToolError::new(
                ErrorCode::TabNotFound,
                format!(
                    "no tab has {} among the browser's {} tabs",
                    pick.describe(),
                    tabs.len()
                ),
            ),
            tabs.iter().collect::<Vec<_>>(),
        ),
        several => (
            ToolError::new(
                ErrorCode::AmbiguousMatch,
                format!(
                    "{} tabs have {}; call again with one tabId",
                    several.len(),
                    pick.describe()
                ),
            ),
            matches.clone(),
        ),
    };
    if listed.is_empty() {
        return Err(error);
    }
    if listed.len() > MAX_CANDIDATES {
        error
            .message
            .push_str(&format!(" (the first {MAX_CANDIDATES} are listed)"));
    }
    error.candidates = Some(Value::Array(
        listed
            .iter()
            .take(MAX_CANDIDATES)
            .map(|tab| json!({"tabId": tab.tab_id, "title": tab.title, "url": tab.url}))
            .collect(),
    ));
    error.candidates_quote_page = true;
    Err(error)
}

/// Finds the tab `args` names (a tabId is taken as given) and sends `request` for it, on one
/// browser connection so that both requests reach the same browser. Returns the answer and
/// the matched tab, if one was matched.
async fn on_picked_tab<A: Ask>(
    ctx: &ToolContext,
    args: PickTabArgs,
    request: A,
) -> Result<(A::Answer, Option<TabInfo>), ToolError> {
    let pick = Pick::from_args(&args)?;
    let connection = ctx.connection()?;
    let (tab_id, matched) = match pick {
        Pick::Id(id) => (id, None),
        _ => {
            let tabs = ctx
                .call_on(&connection, None, ListTabs {}, TAB_DEADLINE)
                .await?
                .tabs;
            let tab = match_tab(&tabs, &pick)?.clone();
            (tab.tab_id, Some(tab))
        }
    };
    let answer = ctx
        .call_on(&connection, Some(tab_id), request, TAB_DEADLINE)
        .await?;
    Ok((answer, matched))
}

pub const SWITCH_TAB: &str = "Focus a tab and its window: by tabId, or url/title text (any case) \
matching one tab.";

pub async fn switch_tab(ctx: &ToolContext, args: PickTabArgs) -> Result<ToolOutput, ToolError> {
    let (tab, _) = on_picked_tab(ctx, args, SwitchTab {}).await?;
    Ok(tab_output("Switched to", tab))
}

pub const CLOSE_TAB: &str = "Close a tab: by tabId, or url/title text (any case) matching one tab.";

pub async fn close_tab(ctx: &ToolContext, args: PickTabArgs) -> Result<ToolOutput, ToolError> {
    let (closed, matched) = on_picked_tab(ctx, args, CloseTab {}).await?;
    let tab_id = closed.tab_id;
    let text = match matched {
        Some(tab) => {
            let mut text = Rendering::hub("Closed ");
            text.append(tab_line(&tab));
            text
        }
        None => format!("Closed tab {tab_id}.").into(),
    };
    Ok(ToolOutput::new(json!({"tabId": tab_id}), text))
}

/// Arguments of create_tab.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateTabArgs {
    pub url: Option<String>,
    #[schemars(extend("default" = false))]
    pub active: Option<bool>,
    /// Unfocused.
    pub new_window: Option<bool>,
}

pub const CREATE_TAB: &str = "Open a new tab, blank without url.";

pub async fn create_tab(ctx: &ToolContext, args: CreateTabArgs) -> Result<ToolOutput, ToolError> {
    if let Some(url) = &args.url {
        check_url(url, &ctx.destinations())?;
    }
    let request = CreateTab {
        url: args.url,
        active: args.active.unwrap_or(false),
        new_window: args.new_window.unwrap_or(false),
    };
    let tab = ctx.call(request, TAB_DEADLINE).await?;
    Ok(tab_output("Opened", tab))
}

pub const RELEASE_TAB: &str = "Give up your lease on a tab, so other agents may change it.";

pub async fn release_tab(ctx: &ToolContext, _args: NoArgs) -> Result<ToolOutput, ToolError> {
    let released = ctx.call(ReleaseTab {}, TAB_DEADLINE).await?;
    let tab_id = released.tab_id;
    let text = if released.was_leased {
        format!("Released tab {tab_id}: other agents may change it now.")
    } else {
        format!("Tab {tab_id} was not leased; nothing changed.")
    };
    Ok(ToolOutput::new(
        json!({"tabId": tab_id, "released": released.was_leased}),
        text,
    ))
}

pub const GO_BACK: &str = "Back in history; waits for the load.";
pub const GO_FORWARD: &str = "Forward in history; waits for the load.";

pub async fn go_back(ctx: &ToolContext, _args: NoArgs) -> Result<ToolOutput, ToolError> {
    history(ctx, HistoryDirection::Back).await
}

pub async fn go_forward(ctx: &ToolContext, _args: NoArgs) -> Result<ToolOutput, ToolError> {
    history(ctx, HistoryDirection::Forward).await
}

async fn history(ctx: &ToolContext, direction: HistoryDirection) -> Result<ToolOutput, ToolError> {
    let tab = ctx.call(HistoryStep { direction }, LOAD_DEADLINE).await?;
    let verb = match direction {
        HistoryDirection::Back => "Went back:",
        HistoryDirection::Forward => "Went forward:",
    };
    Ok(tab_output(verb, tab))
}

/// Arguments of reload_tab.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReloadArgs {
    pub bypass_cache: Option<bool>,
}

pub const RELOAD_TAB: &str = "Reload a tab and wait for the load.";

pub async fn reload_tab(ctx: &ToolContext, args: ReloadArgs) -> Result<ToolOutput, ToolError> {
    let request = ReloadTab {
        bypass_cache: args.bypass_cache.unwrap_or(false),
    };
    let tab = ctx.call(request, LOAD_DEADLINE).await?;
    Ok(tab_output("Reloaded", tab))
}

/// Accepts the URLs an agent has reason to open; `javascript:`, `data:` and browser-internal
/// schemes are refused here, before anything reaches the browser, `file://` too where the
/// hub's [`FileUrls`] says so, and origins the operator's policy denies. The scheme rule is the
/// protocol's [`check_navigable_url`], which the extension applies again before it navigates
/// (with both owners' policies, after redirects too).
pub(super) fn check_url(url: &str, destinations: &Destinations) -> Result<(), ToolError> {
    if url.len() > MAX_URL_LEN {
        return Err(ToolError::invalid(format!(
            "url is longer than {MAX_URL_LEN} characters"
        )));
    }
    check_navigable_url(url).map_err(|refused| ToolError::invalid(refused.to_string()))?;
    // FORBIDDEN, not INVALID_ARGUMENT: the URL is well formed and another hub would open it;
    // this one's operator does not allow it, and no rewording of the argument will help.
    if destinations.file_urls == FileUrls::Refused
        && url.to_ascii_lowercase().starts_with("file://")
    {
        return Err(ToolError::new(
            ErrorCode::Forbidden,
            file_url_refusal(destinations.hosted),
        ));
    }
    let verdict = destinations.policy.verdict(url, Owner::Operator);
    if let Gate::Blocked(why) = verdict.gate(Need::Load, url) {
        return Err(ToolError::new(ErrorCode::OriginBlocked, why));
    }
    Ok(())
}

/// Why a `file://` URL is refused, in the words of the hub's mode: a hosted hub's browsers are
/// other people's computers, and only its operator may open them; a local hub's browser is the
/// user's own, whose files any agent (or a page steering one) could then read.
fn file_url_refusal(hosted: bool) -> &'static str {
    if hosted {
        "this hub is hosted and refuses file:// URLs: they would read files on the computer of \
         the person whose browser this is. Use an http(s) URL; only the hub's operator can allow \
         file URLs (--allow-file-urls)"
    } else {
        "this hub refuses file:// URLs: they would let an agent, or a page that steers it, read \
         any file of the user's on this computer. Use an http(s) URL; the user can allow file \
         URLs by restarting tabwire-hub with --allow-file-urls"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tab(tab_id: TabId, title: &str, url: &str) -> TabInfo {
        TabInfo {
            tab_id,
            window_id: 1,
            active: false,
            url: url.into(),
            title: title.into(),
            status: "complete".into(),
            blocked: false,
        }
    }

    fn tabs() -> Vec<TabInfo> {
        vec![
            tab(1, "Inbox (3) - Mail", "https://mail.example.com/inbox"),
            tab(2, "Docs", "https://docs.example.com/d/1"),
            tab(3, "Pricing", "https://docs.example.com/pricing"),
        ]
    }

    #[test]
    fn a_tab_is_matched_by_url_or_title_text() {
        let tabs = tabs();
        let url = Pick::Url("/d/1".into());
        assert_eq!(match_tab(&tabs, &url).unwrap().tab_id, 2);
        // Titles match in any case; URLs as given.
        let title = Pick::Title("INBOX".into());
        assert_eq!(match_tab(&tabs, &title).unwrap().tab_id, 1);
        let upper = Pick::Url("DOCS".into());
        assert_eq!(
            match_tab(&tabs, &upper).unwrap_err().code,
            ErrorCode::TabNotFound
        );
    }

    #[test]
    fn no_match_lists_the_tabs_searched() {
        let error = match_tab(&tabs(), &Pick::Title("Calendar".into())).unwrap_err();
        assert_eq!(error.code, ErrorCode::TabNotFound);
        assert_eq!(
            error.message,
            "no tab has a title containing \"Calendar\" (any case) among the browser's 3 tabs"
        );
        assert_eq!(error.candidates.unwrap().as_array().unwrap().len(), 3);
        let error = match_tab(&[], &Pick::Url("x".into())).unwrap_err();
        assert_eq!(error.code, ErrorCode::TabNotFound);
        assert!(error.candidates.is_none());
    }

    #[test]
    fn several_matches_are_ambiguous_and_listed() {
        let error = match_tab(&tabs(), &Pick::Url("docs.example".into())).unwrap_err();
        assert_eq!(error.code, ErrorCode::AmbiguousMatch);
        assert_eq!(
            error.message,
            "2 tabs have a URL containing \"docs.example\"; call again with one tabId"
        );
        assert_eq!(
            error.candidates,
            Some(json!([
                {"tabId": 2, "title": "Docs", "url": "https://docs.example.com/d/1"},
                {"tabId": 3, "title": "Pricing", "url": "https://docs.example.com/pricing"}
            ]))
        );
        let many: Vec<_> = (0..25).map(|i| tab(i, "New tab", "about:blank")).collect();
        let error = match_tab(&many, &Pick::Title("new".into())).unwrap_err();
        assert!(error.message.ends_with("(the first 20 are listed)"));
        assert_eq!(error.candidates.unwrap().as_array().unwrap().len(), 20);
    }

    #[test]
    fn exactly_one_way_to_name_the_tab() {
        let args = |tab_id: Option<TabId>, url: Option<&str>, title: Option<&str>| PickTabArgs {
            tab_id,
            url: url.map(Into::into),
            title: title.map(Into::into),
        };
        assert_eq!(
            Pick::from_args(&args(Some(4), None, None)).unwrap(),
            Pick::Id(4)
        );
        assert_eq!(
            Pick::from_args(&args(None, None, Some("Mail"))).unwrap(),
            Pick::Title("Mail".into())
        );
        let none = Pick::from_args(&args(None, None, None)).unwrap_err();
        assert!(none.message.starts_with("give the tab"), "{}", none.message);
        let two = Pick::from_args(&args(Some(1), Some("x"), None)).unwrap_err();
        assert_eq!(
            two.message,
            "give only one of tabId, url and title; got tabId and url"
        );
        assert!(Pick::from_args(&args(None, Some(" "), None)).is_err());
        let long = "x".repeat(MAX_MATCH_LEN + 1);
        assert!(Pick::from_args(&args(None, None, Some(&long))).is_err());
    }

    #[test]
    fn urls_an_agent_may_open() {
        for ok in [
            "http://127.0.0.1:8080/login.html",
            "https://example.com/a?b#c",
            "HTTPS://EXAMPLE.COM",
            "file:///tmp/x.html",
            "about:blank",
        ] {
            assert!(check_url(ok, &FileUrls::Allowed.into()).is_ok(), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "data:text/html,hi",
            "chrome://settings",
            "example.com",
            "http://",
            "",
            "http://a/\nb",
        ] {
            assert!(check_url(bad, &FileUrls::Allowed.into()).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_operators_policy_refuses_denied_destinations_by_rule() {
        let policy = tabwire_protocol::policy::Policy::from_lines(
            "https://*.bank.example deny\nhttps://mail.example read",
        )
        .unwrap();
        let destinations = Destinations {
            file_urls: FileUrls::Allowed,
            policy: std::sync::Arc::new(policy),
            hosted: true,
        };
        let refused = check_url("https://www.bank.example/login", &destinations).unwrap_err();
        assert_eq!(refused.code, ErrorCode::OriginBlocked);
        assert!(
            refused.message.contains("`https://*.bank.example`"),
            "{}",
            refused.message
        );
        assert!(refused.message.contains("operator"), "{}", refused.message);
        // Loading a read-only origin is allowed; acting there is the extension's to refuse.
        assert!(check_url("https://mail.example/", &destinations).is_ok());
        assert!(check_url("https://example.org/", &destinations).is_ok());
    }

    #[test]
    fn file_urls_follow_the_hubs_rule_in_any_spelling() {
        for url in [
            "file:///etc/passwd",
            "FILE:///etc/passwd",
            "File://host/share/x",
        ] {
            assert!(check_url(url, &FileUrls::Allowed.into()).is_ok(), "{url}");
            let refused = check_url(url, &FileUrls::Refused.into()).unwrap_err();
            assert_eq!(refused.code, ErrorCode::Forbidden, "{url}");
        }
        // The rule is about file URLs alone.
        assert!(check_url("https://example.com/file://x", &FileUrls::Refused.into()).is_ok());
        assert!(check_url("about:blank", &FileUrls::Refused.into()).is_ok());
        // A malformed URL is still a bad argument, whatever the rule.
        let bad = check_url("file://", &FileUrls::Refused.into()).unwrap_err();
        assert_eq!(bad.code, ErrorCode::InvalidArgument);
    }

    /// A local hub is not hosted, and its user (not some operator) is who can open file URLs.
    #[test]
    fn a_file_url_refusal_speaks_of_the_hubs_own_mode() {
        let local = check_url("file:///etc/passwd", &FileUrls::Refused.into()).unwrap_err();
        assert!(!local.message.contains("hosted"), "{}", local.message);
        assert!(!local.message.contains("operator"), "{}", local.message);
        assert!(
            local
                .message
                .contains("restarting tabwire-hub with --allow-file-urls"),
            "{}",
            local.message
        );
        let hosted = Destinations {
            hosted: true,
            ..Destinations::from(FileUrls::Refused)
        };
        let refused = check_url("file:///etc/passwd", &hosted).unwrap_err();
        assert_eq!(refused.code, ErrorCode::Forbidden);
        assert!(
            refused.message.contains("this hub is hosted")
                && refused.message.contains("only the hub's operator")
                && refused.message.contains("--allow-file-urls"),
            "{}",
            refused.message
        );
    }
}
