// Part of the in-page collector's factory (see 00-prelude.js), joined with the other parts of
// js/collector/ in name order when the extension is built. This part learns from the page's
// main world which elements have click listeners (see extension-wasm/src/listeners.rs).

  // The elements the main world named for this call, or null when it was not asked (no
  // debugger session) or did not answer (a navigation since the listing).
  let listenedSet = null;
  // What the page model's stamp adds for this call (see `askListeners`).
  let listenerStamp = '';

  // Asks the main world's answerer, whose event is `name` (the snapshot's `listeners`): it
  // dispatches `name + '!'` on each element with a click listener. Returns what the page
  // model's stamp includes, so walks with other answers are not mixed in one model.
  function askListeners(name) {
    listenedSet = null;
    if (typeof name !== 'string' || !name) return '';
    const found = new Set();
    const collect = (event) => {
      event.stopImmediatePropagation();
      found.add(event.composedPath()[0]);
    };
    window.addEventListener(name + '!', collect, true);
    let answered = false;
    try {
      answered = !window.dispatchEvent(new Event(name, { cancelable: true }));
    } finally {
      window.removeEventListener(name + '!', collect, true);
    }
    if (!answered) return '';
    listenedSet = found;
    return '|listeners';
  }

  // The page model (25-model.js) walks again where an element started or stopped listening
  // since the last call (a listener added or removed touches no attribute or text).
  function touchListened(m) {
    const now = listenedSet || new Set();
    const before = m.listened || new Set();
    for (const el of now) if (!before.has(el)) touch(m, el);
    for (const el of before) if (!now.has(el)) touch(m, el);
    m.listened = now;
  }

  // Table parts are read as row lines, and a listener on a row or cell is mostly delegation.
  const NOT_LISTENED_TAGS = new Set(['TR', 'TD', 'TH', 'CAPTION', 'COLGROUP', 'COL', 'OPTION', 'OPTGROUP']);

  // Whether `el` has a click, mousedown, mouseup, pointerdown or pointerup listener of its own
  // (one on an ancestor does not count) and is one small thing rather than a container that
  // delegates its children's clicks: a listener on an element holding block-level content or
  // more than 12 elements (a list, a panel, a card) is taken for delegation.
  function listened(el) {
    if (listenedSet === null || listenedSet.size === 0 || !listenedSet.has(el) || NOT_LISTENED_TAGS.has(el.tagName)) return false;
    if (el.tagName === 'svg') return true;
    let count = 0;
    for (const inner of el.querySelectorAll('*')) {
      if (++count > 12) return false;
      if (inner.tagName !== 'svg' && inner.closest('svg') !== null) continue;
      const display = getComputedStyle(inner).display;
      if (display !== 'none' && display !== 'contents' && !display.startsWith('inline')) return false;
    }
    return true;
  }
