// The workspace menu in the header: open another folder (the host shows its own folder picker)
// or one opened before, without restarting. The page reloads on the new workspace.

import { request } from './ipc.js';
import { byId, closest, errorText, h, setMessage } from './dom.js';
import { store } from './store.js';

export function initWorkspaceMenu() {
  const button = byId('workspace-button');
  const menu = byId('workspace-menu');
  button.addEventListener('click', () => (menu.hidden ? openMenu() : closeMenu()));
  byId('workspace-open').addEventListener('click', () => open(null));
  byId('workspace-recent').addEventListener('click', (ev) => {
    const path = closest(ev.target, '[data-workspace]')?.dataset.workspace;
    if (path) open(path);
  });
  menu.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') {
      ev.preventDefault();
      closeMenu();
      button.focus();
    }
  });
  document.addEventListener('pointerdown', (ev) => {
    if (!menu.hidden && !closest(ev.target, '#workspace-menu, #workspace-button')) closeMenu();
  });
}

function openMenu() {
  const recent = (store.settings?.recent_workspaces ?? []).filter((p) => p !== store.workspace);
  byId('workspace-recent').replaceChildren(...recent.map((p) => h('li', null,
    h('button', { type: 'button', class: 'quiet workspace-item', 'data-workspace': p, title: p, text: p }))));
  byId('workspace-recent-empty').hidden = recent.length > 0;
  setMessage(byId('workspace-error'), null);
  byId('workspace-menu').hidden = false;
  byId('workspace-button').setAttribute('aria-expanded', 'true');
  byId('workspace-open').focus();
}

function closeMenu() {
  byId('workspace-menu').hidden = true;
  byId('workspace-button').setAttribute('aria-expanded', 'false');
}

/**
 * Switches to `path` (one of the recent ones), or to a folder the person picks when null.
 * @param {string | null} path
 */
async function open(path) {
  const error = byId('workspace-error');
  setMessage(error, null);
  const buttons = [...byId('workspace-menu').querySelectorAll('button')].filter((b) => b instanceof HTMLButtonElement);
  for (const b of buttons) b.disabled = true;
  try {
    const reply = await request({ type: 'open_workspace', path });
    // Cancelled in the picker: nothing changed.
    if (reply.type !== 'state') return;
    // Every view starts over on the new workspace: reload the page (the host stays).
    location.reload();
  } catch (e) {
    setMessage(error, errorText(e));
  } finally {
    for (const b of buttons) b.disabled = false;
  }
}

