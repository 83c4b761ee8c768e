//! The `tabwire-android` binary: arguments, logging, then the device tracker.

fn main() -> anyhow::Result<()> {
    anyhow::bail!("tabwire-android is being built: it serves no devices yet")
}
