//! The storage group (SPEC §6): the cookies a URL would be sent ([`cookies`], through the
//! debugger, HttpOnly ones included) and the top document's `localStorage` (read in the page),
//! both as bounded lists of entries.

mod cookies;

use serde::Deserialize;
use serde_json::json;
use tabwire_protocol::{
    Cookie, ErrorCode, GetCookies, GetLocalStorage, OpError, OpResult, StorageEntries,
    StorageEntry, StorageOp, TabId,
};

use crate::chrome;
use crate::chrome_tabs::{get_tab, resolve_tab};
use crate::debugger;
use crate::page::{self, MissingFrame, PageCommand};
use crate::refs::TOP_FRAME;

/// Runs one operation of the group on the request's tab.
pub async fn run(tab_id: Option<TabId>, op: StorageOp) -> Result<OpResult, OpError> {
    let tab = resolve_tab(tab_id).await?.id;
    Ok(match op {
        StorageOp::Cookies(request) => get_cookies(tab, request).await?.into(),
        StorageOp::LocalStorage(request) => local_storage(tab, request).await?.into(),
    })
}

/// The cookies Chrome would send to the request's URL (default: the tab's).
async fn get_cookies(tab: TabId, request: GetCookies) -> Result<StorageEntries<Cookie>, OpError> {
    let url = match request.url {
        Some(url) => url,
        None => {
            let tab = get_tab(tab).await?;
            tab.url.or(tab.pending_url).unwrap_or_default()
        }
    };
    if url.is_empty() {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            "The tab has no URL yet. Pass url, or wait for the page to load.",
        ));
    }
    let value = debugger::send(tab, "Network.getCookies", &json!({ "urls": [url] })).await?;
    let list: cookies::CookieList = chrome::from_js(value).map_err(|e| {
        OpError::new(
            ErrorCode::Internal,
            format!("could not read the result of Network.getCookies: {e}"),
        )
    })?;
    let max_chars = usize::try_from(request.max_chars).unwrap_or(usize::MAX);
    let read = cookies::entries(list.cookies, request.name.as_deref(), max_chars);
    Ok(StorageEntries {
        tab_id: tab,
        origin: url,
        entries: read.entries,
        total: read.total,
        truncated: read.truncated,
    })
}

/// The page's answer.
#[derive(Deserialize)]
struct Storage {
    origin: String,
    entries: Vec<StorageEntry>,
    total: u32,
    truncated: bool,
}

/// The top document's `localStorage`.
async fn local_storage(
    tab: TabId,
    request: GetLocalStorage,
) -> Result<StorageEntries<StorageEntry>, OpError> {
    let command = PageCommand::LocalStorage {
        filter: request.filter,
        max_chars: request.max_chars,
    };
    let reply = page::run::<Storage>(tab, TOP_FRAME, &command, MissingFrame::Requested).await?;
    let storage = reply.value;
    Ok(StorageEntries {
        tab_id: tab,
        origin: storage.origin,
        entries: storage.entries,
        total: storage.total,
        truncated: storage.truncated,
    })
}
