//! How a tool names an element: element references, the short handles (`@e12`, `@f2e5`) an
//! agent uses to point at an element it has seen in an observation, and [`Target`], a ref or a
//! CSS selector.
//!
//! A ref names one element of one document. `@e12` is element 12 of the tab's top document;
//! `@f2e5` is element 5 of frame 2. The extension hands them out and resolves them; the hub only
//! checks their syntax.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A parsed element reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ElementRef {
    /// The frame the element lives in; `None` for the top document.
    pub frame: Option<u32>,
    /// The element's number within that frame's document; starts at 1.
    pub index: u32,
}

impl ElementRef {
    /// A ref in the top document.
    pub fn top(index: u32) -> Self {
        ElementRef { frame: None, index }
    }

    /// Parses `@e12` or `@f2e5`. Returns `None` for anything else, including a missing `@`
    /// (without it, `e12` is a valid CSS type selector and must be treated as one).
    pub fn parse(text: &str) -> Option<Self> {
        let rest = text.strip_prefix('@')?;
        let (frame, rest) = match rest.strip_prefix('f') {
            Some(after_f) => {
                let split = after_f.find('e')?;
                (Some(parse_number(&after_f[..split])?), &after_f[split..])
            }
            None => (None, rest),
        };
        let index = parse_number(rest.strip_prefix('e')?)?;
        (index > 0).then_some(ElementRef { frame, index })
    }
}

/// Parses a decimal number without sign, leading zeros or surrounding text.
fn parse_number(digits: &str) -> Option<u32> {
    let well_formed = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if well_formed {
        digits.parse().ok()
    } else {
        None
    }
}

impl std::fmt::Display for ElementRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.frame {
            Some(frame) => write!(f, "@f{frame}e{}", self.index),
            None => write!(f, "@e{}", self.index),
        }
    }
}

/// A node of a device's screen, as a device observation names it: `@d7`. Device refs are a
/// separate type from [`ElementRef`], so a browser tool can never be handed one (nor a device
/// tool an `@e` ref).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceRef(pub u32);

impl DeviceRef {
    /// Parses `@d7`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let index = parse_number(text.strip_prefix("@d")?)?;
        (index > 0).then_some(DeviceRef(index))
    }
}

impl std::fmt::Display for DeviceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "@d{}", self.0)
    }
}

impl Serialize for DeviceRef {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DeviceRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        DeviceRef::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("`{text}` is not a device ref like @d7"))
        })
    }
}

/// How a tool names an element: an observed ref, or a CSS selector that must match exactly one
/// element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Target {
    /// An `@ref` from an observation of the current document.
    Ref(ElementRef),
    /// A native CSS selector.
    Css(String),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Ref(r) => write!(f, "{r}"),
            Target::Css(css) => write!(f, "{css}"),
        }
    }
}

impl Serialize for ElementRef {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ElementRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ElementRef::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("`{text}` is not an element ref like @e12"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        assert_eq!(ElementRef::parse("@e12"), Some(ElementRef::top(12)));
        let framed = ElementRef::parse("@f2e5").unwrap();
        assert_eq!(
            framed,
            ElementRef {
                frame: Some(2),
                index: 5
            }
        );
        assert_eq!(framed.to_string(), "@f2e5");
        assert_eq!(ElementRef::top(7).to_string(), "@e7");
        assert_eq!(ElementRef::parse("@f0e1").unwrap().frame, Some(0));
    }

    #[test]
    fn rejects_look_alikes() {
        for bad in [
            "e12",
            "@e",
            "@e0",
            "@e012",
            "@e1x",
            "@f2",
            "@fe3",
            "@E3",
            "@e-1",
            "@e 1",
            "#e1",
            "",
            "@e99999999999",
        ] {
            assert_eq!(ElementRef::parse(bad), None, "{bad:?} should not parse");
        }
    }

    #[test]
    fn device_refs_are_their_own_kind() {
        assert_eq!(DeviceRef::parse("@d7"), Some(DeviceRef(7)));
        assert_eq!(DeviceRef(12).to_string(), "@d12");
        for bad in ["@e7", "@d0", "@d07", "d7", "@d", "@D7", "@d7x"] {
            assert_eq!(DeviceRef::parse(bad), None, "{bad:?} should not parse");
        }
        assert_eq!(ElementRef::parse("@d7"), None);
        assert!(serde_json::from_str::<DeviceRef>("\"@e3\"").is_err());
    }

    #[test]
    fn serde_uses_the_printed_form() {
        let json = serde_json::to_string(&ElementRef::top(3)).unwrap();
        assert_eq!(json, "\"@e3\"");
        assert_eq!(
            serde_json::from_str::<ElementRef>(&json).unwrap(),
            ElementRef::top(3)
        );
        assert!(serde_json::from_str::<ElementRef>("\"e3\"").is_err());
    }
}
