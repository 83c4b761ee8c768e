//! Hosted mode's bearer tokens: what they claim, how they are checked, and the files in the auth
//! directory (docs/hosted.md).
//!
//! A token is a JWT naming an account (`sub`) and a role (`agent`, `browser` or `device`). The hub checks
//! it with the configured key and the configured algorithm only — the token's header never picks
//! either — then against the revocation list, which it re-reads when the file changes. Every
//! reason a token is refused is logged here and hidden from the client, who learns only that it
//! was refused.
//!
//! The auth directory must be private to the hub's user (owned by it, mode 0700) and the HS256
//! key private too (0600), or the hub does not start: whoever can write there can replace the
//! key or the revocation list, and whoever can read the key can sign any account's tokens.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use tabwire_protocol::Kind;
use tabwire_protocol::local::PrivateDirProblem;
use tabwire_protocol::pairing::{decode_hex, encode_hex};

use crate::private_dir::{self, Unfit};

/// The audience every tabwire token carries.
pub const AUDIENCE: &str = "tabwire";
/// The HS256 key, in the auth directory.
pub const SECRET_FILE: &str = "hs256.secret";
/// One line per issued token (never the token itself).
pub const ISSUED_FILE: &str = "issued.jsonl";
/// One line per revoked token.
pub const REVOKED_FILE: &str = "revoked.jsonl";

/// The longest token accepted; anything longer is refused before it is parsed.
const MAX_TOKEN_LEN: usize = 8192;
/// Clock skew tolerated on `exp`.
const LEEWAY_SECS: u64 = 30;
/// How often, at most, the revocation file is looked at.
const REVOCATION_RECHECK: Duration = Duration::from_secs(1);

/// What a token allows: `agent` on `/mcp`, or a peer kind's noun (`browser`, `device`) on
/// that kind's endpoint (a device token serves every device its machine has attached).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// An MCP client on `/mcp`.
    Agent,
    /// A peer of the kind on its endpoint.
    Peer(Kind),
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Agent => "agent",
            Role::Peer(kind) => kind.spec().noun,
        })
    }
}

impl std::str::FromStr for Role {
    type Err = InvalidRole;
    fn from_str(s: &str) -> Result<Self, InvalidRole> {
        match s {
            "agent" => Ok(Role::Agent),
            other => Kind::from_noun(other)
                .map(Role::Peer)
                .ok_or_else(|| InvalidRole(other.to_owned())),
        }
    }
}

impl Serialize for Role {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A role other than `agent` or a peer kind's noun.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("role must be agent, {roles}, not {role:?}", roles = peer_roles(), role = .0)]
pub struct InvalidRole(pub String);

/// The peer kinds' roles, for the message of [`InvalidRole`] (`browser or device`).
fn peer_roles() -> String {
    let nouns: Vec<&str> = tabwire_protocol::KINDS
        .iter()
        .map(|spec| spec.noun)
        .collect();
    match nouns.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// An account name outside the rules of [`check_account`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("account {0:?} must be 1-64 characters from A-Z a-z 0-9 . _ @ -")]
pub struct InvalidAccount(pub String);

/// A lifetime [`parse_ttl`] does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ttl {0:?} must be a positive number followed by s, m, h or d, at most 3650d")]
pub struct InvalidTtl(pub String);

/// Why the keys or the files of an auth directory cannot be used. The message names what
/// failed; the system's or the parser's own error is its [`source`](std::error::Error::source)
/// (the binary prints both).
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The auth directory is missing or cannot be looked at.
    #[error(
        "cannot use the auth directory {}: `tabwire-hub token issue --auth-dir {} …` creates it \
         with the HS256 key (with --jwks: `install -d -m 0700 {}`)",
        path.display(),
        path.display(),
        path.display()
    )]
    NoDirectory {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The auth directory can be entered, read or written by other users.
    #[error(
        "the auth directory {} is open to other users (mode {mode:04o}), who could read or \
         replace the key and the revocation list: run `chmod 700 {}`",
        path.display(),
        path.display()
    )]
    OpenDirectory {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The auth directory belongs to another user than the hub's.
    #[error(
        "the auth directory {} belongs to user ID {owner}, who could replace the key and the \
         revocation list, not to this hub's user ({uid}): run the hub as its owner, or \
         `chown -R {uid} {}`",
        path.display(),
        path.display()
    )]
    ForeignDirectory {
        /// The directory.
        path: PathBuf,
        /// Its owner's user ID.
        owner: u32,
        /// The hub's effective user ID.
        uid: u32,
    },
    /// The HS256 key has permission bits for other users.
    #[error(
        "the HS256 key {} is open to other users (mode {mode:04o}): run `chmod 600 {}`, and \
         make a new key if anyone else may have read it (HOSTING.md, \"Tokens over time\")",
        path.display(),
        path.display()
    )]
    OpenSecret {
        /// The key's file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Other users may write the JWKS file, and so add a key of their own.
    #[error(
        "the JWKS file {} is writable by other users (mode {mode:04o}), who could add a key of \
         their own: run `chmod go-w {}`",
        path.display(),
        path.display()
    )]
    WritableJwks {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The HS256 key is missing or unreadable.
    #[error(
        "cannot read the HS256 key {} (create it with `tabwire-hub token issue --auth-dir {} …`, \
         or give --jwks)",
        path.display(),
        dir.display()
    )]
    NoSecret {
        /// The key's file.
        path: PathBuf,
        /// The auth directory.
        dir: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The HS256 key is shorter than 32 bytes.
    #[error("{} is too short: an HS256 key needs at least 32 bytes", .0.display())]
    ShortSecret(PathBuf),
    /// A JWKS with an algorithm that is not a public-key one.
    #[error("--jwks takes --jwt-alg RS256 or EdDSA, not {0:?}")]
    JwksAlgorithm(Algorithm),
    /// The JWKS file is not a JWKS document.
    #[error("{} is not a JWKS document", path.display())]
    NotJwks {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// The JWKS holds no keys.
    #[error("{} holds no keys", .0.display())]
    NoKeys(PathBuf),
    /// A key of the JWKS is not usable.
    #[error("key {kid:?} in {} is not usable", path.display())]
    BadKey {
        /// The key's `kid`.
        kid: Option<String>,
        /// The file.
        path: PathBuf,
        /// What jsonwebtoken said.
        source: jsonwebtoken::errors::Error,
    },
    /// A token for an account name the rules refuse.
    #[error(transparent)]
    Account(#[from] InvalidAccount),
    /// A file or directory of the auth directory.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done (`read`, `write`, `create`, `lock`, …).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// Signing a token failed.
    #[error("cannot sign the token")]
    Sign(#[source] jsonwebtoken::errors::Error),
}

/// Maps an I/O error on `path` to [`AuthError::Io`].
fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> AuthError {
    let path = path.to_path_buf();
    move |source| AuthError::Io {
        action,
        path,
        source,
    }
}

/// Why a token was refused. For the log only: the client learns nothing but "unauthorized". The
/// message carries the whole reason (the log prints messages only).
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// Empty, or longer than any token the hub takes.
    #[error("token length {0}")]
    Length(usize),
    /// Not a JWT.
    #[error("header: {0}")]
    Header(jsonwebtoken::errors::Error),
    /// Signed with another algorithm than the configured one.
    #[error("algorithm {0:?} is not the configured one")]
    Algorithm(Algorithm),
    /// A `kid` the JWKS does not hold.
    #[error("unknown kid {0:?}")]
    UnknownKid(String),
    /// No `kid`, and the JWKS holds several keys.
    #[error("no kid and several keys")]
    NoKid,
    /// Signature, expiry, audience, issuer or claims.
    #[error("{0}")]
    Invalid(jsonwebtoken::errors::Error),
    /// A `sub` that is no account name.
    #[error(transparent)]
    Account(#[from] InvalidAccount),
    /// A missing or oversized `jti`.
    #[error("bad jti")]
    BadJti,
    /// On the revocation list.
    #[error("token {0} is revoked")]
    Revoked(String),
}

/// A token's claims.
#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    /// The account.
    pub sub: String,
    /// The role.
    pub role: Role,
    /// Expiry, seconds since the epoch.
    pub exp: u64,
    /// Issue time, seconds since the epoch.
    #[serde(default)]
    pub iat: u64,
    /// The token's own ID, which revocation names.
    pub jti: String,
    /// Always [`AUDIENCE`].
    pub aud: String,
}

/// Who a verified token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The account (`sub`).
    pub account: String,
    /// The role.
    pub role: Role,
    /// The token ID.
    pub jti: String,
    /// When the token expires, seconds since the epoch.
    pub expires_at: u64,
}

/// Which keys verify tokens.
#[derive(Debug, Clone)]
pub enum KeySource {
    /// The HS256 secret in the auth directory.
    Secret,
    /// Public keys from a JWKS file, with the algorithm pinned (RS256 or EdDSA) and the issuer
    /// too: an identity service often signs tokens for many applications with one key set, and
    /// only `iss` (with `aud`) tells its tabwire tokens from the others.
    Jwks {
        /// The JWKS file.
        path: PathBuf,
        /// RS256 or EdDSA.
        algorithm: Algorithm,
        /// The `iss` every token must carry.
        issuer: String,
    },
}

enum Keys {
    Secret(DecodingKey),
    /// Each key with its `kid`, built once at load.
    Jwks(Vec<(Option<String>, DecodingKey)>),
}

/// Checks bearer tokens.
pub struct Authenticator {
    keys: Keys,
    validation: Validation,
    revoked: Revocations,
}

impl Authenticator {
    /// Loads the keys and the revocation list from `auth_dir`, which must be private to this
    /// user (see [`check_private_dir`]).
    pub fn load(auth_dir: &Path, source: &KeySource) -> Result<Authenticator, AuthError> {
        crate::jwt_crypto::install();
        check_private_dir(auth_dir)?;
        let (keys, algorithm) = match source {
            KeySource::Secret => {
                let path = auth_dir.join(SECRET_FILE);
                let secret = read_secret(&path).map_err(|error| match error {
                    AuthError::Io { path, source, .. } => AuthError::NoSecret {
                        path,
                        dir: auth_dir.to_path_buf(),
                        source,
                    },
                    other => other,
                })?;
                (
                    Keys::Secret(DecodingKey::from_secret(&secret)),
                    Algorithm::HS256,
                )
            }
            KeySource::Jwks {
                path, algorithm, ..
            } => {
                if !matches!(algorithm, Algorithm::RS256 | Algorithm::EdDSA) {
                    return Err(AuthError::JwksAlgorithm(*algorithm));
                }
                let text = std::fs::read_to_string(path).map_err(io("read the JWKS file", path))?;
                // Public keys may be read by anyone; only writing them must be ours alone.
                let mode = permissions(path)?;
                if mode & 0o022 != 0 {
                    return Err(AuthError::WritableJwks {
                        path: path.clone(),
                        mode,
                    });
                }
                let set: JwkSet =
                    serde_json::from_str(&text).map_err(|source| AuthError::NotJwks {
                        path: path.clone(),
                        source,
                    })?;
                if set.keys.is_empty() {
                    return Err(AuthError::NoKeys(path.clone()));
                }
                let mut keys = Vec::new();
                for jwk in &set.keys {
                    let key = DecodingKey::from_jwk(jwk).map_err(|source| AuthError::BadKey {
                        kid: jwk.common.key_id.clone(),
                        path: path.clone(),
                        source,
                    })?;
                    keys.push((jwk.common.key_id.clone(), key));
                }
                (Keys::Jwks(keys), *algorithm)
            }
        };
        let mut validation = Validation::new(algorithm);
        validation.leeway = LEEWAY_SECS;
        // `nbf` is checked when a token carries one (the hub's own tokens do not).
        validation.validate_nbf = true;
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "sub", "aud"]);
        if let KeySource::Jwks { issuer, .. } = source {
            validation.set_issuer(&[issuer]);
            validation.set_required_spec_claims(&["exp", "sub", "aud", "iss"]);
        }
        let revoked = Revocations::new(auth_dir.join(REVOKED_FILE));
        revoked.refresh_now();
        Ok(Authenticator {
            keys,
            validation,
            revoked,
        })
    }

    /// Verifies a token. The error is for the log only; the client is told nothing but
    /// "unauthorized".
    pub fn verify(&self, token: &str) -> Result<Principal, Refused> {
        if token.is_empty() || token.len() > MAX_TOKEN_LEN {
            return Err(Refused::Length(token.len()));
        }
        let header = jsonwebtoken::decode_header(token).map_err(Refused::Header)?;
        if !self.validation.algorithms.contains(&header.alg) {
            return Err(Refused::Algorithm(header.alg));
        }
        let key = match &self.keys {
            Keys::Secret(key) => key,
            Keys::Jwks(keys) => match (&header.kid, keys.as_slice()) {
                (Some(kid), _) => keys
                    .iter()
                    .find(|(id, _)| id.as_deref() == Some(kid.as_str()))
                    .map(|(_, key)| key)
                    .ok_or_else(|| Refused::UnknownKid(kid.chars().take(64).collect()))?,
                (None, [(_, only)]) => only,
                (None, _) => return Err(Refused::NoKid),
            },
        };
        let claims = jsonwebtoken::decode::<Claims>(token, key, &self.validation)
            .map_err(Refused::Invalid)?
            .claims;
        check_account(&claims.sub)?;
        if claims.jti.is_empty() || claims.jti.len() > 128 {
            return Err(Refused::BadJti);
        }
        let principal = Principal {
            account: claims.sub,
            role: claims.role,
            jti: claims.jti,
            expires_at: claims.exp,
        };
        if self.revoked.contains(&principal.jti) {
            return Err(Refused::Revoked(principal.jti));
        }
        Ok(principal)
    }

    /// Whether a token accepted earlier is still good: not expired, not revoked since. Long-lived
    /// browser connections are checked with this at every heartbeat.
    pub fn still_valid(&self, principal: &Principal) -> Result<(), &'static str> {
        if now_secs() > principal.expires_at.saturating_add(LEEWAY_SECS) {
            return Err("its token expired");
        }
        if self.revoked.contains(&principal.jti) {
            return Err("its token was revoked");
        }
        Ok(())
    }

    /// Counts `jti` as revoked: another replica of a cluster announced it (docs/cluster.md).
    pub fn revoked_elsewhere(&self, jti: &str) {
        self.revoked
            .elsewhere
            .lock()
            .unwrap()
            .insert(jti.to_owned());
    }

    /// Calls `announce` with each token newly found in the revocation list, so a cluster's
    /// other replicas learn it; re-reads the list if due.
    pub fn announce_revocations(&self, announce: impl Fn(&str) + Send + Sync + 'static) {
        *self.revoked.announce.lock().unwrap() = Some(Box::new(announce));
    }

    /// Re-reads the revocation list if it is due (a cluster replica does it every second, so
    /// new revocations are announced without waiting for a token check).
    pub fn recheck_revocations(&self) {
        self.revoked.contains("");
    }
}

/// An account name: 1–64 characters from `A-Z a-z 0-9 . _ @ -`.
pub fn check_account(account: &str) -> Result<(), InvalidAccount> {
    let ok = !account.is_empty()
        && account.len() <= 64
        && account
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(InvalidAccount(account.to_owned()))
    }
}

/// The revocation list, re-read when its file changes.
struct Revocations {
    path: PathBuf,
    state: Mutex<RevocationState>,
    /// Tokens other replicas of a cluster announced as revoked.
    elsewhere: Mutex<HashSet<String>>,
    /// Tells a cluster's other replicas of a token newly found in the file.
    #[allow(clippy::type_complexity)]
    announce: Mutex<Option<Box<dyn Fn(&str) + Send + Sync>>>,
}

#[derive(Default)]
struct RevocationState {
    jtis: HashSet<String>,
    /// The file exists but could not be read: every token counts as revoked until it can be.
    unreadable: bool,
    /// The file's modification time and length when last read.
    seen: Option<(SystemTime, u64)>,
    checked: Option<Instant>,
}

impl Revocations {
    fn new(path: PathBuf) -> Self {
        Revocations {
            path,
            state: Mutex::new(RevocationState::default()),
            elsewhere: Mutex::default(),
            announce: Mutex::default(),
        }
    }

    fn contains(&self, jti: &str) -> bool {
        let due = {
            let state = self.state.lock().unwrap();
            state
                .checked
                .is_none_or(|at| at.elapsed() >= REVOCATION_RECHECK)
        };
        if due {
            self.refresh_now();
        }
        let state = self.state.lock().unwrap();
        state.unreadable || state.jtis.contains(jti) || self.elsewhere.lock().unwrap().contains(jti)
    }

    fn refresh_now(&self) {
        let stamp = std::fs::metadata(&self.path)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())));
        let mut state = self.state.lock().unwrap();
        state.checked = Some(Instant::now());
        if stamp == state.seen && !state.unreadable {
            return;
        }
        match std::fs::read_to_string(&self.path) {
            Ok(text) => {
                state.unreadable = false;
                let before = std::mem::replace(&mut state.jtis, parse_revocations(&text));
                if let Some(announce) = &*self.announce.lock().unwrap() {
                    for jti in state.jtis.difference(&before) {
                        announce(jti);
                    }
                }
                tracing::info!(revoked = state.jtis.len(), file = %self.path.display(), "revocation list loaded");
            }
            // A missing file means nothing is revoked; any other failure keeps the last list.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                state.unreadable = false;
                state.jtis.clear();
            }
            Err(error) => {
                // Failing open would let revoked tokens back in; refuse every token instead.
                tracing::error!(%error, file = %self.path.display(), "cannot read the revocation list: refusing every token until it can be read");
                state.unreadable = true;
                return;
            }
        }
        state.seen = stamp;
    }
}

/// One revocation per line: a JSON object with `jti`, or a bare jti written by hand.
fn parse_revocations(text: &str) -> HashSet<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| {
            if line.starts_with('{') {
                match serde_json::from_str::<Revoked>(line) {
                    Ok(entry) => Some(entry.jti),
                    Err(error) => {
                        tracing::error!(%error, line, "unreadable line in the revocation list");
                        None
                    }
                }
            } else {
                Some(line.to_owned())
            }
        })
        .collect()
}

/// A line of `revoked.jsonl`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revoked {
    /// The revoked token.
    pub jti: String,
    /// When, seconds since the epoch.
    #[serde(default)]
    pub revoked_at: u64,
}

/// A line of `issued.jsonl`: what was issued, never the token.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Issued {
    /// The token ID.
    pub jti: String,
    /// The account.
    pub account: String,
    /// The role.
    pub role: Role,
    /// Seconds since the epoch.
    pub issued_at: u64,
    /// Seconds since the epoch.
    pub expires_at: u64,
    /// The operator's note.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// Seconds since the epoch.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Reads the HS256 key: 64 hex digits as written by `token issue`, or any other text of at
/// least 32 bytes used as it is. A key with any permission bit for group or others is refused:
/// reading it is signing any account's tokens, and no one but the hub's user has a reason to
/// touch it.
fn read_secret(path: &Path) -> Result<Vec<u8>, AuthError> {
    let text = std::fs::read_to_string(path).map_err(io("read", path))?;
    let mode = permissions(path)?;
    if mode & 0o077 != 0 {
        return Err(AuthError::OpenSecret {
            path: path.to_path_buf(),
            mode,
        });
    }
    let text = text.trim();
    let secret = decode_hex(text).unwrap_or_else(|| text.as_bytes().to_vec());
    if secret.len() < 32 {
        return Err(AuthError::ShortSecret(path.to_path_buf()));
    }
    Ok(secret)
}

/// A file's permission bits (`0o7777`).
fn permissions(path: &Path) -> Result<u32, AuthError> {
    use std::os::unix::fs::PermissionsExt;
    let metadata = std::fs::metadata(path).map_err(io("read", path))?;
    Ok(metadata.permissions().mode() & 0o7777)
}

/// Refuses an auth directory that is not this user's alone: owned by the hub's user, with no
/// permission bit for group or others (`chmod 700`). Write permission would let others replace
/// the key or the revocation list whatever the files' own modes; read and search permission
/// would let them read any file there whose own mode is lax (a `revoked.jsonl` made by hand
/// under umask 022, a key copied in). `token issue`, the systemd unit and the container image
/// all make it so.
pub fn check_private_dir(dir: &Path) -> Result<(), AuthError> {
    private_dir::check(dir).map_err(|unfit| unfit_dir(dir, unfit))
}

/// The auth directory's error for a directory that breaks [`private_dir`]'s rule.
fn unfit_dir(dir: &Path, unfit: Unfit) -> AuthError {
    let path = dir.to_path_buf();
    match unfit {
        Unfit::Io(source) => AuthError::NoDirectory { path, source },
        Unfit::Problem(PrivateDirProblem::NotADirectory) => AuthError::NoDirectory {
            path,
            source: std::io::ErrorKind::NotADirectory.into(),
        },
        Unfit::Problem(PrivateDirProblem::Owner(owner)) => AuthError::ForeignDirectory {
            path,
            owner,
            uid: tabwire_protocol::local::current_uid(),
        },
        Unfit::Problem(PrivateDirProblem::OpenToOthers { mode }) => {
            AuthError::OpenDirectory { path, mode }
        }
    }
}

/// Creates the auth directory if needed, private from its first moment (mode 0700; its parents
/// as the umask says). An existing one is left as it is (see [`revoke`]).
fn ensure_dir(dir: &Path) -> Result<(), AuthError> {
    if dir.exists() {
        return Ok(());
    }
    private_dir::ensure(dir).map_err(|unfit| match unfit {
        Unfit::Io(error) => io("create", dir)(error),
        unfit => unfit_dir(dir, unfit),
    })
}

/// Opens a file of the auth directory for appending, creating it with mode 0600.
fn append(path: &Path) -> Result<std::fs::File, AuthError> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).map_err(io("write", path))
}

/// Creates the HS256 key if it does not exist; returns whether it did.
fn ensure_secret(dir: &Path) -> Result<bool, AuthError> {
    let path = dir.join(SECRET_FILE);
    if path.exists() {
        return Ok(false);
    }
    let hex = encode_hex(
        &crate::random::bytes::<32>().map_err(io("read", Path::new(crate::random::SOURCE)))?,
    );
    let mut options = std::fs::OpenOptions::new();
    options.create_new(true).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&path).map_err(io("create", &path))?;
    writeln!(file, "{hex}").map_err(io("write", &path))?;
    Ok(true)
}

/// Issues an HS256 token and records it in `issued.jsonl`. Returns the token and its record.
pub fn issue(
    dir: &Path,
    account: &str,
    role: Role,
    ttl: Duration,
    note: &str,
) -> Result<(String, Issued, bool), AuthError> {
    check_account(account)?;
    ensure_dir(dir)?;
    // A key written into a directory others can open, or read from one, is no secret: refuse
    // here, as the hub would at start.
    check_private_dir(dir)?;
    let _lock = lock(dir)?;
    let created = ensure_secret(dir)?;
    let secret = read_secret(&dir.join(SECRET_FILE))?;
    let now = now_secs();
    let claims = Claims {
        sub: account.to_owned(),
        role,
        iat: now,
        exp: now + ttl.as_secs(),
        jti: uuid::Uuid::new_v4().simple().to_string(),
        aud: AUDIENCE.to_owned(),
    };
    crate::jwt_crypto::install();
    let token = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(&secret),
    )
    .map_err(AuthError::Sign)?;
    let record = Issued {
        jti: claims.jti,
        account: claims.sub,
        role,
        issued_at: claims.iat,
        expires_at: claims.exp,
        note: note.to_owned(),
    };
    let path = dir.join(ISSUED_FILE);
    write_line(&mut append(&path)?, &path, &json_line(&record))?;
    Ok((token, record, created))
}

/// Appends revocations; returns how many were new. Unlike [`issue`], this works in a directory
/// the hub would refuse: a revocation must never wait for a fix.
pub fn revoke(dir: &Path, jtis: &[String]) -> Result<usize, AuthError> {
    ensure_dir(dir)?;
    let _lock = lock(dir)?;
    let already = revoked_set(dir)?;
    let path = dir.join(REVOKED_FILE);
    let mut file = append(&path)?;
    let now = now_secs();
    let mut added = 0;
    for jti in jtis {
        if already.contains(jti) {
            continue;
        }
        let line = json_line(&Revoked {
            jti: jti.clone(),
            revoked_at: now,
        });
        write_line(&mut file, &path, &line)?;
        added += 1;
    }
    Ok(added)
}

/// Every issued token recorded in `dir`.
pub fn issued(dir: &Path) -> Result<Vec<Issued>, AuthError> {
    let path = dir.join(ISSUED_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(io("read", &path)(error)),
    };
    // A damaged line (a crash mid-write, a hand edit) is reported and skipped: it must not
    // make every other token unlistable or unrevokable.
    Ok(text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| match serde_json::from_str(line) {
            Ok(issued) => Some(issued),
            Err(error) => {
                tracing::warn!(%error, file = %path.display(), line, "skipped an unreadable line");
                None
            }
        })
        .collect())
}

/// Writes one whole line with a single write, so concurrent appenders never interleave.
fn write_line(file: &mut std::fs::File, path: &Path, line: &str) -> Result<(), AuthError> {
    file.write_all(format!("{line}\n").as_bytes())
        .map_err(io("write", path))
}

/// A ledger record as one JSON line (records are plain strings and numbers: this cannot fail).
fn json_line(record: &impl Serialize) -> String {
    serde_json::to_string(record).expect("a ledger record serializes")
}

/// An exclusive lock on the auth directory for one `issue` or `revoke`, released on drop.
fn lock(dir: &Path) -> Result<std::fs::File, AuthError> {
    private_dir::lock(&dir.join(".lock")).map_err(io("lock", dir))
}

/// The revoked token IDs recorded in `dir`.
pub fn revoked_set(dir: &Path) -> Result<HashSet<String>, AuthError> {
    let path = dir.join(REVOKED_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(parse_revocations(&text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(HashSet::new()),
        Err(error) => Err(io("read", &path)(error)),
    }
}

/// Parses a lifetime such as `90s`, `15m`, `12h` or `30d` (at most ten years).
pub fn parse_ttl(text: &str) -> Result<Duration, InvalidTtl> {
    const MAX_SECS: u64 = 3650 * 86_400;
    let bad = || InvalidTtl(text.to_owned());
    let unit = text.chars().last().ok_or_else(bad)?;
    let number: u64 = text[..text.len() - unit.len_utf8()]
        .parse()
        .map_err(|_| bad())?;
    let scale = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return Err(bad()),
    };
    match number.checked_mul(scale) {
        Some(seconds) if seconds > 0 && seconds <= MAX_SECS => Ok(Duration::from_secs(seconds)),
        _ => Err(bad()),
    }
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
