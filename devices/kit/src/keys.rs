//! The backend's pairing with a local hub: the key it keeps, and how it gets one.
//!
//! The backend holds one pairing key per hub URL, shared by all its devices (the hub lets one
//! device credential register several device IDs). The key lives in `keys.json` in the state
//! directory (`--state-dir`, default `$XDG_STATE_HOME/tabwire-android` for the Android backend,
//! else `~/.local/state/tabwire-android`; `tabwire-ios` for iOS): the directory must be this user's and closed to others
//! (0700), the file 0600 — the rule the hub applies to its own state (protocol
//! [`private_dir_problem`]). A directory or file others could read is refused, not used: its key
//! may be known to them.
//!
//! Without a key the backend pairs with a one-time code: `TABWIRE_PAIRING_CODE` or
//! `--pairing-code-file`, else one it asks the
//! hub for by running `tabwire-hub pair --device` (SPEC §9: a process of the same user that can
//! read the hub's private state may pair without a person). Only one connection pairs at a
//! time ([`Credentials::secret`] hands the code to one and makes the others wait); the key
//! the exchange derives is saved and every device's connection uses it from then on.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tabwire_protocol::local::{PrivateDirProblem, current_uid, private_dir_problem};
use tabwire_protocol::pairing::{self, KEY_LEN, PairingCode, Secret};
use tokio::sync::watch;

/// The file holding the keys, in the state directory.
pub const KEYS_FILE: &str = "keys.json";

/// Where the backend `program` keeps its state when not told: `$XDG_STATE_HOME/PROGRAM`, else
/// `$HOME/.local/state/PROGRAM`. `None` without a home directory.
pub fn default_state_dir(
    program: &str,
    xdg_state_home: Option<&str>,
    home: Option<&str>,
) -> Option<PathBuf> {
    let nonempty = |dir: Option<&str>| dir.filter(|dir| !dir.is_empty()).map(PathBuf::from);
    nonempty(xdg_state_home)
        .or_else(|| nonempty(home).map(|home| home.join(".local/state")))
        .map(|dir| dir.join(program))
}

/// Why the key store cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The directory or file could not be read, created or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The directory breaks the rule for private directories.
    #[error(
        "{path} {problem}; the pairing keys must be private to you (a 0700 directory of yours)"
    )]
    Directory {
        /// The directory.
        path: PathBuf,
        /// What is wrong, in words.
        problem: String,
    },
    /// The file may be read or written by others, or belongs to another user.
    #[error(
        "{path} {problem}: its key may be known to others, so it is not used; delete it and \
         pair again (`tabwire-hub pair --device`)"
    )]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong, in words.
        problem: String,
    },
    /// The file is not what this program writes.
    #[error("{path} is not a key file this program wrote ({reason}); move it away and pair again")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The parser's reason.
        reason: String,
    },
}

/// The keys file's content: a key (hex) per hub URL.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysFile {
    keys: BTreeMap<String, String>,
}

/// The state directory's key file.
#[derive(Debug, Clone)]
pub struct KeyStore {
    dir: PathBuf,
}

impl KeyStore {
    /// Creates the directory private (0700) when missing, and otherwise checks it is.
    pub fn open(dir: &Path) -> Result<KeyStore, KeyError> {
        let io = |source| KeyError::Io {
            path: dir.to_owned(),
            source,
        };
        match std::fs::metadata(dir) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(io)?;
                }
                match std::fs::DirBuilder::new().mode(0o700).create(dir) {
                    Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                    other => other.map_err(io)?,
                }
                // The mode went through the umask: set it outright.
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(io)?;
            }
            Err(error) => return Err(io(error)),
            Ok(_) => {}
        }
        let meta = std::fs::metadata(dir).map_err(io)?;
        if let Some(problem) = private_dir_problem(&meta, current_uid()) {
            return Err(KeyError::Directory {
                path: dir.to_owned(),
                problem: describe(problem),
            });
        }
        Ok(KeyStore {
            dir: dir.to_owned(),
        })
    }

    /// The key file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(KEYS_FILE)
    }

    fn read(&self) -> Result<KeysFile, KeyError> {
        let path = self.path();
        let meta = match std::fs::symlink_metadata(&path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(KeysFile::default());
            }
            Err(source) => return Err(KeyError::Io { path, source }),
            Ok(meta) => meta,
        };
        let problem = if !meta.file_type().is_file() {
            Some("is not a regular file".to_owned())
        } else if meta.uid() != current_uid() {
            Some(format!("belongs to user {}", meta.uid()))
        } else if meta.mode() & 0o077 != 0 {
            Some(format!(
                "has mode {:o}, open to others (it must be 600)",
                meta.mode() & 0o777
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(KeyError::File { path, problem });
        }
        let text = std::fs::read_to_string(&path).map_err(|source| KeyError::Io {
            path: path.clone(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|error| KeyError::Unreadable {
            path,
            reason: error.to_string(),
        })
    }

    /// The key kept for `hub_url`.
    pub fn load(&self, hub_url: &str) -> Result<Option<[u8; KEY_LEN]>, KeyError> {
        let file = self.read()?;
        let Some(hex) = file.keys.get(hub_url) else {
            return Ok(None);
        };
        match pairing::decode_hex(hex).and_then(|bytes| <[u8; KEY_LEN]>::try_from(bytes).ok()) {
            Some(key) => Ok(Some(key)),
            None => Err(KeyError::Unreadable {
                path: self.path(),
                reason: format!("the key for {hub_url} is not {KEY_LEN} bytes of hex"),
            }),
        }
    }

    /// Keeps `key` for `hub_url`, replacing the file whole (written 0600 beside it, then
    /// renamed over it) so that a crash never leaves half a file.
    pub fn save(&self, hub_url: &str, key: &[u8; KEY_LEN]) -> Result<(), KeyError> {
        let mut file = self.read()?;
        file.keys
            .insert(hub_url.to_owned(), pairing::encode_hex(key));
        let path = self.path();
        let temp = self
            .dir
            .join(format!("{KEYS_FILE}.{}.tmp", std::process::id()));
        let io = |source| KeyError::Io {
            path: temp.clone(),
            source,
        };
        let _ = std::fs::remove_file(&temp);
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .map_err(io)?;
        let text = serde_json::to_string_pretty(&file).expect("a map of strings serialises");
        out.write_all(text.as_bytes()).map_err(io)?;
        out.sync_all().map_err(io)?;
        drop(out);
        std::fs::rename(&temp, &path).map_err(|source| KeyError::Io { path, source })
    }
}

fn describe(problem: PrivateDirProblem) -> String {
    match problem {
        PrivateDirProblem::NotADirectory => "is not a directory".to_owned(),
        PrivateDirProblem::Owner(uid) => format!("belongs to user {uid}"),
        PrivateDirProblem::OpenToOthers { mode } => {
            format!("has mode {mode:o}, open to others (chmod 700 it)")
        }
    }
}

/// Where pairing codes come from when there is no key.
#[derive(Debug, Clone)]
pub enum CodeSource {
    /// A code given (`TABWIRE_PAIRING_CODE`, `--pairing-code-file`): tried until the hub says
    /// it does not know it.
    Given(PairingCode),
    /// Run `PROGRAM pair --device --ttl 2m` for a fresh code each time.
    HubProgram(PathBuf),
    /// Neither (a hub that is not on this machine, and no code): say what to do.
    Nothing(String),
}

/// Why there is no secret to offer now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CannotPair(pub String);

/// The key or code one connection proves itself with.
pub struct Offer {
    /// The secret.
    pub secret: Secret,
    /// Set when the secret is a pairing code: report its outcome through it.
    pub ticket: Option<PairingTicket>,
}

/// The right to pair now, held by one connection at a time. Dropping it without
/// [`PairingTicket::paired`] lets another connection try.
pub struct PairingTicket {
    credentials: Arc<Credentials>,
    code: PairingCode,
    /// Set by [`PairingTicket::unknown_code`].
    unknown: bool,
}

impl PairingTicket {
    /// The exchange succeeded: keep the key it derived, for every device.
    pub fn paired(self, key: [u8; KEY_LEN]) -> Result<(), KeyError> {
        let saved = self.credentials.store.save(&self.credentials.hub_url, &key);
        {
            let mut state = self.credentials.state.lock().expect("not poisoned");
            state.key = Some(key);
            state.key_refused = false;
        }
        saved
    }

    /// The hub does not know this code (mistyped, used, expired): a given code is not offered
    /// again.
    pub fn unknown_code(mut self) {
        self.unknown = true;
    }

    /// The code being used.
    pub fn code(&self) -> &PairingCode {
        &self.code
    }
}

impl Drop for PairingTicket {
    fn drop(&mut self) {
        {
            let mut state = self.credentials.state.lock().expect("not poisoned");
            state.pairing = false;
            if self.unknown
                && let CodeSource::Given(given) = &state.source
                && *given == self.code
            {
                state.source = CodeSource::Nothing(format!(
                    "the hub at {} does not know the pairing code given (mistyped, used or \
                     expired): run `tabwire-hub pair --device` for a new one and restart with it \
                     in TABWIRE_PAIRING_CODE (or --pairing-code-file)",
                    self.credentials.hub_url
                ));
            }
        }
        self.credentials
            .changed
            .send_modify(|generation| *generation += 1);
    }
}

struct PairState {
    key: Option<[u8; KEY_LEN]>,
    /// The hub answered `NOT_PAIRED` to the key: pair again if a code can be had, but keep
    /// the key (an impostor could say so) until a new pairing succeeds.
    key_refused: bool,
    /// A connection holds the [`PairingTicket`].
    pairing: bool,
    source: CodeSource,
}

/// One hub URL's pairing, shared by every device's connection to it.
pub struct Credentials {
    store: KeyStore,
    hub_url: String,
    state: Mutex<PairState>,
    /// Bumped whenever the key or the pairing slot changes, to wake waiting connections.
    changed: watch::Sender<u64>,
}

impl Credentials {
    /// The pairing with `hub_url`: its kept key, if any, and where codes come from.
    pub fn new(
        store: KeyStore,
        hub_url: &str,
        source: CodeSource,
    ) -> Result<Arc<Credentials>, KeyError> {
        let key = store.load(hub_url)?;
        Ok(Arc::new(Credentials {
            store,
            hub_url: hub_url.to_owned(),
            state: Mutex::new(PairState {
                key,
                key_refused: false,
                pairing: false,
                source,
            }),
            changed: watch::Sender::new(0),
        }))
    }

    /// Whether a key is held.
    pub fn has_key(&self) -> bool {
        self.state.lock().expect("not poisoned").key.is_some()
    }

    /// The hub answered `NOT_PAIRED` to `key`: the next connection pairs again if it can.
    pub fn key_refused(&self, key: &[u8; KEY_LEN]) {
        let mut state = self.state.lock().expect("not poisoned");
        if state.key.as_ref() == Some(key) {
            state.key_refused = true;
        }
    }

    /// The secret to prove: the key; or, without one (or after the hub refused it), a pairing
    /// code for this connection alone while the others wait for the key it brings.
    pub async fn secret(self: &Arc<Self>) -> Result<Offer, CannotPair> {
        let mut changed = self.changed.subscribe();
        loop {
            let source = {
                let mut state = self.state.lock().expect("not poisoned");
                let can_pair = !matches!(state.source, CodeSource::Nothing(_));
                match state.key {
                    Some(key) if !state.key_refused || !can_pair => {
                        return Ok(Offer {
                            secret: Secret::Key(key),
                            ticket: None,
                        });
                    }
                    _ if !state.pairing => {
                        if let CodeSource::Nothing(why) = &state.source {
                            return Err(CannotPair(why.clone()));
                        }
                        state.pairing = true;
                        Some(state.source.clone())
                    }
                    // Another connection is pairing: wait for its key, or for its slot.
                    _ => None,
                }
            };
            match source {
                Some(source) => {
                    let code = match source {
                        CodeSource::Given(code) => Ok(code),
                        CodeSource::HubProgram(program) => code_from_hub(&program).await,
                        CodeSource::Nothing(_) => unreachable!("checked above"),
                    };
                    let code = match code {
                        Ok(code) => code,
                        Err(why) => {
                            self.state.lock().expect("not poisoned").pairing = false;
                            self.changed.send_modify(|generation| *generation += 1);
                            return Err(why);
                        }
                    };
                    return Ok(Offer {
                        secret: Secret::Code(code.clone()),
                        ticket: Some(PairingTicket {
                            credentials: self.clone(),
                            code,
                            unknown: false,
                        }),
                    });
                }
                None => {
                    if changed.changed().await.is_err() {
                        return Err(CannotPair("the backend is stopping".to_owned()));
                    }
                }
            }
        }
    }
}

/// How long `tabwire-hub pair --device` may take.
const HUB_PROGRAM_TIMEOUT: Duration = Duration::from_secs(15);

/// Runs `PROGRAM pair --device --ttl 2m` and reads the code it prints.
async fn code_from_hub(program: &Path) -> Result<PairingCode, CannotPair> {
    let shown = program.display();
    let command = tokio::process::Command::new(program)
        .args(["pair", "--device", "--ttl", "2m"])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(HUB_PROGRAM_TIMEOUT, command).await {
        Err(_) => {
            return Err(CannotPair(format!(
                "`{shown} pair --device` did not finish within {} s",
                HUB_PROGRAM_TIMEOUT.as_secs()
            )));
        }
        Ok(Err(error)) => {
            return Err(CannotPair(format!(
                "cannot pair: no pairing key for this hub, no pairing code, and `{shown} pair \
                 --device` could not run ({error}). Run `tabwire-hub pair --device` where the hub \
                 runs and give the code in TABWIRE_PAIRING_CODE (or --pairing-code-file), or \
                 point --hub-bin at tabwire-hub"
            )));
        }
        Ok(Ok(output)) => output,
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().map(str::trim).find(|line| !line.is_empty());
    match (output.status.success(), line) {
        (true, Some(line)) => PairingCode::parse(line).map_err(|error| {
            CannotPair(format!(
                "`{shown} pair --device` printed no pairing code ({error})"
            ))
        }),
        _ => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let stderr: String = stderr.trim().chars().take(400).collect();
            Err(CannotPair(format!(
                "`{shown} pair --device` failed ({}): {stderr}. Is the hub running as you, with \
                 the same state directory (TABWIRE_STATE_DIR)? Otherwise give a code in \
                 TABWIRE_PAIRING_CODE",
                output.status
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "tabwire-android-keys-{}-{}-{name}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().mode() & 0o777
    }

    const URL: &str = "ws://127.0.0.1:17841/device";

    #[test]
    fn the_state_dir_follows_xdg() {
        assert_eq!(
            default_state_dir("tabwire-android", Some("/s"), Some("/home/a")).unwrap(),
            Path::new("/s/tabwire-android")
        );
        assert_eq!(
            default_state_dir("tabwire-ios", Some(""), Some("/home/a")).unwrap(),
            Path::new("/home/a/.local/state/tabwire-ios")
        );
        assert_eq!(default_state_dir("tabwire-android", None, None), None);
    }

    #[test]
    fn keys_are_kept_in_a_0600_file_in_a_0700_directory() {
        let root = temp_dir("modes");
        let dir = root.join("state").join("tabwire-android");
        let store = KeyStore::open(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(store.load(URL).unwrap(), None);
        store.save(URL, &[7; KEY_LEN]).unwrap();
        store
            .save("ws://127.0.0.1:9/device", &[9; KEY_LEN])
            .unwrap();
        assert_eq!(mode(&store.path()), 0o600);
        assert_eq!(store.load(URL).unwrap(), Some([7; KEY_LEN]));
        assert_eq!(
            store.load("ws://127.0.0.1:9/device").unwrap(),
            Some([9; KEY_LEN])
        );
        // Reopening finds the same keys; nothing but the file is left in the directory.
        let again = KeyStore::open(&dir).unwrap();
        assert_eq!(again.load(URL).unwrap(), Some([7; KEY_LEN]));
        let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(entries.len(), 1);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn an_open_directory_or_file_is_refused() {
        let root = temp_dir("open");
        let dir = root.join("tabwire-android");
        let store = KeyStore::open(&dir).unwrap();
        store.save(URL, &[7; KEY_LEN]).unwrap();

        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = store.load(URL).unwrap_err();
        assert!(matches!(error, KeyError::File { .. }), "{error}");
        assert!(error.to_string().contains("644"), "{error}");
        // Nor is it written over: its key may be known.
        assert!(store.save(URL, &[8; KEY_LEN]).is_err());
        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(store.load(URL).unwrap(), Some([7; KEY_LEN]));

        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let error = KeyStore::open(&dir).unwrap_err();
        assert!(matches!(error, KeyError::Directory { .. }), "{error}");
        assert!(error.to_string().contains("755"), "{error}");

        // A key file replaced by a symlink (to a file others could have planted) is refused.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let elsewhere = root.join("planted.json");
        std::fs::write(&elsewhere, r#"{"keys":{}}"#).unwrap();
        std::fs::remove_file(store.path()).unwrap();
        std::os::unix::fs::symlink(&elsewhere, store.path()).unwrap();
        assert!(matches!(
            store.load(URL).unwrap_err(),
            KeyError::File { .. }
        ));
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_garbled_file_is_reported_not_overwritten() {
        let root = temp_dir("garbled");
        let store = KeyStore::open(&root).unwrap();
        std::fs::write(store.path(), "not json").unwrap();
        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            store.load(URL).unwrap_err(),
            KeyError::Unreadable { .. }
        ));
        assert!(store.save(URL, &[1; KEY_LEN]).is_err());
        assert_eq!(std::fs::read_to_string(store.path()).unwrap(), "not json");
        std::fs::remove_dir_all(root).unwrap();
    }

    fn code() -> PairingCode {
        PairingCode::from_random([3; pairing::CODE_RANDOM_BYTES])
    }

    #[tokio::test]
    async fn one_connection_pairs_while_the_others_wait_for_its_key() {
        let root = temp_dir("one-pairs");
        let store = KeyStore::open(&root).unwrap();
        let credentials = Credentials::new(store.clone(), URL, CodeSource::Given(code())).unwrap();
        let first = credentials.secret().await.unwrap();
        assert!(matches!(first.secret, Secret::Code(_)));
        let waiting = tokio::spawn({
            let credentials = credentials.clone();
            async move { credentials.secret().await.map(|offer| offer.secret) }
        });
        tokio::task::yield_now().await;
        assert!(
            !waiting.is_finished(),
            "a second connection must not pair too"
        );
        first.ticket.unwrap().paired([5; KEY_LEN]).unwrap();
        assert_eq!(waiting.await.unwrap().unwrap(), Secret::Key([5; KEY_LEN]));
        assert_eq!(store.load(URL).unwrap(), Some([5; KEY_LEN]));
        // A new backend finds the key.
        let later = Credentials::new(store, URL, CodeSource::Given(code())).unwrap();
        assert_eq!(
            later.secret().await.unwrap().secret,
            Secret::Key([5; KEY_LEN])
        );
        std::fs::remove_dir_all(root).unwrap();
    }

    #[tokio::test]
    async fn a_failed_pairing_frees_the_slot_and_an_unknown_code_is_dropped() {
        let root = temp_dir("slot");
        let store = KeyStore::open(&root).unwrap();
        let credentials = Credentials::new(store, URL, CodeSource::Given(code())).unwrap();
        let first = credentials.secret().await.unwrap();
        // The connection dropped before the hub answered: the code may be tried again.
        drop(first);
        let second = credentials.secret().await.unwrap();
        assert!(matches!(second.secret, Secret::Code(_)));
        // The hub does not know it: no more tries, and a sentence saying what to do.
        second.ticket.unwrap().unknown_code();
        let error = credentials.secret().await.err().unwrap();
        assert!(error.0.contains("TABWIRE_PAIRING_CODE"), "{error}");
        std::fs::remove_dir_all(root).unwrap();
    }

    #[tokio::test]
    async fn a_refused_key_is_kept_until_a_new_pairing_succeeds() {
        let root = temp_dir("refused");
        let store = KeyStore::open(&root).unwrap();
        store.save(URL, &[1; KEY_LEN]).unwrap();
        let credentials = Credentials::new(store.clone(), URL, CodeSource::Given(code())).unwrap();
        credentials.key_refused(&[1; KEY_LEN]);
        let offer = credentials.secret().await.unwrap();
        assert!(matches!(offer.secret, Secret::Code(_)));
        assert_eq!(store.load(URL).unwrap(), Some([1; KEY_LEN]));
        offer.ticket.unwrap().unknown_code();
        // No code left: back to the key (the refusal may have come from an impostor).
        assert_eq!(
            credentials.secret().await.unwrap().secret,
            Secret::Key([1; KEY_LEN])
        );
        std::fs::remove_dir_all(root).unwrap();
    }

    #[tokio::test]
    async fn codes_come_from_the_hub_program() {
        let root = temp_dir("program");
        let store = KeyStore::open(&root).unwrap();
        let fake = root.join("tabwire-hub");
        std::fs::write(
            &fake,
            "#!/bin/sh\n[ \"$*\" = 'pair --device --ttl 2m' ] || { echo \"bad args: $*\" >&2; exit 2; }\n\
             echo 7KQ2M-H9D4X-0RB6T-WC3NP\necho 'paste it' >&2\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o700)).unwrap();
        let credentials =
            Credentials::new(store.clone(), URL, CodeSource::HubProgram(fake.clone())).unwrap();
        let offer = credentials.secret().await.unwrap();
        assert_eq!(
            offer.secret,
            Secret::Code(PairingCode::parse("7KQ2M-H9D4X-0RB6T-WC3NP").unwrap())
        );
        drop(offer);

        let failing = root.join("failing-hub");
        std::fs::write(
            &failing,
            "#!/bin/sh\necho 'no hub state here' >&2\nexit 1\n",
        )
        .unwrap();
        std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o700)).unwrap();
        let credentials = Credentials::new(store, URL, CodeSource::HubProgram(failing)).unwrap();
        let error = credentials.secret().await.err().unwrap();
        assert!(error.0.contains("no hub state here"), "{error}");
        // The slot is free again for a later try.
        assert!(credentials.secret().await.is_err());
        std::fs::remove_dir_all(root).unwrap();
    }
}
