// Part of the in-page collector's factory (see 00-prelude.js), joined with the other parts of
// js/collector/ in name order when the extension is built. This part measures where this
// document draws its child frames, for a screenshot that must paint over the frames the policy
// denies (ops/observe/screenshot/ in the wasm). It reads boxes only, never a frame's content,
// and it runs in the frames agents may read: nothing of tabwire's runs in a denied frame.

  // Every element that can hold a child document. A frame must be found wherever it sits, so
  // closed shadow roots are entered here too (through chrome.dom, which only extensions have):
  // a page must not hide a frame from the covering by putting it in one. Nothing is read there
  // but the frame elements' boxes.
  const FRAME_ELEMENTS = 'iframe, frame, object, embed, fencedframe';

  function shadowOf(el) {
    if (el.shadowRoot) return el.shadowRoot;
    try {
      return typeof chrome !== 'undefined' && chrome.dom && chrome.dom.openOrClosedShadowRoot
        ? chrome.dom.openOrClosedShadowRoot(el) || null
        : null;
    } catch (e) {
      return null;
    }
  }

  // Every frame element, and the first element found that blurs or moves what is drawn
  // behind it (backdrop-filter: it may sit over a frame and draw its pixels elsewhere in its
  // own box), both in closed shadow roots too.
  function frameElements() {
    const out = [];
    let backdrop = null;
    const search = (root) => {
      for (const el of root.querySelectorAll(FRAME_ELEMENTS)) out.push(el);
      for (const el of root.querySelectorAll('*')) {
        if (!backdrop) {
          const value = getComputedStyle(el).backdropFilter;
          if (value && value !== 'none') backdrop = 'backdrop-filter';
        }
        const shadow = shadowOf(el);
        if (shadow) search(shadow);
      }
    };
    search(document);
    return { elements: out, backdrop };
  }

  // The first effect on the element, or on anything above it in this document, that can draw
  // its content outside its border box, which is all getBoundingClientRect tells: a filter
  // (an SVG feOffset moves it anywhere, drop-shadow and blur spread it), a reflection, or
  // being inside SVG (foreignObject), whose own transforms and filters the box does not
  // follow. Null when there is none. What only hides or recolours in place (opacity,
  // mix-blend-mode, mask, clip-path) and what draws the element's own decoration rather than
  // its content (outline, box-shadow, border) moves nothing, and is not looked for.
  function drawingEffect(el) {
    for (let at = el; at && at.nodeType === 1;) {
      if (at !== el && typeof SVGElement !== 'undefined' && at instanceof SVGElement) {
        return 'SVG foreignObject';
      }
      const style = getComputedStyle(at);
      if (style.filter && style.filter !== 'none') return 'filter';
      const reflect = style.getPropertyValue('-webkit-box-reflect');
      if (reflect && reflect !== 'none') return '-webkit-box-reflect';
      const root = at.parentElement ? null : at.getRootNode();
      at = at.parentElement || (root && root.host) || null;
    }
    return null;
  }

  // Whether a view transition runs in this document: its pseudo-elements draw snapshots of
  // the old page, frames included, wherever the page's styles put them.
  function viewTransition() {
    try {
      return document.documentElement.matches(':active-view-transition');
    } catch (e) {
      return !!document.activeViewTransition;
    }
  }

  // Whether the element, or anything above it, is turned or skewed (or drawn in perspective):
  // then a point inside its frame cannot be carried into this viewport by an offset and a
  // scale, and the wasm covers the whole frame's box instead of a part of it.
  function turned(el) {
    const flat = (m) => Math.abs(m.b) < 1e-6 && Math.abs(m.c) < 1e-6 &&
      [m.m13, m.m14, m.m23, m.m24, m.m31, m.m32, m.m34].every((v) => Math.abs(v) < 1e-6) &&
      Math.abs(m.m44 - 1) < 1e-6;
    for (let at = el; at && at.nodeType === 1;) {
      const style = getComputedStyle(at);
      const transform = style.transform;
      if (transform && transform !== 'none') {
        try {
          if (!flat(new DOMMatrixReadOnly(transform))) return true;
        } catch (e) {
          return true;
        }
      }
      if (style.perspective && style.perspective !== 'none') return true;
      const root = at.parentElement ? null : at.getRootNode();
      at = at.parentElement || (root && root.host) || null;
    }
    return false;
  }

  // The boxes of this document's frame elements in its viewport (CSS pixels), with each one's
  // index in window.frames (null when it has none: the wasm then cannot tell whose it is) and
  // address,
  // where its content starts and how much it is scaled, and this viewport's size and scroll.
  function frameBoxes() {
    const frames = [];
    const found = frameElements();
    let effect = found.backdrop || (viewTransition() ? 'a view transition' : null);
    for (const el of found.elements) {
      if (!effect) effect = drawingEffect(el);
      const rect = el.getBoundingClientRect();
      const style = getComputedStyle(el);
      const scaleX = el.offsetWidth > 0 ? rect.width / el.offsetWidth : 1;
      const scaleY = el.offsetHeight > 0 ? rect.height / el.offsetHeight : 1;
      const index = frameIndexOf(el);
      // The address the page gave the element, which names the frame it most likely holds (a
      // hint for the result's words only: every frame element no readable frame claims is
      // painted over whatever it says).
      const src = el.tagName === 'OBJECT' ? el.data : el.src;
      frames.push({
        index,
        src: typeof src === 'string' && src ? cap(src, URL_MAX) : null,
        holds: !!el.contentWindow || el.tagName === 'EMBED' || el.tagName === 'FENCEDFRAME',
        x: rect.left,
        y: rect.top,
        width: rect.width,
        height: rect.height,
        contentX: rect.left + (el.clientLeft + (parseFloat(style.paddingLeft) || 0)) * scaleX,
        contentY: rect.top + (el.clientTop + (parseFloat(style.paddingTop) || 0)) * scaleY,
        scaleX,
        scaleY,
        plain: !turned(el) && Math.abs(scaleX - scaleY) < 0.01,
      });
    }
    return ok({
      frames,
      effect,
      width: window.innerWidth,
      height: window.innerHeight,
      scrollX: window.scrollX,
      scrollY: window.scrollY,
    });
  }
