//! Refs of a device's nodes (`@d7`): the same identity keeps its number from one dump to the
//! next, numbers only grow, and nodes that share an identity are told apart by their order
//! among themselves and flagged ambiguous rather than guessed.

use std::collections::HashMap;

use crate::screen::{Identity, ScreenNode};

/// The most identities remembered; past it the table starts afresh (with numbers still
/// growing, so no old ref ever names a new node).
const MAX_REMEMBERED: usize = 20_000;

/// A node's ref and whether another node of the dump shares its identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Assigned {
    /// The ref number.
    pub index: u32,
    /// Whether the identity is shared.
    pub ambiguous: bool,
}

/// One device's refs.
#[derive(Debug, Default)]
pub struct RefTable {
    /// Identity and occurrence among nodes sharing it → ref number.
    numbers: HashMap<(Identity, u32), u32>,
    /// The last number given.
    last: u32,
}

impl RefTable {
    /// The refs of `nodes`, one per node, in order.
    pub fn assign(&mut self, nodes: &[ScreenNode]) -> Vec<Assigned> {
        let mut totals: HashMap<&Identity, u32> = HashMap::new();
        for node in nodes {
            *totals.entry(&node.identity).or_default() += 1;
        }
        if self.numbers.len() + nodes.len() > MAX_REMEMBERED {
            self.numbers.clear();
        }
        let mut seen: HashMap<&Identity, u32> = HashMap::new();
        nodes
            .iter()
            .map(|node| {
                let occurrence = seen.entry(&node.identity).or_default();
                let key = (node.identity.clone(), *occurrence);
                *occurrence += 1;
                let index = match self.numbers.get(&key) {
                    Some(&index) => index,
                    None => {
                        self.last += 1;
                        self.numbers.insert(key, self.last);
                        self.last
                    }
                };
                Assigned {
                    index,
                    ambiguous: totals[&node.identity] > 1,
                }
            })
            .collect()
    }
}
