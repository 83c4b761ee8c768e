//! The operator's policy (issue 14 §1): which file holds it for an account, reading it, and
//! reading it again when it changes.
//!
//! Local mode has one policy: the `--policy` file, or everything allowed. Hosted mode looks for
//! `policies/ACCOUNT.toml` in the auth directory first, then the `--policy` file (every
//! account's default), then the built-in hosted default (act everywhere, sensitive reads off).
//! In both modes `file://` is denied above whatever the policy says, unless the operator passed
//! `--allow-file-urls` ([`FileUrls`]). A file is checked at most once a second and read
//! again when its size or time changes; a file that no longer parses keeps the last good policy
//! in force (and says so in the log), while a `--policy` file that does not parse at start stops
//! the hub. The browsers are sent their account's policy in their welcome and again whenever it
//! changes (`browser_link.rs`).
//!
//! The file is TOML:
//! ```toml
//! default = "act"          # deny | read | ask | act, where no rule matches
//! sensitive = "allow"      # cookies, storage, bodies, hidden values, raw HTML: allow | deny
//! [[rules]]
//! origin = "https://*.bank.example"
//! access = "deny"
//! [[rules]]
//! origin = "https://mail.example.com"
//! access = "read"
//! sensitive = "deny"
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tabwire_protocol::policy::{Policy, PolicyError};

/// How often a policy file is looked at again.
const RECHECK: Duration = Duration::from_secs(1);

/// A policy file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("policy file {path}: {reason}")]
pub struct PolicyFileError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub reason: String,
}

/// Reads a policy file's text.
pub fn parse(text: &str) -> Result<Policy, PolicyError> {
    let policy: Policy = toml::from_str(text).map_err(|error| PolicyError(error.to_string()))?;
    policy.validate()?;
    Ok(policy)
}

/// Whether agents may open and read `file://` URLs. A file URL reads the disk of the computer
/// the browser runs on: the user's own in local mode (a local agent, or a page steering it,
/// could read `~/.ssh`), someone else's in hosted mode. Both modes refuse them unless the
/// operator passes `--allow-file-urls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileUrls {
    /// `--allow-file-urls`: the policy alone decides.
    Allowed,
    /// The default: denied before every rule of the policy
    /// ([`Policy::denying_files`]), by the hub before a load and by the browser at the point of
    /// effect.
    Refused,
}

/// Where the operator's policies come from.
pub struct Policies {
    /// Hosted mode: the directory of per-account files.
    per_account: Option<PathBuf>,
    /// The `--policy` file.
    file: Option<Watched>,
    /// What applies when no file does.
    fallback: Arc<Policy>,
    /// The per-account files seen so far, by account.
    accounts: Mutex<HashMap<String, Arc<Watched>>>,
    /// Whether file URLs are denied above every policy.
    files: FileUrls,
}

impl Policies {
    /// Local mode: `file`, or everything allowed.
    pub fn local(file: Option<&Path>) -> Result<Policies, PolicyFileError> {
        Ok(Policies {
            per_account: None,
            file: file.map(Watched::load).transpose()?,
            fallback: Arc::new(Policy::default()),
            accounts: Mutex::default(),
            files: FileUrls::Refused,
        })
    }

    /// Hosted mode: `policies/ACCOUNT.toml` under `auth_dir`, else `file`, else `fallback`.
    pub fn hosted(
        auth_dir: &Path,
        file: Option<&Path>,
        fallback: Policy,
    ) -> Result<Policies, PolicyFileError> {
        Ok(Policies {
            per_account: Some(auth_dir.join("policies")),
            file: file.map(Watched::load).transpose()?,
            fallback: Arc::new(fallback),
            accounts: Mutex::default(),
            files: FileUrls::Refused,
        })
    }

    /// The same policies with file URLs as `files` says (refused unless told otherwise).
    pub fn with_file_urls(mut self, files: FileUrls) -> Policies {
        self.files = files;
        self
    }

    /// Everything allowed, file URLs included, for tests.
    pub fn allow_all() -> Policies {
        Policies::local(None)
            .expect("no file to read")
            .with_file_urls(FileUrls::Allowed)
    }

    /// The policy in force for `account` now.
    pub fn for_account(&self, account: &str) -> Arc<Policy> {
        self.status(account).policy
    }

    /// The policy in force for `account` now, where it comes from, and whether its file
    /// parses as it is now (what `doctor` reports): the file's (or the default's) rules, under
    /// the rule that denies file URLs unless they are allowed.
    pub fn status(&self, account: &str) -> PolicyStatus {
        let mut status = self.status_of_files(account);
        status.rules = status.policy.rules.len();
        status.files = self.files;
        if self.files == FileUrls::Refused {
            status.policy = Arc::new((*status.policy).clone().denying_files());
        }
        status
    }

    /// [`Policies::status`] as the files (or the default) say.
    fn status_of_files(&self, account: &str) -> PolicyStatus {
        if let Some(dir) = &self.per_account
            && let Some(file) = account_file(dir, account)
        {
            let watched = self
                .accounts
                .lock()
                .unwrap()
                .entry(account.to_owned())
                .or_insert_with(|| Arc::new(Watched::lazy(file)))
                .clone();
            if let Some((policy, parses)) = watched.current_and_whether_it_parses() {
                return PolicyStatus {
                    policy,
                    source: PolicySource::AccountFile(watched.path.clone()),
                    parses,
                    rules: 0,
                    files: FileUrls::Refused,
                };
            }
        }
        if let Some(file) = &self.file {
            if let Some((policy, parses)) = file.current_and_whether_it_parses() {
                return PolicyStatus {
                    policy,
                    source: PolicySource::File(file.path.clone()),
                    parses,
                    rules: 0,
                    files: FileUrls::Refused,
                };
            }
            return PolicyStatus {
                policy: self.fallback.clone(),
                source: PolicySource::FileMissing(file.path.clone()),
                parses: true,
                rules: 0,
                files: FileUrls::Refused,
            };
        }
        PolicyStatus {
            policy: self.fallback.clone(),
            source: PolicySource::Default,
            parses: true,
            rules: 0,
            files: FileUrls::Refused,
        }
    }
}

/// The policy in force for an account, and where it comes from.
#[derive(Debug, Clone)]
pub struct PolicyStatus {
    /// The policy.
    pub policy: Arc<Policy>,
    /// Where it was read from.
    pub source: PolicySource,
    /// Whether the file parses as it is now; `false` means the policy in force is the last
    /// good one read from it (or, if it never parsed, one that denies every origin).
    pub parses: bool,
    /// The rules of the file (or the default), without the hub's rule for file URLs.
    pub rules: usize,
    /// Whether file URLs are denied above the file's rules.
    pub files: FileUrls,
}

/// Where an account's policy comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySource {
    /// No file: the mode's default.
    Default,
    /// The `--policy` file.
    File(PathBuf),
    /// The `--policy` file was given but is gone: the mode's default applies meanwhile.
    FileMissing(PathBuf),
    /// A hosted account's own `policies/ACCOUNT.toml`.
    AccountFile(PathBuf),
}

/// An account's own file, when the account's name can be a file name.
fn account_file(dir: &Path, account: &str) -> Option<PathBuf> {
    let plain = !account.is_empty()
        && !account.starts_with('.')
        && account
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '@'));
    plain.then(|| dir.join(format!("{account}.toml")))
}

/// A policy file and what was last read from it.
struct Watched {
    path: PathBuf,
    state: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    checked: Option<Instant>,
    stamp: Option<(SystemTime, u64)>,
    /// The last good policy; `None` while the file is missing (or never parsed).
    policy: Option<Arc<Policy>>,
    /// Whether the file's contents when last read failed to parse.
    broken: bool,
}

impl Watched {
    /// A file that must exist and parse now.
    fn load(path: &Path) -> Result<Watched, PolicyFileError> {
        let error = |reason: String| PolicyFileError {
            path: path.to_owned(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        let policy = parse(&text).map_err(|e| error(e.0))?;
        let watched = Watched::lazy(path.to_owned());
        {
            let mut seen = watched.state.lock().unwrap();
            seen.checked = Some(Instant::now());
            seen.stamp = stamp_of(path);
            seen.policy = Some(Arc::new(policy));
        }
        Ok(watched)
    }

    /// A file that may appear later.
    fn lazy(path: PathBuf) -> Watched {
        Watched {
            path,
            state: Mutex::default(),
        }
    }

    /// The file's policy, read again if it changed since the last look (at most once a
    /// second), and whether the file parsed when last read; `None` when it does not exist.
    fn current_and_whether_it_parses(&self) -> Option<(Arc<Policy>, bool)> {
        let policy = self.current()?;
        Some((policy, !self.state.lock().unwrap().broken))
    }

    /// The file's policy, read again if it changed since the last look (at most once a
    /// second); `None` when it does not exist.
    fn current(&self) -> Option<Arc<Policy>> {
        let mut seen = self.state.lock().unwrap();
        if seen.checked.is_some_and(|at| at.elapsed() < RECHECK) {
            return seen.policy.clone();
        }
        seen.checked = Some(Instant::now());
        let stamp = stamp_of(&self.path);
        if stamp == seen.stamp {
            return seen.policy.clone();
        }
        seen.stamp = stamp;
        seen.broken = false;
        if stamp.is_none() {
            if seen.policy.take().is_some() {
                tracing::warn!(file = %self.path.display(), "policy file removed");
            }
            return None;
        }
        match std::fs::read_to_string(&self.path)
            .map_err(|e| e.to_string())
            .and_then(|text| parse(&text).map_err(|e| e.0))
        {
            Ok(policy) => {
                tracing::info!(file = %self.path.display(), rules = policy.rules.len(), "policy loaded");
                seen.policy = Some(Arc::new(policy));
            }
            Err(reason) if seen.policy.is_some() => {
                seen.broken = true;
                tracing::error!(file = %self.path.display(), %reason, "policy file not used: it does not parse; the last good policy stays in force");
            }
            // No good policy was ever read from it: an account whose operator meant to restrict
            // it is not run on a looser default meanwhile.
            Err(reason) => {
                seen.broken = true;
                tracing::error!(file = %self.path.display(), %reason, "policy file does not parse and none was read before: denying every origin until it is fixed");
                seen.policy = Some(Arc::new(Policy::deny_all()));
            }
        }
        seen.policy.clone()
    }
}

fn stamp_of(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tabwire_protocol::policy::{Access, Owner, Sensitive};

    const FILE: &str = r#"
default = "read"
sensitive = "deny"

[[rules]]
origin = "https://*.bank.example"
access = "deny"

[[rules]]
origin = "http://127.0.0.1:8000"
access = "act"
sensitive = "allow"
"#;

    #[test]
    fn the_toml_file_is_the_protocol_policy() {
        let policy = parse(FILE).unwrap();
        assert_eq!(policy.default, Access::Read);
        let verdict = policy.verdict("https://www.bank.example/", Owner::Operator);
        assert_eq!(verdict.access, Access::Deny);
        let local = policy.verdict("http://127.0.0.1:8000/x", Owner::Operator);
        assert_eq!(
            (local.access, local.sensitive),
            (Access::Act, Sensitive::Allow)
        );
        for bad in [
            "default = \"allow\"",
            "[[rules]]\norigin = \"bank.example\"\naccess = \"deny\"",
            "[[rules]]\norigin = \"https://x\"\naccess = \"deny\"\npath = \"/\"",
            "default = ",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_changed_file_is_read_again_and_a_broken_one_keeps_the_last_good_policy() {
        let dir = tempdir("changed");
        let path = dir.join("policy.toml");
        std::fs::write(&path, FILE).unwrap();
        let policies = Policies::local(Some(&path)).unwrap();
        assert_eq!(policies.for_account("local").default, Access::Read);
        std::fs::write(&path, "default = \"deny\"\n# longer, so the size changes\n").unwrap();
        std::thread::sleep(RECHECK + Duration::from_millis(100));
        assert_eq!(policies.for_account("local").default, Access::Deny);
        std::fs::write(
            &path,
            "default = \"nonsense\"\n# a broken file, of another size\n",
        )
        .unwrap();
        std::thread::sleep(RECHECK + Duration::from_millis(100));
        assert_eq!(policies.for_account("local").default, Access::Deny);
        let status = policies.status("local");
        assert_eq!(status.source, PolicySource::File(path.clone()));
        assert!(!status.parses, "the broken file is reported");
        std::fs::remove_file(&path).unwrap();
        std::thread::sleep(RECHECK + Duration::from_millis(100));
        let status = policies.status("local");
        assert_eq!(status.source, PolicySource::FileMissing(path.clone()));
        assert_eq!(*status.policy, Policy::default().denying_files());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_broken_file_at_start_is_an_error_naming_it() {
        let dir = tempdir("broken");
        let path = dir.join("policy.toml");
        std::fs::write(&path, "default = \"sometimes\"").unwrap();
        let error = Policies::local(Some(&path)).err().unwrap();
        assert!(error.to_string().contains("policy.toml"), "{error}");
        assert!(Policies::local(Some(&dir.join("missing.toml"))).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn hosted_accounts_have_their_own_file_then_the_shared_one_then_the_default() {
        let dir = tempdir("hosted");
        std::fs::create_dir_all(dir.join("policies")).unwrap();
        std::fs::write(dir.join("policies/acme.toml"), "default = \"deny\"").unwrap();
        let policies = Policies::hosted(&dir, None, Policy::hosted_default())
            .unwrap()
            .with_file_urls(FileUrls::Allowed);
        assert_eq!(policies.for_account("acme").default, Access::Deny);
        assert_eq!(*policies.for_account("other"), Policy::hosted_default());
        // A name that is no file name never reaches the disk.
        assert_eq!(*policies.for_account("../acme"), Policy::hosted_default());
        let shared = dir.join("shared.toml");
        std::fs::write(&shared, "default = \"read\"").unwrap();
        let policies = Policies::hosted(&dir, Some(&shared), Policy::hosted_default()).unwrap();
        assert_eq!(policies.for_account("other").default, Access::Read);
        assert_eq!(policies.for_account("acme").default, Access::Deny);
        // An account file that never parsed closes everything rather than falling back.
        std::fs::write(dir.join("policies/broken.toml"), "default = \"maybe\"").unwrap();
        assert_eq!(policies.for_account("broken").default, Access::Deny);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Whatever a policy file says, file URLs stay closed unless the operator opened them; the
    /// file's own rules still apply to everything else.
    #[test]
    fn file_urls_are_denied_above_every_policy_unless_allowed() {
        let dir = tempdir("files");
        let path = dir.join("policy.toml");
        std::fs::write(
            &path,
            "default = \"read\"\n[[rules]]\norigin = \"file://\"\naccess = \"act\"\n",
        )
        .unwrap();
        let file = |url: &str, policies: &Policies| {
            policies
                .for_account("local")
                .verdict(url, Owner::Operator)
                .access
        };
        for policies in [
            Policies::local(None).unwrap(),
            Policies::local(Some(&path)).unwrap(),
            Policies::hosted(&dir, None, Policy::hosted_default()).unwrap(),
            Policies::hosted(&dir, Some(&path), Policy::hosted_default()).unwrap(),
        ] {
            assert_eq!(file("file:///root/.ssh/id_rsa", &policies), Access::Deny);
            assert_ne!(file("https://example.com/", &policies), Access::Deny);
        }
        let opened = Policies::local(Some(&path))
            .unwrap()
            .with_file_urls(FileUrls::Allowed);
        assert_eq!(file("file:///root/x", &opened), Access::Act);
        assert_eq!(file("https://example.com/", &opened), Access::Read);
        assert!(
            Policies::local(None)
                .unwrap()
                .with_file_urls(FileUrls::Allowed)
                .for_account("local")
                .allows_everything()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempdir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("tabwire-policy-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
