//! The side-by-side device benchmark behind `cargo run --release -p tabwire-e2e --bin
//! bench-mobile`: tabwire (hub, `tabwire-android`, `tabwire-mcp`) and `@mobilenext/mobile-mcp`
//! driving the same scripted phone through the same fake adb, over the same hierarchies.
//!
//! - [`peer`]: installing and starting mobile-mcp against the fake adb.
//! - [`ios`]: the same comparison on iOS, against the scripted WebDriverAgent serving real
//!   XCUITest page sources.
//! - [`screens`]: the screens measured and the completeness rule.
//! - [`measure`]: per screen, the element list's size and completeness, the adb invocations of
//!   a tap with its observation, and each server's own time per call beside adb's (from the
//!   fake's `calls.log`); [`report`] prints the tables and the targets.

pub mod ios;
pub mod measure;
pub mod peer;
pub mod report;
pub mod screens;

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// tabwire: hub + tabwire-android, through tabwire-mcp.
    Tabwire,
    /// @mobilenext/mobile-mcp with its legacy adb robot.
    MobileMcp,
}

impl Server {
    /// Its name in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Server::Tabwire => "tabwire",
            Server::MobileMcp => "mobile-mcp",
        }
    }
}

/// The command line: `bench-mobile [--rounds N] [--only tabwire|mobile-mcp]`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Timed calls per screen and measurement (after one warm-up call).
    pub rounds: usize,
    /// Run one server only.
    pub only: Option<Server>,
    /// Run one platform only: `android` or `ios`.
    pub platform: Option<String>,
}

/// What `--help` prints.
pub const USAGE: &str = "\
usage: cargo run --release -p tabwire-e2e --bin bench-mobile -- [--rounds N] [--only tabwire|mobile-mcp] [--platform android|ios]

Drives tabwire and @mobilenext/mobile-mcp over the same scripted Android phone (the fake adb) and
the same scripted iPhone (a scripted WebDriverAgent on 127.0.0.1:8100 for mobile-mcp) and prints
the tables.
  --rounds N      timed calls per screen and measurement (default 20, at least 2)
  --only SERVER   run one server: tabwire, or mobile-mcp
  --platform P    run one platform: android, or ios";

impl Options {
    /// Reads the arguments after the program name; `Ok(None)` for `--help`.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Options>, String> {
        let mut options = Options {
            rounds: 20,
            only: None,
            platform: None,
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--rounds" => {
                    options.rounds = args
                        .next()
                        .and_then(|n| n.parse().ok())
                        .filter(|n| *n >= 2)
                        .ok_or("--rounds needs a number of at least 2")?;
                }
                "--only" => {
                    options.only = Some(match args.next().as_deref() {
                        Some("tabwire") => Server::Tabwire,
                        Some("mobile-mcp") => Server::MobileMcp,
                        _ => return Err("--only takes tabwire or mobile-mcp".into()),
                    });
                }
                "--platform" => {
                    options.platform = Some(match args.next().as_deref() {
                        Some(p @ ("android" | "ios")) => p.to_owned(),
                        _ => return Err("--platform takes android or ios".into()),
                    });
                }
                "-h" | "--help" => return Ok(None),
                other => return Err(format!("unknown argument {other}")),
            }
        }
        Ok(Some(options))
    }

    /// Whether `platform` (`android`, `ios`) is measured.
    pub fn measures(&self, platform: &str) -> bool {
        self.platform.as_deref().is_none_or(|p| p == platform)
    }

    /// Whether `server` is measured.
    pub fn runs(&self, server: Server) -> bool {
        self.only.is_none_or(|only| only == server)
    }
}
