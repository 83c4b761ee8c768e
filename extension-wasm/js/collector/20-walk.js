// Part of the in-page collector's factory (see 00-prelude.js), joined with the other parts of
// js/collector/ in name order when the extension is built. This part is the one walk over the
// flat tree that a snapshot is, and the `snapshot` command.

  function hasOwnText(el) {
    if (el.tagName === 'SLOT') {
      for (const child of flatChildren(el)) {
        if (child.nodeType === 3 && WORD.test(child.data)) return true;
      }
      return false;
    }
    for (let child = (el.shadowRoot || el).firstChild; child !== null; child = child.nextSibling) {
      if (child.nodeType === 3 && WORD.test(child.data)) return true;
    }
    return false;
  }

  // IDs that some element names as its label (aria-labelledby): their text is that element's
  // name, and repeating it as prose adds nothing.
  function labelIds() {
    const set = new Set();
    for (const el of document.querySelectorAll('[aria-labelledby]')) {
      for (const id of (el.getAttribute('aria-labelledby') || '').trim().split(/\s+/)) {
        if (id) set.add(id);
      }
    }
    return set;
  }

  // The nearest enclosing table row or list item, whose nodes a query returns together.
  function groupOf(el) {
    for (let at = el.parentElement; at; at = at.parentElement) {
      const role = rawRole(at);
      if (at.tagName === 'LI' || role === 'listitem' || role === 'row') return keyOf(at);
      if (at.tagName === 'TR') {
        const table = at.closest('table');
        const tableRole = table ? rawRole(table) : '';
        if (tableRole !== 'presentation' && tableRole !== 'none') return keyOf(at);
      }
    }
    return null;
  }

  // The walk's contexts: what happens to text, and which nodes are shown.
  const FREE = 0; // text outside any prose container: an element with own text becomes prose
  const PROSE = 1; // inside a prose container: text flows up into it
  const NAMED = 2; // inside an element whose name carries its text: no prose, no images
  const ROW = 3; // inside a table row: text flows up into the row's cells, images give alt text

  // One walk over the flat tree in document order, reporting every visible node. Which of them
  // are shown, and how, is the wasm's decision (budget, query, paging, deltas).
  //
  // The walk is bottom-up for text: each element's style is read once, and the words of a
  // subtree flow up (in `acc`) to the nearest prose container or row cell, leaving out what
  // is shown as a node of its own. A prose or row line is reserved in document order before
  // its descendants' lines and filled in once its text is known.
  function walk(root, group, layout, labels, focused) {
    const vw = window.innerWidth;
    const vh = window.innerHeight;
    const nodes = [];

    const place = (fact, rect, nodeGroup) => {
      if (nodeGroup !== null) fact.group = nodeGroup;
      if (rect.bottom > 0 && rect.right > 0 && rect.top < vh && rect.left < vw) fact.inView = true;
      return fact;
    };

    const children = (el, ctx, nodeGroup, inLayout, acc, textShown) => {
      const slotted = el.tagName === 'SLOT' ? el.assignedNodes({ flatten: true }) : null;
      if (slotted !== null && slotted.length) {
        for (const child of slotted) child1(child, ctx, nodeGroup, inLayout, acc, textShown);
        return;
      }
      // Sibling pointers, not an iterator: this loop runs for every node of the page.
      for (let child = (el.shadowRoot || el).firstChild; child !== null; child = child.nextSibling) {
        child1(child, ctx, nodeGroup, inLayout, acc, textShown);
      }
    };

    const child1 = (child, ctx, nodeGroup, inLayout, acc, textShown) => {
      const type = child.nodeType;
      if (type === 1) {
        visit(child, ctx, nodeGroup, inLayout, acc);
      } else if (type === 3 && acc !== null && textShown) {
        const data = child.data;
        acc.text += data;
        if (!acc.words && WORD.test(data)) acc.words = true;
      }
    };

    // Reserves a prose line, walks the container, and fills the line with its own words.
    const prose = (el, ctx, nodeGroup, inLayout, shown, emit) => {
      const slot = nodes.length;
      nodes.push(null);
      const acc = { text: '', words: false };
      children(el, ctx, nodeGroup, inLayout, acc, shown);
      if (!emit || !acc.words) return;
      const text = cap(collapse(acc.text), PROSE_MAX);
      if (!text) return;
      const rect = el.getBoundingClientRect();
      const fact = { key: keyOf(el), role: 'text', name: text, box: boxOf(rect) };
      const anchors = anchorsOf(el);
      if (anchors) fact.anchors = anchors;
      nodes[slot] = place(fact, rect, nodeGroup);
    };

    // A row's line, named by its cells' own words joined by " | ".
    const row = (el, shown, nodeGroup, inLayout) => {
      let fact = null;
      if (shown) {
        const rect = el.getBoundingClientRect();
        if (rect.width > 0 && rect.height > 0) {
          fact = place(factOf(el, 'row', '', focused, rect), rect, nodeGroup);
          nodes.push(fact);
        }
      }
      const parts = [];
      let cells = 0;
      const loose = { text: '', words: false };
      for (const child of flatChildren(el)) {
        if (child.nodeType === 3) {
          if (shown) {
            loose.text += child.data;
            if (!loose.words && WORD.test(child.data)) loose.words = true;
          }
          continue;
        }
        if (child.nodeType !== 1) continue;
        const cell = child.tagName === 'TD' || child.tagName === 'TH' || CELL_ROLES.has(rawRole(child));
        if (!cell) {
          visit(child, ROW, nodeGroup, inLayout, loose);
          continue;
        }
        cells += 1;
        const only = child.firstChild;
        if (only !== null && only === child.lastChild && only.nodeType === 3 && child.shadowRoot === null && child.attributes.length === 0) {
          // A cell of plain text, the bulk of any table: only its visibility matters.
          const style = getComputedStyle(child);
          if (style.display !== 'none' && style.visibility !== 'hidden' && style.visibility !== 'collapse') {
            const text = collapse(only.data);
            if (text) parts.push(text);
          }
          continue;
        }
        const acc = { text: '', words: false };
        visit(child, ROW, nodeGroup, inLayout, acc);
        const label = child.getAttribute('aria-label');
        const text = (label && collapse(label)) || (acc.words ? collapse(acc.text) : '');
        if (text) parts.push(text);
      }
      if (fact) {
        const name = cells ? parts.join(' | ') : (loose.words ? collapse(loose.text) : '');
        fact.name = cap(name, PROSE_MAX);
      }
    };

    const visit = (el, ctx, nodeGroup, inLayout, acc) => {
      const tag = el.tagName;
      if (SKIP_TAGS.has(tag)) return;
      if (tag === 'BR') {
        if (acc !== null) acc.text += ' ';
        return;
      }
      if (el.getAttribute('aria-hidden') === 'true') return;
      const style = getComputedStyle(el);
      const display = style.display;
      if (display === 'none') return;
      const visibility = style.visibility;
      const shown = visibility !== 'hidden' && visibility !== 'collapse';
      const block = display !== 'contents' && !display.startsWith('inline');
      if (block && acc !== null) acc.text += ' ';
      if (tag === 'IFRAME' || tag === 'FRAME') {
        if (shown) {
          const rect = el.getBoundingClientRect();
          if (rect.width > 0 && rect.height > 0) {
            const fact = { key: keyOf(el), role: 'iframe', name: frameName(el), box: boxOf(rect) };
            const index = frameIndexOf(el);
            if (index !== null) fact.frameIndex = index;
            const anchors = anchorsOf(el);
            if (anchors) fact.anchors = anchors;
            nodes.push(place(fact, rect, nodeGroup));
          }
        }
        if (acc !== null) acc.text += ' ';
        return;
      }
      if (tag === 'TABLE') {
        const r = rawRole(el);
        inLayout = r === 'presentation' || r === 'none';
      }
      const role = tag === 'svg' ? explicitRole(el) || null : roleOf(el, inLayout);
      const kind = kindOf(el, role);
      const myGroup = kind === 'row' || tag === 'LI' || role === 'listitem' ? keyOf(el) : nodeGroup;
      const leaf = tag === 'svg' || tag === 'IMG' || tag === 'SELECT' || tag === 'TEXTAREA' || tag === 'INPUT';

      if (kind === 'row') {
        row(el, shown, myGroup, inLayout);
        if (acc !== null) acc.text += ' ';
        return;
      }
      if (kind) {
        const hideImage = kind === 'img' && ctx >= NAMED;
        let name = '';
        if (shown && !hideImage) {
          const rect = el.getBoundingClientRect();
          if (rect.width > 0 && rect.height > 0) {
            name = nameOf(el, role);
            if (kind !== 'img' || name) nodes.push(place(factOf(el, role, name, focused, rect), rect, myGroup));
          }
        }
        if (acc !== null) {
          if (hideImage && ctx === ROW) {
            const alt = collapse(el.getAttribute('alt'));
            if (alt) {
              acc.text += ' ' + alt + ' ';
              acc.words = true;
            }
          } else if (role === 'link' && ctx < NAMED && !block) {
            // A link inside a sentence keeps its words in the sentence (it has a line too).
            acc.text += name || textOf(el, true);
          } else {
            acc.text += ' ';
          }
        }
        if (leaf) return;
        const named = NAME_FROM_CONTENT.has(role) || role === 'textbox' || role === 'searchbox' || role === 'combobox';
        children(el, named ? NAMED : ctx, myGroup, inLayout, null, false);
        return;
      }
      if (leaf) {
        if (acc !== null) acc.text += ' ';
        return;
      }
      // Content Chrome does not render although its display and visibility say it is shown:
      // `hidden="until-found"` (rendered as `content-visibility: hidden`), and a closed
      // <details> apart from its summary. (Reading content-visibility for every element
      // would cost a tenth of the walk, so other uses of it are not detected.)
      // (A plain `hidden` the page's CSS overrides is rendered, and its display check above
      // already lets it through.)
      if (el.getAttribute('hidden') === 'until-found') return;
      if (tag === 'DETAILS' && !el.open) {
        for (let child = el.firstElementChild; child !== null; child = child.nextElementSibling) {
          if (child.tagName === 'SUMMARY') {
            visit(child, ctx, myGroup, inLayout, acc);
            break;
          }
        }
        return;
      }
      if (ctx < NAMED && PROSE_TAGS.has(tag)) {
        // A label's text is the name of its control; repeating it as prose adds nothing —
        // unless the control itself is not shown (a styled label over a hidden checkbox), when
        // the label is all there is to see.
        const namesShownControl = tag === 'LABEL' && el.control && el.control.getClientRects().length > 0;
        const emit = shown && !namesShownControl && !(el.id && labels.has(el.id));
        prose(el, PROSE, myGroup, inLayout, shown, emit);
        if (acc !== null) acc.text += ' ';
        return;
      }
      if (ctx === FREE && hasOwnText(el)) {
        prose(el, PROSE, myGroup, inLayout, shown, shown && !(el.id && labels.has(el.id)));
        return;
      }
      children(el, ctx, myGroup, inLayout, acc, shown);
      if (block && acc !== null) acc.text += ' ';
    };

    visit(root, FREE, group, layout, null);
    return nodes.filter((n) => n !== null);
  }

  function snapshot(args) {
    const started = performance.now();
    let root = document.documentElement;
    let scopeRebound = null;
    if (args.scope) {
      const found = resolveTarget(args.scope);
      if (found.error) return found;
      root = found.el;
      if (found.rebound) scopeRebound = found.rebound;
    }
    let nodes = [];
    if (root) {
      const table = root.closest ? root.closest('table') : null;
      const r = table ? rawRole(table) : '';
      const layout = r === 'presentation' || r === 'none';
      const hiddenScope = root !== document.documentElement && typeof root.checkVisibility === 'function' && !root.checkVisibility();
      const group = root === document.documentElement ? null : groupOf(root);
      if (!hiddenScope) nodes = walk(root, group, layout, labelIds(), deepActiveElement());
    }

    // Elements the wasm holds refs for that have left the document since.
    const gone = [];
    for (const key of args.known || []) {
      const el = elementByKey(key);
      if (!el || !el.isConnected) gone.push(key);
    }
    const value = { url: cap(location.href, URL_MAX), title: cap(document.title, TITLE_MAX), doc: ids.token, nodes, gone };
    if (scopeRebound !== null) value.scopeRebound = scopeRebound;
    value.ms = Math.round((performance.now() - started) * 10) / 10;
    return ok(value);
  }
