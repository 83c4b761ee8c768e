//! Reading and writing the configuration sources, and the stable browser ID.
//!
//! - user-saved values, the browser ID and the pairing key: `chrome.storage.local` (fast);
//! - the bundled `config.json`: `fetch(chrome.runtime.getURL('config.json'))`, absent in a
//!   normal install (new installs start with an empty URL), present in test copies;
//! - managed values: `chrome.storage.managed`, which can take ~2.8 s on the first worker
//!   start, so the worker reads it in the background and reconnects if it changes anything.
//!
//! Every read tolerates a missing or malformed source (it counts as "sets nothing") and says so
//! in the log: a broken policy must not stop the extension from working with the others.

use std::collections::HashMap;

use serde_json::{Value, json};
use tabwire_protocol::pairing::{KEY_LEN, decode_hex, encode_hex};
use tabwire_protocol::{Hello, PROTOCOL_VERSION, check_hello};
use wasm_bindgen::JsValue;

use crate::chrome::{self, FetchResponse};
use crate::config::ConfigLayer;
use wasm_bindgen::JsCast;

const SERVER_URL: &str = "serverUrl";
const BROWSER_NAME: &str = "browserName";
const ACCESS_TOKEN: &str = "accessToken";
const PAIRING_CODE: &str = "pairingCode";
const BROWSER_ID: &str = "browserId";
/// The per-browser key of the pairing with a local hub, hex. Never logged or shown.
const PAIRING_KEY: &str = "pairingKey";

/// The values read from one storage area or file, by key.
type Items = HashMap<String, Value>;

/// The bundled file's switch for the page model's check mode.
const CHECK_PAGE_MODEL: &str = "checkPageModel";

fn layer_from(items: &Items) -> ConfigLayer {
    let text = |key: &str| items.get(key).and_then(Value::as_str).map(str::to_owned);
    ConfigLayer {
        server_url: text(SERVER_URL),
        browser_name: text(BROWSER_NAME),
        access_token: text(ACCESS_TOKEN),
        pairing_code: text(PAIRING_CODE),
    }
}

/// What `chrome.storage.local` holds for tabwire.
pub struct LocalState {
    /// The user-saved configuration.
    pub user: ConfigLayer,
    /// The stable browser ID (created and saved on first start).
    pub browser_id: String,
    /// The key of the pairing with a local hub, once paired.
    pub pairing_key: Option<[u8; KEY_LEN]>,
}

/// Reads the user-saved configuration and the browser ID, creating the ID on first start.
pub async fn load_local() -> LocalState {
    let keys = JsValue::from(
        [
            SERVER_URL,
            BROWSER_NAME,
            ACCESS_TOKEN,
            PAIRING_CODE,
            BROWSER_ID,
            PAIRING_KEY,
        ]
        .iter()
        .map(|k| JsValue::from_str(k))
        .collect::<js_sys::Array>(),
    );
    let items: Items = match chrome::call(chrome::storage_local_get(&keys)).await {
        Ok(value) => chrome::from_js(value).unwrap_or_default(),
        Err(e) => {
            crate::chrome::log!("could not read chrome.storage.local: {e}");
            Items::default()
        }
    };
    let saved_id = items
        .get(BROWSER_ID)
        .and_then(Value::as_str)
        .filter(|id| is_valid_browser_id(id))
        .map(str::to_owned);
    let browser_id = match saved_id {
        Some(id) => id,
        None => {
            let id = chrome::random_uuid();
            save(&json!({ BROWSER_ID: id })).await;
            crate::chrome::log!("created browser ID {id}");
            id
        }
    };
    let pairing_key = items
        .get(PAIRING_KEY)
        .and_then(Value::as_str)
        .and_then(decode_hex)
        .and_then(|key| key.try_into().ok());
    LocalState {
        user: layer_from(&items),
        browser_id,
        pairing_key,
    }
}

/// Closes `chrome.storage.local` to the extension's scripts in pages (the collector): it holds
/// the pairing key and the access token, which a page whose renderer was taken over could
/// otherwise read through them. Chrome allows this for the local area since 2024; an older one
/// refuses, which is logged and changes nothing else.
pub async fn restrict_local_storage() {
    let options = json!({ "accessLevel": "TRUSTED_CONTEXTS" });
    let result = match chrome::to_js(&options) {
        Ok(options) => chrome::call(chrome::storage_local_set_access_level(&options))
            .await
            .map(|_| ()),
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        crate::chrome::log!("could not close local storage to page scripts: {e}");
    }
}

/// Keeps the key of a pairing that just succeeded (and drops the used code), or forgets the
/// key (`None`) when the user pastes a new code to pair again.
pub async fn save_pairing_key(key: Option<&[u8; KEY_LEN]>) -> Result<(), chrome::JsFailure> {
    let items = match key {
        Some(key) => json!({ PAIRING_KEY: encode_hex(key), PAIRING_CODE: "" }),
        None => json!({ PAIRING_KEY: "" }),
    };
    set_local(&items).await
}

/// Whether the hub would accept `id` (the same rule as `check_hello`, in a hello that is
/// otherwise fine: the hub refuses a blank name).
fn is_valid_browser_id(id: &str) -> bool {
    check_hello(&Hello {
        browser_id: id.to_owned(),
        browser_name: crate::config::DEFAULT_BROWSER_NAME.to_owned(),
        extension_version: String::new(),
        protocol_version: PROTOCOL_VERSION,
        chrome_version: String::new(),
        proof: None,
        managed_code: false,
    })
    .is_ok()
}

/// Saves what the user entered in the popup: the fields the layer sets; the others keep their
/// saved values.
pub async fn save_user(layer: &ConfigLayer) -> Result<(), chrome::JsFailure> {
    set_local(&items_of(layer)).await
}

fn items_of(layer: &ConfigLayer) -> Value {
    let mut items = serde_json::Map::new();
    for (key, value) in [
        (SERVER_URL, &layer.server_url),
        (BROWSER_NAME, &layer.browser_name),
        (ACCESS_TOKEN, &layer.access_token),
        (PAIRING_CODE, &layer.pairing_code),
    ] {
        if let Some(value) = value {
            items.insert(key.to_owned(), Value::String(value.clone()));
        }
    }
    Value::Object(items)
}

async fn save(items: &Value) {
    if let Err(e) = set_local(items).await {
        crate::chrome::log!("could not write chrome.storage.local: {e}");
    }
}

/// Writes `items` (a JSON object) into `chrome.storage.local`.
async fn set_local(items: &Value) -> Result<(), chrome::JsFailure> {
    chrome::call(chrome::storage_local_set(&chrome::to_js(items)?))
        .await
        .map(|_| ())
}

/// What the bundled `config.json` holds: a configuration layer, and the test suite's switches.
#[derive(Debug, Default)]
pub struct Bundled {
    /// The configuration it sets.
    pub layer: ConfigLayer,
    /// `"checkPageModel": true`: every snapshot of a whole document also walks it afresh and
    /// fails if the kept page model differs (the end-to-end tests run with it; see
    /// js/collector/25-model.js).
    pub check_page_model: bool,
}

/// Reads the bundled `config.json`, if the extension folder has one.
pub async fn load_bundled() -> Bundled {
    let url = chrome::runtime_get_url("config.json");
    let Ok(response) = chrome::call(chrome::fetch(&url)).await else {
        // No file: the normal case for an installed extension.
        return Bundled::default();
    };
    let response: FetchResponse = response.unchecked_into();
    if !response.ok() {
        return Bundled::default();
    }
    let text = match chrome::call(response.text()).await {
        Ok(text) => text.as_string().unwrap_or_default(),
        Err(e) => {
            crate::chrome::log!("could not read the bundled config.json: {e}");
            return Bundled::default();
        }
    };
    match serde_json::from_str::<Items>(&text) {
        Ok(items) => Bundled {
            layer: layer_from(&items),
            check_page_model: items.get(CHECK_PAGE_MODEL) == Some(&Value::Bool(true)),
        },
        Err(e) => {
            crate::chrome::log!("ignoring the bundled config.json: it is not a JSON object ({e})");
            Bundled::default()
        }
    }
}

/// Reads the managed (policy) configuration.
pub async fn load_managed() -> ConfigLayer {
    match chrome::call(chrome::storage_managed_get()).await {
        Ok(value) => layer_from(&chrome::from_js(value).unwrap_or_default()),
        Err(e) => {
            crate::chrome::log!("could not read managed storage: {e}");
            ConfigLayer::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_browser_ids_are_kept_when_the_hub_would_take_them() {
        // The check borrows the hello's rule; a blank name in it would refuse every ID, and a
        // new ID at every start would undo every pairing.
        assert!(is_valid_browser_id("3f2a9c1e-77b0-4c1b-9d2e-0a1b2c3d4e5f"));
        assert!(!is_valid_browser_id(""));
        assert!(!is_valid_browser_id("has space"));
    }

    #[test]
    fn only_string_values_count() {
        let items: Items = serde_json::from_str(
            r#"{"serverUrl": 5, "browserName": "Work", "accessToken": "t.k", "other": "x"}"#,
        )
        .unwrap();
        let layer = layer_from(&items);
        assert_eq!(layer.server_url, None);
        assert_eq!(layer.browser_name.as_deref(), Some("Work"));
        assert_eq!(layer.access_token.as_deref(), Some("t.k"));
    }

    #[test]
    fn only_set_fields_are_saved() {
        let forget = ConfigLayer {
            access_token: Some(String::new()),
            ..ConfigLayer::default()
        };
        assert_eq!(items_of(&forget), json!({"accessToken": ""}));
        let connect = ConfigLayer {
            server_url: Some("ws://h:1".into()),
            browser_name: Some(String::new()),
            ..ConfigLayer::default()
        };
        assert_eq!(
            items_of(&connect),
            json!({"serverUrl": "ws://h:1", "browserName": ""})
        );
    }

    #[test]
    fn browser_ids_follow_the_hub_rule() {
        assert!(is_valid_browser_id("0b6f2c1e-6a1b-4f0e-9b59-0d2d3f1c2a4b"));
        assert!(!is_valid_browser_id(""));
        assert!(!is_valid_browser_id("has space"));
    }
}
