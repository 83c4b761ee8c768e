// Part of the in-page collector's factory (see 00-prelude.js), joined with the other parts of
// js/collector/ in name order when the extension is built. This part chooses options, reads an
// element's state, fills forms and scrolls.

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

  function selectNative(args) {
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
  function findOption(args) {
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
    // A disabled option (or one in a disabled list) would take the click and change nothing,
    // while the outcome said it was chosen.
    if (el.matches(':disabled') || markedDisabled(el)) {
      return fail('NOT_EDITABLE', `The option ${shown} is disabled; nothing was chosen. Pick another option.`);
    }
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
  function readState(args) {
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
      if (tag === 'INPUT' || tag === 'TEXTAREA') state.readonly = el.readOnly || markedReadonly(el);
      state.disabled = el.matches(':disabled') || markedDisabled(el);
      if (tag !== 'BUTTON') state.required = el.required;
    }
    state.visible = visible(el) && !(tag === 'INPUT' && el.type === 'hidden');
    state.focused = el === focused;
    // The border box in this frame's viewport; none without a layout box (display: none).
    if (el.getClientRects().length > 0) {
      const box = el.getBoundingClientRect();
      state.box = { x: Math.round(box.left), y: Math.round(box.top), width: Math.round(box.width), height: Math.round(box.height) };
    }
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
    color: 'a colour as #rrggbb',
  };
  for (const [type, format] of Object.entries(FIELD_FORMATS)) FORMATS[type] = format.what;

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

  // Checks every field of a fill_form against its value and the form rules, changing nothing:
  // {fields: [{found, el, kind, option?}], form}, or why the form cannot be filled.
  function checkForm(args) {
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
    return { fields, form };
  }

  // A field's value as fill_form reports it: checked state, the chosen option's value, or the
  // text (a secret only as the REDACTED marker).
  function reportedValue(el, kind) {
    if (kind === 'check') return el.checked;
    if (kind === 'select') return el.value;
    if (kind === 'editable') return cap(el.innerText, TYPED_VALUE_MAX);
    return fieldValue(el);
  }

  // Sets one checked field natively.
  function setField({ el, kind, option }, value) {
    if (kind === 'select') chooseOption(el, option);
    else if (kind === 'check') {
      if (el.checked !== value) el.click();
    } else enterText(el, kind, value, true);
  }

  // Each field's value and the browser's validation verdict, once all are set (a field can
  // depend on another: a repeated password); then submission when asked and the form is valid.
  function formReport({ fields, form }, submit) {
    const focused = deepActiveElement();
    const results = fields.map(({ found, el, kind }) => {
      const valid = el.checkValidity ? el.checkValidity() : true;
      const result = { node: describe(el, focused), value: reportedValue(el, kind), valid };
      if (!valid) result.validationMessage = cap(el.validationMessage, PROSE_MAX);
      if (found.rebound) result.rebound = found.rebound;
      return result;
    });
    const formValid = form ? form.checkValidity() : results.every((r) => r.valid);
    let submitted = false;
    if (submit && formValid) {
      try {
        form.requestSubmit();
        submitted = true;
      } catch (e) {
        submitted = false;
      }
    }
    return ok({ fields: results, submitted, formValid });
  }

  // Checks every field first and changes nothing unless all can be set; then sets them in
  // order, natively, and reports them.
  function fillForm(args) {
    const checked = checkForm(args);
    if (checked.error) return checked;
    checked.fields.forEach((field, i) => setField(field, args.fields[i].value));
    return formReport(checked, args.submit);
  }

  // The first step of filling a form with keys: every field checked as fillForm checks them,
  // nothing changed; says which fields take typed text (the wasm types those with trusted keys
  // and sets the others with fillForm), then finishForm reports.
  function checkFormCommand(args) {
    const checked = checkForm(args);
    if (checked.error) return checked;
    return ok({
      fields: checked.fields.map(({ found, el }) => {
        const kind = textKind(el);
        // Date and time fields are set natively, in their own format (see `formattedText`).
        const field = { typed: kind !== null && kind !== 'formatted' };
        if (found.rebound) field.rebound = found.rebound;
        return field;
      }),
    });
  }

  // The last step of filling a form with keys: the report, and submission when asked.
  function finishForm(args) {
    const fields = [];
    for (const target of args.targets) {
      const found = resolveTarget(target);
      if (found.error) return found;
      fields.push({ found, el: found.el, kind: fillKind(found.el) });
    }
    const form = fields.length ? formOf(fields[0].el) : null;
    if (args.submit && !form) {
      return fail('INVALID_ARGUMENT', 'submit needs the fields to be in a form, and they are in none any more.');
    }
    return formReport({ fields, form }, args.submit);
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

  function scroll(args) {
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
