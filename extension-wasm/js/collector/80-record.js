// Part of the in-page collector's factory (see 00-prelude.js): the recorder of a person's
// input (issue 28, `record_actions` and `request_human`; extension-wasm/src/recording.rs).
//
// `record {on}` starts or stops listening in this document. The listeners are the capture-phase
// ones of the window, so they see an event before the page can stop it, and they take only
// trusted events (a person's; the agent's own input is left out by the worker, which knows
// when an agent acts in the tab). Each event is sent at once to the worker with
// chrome.runtime.sendMessage, so nothing is lost when the document goes: what the worker gets
// is a kind, the element as a selector chosen to outlive the document and its line as an
// observation shows it, and the text typed, never a secret field's. The recorder lives in this
// ISOLATED world's global, so a newer collector build replaces it instead of adding a second.

  // Where a click lands: the element a person meant, not the span inside a button.
  const CLICKABLE = 'a,button,input,select,textarea,label,summary,option,[role],[onclick],[tabindex],[contenteditable]';
  // Keys a step names; characters are recorded as the field's text instead. Tab is left out:
  // typing into a field focuses it when replayed.
  const NAMED_KEYS = new Set(['Enter', 'Escape', 'ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight', 'PageUp', 'PageDown', 'Home', 'End', 'Delete', 'Backspace', 'F1', 'F2', 'F3', 'F4', 'F5', 'F6', 'F7', 'F8', 'F9', 'F10', 'F11', 'F12']);
  // Keys that edit a field's text: its `type` step holds the result.
  const EDITING_KEYS = new Set(['Delete', 'Backspace', 'ArrowLeft', 'ArrowRight', 'Home', 'End']);
  const TEST_ID_ATTRIBUTES = ['data-testid', 'data-test-id', 'data-test', 'data-qa', 'data-cy'];
  // A pointer that moved farther than this between press and release dragged.
  const DRAG_PX = 8;
  const PATH_DEPTH = 10;
  // Longer selectors are not kept (the worker refuses them too): a page's 10 MB id is no name.
  const SELECTOR_MAX = 300;
  const KEY_MAX = 20;

  function textEntry(el) {
    if (el.isContentEditable) return true;
    if (el.tagName === 'TEXTAREA') return true;
    return el.tagName === 'INPUT' && !BUTTON_INPUT_TYPES.has(el.type) && el.type !== 'checkbox' && el.type !== 'radio' && el.type !== 'range' && el.type !== 'color' && el.type !== 'hidden';
  }

  // A CSS attribute value, quoted; `null` when it holds a line break (no selector keeps it).
  function quoted(value) {
    if (/[\n\r\f]/.test(value)) return null;
    return `"${value.replace(/["\\]/g, '\\$&')}"`;
  }

  // A selector for `el` that a person would keep: a unique id, test id, name or label, else a
  // short path of tags from the nearest ancestor with a unique id, each checked to match `el`
  // alone in its document (or shadow root) when recorded.
  function selectorOf(el) {
    const root = el.getRootNode();
    const only = (selector) => {
      if (selector.length > SELECTOR_MAX) return false;
      try {
        const found = root.querySelectorAll(selector);
        return found.length === 1 && found[0] === el;
      } catch (e) {
        return false;
      }
    };
    const tag = el.tagName.toLowerCase();
    if (el.id && only(`#${CSS.escape(el.id)}`)) return `#${CSS.escape(el.id)}`;
    for (const attribute of TEST_ID_ATTRIBUTES) {
      const value = el.getAttribute(attribute);
      const q = value && quoted(value);
      if (q && only(`[${attribute}=${q}]`)) return `[${attribute}=${q}]`;
    }
    for (const attribute of ['name', 'aria-label', 'placeholder', 'title']) {
      const value = el.getAttribute(attribute);
      const q = value && quoted(value);
      if (q && only(`${tag}[${attribute}=${q}]`)) return `${tag}[${attribute}=${q}]`;
    }
    let path = '';
    let node = el;
    for (let depth = 0; node && node.nodeType === 1 && depth < PATH_DEPTH; depth++) {
      if (node !== el && node.id) {
        const anchor = `#${CSS.escape(node.id)}`;
        if (root.querySelectorAll(anchor).length === 1) {
          const anchored = `${anchor} > ${path}`;
          if (only(anchored)) return anchored;
        }
      }
      let step = node.tagName.toLowerCase();
      const parent = node.parentElement;
      if (parent) {
        const same = Array.from(parent.children).filter((c) => c.tagName === node.tagName);
        if (same.length > 1) step += `:nth-of-type(${same.indexOf(node) + 1})`;
      }
      path = path ? `${step} > ${path}` : step;
      if (path.length > SELECTOR_MAX) return '';
      if (only(path)) return path;
      node = parent;
    }
    return path;
  }

  // What kind of secret a field holds, or null: the same judgement as snapshots' redaction.
  function secretOf(el) {
    if (!isSecret(el)) return null;
    if (el.type === 'password') return 'password field';
    if (namesSecret(el.getAttribute('autocomplete'), false)) return `${collapse(el.getAttribute('autocomplete'))} field`;
    return 'secret field';
  }

  // The element as a recorded step names it.
  function recorded(el) {
    labelMaps = null;
    pointerTrees = null;
    try {
      const role = roleOf(el, false) || el.tagName.toLowerCase();
      const name = nameOf(el, role) || cap(collapse(textOf(el, true)), NAME_MAX);
      const target = { key: keyOf(el), selector: selectorOf(el), line: cap(name ? `${role} "${cap(name, NAME_MAX)}"` : role, NAME_MAX + 40) };
      const secret = el.tagName === 'INPUT' ? secretOf(el) : null;
      if (secret) target.secret = secret;
      return target;
    } finally {
      labelMaps = null;
      pointerTrees = null;
    }
  }

  function origin(event) {
    const path = event.composedPath();
    const first = path.length ? path[0] : event.target;
    return first && first.nodeType === 1 ? first : (first && first.parentElement) || null;
  }

  function startRecorder() {
    const send = (entry, event) => {
      entry.doc = ids.token;
      // When it happened, in ms since the epoch, by the clock the worker reads too: the worker
      // tells the agent's input by it.
      entry.at = Date.now() - (performance.now() - event.timeStamp);
      try {
        const sent = chrome.runtime.sendMessage({ tabwireRecorded: entry });
        if (sent && sent.catch) sent.catch(() => {});
      } catch (e) {
        // The extension was reloaded: this recorder is an orphan, and stops.
        stop();
      }
    };
    let pressed = null;
    let dragged = null;
    let skipClick = false;
    let labelled = null;
    // Enter in a form clicks its submit button (a click with no pointer, detail 0): the key
    // is the step, the click its effect.
    let enterAt = -Infinity;
    // The element a person's edit is about to change (a trusted `beforeinput`: keys, a paste,
    // a drop, an input method). A page's own `execCommand` changes a field with a trusted
    // `input` but no `beforeinput`: that is not the person's typing.
    let editing = null;
    let editingAt = -Infinity;
    // The field typed into last and how the recorder named it: named once per field, not at
    // every key.
    let typed = null;
    const listeners = {
      pointerdown(event) {
        if (!event.isTrusted || event.button !== 0) return;
        const el = origin(event);
        pressed = el ? { el, x: event.clientX, y: event.clientY } : null;
      },
      pointerup(event) {
        const down = pressed;
        pressed = null;
        if (!event.isTrusted || !down) return;
        if (Math.hypot(event.clientX - down.x, event.clientY - down.y) <= DRAG_PX) return;
        const over = document.elementFromPoint(event.clientX, event.clientY);
        if (!over || over === down.el || down.el.contains(over)) return;
        skipClick = true;
        send({ kind: 'drag', target: recorded(down.el), to: recorded(over) }, event);
      },
      dragstart(event) {
        if (!event.isTrusted) return;
        const el = origin(event);
        dragged = el ? el.closest('[draggable="true"]') || el : null;
        pressed = null;
      },
      drop(event) {
        const from = dragged;
        dragged = null;
        const to = origin(event);
        if (!event.isTrusted || !from || !to) return;
        skipClick = true;
        send({ kind: 'drag', target: recorded(from), to: recorded(to) }, event);
      },
      click(event) {
        if (!event.isTrusted) return;
        if (skipClick) {
          skipClick = false;
          return;
        }
        if (event.detail === 0 && event.timeStamp - enterAt < 1000) return;
        const hit = origin(event);
        const el = hit && (hit.closest(CLICKABLE) || hit);
        if (!el || textEntry(el) || el.tagName === 'SELECT' || el.tagName === 'OPTION') return;
        // A click on a label clicks its control too: one step.
        if (labelled && labelled === el) {
          labelled = null;
          return;
        }
        labelled = el.tagName === 'LABEL' ? el.control : null;
        send({ kind: 'click', target: recorded(el), button: event.button, count: event.detail }, event);
      },
      beforeinput(event) {
        if (!event.isTrusted) return;
        editing = origin(event);
        editingAt = event.timeStamp;
      },
      input(event) {
        if (!event.isTrusted) return;
        const el = origin(event);
        if (!el || !textEntry(el)) return;
        const edited = editing === el && event.timeStamp - editingAt < 1000;
        let autofilled = false;
        try {
          autofilled = el.matches(':autofill');
        } catch (e) {
          autofilled = false;
        }
        if (!edited && !autofilled) return;
        if (!typed || typed.el !== el) typed = { el, target: recorded(el) };
        const target = typed.target;
        const entry = { kind: 'type', target };
        if (!target.secret) entry.text = cap(el.isContentEditable ? el.innerText : el.value, TYPED_VALUE_MAX);
        send(entry, event);
      },
      change(event) {
        if (!event.isTrusted) return;
        const el = origin(event);
        if (!el) return;
        if (el.tagName === 'SELECT') {
          send({ kind: 'select', target: recorded(el), value: cap(el.value, VALUE_MAX * 3) }, event);
        } else if (el.tagName === 'INPUT' && el.type === 'file') {
          const files = Array.from(el.files || []).slice(0, 20).map((f) => cap(f.name, NAME_MAX));
          send({ kind: 'upload', target: recorded(el), files }, event);
        }
      },
      keydown(event) {
        if (!event.isTrusted || event.isComposing) return;
        const modifiers = (event.altKey ? 1 : 0) | (event.ctrlKey ? 2 : 0) | (event.metaKey ? 4 : 0) | (event.shiftKey ? 8 : 0);
        const chord = (modifiers & 7) !== 0;
        if (!chord && !NAMED_KEYS.has(event.key)) return;
        if (['Shift', 'Control', 'Alt', 'Meta', 'AltGraph'].includes(event.key) || event.key.length > KEY_MAX) return;
        const el = origin(event);
        if (!chord && el && textEntry(el) && EDITING_KEYS.has(event.key)) return;
        // A character typed with AltGr (Ctrl+Alt) or Option (Alt) is text, not a shortcut; in a
        // secret field every character is the secret's.
        const character = [...event.key].length === 1;
        if (character && (event.getModifierState('AltGraph') || event.altKey || (el && el.tagName === 'INPUT' && secretOf(el)))) return;
        if (event.key === 'Enter') enterAt = event.timeStamp;
        const entry = { kind: 'key', key: event.key, modifiers };
        if (el && el !== document.body && el !== document.documentElement) entry.target = recorded(el);
        send(entry, event);
      },
    };
    for (const [type, listener] of Object.entries(listeners)) window.addEventListener(type, listener, true);
    function stop() {
      for (const [type, listener] of Object.entries(listeners)) window.removeEventListener(type, listener, true);
      if (globalThis.__tabwireRecorder === recorder) globalThis.__tabwireRecorder = null;
    }
    const recorder = { stop };
    return recorder;
  }

  // `record {on}`: listens in this document from now on, or stops.
  function record(args) {
    const prior = globalThis.__tabwireRecorder;
    if (prior) prior.stop();
    if (args.on) globalThis.__tabwireRecorder = startRecorder();
    return ok(true);
  }
