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
    return style.display === 'none' || style.visibility === 'hidden' || style.visibility === 'collapse';
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

  // The document's elements matching a CSS selector, or INVALID_SELECTOR.
  function queryAll(css) {
    try {
      return document.querySelectorAll(css);
    } catch (e) {
      return fail('INVALID_SELECTOR', `\`${css}\` is not a valid CSS selector (${e.message}).`);
    }
  }

  // Finds the element a target names: {key, doc, ref, identity?} from a snapshot, or {css}.
  function resolveTarget(target) {
    if (typeof target.css === 'string') {
      const matches = queryAll(target.css);
      if (matches.error) return matches;
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

  // Targets are brought to the middle of the viewport, away from sticky headers and footers.
  const TO_CENTRE = { block: 'center', inline: 'center', behavior: 'instant' };

  // How messages name an element: `button "Save"`.
  const labelOf = (el) => shortLabel(describe(el, deepActiveElement()));

  // How messages name a target as the agent wrote it.
  const targetText = (target) => (typeof target.css === 'string' ? `\`${target.css}\`` : target.ref);

  // A successful reply about a resolved target, telling the wasm when its ref was rebound.
  function done(found, value) {
    if (found.rebound) value.rebound = found.rebound;
    return ok(value);
  }

  // Rendered: a box with a size, and not hidden by style.
  function visible(el) {
    const rect = el.getBoundingClientRect();
    return rect.width > 0 && rect.height > 0 && !hiddenByStyle(el);
  }

  // The centre of a visible element in viewport CSS pixels, or TARGET_NOT_VISIBLE; `outside`
  // ends the message when the centre is off screen.
  function centreOf(el, outside) {
    if (!visible(el)) {
      return fail('TARGET_NOT_VISIBLE', `${labelOf(el)} is not visible (no size on screen, or hidden by style). Wait for it to be shown, or pick a visible element.`);
    }
    const rect = el.getBoundingClientRect();
    const x = rect.left + rect.width / 2;
    const y = rect.top + rect.height / 2;
    if (x < 0 || y < 0 || x >= window.innerWidth || y >= window.innerHeight) {
      return fail('TARGET_NOT_VISIBLE', `${labelOf(el)} ${outside}`);
    }
    return { x, y };
  }

  // Where a trusted click on `el` lands: its centre, when that is on screen and the element
  // there is `el` (or its label), not something covering it.
  function hitPoint(el) {
    const centre = centreOf(el, 'could not be scrolled into view (its centre stays outside the viewport).');
    if (centre.error) return centre;
    const { x, y } = centre;
    const root = el.getRootNode();
    const hit = (typeof root.elementFromPoint === 'function' ? root : document).elementFromPoint(x, y);
    // Clicking a control's own label does the same as clicking the control (styled checkboxes
    // often hide the real input under their label).
    const hitLabel = hit && hit.closest ? hit.closest('label') : null;
    const reachable = hit && (hit === el || el.contains(hit) || (hitLabel && hitLabel.control === el));
    if (!reachable) {
      const cover = hit ? describeCover(hit) : 'nothing clickable';
      return fail('TARGET_COVERED', `${labelOf(el)} is covered by ${cover} at (${Math.round(x)}, ${Math.round(y)}). Close or dismiss what covers it (a dialog, banner or overlay) and retry.`);
    }
    return centre;
  }

  function click() {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const el = found.el;
    el.scrollIntoView(TO_CENTRE);
    const node = describe(el, deepActiveElement());
    const point = hitPoint(el);
    if (point.error) return point;
    return done(found, { x: point.x, y: point.y, node });
  }

  // `element.click()`: untrusted, no hit test, so it reaches elements under overlays too.
  function domClick() {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const el = found.el;
    el.scrollIntoView(TO_CENTRE);
    // Described first: the click may remove the element.
    const node = describe(el, deepActiveElement());
    el.click();
    return done(found, { node });
  }

  // The end of a drag: the target's centre as it is now (the drag's start is already on screen,
  // and scrolling here could move it off).
  function point() {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const el = found.el;
    const centre = centreOf(el, 'is outside the viewport; scroll so both ends of the drag are on screen, then retry.');
    if (centre.error) return centre;
    return done(found, { x: centre.x, y: centre.y, node: describe(el, deepActiveElement()) });
  }

  // The kind of text field `el` is: 'input', 'area' (a textarea) or 'editable'
  // (contenteditable); null when it takes no typed text.
  function textKind(el) {
    if (el.tagName === 'INPUT') return TEXT_INPUT_TYPES.has(el.type) ? 'input' : null;
    if (el.tagName === 'TEXTAREA') return 'area';
    return el.isContentEditable ? 'editable' : null;
  }

  // Why a control refuses input, or null: it is disabled, or read-only (unless allowed; the
  // attribute is never touched).
  function refusal(el, allowReadonly) {
    if (el.matches(':disabled')) {
      return fail('NOT_EDITABLE', `${labelOf(el)} is disabled; it does not accept input. Wait for the page to enable it, or pick another element.`);
    }
    if (el.readOnly === true && !allowReadonly) {
      return fail('NOT_EDITABLE', `${labelOf(el)} is read-only; it does not accept text. If it is a picker that reads typed text anyway, use type_text with allowReadonly: true.`);
    }
    return null;
  }

  // `el` as a field that accepts typed text: {kind}, or NOT_EDITABLE.
  function textField(el, allowReadonly) {
    const kind = textKind(el);
    if (!kind) {
      return fail('NOT_EDITABLE', `${labelOf(el)} does not accept text: only text inputs, textareas and contenteditable elements do.`);
    }
    return refusal(el, allowReadonly) || { kind };
  }

  // Selects the field's whole content (`clear`: what is typed next replaces it), or puts the
  // caret at its end.
  function placeCaret(el, kind, clear) {
    if (kind === 'editable') {
      const range = document.createRange();
      range.selectNodeContents(el);
      if (!clear) range.collapse(false);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
    } else if (clear) {
      el.select();
    } else if (el.selectionStart !== null) {
      // (Email and number fields have no caret API; their caret stays where focus put it.)
      el.setSelectionRange(el.value.length, el.value.length);
    }
  }

  // A field's value as replies report it: bounded, and a secret only as the REDACTED marker.
  const fieldValue = (el) => (isSecret(el) ? (el.value ? REDACTED : '') : cap(el.value, TYPED_VALUE_MAX));

  // The native setter, not `el.value = …`: frameworks such as React watch the property on
  // the element, and only a value that bypasses their watcher makes them see a change.
  function setValue(el, value, data) {
    const proto = el.tagName === 'TEXTAREA' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
    Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, value);
    el.dispatchEvent(new InputEvent('input', { bubbles: true, composed: true, inputType: 'insertText', data }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }

  // Focuses a text field and puts `text` in it, replacing (`clear`) or appending; returns the
  // value to report.
  function enterText(el, kind, text, clear) {
    el.focus({ preventScroll: true });
    if (kind === 'editable') {
      placeCaret(el, kind, clear);
      if (text !== '') document.execCommand('insertText', false, text);
      else if (clear) document.execCommand('delete');
      return cap(el.innerText, TYPED_VALUE_MAX);
    }
    setValue(el, clear ? text : el.value + text, text);
    return fieldValue(el);
  }

  function typeText() {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const el = found.el;
    const field = textField(el, args.allowReadonly);
    if (field.error) return field;
    el.scrollIntoView(TO_CENTRE);
    const value = enterText(el, field.kind, args.text, args.clear);
    return done(found, { value, node: describe(el, deepActiveElement()) });
  }

  // Focus for trusted input: the keys or text that follow go to the target.
  function focusTarget() {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const el = found.el;
    if (args.editable) {
      const field = textField(el, args.allowReadonly);
      if (field.error) return field;
    }
    el.scrollIntoView(TO_CENTRE);
    el.focus({ preventScroll: true });
    const kind = textKind(el);
    if (kind && (args.editable || args.clear)) placeCaret(el, kind, args.clear);
    return done(found, { node: describe(el, deepActiveElement()) });
  }

  // The first ten of `texts`, quoted, for a message that lists the choices.
  const quotedList = (texts) => texts.slice(0, 10).map((t) => `"${cap(t, NAME_MAX)}"`).join(', ') + (texts.length > 10 ? ', …' : '');

  // An option's text as snapshots show it.
  const optionText = (option) => collapse(option.label || option.text);

  // The option of a <select> whose value is `value`, else whose visible text is `text`.
  function optionOf(select, value, text) {
    const options = Array.from(select.options);
    const byValue = value == null ? null : options.find((o) => o.value === value);
    if (byValue || text == null) return byValue || null;
    const want = collapse(text);
    return options.find((o) => optionText(o) === want || collapse(o.text) === want) || null;
  }

  // The enabled option of a <select> matching `value` or `text` (see optionOf), or why not.
  function pickOption(select, value, text) {
    const option = optionOf(select, value, text);
    if (!option) {
      const texts = Array.from(select.options, optionText);
      if (texts.length === 0) {
        return fail('OPTION_NOT_FOUND', `${labelOf(select)} has no options at all. Wait for the page to fill it, then retry.`);
      }
      const by = value == null ? 'text' : text == null ? 'value' : 'value or text';
      return fail('OPTION_NOT_FOUND', `${labelOf(select)} has no option with the ${by} "${cap(value == null ? text : value, NAME_MAX)}". It has ${texts.length} options: ${quotedList(texts)}. Pass one of these texts exactly (or an option's value).`);
    }
    if (option.matches(':disabled')) {
      return fail('NOT_EDITABLE', `The option "${cap(optionText(option), NAME_MAX)}" of ${labelOf(select)} is disabled; pick another option.`);
    }
    return { option };
  }

  // Chooses one option (alone, even in a multiple select) and tells the page as a user's
  // choice does. selectedIndex picks exactly this option where `value` would pick the first
  // option with the same value.
  function chooseOption(select, option) {
    select.selectedIndex = option.index;
    select.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    select.dispatchEvent(new Event('change', { bubbles: true }));
  }

  function selectNative() {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const el = found.el;
    if (el.tagName !== 'SELECT') {
      return fail('INVALID_ARGUMENT', `${labelOf(el)} is not a <select>; to pick from a custom dropdown, open it and call select_option without a selector.`);
    }
    const refused = refusal(el, true);
    if (refused) return refused;
    const picked = pickOption(el, args.value, args.text);
    if (picked.error) return picked;
    chooseOption(el, picked.option);
    return done(found, { node: describe(el, deepActiveElement()), value: picked.option.value, text: optionText(picked.option) });
  }

  const OPTION_ROLES = new Set(['option', 'menuitem', 'menuitemradio', 'menuitemcheckbox', 'treeitem', 'gridcell']);
  const squash = (s) => s.replace(/\s+/g, '').toLowerCase();

  // Whether `inner` is `outer` or inside it, across shadow roots and slots.
  function deepContains(outer, inner) {
    for (let at = inner; at; at = at.assignedSlot || at.parentNode || at.host) {
      if (at === outer) return true;
    }
    return false;
  }

  // The elements of `list` that contain no other element of it.
  const innermost = (list) => list.filter((el) => !list.some((other) => other !== el && deepContains(el, other)));

  // An option of an open custom dropdown, by its exact text: the rendered element with that
  // text, preferring ARIA options and menu items, then list items, then any element; scrolled
  // into view inside its list and hit-tested like a click.
  function findOption() {
    const want = collapse(args.text);
    const needle = squash(want);
    const levels = [[], [], []];
    const hidden = [false, false, false];
    for (const el of deepQuery('*')) {
      // textContent first: it is cheap, and holds every word innerText shows (in any case,
      // as text-transform only changes innerText).
      if (SKIP_TAGS.has(el.tagName) || !squash(el.textContent).includes(needle)) continue;
      // The rendered text, or the name a snapshot showed the agent.
      if (collapse(el.innerText) !== want && textOf(el, true) !== want) continue;
      const priority = OPTION_ROLES.has(rawRole(el)) ? 0 : el.tagName === 'LI' ? 1 : 2;
      if (visible(el)) levels[priority].push(el); else hidden[priority] = true;
    }
    // A hidden ARIA option with the text means its dropdown is closed: the same words shown
    // elsewhere (the dropdown's button, a link) are not what the agent asked for.
    const level = levels.find((list, i) => list.length > 0 || (i === 0 && hidden[0])) || [];
    const shown = `"${cap(want, NAME_MAX)}"`;
    if (level.length === 0) {
      return noOptionShown(shown, hidden.includes(true));
    }
    const matches = innermost(level);
    if (matches.length > 1) {
      return fail('SELECTOR_NOT_UNIQUE', `${matches.length} visible elements have the text ${shown}; select_option needs exactly one. Close the other lists, or click the option you mean by its ref from a snapshot.`);
    }
    const el = matches[0];
    // 'nearest' scrolls the dropdown's own list just enough, and leaves the page where it is.
    el.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior: 'instant' });
    const point = hitPoint(el);
    if (point.error) return point;
    return ok({ x: point.x, y: point.y, node: describe(el, deepActiveElement()) });
  }

  // Why findOption found nothing to click, with the options that are shown, if any. An option
  // that exists but is hidden is TARGET_NOT_VISIBLE (hidden options are never chosen; a closed
  // dropdown may still open); one that does not exist is OPTION_NOT_FOUND.
  function noOptionShown(shown, hiddenExists) {
    const texts = deepQuery('li, [role]')
      .filter((el) => (el.tagName === 'LI' || OPTION_ROLES.has(rawRole(el))) && visible(el))
      .map((el) => collapse(el.innerText))
      .filter(Boolean);
    const code = hiddenExists ? 'TARGET_NOT_VISIBLE' : 'OPTION_NOT_FOUND';
    const what = hiddenExists ? `The option ${shown} exists but is hidden.` : `No visible element has the text ${shown}.`;
    if (texts.length === 0) {
      return fail(code, `${what} No options are shown: open the dropdown first (click it), then call select_option again with an option's exact text.`);
    }
    return fail(code, `${what} The ${texts.length} options and list items shown are: ${quotedList(texts)}. Call again with one of these texts exactly.`);
  }

  const FORM_CONTROLS = new Set(['INPUT', 'SELECT', 'TEXTAREA', 'BUTTON']);
  const ATTRIBUTE_MAX = 200;
  const ATTRIBUTES_MAX = 20;

  // Everything read_element_state reports about the target, hidden or not.
  function readState() {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const el = found.el;
    const tag = el.tagName;
    const secret = isSecret(el);
    const focused = deepActiveElement();
    const state = { tag: tag.toLowerCase() };
    if (tag === 'INPUT') state.type = el.type;
    const value = tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' ? el.value : el.isContentEditable ? el.innerText : null;
    if (value !== null) {
      if (secret) {
        state.value = value ? REDACTED : '';
      } else {
        state.value = value.slice(0, args.maxChars);
        if (value.length > args.maxChars) state.valueTruncated = true;
      }
    }
    if (tag === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) state.checked = el.checked;
    if (tag === 'OPTION') state.selected = el.selected;
    if (tag === 'SELECT') state.selectedText = cap(Array.from(el.selectedOptions, optionText).join(', '), args.maxChars);
    if (FORM_CONTROLS.has(tag)) {
      if (tag === 'INPUT' || tag === 'TEXTAREA') state.readonly = el.readOnly;
      state.disabled = el.matches(':disabled');
      if (tag !== 'BUTTON') state.required = el.required;
    }
    state.visible = visible(el) && !(tag === 'INPUT' && el.type === 'hidden');
    state.focused = el === focused;
    if (el.validationMessage) state.validationMessage = cap(el.validationMessage, PROSE_MAX);
    if (args.attributes.length) {
      state.attributes = {};
      for (const name of args.attributes.slice(0, ATTRIBUTES_MAX)) {
        const raw = el.getAttribute(name);
        if (raw === null) continue;
        state.attributes[name] = secret && name.toLowerCase() === 'value' && raw ? REDACTED : cap(raw, ATTRIBUTE_MAX);
      }
    }
    return done(found, { node: describe(el, focused), state });
  }

  // Input types with a format, which fill_form sets through the value setter like text. The
  // browser empties a value that does not fit, so fill_form checks it first.
  const FORMATS = {
    number: 'a number such as 42 or 3.5',
    date: 'a date as YYYY-MM-DD',
    time: 'a time as HH:MM or HH:MM:SS',
    'datetime-local': 'a date and time as YYYY-MM-DDTHH:MM',
    month: 'a month as YYYY-MM',
    week: 'a week as YYYY-Www (e.g. 2024-W05)',
    color: 'a colour as #rrggbb',
  };

  function fits(type, value) {
    const probe = document.createElement('input');
    probe.type = type;
    probe.value = value;
    return probe.value !== '';
  }

  // How fill_form sets a field: 'check' (checkbox, radio), 'select', or a text kind.
  function fillKind(el) {
    if (el.tagName === 'SELECT') return 'select';
    if (el.tagName !== 'INPUT') return textKind(el);
    if (el.type === 'checkbox' || el.type === 'radio') return 'check';
    return TEXT_INPUT_TYPES.has(el.type) || el.type in FORMATS || el.type === 'range' ? 'input' : null;
  }

  // The form a field belongs to (a contenteditable region has no `form`: its enclosing one).
  const formOf = (el) => ('form' in el ? el.form : el.closest('form'));

  // One fill_form field checked against its value, changing nothing: {found, el, kind,
  // option?}, or why it cannot be set.
  function checkField(field) {
    const found = resolveTarget(field.target);
    if (found.error) return found;
    const el = found.el;
    const kind = fillKind(el);
    const value = field.value;
    if (!kind) {
      return fail('NOT_EDITABLE', `${labelOf(el)} takes no value: fill_form sets text fields, selects, checkboxes, radio buttons and contenteditable elements.`);
    }
    const refused = refusal(el, kind === 'check');
    if (refused) return refused;
    const named = `${targetText(field.target)} (${labelOf(el)})`;
    if (kind === 'check') {
      if (typeof value !== 'boolean') return fail('INVALID_ARGUMENT', `${named} is a ${el.type === 'radio' ? 'radio button' : 'checkbox'}; its value must be true or false.`);
      if (el.type === 'radio' && !value && el.checked) return fail('INVALID_ARGUMENT', `${named} is a radio button, which cannot be unchecked; check another one of its group instead.`);
      return { found, el, kind };
    }
    if (typeof value !== 'string') return fail('INVALID_ARGUMENT', `${named} takes text, not true or false; only checkboxes and radio buttons take booleans.`);
    if (kind === 'select') {
      const picked = pickOption(el, value, value);
      if (picked.error) return picked;
      return { found, el, kind, option: picked.option };
    }
    if (kind === 'input' && el.type in FORMATS && value !== '' && !fits(el.type, value)) {
      return fail('INVALID_ARGUMENT', `${named} is a ${el.type} field and takes ${FORMATS[el.type]}; "${cap(value, NAME_MAX)}" is not one.`);
    }
    return { found, el, kind };
  }

  // Checks every field first and changes nothing unless all can be set; then sets them in
  // order and reports each with the browser's validation verdict.
  function fillForm() {
    const fields = [];
    for (const [i, field] of args.fields.entries()) {
      const checked = checkField(field);
      if (checked.error) return fail(checked.error.code, `field ${i + 1}: ${checked.error.message}`);
      fields.push(checked);
    }
    const form = fields.length ? formOf(fields[0].el) : null;
    for (const [i, field] of fields.entries()) {
      if (formOf(field.el) !== form) {
        return fail('INVALID_ARGUMENT', `field ${i + 1}: ${labelOf(field.el)} is not in the same form as field 1; fields of different forms (or outside any form) need separate fill_form calls.`);
      }
    }
    if (args.submit && !form) {
      return fail('INVALID_ARGUMENT', 'submit needs the fields to be in a form, and they are in none. Fill them without submit, then click the button that sends them.');
    }
    const values = fields.map(({ el, kind, option }, i) => {
      const value = args.fields[i].value;
      if (kind === 'select') {
        chooseOption(el, option);
        return el.value;
      }
      if (kind !== 'check') return enterText(el, kind, value, true);
      if (el.checked !== value) el.click();
      return el.checked;
    });
    // Validity once all are set: a field can depend on another (a repeated password).
    const focused = deepActiveElement();
    const results = fields.map(({ found, el }, i) => {
      const valid = el.checkValidity ? el.checkValidity() : true;
      const result = { node: describe(el, focused), value: values[i], valid };
      if (!valid) result.validationMessage = cap(el.validationMessage, PROSE_MAX);
      if (found.rebound) result.rebound = found.rebound;
      return result;
    });
    const formValid = form ? form.checkValidity() : results.every((r) => r.valid);
    let submitted = false;
    if (args.submit && formValid) {
      try {
        form.requestSubmit();
        submitted = true;
      } catch (e) {
        submitted = false;
      }
    }
    return ok({ fields: results, submitted, formValid });
  }

  // Whether `el` scrolls its own content.
  function scrollable(el) {
    const style = getComputedStyle(el);
    const scrolls = (overflow) => overflow === 'auto' || overflow === 'scroll' || overflow === 'overlay';
    return (el.scrollHeight > el.clientHeight && scrolls(style.overflowY)) || (el.scrollWidth > el.clientWidth && scrolls(style.overflowX));
  }

  const pageScroller = () => document.scrollingElement || document.documentElement;

  // The element's parent in the rendered tree (across slots and shadow roots), or null.
  const flatParent = (el) => el.assignedSlot || el.parentElement || el.getRootNode().host || null;

  // What scrolls when `el` is scrolled: itself if it can, else its nearest scrollable
  // ancestor, else the page.
  function scrollerOf(el) {
    const page = pageScroller();
    for (let at = el; at && at !== page; at = flatParent(at)) {
      if (scrollable(at)) return at;
    }
    return page;
  }

  // Whether the scroller reached its end in the direction it moved (horizontal when it moved
  // only sideways).
  function atEnd(scroller, dx, dy) {
    if (dy === 0 && dx !== 0) {
      return dx > 0 ? scroller.scrollLeft + scroller.clientWidth >= scroller.scrollWidth - 2 : scroller.scrollLeft <= 2;
    }
    return dy < 0 ? scroller.scrollTop <= 2 : scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - 2;
  }

  function scroll() {
    const reference = args.to || args.target;
    const found = reference ? resolveTarget(reference) : null;
    if (found && found.error) return found;
    let scroller;
    let dx = args.dx;
    let dy = args.dy;
    const value = {};
    if (args.to) {
      // What moved is reported: the nearest scroller around `to`.
      scroller = scrollerOf(flatParent(found.el) || pageScroller());
      const [left, top] = [scroller.scrollLeft, scroller.scrollTop];
      found.el.scrollIntoView({ block: 'center', inline: 'nearest', behavior: 'instant' });
      dx = scroller.scrollLeft - left;
      dy = scroller.scrollTop - top;
      value.node = describe(found.el, deepActiveElement());
    } else {
      scroller = found ? scrollerOf(found.el) : pageScroller();
      if (dx === 0 && dy === 0) dy = Math.round(scroller.clientHeight * 0.9);
      scroller.scrollBy({ left: dx, top: dy, behavior: 'instant' });
    }
    value.scrollX = Math.round(scroller.scrollLeft);
    value.scrollY = Math.round(scroller.scrollTop);
    value.atEnd = atEnd(scroller, dx, dy);
    return found ? done(found, value) : ok(value);
  }

  // Whitespace is collapsed on both sides: innerText breaks lines where the agent's text, read
  // from a snapshot, has spaces.
  function checkText() {
    const root = document.body || document.documentElement;
    const text = !root ? '' : document.body ? root.innerText : root.textContent;
    return ok({ found: collapse(text).includes(collapse(args.text)) });
  }

  function checkSelector() {
    const matches = queryAll(args.css);
    if (matches.error) return matches;
    return ok({ visible: Array.from(matches).some(visible), count: matches.length });
  }

  // The text selected in this frame (a field's selection included), or '' when none.
  function selectedText() {
    const el = deepActiveElement();
    // A password field's selection is never read, by either path below.
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
  function localStorageEntries() {
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
  function rect() {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const box = found.el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) {
      return fail('TARGET_NOT_VISIBLE', `${labelOf(found.el)} has no size on screen, so there is nothing to capture.`);
    }
    return done(found, { x: box.left + window.scrollX, y: box.top + window.scrollY, width: box.width, height: box.height });
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
    el.scrollIntoView(TO_CENTRE);
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
      else if (command === 'domClick') reply = domClick();
      else if (command === 'focus') reply = focusTarget();
      else if (command === 'point') reply = point();
      else if (command === 'selectNative') reply = selectNative();
      else if (command === 'findOption') reply = findOption();
      else if (command === 'readState') reply = readState();
      else if (command === 'fillForm') reply = fillForm();
      else if (command === 'scroll') reply = scroll();
      else if (command === 'checkText') reply = checkText();
      else if (command === 'checkSelector') reply = checkSelector();
      else if (command === 'selectedText') reply = selectedText();
      else if (command === 'localStorage') reply = localStorageEntries();
      else if (command === 'rect') reply = rect();
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
