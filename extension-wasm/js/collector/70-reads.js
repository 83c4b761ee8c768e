// Part of the in-page collector's factory (see 00-prelude.js), joined with the other parts of
// js/collector/ in name order when the extension is built. This part reads without changing the
// page: text and selector checks for waits, the selection, localStorage, an element's box,
// content.

  // Whitespace is collapsed on both sides: innerText breaks lines where the agent's text, read
  // from a snapshot, has spaces.
  function checkText(args) {
    const root = document.body || document.documentElement;
    const text = !root ? '' : document.body ? root.innerText : root.textContent;
    return ok({ found: collapse(text).includes(collapse(args.text)) });
  }

  // With `describe`, the first rendered match comes back too, as action results describe an
  // element (with its key, the document's token and URL), for the wait to name what appeared.
  function checkSelector(args) {
    const matches = queryAll(args.css);
    if (matches.error) return matches;
    const shown = Array.from(matches).find(visible);
    const value = { visible: shown !== undefined, count: matches.length };
    if (shown !== undefined && args.describe) {
      value.node = describe(shown, deepActiveElement());
      value.doc = ids.token;
      value.url = cap(location.href, URL_MAX);
    }
    return ok(value);
  }

  // The text selected in this frame (a field's selection included), or '' when none.
  function selectedText() {
    const el = deepActiveElement();
    // A secret field's selection is never read, by either path below.
    if (el && el.tagName === 'INPUT' && isSecret(el)) return ok({ text: '' });
    let text = '';
    if (el && (el.tagName === 'TEXTAREA' || (el.tagName === 'INPUT' && TEXT_INPUT_TYPES.has(el.type)))) {
      try {
        text = el.value.slice(el.selectionStart || 0, el.selectionEnd || 0);
      } catch (e) {
        text = '';
      }
    }
    if (!text) {
      const selection = window.getSelection();
      text = selection ? selection.toString() : '';
    }
    return ok({ text });
  }

  // The origin's localStorage: keys containing `filter`, values capped, within `maxChars`.
  const STORAGE_VALUE_MAX = 500;
  function localStorageEntries(args) {
    let storage;
    try {
      storage = window.localStorage;
    } catch (e) {
      return fail('RESTRICTED_PAGE', `This page does not allow reading its localStorage (${e.message}).`);
    }
    const keys = [];
    for (let i = 0; i < storage.length; i++) {
      const key = storage.key(i);
      if (key !== null && (!args.filter || key.includes(args.filter))) keys.push(key);
    }
    keys.sort();
    const entries = [];
    // The budget covers the entries as a JSON array: its brackets and commas too.
    let used = 2;
    let truncated = false;
    for (const key of keys) {
      const raw = storage.getItem(key) || '';
      const entry = { key: cap(key, STORAGE_VALUE_MAX), value: cap(raw, STORAGE_VALUE_MAX) };
      if (raw.length > STORAGE_VALUE_MAX) entry.valueTruncated = true;
      const size = JSON.stringify(entry).length + (entries.length > 0 ? 1 : 0);
      if (used + size > args.maxChars) {
        truncated = true;
        // The first entry alone is too long: its value is cut to fit.
        if (entries.length === 0) {
          const room = Math.max(1, entry.value.length - (size - args.maxChars) - 24);
          entry.value = cap(entry.value, room);
          entry.valueTruncated = true;
          entries.push(entry);
        }
        break;
      }
      used += size;
      entries.push(entry);
    }
    return ok({ origin: location.origin, entries, total: keys.length, truncated });
  }

  // The target's box in document coordinates (CSS pixels from the page's top left), for a
  // screenshot of one element.
  function rect(args) {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const box = found.el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) {
      return fail('TARGET_NOT_VISIBLE', `${labelOf(found.el)} has no size on screen, so there is nothing to capture.`);
    }
    return done(found, { x: box.left + window.scrollX, y: box.top + window.scrollY, width: box.width, height: box.height });
  }

  // The readable text, or the markup without secret fields' values, of the document or the scope.
  function content(args) {
    let el = null;
    if (args.scope) {
      const found = resolveTarget(args.scope);
      if (found.error) return found;
      el = found.el;
    }
    let text;
    if (args.format === 'text') {
      const from = el || document.body || document.documentElement;
      text = from ? renderedText(from) : '';
    } else {
      const from = el || document.documentElement;
      text = from ? markupOf(from) : '';
    }
    return ok({ url: cap(location.href, URL_MAX), title: cap(document.title, TITLE_MAX), doc: ids.token, text });
  }

  // The text of `from` as the page shows it. The browser's innerText leaves out open shadow
  // roots and puts slotted children where they are written rather than where they show; so the
  // elements above a shadow host or a slot are read along the flat tree (flatChildren, as
  // snapshots walk it), and every subtree below them without one by innerText. A page without
  // shadow roots is read by innerText alone. Field values are never part of it, as in innerText.
  // innerText keeps what people cannot see but display and visibility do not hide (opacity 0,
  // clipped, off the page, a tiny font: `concealed`, `tinyFont`); such elements are left out
  // the same way, by reading the elements above them along the tree.
  function renderedText(from) {
    if (typeof from.innerText !== 'string') return from.textContent || '';
    const composed = composedPath(from);
    const hidden = hiddenIn(from, composed);
    if (composed.size === 0) return from.innerText;
    // Strings, and numbers: the line breaks required between blocks (the most wins).
    const out = [];
    const read = (el, style) => {
      const pre = style.whiteSpace.startsWith('pre') || style.whiteSpace === 'break-spaces';
      const shown = style.visibility === 'visible' && hidden.get(el) !== TINY;
      let cells = 0;
      for (const child of flatChildren(el)) {
        if (child.nodeType === 3) {
          if (shown) out.push(pre ? child.data : child.data.replace(/\s+/g, ' '));
          continue;
        }
        if (child.nodeType !== 1) continue;
        const tag = child.tagName;
        if (tag === 'INPUT' || tag === 'TEXTAREA') continue;
        if (tag === 'BR') {
          out.push('\n');
          continue;
        }
        if (hidden.get(child) === CONCEALED) continue;
        const childStyle = getComputedStyle(child);
        const display = childStyle.display;
        if (display === 'none') continue;
        const inline = display.startsWith('inline') || display === 'contents';
        const breaks = tag === 'P' ? 2 : inline || display === 'table-cell' ? 0 : 1;
        if (display === 'table-cell' && cells++ > 0) out.push('\t');
        out.push(breaks);
        if (composed.has(child)) read(child, childStyle);
        else out.push(child.innerText);
        out.push(breaks);
      }
    };
    read(from, getComputedStyle(from));
    let text = '';
    let breaks = 0;
    for (let item of out) {
      if (typeof item === 'number') {
        breaks = Math.max(breaks, item);
        continue;
      }
      if (!item) continue;
      if (breaks > 0 || text.endsWith('\n')) {
        item = item.replace(/^[ \t]+/, '');
        if (!item) continue;
        if (breaks > 0 && text) text = text.replace(/[ \t]+$/, '') + '\n'.repeat(breaks);
      } else if (text.endsWith(' ') && item.startsWith(' ')) {
        item = item.slice(1);
      }
      breaks = 0;
      text += item;
    }
    return text.replace(/^[ \t\n]+|[ \t\n]+$/g, '');
  }

  // The elements below `from` (in open shadow roots too) whose text people cannot see: those
  // that conceal their subtree (CONCEALED), and those whose own text is in a tiny font (TINY,
  // their children may show). They and the elements above them join `composed`, so that
  // `renderedText` reads down to them along the tree.
  const CONCEALED = 1;
  const TINY = 2;
  function hiddenIn(from, composed) {
    const hidden = new Map();
    const scan = (root) => {
      for (const el of root.querySelectorAll('*')) {
        if (SKIP_TAGS.has(el.tagName)) continue;
        const style = getComputedStyle(el);
        if (style.display === 'none') continue;
        if (concealed(el, style)) hidden.set(el, CONCEALED);
        else if (tinyFont(style) && hasText(el)) hidden.set(el, TINY);
        else if (el.shadowRoot === null) continue;
        if (hidden.has(el)) markUp(composed, el, from);
        if (el.shadowRoot !== null) scan(el.shadowRoot);
      }
    };
    scan(from);
    return hidden;
  }

  function hasText(el) {
    for (let child = el.firstChild; child !== null; child = child.nextSibling) {
      if (child.nodeType === 3 && WORD.test(child.data)) return true;
    }
    return false;
  }

  // Adds `el` and the elements above it, up to `from`, to `composed`, crossing from shadow
  // roots to their hosts.
  function markUp(composed, el, from) {
    for (let at = el; at && !composed.has(at); ) {
      composed.add(at);
      if (at === from) return;
      const parent = at.parentNode;
      at = parent && parent.nodeType === 11 ? parent.host : parent;
    }
  }

  // The elements of `from`'s subtree, `from` included, that have an open shadow host or a slot
  // below them (or are one), crossing from shadow roots to their hosts; empty when there is
  // none. Closed shadow roots cannot be entered, so they add nothing.
  function composedPath(from) {
    const composed = new Set();
    const mark = (el) => markUp(composed, el, from);
    const look = (el) => {
      if (el.shadowRoot) {
        mark(el);
        scan(el.shadowRoot);
      } else if (el.tagName === 'SLOT') {
        mark(el);
      }
    };
    const scan = (root) => {
      for (const el of root.querySelectorAll('*')) look(el);
    };
    look(from);
    scan(from);
    return composed;
  }

  // The markup of `from`, built on a copy in an inert document: the page's own fields keep their
  // values, no custom-element constructor or image load of the page runs for the copy, and every
  // input `isSecret` judges a secret loses its value attribute. An open shadow root is written
  // as the declarative `<template shadowrootmode="open">` first in its host, the form Chrome's
  // getHTML({serializableShadowRoots}) gives; slotted children stay where they are written.
  function markupOf(from) {
    const inert = document.implementation.createHTMLDocument('');
    const root = inert.importNode(from, false);
    // Pairs of a page node and the copy its children go into; a stack, not recursion, so a deep
    // page cannot exhaust the call stack.
    const stack = [[from, root]];
    while (stack.length) {
      const [node, copy] = stack.pop();
      const into = node.tagName === 'TEMPLATE' ? copy.content : copy;
      const pairs = [];
      if (node.shadowRoot) {
        const template = inert.createElement('template');
        template.setAttribute('shadowrootmode', 'open');
        copy.appendChild(template);
        for (const child of node.shadowRoot.childNodes) pairs.push([child, template.content]);
      }
      for (const child of (node.tagName === 'TEMPLATE' ? node.content : node).childNodes) pairs.push([child, into]);
      for (const [child, parent] of pairs) {
        const clone = inert.importNode(child, false);
        if (child.nodeType === 1 && child.tagName === 'INPUT' && isSecret(child)) clone.removeAttribute('value');
        parent.appendChild(clone);
        if (child.nodeType === 1) stack.push([child, clone]);
      }
    }
    if (from.tagName === 'INPUT' && isSecret(from)) root.removeAttribute('value');
    return root.outerHTML;
  }
