// Part of the in-page collector's factory (see 00-prelude.js), joined with the other parts of
// js/collector/ in name order when the extension is built. This part finds the element a command
// is about (a key from a snapshot, rebinding a removed one, or a CSS selector) and checks where a
// click on it would land.

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
  function countAnchors(args) {
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
    actedOn(el);
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
      actedOn(matches[0]);
      return { el: matches[0] };
    }
    if (target.doc !== ids.token) {
      return fail('STALE_REF', `${target.ref} is stale: the page has loaded a new document since the snapshot. Take a new snapshot and use a ref from it.`);
    }
    const el = elementByKey(target.key);
    if (!el || !el.isConnected) return rebind(target);
    actedOn(el);
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
    // A word that wraps onto a second line has two boxes: the middle of both together can be
    // another word, so the first box is aimed at.
    const boxes = el.getClientRects();
    const rect = boxes.length > 1 && boxes[0].width > 0 && boxes[0].height > 0 ? boxes[0] : el.getBoundingClientRect();
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
