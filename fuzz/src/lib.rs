//! `tabwire-fuzz`: fuzzing on stable Rust without a fuzzing framework (docs/fuzzing.md).
//!
//! Each [`targets`] entry feeds one decoder that reads input from outside — peers' messages,
//! the pairing exchange, tool arguments and selectors, the shim's lines, bearer tokens, policy
//! files, phones' UI dumps — through the entry point the hub, the shim or the device backend
//! calls. Inputs are real samples (built from the protocol's own types, issued by the hub's own
//! `token issue`, the fake adb's UI dumps, the tools' own input schemas) edited by a seeded
//! generator ([`rng`], [`mutate`]); [`runner`] runs them, catching panics and timing each input.
//! `bench-fuzz` runs a million inputs per target; the tests here run a few thousand, in CI.

pub mod mutate;
pub mod rng;
pub mod runner;
pub mod targets;

/// A finding turned regression test: the input that once failed, fed again to its target.
#[cfg(test)]
mod regressions;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::runner::{Settings, run};
    use crate::targets::all;

    /// CI's short run: every target, a few thousand inputs each, no panic and no hang. The
    /// budget is a hang detector, not a speed figure (a debug build on a shared machine): the
    /// bench (`bench-fuzz`, release) runs a million per target and reports the slowest input.
    #[test]
    fn every_target_survives_a_short_run() {
        for target in all() {
            let report = run(
                &target,
                Settings {
                    inputs: 3000,
                    seed: 24,
                    budget: Duration::from_secs(20),
                    stuck: Duration::from_secs(120),
                },
            );
            assert_eq!(report.inputs, 3000);
            assert!(
                report.panics.is_empty(),
                "{}: {} panics, first: {:?}",
                target.name,
                report.panic_count,
                report.panics.first()
            );
            assert!(
                report.hangs.is_empty(),
                "{}: inputs past the budget: {:?}",
                target.name,
                report.hangs.first()
            );
        }
    }

    /// The runner reports a panicking input with its message, and goes on.
    #[test]
    fn a_panic_is_caught_and_reported_with_its_input() {
        use crate::rng::Rng;
        use crate::runner::{Harness, Target};
        struct Fragile;
        impl Harness for Fragile {
            fn generate(&mut self, rng: &mut Rng) -> String {
                rng.below(4).to_string()
            }
            fn run(&mut self, input: &str) {
                assert_ne!(input, "0", "zero breaks it");
            }
        }
        let target = Target {
            name: "fragile",
            entry: "test",
            build: || Box::new(Fragile),
        };
        let report = run(
            &target,
            Settings {
                inputs: 200,
                seed: 1,
                budget: Duration::from_secs(5),
                stuck: Duration::from_secs(60),
            },
        );
        assert_eq!(report.inputs, 200);
        assert!(report.panic_count > 20, "{}", report.panic_count);
        assert_eq!(report.panics[0].input, "0");
        assert!(
            report.panics[0].what.contains("zero breaks it"),
            "{}",
            report.panics[0].what
        );
    }
}
