//! Finding a Chromium or Google Chrome to run: where users have them, in the order tabwire
//! prefers them, for the launched profile (`--launch-browser`), `tabwire-hub find-chrome` and
//! the end-to-end tests alike.
//!
//! The order puts every Chromium build before Google Chrome, because the launched profile loads
//! the extension with `--load-extension`, which branded Google Chrome ignores since version 137
//! ("--load-extension is not allowed in Google Chrome, ignoring"; chromium-extensions PSA of
//! May 2025, and Selenium, Cypress, web-ext and SeleniumBase issues about it). Chromium, Chrome
//! for Testing and other unbranded builds still take it. `TABWIRE_CHROME` overrides the search,
//! and an override that names no executable file is an error of its own: falling back past an
//! explicit choice would run a browser the user did not pick.
//!
//! On Debian, `/usr/bin/chromium` is a wrapper script that adds flags of its own (an empty
//! `--load-extension=` among them), so the real binary, `/usr/lib/chromium/chromium`, comes
//! first (PLATFORM.md).
//!
//! [`find`] looks at this process's environment; [`find_in`] is the same search over an
//! [`Environment`] and an "is executable" probe passed in, so every platform's order is tested
//! without touching the disk.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variable that names the browser to run, overriding the search.
pub const OVERRIDE: &str = "TABWIRE_CHROME";

/// What kind of browser was found: callers warn about Google Chrome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An unbranded Chromium build (a distribution's package, a snap, a macOS app).
    Chromium,
    /// Google Chrome for Testing: branded as Chrome but takes `--load-extension`.
    ChromeForTesting,
    /// Branded Google Chrome, which ignores `--load-extension` since version 137.
    GoogleChrome,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Chromium => "Chromium",
            Kind::ChromeForTesting => "Chrome for Testing",
            Kind::GoogleChrome => "Google Chrome",
        })
    }
}

/// A browser found, and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The executable to run.
    pub path: PathBuf,
    /// Its kind.
    pub kind: Kind,
}

impl Found {
    /// Whether it is a snap (Ubuntu's Chromium): a snap may not write hidden directories of the
    /// home directory (`~/.local/…`), so the launched profile goes elsewhere for it.
    pub fn is_snap(&self) -> bool {
        self.path.starts_with("/snap/")
    }
}

/// The operating systems whose places are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    /// Linux (Debian, Ubuntu, Fedora and alike).
    Linux,
    /// macOS.
    MacOs,
}

impl Os {
    /// The system this hub was built for (other Unixes search like Linux).
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::MacOs
        } else {
            Os::Linux
        }
    }
}

/// What the search reads from the environment.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// `TABWIRE_CHROME`, when set (an empty value counts as unset).
    pub chrome: Option<OsString>,
    /// `PATH`.
    pub path: Option<OsString>,
    /// The home directory (for `~/Applications` on macOS).
    pub home: Option<PathBuf>,
}

impl Environment {
    /// This process's environment.
    pub fn here() -> Environment {
        let nonempty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
        Environment {
            chrome: nonempty(OVERRIDE),
            path: nonempty("PATH"),
            home: nonempty("HOME").map(PathBuf::from),
        }
    }
}

/// No browser to run, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotFound {
    /// `TABWIRE_CHROME` names something that is not an executable file.
    #[error(
        "{OVERRIDE}={} is not an executable file; point {OVERRIDE} at the Chromium or Chrome \
         binary (e.g. /usr/lib/chromium/chromium), or unset it to search the usual places",
        .0.display()
    )]
    Override(PathBuf),
    /// Nothing in any of the usual places.
    #[error("{}", nowhere_text(.looked, *.os))]
    Nowhere {
        /// Every place looked at, in order.
        looked: Vec<String>,
        /// The system searched (the fix differs).
        os: Os,
    },
}

fn nowhere_text(looked: &[String], os: Os) -> String {
    let mut text = String::from("no Chromium or Google Chrome found; looked at, in order:\n");
    for place in looked {
        text.push_str("  ");
        text.push_str(place);
        text.push('\n');
    }
    let install = match os {
        Os::Linux => "sudo apt-get install chromium (Fedora: sudo dnf install chromium)",
        Os::MacOs => "brew install --cask chromium",
    };
    text.push_str(&format!("fix: {install}, or {OVERRIDE}=/path/to/chrome"));
    text
}

/// One place to look.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    /// A fixed path.
    File(PathBuf),
    /// A command name looked up on `PATH`.
    OnPath(&'static str),
}

impl Place {
    fn describe(&self) -> String {
        match self {
            Place::File(path) => path.display().to_string(),
            Place::OnPath(name) => format!("{name} on PATH"),
        }
    }
}

/// The places of `os`, in order, each with the kind of browser found there.
fn places(os: Os, home: Option<&Path>) -> Vec<(Place, Kind)> {
    let file = |path: &str| Place::File(PathBuf::from(path));
    match os {
        Os::Linux => vec![
            (file("/usr/lib/chromium/chromium"), Kind::Chromium),
            (
                file("/usr/lib/chromium-browser/chromium-browser"),
                Kind::Chromium,
            ),
            (
                file("/usr/lib64/chromium-browser/chromium-browser"),
                Kind::Chromium,
            ),
            (file("/usr/bin/chromium"), Kind::Chromium),
            (file("/usr/bin/chromium-browser"), Kind::Chromium),
            (file("/snap/bin/chromium"), Kind::Chromium),
            (Place::OnPath("chromium"), Kind::Chromium),
            (Place::OnPath("chromium-browser"), Kind::Chromium),
            (file("/opt/google/chrome/chrome"), Kind::GoogleChrome),
            (Place::OnPath("google-chrome-stable"), Kind::GoogleChrome),
            (Place::OnPath("google-chrome"), Kind::GoogleChrome),
        ],
        Os::MacOs => {
            // Each app in /Applications, then in the user's own ~/Applications.
            let app = |bundle: &str, binary: &str| {
                let inside = format!("{bundle}.app/Contents/MacOS/{binary}");
                let mut both = vec![Place::File(Path::new("/Applications").join(&inside))];
                if let Some(home) = home {
                    both.push(Place::File(home.join("Applications").join(&inside)));
                }
                both
            };
            let mut places = Vec::new();
            places.extend(
                app("Chromium", "Chromium")
                    .into_iter()
                    .map(|place| (place, Kind::Chromium)),
            );
            places.push((Place::OnPath("chromium"), Kind::Chromium));
            places.extend(
                app("Google Chrome for Testing", "Google Chrome for Testing")
                    .into_iter()
                    .map(|place| (place, Kind::ChromeForTesting)),
            );
            places.extend(
                app("Google Chrome", "Google Chrome")
                    .into_iter()
                    .map(|place| (place, Kind::GoogleChrome)),
            );
            places
        }
    }
}

/// The kind of a browser named by `TABWIRE_CHROME`, guessed from its path: Google Chrome's
/// and Chrome for Testing's usual names, else Chromium (the user chose it; the guess only
/// decides whether to warn).
fn kind_of(path: &Path) -> Kind {
    let text = path.to_string_lossy().to_lowercase();
    if text.contains("for testing") || text.contains("chrome-for-testing") {
        Kind::ChromeForTesting
    } else if text.contains("google-chrome")
        || text.contains("google chrome")
        || text.contains("/opt/google/chrome/")
    {
        Kind::GoogleChrome
    } else {
        Kind::Chromium
    }
}

/// The search over `env` on `os`, with `is_executable` telling whether a path is an executable
/// file.
pub fn find_in(
    env: &Environment,
    os: Os,
    is_executable: impl Fn(&Path) -> bool,
) -> Result<Found, NotFound> {
    if let Some(chrome) = &env.chrome {
        let path = PathBuf::from(chrome);
        // A bare name is looked up on PATH, as a shell would.
        let resolved = if path.components().count() == 1 && !path.is_absolute() {
            on_path(env.path.as_deref(), chrome, &is_executable)
        } else {
            Some(path.clone()).filter(|path| is_executable(path))
        };
        return match resolved {
            Some(path) => Ok(Found {
                kind: kind_of(&path),
                path,
            }),
            None => Err(NotFound::Override(path)),
        };
    }
    let places = places(os, env.home.as_deref());
    for (place, kind) in &places {
        let hit = match place {
            Place::File(path) => Some(path.clone()).filter(|path| is_executable(path)),
            Place::OnPath(name) => on_path(env.path.as_deref(), OsStr::new(name), &is_executable),
        };
        if let Some(path) = hit {
            return Ok(Found { path, kind: *kind });
        }
    }
    Err(NotFound::Nowhere {
        looked: places.iter().map(|(place, _)| place.describe()).collect(),
        os,
    })
}

/// The first executable `name` in the directories of `path`.
fn on_path(
    path: Option<&OsStr>,
    name: &OsStr,
    is_executable: &impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    std::env::split_paths(path?)
        // An empty entry means the current directory, which a launcher must not trust.
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is a regular file (after symlinks) with an execute bit.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// The browser to run, for this process's environment.
pub fn find() -> Result<Found, NotFound> {
    find_in(&Environment::here(), Os::current(), is_executable)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// A search where exactly `present` are executable files.
    fn search(os: Os, env: Environment, present: &[&str]) -> Result<Found, NotFound> {
        let present: HashSet<PathBuf> = present.iter().map(PathBuf::from).collect();
        find_in(&env, os, |path| present.contains(path))
    }

    fn env_with_path(path: &str) -> Environment {
        Environment {
            path: Some(path.into()),
            home: Some("/home/a".into()),
            ..Environment::default()
        }
    }

    #[test]
    fn debian_prefers_the_real_binary_to_its_wrapper() {
        let found = search(
            Os::Linux,
            env_with_path("/usr/bin"),
            &["/usr/bin/chromium", "/usr/lib/chromium/chromium"],
        )
        .unwrap();
        assert_eq!(found.path, Path::new("/usr/lib/chromium/chromium"));
        assert_eq!(found.kind, Kind::Chromium);
    }

    #[test]
    fn linux_looks_at_every_chromium_before_google_chrome() {
        let order = [
            "/usr/lib/chromium/chromium",
            "/usr/lib/chromium-browser/chromium-browser",
            "/usr/lib64/chromium-browser/chromium-browser",
            "/usr/bin/chromium",
            "/usr/bin/chromium-browser",
            "/snap/bin/chromium",
            "/p/chromium",
            "/p/chromium-browser",
            "/opt/google/chrome/chrome",
            "/p/google-chrome-stable",
            "/p/google-chrome",
        ];
        // Remove the winner one at a time: the next in line wins.
        for (at, expected) in order.iter().enumerate() {
            let found = search(Os::Linux, env_with_path("/p"), &order[at..]).unwrap();
            assert_eq!(found.path, Path::new(expected), "with {:?}", &order[at..]);
            let kind = if expected.contains("google") {
                Kind::GoogleChrome
            } else {
                Kind::Chromium
            };
            assert_eq!(found.kind, kind, "{expected}");
        }
        assert!(
            search(Os::Linux, env_with_path("/p"), &["/snap/bin/chromium"])
                .unwrap()
                .is_snap()
        );
    }

    #[test]
    fn path_is_searched_in_order_and_relative_entries_are_skipped() {
        let found = search(
            Os::Linux,
            env_with_path("bin:/first:/second"),
            &["bin/chromium", "/second/chromium", "/first/google-chrome"],
        )
        .unwrap();
        assert_eq!(found.path, Path::new("/second/chromium"));
        let found = search(
            Os::Linux,
            env_with_path("/first:/second"),
            &["/second/chromium-browser", "/first/google-chrome"],
        )
        .unwrap();
        assert_eq!(found.path, Path::new("/second/chromium-browser"));
    }

    #[test]
    fn macos_prefers_chromium_then_chrome_for_testing_then_chrome() {
        let order = [
            "/Applications/Chromium.app/Contents/MacOS/Chromium",
            "/home/a/Applications/Chromium.app/Contents/MacOS/Chromium",
            "/p/chromium",
            "/Applications/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing",
            "/home/a/Applications/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for \
             Testing",
            "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
            "/home/a/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
        ];
        for (at, expected) in order.iter().enumerate() {
            let found = search(Os::MacOs, env_with_path("/p"), &order[at..]).unwrap();
            assert_eq!(found.path, Path::new(expected));
            let kind = if expected.contains("for Testing") {
                Kind::ChromeForTesting
            } else if expected.contains("Google Chrome") {
                Kind::GoogleChrome
            } else {
                Kind::Chromium
            };
            assert_eq!(found.kind, kind, "{expected}");
        }
        // Linux's places mean nothing on macOS.
        assert!(
            search(
                Os::MacOs,
                env_with_path("/p"),
                &["/usr/lib/chromium/chromium"]
            )
            .is_err()
        );
    }

    #[test]
    fn the_override_wins_and_never_falls_back() {
        let with = |chrome: &str| Environment {
            chrome: Some(chrome.into()),
            ..env_with_path("/p")
        };
        let present = [
            "/usr/lib/chromium/chromium",
            "/opt/x/chrome",
            "/p/my-chrome",
        ];
        let found = search(Os::Linux, with("/opt/x/chrome"), &present).unwrap();
        assert_eq!(found.path, Path::new("/opt/x/chrome"));
        // A bare name is looked up on PATH.
        let found = search(Os::Linux, with("my-chrome"), &present).unwrap();
        assert_eq!(found.path, Path::new("/p/my-chrome"));
        // Missing: an error naming it, even though Chromium is installed.
        let error = search(Os::Linux, with("/nowhere/chrome"), &present).unwrap_err();
        assert_eq!(error, NotFound::Override(PathBuf::from("/nowhere/chrome")));
        let text = error.to_string();
        assert!(
            text.starts_with("TABWIRE_CHROME=/nowhere/chrome is not an executable file"),
            "{text}"
        );
        assert!(text.contains("unset it"), "{text}");
    }

    #[test]
    fn the_override_kind_is_guessed_from_the_path() {
        assert_eq!(
            kind_of(Path::new("/opt/google/chrome/chrome")),
            Kind::GoogleChrome
        );
        assert_eq!(
            kind_of(Path::new("/usr/bin/google-chrome-stable")),
            Kind::GoogleChrome
        );
        assert_eq!(
            kind_of(Path::new(
                "/Applications/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for \
                 Testing"
            )),
            Kind::ChromeForTesting
        );
        assert_eq!(
            kind_of(Path::new(
                "/home/a/chrome-for-testing/chrome-linux64/chrome"
            )),
            Kind::ChromeForTesting
        );
        assert_eq!(kind_of(Path::new("/opt/brave/brave")), Kind::Chromium);
    }

    #[test]
    fn not_found_lists_every_place_in_order_and_the_fix() {
        let error = search(Os::Linux, env_with_path("/p"), &[]).unwrap_err();
        let text = error.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "no Chromium or Google Chrome found; looked at, in order:"
        );
        assert_eq!(lines[1], "  /usr/lib/chromium/chromium");
        assert_eq!(lines[7], "  chromium on PATH");
        assert_eq!(lines[11], "  google-chrome on PATH");
        assert_eq!(
            lines[12],
            "fix: sudo apt-get install chromium (Fedora: sudo dnf install chromium), or \
             TABWIRE_CHROME=/path/to/chrome"
        );
        assert_eq!(lines.len(), 13, "{text}");
        let mac = search(Os::MacOs, env_with_path("/p"), &[])
            .unwrap_err()
            .to_string();
        assert!(
            mac.contains("/Applications/Chromium.app/Contents/MacOS/Chromium"),
            "{mac}"
        );
        assert!(mac.contains("fix: brew install --cask chromium"), "{mac}");
    }

    #[test]
    fn without_path_or_home_fixed_places_still_count() {
        let found = search(
            Os::Linux,
            Environment::default(),
            &["/opt/google/chrome/chrome"],
        )
        .unwrap();
        assert_eq!(found.kind, Kind::GoogleChrome);
        let found = search(
            Os::MacOs,
            Environment::default(),
            &["/Applications/Chromium.app/Contents/MacOS/Chromium"],
        )
        .unwrap();
        assert_eq!(found.kind, Kind::Chromium);
    }

    #[test]
    fn is_executable_needs_a_file_with_an_execute_bit() {
        assert!(is_executable(Path::new("/bin/sh")));
        assert!(!is_executable(Path::new("/")));
        assert!(!is_executable(Path::new("/nonexistent/chrome")));
        assert!(!is_executable(Path::new("/etc/passwd")));
    }
}
