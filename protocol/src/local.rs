//! The local session link: `tabwire-mcp` (the stdio shim) to `tabwire-hub` over a Unix socket.
//!
//! The socket carries newline-delimited MCP JSON-RPC. Besides that, the two exchange a few
//! control lines, told apart from JSON-RPC by their `"tabwire"` key:
//! - the shim's first line on every connection is [`LocalControl::Attach`], naming its session
//!   and what the session had selected (a browser, later a device: [`Selections`]), so a hub
//!   that restarted can restore it;
//! - the hub sends [`LocalControl::State`] whenever the session's selections change, and the
//!   shim keeps the latest for its next `Attach`.
//!
//! A client that sends no `Attach` line gets plain MCP and an anonymous session.
//!
//! Also here, because the hub, the shim and the `tabwire` CLI must agree on them without
//! depending on each other: the default socket path, the default state directory, the rule for
//! private directories, which hosts are loopback, and the MCP capability that asks for results'
//! structured envelope ([`ENVELOPE_CAPABILITY`]).
//!
//! Shims built before protocol 5 speak an older dialect ([`ShimDialect::BrowserOnly`]): one
//! `selectedBrowser` instead of `selected`. A shim outlives hub restarts, so a hub that was
//! upgraded under running agents still takes their attach lines and answers each in its own
//! dialect. (A new shim needs a new hub.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The experimental MCP client capability (`capabilities.experimental["tabwire/envelope"] =
/// {}`, at `initialize` or in a stateless request's `_meta`) with which a client asks the hub
/// for the `{ok, data | error}` envelope in `structuredContent`. Without it a result carries its
/// text (and images) alone: clients that hand a model `structuredContent` whenever it is there
/// would otherwise show page text unfenced (README, *Results*).
pub const ENVELOPE_CAPABILITY: &str = "tabwire/envelope";

/// A control line on the local socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "tabwire",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum LocalControl {
    /// Shim to hub, first line of a connection.
    Attach {
        /// Random, chosen by the shim when it starts; the same across its reconnections.
        session: String,
        /// What this session had selected before the connection dropped. Always sent by
        /// current shims (`{}` for nothing); absent from older ones.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selected: Option<Selections>,
        /// The older dialect's one selected browser.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selected_browser: Option<String>,
    },
    /// Hub to shim: the session's selections changed.
    State {
        /// What is selected now, every kind of peer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selected: Option<Selections>,
        /// The older dialect's one selected browser.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selected_browser: Option<String>,
    },
}

/// Which control lines a shim understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShimDialect {
    /// `selected`: one peer per kind (protocol 5 on).
    Selections,
    /// `selectedBrowser`: shims before protocol 5.
    BrowserOnly,
}

/// What an attach line says, whichever dialect it came in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    /// The shim's session.
    pub session: String,
    /// What the session had selected.
    pub selected: Selections,
    /// How the shim must be answered.
    pub dialect: ShimDialect,
}

/// What one session has selected, per kind of peer (`browser`, later `device`): the peer's ID.
/// The shim keeps it without looking inside, so a kind it was not built with survives too.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Selections(BTreeMap<String, String>);

impl Selections {
    /// The peer of `kind` selected, if any.
    pub fn get(&self, kind: &str) -> Option<&str> {
        self.0.get(kind).map(String::as_str)
    }

    /// Selects `id` for `kind`; says whether that changed anything.
    pub fn set(&mut self, kind: &str, id: &str) -> bool {
        if self.get(kind) == Some(id) {
            return false;
        }
        self.0.insert(kind.to_owned(), id.to_owned());
        true
    }
}

impl LocalControl {
    /// The attach line a current shim sends.
    pub fn attach(session: String, selected: Selections) -> Self {
        LocalControl::Attach {
            session,
            selected: Some(selected),
            selected_browser: None,
        }
    }

    /// What an attach line says; `None` for any other line.
    pub fn attached(self) -> Option<Attached> {
        let LocalControl::Attach {
            session,
            selected,
            selected_browser,
        } = self
        else {
            return None;
        };
        let dialect = match selected {
            Some(_) => ShimDialect::Selections,
            None => ShimDialect::BrowserOnly,
        };
        let mut selected = selected.unwrap_or_default();
        if let Some(browser) = selected_browser {
            selected.set("browser", &browser);
        }
        Some(Attached {
            session,
            selected,
            dialect,
        })
    }

    /// The state line that reports `selected` to a shim of `dialect`; `None` when that shim
    /// has nothing to learn (an older shim hears only of its browser).
    pub fn state(selected: &Selections, dialect: ShimDialect) -> Option<Self> {
        match dialect {
            ShimDialect::Selections => Some(LocalControl::State {
                selected: Some(selected.clone()),
                selected_browser: None,
            }),
            ShimDialect::BrowserOnly => {
                selected.get("browser").map(|browser| LocalControl::State {
                    selected: None,
                    selected_browser: Some(browser.to_owned()),
                })
            }
        }
    }

    /// What a state line reports, whichever dialect it came in; `None` for any other line.
    pub fn reported(self) -> Option<Selections> {
        let LocalControl::State {
            selected,
            selected_browser,
        } = self
        else {
            return None;
        };
        let mut selected = selected.unwrap_or_default();
        if let Some(browser) = selected_browser {
            selected.set("browser", &browser);
        }
        Some(selected)
    }

    /// Parses a line if it is a control line. JSON-RPC lines (and anything else) give `None`.
    pub fn parse(line: &str) -> Option<Self> {
        // Cheap pre-check so ordinary MCP traffic is not parsed twice.
        if !line.contains("\"tabwire\"") {
            return None;
        }
        serde_json::from_str(line).ok()
    }

    /// The line as sent, with its trailing newline.
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("control lines always serialise");
        line.push('\n');
        line
    }
}

/// The kind of system, as far as the default socket path cares: which environment variable
/// names a directory that is the user's alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// macOS: `$TMPDIR` is a per-user 0700 directory under `/var/folders`, and there is no
    /// `XDG_RUNTIME_DIR`.
    MacOs,
    /// Linux and other Unix: `$XDG_RUNTIME_DIR` (`/run/user/<uid>`, 0700) when a session manager
    /// sets it. `$TMPDIR` is not used here: it is often the shared `/tmp`.
    OtherUnix,
}

impl Platform {
    /// The platform this was built for.
    pub const HERE: Platform = if cfg!(target_os = "macos") {
        Platform::MacOs
    } else {
        Platform::OtherUnix
    };

    /// The environment variable naming the user's private runtime directory.
    pub fn private_dir_variable(self) -> &'static str {
        match self {
            Platform::MacOs => "TMPDIR",
            Platform::OtherUnix => "XDG_RUNTIME_DIR",
        }
    }
}

/// Where hub and shim put the socket when none is given: `<private dir>/tabwire/hub.sock`, the
/// private directory being `$XDG_RUNTIME_DIR` on Linux and `$TMPDIR` on macOS
/// ([`Platform::private_dir_variable`], read through `env`); without it,
/// `/tmp/tabwire-<uid>/hub.sock`. Either way the socket sits in a directory of its own that the
/// hub keeps private to the user.
///
/// In the shared `/tmp` another user can create `/tmp/tabwire-<uid>` first, or plant a symbolic
/// link there. `held` says what is at that path, looked at without following a link
/// ([`shared_dir_held`] over `symlink_metadata`); when it is anything but this user's own
/// directory (or nothing yet), the socket goes to a private directory under the user's home
/// instead ([`fallback_socket_dir`]), and [`DefaultSocket::fell_back`] says why. The hub, the
/// shim and the CLI each decide this alone, looking at the same path and the same environment;
/// each still checks the directory's owner and mode, and the other end's user ID on every
/// connection.
///
/// What is at `/tmp/tabwire-<uid>` can change while a hub runs: another user's directory there
/// may be removed after the hub went home. So when the socket would be in `/tmp`, the home
/// fallback is named too ([`DefaultSocket::also`]): a client that finds no hub in `/tmp` tries
/// there, and a hub refuses to start while another answers there, so that the two never part.
pub fn default_socket_path(
    platform: Platform,
    env: impl Fn(&str) -> Option<String>,
    uid: u32,
    held: impl Fn(&Path) -> Option<SharedDirHeld>,
) -> DefaultSocket {
    if let Some(dir) = env(platform.private_dir_variable()).filter(|dir| !dir.is_empty()) {
        return DefaultSocket {
            path: PathBuf::from(dir).join("tabwire").join("hub.sock"),
            fell_back: None,
            also: None,
        };
    }
    let shared = PathBuf::from(format!("/tmp/tabwire-{uid}"));
    let home = env("HOME")
        .filter(|home| !home.is_empty())
        .map(|home| fallback_socket_dir(&home));
    match (held(&shared), home) {
        (Some(problem), Some(dir)) => DefaultSocket {
            path: dir.join("hub.sock"),
            fell_back: Some(format!(
                "{} {problem}, so it is not used: the socket is in {} instead",
                shared.display(),
                dir.display()
            )),
            also: None,
        },
        (_, home) => DefaultSocket {
            path: shared.join("hub.sock"),
            fell_back: None,
            also: home.map(|dir| dir.join("hub.sock")),
        },
    }
}

/// The default socket's path, and why it is not in the usual place when it is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultSocket {
    /// The socket.
    pub path: PathBuf,
    /// A sentence for the log (hub) or stderr (shim, CLI): what holds `/tmp/tabwire-<uid>` and
    /// where the socket went instead.
    pub fell_back: Option<String>,
    /// When `path` is in `/tmp`: the home fallback, where a hub of this user that started
    /// while `/tmp/tabwire-<uid>` was held still listens after it was freed. Clients try it
    /// when nothing answers at `path`; a hub does not start while something answers there.
    pub also: Option<PathBuf>,
}

/// The private directory under the user's home that the socket moves to when
/// `/tmp/tabwire-<uid>` is held: `~/.local/state/tabwire-run` (on macOS
/// `~/Library/Application Support/tabwire-run`), beside, not inside, the hub's default state
/// directory (which the hub creates private itself, and would refuse to find made by another
/// path with the umask's mode).
pub fn fallback_socket_dir(home: &str) -> PathBuf {
    let home = PathBuf::from(home);
    if cfg!(target_os = "macos") {
        home.join("Library/Application Support/tabwire-run")
    } else {
        home.join(".local/state/tabwire-run")
    }
}

/// What holds the shared `/tmp/tabwire-<uid>` when it is not the user's own directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedDirHeld {
    /// A symbolic link (never followed), owned by this user ID.
    Symlink(u32),
    /// Something other than a directory.
    NotADirectory,
    /// A directory of another user: this user ID.
    Owner(u32),
}

impl std::fmt::Display for SharedDirHeld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SharedDirHeld::Symlink(owner) => {
                write!(
                    f,
                    "is a symbolic link (of user {owner}), which is never followed"
                )
            }
            SharedDirHeld::NotADirectory => f.write_str("is not a directory"),
            SharedDirHeld::Owner(owner) => {
                write!(
                    f,
                    "belongs to user {owner}, who could pose as the hub there"
                )
            }
        }
    }
}

/// Judges what `symlink_metadata` found at the shared directory's path for the user `uid`:
/// `None` when it is the user's own directory.
#[cfg(unix)]
pub fn shared_dir_held(meta: &std::fs::Metadata, uid: u32) -> Option<SharedDirHeld> {
    use std::os::unix::fs::MetadataExt;
    if meta.file_type().is_symlink() {
        Some(SharedDirHeld::Symlink(meta.uid()))
    } else if !meta.is_dir() {
        Some(SharedDirHeld::NotADirectory)
    } else if meta.uid() != uid {
        Some(SharedDirHeld::Owner(meta.uid()))
    } else {
        None
    }
}

/// The effective user ID of this process: the user whose socket directory it is, and the only
/// user either end of the socket talks to. The one place tabwire asks the system for it.
#[cfg(unix)]
pub fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// What makes a directory unfit to be private to the user: the socket's (whoever can put a
/// socket in it can pose as the hub), the hub's state and auth directories (whoever can read
/// them holds the keys). Hub and shim apply the same rule: the directory must belong to the
/// user and be closed to everyone else (mode 0700).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrivateDirProblem {
    /// It is not a directory.
    NotADirectory,
    /// It belongs to another user: this user ID.
    Owner(u32),
    /// Other users (its group, or everyone) have permissions on it.
    OpenToOthers {
        /// Its permission bits (`mode & 0o777`).
        mode: u32,
    },
}

/// Checks a directory's metadata (followed through symlinks) against [`PrivateDirProblem`]'s
/// rule for the user `uid`.
#[cfg(unix)]
pub fn private_dir_problem(meta: &std::fs::Metadata, uid: u32) -> Option<PrivateDirProblem> {
    use std::os::unix::fs::MetadataExt;
    if !meta.is_dir() {
        Some(PrivateDirProblem::NotADirectory)
    } else if meta.uid() != uid {
        Some(PrivateDirProblem::Owner(meta.uid()))
    } else if meta.mode() & 0o077 != 0 {
        Some(PrivateDirProblem::OpenToOthers {
            mode: meta.mode() & 0o777,
        })
    } else {
        None
    }
}

/// What makes a file unfit to hold a secret (a token, a pairing code) given by its path rather
/// than on a command line, which every user of the machine can read in `ps`: it must be a
/// regular file of the user's that no one else may open (mode 0600 or 0400).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretFileProblem {
    /// It is not a regular file.
    NotAFile,
    /// It belongs to another user: this user ID.
    Owner(u32),
    /// Other users (its group, or everyone) have permissions on it.
    OpenToOthers {
        /// Its permission bits (`mode & 0o777`).
        mode: u32,
    },
}

impl std::fmt::Display for SecretFileProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretFileProblem::NotAFile => f.write_str("it is not a regular file"),
            SecretFileProblem::Owner(owner) => write!(
                f,
                "it belongs to user {owner}, who can read the secret in it; use a file of your own"
            ),
            SecretFileProblem::OpenToOthers { mode } => write!(
                f,
                "other users may open it (mode {mode:o}): run `chmod 600` on it"
            ),
        }
    }
}

/// Checks an opened file's metadata against [`SecretFileProblem`]'s rule for the user `uid`.
#[cfg(unix)]
pub fn secret_file_problem(meta: &std::fs::Metadata, uid: u32) -> Option<SecretFileProblem> {
    use std::os::unix::fs::MetadataExt;
    if !meta.is_file() {
        Some(SecretFileProblem::NotAFile)
    } else if meta.uid() != uid {
        Some(SecretFileProblem::Owner(meta.uid()))
    } else if meta.mode() & 0o077 != 0 {
        Some(SecretFileProblem::OpenToOthers {
            mode: meta.mode() & 0o777,
        })
    } else {
        None
    }
}

/// [`default_socket_path`] for this process: its platform, environment and user ID, and what
/// is at `/tmp/tabwire-<uid>` now.
#[cfg(unix)]
pub fn default_socket_here() -> DefaultSocket {
    let uid = current_uid();
    default_socket_path(
        Platform::HERE,
        |variable| std::env::var(variable).ok(),
        uid,
        |shared| {
            let meta = std::fs::symlink_metadata(shared).ok()?;
            shared_dir_held(&meta, uid)
        },
    )
}

/// [`default_socket_here`]'s path alone, for callers that only name the place (`doctor`, the
/// ready block).
#[cfg(unix)]
pub fn default_socket_path_here() -> PathBuf {
    default_socket_here().path
}

/// Where a local hub keeps its state (paired browsers, the audit log, and the log of a hub that
/// `tabwire` started) when not told: `$XDG_STATE_HOME/tabwire`, else
/// `$HOME/.local/state/tabwire` (on macOS `$HOME/Library/Application Support/tabwire`). `None`
/// without a home directory. Here rather than in the hub because the `tabwire` CLI, which has
/// no hub inside it, must find the same directory.
pub fn default_state_dir(xdg_state_home: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    let nonempty = |dir: Option<&str>| dir.filter(|dir| !dir.is_empty()).map(PathBuf::from);
    if cfg!(target_os = "macos") {
        return nonempty(home).map(|home| home.join("Library/Application Support/tabwire"));
    }
    nonempty(xdg_state_home)
        .or_else(|| nonempty(home).map(|home| home.join(".local/state")))
        .map(|dir| dir.join("tabwire"))
}

/// [`default_state_dir`] for this process's environment.
pub fn default_state_dir_here() -> Option<PathBuf> {
    default_state_dir(
        std::env::var("XDG_STATE_HOME").ok().as_deref(),
        std::env::var("HOME").ok().as_deref(),
    )
}

/// The authority and path of an `http(s)://` URL without its scheme (`host[:port][/path]`):
/// the host, the port if written, and the rest from the first `/`. Refuses what would make the
/// host judged here differ from the host a WHATWG parser (browsers, reqwest, Node) dials — a
/// user name, a backslash (it ends the host there) — and queries, fragments, spaces and
/// control characters. The hub's `--public-origin` and the `tabwire` CLI's `--url` share it.
pub fn split_authority(rest: &str) -> Result<(&str, Option<u16>, &str), &'static str> {
    if rest.contains(['?', '#', '@', '\\'])
        || rest.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err("must not carry a query, fragment, user name, backslash or spaces");
    }
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !authority.ends_with(']') => {
            let port: u16 = port.parse().map_err(|_| "the port is not a number")?;
            (host, Some(port))
        }
        _ => (authority, None),
    };
    if host.is_empty() {
        return Err("has no host");
    }
    Ok((host, port, path))
}

/// Whether a URL's host names this machine's loopback (`localhost`, `127.0.0.0/8`, `::1`, with
/// or without IPv6 brackets), so that what is sent to it in clear never crosses a network. The
/// one rule for "a token over plain `http://`": the hub's `--public-origin` and `config --url`,
/// and the `tabwire` CLI's `--url`. Names under `.localhost` do not count: without a resolver
/// that keeps them local (containers, musl), they are asked of DNS, which a network attacker
/// can answer.
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The host to dial for `host`: `localhost` in a plain URL (`ws://`, `http://`; `secure`
/// false) becomes `127.0.0.1`, where a local hub or proxy listens. The name also resolves to
/// `[::1]`, which clients try first: a program of any user listening there while the hub holds
/// `127.0.0.1` could sit between the two, relay the pairing exchange and then read and inject
/// everything after it (docs/pairing.md). A TLS URL keeps its name, which its certificate must
/// match. The one rule for the extension, device backends and the `tabwire` CLI.
pub fn dialled_host(host: &str, secure: bool) -> &str {
    if !secure && host.eq_ignore_ascii_case("localhost") {
        "127.0.0.1"
    } else {
        host
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_line_shape() {
        let mut selected = Selections::default();
        assert!(selected.set("browser", "b1"));
        assert!(!selected.set("browser", "b1"));
        let attach = LocalControl::attach("s1".into(), selected.clone());
        let line = attach.to_line();
        assert_eq!(
            line,
            "{\"tabwire\":\"attach\",\"session\":\"s1\",\"selected\":{\"browser\":\"b1\"}}\n"
        );
        assert_eq!(LocalControl::parse(line.trim_end()), Some(attach.clone()));
        assert_eq!(
            attach.attached(),
            Some(Attached {
                session: "s1".into(),
                selected: selected.clone(),
                dialect: ShimDialect::Selections,
            })
        );
        let state = LocalControl::state(&selected, ShimDialect::Selections).unwrap();
        assert_eq!(
            state.to_line(),
            "{\"tabwire\":\"state\",\"selected\":{\"browser\":\"b1\"}}\n"
        );
        assert_eq!(state.reported(), Some(selected));
    }

    #[test]
    fn older_shims_are_understood_and_answered_in_their_dialect() {
        // Lines exactly as shims before protocol 5 send them.
        for (line, browser) in [
            (
                r#"{"tabwire":"attach","session":"s2","selectedBrowser":null}"#,
                None,
            ),
            (
                r#"{"tabwire":"attach","session":"s2","selectedBrowser":"b7"}"#,
                Some("b7"),
            ),
            (r#"{"tabwire":"attach","session":"s2"}"#, None),
        ] {
            let attached = LocalControl::parse(line)
                .and_then(LocalControl::attached)
                .unwrap();
            assert_eq!(attached.session, "s2");
            assert_eq!(attached.dialect, ShimDialect::BrowserOnly, "{line}");
            assert_eq!(attached.selected.get("browser"), browser, "{line}");
        }
        let mut selected = Selections::default();
        selected.set("device", "d1");
        assert_eq!(
            LocalControl::state(&selected, ShimDialect::BrowserOnly),
            None
        );
        selected.set("browser", "b8");
        let state = LocalControl::state(&selected, ShimDialect::BrowserOnly).unwrap();
        // What an older shim parses: no field it does not know.
        assert_eq!(
            state.to_line(),
            "{\"tabwire\":\"state\",\"selectedBrowser\":\"b8\"}\n"
        );
    }

    #[test]
    fn json_rpc_lines_are_not_control_lines() {
        assert_eq!(
            LocalControl::parse(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            None
        );
        // A tool argument that happens to mention "tabwire" is still JSON-RPC.
        assert_eq!(
            LocalControl::parse(
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{"text":"\"tabwire\""}}}"#
            ),
            None
        );
    }

    #[test]
    fn authorities_split_as_a_url_parser_would_dial_them() {
        assert_eq!(
            split_authority("Hub.example:8443/team"),
            Ok(("Hub.example", Some(8443), "/team"))
        );
        assert_eq!(split_authority("[::1]"), Ok(("[::1]", None, "")));
        for bad in ["evil\\.localhost", "u@h", "h/?q", "h:port", ":80", "h x"] {
            assert!(split_authority(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn secret_files_must_be_the_users_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("tabwire-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "t0k\n").unwrap();
        let uid = current_uid();
        let check = |mode: u32| {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            secret_file_problem(&std::fs::metadata(&file).unwrap(), uid)
        };
        assert_eq!(check(0o600), None);
        assert_eq!(check(0o400), None);
        assert_eq!(
            check(0o640),
            Some(SecretFileProblem::OpenToOthers { mode: 0o640 })
        );
        assert_eq!(
            check(0o604),
            Some(SecretFileProblem::OpenToOthers { mode: 0o604 })
        );
        let meta = std::fs::metadata(&file).unwrap();
        assert_eq!(
            secret_file_problem(&meta, uid.wrapping_add(1)),
            Some(SecretFileProblem::Owner(uid))
        );
        assert_eq!(
            secret_file_problem(&std::fs::metadata(&dir).unwrap(), uid),
            Some(SecretFileProblem::NotAFile)
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn localhost_is_dialled_by_address_in_clear_only() {
        assert_eq!(dialled_host("LocalHost", false), "127.0.0.1");
        assert_eq!(dialled_host("localhost", true), "localhost");
        assert_eq!(dialled_host("hub.localhost", false), "hub.localhost");
        assert_eq!(dialled_host("127.0.0.1", false), "127.0.0.1");
    }

    #[test]
    fn loopback_hosts() {
        for host in [
            "localhost",
            "LOCALHOST",
            "127.0.0.1",
            "127.8.9.1",
            "[::1]",
            "::1",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "example.com",
            "localhost.example.com",
            "hub.localhost",
            "10.0.0.1",
            "[::2]",
            "",
            "0.0.0.0",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn the_state_dir_follows_the_platform_conventions() {
        if cfg!(target_os = "macos") {
            assert_eq!(
                default_state_dir(None, Some("/Users/a")).unwrap(),
                PathBuf::from("/Users/a/Library/Application Support/tabwire")
            );
        } else {
            assert_eq!(
                default_state_dir(Some("/s"), Some("/home/a")).unwrap(),
                PathBuf::from("/s/tabwire")
            );
            assert_eq!(
                default_state_dir(Some(""), Some("/home/a")).unwrap(),
                PathBuf::from("/home/a/.local/state/tabwire")
            );
        }
        assert_eq!(default_state_dir(None, None), None);
    }

    #[test]
    fn default_socket_is_in_the_users_private_dir() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        };
        let free = |_: &Path| None;
        let path = |platform, pairs, uid| default_socket_path(platform, env(pairs), uid, free).path;
        let both = &[
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("TMPDIR", "/var/folders/ab/xyz/T/"),
        ];
        // Linux: the runtime directory; a TMPDIR (often the shared /tmp) is never used.
        assert_eq!(
            path(Platform::OtherUnix, both, 1000),
            PathBuf::from("/run/user/1000/tabwire/hub.sock")
        );
        assert_eq!(
            path(Platform::OtherUnix, &[("TMPDIR", "/tmp")], 42),
            PathBuf::from("/tmp/tabwire-42/hub.sock")
        );
        assert_eq!(
            path(Platform::OtherUnix, &[("XDG_RUNTIME_DIR", "")], 0),
            PathBuf::from("/tmp/tabwire-0/hub.sock")
        );
        // macOS: the per-user TMPDIR, whatever XDG_RUNTIME_DIR says.
        assert_eq!(
            path(Platform::MacOs, both, 501),
            PathBuf::from("/var/folders/ab/xyz/T/tabwire/hub.sock")
        );
        assert_eq!(
            path(Platform::MacOs, &[("XDG_RUNTIME_DIR", "/run/x")], 501),
            PathBuf::from("/tmp/tabwire-501/hub.sock")
        );
    }

    #[test]
    fn a_held_shared_dir_sends_the_socket_home_and_says_why() {
        let env = |name: &str| (name == "HOME").then(|| "/home/ann".to_owned());
        for held in [
            SharedDirHeld::Owner(1001),
            SharedDirHeld::Symlink(1001),
            SharedDirHeld::Symlink(1000),
            SharedDirHeld::NotADirectory,
        ] {
            let chosen = default_socket_path(Platform::OtherUnix, env, 1000, |shared| {
                assert_eq!(shared, Path::new("/tmp/tabwire-1000"));
                Some(held)
            });
            assert_eq!(
                chosen.path,
                fallback_socket_dir("/home/ann").join("hub.sock")
            );
            let said = chosen.fell_back.unwrap();
            assert!(
                said.starts_with("/tmp/tabwire-1000 ") && said.contains(&held.to_string()),
                "{said}"
            );
        }
        // A private runtime directory is never judged; without a home there is nowhere to go,
        // and the shared path stays (the owner and mode checks then refuse it).
        let runtime = |name: &str| match name {
            "XDG_RUNTIME_DIR" => Some("/run/user/1000".to_owned()),
            "HOME" => Some("/home/ann".to_owned()),
            _ => None,
        };
        let chosen = default_socket_path(Platform::OtherUnix, runtime, 1000, |_| {
            panic!("the shared directory is not looked at")
        });
        assert_eq!(chosen.fell_back, None);
        let homeless = default_socket_path(
            Platform::OtherUnix,
            |_: &str| None,
            1000,
            |_| Some(SharedDirHeld::Owner(1001)),
        );
        assert_eq!(homeless.path, PathBuf::from("/tmp/tabwire-1000/hub.sock"));
        assert_eq!(homeless.fell_back, None);
        assert_eq!(homeless.also, None);
    }

    /// A hub that went home while `/tmp/tabwire-<uid>` was another user's is still there when
    /// that directory is gone: a socket in `/tmp` always names the home one too, and the home
    /// one (chosen while `/tmp` is held) names nothing else, since `/tmp` holds no hub of ours.
    #[test]
    fn a_socket_in_tmp_names_the_home_fallback_beside_it() {
        let env = |name: &str| (name == "HOME").then(|| "/home/ann".to_owned());
        let free = default_socket_path(Platform::OtherUnix, env, 1000, |_| None);
        assert_eq!(free.path, PathBuf::from("/tmp/tabwire-1000/hub.sock"));
        assert_eq!(
            free.also,
            Some(fallback_socket_dir("/home/ann").join("hub.sock"))
        );
        let held = default_socket_path(Platform::OtherUnix, env, 1000, |_| {
            Some(SharedDirHeld::Owner(1001))
        });
        assert_eq!(held.also, None);
        let runtime = |name: &str| match name {
            "XDG_RUNTIME_DIR" => Some("/run/user/1000".to_owned()),
            "HOME" => Some("/home/ann".to_owned()),
            _ => None,
        };
        assert_eq!(
            default_socket_path(Platform::OtherUnix, runtime, 1000, |_| None).also,
            None
        );
    }

    #[test]
    fn what_holds_the_shared_dir_is_judged_without_following_links() {
        let root = std::env::temp_dir().join(format!("tabwire-shared-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("mine")).unwrap();
        std::fs::write(root.join("file"), "").unwrap();
        // A link to a directory of the user's own is still a link.
        std::os::unix::fs::symlink(root.join("mine"), root.join("link")).unwrap();
        let uid = current_uid();
        let judge =
            |name: &str| shared_dir_held(&std::fs::symlink_metadata(root.join(name)).unwrap(), uid);
        assert_eq!(judge("mine"), None);
        assert_eq!(judge("link"), Some(SharedDirHeld::Symlink(uid)));
        assert_eq!(judge("file"), Some(SharedDirHeld::NotADirectory));
        let meta = std::fs::symlink_metadata(root.join("mine")).unwrap();
        assert_eq!(
            shared_dir_held(&meta, uid.wrapping_add(1)),
            Some(SharedDirHeld::Owner(uid))
        );
        std::fs::remove_dir_all(root).unwrap();
    }
}
