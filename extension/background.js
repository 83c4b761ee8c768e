// tabwire's service worker: the few lines that wake the wasm, where all the logic lives.
//
// Chrome only restarts a stopped MV3 worker for events whose listeners were registered
// synchronously during the script's first run, so every listener is added here at the top
// level, before anything is awaited, and forwards to the wasm once it has loaded. A periodic
// alarm makes Chrome restart a worker that was stopped (it then reconnects to the hub).
// Service workers cannot use top-level await: the wasm is loaded with a promise instead.
import init, * as wasm from './pkg/tabwire_extension.js';

const KEEPALIVE_ALARM = 'tabwire-keepalive';

let loading = null;
function ready() {
  loading ??= init().then(() => {
    wasm.start();
    return wasm;
  });
  return loading;
}

chrome.alarms.onAlarm.addListener((alarm) => {
  ready().then((w) => w.onAlarm(alarm.name));
});

// Only the extension's own pages (the popup) may talk to the worker. The collector runs in
// pages as a content script of this extension (the same sender.id), and a page whose renderer
// was taken over must not be able to read the state or change the Server URL through it: a
// content script's sender.url is the page's URL, never one of the extension's.
const OWN_PAGES = chrome.runtime.getURL('');
chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
  if (sender.id !== chrome.runtime.id) return false;
  // The recorder in a recorded tab's pages (js/collector/80-record.js) sends the person's input
  // as it happens. The tab, the frame and its URL are Chrome's, never the page's words; the
  // worker drops what comes from a tab it is not recording.
  if (!String(sender.url || '').startsWith(OWN_PAGES)) {
    const entry = message && message.tabwireRecorded;
    if (entry && sender.tab && typeof sender.tab.id === 'number' && typeof sender.frameId === 'number') {
      const json = JSON.stringify(entry);
      ready().then((w) => w.onRecorded(sender.tab.id, sender.frameId, String(sender.url || ''), json));
    }
    return false;
  }
  ready()
    .then((w) => w.onPopupMessage(message))
    .then(sendResponse, (error) => sendResponse({ ok: false, error: String(error) }));
  return true; // the answer comes asynchronously
});

chrome.runtime.onStartup.addListener(() => { ready(); });
chrome.runtime.onInstalled.addListener(() => { ready(); });

chrome.alarms.get(KEEPALIVE_ALARM).then((alarm) => {
  if (!alarm) chrome.alarms.create(KEEPALIVE_ALARM, { periodInMinutes: 0.5 });
});

ready().catch((error) => console.error('tabwire: could not load the wasm:', error));
