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
  // Text people cannot see (`concealed` and `tinyFont` in 10-semantics.js) is left out unless
  // `keepHidden`: under a concealing element no text joins a line and no node but a control
  // is reported (a hidden checkbox styled through its label, a "Skip to content" link shown on
  // focus are real controls); a control keeps its whole accessible name, hidden words included,
  // while a heading's or live region's name, and the words of a prose or row line, keep only
  // what shows.
  //
  // The walk is bottom-up for text: each element's style is read once, and the words of a
  // subtree flow up (in `acc`) to the nearest prose container or row cell, leaving out what
  // is shown as a node of its own. A prose or row line is reserved in document order before
  // its descendants' lines and filled in once its text is known.
  //
  // `from` is for the page model (25-model.js): the state the walk starts in (a subtree walked
  // again starts where the whole walk was when it reached it) and `records`, where every
  // element visited on its own — one whose words flow into no line around it, so walking it
  // again gives its lines whatever its siblings do — is recorded with that state and the range
  // of `nodes` it produced. With `from`, the nodes are returned as reserved, unfilled slots
  // (null) included, which is how the ranges count them.
  //
  // `from.deferAfter` (the page model's first walk, 25-model.js): once that many nodes are
  // placed, every further element that would be visited on its own is recorded unwalked, as a
  // `pending` record with an empty range, read nothing of, and filled in later from its saved
  // state. Such an element's lines all come after the nodes placed so far, so the first
  // `deferAfter` lines are final. It is not deferred while an enclosing container (whose line
  // shows when anything inside it does) has nothing inside yet: filling it in then changes no
  // line around it.
  function walk(root, group, layout, labels, focused, keepHidden, from) {
    const vw = window.innerWidth;
    const vh = window.innerHeight;
    const nodes = [];
    // How many concealing elements enclose the nodes being walked (always 0 with keepHidden;
    // once inside one, the elements below are not checked again).
    let quiet = from ? from.quiet : 0;
    // Whether the text nodes of the element being walked are in a font too small to read.
    let tinyText = from ? from.tiny : false;
    // Only the words people can see, unless hidden text is kept.
    const visibleOnly = !keepHidden;

    // How many boundaries (dialogs, menus, listboxes, grids, forms) enclose the nodes being walked.
    let depth = from ? from.depth : 0;
    // The key of the innermost popup (see POPUP_ROLES) around the nodes being walked.
    let popup = from ? from.popup : null;
    // The page model's records, and the innermost one open.
    const records = from ? from.records : null;
    let open = null;
    // Nodes placed so far, the count past which elements are deferred, and the slots of the
    // containers open around the element being walked.
    let placed = 0;
    const deferAfter = from && from.deferAfter !== undefined ? from.deferAfter : Infinity;
    const containers = [];

    const place = (fact, rect, nodeGroup) => {
      placed += 1;
      if (nodeGroup !== null) fact.group = nodeGroup;
      if (depth > 0) fact.depth = depth;
      if (popup !== null) fact.popup = popup;
      if (rect.bottom > 0 && rect.right > 0 && rect.top < vh && rect.left < vw) fact.inView = true;
      return fact;
    };

    const children = (el, ctx, nodeGroup, inLayout, acc, textShown) => {
      const slotted = el.tagName === 'SLOT' ? el.assignedNodes({ flatten: true }) : null;
      if (slotted !== null && slotted.length) {
        for (const child of slotted) child1(child, ctx, nodeGroup, inLayout, acc, textShown);
        return;
      }
      if (el.shadowRoot !== null) watchRoot(el.shadowRoot);
      // Sibling pointers, not an iterator: this loop runs for every node of the page.
      for (let child = (el.shadowRoot || el).firstChild; child !== null; child = child.nextSibling) {
        child1(child, ctx, nodeGroup, inLayout, acc, textShown);
      }
    };

    const child1 = (child, ctx, nodeGroup, inLayout, acc, textShown) => {
      const type = child.nodeType;
      if (type === 1) {
        visit(child, ctx, nodeGroup, inLayout, acc);
      } else if (type === 3 && acc !== null && textShown && quiet === 0 && !tinyText) {
        const data = pageText(child.data);
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
      const text = cap(oneLine(acc.text), PROSE_MAX);
      if (!text) return;
      if (acc.inline && acc.inline.length === 1 && text === oneLine(acc.last.marker)) {
        // The line would be nothing but one inline ref: that element is the line.
        const only = acc.last;
        const rect = only.el.getBoundingClientRect();
        nodes[slot] = place(factOf(only.el, only.role, cap(collapse(only.name), NAME_MAX), focused, rect), rect, nodeGroup);
        return;
      }
      const rect = el.getBoundingClientRect();
      const fact = { key: keyOf(el), role: 'text', name: text, box: boxOf(rect) };
      if (acc.inline) fact.inline = acc.inline;
      const anchors = anchorsOf(el);
      if (anchors) fact.anchors = anchors;
      nodes[slot] = place(fact, rect, nodeGroup);
    };

    // Adds an inline ref for `el` to the text gathered in `acc`.
    const inline = (acc, el, text, role) => {
      const marker = inlineRef(el, text, focused);
      acc.text += marker;
      acc.words = true;
      (acc.inline || (acc.inline = [])).push(keyOf(el));
      acc.last = { el, role, name: text, marker };
    };

    // A row's line, named by its cells' own words joined by " | ". A cell that is operated
    // itself (a grid cell, a focusable, selectable or clickable cell without controls inside)
    // is an inline ref in that line: `row "[@e5 1] | [@e6 2] | [@e7 3 (selected)]"`.
    const row = (el, shown, nodeGroup, inLayout) => {
      let fact = null;
      if (shown && quiet === 0) {
        const rect = el.getBoundingClientRect();
        if (rect.width > 0 && rect.height > 0) {
          fact = place(factOf(el, 'row', '', focused, rect), rect, nodeGroup);
          nodes.push(fact);
        }
      }
      const parts = [];
      let cells = 0;
      const loose = { text: '', words: false };
      const refs = { text: '', words: false };
      for (const child of flatChildren(el)) {
        if (child.nodeType === 3) {
          if (shown && quiet === 0 && !tinyText) {
            loose.text += pageText(child.data);
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
          const seen = keepHidden || (quiet === 0 && !tinyFont(style) && !concealed(child, style));
          if (seen && style.display !== 'none' && style.visibility !== 'hidden' && style.visibility !== 'collapse') {
            const text = collapse(only.data);
            if (text) parts.push(text);
          }
          continue;
        }
        if (operatedCell(child)) {
          if (shown && !hiddenByStyle(child) && (keepHidden || (quiet === 0 && !concealed(child, getComputedStyle(child))))) {
            refs.text = '';
            inline(refs, child, textOf(child, true, visibleOnly) || collapse(child.getAttribute('aria-label')), rawRole(child) || 'cell');
            parts.push(oneLine(refs.text));
          }
          continue;
        }
        const acc = { text: '', words: false };
        visit(child, ROW, nodeGroup, inLayout, acc);
        const label = child.getAttribute('aria-label');
        const text = (label && !acc.inline && collapse(pageText(label))) || (acc.words ? oneLine(acc.text) : '');
        if (text) parts.push(text);
        if (acc.inline) (refs.inline || (refs.inline = [])).push(...acc.inline);
      }
      if (loose.inline) (refs.inline || (refs.inline = [])).push(...loose.inline);
      if (fact) {
        const name = cells ? parts.join(' | ') : (loose.words ? oneLine(loose.text) : '');
        fact.name = cap(name, PROSE_MAX);
        if (refs.inline) fact.inline = refs.inline;
      }
    };

    const operatedCell = (cell) =>
      (rawRole(cell) === 'gridcell' || cell.hasAttribute('tabindex') || cell.hasAttribute('aria-selected') || cell.hasAttribute('onclick')) && !holdsControls(cell);

    // An element with no role that can be operated (see `operableRole`). Inside a sentence or a
    // table cell it is an inline ref in that line; elsewhere it is a line of its own, named by
    // its words, unless it only wraps other nodes (a clickable card around a heading and
    // buttons is those nodes). Returns false when `el` is a container to walk as usual.
    const operable = (el, role, ctx, nodeGroup, inLayout, acc, shown, block) => {
      if (holdsControls(el)) return false;
      if (quiet > 0) {
        // Words that only a cursor or a click handler makes operable are text, and hidden.
        if (acc !== null) acc.text += ' ';
        return true;
      }
      if (acc !== null && ctx !== FREE && (ctx === ROW || !block)) {
        if (!shown) return false;
        const text = nameOf(el, role) || textOf(el, true, visibleOnly);
        if (text) inline(acc, el, text, role);
        return true;
      }
      const slot = nodes.length;
      nodes.push(null);
      const inner = { text: '', words: false };
      children(el, PROSE, nodeGroup, inLayout, inner, shown);
      if (acc !== null) acc.text += ' ';
      if (!shown) return true;
      const text = inner.words ? cap(oneLine(inner.text), PROSE_MAX) : '';
      const name = nameOf(el, role) || text;
      if (!name && nodes.length > slot + 1) return true;
      const rect = el.getBoundingClientRect();
      if (rect.width === 0 || rect.height === 0) return true;
      const fact = factOf(el, role, name, focused, rect);
      if (inner.inline && name === text) fact.inline = inner.inline;
      nodes[slot] = place(fact, rect, nodeGroup);
      return true;
    };

    const visit = (el, ctx, nodeGroup, inLayout, acc) => {
      if (records === null || acc !== null) {
        visitElement(el, ctx, nodeGroup, inLayout, acc);
        return;
      }
      const record = { el, ctx, group: nodeGroup, layout: inLayout, quiet, tiny: tinyText, depth, popup, start: nodes.length, end: 0, parent: open, level: open === null ? 0 : open.level + 1, live: true, pending: false };
      records.push(record);
      if (placed >= deferAfter && containers.every((slot) => nodes.length > slot + 1)) {
        record.pending = true;
        record.end = record.start;
        return;
      }
      open = record;
      visitElement(el, ctx, nodeGroup, inLayout, acc);
      open = record.parent;
      record.end = nodes.length;
    };

    const visitElement = (el, ctx, nodeGroup, inLayout, acc) => {
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
      if (keepHidden) {
        visitShown(el, tag, style, display, ctx, nodeGroup, inLayout, acc);
        return;
      }
      const conceals = quiet === 0 && concealed(el, style);
      const outerTiny = tinyText;
      tinyText = tinyFont(style);
      if (conceals) quiet += 1;
      visitShown(el, tag, style, display, ctx, nodeGroup, inLayout, acc);
      if (conceals) quiet -= 1;
      tinyText = outerTiny;
    };

    // The rest of `visit`, for an element that is displayed.
    const visitShown = (el, tag, style, display, ctx, nodeGroup, inLayout, acc) => {
      const visibility = style.visibility;
      const shown = visibility !== 'hidden' && visibility !== 'collapse';
      const block = display !== 'contents' && !display.startsWith('inline');
      if (block && acc !== null) acc.text += ' ';
      if (tag === 'IFRAME' || tag === 'FRAME') {
        if (shown && quiet === 0) {
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
      if (POPUP_ROLES.has(role) && tag !== 'SELECT') {
        const outer = popup;
        popup = keyOf(el);
        visitKind(el, tag, role, kind, ctx, nodeGroup, inLayout, acc, style, shown, block);
        popup = outer;
        return;
      }
      visitKind(el, tag, role, kind, ctx, nodeGroup, inLayout, acc, style, shown, block);
    };

    // The rest of `visit`, once the element's role and kind are known.
    const visitKind = (el, tag, role, kind, ctx, nodeGroup, inLayout, acc, style, shown, block) => {
      const myGroup = kind === 'row' || tag === 'LI' || role === 'listitem' ? keyOf(el) : nodeGroup;
      const leaf = tag === 'svg' || tag === 'IMG' || tag === 'SELECT' || tag === 'TEXTAREA' || tag === 'INPUT';

      if (kind === 'row') {
        row(el, shown, myGroup, inLayout);
        if (acc !== null) acc.text += ' ';
        return;
      }
      if (kind === null && CONTAINER_ROLES.has(role)) {
        // The boundary's line, shown when something inside it is.
        const slot = nodes.length;
        nodes.push(null);
        // Its line depends on whether anything inside it is shown (`walkAgain` in 25-model.js).
        if (open !== null && open.el === el) open.container = true;
        depth += 1;
        // Words directly in the container (a dialog's question) join its name.
        const own = ctx === FREE && hasOwnText(el) ? { text: '', words: false } : null;
        containers.push(slot);
        children(el, own === null ? ctx : PROSE, myGroup, inLayout, own === null ? acc : own, shown);
        containers.pop();
        depth -= 1;
        const words = own !== null && own.words ? cap(collapse(own.text), PROSE_MAX) : '';
        if (shown && (nodes.length > slot + 1 || words)) {
          const rect = el.getBoundingClientRect();
          const label = nameOf(el, role);
          const name = label && words ? `${label}: ${words}` : label || words;
          nodes[slot] = place(factOf(el, role, name, focused, rect), rect, myGroup);
        }
        if (block && acc !== null) acc.text += ' ';
        return;
      }
      if (kind) {
        const hideImage = kind === 'img' && ctx >= NAMED;
        let name = '';
        if (shown && !hideImage && (kind === 'control' || quiet === 0)) {
          const rect = el.getBoundingClientRect();
          if (rect.width > 0 && rect.height > 0) {
            name = nameOf(el, role, kind !== 'control' && visibleOnly);
            if (!name && kind === 'control' && !INTERACTIVE_ROLES.has(role)) name = textOf(el, true);
            if (kind !== 'img' || name) nodes.push(place(factOf(el, role, name, focused, rect), rect, myGroup));
          }
        }
        if (acc !== null) {
          if (quiet > 0) {
            acc.text += ' ';
          } else if (hideImage && ctx === ROW) {
            const alt = collapse(el.getAttribute('alt'));
            if (alt) {
              acc.text += ' ' + alt + ' ';
              acc.words = true;
            }
          } else if (role === 'link' && ctx < NAMED && !block) {
            // A link inside a sentence keeps its words in the sentence (it has a line too);
            // only those people see, when hidden text is left out.
            acc.text += keepHidden ? name || textOf(el, true) : textOf(el, true, true);
          } else {
            acc.text += ' ';
          }
        }
        if (leaf) return;
        const named = NAME_FROM_CONTENT.has(role) || role === 'textbox' || role === 'searchbox' || role === 'combobox';
        const boundary = role === 'listbox' || role === 'tablist' || role === 'radiogroup';
        if (boundary) depth += 1;
        children(el, named ? NAMED : ctx, myGroup, inLayout, null, false);
        if (boundary) depth -= 1;
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
      if (ctx !== NAMED) {
        const role = operableRole(el, style);
        if (role !== null && operable(el, role, ctx, myGroup, inLayout, acc, shown, block)) return;
      }
      if (ctx < NAMED && PROSE_TAGS.has(tag)) {
        // A label's text is the name of its control; repeating it as prose adds nothing —
        // unless the control itself is not shown (a styled label over a hidden checkbox), when
        // the label is all there is to see.
        const control = tag === 'LABEL' ? el.control : null;
        const namesShownControl = control !== null && control.getClientRects().length > 0 && !control.hasAttribute('aria-label') && !control.hasAttribute('aria-labelledby');
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

    visit(root, from ? from.ctx : FREE, group, layout, null);
    return from ? nodes : nodes.filter((n) => n !== null);
  }

  // A cached node with the facts that change without a mutation read again.
  function refreshed(node, focused) {
    const el = elementByKey(node.key);
    if (el === null || !el.isConnected) return node;
    const rect = el.getBoundingClientRect();
    const fresh = node.role === 'text' || node.role === 'iframe' ? { ...node, box: boxOf(rect) } : factOf(el, node.role, node.name, focused, rect);
    for (const field of ['group', 'depth', 'inline', 'popup']) if (node[field] !== undefined) fresh[field] = node[field];
    if (node.role === 'iframe') {
      const index = frameIndexOf(el);
      if (index === null) delete fresh.frameIndex; else fresh.frameIndex = index;
    }
    delete fresh.inView;
    if (rect.bottom > 0 && rect.right > 0 && rect.top < window.innerHeight && rect.left < window.innerWidth) fresh.inView = true;
    return fresh;
  }

  // Popups (POPUP_ROLES) that appeared since the viewer's last snapshot of the whole document
  // (or that were empty then and have content now, like an autocomplete's list that was still
  // loading), sent whole, up to POPUP_NODES nodes, whether or not the window holds them: the
  // wasm shows the lines its window leaves out (it may show fewer than the page sent). So an
  // action's observation always shows what it opened, and a delta never says "no changes"
  // while a listbox opened below its window. Popups sent outside the window that have since
  // closed are named too. "Since the last snapshot" is each viewer's (an MCP session, by the
  // number the wasm gives it), as its deltas are: another session's snapshot must not use up
  // the news of a popup this one was never shown. The last POPUP_VIEWERS viewers are
  // remembered; one forgotten is shown the open popups again.
  const POPUP_NODES = 30;
  const POPUP_VIEWERS = 8;
  function popupsAround(value, nodes, windowed, reused, viewer) {
    const current = new Map();
    nodes.forEach((node, index) => {
      if (node.popup === undefined) return;
      let found = current.get(node.popup);
      if (found === undefined) current.set(node.popup, found = { key: node.popup, role: '', name: '', first: index, last: index, outside: false });
      if (node.key === node.popup) {
        found.role = node.role;
        found.name = node.name;
      }
      found.last = index;
    });
    const byViewer = model.popups || (model.popups = new Map());
    const seen = byViewer.get(viewer) || new Map();
    const sent = new Set(value.nodes.map((node) => node.key));
    const focused = deepActiveElement();
    for (const found of current.values()) {
      const before = seen.get(found.key);
      found.count = found.last - found.first;
      found.outside = before !== undefined && before.outside;
      const appeared = before === undefined || (before.count === 0 && found.count > 0);
      if (!appeared || !windowed || !found.role) continue;
      const inside = nodes.slice(found.first, found.last + 1);
      found.outside = found.outside || !inside.every((node) => sent.has(node.key));
      (value.outside || (value.outside = [])).push({ key: found.key, role: found.role, name: found.name, count: inside.length - 1, nodes: inside.slice(0, POPUP_NODES).map((node) => (reused ? refreshed(node, focused) : node)) });
    }
    for (const [key, before] of seen) {
      if (before.outside && !current.has(key)) (value.closed || (value.closed = [])).push({ role: before.role, name: before.name });
    }
    // Re-inserted, so the Map's order is the viewers' order of use, oldest first.
    byViewer.delete(viewer);
    byViewer.set(viewer, current);
    if (byViewer.size > POPUP_VIEWERS) byViewer.delete(byViewer.keys().next().value);
  }

  // A node's lines (a select's options follow it) and a lower bound of their characters: its
  // words, less what an inline ref's marker may take beyond the ref it becomes, and no more
  // than LINE_FLOOR a line (the wasm caps a line at 200 characters).
  const LINE_FLOOR = 190;
  const linesOf = (node) => 1 + (node.options ? node.options.length : 0);
  function charsOf(node) {
    let chars = Math.min(node.name.length - (node.inline ? 12 * node.inline.length : 0) + (node.value ? node.value.length : 0), LINE_FLOOR);
    if (node.options) for (const option of node.options) chars += Math.min(option.text.length, LINE_FLOOR);
    return chars;
  }

  // Keeps in `value.nodes` only the nodes a window of the wasm can show: from the one holding
  // line `offset`, until `lines` lines or `chars` characters (a lower bound, so the wasm's exact
  // cut always falls inside what is sent), and counts the rest. Serialising, parsing and
  // rendering every node of a 2,000-row table cost most of a snapshot's time.
  function windowOf(value, window, reused) {
    const nodes = value.nodes;
    let line = 0;
    let first = 0;
    let beforeChars = 0;
    while (first < nodes.length && line + linesOf(nodes[first]) <= window.offset) {
      line += linesOf(nodes[first]);
      beforeChars += charsOf(nodes[first]);
      first += 1;
    }
    value.before = line;
    value.beforeChars = beforeChars;
    let end = first;
    let lines = 0;
    let chars = 0;
    while (end < nodes.length && lines < window.lines + (window.offset - line) && chars < window.chars) {
      lines += linesOf(nodes[end]);
      chars += charsOf(nodes[end]);
      end += 1;
    }
    let after = 0;
    let afterChars = 0;
    for (let i = end; i < nodes.length; i++) {
      after += linesOf(nodes[i]);
      afterChars += charsOf(nodes[i]);
    }
    value.after = after;
    value.afterChars = afterChars;
    if (reused && model.pending) {
      // Lines the model has not walked yet (25-model.js) are counted by an estimate.
      const pending = pendingEstimate(model);
      if (pending.pending) {
        value.after += pending.lines;
        value.afterChars += pending.chars;
        value.estimated = true;
      }
    }
    value.nodes = nodes.slice(first, end);
    if (reused && window.changedSince !== undefined) changedOutside(value, nodes, first, end, window.changedSince);
    if (reused) {
      const focused = deepActiveElement();
      value.nodes = value.nodes.map((node) => refreshed(node, focused));
    }
  }

  function snapshot(args) {
    const started = performance.now();
    const keepHidden = Boolean(args.includeHidden);
    let root = document.documentElement;
    let scopeRebound = null;
    if (args.scope) {
      const found = resolveTarget(args.scope);
      if (found.error) return found;
      root = found.el;
      if (found.rebound) scopeRebound = found.rebound;
    }
    let nodes = [];
    let reused = false;
    if (root) {
      const table = root.closest ? root.closest('table') : null;
      const r = table ? rawRole(table) : '';
      const layout = r === 'presentation' || r === 'none';
      const hiddenScope = root !== document.documentElement && typeof root.checkVisibility === 'function' && !root.checkVisibility();
      const group = root === document.documentElement ? null : groupOf(root);
      if (hiddenScope) {
        nodes = [];
      } else if (root === document.documentElement) {
        // A window (not a query) needs only the nodes up to its last line walked; the rest of
        // the document is walked after the answer (25-model.js).
        nodes = modelNodes(keepHidden, args.window && !args.query ? args.window.offset + args.window.lines : undefined);
        reused = true;
      } else {
        nodes = walk(root, group, layout, labelIds(), deepActiveElement(), keepHidden);
      }
    }

    // Elements the wasm holds refs for that have left the document since.
    const gone = [];
    for (const key of args.known || []) {
      const el = elementByKey(key);
      if (!el || !el.isConnected) gone.push(key);
    }
    const value = { url: cap(location.href, URL_MAX), title: cap(document.title, TITLE_MAX), doc: ids.token, nodes, gone };
    if (reused) value.generation = model.generation;
    if (args.window) {
      windowOf(value, args.window, reused);
    } else if (reused) {
      // No window: every node the query may match (or every node), with its facts read afresh.
      const focused = deepActiveElement();
      const sent = args.query ? queryCandidates(nodes, args.query) : nodes;
      value.nodes = sent.map((node) => refreshed(node, focused));
    }
    if (args.check && root === document.documentElement) {
      if (model.pending) {
        // The check compares the whole model, and the window this call sent must be the one
        // the whole model gives.
        const sent = value.nodes.map((node) => node.key).join(',');
        completeModel();
        nodes = model.nodes;
        const whole = { nodes };
        if (args.window) windowOf(whole, args.window, false);
        const expected = whole.nodes.map((node) => node.key).join(',');
        if (args.window && (expected !== sent || whole.before !== value.before)) value.modelMismatch = `the window of a walk that stopped early is ${cap(sent, 300)} (after ${value.before} lines), the whole model's ${cap(expected, 300)} (after ${whole.before})`;
      }
      if (value.modelMismatch === undefined) checkModel(value, nodes, keepHidden);
    }
    if (root === document.documentElement && args.viewer !== undefined) popupsAround(value, nodes, Boolean(args.window), reused, args.viewer);
    if (scopeRebound !== null) value.scopeRebound = scopeRebound;
    value.ms = Math.round((performance.now() - started) * 10) / 10;
    return ok(value);
  }
