//! From a dump's raw nodes to the nodes an observation shows (issue 15, "Observations"): the
//! kept nodes in pre-order, each with a role mapped from its class, a name, a value, states,
//! its bounds on the screen and the identity its ref is kept by.
//!
//! A node is kept when it has words (text, a content description or a hint), or is clickable,
//! checkable, scrollable, focused or editable, or has a resource ID and a role that says
//! something (a progress bar, an image with a description, …). Pure layout is pruned: a node
//! kept only for its resource ID that can neither be acted on nor read (a `FrameLayout`, an
//! icon's `ImageView` without a description) says nothing an agent can use. Words are what a
//! reader sees: an icon font's glyph (a private-use character) is none, and a content
//! description names such a node.
//!
//! A clickable node with no words of its own is named by the words inside it (a React Native
//! button is a clickable `ViewGroup` around a `TextView`; a settings row is a clickable
//! `LinearLayout` around a title and a summary), joined by ` | ` as a browser's row joins its
//! cells, and those words are not shown again. When the only control inside is a widget that
//! is not clickable itself (a row's `Switch`, whose taps go to the row), the row and its widget
//! are one line: the widget's, named by the row's words, as Android's accessibility names it.
//! Another checkable widget without words inside a row takes the row's title. Nodes of zero
//! size, or entirely off the screen, are dropped (their children are still considered).

use tabwire_protocol::Rect;

use crate::hierarchy::{Hierarchy, RawBounds, RawNode};
use tabwire_device_kit::node::{Extent, ScreenNode, has_words, is_loading_label};
use tabwire_device_kit::refs::{Identity, Key};

/// The longest name taken from the words inside a clickable node.
const MAX_ABSORBED_NAME: usize = 150;
/// How the parts of a name gathered from inside a node are joined (as a browser's row joins
/// its cells).
const PART_SEPARATOR: &str = " | ";
/// States in the order they are listed.
const STATE_ORDER: [&str; 5] = ["checked", "selected", "disabled", "focused", "scrollable"];

/// The kept nodes of `hierarchy`, in pre-order, clipped to `screen` (in the dump's rotation).
pub fn screen_nodes(hierarchy: &Hierarchy, screen: Extent) -> Vec<ScreenNode> {
    let raw = &hierarchy.nodes;
    // First pass: each node's role and own name, or None when it is not kept.
    let mut kept: Vec<Option<Draft>> = raw.iter().map(|node| draft(node, screen)).collect();
    // The system bars say nothing about the app and cost lines: left out, whole.
    let mut index = 0;
    while index < raw.len() {
        if is_system_bar(&raw[index], screen) {
            let end = raw[index].subtree_end.max(index + 1);
            kept[index..end].iter_mut().for_each(|draft| *draft = None);
            index = end;
        } else {
            index += 1;
        }
    }
    // Second pass, inner nodes first (reverse pre-order), so that a row sees what the clickable
    // nodes inside it left: clickable nodes take the words inside them.
    for index in (0..raw.len()).rev() {
        gather(&mut kept, raw, index);
    }
    for draft in kept.iter_mut().flatten() {
        if draft.name.is_empty()
            && let Some(id_name) = draft.id_name.take()
        {
            draft.name = id_name;
        }
    }
    // Resource IDs that identify: those exactly one kept node has.
    let mut id_counts = std::collections::HashMap::<&str, u32>::new();
    for (draft, node) in kept.iter().zip(raw) {
        if draft.is_some() && !node.resource_id.is_empty() {
            *id_counts.entry(node.resource_id.as_str()).or_default() += 1;
        }
    }
    kept.into_iter()
        .zip(raw)
        .filter_map(|(draft, node)| {
            let draft = draft?;
            let key = if id_counts.get(node.resource_id.as_str()) == Some(&1) {
                Key::Id(node.resource_id.clone())
            } else if !node.desc.is_empty() {
                Key::Desc(node.desc.clone(), node.class.clone())
            } else if draft.role == "textbox" && !node.hint.is_empty() {
                Key::Text(node.hint.clone(), node.class.clone())
            } else if draft.role == "textbox" {
                // A field's text is what is typed into it: only its class (and shared ID) stay.
                Key::Class(format!("{}{}", node.class, node.resource_id))
            } else if !draft.name.is_empty() && !draft.name.starts_with('#') {
                let words = draft.title.unwrap_or_else(|| draft.name.clone());
                Key::Text(words, node.class.clone())
            } else {
                Key::Class(format!("{}{}", node.class, node.resource_id))
            };
            let identity = Identity {
                package: node.package.clone(),
                key,
            };
            Some(ScreenNode {
                role: draft.role,
                name: draft.name,
                value: draft.value,
                secret: node.password,
                states: draft.states,
                bounds: draft.bounds,
                identity,
                package: node.package.clone(),
                busy: draft.busy,
            })
        })
        .collect()
}

/// The system UI's status bar and navigation bar, by the IDs their windows' roots carry (dumps
/// of Android 11 and later show every window, these two among them), and by their shape: the
/// screen's full width, a strip at its top or bottom edge at most an eighth of its height. An
/// app can give its own views the system UI's package and IDs; the shape keeps it from hiding
/// anything but such a strip. A notification that drops down over the app, or the notification
/// shade, is the system UI's too and stays: it is what the person sees and may have to act on.
fn is_system_bar(node: &RawNode, screen: Extent) -> bool {
    let named = node.package == "com.android.systemui"
        && matches!(
            node.resource_id
                .strip_prefix("com.android.systemui:id/")
                .unwrap_or(""),
            "status_bar_container" | "status_bar" | "navigation_bar_frame" | "navigation_bar"
        );
    let Some(b) = node.bounds.filter(|_| named) else {
        return false;
    };
    let (width, height) = (i64::from(screen.width), i64::from(screen.height));
    let (left, top, right, bottom) = (
        i64::from(b.left),
        i64::from(b.top),
        i64::from(b.right),
        i64::from(b.bottom),
    );
    let full_width = left <= 0 && right >= width;
    let strip = bottom - top <= height / 8;
    let at_an_edge = top <= 0 || bottom >= height;
    full_width && strip && at_an_edge
}

/// A kept node before its identity is known.
struct Draft {
    role: &'static str,
    name: String,
    /// The words its identity is kept by when its name was gathered from inside it: a row's
    /// title, without the summary that changes as the row is used.
    title: Option<String>,
    /// `#entry` of its resource ID: the name of a node without words (once a clickable one
    /// has had its chance to take the words inside it).
    id_name: Option<String>,
    value: Option<String>,
    states: Vec<&'static str>,
    bounds: Rect,
    busy: bool,
}

impl Draft {
    /// Words to read (prose or a described image), not something to act on.
    fn is_words(&self) -> bool {
        matches!(self.role, "text" | "img") && !self.busy
    }
}

/// Lets the clickable node at `index` (`kept[index]`, when kept and a `button`) take the words
/// inside it: see the module's documentation.
fn gather(kept: &mut [Option<Draft>], raw: &[RawNode], index: usize) {
    let Some(container) = kept[index].as_ref() else {
        return;
    };
    if container.role != "button" {
        return;
    }
    // The words inside that belong to no control inside it, and those controls.
    let mut loose = Vec::new();
    let mut controls = Vec::new();
    let mut control_end = 0;
    for i in index + 1..raw[index].subtree_end {
        let Some(inner) = kept[i].as_ref() else {
            continue;
        };
        if i < control_end {
            continue;
        }
        if inner.is_words() {
            loose.push(i);
        } else {
            controls.push(i);
            control_end = raw[i].subtree_end;
        }
    }
    let draft_at = |kept: &[Option<Draft>], i: usize| -> String {
        kept[i].as_ref().map(|d| d.name.clone()).unwrap_or_default()
    };
    if !container.name.is_empty() {
        // Words inside that its own name already says are not said again ("Home" in a tab
        // described as "Home").
        let own = container.name.to_lowercase();
        for &i in &loose {
            if own.contains(&draft_at(kept, i).to_lowercase()) {
                kept[i] = None;
            }
        }
        return;
    }
    let mut parts: Vec<String> = Vec::new();
    for &i in &loose {
        let words = draft_at(kept, i);
        if !words.trim().is_empty() && !parts.contains(&words) {
            parts.push(words);
        }
    }
    // The title: the first prose inside, else the first words.
    let title = loose
        .iter()
        .filter_map(|&i| kept[i].as_ref())
        .find(|d| d.role == "text" && !d.name.trim().is_empty())
        .map(|d| d.name.clone())
        .or_else(|| parts.first().cloned());
    let container_bounds = container.bounds;
    let container_states = container.states.clone();
    if let [only] = controls[..]
        && let Some(widget) = kept[only].as_mut()
        && matches!(widget.role, "switch" | "checkbox" | "radio" | "button")
        && !raw[only].clickable
        && within(widget.bounds, container_bounds)
    {
        // One line for the row and the widget its taps reach through it.
        let mut names = Vec::new();
        if !widget.name.is_empty() {
            names.push(widget.name.clone());
        }
        for part in parts {
            if !names.contains(&part) {
                names.push(part);
            }
        }
        widget.title = if widget.name.is_empty() {
            title
        } else {
            Some(widget.name.clone())
        };
        widget.name = join(&names);
        for state in container_states {
            if !widget.states.contains(&state) {
                widget.states.push(state);
            }
        }
        widget
            .states
            .sort_by_key(|s| STATE_ORDER.iter().position(|o| o == s));
        kept[index] = None;
        for i in loose {
            kept[i] = None;
        }
        return;
    }
    if parts.is_empty() {
        return;
    }
    for &i in &controls {
        if let Some(widget) = kept[i].as_mut()
            && matches!(widget.role, "switch" | "checkbox" | "radio")
            && widget.name.is_empty()
        {
            widget.name = title.clone().unwrap_or_default();
        }
    }
    let container = kept[index].as_mut().expect("kept");
    container.name = join(&parts);
    container.title = title;
    for i in loose {
        kept[i] = None;
    }
}

/// Parts of a name, joined and cut to [`MAX_ABSORBED_NAME`] characters.
fn join(parts: &[String]) -> String {
    parts
        .join(PART_SEPARATOR)
        .chars()
        .take(MAX_ABSORBED_NAME)
        .collect()
}

/// Whether `inner` lies within `outer`.
fn within(inner: Rect, outer: Rect) -> bool {
    inner.left >= outer.left
        && inner.top >= outer.top
        && inner.right <= outer.right
        && inner.bottom <= outer.bottom
}

fn draft(node: &RawNode, screen: Extent) -> Option<Draft> {
    if !node.visible {
        return None;
    }
    let bounds = clip(node.bounds?, screen)?;
    let class = simple_class(&node.class);
    let editable = class.contains("EditText") || class.ends_with("AutoCompleteTextView");
    let worded = has_words(&node.text) || has_words(&node.desc) || has_words(&node.hint);
    let interactive = node.clickable
        || node.long_clickable
        || node.checkable
        || node.scrollable
        || node.focused
        || editable;
    let layout_only = is_layout(class) && !worded && !interactive;
    if !(worded || interactive || !node.resource_id.is_empty()) || layout_only {
        return None;
    }
    let role = role(node, class, editable, worded);
    if role == "group" && !interactive {
        // Kept only for its resource ID, with nothing to read or act on.
        return None;
    }
    let id_name = (!node.resource_id.is_empty()).then(|| {
        let entry = node
            .resource_id
            .rsplit_once(":id/")
            .map_or(node.resource_id.as_str(), |(_, entry)| entry);
        format!("#{entry}")
    });
    let (name, value) = match role {
        "textbox" => field_name_and_value(node),
        "img" | "progressbar" | "slider" => (
            first_words(&[&node.desc, &node.hint]),
            (!node.text.is_empty() && role != "img").then(|| node.text.clone()),
        ),
        _ if node.password && !node.text.is_empty() => {
            (Some(tabwire_protocol::REDACTED.to_owned()), None)
        }
        _ => (first_words(&[&node.text, &node.desc, &node.hint]), None),
    };
    let mut states = Vec::new();
    if node.checked {
        states.push("checked");
    }
    if node.selected {
        states.push("selected");
    }
    if !node.enabled {
        states.push("disabled");
    }
    if node.focused {
        states.push("focused");
    }
    if node.scrollable {
        states.push("scrollable");
    }
    let busy =
        role == "progressbar" || is_loading_label(&node.text) || is_loading_label(&node.desc);
    Some(Draft {
        role,
        name: name.unwrap_or_default(),
        title: None,
        id_name,
        value,
        states,
        bounds,
        busy,
    })
}

/// A field's name and value. Its hint names it (else its description), and its text is its
/// value, except when the text is the hint: an empty field reports its hint as its text (on
/// every release: Android fills an empty field's text with its hint for accessibility).
///
/// A dump without a `hint` attribute (uiautomator's first dumper writes none) cannot tell an
/// empty field's hint from a typed value. A field nothing else names, that is not focused and
/// not a password, is then named by its text, as a browser names a field by its placeholder
/// (`textbox "Email or username"`), and shows no value: a value typed into such a field reads
/// as its name (`textbox "ada@example.com"`). A focused one shows its text as its value (it is
/// being typed into). A password's text is never a name: it shows `REDACTED` as its value.
fn field_name_and_value(node: &RawNode) -> (Option<String>, Option<String>) {
    let label = first_words(&[&node.hint, &node.desc]);
    let shows_hint = !node.hint.is_empty() && node.text == node.hint;
    if label.is_none()
        && !node.hint_reported
        && !node.focused
        && !node.password
        && has_words(&node.text)
    {
        return (Some(node.text.clone()), None);
    }
    let typed = (!node.text.is_empty() && !shows_hint).then(|| {
        if node.password {
            tabwire_protocol::REDACTED.to_owned()
        } else {
            node.text.clone()
        }
    });
    (label, typed)
}

fn role(node: &RawNode, class: &str, editable: bool, worded: bool) -> &'static str {
    if editable {
        "textbox"
    } else if class.contains("Switch") || class == "ToggleButton" {
        "switch"
    } else if class == "RadioButton" || class.ends_with("RadioButton") {
        "radio"
    } else if class.contains("CheckBox") || class == "CheckedTextView" {
        "checkbox"
    } else if class.contains("SeekBar") || class.contains("RatingBar") || class == "Slider" {
        "slider"
    } else if class.contains("ProgressBar") || class.contains("ProgressIndicator") {
        "progressbar"
    } else if class.contains("Spinner") {
        "combobox"
    } else if node.checkable {
        "checkbox"
    } else if class.contains("TabView") || class == "Tab" {
        "tab"
    } else if node.clickable || node.long_clickable {
        "button"
    } else if class.contains("WebView") {
        "webview"
    } else if node.scrollable {
        if ["ListView", "RecyclerView", "GridView"]
            .iter()
            .any(|c| class.contains(c))
        {
            "list"
        } else {
            "group"
        }
    } else if class.contains("Image") && has_words(&node.desc) {
        "img"
    } else if !worded {
        "group"
    } else {
        "text"
    }
}

/// `android.widget.Button` → `Button`; `a.b.Outer$Inner` → `Inner`.
fn simple_class(class: &str) -> &str {
    let simple = class.rsplit('.').next().unwrap_or(class);
    simple.rsplit('$').next().unwrap_or(simple)
}

fn is_layout(class: &str) -> bool {
    class.is_empty()
        || class.ends_with("Layout")
        || matches!(
            class,
            "View" | "ViewGroup" | "ViewStub" | "ViewPager" | "ViewAnimator" | "ViewFlipper"
        )
}

/// The first of `candidates` that holds words.
fn first_words(candidates: &[&String]) -> Option<String> {
    candidates
        .iter()
        .find(|c| has_words(c))
        .map(|c| (*c).clone())
}

/// `bounds` clipped to the screen; `None` when nothing of it is left.
fn clip(bounds: RawBounds, screen: Extent) -> Option<Rect> {
    let clamp = |v: i32, max: u32| v.clamp(0, i32::try_from(max).unwrap_or(i32::MAX)) as u32;
    let rect = Rect {
        left: clamp(bounds.left, screen.width),
        top: clamp(bounds.top, screen.height),
        right: clamp(bounds.right, screen.width),
        bottom: clamp(bounds.bottom, screen.height),
    };
    (rect.right > rect.left && rect.bottom > rect.top).then_some(rect)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::hierarchy::parse_dump;
    use tabwire_device_kit::refs::RefTable;

    /// A `<node>` with every attribute a real device writes, `overrides` replacing some
    /// (`text=Login`), ending open (`children` inside) or closed.
    pub(crate) fn node(overrides: &[(&str, &str)], children: &str) -> String {
        let mut attrs: Vec<(&str, String)> = [
            ("index", "0"),
            ("text", ""),
            ("resource-id", ""),
            ("class", "android.view.View"),
            ("package", "com.example.shop"),
            ("content-desc", ""),
            ("checkable", "false"),
            ("checked", "false"),
            ("clickable", "false"),
            ("enabled", "true"),
            ("focusable", "false"),
            ("focused", "false"),
            ("scrollable", "false"),
            ("long-clickable", "false"),
            ("password", "false"),
            ("selected", "false"),
            ("bounds", "[0,0][1080,2400]"),
        ]
        .iter()
        .map(|(k, v)| (*k, (*v).to_owned()))
        .collect();
        for (key, value) in overrides {
            match attrs.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = escape(value),
                None => attrs.push((key, escape(value))),
            }
        }
        let attrs: String = attrs.iter().map(|(k, v)| format!(" {k}=\"{v}\"")).collect();
        if children.is_empty() {
            format!("<node{attrs} />")
        } else {
            format!("<node{attrs}>{children}</node>")
        }
    }

    fn escape(value: &str) -> String {
        value
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    }

    /// A whole dump as `exec-out uiautomator dump /dev/tty` prints it.
    pub(crate) fn dump(rotation: u8, body: &str) -> String {
        format!(
            "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"{rotation}\">{body}</hierarchy>UI hierchary dumped to: /dev/tty\n"
        )
    }

    /// A login screen: a layout root, a title, two fields (one a password), a check box, a
    /// switch, a React Native style button (clickable group around a text), an icon button
    /// with only an ID, an image, a list, a zero-size node and one off screen.
    pub(crate) fn login_screen(password_text: &str, email_text: &str) -> String {
        let frame = |children: &str| {
            node(
                &[
                    ("class", "android.widget.FrameLayout"),
                    ("resource-id", "android:id/content"),
                ],
                children,
            )
        };
        let body = [
            node(
                &[
                    ("class", "android.widget.TextView"),
                    ("text", "Welcome back"),
                    ("bounds", "[40,100][1040,180]"),
                ],
                "",
            ),
            node(
                &[
                    ("class", "android.widget.EditText"),
                    ("resource-id", "com.example.shop:id/email"),
                    ("text", email_text),
                    ("hint", "Email"),
                    ("clickable", "true"),
                    ("focusable", "true"),
                    ("focused", "true"),
                    ("bounds", "[40,200][1040,300]"),
                ],
                "",
            ),
            node(
                &[
                    ("class", "android.widget.EditText"),
                    ("resource-id", "com.example.shop:id/password"),
                    ("text", password_text),
                    ("hint", "Password"),
                    ("password", "true"),
                    ("clickable", "true"),
                    ("bounds", "[40,320][1040,420]"),
                ],
                "",
            ),
            node(
                &[
                    ("class", "android.widget.CheckBox"),
                    ("text", "Remember me"),
                    ("checkable", "true"),
                    ("checked", "true"),
                    ("clickable", "true"),
                    ("bounds", "[40,440][540,500]"),
                ],
                "",
            ),
            node(
                &[
                    ("class", "android.widget.Switch"),
                    ("text", "Dark mode"),
                    ("checkable", "true"),
                    ("clickable", "true"),
                    ("enabled", "false"),
                    ("bounds", "[540,440][1040,500]"),
                ],
                "",
            ),
            node(
                &[
                    ("class", "android.view.ViewGroup"),
                    ("clickable", "true"),
                    ("bounds", "[40,520][1040,620]"),
                ],
                &node(
                    &[
                        ("class", "android.widget.TextView"),
                        ("text", "LOG IN"),
                        ("bounds", "[400,540][680,600]"),
                    ],
                    "",
                ),
            ),
            node(
                &[
                    ("class", "android.widget.ImageButton"),
                    ("resource-id", "com.example.shop:id/settings"),
                    ("clickable", "true"),
                    ("bounds", "[980,20][1060,90]"),
                ],
                "",
            ),
            node(
                &[
                    ("class", "android.widget.ImageView"),
                    ("content-desc", "Shop logo"),
                    ("bounds", "[40,20][200,90]"),
                ],
                "",
            ),
            node(
                &[
                    ("class", "androidx.recyclerview.widget.RecyclerView"),
                    ("resource-id", "com.example.shop:id/offers"),
                    ("scrollable", "true"),
                    ("bounds", "[0,700][1080,2400]"),
                ],
                &[
                    node(
                        &[
                            ("class", "android.widget.TextView"),
                            ("text", "Offer"),
                            ("resource-id", "com.example.shop:id/title"),
                            ("bounds", "[0,700][1080,800]"),
                        ],
                        "",
                    ),
                    node(
                        &[
                            ("class", "android.widget.TextView"),
                            ("text", "Offer"),
                            ("resource-id", "com.example.shop:id/title"),
                            ("bounds", "[0,800][1080,900]"),
                        ],
                        "",
                    ),
                    node(
                        &[
                            ("class", "android.widget.TextView"),
                            ("text", "Below the screen"),
                            ("bounds", "[0,2400][1080,2500]"),
                        ],
                        "",
                    ),
                ]
                .concat(),
            ),
            node(
                &[
                    ("class", "android.widget.Button"),
                    ("text", "Zero"),
                    ("clickable", "true"),
                    ("bounds", "[10,10][10,50]"),
                ],
                "",
            ),
        ]
        .concat();
        dump(
            0,
            &frame(&node(&[("class", "android.widget.LinearLayout")], &body)),
        )
    }

    pub(crate) const PHONE: Extent = Extent {
        width: 1080,
        height: 2400,
    };

    fn lines(nodes: &[ScreenNode]) -> Vec<String> {
        nodes
            .iter()
            .map(|n| {
                let mut line = format!("{} {:?}", n.role, n.name);
                if let Some(value) = &n.value {
                    line.push_str(&format!(" = {value:?}"));
                }
                for state in &n.states {
                    line.push_str(&format!(" [{state}]"));
                }
                line
            })
            .collect()
    }

    #[test]
    fn a_login_screen_keeps_what_an_agent_can_read_or_use() {
        let h = parse_dump(&login_screen("hunter2", "")).unwrap();
        let nodes = screen_nodes(&h, PHONE);
        assert_eq!(
            lines(&nodes),
            [
                r#"text "Welcome back""#,
                r#"textbox "Email" [focused]"#,
                r#"textbox "Password" = "••••""#,
                r#"checkbox "Remember me" [checked]"#,
                r#"switch "Dark mode" [disabled]"#,
                r#"button "LOG IN""#,
                r##"button "#settings""##,
                r#"img "Shop logo""#,
                r##"list "#offers" [scrollable]"##,
                r#"text "Offer""#,
                r#"text "Offer""#,
            ]
        );
        assert!(
            !format!("{nodes:?}").contains("hunter2"),
            "the password never leaves"
        );
        assert_eq!(
            nodes[5].bounds,
            Rect {
                left: 40,
                top: 520,
                right: 1040,
                bottom: 620
            }
        );
        assert_eq!(
            nodes[1].identity.key,
            Key::Id("com.example.shop:id/email".into())
        );
        assert_eq!(
            nodes[5].identity.key,
            Key::Text("LOG IN".into(), "android.view.ViewGroup".into())
        );
        assert_eq!(
            nodes[7].identity.key,
            Key::Desc("Shop logo".into(), "android.widget.ImageView".into())
        );
        // The two offers share an ID, so neither is identified by it.
        assert_eq!(nodes[9].identity, nodes[10].identity);
        assert!(nodes.iter().all(|n| !n.busy));
    }

    #[test]
    fn a_typed_field_shows_its_value_and_keeps_its_identity() {
        let empty = screen_nodes(&parse_dump(&login_screen("", "")).unwrap(), PHONE);
        let typed = screen_nodes(
            &parse_dump(&login_screen("", "ann@example.com")).unwrap(),
            PHONE,
        );
        assert_eq!(typed[1].value.as_deref(), Some("ann@example.com"));
        assert_eq!(empty[1].value, None);
        assert_eq!(empty[2].value, None, "an empty password shows no value");
        let mut refs = RefTable::default();
        let a = refs.assign(empty.iter().map(|n| &n.identity));
        let b = refs.assign(typed.iter().map(|n| &n.identity));
        assert_eq!(a, b, "typing keeps every ref");
    }

    #[test]
    fn an_empty_field_reporting_its_hint_as_text_has_no_value() {
        let xml = dump(
            0,
            &node(
                &[
                    ("class", "android.widget.EditText"),
                    ("text", "Search"),
                    ("hint", "Search"),
                    ("bounds", "[0,0][100,100]"),
                ],
                "",
            ),
        );
        let nodes = screen_nodes(&parse_dump(&xml).unwrap(), PHONE);
        assert_eq!(lines(&nodes), [r#"textbox "Search""#]);
    }

    #[test]
    fn refs_are_stable_grow_only_and_ambiguous_when_shared() {
        let mut refs = RefTable::default();
        let nodes = screen_nodes(&parse_dump(&login_screen("", "")).unwrap(), PHONE);
        let first = refs.assign(nodes.iter().map(|n| &n.identity));
        let numbers: Vec<u32> = first.iter().map(|a| a.index).collect();
        assert_eq!(numbers, (1..=11).collect::<Vec<_>>());
        let ambiguous: Vec<bool> = first.iter().map(|a| a.ambiguous).collect();
        assert_eq!(ambiguous.iter().filter(|a| **a).count(), 2, "{ambiguous:?}");
        assert!(first[9].ambiguous && first[10].ambiguous);

        // Another screen, then the first again: the same refs; the new nodes got new ones.
        let other = dump(
            0,
            &node(
                &[
                    ("class", "android.widget.Button"),
                    ("text", "Continue"),
                    ("clickable", "true"),
                    ("bounds", "[0,0][100,100]"),
                ],
                "",
            ),
        );
        let other_nodes = screen_nodes(&parse_dump(&other).unwrap(), PHONE);
        assert_eq!(
            refs.assign(other_nodes.iter().map(|n| &n.identity))[0].index,
            12
        );
        assert_eq!(refs.assign(nodes.iter().map(|n| &n.identity)), first);
    }

    #[test]
    fn a_dialog_off_the_origin_and_a_rotated_screen_keep_their_bounds() {
        let dialog = dump(
            1,
            &node(
                &[
                    ("class", "android.widget.FrameLayout"),
                    ("package", "com.android.permissioncontroller"),
                    ("bounds", "[600,200][1800,900]"),
                ],
                &node(
                    &[
                        ("class", "android.widget.Button"),
                        ("text", "Allow"),
                        ("clickable", "true"),
                        ("package", "com.android.permissioncontroller"),
                        ("bounds", "[1500,800][1780,880]"),
                    ],
                    "",
                ),
            ),
        );
        let h = parse_dump(&dialog).unwrap();
        let nodes = screen_nodes(&h, Extent::rotated(PHONE, h.rotation));
        assert_eq!(lines(&nodes), [r#"button "Allow""#]);
        assert_eq!(nodes[0].bounds.right, 1780, "landscape is 2400 wide");
        assert_eq!(nodes[0].package, "com.android.permissioncontroller");
    }

    #[test]
    fn busy_indicators_are_marked() {
        let xml = dump(
            0,
            &[
                node(
                    &[
                        ("class", "android.widget.ProgressBar"),
                        ("bounds", "[0,0][100,100]"),
                        ("resource-id", "com.x:id/spinner"),
                    ],
                    "",
                ),
                node(
                    &[
                        ("class", "android.widget.TextView"),
                        ("text", "Loading…"),
                        ("bounds", "[0,100][100,200]"),
                    ],
                    "",
                ),
                node(
                    &[
                        ("class", "android.widget.TextView"),
                        ("text", "Loading docks are on the left side of the building"),
                        ("bounds", "[0,200][100,300]"),
                    ],
                    "",
                ),
            ]
            .concat(),
        );
        let nodes = screen_nodes(&parse_dump(&xml).unwrap(), PHONE);
        let busy: Vec<bool> = nodes.iter().map(|n| n.busy).collect();
        assert_eq!(busy, [true, true, false]);
    }

    /// A fixture screen of the end-to-end tests (`tests/fixtures/android/`), parsed.
    fn fixture(name: &str) -> Hierarchy {
        let path = format!(
            "{}/../../tests/fixtures/android/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        let xml = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        parse_dump(&xml).unwrap()
    }

    #[test]
    fn the_system_bars_are_left_out_and_a_dropped_down_notification_stays() {
        let plain = lines(&screen_nodes(&fixture("login.xml"), PHONE));
        let with_bars = lines(&screen_nodes(&fixture("login_system_bars.xml"), PHONE));
        assert_eq!(
            with_bars[..plain.len()],
            plain[..],
            "the app's lines are the same"
        );
        let extra: Vec<&String> = with_bars[plain.len()..].iter().collect();
        assert_eq!(extra.len(), 1, "{extra:#?}");
        assert!(
            extra[0].contains("Anna: are you on your way?"),
            "{extra:#?}"
        );
        // An app's views dressed as the status bar, over half the screen: not a bar, shown.
        let spoofed = std::fs::read_to_string(format!(
            "{}/../../tests/fixtures/android/login_system_bars.xml",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
        .replace(
            r#"bounds="[0,0][1080,128]""#,
            r#"bounds="[0,0][1080,1400]""#,
        );
        let shown = lines(&screen_nodes(&parse_dump(&spoofed).unwrap(), PHONE));
        assert!(shown.iter().any(|line| line.contains("9:41")), "{shown:#?}");
        for bar in ["9:41", "Battery", "Wifi", "Overview", "Back", "Home"] {
            assert!(
                with_bars.iter().all(|line| !line.contains(bar)),
                "{bar} in {with_bars:#?}"
            );
        }
    }

    /// A clickable row around `inside`.
    fn row(inside: &str) -> String {
        node(
            &[
                ("class", "android.widget.LinearLayout"),
                ("clickable", "true"),
                ("bounds", "[0,0][1080,200]"),
            ],
            inside,
        )
    }

    fn label(text: &str, top: u32) -> String {
        node(
            &[
                ("class", "android.widget.TextView"),
                ("text", text),
                ("bounds", &format!("[40,{top}][800,{}]", top + 60)),
            ],
            "",
        )
    }

    fn switch(extra: &[(&str, &str)]) -> String {
        let mut attrs = vec![
            ("class", "android.widget.Switch"),
            ("resource-id", "android:id/switch_widget"),
            ("checkable", "true"),
            ("bounds", "[880,60][1040,140]"),
        ];
        attrs.extend_from_slice(extra);
        node(&attrs, "")
    }

    #[test]
    fn settings_rows_are_one_line_each_named_by_their_title_and_summary() {
        let nodes = screen_nodes(&fixture("settings_network.xml"), PHONE);
        assert_eq!(
            lines(&nodes),
            [
                r#"button "Navigate up""#,
                r#"text "Network & internet""#,
                r##"list "#recycler_view" [scrollable]"##,
                r#"button "Internet | HomeNet""#,
                r#"button "Calls & SMS | Acme Mobile""#,
                r#"switch "Airplane mode""#,
                r#"button "Hotspot & tethering | Off""#,
                r#"button "Data Saver | Off""#,
                "switch \"Wi\u{2011}Fi calling\" [checked]",
                r#"button "VPN | None""#,
                r#"button "Private DNS | Automatic""#,
            ]
        );
        // The switch's line is the switch (its taps reach the row), kept by the row's title.
        let airplane = &nodes[5];
        assert_eq!(
            (airplane.bounds.left, airplane.bounds.top),
            (880, 810),
            "{airplane:?}"
        );
        assert_eq!(
            airplane.identity.key,
            Key::Text("Airplane mode".into(), "android.widget.Switch".into())
        );
        // A row is kept by its title: its summary changes as it is used.
        assert_eq!(
            nodes[6].identity.key,
            Key::Text(
                "Hotspot & tethering".into(),
                "android.widget.LinearLayout".into()
            )
        );
        let mut refs = RefTable::default();
        let ambiguous = refs.assign(nodes.iter().map(|n| &n.identity));
        assert!(ambiguous.iter().all(|a| !a.ambiguous), "{ambiguous:?}");
    }

    #[test]
    fn a_row_switched_on_keeps_its_refs() {
        let off = dump(
            0,
            &row(&[label("Wi-Fi", 20), label("Off", 100), switch(&[])].concat()),
        );
        let on = dump(
            0,
            &row(&[
                label("Wi-Fi", 20),
                label("HomeNet", 100),
                switch(&[("checked", "true")]),
            ]
            .concat()),
        );
        let off = screen_nodes(&parse_dump(&off).unwrap(), PHONE);
        let on = screen_nodes(&parse_dump(&on).unwrap(), PHONE);
        assert_eq!(lines(&off), [r#"switch "Wi-Fi | Off""#]);
        assert_eq!(lines(&on), [r#"switch "Wi-Fi | HomeNet" [checked]"#]);
        let mut refs = RefTable::default();
        assert_eq!(
            refs.assign(off.iter().map(|n| &n.identity)),
            refs.assign(on.iter().map(|n| &n.identity))
        );
    }

    #[test]
    fn a_widget_with_its_own_target_keeps_its_line_and_takes_the_rows_title() {
        // A switch that is clickable itself toggles; the row opens the details.
        let xml = dump(
            0,
            &row(&[
                label("Wi-Fi", 20),
                label("HomeNet", 100),
                switch(&[("clickable", "true"), ("checked", "true")]),
            ]
            .concat()),
        );
        let nodes = screen_nodes(&parse_dump(&xml).unwrap(), PHONE);
        assert_eq!(
            lines(&nodes),
            [r#"button "Wi-Fi | HomeNet""#, r#"switch "Wi-Fi" [checked]"#]
        );
        // A described widget keeps its own name, and the row's words it repeats are not said
        // twice; a disabled row's widget is disabled.
        let xml = dump(
            0,
            &node(
                &[
                    ("class", "android.widget.LinearLayout"),
                    ("clickable", "true"),
                    ("enabled", "false"),
                    ("bounds", "[0,0][1080,200]"),
                ],
                &[
                    label("Wi-Fi", 20),
                    switch(&[("content-desc", "Wi-Fi"), ("checked", "true")]),
                ]
                .concat(),
            ),
        );
        let nodes = screen_nodes(&parse_dump(&xml).unwrap(), PHONE);
        assert_eq!(lines(&nodes), [r#"switch "Wi-Fi" [checked] [disabled]"#]);
    }

    #[test]
    fn rows_around_a_button_are_named_by_their_words_and_bare_icons_make_no_line() {
        let nodes = screen_nodes(&fixture("products.xml"), PHONE);
        let shown = lines(&nodes);
        assert_eq!(
            shown[5..9],
            [
                r#"button "Trail Runner 2 | $89.00""#,
                r#"button "Add to cart""#,
                r#"button "Canvas Tote | $24.50""#,
                r#"button "Add to cart""#,
            ]
        );
        assert!(
            !shown.iter().any(|l| l.contains("#product_")),
            "no line is named by an ID when words or nothing would do: {shown:#?}"
        );
        // The bottom bar's tabs are described; the labels under them say nothing more.
        assert_eq!(
            shown[shown.len() - 4..],
            [
                r#"button "Home" [selected]"#,
                r#"button "Search""#,
                r#"button "Cart, 2 items""#,
                r#"button "Profile""#,
            ]
        );
        let remove = lines(&screen_nodes(&fixture("remove_dialog.xml"), PHONE));
        assert!(
            !remove.iter().any(|l| l.contains('#')),
            "layout kept for its ID only: {remove:#?}"
        );
    }

    #[test]
    fn an_icon_glyph_is_no_name_and_a_description_names_its_node() {
        let nodes = screen_nodes(&fixture("chat.xml"), PHONE);
        let shown = lines(&nodes);
        assert_eq!(shown[0], r#"button "Close""#);
        assert_eq!(shown[shown.len() - 1], r#"button "Send""#);
        // Each bubble and the long-clickable text in it are one line.
        assert_eq!(shown[4], r#"button "Tom & Jerry <3""#);
        assert!(!shown.iter().any(|l| l.contains("#message_")), "{shown:#?}");
        // A glyph with no description is nothing to read; with words beside it, it stays.
        let xml = dump(
            0,
            &[
                label("\u{e5cd}", 0),
                label("\u{e5cd} Close", 100),
                node(
                    &[
                        ("class", "android.widget.TextView"),
                        ("text", "\u{f0001}"),
                        ("clickable", "true"),
                        ("resource-id", "com.x:id/more"),
                        ("bounds", "[0,200][100,300]"),
                    ],
                    "",
                ),
            ]
            .concat(),
        );
        let nodes = screen_nodes(&parse_dump(&xml).unwrap(), PHONE);
        assert_eq!(
            lines(&nodes),
            [r#"text "\u{e5cd} Close""#, r##"button "#more""##]
        );
    }

    #[test]
    fn a_field_without_a_hint_in_the_dump_is_named_by_its_text() {
        let nodes = screen_nodes(&fixture("login.xml"), PHONE);
        let shown = lines(&nodes);
        assert!(
            shown.contains(&r#"textbox "Email or username""#.to_owned()),
            "{shown:#?}"
        );
        // A password's text is never its name.
        assert!(
            shown.contains(&r##"textbox "#password" = "••••""##.to_owned()),
            "{shown:#?}"
        );
        let field = |extra: &[(&str, &str)]| {
            let mut attrs = vec![
                ("class", "android.widget.EditText"),
                ("resource-id", "com.x:id/user"),
                ("text", "Email or username"),
                ("bounds", "[0,0][1080,100]"),
            ];
            attrs.extend_from_slice(extra);
            let nodes = screen_nodes(&parse_dump(&dump(0, &node(&attrs, ""))).unwrap(), PHONE);
            lines(&nodes).concat()
        };
        // Being typed into: the text is its value.
        assert_eq!(
            field(&[("focused", "true")]),
            r##"textbox "#user" = "Email or username" [focused]"##
        );
        // A dump that reports hints: an empty hint means the text is a value.
        assert_eq!(
            field(&[("hint", "")]),
            r##"textbox "#user" = "Email or username""##
        );
        assert_eq!(
            field(&[("hint", "Email or username")]),
            r#"textbox "Email or username""#
        );
        // Named otherwise: the text is its value.
        assert_eq!(
            field(&[("content-desc", "Account")]),
            r#"textbox "Account" = "Email or username""#
        );
    }

    #[test]
    fn every_actionable_element_of_every_fixture_keeps_a_line_inside_it() {
        let dir = format!(
            "{}/../../tests/fixtures/android",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut screens: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".xml"))
            .collect();
        screens.sort();
        assert!(screens.len() >= 10, "{screens:?}");
        for screen in screens {
            let h = fixture(&screen);
            let nodes = screen_nodes(&h, PHONE);
            // The system bars are left out on purpose (press_button reaches back and home).
            let mut in_bar = vec![false; h.nodes.len()];
            for (index, raw) in h.nodes.iter().enumerate() {
                if is_system_bar(raw, PHONE) {
                    in_bar[index..raw.subtree_end.max(index + 1)].fill(true);
                }
            }
            for (raw, _) in h.nodes.iter().zip(&in_bar).filter(|(_, bar)| !**bar) {
                let actionable = raw.clickable
                    || raw.checkable
                    || raw.scrollable
                    || raw.class.ends_with("EditText");
                let Some(bounds) = raw.bounds.and_then(|b| clip(b, PHONE)) else {
                    continue;
                };
                if !actionable || !raw.visible {
                    continue;
                }
                assert!(
                    nodes.iter().any(|n| within(n.bounds, bounds)),
                    "{screen}: {} {} {:?} has no line",
                    raw.class,
                    raw.resource_id,
                    raw.text
                );
            }
            assert!(
                nodes.iter().all(|n| !n.name.is_empty()),
                "{screen}: a line without a name: {:#?}",
                lines(&nodes)
            );
        }
    }

    #[test]
    fn invisible_nodes_are_dropped() {
        let xml = dump(
            0,
            &node(
                &[
                    ("class", "android.widget.Button"),
                    ("text", "Hidden"),
                    ("visible-to-user", "false"),
                    ("bounds", "[0,0][100,100]"),
                ],
                "",
            ),
        );
        assert!(screen_nodes(&parse_dump(&xml).unwrap(), PHONE).is_empty());
    }
}
