// Part of the in-page collector's factory (see 00-prelude.js), joined with the other parts of
// js/collector/ in name order when the extension is built. This part holds the page side of mouse
// input: clicks, DOM clicks, drag ends, and the steps that carry a point through frames.

  function click(args) {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const el = found.el;
    const before = el.getBoundingClientRect();
    el.scrollIntoView(TO_CENTRE);
    const node = describe(el, deepActiveElement());
    const point = hitPoint(el);
    if (point.error) return point;
    return done(found, { x: point.x, y: point.y, node, underPointer: underPointer(el, before, point) });
  }

  // Whether the pointer already rests on the element at `point` itself (not on one of its
  // children), by the page's own hover state, and nothing scrolled `el` (which would leave that
  // state stale): a move there would then enter nothing, so the click goes without its move
  // and the frame it waits for (input.rs).
  function underPointer(el, before, point) {
    const after = el.getBoundingClientRect();
    if (after.left !== before.left || after.top !== before.top) return false;
    const root = el.getRootNode();
    const hit = (typeof root.elementFromPoint === 'function' ? root : document).elementFromPoint(point.x, point.y);
    return !!hit && hit.matches(':hover') && hit.querySelector(':hover') === null;
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

  // The end of a drag: a point of the target as it is now (the drag's start is already on
  // screen, and scrolling here could move it off). 'center' is its centre; 'before' and 'after'
  // are a quarter of the way in from its side facing the item before or after it, which
  // sortable lists read as "put it before" or "after" this item.
  function point(args) {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const el = found.el;
    const outside = 'is outside the viewport; scroll so both ends of the drag are on screen, then retry.';
    const centre = centreOf(el, outside);
    if (centre.error) return centre;
    let { x, y } = centre;
    if (args.position !== 'center') {
      const box = el.getBoundingClientRect();
      const [ax, ay] = listDirection(el);
      const sign = args.position === 'after' ? 1 : -1;
      x += (sign * ax * box.width) / 4;
      y += (sign * ay * box.height) / 4;
      if (x < 0 || y < 0 || x >= window.innerWidth || y >= window.innerHeight) {
        return fail('TARGET_NOT_VISIBLE', `The ${args.position} half of ${labelOf(el)} ${outside}`);
      }
    }
    return done(found, { x, y, node: describe(el, deepActiveElement()) });
  }

  // Which way the list holding `el` runs, as the unit step [x, y] from an item towards the one
  // after it, read off a rendered neighbour of the element or of one of its two nearest
  // ancestors (a wrapped item, or text inside one): beside it in its row (a horizontal list, a
  // row of a wrapping grid, either reading direction), else above or below it. Without one,
  // top to bottom.
  function listDirection(el) {
    let node = el;
    for (let depth = 0; node && node.parentElement && depth < 3; depth++, node = node.parentElement) {
      const box = node.getBoundingClientRect();
      const cx = box.left + box.width / 2;
      const cy = box.top + box.height / 2;
      let vertical = 0;
      for (const [sibling, sign] of [[node.nextElementSibling, 1], [node.previousElementSibling, -1]]) {
        if (!sibling) continue;
        const other = sibling.getBoundingClientRect();
        if (other.width === 0 || other.height === 0) continue;
        const ox = other.left + other.width / 2;
        const oy = other.top + other.height / 2;
        if (oy > box.top && oy < box.bottom && ox !== cx) return [sign * Math.sign(ox - cx), 0];
        if (!vertical && oy !== cy) vertical = sign * Math.sign(oy - cy);
      }
      if (vertical) return [0, vertical];
    }
    return [0, 1];
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
