//! Gestures on any touch screen: where a swipe starts and ends, how long a press or swipe may
//! last, and which ref an operation acts on.

use std::future::Future;

use tabwire_protocol::{Point, Rect};

use tabwire_protocol::devices::{
    DeviceActed, DeviceOp, DeviceResult, Foreground, MAX_SCROLL_SWIPES, PressTarget,
    ScrollToElement, SwipeDirection,
};
use tabwire_protocol::refs::DeviceRef;
use tabwire_protocol::{ErrorCode, OpError};
use tabwire_protocol::{Node, Observation};

use crate::view::Screen;

/// The longest press or swipe, in milliseconds.
pub const MAX_GESTURE_MS: u32 = 10_000;

/// How far each of its swipes goes, in percent of the area.
const SCROLL_PERCENT: u8 = 60;
/// How long each of its swipes takes.
const SCROLL_SWIPE_MS: u32 = 300;

/// What scrolling needs of a platform's operation.
pub trait Scroller {
    /// A look at the screen now, judged by the policy, its nodes given refs.
    fn look(&mut self) -> impl Future<Output = Result<Screen, OpError>> + Send;

    /// A swipe from `from` to `to`, sent behind the platform's guards; returns the app it
    /// went to.
    fn swipe(
        &mut self,
        from: Point,
        to: Point,
        duration_ms: u32,
    ) -> impl Future<Output = Result<String, OpError>> + Send;

    /// The area a swipe goes through: the node `within` names (once its app allows acting),
    /// else the whole screen.
    fn area(&self, within: Option<DeviceRef>) -> Result<Rect, OpError>;
}

/// Where a scroll ended.
#[derive(Debug)]
pub struct Scrolled {
    /// The last look.
    pub screen: Screen,
    /// The node looked for, when it showed.
    pub found: Option<Node<DeviceRef>>,
    /// The swipes made.
    pub swipes: u32,
    /// The app the last swipe went to (the screen's, when none was needed).
    pub package: String,
}

impl Scrolled {
    /// The action's result, with `observation` of its last look when one was asked for.
    pub fn acted(self, observation: Option<Observation<Foreground>>) -> DeviceResult {
        DeviceResult::Acted(DeviceActed {
            found: self.found,
            swipes: Some(self.swipes),
            ..DeviceActed::new(None, self.package, observation)
        })
    }
}

/// An error of the look after an action whose input was sent: it says so, and that the action
/// may have happened.
pub fn after_input(error: OpError) -> OpError {
    let mut error = error.action_may_have_occurred();
    error.message = format!("The action was sent. {}", error.message);
    error
}

/// Swipes until the node looked for is on the screen, the screen stops changing (the list
/// ended) or `max_swipes` are spent.
pub async fn scroll_to<S: Scroller>(
    scroller: &mut S,
    scroll: &ScrollToElement,
) -> Result<Scrolled, OpError> {
    if scroll.query.as_deref().is_none_or(str::is_empty) == scroll.target.is_none() {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            "scroll to a node by query (text its line contains) or by ref, one of the two",
        ));
    }
    if !(1..=MAX_SCROLL_SWIPES).contains(&scroll.max_swipes) {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!("maxSwipes must be 1-{MAX_SCROLL_SWIPES}"),
        ));
    }
    let mut screen = scroller.look().await?;
    let mut package = screen.package.clone();
    let mut swipes = 0;
    loop {
        let found = screen.find(scroll.query.as_deref(), scroll.target);
        if found.is_some() || swipes >= scroll.max_swipes {
            return Ok(Scrolled {
                screen,
                found,
                swipes,
                package,
            });
        }
        let area = scroller.area(scroll.within)?;
        let (from, to) = swipe_points(area, scroll.direction, SCROLL_PERCENT);
        let went = scroller
            .swipe(from, to, SCROLL_SWIPE_MS)
            .await
            .map_err(|e| {
                if swipes > 0 {
                    e.action_may_have_occurred()
                } else {
                    e
                }
            })?;
        package = went;
        swipes += 1;
        let next = scroller
            .look()
            .await
            .map_err(OpError::action_may_have_occurred)?;
        let ended = next.nodes == screen.nodes;
        screen = next;
        if ended {
            // The list did not move: it ends this way.
            let found = screen.find(scroll.query.as_deref(), scroll.target);
            return Ok(Scrolled {
                screen,
                found,
                swipes,
                package,
            });
        }
    }
}

/// Checks a press's or swipe's duration.
pub fn check_duration(ms: u32) -> Result<(), OpError> {
    if (1..=MAX_GESTURE_MS).contains(&ms) {
        Ok(())
    } else {
        Err(OpError::new(
            ErrorCode::InvalidArgument,
            format!("durationMs must be 1-{MAX_GESTURE_MS}"),
        ))
    }
}

/// Checks a swipe's distance, and that it starts at a point or within a node, not both.
pub fn check_swipe(
    distance_percent: u8,
    from_point: bool,
    within_node: bool,
) -> Result<(), OpError> {
    if !(10..=95).contains(&distance_percent) {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            "distancePercent must be 10-95",
        ));
    }
    if from_point && within_node {
        return Err(OpError::new(
            ErrorCode::InvalidArgument,
            "a swipe starts at a point or within a node, not both",
        ));
    }
    Ok(())
}

/// Where a swipe starts and ends: through the area's centre along the direction, over
/// `percent` of its extent that way, kept inside it.
pub fn swipe_points(area: Rect, direction: SwipeDirection, percent: u8) -> (Point, Point) {
    let centre = area.centre();
    let width = area.right.saturating_sub(area.left);
    let height = area.bottom.saturating_sub(area.top);
    // In u64: an extent times a percentage may not fit a u32.
    let half = |extent: u32| {
        u32::try_from(u64::from(extent) * u64::from(percent) / 200).unwrap_or(u32::MAX)
    };
    let inside_x = |x: u32| x.clamp(area.left, area.right.saturating_sub(1).max(area.left));
    let inside_y = |y: u32| y.clamp(area.top, area.bottom.saturating_sub(1).max(area.top));
    let (dx, dy) = (half(width), half(height));
    let point = |x: u32, y: u32| Point {
        x: inside_x(x),
        y: inside_y(y),
    };
    match direction {
        SwipeDirection::Up => (
            point(centre.x, centre.y.saturating_add(dy)),
            point(centre.x, centre.y.saturating_sub(dy)),
        ),
        SwipeDirection::Down => (
            point(centre.x, centre.y.saturating_sub(dy)),
            point(centre.x, centre.y.saturating_add(dy)),
        ),
        SwipeDirection::Left => (
            point(centre.x.saturating_add(dx), centre.y),
            point(centre.x.saturating_sub(dx), centre.y),
        ),
        SwipeDirection::Right => (
            point(centre.x.saturating_sub(dx), centre.y),
            point(centre.x.saturating_add(dx), centre.y),
        ),
    }
}

/// Where a swipe that starts at `from` ends: `percent` of the area's extent in `direction`,
/// stopping at its edge.
pub fn swipe_end(area: Rect, from: Point, direction: SwipeDirection, percent: u8) -> Point {
    let width = area.right.saturating_sub(area.left);
    let height = area.bottom.saturating_sub(area.top);
    // In u64: an extent times a percentage may not fit a u32.
    let part = |extent: u32| {
        u32::try_from(u64::from(extent) * u64::from(percent) / 100).unwrap_or(u32::MAX)
    };
    let last_x = area.right.saturating_sub(1).max(area.left);
    let last_y = area.bottom.saturating_sub(1).max(area.top);
    match direction {
        SwipeDirection::Up => Point {
            x: from.x,
            y: from.y.saturating_sub(part(height)).max(area.top),
        },
        SwipeDirection::Down => Point {
            x: from.x,
            y: from.y.saturating_add(part(height)).min(last_y),
        },
        SwipeDirection::Left => Point {
            x: from.x.saturating_sub(part(width)).max(area.left),
            y: from.y,
        },
        SwipeDirection::Right => Point {
            x: from.x.saturating_add(part(width)).min(last_x),
            y: from.y,
        },
    }
}

/// The ref an operation acts on, if it names one.
pub fn named_ref(op: &DeviceOp) -> Option<DeviceRef> {
    match op {
        DeviceOp::Tap(tap) => Some(tap.target),
        DeviceOp::LongPress(press) => match press.target {
            PressTarget::Ref(target) => Some(target),
            PressTarget::Point(_) => None,
        },
        DeviceOp::Type(typing) => typing.target,
        DeviceOp::Swipe(swipe) => swipe.within,
        DeviceOp::ScrollToElement(scroll) => scroll.within,
        DeviceOp::Snapshot(_)
        | DeviceOp::TapCoordinates(_)
        | DeviceOp::PressButton(_)
        | DeviceOp::OpenApp(_)
        | DeviceOp::CloseApp(_)
        | DeviceOp::DismissKeyboard(_)
        | DeviceOp::Screenshot(_)
        | DeviceOp::Logs(_)
        | DeviceOp::Release(_)
        | DeviceOp::DismissAlert(_)
        | DeviceOp::ScreenRecording(_)
        | DeviceOp::InstallApp(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swipe_points_stay_inside_any_area_without_overflowing() {
        // A screen size a device reported (`wm size`), as large as a u32 goes.
        let huge = Rect {
            left: 0,
            top: 0,
            right: u32::MAX,
            bottom: u32::MAX,
        };
        for direction in [
            SwipeDirection::Up,
            SwipeDirection::Down,
            SwipeDirection::Left,
            SwipeDirection::Right,
        ] {
            let (from, to) = swipe_points(huge, direction, 95);
            assert_ne!(from, to, "{direction:?}");
            // An area one pixel wide and tall: both ends on it.
            let dot = Rect {
                left: 7,
                top: 9,
                right: 8,
                bottom: 10,
            };
            let (from, to) = swipe_points(dot, direction, 95);
            assert_eq!((from, to), (Point { x: 7, y: 9 }, Point { x: 7, y: 9 }));
        }
        let phone = Rect {
            left: 0,
            top: 0,
            right: 1080,
            bottom: 2400,
        };
        assert_eq!(
            swipe_points(phone, SwipeDirection::Up, 50),
            (Point { x: 540, y: 1800 }, Point { x: 540, y: 600 })
        );
    }
}
