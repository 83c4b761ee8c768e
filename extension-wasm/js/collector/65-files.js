// Part of the in-page collector's factory (see 00-prelude.js), joined with the other parts of
// js/collector/ in name order when the extension is built. This part gives files to the page
// (issue 26, docs/files.md): an upload's bytes wait in this world (`__tabwireUploads`, filled
// by page.js's `keepInPage` a chunk at a time) until `setFiles` builds the files from them and
// sets them on a file input, or drops them on an element, with the events a person's upload
// fires. The page cannot see this world, and Chrome refuses the debugger's own way
// (`DOM.setFileInputFiles`) to extensions.

  const isFileInput = (el) => el instanceof HTMLInputElement && el.type === 'file';

  // Whether `file` ({name, mimeType}) is one `accept` (an input's attribute) lets through: a
  // `.ext` token by the name's end, `type/*` by the type's first half, else the exact type.
  // Like a browser's file chooser, an empty or missing attribute takes anything.
  function accepts(accept, file) {
    const tokens = String(accept || '').split(',').map((t) => t.trim().toLowerCase()).filter(Boolean);
    if (tokens.length === 0) return true;
    const name = file.name.toLowerCase();
    const type = (file.mimeType || '').split(';')[0].trim().toLowerCase();
    return tokens.some((token) => {
      if (token.startsWith('.')) return name.endsWith(token);
      if (token.endsWith('/*')) return type !== '' && type.startsWith(token.slice(0, -1));
      return type === token;
    });
  }

  // The files of upload `key`, built from the chunks kept for it; an error when any is missing
  // or of another size than declared (the document changed while the bytes travelled).
  function keptFiles(key, files) {
    const kept = (globalThis.__tabwireUploads || new Map()).get(key);
    const built = [];
    for (let i = 0; i < files.length; i++) {
      const meta = files[i];
      const parts = kept && kept.files[i] ? kept.files[i].slice().sort((a, b) => a.offset - b.offset) : [];
      let size = 0;
      for (const part of parts) {
        if (part.offset !== size) break;
        size += part.bytes.length;
      }
      if (size !== meta.size) {
        return fail('DOCUMENT_CHANGED', `The bytes of "${cap(meta.name, NAME_MAX)}" did not all reach the page (the document may have been replaced meanwhile); nothing was set. Retry.`);
      }
      built.push(new File(parts.map((p) => p.bytes), meta.name, { type: meta.mimeType || '', lastModified: Date.now() }));
    }
    return ok(built);
  }

  // The chooser that a click on a styled button opens is caught on its way to the page: a
  // listener of this world on the window, first in the capture phase, takes the file input the
  // click activates and keeps the chooser from opening (a person's chooser would cover the
  // page). Armed before the click; disarmed by `setFiles`, by the upload's clean-up (page.js
  // `dropUpload`, whatever ended it) or after 10 s by itself, so a person's own click on a file
  // input is never caught. Kept on the world's global, where the clean-up finds it.
  const CHOOSER_ARMED_MS = 10000;

  function armChooser(args) {
    const found = resolveTarget(args.target);
    if (found.error) return found;
    if (isFileInput(found.el)) return done(found, { input: true });
    disarmChooser();
    const caught = { input: null };
    const listener = (event) => {
      const el = event.composedPath()[0];
      if (!isFileInput(el) || caught.input) return;
      caught.input = el;
      event.preventDefault();
    };
    window.addEventListener('click', listener, true);
    const timer = setTimeout(disarmChooser, CHOOSER_ARMED_MS);
    globalThis.__tabwireChooser = { caught, listener, timer };
    return done(found, { input: false });
  }

  function disarmChooser() {
    const chooser = globalThis.__tabwireChooser;
    if (!chooser) return;
    window.removeEventListener('click', chooser.listener, true);
    clearTimeout(chooser.timer);
    globalThis.__tabwireChooser = null;
  }

  // Dispatches on `el` what a person's upload fires: `input` and `change` on a file input;
  // `dragenter`, `dragover` and `drop` carrying the files on a drop zone (each cancellable, as
  // the page's own handlers expect).
  function deliver(el, list, mode) {
    if (mode === 'drop') {
      const box = el.getBoundingClientRect();
      const at = { clientX: box.left + box.width / 2, clientY: box.top + box.height / 2 };
      for (const type of ['dragenter', 'dragover', 'drop']) {
        el.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, composed: true, dataTransfer: list, ...at }));
      }
      return;
    }
    el.files = list.files;
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }

  // Sets the files of upload `key`: on the target (an input, or the drop zone), or with
  // `chooser` on the input the armed listener caught. Replies `{node, opener?, rebound?}`, or
  // `{pending: true}` while the caught input has not arrived yet.
  function setFiles(args) {
    const uploads = globalThis.__tabwireUploads || new Map();
    let found;
    let opener = null;
    if (args.chooser) {
      const chooser = globalThis.__tabwireChooser;
      const caught = chooser && chooser.caught.input;
      if (!caught) return ok({ pending: true });
      disarmChooser();
      const openedBy = resolveTarget(args.target);
      if (!openedBy.error) opener = describe(openedBy.el, deepActiveElement());
      actedOn(caught);
      found = { el: caught };
    } else {
      disarmChooser();
      found = resolveTarget(args.target);
      if (found.error) return found;
    }
    const el = found.el;
    const files = args.files;
    const finish = (reply) => {
      uploads.delete(args.key);
      return reply;
    };
    if (args.mode === 'input') {
      if (!isFileInput(el)) {
        return finish(fail('INVALID_ARGUMENT', `${labelOf(el)} is not a file input, and a click on it opened no file chooser; nothing was set. Target the <input type=file>, the button that opens it, or use mode drop for a drop zone.`));
      }
      if (el.disabled) {
        return finish(fail('NOT_EDITABLE', `${labelOf(el)} is disabled; nothing was set.`));
      }
      if (files.length > 1 && !el.multiple) {
        return finish(fail('INVALID_ARGUMENT', `${labelOf(el)} takes one file (it has no multiple attribute), and ${files.length} were given; nothing was set.`));
      }
      const refused = files.find((file) => !accepts(el.getAttribute('accept'), file));
      if (refused) {
        const type = refused.mimeType ? ` (${refused.mimeType})` : ' (no known type)';
        return finish(fail('INVALID_ARGUMENT', `${labelOf(el)} accepts "${cap(el.getAttribute('accept'), NAME_MAX)}", which "${cap(refused.name, NAME_MAX)}"${type} is not; nothing was set. Give a file it accepts, or set mimeType if the type was guessed wrong.`));
      }
    }
    const built = keptFiles(args.key, files);
    if (built.error) return finish(built);
    const list = new DataTransfer();
    for (const file of built.value) list.items.add(file);
    if (args.mode === 'drop') el.scrollIntoView(TO_CENTRE);
    deliver(el, list, args.mode);
    return finish(done(found, { node: describe(el, deepActiveElement()), opener }));
  }
