// tabwire's offscreen document (extension-wasm/js/clipboard.js opens it for one call): the
// clipboard through execCommand, whose copy and paste events carry the text (no element takes
// the focus). It answers only tabwire's own service worker: the collector is a content script
// of this extension too, and a page's renderer must not reach the clipboard through it.
const WORKER = chrome.runtime.getURL('background.js');

chrome.runtime.onMessage.addListener((message, sender, reply) => {
  if (message?.target !== 'tabwire-offscreen') return false;
  if (sender.id !== chrome.runtime.id || sender.url !== WORKER) return false;
  try {
    if (message.op === 'read') {
      const text = read();
      // Only the length crosses when there is too much.
      if (text.length > message.max) reply({ tooLong: text.length });
      else reply({ text });
    }
    else if (message.op === 'write' && typeof message.text === 'string') {
      write(message.text);
      reply({});
    } else reply({ error: 'unknown clipboard request' });
  } catch (error) {
    reply({ error: String(error?.message || error) });
  }
  return false;
});

function read() {
  let text = null;
  const take = (event) => {
    text = event.clipboardData.getData('text/plain');
    event.preventDefault();
  };
  document.addEventListener('paste', take);
  try {
    if (!document.execCommand('paste')) throw new Error('Chrome refused to paste (no clipboardRead permission)');
  } finally {
    document.removeEventListener('paste', take);
  }
  return text ?? '';
}

function write(text) {
  const give = (event) => {
    event.clipboardData.setData('text/plain', text);
    event.preventDefault();
  };
  document.addEventListener('copy', give);
  try {
    if (!document.execCommand('copy')) throw new Error('Chrome refused to copy (no clipboardWrite permission)');
  } finally {
    document.removeEventListener('copy', give);
  }
}
