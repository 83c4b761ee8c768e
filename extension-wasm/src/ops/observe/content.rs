//! `Content`: a document's readable text (as rendered, open shadow roots included) or markup
//! (open shadow roots as declarative templates, secret fields' values removed in the page), or a
//! scope element's, returned in bounded slices of characters. The page does the reading
//! (`content` in js/collector/70-reads.js).

use serde::Deserialize;
use tabwire_protocol::policy::Need;
use tabwire_protocol::{ContentFormat, ContentRequest, OpError, PageContent, TabId};

use crate::chrome_tabs::resolve_tab;
use crate::ops::target::ReadScope;
use crate::page::{self, PageCommand};
use crate::refs::TOP_FRAME;
use crate::text::slice_chars;

/// The page's answer.
#[derive(Deserialize)]
struct PageText {
    url: String,
    title: String,
    text: String,
}

/// Reads the content of a document of the tab.
pub async fn content(
    tab_id: Option<TabId>,
    request: ContentRequest,
) -> Result<PageContent, OpError> {
    let tab = resolve_tab(tab_id).await?.id;
    let scope = ReadScope::prepare(tab, request.frame_id, request.scope.as_ref())?;
    let frame = scope.frame;
    // Raw markup is a sensitive read of the document it comes from: a frame's origin may deny
    // it where the tab's page (checked when the request was admitted) allows it.
    if request.format == ContentFormat::Html && frame != TOP_FRAME {
        crate::policy::check_frame(tab, frame, Need::SensitiveRead).await?;
    }
    let reply = page::run::<PageText>(
        tab,
        frame,
        &PageCommand::Content {
            scope: scope.page_target(),
            format: request.format,
        },
        scope.missing_frame(),
    )
    .await?;
    scope.check_document(&reply.document_id)?;
    let page = reply.value;
    let slice = slice_chars(&page.text, request.offset, request.max_chars);
    Ok(PageContent {
        tab_id: tab,
        frame_id: (frame != TOP_FRAME).then_some(frame),
        url: page.url,
        title: page.title,
        format: request.format,
        content: slice.text,
        offset: slice.offset,
        total_chars: slice.total,
        truncated: slice.truncated,
        next_offset: slice.next_offset,
    })
}
