// Part of the in-page collector's factory (see 00-prelude.js). This part is the page model: the
// last walk of the whole document, kept between calls and brought up to date by walking again
// only the subtrees that changed, so that a call costs what changed and what is shown, not
// the size of the document (docs/observations.md, "The page model").
//
// The walk (20-walk.js) records every element it visits on its own — one whose words join no
// line around it — with the state the walk was in there and the range of nodes it produced.
// What happens in the page marks elements as touched:
// - mutation records (a MutationObserver on the document and on every open shadow root the
//   walk entered): the changed element, or the parent of changed children or text, and its
//   parent too when the page's CSS has sibling combinators (`+`, `~`);
// - events whose target's facts may change without a mutation: focus, input, change, clicks,
//   keys, toggles, loads and errors (an image's box), transitions and animations ending;
// - elements CSS state rules may restyle (`:hover`, `:focus`, `:checked`…, when the rule sets
//   a property the walk reads: display, visibility, opacity, cursor, size, position, clip,
//   font size, content): after any pointer, focus, key or input event, the elements matching
//   such a rule's selector without its state pseudo-classes;
// - the targets of running animations and transitions.
// At the next snapshot each touched element's nearest record is walked again from its saved
// state and its range of nodes replaced. Walked again whole: on the first snapshot, when style
// sheets are added or grow, a shadow root is attached or a custom element upgraded (the stamp),
// the window is resized, an `id`, `aria-labelledby` or `for` changes or a label is inserted or
// removed (names that point across the document), any change at all while the CSS has `:has()`, a state event while a state
// rule cannot be read (cross-origin style sheets, nested rules) and too many touched elements.
// A page's script that sets `.checked` or a value without any event, and a rule edited in place
// (`rule.style.display = …`), go unseen until one of those happens; facts that change silently
// (boxes, values, states) are read afresh for every node sent.
//
// A whole walk for a snapshot with a window stops reading once the window's last line is
// placed: the elements after it are recorded pending (`walk`'s `deferAfter`), counted by an
// estimate (`pendingEstimate`) and filled in after the answer in idle slices (`fillPending`).
// A query, a call without a window and the check mode fill in the rest first.

  const WATCH = { subtree: true, childList: true, attributes: true, characterData: true };
  const TARGET_EVENTS = ['focusin', 'focusout', 'input', 'change', 'click', 'keydown', 'keyup', 'toggle', 'load', 'error', 'transitionend', 'transitioncancel', 'animationend', 'animationcancel'];
  const STATE_EVENTS = ['mouseover', 'mouseout', 'pointerdown', 'pointerup', 'mousedown', 'mouseup', 'focusin', 'focusout', 'input', 'change', 'click', 'keydown', 'keyup'];
  // Attributes that name other elements: a change walks the whole document again.
  const CROSS_ATTRIBUTES = new Set(['id', 'aria-labelledby', 'for']);
  // Elements whose insertion or removal changes nothing the walk reports.
  const INERT_TAGS = new Set(['SCRIPT', 'NOSCRIPT', 'TEMPLATE', 'META']);
  // More touched elements than this (or matched by state rules), and the whole document is
  // walked again: past it, one walk costs less than many small ones.
  const TOUCH_LIMIT = 400;
  // CSS state pseudo-classes that events (not mutations) change.
  const STATE_PSEUDO = /:(?:hover|active|focus-within|focus-visible|focus|checked|indeterminate|user-valid|user-invalid|valid|invalid|placeholder-shown|autofill|target-within|target|popover-open|open|modal|in-range|out-of-range|default)(?![\w-])/g;
  // Pseudo-elements, which `querySelectorAll` does not take (the walk reads their element).
  const PSEUDO_ELEMENT = /::?(?:before|after|marker|placeholder|selection|first-line|first-letter|backdrop|file-selector-button|-webkit-[\w-]+)(?![\w-])/g;
  // Properties whose value the walk reads (directly or through a box).
  const WALK_PROPERTIES = new Set(['display', 'visibility', 'opacity', 'cursor', 'content', 'content-visibility', 'clip', 'clip-path', 'font-size', 'position', 'width', 'height', 'min-width', 'min-height', 'max-width', 'max-height', 'overflow-x', 'overflow-y', 'top', 'left', 'right', 'bottom', 'transform', 'translate', 'scale']);

  const model = ids.model || (ids.model = watchDocument());
  function watchDocument() {
    const m = { raw: null, nodes: null, records: [], byEl: new WeakMap(), touched: new Set(), whole: true, state: false, stamp: '', keepHidden: false, css: null, roots: [], watched: new WeakSet(), generation: 0, since: new WeakMap(), fillOverhead: 0 };
    m.observer = new MutationObserver((records) => noteMutations(m, records));
    m.observer.observe(document, WATCH);
    const onTarget = (event) => touch(m, event.composedPath()[0] || event.target);
    const onState = () => {
      m.state = true;
    };
    for (const type of TARGET_EVENTS) document.addEventListener(type, onTarget, { capture: true, passive: true });
    for (const type of STATE_EVENTS) document.addEventListener(type, onState, { capture: true, passive: true });
    const onWhole = () => {
      m.whole = true;
    };
    window.addEventListener('resize', onWhole, { passive: true });
    window.addEventListener('pageshow', onWhole, { passive: true });
    document.addEventListener('fullscreenchange', onWhole, { passive: true });
    m.onTarget = onTarget;
    m.onState = onState;
    return m;
  }

  // Whether a command other than a read is running (90-dispatch.js): the elements it acts on
  // are touched (their events are heard too; this holds for one that sets a property silently),
  // and the state rules' elements are looked at again.
  let acting = false;
  function startCommand(reads) {
    acting = !reads;
    if (acting) model.state = true;
  }
  function actedOn(el) {
    if (acting) touch(model, el);
  }

  // An open shadow root the walk entered: its mutations and the events that stay inside it
  // (load, change, toggle, transitions) are heard there.
  function watchRoot(root) {
    if (model.watched.has(root)) return;
    model.watched.add(root);
    model.roots.push(new WeakRef(root));
    model.observer.observe(root, WATCH);
    for (const type of TARGET_EVENTS) root.addEventListener(type, model.onTarget, { capture: true, passive: true });
    for (const type of STATE_EVENTS) root.addEventListener(type, model.onState, { capture: true, passive: true });
  }

  function touch(m, node) {
    if (m.whole || node === null || node === undefined) return;
    if (node.nodeType !== 1) node = node.parentNode;
    if (node === null || node.nodeType !== 1) {
      // The document or a shadow root itself (a load event on the window's document).
      if (node !== null && node.host) node = node.host; else return;
    }
    m.touched.add(node);
    if (m.touched.size > TOUCH_LIMIT) m.whole = true;
  }

  function inert(node) {
    return node.nodeType === 8 || (node.nodeType === 1 && INERT_TAGS.has(node.tagName));
  }

  // A label inserted or removed names a control anywhere in the document.
  function holdsLabel(node) {
    return node.nodeType === 1 && (node.tagName === 'LABEL' || node.querySelector('label') !== null);
  }

  function noteMutations(m, records) {
    if (m.whole) return;
    for (const record of records) {
      const target = record.target;
      if (record.type === 'childList') {
        let matters = false;
        for (const node of record.addedNodes) if (!inert(node)) matters = true;
        for (const node of record.removedNodes) if (!inert(node)) matters = true;
        if (matters) touch(m, target);
        for (const node of record.addedNodes) if (holdsLabel(node)) m.whole = true;
        for (const node of record.removedNodes) if (holdsLabel(node)) m.whole = true;
      } else if (record.type === 'attributes') {
        if (CROSS_ATTRIBUTES.has(record.attributeName)) {
          m.whole = true;
          return;
        }
        touch(m, target);
        // Sibling combinators restyle the siblings after it.
        if (m.css === null || m.css.sibling) touch(m, target.parentNode);
      } else {
        touch(m, target.parentNode);
      }
    }
  }

  // What the page's CSS means for the model, read once per stamp: whether it has `:has()`
  // (any change may restyle ancestors) or sibling combinators, and the selectors of its state
  // rules with the state pseudo-classes taken out (each root with its own).
  function cssProfile(m) {
    if (m.css !== null && m.css.stamp === m.stamp) return m.css;
    const css = { stamp: m.stamp, has: false, sibling: false, opaque: false, states: [] };
    const read = (root, sheets) => {
      const selectors = new Set();
      const visitRules = (rules, nested) => {
        for (const rule of rules) {
          const text = rule.selectorText;
          if (typeof text === 'string') {
            noteRule(css, text, rule.style, nested, selectors);
            if (rule.cssRules && rule.cssRules.length) visitRules(rule.cssRules, true);
          } else if (rule.cssRules) {
            visitRules(rule.cssRules, nested);
          }
        }
      };
      for (const sheet of sheets) {
        let rules = null;
        try { rules = sheet.cssRules; } catch (e) { css.opaque = true; }
        if (rules) visitRules(rules, false);
      }
      if (selectors.size) css.states.push({ root, selectors: Array.from(selectors) });
    };
    read(document, [...document.styleSheets, ...document.adoptedStyleSheets]);
    // Roots gone from the page are forgotten here (a page may make and drop many).
    m.roots = m.roots.filter((ref) => {
      const root = ref.deref();
      if (!root || !root.host || !root.host.isConnected) {
        if (root) m.watched.delete(root);
        return false;
      }
      read(root, [...root.styleSheets, ...root.adoptedStyleSheets]);
      return true;
    });
    m.css = css;
    return css;
  }

  function noteRule(css, text, style, nested, selectors) {
    if (text.includes(':has(')) css.has = true;
    const bare = text.replace(/\([^()]*\)/g, '()').replace(/\[[^\]]*\]/g, '[]');
    if (/[+~]/.test(bare)) css.sibling = true;
    STATE_PSEUDO.lastIndex = 0;
    if (!STATE_PSEUDO.test(text)) return;
    let matters = false;
    for (let i = 0; i < style.length; i++) {
      const property = style[i];
      if (WALK_PROPERTIES.has(property) || property.startsWith('--')) matters = true;
    }
    if (!matters) return;
    // A nested rule's selector is relative to its parent's; a state inside :not() cannot be
    // taken out by replacing it.
    if (nested || /:not\([^)]*:/.test(text)) {
      css.opaque = true;
      return;
    }
    selectors.add(text.replace(STATE_PSEUDO, ':is(*)').replace(PSEUDO_ELEMENT, ''));
  }

  // The elements state rules may restyle; null when they cannot be told.
  function stateTouched(m, css) {
    if (css.opaque) return null;
    const found = [];
    for (const { root, selectors } of css.states) {
      for (const selector of selectors) {
        let matches;
        try { matches = root.querySelectorAll(selector); } catch (e) { return null; }
        for (const el of matches) found.push(el);
        if (found.length > TOUCH_LIMIT) return null;
      }
    }
    return found;
  }

  // Elements named by a touched element's words: those whose `aria-labelledby` points at it or
  // at an element around it, and the control of a label around it.
  function touchNamed(m) {
    const labels = labelIds();
    for (const el of Array.from(m.touched)) {
      for (let at = el; at; at = at.parentElement || (at.parentNode && at.parentNode.host) || null) {
        if (at.id && labels.has(at.id)) {
          for (const named of at.getRootNode().querySelectorAll('[aria-labelledby]')) {
            if ((named.getAttribute('aria-labelledby') || '').split(/\s+/).includes(at.id)) touch(m, named);
          }
        }
        if (at.tagName === 'LABEL' && at.control) touch(m, at.control);
      }
    }
  }

  function nearestRecord(m, el) {
    if (!el.isConnected) return undefined;
    for (let at = el; at; at = at.parentElement || (at.parentNode && at.parentNode.host) || null) {
      const record = m.byEl.get(at);
      if (record !== undefined && record.live) return record;
    }
    return null;
  }

  // The whole document's nodes (reserved slots left out), brought up to date. With
  // `deferAfter` (a snapshot that shows only a window), a whole walk stops reading once that
  // many nodes are placed and leaves the rest pending (`walk` in 20-walk.js), filled in later
  // in idle slices (`fillPending`); without it, pending elements are filled in first, so the
  // nodes are those of the whole document.
  function modelNodes(keepHidden, deferAfter) {
    modelNodesOf(keepHidden, deferAfter);
    if (deferAfter === undefined && model.pending) completeModel();
    return model.nodes;
  }

  function modelNodesOf(keepHidden, deferAfter) {
    const m = model;
    const stamp = pageStamp();
    noteMutations(m, m.observer.takeRecords());
    if (m.raw === null || stamp !== m.stamp || m.keepHidden !== keepHidden) m.whole = true;
    m.stamp = stamp;
    let dirty = [];
    if (!m.whole) {
      const css = cssProfile(m);
      if (css.has && (m.touched.size > 0 || m.state)) m.whole = true;
      if (!m.whole && m.state && (css.opaque || css.states.length)) {
        const restyled = stateTouched(m, css);
        if (restyled === null) m.whole = true; else for (const el of restyled) touch(m, el);
      }
      if (!m.whole) for (const animation of document.getAnimations()) touch(m, animation.effect && animation.effect.target);
      if (!m.whole) touchNamed(m);
      for (const el of m.whole ? [] : m.touched) {
        const record = nearestRecord(m, el);
        if (record === null) m.whole = true;
        if (record) dirty.push(record);
      }
    }
    m.touched.clear();
    m.state = false;
    m.walkedWhole = m.whole;
    if (m.whole) {
      m.generation += 1;
      // Only the document's first walk stops at the window: a later whole walk must read
      // everything, or a delta could not tell what changed below the window since the last
      // view (the part filled in later counts as unchanged).
      wholeWalk(m, keepHidden, m.raw === null ? deferAfter : undefined);
      // A walk that stopped early is checked (against a fresh one) once it is complete.
      m.walkedWhole = !m.pending;
      return m.nodes;
    }
    if (dirty.length === 0) return m.nodes;
    m.generation += 1;
    // Outermost first, and none inside another one walked again.
    dirty = Array.from(new Set(dirty)).sort((a, b) => a.level - b.level);
    const labels = labelIds();
    const focused = deepActiveElement();
    for (const record of dirty) {
      let inside = false;
      for (let at = record; at !== null; at = at.parent) if (!at.live) inside = true;
      if (!inside) walkAgain(m, record, labels, focused, keepHidden);
    }
    m.nodes = m.raw.filter((n) => n !== null);
    return m.nodes;
  }

  function wholeWalk(m, keepHidden, deferAfter) {
    const records = [];
    const before = m.nodes;
    m.raw = walk(document.documentElement, null, false, labelIds(), deepActiveElement(), keepHidden, { ctx: FREE, quiet: 0, tiny: false, depth: 0, popup: null, records, deferAfter });
    keepUnchanged(m, before || [], m.raw);
    m.records = records;
    m.byEl = new WeakMap();
    let pending = false;
    for (const record of records) {
      m.byEl.set(record.el, record);
      if (record.pending) pending = true;
    }
    m.nodes = m.raw.filter((n) => n !== null);
    m.keepHidden = keepHidden;
    m.whole = false;
    m.pending = pending;
    m.observer.takeRecords();
    if (pending) {
      // Popups are sent whole wherever they are (`popupsAround`): those in a deferred part
      // are walked now.
      const holding = new Set();
      for (const el of possiblePopups(document)) {
        const record = nearestRecord(m, el);
        if (record && record.pending) holding.add(record);
      }
      for (const host of shadowPopupHosts()) {
        const record = nearestRecord(m, host);
        if (record && record.pending) holding.add(record);
      }
      if (holding.size) fillPending(m, Infinity, holding);
      scheduleFill(m);
    }
  }

  // The elements under `root` that may have a popup role (a superset of POPUP_ROLES; a
  // select's own listbox is none): dialogs, and elements with a role naming one of them in any
  // of its tokens, whatever its case. The browser finds the elements with a role; their roles
  // are read here (a selector matching the tokens case-insensitively cost 6 ms on 60,000
  // elements, this 2).
  function possiblePopups(root) {
    const found = [];
    for (const el of root.querySelectorAll('[role], dialog')) {
      const role = el.getAttribute('role');
      if (el.localName === 'dialog' || (role !== null && role.toLowerCase().split(/\s+/).some((token) => POPUP_ROLES.has(token)))) found.push(el);
    }
    return found;
  }

  // The document's hosts of open shadow roots that hold a possible popup (in nested roots too,
  // named by their outermost host): a web component's modal is often appended at the end of the
  // body, in the part a first walk leaves for later. Reads no style or layout.
  function shadowPopupHosts() {
    const holds = (root) => possiblePopups(root).length > 0 || hostsIn(root).some((inner) => holds(inner.shadowRoot));
    return documentHosts().filter((host) => holds(host.shadowRoot));
  }

  // The document's elements (not inside shadow roots) that host an open shadow root. Only
  // autonomous custom elements and the standard elements of SHADOW_HOSTS can have one: the
  // first are found by their names' hyphen with an XPath the browser evaluates on its own, the
  // others from the lists the stamp reads on every call anyway. A tree walk handing every
  // element to this world (whose first sight of an element makes its wrapper) cost 12–25 ms
  // on 60,000 elements, this about 3.
  function documentHosts() {
    const hosts = standardHosts(document);
    const custom = document.evaluate('//*[contains(local-name(), "-")]', document, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
    for (let i = 0; i < custom.snapshotLength; i++) {
      const el = custom.snapshotItem(i);
      if (el.shadowRoot) hosts.push(el);
    }
    return hosts;
  }

  // The elements under `root` (a shadow root; not inside their own shadow roots) that host an
  // open shadow root.
  function hostsIn(root) {
    const hosts = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
    for (let el = walker.nextNode(); el !== null; el = walker.nextNode()) if (el.shadowRoot) hosts.push(el);
    return hosts;
  }

  // How long one idle slice of filling in pending elements may walk, in milliseconds: short
  // enough that the page's own work and tabwire's next call wait little for it. A slice also
  // pays for what does not shrink with it (finding the pending records, putting the filled ones
  // in place: both grow with the document), so on a page where that costs more, a slice walks
  // as long as it cost last time: the whole fill then costs at most about twice its walking,
  // not a document's worth per 8 ms of walking.
  const FILL_SLICE_MS = 8;

  // Fills in the model's pending elements in slices between the page's tasks, so later calls
  // find the whole document walked.
  function scheduleFill(m) {
    if (m.fillTimer !== undefined || !m.pending) return;
    m.fillTimer = setTimeout(() => {
      m.fillTimer = undefined;
      // The per-call caches (label and pointer-rule lookups) are a call's; a slice is one too.
      labelMaps = null;
      pointerTrees = null;
      try {
        const started = performance.now();
        const walked = fillPending(m, started + Math.max(FILL_SLICE_MS, m.fillOverhead), null);
        m.fillOverhead = performance.now() - started - walked;
      } finally {
        labelMaps = null;
        pointerTrees = null;
      }
      scheduleFill(m);
    }, 0);
  }

  // Every pending element filled in now (a query, a check, a call without a window).
  function completeModel() {
    fillPending(model, Infinity, null);
  }

  // Walks pending elements (all, or those in `only`) from their saved state until `deadline`,
  // and puts their nodes and records in place in one pass. Their nodes count as unchanged
  // since the walk that deferred them: no one was shown them before, so no delta names them.
  // Returns how long it walked, in milliseconds (the rest of its time grows with the document).
  function fillPending(m, deadline, only) {
    noteMutations(m, m.observer.takeRecords());
    if (m.whole || !m.pending) {
      // A whole walk is due: the next snapshot makes it, and what is pending goes with it.
      if (m.whole) m.pending = false;
      return 0;
    }
    let walking = 0;
    const labels = labelIds();
    const focused = deepActiveElement();
    const fills = new Map();
    let left = false;
    for (const record of m.records) {
      if (!record.pending || !record.live || (only !== null && !only.has(record))) continue;
      if (fills.size > 0 && performance.now() > deadline) {
        left = true;
        break;
      }
      const fresh = [];
      const began = performance.now();
      const raw = record.el.isConnected ? walk(record.el, record.group, record.layout, labels, focused, m.keepHidden, { ctx: record.ctx, quiet: record.quiet, tiny: record.tiny, depth: record.depth, popup: record.popup, records: fresh }) : [];
      walking += performance.now() - began;
      fills.set(record, { raw, fresh });
    }
    if (fills.size > 0) putFills(m, fills);
    if (only !== null) left = m.records.some((record) => record.pending && record.live);
    m.pending = left;
    return walking;
  }

  // Puts filled-in pending records (each a leaf with an empty range) and their nodes in place:
  // a record's range moves by the nodes filled in before it in record order (records are in
  // document order, each before its descendants), and its end also by those inside it.
  function putFills(m, fills) {
    const raw = [];
    const records = [];
    const open = [];
    let moved = 0;
    let copied = 0;
    const close = (level) => {
      while (open.length > 0 && open[open.length - 1].level >= level) open.pop().end += moved;
    };
    for (const record of m.records) {
      close(record.level);
      const fill = fills.get(record);
      if (fill === undefined) {
        record.start += moved;
        records.push(record);
        open.push(record);
        continue;
      }
      for (let i = copied; i < record.start; i++) raw.push(m.raw[i]);
      copied = record.start;
      const start = record.start + moved;
      record.live = false;
      if (fill.fresh.length === 0) {
        // Its element left the document: an empty range in its place.
        records.push({ ...record, start, end: start, pending: false, live: true });
        continue;
      }
      for (const node of fill.raw) raw.push(node);
      for (const fresh of fill.fresh) {
        fresh.start += start;
        fresh.end += start;
        fresh.level += record.level;
        m.byEl.set(fresh.el, fresh);
        records.push(fresh);
      }
      fill.fresh[0].parent = record.parent;
      moved += fill.raw.length;
    }
    close(-1);
    for (let i = copied; i < m.raw.length; i++) raw.push(m.raw[i]);
    m.raw = raw;
    m.records = records;
    m.nodes = raw.filter((n) => n !== null);
  }

  // The lines and characters pending elements will likely add: each as many lines as its
  // walked siblings of the same tag have on average (one when it has none), each line as many
  // characters as the walked lines on average.
  function pendingEstimate(m) {
    const siblings = new Map();
    let any = false;
    const of = (record) => {
      let bySibling = siblings.get(record.parent);
      if (bySibling === undefined) siblings.set(record.parent, bySibling = new Map());
      let found = bySibling.get(record.el.tagName);
      if (found === undefined) bySibling.set(record.el.tagName, found = { walked: 0, lines: 0, pending: 0 });
      return found;
    };
    for (const record of m.records) {
      if (!record.live) continue;
      const found = of(record);
      if (record.pending) {
        found.pending += 1;
        any = true;
      } else {
        found.walked += 1;
        found.lines += record.end - record.start;
      }
    }
    let lines = 0;
    for (const bySibling of siblings.values()) {
      for (const found of bySibling.values()) {
        if (found.pending > 0) lines += found.walked > 0 ? Math.round((found.pending * found.lines) / found.walked) : found.pending;
      }
    }
    let chars = 0;
    for (const node of m.nodes) chars += charsOf(node);
    return { pending: any, lines, chars: m.nodes.length ? Math.round((lines * chars) / m.nodes.length) : 0 };
  }

  // Walks `record`'s element again from its saved state and puts its nodes and records in
  // place of the old ones. An element that produced nothing and now produces something (or
  // the reverse) may change its parent's line (a container is shown when something inside it
  // is), so the parent is walked again too.
  function walkAgain(m, record, labels, focused, keepHidden) {
    const fresh = [];
    const raw = walk(record.el, record.group, record.layout, labels, focused, keepHidden, { ctx: record.ctx, quiet: record.quiet, tiny: record.tiny, depth: record.depth, popup: record.popup, records: fresh });
    const start = record.start;
    const oldLength = record.end - start;
    const delta = raw.length - oldLength;
    const at = m.records.indexOf(record);
    let after = at + 1;
    while (after < m.records.length && m.records[after].level > record.level) after += 1;
    for (let i = at; i < after; i++) m.records[i].live = false;
    for (const r of fresh) {
      r.start += start;
      r.end += start;
      r.level += record.level;
      m.byEl.set(r.el, r);
    }
    fresh[0].parent = record.parent;
    keepUnchanged(m, m.raw.slice(start, record.end), raw);
    m.raw = spliced(m.raw, start, oldLength, raw);
    m.records = spliced(m.records, at, after - at, fresh);
    if (delta !== 0) {
      for (let i = at + fresh.length; i < m.records.length; i++) {
        m.records[i].start += delta;
        m.records[i].end += delta;
      }
      for (let up = record.parent; up !== null; up = up.parent) up.end += delta;
    }
    if ((oldLength === 0) !== (raw.length === 0)) {
      const container = flippedContainer(record, delta);
      if (container !== null) walkAgain(m, container, labels, focused, keepHidden);
    }
  }

  // The nearest container around `record` (a record whose line shows when anything inside it
  // does, see `walk`) that went from holding nothing to holding something or the reverse, now
  // that `record`'s range changed by `delta` from or to nothing. Going up stops at the first
  // enclosing range that was not empty and is not: nothing above it can tell.
  function flippedContainer(record, delta) {
    for (let up = record.parent; up !== null; up = up.parent) {
      const length = up.end - up.start;
      if (up.container) return (length - 1 === 0) !== (length - 1 - delta === 0) ? up : null;
      if ((length === 0) === (length - delta === 0)) return null;
    }
    return null;
  }

  // A node's facts as the model compares them: not its box or whether it is in view (they
  // change with every scroll), nor focus (no line shows it).
  // Its fields in name order: a node read afresh (`refreshed`) has them in another order.
  const comparable = (node) => JSON.stringify(Object.keys(node).sort().map((key) => {
    if (key === 'box' || key === 'inView') return null;
    if (key === 'states') {
      const shown = node.states.filter((state) => state !== 'focused');
      return shown.length ? [key, shown] : null;
    }
    return [key, node[key]];
  }).filter((field) => field !== null));

  // In `walked`, a node equal to the one with its key in `old` is that old node, which keeps
  // the generation it changed in; any other is new in this generation. So a delta can name
  // the nodes that changed outside its window since its baseline (`changedOutside`).
  function keepUnchanged(m, old, walked) {
    const byKey = new Map();
    for (const node of old) if (node !== null) byKey.set(node.key, node);
    for (let i = 0; i < walked.length; i++) {
      const node = walked[i];
      if (node === null) continue;
      const was = byKey.get(node.key);
      if (was !== undefined && comparable(was) === comparable(node)) {
        walked[i] = was;
      } else {
        m.since.set(node, m.generation);
      }
    }
  }

  // The nodes outside the window `first..end` of `nodes` that changed after generation `since`
  // (the baseline's), at most CHANGED_MAX of them with their facts read afresh, and how many.
  const CHANGED_MAX = 10;
  function changedOutside(value, nodes, first, end, since) {
    const found = [];
    let count = 0;
    const focused = deepActiveElement();
    for (let i = 0; i < nodes.length; i++) {
      if (i === first) i = end;
      if (i >= nodes.length) break;
      const changed = model.since.get(nodes[i]);
      if (changed === undefined || changed <= since) continue;
      count += 1;
      if (found.length < CHANGED_MAX) found.push(refreshed(nodes[i], focused));
    }
    if (count > 0) value.changed = { count, nodes: found };
  }

  // `list` with `count` items from `start` replaced by `items` (`splice` takes its items as
  // arguments, which a long list would overflow).
  function spliced(list, start, count, items) {
    if (items.length < 1000) {
      list.splice(start, count, ...items);
      return list;
    }
    return list.slice(0, start).concat(items, list.slice(start + count));
  }

  // What a stylesheet change, a shadow root attached or a custom element upgraded (no mutation
  // record says so) changes: the document's stamp. It is read on every snapshot, so it looks
  // only where a shadow root can be attached: the standard elements that may have one
  // (`getElementsByTagName` keeps each list between calls) and the shadow roots the walk
  // entered; undefined custom elements are counted by the browser (`:not(:defined)`). A
  // custom element already defined that attaches a shadow root later, with no mutation at all,
  // goes unseen (reading every element instead cost 28 ms a call on a 10,000-row table).
  const SHADOW_HOSTS = ['div', 'span', 'p', 'section', 'article', 'aside', 'nav', 'main', 'header', 'footer', 'blockquote', 'body', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6'];
  function pageStamp() {
    let rules = 0;
    for (const sheet of document.styleSheets) {
      try { rules += sheet.cssRules.length; } catch (e) { rules += 1; }
    }
    for (const sheet of document.adoptedStyleSheets) rules += sheet.cssRules.length;
    let hosts = 0;
    let undefinedElements = 0;
    const count = (root) => {
      undefinedElements += root.querySelectorAll(':not(:defined)').length;
      hosts += standardHosts(root).length;
    };
    count(document);
    for (const ref of model.roots) {
      const root = ref.deref();
      if (!root || !root.host || !root.host.isConnected) continue;
      hosts += 1;
      for (const sheet of root.adoptedStyleSheets) rules += sheet.cssRules.length;
      count(root);
    }
    return `${document.styleSheets.length}/${rules}/${hosts}/${undefinedElements}`;
  }

  // The elements of SHADOW_HOSTS tags under `root` (a document or a shadow root) that host an
  // open shadow root.
  function standardHosts(root) {
    const hosts = [];
    for (const tag of SHADOW_HOSTS) {
      for (const el of root.getElementsByTagName ? root.getElementsByTagName(tag) : root.querySelectorAll(tag)) {
        if (el.shadowRoot !== null) hosts.push(el);
      }
    }
    return hosts;
  }

  // Nodes a query (`q`, as the agent typed it) may match, a superset of those the wasm keeps
  // (`window::filter`: lines containing it, case-insensitive, with their row or list item):
  // each node's words, field by field, as its line shows them, and every iframe (a query
  // searches inside frames). A query with the punctuation a line puts between its fields may
  // span two of them: then every node is sent.
  function queryCandidates(nodes, q) {
    const query = q.toLowerCase();
    if (/["[\]=>()@]/.test(query)) return nodes;
    const matched = new Set();
    const groups = new Set();
    for (const node of nodes) {
      if (node.role === 'iframe' || searchText(node).includes(query)) {
        matched.add(node);
        if (node.group !== undefined) groups.add(node.group);
      }
    }
    return nodes.filter((node) => matched.has(node) || (node.group !== undefined && groups.has(node.group)));
  }

  // Kept per node object: a node the model keeps unchanged is the same object call after call.
  const searchTexts = new WeakMap();
  function searchText(node) {
    let known = searchTexts.get(node);
    if (known === undefined) searchTexts.set(node, known = fieldsText(node));
    return known;
  }

  function fieldsText(node) {
    let text = `${node.role}\n${node.name.replace(/\uE000\d+\uE001/g, '').replace(/\uE002/g, '')}\n${node.value || ''}\n${node.href || ''}\n${(node.states || []).join('\n')}`;
    if (node.options) text += `\noption\nselected\n${node.options.map((o) => o.text).join('\n')}`;
    return text.toLowerCase();
  }

  // The check mode (tests): the model's nodes, their facts read afresh, against a fresh walk
  // of the whole document; the first difference is reported as `modelMismatch`.
  function checkModel(value, nodes, keepHidden) {
    // A model this call walked whole is a fresh walk.
    if (model.walkedWhole) return;
    const fresh = walk(document.documentElement, null, false, labelIds(), deepActiveElement(), keepHidden);
    const focused = deepActiveElement();
    const shown = comparable;
    const count = Math.max(fresh.length, nodes.length);
    for (let i = 0; i < count; i++) {
      const a = i < nodes.length ? shown(refreshed(nodes[i], focused)) : 'none';
      const b = i < fresh.length ? shown(fresh[i]) : 'none';
      if (a !== b) {
        value.modelMismatch = `node ${i} of ${fresh.length}: the model has ${cap(a, 400)}, a fresh walk ${cap(b, 400)}`;
        return;
      }
    }
  }
