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

use clap::{Arg, ArgAction, ArgGroup, ArgMatches, Args, Command, FromArgMatches};

use tabwire_hub::auth;
use tabwire_hub::config::default_state_dir_here;
use tabwire_hub::pairing;
use tabwire_hub::peer::code_hint;
use tabwire_protocol::{KINDS, Kind};

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
    /// `--device`…: the kind the code is for.
    #[command(flatten)]
    kind: CodeKind,
    /// Make a code that pairs this browser ID only (the popup shows it): the kind of code a
    /// managed policy (`pairingCode`) may carry, since other users may read the policy's file.
    #[arg(long, value_name = "ID", conflicts_with_all = ["list", "revoke", KIND_FLAGS])]
    browser_id: Option<String>,
    /// List the pairings (kind, ID, name, when paired); never a key.
    #[arg(long, conflicts_with = "revoke")]
    list: bool,
    /// Revoke the pairing with this ID, name or pairing ID; what it connected is dropped within
    /// about a second.
    #[arg(long, value_name = "NAME|ID")]
    revoke: Option<String>,
}

/// The group of the `--NOUN` flags.
const KIND_FLAGS: &str = "kind";

/// The kind a code is for: [`Kind::default`] (browsers) unless a flag `--NOUN` of another kind
/// of the kinds table (`--device`) says otherwise.
#[derive(Clone, Copy, Default)]
struct CodeKind(Kind);

impl CodeKind {
    /// The kinds with a flag of their own.
    fn flagged() -> impl Iterator<Item = &'static tabwire_protocol::KindSpec> {
        KINDS.iter().filter(|spec| spec.kind != Kind::default())
    }
}

impl FromArgMatches for CodeKind {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let flagged = CodeKind::flagged().find(|spec| matches.get_flag(spec.noun));
        Ok(CodeKind(flagged.map(|spec| spec.kind).unwrap_or_default()))
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = CodeKind::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for CodeKind {
    fn augment_args(command: Command) -> Command {
        let default = Kind::default().spec();
        CodeKind::flagged()
            .fold(command, |command, spec| {
                command.arg(
                    Arg::new(spec.noun)
                        .long(spec.noun)
                        .action(ArgAction::SetTrue)
                        .conflicts_with_all(["list", "revoke"])
                        .help(format!(
                            "Make a code for a {} rather than a {}: its key registers the {} it \
                             serves on {}, and works nowhere else",
                            spec.holder, default.holder, spec.plural, spec.path
                        )),
                )
            })
            .group(
                ArgGroup::new(KIND_FLAGS)
                    .args(CodeKind::flagged().map(|spec| spec.noun))
                    .multiple(false),
            )
    }

    fn augment_args_for_update(command: Command) -> Command {
        CodeKind::augment_args(command)
    }
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
    let kind = args.kind.0;
    let code = match &args.browser_id {
        Some(id) => {
            check_browser_id(id)?;
            pairing::new_code_for(&dir, ttl, id)?
        }
        None => pairing::new_code(&dir, ttl, kind)?,
    };
    println!("{code}");
    let only = match &args.browser_id {
        Some(id) => format!(" It pairs the browser whose ID is {id} and no other."),
        None => String::new(),
    };
    eprintln!("{}{only}", code_hint(kind, &args.ttl, &dir));
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

    /// `tabwire-hub pair ARGS…` as the binary parses it.
    fn parse(args: &[&str]) -> Result<PairArgs, clap::Error> {
        #[derive(clap::Parser)]
        struct Pair {
            #[command(flatten)]
            args: PairArgs,
        }
        let args = std::iter::once("pair").chain(args.iter().copied());
        <Pair as clap::Parser>::try_parse_from(args).map(|pair| pair.args)
    }

    #[test]
    fn a_flag_per_kind_of_the_table_says_whom_the_code_is_for() {
        assert_eq!(parse(&[]).unwrap().kind.0, Kind::default());
        for spec in CodeKind::flagged() {
            let flag = format!("--{}", spec.noun);
            assert_eq!(parse(&[&flag]).unwrap().kind.0, spec.kind, "{flag}");
            assert!(parse(&[&flag, "--browser-id", "b1"]).is_err(), "{flag}");
            assert!(parse(&[&flag, "--list"]).is_err(), "{flag}");
        }
        assert_eq!(parse(&["--device"]).unwrap().kind.0, Kind::Device);
        assert!(parse(&["--browser-id", "b1"]).is_ok());
        assert!(parse(&["--phone"]).is_err(), "not a kind");
    }
}
