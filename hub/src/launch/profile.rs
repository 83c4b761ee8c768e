//! The launched profile's directory, prepared before Chromium starts: private to the user, not
//! held by another Chromium, with a fresh hub-owned copy of the extension whose bundled
//! `config.json` points at this hub (and carries a pairing code when the profile is not paired
//! yet), and the record of the profile's browser ID.
//!
//! Everything tabwire writes lives inside the profile directory, beside Chromium's own files
//! (which Chromium leaves alone): `tabwire-extension/` (the copy Chromium loads, replaced at
//! every start so a rebuilt wasm is picked up) and `tabwire-launch.json` (the browser ID). A
//! `--browser-profile` given by the user thus never has a sibling overwritten, and deleting the
//! profile forgets everything at once.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tabwire_protocol::local::PrivateDirProblem;
use tabwire_protocol::pairing::PairingCode;

use crate::pairing::{self, PairingError, PairingKind, Pairings};
use crate::private_dir::{self, Unfit};

/// The copy of the extension Chromium loads, inside the profile.
const EXTENSION_COPY: &str = "tabwire-extension";
/// The record of the profile's browser ID, inside the profile.
pub const RECORD: &str = "tabwire-launch.json";
/// Chromium's lock on a profile in use: a symlink to `HOSTNAME-PID`.
const SINGLETON_LOCK: &str = "SingletonLock";
/// How long the hub's own pairing code stays open: as long as `tabwire-hub pair`'s default.
/// A first start of Chromium takes seconds; the code is used, or expires, or is discarded once
/// the profile connects with its key.
const CODE_TTL: Duration = Duration::from_secs(180);

/// Why the profile cannot be prepared.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// A file system operation failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The profile directory is not private to the user: its cookies and logins would be
    /// readable by others.
    #[error(
        "the browser profile {} {why}: it holds the launched browser's cookies and logins",
        path.display()
    )]
    NotPrivate {
        /// The directory.
        path: PathBuf,
        /// What is wrong, with its fix.
        why: String,
    },
    /// The extension folder holds a symbolic link, which is not copied.
    #[error(
        "the extension folder holds a symbolic link, {}, which is not copied into the profile: \
         replace it with the file or use --extension with a folder without links",
        .0.display()
    )]
    Symlink(PathBuf),
    /// The pairing state could not be read or written.
    #[error(transparent)]
    Pairing(#[from] PairingError),
}

fn io_error(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> ProfileError {
    let path = path.to_path_buf();
    move |source| ProfileError::Io {
        action,
        path,
        source,
    }
}

/// What a prepared profile starts with.
#[derive(Debug)]
pub struct Prepared {
    /// The extension copy to load.
    pub extension: PathBuf,
    /// The pairing code minted for this start, when the profile was not known to be paired.
    pub code: Option<PairingCode>,
    /// The profile's browser ID from an earlier start, when its pairing still stands.
    pub known_id: Option<String>,
}

/// Creates the profile directory private to the user (0700), or checks that it is.
pub fn ensure_private(profile: &Path) -> Result<(), ProfileError> {
    let why = match private_dir::ensure(profile) {
        Ok(()) => return Ok(()),
        Err(Unfit::Io(error)) => return Err(io_error("create", profile)(error)),
        Err(Unfit::Problem(PrivateDirProblem::NotADirectory)) => "is not a directory".to_owned(),
        Err(Unfit::Problem(PrivateDirProblem::Owner(owner))) => {
            format!("belongs to user {owner}; choose another --browser-profile")
        }
        Err(Unfit::Problem(PrivateDirProblem::OpenToOthers { mode })) => format!(
            "is open to other users (mode {mode:o}); chmod 700 {}",
            profile.display()
        ),
    };
    Err(ProfileError::NotPrivate {
        path: profile.to_path_buf(),
        why,
    })
}

/// The process of this host that holds `profile` (its `SingletonLock` names it and it is a
/// browser of ours running that profile), if any: Chromium refuses a second instance on one
/// profile (it hands the command line to the first and exits), so the hub must not start one.
pub fn holder(profile: &Path) -> Option<u32> {
    let target = std::fs::read_link(profile.join(SINGLETON_LOCK)).ok()?;
    let alive = |pid| runs_profile(pid, profile);
    lock_holder(&target.to_string_lossy(), &hostname()?, alive)
}

/// Whether process `pid` is a browser of this user running `profile`. A lock survives a crash
/// or a reboot, and its PID may then be any other program's (another user's, or the person's
/// everyday Chrome): the hub must neither refuse to start over it nor tell the person to kill
/// it. On Linux the process must be ours and its command line must name this profile; where
/// there is no `/proc`, only a live process of ours counts.
fn runs_profile(pid: u32, profile: &Path) -> bool {
    if !process_ours(pid) {
        return false;
    }
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return !Path::new("/proc/self").exists();
    };
    let wanted = format!("--user-data-dir={}", profile.display());
    cmdline
        .split(|&byte| byte == 0)
        .any(|arg| arg == wanted.as_bytes())
}

/// The PID a `SingletonLock` target (`HOSTNAME-PID`) names when it is on `host` and `alive`
/// says it runs. A lock of another host (a profile on a shared home directory) is not judged:
/// Chromium itself asks the person then.
fn lock_holder(target: &str, host: &str, alive: impl Fn(u32) -> bool) -> Option<u32> {
    let (lock_host, pid) = target.rsplit_once('-')?;
    let pid: u32 = pid.parse().ok()?;
    (lock_host == host && pid > 0 && alive(pid)).then_some(pid)
}

fn hostname() -> Option<String> {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length, which is passed.
    let done = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    if done != 0 {
        return None;
    }
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8(buffer[..end].to_vec()).ok()
}

/// Whether a process `pid` exists and this user may signal it (signal 0 checks without
/// sending; EPERM is another user's process, which holds no profile of ours).
fn process_ours(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 sends nothing.
    pid > 0 && unsafe { libc::kill(pid, 0) } == 0
}

/// Prepares `profile` for a start of Chromium: a fresh extension copy from `source` with its
/// `config.json` (server `browser_url`, name `name`), and a pairing code from `pairings` unless
/// the profile's recorded browser ID is still paired.
pub fn prepare(
    profile: &Path,
    source: &Path,
    browser_url: &str,
    name: &str,
    pairings: &Pairings,
) -> Result<Prepared, ProfileError> {
    let extension = copy_extension(source, profile)?;
    let recorded = read_record(profile);
    let summary = pairings.summary();
    let known_id = recorded.filter(|id| {
        summary
            .paired
            .iter()
            .any(|(kind, peer, ..)| *kind == PairingKind::Browser && peer == id)
    });
    let code = match known_id {
        Some(_) => None,
        None => Some(pairing::new_code(
            pairings.dir(),
            CODE_TTL,
            PairingKind::Browser,
        )?),
    };
    write_config(&extension, browser_url, name, code.as_ref())?;
    Ok(Prepared {
        extension,
        code,
        known_id,
    })
}

/// Replaces `profile/tabwire-extension` with a copy of `source` (without a `config.json` a
/// developer may keep there); returns the copy's path.
fn copy_extension(source: &Path, profile: &Path) -> Result<PathBuf, ProfileError> {
    let copy = profile.join(EXTENSION_COPY);
    match std::fs::remove_dir_all(&copy) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => {
            return Err(io_error("remove the old copy", &copy)(error));
        }
        _ => {}
    }
    copy_dir(source, &copy, true)?;
    Ok(copy)
}

fn copy_dir(from: &Path, to: &Path, top: bool) -> Result<(), ProfileError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(to)
        .map_err(io_error("create", to))?;
    for entry in std::fs::read_dir(from).map_err(io_error("read", from))? {
        let entry = entry.map_err(io_error("read", from))?;
        let name = entry.file_name();
        if top && name == "config.json" {
            continue;
        }
        let source = entry.path();
        // Links are not followed: one pointing out of the folder (at a key in the home
        // directory, say) would be copied into the profile where the extension can read it.
        // The repository's extension folder has none.
        let meta = std::fs::symlink_metadata(&source).map_err(io_error("read", &source))?;
        let target = to.join(&name);
        if meta.file_type().is_symlink() {
            return Err(ProfileError::Symlink(source));
        }
        if meta.is_dir() {
            copy_dir(&source, &target, false)?;
        } else if meta.is_file() {
            std::fs::copy(&source, &target).map_err(io_error("copy", &source))?;
        }
    }
    Ok(())
}

/// The extension's bundled configuration (extension/README.md): the code only while the
/// profile is not paired; the extension ignores it once it holds a key.
fn write_config(
    extension: &Path,
    browser_url: &str,
    name: &str,
    code: Option<&PairingCode>,
) -> Result<(), ProfileError> {
    let mut config = serde_json::json!({"serverUrl": browser_url, "browserName": name});
    if let Some(code) = code {
        config["pairingCode"] = code.as_str().into();
    }
    write_private(
        &extension.join("config.json"),
        config.to_string().as_bytes(),
    )
}

/// The record of the profile's browser ID.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    browser_id: String,
}

/// The browser ID recorded in `profile`, if any. A damaged record counts as none: the start
/// mints a code, which a profile that holds its key ignores, so the hub cannot tell which
/// browser is its own and says so after a minute (docs/launched-browser.md).
pub fn read_record(profile: &Path) -> Option<String> {
    let text = std::fs::read_to_string(profile.join(RECORD)).ok()?;
    let record: Record = serde_json::from_str(&text).ok()?;
    Some(record.browser_id)
}

/// Records `browser_id` as the profile's.
pub fn write_record(profile: &Path, browser_id: &str) -> Result<(), ProfileError> {
    let record = Record {
        browser_id: browser_id.to_owned(),
    };
    let text = serde_json::to_string(&record).expect("a record serializes");
    write_private(&profile.join(RECORD), text.as_bytes())
}

/// Writes `path` afresh, readable by the user only (it may hold a pairing code).
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), ProfileError> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => {
            return Err(io_error("replace", path)(error));
        }
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(io_error("create", path))?;
    file.write_all(bytes).map_err(io_error("write", path))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use super::*;

    fn scratch() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "tabwire-profile-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_lock_names_a_live_process_of_this_host_only() {
        let alive = |pid| pid == 42;
        assert_eq!(lock_holder("box-1-42", "box-1", alive), Some(42));
        assert_eq!(lock_holder("box-1-43", "box-1", alive), None);
        assert_eq!(lock_holder("other-42", "box-1", alive), None);
        assert_eq!(lock_holder("box-1", "box", alive), None);
        assert_eq!(lock_holder("garbage", "box-1", alive), None);
        assert!(process_ours(std::process::id()));
        // PID 1 is root's: not ours (unless these tests run as root).
        if tabwire_protocol::local::current_uid() != 0 {
            assert!(!process_ours(1));
        }
    }

    #[test]
    fn a_real_lock_of_a_live_browser_is_seen() {
        let profile = scratch();
        assert_eq!(holder(&profile), None);
        // A process of ours naming the profile on its command line, as Chromium does.
        let mut browser = std::process::Command::new("bash")
            .args(["-c", "read -r -t 600", "chromium"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let target = format!("{}-{}", hostname().unwrap(), browser.id());
        std::os::unix::fs::symlink(&target, profile.join(SINGLETON_LOCK)).unwrap();
        // Until bash has replaced the forked test process, its command line is this test's.
        for _ in 0..500 {
            if holder(&profile).is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(holder(&profile), Some(browser.id()));
        // A live process of ours that runs no such profile (a PID reused after a reboot: here
        // this test itself) holds nothing.
        std::fs::remove_file(profile.join(SINGLETON_LOCK)).unwrap();
        let target = format!("{}-{}", hostname().unwrap(), std::process::id());
        std::os::unix::fs::symlink(&target, profile.join(SINGLETON_LOCK)).unwrap();
        if cfg!(target_os = "linux") {
            assert_eq!(holder(&profile), None);
        }
        browser.kill().unwrap();
        browser.wait().unwrap();
        std::fs::remove_dir_all(profile).unwrap();
    }

    #[test]
    fn the_profile_is_created_private_and_an_open_one_refused() {
        let root = scratch();
        let profile = root.join("data/tabwire/chromium");
        ensure_private(&profile).unwrap();
        assert_eq!(std::fs::metadata(&profile).unwrap().mode() & 0o777, 0o700);
        std::fs::set_permissions(&profile, std::fs::Permissions::from_mode(0o755)).unwrap();
        let error = ensure_private(&profile).unwrap_err();
        assert!(error.to_string().contains("chmod 700"), "{error}");
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_link_in_the_extension_folder_is_refused_not_followed() {
        let root = scratch();
        let source = root.join("extension");
        std::fs::create_dir_all(source.join("pkg")).unwrap();
        std::fs::write(root.join("secret"), "a key").unwrap();
        std::os::unix::fs::symlink(root.join("secret"), source.join("pkg/k")).unwrap();
        let profile = root.join("profile");
        std::fs::create_dir(&profile).unwrap();
        let error = copy_extension(&source, &profile).unwrap_err();
        assert!(
            matches!(&error, ProfileError::Symlink(path) if path == &source.join("pkg/k")),
            "{error}"
        );
        assert!(!profile.join(EXTENSION_COPY).join("pkg/k").exists());
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn prepare_copies_the_extension_and_mints_a_code_until_the_profile_is_paired() {
        let root = scratch();
        let source = root.join("extension");
        std::fs::create_dir_all(source.join("pkg")).unwrap();
        std::fs::write(source.join("manifest.json"), "{}").unwrap();
        std::fs::write(source.join("pkg/a.wasm"), "v1").unwrap();
        std::fs::write(source.join("config.json"), "{\"developer\": true}").unwrap();
        let profile = root.join("profile");
        ensure_private(&profile).unwrap();
        let pairings = Pairings::open(&root.join("state")).unwrap();

        let first = prepare(
            &profile,
            &source,
            "ws://127.0.0.1:9/browser",
            "Bot",
            &pairings,
        )
        .unwrap();
        assert_eq!(first.extension, profile.join(EXTENSION_COPY));
        assert_eq!(
            std::fs::read_to_string(first.extension.join("pkg/a.wasm")).unwrap(),
            "v1"
        );
        let config_path = first.extension.join("config.json");
        let config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
        let code = first.code.expect("an unpaired profile gets a code");
        assert_eq!(config["serverUrl"], "ws://127.0.0.1:9/browser");
        assert_eq!(config["browserName"], "Bot");
        assert_eq!(config["pairingCode"], code.as_str());
        assert_eq!(
            config.get("developer"),
            None,
            "the source's config.json is left out"
        );
        assert_eq!(
            std::fs::metadata(&config_path).unwrap().mode() & 0o777,
            0o600
        );
        assert_eq!(first.known_id, None);
        assert_eq!(
            pairing::summary(&root.join("state"))
                .unwrap()
                .open_codes
                .len(),
            1
        );

        // A rebuilt wasm is picked up; a recorded ID that is not paired still gets a code.
        std::fs::write(source.join("pkg/a.wasm"), "v2").unwrap();
        write_record(&profile, "b-1").unwrap();
        assert_eq!(read_record(&profile).as_deref(), Some("b-1"));
        let second = prepare(
            &profile,
            &source,
            "ws://127.0.0.1:9/browser",
            "Bot",
            &pairings,
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(second.extension.join("pkg/a.wasm")).unwrap(),
            "v2"
        );
        assert!(second.code.is_some());
        assert_eq!(second.known_id, None);

        // Once paired, no code is minted and the bundled file carries none.
        let code = second.code.unwrap();
        pairings
            .complete(&code, "b-1", "Bot", &[7; 32], false)
            .unwrap();
        let third = prepare(
            &profile,
            &source,
            "ws://127.0.0.1:9/browser",
            "Bot",
            &pairings,
        )
        .unwrap();
        assert_eq!(third.code, None);
        assert_eq!(third.known_id.as_deref(), Some("b-1"));
        let config: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(third.extension.join("config.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(config.get("pairingCode"), None);
        std::fs::remove_dir_all(root).unwrap();
    }
}
