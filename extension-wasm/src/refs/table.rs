//! The refs of one document: which element key each ref number names, whether that element is
//! gone, and how a ref is rebound to the one unambiguous replacement of a removed element.
//!
//! A ref is handed out to a key the first time its node is shown and keeps naming that key
//! for the document's life. When the collector reports a key's element gone (removed from the
//! document), the ref stays in the table, marked gone, with the identity it was last seen
//! with. A later snapshot can give it to a replacement node (SPEC §4): same id / data-testid /
//! name anchors, unique among the walked nodes, among the gone refs and — checked by the page
//! over the whole document, hidden elements and other scopes included — among all elements;
//! same tag, type, role and accessible name. At action time the page does the same search over
//! the whole document ([`RefTable::rebind`] records its answer).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use tabwire_observation::facts::{Identity, PageNode};

/// The anchor attributes a replacement must share with a removed element: `id`,
/// `data-testid`, `name` (those present).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
pub struct AnchorKey {
    /// The `id` attribute.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The `data-testid` attribute.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub testid: Option<String>,
    /// The `name` attribute.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl AnchorKey {
    /// The anchors of an identity.
    pub fn of(identity: &Identity) -> AnchorKey {
        let (id, testid, name) = identity.anchors.key();
        AnchorKey {
            id: id.map(Into::into),
            testid: testid.map(Into::into),
            name: name.map(Into::into),
        }
    }
}

/// What a ref number names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    /// The collector's element key.
    pub key: u32,
    /// The element has left the document (the ref may still be rebound).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gone: bool,
    /// The element's identity as last observed; `None` when it has no anchors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
}

/// The refs of one document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RefTable {
    /// Key → the ref number its node is shown with (for keys of gone elements too, so an
    /// element that comes back keeps its ref).
    by_key: HashMap<u32, u32>,
    /// Ref number → what it names. Several numbers can name one key after an action rebound
    /// an old ref to an element that already had a ref of its own.
    bindings: HashMap<u32, Binding>,
}

impl RefTable {
    /// The ref number of `key`, handing out `*last_index + 1` on first sight. An element that
    /// was reported gone and is shown again gets its old ref back.
    pub fn assign(&mut self, key: u32, last_index: &mut u32) -> u32 {
        if let Some(&index) = self.by_key.get(&key)
            && let Some(binding) = self.bindings.get_mut(&index)
            && binding.key == key
        {
            binding.gone = false;
            return index;
        }
        *last_index += 1;
        let index = *last_index;
        self.by_key.insert(key, index);
        self.bindings.insert(
            index,
            Binding {
                key,
                gone: false,
                identity: None,
            },
        );
        index
    }

    /// The ref number `key` is shown with, if any.
    pub fn index_of(&self, key: u32) -> Option<u32> {
        self.by_key.get(&key).copied()
    }

    /// What ref number `index` names.
    pub fn binding(&self, index: u32) -> Option<&Binding> {
        self.bindings.get(&index)
    }

    /// Keys of refs whose element is not known to be gone: the collector checks them and
    /// reports those that left the document.
    pub fn live_keys(&self) -> Vec<u32> {
        let mut keys: Vec<u32> = self
            .bindings
            .values()
            .filter(|b| !b.gone)
            .map(|b| b.key)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// Marks the refs of `keys` gone.
    pub fn mark_gone(&mut self, keys: &[u32]) {
        if keys.is_empty() {
            return;
        }
        let gone: std::collections::HashSet<u32> = keys.iter().copied().collect();
        for binding in self.bindings.values_mut() {
            if gone.contains(&binding.key) {
                binding.gone = true;
            }
        }
    }

    /// Remembers the identity each walked node with a ref has now.
    pub fn note_identities(&mut self, nodes: &[PageNode]) {
        for node in nodes {
            let Some(&index) = self.by_key.get(&node.key) else {
                continue;
            };
            if let Some(binding) = self.bindings.get_mut(&index)
                && binding.key == node.key
            {
                binding.identity = node.identity();
            }
        }
    }

    /// Points ref `index` at `key` (its element's replacement) and marks it live.
    pub fn rebind(&mut self, index: u32, key: u32) {
        let Some(binding) = self.bindings.get_mut(&index) else {
            return;
        };
        if binding.key != key && self.by_key.get(&binding.key) == Some(&index) {
            self.by_key.remove(&binding.key);
        }
        binding.key = key;
        binding.gone = false;
        self.by_key.entry(key).or_insert(index);
    }

    /// The possible replacements among the walked `nodes`: `(gone ref, node key, anchors)`
    /// for a node without a ref whose anchors match exactly one gone ref (counting the keys in
    /// `newly_gone` as gone already), when no other walked node has those anchors, and whose
    /// tag, type, role and name are the gone element's.
    pub fn replacement_candidates(
        &self,
        nodes: &[PageNode],
        newly_gone: &[u32],
    ) -> Vec<(u32, u32, AnchorKey)> {
        let newly_gone: HashSet<u32> = newly_gone.iter().copied().collect();
        let mut orphans: HashMap<AnchorKey, Vec<u32>> = HashMap::new();
        for (&index, binding) in &self.bindings {
            let gone = binding.gone || newly_gone.contains(&binding.key);
            if let (true, Some(identity)) = (gone, &binding.identity) {
                orphans
                    .entry(AnchorKey::of(identity))
                    .or_default()
                    .push(index);
            }
        }
        if orphans.is_empty() {
            return Vec::new();
        }
        let mut found: HashMap<AnchorKey, Vec<(&PageNode, Identity)>> = HashMap::new();
        for node in nodes {
            if let Some(identity) = node.identity() {
                let key = AnchorKey::of(&identity);
                if orphans.contains_key(&key) {
                    found.entry(key).or_default().push((node, identity));
                }
            }
        }
        let mut pairs = Vec::new();
        for (anchor_key, indexes) in orphans {
            let [index] = indexes[..] else { continue };
            let Some([(node, identity)]) = found.get(&anchor_key).map(Vec::as_slice) else {
                continue;
            };
            let same = self.bindings[&index].identity.as_ref() == Some(identity);
            if same && !self.by_key.contains_key(&node.key) {
                pairs.push((index, node.key, anchor_key));
            }
        }
        pairs.sort_unstable_by_key(|(index, key, _)| (*index, *key));
        pairs
    }

    /// Gives gone refs to their replacements among the walked `nodes` (see
    /// [`RefTable::replacement_candidates`]) whose anchors the page found on exactly one element
    /// of the whole document (`unique`). Returns `(ref, key)` pairs.
    pub fn rebind_replacements(
        &mut self,
        nodes: &[PageNode],
        unique: &HashSet<AnchorKey>,
    ) -> Vec<(u32, u32)> {
        let mut rebound = Vec::new();
        for (index, key, anchors) in self.replacement_candidates(nodes, &[]) {
            if unique.contains(&anchors) {
                self.rebind(index, key);
                rebound.push((index, key));
            }
        }
        rebound
    }

    /// Every binding, by ref number (for saving).
    pub fn bindings(&self) -> impl Iterator<Item = (u32, &Binding)> {
        self.bindings.iter().map(|(&i, b)| (i, b))
    }

    /// Rebuilds a table from saved bindings.
    pub fn from_bindings(bindings: impl IntoIterator<Item = (u32, Binding)>) -> Self {
        let mut table = RefTable::default();
        let mut sorted: Vec<(u32, Binding)> = bindings.into_iter().collect();
        sorted.sort_unstable_by_key(|(i, _)| *i);
        for (index, binding) in sorted {
            table.by_key.entry(binding.key).or_insert(index);
            table.bindings.insert(index, binding);
        }
        table
    }

    /// The highest ref number in the table.
    pub fn highest(&self) -> u32 {
        self.bindings.keys().copied().max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tabwire_observation::facts::Anchors;

    fn anchored(key: u32, id: Option<&str>, testid: Option<&str>, name: &str) -> PageNode {
        PageNode {
            key,
            role: "button".into(),
            name: name.into(),
            anchors: Some(Anchors {
                tag: "button".into(),
                id: id.map(Into::into),
                testid: testid.map(Into::into),
                ..Anchors::default()
            }),
            ..PageNode::default()
        }
    }

    /// As if the page found every candidate's anchors once in the document.
    fn everything_unique() -> HashSet<AnchorKey> {
        ["save", "x", "copy", "dup", "go"]
            .iter()
            .flat_map(|v| {
                [
                    AnchorKey {
                        id: Some((*v).into()),
                        testid: None,
                        name: None,
                    },
                    AnchorKey {
                        id: None,
                        testid: Some((*v).into()),
                        name: None,
                    },
                ]
            })
            .collect()
    }

    fn shown(table: &mut RefTable, nodes: &[PageNode], last: &mut u32) -> Vec<u32> {
        let refs = nodes.iter().map(|n| table.assign(n.key, last)).collect();
        table.note_identities(nodes);
        refs
    }

    #[test]
    fn a_replacement_that_is_not_unique_in_the_document_is_not_taken() {
        let mut table = RefTable::default();
        let mut last = 0;
        let email = anchored(5, Some("save"), None, "Save");
        let refs = shown(&mut table, &[email], &mut last);
        // Gone in the very walk that shows the lookalike: still a candidate...
        let lookalike = anchored(9, Some("save"), None, "Save");
        let candidates = table.replacement_candidates(std::slice::from_ref(&lookalike), &[5]);
        assert_eq!(candidates.len(), 1);
        assert_eq!((candidates[0].0, candidates[0].1), (refs[0], 9));
        // ...but the page found another element with those anchors outside the walk (hidden,
        // or out of the snapshot's scope): no rebinding.
        table.mark_gone(&[5]);
        assert!(
            table
                .rebind_replacements(&[lookalike], &HashSet::new())
                .is_empty()
        );
        assert!(table.binding(refs[0]).unwrap().gone);
    }

    #[test]
    fn same_key_same_ref_and_new_keys_count_up() {
        let mut table = RefTable::default();
        let mut last = 10;
        assert_eq!(table.assign(40, &mut last), 11);
        assert_eq!(table.assign(7, &mut last), 12);
        assert_eq!(table.assign(40, &mut last), 11);
        assert_eq!(last, 12);
        assert_eq!(table.binding(12).unwrap().key, 7);
        assert_eq!(table.live_keys(), [7, 40]);
    }

    #[test]
    fn a_unique_replacement_takes_over_the_gone_ref() {
        let mut table = RefTable::default();
        let mut last = 0;
        let save = anchored(5, Some("save"), None, "Save");
        let refs = shown(&mut table, &[save], &mut last);
        table.mark_gone(&[5]);
        assert!(table.binding(refs[0]).unwrap().gone);
        assert!(table.live_keys().is_empty());

        let fresh = anchored(9, Some("save"), None, "Save");
        assert_eq!(
            table.rebind_replacements(&[fresh], &everything_unique()),
            [(refs[0], 9)]
        );
        assert_eq!(table.assign(9, &mut last), refs[0], "the old ref is kept");
        assert!(!table.binding(refs[0]).unwrap().gone);
        assert_eq!(table.index_of(5), None);
        assert_eq!(last, 1, "no new number was handed out");
    }

    #[test]
    fn duplicated_anchors_are_ambiguous() {
        let mut table = RefTable::default();
        let mut last = 0;
        let copy = anchored(5, None, Some("copy"), "Copy");
        let refs = shown(&mut table, &[copy], &mut last);
        table.mark_gone(&[5]);
        let a = anchored(8, None, Some("copy"), "Copy");
        let b = anchored(9, None, Some("copy"), "Copy");
        assert!(
            table
                .rebind_replacements(&[a, b], &everything_unique())
                .is_empty()
        );
        assert!(table.binding(refs[0]).unwrap().gone);
    }

    #[test]
    fn a_replacement_with_another_name_or_tag_is_not_the_same_element() {
        let mut table = RefTable::default();
        let mut last = 0;
        shown(
            &mut table,
            &[anchored(5, Some("save"), None, "Save")],
            &mut last,
        );
        table.mark_gone(&[5]);
        let renamed = anchored(9, Some("save"), None, "Saved!");
        assert!(
            table
                .rebind_replacements(&[renamed], &everything_unique())
                .is_empty()
        );
        let mut link = anchored(9, Some("save"), None, "Save");
        link.anchors.as_mut().unwrap().tag = "a".into();
        assert!(
            table
                .rebind_replacements(&[link], &everything_unique())
                .is_empty()
        );
        // Anchors must match exactly: an extra data-testid makes it another identity.
        let extra = anchored(9, Some("save"), Some("x"), "Save");
        assert!(
            table
                .rebind_replacements(&[extra], &everything_unique())
                .is_empty()
        );
    }

    #[test]
    fn two_gone_refs_with_one_anchor_are_ambiguous_too() {
        let mut table = RefTable::default();
        let mut last = 0;
        // Two elements with the same id (invalid HTML, but it happens), both removed.
        shown(
            &mut table,
            &[
                anchored(1, Some("x"), None, "Go"),
                anchored(2, Some("x"), None, "Go"),
            ],
            &mut last,
        );
        table.mark_gone(&[1, 2]);
        assert!(
            table
                .rebind_replacements(&[anchored(3, Some("x"), None, "Go")], &everything_unique())
                .is_empty()
        );
    }

    #[test]
    fn a_node_that_already_has_a_ref_is_not_taken() {
        let mut table = RefTable::default();
        let mut last = 0;
        shown(
            &mut table,
            &[anchored(5, Some("save"), None, "Save")],
            &mut last,
        );
        table.mark_gone(&[5]);
        // The replacement was shown (and given a ref) before the old one was found gone.
        let fresh = anchored(9, Some("save"), None, "Save");
        table.assign(9, &mut last);
        assert!(
            table
                .rebind_replacements(&[fresh], &everything_unique())
                .is_empty()
        );
    }

    #[test]
    fn elements_without_anchors_are_never_rebound() {
        let mut table = RefTable::default();
        let mut last = 0;
        let plain = PageNode {
            key: 5,
            role: "button".into(),
            name: "Item A".into(),
            ..PageNode::default()
        };
        shown(&mut table, std::slice::from_ref(&plain), &mut last);
        table.mark_gone(&[5]);
        let again = PageNode { key: 6, ..plain };
        assert!(
            table
                .rebind_replacements(&[again], &everything_unique())
                .is_empty()
        );
    }

    #[test]
    fn an_element_that_comes_back_keeps_its_ref() {
        let mut table = RefTable::default();
        let mut last = 0;
        let index = table.assign(5, &mut last);
        table.mark_gone(&[5]);
        assert_eq!(table.assign(5, &mut last), index);
        assert!(!table.binding(index).unwrap().gone);
    }

    #[test]
    fn action_rebinding_can_alias_an_element_that_has_a_ref() {
        let mut table = RefTable::default();
        let mut last = 0;
        let old = table.assign(5, &mut last);
        let newer = table.assign(9, &mut last);
        table.mark_gone(&[5]);
        table.rebind(old, 9);
        assert_eq!(table.binding(old).unwrap().key, 9);
        assert_eq!(
            table.index_of(9),
            Some(newer),
            "the element keeps its own ref"
        );
        assert_eq!(table.index_of(5), None);
    }

    #[test]
    fn saved_bindings_come_back() {
        let mut table = RefTable::default();
        let mut last = 0;
        shown(
            &mut table,
            &[
                anchored(5, Some("a"), None, "A"),
                anchored(6, None, None, "B"),
            ],
            &mut last,
        );
        table.mark_gone(&[6]);
        let saved: Vec<(u32, Binding)> = table.bindings().map(|(i, b)| (i, b.clone())).collect();
        let back = RefTable::from_bindings(saved);
        assert_eq!(back, table);
        assert_eq!(back.highest(), 2);
    }
}
