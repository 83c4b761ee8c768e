//! Turning a request's [`Target`] into something the page can find, and checking afterwards
//! that the page that answered is the document the ref was issued for.

use tabwire_protocol::{OpError, TabId, Target};

use crate::page::PageTarget;
use crate::refs;

/// A target ready for the page, plus the document a ref target must be found in.
pub struct PreparedTarget {
    /// What the page gets.
    pub page: PageTarget,
    /// For a ref: the `documentId` it was issued for.
    pub document_id: Option<String>,
}

/// Resolves a ref through the tab's ref table; passes a CSS selector through.
pub fn prepare(tab: TabId, target: &Target) -> Result<PreparedTarget, OpError> {
    match target {
        Target::Css(css) => Ok(PreparedTarget {
            page: PageTarget::Css { css: css.clone() },
            document_id: None,
        }),
        Target::Ref(element_ref) => {
            let resolved = refs::with_tables(|tables| tables.resolve(tab, *element_ref))?;
            Ok(PreparedTarget {
                page: PageTarget::Key {
                    key: resolved.key,
                    doc: resolved.doc_token,
                    element_ref: element_ref.to_string(),
                },
                document_id: Some(resolved.document_id),
            })
        }
    }
}

impl PreparedTarget {
    /// Fails with `STALE_REF` when a ref target was answered by another document.
    pub fn check_document(&self, target: &Target, answered_by: &str) -> Result<(), OpError> {
        match (&self.document_id, target) {
            (Some(expected), Target::Ref(element_ref)) if expected != answered_by => {
                Err(refs::stale(
                    *element_ref,
                    "the tab has loaded a new document since the snapshot",
                ))
            }
            _ => Ok(()),
        }
    }
}
