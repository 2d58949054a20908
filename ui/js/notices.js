// Non-modal notices (#notices): never take focus; info fades after a while, problems stay.

import { byId, h } from './dom.js';

/** @typedef {import('./protocol').NoticeLevel} NoticeLevel */

const INFO_MS = 6000;
const MAX_SHOWN = 5;

/**
 * @param {NoticeLevel} level
 * @param {string} message
 */
export function showNotice(level, message) {
  const area = byId('notices');
  const text = h('span', { class: 'notice-text', text: message });
  const close = h('button', { type: 'button', class: 'notice-close', 'aria-label': 'Dismiss', text: '×' });
  const prefix = level === 'error' ? 'Error: ' : level === 'warning' ? 'Warning: ' : '';
  const note = h('div', { class: 'notice', 'data-level': level },
    prefix ? h('span', { class: 'visually-hidden', text: prefix }) : null, text, close);
  close.addEventListener('click', () => dismiss(note));

  if (level === 'info') {
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer;
    const arm = () => { timer = setTimeout(() => dismiss(note), INFO_MS); };
    // Someone reading or pointing at it keeps it up.
    note.addEventListener('mouseenter', () => clearTimeout(timer));
    note.addEventListener('mouseleave', arm);
    note.addEventListener('focusin', () => clearTimeout(timer));
    arm();
  }
  area.append(note);
  // Too many at once: drop the oldest info first, then the oldest of any kind.
  while (area.children.length > MAX_SHOWN) {
    const oldest = area.querySelector('.notice[data-level="info"]') ?? area.firstElementChild;
    if (!oldest) break;
    oldest.remove();
  }
}

/** @param {HTMLElement} note */
function dismiss(note) {
  const hadFocus = note.contains(document.activeElement);
  const next = note.nextElementSibling ?? note.previousElementSibling;
  note.remove();
  // Keep keyboard users inside the notices while there are any, else the page keeps focus.
  if (hadFocus && next) next.querySelector('button')?.focus();
}
