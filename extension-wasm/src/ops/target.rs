//! Turning a request's [`Target`] into something the page can find, in the right frame, and
//! checking afterwards that the page that answered is the document the ref was issued for.
//!
//! A ref names its frame (`@f3e5` lives in frame 3); a CSS selector is looked up in the frame
//! the request names (the top document unless a `frameId` is given).

use tabwire_protocol::{ErrorCode, OpError, TabId, Target};

use crate::page::{MissingFrame, PageTarget};
use crate::refs::{self, ResolvedRef, TOP_FRAME};

/// A target ready for the page.
pub struct PreparedTarget {
    /// The frame to run in.
    pub frame: u32,
    /// What the page gets.
    pub page: PageTarget,
    /// For a ref: where it pointed when the request started.
    pub resolved: Option<ResolvedRef>,
    /// The ref as written, for messages.
    label: String,
}

/// Resolves a ref through the tab's ref state; passes a CSS selector through, to be looked up
/// in `css_frame`.
pub fn prepare(tab: TabId, target: &Target, css_frame: u32) -> Result<PreparedTarget, OpError> {
    match target {
        Target::Css(css) => Ok(PreparedTarget {
            frame: css_frame,
            page: PageTarget::Css { css: css.clone() },
            resolved: None,
            label: css.clone(),
        }),
        Target::Ref(element_ref) => {
            let resolved = refs::with_tables(|tables| tables.resolve(tab, *element_ref))?;
            Ok(PreparedTarget {
                frame: resolved.frame,
                page: PageTarget::Key {
                    key: resolved.key,
                    doc: resolved.doc_token.clone(),
                    element_ref: element_ref.to_string(),
                    identity: resolved.identity.clone(),
                },
                resolved: Some(resolved),
                label: element_ref.to_string(),
            })
        }
    }
}

/// The frame a snapshot or content read runs in: the request's `frameId`, or the scope ref's
/// frame when no `frameId` is given. A scope ref of another frame than `frameId` is refused.
pub fn frame_for(frame_id: Option<u32>, scope: Option<&Target>) -> Result<u32, OpError> {
    let scope_frame = match scope {
        Some(Target::Ref(element_ref)) => Some(refs::frame_of(*element_ref)),
        _ => None,
    };
    match (frame_id, scope_frame) {
        (Some(asked), Some(of_ref)) if asked != of_ref => Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!(
                "The scope ref belongs to frame {of_ref}, but frameId {asked} was asked for. \
                 Leave frameId out, or use a ref observed in frame {asked}."
            ),
        )),
        (Some(asked), _) => Ok(asked),
        (None, Some(of_ref)) => Ok(of_ref),
        (None, None) => Ok(TOP_FRAME),
    }
}

/// What a read (snapshot, content) covers: the frame it runs in, and the subtree it is scoped
/// to, if any.
pub struct ReadScope {
    /// The frame.
    pub frame: u32,
    /// The scope's element, prepared for the page.
    pub target: Option<PreparedTarget>,
}

impl ReadScope {
    /// Resolves a request's `frameId` and `scope` (a scope ref names its own frame).
    pub fn prepare(
        tab: TabId,
        frame_id: Option<u32>,
        scope: Option<&Target>,
    ) -> Result<ReadScope, OpError> {
        let frame = frame_for(frame_id, scope)?;
        let target = scope.map(|scope| prepare(tab, scope, frame)).transpose()?;
        Ok(ReadScope { frame, target })
    }

    /// The scope as the page gets it.
    pub fn page_target(&self) -> Option<PageTarget> {
        self.target.as_ref().map(|t| t.page.clone())
    }

    /// How the page run reports a missing frame.
    pub fn missing_frame(&self) -> MissingFrame<'_> {
        self.target
            .as_ref()
            .map_or(MissingFrame::Requested, PreparedTarget::missing_frame)
    }

    /// Fails with `STALE_REF` when a scope ref was answered by another document.
    pub fn check_document(&self, answered_by: &str) -> Result<(), OpError> {
        self.target
            .as_ref()
            .map_or(Ok(()), |t| t.check_document(answered_by))
    }
}

impl PreparedTarget {
    /// How the page run reports a missing frame: a ref's frame gone makes the ref stale.
    pub fn missing_frame(&self) -> MissingFrame<'_> {
        match self.resolved {
            Some(_) => MissingFrame::OfRef(&self.label),
            None => MissingFrame::Requested,
        }
    }

    /// Fails with `STALE_REF` when a ref target was answered by another document.
    pub fn check_document(&self, answered_by: &str) -> Result<(), OpError> {
        match &self.resolved {
            Some(resolved) if resolved.document_id != answered_by => Err(OpError::new(
                ErrorCode::StaleRef,
                format!(
                    "{} is stale: its frame has loaded a new document since the snapshot. Take \
                     a new snapshot and use a ref from it.",
                    self.label
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Records that the page acted on the replacement `key` of the ref's removed element.
    pub fn rebound(&self, tab: TabId, key: Option<u32>) {
        if let (Some(resolved), Some(key)) = (&self.resolved, key) {
            refs::with_tables(|tables| tables.rebind(tab, resolved, key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tabwire_protocol::ElementRef;

    #[test]
    fn the_frame_comes_from_the_request_or_the_scope_ref() {
        let framed = Target::Ref(ElementRef {
            frame: Some(4),
            index: 2,
        });
        let top = Target::Ref(ElementRef::top(2));
        let css = Target::Css("main".into());
        assert_eq!(frame_for(None, None).unwrap(), 0);
        assert_eq!(frame_for(Some(3), None).unwrap(), 3);
        assert_eq!(frame_for(Some(3), Some(&css)).unwrap(), 3);
        assert_eq!(frame_for(None, Some(&framed)).unwrap(), 4);
        assert_eq!(frame_for(Some(4), Some(&framed)).unwrap(), 4);
        assert_eq!(frame_for(Some(0), Some(&top)).unwrap(), 0);
        let err = frame_for(Some(3), Some(&framed)).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        assert_eq!(
            frame_for(Some(3), Some(&top)).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
    }
}
