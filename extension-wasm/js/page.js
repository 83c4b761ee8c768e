// The glue between the wasm and the in-page collector (collector.js, joined from
// js/collector/ into pkg/ by extension/build.sh).
//
// Every page-side step injects `tabwireCall`, a few lines, into one frame's ISOLATED world. It
// runs the collector's implementation kept in that world if it is the current build; if it is
// missing (a new document) or stale (the extension was updated while the page stayed open), it
// answers `false`, and the caller injects collector.js once and calls again with `install`.
// Sending the 45 KB collector on every call cost several milliseconds per snapshot.

const COLLECTOR_FILE = 'pkg/collector.js';

/**
 * Runs in the page. `build` names the collector the wasm expects; `install` says collector.js
 * was just injected into this world, so its factory is that build.
 */
function tabwireCall(build, install, argsJson) {
  let impl = globalThis.__tabwireImpl;
  if (install && typeof globalThis.__tabwireFactory === 'function') {
    impl = globalThis.__tabwireImpl = { build, run: globalThis.__tabwireFactory() };
  }
  if (!impl || impl.build !== build) return false;
  return impl.run(argsJson);
}

async function call(tabId, frameIds, build, install, argsJson) {
  return (await chrome.scripting.executeScript({
    target: { tabId, frameIds: Array.from(frameIds) },
    world: 'ISOLATED',
    func: tabwireCall,
    args: [build, install, argsJson],
  })) || [];
}

async function installIn(tabId, frameIds) {
  await chrome.scripting.executeScript({
    target: { tabId, frameIds: Array.from(frameIds) },
    world: 'ISOLATED',
    files: [COLLECTOR_FILE],
  });
}

// The collector answers {json, href}: its JSON answer, and the URL of the document it ran in.
const answer = (injection) => {
  const reply = injection.result;
  const ok = reply !== null && typeof reply === 'object' && typeof reply.json === 'string';
  return {
    frameId: injection.frameId || 0,
    result: ok ? reply.json : null,
    documentId: injection.documentId || '',
    href: ok && typeof reply.href === 'string' ? reply.href : null,
  };
};

/**
 * Runs the collector's command (`argsJson` names it) in several frames of the tab at once.
 * Resolves to [{frameId, result: JSON string or null, documentId, href}] in no particular order.
 */
export async function runInFrames(tabId, frameIds, build, argsJson) {
  const first = await call(tabId, frameIds, build, false, argsJson);
  const missing = first.filter((i) => i.result === false).map((i) => i.frameId || 0);
  if (missing.length === 0) return first.map(answer);
  try {
    await installIn(tabId, missing);
  } catch (e) {
    // A frame that went away meanwhile: report the others.
    return first.filter((i) => i.result !== false).map(answer);
  }
  const again = await call(tabId, missing, build, true, argsJson);
  return first.filter((i) => i.result !== false).concat(again).map(answer);
}

/**
 * Runs the collector's command (`argsJson` names it) in frame `frameId` (0: the top document)
 * of the tab.
 * Resolves to {result: JSON string or null, documentId, frameId, href: the document's URL or
 * null}; rejects with Chrome's error
 * when the frame cannot be scripted (or no longer exists).
 */
export async function runInPage(tabId, frameId, build, argsJson) {
  let injection = (await call(tabId, [frameId], build, false, argsJson))[0];
  if (injection && injection.result === false) {
    await installIn(tabId, [frameId]);
    injection = (await call(tabId, [frameId], build, true, argsJson))[0];
  }
  return answer(injection || {});
}

/**
 * Runs in the page: keeps one chunk of an upload's bytes (base64) in this ISOLATED world until
 * the collector's `setFiles` builds the files (js/collector/65-files.js). Uploads left behind
 * by a call that failed midway are dropped after two minutes.
 */
function keepChunk(key, file, offset, data) {
  const uploads = globalThis.__tabwireUploads || (globalThis.__tabwireUploads = new Map());
  const now = Date.now();
  let held = 0;
  for (const [other, kept] of uploads) {
    if (now - kept.touched > 120000) uploads.delete(other);
    else for (const parts of kept.files) for (const part of parts || []) held += part.bytes.length;
  }
  // What one document holds at once, as the extension bounds what it keeps (MAX_KEPT_BYTES).
  if (held + data.length * 0.75 > 128 * 1024 * 1024) {
    throw new Error('this page already holds 128 MiB of uploads not yet set');
  }
  let bytes;
  if (typeof Uint8Array.fromBase64 === 'function') {
    bytes = Uint8Array.fromBase64(data);
  } else {
    const text = atob(data);
    bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  }
  const kept = uploads.get(key) || { files: [], touched: now };
  kept.touched = now;
  (kept.files[file] || (kept.files[file] = [])).push({ offset, bytes });
  uploads.set(key, kept);
  return true;
}

/**
 * Runs in the page: forgets upload `key` and disarms the chooser listener of
 * js/collector/65-files.js, however the upload ended.
 */
function dropChunks(key) {
  if (globalThis.__tabwireUploads) globalThis.__tabwireUploads.delete(key);
  const chooser = globalThis.__tabwireChooser;
  if (chooser) {
    window.removeEventListener('click', chooser.listener, true);
    clearTimeout(chooser.timer);
    globalThis.__tabwireChooser = null;
  }
}

/** Forgets upload `key` in frame `frameId`'s ISOLATED world (see `dropChunks`). */
export async function dropUpload(tabId, frameId, key) {
  await chrome.scripting.executeScript({
    target: { tabId, frameIds: [frameId] },
    world: 'ISOLATED',
    func: dropChunks,
    args: [key],
  });
}

/** Puts one chunk of upload `key` into frame `frameId`'s ISOLATED world (see `keepChunk`). */
export async function keepInPage(tabId, frameId, key, file, offset, data) {
  await chrome.scripting.executeScript({
    target: { tabId, frameIds: [frameId] },
    world: 'ISOLATED',
    func: keepChunk,
    args: [key, file, offset, data],
  });
}

/**
 * Resolves once the tab's top document has run an animation frame and the tasks queued by its
 * callbacks (a framework's render after a hover), or after 100 ms in a tab that draws no
 * frames. It runs in the ISOLATED world, whose timers the page cannot replace. A click waits
 * for it between the mouse's move and its press, as a hand rests there for a moment.
 */
export async function nextFrame(tabId) {
  await chrome.scripting.executeScript({
    target: { tabId, frameIds: [0] },
    world: 'ISOLATED',
    func: () => new Promise((resolve) => {
      const limit = setTimeout(resolve, 100);
      requestAnimationFrame(() => setTimeout(() => {
        clearTimeout(limit);
        resolve();
      }, 0));
    }),
  });
}
