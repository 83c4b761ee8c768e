//! From a dump's raw nodes to the nodes an observation shows (issue 15, "Observations"): the
//! kept nodes in pre-order, each with a role mapped from its class, a name, a value, states,
//! its bounds on the screen and the identity its ref is kept by.
//!
//! A node is kept when it has text, a content description, a resource ID or a hint, or is
//! clickable, checkable, scrollable, focused or editable. Pure layout is pruned: a container
//! of a layout class (`FrameLayout`, `LinearLayout`, `ViewGroup`, …) kept only for its
//! resource ID says nothing an agent can use. A clickable node with no words of its own (a
//! React Native button is a clickable `ViewGroup` around a `TextView`) is named by the
//! texts inside it, and those texts are not shown again, unless something else inside it can
//! be acted on. Nodes of zero size, or entirely off the screen, are dropped (their children
//! are still considered).

use tabwire_protocol::devices::Rect;

use crate::hierarchy::{Hierarchy, RawBounds, RawNode};

/// The longest name taken from the texts inside a clickable node.
const MAX_ABSORBED_NAME: usize = 150;

/// What keeps a node's ref from one dump to the next: a unique resource ID, else its content
/// description, else its text and class (a field's hint instead of its text, which changes as
/// it is typed into), else only its class.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Identity {
    /// A resource ID no other kept node of the dump has.
    Id(String),
    /// The content description.
    Desc(String),
    /// The text (a field's hint) and the class.
    Text(String, String),
    /// Nothing but the class, and the resource ID other nodes share.
    Class(String),
}

/// One node an observation can show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenNode {
    /// `button`, `textbox`, `checkbox`, `switch`, `radio`, `slider`, `progressbar`,
    /// `combobox`, `tab`, `list`, `group`, `img`, `webview`, or `text` (prose, rendered as its
    /// quoted words).
    pub role: &'static str,
    /// The words it is known by.
    pub name: String,
    /// A field's contents ([`tabwire_protocol::REDACTED`] for a password), a slider's value.
    pub value: Option<String>,
    /// A password field: its value is never shown.
    pub secret: bool,
    /// `checked`, `selected`, `disabled`, `focused`, `scrollable`, in that order.
    pub states: Vec<&'static str>,
    /// Its bounds, clipped to the screen.
    pub bounds: Rect,
    /// What its ref is kept by.
    pub identity: Identity,
    /// Its app.
    pub package: String,
    /// A progress bar or a loading label: the screen is not settled while one shows.
    pub busy: bool,
}

/// The screen's size in the orientation the dump was taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl Extent {
    /// `natural` (portrait for phones) turned by `rotation` quarter turns.
    pub fn rotated(natural: Extent, rotation: u8) -> Extent {
        if rotation % 2 == 1 {
            Extent {
                width: natural.height,
                height: natural.width,
            }
        } else {
            natural
        }
    }
}

/// The kept nodes of `hierarchy`, in pre-order, clipped to `screen` (in the dump's rotation).
pub fn screen_nodes(hierarchy: &Hierarchy, screen: Extent) -> Vec<ScreenNode> {
    let raw = &hierarchy.nodes;
    // First pass: each node's role and own name, or None when it is not kept.
    let mut kept: Vec<Option<Draft>> = raw.iter().map(|node| draft(node, screen)).collect();
    // Second pass: clickable nodes without words take the words inside them.
    for index in 0..raw.len() {
        let Some(node) = kept[index].as_ref() else {
            continue;
        };
        if node.role != "button" || !node.name.is_empty() {
            continue;
        }
        let inside = index + 1..raw[index].subtree_end;
        let kept_inside: Vec<usize> = inside.filter(|&i| kept[i].is_some()).collect();
        let only_words = kept_inside.iter().all(|&i| {
            let d = kept[i].as_ref().expect("kept");
            matches!(d.role, "text" | "img") && !d.busy
        });
        if kept_inside.is_empty() || !only_words {
            continue;
        }
        let words: Vec<String> = kept_inside
            .iter()
            .map(|&i| kept[i].as_ref().expect("kept").name.clone())
            .filter(|w| !w.trim().is_empty())
            .collect();
        if words.is_empty() {
            continue;
        }
        let name: String = words.join(" ").chars().take(MAX_ABSORBED_NAME).collect();
        kept[index].as_mut().expect("kept").name = name;
        for i in kept_inside {
            kept[i] = None;
        }
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
            let identity = if id_counts.get(node.resource_id.as_str()) == Some(&1) {
                Identity::Id(node.resource_id.clone())
            } else if !node.desc.is_empty() {
                Identity::Desc(node.desc.clone())
            } else if draft.role == "textbox" && !node.hint.is_empty() {
                Identity::Text(node.hint.clone(), node.class.clone())
            } else if draft.role == "textbox" {
                // A field's text is what is typed into it: only its class (and shared ID) stay.
                Identity::Class(format!("{}{}", node.class, node.resource_id))
            } else if !draft.name.is_empty() && !draft.name.starts_with('#') {
                Identity::Text(draft.name.clone(), node.class.clone())
            } else {
                Identity::Class(format!("{}{}", node.class, node.resource_id))
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

/// A kept node before its identity is known.
struct Draft {
    role: &'static str,
    name: String,
    /// `#entry` of its resource ID: the name of a node without words (once a clickable one
    /// has had its chance to take the words inside it).
    id_name: Option<String>,
    value: Option<String>,
    states: Vec<&'static str>,
    bounds: Rect,
    busy: bool,
}

fn draft(node: &RawNode, screen: Extent) -> Option<Draft> {
    if !node.visible {
        return None;
    }
    let bounds = clip(node.bounds?, screen)?;
    let class = simple_class(&node.class);
    let editable = class.contains("EditText") || class.ends_with("AutoCompleteTextView");
    let has_words = !node.text.is_empty() || !node.desc.is_empty() || !node.hint.is_empty();
    let interactive = node.clickable
        || node.long_clickable
        || node.checkable
        || node.scrollable
        || node.focused
        || editable;
    let layout_only = is_layout(class) && !has_words && !interactive;
    if !(has_words || interactive || !node.resource_id.is_empty()) || layout_only {
        return None;
    }
    let role = role(node, class, editable);
    let id_name = (!node.resource_id.is_empty()).then(|| {
        let entry = node
            .resource_id
            .rsplit_once(":id/")
            .map_or(node.resource_id.as_str(), |(_, entry)| entry);
        format!("#{entry}")
    });
    let (name, value) = match role {
        "textbox" => {
            // Before API 26 an empty field reports its hint as its text.
            let typed = (!node.text.is_empty() && node.text != node.hint).then(|| {
                if node.password {
                    tabwire_protocol::REDACTED.to_owned()
                } else {
                    node.text.clone()
                }
            });
            (first_non_empty(&[&node.hint, &node.desc]), typed)
        }
        "img" | "progressbar" | "slider" => (
            first_non_empty(&[&node.desc, &node.hint]),
            (!node.text.is_empty() && role != "img").then(|| node.text.clone()),
        ),
        _ if node.password && !node.text.is_empty() => {
            (Some(tabwire_protocol::REDACTED.to_owned()), None)
        }
        _ => (first_non_empty(&[&node.text, &node.desc, &node.hint]), None),
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
        id_name,
        value,
        states,
        bounds,
        busy,
    })
}

fn role(node: &RawNode, class: &str, editable: bool) -> &'static str {
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
    } else if class.contains("Image") && !node.desc.is_empty() {
        "img"
    } else if node.text.is_empty() && node.desc.is_empty() && node.hint.is_empty() {
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

fn first_non_empty(candidates: &[&String]) -> Option<String> {
    candidates
        .iter()
        .find(|c| !c.trim().is_empty())
        .map(|c| (*c).clone())
}

/// "Loading…", "Loading...", "Please wait": short labels that say the screen is not ready.
fn is_loading_label(text: &str) -> bool {
    let lower = text.trim().to_lowercase();
    lower.chars().count() <= 40
        && (lower.starts_with("loading") || lower.starts_with("please wait"))
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
    use crate::refs::RefTable;

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
            nodes[1].identity,
            Identity::Id("com.example.shop:id/email".into())
        );
        assert_eq!(
            nodes[5].identity,
            Identity::Text("LOG IN".into(), "android.view.ViewGroup".into())
        );
        assert_eq!(nodes[7].identity, Identity::Desc("Shop logo".into()));
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
        let a = refs.assign(&empty);
        let b = refs.assign(&typed);
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
        let first = refs.assign(&nodes);
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
        assert_eq!(refs.assign(&other_nodes)[0].index, 12);
        assert_eq!(refs.assign(&nodes), first);
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

    #[test]
    fn a_clickable_container_with_controls_inside_keeps_them() {
        let xml = dump(
            0,
            &node(
                &[
                    ("class", "android.widget.LinearLayout"),
                    ("clickable", "true"),
                ],
                &[
                    node(
                        &[
                            ("class", "android.widget.TextView"),
                            ("text", "Wi-Fi"),
                            ("bounds", "[0,0][500,100]"),
                        ],
                        "",
                    ),
                    node(
                        &[
                            ("class", "android.widget.Switch"),
                            ("checkable", "true"),
                            ("checked", "true"),
                            ("content-desc", "Wi-Fi"),
                            ("bounds", "[500,0][600,100]"),
                        ],
                        "",
                    ),
                ]
                .concat(),
            ),
        );
        let nodes = screen_nodes(&parse_dump(&xml).unwrap(), PHONE);
        assert_eq!(
            lines(&nodes),
            [
                r#"button """#,
                r#"text "Wi-Fi""#,
                r#"switch "Wi-Fi" [checked]"#
            ]
        );
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
