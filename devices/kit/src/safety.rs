//! The safety layer at the point of effect (issue 15, "The safety layer for devices"): the
//! device's lease (which MCP session may change it) and the two owners' app rules.
//!
//! The lease follows the protocol's [`LeaseTable`], with the device as its one unit: another
//! session's changing call is refused with `DEVICE_LEASED`, reads never are. The policy is the
//! stricter of the operator's (sent by the hub) and the device owner's (`--policy`), judged on
//! the package an operation touches: `deny` refuses reads too, `read` refuses actions, and
//! `ask` is refused, because nobody can be asked on a device yet.

use std::sync::Mutex;
use std::time::Instant;

use tabwire_protocol::leases::{Claimed, Held, LeaseTable, Released};
use tabwire_protocol::policy::{Gate, Need, Owner, Policy, Verdict, stricter};
use tabwire_protocol::{ErrorCode, LeaseHolder, OpError};

/// One device's lease and policies. Shared between the device's queue and the connection,
/// which reports ended sessions and policy changes at any time.
#[derive(Debug)]
pub struct Safety {
    inner: Mutex<Inner>,
    epoch: Instant,
    owner_policy: Option<Policy>,
}

#[derive(Debug, Default)]
struct Inner {
    leases: LeaseTable<()>,
    operator: Policy,
}

impl Safety {
    /// With the device owner's policy, and the operator's until the hub sends its own: allow
    /// everything (the hub sends it in the welcome, before any request).
    pub fn new(owner_policy: Option<Policy>) -> Safety {
        Safety {
            inner: Mutex::new(Inner::default()),
            epoch: Instant::now(),
            owner_policy,
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether `holder` may change the device now.
    pub fn check(&self, holder: Option<&LeaseHolder>) -> Result<(), OpError> {
        let now = self.now_ms();
        self.lock()
            .leases
            .check((), holder.map(|h| h.session.as_str()), now)
            .map_err(|held| leased(&held))
    }

    /// Leases the device to `holder` (or renews its lease) as a change is about to be made.
    pub fn claim(&self, holder: Option<&LeaseHolder>) -> Result<(), OpError> {
        let now = self.now_ms();
        let mut inner = self.lock();
        match holder {
            Some(holder) => inner
                .leases
                .claim((), holder, now)
                .map(|_| ())
                .map_err(|held| leased(&held)),
            None => inner
                .leases
                .check((), None, now)
                .map_err(|held| leased(&held)),
        }
    }

    /// [`Safety::claim`] that says whether `holder` held the lease already (it was renewed),
    /// rather than taking it afresh (it was free: released, lapsed or never held). What a
    /// session started under its lease (a screen recording) ends with that lease.
    pub fn claim_kept(&self, holder: &LeaseHolder) -> Result<bool, OpError> {
        let now = self.now_ms();
        self.lock()
            .leases
            .claim((), holder, now)
            .map(|claimed| claimed == Claimed::Renewed)
            .map_err(|held| leased(&held))
    }

    /// `release_device`: whether the caller held the lease.
    pub fn release(&self, holder: Option<&LeaseHolder>) -> Result<bool, OpError> {
        let Some(holder) = holder else {
            return Err(OpError::new(
                ErrorCode::Internal,
                "release_device reached the device without its caller",
            ));
        };
        let now = self.now_ms();
        self.lock()
            .leases
            .release((), &holder.session, now)
            .map(|released| released == Released::Released)
            .map_err(|held| {
                OpError::new(
                    ErrorCode::DeviceLeased,
                    format!(
                        "The device is leased to {}, another agent session; only it can release \
                         the device (the lease lapses in {} s if it stays idle).",
                        held.client,
                        held.lapses_in_secs()
                    ),
                )
            })
    }

    /// An MCP session ended: its lease lapses.
    pub fn session_ended(&self, session: &str) {
        self.lock().leases.release_holder(session);
    }

    /// The operator's policy arrived or changed.
    pub fn set_operator_policy(&self, policy: Policy) {
        self.lock().operator = policy;
    }

    /// The stricter of both owners' verdicts on `package`.
    pub fn verdict(&self, package: &str) -> Verdict {
        let operator = self.lock().operator.app_verdict(package, Owner::Operator);
        match &self.owner_policy {
            Some(owner) => stricter(operator, owner.app_verdict(package, Owner::Device)),
            None => operator,
        }
    }

    /// Whether `need` may go ahead in `package`; the refusal names the rule and whose it is.
    pub fn gate(&self, need: Need, package: &str) -> Result<(), OpError> {
        let verdict = self.verdict(package);
        match verdict.gate_app(need, package) {
            Gate::Allowed => Ok(()),
            Gate::Blocked(why) => Err(OpError::new(ErrorCode::AppBlocked, why)),
            Gate::Ask => Err(OpError::new(
                ErrorCode::AppBlocked,
                format!(
                    "{} (rule `{}`) lets agents act in the app {package} only with a person's \
                     approval, and approvals cannot be asked on a device yet: nothing was done. \
                     Reads still work; ask the policy's owner to allow acting there.",
                    verdict.owner, verdict.rule
                ),
            )),
        }
    }

    /// Whether any app rule of either owner restricts anything: then device-wide reads (the
    /// whole log) must name the app they read.
    pub fn restricts_apps(&self) -> bool {
        let restricts = |policy: &Policy| {
            policy.default != tabwire_protocol::policy::Access::Act
                || policy
                    .apps
                    .iter()
                    .any(|rule| rule.access != tabwire_protocol::policy::Access::Act)
        };
        restricts(&self.lock().operator) || self.owner_policy.as_ref().is_some_and(restricts)
    }
}

fn leased(held: &Held) -> OpError {
    OpError::new(
        ErrorCode::DeviceLeased,
        format!(
            "The device is leased to {}, another agent session, for {} s more unless it keeps \
             using it; nothing was done. Reads (snapshots, screenshots, logs) still work.",
            held.client,
            held.lapses_in_secs()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn holder(session: &str) -> LeaseHolder {
        LeaseHolder {
            session: session.into(),
            client: format!("Agent {session}"),
            idle_ms: 600_000,
        }
    }

    fn policy(json: &str) -> Policy {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn another_session_is_refused_until_the_holder_ends_or_releases() {
        let safety = Safety::new(None);
        let (a, b) = (holder("a"), holder("b"));
        safety.claim(Some(&a)).unwrap();
        safety.check(Some(&a)).unwrap();
        let refused = safety.claim(Some(&b)).unwrap_err();
        assert_eq!(refused.code, ErrorCode::DeviceLeased);
        assert!(refused.message.contains("Agent a"), "{}", refused.message);
        assert!(refused.message.contains("600 s"), "{}", refused.message);
        assert_eq!(
            safety.check(None).unwrap_err().code,
            ErrorCode::DeviceLeased
        );
        assert_eq!(
            safety.release(Some(&b)).unwrap_err().code,
            ErrorCode::DeviceLeased
        );
        safety.session_ended("a");
        safety.claim(Some(&b)).unwrap();
        assert!(safety.release(Some(&b)).unwrap());
        assert!(!safety.release(Some(&b)).unwrap(), "nothing held any more");
        safety.claim(Some(&a)).unwrap();
    }

    #[test]
    fn the_stricter_owner_decides_and_is_named() {
        let safety = Safety::new(Some(policy(
            r#"{"apps":[{"package":"com.bank.*","access":"deny"},{"package":"com.mail","access":"ask"}]}"#,
        )));
        safety.set_operator_policy(policy(
            r#"{"apps":[{"package":"com.android.settings","access":"read"}]}"#,
        ));
        let blocked = safety.gate(Need::Read, "com.bank.app").unwrap_err();
        assert_eq!(blocked.code, ErrorCode::AppBlocked);
        assert!(
            blocked.message.contains("device owner"),
            "{}",
            blocked.message
        );
        assert!(
            blocked.message.contains("com.bank.*"),
            "{}",
            blocked.message
        );
        safety.gate(Need::Read, "com.android.settings").unwrap();
        let read_only = safety.gate(Need::Act, "com.android.settings").unwrap_err();
        assert!(
            read_only.message.contains("operator"),
            "{}",
            read_only.message
        );
        let ask = safety.gate(Need::Act, "com.mail").unwrap_err();
        assert_eq!(ask.code, ErrorCode::AppBlocked);
        assert!(ask.message.contains("cannot be asked"), "{}", ask.message);
        safety.gate(Need::Read, "com.mail").unwrap();
        safety.gate(Need::Load, "com.example").unwrap();
        assert!(safety.restricts_apps());
        assert!(!Safety::new(None).restricts_apps());
    }
}
