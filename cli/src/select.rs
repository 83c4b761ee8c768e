//! Which browser and device a call goes to: `--browser`/`--device` for one call, or what
//! `tabwire select` kept for this shell session, and never a guess.
//!
//! A name is looked up in the hub's `list_browsers`/`list_devices` (an exact ID first, then an
//! exact name, then a name in any case); a name two peers share is a usage error listing them.
//! The chosen ID goes into the call as the tool's own `browserId`/`deviceId` when its schema
//! has one and the caller did not give it. With nothing chosen the hub's rule applies: the one
//! connected browser, or `BROWSER_NOT_SELECTED` with the candidates (a tool error, exit 1).
//!
//! The state file keeps the choice of one shell session for one hub, only when asked
//! (`tabwire select`). It lives in a private directory (`$XDG_RUNTIME_DIR/tabwire-cli`, on
//! macOS `$TMPDIR/tabwire-cli`, else `/tmp/tabwire-cli-<uid>`; this user's, mode 0700, checked
//! like the socket's) and is named after the session: `TABWIRE_SESSION` when set, else the
//! process's session ID (`getsid(0)`: the terminal's login shell, or an agent's process group
//! leader), stored with its leader's start time (Linux, `/proc/<sid>/stat`) so that a session
//! ID the system reuses later does not inherit the choice. Limits: every shell that shares a
//! session (a terminal's shells, subshells, `tmux` panes opened from one shell) shares the
//! choice; `setsid` starts a new one; on systems without `/proc` a reused session ID is not
//! detected (set `TABWIRE_SESSION` there).

use std::collections::BTreeMap;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tabwire_protocol::local::{Platform, current_uid, private_dir_problem};

use crate::error::CliError;
use crate::link::Link;

/// A kind of peer, as the hub names its tools and arguments: a row of the protocol crate's
/// kinds table (its noun, ID argument and listing tool).
pub use tabwire_protocol::Kind as PeerKind;

/// Finds the peer `given` names (an ID or a name) among those the hub lists.
pub async fn resolve(link: &Link, kind: PeerKind, given: &str) -> Result<String, CliError> {
    let data = link.data_of(kind.spec().list_tool).await?;
    let peers = data[kind.spec().plural]
        .as_array()
        .cloned()
        .unwrap_or_default();
    pick(kind, given, &peers)
}

/// [`resolve`]'s choice among listed peers (`{browserId, name, connected, …}`).
pub fn pick(kind: PeerKind, given: &str, peers: &[Value]) -> Result<String, CliError> {
    let id_of = |peer: &Value| peer[kind.spec().id_arg].as_str().map(str::to_owned);
    if let Some(id) = peers
        .iter()
        .filter_map(id_of)
        .find(|id| id.as_str() == given)
    {
        return Ok(id);
    }
    let named = |exact: bool| -> Vec<&Value> {
        peers
            .iter()
            .filter(|peer| {
                peer["name"].as_str().is_some_and(|name| {
                    if exact {
                        name == given
                    } else {
                        name.eq_ignore_ascii_case(given)
                    }
                })
            })
            .collect()
    };
    let mut matches = named(true);
    if matches.is_empty() {
        matches = named(false);
    }
    let line = |peer: &Value| {
        format!(
            "  {} name={} {}",
            peer[kind.spec().id_arg].as_str().unwrap_or("?"),
            peer["name"],
            if peer["connected"] == json!(true) {
                "connected"
            } else {
                "disconnected"
            }
        )
    };
    let listing = |peers: &[&Value]| {
        let candidates: Vec<Value> = peers
            .iter()
            .map(|peer| {
                json!({kind.spec().id_arg: peer[kind.spec().id_arg], "name": peer["name"],
                       "connected": peer["connected"]})
            })
            .collect();
        let lines: Vec<String> = peers.iter().map(|peer| line(peer)).collect();
        (Value::Array(candidates), lines.join("\n"))
    };
    match matches.as_slice() {
        [one] => id_of(one).ok_or_else(|| CliError::usage("the hub listed a peer with no ID")),
        [] => {
            let all: Vec<&Value> = peers.iter().collect();
            let (candidates, lines) = listing(&all);
            Err(CliError::Usage {
                message: format!(
                    "--{} {given:?}: no {} has that name or ID",
                    kind.spec().noun,
                    kind.spec().noun
                ),
                help: Some(if all.is_empty() {
                    format!("No {} is known to the hub.", kind.spec().noun)
                } else {
                    format!("Known {}s:\n{lines}", kind.spec().noun)
                }),
                candidates: Some(candidates),
            })
        }
        several => {
            let (candidates, lines) = listing(several);
            Err(CliError::Usage {
                message: format!(
                    "--{} {given:?}: {} {}s have that name; give an ID",
                    kind.spec().noun,
                    several.len(),
                    kind.spec().noun
                ),
                help: Some(lines),
                candidates: Some(candidates),
            })
        }
    }
}

/// This shell session's choices, per hub, as kept in the state file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Choices {
    /// Peer IDs by kind noun (`browser`, `device`).
    pub ids: BTreeMap<String, String>,
}

impl Choices {
    /// The ID chosen for `kind`.
    pub fn get(&self, kind: PeerKind) -> Option<&str> {
        self.ids.get(kind.spec().noun).map(String::as_str)
    }
}

/// Who this shell session is, for the state file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellSession {
    /// Part of the file's name.
    key: String,
    /// What must still hold for the file to be this session's: the session leader's start
    /// time, when the system says.
    check: Value,
}

impl ShellSession {
    /// This process's shell session: `TABWIRE_SESSION`, else `getsid(0)` and its leader's
    /// start time.
    pub fn here(env: impl Fn(&str) -> Option<String>) -> ShellSession {
        if let Some(name) = env("TABWIRE_SESSION").filter(|name| !name.is_empty()) {
            // Any text names a session; the file name keeps a safe spelling of it.
            let safe: String = name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .take(64)
                .collect();
            return ShellSession {
                key: format!("name-{safe}-{:016x}", fnv(name.as_bytes())),
                check: json!({"name": name}),
            };
        }
        // SAFETY: getsid has no preconditions; 0 means this process.
        let sid = unsafe { libc::getsid(0) };
        ShellSession {
            key: format!("sid-{sid}"),
            check: json!({"sid": sid, "leaderStart": leader_start(sid)}),
        }
    }

    /// A session named as `TABWIRE_SESSION` would name it, for tests.
    #[cfg(test)]
    pub fn named(name: &str) -> ShellSession {
        ShellSession::here(|variable| (variable == "TABWIRE_SESSION").then(|| name.to_owned()))
    }

    /// For messages: which session this is.
    pub fn describe(&self) -> String {
        match self.check.get("name") {
            Some(name) => format!("TABWIRE_SESSION={}", name.as_str().unwrap_or_default()),
            None => format!("shell session {}", self.check["sid"]),
        }
    }
}

/// The start time of process `pid` in clock ticks since boot (field 22 of `/proc/PID/stat`),
/// when the system has `/proc`.
fn leader_start(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after its end.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// FNV-1a, to tell apart session names that spell the same in a file name.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The state files' directory, made private if it is not there.
pub fn state_dir(env: &impl Fn(&str) -> Option<String>) -> Result<PathBuf, CliError> {
    let dir = match env(Platform::HERE.private_dir_variable()).filter(|dir| !dir.is_empty()) {
        Some(base) => PathBuf::from(base).join("tabwire-cli"),
        None => PathBuf::from(format!("/tmp/tabwire-cli-{}", current_uid())),
    };
    ensure_private(&dir)?;
    Ok(dir)
}

/// Creates `dir` (mode 0700) or checks that it is this user's and private.
pub fn ensure_private(dir: &Path) -> Result<(), CliError> {
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(error) => {
            return Err(CliError::usage(format!(
                "cannot create {}: {error}",
                dir.display()
            )));
        }
    }
    // The directory itself, not what a link there points at: another user can plant a link
    // in /tmp pointing at a private directory of ours, which would pass every check below.
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|error| CliError::usage(format!("{}: {error}", dir.display())))?;
    if meta.file_type().is_symlink() {
        return Err(CliError::usage(format!(
            "{} is a symbolic link, not a directory of yours; remove it",
            dir.display()
        )));
    }
    match private_dir_problem(&meta, current_uid()) {
        None => Ok(()),
        Some(problem) => Err(CliError::usage(format!(
            "{} is not a private directory of yours ({problem:?}); remove it or `chmod 700` it",
            dir.display()
        ))),
    }
}

/// The state file of one shell session.
pub struct StateFile {
    path: PathBuf,
    session: ShellSession,
}

impl StateFile {
    /// The file of `session` in `dir`.
    pub fn new(dir: &Path, session: ShellSession) -> StateFile {
        StateFile {
            path: dir.join(format!("select-{}.json", session.key)),
            session,
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session it belongs to.
    pub fn session(&self) -> &ShellSession {
        &self.session
    }

    /// The choices kept for `hub`; none when there is no file, or it is another (earlier)
    /// session's that had the same ID.
    pub fn load(&self, hub: &str) -> Choices {
        let Some(hubs) = self.hubs() else {
            return Choices::default();
        };
        let ids = hubs
            .get(hub)
            .and_then(Value::as_object)
            .map(|ids| {
                ids.iter()
                    .filter_map(|(kind, id)| Some((kind.clone(), id.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        Choices { ids }
    }

    /// Keeps `ids` for `hub` (replacing what was kept for the kinds given), or forgets `hub`'s
    /// choices with `None`.
    pub fn store(&self, hub: &str, ids: Option<&Choices>) -> Result<(), CliError> {
        let mut hubs = self.hubs().unwrap_or_default();
        match ids {
            Some(choices) => {
                let entry = hubs.entry(hub.to_owned()).or_insert_with(|| json!({}));
                for (kind, id) in &choices.ids {
                    entry[kind] = json!(id);
                }
            }
            None => {
                hubs.remove(hub);
            }
        }
        if hubs.is_empty() {
            return match std::fs::remove_file(&self.path) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(CliError::usage(
                    format!("cannot remove {}: {error}", self.path.display()),
                )),
                _ => Ok(()),
            };
        }
        let body = json!({"session": self.session.check, "hubs": hubs});
        let temporary = self
            .path
            .with_extension(format!("{}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&temporary)?;
            file.write_all(format!("{body}\n").as_bytes())?;
            std::fs::rename(&temporary, &self.path)
        };
        write().map_err(|error| {
            let _ = std::fs::remove_file(&temporary);
            CliError::usage(format!("cannot write {}: {error}", self.path.display()))
        })
    }

    /// The file's hubs when it is this session's; a file left by an earlier session with the
    /// same ID is removed.
    fn hubs(&self) -> Option<serde_json::Map<String, Value>> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        let file: Value = serde_json::from_str(&text).ok()?;
        if file["session"] != self.session.check {
            let _ = std::fs::remove_file(&self.path);
            return None;
        }
        file["hubs"].as_object().cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn browsers() -> Vec<Value> {
        vec![
            json!({"browserId": "b-1", "name": "Work", "connected": true}),
            json!({"browserId": "b-2", "name": "Personal", "connected": true}),
            json!({"browserId": "b-3", "name": "twin", "connected": true}),
            json!({"browserId": "b-4", "name": "twin", "connected": false}),
        ]
    }

    #[test]
    fn names_and_ids() {
        let peers = browsers();
        assert_eq!(pick(PeerKind::Browser, "b-2", &peers).unwrap(), "b-2");
        assert_eq!(pick(PeerKind::Browser, "Work", &peers).unwrap(), "b-1");
        assert_eq!(pick(PeerKind::Browser, "personal", &peers).unwrap(), "b-2");
        let Err(CliError::Usage { candidates, .. }) = pick(PeerKind::Browser, "twin", &peers)
        else {
            panic!("a shared name is ambiguous");
        };
        assert_eq!(candidates.unwrap().as_array().unwrap().len(), 2);
        let Err(CliError::Usage { candidates, .. }) = pick(PeerKind::Browser, "nope", &peers)
        else {
            panic!("an unknown name is a usage error");
        };
        assert_eq!(candidates.unwrap().as_array().unwrap().len(), 4);
    }

    #[test]
    fn a_link_planted_where_the_state_directory_goes_is_refused() {
        let root = std::env::temp_dir().join(format!("tabwire-cli-link-{}", std::process::id()));
        let private = root.join("private");
        ensure_private(&private).unwrap();
        let planted = root.join("tabwire-cli");
        std::os::unix::fs::symlink(&private, &planted).unwrap();
        let error = ensure_private(&planted).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn the_state_file_keeps_choices_per_session_and_hub() {
        let dir = std::env::temp_dir().join(format!("tabwire-cli-test-{}", std::process::id()));
        ensure_private(&dir).unwrap();
        let mine = StateFile::new(&dir, ShellSession::named("one"));
        let other = StateFile::new(&dir, ShellSession::named("two"));
        let mut choices = Choices::default();
        choices.ids.insert("browser".into(), "b-1".into());
        mine.store("socket:/s", Some(&choices)).unwrap();
        assert_eq!(mine.load("socket:/s").get(PeerKind::Browser), Some("b-1"));
        assert_eq!(mine.load("url:https://h/mcp"), Choices::default());
        assert_eq!(other.load("socket:/s"), Choices::default());
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(mine.path()).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        // A file of an earlier session with the same key is not this one's.
        std::fs::write(
            mine.path(),
            r#"{"session":{"sid":1,"leaderStart":5},"hubs":{"socket:/s":{"browser":"old"}}}"#,
        )
        .unwrap();
        assert_eq!(mine.load("socket:/s"), Choices::default());
        assert!(!mine.path().exists());
        mine.store("socket:/s", Some(&choices)).unwrap();
        mine.store("socket:/s", None).unwrap();
        assert!(!mine.path().exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_session_leader_start_is_read_from_proc() {
        if Path::new("/proc/self/stat").exists() {
            assert!(leader_start(std::process::id() as i32).is_some());
        }
        let named = ShellSession::named("a/b c");
        assert!(named.key.starts_with("name-a_b_c-"));
        assert_ne!(named.key, ShellSession::named("a_b_c").key);
    }
}
