//! Hosted mode's bearer tokens: what they claim, how they are checked, and the files in the auth
//! directory (docs/hosted.md).
//!
//! A token is a JWT naming an account (`sub`) and a role (`agent` or `browser`). The hub checks
//! it with the configured key and the configured algorithm only — the token's header never picks
//! either — then against the revocation list, which it re-reads when the file changes. Every
//! reason a token is refused is logged here and hidden from the client, who learns only that it
//! was refused.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

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

/// What a token allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// An MCP client on `/mcp`.
    Agent,
    /// An extension on `/browser`.
    Browser,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Agent => "agent",
            Role::Browser => "browser",
        })
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "agent" => Ok(Role::Agent),
            "browser" => Ok(Role::Browser),
            other => Err(format!("role must be agent or browser, not {other:?}")),
        }
    }
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
    /// Public keys from a JWKS file, with the algorithm pinned (RS256 or EdDSA).
    Jwks(PathBuf, Algorithm),
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
    /// Loads the keys and the revocation list from `auth_dir`.
    pub fn load(auth_dir: &Path, source: &KeySource) -> anyhow::Result<Authenticator> {
        let (keys, algorithm) = match source {
            KeySource::Secret => {
                let path = auth_dir.join(SECRET_FILE);
                let secret = read_secret(&path).with_context(|| {
                    format!(
                        "cannot read the HS256 key {} (create it with `tabwire-hub token issue \
                         --auth-dir {} …`, or give --jwks)",
                        path.display(),
                        auth_dir.display()
                    )
                })?;
                (
                    Keys::Secret(DecodingKey::from_secret(&secret)),
                    Algorithm::HS256,
                )
            }
            KeySource::Jwks(path, algorithm) => {
                if !matches!(algorithm, Algorithm::RS256 | Algorithm::EdDSA) {
                    anyhow::bail!("--jwks takes --jwt-alg RS256 or EdDSA");
                }
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read the JWKS file {}", path.display()))?;
                let set: JwkSet = serde_json::from_str(&text)
                    .with_context(|| format!("{} is not a JWKS document", path.display()))?;
                if set.keys.is_empty() {
                    anyhow::bail!("{} holds no keys", path.display());
                }
                let mut keys = Vec::new();
                for jwk in &set.keys {
                    let key = DecodingKey::from_jwk(jwk).with_context(|| {
                        format!(
                            "key {:?} in {} is not usable",
                            jwk.common.key_id,
                            path.display()
                        )
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
        let revoked = Revocations::new(auth_dir.join(REVOKED_FILE));
        revoked.refresh_now();
        Ok(Authenticator {
            keys,
            validation,
            revoked,
        })
    }

    /// Requires tokens to name `issuer` in `iss` (for an operator's own issuer, with `--jwks`).
    pub fn with_issuer(mut self, issuer: &str) -> Self {
        self.validation.set_issuer(&[issuer]);
        self.validation
            .set_required_spec_claims(&["exp", "sub", "aud", "iss"]);
        self
    }

    /// Verifies a token. The error is for the log only; the client is told nothing but
    /// "unauthorized".
    pub fn verify(&self, token: &str) -> Result<Principal, String> {
        if token.is_empty() || token.len() > MAX_TOKEN_LEN {
            return Err(format!("token length {}", token.len()));
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| format!("header: {e}"))?;
        if !self.validation.algorithms.contains(&header.alg) {
            return Err(format!(
                "algorithm {:?} is not the configured one",
                header.alg
            ));
        }
        let key = match &self.keys {
            Keys::Secret(key) => key,
            Keys::Jwks(keys) => match (&header.kid, keys.as_slice()) {
                (Some(kid), _) => keys
                    .iter()
                    .find(|(id, _)| id.as_deref() == Some(kid.as_str()))
                    .map(|(_, key)| key)
                    .ok_or_else(|| {
                        format!("unknown kid {:?}", kid.chars().take(64).collect::<String>())
                    })?,
                (None, [(_, only)]) => only,
                (None, _) => return Err("no kid and several keys".into()),
            },
        };
        let claims = jsonwebtoken::decode::<Claims>(token, key, &self.validation)
            .map_err(|e| format!("{e}"))?
            .claims;
        check_account(&claims.sub)?;
        if claims.jti.is_empty() || claims.jti.len() > 128 {
            return Err("bad jti".into());
        }
        let principal = Principal {
            account: claims.sub,
            role: claims.role,
            jti: claims.jti,
            expires_at: claims.exp,
        };
        if self.revoked.contains(&principal.jti) {
            return Err(format!("token {} is revoked", principal.jti));
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
}

/// An account name: 1–64 characters from `A-Z a-z 0-9 . _ @ -`.
pub fn check_account(account: &str) -> Result<(), String> {
    let ok = !account.is_empty()
        && account.len() <= 64
        && account
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "account {account:?} must be 1-64 characters from A-Z a-z 0-9 . _ @ -"
        ))
    }
}

/// The revocation list, re-read when its file changes.
struct Revocations {
    path: PathBuf,
    state: Mutex<RevocationState>,
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
        state.unreadable || state.jtis.contains(jti)
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
                state.jtis = parse_revocations(&text);
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
/// least 32 bytes used as it is.
fn read_secret(path: &Path) -> anyhow::Result<Vec<u8>> {
    let text = std::fs::read_to_string(path)?;
    let text = text.trim();
    let secret = decode_hex(text).unwrap_or_else(|| text.as_bytes().to_vec());
    if secret.len() < 32 {
        anyhow::bail!(
            "{} is too short: an HS256 key needs at least 32 bytes",
            path.display()
        );
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode();
        if mode & 0o077 != 0 {
            tracing::warn!(file = %path.display(), "the HS256 key is readable by other users; chmod 600 it");
        }
    }
    Ok(secret)
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// Creates the auth directory (mode 0700) if needed.
fn ensure_dir(dir: &Path) -> anyhow::Result<()> {
    if !dir.exists() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    Ok(())
}

/// Opens a file of the auth directory for appending, creating it with mode 0600.
fn append(path: &Path) -> anyhow::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Creates the HS256 key if it does not exist; returns whether it did.
fn ensure_secret(dir: &Path) -> anyhow::Result<bool> {
    let path = dir.join(SECRET_FILE);
    if path.exists() {
        return Ok(false);
    }
    let mut bytes = [0u8; 32];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut bytes)
        .context("cannot read /dev/urandom")?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut options = std::fs::OpenOptions::new();
    options.create_new(true).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    writeln!(file, "{hex}")?;
    Ok(true)
}

/// Issues an HS256 token and records it in `issued.jsonl`. Returns the token and its record.
pub fn issue(
    dir: &Path,
    account: &str,
    role: Role,
    ttl: Duration,
    note: &str,
) -> anyhow::Result<(String, Issued, bool)> {
    check_account(account).map_err(anyhow::Error::msg)?;
    ensure_dir(dir)?;
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
    let token = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(&secret),
    )?;
    let record = Issued {
        jti: claims.jti,
        account: claims.sub,
        role,
        issued_at: claims.iat,
        expires_at: claims.exp,
        note: note.to_owned(),
    };
    let mut file = append(&dir.join(ISSUED_FILE))?;
    write_line(&mut file, &serde_json::to_string(&record)?)?;
    Ok((token, record, created))
}

/// Appends revocations; returns how many were new.
pub fn revoke(dir: &Path, jtis: &[String]) -> anyhow::Result<usize> {
    ensure_dir(dir)?;
    let _lock = lock(dir)?;
    let already = revoked_set(dir)?;
    let mut file = append(&dir.join(REVOKED_FILE))?;
    let now = now_secs();
    let mut added = 0;
    for jti in jtis {
        if already.contains(jti) {
            continue;
        }
        let line = serde_json::to_string(&Revoked {
            jti: jti.clone(),
            revoked_at: now,
        })?;
        write_line(&mut file, &line)?;
        added += 1;
    }
    Ok(added)
}

/// Every issued token recorded in `dir`.
pub fn issued(dir: &Path) -> anyhow::Result<Vec<Issued>> {
    let path = dir.join(ISSUED_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", path.display())),
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
fn write_line(file: &mut std::fs::File, line: &str) -> anyhow::Result<()> {
    file.write_all(format!("{line}\n").as_bytes())?;
    Ok(())
}

/// An exclusive lock on the auth directory for one `issue` or `revoke`, released on drop.
fn lock(dir: &Path) -> anyhow::Result<std::fs::File> {
    let file = append(&dir.join(".lock"))?;
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a file descriptor this function owns; it blocks until granted.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("cannot lock {}", dir.display()));
        }
    }
    Ok(file)
}

/// The revoked token IDs recorded in `dir`.
pub fn revoked_set(dir: &Path) -> anyhow::Result<HashSet<String>> {
    match std::fs::read_to_string(dir.join(REVOKED_FILE)) {
        Ok(text) => Ok(parse_revocations(&text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(HashSet::new()),
        Err(error) => Err(error.into()),
    }
}

/// Parses a lifetime such as `90s`, `15m`, `12h` or `30d` (at most ten years).
pub fn parse_ttl(text: &str) -> Result<Duration, String> {
    const MAX_SECS: u64 = 3650 * 86_400;
    let bad = || {
        format!("ttl {text:?} must be a positive number followed by s, m, h or d, at most 3650d")
    };
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
