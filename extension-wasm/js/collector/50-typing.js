// Part of the in-page collector's factory (see 00-prelude.js), joined with the other parts of
// js/collector/ in name order when the extension is built. This part puts text into fields: the
// native setter for native typing, focus for trusted typing (keys, the default, included).

  // The kind of text field `el` is: 'input', 'area' (a textarea), 'editable'
  // (contenteditable) or 'formatted' (a date, time, month or week input, whose value is set in
  // its own format: see FIELD_FORMATS); null when it takes no typed text.
  function textKind(el) {
    if (el.tagName === 'INPUT') return TEXT_INPUT_TYPES.has(el.type) ? 'input' : el.type in FIELD_FORMATS ? 'formatted' : null;
    if (el.tagName === 'TEXTAREA') return 'area';
    return el.isContentEditable ? 'editable' : null;
  }

  // Whether the page says `el` is disabled without the browser enforcing it: aria-disabled on
  // it or on an ancestor (ARIA disables a widget's descendants too), or an inert subtree. Keys
  // may still reach such a field while the page ignores them, so nothing would be typed while
  // the outcome said it was.
  const markedDisabled = (el) => el.closest('[aria-disabled="true"]') !== null || el.closest('[inert]') !== null;
  const markedReadonly = (el) => el.getAttribute('aria-readonly') === 'true';

  // Why a control refuses input, or null: it is disabled (natively, or as its ARIA says), or
  // read-only (natively or as its ARIA says; unless allowed; the attribute is never touched).
  function refusal(el, allowReadonly) {
    if (el.matches(':disabled') || markedDisabled(el)) {
      return fail('NOT_EDITABLE', `${labelOf(el)} is disabled; it does not accept input, and nothing was changed. Wait for the page to enable it, or pick another element.`);
    }
    if ((el.readOnly === true || markedReadonly(el)) && !allowReadonly) {
      return fail('NOT_EDITABLE', `${labelOf(el)} is read-only; it does not accept text, and nothing was typed. If it is a picker that reads typed text anyway, use type_text with allowReadonly: true.`);
    }
    return null;
  }

  // `el` as a field that accepts typed text: {kind}, or NOT_EDITABLE.
  function textField(el, allowReadonly) {
    const kind = textKind(el);
    if (!kind) {
      return fail('NOT_EDITABLE', `${labelOf(el)} does not accept text: only text, date and time inputs, textareas and contenteditable elements do.`);
    }
    return refusal(el, allowReadonly) || { kind };
  }

  // Whether `value` is a valid value of an input of `type` (the browser's own parser decides).
  function fits(type, value) {
    const probe = document.createElement('input');
    probe.type = type;
    probe.value = value;
    return probe.value !== '';
  }

  // The text for a date or time field, which takes only its own format (see FIELD_FORMATS),
  // checked: {text}, or INVALID_ARGUMENT naming the format. Nothing is changed. Such a value is
  // always replaced whole (a date appended to a date is no date), whatever `clear` says.
  function formattedText(el, text) {
    const type = el.type;
    const trimmed = text.trim();
    if (trimmed !== '' && !fits(type, trimmed)) {
      return fail('INVALID_ARGUMENT', `${labelOf(el)} is a ${type} field and takes ${FIELD_FORMATS[type].what}; "${cap(text, NAME_MAX)}" is not one, and nothing was typed.`);
    }
    return { text: trimmed };
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
    setValue(el, clear || kind === 'formatted' ? text : el.value + text, text);
    return fieldValue(el);
  }

  function typeText(args) {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const el = found.el;
    const field = textField(el, args.allowReadonly);
    if (field.error) return field;
    let text = args.text;
    if (field.kind === 'formatted') {
      const checked = formattedText(el, text);
      if (checked.error) return checked;
      text = checked.text;
    }
    el.scrollIntoView(TO_CENTRE);
    const value = enterText(el, field.kind, text, args.clear);
    return done(found, { value, node: describe(el, deepActiveElement()) });
  }

  // Whether `el` holds the focus, so keys go to it: it is the focused element, or (in a
  // contenteditable region) inside the focused editing host.
  function holdsFocus(el, kind) {
    const active = deepActiveElement();
    return active === el || (kind === 'editable' && !!active && active.contains(el));
  }

  // Focus for trusted input: the keys or text that follow go to the target. For a text field
  // (`editable`) the reply also says its kind, whether it is read-only and whether it took the
  // focus: keys type nothing into a read-only field and would go elsewhere when a field cannot
  // be focused (it is not rendered), so the default typing sets such fields natively instead.
  function focusTarget(args) {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    const el = found.el;
    const reply = {};
    if (args.editable) {
      const field = textField(el, args.allowReadonly);
      if (field.error) return field;
      // (A date or time field, kind 'formatted', is then set natively by `type`, in its own
      // format: keys reach Chrome's picker segment by segment, in the locale's order.)
      reply.kind = field.kind;
      reply.readonly = el.readOnly === true;
    }
    el.scrollIntoView(TO_CENTRE);
    el.focus({ preventScroll: true });
    const kind = textKind(el);
    if (kind && kind !== 'formatted' && (args.editable || args.clear)) placeCaret(el, kind, args.clear);
    if (args.editable) reply.focused = holdsFocus(el, kind);
    reply.node = describe(el, deepActiveElement());
    return done(found, reply);
  }
