//! The tab tools: `list_tabs`, `get_active_tab`, `switch_tab`, `close_tab`, `create_tab`,
//! `navigate_to`, `go_back`, `go_forward`, `reload_tab` (SPEC §3, §6).
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
use tabwire_protocol::{
    ErrorCode, HistoryDirection, OpResult, Operation, TabId, TabInfo, TabOp, TabResult,
};

use super::args::short_text;
use super::envelope::{ToolError, ToolOutput, quoted};
use super::routing::{ToolContext, unexpected};

/// Listing, selecting, opening and closing tabs.
const TAB_DEADLINE: Duration = Duration::from_secs(10);
/// Loads: navigation, history, reload.
const LOAD_DEADLINE: Duration = Duration::from_secs(30);
const MAX_URL_LEN: usize = 8192;
/// The longest URL or title text a tab is matched by.
const MAX_MATCH_LEN: usize = 2000;
/// At most this many tabs are listed as candidates.
const MAX_CANDIDATES: usize = 20;

/// Sends one [`TabOp`] and returns its result.
pub(super) async fn tab_op(
    ctx: &ToolContext,
    tool: &str,
    browser_id: Option<&str>,
    tab_id: Option<TabId>,
    op: TabOp,
    deadline: Duration,
) -> Result<TabResult, ToolError> {
    match ctx
        .call(tool, browser_id, tab_id, Operation::Tab { op }, deadline)
        .await?
    {
        OpResult::Tab { result } => Ok(result),
        _ => Err(unexpected(tool)),
    }
}

/// `tab 5 [active] "Title" https://…`
fn tab_line(tab: &TabInfo) -> String {
    format!(
        "tab {}{} {} {}",
        tab.tab_id,
        if tab.active { " [active]" } else { "" },
        quoted(&tab.title),
        tab.url
    )
}

/// A tab operation's answer that must be a tab: its data and its line after `verb`.
fn tab_output(tool: &str, verb: &str, result: TabResult) -> Result<ToolOutput, ToolError> {
    let TabResult::Tab { tab } = result else {
        return Err(unexpected(tool));
    };
    let text = format!("{verb} {}", tab_line(&tab));
    Ok(ToolOutput::new(json!(tab), text))
}

/// The arguments of tools that take only a tab.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TabArgs {
    pub tab_id: Option<TabId>,
    pub browser_id: Option<String>,
}

/// Arguments of list_tabs.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListTabsArgs {
    pub browser_id: Option<String>,
}

pub const LIST_TABS: &str = "List the browser's tabs: tabId, title, URL, active. Tab IDs are per \
browser.";

pub async fn list_tabs(ctx: &ToolContext, args: ListTabsArgs) -> Result<ToolOutput, ToolError> {
    let result = ctx
        .call(
            "list_tabs",
            args.browser_id.as_deref(),
            None,
            Operation::ListTabs,
            TAB_DEADLINE,
        )
        .await?;
    let OpResult::Tabs { tabs } = result else {
        return Err(unexpected("list_tabs"));
    };
    let text = tabs.iter().map(tab_line).collect::<Vec<_>>().join("\n");
    Ok(ToolOutput::new(
        json!({ "tabs": tabs }),
        if tabs.is_empty() {
            "No tabs.".into()
        } else {
            text
        },
    ))
}

/// Arguments of navigate_to.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NavigateArgs {
    /// Absolute http(s) or file URL, or about:blank.
    pub url: String,
    pub tab_id: Option<TabId>,
    pub browser_id: Option<String>,
}

pub const NAVIGATE_TO: &str = "Load a URL in a tab and wait for the load. Earlier refs of that \
tab become stale.";

pub async fn navigate_to(ctx: &ToolContext, args: NavigateArgs) -> Result<ToolOutput, ToolError> {
    check_url(&args.url)?;
    let result = ctx
        .call(
            "navigate_to",
            args.browser_id.as_deref(),
            args.tab_id,
            Operation::Navigate { url: args.url },
            LOAD_DEADLINE,
        )
        .await?;
    let OpResult::Navigated(navigated) = result else {
        return Err(unexpected("navigate_to"));
    };
    Ok(ToolOutput::new(
        json!(navigated),
        format!(
            "tab {} loaded {} {}",
            navigated.tab_id,
            quoted(&navigated.title),
            navigated.url
        ),
    ))
}

/// Arguments of get_active_tab.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActiveTabArgs {
    pub browser_id: Option<String>,
}

pub const GET_ACTIVE_TAB: &str = "The active tab of the last-focused window.";

pub async fn get_active_tab(
    ctx: &ToolContext,
    args: ActiveTabArgs,
) -> Result<ToolOutput, ToolError> {
    let tool = "get_active_tab";
    let result = tab_op(
        ctx,
        tool,
        args.browser_id.as_deref(),
        None,
        TabOp::GetActive,
        TAB_DEADLINE,
    )
    .await?;
    tab_output(tool, "Active:", result)
}

/// Arguments of switch_tab and close_tab: one of tabId, url, title.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PickTabArgs {
    pub tab_id: Option<TabId>,
    pub url: Option<String>,
    /// Any case.
    pub title: Option<String>,
    pub browser_id: Option<String>,
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
    Err(error)
}

/// Finds the tab `args` names (a tabId is taken as given) and runs `op` on it, on one
/// browser connection so that both requests reach the same browser. Returns the result and
/// the matched tab, if one was matched.
async fn on_picked_tab(
    ctx: &ToolContext,
    tool: &str,
    args: PickTabArgs,
    op: TabOp,
) -> Result<(TabResult, Option<TabInfo>), ToolError> {
    let pick = Pick::from_args(&args)?;
    let connection = ctx.browser(args.browser_id.as_deref())?;
    let (tab_id, matched) = match pick {
        Pick::Id(id) => (id, None),
        _ => {
            let OpResult::Tabs { tabs } = connection
                .request(tool, None, Operation::ListTabs, TAB_DEADLINE)
                .await?
            else {
                return Err(unexpected(tool));
            };
            let tab = match_tab(&tabs, &pick)?.clone();
            (tab.tab_id, Some(tab))
        }
    };
    match connection
        .request(tool, Some(tab_id), Operation::Tab { op }, TAB_DEADLINE)
        .await?
    {
        OpResult::Tab { result } => Ok((result, matched)),
        _ => Err(unexpected(tool)),
    }
}

pub const SWITCH_TAB: &str = "Select a tab and focus its window: by tabId, or url or title text \
matching exactly one tab.";

pub async fn switch_tab(ctx: &ToolContext, args: PickTabArgs) -> Result<ToolOutput, ToolError> {
    let (result, _) = on_picked_tab(ctx, "switch_tab", args, TabOp::Switch).await?;
    tab_output("switch_tab", "Switched to", result)
}

pub const CLOSE_TAB: &str = "Close a tab: by tabId, or url or title text matching exactly one \
tab.";

pub async fn close_tab(ctx: &ToolContext, args: PickTabArgs) -> Result<ToolOutput, ToolError> {
    let (result, matched) = on_picked_tab(ctx, "close_tab", args, TabOp::Close).await?;
    let TabResult::Closed { tab_id } = result else {
        return Err(unexpected("close_tab"));
    };
    let text = match matched {
        Some(tab) => format!("Closed {}", tab_line(&tab)),
        None => format!("Closed tab {tab_id}."),
    };
    Ok(ToolOutput::new(json!({"tabId": tab_id}), text))
}

/// Arguments of create_tab.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateTabArgs {
    pub url: Option<String>,
    /// Default true.
    pub active: Option<bool>,
    /// In a new window that does not take the focus.
    pub new_window: Option<bool>,
    pub browser_id: Option<String>,
}

pub const CREATE_TAB: &str = "Open a new tab, blank without url.";

pub async fn create_tab(ctx: &ToolContext, args: CreateTabArgs) -> Result<ToolOutput, ToolError> {
    if let Some(url) = &args.url {
        check_url(url)?;
    }
    let op = TabOp::Create {
        url: args.url,
        active: args.active.unwrap_or(true),
        new_window: args.new_window.unwrap_or(false),
    };
    let tool = "create_tab";
    let result = tab_op(
        ctx,
        tool,
        args.browser_id.as_deref(),
        None,
        op,
        TAB_DEADLINE,
    )
    .await?;
    tab_output(tool, "Opened", result)
}

pub const GO_BACK: &str = "Go back in a tab's history and wait for the load.";
pub const GO_FORWARD: &str = "Go forward in a tab's history and wait for the load.";

pub async fn go_back(ctx: &ToolContext, args: TabArgs) -> Result<ToolOutput, ToolError> {
    history(ctx, "go_back", args, HistoryDirection::Back).await
}

pub async fn go_forward(ctx: &ToolContext, args: TabArgs) -> Result<ToolOutput, ToolError> {
    history(ctx, "go_forward", args, HistoryDirection::Forward).await
}

async fn history(
    ctx: &ToolContext,
    tool: &str,
    args: TabArgs,
    direction: HistoryDirection,
) -> Result<ToolOutput, ToolError> {
    let result = tab_op(
        ctx,
        tool,
        args.browser_id.as_deref(),
        args.tab_id,
        TabOp::History { direction },
        LOAD_DEADLINE,
    )
    .await?;
    let verb = match direction {
        HistoryDirection::Back => "Went back:",
        HistoryDirection::Forward => "Went forward:",
    };
    tab_output(tool, verb, result)
}

/// Arguments of reload_tab.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReloadArgs {
    pub bypass_cache: Option<bool>,
    pub tab_id: Option<TabId>,
    pub browser_id: Option<String>,
}

pub const RELOAD_TAB: &str = "Reload a tab and wait for the load.";

pub async fn reload_tab(ctx: &ToolContext, args: ReloadArgs) -> Result<ToolOutput, ToolError> {
    let op = TabOp::Reload {
        bypass_cache: args.bypass_cache.unwrap_or(false),
    };
    let tool = "reload_tab";
    let result = tab_op(
        ctx,
        tool,
        args.browser_id.as_deref(),
        args.tab_id,
        op,
        LOAD_DEADLINE,
    )
    .await?;
    tab_output(tool, "Reloaded", result)
}

/// Accepts the URLs an agent has reason to open; `javascript:`, `data:` and browser-internal
/// schemes are refused here, before anything reaches the browser.
pub(super) fn check_url(url: &str) -> Result<(), ToolError> {
    if url.len() > MAX_URL_LEN {
        return Err(ToolError::invalid(format!(
            "url is longer than {MAX_URL_LEN} characters"
        )));
    }
    let lower = url.to_ascii_lowercase();
    let allowed = ["http://", "https://", "file://"]
        .iter()
        .any(|scheme| lower.starts_with(scheme) && lower.len() > scheme.len())
        || lower == "about:blank";
    if allowed && !url.chars().any(char::is_control) {
        Ok(())
    } else {
        Err(ToolError::invalid(format!(
            "url must be an absolute http://, https:// or file:// URL, or about:blank; got {}",
            serde_json::Value::String(url.chars().take(100).collect())
        )))
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
            browser_id: None,
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
            assert!(check_url(ok).is_ok(), "{ok}");
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
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }
}
