//! What each agent session of the soak does, call after call: a mix of the hub's own listing,
//! snapshots of three sizes, list_tabs, clicks and typing, and now and then a `wait_for` it
//! cancels, or closing its session and opening a new one. Each call is timed against the
//! deadline the hub gives it plus the hub's grace, and each failure is judged expected or not
//! from what the run was doing to that browser at the time.

use std::time::Duration;

use serde_json::{Value, json};

/// The hub's extra wait beyond a request's deadline before it answers `BRIDGE_TIMEOUT` itself
/// (`BRIDGE_GRACE` in hub/src/registry.rs). A call that takes longer than its deadline plus this
/// waited past what the hub promises.
pub const BRIDGE_GRACE: Duration = Duration::from_secs(2);

/// `timeoutMs` of the clicks and the typing.
const ACTION_TIMEOUT_MS: u64 = 5000;
/// `timeoutMs` of the waits that get cancelled; the hub adds its wait margin (3 s,
/// `WAIT_MARGIN_MS` in hub/src/mcp/waits.rs) to the request's deadline.
const WAIT_TIMEOUT_MS: u64 = 3000;
const WAIT_MARGIN_MS: u64 = 3000;
/// The hub's own deadlines for tools that take no `timeoutMs`: snapshots (`READ_DEADLINE`,
/// hub/src/mcp/observe.rs) and tab listings (`TAB_DEADLINE`, hub/src/mcp/tabs.rs).
const READ_DEADLINE_MS: u64 = 20_000;
const TAB_DEADLINE_MS: u64 = 10_000;
/// `list_browsers` asks no browser and has no deadline of its own: it is held to the shortest
/// tool deadline the hub has (a tab listing's).
const HUB_ONLY_MS: u64 = TAB_DEADLINE_MS;

/// A call's kind, as the table of error codes and the mix name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    ListBrowsers,
    SmallSnapshot,
    MediumSnapshot,
    LargeSnapshot,
    ListTabs,
    Click,
    Type,
    CancelledWait,
}

impl Kind {
    /// Picks a kind from `roll` (0..1000): the mix, in thousandths. Cancelled waits are rare
    /// (1 %): each holds its session for a moment and its browser's request until the cancel.
    pub fn pick(roll: u64) -> Kind {
        match roll {
            0..100 => Kind::ListBrowsers,
            100..350 => Kind::SmallSnapshot,
            350..500 => Kind::MediumSnapshot,
            500..540 => Kind::LargeSnapshot,
            540..640 => Kind::ListTabs,
            640..820 => Kind::Click,
            820..990 => Kind::Type,
            _ => Kind::CancelledWait,
        }
    }

    /// The tool it calls.
    pub fn tool(self) -> &'static str {
        match self {
            Kind::ListBrowsers => "list_browsers",
            Kind::SmallSnapshot | Kind::MediumSnapshot | Kind::LargeSnapshot => "get_page_snapshot",
            Kind::ListTabs => "list_tabs",
            Kind::Click => "click_element",
            Kind::Type => "type_text",
            Kind::CancelledWait => "wait_for",
        }
    }

    /// Whether it reaches a browser (and so may fail while that browser reconnects).
    pub fn reaches_browser(self) -> bool {
        self != Kind::ListBrowsers
    }

    /// Its arguments for `browser`; `n` varies the targets and the text.
    pub fn arguments(self, browser: &str, n: u64) -> Value {
        let mut arguments = match self {
            Kind::ListBrowsers => return json!({}),
            // About 0.5 KB, 8 KB and 150 KB of answer.
            Kind::SmallSnapshot => json!({"maxNodes": 5}),
            Kind::MediumSnapshot => json!({"maxNodes": 100}),
            Kind::LargeSnapshot => json!({"maxNodes": 5000, "maxChars": 200_000}),
            Kind::ListTabs => json!({}),
            Kind::Click => json!({
                "selector": format!("@e{}", n % 50 + 1),
                "timeoutMs": ACTION_TIMEOUT_MS,
                // Every other click with its small observation, the rest without.
                "observe": n.is_multiple_of(2),
            }),
            Kind::Type => json!({
                "selector": format!("#field-{}", n % 7),
                "text": format!("soak text {n}"),
                "timeoutMs": ACTION_TIMEOUT_MS,
                "observe": false,
            }),
            Kind::CancelledWait => json!({
                "text": "never shown",
                "timeoutMs": WAIT_TIMEOUT_MS,
            }),
        };
        arguments["browserId"] = json!(browser);
        arguments
    }

    /// The deadline the hub gives the call's request: the `timeoutMs` passed (with the hub's
    /// margin for waits), or the tool's fixed deadline.
    pub fn deadline(self) -> Duration {
        Duration::from_millis(match self {
            Kind::ListBrowsers => HUB_ONLY_MS,
            Kind::SmallSnapshot | Kind::MediumSnapshot | Kind::LargeSnapshot => READ_DEADLINE_MS,
            Kind::ListTabs => TAB_DEADLINE_MS,
            Kind::Click | Kind::Type => ACTION_TIMEOUT_MS,
            Kind::CancelledWait => WAIT_TIMEOUT_MS + WAIT_MARGIN_MS,
        })
    }

    /// The longest the call may take: its deadline plus the hub's grace.
    pub fn limit(self) -> Duration {
        self.deadline() + BRIDGE_GRACE
    }
}

/// Whether a failure with `code` is one the run itself caused: `CANCELLED` of a cancelled wait;
/// the codes of a browser that is not there, for a call whose browser the run disconnected
/// while the call was made (`flapped`).
pub fn expected(kind: Kind, code: &str, flapped: bool) -> bool {
    match code {
        "CANCELLED" => kind == Kind::CancelledWait,
        // A wait whose cancel reached the hub before the call did: a cancel for a request the
        // server has not seen is ignored, and the wait ends at its own timeout.
        "WAIT_TIMEOUT" => kind == Kind::CancelledWait,
        "BROWSER_DISCONNECTED" | "BROWSER_NOT_FOUND" => flapped && kind.reaches_browser(),
        _ => false,
    }
}

/// A small fast generator (xorshift64*): the mix needs variety, not quality, and the workload
/// of a seed is the same on every run.
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next number.
    pub fn draw(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.draw() % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_has_every_kind_and_cancels_are_rare() {
        let mut rng = Rng::new(7);
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..100_000 {
            *counts.entry(Kind::pick(rng.below(1000))).or_insert(0u32) += 1;
        }
        assert_eq!(counts.len(), 8, "{counts:?}");
        let cancels = counts[&Kind::CancelledWait];
        assert!((500..1500).contains(&cancels), "{counts:?}");
    }

    #[test]
    fn only_the_runs_own_doings_are_expected_failures() {
        assert!(expected(Kind::CancelledWait, "CANCELLED", false));
        assert!(!expected(Kind::Click, "CANCELLED", false));
        assert!(expected(Kind::Click, "BROWSER_DISCONNECTED", true));
        assert!(!expected(Kind::Click, "BROWSER_DISCONNECTED", false));
        assert!(!expected(Kind::ListBrowsers, "BROWSER_NOT_FOUND", true));
        assert!(!expected(Kind::LargeSnapshot, "BRIDGE_TIMEOUT", true));
        assert!(!expected(Kind::Type, "HTTP 429", false));
    }

    #[test]
    fn limits_are_the_deadline_plus_the_hubs_grace() {
        assert_eq!(Kind::Click.limit(), Duration::from_millis(7000));
        assert_eq!(Kind::CancelledWait.limit(), Duration::from_millis(8000));
        assert_eq!(Kind::LargeSnapshot.limit(), Duration::from_millis(22_000));
        assert_eq!(
            Kind::Click.arguments("b", 3)["timeoutMs"].as_u64(),
            Some(ACTION_TIMEOUT_MS)
        );
    }
}
