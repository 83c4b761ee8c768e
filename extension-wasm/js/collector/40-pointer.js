// Part of the in-page collector's factory (see 00-prelude.js), joined with the other parts of
// js/collector/ in name order when the extension is built. This part holds the page side of mouse
// input: clicks, DOM clicks, drag ends, and the steps that carry a point through frames.

  function click(args) {
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
  function domClick(args) {
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
  function point(args) {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const el = found.el;
    const centre = centreOf(el, 'is outside the viewport; scroll so both ends of the drag are on screen, then retry.');
    if (centre.error) return centre;
    return done(found, { x: centre.x, y: centre.y, node: describe(el, deepActiveElement()) });
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
  function scrollFrame(args) {
    const el = frameElement(args.index);
    if (!el) return fail('STALE_REF', 'The frame is no longer part of its parent page.');
    el.scrollIntoView(TO_CENTRE);
    return ok({});
  }

  // Translates a point inside child frame `index` into this frame's viewport (through the
  // frame element's content box) and checks that the frame element is what is hit there.
  function frameHit(args) {
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
