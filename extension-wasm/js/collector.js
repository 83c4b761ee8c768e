// The in-page collector of tabwire: what runs inside a web page.
//
// This file is injected with chrome.scripting.executeScript({files}) into a frame's ISOLATED
// world (the extension's private JS world: the page cannot see or tamper with its globals), once
// per document; it only defines the factory below. `tabwireCall` in page.js then builds the
// implementation and keeps it in the same world, so later calls send a few hundred bytes instead
// of this whole file, and run code V8 has already optimised. It is plain JS, not wasm, because
// pages with a strict CSP cannot run wasm at all.
//
// It gathers raw facts (role, name, states, value, box, identity key and anchors, group) in one
// DOM walk and performs the DOM side of actions; the wasm decides refs, wording, budgets and
// deltas. It answers with a JSON string, either {"value": …} or {"error": {"code": "STALE_REF",
// "message": …}}, because one string crosses into wasm far faster than a structured object
// (see PLATFORM.md).
//
// Privacy rule kept here, at the source: a password field's value never leaves the page; it is
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
  const TEXT_INPUT_TYPES = new Set(['text', 'search', 'email', 'url', 'tel', 'password', 'number']);
  const BUTTON_INPUT_TYPES = new Set(['button', 'submit', 'reset', 'image', 'file']);

  // The current call's arguments and start time (calls never overlap: each runs to the end).
  let args = null;
  let REDACTED = '';
  let started = 0;

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
  const collapse = (s) => String(s == null ? '' : s).replace(/\s+/g, ' ').trim();
  const cap = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);
  const ok = (value) => ({ value });
  const fail = (code, message) => ({ error: { code, message } });

  // Children in the rendered (flat) tree: an open shadow root replaces the light children, and
  // a slot shows what is assigned to it. Closed shadow roots cannot be entered.
  function flatChildren(node) {
    if (node.shadowRoot) return node.shadowRoot.childNodes;
    if (node.tagName === 'SLOT') {
      const assigned = node.assignedNodes({ flatten: true });
      if (assigned.length) return assigned;
    }
    return node.childNodes;
  }

  function rawRole(el) {
    const role = el.getAttribute('role');
    return role === null ? '' : role.trim().split(/\s+/)[0].toLowerCase();
  }

  function explicitRole(el) {
    const first = rawRole(el);
    return first === 'none' || first === 'presentation' ? '' : first;
  }

  // `layout`: inside a table marked role=presentation/none, whose rows and cells are no table.
  function implicitRole(el, layout) {
    const tag = el.tagName;
    switch (tag) {
      case 'A':
      case 'AREA':
        return el.hasAttribute('href') ? 'link' : null;
      case 'BUTTON':
      case 'SUMMARY':
        return 'button';
      case 'INPUT': {
        const type = el.type;
        if (type === 'hidden') return null;
        if (BUTTON_INPUT_TYPES.has(type)) return 'button';
        if (type === 'checkbox') return 'checkbox';
        if (type === 'radio') return 'radio';
        if (type === 'range') return 'slider';
        if (type === 'number') return 'spinbutton';
        if (el.hasAttribute('list')) return 'combobox';
        return type === 'search' ? 'searchbox' : 'textbox';
      }
      case 'SELECT':
        return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'TEXTAREA':
        return 'textbox';
      case 'H1': case 'H2': case 'H3': case 'H4': case 'H5': case 'H6':
        return 'heading';
      case 'IMG':
        return collapse(el.getAttribute('alt')) ? 'img' : null;
      case 'OUTPUT':
        return 'status';
      case 'TR':
        return layout ? null : 'row';
    }
    // The root of an editable region (checking the attribute first: isContentEditable is costly).
    if (el.hasAttribute('contenteditable') && el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) {
      return 'textbox';
    }
    return null;
  }

  const focusable = (el) => el.hasAttribute('tabindex') && el.tabIndex >= 0;

  function roleOf(el, layout) {
    return explicitRole(el) || implicitRole(el, layout) || (focusable(el) ? 'generic' : null);
  }

  // What kind of observation node an element is, or null when it only contributes text.
  function kindOf(el, role) {
    if (!role) return null;
    if (INTERACTIVE_ROLES.has(role)) return 'control';
    if (role === 'row') return 'row';
    if (role === 'heading') return 'heading';
    if (role === 'img') return 'img';
    if (role === 'status' || role === 'alert') return 'live';
    return focusable(el) ? 'control' : null;
  }

  function hiddenByStyle(el) {
    if (el.getAttribute('aria-hidden') === 'true') return true;
    const style = getComputedStyle(el);
    return style.display === 'none' || style.visibility === 'hidden';
  }

  // Text of a subtree for a name: alt text of images, values of buttons, nothing from form
  // fields. `checkHidden` is false for aria-labelledby targets, which count even when hidden.
  function textOf(root, checkHidden) {
    let out = '';
    const visit = (node) => {
      for (const child of flatChildren(node)) {
        if (out.length > NAME_MAX * 4) return;
        if (child.nodeType === 3) { out += child.data; continue; }
        if (child.nodeType !== 1) continue;
        const tag = child.tagName;
        if (SKIP_TAGS.has(tag) || tag === 'SELECT' || tag === 'TEXTAREA') continue;
        if (tag === 'INPUT') {
          if (BUTTON_INPUT_TYPES.has(child.type)) out += ' ' + child.value + ' ';
          continue;
        }
        if (tag === 'IMG') { out += ' ' + (child.getAttribute('alt') || '') + ' '; continue; }
        if (tag === 'BR') { out += ' '; continue; }
        let block = true;
        if (checkHidden) {
          if (child.getAttribute('aria-hidden') === 'true') continue;
          const style = getComputedStyle(child);
          if (style.display === 'none' || style.visibility === 'hidden') continue;
          block = !style.display.startsWith('inline');
        }
        if (block) out += ' ';
        const label = child.getAttribute('aria-label');
        if (label) out += label; else visit(child);
        if (block) out += ' ';
      }
    };
    visit(root);
    return cap(collapse(out), NAME_MAX);
  }

  function labelledBy(el) {
    const idsAttr = (el.getAttribute('aria-labelledby') || '').trim();
    if (!idsAttr) return '';
    const root = el.getRootNode();
    const parts = [];
    for (const id of idsAttr.split(/\s+/)) {
      const target = root.getElementById ? root.getElementById(id) : document.getElementById(id);
      if (target) parts.push(collapse(target.getAttribute('aria-label')) || textOf(target, false));
    }
    return cap(collapse(parts.join(' ')), NAME_MAX);
  }

  // Labels by control, per document or shadow root, built once per call from the labels
  // themselves. `el.labels` would be simpler, but Chrome answers it by scanning the whole
  // tree for each control the first time (and again after any change): on a page with 2,000
  // buttons that alone took half a second.
  let labelMaps = null;
  const LABELABLE = new Set(['INPUT', 'SELECT', 'TEXTAREA', 'BUTTON', 'METER', 'OUTPUT', 'PROGRESS']);

  function labelsOf(el) {
    if (!LABELABLE.has(el.tagName)) return null;
    const root = el.getRootNode();
    if (labelMaps === null) labelMaps = new Map();
    let map = labelMaps.get(root);
    if (map === undefined) {
      map = new Map();
      if (typeof root.querySelectorAll === 'function') {
        for (const label of root.querySelectorAll('label')) {
          const control = label.control;
          if (!control) continue;
          const list = map.get(control);
          if (list) list.push(label); else map.set(control, [label]);
        }
      }
      labelMaps.set(root, map);
    }
    return map.get(el) || null;
  }

  // The accessible name, following the accessible-name computation's main steps.
  function nameOf(el, role) {
    const fromIds = labelledBy(el);
    if (fromIds) return fromIds;
    const aria = collapse(el.getAttribute('aria-label'));
    if (aria) return cap(aria, NAME_MAX);
    const tag = el.tagName;
    if (tag === 'INPUT' && (el.type === 'button' || el.type === 'submit' || el.type === 'reset')) {
      const value = collapse(el.value);
      if (value) return cap(value, NAME_MAX);
      if (el.type !== 'button') return el.type === 'submit' ? 'Submit' : 'Reset';
    }
    if (tag === 'INPUT' && el.type === 'image') {
      return cap(collapse(el.getAttribute('alt')) || collapse(el.title) || 'Submit', NAME_MAX);
    }
    const labels = labelsOf(el);
    if (labels !== null) {
      const fromLabels = collapse(labels.map((label) => textOf(label, true)).join(' '));
      if (fromLabels) return cap(fromLabels, NAME_MAX);
    }
    if (tag === 'IMG' || tag === 'AREA') {
      const alt = collapse(el.getAttribute('alt'));
      if (alt) return cap(alt, NAME_MAX);
    }
    if (tag === 'FIELDSET') {
      const legend = el.querySelector(':scope > legend');
      if (legend) return textOf(legend, true);
    }
    if (NAME_FROM_CONTENT.has(role)) {
      const text = textOf(el, true);
      if (text) return text;
    }
    const title = collapse(el.getAttribute('title'));
    if (title) return cap(title, NAME_MAX);
    const placeholder = collapse(el.getAttribute('placeholder') || el.getAttribute('aria-placeholder'));
    return cap(placeholder, NAME_MAX);
  }

  // Fields whose value is a secret: passwords, fields the page marks as one (autocomplete,
  // masked with -webkit-text-security), and password fields a "show password" toggle turned
  // into text fields (remembered for the document's life, so the toggle does not reveal them).
  const SECRET_AUTOCOMPLETE = /(^|\s)(current-password|new-password|one-time-code)(\s|$)/i;
  const wasPassword = ids.wasPassword || (ids.wasPassword = new WeakSet());
  function isSecret(el) {
    if (el.tagName !== 'INPUT') return false;
    if (el.type === 'password') {
      wasPassword.add(el);
      return true;
    }
    if (wasPassword.has(el) || SECRET_AUTOCOMPLETE.test(el.getAttribute('autocomplete') || '')) return true;
    const mask = getComputedStyle(el).webkitTextSecurity;
    return Boolean(mask) && mask !== 'none';
  }

  function valueOf(el, role) {
    const tag = el.tagName;
    if (tag === 'INPUT') {
      const type = el.type;
      if (type === 'checkbox' || type === 'radio' || type === 'hidden' || BUTTON_INPUT_TYPES.has(type)) return null;
      if (isSecret(el)) return el.value ? REDACTED : '';
      return cap(el.value, VALUE_MAX);
    }
    if (tag === 'TEXTAREA') return cap(collapse(el.value), VALUE_MAX);
    if (tag === 'SELECT') {
      return cap(Array.from(el.selectedOptions, (o) => collapse(o.label || o.text)).join(', '), VALUE_MAX);
    }
    if (el.isContentEditable && role === 'textbox') return cap(collapse(el.innerText), VALUE_MAX);
    const valueText = el.getAttribute('aria-valuetext') || el.getAttribute('aria-valuenow');
    return valueText ? cap(collapse(valueText), VALUE_MAX) : null;
  }

  function deepActiveElement() {
    let active = document.activeElement;
    while (active && active.shadowRoot && active.shadowRoot.activeElement) {
      active = active.shadowRoot.activeElement;
    }
    return active;
  }

  function statesOf(el, focused) {
    const states = [];
    const tag = el.tagName;
    const ariaChecked = el.getAttribute('aria-checked');
    if (tag === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) {
      if (el.indeterminate) states.push('mixed'); else if (el.checked) states.push('checked');
    } else if (ariaChecked === 'true') {
      states.push('checked');
    } else if (ariaChecked === 'mixed') {
      states.push('mixed');
    }
    if (el.getAttribute('aria-pressed') === 'true') states.push('pressed');
    if (tag === 'OPTION' ? el.selected : el.getAttribute('aria-selected') === 'true') states.push('selected');
    const details = tag === 'SUMMARY' && el.parentElement && el.parentElement.tagName === 'DETAILS' ? el.parentElement : null;
    if (el.getAttribute('aria-expanded') === 'true' || (details && details.open)) states.push('expanded');
    if (el.matches(':disabled') || el.getAttribute('aria-disabled') === 'true') states.push('disabled');
    if (el.required || el.getAttribute('aria-required') === 'true') states.push('required');
    const textField = (tag === 'INPUT' && !BUTTON_INPUT_TYPES.has(el.type) && el.type !== 'checkbox' && el.type !== 'radio') || tag === 'TEXTAREA';
    if ((textField && el.readOnly) || el.getAttribute('aria-readonly') === 'true') states.push('readonly');
    if (el === focused) states.push('focused');
    return states;
  }

  function headingLevel(el) {
    const match = /^H([1-6])$/.exec(el.tagName);
    if (match) return Number(match[1]);
    const level = parseInt(el.getAttribute('aria-level') || '', 10);
    return level > 0 ? level : 2;
  }

  const boxOf = (rect) => ({ x: Math.round(rect.x), y: Math.round(rect.y), w: Math.round(rect.width), h: Math.round(rect.height) });

  // The attributes that let a replacement element be recognised as "the same" one after a
  // re-render (SPEC §4): null when the element has none of id, data-testid and name.
  function anchorsOf(el) {
    const id = el.getAttribute('id') || '';
    const testid = el.getAttribute('data-testid') || '';
    const name = el.getAttribute('name') || '';
    if (!id && !testid && !name) return null;
    const anchors = { tag: el.tagName.toLowerCase() };
    if (id) anchors.id = cap(id, ANCHOR_MAX);
    if (testid) anchors.testid = cap(testid, ANCHOR_MAX);
    if (name) anchors.name = cap(name, ANCHOR_MAX);
    const type = el.getAttribute('type');
    if (type) anchors.type = type.toLowerCase();
    return anchors;
  }

  const frameName = (el) => cap(collapse(el.getAttribute('aria-label') || el.getAttribute('title') || el.getAttribute('name')), NAME_MAX);

  // The iframe's index in `window.frames`, which the wasm turns into Chrome's frame ID (each
  // child frame can tell its own index, even across origins).
  function frameIndexOf(el) {
    const child = el.contentWindow;
    if (!child) return null;
    for (let i = 0; i < window.frames.length; i++) {
      if (window.frames[i] === child) return i;
    }
    return null;
  }

  // All facts about one element. Elements without a role (a CSS-selected <div>) are described
  // by tag name and text so action results can still say what was hit.
  function describe(el, focused) {
    const role = roleOf(el, false) || el.tagName.toLowerCase();
    const kind = kindOf(el, roleOf(el, false));
    const name = kind ? nameOf(el, role) : (nameOf(el, role) || textOf(el, true));
    return factOf(el, role, name, focused, el.getBoundingClientRect());
  }

  // The facts of an element whose role and name are already known: one shape for snapshots
  // and action results.
  function factOf(el, role, name, focused, rect) {
    const fact = { key: keyOf(el), role, name };
    const value = valueOf(el, role);
    if (value) fact.value = value;
    const states = statesOf(el, focused);
    if (states.length) fact.states = states;
    if (role === 'link' && typeof el.href === 'string' && el.href) fact.href = cap(el.href, HREF_MAX);
    if (role === 'heading') fact.level = headingLevel(el);
    if (el.tagName === 'SELECT') {
      fact.options = Array.from(el.options).slice(0, OPTIONS_MAX).map((o) => ({ text: cap(collapse(o.label || o.text), NAME_MAX), selected: o.selected }));
    }
    const anchors = anchorsOf(el);
    if (anchors) fact.anchors = anchors;
    fact.box = boxOf(rect);
    return fact;
  }

  const shortLabel = (fact) => (fact.name ? `${fact.role} "${fact.name}"` : fact.role);

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

  function snapshot() {
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

  // Every element of the document and of its open shadow roots matching `selector`.
  function deepQuery(selector) {
    const out = [];
    const search = (root) => {
      for (const el of root.querySelectorAll(selector)) out.push(el);
      for (const el of root.querySelectorAll('*')) {
        if (el.shadowRoot) search(el.shadowRoot);
      }
    };
    search(document);
    return out;
  }

  const sameAnchors = (el, anchors) =>
    (el.getAttribute('id') || '') === (anchors.id || '') &&
    (el.getAttribute('data-testid') || '') === (anchors.testid || '') &&
    (el.getAttribute('name') || '') === (anchors.name || '');

  // The name `el` gets as a node in a snapshot (prose: its text; a row: its cells), computed
  // by the same walk, so a replacement is compared with exactly what was observed.
  function nodeName(el) {
    const key = keyOf(el);
    const found = walk(el, null, false, labelIds(), null).find((n) => n.key === key);
    return found ? found.name : null;
  }

  // How many elements of the whole document carry each anchor set (snapshot-time rebinding
  // takes a replacement only when it is the one element with its anchors).
  function countAnchors() {
    const counts = (args.anchors || []).map((anchors) => {
      const [attr, value] = anchors.id ? ['id', anchors.id] : anchors.testid ? ['data-testid', anchors.testid] : ['name', anchors.name];
      if (!value) return 0;
      return deepQuery(`[${attr}="${CSS.escape(value)}"]`).filter((el) => sameAnchors(el, anchors)).length;
    });
    return ok(counts);
  }

  // A ref's element is gone: find its one replacement by identity (SPEC §4), or say why not.
  function rebind(target) {
    const identity = target.identity;
    const ref = target.ref;
    if (!identity || !identity.anchors) {
      return fail('STALE_REF', `${ref} is stale: that element has been removed from the page, and it had no id, data-testid or name to recognise a replacement by. Take a new snapshot and use a ref from it.`);
    }
    const anchors = identity.anchors;
    const [attr, value] = anchors.id ? ['id', anchors.id] : anchors.testid ? ['data-testid', anchors.testid] : ['name', anchors.name];
    const candidates = deepQuery(`[${attr}="${CSS.escape(value)}"]`).filter((el) => sameAnchors(el, anchors));
    const what = anchors.id ? `id "${anchors.id}"` : anchors.testid ? `data-testid "${anchors.testid}"` : `name "${anchors.name}"`;
    if (candidates.length === 0) {
      return fail('STALE_REF', `${ref} is stale: that element has been removed from the page and nothing with ${what} replaced it. Take a new snapshot and use a ref from it.`);
    }
    if (candidates.length > 1) {
      return fail('STALE_REF', `${ref} is stale: that element has been removed, and ${candidates.length} elements now have ${what}, so its replacement is ambiguous. Take a new snapshot and use a ref from it.`);
    }
    const el = candidates[0];
    const type = (el.getAttribute('type') || '').toLowerCase();
    if (el.tagName.toLowerCase() !== anchors.tag || type !== (anchors.type || '') || nodeName(el) !== identity.name) {
      return fail('STALE_REF', `${ref} is stale: that element has been removed, and the element that now has ${what} is a different one (its tag, type or name changed). Take a new snapshot and use a ref from it.`);
    }
    return { el, rebound: keyOf(el) };
  }

  // Finds the element a target names: {key, doc, ref, identity?} from a snapshot, or {css}.
  function resolveTarget(target) {
    if (typeof target.css === 'string') {
      let matches;
      try {
        matches = document.querySelectorAll(target.css);
      } catch (e) {
        return fail('INVALID_SELECTOR', `\`${target.css}\` is not a valid CSS selector (${e.message}).`);
      }
      if (matches.length === 0) {
        return fail('SELECTOR_NOT_FOUND', `No element matches \`${target.css}\`. Take a snapshot to see what the page shows, or wait for the element to appear.`);
      }
      if (matches.length > 1) {
        return fail('SELECTOR_NOT_UNIQUE', `\`${target.css}\` matches ${matches.length} elements; it must match exactly one. Make the selector more specific or use a ref from a snapshot.`);
      }
      return { el: matches[0] };
    }
    if (target.doc !== ids.token) {
      return fail('STALE_REF', `${target.ref} is stale: the page has loaded a new document since the snapshot. Take a new snapshot and use a ref from it.`);
    }
    const el = elementByKey(target.key);
    if (!el || !el.isConnected) return rebind(target);
    return { el };
  }

  function describeCover(el) {
    let label = el.tagName.toLowerCase();
    if (el.id) label += '#' + el.id;
    const classes = typeof el.className === 'string' ? el.className.trim().split(/\s+/).filter(Boolean).slice(0, 3) : [];
    if (classes.length) label += '.' + classes.join('.');
    const text = cap(collapse(el.textContent), 40);
    return text ? `${label} ("${text}")` : label;
  }

  // The element at a viewport point, looking into open shadow roots.
  function deepElementFromPoint(x, y) {
    let hit = document.elementFromPoint(x, y);
    while (hit && hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    return hit;
  }

  function click() {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const el = found.el;
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    const focused = deepActiveElement();
    const node = describe(el, focused);
    const label = shortLabel(node);
    const rect = el.getBoundingClientRect();
    if (rect.width === 0 || rect.height === 0 || hiddenByStyle(el)) {
      return fail('TARGET_NOT_VISIBLE', `${label} is not visible (no size on screen, or hidden by style). Wait for it to be shown, or pick a visible element.`);
    }
    const x = rect.left + rect.width / 2;
    const y = rect.top + rect.height / 2;
    if (x < 0 || y < 0 || x >= window.innerWidth || y >= window.innerHeight) {
      return fail('TARGET_NOT_VISIBLE', `${label} could not be scrolled into view (its centre stays outside the viewport).`);
    }
    const root = el.getRootNode();
    const hit = (typeof root.elementFromPoint === 'function' ? root : document).elementFromPoint(x, y);
    // Clicking a control's own label does the same as clicking the control (styled checkboxes
    // often hide the real input under their label).
    const hitLabel = hit && hit.closest ? hit.closest('label') : null;
    const reachable = hit && (hit === el || el.contains(hit) || (hitLabel && hitLabel.control === el));
    if (!reachable) {
      const cover = hit ? describeCover(hit) : 'nothing clickable';
      return fail('TARGET_COVERED', `${label} is covered by ${cover} at (${Math.round(x)}, ${Math.round(y)}). Close or dismiss what covers it (a dialog, banner or overlay) and retry.`);
    }
    const value = { x, y, node };
    if (found.rebound) value.rebound = found.rebound;
    return ok(value);
  }

  function typeText() {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const el = found.el;
    const tag = el.tagName;
    const isInput = tag === 'INPUT' && TEXT_INPUT_TYPES.has(el.type);
    const isArea = tag === 'TEXTAREA';
    const isEditable = !isInput && !isArea && el.isContentEditable;
    const label = shortLabel(describe(el, deepActiveElement()));
    if (!isInput && !isArea && !isEditable) {
      return fail('NOT_EDITABLE', `${label} does not accept text: only text inputs, textareas and contenteditable elements do.`);
    }
    if ((isInput || isArea) && (el.matches(':disabled') || el.readOnly)) {
      return fail('NOT_EDITABLE', `${label} is ${el.matches(':disabled') ? 'disabled' : 'read-only'}; it does not accept text.`);
    }
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    el.focus({ preventScroll: true });
    let value;
    if (isEditable) {
      const selection = window.getSelection();
      const range = document.createRange();
      range.selectNodeContents(el);
      if (!args.clear) range.collapse(false);
      selection.removeAllRanges();
      selection.addRange(range);
      if (args.text === '') {
        if (args.clear) document.execCommand('delete');
      } else {
        document.execCommand('insertText', false, args.text);
      }
      value = cap(el.innerText, TYPED_VALUE_MAX);
    } else {
      // The native setter, not `el.value = …`: frameworks such as React watch the property on
      // the element, and only a value that bypasses their watcher makes them see a change.
      const proto = isArea ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
      const setValue = Object.getOwnPropertyDescriptor(proto, 'value').set;
      setValue.call(el, args.clear ? args.text : el.value + args.text);
      el.dispatchEvent(new InputEvent('input', { bubbles: true, composed: true, inputType: 'insertText', data: args.text }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
      value = isSecret(el) ? (el.value ? REDACTED : '') : cap(el.value, TYPED_VALUE_MAX);
    }
    const result = { value, node: describe(el, deepActiveElement()) };
    if (found.rebound) result.rebound = found.rebound;
    return ok(result);
  }

  // This frame's index among its parent's frames (window.parent.frames[i] === window), which
  // the parent can read even across origins; -1 in a top document.
  function frameIndex() {
    if (window.parent === window) return ok({ index: -1 });
    const siblings = window.parent.frames;
    for (let i = 0; i < siblings.length; i++) {
      if (siblings[i] === window) return ok({ index: i });
    }
    return fail('STALE_REF', 'The frame is no longer part of its parent page.');
  }

  // The <iframe>/<frame> element showing child frame number `index` (shadow roots included).
  function frameElement(index) {
    const child = window.frames[index];
    if (!child) return null;
    for (const el of deepQuery('iframe, frame')) {
      if (el.contentWindow === child) return el;
    }
    return null;
  }

  // Scrolls the element hosting child frame `index` into view, on the way down to a target.
  function scrollFrame() {
    const el = frameElement(args.index);
    if (!el) return fail('STALE_REF', 'The frame is no longer part of its parent page.');
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    return ok({});
  }

  // Translates a point inside child frame `index` into this frame's viewport (through the
  // frame element's content box) and checks that the frame element is what is hit there.
  function frameHit() {
    const el = frameElement(args.index);
    if (!el) return fail('STALE_REF', 'The frame is no longer part of its parent page.');
    const rect = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    const x = rect.left + el.clientLeft + (parseFloat(style.paddingLeft) || 0) + args.x;
    const y = rect.top + el.clientTop + (parseFloat(style.paddingTop) || 0) + args.y;
    if (x < 0 || y < 0 || x >= window.innerWidth || y >= window.innerHeight) {
      return fail('TARGET_NOT_VISIBLE', `The frame's element could not be scrolled into view (the click point stays outside the viewport).`);
    }
    const hit = deepElementFromPoint(x, y);
    if (hit !== el) {
      const cover = hit ? describeCover(hit) : 'nothing clickable';
      return fail('TARGET_COVERED', `The frame holding the element is covered by ${cover} at (${Math.round(x)}, ${Math.round(y)}). Close or dismiss what covers it and retry.`);
    }
    return ok({ x, y });
  }

  // The readable text, or the markup without password values, of the document or the scope.
  function content() {
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
        const secretMarkup = (node) => {
          const type = (node.getAttribute('type') || '').toLowerCase();
          return type === 'password' || SECRET_AUTOCOMPLETE.test(node.getAttribute('autocomplete') || '');
        };
        for (const node of [copy, ...copy.querySelectorAll('[value]')]) {
          if (node.hasAttribute && node.hasAttribute('value') && secretMarkup(node)) node.removeAttribute('value');
        }
        // A field the page shows as a password now, whatever its markup says.
        const originals = from.querySelectorAll ? [from, ...from.querySelectorAll('input')] : [];
        const copies = [copy, ...copy.querySelectorAll('input')];
        if (originals.length === copies.length) {
          originals.forEach((original, i) => {
            if (original.tagName === 'INPUT' && isSecret(original)) copies[i].removeAttribute('value');
          });
        }
        text = copy.outerHTML;
      }
    }
    return ok({ url: cap(location.href, URL_MAX), title: cap(document.title, TITLE_MAX), doc: ids.token, text });
  }

  return function run(command, argsJson) {
    started = performance.now();
    labelMaps = null;
    args = JSON.parse(argsJson);
    REDACTED = args.redacted;
    let reply;
    try {
      if (command === 'probe') reply = ok({ url: cap(location.href, URL_MAX), title: cap(document.title, TITLE_MAX) });
      else if (command === 'snapshot') reply = snapshot();
      else if (command === 'countAnchors') reply = countAnchors();
      else if (command === 'click') reply = click();
      else if (command === 'type') reply = typeText();
      else if (command === 'content') reply = content();
      else if (command === 'frameIndex') reply = frameIndex();
      else if (command === 'scrollFrame') reply = scrollFrame();
      else if (command === 'frameHit') reply = frameHit();
      else reply = fail('INTERNAL', `unknown page command ${command}`);
    } catch (e) {
      reply = fail('INTERNAL', `tabwire's page script failed: ${e && e.message ? e.message : e}`);
    } finally {
      args = null;
      labelMaps = null;
    }
    return JSON.stringify(reply);
  };
};
