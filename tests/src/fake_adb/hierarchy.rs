//! Just enough reading of a screen's hierarchy for the fake device's own needs: which node a
//! tap lands on (an `EditText` brings the keyboard up), the foreground package, and the boxes a
//! screenshot draws. Attributes are read as written, entities left alone: the backend under
//! test parses the dump with a real XML parser; this is not that parser.

use std::collections::BTreeMap;

/// One `<node>` of a dump: its attributes by name.
#[derive(Debug, Clone, Default)]
pub struct Node {
    /// Attribute values as written (entities not decoded).
    pub attributes: BTreeMap<String, String>,
}

impl Node {
    /// An attribute, or `""`.
    pub fn get(&self, name: &str) -> &str {
        self.attributes.get(name).map(String::as_str).unwrap_or("")
    }

    /// `bounds="[x1,y1][x2,y2]"` as `[x1, y1, x2, y2]`.
    pub fn bounds(&self) -> Option<[i64; 4]> {
        let numbers: Vec<i64> = self
            .get("bounds")
            .split(['[', ']', ','])
            .filter(|part| !part.is_empty())
            .map(|part| part.parse().ok())
            .collect::<Option<_>>()?;
        <[i64; 4]>::try_from(numbers).ok()
    }

    /// Whether `(x, y)` lies within its bounds.
    pub fn contains(&self, x: f64, y: f64) -> bool {
        self.bounds().is_some_and(|[l, t, r, b]| {
            x >= l as f64 && x < r as f64 && y >= t as f64 && y < b as f64
        })
    }

    /// Whether the attribute is `"true"`.
    pub fn flag(&self, name: &str) -> bool {
        self.get(name) == "true"
    }
}

/// Every `<node …>` of a dump, in document order.
pub fn nodes(xml: &str) -> Vec<Node> {
    let mut found = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find("<node") {
        rest = &rest[start + "<node".len()..];
        let end = tag_end(rest);
        found.push(Node {
            attributes: attributes(&rest[..end]),
        });
        rest = &rest[end..];
    }
    found
}

/// The `rotation` of the `<hierarchy>` element (0 when absent).
pub fn rotation(xml: &str) -> u8 {
    xml.find("<hierarchy")
        .map(|start| attributes(&xml[start + "<hierarchy".len()..]))
        .and_then(|attrs| attrs.get("rotation").and_then(|r| r.parse().ok()))
        .unwrap_or(0)
}

/// The deepest node under a point (the last one in document order containing it).
pub fn node_at(xml: &str, x: f64, y: f64) -> Option<Node> {
    nodes(xml)
        .into_iter()
        .rev()
        .find(|node| node.contains(x, y))
}

/// Where a tag's attributes end: the first `>` outside quotes.
fn tag_end(text: &str) -> usize {
    let mut quoted = false;
    for (index, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '>' if !quoted => return index,
            _ => {}
        }
    }
    text.len()
}

/// `name="value"` pairs up to the end of the tag.
fn attributes(tag: &str) -> BTreeMap<String, String> {
    let tag = &tag[..tag_end(tag)];
    let mut attrs = BTreeMap::new();
    let mut rest = tag;
    while let Some(eq) = rest.find("=\"") {
        let name = rest[..eq]
            .rsplit(|c: char| c.is_whitespace())
            .next()
            .unwrap_or_default()
            .to_owned();
        let value_start = eq + 2;
        let Some(len) = rest[value_start..].find('"') else {
            break;
        };
        attrs.insert(name, rest[value_start..value_start + len].to_owned());
        rest = &rest[value_start + len + 1..];
    }
    attrs
}

#[cfg(test)]
mod tests {
    use super::*;

    const XML: &str = concat!(
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"1\">",
        "<node index=\"0\" text=\"\" class=\"android.widget.FrameLayout\" package=\"p\" ",
        "bounds=\"[0,0][100,200]\"><node index=\"0\" text=\"a &gt; b\" ",
        "class=\"android.widget.EditText\" package=\"p\" bounds=\"[10,10][90,50]\" />",
        "</node></hierarchy>"
    );

    #[test]
    fn reads_nodes_bounds_and_the_node_under_a_point() {
        let all = nodes(XML);
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].get("text"), "a &gt; b");
        assert_eq!(all[1].bounds(), Some([10, 10, 90, 50]));
        assert_eq!(
            node_at(XML, 20.0, 20.0).unwrap().get("class"),
            "android.widget.EditText"
        );
        assert_eq!(
            node_at(XML, 20.0, 100.0).unwrap().get("class"),
            "android.widget.FrameLayout"
        );
        assert!(node_at(XML, 120.0, 20.0).is_none());
        assert_eq!(rotation(XML), 1);
    }
}
