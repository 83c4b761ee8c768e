// The glue for the clipboard (extension-wasm/src/ops/act/clipboard.rs). A service worker has no
// document, and Chrome lets only an extension's document use the clipboard, through
// execCommand, given the clipboardRead/clipboardWrite permissions (docs/files.md): the worker
// opens tabwire's offscreen document (extension/offscreen.html) for one call, asks it, and
// closes it. Calls run one after another, as there is one offscreen document per extension.

const OFFSCREEN = 'offscreen.html';
let queue = Promise.resolve();

/** Resolves when the person has granted `permission` (optional in the manifest). */
export async function clipboardGranted(permission) {
  return chrome.permissions.contains({ permissions: [permission] });
}

/** How long one call may take before it is given up (and the next may go). */
const CALL_MS = 5000;

/**
 * Resolves to `{text}` (a read, `write` null; refused past `max` characters, which the offscreen
 * document checks before sending anything) or `{}` after writing `write`.
 */
export function clipboard(write, max) {
  const run = queue.then(() => Promise.race([
    inOffscreen(write, max),
    new Promise((_, fail) => setTimeout(() => fail(new Error(`no answer within ${CALL_MS} ms`)), CALL_MS)),
  ]));
  queue = run.catch(() => {});
  return run;
}

async function inOffscreen(write, max) {
  const open = await chrome.runtime.getContexts({ contextTypes: ['OFFSCREEN_DOCUMENT'] });
  if (open.length === 0) {
    await chrome.offscreen.createDocument({
      url: OFFSCREEN,
      reasons: ['CLIPBOARD'],
      justification: 'An agent reads or writes the clipboard, as the person allowed in the popup.',
    });
  }
  try {
    const message = write == null ? { target: 'tabwire-offscreen', op: 'read', max }
      : { target: 'tabwire-offscreen', op: 'write', text: write };
    const answer = await chrome.runtime.sendMessage(message);
    if (!answer) throw new Error('the offscreen document did not answer');
    if (answer.error) throw new Error(answer.error);
    return answer;
  } finally {
    await chrome.offscreen.closeDocument().catch(() => {});
  }
}
