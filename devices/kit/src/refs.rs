//! Refs of a device's nodes (`@d7`): the same identity keeps its number from one dump to the
//! next, numbers only grow, and nodes that share an identity are told apart by their order
//! among themselves and flagged ambiguous rather than guessed.

use std::collections::HashMap;

/// What keeps a node's ref from one dump to the next: the app the node belongs to and its
/// [`Key`]. The app is part of it so that a ref of one app never names a node of another (a
/// "Phone" field in a form and the launcher's "Phone" icon are different nodes), as a browser
/// ref never outlives its document.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity {
    /// The node's package.
    pub package: String,
    /// What tells it from the app's other nodes.
    pub key: Key,
}

/// A node's identity within its app: a unique resource ID, else its content description and
/// class, else its words and class (a field's hint instead of its text, which changes as it is
/// typed into; a row's title without its summary, which changes as it is switched), else only
/// its class.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// A resource ID no other kept node of the dump has.
    Id(String),
    /// The content description and the class (a search icon and the search field that
    /// replaces it may share a description, never a ref).
    Desc(String, String),
    /// The words (a field's hint, a row's title) and the class.
    Text(String, String),
    /// Nothing but the class, and the resource ID other nodes share.
    Class(String),
}

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
    /// The highest ref number given so far: refs above it were never issued.
    pub fn last_issued(&self) -> u32 {
        self.last
    }

    /// The refs of the nodes whose identities are `identities`, one per node, in order.
    pub fn assign<'a, I>(&mut self, identities: I) -> Vec<Assigned>
    where
        I: IntoIterator<Item = &'a Identity>,
        I::IntoIter: Clone,
    {
        let identities = identities.into_iter();
        let mut totals: HashMap<&Identity, u32> = HashMap::new();
        for identity in identities.clone() {
            *totals.entry(identity).or_default() += 1;
        }
        let count: u32 = totals.values().sum();
        if self.numbers.len() + count as usize > MAX_REMEMBERED {
            self.numbers.clear();
        }
        let mut seen: HashMap<&Identity, u32> = HashMap::new();
        identities
            .map(|identity| {
                let occurrence = seen.entry(identity).or_default();
                let key = (identity.clone(), *occurrence);
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
                    ambiguous: totals[identity] > 1,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(package: &str, text: &str, class: &str) -> Identity {
        Identity {
            package: package.into(),
            key: Key::Desc(text.into(), class.into()),
        }
    }

    #[test]
    fn a_ref_never_crosses_into_another_app_or_another_kind_of_node() {
        let mut refs = RefTable::default();
        let form = desc("com.example.signup", "Phone", "android.widget.EditText");
        let launcher = desc("com.android.launcher3", "Phone", "android.widget.TextView");
        let icon = desc("com.example.signup", "Phone", "android.widget.ImageView");
        let first = refs.assign([&form]);
        assert_ne!(refs.assign([&launcher])[0].index, first[0].index);
        assert_ne!(refs.assign([&icon])[0].index, first[0].index);
        assert_eq!(refs.assign([&form]), first, "the same node keeps its ref");
    }
}
