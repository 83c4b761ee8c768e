//! The launched profile (`tabwire-hub --launch-browser`): a Chromium profile that tabwire owns,
//! started by the hub with the extension loaded, paired and connected, with no clicks
//! (docs/launched-browser.md).
//!
//! - This file: the settings as validated into [`crate::Config`] ([`LaunchSettings`]: the
//!   browser's name, the profile directory, the extension folder, headless or not) and the
//!   launched browser's [`Status`], which `doctor` reads through [`Launched`] in the hub's state.
//! - [`profile`]: preparing the profile before Chromium starts — the private directory, a
//!   Chromium still holding it, the hub-owned copy of the extension with its `config.json`, the
//!   pairing code the hub mints for itself, the record of the profile's browser ID.
//! - [`child`]: Chromium's command line and the child process (its own process group).
//! - [`watch`]: the task that watches it connect or exit, reports [`Event`]s, and stops it with
//!   the hub.
//! - [`check`]: the doctor's check of the launched browser.
//!
//! The hub identifies its browser by browser ID, never by name (a person may name their own
//! Chrome the same): on the first start the ID is the one that paired with the hub's own code,
//! and it is kept in the profile (`tabwire-launch.json`) for the next starts.

pub mod beside;
pub mod check;
pub mod child;
pub mod profile;
pub mod watch;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tabwire_protocol::messages::MAX_IDENTITY_LEN;

use crate::chrome;

pub use child::{Running, start};
pub use watch::Event;

/// The launched browser's name when none is given: an agent tells it from the user's own
/// Chrome by it.
pub const DEFAULT_NAME: &str = "tabwire Chromium";

/// Whether Chromium runs headless (`--headless`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Headless {
    /// Headless on Linux when there is no display (neither `DISPLAY` nor `WAYLAND_DISPLAY`);
    /// with a window on macOS.
    #[default]
    Auto,
    /// Always headless.
    Always,
    /// Always with a window.
    Never,
}

impl Headless {
    /// Whether to run headless on `os`, `display` telling whether a display is available.
    pub fn resolve(self, os: chrome::Os, display: bool) -> bool {
        match self {
            Headless::Always => true,
            Headless::Never => false,
            Headless::Auto => os == chrome::Os::Linux && !display,
        }
    }
}

/// What to do when Google Chrome does not load the extension.
pub fn chrome_hint() -> String {
    "Google Chrome 137 and later ignore --load-extension, which the launched browser needs: \
     install Chromium (sudo apt-get install chromium; macOS: brew install --cask chromium), or \
     set TABWIRE_CHROME to Chromium or Chrome for Testing."
        .to_owned()
}

/// Whether this process has a display to open windows on (Linux's X11 or Wayland).
pub fn display_here() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()))
}

/// The launched profile's validated settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSettings {
    /// The browser's name, as agents see it.
    pub name: String,
    /// The profile directory (Chromium's `--user-data-dir`).
    pub profile: PathBuf,
    /// Whether the profile was given (`--browser-profile`) rather than the default, which moves
    /// for a snap Chromium (see [`LaunchSettings::profile_for`]).
    pub profile_given: bool,
    /// The extension folder to copy from (holds `manifest.json` and a built `pkg/`).
    pub extension: PathBuf,
    /// Headless or not.
    pub headless: Headless,
}

impl LaunchSettings {
    /// The profile directory for `browser`. A snap may not write hidden directories in the
    /// home directory, so a snap Chromium's default profile is under `~/snap/chromium/common`,
    /// the snap's own; a given profile is used as given.
    pub fn profile_for(&self, browser: &chrome::Found, home: Option<&Path>) -> PathBuf {
        match home {
            Some(home) if browser.is_snap() && !self.profile_given => {
                home.join("snap/chromium/common/tabwire/chromium")
            }
            _ => self.profile.clone(),
        }
    }
}

/// Why the launch settings make no launched profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// `--launch-browser` in hosted mode.
    #[error(
        "--launch-browser starts a browser on this computer for a local hub; a hosted hub's \
         browsers are other people's and connect with tokens (drop --launch-browser or \
         --auth-dir)"
    )]
    HostedMode,
    /// A flag of the launched profile without `--launch-browser`.
    #[error("{0} belongs to the launched browser: give --launch-browser too")]
    LaunchOnly(&'static str),
    /// The name is blank, too long or holds control characters.
    #[error(
        "--browser-name {0:?}: a browser name is 1 to {MAX_IDENTITY_LEN} characters, without \
         control characters"
    )]
    Name(String),
    /// No default profile directory without a home directory.
    #[error(
        "cannot tell where to keep the launched browser's profile: set HOME or give --browser-profile"
    )]
    NoProfileDir,
    /// No extension folder beside the hub nor where it was built (the last place looked).
    #[error(
        "cannot find the tabwire extension beside tabwire-hub (extension/, or \
         ../share/tabwire/extension) nor at {}; give --extension DIR",
        .0.display()
    )]
    NoExtension(PathBuf),
    /// The extension folder could be changed by another user: the hub would load their code
    /// into the launched browser, with its pairing code.
    #[error(
        "the extension folder {} is {why}: another user could put their code in the launched \
         browser; use a folder only you can change",
        path.display()
    )]
    NotOurs {
        /// The folder.
        path: PathBuf,
        /// Whose it is, or who may write it.
        why: String,
    },
    /// The folder given is not the extension's.
    #[error("{} is not the tabwire extension folder (it has no manifest.json)", .0.display())]
    NotAnExtension(PathBuf),
    /// The extension's wasm is not built.
    #[error(
        "the extension in {} is not built (it has no pkg/): run extension/build.sh",
        .0.display()
    )]
    NotBuilt(PathBuf),
}

/// The settings as given, before validation (from [`crate::Settings`]).
#[derive(Debug, Clone, Default)]
pub struct Given {
    /// `--launch-browser`.
    pub launch: bool,
    /// `--browser-name`.
    pub name: Option<String>,
    /// `--browser-profile`.
    pub profile: Option<PathBuf>,
    /// `--extension`.
    pub extension: Option<PathBuf>,
    /// `--headless`.
    pub headless: Option<Headless>,
}

/// Where the launched profile and its files live on this system.
#[derive(Debug, Clone)]
pub struct Places {
    /// `$XDG_DATA_HOME`.
    pub xdg_data_home: Option<PathBuf>,
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// The default extension folder ([`beside::default_extension`]): beside the executable,
    /// or the checkout's the hub was built in; or a folder beside the executable refused, and
    /// why.
    pub built_extension: Result<PathBuf, beside::Refused>,
}

/// None of the places known; no default extension folder.
impl Default for Places {
    fn default() -> Places {
        Places {
            xdg_data_home: None,
            home: None,
            built_extension: Ok(PathBuf::new()),
        }
    }
}

impl Places {
    /// This process's.
    pub fn here() -> Places {
        let nonempty = |name: &str| {
            std::env::var_os(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        };
        Places {
            xdg_data_home: nonempty("XDG_DATA_HOME"),
            home: nonempty("HOME"),
            built_extension: beside::default_extension(),
        }
    }
}

/// Validates `given`: `None` without `--launch-browser` (and then none of its flags may be
/// given), the settings otherwise. `hosted` refuses it.
pub fn validate(
    given: Given,
    hosted: bool,
    places: &Places,
) -> Result<Option<LaunchSettings>, SettingsError> {
    if !given.launch {
        let flags = [
            (given.name.is_some(), "--browser-name"),
            (given.profile.is_some(), "--browser-profile"),
            (given.extension.is_some(), "--extension"),
            (given.headless.is_some(), "--headless"),
        ];
        return match flags.iter().find(|(set, _)| *set) {
            Some((_, flag)) => Err(SettingsError::LaunchOnly(flag)),
            None => Ok(None),
        };
    }
    if hosted {
        return Err(SettingsError::HostedMode);
    }
    let name = match given.name {
        None => DEFAULT_NAME.to_owned(),
        Some(name) => {
            let trimmed = name.trim();
            if !tabwire_protocol::has_visible_char(trimmed)
                || trimmed.chars().count() > MAX_IDENTITY_LEN
                || trimmed.chars().any(tabwire_protocol::is_hidden_char)
            {
                return Err(SettingsError::Name(name));
            }
            trimmed.to_owned()
        }
    };
    let profile_given = given.profile.is_some();
    let profile = match given.profile {
        Some(profile) => std::path::absolute(&profile).unwrap_or(profile),
        None => default_profile_dir(
            chrome::Os::current(),
            places.xdg_data_home.as_deref(),
            places.home.as_deref(),
        )
        .ok_or(SettingsError::NoProfileDir)?,
    };
    let extension = match given.extension {
        Some(dir) => std::path::absolute(&dir).unwrap_or(dir),
        None => match &places.built_extension {
            Ok(dir) if dir.join("manifest.json").is_file() => dir.clone(),
            Ok(dir) => return Err(SettingsError::NoExtension(dir.clone())),
            Err((path, why)) => {
                return Err(SettingsError::NotOurs {
                    path: path.clone(),
                    why: why.clone(),
                });
            }
        },
    };
    if let Some(why) = beside::not_ours(&extension) {
        return Err(SettingsError::NotOurs {
            path: extension,
            why,
        });
    }
    if !extension.join("manifest.json").is_file() {
        return Err(SettingsError::NotAnExtension(extension));
    }
    if !extension.join("pkg").is_dir() {
        return Err(SettingsError::NotBuilt(extension));
    }
    Ok(Some(LaunchSettings {
        name,
        profile,
        profile_given,
        extension,
        headless: given.headless.unwrap_or_default(),
    }))
}

/// The launched profile's default directory: `$XDG_DATA_HOME/tabwire/chromium`, else
/// `~/.local/share/tabwire/chromium` (on macOS `~/Library/Application Support/tabwire/chromium`).
/// `None` without a home directory. Data, not state: logins made there are the user's.
pub fn default_profile_dir(
    os: chrome::Os,
    xdg_data_home: Option<&Path>,
    home: Option<&Path>,
) -> Option<PathBuf> {
    let base = match os {
        chrome::Os::MacOs => home?.join("Library/Application Support"),
        chrome::Os::Linux => match xdg_data_home.filter(|dir| dir.is_absolute()) {
            Some(dir) => dir.to_path_buf(),
            None => home?.join(".local/share"),
        },
    };
    Some(base.join("tabwire").join("chromium"))
}

/// The launched browser as the hub knows it: what `doctor` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The browser found to run, once the search ran.
    pub browser: Option<chrome::Found>,
    /// The profile directory in use.
    pub profile: PathBuf,
    /// Chromium's process ID, while the hub's child runs (or the other Chromium holding the
    /// profile, in [`Phase::InUse`]).
    pub pid: Option<u32>,
    /// The profile's browser ID, once known (from an earlier start, or its first pairing).
    pub browser_id: Option<String>,
    /// Where it is in its life.
    pub phase: Phase,
}

/// Where the launched browser is in its life. Whether it is connected is the registry's to
/// say, not this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// The hub has not started it yet.
    Starting,
    /// The hub's child runs.
    Running,
    /// Another Chromium, not started by this hub, holds the profile: the hub waits for its
    /// extension to connect instead of starting a second one.
    InUse,
    /// The child exited: how (`exit code 1`, `signal 9`), and whether it had connected.
    Exited {
        /// How it ended.
        how: String,
        /// Whether its extension had connected before.
        had_connected: bool,
    },
    /// Chromium could not be started at all: why.
    Failed(String),
}

/// The launched browser in the hub's state: its settings and its status.
#[derive(Debug)]
pub struct Launched {
    /// The settings it was started with.
    pub settings: LaunchSettings,
    status: Mutex<Status>,
}

impl Launched {
    /// A browser about to be launched with `settings`.
    pub fn new(settings: LaunchSettings) -> Launched {
        let profile = settings.profile.clone();
        Launched {
            settings,
            status: Mutex::new(Status {
                browser: None,
                profile,
                pid: None,
                browser_id: None,
                phase: Phase::Starting,
            }),
        }
    }

    /// Its status now.
    pub fn status(&self) -> Status {
        self.status.lock().unwrap().clone()
    }

    /// Changes its status.
    pub(crate) fn update(&self, change: impl FnOnce(&mut Status)) {
        change(&mut self.status.lock().unwrap());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory that looks like the extension folder, built or not.
    fn extension_dir(built: bool) -> PathBuf {
        let root = std::env::temp_dir().join(format!(
            "tabwire-launch-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        let extension = root.join("repo/extension");
        std::fs::create_dir_all(&extension).unwrap();
        std::fs::write(extension.join("manifest.json"), "{}").unwrap();
        if built {
            std::fs::create_dir(extension.join("pkg")).unwrap();
        }
        std::fs::create_dir_all(root.join("repo/target/debug")).unwrap();
        extension
    }

    fn places(built_extension: &Path) -> Places {
        Places {
            xdg_data_home: None,
            home: Some("/home/a".into()),
            built_extension: Ok(built_extension.to_path_buf()),
        }
    }

    fn launching() -> Given {
        Given {
            launch: true,
            ..Given::default()
        }
    }

    #[test]
    fn defaults_take_the_extension_the_hub_was_built_beside() {
        let extension = extension_dir(true);
        let settings = validate(launching(), false, &places(&extension))
            .unwrap()
            .unwrap();
        assert_eq!(settings.name, "tabwire Chromium");
        assert_eq!(settings.extension, extension);
        assert_eq!(settings.headless, Headless::Auto);
        assert!(!settings.profile_given);
        if cfg!(target_os = "macos") {
            assert_eq!(
                settings.profile,
                Path::new("/home/a/Library/Application Support/tabwire/chromium")
            );
        } else {
            assert_eq!(
                settings.profile,
                Path::new("/home/a/.local/share/tabwire/chromium")
            );
        }
        std::fs::remove_dir_all(extension.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn an_extension_folder_anyone_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let extension = extension_dir(true);
        std::fs::set_permissions(&extension, std::fs::Permissions::from_mode(0o777)).unwrap();
        let error = validate(launching(), false, &places(&extension)).unwrap_err();
        assert_eq!(
            error,
            SettingsError::NotOurs {
                path: extension.clone(),
                why: "writable by every user".into()
            }
        );
        std::fs::set_permissions(&extension, std::fs::Permissions::from_mode(0o775)).unwrap();
        assert!(validate(launching(), false, &places(&extension)).is_ok());
        std::fs::remove_dir_all(extension.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn an_unbuilt_or_missing_extension_is_named_with_its_fix() {
        let unbuilt = extension_dir(false);
        let error = validate(launching(), false, &places(&unbuilt)).unwrap_err();
        assert_eq!(error, SettingsError::NotBuilt(unbuilt.clone()));
        assert!(
            error.to_string().contains("run extension/build.sh"),
            "{error}"
        );
        let nowhere = Path::new("/nonexistent/extension");
        let error = validate(launching(), false, &places(nowhere)).unwrap_err();
        assert!(matches!(error, SettingsError::NoExtension(_)), "{error}");
        assert!(
            error.to_string().contains("give --extension DIR"),
            "{error}"
        );
        let given = Given {
            extension: Some(unbuilt.parent().unwrap().to_path_buf()),
            ..launching()
        };
        let error = validate(given, false, &places(nowhere)).unwrap_err();
        assert!(matches!(error, SettingsError::NotAnExtension(_)), "{error}");
        std::fs::remove_dir_all(unbuilt.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn a_refused_folder_beside_the_hub_stops_the_launch_unless_another_is_given() {
        let built = extension_dir(true);
        let refused = Places {
            built_extension: Err((
                "/opt/t/share/tabwire/extension".into(),
                "in /opt/t/share, which is writable by every user".to_owned(),
            )),
            ..places(&built)
        };
        // Refused, not quietly replaced by another folder.
        let error = validate(launching(), false, &refused).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the extension folder /opt/t/share/tabwire/extension is in /opt/t/share, which is \
             writable by every user: another user could put their code in the launched browser; \
             use a folder only you can change"
        );
        let given = Given {
            extension: Some(built.clone()),
            ..launching()
        };
        let settings = validate(given, false, &refused).unwrap().unwrap();
        assert_eq!(settings.extension, built);
        std::fs::remove_dir_all(built.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn flags_without_launch_browser_and_hosted_mode_are_refused() {
        let given = Given {
            profile: Some("/p".into()),
            ..Given::default()
        };
        assert_eq!(
            validate(given, false, &Places::default()),
            Err(SettingsError::LaunchOnly("--browser-profile"))
        );
        assert_eq!(
            validate(Given::default(), false, &Places::default()),
            Ok(None)
        );
        let error = validate(launching(), true, &Places::default()).unwrap_err();
        assert_eq!(error, SettingsError::HostedMode);
        assert!(error.to_string().contains("local hub"), "{error}");
    }

    #[test]
    fn names_keep_the_hubs_rule() {
        let extension = extension_dir(true);
        let with_name = |name: &str| {
            validate(
                Given {
                    name: Some(name.to_owned()),
                    extension: Some(extension.clone()),
                    profile: Some("/p/profile".into()),
                    ..launching()
                },
                false,
                &Places::default(),
            )
        };
        assert_eq!(with_name("  Work bot ").unwrap().unwrap().name, "Work bot");
        // A bidi override or a zero-width space would get the browser's own hello refused.
        for bad in [
            "",
            "  ",
            "a\nb",
            "a\u{202e}b",
            "a\u{200b}b",
            &"x".repeat(MAX_IDENTITY_LEN + 1),
        ] {
            assert!(
                matches!(with_name(bad), Err(SettingsError::Name(_))),
                "{bad:?}"
            );
        }
        let given = with_name("x").unwrap().unwrap();
        assert!(given.profile_given);
        assert_eq!(given.profile, Path::new("/p/profile"));
        std::fs::remove_dir_all(extension.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn the_default_profile_follows_the_platform_and_moves_for_a_snap() {
        let home = Path::new("/home/a");
        assert_eq!(
            default_profile_dir(chrome::Os::Linux, Some(Path::new("/data")), Some(home)),
            Some(PathBuf::from("/data/tabwire/chromium"))
        );
        // A relative XDG directory is invalid by the spec: ignored.
        assert_eq!(
            default_profile_dir(chrome::Os::Linux, Some(Path::new("data")), Some(home)),
            Some(PathBuf::from("/home/a/.local/share/tabwire/chromium"))
        );
        assert_eq!(
            default_profile_dir(chrome::Os::MacOs, Some(Path::new("/data")), Some(home)),
            Some(PathBuf::from(
                "/home/a/Library/Application Support/tabwire/chromium"
            ))
        );
        assert_eq!(default_profile_dir(chrome::Os::Linux, None, None), None);
        let settings = LaunchSettings {
            name: DEFAULT_NAME.into(),
            profile: "/home/a/.local/share/tabwire/chromium".into(),
            profile_given: false,
            extension: "/repo/extension".into(),
            headless: Headless::Auto,
        };
        let snap = chrome::Found {
            path: "/snap/bin/chromium".into(),
            kind: chrome::Kind::Chromium,
        };
        let debian = chrome::Found {
            path: "/usr/lib/chromium/chromium".into(),
            kind: chrome::Kind::Chromium,
        };
        assert_eq!(
            settings.profile_for(&snap, Some(home)),
            Path::new("/home/a/snap/chromium/common/tabwire/chromium")
        );
        assert_eq!(settings.profile_for(&debian, Some(home)), settings.profile);
        let given = LaunchSettings {
            profile_given: true,
            ..settings.clone()
        };
        assert_eq!(given.profile_for(&snap, Some(home)), settings.profile);
    }

    #[test]
    fn headless_auto_follows_the_display() {
        use chrome::Os::{Linux, MacOs};
        assert!(Headless::Auto.resolve(Linux, false));
        assert!(!Headless::Auto.resolve(Linux, true));
        assert!(!Headless::Auto.resolve(MacOs, false));
        assert!(Headless::Always.resolve(MacOs, true));
        assert!(!Headless::Never.resolve(Linux, false));
    }
}
