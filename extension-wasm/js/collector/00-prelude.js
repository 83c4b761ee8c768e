// The in-page collector of tabwire: what runs inside a web page.
//
// It is written as parts, js/collector/*.js, joined in name order into one file when the
// extension is built (extension/build.sh; the extension crate's build script joins them the
// same way for the build hash). This first part opens the factory and holds what every part
// uses: limits, the per-call state, element identity and string helpers; 90-dispatch.js closes
// it with the table of commands. Each command is a function of its arguments object.
//
// The joined file is injected with chrome.scripting.executeScript({files}) into a frame's
// ISOLATED world (the extension's private JS world: the page cannot see or tamper with its
// globals), once per document; it only defines the factory below. `tabwireCall` in page.js then
// builds the implementation and keeps it in the same world, so later calls send a few hundred
// bytes instead of this whole file, and run code V8 has already optimised. It is plain JS, not
// wasm, because pages with a strict CSP cannot run wasm at all.
//
// It gathers raw facts (role, name, states, value, box, identity key and anchors, group) in one
// DOM walk and performs the DOM side of actions; the wasm decides refs, wording, budgets and
// deltas. It answers with a JSON string, either {"value": …} or {"error": {"code": "STALE_REF",
// "message": …}}, because one string crosses into wasm far faster than a structured object
// (see PLATFORM.md).
//
// Privacy rule kept here, at the source: the value of a secret field (a password, PIN or
// one-time code field, as `isSecret` in 10-semantics.js decides) never leaves the page; it is
// replaced by the protocol's REDACTED marker, which the wasm passes in as `args.redacted`.

globalThis.__tabwireFactory = function collector() {
  const NAME_MAX = 100;
  // Page-controlled strings outside the node-text budget are capped too, so a page cannot
  // flood the agent's context with a megabyte data: URL or title.
  const HREF_MAX = 500;
  const URL_MAX = 2000;
  const TITLE_MAX = 300;
  const VALUE_MAX = 100;
  const TYPED_VALUE_MAX = 2000;
  const ANCHOR_MAX = 200;
  const PROSE_MAX = 300;
  const OPTIONS_MAX = 30;
  const SKIP_TAGS = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'TITLE', 'OBJECT', 'EMBED', 'CANVAS']);
  const PROSE_TAGS = new Set(['P', 'LI', 'TD', 'TH', 'DT', 'DD', 'LABEL', 'CAPTION', 'FIGCAPTION', 'BLOCKQUOTE', 'PRE', 'LEGEND']);
  const INTERACTIVE_ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'switch', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'option', 'textbox', 'searchbox', 'combobox', 'listbox', 'slider', 'spinbutton', 'treeitem']);
  // Roles whose accessible name comes from their content; their text is not repeated as prose.
  const NAME_FROM_CONTENT = new Set(['button', 'link', 'checkbox', 'radio', 'switch', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'option', 'treeitem', 'heading', 'status', 'alert', 'cell', 'gridcell', 'columnheader', 'rowheader', 'tooltip']);
  const CELL_ROLES = new Set(['cell', 'gridcell', 'columnheader', 'rowheader']);
  // Roles whose nodes a snapshot shows inside a boundary: a line for the container, and its
  // nodes indented one step under it (a listbox is a control with a line of its own already).
  const CONTAINER_ROLES = new Set(['dialog', 'alertdialog', 'menu', 'grid', 'treegrid', 'tree', 'form']);
  // What opens over a page after an action, which an observation always shows (a select's own
  // listbox is drawn by the browser and is not one).
  const POPUP_ROLES = new Set(['listbox', 'menu', 'dialog', 'alertdialog', 'tooltip', 'alert']);
  const TEXT_INPUT_TYPES = new Set(['text', 'search', 'email', 'url', 'tel', 'password', 'number']);
  const BUTTON_INPUT_TYPES = new Set(['button', 'submit', 'reset', 'image', 'file']);

  // Set by `run` before each command runs (calls never overlap: each runs to the end): the
  // protocol's redaction marker, which the wasm passes in so the protocol crate stays the one
  // source of it.
  let REDACTED = '';

  // Element identity for the document's life, in this isolated world's global: the same
  // element always gets the same key; keys are never reused. `token` tells documents apart.
  const ids = globalThis.__tabwire || (globalThis.__tabwire = {
    token: Math.random().toString(36).slice(2) + Date.now().toString(36),
    keys: new WeakMap(),
    byKey: new Map(),
    next: 1,
  });

  function keyOf(el) {
    let key = ids.keys.get(el);
    if (key === undefined) {
      key = ids.next++;
      ids.keys.set(el, key);
      ids.byKey.set(key, new WeakRef(el));
    }
    return key;
  }

  function elementByKey(key) {
    const ref = ids.byKey.get(key);
    const el = ref && ref.deref();
    if (!el) ids.byKey.delete(key);
    return el || null;
  }

  const WORD = /\S/;
  // Page text on one line, without the private-use characters that mark inline refs (see
  // 10-semantics.js), so no page string can carry a marker into a line. `oneLine` is for text
  // tabwire has put markers into itself, from pieces already cleaned.
  const collapse = (s) => String(s == null ? '' : s).replace(/[\uE000-\uE002]/g, '').replace(/\s+/g, ' ').trim();
  const oneLine = (s) => s.replace(/\s+/g, ' ').trim();
  const cap = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);
  const ok = (value) => ({ value });
  const fail = (code, message) => ({ error: { code, message } });
