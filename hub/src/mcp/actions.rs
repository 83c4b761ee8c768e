//! Pointer actions: `click_element`, `click_and_wait`, `hover_element`, `drag_element`,
//! `scroll_page` (docs/actions.md).
//!
//! Each argument struct is also a batch step's payload, so it rejects unknown fields on its own
//! and its [`ActionTool::into_action`] is the one place its rules live. `selector` fields carry
//! no description: the server instructions say once what a selector is.

use schemars::JsonSchema;
use serde::Deserialize;
use tabwire_protocol::{Action, DragTo, Target};

use super::act::ActionTool;
use super::args::{self, ClickMode, DropPosition, MouseButton, WaitUntil, in_range};
use super::envelope::ToolError;

/// `timeoutMs` of click_and_wait when the caller gives none: a click that navigates waits for
/// the next page.
const CLICK_AND_WAIT_TIMEOUT_MS: u32 = 20_000;
/// The largest drag or scroll offset, in CSS pixels, either way.
const MAX_PIXELS: f64 = 100_000.0;

/// Arguments of click_element.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClickArgs {
    pub selector: String,
    /// dom: element.click(), no hit test.
    #[schemars(extend("default" = "trusted"))]
    pub mode: Option<ClickMode>,
    #[schemars(extend("default" = "left"))]
    pub button: Option<MouseButton>,
    /// 1-3 (2: double click).
    pub click_count: Option<u32>,
}

pub const CLICK_ELEMENT: &str = "Trusted mouse click at an element's centre, scrolled into view.";

impl ActionTool for ClickArgs {
    fn into_action(self, _timeout_ms: u32) -> Result<Action, ToolError> {
        Ok(Action::Click {
            target: args::target(&self.selector, "selector")?,
            mode: self.mode.map(Into::into).unwrap_or_default(),
            button: self.button.map(Into::into).unwrap_or_default(),
            click_count: in_range(self.click_count, 1, 1, 3, "clickCount")?,
            wait_until: None,
            wait_for: None,
        })
    }
}

/// Arguments of click_and_wait.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClickAndWaitArgs {
    pub selector: String,
    #[schemars(extend("default" = "complete"))]
    pub wait_until: Option<WaitUntil>,
    pub wait_for: Option<String>,
}

pub const CLICK_AND_WAIT: &str = "Click, then wait for the navigation (waitUntil) and for waitFor \
(CSS) to render.";

impl ActionTool for ClickAndWaitArgs {
    const DEFAULT_TIMEOUT_MS: u32 = CLICK_AND_WAIT_TIMEOUT_MS;

    fn into_action(self, _timeout_ms: u32) -> Result<Action, ToolError> {
        Ok(Action::Click {
            target: args::target(&self.selector, "selector")?,
            mode: Default::default(),
            button: Default::default(),
            click_count: 1,
            // Always set, so the extension waits for a navigation the click starts.
            wait_until: Some(self.wait_until.map(Into::into).unwrap_or_default()),
            wait_for: self
                .wait_for
                .map(|css| args::css(&css, "waitFor"))
                .transpose()?,
        })
    }
}

/// Arguments of hover_element.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HoverArgs {
    pub selector: String,
}

pub const HOVER_ELEMENT: &str = "Move the mouse over an element (trusted), e.g. to open a menu.";

impl ActionTool for HoverArgs {
    fn into_action(self, _timeout_ms: u32) -> Result<Action, ToolError> {
        Ok(Action::Hover {
            target: args::target(&self.selector, "selector")?,
        })
    }
}

/// Arguments of drag_element.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DragArgs {
    pub selector: String,
    pub to: Option<String>,
    pub position: Option<DropPosition>,
    pub dx: Option<f64>,
    pub dy: Option<f64>,
}

pub const DRAG_ELEMENT: &str =
    "Trusted mouse drag onto `to` or by dx/dy px; HTML5 drag and drop works.";

impl ActionTool for DragArgs {
    fn into_action(self, _timeout_ms: u32) -> Result<Action, ToolError> {
        let from = args::target(&self.selector, "selector")?;
        if self.position.is_some() && self.to.is_none() {
            return Err(ToolError::invalid(
                "position is a point on the element `to`; give to (an @ref or CSS selector), or \
                 drop position and drag by dx/dy",
            ));
        }
        let to = match (self.to, self.dx, self.dy) {
            (Some(to), None, None) => {
                let target = args::target(&to, "to")?;
                if matches!(&target, Target::Ref(r) if r.frame.is_some()) {
                    return Err(ToolError::invalid(
                        "dropping onto an element inside a frame is not supported yet; drag by \
                         an offset (dx, dy) instead",
                    ));
                }
                DragTo::Target {
                    target,
                    position: self.position.map(Into::into).unwrap_or_default(),
                }
            }
            (Some(_), _, _) => {
                return Err(ToolError::invalid(
                    "give either to (an element; position picks its before or after half) or \
                     dx/dy (an offset from the start), not both",
                ));
            }
            (None, None, None) => {
                return Err(ToolError::invalid(
                    "say where to drop: to (an @ref or CSS selector) or dx/dy (pixels)",
                ));
            }
            (None, dx, dy) => DragTo::Offset {
                dx: pixels(dx, "dx")?,
                dy: pixels(dy, "dy")?,
            },
        };
        Ok(Action::Drag { from, to })
    }
}

/// Arguments of scroll_page.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScrollArgs {
    pub selector: Option<String>,
    pub dx: Option<f64>,
    pub dy: Option<f64>,
    pub to: Option<String>,
}

pub const SCROLL_PAGE: &str = "Scroll the page (or selector's container) by dx/dy pixels, or bring \
`to` into view; none: one screen down. Returns scrollX, scrollY, atEnd.";

impl ActionTool for ScrollArgs {
    fn into_action(self, _timeout_ms: u32) -> Result<Action, ToolError> {
        if self.to.is_some() && (self.dx.is_some() || self.dy.is_some()) {
            return Err(ToolError::invalid(
                "give either to (scroll an element into view) or dx/dy (scroll by an amount), not both",
            ));
        }
        Ok(Action::Scroll {
            target: args::optional_selector(self.selector.as_deref(), "selector")?,
            dx: pixels(self.dx, "dx")?,
            dy: pixels(self.dy, "dy")?,
            to: args::optional_selector(self.to.as_deref(), "to")?,
        })
    }
}

/// An optional pixel offset (0 when absent), within [`MAX_PIXELS`] either way.
fn pixels(value: Option<f64>, name: &str) -> Result<f64, ToolError> {
    let value = value.unwrap_or(0.0);
    if value.is_finite() && value.abs() <= MAX_PIXELS {
        Ok(value)
    } else {
        Err(ToolError::invalid(format!(
            "{name} must be between -{MAX_PIXELS} and {MAX_PIXELS} pixels"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tabwire_protocol::{ErrorCode, Target};

    fn css(s: &str) -> Target {
        Target::Css(s.into())
    }

    #[test]
    fn clicks_default_to_one_trusted_left_click() {
        let click = ClickArgs {
            selector: "#go".into(),
            mode: None,
            button: None,
            click_count: None,
        };
        assert_eq!(
            click.into_action(5000).unwrap(),
            Action::Click {
                target: css("#go"),
                mode: Default::default(),
                button: Default::default(),
                click_count: 1,
                wait_until: None,
                wait_for: None,
            }
        );
        for count in [0, 4] {
            let click = ClickArgs {
                selector: "#go".into(),
                mode: Some(ClickMode::Dom),
                button: Some(MouseButton::Right),
                click_count: Some(count),
            };
            let error = click.into_action(5000).unwrap_err();
            assert!(error.message.contains("clickCount"), "{}", error.message);
        }
        let bad = ClickArgs {
            selector: "text=Go".into(),
            mode: None,
            button: None,
            click_count: None,
        };
        assert_eq!(
            bad.into_action(5000).unwrap_err().code,
            ErrorCode::InvalidSelector
        );
    }

    #[test]
    fn click_and_wait_always_waits_for_a_navigation() {
        let action = ClickAndWaitArgs {
            selector: "@e4".into(),
            wait_until: None,
            wait_for: Some("#done".into()),
        }
        .into_action(20_000)
        .unwrap();
        assert_eq!(action.name(), "clickAndWait");
        let Action::Click {
            wait_until,
            wait_for,
            ..
        } = action
        else {
            panic!("a click");
        };
        assert_eq!(wait_until, Some(tabwire_protocol::WaitUntil::Complete));
        assert_eq!(wait_for.as_deref(), Some("#done"));
        let by_ref = ClickAndWaitArgs {
            selector: "@e4".into(),
            wait_until: None,
            wait_for: Some("@e9".into()),
        };
        assert!(by_ref.into_action(20_000).is_err());
    }

    fn drag(to: Option<&str>, dx: Option<f64>, dy: Option<f64>) -> Result<Action, ToolError> {
        drag_at(to, None, dx, dy)
    }

    fn drag_at(
        to: Option<&str>,
        position: Option<DropPosition>,
        dx: Option<f64>,
        dy: Option<f64>,
    ) -> Result<Action, ToolError> {
        DragArgs {
            selector: "#card".into(),
            to: to.map(Into::into),
            position,
            dx,
            dy,
        }
        .into_action(5000)
    }

    #[test]
    fn drags_go_to_an_element_or_by_an_offset() {
        assert_eq!(
            drag(Some("#lane"), None, None).unwrap(),
            Action::Drag {
                from: css("#card"),
                to: DragTo::Target {
                    target: css("#lane"),
                    position: tabwire_protocol::DropPosition::Center,
                }
            }
        );
        assert_eq!(
            drag(None, None, Some(40.0)).unwrap(),
            Action::Drag {
                from: css("#card"),
                to: DragTo::Offset { dx: 0.0, dy: 40.0 }
            }
        );
        assert!(drag(Some("#lane"), Some(1.0), None).is_err());
        assert!(drag(None, None, None).is_err());
        assert!(drag(None, Some(1e9), None).is_err());
        assert_eq!(
            drag(Some("a >> b"), None, None).unwrap_err().code,
            ErrorCode::InvalidSelector
        );
    }

    #[test]
    fn a_position_is_a_point_on_the_element_dropped_onto() {
        assert_eq!(
            drag_at(Some("#item-3"), Some(DropPosition::After), None, None).unwrap(),
            Action::Drag {
                from: css("#card"),
                to: DragTo::Target {
                    target: css("#item-3"),
                    position: tabwire_protocol::DropPosition::After,
                }
            }
        );
        // Without an element there is nothing to be before or after.
        let alone = drag_at(None, Some(DropPosition::Before), None, Some(40.0)).unwrap_err();
        assert_eq!(alone.code, ErrorCode::InvalidArgument);
        assert!(alone.message.contains("position"), "{}", alone.message);
        let bare = drag_at(None, Some(DropPosition::Before), None, None).unwrap_err();
        assert!(bare.message.contains("give to"), "{}", bare.message);
        let both = drag_at(Some("#a"), Some(DropPosition::After), Some(0.0), None).unwrap_err();
        assert!(both.message.contains("not both"), "{}", both.message);
    }

    #[test]
    fn scrolling_to_an_element_excludes_an_amount() {
        let scroll = |to: Option<&str>, dy: Option<f64>| {
            ScrollArgs {
                selector: None,
                dx: None,
                dy,
                to: to.map(Into::into),
            }
            .into_action(5000)
        };
        assert_eq!(
            scroll(None, None).unwrap(),
            Action::Scroll {
                target: None,
                dx: 0.0,
                dy: 0.0,
                to: None
            }
        );
        assert!(scroll(Some("#footer"), None).is_ok());
        let error = scroll(Some("#footer"), Some(100.0)).unwrap_err();
        assert!(error.message.contains("not both"), "{}", error.message);
    }
}
