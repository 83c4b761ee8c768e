//! The screens measured and what "every actionable element present" means for them.
//!
//! An actionable element is a node of the fixture that is clickable, checkable, scrollable or
//! an `EditText`, with something left of its bounds once clipped to the screen. A server's
//! answer has it when one of its entries lies inside the element's box (so tapping that
//! entry's centre reaches the element: mobile-mcp lists a row's text rather than the row, and
//! that still reaches the row) and is not larger than it. The same rule scores both servers.

use crate::fake_adb::hierarchy;

/// The screens of `fixtures/android/` the benchmark measures, each a real-app shape.
pub const SCREENS: &[&str] = &[
    "login.xml",
    "products.xml",
    "settings_network.xml",
    "chat.xml",
    "rn_signup.xml",
    "remove_dialog.xml",
    "offscreen.xml",
    "feed.xml",
    "launcher.xml",
];

/// An actionable element: its box on the screen and a word about it.
#[derive(Debug, Clone)]
pub struct Actionable {
    /// `[left, top, right, bottom]`, clipped to the screen.
    pub rect: [i64; 4],
    /// Class and ID, for the report of what is missing.
    pub label: String,
}

/// The actionable elements of a hierarchy on a `width`×`height` screen.
pub fn actionable(xml: &str, width: i64, height: i64) -> Vec<Actionable> {
    hierarchy::nodes(xml)
        .into_iter()
        .filter(|node| {
            node.flag("clickable")
                || node.flag("checkable")
                || node.flag("scrollable")
                || node.get("class").ends_with("EditText")
        })
        .filter_map(|node| {
            let [l, t, r, b] = node.bounds()?;
            let rect = [
                l.clamp(0, width),
                t.clamp(0, height),
                r.clamp(0, width),
                b.clamp(0, height),
            ];
            (rect[2] > rect[0] && rect[3] > rect[1]).then(|| Actionable {
                rect,
                label: format!(
                    "{} {}{}",
                    node.get("class").rsplit('.').next().unwrap_or_default(),
                    node.get("resource-id"),
                    node.get("text")
                ),
            })
        })
        .collect()
}

/// The elements none of `entries` (boxes a server listed) reaches.
pub fn missing<'a>(elements: &'a [Actionable], entries: &[[i64; 4]]) -> Vec<&'a Actionable> {
    elements
        .iter()
        .filter(|element| {
            let [l, t, r, b] = element.rect;
            !entries.iter().any(|&[el, et, er, eb]| {
                let (cx, cy) = ((el + er) / 2, (et + eb) / 2);
                er > el
                    && eb > et
                    && cx >= l
                    && cx < r
                    && cy >= t
                    && cy < b
                    && el >= l
                    && et >= t
                    && er <= r
                    && eb <= b
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_inside_an_element_reaches_it_and_a_larger_one_does_not() {
        let xml = r#"<hierarchy><node class="android.widget.LinearLayout" clickable="true" bounds="[0,100][1080,300]"><node class="android.widget.TextView" text="Row" bounds="[40,150][500,250]" /></node><node class="android.widget.EditText" bounds="[0,2400][1080,2500]" /></hierarchy>"#;
        let elements = actionable(xml, 1080, 2400);
        assert_eq!(elements.len(), 1, "the off-screen field is not actionable");
        assert!(missing(&elements, &[[40, 150, 500, 250]]).is_empty());
        assert_eq!(missing(&elements, &[[0, 0, 1080, 2400]]).len(), 1);
    }
}
