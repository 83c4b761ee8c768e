//! The kinds of peer the hub routes tools to, and what routing needs to know about each.
//!
//! A peer is what serves operations for agents: a browser profile (the extension on
//! `/browser`) or a mobile device (a device backend's connection on `/device`). Everything that chooses a peer — the account's
//! registry, the session's selection, the routing of a tool call, `list_*` and `select_*` — is
//! written once over [`PeerKind`]; a kind only says how it is named, how its hello identifies
//! it and which error codes its failures carry; where an account keeps its registry is said in
//! [`crate::accounts`]. See ARCHITECTURE.md for adding a kind.

use std::path::Path;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tabwire_protocol::{DeviceHello, ErrorCode, Hello, KINDS, Kind, KindSpec};

/// `each_kind!(K => expr)`: an array of `expr` in the kinds table's order, with `K` standing
/// for each kind's type in turn. This is the one list of the kinds' types: the accounts'
/// registries, the hub's endpoints and the per-kind texts below are made from it, and the
/// check after it fails the build while it and [`KINDS`] disagree.
macro_rules! each_kind {
    ($kind:ident => $body:expr) => {
        [
            {
                type $kind = $crate::peer::Browser;
                $body
            },
            {
                type $kind = $crate::peer::Device;
                $body
            },
        ]
    };
}
pub(crate) use each_kind;

// A typed kind per row of the kinds table, at its row's index.
const _: () = {
    let order = each_kind!(K => K::SPEC.kind.index());
    assert!(
        order.len() == KINDS.len(),
        "each_kind! lists every kind of KINDS"
    );
    let mut at = 0;
    while at < order.len() {
        assert!(
            order[at] == at,
            "each_kind! lists the kinds in KINDS' order"
        );
        at += 1;
    }
};

/// What a person does to pair a peer of `kind` ([`PeerKind::HOW_TO_PAIR`]).
pub fn how_to_pair(kind: Kind) -> &'static str {
    each_kind!(K => K::HOW_TO_PAIR)[kind.index()]
}

/// What to do with a pairing code for `kind` just made ([`PeerKind::code_hint`]).
pub fn code_hint(kind: Kind, ttl: &str, state_dir: &Path) -> String {
    each_kind!(K => K::code_hint as fn(&str, &Path) -> String)[kind.index()](ttl, state_dir)
}

/// A kind of peer: its row of the kinds table ([`KINDS`](tabwire_protocol::KINDS)) and its
/// typed parts. The constants are the row's, named here for the code that is generic over kinds.
pub trait PeerKind: Sized + Send + Sync + 'static {
    /// Its row of the kinds table.
    const SPEC: &'static KindSpec;
    /// How messages name one (`browser`); also its key in a session's selections.
    const NOUN: &'static str = Self::SPEC.noun;
    /// The argument that names one explicitly (`browserId`).
    const ID_ARG: &'static str = Self::SPEC.id_arg;
    /// The tool that lists them (`list_browsers`).
    const LIST_TOOL: &'static str = Self::SPEC.list_tool;
    /// The tool that selects one (`select_browser`).
    const SELECT_TOOL: &'static str = Self::SPEC.select_tool;
    /// No peer with that ID is known (or it belongs to another account).
    const NOT_FOUND: ErrorCode = Self::SPEC.not_found;
    /// Several are connected and the session chose none.
    const NOT_SELECTED: ErrorCode = Self::SPEC.not_selected;
    /// It is known but not connected.
    const DISCONNECTED: ErrorCode = Self::SPEC.disconnected;
    /// How many IDs of this kind one credential may hold at once ([`KindSpec::per_credential`]).
    const PER_CREDENTIAL: usize = Self::SPEC.per_credential;
    /// Whether what a peer says about itself is the peer's words
    /// ([`KindSpec::names_from_peer`]).
    const NAMES_FROM_PEER: bool = Self::SPEC.names_from_peer;

    /// What the peer says about itself when it connects.
    type Hello: Clone + Send + Sync + serde::Serialize + DeserializeOwned + 'static;
    /// The arguments of [`PeerKind::SELECT_TOOL`]: the peer's ID under [`PeerKind::ID_ARG`].
    type SelectArgs: DeserializeOwned + JsonSchema + Into<String>;

    /// The peer's stable ID.
    fn id(hello: &Self::Hello) -> &str;
    /// The name its user gave it.
    fn name(hello: &Self::Hello) -> &str;
    /// What `list_*` says about it besides ID, name and state (versions…).
    fn facts(hello: &Self::Hello) -> Map<String, Value>;
    /// The protocol version its hello named.
    fn protocol_version(hello: &Self::Hello) -> u32;
    /// Its software's versions in a few words, for `doctor` (`extension 0.1.0, Chrome 156`).
    fn versions(hello: &Self::Hello) -> String;
    /// What a person does to pair one with a local hub, for refusals and `doctor` (`run ...
    /// and paste the code ...`).
    const HOW_TO_PAIR: &'static str;

    /// What a person does to connect one, for messages to agents ("In Chrome, …").
    fn connect_hint(reach: &Reach) -> String;
    /// What to do with a pairing code `tabwire-hub pair` just made for this kind, valid for
    /// `ttl`, with the hub whose state is in `state_dir`.
    fn code_hint(ttl: &str, state_dir: &Path) -> String;
}

/// Whether the names of the peers of the kind called `noun` are the peers' words
/// ([`KindSpec::names_from_peer`]), for reports that carry the kind as text.
pub fn names_from_peer(noun: &str) -> bool {
    // A kind not known here is treated as untrusted.
    Kind::from_noun(noun).is_none_or(|kind| kind.spec().names_from_peer)
}

/// How peers reach this hub, for the hints given to the people who connect them.
pub struct Reach<'a> {
    /// The WebSocket URL of `/browser`; every kind's endpoint is beside it.
    pub browser_url: &'a str,
    /// Whether connecting takes a token (hosted mode).
    pub hosted: bool,
}

impl Reach<'_> {
    /// The WebSocket URL of the endpoint of `kind`.
    pub fn url(&self, kind: &KindSpec) -> String {
        let browser = Kind::Browser.spec().path;
        match self.browser_url.strip_suffix(browser) {
            Some(base) => format!("{base}{}", kind.path),
            None => self.browser_url.to_owned(),
        }
    }
}

/// A Chrome profile running the tabwire extension.
pub struct Browser;

/// Arguments of `select_browser`.
#[derive(serde::Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectBrowserArgs {
    pub browser_id: String,
}

impl From<SelectBrowserArgs> for String {
    fn from(args: SelectBrowserArgs) -> String {
        args.browser_id
    }
}

impl PeerKind for Browser {
    const SPEC: &'static KindSpec = Kind::Browser.spec();
    const HOW_TO_PAIR: &'static str = "run `tabwire-hub pair` on the hub's machine and paste the \
                                       code into the extension's popup";

    type Hello = Hello;
    type SelectArgs = SelectBrowserArgs;

    fn id(hello: &Hello) -> &str {
        &hello.browser_id
    }

    fn name(hello: &Hello) -> &str {
        &hello.browser_name
    }

    fn facts(hello: &Hello) -> Map<String, Value> {
        let mut facts = Map::new();
        facts.insert("extensionVersion".into(), json!(hello.extension_version));
        facts.insert("chromeVersion".into(), json!(hello.chrome_version));
        facts
    }

    fn protocol_version(hello: &Hello) -> u32 {
        hello.protocol_version
    }

    fn versions(hello: &Hello) -> String {
        format!(
            "extension {}, Chrome {}",
            hello.extension_version, hello.chrome_version
        )
    }

    fn connect_hint(reach: &Reach) -> String {
        if reach.hosted {
            format!(
                "In Chrome, open the tabwire extension's popup, set Server URL to {}, paste a \
                 browser token of this account in Access token and press Connect",
                reach.url(Self::SPEC)
            )
        } else {
            format!(
                "In Chrome, open the tabwire extension's popup, set Server URL to {} and press \
                 Connect",
                reach.url(Self::SPEC)
            )
        }
    }

    fn code_hint(ttl: &str, state_dir: &Path) -> String {
        format!(
            "Paste this code into the tabwire extension's popup (Pairing code) and press Connect. \
             It works once, within {ttl}, with the hub whose state is in {} (a hub started with \
             another --state-dir does not know it).",
            state_dir.display()
        )
    }
}

/// A mobile device, served by a device backend (`tabwire-android`) over one `/device`
/// connection per device.
pub struct Device;

/// Arguments of `select_device`.
#[derive(serde::Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectDeviceArgs {
    pub device_id: String,
}

impl From<SelectDeviceArgs> for String {
    fn from(args: SelectDeviceArgs) -> String {
        args.device_id
    }
}

impl PeerKind for Device {
    const SPEC: &'static KindSpec = Kind::Device.spec();
    const HOW_TO_PAIR: &'static str = "run `tabwire-hub pair --device` on the hub's machine and \
                                       give the code to tabwire-android in its environment \
                                       (TABWIRE_PAIRING_CODE), or run tabwire-android on the \
                                       hub's machine, which pairs itself";

    type Hello = DeviceHello;
    type SelectArgs = SelectDeviceArgs;

    fn id(hello: &DeviceHello) -> &str {
        &hello.device_id
    }

    fn name(hello: &DeviceHello) -> &str {
        &hello.device_name
    }

    fn facts(hello: &DeviceHello) -> Map<String, Value> {
        let mut facts = Map::new();
        facts.insert("platform".into(), json!(hello.platform));
        facts.insert("model".into(), json!(hello.model));
        facts.insert("osVersion".into(), json!(hello.os_version));
        facts.insert("screen".into(), json!(hello.screen));
        facts.insert("backendVersion".into(), json!(hello.backend_version));
        facts
    }

    fn protocol_version(hello: &DeviceHello) -> u32 {
        hello.protocol_version
    }

    fn versions(hello: &DeviceHello) -> String {
        format!(
            "backend {}, {} {}",
            hello.backend_version, hello.model, hello.os_version
        )
    }

    fn connect_hint(reach: &Reach) -> String {
        if reach.hosted {
            format!(
                "Attach the phone by USB (USB debugging on) to a machine that runs \
                 `tabwire-android --hub {}` with a device token of this account",
                reach.url(Self::SPEC)
            )
        } else {
            format!(
                "Attach the phone by USB (USB debugging on) and run `tabwire-android` on this \
                 machine (it connects to {}; pair it once with a code from `tabwire-hub pair \
                 --device`)",
                reach.url(Self::SPEC)
            )
        }
    }

    /// Never on tabwire-android's command line: other users of the machine read every
    /// process's arguments (`ps`, /proc/PID/cmdline); its environment is private to its user.
    fn code_hint(ttl: &str, state_dir: &Path) -> String {
        format!(
            "Give this code to tabwire-android on the machine the phones are attached to, in its \
             environment: TABWIRE_PAIRING_CODE=<code> tabwire-android (not as a command-line \
             argument, which other users can read in ps). On the hub's own machine \
             tabwire-android pairs itself without a code. It works once, within {ttl}, with the \
             hub whose state is in {}.",
            state_dir.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_lists_the_kinds_table() {
        let kinds = each_kind!(K => K::SPEC.kind);
        assert_eq!(kinds, Kind::ALL);
        for kind in Kind::ALL {
            assert!(!how_to_pair(kind).is_empty(), "{kind}");
            let hint = code_hint(kind, "10m", Path::new("/state"));
            assert!(hint.contains("10m") && hint.contains("/state"), "{hint}");
        }
    }

    #[test]
    fn a_device_code_goes_in_the_environment_never_the_command_line() {
        let hint = code_hint(Kind::Device, "10m", Path::new("/state"));
        assert!(hint.contains("TABWIRE_PAIRING_CODE="), "{hint}");
        assert!(!hint.contains("--pairing-code"), "{hint}");
        assert!(!hint.contains("pairing code option"), "{hint}");
    }
}
