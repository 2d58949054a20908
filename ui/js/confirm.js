// One shared confirmation dialog (#confirm-dialog) for destructive actions.

import { byId } from './dom.js';

/** @type {((ok: boolean) => void) | null} */
let settle = null;

/**
 * Asks the user to confirm; resolves true for "confirm", false for cancel or Escape.
 * Focus goes back to where it was, so the keyboard user keeps their place.
 * @param {{ title: string, message: string, confirmLabel?: string }} options
 * @returns {Promise<boolean>}
 */
export function confirmAction({ title, message, confirmLabel = 'Delete' }) {
  const dialog = byId('confirm-dialog', HTMLDialogElement);
  if (settle) settle(false);
  byId('confirm-title').textContent = title;
  byId('confirm-message').textContent = message;
  const confirm = dialog.querySelector('[data-action="confirm"]');
  const cancel = dialog.querySelector('[data-action="cancel"]');
  if (confirm) confirm.textContent = confirmLabel;
  const returnTo = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  return new Promise((resolve) => {
    settle = (ok) => {
      settle = null;
      if (dialog.open) dialog.close();
      if (returnTo && returnTo.isConnected) returnTo.focus();
      resolve(ok);
    };
    dialog.showModal();
    // The safe choice has focus: Enter or Space must not delete by accident.
    if (cancel instanceof HTMLElement) cancel.focus();
  });
}

/** Wires the dialog's buttons once. */
export function initConfirm() {
  const dialog = byId('confirm-dialog', HTMLDialogElement);
  dialog.addEventListener('click', (ev) => {
    const target = ev.target instanceof Element ? ev.target.closest('[data-action]') : null;
    if (!target) return;
    const action = target.getAttribute('data-action');
    if (action === 'confirm') settle?.(true);
    else if (action === 'cancel') settle?.(false);
  });
  // Escape closes a modal dialog by itself; treat that as cancel.
  dialog.addEventListener('close', () => settle?.(false));
}
