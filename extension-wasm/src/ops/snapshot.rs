//! `Snapshot`: observe the tab's page — one collector walk, then refs and budget in Rust.

use serde::Deserialize;
use tabwire_protocol::{Observation, OpError, OpResult, TabId};

use crate::observation::{self, Budget, PageNode};
use crate::ops::tabs::resolve_tab;
use crate::page::{self, PageCommand};
use crate::refs;

/// The collector's snapshot answer.
#[derive(Deserialize)]
struct SnapshotFacts {
    url: String,
    title: String,
    /// The collector's document token (see `refs`).
    doc: String,
    /// Lines on the whole page, including those not reported.
    total: u32,
    nodes: Vec<PageNode>,
}

/// Takes an observation of the tab.
pub async fn snapshot(
    tab_id: Option<TabId>,
    max_nodes: u32,
    max_chars: u32,
) -> Result<OpResult, OpError> {
    let tab = resolve_tab(tab_id).await?.id;
    let reply = page::run::<SnapshotFacts>(
        tab,
        &PageCommand::Snapshot {
            max_nodes,
            max_chars,
        },
    )
    .await?;
    let facts = reply.value;
    let budget = Budget {
        max_nodes,
        max_chars,
    };
    // Refs are assigned synchronously once the page has answered: a snapshot dropped at its
    // deadline never gets here, so a late answer cannot rewrite the ref table.
    let observation = refs::with_tables(|tables| {
        let table = tables.begin_observation(tab, &reply.document_id, &facts.doc);
        let built = observation::build(&facts.nodes, facts.total, &facts.url, budget, |key| {
            table.ref_for(key)
        });
        Observation {
            tab_id: tab,
            url: facts.url,
            title: facts.title,
            document_id: reply.document_id,
            version: table.version(),
            nodes: built.nodes,
            total_nodes: built.total_nodes,
            truncated: built.truncated,
            omitted_nodes: built.omitted_nodes,
        }
    });
    refs::store::save(tab);
    Ok(OpResult::Snapshot(observation))
}
