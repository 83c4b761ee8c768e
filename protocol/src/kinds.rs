//! The kinds of peer tabwire routes tools to — a browser profile, a mobile device — as data: one
//! row of [`KINDS`] per kind, read by the hub (accounts, limits, tokens, pairing, routing,
//! listing, `doctor`) and by the CLI (`--browser`/`--device`, `tabwire select`).
//!
//! A row holds every fact about a kind that is not a type: its names, its endpoint, its limits,
//! its error codes and when its tools are listed. What is typed (its hello, its messages, its
//! requests) stays with the kind's own modules (`devices.rs`, the hub's `peer.rs`), which take
//! their constants from the row. The table lives in this crate because every side that names a
//! kind links it; none of it is sent on the wire.

use serde::{Deserialize, Serialize};

use crate::errors::ErrorCode;

/// A kind of peer: an index into [`KINDS`].
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A Chrome profile running the tabwire extension, on `/browser`.
    #[default]
    Browser,
    /// A mobile device served by a device backend (`tabwire-android`), on `/device`.
    Device,
}

/// When a kind's tools (its group, its `list_*` and `select_*`) are in `tools/list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// Always.
    Always,
    /// Only while the caller's account has one connected (SPEC §7: a session without devices
    /// does not pay for their tools); the session is told when that changes.
    WhileConnected,
}

/// The facts of one kind of peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindSpec {
    /// Which kind (its index in [`KINDS`]).
    pub kind: Kind,
    /// How messages name one (`browser`); also its key in a session's selections, its token
    /// role, its pairing kind and the CLI's flag (`--browser`).
    pub noun: &'static str,
    /// The plural, as listings name them (`browsers`: `list_browsers`' array).
    pub plural: &'static str,
    /// What holds a credential of this kind (a pairing, a token), as `doctor` and `pair` name
    /// it: a browser holds its own; a device backend holds one for the devices it serves.
    pub holder: &'static str,
    /// The hub's WebSocket endpoint (`/browser`).
    pub path: &'static str,
    /// The argument that names one explicitly (`browserId`).
    pub id_arg: &'static str,
    /// The tool that lists them.
    pub list_tool: &'static str,
    /// The tool that selects one.
    pub select_tool: &'static str,
    /// No peer with that ID is known (or it belongs to another account).
    pub not_found: ErrorCode,
    /// Several are connected and the session chose none.
    pub not_selected: ErrorCode,
    /// It is known but not connected.
    pub disconnected: ErrorCode,
    /// How many IDs of this kind one credential (a pairing, a token) may hold at once: one
    /// browser profile per pairing or token, while one device backend serves every phone
    /// attached to its machine over one credential. With 1, a pairing is bound to the one ID
    /// it paired with.
    pub per_credential: usize,
    /// Hosted mode's default for how many an account may have connected at once.
    pub per_account: usize,
    /// The hub's flag that sets that limit (`--max-browsers-per-account`), without `--`.
    pub limit_flag: &'static str,
    /// When its tools are listed.
    pub listing: Listing,
    /// Whether what a peer of this kind says about itself (its name, model, versions) is the
    /// peer's words, fenced like page text where an agent reads it: a device's name and model
    /// come from the phone (`ro.product.model`…), which a rooted phone or a malicious backend
    /// controls. A browser's name is typed by its profile's owner: the hub shows it as its own.
    pub names_from_peer: bool,
}

impl KindSpec {
    /// Whether a credential of this kind is bound to the one peer ID it paired with (a browser's
    /// key registers its browser ID only; a device backend's any device it serves).
    pub const fn binds_one_id(&self) -> bool {
        self.per_credential == 1
    }
}

/// Every kind, in [`Kind`]'s order.
pub const KINDS: [KindSpec; 2] = [
    KindSpec {
        kind: Kind::Browser,
        noun: "browser",
        plural: "browsers",
        holder: "browser",
        path: "/browser",
        id_arg: "browserId",
        list_tool: "list_browsers",
        select_tool: "select_browser",
        not_found: ErrorCode::BrowserNotFound,
        not_selected: ErrorCode::BrowserNotSelected,
        disconnected: ErrorCode::BrowserDisconnected,
        per_credential: 1,
        per_account: 8,
        limit_flag: "max-browsers-per-account",
        listing: Listing::Always,
        names_from_peer: false,
    },
    KindSpec {
        kind: Kind::Device,
        noun: "device",
        plural: "devices",
        holder: "device backend",
        path: "/device",
        id_arg: "deviceId",
        list_tool: "list_devices",
        select_tool: "select_device",
        not_found: ErrorCode::DeviceNotFound,
        not_selected: ErrorCode::DeviceNotSelected,
        disconnected: ErrorCode::DeviceDisconnected,
        per_credential: 16,
        per_account: 8,
        limit_flag: "max-devices-per-account",
        listing: Listing::WhileConnected,
        names_from_peer: true,
    },
];

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; KINDS.len()] = {
        let mut all = [Kind::Browser; KINDS.len()];
        let mut at = 0;
        while at < KINDS.len() {
            all[at] = KINDS[at].kind;
            at += 1;
        }
        all
    };

    /// Its row of [`KINDS`].
    pub const fn spec(self) -> &'static KindSpec {
        &KINDS[self as usize]
    }

    /// Its index, for tables kept per kind.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The kind whose noun is `noun` (`browser`).
    pub fn from_noun(noun: &str) -> Option<Kind> {
        KINDS
            .iter()
            .find(|spec| spec.noun == noun)
            .map(|spec| spec.kind)
    }

    /// The kind whose `list_*` or `select_*` tool is `tool`.
    pub fn of_peer_tool(tool: &str) -> Option<Kind> {
        KINDS
            .iter()
            .find(|spec| spec.list_tool == tool || spec.select_tool == tool)
            .map(|spec| spec.kind)
    }
}

/// A set of kinds (a bit per kind index), small enough to keep in an atomic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindSet(u32);

impl KindSet {
    /// No kind.
    pub const EMPTY: KindSet = KindSet(0);

    /// Every kind.
    pub fn all() -> KindSet {
        Kind::ALL.into_iter().collect()
    }

    /// Whether `kind` is in the set.
    pub fn contains(self, kind: Kind) -> bool {
        self.0 & (1 << kind.index()) != 0
    }

    /// The set with `kind` in it.
    pub fn with(self, kind: Kind) -> KindSet {
        KindSet(self.0 | (1 << kind.index()))
    }

    /// The set as bits, to keep in an atomic.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// The set of [`KindSet::bits`].
    pub fn from_bits(bits: u32) -> KindSet {
        KindSet(bits)
    }
}

impl FromIterator<Kind> for KindSet {
    fn from_iter<I: IntoIterator<Item = Kind>>(kinds: I) -> Self {
        kinds.into_iter().fold(KindSet::EMPTY, KindSet::with)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.spec().noun)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_row_sits_at_its_kinds_index_and_names_are_unique() {
        for (at, spec) in KINDS.iter().enumerate() {
            assert_eq!(spec.kind.index(), at, "{}", spec.noun);
            assert_eq!(Kind::ALL[at], spec.kind);
            assert_eq!(Kind::from_noun(spec.noun), Some(spec.kind));
            assert_eq!(spec.path, format!("/{}", spec.noun));
            assert_eq!(spec.id_arg, format!("{}Id", spec.noun));
            assert_eq!(spec.list_tool, format!("list_{}", spec.plural));
            assert_eq!(spec.select_tool, format!("select_{}", spec.noun));
            assert_eq!(Kind::of_peer_tool(spec.list_tool), Some(spec.kind));
            assert_eq!(Kind::of_peer_tool(spec.select_tool), Some(spec.kind));
            // Serialized (a pairing record's `kind`, a token's role) as its noun.
            assert_eq!(
                serde_json::to_value(spec.kind).unwrap(),
                serde_json::json!(spec.noun)
            );
            assert!(spec.per_credential >= 1 && spec.per_account >= 1);
            let codes = [spec.not_found, spec.not_selected, spec.disconnected];
            for other in KINDS.iter().filter(|other| other.kind != spec.kind) {
                assert_ne!(other.noun, spec.noun);
                assert_ne!(other.limit_flag, spec.limit_flag);
                assert!(!codes.contains(&other.not_found), "{}", spec.noun);
            }
        }
        assert_eq!(Kind::from_noun("agent"), None, "not a peer kind");
        assert!(KINDS.len() <= 32, "a KindSet holds them");
        let set = KindSet::EMPTY.with(Kind::Device);
        assert!(set.contains(Kind::Device) && !set.contains(Kind::Browser));
        assert_eq!(KindSet::from_bits(set.bits()), set);
        assert!(Kind::ALL.iter().all(|kind| KindSet::all().contains(*kind)));
    }
}
