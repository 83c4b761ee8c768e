//! The benchmark's command line: `bench [--rounds N] [--only tabwire|playwright]
//! [--only-steps PARTS] [--step-rounds N]`.

use anyhow::{Context, Result, bail};

use super::server::ServerKind;

/// Snapshot rounds per page when `--rounds` is not given.
pub const DEFAULT_ROUNDS: usize = 20;
/// Timed rounds per big-page step and per corpus page when `--step-rounds` is not given.
pub const DEFAULT_STEP_ROUNDS: usize = 10;

/// The parts of the benchmark (`--only-steps`): each runs on both servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// The fixture pages, the row and login scenarios, deltas, screenshots (the first table).
    pub fixtures: bool,
    /// The big-page steps on `rows.html` ([`super::steps`]).
    pub big: bool,
    /// The real saved pages ([`super::corpus`]).
    pub corpus: bool,
}

impl Parts {
    /// Every part.
    pub const ALL: Parts = Parts {
        fixtures: true,
        big: true,
        corpus: true,
    };

    /// Reads `all` or a comma-separated list of `fixtures`, `big`, `corpus`.
    pub fn parse(raw: &str) -> Result<Parts> {
        let mut parts = Parts {
            fixtures: false,
            big: false,
            corpus: false,
        };
        for name in raw.split(',').map(str::trim) {
            match name {
                "all" => parts = Parts::ALL,
                "fixtures" => parts.fixtures = true,
                "big" => parts.big = true,
                "corpus" => parts.corpus = true,
                _ => bail!(
                    "--only-steps wants all, or a list of fixtures, big, corpus; not {name:?}"
                ),
            }
        }
        Ok(parts)
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Timed snapshot calls per page and server (after one warm-up call).
    pub rounds: usize,
    /// Run only this server (the other half of the table stays empty).
    pub only: Option<ServerKind>,
    /// Which parts run.
    pub parts: Parts,
    /// Timed rounds per big-page step and per corpus page.
    pub step_rounds: usize,
}

/// What `--help` prints.
pub const USAGE: &str = "\
usage: cargo run --release -p tabwire-e2e --bin bench -- [--rounds N] [--only tabwire|playwright]
                 [--only-steps all|fixtures,big,corpus] [--step-rounds N]

Drives tabwire and @playwright/mcp over the same pages and prints the tables.
  --rounds N         timed snapshot calls per fixture page and server (default 20, at least 2)
  --only SERVER      run one server: tabwire, or playwright (@playwright/mcp)
  --only-steps PARTS run only these parts (default all): fixtures (the fixture pages and
                     scenarios), big (each step on rows.html at 2,000 and 10,000 rows), corpus
                     (real saved pages, downloaded once into target/bench-corpus/)
  --step-rounds N    timed rounds per big-page step and per corpus page (default 10, at least 2)";

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
            parts: Parts::ALL,
            step_rounds: DEFAULT_STEP_ROUNDS,
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
                "--step-rounds" => {
                    let raw = value()?;
                    options.step_rounds = raw
                        .parse()
                        .ok()
                        .filter(|&rounds| rounds >= 2)
                        .with_context(|| {
                            format!("--step-rounds wants a number ≥ 2, not {raw:?}")
                        })?;
                }
                "--only-steps" => options.parts = Parts::parse(&value()?)?,
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
                only: None,
                parts: Parts::ALL,
                step_rounds: DEFAULT_STEP_ROUNDS,
            })
        );
        assert_eq!(
            parse(&["--rounds", "5", "--only=tabwire"]).unwrap(),
            Parsed::Run(Options {
                rounds: 5,
                only: Some(ServerKind::Tabwire),
                parts: Parts::ALL,
                step_rounds: DEFAULT_STEP_ROUNDS,
            })
        );
        assert_eq!(
            parse(&["--only-steps", "big", "--step-rounds=3"]).unwrap(),
            Parsed::Run(Options {
                rounds: DEFAULT_ROUNDS,
                only: None,
                parts: Parts {
                    fixtures: false,
                    big: true,
                    corpus: false
                },
                step_rounds: 3,
            })
        );
        let Parsed::Run(options) = parse(&["--only-steps=big,corpus"]).unwrap() else {
            panic!("not a run");
        };
        assert_eq!(
            options.parts,
            Parts {
                fixtures: false,
                big: true,
                corpus: true
            }
        );
        assert_eq!(parse(&["--help"]).unwrap(), Parsed::Help);
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert!(parse(&["--rounds", "1"]).is_err());
        assert!(parse(&["--rounds"]).is_err());
        assert!(parse(&["--only", "chrome"]).is_err());
        assert!(parse(&["--fast"]).is_err());
        assert!(parse(&["--only-steps", "huge"]).is_err());
        assert!(parse(&["--only-steps", "big,"]).is_err());
        assert!(parse(&["--only-steps"]).is_err());
        assert!(parse(&["--step-rounds", "1"]).is_err());
    }
}
