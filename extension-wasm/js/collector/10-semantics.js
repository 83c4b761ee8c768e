// Part of the in-page collector's factory (see 00-prelude.js), joined with the other parts of
// js/collector/ in name order when the extension is built. This part says what an element is: its
// role, accessible name, value (secrets redacted), states and facts, the way snapshots and action
// results both describe it.

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
      case 'DIALOG':
        return 'dialog';
      case 'FORM':
        return 'form';
      case 'TR':
        return layout ? null : 'row';
    }
    // The root of an editable region (checking the attribute first: isContentEditable is costly).
    if (el.hasAttribute('contenteditable') && el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) {
      return 'textbox';
    }
    return null;
  }

  // Inputs whose value has a format of its own (date, time, month, week): their line says it,
  // as `textbox "Due" (YYYY-MM-DD)`, and type_text and fill_form take the value in it.
  const FIELD_FORMATS = {
    date: { format: 'YYYY-MM-DD', what: 'a date as YYYY-MM-DD (e.g. 2026-12-03)' },
    time: { format: 'HH:MM', what: 'a time as HH:MM or HH:MM:SS, 24-hour (e.g. 13:45)' },
    'datetime-local': { format: 'YYYY-MM-DDTHH:MM', what: 'a date and time as YYYY-MM-DDTHH:MM (e.g. 2026-12-03T13:45)' },
    month: { format: 'YYYY-MM', what: 'a month as YYYY-MM (e.g. 2026-12)' },
    week: { format: 'YYYY-Www', what: 'a week as YYYY-Www (e.g. 2026-W49)' },
  };

  const focusable = (el) => el.hasAttribute('tabindex') && el.tabIndex >= 0;

  function roleOf(el, layout) {
    return explicitRole(el) || implicitRole(el, layout) || null;
  }

  // What kind of observation node an element is, or null when it only contributes text.
  function kindOf(el, role) {
    if (!role) return null;
    if (INTERACTIVE_ROLES.has(role)) return 'control';
    if (role === 'row') return 'row';
    if (role === 'heading') return 'heading';
    if (role === 'img') return 'img';
    if (role === 'status' || role === 'alert' || role === 'tooltip') return 'live';
    return focusable(el) ? 'control' : null;
  }

  // Elements without a role of their own that an agent can still operate, as the words a line
  // calls them by: `clickable` (an onclick attribute, an <a> without href, an element a style
  // sheet gives a pointer cursor of its own — also one set only under `:hover`, see
  // `pointerRules` — or the element where an inherited pointer cursor starts: listeners added
  // by script are invisible from the extension's world, and the cursor is what a page shows
  // people instead), `focusable` (a tabindex of 0 or more and nothing else). Labels are left
  // out: their control is what is operated. `style` is the element's computed style, already
  // read by the caller.
  const NOT_OPERABLE_TAGS = new Set(['HTML', 'BODY', 'LABEL', 'MAIN', 'SECTION', 'ARTICLE', 'NAV', 'HEADER', 'FOOTER', 'ASIDE', 'FORM', 'TABLE', 'TBODY', 'THEAD', 'TFOOT', 'UL', 'OL', 'DL']);
  function operableRole(el, style) {
    if (NOT_OPERABLE_TAGS.has(el.tagName)) return null;
    if (el.hasAttribute('onclick') || (el.tagName === 'A' && !el.hasAttribute('href'))) return 'clickable';
    if (style.cursor === 'pointer') {
      const parent = el.parentElement || (el.parentNode && el.parentNode.host) || null;
      if (parent === null || getComputedStyle(parent).cursor !== 'pointer' || ownPointer(el)) return 'clickable';
    } else if (ownPointer(el)) {
      // A pointer cursor set only under `:hover`: the element is operable wherever the mouse is.
      return 'clickable';
    }
    return focusable(el) ? 'focusable' : null;
  }

  // Pointer cursors the page's style sheets set on elements themselves, rather than by
  // inheritance: the selectors of the style rules that set `cursor: pointer`, with `:hover`
  // removed (`.icon:hover { cursor: pointer }` makes `.icon` clickable before any mouse
  // comes near it), read once per style sheet and again only when its rule count changes
  // (a WeakMap by sheet), and matched once per walk and tree (document or shadow root, with
  // that tree's own sheets) with one querySelectorAll. A rule's media or supports condition
  // is not evaluated (a pointer rule for wide screens counts on narrow ones), nested CSS rules
  // and cross-origin sheets (whose rules cannot be read) are not seen, and neither is a cursor
  // set by script on hover. An inline `style="cursor: pointer"` counts as the element's own.
  const sheetPointers = ids.sheetPointers || (ids.sheetPointers = new WeakMap());
  // Per call: the tree's selector list and the elements it matches, by tree.
  let pointerTrees = null;

  // The selectors of one sheet's pointer rules, `:hover` removed.
  function pointerSelectorsOf(sheet) {
    let rules;
    try { rules = sheet.cssRules; } catch (e) { return []; }
    const cached = sheetPointers.get(sheet);
    if (cached !== undefined && cached.count === rules.length) return cached.selectors;
    const selectors = [];
    const visitRules = (list, depth) => {
      for (const rule of list) {
        if (rule.selectorText !== undefined) {
          if (rule.style.cursor === 'pointer') {
            for (const part of splitSelectors(rule.selectorText)) {
              const plain = part.replace(/:hover\b/g, '').trim();
              if (plain && !/[:(]$/.test(plain) && validSelector(plain)) selectors.push(plain);
            }
          }
        } else if (rule.cssRules && depth < 4) {
          visitRules(rule.cssRules, depth + 1);
        }
      }
    };
    visitRules(rules, 0);
    sheetPointers.set(sheet, { count: rules.length, selectors });
    return selectors;
  }

  // A selector list's parts, split at the commas outside parentheses and brackets.
  function splitSelectors(text) {
    const parts = [];
    let depth = 0;
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (c === '(' || c === '[') depth += 1;
      else if (c === ')' || c === ']') depth -= 1;
      else if (c === ',' && depth === 0) {
        parts.push(text.slice(start, i));
        start = i + 1;
      }
    }
    parts.push(text.slice(start));
    return parts;
  }

  const selectorProbe = document.createDocumentFragment();
  function validSelector(selector) {
    try {
      selectorProbe.querySelector(selector);
      return true;
    } catch (e) {
      return false;
    }
  }

  // The tree's pointer rules: {selector (one list, or '' when none), matched (a Set)}.
  function pointerTree(root) {
    if (pointerTrees === null) pointerTrees = new Map();
    let tree = pointerTrees.get(root);
    if (tree !== undefined) return tree;
    const selectors = [];
    const sheets = root.styleSheets ? Array.from(root.styleSheets) : [];
    if (root.adoptedStyleSheets) sheets.push(...root.adoptedStyleSheets);
    for (const sheet of sheets) for (const selector of pointerSelectorsOf(sheet)) selectors.push(selector);
    const selector = Array.from(new Set(selectors)).join(',');
    tree = { selector, matched: selector ? new Set(root.querySelectorAll(selector)) : new Set() };
    pointerTrees.set(root, tree);
    return tree;
  }

  // Whether `el` has a pointer cursor of its own (see `pointerTree`).
  function ownPointer(el) {
    if (el.hasAttribute('style') && el.style.cursor === 'pointer') return true;
    const matched = pointerTree(el.getRootNode()).matched;
    return matched.size > 0 && matched.has(el);
  }

  // Whether `el` holds something that is operated on its own (a control, a link, a field, a
  // labelled or focusable element): such an element is a container, not one clickable thing.
  // (An element with a pointer cursor or click handler of its own inside a clickable one is
  // an inline ref in the clickable one's line: see `operable` in 20-walk.js.)
  const INNER_CONTROLS = 'a[href],button,input,select,textarea,[role],[tabindex],[onclick],[contenteditable]';
  const holdsControls = (el) => el.querySelector(INNER_CONTROLS) !== null || (el.shadowRoot !== null && el.shadowRoot.querySelector(INNER_CONTROLS) !== null);

  // Inline refs: an operable element shown inside the line of the prose or row around it, as
  // `[@e43 laoreet]` once the wasm has given it a ref. The collector writes it between private-
  // use characters that it strips from page text (see `pageText`), so a page cannot forge one.
  const INLINE_OPEN = '\uE000';
  const INLINE_TEXT = '\uE001';
  const INLINE_CLOSE = '\uE002';
  const INLINE_CHARS = /[\uE000-\uE002]/g;
  const pageText = (data) => (data.indexOf(INLINE_OPEN) < 0 && data.indexOf(INLINE_TEXT) < 0 && data.indexOf(INLINE_CLOSE) < 0 ? data : data.replace(INLINE_CHARS, ''));
  // The states an inline ref shows after its text.
  const INLINE_STATES = new Set(['checked', 'selected', 'pressed', 'expanded', 'disabled']);
  function inlineRef(el, text, focused) {
    const states = statesOf(el, focused).filter((s) => INLINE_STATES.has(s));
    const current = el.getAttribute('aria-current');
    if (current && current !== 'false') states.push('current');
    const shown = cap(collapse(pageText(text)), NAME_MAX);
    return ` ${INLINE_OPEN}${keyOf(el)}${INLINE_TEXT}${shown}${states.length ? ` (${states.join(', ')})` : ''}${INLINE_CLOSE} `;
  }

  function hiddenByStyle(el) {
    if (el.getAttribute('aria-hidden') === 'true') return true;
    const style = getComputedStyle(el);
    return style.display === 'none' || style.visibility === 'hidden' || style.visibility === 'collapse';
  }

  // Whether `el` hides its whole subtree from people although it is displayed: hidden text is
  // where pages put instructions meant for agents (issue 14 §5), and observations leave it out
  // unless asked to keep it (`includeHidden`). `style` is its computed style, already read.
  // - `opacity` under 0.1 (computed opacity is the element's own: the walk counts concealing
  //   ancestors, so a subtree under one is hidden however its own opacity reads);
  // - clipped to nothing: `clip-path: inset(50%)` or more, or a clip or clip-path on a box
  //   of at most 2 px (the "visually hidden" pattern: 1 px, `clip: rect(0 0 0 0)`);
  // - positioned (absolute or fixed) wholly left of or above the page, where no one can scroll
  //   (`left: -9999px`), or a fixed one wholly outside the viewport, or a positioned box of at
  //   most 1 px that cuts off what overflows it.
  // A font under 2 px is the other carrier; it is decided per text (`tinyFont`), since a
  // `font-size: 0` parent whose children set their own size is a common layout trick.
  // Not detected: text of the background's colour or transparent (gradient text is drawn that
  // way, and the colour behind a text is costly to know), `text-indent` far off, transforms
  // that move a box away, `aria-label` on elements that are not controls.
  const CLIPPED_AWAY = /^inset\((?:[5-9]\d|100)%\)$/;
  const ZERO_CLIP = /^rect\(0px,? 0px,? 0px,? 0px\)$/;
  function concealed(el, style) {
    if (parseFloat(style.opacity) < 0.1) return true;
    const clipPath = style.clipPath;
    if (clipPath !== 'none' && (CLIPPED_AWAY.test(clipPath) || tinyBox(el, 2))) return true;
    const position = style.position;
    if (position !== 'absolute' && position !== 'fixed') return false;
    const clip = style.clip;
    if (clip !== 'auto' && (ZERO_CLIP.test(clip) || tinyBox(el, 2))) return true;
    const rect = el.getBoundingClientRect();
    if (position === 'fixed') {
      if (rect.right <= 0 || rect.bottom <= 0 || rect.left >= window.innerWidth || rect.top >= window.innerHeight) return true;
    } else if (rect.right + window.scrollX <= 0 || rect.bottom + window.scrollY <= 0) {
      return true;
    }
    return (style.overflowX !== 'visible' || style.overflowY !== 'visible') && (rect.width <= 1 || rect.height <= 1);
  }

  function tinyBox(el, px) {
    const rect = el.getBoundingClientRect();
    return rect.width <= px || rect.height <= px;
  }

  // Text in a font under 2 px, which no one can read.
  const tinyFont = (style) => parseFloat(style.fontSize) < 2;

  // Text of a subtree for a name: alt text of images, values of buttons, nothing from form
  // fields. `checkHidden` is false for aria-labelledby targets, which count even when hidden.
  // `visibleOnly` also leaves out what people cannot see (`concealed`, `tinyFont`): for the
  // names of what is not a control (headings, live regions) and for words that join a line of
  // prose, which must not carry hidden text; a control's name keeps it (a "visually hidden"
  // label is how many sites name their icon buttons).
  function textOf(root, checkHidden, visibleOnly) {
    let out = '';
    const hideText = checkHidden && visibleOnly;
    const visit = (node, tiny) => {
      for (const child of flatChildren(node)) {
        if (out.length > NAME_MAX * 4) return;
        if (child.nodeType === 3) { if (!tiny) out += child.data; continue; }
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
        let childTiny = false;
        if (checkHidden) {
          if (child.getAttribute('aria-hidden') === 'true') continue;
          const style = getComputedStyle(child);
          if (style.display === 'none' || style.visibility === 'hidden') continue;
          if (hideText && concealed(child, style)) continue;
          childTiny = hideText && tinyFont(style);
          block = !style.display.startsWith('inline');
        }
        if (block) out += ' ';
        const label = child.getAttribute('aria-label');
        if (label) out += label; else visit(child, childTiny);
        if (block) out += ' ';
      }
    };
    visit(root, hideText && root.nodeType === 1 && tinyFont(getComputedStyle(root)));
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

  // The accessible name, following the accessible-name computation's main steps. `visibleOnly`
  // leaves hidden text out of a name taken from the content (see `textOf`).
  function nameOf(el, role, visibleOnly) {
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
      const text = textOf(el, true, visibleOnly);
      if (text) return text;
    }
    const title = collapse(el.getAttribute('title'));
    if (title) return cap(title, NAME_MAX);
    const placeholder = collapse(el.getAttribute('placeholder') || el.getAttribute('aria-placeholder'));
    return cap(placeholder, NAME_MAX);
  }

  // Whether an input's value is a secret, which then never leaves the page (every output that
  // carries a field's value asks this one function: snapshots and action results, typing and
  // fill_form replies, read_element_state, the selection, get_page_content's markup). A field
  // is a secret when
  // - it is a password field;
  // - the page masks it with CSS (-webkit-text-security);
  // - its autocomplete names a secret (current-password, new-password, one-time-code, cc-csc,
  //   or any value with the words below): the page's own statement of the field's purpose;
  // - it is a text, tel or number field (the types a password, PIN or code is typed into once
  //   a "show password" toggle or a page's own script has made it visible) whose name, id or
  //   accessible name (its labels, aria-label, title or placeholder) holds those words;
  // - it was a secret when tabwire looked before: the verdict is kept for the document's life,
  //   so a "show password" toggle, or a mask removed later, does not reveal what was hidden.
  // The name rule catches a field that was already shown in clear the first time tabwire
  // looked, which the type alone cannot.
  const knownSecret = ids.knownSecret || (ids.knownSecret = new WeakSet());
  const SHOWN_SECRET_TYPES = new Set(['text', 'tel', 'number']);
  function isSecret(el) {
    if (el.tagName !== 'INPUT') return false;
    if (knownSecret.has(el)) return true;
    const secret = looksSecret(el);
    if (secret) knownSecret.add(el);
    return secret;
  }

  function looksSecret(el) {
    if (el.type === 'password' || namesSecret(el.getAttribute('autocomplete'), false) || maskedByStyle(el)) return true;
    if (!SHOWN_SECRET_TYPES.has(el.type)) return false;
    return namesSecret(el.getAttribute('name'), true) || namesSecret(el.id, true) || namesSecret(nameOf(el, roleOf(el, false)), false);
  }

  function maskedByStyle(el) {
    const mask = getComputedStyle(el).webkitTextSecurity;
    return Boolean(mask) && mask !== 'none';
  }

  // The words that mark a secret, matched on whole words, so that "passport", "compass",
  // "bypass", "spinner", "shipping" or "hotpot" do not match: identifiers are split into words
  // first ("newPassword", "PWDConfirm", "pin2", "j_password", "one-time-code"). Only the long
  // words, which no ordinary word contains, also match inside a word ("loginpassword",
  // "Benutzerpasswort"). "code" counts only after a word that makes it a login code
  // ("verification code", "2fa code", "6-digit code"), never alone (postal, promo, country codes). The
  // abbreviations "pass", "pwd" and "pw" count in names and ids only: in a label, "pass" is a
  // boarding or bus pass far more often than a password.
  // When in doubt this errs toward redaction: a value wrongly hidden costs the agent a value it
  // typed itself, a value wrongly shown costs the user a secret ("PIN code", which is also
  // India's postal code, is hidden).
  const SECRET_INSIDE_WORD = /password|passwd|passcode|passphrase|passwort|kennwort|wachtwoord/;
  const SECRET_WORD = /(?:^| )(?:pin|otp|totp|hotp|2fa|mfa|cvc|cvv|csc|mot de passe|contraseña|contrasena|senha|пароль|(?:one time|verification|verify|authentication|authenticator|auth|security|sms|login|access|2fa|mfa|two factor|2 factor|digit) code)(?: |$)/u;
  const SECRET_ABBREVIATION = /(?:^| )(?:pass|pwd|pw)(?: |$)/;
  function namesSecret(text, identifier) {
    if (!text) return false;
    const words = String(text)
      .replace(/([a-z])([A-Z])/g, '$1 $2')
      .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
      .toLowerCase()
      .replace(/([a-z])([0-9])/g, '$1 $2')
      .split(/[^\p{L}\p{N}]+/u)
      .filter(Boolean)
      .join(' ');
    return SECRET_INSIDE_WORD.test(words) || SECRET_WORD.test(words) || (identifier && SECRET_ABBREVIATION.test(words));
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
    // (`markedDisabled`: aria-disabled here or on an ancestor, or inert: what type_text refuses.)
    if (el.matches(':disabled') || markedDisabled(el)) states.push('disabled');
    if (el.required || el.getAttribute('aria-required') === 'true') states.push('required');
    const textField = (tag === 'INPUT' && !BUTTON_INPUT_TYPES.has(el.type) && el.type !== 'checkbox' && el.type !== 'radio') || tag === 'TEXTAREA';
    if ((textField && el.readOnly) || el.getAttribute('aria-readonly') === 'true') states.push('readonly');
    if (el === focused) states.push('focused');
    if ((tag === 'DIALOG' && el.matches(':modal')) || (el.getAttribute('aria-modal') === 'true' && el.getAttribute('role') !== null)) states.push('modal');
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
    if (el.tagName === 'INPUT' && el.type in FIELD_FORMATS) fact.format = FIELD_FORMATS[el.type].format;
    if (el.tagName === 'SELECT') {
      fact.options = Array.from(el.options).slice(0, OPTIONS_MAX).map((o) => ({ text: cap(collapse(o.label || o.text), NAME_MAX), selected: o.selected }));
    }
    const anchors = anchorsOf(el);
    if (anchors) fact.anchors = anchors;
    fact.box = boxOf(rect);
    return fact;
  }

  const shortLabel = (fact) => (fact.name ? `${fact.role} "${fact.name}"` : fact.role);
