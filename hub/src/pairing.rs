//! The local hub's paired browsers and device backends and its open pairing codes, kept in the
//! hub's private state directory.
//!
//! Every pairing and code has a kind ([`PairingKind`]): a browser's key registers its one
//! browser ID on `/browser`; a device backend's registers the device IDs of the phones it
//! serves on `/device` (up to `KindSpec::per_credential` of the kinds table at once). Neither works
//! on the other endpoint. Records written before devices existed have no kind and are
//! browsers'; browser records are still written without one, so an older hub reads the file.
//!
//! `tabwire-hub pair` (another process of the same user) adds a one-time code here; a browser
//! that proves it holds the code pairs (see [`tabwire_protocol::pairing`]), which consumes the
//! code and records the browser with the key both sides derived. `pair --revoke` removes a
//! record; a connection whose record is gone is closed within about a second, because every
//! connection re-checks its record each second ([`Pairings::is_current`]) and the file is
//! re-read when it changes.
//!
//! Everything lives in one JSON file, `pairings.json` (mode 0600, in a 0700 directory), which
//! every writer replaces whole (write a temporary file, rename) under an exclusive lock on
//! `pairings.lock`, so the hub and the CLI never see half a file. The keys survive reboots;
//! they never leave the directory.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::private_dir::Unfit;
use tabwire_protocol::Kind;
use tabwire_protocol::local::PrivateDirProblem;
use tabwire_protocol::pairing::{
    self, CODE_RANDOM_BYTES, KEY_LEN, NONCE_LEN, PairingCode, Secret, decode_hex, encode_hex,
};

/// How often [`Pairings::is_current`] looks at the file for changes.
const RECHECK: Duration = Duration::from_millis(500);

/// The file, and its lock beside it.
const FILE: &str = "pairings.json";
const LOCK: &str = "pairings.lock";

/// A file's modification time, length and inode.
type Stamp = (SystemTime, u64, u64);

/// Why the pairing state cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PairingError {
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
    /// The state directory is open to other users, or belongs to another user.
    #[error("{}", .0)]
    UnsafeDirectory(String),
    /// `pairings.json` is not what the hub wrote.
    #[error("{} is damaged ({reason}); move it away and pair the browsers again", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// `pair --revoke` named several pairings (a device chooses its own name, so names can
    /// collide on purpose): nothing was removed; the pairing ID picks one.
    #[error(
        "{who:?} names {} pairings; nothing was revoked. Revoke one by its pairing ID:{}",
        .matches.len(),
        .matches.iter().map(|p| format!(
            "\n  {} {} {:?} (ID {})", p.pairing_id, p.kind, p.name, p.peer_id
        )).collect::<String>()
    )]
    Ambiguous {
        /// What was given.
        who: String,
        /// The pairings it names.
        matches: Vec<Paired>,
    },
}

fn io_error(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> PairingError {
    let path = path.to_path_buf();
    move |source| PairingError::Io {
        action,
        path,
        source,
    }
}

/// What kind of peer a pairing (or a code) is for: a peer kind, written in the file as its noun
/// (absent for a browser, as before device pairings).
pub type PairingKind = Kind;

/// Whether `kind` is the one records written before device pairings meant (and leave unsaid).
fn is_browser(kind: &PairingKind) -> bool {
    *kind == PairingKind::default()
}

/// A browser or a device backend paired with this hub.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Paired {
    /// Identifies this pairing (not the peer): the credential its peer IDs are bound to.
    pub pairing_id: String,
    /// Browser or device backend.
    #[serde(default, skip_serializing_if = "is_browser")]
    pub kind: PairingKind,
    /// A browser's: the browser ID it paired with, the only ID its key may register. A device
    /// backend's: the device it paired through (its key registers whichever devices the
    /// backend serves). Named `browserId` in the file, as before device pairings.
    #[serde(rename = "browserId")]
    pub peer_id: String,
    /// The browser's (or the device's) name when it paired.
    pub name: String,
    /// Its key, hex. Never printed.
    key: String,
    /// When it paired, in seconds since the epoch.
    pub paired_at: u64,
}

impl Paired {
    fn secret(&self) -> Option<Secret> {
        Some(Secret::Key(decode_hex(&self.key)?.try_into().ok()?))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OpenCode {
    /// The normalised code.
    code: String,
    /// What it pairs.
    #[serde(default, skip_serializing_if = "is_browser")]
    kind: PairingKind,
    /// Seconds since the epoch after which it is refused.
    expires_at: u64,
    /// A browser code made for one browser (`pair --browser-id`): it pairs that browser ID
    /// only, so a copy of it read from a file others can read (Chrome's managed policy) pairs
    /// no one else's program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    browser_id: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct State {
    /// Every pairing, of either kind (`browsers`, as before device pairings).
    #[serde(default)]
    browsers: Vec<Paired>,
    #[serde(default)]
    codes: Vec<OpenCode>,
}

impl State {
    fn drop_expired_codes(&mut self, now: u64) {
        self.codes.retain(|code| code.expires_at > now);
    }
}

/// What a peer's challenge matched.
#[derive(Debug, Clone)]
pub enum Claim {
    /// The key of a paired browser or device backend.
    Paired(Paired),
    /// An open pairing code, and what it pairs.
    Code(PairingCode, PairingKind),
    /// A code that paired a peer through this hub since it started: presented again, it is
    /// refused after the hub's proof, in words that say who used it (see [`Used`]).
    Used(PairingCode, Used),
}

/// A code's use, kept in memory while the hub runs: enough for a browser that comes later with
/// the same code (from a managed policy someone else read first) to be told what happened and
/// what to revoke, and no more (the peer ID stays unsaid: the pairing ID names it for whoever
/// can run `tabwire-hub pair --list`).
#[derive(Debug, Clone)]
pub struct Used {
    /// What the code paired.
    pub kind: PairingKind,
    /// The peer ID it paired (what `paired_with` answers; never sent).
    peer_id: String,
    /// The pairing it made.
    pub pairing_id: String,
    /// When, in seconds since the epoch.
    pub at: u64,
}

impl Used {
    /// The refusal's sentence.
    pub fn refusal(&self) -> String {
        let at = crate::audit::minute_utc(self.at);
        format!(
            "this pairing code was used already, at {at}, by pairing {id} (`tabwire-hub pair \
             --list` shows which {kind}). If that was not one of yours, someone else read the \
             code (a managed policy's file is readable by every user of the computer): revoke it \
             with `tabwire-hub pair --revoke {id}`, and put a code made with `tabwire-hub pair \
             --browser-id ID` in the policy instead",
            id = self.pairing_id,
            kind = self.kind,
        )
    }
}

impl Claim {
    /// The secret both sides prove they hold.
    pub fn secret(&self) -> Secret {
        match self {
            Claim::Paired(paired) => paired.secret().expect("found by its secret"),
            Claim::Code(code, _) | Claim::Used(code, _) => Secret::Code(code.clone()),
        }
    }

    /// The kind of peer it is for.
    pub fn kind(&self) -> PairingKind {
        match self {
            Claim::Paired(paired) => paired.kind,
            Claim::Code(_, kind) => *kind,
            Claim::Used(_, used) => used.kind,
        }
    }
}

/// Why a pairing could not be completed.
#[derive(Debug, thiserror::Error)]
pub enum PairRefused {
    /// The code was used or expired between the challenge and the hello.
    #[error("the pairing code is no longer valid: it was used or has expired")]
    CodeGone,
    /// Another pairing holds this browser ID.
    #[error(
        "this browser ID is paired already; to pair this profile again, first run \
         `tabwire-hub pair --revoke {0}`"
    )]
    IdTaken(String),
    /// The code was made for another browser ID (`pair --browser-id`). The hub closed it: the
    /// browser it was made for never presents another ID, so whoever did read it somewhere.
    /// The ID it was made for is never said (to a thief it is the ID to pose as).
    #[error(
        "this pairing code was made for another browser, so the hub closed it (whoever holds it \
         is not the browser it was made for); make a new one with `tabwire-hub pair \
         --browser-id ID` with the ID this browser's popup shows"
    )]
    ForAnother,
    /// The code came from the browser's managed policy but was made for no one browser: the
    /// hub closed it, since other users of the machine may have read it there.
    #[error(
        "this pairing code came from the browser's managed policy, which other users of the \
         computer may read, and it was not made for this browser, so the hub closed it. Make \
         one that pairs only this browser with `tabwire-hub pair --browser-id {0}` and put that \
         in the policy instead"
    )]
    ManagedUnbound(String),
    /// The state could not be written.
    #[error(transparent)]
    State(#[from] PairingError),
}

/// The pairing state of a running hub: the file's contents, re-read when the file changes.
pub struct Pairings {
    dir: PathBuf,
    cache: Mutex<Cache>,
    /// The pairings this hub completed since it started, by the code each used: how the
    /// launched browser's first pairing is told from any other (`crate::launch`), and what a
    /// second peer with the same code is told.
    made: Mutex<Vec<(PairingCode, Used)>>,
}

struct Cache {
    state: State,
    /// The file's stamp when last read.
    stamp: Option<Stamp>,
    checked: Instant,
}

impl Pairings {
    /// Opens (creating if needed) the private state directory and reads it.
    pub fn open(dir: &Path) -> Result<Pairings, PairingError> {
        ensure_private_dir(dir)?;
        let (state, stamp) = read(dir)?;
        Ok(Pairings {
            dir: dir.to_path_buf(),
            cache: Mutex::new(Cache {
                state,
                stamp,
                checked: Instant::now(),
            }),
            made: Mutex::default(),
        })
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Re-reads the file if it changed since it was last read (or `force`d). A file that cannot
    /// be read keeps the last state and is logged: a half-written file is never seen (writers
    /// rename), so this is an operator's mistake, and dropping every browser would not help.
    fn refresh(&self, force: bool) {
        let due = force || self.cache.lock().unwrap().checked.elapsed() >= RECHECK;
        if !due {
            return;
        }
        let stamp = stamp_of(&self.dir.join(FILE));
        let mut cache = self.cache.lock().unwrap();
        cache.checked = Instant::now();
        if stamp == cache.stamp {
            return;
        }
        match read(&self.dir) {
            Ok((state, stamp)) => {
                cache.state = state;
                cache.stamp = stamp;
            }
            Err(error) => tracing::error!(%error, "kept the last pairing state"),
        }
    }

    /// Which pairing or open code (of either kind) a challenge's tag names, if any.
    pub fn find(&self, browser_nonce: &[u8; NONCE_LEN], tag: &str) -> Option<Claim> {
        self.refresh(true);
        let now = now_secs();
        let cache = self.cache.lock().unwrap();
        let paired = cache.state.browsers.iter().find_map(|browser| {
            let secret = browser.secret()?;
            pairing::tag_matches(&secret, browser_nonce, tag)
                .then(|| Claim::Paired(browser.clone()))
        });
        let matches = |code: &PairingCode| {
            pairing::tag_matches(&Secret::Code(code.clone()), browser_nonce, tag)
        };
        paired
            .or_else(|| {
                cache
                    .state
                    .codes
                    .iter()
                    .filter(|open| open.expires_at > now)
                    .filter_map(|open| Some((PairingCode::parse(&open.code).ok()?, open.kind)))
                    .find(|(code, _)| matches(code))
                    .map(|(code, kind)| Claim::Code(code, kind))
            })
            .or_else(|| {
                let made = self.made.lock().unwrap();
                made.iter()
                    .find(|(code, _)| matches(code))
                    .map(|(code, used)| Claim::Used(code.clone(), used.clone()))
            })
    }

    /// Completes a pairing: consumes `code` and records the peer (of the code's kind) with
    /// `key`. Refused when the code was used or expired meanwhile, or, for a browser, when
    /// another pairing holds its browser ID (a device backend's key is bound to no one device),
    /// when the code was made for another browser ID (the code is closed), or when the browser
    /// says the code came from its managed policy (`managed`) and it was made for no one browser
    /// (the code is closed: it sat in a file other users may read).
    pub fn complete(
        &self,
        code: &PairingCode,
        peer_id: &str,
        name: &str,
        key: &[u8; KEY_LEN],
        managed: bool,
    ) -> Result<Paired, PairRefused> {
        let paired = update(&self.dir, |state| {
            let now = now_secs();
            state.drop_expired_codes(now);
            let Some(at) = state
                .codes
                .iter()
                .position(|open| open.code == code.as_str())
            else {
                return Err(PairRefused::CodeGone);
            };
            match &state.codes[at].browser_id {
                Some(bound) if bound != peer_id => {
                    tracing::warn!(
                        made_for = %bound,
                        presented = %peer_id,
                        "a pairing code made for one browser was presented with another ID: the \
                         hub closed it, since it has leaked; make a new one with `tabwire-hub pair \
                         --browser-id`"
                    );
                    state.codes.remove(at);
                    return Ok(Err(PairRefused::ForAnother));
                }
                None if managed && state.codes[at].kind == PairingKind::Browser => {
                    state.codes.remove(at);
                    return Ok(Err(PairRefused::ManagedUnbound(peer_id.to_owned())));
                }
                _ => {}
            }
            let kind = state.codes.remove(at).kind;
            if kind.spec().binds_one_id()
                && state
                    .browsers
                    .iter()
                    .any(|b| b.kind == kind && b.peer_id == peer_id)
            {
                // The code stays consumed: whoever holds it tried to take an ID over.
                return Ok(Err(PairRefused::IdTaken(peer_id.to_owned())));
            }
            let paired = Paired {
                pairing_id: uuid::Uuid::new_v4().simple().to_string(),
                kind,
                peer_id: peer_id.to_owned(),
                name: name.to_owned(),
                key: encode_hex(key),
                paired_at: now,
            };
            state.browsers.push(paired.clone());
            Ok(Ok(paired))
        })??;
        self.made.lock().unwrap().push((
            code.clone(),
            Used {
                kind: paired.kind,
                peer_id: paired.peer_id.clone(),
                pairing_id: paired.pairing_id.clone(),
                at: paired.paired_at,
            },
        ));
        self.refresh(true);
        Ok(paired)
    }

    /// The peer ID that paired with `code` through this hub since it started, if any.
    pub fn paired_with(&self, code: &PairingCode) -> Option<String> {
        let made = self.made.lock().unwrap();
        made.iter()
            .find(|(used, _)| used == code)
            .map(|(_, used)| used.peer_id.clone())
    }

    /// The pairings and the open codes now (the file is read again if it changed).
    pub fn summary(&self) -> PairingSummary {
        self.refresh(false);
        PairingSummary::of(&self.cache.lock().unwrap().state, now_secs())
    }

    /// Whether the pairing `pairing_id` still stands (it is gone once revoked).
    pub fn is_current(&self, pairing_id: &str) -> bool {
        self.refresh(false);
        let cache = self.cache.lock().unwrap();
        cache
            .state
            .browsers
            .iter()
            .any(|browser| browser.pairing_id == pairing_id)
    }
}

#[cfg(test)]
impl Pairings {
    /// No paired browsers and no directory (nothing is ever read or written), for tests that
    /// need a local hub's state without its files.
    pub(crate) fn for_tests() -> std::sync::Arc<Pairings> {
        std::sync::Arc::new(Pairings {
            dir: PathBuf::from("/nonexistent/tabwire-state"),
            cache: Mutex::new(Cache {
                state: State::default(),
                stamp: None,
                checked: Instant::now(),
            }),
            made: Mutex::default(),
        })
    }
}

/// Adds a one-time code for a peer of `kind`, valid for `ttl`, and returns it (what
/// `tabwire-hub pair` prints).
pub fn new_code(dir: &Path, ttl: Duration, kind: PairingKind) -> Result<PairingCode, PairingError> {
    add_code(dir, ttl, kind, None)
}

/// Adds a one-time browser code that pairs `browser_id` only (`tabwire-hub pair --browser-id`),
/// the kind a managed policy may carry.
pub fn new_code_for(
    dir: &Path,
    ttl: Duration,
    browser_id: &str,
) -> Result<PairingCode, PairingError> {
    add_code(dir, ttl, PairingKind::Browser, Some(browser_id.to_owned()))
}

fn add_code(
    dir: &Path,
    ttl: Duration,
    kind: PairingKind,
    browser_id: Option<String>,
) -> Result<PairingCode, PairingError> {
    ensure_private_dir(dir)?;
    let code = PairingCode::from_random(random_bytes::<CODE_RANDOM_BYTES>()?);
    update(dir, |state| {
        let now = now_secs();
        state.drop_expired_codes(now);
        state.codes.push(OpenCode {
            code: code.as_str().to_owned(),
            kind,
            expires_at: now.saturating_add(ttl.as_secs().max(1)),
            browser_id,
        });
        Ok(())
    })?;
    Ok(code)
}

/// Closes the open `code` (and any expired one) without pairing anything: the launched browser's
/// code once its profile connected with the key it already held.
pub fn discard_code(dir: &Path, code: &PairingCode) -> Result<(), PairingError> {
    update(dir, |state| {
        state.drop_expired_codes(now_secs());
        state.codes.retain(|open| open.code != code.as_str());
        Ok(())
    })
}

/// What is paired and which codes are open, without keys or codes: what `doctor` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairingSummary {
    /// Each pairing: its kind, the peer ID and name it paired with, when.
    pub paired: Vec<(PairingKind, String, String, u64)>,
    /// Each open code: its kind and the seconds since the epoch at which it expires.
    pub open_codes: Vec<(PairingKind, u64)>,
}

impl PairingSummary {
    fn of(state: &State, now: u64) -> PairingSummary {
        PairingSummary {
            paired: state
                .browsers
                .iter()
                .map(|p| (p.kind, p.peer_id.clone(), p.name.clone(), p.paired_at))
                .collect(),
            open_codes: state
                .codes
                .iter()
                .filter(|code| code.expires_at > now)
                .map(|code| (code.kind, code.expires_at))
                .collect(),
        }
    }

    /// How many pairings of `kind` there are.
    pub fn count(&self, kind: PairingKind) -> usize {
        self.paired.iter().filter(|(k, ..)| *k == kind).count()
    }
}

/// The pairings and open codes in `dir`, read from its file.
pub fn summary(dir: &Path) -> Result<PairingSummary, PairingError> {
    Ok(PairingSummary::of(&read(dir)?.0, now_secs()))
}

/// The seconds since the epoch now, as pairing records count them.
pub fn now() -> u64 {
    now_secs()
}

/// The pairings, oldest first.
pub fn list(dir: &Path) -> Result<Vec<Paired>, PairingError> {
    Ok(read(dir)?.0.browsers)
}

/// Removes the pairing whose pairing ID, peer ID or name is `who` and returns it (none when
/// none is). A pairing ID names exactly one; a peer ID or name that names several (a device
/// backend chooses its devices' names, and could choose another pairing's) removes none:
/// [`PairingError::Ambiguous`] lists them.
pub fn revoke(dir: &Path, who: &str) -> Result<Vec<Paired>, PairingError> {
    update(dir, |state| {
        let exact = state.browsers.iter().any(|b| b.pairing_id == who);
        let (gone, kept): (Vec<Paired>, Vec<Paired>) = std::mem::take(&mut state.browsers)
            .into_iter()
            .partition(|b| b.pairing_id == who || (!exact && (b.peer_id == who || b.name == who)));
        if gone.len() > 1 {
            return Err(PairingError::Ambiguous {
                who: who.to_owned(),
                matches: gone,
            });
        }
        state.browsers = kept;
        Ok(gone)
    })
}

/// A per-browser key, a code or a nonce, from the system's random source.
fn random_bytes<const N: usize>() -> Result<[u8; N], PairingError> {
    crate::random::bytes::<N>().map_err(io_error("read", Path::new(crate::random::SOURCE)))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What tells a changed file: every write replaces the file (a new inode), so the inode alone
/// would do; modification time and length also catch an edit in place by hand.
fn stamp_of(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len(), meta.ino()))
}

/// The state in `dir` (empty when there is no file yet) and the file's stamp.
fn read(dir: &Path) -> Result<(State, Option<Stamp>), PairingError> {
    let path = dir.join(FILE);
    let stamp = stamp_of(&path);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Ok((State::default(), None));
        }
        Err(error) => return Err(io_error("read", &path)(error)),
    };
    let state = serde_json::from_str(&text).map_err(|error| PairingError::Damaged {
        path: path.clone(),
        reason: error.to_string(),
    })?;
    Ok((state, stamp))
}

/// Changes the state under the lock and writes it back whole; returns what `change` returns.
/// Nothing is written when `change` fails.
fn update<T, E: From<PairingError>>(
    dir: &Path,
    change: impl FnOnce(&mut State) -> Result<T, E>,
) -> Result<T, E> {
    let _lock = lock(dir)?;
    let (mut state, _) = read(dir)?;
    let result = change(&mut state)?;
    write(dir, &state)?;
    Ok(result)
}

fn write(dir: &Path, state: &State) -> Result<(), PairingError> {
    let path = dir.join(FILE);
    let temporary = dir.join(format!("{FILE}.{}", std::process::id()));
    let text = serde_json::to_string_pretty(state).expect("the pairing state serializes");
    let mut file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)
            .map_err(io_error("open", &temporary))?
    };
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io_error("write", &temporary))?;
    std::fs::rename(&temporary, &path).map_err(io_error("replace", &path))
}

/// An exclusive lock on the state, released when the file is dropped.
fn lock(dir: &Path) -> Result<File, PairingError> {
    let path = dir.join(LOCK);
    crate::private_dir::lock(&path).map_err(io_error("lock", &path))
}

/// The state directory must belong to this user and be closed to everyone else: its keys let
/// whoever reads them pose as a paired browser.
fn ensure_private_dir(dir: &Path) -> Result<(), PairingError> {
    let problem = match crate::private_dir::ensure(dir) {
        Ok(()) => return Ok(()),
        Err(Unfit::Io(error)) => return Err(io_error("create", dir)(error)),
        Err(Unfit::Problem(PrivateDirProblem::NotADirectory)) => "is not a directory".to_owned(),
        Err(Unfit::Problem(PrivateDirProblem::Owner(owner))) => format!(
            "belongs to user {owner}, who could read the paired browsers' keys; remove it or \
             choose another --state-dir"
        ),
        Err(Unfit::Problem(PrivateDirProblem::OpenToOthers { mode })) => format!(
            "is open to other users (mode {mode:o}), and it holds the paired browsers' keys: \
             chmod 700 {}",
            dir.display()
        ),
    };
    Err(PairingError::UnsafeDirectory(format!(
        "the hub's state directory {} {problem}",
        dir.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(600);

    fn scratch() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "tabwire-pairing-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        dir.join("state")
    }

    fn challenge(secret: &Secret) -> ([u8; NONCE_LEN], String) {
        let nonce = random_bytes::<NONCE_LEN>().unwrap();
        (nonce, pairing::tag(secret, &nonce))
    }

    #[test]
    fn the_hub_remembers_which_code_paired_whom_and_discards_unused_ones() {
        let dir = scratch();
        let pairings = Pairings::open(&dir).unwrap();
        let used = new_code(&dir, TTL, PairingKind::Browser).unwrap();
        let unused = new_code(&dir, TTL, PairingKind::Browser).unwrap();
        assert_eq!(pairings.paired_with(&used), None);
        pairings
            .complete(&used, "b1", "Work", &[3; KEY_LEN], false)
            .unwrap();
        assert_eq!(pairings.paired_with(&used).as_deref(), Some("b1"));
        assert_eq!(pairings.paired_with(&unused), None);
        assert_eq!(pairings.summary().open_codes.len(), 1);
        discard_code(&dir, &unused).unwrap();
        assert!(summary(&dir).unwrap().open_codes.is_empty());
        assert!(matches!(
            pairings.complete(&unused, "b2", "Other", &[4; KEY_LEN], false),
            Err(PairRefused::CodeGone)
        ));
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_code_made_for_a_browser_pairs_that_browser_only_and_a_managed_code_must_be_one() {
        let dir = scratch();
        let pairings = Pairings::open(&dir).unwrap();
        let bound = new_code_for(&dir, TTL, "b1").unwrap();
        // Another browser ID is refused without being told the right one, and the code is
        // closed: presented with a wrong ID, it has leaked, and the right ID no longer helps.
        let refused = pairings
            .complete(&bound, "b2", "Other", &[1; KEY_LEN], true)
            .unwrap_err();
        assert!(matches!(refused, PairRefused::ForAnother));
        assert!(!refused.to_string().contains("b1"), "{refused}");
        assert!(summary(&dir).unwrap().open_codes.is_empty());
        assert!(matches!(
            pairings.complete(&bound, "b1", "Fleet", &[2; KEY_LEN], true),
            Err(PairRefused::CodeGone)
        ));
        // Presented with its own ID, a bound code pairs.
        let bound = new_code_for(&dir, TTL, "b1").unwrap();
        pairings
            .complete(&bound, "b1", "Fleet", &[2; KEY_LEN], true)
            .unwrap();
        // A code made for no one browser, said to come from a managed policy, is refused and
        // closed: it sat in a file other users may read.
        let unbound = new_code(&dir, TTL, PairingKind::Browser).unwrap();
        let refused = pairings
            .complete(&unbound, "b3", "Fleet", &[3; KEY_LEN], true)
            .unwrap_err();
        assert!(matches!(refused, PairRefused::ManagedUnbound(_)));
        assert!(
            refused
                .to_string()
                .contains("tabwire-hub pair --browser-id b3"),
            "{refused}"
        );
        assert!(matches!(
            pairings.complete(&unbound, "b3", "Fleet", &[3; KEY_LEN], false),
            Err(PairRefused::CodeGone)
        ));
        // Pasted or bundled, an unbound code pairs as before.
        let pasted = new_code(&dir, TTL, PairingKind::Browser).unwrap();
        pairings
            .complete(&pasted, "b4", "Home", &[4; KEY_LEN], false)
            .unwrap();
        assert!(summary(&dir).unwrap().open_codes.is_empty());
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_code_pairs_once_and_the_key_then_identifies_the_browser() {
        let dir = scratch();
        let pairings = Pairings::open(&dir).unwrap();
        let code = new_code(&dir, TTL, PairingKind::Browser).unwrap();
        let (nonce, tag) = challenge(&Secret::Code(code.clone()));
        let Some(Claim::Code(found, PairingKind::Browser)) = pairings.find(&nonce, &tag) else {
            panic!("the code is found");
        };
        assert_eq!(found, code);
        let key = [9u8; KEY_LEN];
        let paired = pairings.complete(&code, "b1", "Work", &key, false).unwrap();
        assert!(pairings.is_current(&paired.pairing_id));
        // Single use: found again only as used, by the pairing it made.
        let (nonce, tag) = challenge(&Secret::Code(code.clone()));
        assert!(matches!(
            pairings.find(&nonce, &tag),
            Some(Claim::Used(_, used)) if used.pairing_id == paired.pairing_id
        ));
        assert!(matches!(
            pairings.complete(&code, "b2", "Other", &key, false),
            Err(PairRefused::CodeGone)
        ));
        // The key finds its pairing; another key finds nothing.
        let (nonce, tag) = challenge(&Secret::Key(key));
        assert!(matches!(pairings.find(&nonce, &tag), Some(Claim::Paired(b)) if b.peer_id == "b1"));
        let (nonce, tag) = challenge(&Secret::Key([8; KEY_LEN]));
        assert!(pairings.find(&nonce, &tag).is_none());
        // Files are private.
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join(FILE)), 0o600);
        assert!(!format!("{paired:?}").is_empty());
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn an_id_paired_already_cannot_be_taken_by_a_new_code() {
        let dir = scratch();
        let pairings = Pairings::open(&dir).unwrap();
        let first = new_code(&dir, TTL, PairingKind::Browser).unwrap();
        pairings
            .complete(&first, "b1", "Work", &[1; KEY_LEN], false)
            .unwrap();
        let second = new_code(&dir, TTL, PairingKind::Browser).unwrap();
        let refused = pairings
            .complete(&second, "b1", "Impostor", &[2; KEY_LEN], false)
            .unwrap_err();
        assert!(matches!(refused, PairRefused::IdTaken(_)), "{refused}");
        assert!(refused.to_string().contains("pair --revoke b1"));
        assert_eq!(list(&dir).unwrap().len(), 1);
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_device_code_pairs_a_device_backend_and_files_keep_their_old_shape() {
        let dir = scratch();
        let pairings = Pairings::open(&dir).unwrap();
        let code = new_code(&dir, TTL, PairingKind::Device).unwrap();
        let (nonce, tag) = challenge(&Secret::Code(code.clone()));
        let Some(claim @ Claim::Code(_, PairingKind::Device)) = pairings.find(&nonce, &tag) else {
            panic!("a device code is found as one");
        };
        assert_eq!(claim.kind(), PairingKind::Device);
        let device = pairings
            .complete(&code, "android-1", "Pixel 7", &[3; KEY_LEN], false)
            .unwrap();
        assert_eq!(device.kind, PairingKind::Device);
        // A second backend pairing through the same phone is not an ID taken over: a device
        // key is bound to no one device.
        let again = new_code(&dir, TTL, PairingKind::Device).unwrap();
        pairings
            .complete(&again, "android-1", "Pixel 7", &[4; KEY_LEN], false)
            .unwrap();
        // A browser of the same ID is another namespace.
        let browser = new_code(&dir, TTL, PairingKind::Browser).unwrap();
        let browser = pairings
            .complete(&browser, "android-1", "Work", &[5; KEY_LEN], false)
            .unwrap();
        let (nonce, tag) = challenge(&Secret::Key([3; KEY_LEN]));
        assert_eq!(
            pairings.find(&nonce, &tag).unwrap().kind(),
            PairingKind::Device
        );
        // Browser records are written as before (no kind), device records say theirs.
        let text = std::fs::read_to_string(dir.join(FILE)).unwrap();
        assert_eq!(text.matches("\"kind\": \"device\"").count(), 2, "{text}");
        assert!(!text.contains("\"browser\""), "{text}");
        // A file of an older hub (no kinds) reads as browsers.
        let old = format!(
            r#"{{"browsers":[{{"pairingId":"p1","browserId":"b9","name":"Old","key":"{}","pairedAt":1}}],
                "codes":[{{"code":"{}","expiresAt":{}}}]}}"#,
            "07".repeat(KEY_LEN),
            new_code(&dir, TTL, PairingKind::Device).unwrap().as_str(),
            now_secs() + 60
        );
        std::fs::write(dir.join(FILE), old).unwrap();
        let listed = list(&dir).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].kind, PairingKind::Browser);
        assert_eq!(revoke(&dir, "p1").unwrap().len(), 1, "by pairing ID too");
        drop(browser);
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn expired_codes_are_refused() {
        let dir = scratch();
        let pairings = Pairings::open(&dir).unwrap();
        let code = new_code(&dir, TTL, PairingKind::Browser).unwrap();
        // Age the code by rewriting its expiry into the past.
        update(&dir, |state| {
            state.codes[0].expires_at = now_secs() - 1;
            Ok::<_, PairingError>(())
        })
        .unwrap();
        let (nonce, tag) = challenge(&Secret::Code(code.clone()));
        assert!(pairings.find(&nonce, &tag).is_none());
        assert!(matches!(
            pairings.complete(&code, "b1", "Work", &[1; KEY_LEN], false),
            Err(PairRefused::CodeGone)
        ));
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn revoking_by_name_or_id_is_seen_by_the_running_hub() {
        let dir = scratch();
        let pairings = Pairings::open(&dir).unwrap();
        let a = new_code(&dir, TTL, PairingKind::Browser).unwrap();
        let a = pairings
            .complete(&a, "id-a", "Work", &[1; KEY_LEN], false)
            .unwrap();
        let b = new_code(&dir, TTL, PairingKind::Browser).unwrap();
        let b = pairings
            .complete(&b, "id-b", "Home", &[2; KEY_LEN], false)
            .unwrap();
        assert_eq!(revoke(&dir, "Work").unwrap(), vec![a.clone()]);
        assert!(revoke(&dir, "nobody").unwrap().is_empty());
        pairings.refresh(true);
        assert!(!pairings.is_current(&a.pairing_id));
        assert!(pairings.is_current(&b.pairing_id));
        assert_eq!(revoke(&dir, "id-b").unwrap().len(), 1);
        assert!(list(&dir).unwrap().is_empty());
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    /// A device names itself: a backend can pair devices named like another pairing (or like
    /// another peer's ID). Revoking by that name removes nothing and lists them.
    #[test]
    fn a_name_of_several_pairings_revokes_none() {
        let dir = scratch();
        let pairings = Pairings::open(&dir).unwrap();
        let work = new_code(&dir, TTL, PairingKind::Browser).unwrap();
        let work = pairings
            .complete(&work, "id-a", "Work", &[1; KEY_LEN], false)
            .unwrap();
        let phone = new_code(&dir, TTL, PairingKind::Device).unwrap();
        let phone = pairings
            .complete(&phone, "backend-1", "Work", &[2; KEY_LEN], false)
            .unwrap();
        let posing = new_code(&dir, TTL, PairingKind::Device).unwrap();
        let posing = pairings
            .complete(&posing, "backend-2", "id-a", &[3; KEY_LEN], false)
            .unwrap();
        let refused = revoke(&dir, "Work").unwrap_err();
        let PairingError::Ambiguous { matches, .. } = &refused else {
            panic!("{refused}");
        };
        assert_eq!(matches, &vec![work.clone(), phone.clone()]);
        let said = refused.to_string();
        assert!(
            said.contains(&work.pairing_id) && said.contains(&phone.pairing_id),
            "{said}"
        );
        assert!(
            revoke(&dir, "id-a").is_err(),
            "a peer ID another pairing is named after"
        );
        assert_eq!(list(&dir).unwrap().len(), 3, "nothing was removed");
        // The pairing ID picks one, even when another pairing is named after it.
        assert_eq!(revoke(&dir, &phone.pairing_id).unwrap(), vec![phone]);
        assert_eq!(revoke(&dir, &work.pairing_id).unwrap(), vec![work]);
        assert_eq!(revoke(&dir, "id-a").unwrap(), vec![posing]);
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_shared_or_damaged_state_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let error = Pairings::open(&dir).err().unwrap();
        assert!(matches!(error, PairingError::UnsafeDirectory(_)), "{error}");
        assert!(error.to_string().contains("chmod 700"), "{error}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(dir.join(FILE), "not json").unwrap();
        let error = Pairings::open(&dir).err().unwrap();
        assert!(error.to_string().contains("is damaged"), "{error}");
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }
}
