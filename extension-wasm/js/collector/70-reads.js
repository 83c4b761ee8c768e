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

  function checkSelector(args) {
    const matches = queryAll(args.css);
    if (matches.error) return matches;
    return ok({ visible: Array.from(matches).some(visible), count: matches.length });
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
      text = from ? (typeof from.innerText === 'string' ? from.innerText : from.textContent || '') : '';
    } else {
      const from = el || document.documentElement;
      if (!from) {
        text = '';
      } else {
        // Work on a copy in an inert document: the page's own fields keep their values, and
        // no custom-element constructor or image load of the page runs for the copy.
        const inert = document.implementation.createHTMLDocument('');
        const copy = inert.importNode(from, true);
        // The copy's inputs pair with the page's own in document order (importNode copied the
        // tree as it is), and each one `isSecret` judges a secret loses its value attribute.
        // Were the two lists ever to differ, every input's value goes: never a guess.
        const inputsOf = (root) => (root.tagName === 'INPUT' ? [root] : Array.from(root.querySelectorAll('input')));
        const originals = inputsOf(from);
        const copies = inputsOf(copy);
        copies.forEach((input, i) => {
          if (originals.length !== copies.length || isSecret(originals[i])) input.removeAttribute('value');
        });
        text = copy.outerHTML;
      }
    }
    return ok({ url: cap(location.href, URL_MAX), title: cap(document.title, TITLE_MAX), doc: ids.token, text });
  }
