//! `doctor`: what a person needs to know when an agent cannot reach a browser — the hub's own
//! checks of its set-up, each a [`Check`] with a one-line fix when it fails.
//!
//! The report is built from the running hub's state for one account (the caller's: in hosted
//! mode nothing of another account is looked at), so the `doctor` tool (`mcp/doctor.rs`) and
//! `tabwire-hub doctor` (which calls that tool over the Unix socket) say the same. The checks
//! that need no running hub — the socket's directory and mode, the state directory — are
//! functions of their own, which `tabwire-hub doctor` also runs when no hub answers.
//!
//! Hosted callers are told no paths of the operator's machine (policy files, the audit
//! directory): those are the operator's business, and the fixes that need them are too.
//!
//! Adding a check is one more function from the state to a [`Check`] and one more line in
//! [`report`]. The launched browser (`--launch-browser`) is such a check: its status is kept in
//! [`crate::state::Layout`], and whether it is connected is the registry's to say.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tabwire_protocol::local::{PrivateDirProblem, current_uid, private_dir_problem};
use tabwire_protocol::{ErrorCode, KINDS, Kind, Listing, PROTOCOL_VERSION};

use crate::accounts::Account;
use crate::pairing::PairingSummary;
use crate::peer::how_to_pair;
use crate::policy::{FileUrls, PolicySource};
use crate::state::HubState;

/// This hub's version and the commit it was built from (build.rs), as `--version` shows them.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("TABWIRE_COMMIT"),
    ")"
);

/// One thing the doctor looked at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Check {
    /// What was checked (`browsers`, `socket`).
    pub name: String,
    /// Whether it is as it should be.
    pub ok: bool,
    /// What was found, in one line.
    pub detail: String,
    /// What to do about it, in one line, when it is not ok.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// `detail` quotes a peer's words (a device's name or model, a refused handshake's
    /// message naming the ID it chose): the `doctor` tool fences it as page text.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub peer_words: bool,
}

impl Check {
    /// A check that passed.
    pub fn pass(name: &str, detail: impl Into<String>) -> Check {
        Check {
            name: name.to_owned(),
            ok: true,
            detail: detail.into(),
            fix: None,
            peer_words: false,
        }
    }

    /// A problem and its fix.
    pub fn fail(name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name: name.to_owned(),
            ok: false,
            detail: detail.into(),
            fix: Some(fix.into()),
            peer_words: false,
        }
    }

    /// Marks the detail as quoting a peer's words when `peer_words`.
    pub fn quoting_peer(mut self, peer_words: bool) -> Check {
        self.peer_words = peer_words;
        self
    }

    /// The check for a person: `ok   name: detail`, or `FAIL name: detail` and its fix on the
    /// next line.
    pub fn render(&self) -> String {
        match (&self.fix, self.ok) {
            (Some(fix), false) => format!("FAIL {}: {}\n     fix: {fix}", self.name, self.detail),
            _ => format!(
                "{} {}: {}",
                if self.ok { "ok  " } else { "FAIL" },
                self.name,
                self.detail
            ),
        }
    }
}

/// A browser or device the caller's account knows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PeerStatus {
    /// `browser` or `device`.
    pub kind: String,
    /// Its ID.
    pub id: String,
    /// The name its user gave it.
    pub name: String,
    /// Whether it is connected now.
    pub connected: bool,
    /// Its software's versions (`extension 0.1.0, Chrome 156`).
    pub versions: String,
    /// The protocol version its hello named.
    pub protocol_version: u32,
    /// Whether that is the hub's.
    pub protocol_matches: bool,
    /// How long ago it disconnected, while it is not connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disconnected_secs: Option<u64>,
    /// Why it went away, in its own words (a device backend's `offline`, `unauthorized: …`):
    /// the peer's text, not the hub's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Everything the doctor found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Report {
    /// The hub's version.
    pub hub_version: String,
    /// The protocol the hub speaks.
    pub protocol_version: u32,
    /// `local` or `hosted`.
    pub mode: String,
    /// Every check, in a fixed order.
    pub checks: Vec<Check>,
    /// The account's browsers and devices.
    pub peers: Vec<PeerStatus>,
}

impl Report {
    /// The checks that failed.
    pub fn problems(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|check| !check.ok)
    }

    /// A line about a peer for a person, without its reason (which is the peer's words and is
    /// shown apart from the hub's).
    pub fn peer_line(peer: &PeerStatus) -> String {
        let state = match (peer.connected, peer.disconnected_secs) {
            (true, _) => "connected".to_owned(),
            (false, Some(secs)) => format!("disconnected {} ago", ago(secs)),
            (false, None) => "disconnected".to_owned(),
        };
        let protocol = if peer.protocol_matches {
            format!("protocol {}", peer.protocol_version)
        } else {
            format!(
                "protocol {}, the hub speaks {PROTOCOL_VERSION}",
                peer.protocol_version
            )
        };
        format!(
            "{} {} ({}): {state}; {}; {protocol}",
            peer.kind,
            quoted(&peer.name),
            peer.id,
            peer.versions
        )
    }
}

/// The report for `account` on `hub`.
pub fn report(hub: &HubState, account: &Account) -> Report {
    let hosted = hub.is_hosted();
    let mut peers = Vec::new();
    let pairing = hub.pairings.as_ref().map(|pairings| pairings.summary());
    let mut checks = vec![mode(hub, account)];
    checks.push(http(hub));
    if let Some(socket) = &hub.layout.socket {
        checks.push(socket_check(socket));
    }
    if let Some(dir) = &hub.layout.state_dir {
        checks.push(state_dir_check(dir));
    }
    if let Some(summary) = &pairing {
        checks.push(pairing_check(summary));
    }
    for kind in Kind::ALL {
        checks.push(peers_check(
            kind,
            hub,
            account,
            pairing.as_ref(),
            &mut peers,
        ));
    }
    if let Some(launched) = &hub.layout.launched {
        checks.push(launched_check(launched, account));
    }
    for kind in Kind::ALL {
        checks.push(refusals_check(kind, account, hosted));
    }
    checks.push(policy_check(hub, account));
    checks.push(audit_check(hub));
    if let Some(cluster) = &hub.cluster {
        let name = crate::cluster::doctor::NAME;
        checks.push(match crate::cluster::doctor::check(&cluster.status()) {
            Ok(detail) => Check::pass(name, detail),
            Err((detail, fix)) => Check::fail(name, detail, fix),
        });
    }
    Report {
        hub_version: env!("CARGO_PKG_VERSION").to_owned(),
        protocol_version: PROTOCOL_VERSION,
        mode: if hosted { "hosted" } else { "local" }.to_owned(),
        checks,
        peers,
    }
}

fn mode(hub: &HubState, account: &Account) -> Check {
    let version = VERSION;
    if hub.is_hosted() {
        Check::pass(
            "mode",
            format!(
                "hosted (tabwire-hub {version}, protocol {PROTOCOL_VERSION}): account {}; \
                 agents, browsers and devices connect with tokens",
                account.name
            ),
        )
    } else {
        Check::pass(
            "mode",
            format!(
                "local (tabwire-hub {version}, protocol {PROTOCOL_VERSION}): agents connect \
                 through tabwire-mcp on the Unix socket; browsers and devices pair with the hub"
            ),
        )
    }
}

fn http(hub: &HubState) -> Check {
    match (&hub.layout.public, hub.layout.http) {
        (Some(public), _) => Check::pass(
            "http",
            format!(
                "clients reach {public}: agents at {public}/mcp, browsers at {}",
                hub.browser_url
            ),
        ),
        (None, Some(addr)) => Check::pass(
            "http",
            format!(
                "listening on {addr}; browsers connect to {}",
                hub.browser_url
            ),
        ),
        (None, None) => Check::pass("http", format!("browsers connect to {}", hub.browser_url)),
    }
}

/// The Unix socket at `path`: its directory must be this user's alone (the rule the shim
/// applies before it connects), and the socket itself this user's, closed to others.
pub fn socket_check(path: &Path) -> Check {
    let name = "socket";
    let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) else {
        return Check::fail(
            name,
            format!("{} has no directory", path.display()),
            "give --socket a path in a directory of your own",
        );
    };
    if let Some(problem) = dir_problem(dir, "the socket's directory") {
        return problem.named(name);
    }
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) => {
            return Check::fail(
                name,
                format!("{} cannot be read ({error})", path.display()),
                "start tabwire-hub (it creates the socket), or pass the --socket it was given",
            );
        }
    };
    if !meta.file_type().is_socket() {
        return Check::fail(
            name,
            format!("{} is not a socket", path.display()),
            format!(
                "remove {} and restart tabwire-hub, or pass another --socket",
                path.display()
            ),
        );
    }
    let uid = current_uid();
    if meta.uid() != uid {
        return Check::fail(
            name,
            format!(
                "{} belongs to user {}, not to you (user {uid})",
                path.display(),
                meta.uid()
            ),
            format!(
                "remove {} and restart tabwire-hub as yourself",
                dir.display()
            ),
        );
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Check::fail(
            name,
            format!("{} is open to other users (mode {mode:o})", path.display()),
            format!("chmod 600 {}", path.display()),
        );
    }
    Check::pass(
        name,
        format!(
            "{} (directory 0700, socket {mode:04o}, yours)",
            path.display()
        ),
    )
}

/// Local mode's state directory (pairings, the audit log): this user's alone.
pub fn state_dir_check(dir: &Path) -> Check {
    let name = "state directory";
    match dir_problem(dir, "the state directory") {
        Some(problem) => problem.named(name),
        None => Check::pass(name, format!("{} (0700, yours)", dir.display())),
    }
}

/// A directory that breaks the private-directory rule (or cannot be read), as a failed check
/// to be [`Check::named`]; `None` when it keeps the rule.
pub fn dir_problem(dir: &Path, what: &str) -> Option<Check> {
    let shown = dir.display();
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        Err(error) => {
            return Some(Check::fail(
                "",
                format!("{what} {shown} cannot be read ({error})"),
                "start tabwire-hub once: it creates it private to you",
            ));
        }
    };
    let uid = current_uid();
    let (detail, fix) = match private_dir_problem(&meta, uid)? {
        PrivateDirProblem::NotADirectory => (
            format!("{what} {shown} is not a directory"),
            format!("remove {shown} and restart tabwire-hub"),
        ),
        PrivateDirProblem::Owner(owner) => (
            format!("{what} {shown} belongs to user {owner}, not to you (user {uid})"),
            format!(
                "have {shown} removed and restart tabwire-hub, or choose a directory of your own"
            ),
        ),
        PrivateDirProblem::OpenToOthers { mode } => (
            format!("{what} {shown} is open to other users (mode {mode:o})"),
            format!("chmod 700 {shown}"),
        ),
    };
    Some(Check::fail("", detail, fix))
}

impl Check {
    /// The same check under `name`.
    pub fn named(mut self, name: &str) -> Check {
        self.name = name.to_owned();
        self
    }
}

/// Local mode's pairings and open codes.
pub fn pairing_check(summary: &PairingSummary) -> Check {
    let name = "pairing";
    // Per kind, what holds its pairings: `1 browser and 0 device backends paired`.
    let counts: Vec<(usize, &str)> = KINDS
        .iter()
        .map(|spec| (summary.count(spec.kind), spec.holder))
        .collect();
    let now = crate::pairing::now();
    let codes: Vec<String> = summary
        .open_codes
        .iter()
        .map(|(kind, expires)| format!("{kind}, {} left", ago(expires.saturating_sub(now))))
        .collect();
    let mut detail = format!(
        "{} paired",
        and_list(
            counts
                .iter()
                .map(|(count, holder)| format!("{count} {holder}{}", plural(*count)))
        )
    );
    if !codes.is_empty() {
        detail.push_str(&format!(
            "; {} open code{} ({})",
            codes.len(),
            plural(codes.len()),
            codes.join("; ")
        ));
    }
    if counts.iter().all(|(count, _)| *count == 0) && codes.is_empty() {
        return Check::fail(
            name,
            "nothing is paired with this hub",
            "run `tabwire-hub pair` and paste the code into the tabwire extension's popup, then \
             press Connect",
        );
    }
    Check::pass(name, detail)
}

/// The account's peers of `kind` (added to `peers`): a kind whose tools are always listed
/// (browsers) must have one connected; the others (devices) are optional, but known ones none
/// of which is connected are a problem.
fn peers_check(
    kind: Kind,
    hub: &HubState,
    account: &Account,
    pairing: Option<&PairingSummary>,
    peers: &mut Vec<PeerStatus>,
) -> Check {
    let spec = kind.spec();
    let noun = spec.noun;
    let name = spec.plural;
    let registry = account.peers(kind);
    let known = registry.known();
    for peer in &known {
        peers.push(PeerStatus {
            kind: noun.to_owned(),
            id: peer.id.clone(),
            name: peer.name.clone(),
            connected: peer.connected,
            versions: peer.versions.clone(),
            protocol_version: peer.protocol_version,
            protocol_matches: peer.protocol_version == PROTOCOL_VERSION,
            disconnected_secs: peer.disconnected_for.map(|d| d.as_secs()),
            reason: peer.gone.clone(),
        });
    }
    let connected: Vec<_> = known.iter().filter(|peer| peer.connected).collect();
    let hint = registry.connect_hint(&hub.reach());
    if let Some(peer) = connected
        .iter()
        .find(|peer| peer.protocol_version != PROTOCOL_VERSION)
    {
        return Check::fail(
            name,
            format!(
                "{noun} {} ({}) speaks protocol {}, the hub {PROTOCOL_VERSION}",
                quoted(&peer.name),
                peer.id,
                peer.protocol_version
            ),
            format!("update the {noun}'s software and tabwire-hub to the same tabwire release"),
        )
        .quoting_peer(spec.names_from_peer);
    }
    let away: Vec<String> = known
        .iter()
        .filter(|peer| !peer.connected)
        .map(|peer| {
            let when = peer
                .disconnected_for
                .map(|d| format!(", disconnected {} ago", ago(d.as_secs())))
                .unwrap_or_default();
            format!("{} ({}{when})", quoted(&peer.name), peer.id)
        })
        .collect();
    if !connected.is_empty() {
        let mut detail = format!(
            "{} connected: {}",
            connected.len(),
            connected
                .iter()
                .map(|peer| format!("{} ({})", quoted(&peer.name), peer.versions))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if !away.is_empty() {
            detail.push_str(&format!("; not connected: {}", away.join(", ")));
        }
        return Check::pass(name, detail).quoting_peer(spec.names_from_peer);
    }
    // A kind whose tools are listed only while one is connected is optional.
    if known.is_empty() && spec.listing == Listing::WhileConnected {
        return Check::pass(
            name,
            format!("none known ({noun} tools are listed while one is connected)"),
        );
    }
    let detail = if away.is_empty() {
        format!("no {noun} is connected")
    } else {
        format!("no {noun} is connected; known: {}", away.join(", "))
    };
    // In local mode a peer that was never paired cannot connect at all: pairing comes first.
    let unpaired = pairing.is_some_and(|summary| summary.count(kind) == 0);
    let fix = if unpaired && known.is_empty() {
        format!("pair one first: {}", how_to_pair(kind))
    } else {
        hint
    };
    Check::fail(name, detail, fix).quoting_peer(spec.names_from_peer && !away.is_empty())
}

/// The browser the hub launched (`--launch-browser`): connected, or why not and what to do.
fn launched_check(launched: &crate::launch::Launched, account: &Account) -> Check {
    let name = "launched browser";
    let verdict = crate::launch::check::judge(launched, account);
    match verdict.fix {
        None => Check::pass(name, verdict.detail),
        Some(fix) => Check::fail(name, verdict.detail, fix),
    }
}

/// The latest handshake of `kind` the hub turned away for this account, if any.
fn refusals_check(kind: Kind, account: &Account, hosted: bool) -> Check {
    let noun = kind.spec().noun;
    let name = format!("refused {}", kind.spec().plural);
    let refusals = account.peers(kind).refusals();
    let Some(latest) = refusals.last() else {
        return Check::pass(&name, format!("no {noun} was turned away lately"));
    };
    let more = match refusals.len() {
        1 => String::new(),
        n => format!(" ({n} refusals lately)"),
    };
    let detail = format!(
        "a {noun} was turned away {} ago: {}{more}",
        ago(latest.at.elapsed().as_secs()),
        latest.message
    );
    let fix = match latest.code {
        ErrorCode::ProtocolMismatch => format!(
            "run the {noun}'s software and tabwire-hub from the same tabwire release (the \
             message says which side is older)"
        ),
        ErrorCode::NotPaired if !hosted => how_to_pair(kind).to_owned(),
        ErrorCode::LimitExceeded => {
            format!("disconnect a {noun} of this account, or ask the operator for a higher limit")
        }
        _ if hosted => format!("give each {noun} a valid token of its own, of this account"),
        _ => format!(
            "each {noun} needs a pairing of its own: {}",
            how_to_pair(kind)
        ),
    };
    // The message may name what the refused peer sent (the ID it chose, a version): its words.
    Check::fail(&name, detail, fix).quoting_peer(true)
}

fn policy_check(hub: &HubState, account: &Account) -> Check {
    let name = "policy";
    let hosted = hub.is_hosted();
    let status = hub.policies.status(&account.name);
    let rules = status.rules;
    let summary = format!(
        "{rules} rule{}, default {}, file:// URLs {}",
        plural(rules),
        serde_json::to_value(status.policy.default)
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default(),
        match status.files {
            FileUrls::Refused => "refused",
            FileUrls::Allowed => "allowed (--allow-file-urls)",
        }
    );
    // Hosted callers are not told where the operator keeps files.
    let shown = |path: &Path, what: &str| {
        if hosted {
            what.to_owned()
        } else {
            path.display().to_string()
        }
    };
    match &status.source {
        PolicySource::Default if hosted => Check::pass(
            name,
            format!("the hosted default ({summary}; sensitive reads refused)"),
        ),
        PolicySource::Default => Check::pass(
            name,
            format!("no --policy file: every web origin allowed ({summary})"),
        ),
        PolicySource::FileMissing(path) => {
            let file = shown(path, "the operator's policy file");
            Check::fail(
                name,
                format!("{file} is gone; the mode's default applies meanwhile"),
                if hosted {
                    "ask the operator to restore the policy file".to_owned()
                } else {
                    format!("restore {file}, or restart tabwire-hub without --policy",)
                },
            )
        }
        PolicySource::File(path) | PolicySource::AccountFile(path) => {
            let what = match status.source {
                PolicySource::AccountFile(_) => "this account's policy file",
                _ => "the operator's policy file",
            };
            let file = shown(path, what);
            if status.parses {
                Check::pass(name, format!("{file}: {summary}"))
            } else {
                Check::fail(
                    name,
                    format!(
                        "{file} does not parse as it is now; the last good policy stays in \
                         force ({summary})"
                    ),
                    if hosted {
                        "ask the operator to fix the policy file".to_owned()
                    } else {
                        format!(
                            "fix {file} (the hub's log names the error); the hub reads it again \
                             within a second"
                        )
                    },
                )
            }
        }
    }
}

fn audit_check(hub: &HubState) -> Check {
    let name = "audit log";
    let Some(log) = &hub.audit else {
        return Check::pass(name, "not kept");
    };
    // The count is the whole hub's, every account's records: not a hosted caller's business.
    if hub.is_hosted() {
        return Check::pass(name, "kept by the operator");
    }
    let place = match &hub.layout.audit_dir {
        Some(dir) => format!("{}: ", dir.display()),
        None => String::new(),
    };
    match log.dropped() {
        0 => Check::pass(name, format!("{place}no record dropped")),
        dropped => Check::fail(
            name,
            format!(
                "{place}{dropped} record{} dropped since the hub started (the writer fell \
                 behind or a write failed)",
                plural(dropped as usize)
            ),
            "check the disk of the audit directory (space, permissions); the hub's log says why \
             each record was dropped",
        ),
    }
}

/// A duration in seconds as a person reads it: `40 s`, `3 min`, `2 h`, `5 days`.
fn ago(secs: u64) -> String {
    let duration = Duration::from_secs(secs);
    match duration.as_secs() {
        s if s < 120 => format!("{s} s"),
        s if s < 2 * 3600 => format!("{} min", s / 60),
        s if s < 2 * 86_400 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A name in double quotes, JSON-escaped (a quote, a line break or an escape sequence in a
/// peer's name stays inside its quotes), as messages quote names.
fn quoted(name: &str) -> String {
    serde_json::Value::String(name.to_owned()).to_string()
}

#[cfg(test)]
#[path = "doctor_tests.rs"]
mod tests;
