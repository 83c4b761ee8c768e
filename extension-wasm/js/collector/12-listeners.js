// Part of the in-page collector's factory (see 00-prelude.js), joined with the other parts of
// js/collector/ in name order when the extension is built. This part reads which elements have
// click listeners of their own, as the debugger listed them (extension-wasm/src/listeners.rs).
//
// The listing's state is put into this isolated world's global, `__tabwireListened`, by one
// `Runtime.callFunctionOn` in this world (nothing runs in the page's world): `set`, a WeakSet of
// the elements; `list`, the same elements, to tell what changed between listings; `generation`,
// counted per listing. It lives as long as the document, across calls and idle fills; without a
// debugger session there is none and nothing is `listened`.

  function listenedState() {
    const state = globalThis.__tabwireListened;
    return state && typeof state === 'object' && state.set instanceof WeakSet ? state : null;
  }

  // The page model (25-model.js) walks again where an element started or stopped listening
  // since its last call: a listener added or removed touches no attribute or text.
  function touchListened(m) {
    const state = listenedState();
    const generation = state ? state.generation : 0;
    if (m.listenedGeneration === generation) return;
    const now = state ? state.list : [];
    const before = m.listenedList || [];
    const was = new Set(before);
    const is = new Set(now);
    for (const el of now) if (!was.has(el)) touch(m, el);
    for (const el of before) if (!is.has(el)) touch(m, el);
    m.listenedList = now;
    m.listenedGeneration = generation;
  }

  // Table parts are read as row lines, and a listener on a row or cell is mostly delegation.
  const NOT_LISTENED_TAGS = new Set(['TR', 'TD', 'TH', 'CAPTION', 'COLGROUP', 'COL', 'OPTION', 'OPTGROUP', 'LI']);
  // The most elements an element with a listener may hold and still be one small thing.
  const LISTENED_MOST_INSIDE = 12;

  // Whether `el` has a click, mousedown, mouseup, pointerdown or pointerup listener of its own
  // (one on an ancestor does not count: that is delegation) and is one small thing rather than
  // a container that delegates its children's clicks. A listener on an element holding
  // block-level content or more than 12 elements (a list, a panel, a card, a framework's root
  // that takes every click of the page) is taken for delegation; html, body and the landmark,
  // list and table tags are never clickable (NOT_OPERABLE_TAGS in 10-semantics.js).
  function listened(el) {
    const state = listenedState();
    if (state === null || !state.set.has(el) || NOT_LISTENED_TAGS.has(el.tagName)) return false;
    if (el.tagName === 'svg') return true;
    let count = 0;
    for (const inner of el.querySelectorAll('*')) {
      if (++count > LISTENED_MOST_INSIDE) return false;
      if (inner.tagName !== 'svg' && inner.closest('svg') !== null) continue;
      const display = getComputedStyle(inner).display;
      if (display !== 'none' && display !== 'contents' && !display.startsWith('inline')) return false;
    }
    return true;
  }
