//! `tabwire-hub pair`: pairs browsers and device backends with a local hub, lists and revokes
//! them.
//!
//! Without options it prints a one-time pairing code on stdout and nothing else there (so a
//! script can capture it); what to do with it goes to stderr. Whoever can run this can read and
//! write the hub's private state directory, which is what allows a process of the same user to
//! pair without a person's click: a test or a launcher puts the code in the extension's
//! `config.json` (`pairingCode`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use tabwire_hub::auth;
use tabwire_hub::config::default_state_dir_here;
use tabwire_hub::pairing;

use crate::token_cli::format_time;

/// `tabwire-hub pair [--device | --browser-id ID] [--list | --revoke NAME|ID]`.
#[derive(Args)]
pub struct PairArgs {
    /// The hub's state directory (as given to the hub).
    #[arg(long, env = "TABWIRE_STATE_DIR")]
    state_dir: Option<PathBuf>,
    /// How long the code can be used: a number followed by s, m or h (at most 24h).
    #[arg(long, default_value = "10m", conflicts_with_all = ["list", "revoke"])]
    ttl: String,
    /// Make a code for a device backend (`tabwire-android`) rather than a browser: its key
    /// registers the devices the backend serves on /device, and works nowhere else.
    #[arg(long, conflicts_with_all = ["list", "revoke"])]
    device: bool,
    /// Make a code that pairs this browser ID only (the popup shows it): the kind of code a
    /// managed policy (`pairingCode`) may carry, since other users may read the policy's file.
    #[arg(long, value_name = "ID", conflicts_with_all = ["list", "revoke", "device"])]
    browser_id: Option<String>,
    /// List the pairings (kind, ID, name, when paired); never a key.
    #[arg(long, conflicts_with = "revoke")]
    list: bool,
    /// Revoke the pairing with this ID, name or pairing ID; what it connected is dropped within
    /// about a second.
    #[arg(long, value_name = "NAME|ID")]
    revoke: Option<String>,
}

/// Runs `pair`.
pub fn run(args: PairArgs) -> anyhow::Result<()> {
    let dir = match args.state_dir {
        Some(dir) => dir,
        None => default_state_dir_here().ok_or_else(|| {
            anyhow::anyhow!("cannot tell where the hub's state is: give --state-dir")
        })?,
    };
    if args.list {
        let pairings = pairing::list(&dir)?;
        if pairings.is_empty() {
            eprintln!("nothing is paired with the hub in {}", dir.display());
        }
        println!("{:<8} {:<38} {:<24} PAIRED", "KIND", "ID", "NAME");
        for paired in pairings {
            println!(
                "{:<8} {:<38} {:<24} {}",
                paired.kind.to_string(),
                paired.peer_id,
                paired.name,
                format_time(paired.paired_at)
            );
        }
        return Ok(());
    }
    if let Some(who) = args.revoke {
        let gone = pairing::revoke(&dir, &who)?;
        if gone.is_empty() {
            anyhow::bail!(
                "no pairing has the ID or name {who:?}; `tabwire-hub pair --list` shows them"
            );
        }
        for paired in gone {
            eprintln!(
                "revoked {} {} ({}); if it is connected, the hub drops it within a second",
                paired.kind, paired.name, paired.peer_id
            );
        }
        return Ok(());
    }
    let ttl = auth::parse_ttl(&args.ttl)?;
    if ttl > Duration::from_secs(24 * 3600) {
        anyhow::bail!("a pairing code may last at most 24h (it is a secret while it lasts)");
    }
    let kind = if args.device {
        pairing::PairingKind::Device
    } else {
        pairing::PairingKind::Browser
    };
    let code = match &args.browser_id {
        Some(id) => {
            check_browser_id(id)?;
            pairing::new_code_for(&dir, ttl, id)?
        }
        None => pairing::new_code(&dir, ttl, kind)?,
    };
    println!("{code}");
    if args.device {
        eprintln!("{}", device_hint(&args.ttl, &dir));
        return Ok(());
    }
    let only = match &args.browser_id {
        Some(id) => format!(" It pairs the browser whose ID is {id} and no other."),
        None => String::new(),
    };
    eprintln!(
        "Paste this code into the tabwire extension's popup (Pairing code) and press Connect. \
         It works once, within {}, with the hub whose state is in {} (a hub started with \
         another --state-dir does not know it).{only}",
        args.ttl,
        dir.display()
    );
    Ok(())
}

/// A browser ID as a hello must carry it (the protocol's rule), so a typo is caught here
/// rather than by a code nobody can use.
fn check_browser_id(id: &str) -> anyhow::Result<()> {
    let fits = !id.is_empty()
        && id.len() <= tabwire_protocol::messages::MAX_IDENTITY_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if fits {
        Ok(())
    } else {
        anyhow::bail!(
            "--browser-id {id:?} is no browser ID: the extension's popup shows it (1-64 letters, \
             digits, '-' or '_')"
        )
    }
}

/// What to do with a device code. Never on tabwire-android's command line: other users of the
/// machine read every process's arguments (`ps`, /proc/PID/cmdline); its environment is
/// private to its user.
fn device_hint(ttl: &str, dir: &std::path::Path) -> String {
    format!(
        "Give this code to tabwire-android on the machine the phones are attached to, in its \
         environment: TABWIRE_PAIRING_CODE=<code> tabwire-android (not as a command-line \
         argument, which other users can read in ps). On the hub's own machine tabwire-android \
         pairs itself without a code. It works once, within {ttl}, with the hub whose state is \
         in {}.",
        dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_code_names_a_browser_id() {
        assert!(check_browser_id("3f2a9c1e-77b0-4c1b-9d2e-0a1b2c3d4e5f").is_ok());
        for bad in ["", "has space", "a/b", &"x".repeat(65)] {
            assert!(check_browser_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_device_code_goes_in_the_environment_never_the_command_line() {
        let hint = device_hint("10m", std::path::Path::new("/state"));
        assert!(hint.contains("TABWIRE_PAIRING_CODE="), "{hint}");
        assert!(!hint.contains("--pairing-code"), "{hint}");
        assert!(!hint.contains("pairing code option"), "{hint}");
    }
}
