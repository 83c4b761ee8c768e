// The popup: settings (Server URL, Browser name, Pairing code, Access token), connection status
// and recent calls. It holds no state of its own: it asks the service worker (`getState`) every second
// while open, and never overwrites a field the user is editing.
//
// The access token is write-only: the worker says only whether one is set (`accessTokenSet`)
// and whether policy set it. An empty field on Connect keeps the token in use; a typed one
// replaces it; Forget token drops it. The field is emptied once the worker has the token.
// The pairing code is write-only too: the worker says only whether the browser is paired; a
// code typed on Connect pairs (again), replacing an earlier pairing.

// Questions from agents (approvals on `ask` origins, handoffs from request_human) are listed on
// top with their answers; the owner's policy is a text area of rules, saved only when the worker
// accepts them, with what applies to the window's current tab above it.

const $ = (id) => document.getElementById(id);
let policyEdited = false;
const fields = ['serverUrl', 'browserName'];
const edited = new Set(); // fields changed by the user since the last successful Connect

const STATUS_TEXT = {
  connected: 'Connected',
  connecting: 'Connecting…',
  disconnected: 'Disconnected, retrying',
  refused: 'Refused by the hub',
  notConfigured: 'Not configured: enter the Server URL and press Connect',
  notPaired: 'Not paired: paste a pairing code and press Connect',
};
const TOKEN_PLACEHOLDER = {
  none: 'none (only a hosted hub needs one)',
  saved: 'saved (leave empty to keep it)',
  managed: 'set by your administrator',
};

function send(message) {
  return chrome.runtime.sendMessage(message);
}

function showText(element, text) {
  element.textContent = text || '';
  element.hidden = !text;
}

function render(state) {
  for (const name of fields) {
    const input = $(name);
    const managed = Boolean(state.managed && state.managed[name]);
    input.readOnly = managed;
    $(name + 'Note').hidden = !managed;
    const busy = document.activeElement === input || edited.has(name);
    if (managed || !busy) input.value = state[name] || '';
  }
  const managed = state.managed || {};
  const token = $('accessToken');
  token.readOnly = Boolean(managed.accessToken);
  if (managed.accessToken) token.value = '';
  $('accessTokenNote').hidden = !managed.accessToken;
  $('accessTokenSaved').hidden = !state.accessTokenSet || Boolean(managed.accessToken);
  token.placeholder = managed.accessToken && state.accessTokenSet ? TOKEN_PLACEHOLDER.managed
    : state.accessTokenSet ? TOKEN_PLACEHOLDER.saved : TOKEN_PLACEHOLDER.none;
  const code = $('pairingCode');
  code.readOnly = Boolean(managed.pairingCode);
  $('pairingCodeNote').hidden = !managed.pairingCode;
  $('pairedNote').hidden = !state.paired;
  $('connect').disabled = Boolean(managed.serverUrl && managed.browserName && managed.accessToken);

  // "Not configured" with an error means a setting is unusable, not missing.
  $('status').textContent = state.status === 'notConfigured' && state.lastError
    ? 'Not configured: a setting is not valid'
    : STATUS_TEXT[state.status] || state.status;
  $('statusDot').className = 'dot ' + state.status;
  let detail = '';
  if (state.status === 'refused') detail = state.refusal;
  else if (state.status === 'notPaired') detail = state.lastError;
  else if (state.endpoint && state.status !== 'notConfigured') detail = state.endpoint;
  if (state.status === 'connected' && state.hubVersion) detail += ` (hub ${state.hubVersion})`;
  showText($('statusDetail'), detail);
  const explained = state.status === 'refused' || state.status === 'notPaired';
  showText($('lastError'), explained ? '' : state.lastError && 'Last error: ' + state.lastError);
  $('browserId').textContent = state.browserId || '…';

  const rows = (state.calls || []).map((call) => {
    const row = document.createElement('tr');
    const cells = [call.tool, call.ms, call.bytes, call.ok ? 'ok' : (call.error || 'error')];
    cells.forEach((value, i) => {
      const cell = document.createElement('td');
      cell.textContent = String(value);
      if (i === 1 || i === 2) cell.className = 'num';
      if (i === 3 && !call.ok) cell.className = 'bad';
      row.appendChild(cell);
    });
    row.title = new Date(call.at).toLocaleTimeString();
    return row;
  });
  $('calls').tBodies[0].replaceChildren(...rows);
  $('noCalls').hidden = rows.length > 0;

  renderQuestions(state.questions || []);
  renderRecordings(state.recordings || []);
  const policy = state.policy || { lines: '', managed: false };
  const text = $('policyText');
  text.readOnly = policy.managed;
  $('policyNote').hidden = !policy.managed;
  $('savePolicy').disabled = policy.managed;
  if (policy.managed || (!policyEdited && document.activeElement !== text)) text.value = policy.lines;
}

const ANSWERS = {
  approval: [['once', 'Allow once'], ['session', 'Allow for this session'], ['deny', 'Deny']],
  handoff: [['done', 'Done'], ['decline', 'Decline']],
  recording: [['once', 'Allow recording'], ['deny', 'Deny']],
};

// Tabs whose person's input is being recorded for an agent (recording.rs), each with Stop.
function renderRecordings(recordings) {
  $('recordings').hidden = recordings.length === 0;
  const items = (recordings || []).map((recording) => {
    const item = document.createElement('li');
    const what = recording.handoff ? 'while you have it for an agent' : 'for an agent';
    const text = document.createElement('p');
    text.textContent = `Tab ${recording.tabId}: what you do is recorded ${what} (${recording.steps} steps so far).`;
    item.appendChild(text);
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = 'Stop';
    button.dataset.tab = String(recording.tabId);
    button.addEventListener('click', async () => {
      await send({ type: 'stopRecording', tabId: recording.tabId });
      refresh();
    });
    item.appendChild(button);
    return item;
  });
  $('recordingList').replaceChildren(...items);
}

function renderQuestions(questions) {
  $('questions').hidden = questions.length === 0;
  const items = questions.map((question) => {
    const item = document.createElement('li');
    item.dataset.id = String(question.id);
    // The wording is the worker's (approvals.rs), the same as the notification's: the origin
    // and the browser first, then each fact in a field of its own, what the agent or the page
    // wrote capped and marked as theirs, so it cannot pose as the origin or the tab.
    const head = document.createElement('p');
    head.textContent = question.wording.title;
    item.appendChild(head);
    const facts = question.wording.facts;
    const list = document.createElement('dl');
    for (const [label, value] of facts) {
      const term = document.createElement('dt');
      term.textContent = label;
      const detail = document.createElement('dd');
      detail.textContent = String(value);
      list.append(term, detail);
    }
    item.appendChild(list);
    for (const [answer, label] of ANSWERS[question.kind] || []) {
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = label;
      button.dataset.answer = answer;
      button.addEventListener('click', async () => {
        await send({ type: 'answer', id: question.id, answer });
        refresh();
      });
      item.appendChild(button);
    }
    return item;
  });
  $('questionList').replaceChildren(...items);
}

async function showEffective() {
  try {
    const [tab] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
    if (!tab || !tab.url || tab.url.startsWith(chrome.runtime.getURL(''))) {
      $('effective').textContent = '';
      return;
    }
    const reply = await send({ type: 'verdict', url: tab.url });
    const verdict = reply && reply.verdict;
    if (!verdict) return;
    const owner = verdict.owner === 'operator' ? "the hub's" : 'your';
    $('effective').textContent = `This tab: agents may ${verdict.access} here (${owner} rule ` +
      `${verdict.rule}); sensitive reads ${verdict.sensitive === 'allow' ? 'allowed' : 'denied'}.`;
  } catch (error) {
    $('effective').textContent = '';
  }
}

async function refresh() {
  try {
    render(await send({ type: 'getState' }));
  } catch (error) {
    $('status').textContent = 'The extension is starting…';
  }
}

for (const name of fields) {
  $(name).addEventListener('input', () => edited.add(name));
}

$('settings').addEventListener('submit', async (event) => {
  event.preventDefault();
  showText($('formError'), '');
  $('connect').disabled = true;
  try {
    const reply = await send({
      type: 'connect',
      serverUrl: $('serverUrl').value,
      browserName: $('browserName').value,
      accessToken: $('accessToken').readOnly ? '' : $('accessToken').value,
      pairingCode: $('pairingCode').readOnly ? '' : $('pairingCode').value,
    });
    if (reply && reply.ok) {
      edited.clear();
      $('accessToken').value = '';
      $('pairingCode').value = '';
    } else {
      showText($('formError'), (reply && reply.error) || 'Could not connect.');
    }
  } finally {
    $('connect').disabled = false;
    refresh();
  }
});

$('policyText').addEventListener('input', () => { policyEdited = true; });

$('savePolicy').addEventListener('click', async () => {
  showText($('policyError'), '');
  showText($('policySaved'), '');
  const reply = await send({ type: 'savePolicy', text: $('policyText').value });
  if (reply && reply.ok) {
    policyEdited = false;
    showText($('policySaved'), 'Saved: agents get these rules from their next call.');
  } else {
    showText($('policyError'), (reply && reply.error) || 'Could not save the rules.');
  }
  refresh();
  showEffective();
});

$('forgetToken').addEventListener('click', async () => {
  showText($('formError'), '');
  $('forgetToken').disabled = true;
  try {
    const reply = await send({ type: 'forgetToken' });
    if (reply && reply.ok) {
      $('accessToken').value = '';
    } else {
      showText($('formError'), (reply && reply.error) || 'Could not forget the token.');
    }
  } finally {
    $('forgetToken').disabled = false;
    refresh();
  }
});

// The clipboard tool needs optional permissions the person grants here (Chrome asks them to
// confirm), and can take back; the policy still judges each call on the tab's origin.
const CLIPBOARD = { permissions: ['clipboardRead', 'clipboardWrite'] };
let clipboardGranted = false;
async function showClipboard() {
  clipboardGranted = await chrome.permissions.contains(CLIPBOARD);
  $('clipboardState').textContent = clipboardGranted
    ? 'Agents may read and write this browser\'s clipboard: whatever you copy, anywhere, while '
      + 'this is on (not on pages whose rules close sensitive reads).'
    : 'Agents may not use this browser\'s clipboard.';
  $('clipboardToggle').textContent = clipboardGranted ? 'Stop clipboard access'
    : 'Let agents use the clipboard';
}
$('clipboardToggle').addEventListener('click', () => {
  // Asked at once, within the click: Chrome grants optional permissions only during a gesture.
  const change = clipboardGranted ? chrome.permissions.remove(CLIPBOARD)
    : chrome.permissions.request(CLIPBOARD);
  change.finally(showClipboard);
});

refresh();
showEffective();
showClipboard();
setInterval(refresh, 1000);
