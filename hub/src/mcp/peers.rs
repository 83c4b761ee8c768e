//! Listing and selecting peers: `list_browsers`/`select_browser` and
//! `list_devices`/`select_device`, written once over [`PeerKind`].

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::envelope::{Rendering, ToolError, ToolOutput, quote_if_spaced};
use super::routing::ToolContext;
use crate::accounts::Registered;

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {}

pub const LIST_BROWSERS: &str = "Browsers known to this hub: browserId, name, connected, selected.";
pub const LIST_DEVICES: &str = "Devices known to this hub: deviceId, name, model, connected (or \
why not), selected.";

/// `list_*`: every peer of the kind known to the caller's account, and which is selected.
pub async fn list<K: Registered>(
    ctx: &ToolContext,
    _args: ListArgs,
) -> Result<ToolOutput, ToolError> {
    let selected = ctx.session.selected::<K>();
    let peers = K::registry(&ctx.account).list();
    let mut lines = Vec::new();
    let mut data = Vec::new();
    for peer in &peers {
        let is_selected = selected.as_deref() == Some(peer.id());
        // A device's name is the phone's words (`PeerKind::NAMES_FROM_PEER`): fenced.
        let mut line = Rendering::hub(format!("{}={} name=", K::ID_ARG, peer.id()));
        line.push_as(&quote_if_spaced(peer.name()), K::NAMES_FROM_PEER);
        line.push(if peer.connected {
            " connected"
        } else {
            " disconnected"
        });
        // Why it went away, in its backend's words.
        if let Some(reason) = &peer.gone {
            line.push(" (");
            line.push_page(reason);
            line.push(")");
        }
        if is_selected {
            line.push(" selected");
        }
        lines.push(line);
        let mut entry = serde_json::Map::new();
        entry.insert(K::ID_ARG.into(), json!(peer.id()));
        entry.insert("name".into(), json!(peer.name()));
        entry.insert("connected".into(), json!(peer.connected));
        entry.insert("selected".into(), json!(is_selected));
        entry.extend(K::facts(&peer.hello));
        if let Some(since) = peer.connected_for {
            entry.insert("connectedForSecs".into(), json!(since.as_secs()));
        }
        if let Some(reason) = &peer.gone {
            entry.insert("reason".into(), json!(reason));
        }
        data.push(Value::Object(entry));
    }
    // A selection restored after a hub restart may name a peer that has not reconnected yet;
    // it is still this session's and is listed as such.
    if let Some(selected) = selected.as_deref()
        && !peers.iter().any(|p| p.id() == selected)
    {
        lines.push(Rendering::hub(format!(
            "{}={selected} (not connected since the hub started) disconnected selected",
            K::ID_ARG
        )));
        data.push(json!({
            K::ID_ARG: selected, "name": null, "connected": false, "selected": true,
        }));
    }
    if data.is_empty() {
        lines.push(Rendering::hub(format!(
            "No {} has connected. {}.",
            K::NOUN,
            K::connect_hint(&ctx.hub.reach())
        )));
    }
    let mut result = serde_json::Map::new();
    result.insert(format!("{}s", K::NOUN), Value::Array(data));
    Ok(ToolOutput::new(
        Value::Object(result),
        Rendering::lines(lines),
    ))
}

pub const SELECT_BROWSER: &str = "Route this session's browser tools to one browser.";
pub const SELECT_DEVICE: &str = "Route this session's device tools to one device.";

/// `select_*`: routes the session's tools of the kind to one connected peer.
pub async fn select<K: Registered>(
    ctx: &ToolContext,
    args: K::SelectArgs,
) -> Result<ToolOutput, ToolError> {
    let id: String = args.into();
    let noun = K::NOUN;
    let Some(peer) = K::registry(&ctx.account).get(&id) else {
        return Err(ToolError::new(
            K::NOT_FOUND,
            format!(
                "no {noun} with ID {id} is known to this hub; call {}",
                K::LIST_TOOL
            ),
        ));
    };
    if !peer.connected {
        let mut error = ToolError::new(
            K::DISCONNECTED,
            format!(
                "{noun} {} ({}) is not connected; select a connected {noun} or wait for it to \
                 reconnect",
                quote_if_spaced(peer.name()),
                peer.id()
            ),
        );
        error.quotes_page = K::NAMES_FROM_PEER;
        return Err(error);
    }
    ctx.session.select::<K>(peer.id());
    tracing::info!(session = ctx.session.id(), kind = noun, peer = %peer.id(), "selected");
    let mut text = Rendering::hub("Selected ");
    text.push_as(&quote_if_spaced(peer.name()), K::NAMES_FROM_PEER);
    text.push(&format!(" ({}).", peer.id()));
    Ok(ToolOutput::new(
        json!({K::ID_ARG: peer.id(), "name": peer.name()}),
        text,
    ))
}
