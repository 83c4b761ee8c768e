// Part of the in-page collector's factory (see 00-prelude.js). This last part closes the
// factory: the table of commands, and `run`, which the glue in page.js calls.

  // Every command the wasm can send (`PageCommand` in page.rs, by its serde name), each a
  // function of its arguments object. A test in page.rs checks that this table and the enum
  // name the same commands.
  const COMMANDS = {
    probe: () => ok({ url: cap(location.href, URL_MAX), title: cap(document.title, TITLE_MAX) }),
    snapshot,
    countAnchors,
    click,
    type: typeText,
    domClick,
    focus: focusTarget,
    point,
    selectNative,
    findOption,
    readState,
    fillForm,
    checkForm: checkFormCommand,
    finishForm,
    scroll,
    checkText,
    checkSelector,
    selectedText,
    localStorage: localStorageEntries,
    rect,
    content,
    frameIndex,
    scrollFrame,
    frameHit,
    frameBoxes,
    armChooser,
    setFiles,
    record,
  };

  const READS = new Set(['probe', 'snapshot', 'countAnchors', 'readState', 'checkText', 'checkSelector', 'selectedText', 'localStorage', 'rect', 'content', 'frameIndex', 'frameHit', 'point', 'frameBoxes', 'record']);

  return function run(argsJson) {
    labelMaps = null;
    pointerTrees = null;
    const args = JSON.parse(argsJson);
    const command = args.command;
    REDACTED = args.redacted;
    // Anything but a read may change the page: what it acts on is walked again (25-model.js).
    startCommand(READS.has(command));
    let reply;
    try {
      const handler = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : null;
      reply = handler ? handler(args) : fail('INTERNAL', `unknown page command ${command}`);
    } catch (e) {
      reply = fail('INTERNAL', `tabwire's page script failed: ${e && e.message ? e.message : e}`);
    } finally {
      labelMaps = null;
      pointerTrees = null;
    }
    // Which document answered, beside the answer: a read of a tab's page is judged by the
    // policy on it before the answer is read (page.rs).
    return { json: JSON.stringify(reply), href: location.href };
  };
};
