// "Copy diagnostics" in Settings: the host writes the text (never a key); the page puts it on the
// clipboard and shows it, selected, for the person to read or copy by hand.

import { ask } from './ipc.js';
import { byId, errorText } from './dom.js';

export function initDiagnostics() {
  byId('diagnostics-copy').addEventListener('click', copyDiagnostics);
}

/**
 * Starts writing to the clipboard at once, inside the click: the webview lets a page write only
 * while the person's click is fresh, and the text comes from the host later. A ClipboardItem
 * takes the text as a promise for exactly this.
 * @param {Promise<string>} text
 * @returns {Promise<boolean>}
 */
function toClipboard(text) {
  try {
    if (!navigator.clipboard?.write || typeof ClipboardItem !== 'function') return Promise.resolve(false);
    const item = new ClipboardItem({ 'text/plain': text.then((t) => new Blob([t], { type: 'text/plain' })) });
    return navigator.clipboard.write([item]).then(() => true, () => false);
  } catch {
    return Promise.resolve(false);
  }
}

function copyDiagnostics() {
  const button = byId('diagnostics-copy', HTMLButtonElement);
  const status = byId('diagnostics-status');
  const area = byId('diagnostics-text', HTMLTextAreaElement);
  button.disabled = true;
  status.textContent = 'Collecting…';
  delete status.dataset.copied;
  const text = ask({ type: 'diagnostics' }, 'diagnostics').then((reply) => reply.text);
  const copied = toClipboard(text);
  text.then(async (t) => {
    area.value = t;
    byId('diagnostics-field').hidden = false;
    const ok = await copied;
    status.textContent = ok
      ? 'Copied to the clipboard. It is also below.'
      : 'The clipboard could not be reached: the text is below, selected; copy it with Ctrl+C.';
    status.dataset.copied = String(ok);
    area.focus();
    area.select();
  }, (e) => {
    status.textContent = `Could not collect diagnostics: ${errorText(e)}`;
  }).finally(() => {
    button.disabled = false;
  });
}
