//! From WebDriverAgent's page source (`GET /source`, XCUITest's element tree as XML) to the
//! kit's nodes, kept and pruned by the rule Android's reader follows: a node is kept when it
//! has words or something to act on, and pure layout is pruned.
//!
//! - Controls are kept with a role from their element type: buttons, links, fields (a
//!   `SecureTextField`'s value is never shown), switches, sliders, pickers, progress and
//!   activity indicators (busy while they show), alerts and sheets.
//! - A table cell is one line, a row to tap: named by its label, else by the words inside it
//!   (joined by ` | `, not shown again), with its value (`Wi-Fi … Home`). A cell whose only
//!   control is a switch is one line: the switch, named by the cell.
//! - Static text is prose; an image only when it has a label; tables, collection and scroll
//!   views are lists (`scrollable`); a childless `Other` with a label that accessibility does
//!   not hide is a button (React Native's touchables look so).
//! - The status bar and the keyboard's keys are left out (the keyboard is reported as
//!   showing), as are nodes WDA reports not visible or that lie entirely off the screen.
//! - Refs are kept by identity: a node's accessibility identifier when it has its own (WDA's
//!   `name` differs from its `label`) and no other kept node shares it, else its label and
//!   type, else its placeholder (a field's text changes as it is typed into) and type, else its
//!   type.
//!
//! Coordinates are points, as XCUITest and WDA give and take them.

use tabwire_device_kit::node::{Extent, ScreenNode, has_words, is_loading_label};
use tabwire_device_kit::refs::{Identity, Key};
use tabwire_protocol::Rect;

/// The most XML nodes read from one source (WDA's own depth limit keeps real ones far
/// below).
const MAX_XML_NODES: u32 = 400_000;
/// The deepest nesting read (WDA's own `snapshotMaxDepth` is 50 by default).
const MAX_DEPTH: usize = 200;
/// The longest name taken from the words inside a cell.
const MAX_ABSORBED_NAME: usize = 150;
/// How the words inside a cell are joined.
const PART_SEPARATOR: &str = " | ";
/// The longest source read, in bytes.
pub const MAX_SOURCE_BYTES: usize = 16 * 1024 * 1024;

/// One page source, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The app's bundle ID, when the source names it (WDA 5 and later put it on the
    /// application element).
    pub bundle_id: Option<String>,
    /// The application element's frame, in screen points: the whole screen in the orientation
    /// of the moment for an app in front, less beside another app (iPad multitasking).
    pub frame: Option<Rect>,
    /// Whether the software keyboard shows.
    pub keyboard_shown: bool,
    /// The kept nodes in pre-order, their app not yet known (`package` empty).
    pub nodes: Vec<ScreenNode>,
}

/// Why a source could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceProblem {
    /// It is not XML, or too large.
    #[error("the page source is not readable XML: {0}")]
    NotXml(String),
    /// There is no application element.
    #[error("the page source has no XCUIElementTypeApplication element")]
    NoApplication,
}

/// One element's attributes, as far as the reader cares.
struct Element<'a, 'input> {
    node: roxmltree::Node<'a, 'input>,
    kind: &'a str,
}

impl<'a, 'input> Element<'a, 'input> {
    fn new(node: roxmltree::Node<'a, 'input>) -> Option<Self> {
        let kind = node.tag_name().name().strip_prefix("XCUIElementType")?;
        Some(Element { node, kind })
    }

    fn attr(&self, name: &str) -> &'a str {
        self.node.attribute(name).unwrap_or("")
    }

    fn flag(&self, name: &str) -> Option<bool> {
        match self.node.attribute(name)? {
            "true" | "1" => Some(true),
            "false" | "0" => Some(false),
            _ => None,
        }
    }

    fn label(&self) -> &'a str {
        self.attr("label").trim()
    }

    /// The accessibility identifier, when the element has its own (WDA gives the label as
    /// `name` when there is none).
    fn identifier(&self) -> Option<&'a str> {
        let name = self.attr("name").trim();
        (!name.is_empty() && name != self.label()).then_some(name)
    }

    fn value(&self) -> &'a str {
        self.attr("value").trim()
    }

    fn placeholder(&self) -> &'a str {
        self.attr("placeholderValue").trim()
    }

    fn rect(&self) -> Option<(f64, f64, f64, f64)> {
        let number = |name: &str| self.node.attribute(name)?.trim().parse::<f64>().ok();
        Some((
            number("x")?,
            number("y")?,
            number("width")?,
            number("height")?,
        ))
    }

    fn children(&self) -> impl Iterator<Item = Element<'a, 'input>> + use<'a, 'input> {
        self.node.children().filter_map(Element::new)
    }
}

/// The bundle ID the source's application element names, if any.
pub fn source_bundle_id(xml: &str) -> Option<String> {
    let start = xml.find("<XCUIElementTypeApplication")?;
    let tag = &xml[start..start + xml[start..].find('>')?];
    let at = tag.find(" bundleId=\"")? + " bundleId=\"".len();
    let id = &tag[at..at + tag[at..].find('"')?];
    tabwire_protocol::devices::is_package_name(id).then(|| id.to_owned())
}

/// Reads a page source; `screen` is the screen in points when known (else the application
/// element's frame is used).
pub fn read_source(xml: &str, screen: Option<Extent>) -> Result<Source, SourceProblem> {
    if xml.len() > MAX_SOURCE_BYTES {
        return Err(SourceProblem::NotXml(format!(
            "it is {} bytes, more than {MAX_SOURCE_BYTES}",
            xml.len()
        )));
    }
    // WDA writes no DOCTYPE, comment or CDATA section: markup hidden in one has no business in
    // a page source.
    if xml.contains("<!") {
        return Err(SourceProblem::NotXml(
            "it holds a DOCTYPE, comment or CDATA section, which WebDriverAgent never writes"
                .into(),
        ));
    }
    // The XML parser recurses per element: refuse what would exhaust a thread's stack.
    if tabwire_device_kit::xml::nesting(xml) > MAX_DEPTH {
        return Err(SourceProblem::NotXml(format!(
            "it nests deeper than {MAX_DEPTH} levels"
        )));
    }
    let options = roxmltree::ParsingOptions {
        allow_dtd: false,
        nodes_limit: MAX_XML_NODES,
    };
    let document = roxmltree::Document::parse_with_options(xml, options)
        .map_err(|e| SourceProblem::NotXml(e.to_string()))?;
    let app = document
        .descendants()
        .filter_map(Element::new)
        .find(|e| e.kind == "Application")
        .ok_or(SourceProblem::NoApplication)?;
    let frame = app.rect().and_then(|(x, y, w, h)| {
        let side = |v: f64| v.round().clamp(0.0, f64::from(u32::MAX)) as u32;
        (w >= 1.0 && h >= 1.0).then(|| Rect {
            left: side(x),
            top: side(y),
            right: side(x + w),
            bottom: side(y + h),
        })
    });
    let extent = screen.or(frame.map(|f| Extent {
        width: f.right,
        height: f.bottom,
    }));
    let mut reader = Reader {
        extent: extent.unwrap_or(Extent {
            width: u32::MAX,
            height: u32::MAX,
        }),
        keyboard_shown: false,
        drafts: Vec::new(),
    };
    for child in app.children() {
        reader.walk(&child, "");
    }
    let bundle_id = app
        .node
        .attribute("bundleId")
        .filter(|id| tabwire_protocol::devices::is_package_name(id))
        .map(str::to_owned);
    Ok(Source {
        bundle_id,
        frame,
        keyboard_shown: reader.keyboard_shown,
        nodes: identify(reader.drafts),
    })
}

/// A kept node before its identity is settled.
struct Draft {
    node: ScreenNode,
    /// Its own accessibility identifier.
    identifier: Option<String>,
    /// What its identity falls back to: its label, else its placeholder.
    words: Option<String>,
    kind: String,
}

struct Reader {
    extent: Extent,
    keyboard_shown: bool,
    drafts: Vec<Draft>,
}

impl Reader {
    /// Reads `element` and what is inside it; `named` is the name of the nearest kept node
    /// around it (whose title it need not say again).
    fn walk(&mut self, element: &Element, named: &str) {
        let mut inner = named.to_owned();
        match element.kind {
            "StatusBar" => return,
            "Keyboard" => {
                if self.bounds(element).is_some() {
                    self.keyboard_shown = true;
                }
                return;
            }
            "Cell" => {
                if self.cell(element) {
                    return;
                }
            }
            _ => {
                if let Some(name) = self.keep(element, named) {
                    inner = name;
                }
            }
        }
        for child in element.children() {
            self.walk(&child, &inner);
        }
    }

    /// Its bounds on the screen, when it shows: WDA does not call it invisible and part of it
    /// is on the screen.
    fn bounds(&self, element: &Element) -> Option<Rect> {
        if element.flag("visible") == Some(false) {
            return None;
        }
        let (x, y, w, h) = element.rect()?;
        let clamp = |v: f64, max: u32| v.round().clamp(0.0, f64::from(max)) as u32;
        let rect = Rect {
            left: clamp(x, self.extent.width),
            top: clamp(y, self.extent.height),
            right: clamp(x + w, self.extent.width),
            bottom: clamp(y + h, self.extent.height),
        };
        (rect.right > rect.left && rect.bottom > rect.top).then_some(rect)
    }

    /// Keeps `element` when it is a control, words, or a list; returns its name when kept.
    fn keep(&mut self, element: &Element, named: &str) -> Option<String> {
        let bounds = self.bounds(element)?;
        let label = element.label();
        let value = element.value();
        let placeholder = element.placeholder();
        let mut states = Vec::new();
        let mut secret = false;
        let mut busy = false;
        let (role, name, shown_value): (&'static str, String, Option<String>) = match element.kind {
            "Button" | "MenuItem" | "Icon" | "Tab" => {
                let name = first_words(&[label, element.attr("name").trim()]);
                if name.is_empty() && !element.node.has_children() {
                    return None;
                }
                ("button", name, None)
            }
            "Link" => ("link", first_words(&[label, value]), None),
            "TextField" | "SearchField" | "TextView" | "SecureTextField" => {
                secret = element.kind == "SecureTextField";
                let name = first_words(&[label, placeholder, element.attr("name").trim()]);
                let typed = (!value.is_empty() && value != placeholder && value != name)
                    .then(|| value.to_owned());
                let shown = if secret {
                    typed.map(|_| tabwire_protocol::REDACTED.to_owned())
                } else {
                    typed
                };
                let role = if element.kind == "SearchField" {
                    "searchbox"
                } else {
                    "textbox"
                };
                (role, name, shown)
            }
            "Switch" | "Toggle" | "CheckBox" => {
                if value == "1" {
                    states.push("checked");
                }
                let role = if element.kind == "CheckBox" {
                    "checkbox"
                } else {
                    "switch"
                };
                (
                    role,
                    first_words(&[label, element.attr("name").trim()]),
                    None,
                )
            }
            "Slider" | "Stepper" => (
                "slider",
                first_words(&[label, element.attr("name").trim()]),
                (!value.is_empty()).then(|| value.to_owned()),
            ),
            "PickerWheel" | "DatePicker" | "PopUpButton" | "ComboBox" => (
                "combobox",
                first_words(&[label, element.attr("name").trim()]),
                (!value.is_empty()).then(|| value.to_owned()),
            ),
            "ProgressIndicator" | "ActivityIndicator" => {
                busy = true;
                (
                    "progressbar",
                    first_words(&[label]),
                    (!value.is_empty()).then(|| value.to_owned()),
                )
            }
            "Alert" | "Sheet" => ("dialog", first_words(&[label]), None),
            "StaticText" => {
                let words = first_words(&[label, value]);
                if words.is_empty() || words == named {
                    return None;
                }
                busy = is_loading_label(&words);
                ("text", words, None)
            }
            "Image" => {
                if label.is_empty() || !has_words(label) {
                    return None;
                }
                ("img", label.to_owned(), None)
            }
            "Table" | "CollectionView" | "ScrollView" | "Outline" => {
                states.push("scrollable");
                ("list", first_words(&[label]), None)
            }
            "WebView" => ("webview", first_words(&[label]), None),
            "Other" => {
                let leaf = element.children().next().is_none();
                if !leaf
                    || label.is_empty()
                    || !has_words(label)
                    || element.flag("accessible") == Some(false)
                {
                    return None;
                }
                ("button", label.to_owned(), None)
            }
            _ => return None,
        };
        if element.flag("enabled") == Some(false) {
            states.push("disabled");
        }
        if element.flag("focused") == Some(true) {
            states.push("focused");
        }
        self.push(
            element,
            role,
            name.clone(),
            shown_value,
            states,
            secret,
            busy,
            bounds,
        );
        Some(name)
    }

    /// A table cell: one line, named by its label or the words inside. Returns whether its
    /// inside was read too (else the walk goes on into it).
    fn cell(&mut self, cell: &Element) -> bool {
        let Some(bounds) = self.bounds(cell) else {
            // Off the screen: nothing of it shows.
            return true;
        };
        let mut words: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut length = 0;
        let mut switches = Vec::new();
        let mut others = false;
        for inside in cell.node.descendants().skip(1).filter_map(Element::new) {
            match inside.kind {
                // Only words a person sees name the row: text hidden in it stays out.
                "StaticText" if length <= MAX_ABSORBED_NAME && self.bounds(&inside).is_some() => {
                    let text = first_words(&[inside.label(), inside.value()]);
                    if !text.is_empty() && seen.insert(text.clone()) {
                        length += text.chars().count() + PART_SEPARATOR.len();
                        words.push(text);
                    }
                }
                "Switch" | "Toggle" => switches.push(inside),
                "Button" | "TextField" | "SecureTextField" | "SearchField" | "TextView"
                | "Slider" | "Link"
                    if self.bounds(&inside).is_some() && inside.flag("enabled") != Some(false) =>
                {
                    others = true
                }
                _ => {}
            }
        }
        let label = cell.label();
        let name = if has_words(label) {
            label.to_owned()
        } else {
            cap(&words.join(PART_SEPARATOR))
        };
        let value = cell.value();
        let mut states = Vec::new();
        if cell.flag("enabled") == Some(false) {
            states.push("disabled");
        }
        if let [switch] = switches.as_slice()
            && !others
        {
            if switch.value() == "1" {
                states.push("checked");
            }
            let at = self.bounds(switch).unwrap_or(bounds);
            self.push(switch, "switch", name, None, states, false, false, at);
            return true;
        }
        let shown_value =
            (!value.is_empty() && value != name && !name.contains(value)).then(|| value.to_owned());
        self.push(
            cell,
            "button",
            name,
            shown_value,
            states,
            false,
            false,
            bounds,
        );
        // Its words are its name; controls inside (a field, a button) are read on their own.
        for inside in cell.children() {
            self.walk_in_cell(&inside);
        }
        true
    }

    /// The inside of a cell already named: everything but its static text and its disabled
    /// decorations (a row's chevron).
    fn walk_in_cell(&mut self, element: &Element) {
        if element.kind == "StaticText" || element.flag("enabled") == Some(false) {
            return;
        }
        if element.kind != "Image" {
            self.keep(element, "");
        }
        for child in element.children() {
            self.walk_in_cell(&child);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        element: &Element,
        role: &'static str,
        name: String,
        value: Option<String>,
        states: Vec<&'static str>,
        secret: bool,
        busy: bool,
        bounds: Rect,
    ) {
        let words = first_words(&[element.label(), element.placeholder()]);
        self.drafts.push(Draft {
            identifier: element.identifier().map(str::to_owned),
            words: (!words.is_empty()).then_some(words),
            kind: element.kind.to_owned(),
            node: ScreenNode {
                role,
                name,
                value,
                secret,
                states,
                bounds,
                identity: Identity {
                    package: String::new(),
                    key: Key::Class(String::new()),
                },
                package: String::new(),
                busy,
            },
        });
    }
}

/// Settles each draft's identity: its own identifier when no other kept node has it.
fn identify(drafts: Vec<Draft>) -> Vec<ScreenNode> {
    let mut counts = std::collections::HashMap::<&str, u32>::new();
    for draft in &drafts {
        if let Some(id) = &draft.identifier {
            *counts.entry(id).or_default() += 1;
        }
    }
    let keys: Vec<Key> = drafts
        .iter()
        .map(|draft| match (&draft.identifier, &draft.words) {
            (Some(id), _) if counts.get(id.as_str()) == Some(&1) => Key::Id(id.clone()),
            (_, Some(words)) => Key::Desc(words.clone(), draft.kind.clone()),
            _ => Key::Class(draft.kind.clone()),
        })
        .collect();
    drafts
        .into_iter()
        .zip(keys)
        .map(|(mut draft, key)| {
            draft.node.identity.key = key;
            draft.node
        })
        .collect()
}

/// The first candidate with words, trimmed; empty when none has any.
fn first_words(candidates: &[&str]) -> String {
    candidates
        .iter()
        .map(|c| c.trim())
        .find(|c| has_words(c))
        .map(cap)
        .unwrap_or_default()
}

fn cap(text: &str) -> String {
    if text.chars().count() <= MAX_ABSORBED_NAME {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(MAX_ABSORBED_NAME - 1).collect();
        cut.push('…');
        cut
    }
}

/// Gives every node its app.
pub fn with_app(mut nodes: Vec<ScreenNode>, bundle_id: &str) -> Vec<ScreenNode> {
    for node in &mut nodes {
        node.package = bundle_id.to_owned();
        node.identity.package = bundle_id.to_owned();
    }
    nodes
}

#[cfg(test)]
#[path = "source_tests.rs"]
mod tests;
