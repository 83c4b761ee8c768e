//! What a peer reports about a node: raw facts, nothing rendered. The browser's in-page
//! collector (js/collector/) sends them as JSON; a device backend fills them in from its UI
//! hierarchy, in the same words (roles, states), so both render alike.
//!
//! Parsing is lenient (unknown fields ignored, missing ones defaulted) so a collector that
//! learns a new fact does not break an older engine, except for `key`: every node of a
//! snapshot names its element, because refs and delta identity are built on it.

use serde::{Deserialize, Serialize};

/// The role the collector gives to a run of prose text.
pub const PROSE_ROLE: &str = "text";

/// What a peer reports about one node.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PageNode {
    /// The element's identity in the page, stable for the document's life. For prose it is
    /// the element that holds the text.
    pub key: u32,
    /// ARIA role (implicit or explicit), `row`, `iframe`, or [`PROSE_ROLE`]. A device backend
    /// maps its views to the same words: `textbox`, `button`, `checkbox`, `switch`, `radio`,
    /// `img`, `slider`, `progressbar`, `combobox`, `tab`, `list`, prose.
    pub role: String,
    /// Accessible name, a row's cell texts, or the prose text itself. A field with no label is
    /// named by its placeholder, as browsers name it; on a device, by its hint.
    pub name: String,
    /// A field's value: its text, a slider's or progress bar's position, a combobox's choice.
    /// The browser's collector redacts a password's in the page; see also `secret`.
    pub value: Option<String>,
    /// The value is a secret (a password): it is rendered as `REDACTED` whatever `value` holds,
    /// for a peer that reads the field's text before it can tell.
    pub secret: bool,
    /// The states that hold (`checked`, `disabled`, `selected`, `scrollable` …; see
    /// `render` for those shown).
    pub states: Vec<String>,
    /// A link's absolute URL.
    pub href: Option<String>,
    /// A heading's level.
    pub level: Option<u32>,
    /// The format a date, time, month or week field takes its value in (`YYYY-MM-DD`,
    /// `HH:MM`, `YYYY-MM-DDTHH:MM`, `YYYY-MM`, `YYYY-Www`): rendered after the name, and what
    /// `type_text` and `fill_form` accept for it.
    pub format: Option<String>,
    /// A select's first options.
    pub options: Vec<PageOption>,
    /// For an iframe: the frame's ID, to observe it with `frameId` (filled in by the wasm from
    /// `frame_index`).
    pub frame: Option<u32>,
    /// For an iframe: its index in the page's `window.frames`.
    pub frame_index: Option<u32>,
    /// How many boundaries (dialogs, menus, listboxes, grids, forms) enclose the node.
    pub depth: u8,
    /// The keys of the elements marked inline in `name` (see `inline`), in order.
    pub inline: Vec<u32>,
    /// The key of the nearest enclosing table row or list item (the node's own key when it is
    /// one): a query that matches one node of the group returns the whole group.
    pub group: Option<u32>,
    /// The attributes a replacement element is recognised by; absent when the element has
    /// none of id, data-testid and name.
    pub anchors: Option<Anchors>,
    /// Whether any part of the node is inside the viewport.
    pub in_view: bool,
    /// The element's box in CSS pixels of its frame's viewport.
    #[serde(rename = "box")]
    pub bounds: Option<Bounds>,
}

/// A popup (listbox, menu, dialog, alert, tooltip) that opened since the page's last
/// observation of the whole document, which the window left out in part.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PagePopup {
    /// The popup's element.
    pub key: u32,
    /// Its role and name.
    pub role: String,
    /// See `role`.
    pub name: String,
    /// Its nodes besides itself.
    pub count: u32,
    /// Its first nodes, itself first.
    pub nodes: Vec<PageNode>,
}

/// A popup sent as a [`PagePopup`] before that has closed since.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ClosedPopup {
    /// Its role and name.
    pub role: String,
    /// See `role`.
    pub name: String,
}

/// One option of a `<select>`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PageOption {
    /// The option's label.
    pub text: String,
    /// Whether it is selected.
    pub selected: bool,
}

/// A box in viewport CSS pixels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Bounds {
    /// Left.
    pub x: f64,
    /// Top.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

/// The identity anchors of an element (SPEC §4): at least one of `id`, `testid`, `name`, plus
/// its tag and type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Anchors {
    /// Lower-case tag name.
    pub tag: String,
    /// The `type` attribute, lower-cased.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
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

impl Anchors {
    /// The attribute values that must be unique for a replacement to be unambiguous.
    pub fn key(&self) -> (Option<&str>, Option<&str>, Option<&str>) {
        (
            self.id.as_deref(),
            self.testid.as_deref(),
            self.name.as_deref(),
        )
    }

    /// Whether any anchor attribute is present (an element with only a tag has no identity).
    pub fn is_anchored(&self) -> bool {
        self.id.is_some() || self.testid.is_some() || self.name.is_some()
    }
}

/// What a ref remembers of its element, so a replacement can be recognised when the element is
/// removed: its anchors, role and accessible name as last observed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Identity {
    /// id / data-testid / name, tag and type.
    pub anchors: Anchors,
    /// The node's role (prose is `text`).
    pub role: String,
    /// The accessible name (prose: the text).
    pub name: String,
}

impl PageNode {
    /// A node with only its key, role and name; a peer fills in the other facts it has.
    pub fn new(key: u32, role: &str, name: &str) -> PageNode {
        PageNode {
            key,
            role: role.to_owned(),
            name: name.to_owned(),
            ..PageNode::default()
        }
    }

    /// The node's identity, when it has anchors to be recognised by.
    pub fn identity(&self) -> Option<Identity> {
        let anchors = self.anchors.as_ref().filter(|a| a.is_anchored())?;
        Some(Identity {
            anchors: anchors.clone(),
            role: self.role.clone(),
            name: self.name.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collector_facts_parse_leniently() {
        let json = r#"{"key":4,"role":"textbox","name":"Email","value":"","states":["required"],
            "box":{"x":1,"y":2,"w":3,"h":4},"group":9,"inView":true,
            "anchors":{"tag":"input","type":"email","name":"email"},"later":"ignored"}"#;
        let parsed: PageNode = serde_json::from_str(json).unwrap();
        assert_eq!(parsed.key, 4);
        assert_eq!(parsed.group, Some(9));
        assert!(parsed.in_view);
        assert_eq!(
            parsed.bounds,
            Some(Bounds {
                x: 1.0,
                y: 2.0,
                w: 3.0,
                h: 4.0
            })
        );
        let identity = parsed.identity().unwrap();
        assert_eq!(identity.anchors.kind.as_deref(), Some("email"));
        assert_eq!(identity.anchors.key(), (None, None, Some("email")));
        assert_eq!(identity.name, "Email");
    }

    #[test]
    fn a_tag_alone_is_no_identity() {
        let node = PageNode {
            anchors: Some(Anchors {
                tag: "button".into(),
                ..Anchors::default()
            }),
            ..PageNode::default()
        };
        assert_eq!(node.identity(), None);
    }
}
