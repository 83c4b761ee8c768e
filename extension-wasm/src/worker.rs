//! The service worker's start-up, and the one place that wires the modules together.
//!
//! Everything below this module knows only what it depends on. Here the debugger's
//! subscribers are registered (request counting, network and console capture), the listeners
//! are installed, the configuration is read into the connection's state, the connection loop
//! starts, a closed tab's state is torn down in every module that keeps some, and a tab's
//! group changes reach the leases.
//!
//! Wasm in a service worker is single threaded: state lives in each module's thread-local, and
//! no borrow is ever held across an `await`.

use std::cell::Cell;

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::spawn_local;

use crate::config::{ConfigLayer, store};
use crate::ops::capture;
use crate::{activity, chrome, connection, debugger, leases, refs};

/// The name of the periodic alarm `background.js` creates so that Chrome restarts a stopped
/// service worker (which then reconnects).
pub const KEEPALIVE_ALARM: &str = "tabwire-keepalive";

thread_local! {
    static STARTED: Cell<bool> = const { Cell::new(false) };
}

/// Starts the worker: subscribers, listeners, configuration, the connection loop. Safe to call
/// again (the service worker's JS calls it on every wake-up path); only the first call does
/// anything.
pub fn start() {
    if STARTED.with(|started| started.replace(true)) {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&JsValue::from_str(&format!("tabwire: bug: {info}")));
    }));
    wire_debugger();
    debugger::install_listeners();
    activity::install_listeners();
    crate::downloads::install_listeners();
    install_tab_listener();
    install_storage_listener();
    crate::approvals::install_listener();
    crate::recording::install_listeners();
    crate::chrome::log!("starting (extension {})", chrome::extension_version());
    spawn_local(store::restrict_local_storage());
    spawn_local(leases::ungroup_leftovers());
    spawn_local(async {
        let local = store::load_local().await;
        let bundled = store::load_bundled().await;
        if bundled.check_page_model {
            crate::page::check_page_model();
        }
        refs::store::load_all().await;
        crate::policy::load_owner().await;
        connection::with(|state| {
            state.layers.user = local.user;
            state.layers.bundled = bundled.layer;
            state.browser_id = Some(local.browser_id);
            state.pairing_key = local.pairing_key;
            state.config_loaded = true;
        });
        spawn_local(connection::run());
        // Managed storage can be slow on the first start; connect without it and reconnect
        // if it changes the target.
        reload_managed().await;
    });
}

/// What listens to the debugger: request counting for network-idle waits, and network and
/// console capture, which also bring their modes back after a reattach.
fn wire_debugger() {
    debugger::on_event(activity::on_debugger_event);
    debugger::on_event(capture::on_event);
    debugger::on_event(crate::downloads::on_debugger_event);
    debugger::on_event(crate::recording::on_debugger_event);
    debugger::on_attached(|tab| Box::pin(capture::restore(tab)));
    debugger::on_forgotten(activity::forget_requests);
    debugger::on_forgotten(capture::detached);
}

/// The keep-alive alarm fired. Its main job is done by merely waking the worker (which calls
/// [`start`]); on a live worker it cuts a reconnect backoff short.
pub fn on_alarm(name: &str) {
    start();
    if name == KEEPALIVE_ALARM {
        connection::nudge(connection::Control::Alarm);
    }
}

async fn reload_managed() {
    crate::policy::load_managed().await;
    let managed: ConfigLayer = store::load_managed().await;
    connection::reconfigure(|layers| layers.managed = managed);
}

/// Forgets everything kept about a closed tab: its refs (live and saved), the debugger's
/// session, its activity, its capture buffers and its lease.
fn forget_tab(id: tabwire_protocol::TabId) {
    leases::forget(id);
    refs::with_tables(|tables| tables.forget_tab(id));
    refs::store::forget(id);
    debugger::forget(id);
    activity::forget(id);
    capture::forget(id);
    crate::recording::forget(id);
}

fn install_tab_listener() {
    let on_removed = Closure::<dyn FnMut(JsValue, JsValue)>::new(|id: JsValue, _info: JsValue| {
        if let Some(id) = id.as_f64() {
            forget_tab(id as u32);
        }
    });
    chrome::tabs_on_removed_add(on_removed.as_ref().unchecked_ref());
    // Lives as long as the worker.
    on_removed.forget();
    // A tab moved into or out of a tab group: perhaps the person taking a leased tab back.
    let on_updated = Closure::<dyn FnMut(JsValue, JsValue, JsValue)>::new(
        |id: JsValue, change: JsValue, _tab: JsValue| {
            let group = js_sys::Reflect::get(&change, &JsValue::from_str("groupId"))
                .ok()
                .and_then(|group| group.as_f64());
            if let (Some(id), Some(group)) = (id.as_f64(), group) {
                leases::group_changed(id as u32, group as i64);
            }
        },
    );
    chrome::tabs_on_updated_add(on_updated.as_ref().unchecked_ref());
    // Lives as long as the worker.
    on_updated.forget();
    // A tab opened from another: perhaps from a leased tab, whose holder then holds it too.
    let on_created = Closure::<dyn FnMut(JsValue)>::new(|tab: JsValue| {
        let number = |field: &str| {
            js_sys::Reflect::get(&tab, &JsValue::from_str(field))
                .ok()
                .and_then(|value| value.as_f64())
        };
        if let (Some(id), Some(opener)) = (number("id"), number("openerTabId")) {
            leases::tab_opened(id as u32, opener as u32);
        }
    });
    chrome::tabs_on_created_add(on_created.as_ref().unchecked_ref());
    // Lives as long as the worker.
    on_created.forget();
}

fn install_storage_listener() {
    let on_changed =
        Closure::<dyn FnMut(JsValue, JsValue)>::new(|_changes: JsValue, area: JsValue| {
            if area.as_string().as_deref() == Some("managed") {
                crate::chrome::log!("managed configuration changed");
                spawn_local(reload_managed());
            }
        });
    chrome::storage_on_changed(on_changed.as_ref().unchecked_ref());
    // Lives as long as the worker.
    on_changed.forget();
}
