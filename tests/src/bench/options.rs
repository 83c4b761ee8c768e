//! The benchmark's command line: `bench [--rounds N] [--only tabwire|playwright]`.

use anyhow::{Context, Result, bail};

use super::server::ServerKind;

/// Snapshot rounds per page when `--rounds` is not given.
pub const DEFAULT_ROUNDS: usize = 20;

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Timed snapshot calls per page and server (after one warm-up call).
    pub rounds: usize,
    /// Run only this server (the other half of the table stays empty).
    pub only: Option<ServerKind>,
}

/// What `--help` prints.
pub const USAGE: &str = "\
usage: cargo run --release -p tabwire-e2e --bin bench -- [--rounds N] [--only tabwire|playwright]

Drives tabwire and @playwright/mcp over the same fixture pages and prints one table.
  --rounds N      timed snapshot calls per page and server (default 20, at least 2)
  --only SERVER   run one server: tabwire, or playwright (@playwright/mcp)";

/// The result of reading the command line.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Run with these options.
    Run(Options),
    /// Print [`USAGE`] and stop.
    Help,
}

impl Options {
    /// Reads the arguments after the program name.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Parsed> {
        let mut options = Options {
            rounds: DEFAULT_ROUNDS,
            only: None,
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (name, inline) = match arg.split_once('=') {
                Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
                None => (arg, None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .with_context(|| format!("{name} needs a value"))
            };
            match name.as_str() {
                "-h" | "--help" => return Ok(Parsed::Help),
                "--rounds" => {
                    let raw = value()?;
                    options.rounds = raw
                        .parse()
                        .ok()
                        .filter(|&rounds| rounds >= 2)
                        .with_context(|| format!("--rounds wants a number ≥ 2, not {raw:?}"))?;
                }
                "--only" => {
                    let raw = value()?;
                    options.only = Some(match raw.as_str() {
                        "tabwire" => ServerKind::Tabwire,
                        "playwright" | "playwright-mcp" | "peer" => ServerKind::Playwright,
                        _ => bail!("--only wants tabwire or playwright, not {raw:?}"),
                    });
                }
                _ => bail!("unknown argument {name:?}\n\n{USAGE}"),
            }
        }
        Ok(Parsed::Run(options))
    }

    /// Whether `kind` takes part in this run.
    pub fn runs(&self, kind: ServerKind) -> bool {
        self.only.is_none_or(|only| only == kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Parsed> {
        Options::parse(args.iter().map(|arg| arg.to_string()))
    }

    #[test]
    fn defaults_and_flags() {
        assert_eq!(
            parse(&[]).unwrap(),
            Parsed::Run(Options {
                rounds: DEFAULT_ROUNDS,
                only: None
            })
        );
        assert_eq!(
            parse(&["--rounds", "5", "--only=tabwire"]).unwrap(),
            Parsed::Run(Options {
                rounds: 5,
                only: Some(ServerKind::Tabwire)
            })
        );
        assert_eq!(parse(&["--help"]).unwrap(), Parsed::Help);
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert!(parse(&["--rounds", "1"]).is_err());
        assert!(parse(&["--rounds"]).is_err());
        assert!(parse(&["--only", "chrome"]).is_err());
        assert!(parse(&["--fast"]).is_err());
    }
}
