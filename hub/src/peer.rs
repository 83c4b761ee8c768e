//! The kinds of peer the hub routes tools to, and what routing needs to know about each.
//!
//! A peer is what serves operations for agents: a browser profile (the extension on
//! `/browser`) or a mobile device (a device backend's connection on `/device`). Everything that chooses a peer — the account's
//! registry, the session's selection, the routing of a tool call, `list_*` and `select_*` — is
//! written once over [`PeerKind`]; a kind only says how it is named, how its hello identifies
//! it and which error codes its failures carry; where an account keeps its registry is said in
//! [`crate::accounts`]. See ARCHITECTURE.md for adding a kind.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tabwire_protocol::{DeviceHello, ErrorCode, Hello};

/// A kind of peer.
pub trait PeerKind: Sized + Send + Sync + 'static {
    /// How messages name one (`browser`); also its key in a session's selections.
    const NOUN: &'static str;
    /// The argument that names one explicitly (`browserId`).
    const ID_ARG: &'static str;
    /// The tool that lists them (`list_browsers`).
    const LIST_TOOL: &'static str;
    /// The tool that selects one (`select_browser`).
    const SELECT_TOOL: &'static str;
    /// No peer with that ID is known (or it belongs to another account).
    const NOT_FOUND: ErrorCode;
    /// Several are connected and the session chose none.
    const NOT_SELECTED: ErrorCode;
    /// It is known but not connected.
    const DISCONNECTED: ErrorCode;
    /// How many IDs of this kind one credential (a pairing, a token) may hold at once: one
    /// browser profile per pairing or token, while one device backend serves every phone
    /// attached to its machine over one credential.
    const PER_CREDENTIAL: usize;
    /// Whether what a peer of this kind says about itself (its name, model, versions) is the
    /// peer's words, fenced like page text where an agent reads it: a device's name and model
    /// come from the phone (`ro.product.model`…), which a rooted phone or a malicious backend
    /// controls. A browser's name is typed by its profile's owner: the hub shows it as its own.
    const NAMES_FROM_PEER: bool;

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
    /// What a person does to connect one, for messages to agents ("In Chrome, …").
    fn connect_hint(reach: &Reach) -> String;
}

/// Whether the names of the peers of the kind called `noun` are the peers' words
/// ([`PeerKind::NAMES_FROM_PEER`]), for reports that carry the kind as text.
pub fn names_from_peer(noun: &str) -> bool {
    match noun {
        n if n == Browser::NOUN => Browser::NAMES_FROM_PEER,
        // A kind not known here is treated as untrusted.
        _ => true,
    }
}

/// How peers reach this hub, for the hints given to the people who connect them.
pub struct Reach<'a> {
    /// The WebSocket URL of `/browser`.
    pub browser_url: &'a str,
    /// The WebSocket URL of `/device`.
    pub device_url: &'a str,
    /// Whether connecting takes a token (hosted mode).
    pub hosted: bool,
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
    const NOUN: &'static str = "browser";
    const ID_ARG: &'static str = "browserId";
    const LIST_TOOL: &'static str = "list_browsers";
    const SELECT_TOOL: &'static str = "select_browser";
    const NOT_FOUND: ErrorCode = ErrorCode::BrowserNotFound;
    const NOT_SELECTED: ErrorCode = ErrorCode::BrowserNotSelected;
    const DISCONNECTED: ErrorCode = ErrorCode::BrowserDisconnected;
    const PER_CREDENTIAL: usize = 1;
    const NAMES_FROM_PEER: bool = false;

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
                reach.browser_url
            )
        } else {
            format!(
                "In Chrome, open the tabwire extension's popup, set Server URL to {} and press \
                 Connect",
                reach.browser_url
            )
        }
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

/// How many devices one backend's credential may have connected at once.
pub const DEVICES_PER_CREDENTIAL: usize = 16;

impl PeerKind for Device {
    const NOUN: &'static str = "device";
    const ID_ARG: &'static str = "deviceId";
    const LIST_TOOL: &'static str = "list_devices";
    const SELECT_TOOL: &'static str = "select_device";
    const NOT_FOUND: ErrorCode = ErrorCode::DeviceNotFound;
    const NOT_SELECTED: ErrorCode = ErrorCode::DeviceNotSelected;
    const DISCONNECTED: ErrorCode = ErrorCode::DeviceDisconnected;
    const PER_CREDENTIAL: usize = DEVICES_PER_CREDENTIAL;
    const NAMES_FROM_PEER: bool = true;

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
                reach.device_url
            )
        } else {
            format!(
                "Attach the phone by USB (USB debugging on) and run `tabwire-android` on this \
                 machine (it connects to {}; pair it once with a code from `tabwire-hub pair \
                 --device`)",
                reach.device_url
            )
        }
    }
}
