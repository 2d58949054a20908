// "Copy diagnostics" in Settings: the host writes the text (never a key); the page puts it on the
// clipboard and shows it, selected, for the person to read or copy by hand.

import { ask } from './ipc.js';
import { byId, errorText } from './dom.js';

export function initDiagnostics() {
  byId('diagnostics-copy').addEventListener('click', copyDiagnostics);
}

/**
 * Copies through the asynchronous clipboard where the webview offers it, else through the
 * selection (the page is its own origin; both need the click that got us here).
 * @param {HTMLTextAreaElement} area
 * @returns {Promise<boolean>}
 */
async function toClipboard(area) {
  try {
    if (navigator.clipboard?.writeText) {
      await navigator.clipboard.writeText(area.value);
      return true;
    }
  } catch {
    // Refused by the webview: fall back to the selection below.
  }
  area.focus();
  area.select();
  try {
    return document.execCommand('copy');
  } catch {
    return false;
  }
}

async function copyDiagnostics() {
  const button = byId('diagnostics-copy', HTMLButtonElement);
  const status = byId('diagnostics-status');
  const area = byId('diagnostics-text', HTMLTextAreaElement);
  button.disabled = true;
  status.textContent = 'Collecting…';
  try {
    const { text } = await ask({ type: 'diagnostics' }, 'diagnostics');
    area.value = text;
    byId('diagnostics-field').hidden = false;
    const copied = await toClipboard(area);
    status.textContent = copied
      ? 'Copied to the clipboard. It is also below.'
      : 'The clipboard could not be reached: select the text below and copy it.';
    status.dataset.copied = String(copied);
    area.focus();
    area.select();
  } catch (e) {
    status.textContent = `Could not collect diagnostics: ${errorText(e)}`;
  } finally {
    button.disabled = false;
  }
}
