//! `uiautomator dump` output: the XML of the focused window's UI hierarchy, read with a real
//! XML parser, and the failures the tool reports while exiting 0.
//!
//! `uiautomator dump /dev/tty` through `exec-out` prints the XML and then the trailer
//! `UI hierchary dumped to: /dev/tty` (sic) on the same stream. When the screen never goes
//! idle, no window has a root, or another UI automation client holds the device, it prints an
//! error instead and still exits 0; an `exec-out` cut short by a lost device just ends. Each of
//! these is a [`DumpProblem`], never an empty screen.
//!
//! Every attribute is optional: the platform's dumper and androidx's write different sets
//! (`hint` from API 26, `visible-to-user` only from androidx), and a missing one takes its
//! neutral value.

/// Why a dump is not a hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DumpProblem {
    /// `ERROR: could not get idle state.`: something kept animating for uiautomator's ten
    /// seconds.
    NotIdle,
    /// `ERROR: null root node returned by UiTestAutomationBridge.`: no window had a root (a
    /// transition, the screen off), or the hierarchy held no node.
    NullRoot,
    /// `UiAutomationService … already registered!`: another automation tool (Appium's
    /// UiAutomator2 server, a second dump) holds the device.
    AnotherAutomation,
    /// Nothing was printed.
    Empty,
    /// The XML starts but never ends: the stream was cut (device lost, killed dump).
    Truncated,
    /// Old Androids' serializer refuses characters outside the Basic Multilingual Plane
    /// (emoji) and fails the whole dump.
    Encoding(String),
    /// Something else was printed, or the XML is malformed; the text says what.
    Unreadable(String),
}

impl DumpProblem {
    /// Whether dumping again may help.
    pub fn retryable(&self) -> bool {
        !matches!(self, DumpProblem::Encoding(_))
    }

    /// What happened and what to do, for the agent.
    pub fn advice(&self) -> String {
        match self {
            DumpProblem::NotIdle => "the screen never went idle (uiautomator waits for animations \
                to stop): wait for the animation or video to end, or pause it, and observe again"
                .into(),
            DumpProblem::NullRoot => "no window had content to read (the screen may be off, \
                locked or between two apps): wake or unlock the device, or wait a moment and \
                observe again"
                .into(),
            DumpProblem::AnotherAutomation => "another UI automation tool holds the device \
                (Appium's UiAutomator2 server, another uiautomator dump, an accessibility test \
                runner): stop it and observe again"
                .into(),
            DumpProblem::Empty => "uiautomator printed nothing: the device may be busy or going \
                away; observe again"
                .into(),
            DumpProblem::Truncated => "the hierarchy dump was cut off (the device may have \
                disconnected or the dump was killed); observe again"
                .into(),
            DumpProblem::Encoding(what) => format!(
                "this Android version's uiautomator cannot write the screen's characters \
                 ({what}); a screenshot still shows the screen"
            ),
            DumpProblem::Unreadable(what) => {
                format!("uiautomator's output was not a hierarchy ({what}); observe again")
            }
        }
    }
}

/// A node's bounds as written, before clipping to the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawBounds {
    /// Left edge.
    pub left: i32,
    /// Top edge.
    pub top: i32,
    /// Right edge.
    pub right: i32,
    /// Bottom edge.
    pub bottom: i32,
}

/// One `<node>` of the dump, its attributes as written (missing text is empty, missing flags
/// false, except `enabled` and `visible-to-user`, which are true unless written false).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawNode {
    /// `class`: `android.widget.Button`.
    pub class: String,
    /// `package`.
    pub package: String,
    /// `resource-id`: `com.example:id/login`.
    pub resource_id: String,
    /// `text`.
    pub text: String,
    /// `content-desc`.
    pub desc: String,
    /// `hint` (API 26+).
    pub hint: String,
    /// Whether the dump has a `hint` attribute at all: uiautomator's first dumper writes none,
    /// and then an empty field's `text` may be its hint.
    pub hint_reported: bool,
    /// `checkable`.
    pub checkable: bool,
    /// `checked`.
    pub checked: bool,
    /// `clickable`.
    pub clickable: bool,
    /// `long-clickable`.
    pub long_clickable: bool,
    /// `enabled` (true when absent).
    pub enabled: bool,
    /// `focused`.
    pub focused: bool,
    /// `scrollable`.
    pub scrollable: bool,
    /// `password`.
    pub password: bool,
    /// `selected`.
    pub selected: bool,
    /// `visible-to-user` (true when absent).
    pub visible: bool,
    /// `bounds`, when present and well formed.
    pub bounds: Option<RawBounds>,
    /// The index of the first node after this node's subtree (its descendants are the nodes
    /// between it and there).
    pub subtree_end: usize,
}

/// A parsed dump: the nodes in pre-order (document order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// `rotation` of `<hierarchy>`, in quarter turns.
    pub rotation: u8,
    /// Every node, parents before their children.
    pub nodes: Vec<RawNode>,
}

/// The most nodes a dump may hold (a real screen has hundreds).
const MAX_NODES: usize = 20_000;
/// The deepest nesting a dump may have (real screens stay under a hundred levels).
const MAX_DEPTH: usize = 200;

/// Reads `uiautomator dump`'s output: the XML between `<?xml` (or `<hierarchy`) and
/// `</hierarchy>`, ignoring what precedes and follows it.
pub fn parse_dump(output: &str) -> Result<Hierarchy, DumpProblem> {
    let start = output.find("<?xml").or_else(|| output.find("<hierarchy"));
    let end = output
        .rfind("</hierarchy>")
        .map(|at| at + "</hierarchy>".len());
    let (start, end) = match (start, end) {
        (Some(start), Some(end)) if start < end => (start, end),
        (Some(start), _) => {
            // A self-closed empty hierarchy has no content to read either.
            return Err(if output[start..].contains("<hierarchy") {
                if output[start..].contains("/>") && !output[start..].contains("<node") {
                    DumpProblem::NullRoot
                } else {
                    DumpProblem::Truncated
                }
            } else {
                DumpProblem::Truncated
            });
        }
        _ => return Err(problem_in_text(output)),
    };
    let xml = fix_surrogate_references(&output[start..end]);
    // uiautomator never writes a DOCTYPE, a comment or a CDATA section (its serializer escapes
    // every `<` in text). They are refused before parsing: markup hidden in them would make
    // the nesting count below disagree with the parser's, and a DOCTYPE brings entities.
    if xml.contains("<!") {
        return Err(DumpProblem::Unreadable(
            "the dump holds a DOCTYPE, comment or CDATA section, which uiautomator never writes"
                .into(),
        ));
    }
    // The XML parser recurses per element: refuse what would exhaust a thread's stack.
    if tabwire_device_kit::xml::nesting(&xml) > MAX_DEPTH {
        return Err(DumpProblem::Unreadable(format!(
            "the hierarchy nests deeper than {MAX_DEPTH} levels"
        )));
    }
    let document = roxmltree::Document::parse(&xml)
        .map_err(|error| DumpProblem::Unreadable(format!("malformed XML: {error}")))?;
    let root = document.root_element();
    if root.tag_name().name() != "hierarchy" {
        return Err(DumpProblem::Unreadable(format!(
            "the root element is <{}>, not <hierarchy>",
            root.tag_name().name()
        )));
    }
    let rotation = root
        .attribute("rotation")
        .and_then(|r| r.parse::<u8>().ok())
        .filter(|r| *r < 4)
        .unwrap_or(0);
    let mut nodes = Vec::new();
    for child in root.children().filter(is_node) {
        collect(child, &mut nodes)?;
    }
    if nodes.is_empty() {
        return Err(DumpProblem::NullRoot);
    }
    Ok(Hierarchy { rotation, nodes })
}

fn is_node(node: &roxmltree::Node) -> bool {
    node.is_element() && node.tag_name().name() == "node"
}

/// Appends `node` and its subtree in pre-order. Iterative, so a deep hierarchy cannot
/// overflow the stack.
fn collect(top: roxmltree::Node, nodes: &mut Vec<RawNode>) -> Result<(), DumpProblem> {
    // (node, its index once pushed), children pushed in reverse so they pop in order.
    let mut stack: Vec<(roxmltree::Node, bool)> = vec![(top, false)];
    let mut open: Vec<usize> = Vec::new();
    while let Some((node, closing)) = stack.pop() {
        if closing {
            let index = open.pop().expect("a node opened before it closes");
            nodes[index].subtree_end = nodes.len();
            continue;
        }
        if nodes.len() >= MAX_NODES {
            return Err(DumpProblem::Unreadable(format!(
                "the hierarchy holds more than {MAX_NODES} nodes"
            )));
        }
        open.push(nodes.len());
        nodes.push(raw_node(&node));
        stack.push((node, true));
        let children: Vec<_> = node.children().filter(is_node).collect();
        stack.extend(children.into_iter().rev().map(|c| (c, false)));
    }
    Ok(())
}

fn raw_node(node: &roxmltree::Node) -> RawNode {
    let text = |name: &str| node.attribute(name).unwrap_or("").to_owned();
    let flag = |name: &str, absent: bool| match node.attribute(name) {
        Some(value) => value == "true",
        None => absent,
    };
    RawNode {
        class: text("class"),
        package: text("package"),
        resource_id: text("resource-id"),
        text: text("text"),
        desc: text("content-desc"),
        hint: text("hint"),
        hint_reported: node.attribute("hint").is_some(),
        checkable: flag("checkable", false),
        checked: flag("checked", false),
        clickable: flag("clickable", false),
        long_clickable: flag("long-clickable", false),
        enabled: flag("enabled", true),
        focused: flag("focused", false),
        scrollable: flag("scrollable", false),
        password: flag("password", false),
        selected: flag("selected", false),
        visible: flag("visible-to-user", true),
        bounds: node.attribute("bounds").and_then(parse_bounds),
        subtree_end: 0,
    }
}

/// `[x1,y1][x2,y2]`.
pub fn parse_bounds(text: &str) -> Option<RawBounds> {
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    let (first, second) = inner.split_once("][")?;
    let pair = |p: &str| -> Option<(i32, i32)> {
        let (x, y) = p.split_once(',')?;
        Some((x.trim().parse().ok()?, y.trim().parse().ok()?))
    };
    let (left, top) = pair(first)?;
    let (right, bottom) = pair(second)?;
    Some(RawBounds {
        left,
        top,
        right,
        bottom,
    })
}

/// What a dump printed instead of XML.
fn problem_in_text(output: &str) -> DumpProblem {
    if output.contains("could not get idle state") {
        DumpProblem::NotIdle
    } else if output.contains("null root node") {
        DumpProblem::NullRoot
    } else if output.contains("already registered") {
        DumpProblem::AnotherAutomation
    } else if let Some(at) = output.find("Illegal character") {
        DumpProblem::Encoding(first_line(&output[at..]))
    } else if output.trim().is_empty() {
        DumpProblem::Empty
    } else {
        DumpProblem::Unreadable(first_line(output.trim_start()))
    }
}

fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(160)
        .collect()
}

/// Joins surrogate pairs written as two character references (`&#55357;&#56832;`), which an
/// XML parser must refuse, into the one character they encode; a lone surrogate becomes
/// U+FFFD.
fn fix_surrogate_references(xml: &str) -> std::borrow::Cow<'_, str> {
    if !xml.contains("&#") {
        return std::borrow::Cow::Borrowed(xml);
    }
    let mut out = String::with_capacity(xml.len());
    let mut rest = xml;
    while let Some(at) = rest.find("&#") {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        match char_reference(rest) {
            Some((high @ 0xD800..=0xDBFF, len)) => {
                let joined = char_reference(&rest[len..])
                    .filter(|(low, _)| (0xDC00..=0xDFFF).contains(low))
                    .and_then(|(low, len2)| {
                        let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                        char::from_u32(c).map(|c| (c, len + len2))
                    });
                match joined {
                    Some((c, used)) => {
                        out.push(c);
                        rest = &rest[used..];
                    }
                    None => {
                        out.push('\u{FFFD}');
                        rest = &rest[len..];
                    }
                }
            }
            Some((0xDC00..=0xDFFF, len)) => {
                out.push('\u{FFFD}');
                rest = &rest[len..];
            }
            _ => {
                out.push_str("&#");
                rest = &rest[2..];
            }
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// The longest body of a character reference looked at (`x10FFFF` is 7, leading zeros aside):
/// the `;` is looked for within it, so a dump full of `&#` without one is read in linear time,
/// not by searching the rest of the dump at each (found with `bench-fuzz --replay`: 240 KB of
/// `&#` took 0.9 s).
const MAX_REFERENCE_BODY: usize = 16;

/// `&#NNN;` or `&#xHHH;` at the start of `text`: its value and length.
fn char_reference(text: &str) -> Option<(u32, usize)> {
    let body = text.strip_prefix("&#")?;
    let end = body
        .bytes()
        .take(MAX_REFERENCE_BODY + 1)
        .position(|b| b == b';')?;
    let digits = &body[..end];
    let value = match digits.strip_prefix(['x', 'X']) {
        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
        None => digits.parse().ok()?,
    };
    Some((value, 2 + end + 1))
}

/// Whether the on-screen keyboard shows, from `dumpsys input_method`: its `mInputShown`
/// (the IME's own `mIsInputViewShown` can be stale).
pub fn keyboard_shown(input_method: &str) -> bool {
    input_method
        .split(|c: char| c.is_whitespace())
        .any(|word| word == "mInputShown=true")
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const TRAILER: &str = "UI hierchary dumped to: /dev/tty\n";

    fn dump(body: &str) -> String {
        format!(
            "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"1\">{body}</hierarchy>{TRAILER}"
        )
    }

    /// Found reading what `android-xml` could reach, confirmed with `bench-fuzz --replay`: each
    /// `&#` without a `;` searched the rest of the dump, so 240 KB of them took 0.9 s.
    #[test]
    fn android_xml_a_reference_is_read_within_a_few_characters() {
        assert_eq!(char_reference("&#65;"), Some((65, 5)));
        assert_eq!(char_reference("&#x1F525;"), Some((0x1F525, 9)));
        // Its `;` past the window: not a reference here (roxmltree judges it).
        assert_eq!(char_reference(&format!("&#{}65;", "0".repeat(100))), None);
        let many = "&#".repeat(50_000);
        let dump = format!("<hierarchy rotation=\"0\"><node text=\"{many}\"/></hierarchy>");
        assert!(fix_surrogate_references(&dump).contains(&many));
    }

    #[test]
    fn a_dump_is_read_between_its_header_and_its_trailer() {
        let out = format!(
            "WARNING: linker noise\n{}",
            dump(
                r#"<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.x" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,0][1080,2400]"><node index="0" text="Fish &amp; chips &lt;3 &#128512; 😀 &#x5d0;&#x200f;" class="android.widget.TextView" bounds="[10,20][30,40]"/><node class="android.widget.Button" enabled="false" bounds="[-5,-5][0,0]"/></node>"#
            )
        );
        let h = parse_dump(&out).unwrap();
        assert_eq!(h.rotation, 1);
        assert_eq!(h.nodes.len(), 3);
        assert_eq!(h.nodes[0].subtree_end, 3);
        assert_eq!(h.nodes[1].subtree_end, 2);
        assert_eq!(h.nodes[1].text, "Fish & chips <3 😀 😀 \u{5d0}\u{200f}");
        assert!(h.nodes[1].enabled, "enabled when absent");
        assert!(h.nodes[1].visible);
        assert_eq!(h.nodes[1].package, "", "every attribute is optional");
        assert!(!h.nodes[2].enabled);
        assert_eq!(
            h.nodes[2].bounds,
            Some(RawBounds {
                left: -5,
                top: -5,
                right: 0,
                bottom: 0
            })
        );
    }

    #[test]
    fn surrogate_pairs_written_as_references_are_joined() {
        let h = parse_dump(&dump(
            r#"<node text="&#55357;&#56832; and lone &#55357;x" bounds="[0,0][1,1]"/>"#,
        ))
        .unwrap();
        assert_eq!(h.nodes[0].text, "😀 and lone \u{FFFD}x");
    }

    #[test]
    fn failures_that_exit_zero_are_problems_not_screens() {
        let cases = [
            ("ERROR: could not get idle state.\n", DumpProblem::NotIdle),
            (
                "ERROR: null root node returned by UiTestAutomationBridge.\n",
                DumpProblem::NullRoot,
            ),
            (
                "java.lang.IllegalStateException: UiAutomationService android.accessibilityservice.IAccessibilityServiceClient$Stub$Proxy@1 already registered!\n\tat ...\nKilled\n",
                DumpProblem::AnotherAutomation,
            ),
            ("", DumpProblem::Empty),
            ("  \n", DumpProblem::Empty),
            (
                "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\"><node text=\"a\" bounds=\"[0,0][1,1]\"><node",
                DumpProblem::Truncated,
            ),
            (
                "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\" />UI hierchary dumped to: /dev/tty",
                DumpProblem::NullRoot,
            ),
            (
                "<?xml version='1.0' ?><hierarchy rotation=\"0\"></hierarchy>",
                DumpProblem::NullRoot,
            ),
        ];
        for (output, expected) in cases {
            assert_eq!(parse_dump(output).unwrap_err(), expected, "{output:?}");
        }
        let encoding = parse_dump(
            "java.lang.IllegalArgumentException: Illegal character (d83d)\n\tat org.kxml2.io.KXmlSerializer",
        )
        .unwrap_err();
        assert!(matches!(&encoding, DumpProblem::Encoding(w) if w.contains("d83d")));
        assert!(!encoding.retryable());
        assert!(matches!(
            parse_dump("sh: uiautomator: not found").unwrap_err(),
            DumpProblem::Unreadable(w) if w.contains("not found")
        ));
        assert!(matches!(
            parse_dump("<?xml version='1.0' ?><hierarchy><node text=\"&bogus;\"/></hierarchy>")
                .unwrap_err(),
            DumpProblem::Unreadable(w) if w.contains("malformed")
        ));
        for problem in [DumpProblem::NotIdle, DumpProblem::AnotherAutomation] {
            assert!(problem.retryable());
            assert!(!problem.advice().is_empty());
        }
    }

    #[test]
    fn bounds_parse_strictly() {
        assert_eq!(
            parse_bounds("[1,2][3,4]"),
            Some(RawBounds {
                left: 1,
                top: 2,
                right: 3,
                bottom: 4
            })
        );
        for bad in ["", "[1,2]", "[1,2][3]", "(1,2)(3,4)", "[a,2][3,4]"] {
            assert_eq!(parse_bounds(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_hierarchy_too_deep_to_parse_safely_is_refused() {
        let depth = 5000;
        let body = format!(
            "{}{}",
            "<node class=\"android.view.View\" bounds=\"[0,0][1,1]\">".repeat(depth),
            "</node>".repeat(depth)
        );
        assert!(matches!(
            parse_dump(&dump(&body)).unwrap_err(),
            DumpProblem::Unreadable(w) if w.contains("deeper")
        ));
    }

    #[test]
    fn markup_hidden_in_comments_cannot_smuggle_depth_past_the_count() {
        // Each comment holds a closing tag the depth count would have believed, so the count
        // stayed at 1 while the parser nested 20,000 levels deep and overflowed its stack.
        let depth = 20_000;
        let body = format!(
            "{}{}",
            "<node text=\"\"><!--</a>-->".repeat(depth),
            "</node>".repeat(depth)
        );
        let xml = dump(&body);
        // A small stack, as a tokio worker has: the refusal must come before any recursion.
        let outcome = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || parse_dump(&xml))
            .unwrap()
            .join()
            .expect("the parser did not overflow");
        assert!(
            matches!(&outcome, Err(DumpProblem::Unreadable(w)) if w.contains("comment")),
            "{outcome:?}"
        );
        for sneaky in [
            "<node text=\"a\"/><![CDATA[<node>]]>",
            "<!DOCTYPE x [<!ENTITY e \"boom\">]><node text=\"&e;\"/>",
        ] {
            assert!(
                matches!(parse_dump(&dump(sneaky)), Err(DumpProblem::Unreadable(_))),
                "{sneaky}"
            );
        }
        // `<` written as text is escaped in real dumps, and still reads.
        let h = parse_dump(&dump("<node text=\"a &lt;!-- b\"/>")).unwrap();
        assert_eq!(h.nodes[0].text, "a <!-- b");
    }

    #[test]
    fn a_deep_hierarchy_is_read_without_recursion() {
        let depth = MAX_DEPTH - 1; // and the <hierarchy> around them
        let body = format!(
            "{}{}",
            "<node class=\"android.view.View\" bounds=\"[0,0][1,1]\">".repeat(depth),
            "</node>".repeat(depth)
        );
        let h = parse_dump(&dump(&body)).unwrap();
        assert_eq!(h.nodes.len(), depth);
        assert_eq!(h.nodes[0].subtree_end, depth);
        assert_eq!(h.nodes[depth - 1].subtree_end, depth);
    }

    #[test]
    fn the_keyboard_is_read_from_m_input_shown() {
        assert!(keyboard_shown(
            "  mFocusedWindowPerceptible=true\n  mInputShown=true mShowRequested=true\n"
        ));
        assert!(!keyboard_shown(
            "  mInputShown=false\n  mIsInputViewShown=true\n"
        ));
        assert!(!keyboard_shown(""));
    }
}
