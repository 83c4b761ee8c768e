//! The service worker's shared state and its start-up sequence.
//!
//! Everything the popup can see, and everything the connection loop and request tasks share,
//! lives in one [`Worker`] value in a thread-local (wasm in a service worker is single
//! threaded). [`with`] borrows it for a synchronous moment; no borrow is ever held across an
//! `await`, so callbacks and tasks cannot trip over each other.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::spawn_local;

use crate::calllog::CallLog;
use crate::chrome;
use crate::config::{ConfigLayer, Layers, store};
use crate::connection::{self, Control, Status};
use crate::mailbox::Mailbox;
use crate::{debugger, ops, refs};

/// The worker's shared state.
pub struct Worker {
    /// The configuration sources as last read.
    pub layers: Layers,
    /// Set once local storage and the bundled file have been read; before that the popup
    /// shows "connecting" rather than a misleading "not configured".
    pub config_loaded: bool,
    /// This profile's stable browser ID, once read from storage.
    pub browser_id: Option<String>,
    /// The connection's state.
    pub status: Status,
    /// The last connection problem, for the popup.
    pub last_error: Option<String>,
    /// The WebSocket URL being dialled or connected to.
    pub endpoint: Option<String>,
    /// The hub's version, from its welcome.
    pub hub_version: Option<String>,
    /// Recent calls, for the popup.
    pub calls: CallLog,
    /// Nudges for the connection loop.
    pub control: Mailbox<Control>,
    /// Numbers connections so request tasks can tell whether theirs is still live.
    pub generation_counter: u64,
    /// The generation of the welcomed connection, or 0 when there is none.
    pub live_generation: u64,
    started: bool,
}

thread_local! {
    static WORKER: RefCell<Worker> = RefCell::new(Worker {
        layers: Layers::default(),
        config_loaded: false,
        browser_id: None,
        status: Status::Connecting,
        last_error: None,
        endpoint: None,
        hub_version: None,
        calls: CallLog::default(),
        control: Mailbox::new(),
        generation_counter: 0,
        live_generation: 0,
        started: false,
    });
}

/// Runs `f` with the worker state borrowed.
pub fn with<R>(f: impl FnOnce(&mut Worker) -> R) -> R {
    WORKER.with(|worker| f(&mut worker.borrow_mut()))
}

/// Starts the worker: listeners, configuration, the connection loop. Safe to call again (the
/// service worker's JS calls it on every wake-up path); only the first call does anything.
pub fn start() {
    if with(|w| std::mem::replace(&mut w.started, true)) {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&JsValue::from_str(&format!("tabwire: bug: {info}")));
    }));
    debugger::install_listeners();
    crate::activity::install_listeners();
    install_tab_listener();
    install_storage_listener();
    crate::log!("starting (extension {})", chrome::extension_version());
    spawn_local(async {
        let local = store::load_local().await;
        let bundled = store::load_bundled().await;
        refs::store::load_all().await;
        with(|w| {
            w.layers.user = local.user;
            w.layers.bundled = bundled;
            w.browser_id = Some(local.browser_id);
            w.config_loaded = true;
        });
        spawn_local(connection::run());
        // Managed storage can be slow on the first start; connect without it and reconnect
        // if it changes the target.
        reload_managed().await;
    });
}

/// The keep-alive alarm fired. Its main job is done by merely waking the worker (which calls
/// [`start`]); on a live worker it cuts a reconnect backoff short.
pub fn on_alarm(name: &str) {
    start();
    if name == crate::KEEPALIVE_ALARM {
        with(|w| w.control.post(Control::Alarm));
    }
}

/// Replaces one configuration layer, nudging the connection if its target changed. Returns
/// whether it did.
pub fn set_layer(update: impl FnOnce(&mut Layers)) -> bool {
    let changed = with(|w| {
        let before = w.layers.target();
        update(&mut w.layers);
        w.layers.target() != before
    });
    if changed {
        with(|w| w.control.post(Control::ConfigChanged));
    }
    changed
}

async fn reload_managed() {
    let managed: ConfigLayer = store::load_managed().await;
    set_layer(|layers| layers.managed = managed);
}

fn install_tab_listener() {
    let on_removed = Closure::<dyn FnMut(JsValue, JsValue)>::new(|id: JsValue, _info: JsValue| {
        if let Some(id) = id.as_f64() {
            ops::forget_tab_state(id as u32);
        }
    });
    chrome::tabs_on_removed_add(on_removed.as_ref().unchecked_ref());
    // Lives as long as the worker.
    on_removed.forget();
}

fn install_storage_listener() {
    let on_changed =
        Closure::<dyn FnMut(JsValue, JsValue)>::new(|_changes: JsValue, area: JsValue| {
            if area.as_string().as_deref() == Some("managed") {
                crate::log!("managed configuration changed");
                spawn_local(reload_managed());
            }
        });
    chrome::storage_on_changed(on_changed.as_ref().unchecked_ref());
    // Lives as long as the worker.
    on_changed.forget();
}
