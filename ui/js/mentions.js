// `@` mentions in the message box: typing `@` offers the workspace's files and folders,
// @git-changes and @problems (arrows move, Tab or Enter takes one, Escape closes); each mention
// in the message shows as a chip with what it adds to the request, or why it cannot be
// attached. The host reads and attaches them when the message is sent (the page never reads
// files).

import { request } from './ipc.js';
import { byId, formatTokens, h, onSuggestionKeys } from './dom.js';

/** @typedef {import('./protocol').MentionView} MentionView */

/** @type {string[]} */
let shown = [];
let active = 0;
/** The `@word` being typed: where it starts in the text, and what follows the `@`. */
let typing = /** @type {{ start: number, query: string } | null} */ (null);
let listTimer = 0;
let chipTimer = 0;
/** Replies come back in order of asking; only the last one counts. */
let asked = 0;

/** The `@word` that ends at the caret, if any. @param {HTMLTextAreaElement} input */
function wordAtCaret(input) {
  const before = input.value.slice(0, input.selectionStart ?? input.value.length);
  const m = /(^|\s)@([^\s@]*)$/.exec(before);
  return m ? { start: before.length - m[2].length - 1, query: m[2] } : null;
}

function close() {
  const list = byId('mention-list');
  list.hidden = true;
  list.replaceChildren();
  shown = [];
  const input = byId('composer-input');
  input.removeAttribute('aria-activedescendant');
  input.setAttribute('aria-expanded', 'false');
}

function render() {
  if (shown.length === 0) {
    close();
    return;
  }
  const list = byId('mention-list');
  list.replaceChildren(...shown.map((item, i) => h('li', {
    id: `mention-${i}`,
    role: 'option',
    class: 'slash-option mention-option',
    'data-item': item,
    'aria-selected': String(i === active),
  },
  h('span', { class: 'slash-name', text: `@${item}` }),
  item === 'git-changes' ? h('span', { class: 'slash-description muted', text: ' — the working tree\'s changes (git diff)' }) : null,
  item === 'problems' ? h('span', { class: 'slash-description muted', text: ' — syntax errors in the changed files' }) : null)));
  list.hidden = false;
  const input = byId('composer-input');
  input.setAttribute('aria-expanded', 'true');
  input.setAttribute('aria-activedescendant', `mention-${active}`);
}

/** Replaces the `@word` being typed with `@item `. @param {string} item */
function take(item) {
  const input = byId('composer-input', HTMLTextAreaElement);
  if (!typing) return;
  const end = typing.start + 1 + typing.query.length;
  const text = `${input.value.slice(0, typing.start)}@${item} ${input.value.slice(end)}`;
  input.value = text;
  const caret = typing.start + item.length + 2;
  input.setSelectionRange(caret, caret);
  close();
  input.dispatchEvent(new Event('input'));
  input.focus();
}

/** Asks the host what may be mentioned for `query`. @param {string} query */
async function offer(query) {
  const n = ++asked;
  try {
    const reply = await request({ type: 'list_mentionables', query });
    if (n !== asked || reply.type !== 'mentionables') return;
    shown = reply.items.slice(0, 30);
    active = 0;
    render();
  } catch {
    close();
  }
}

/** The chips above the box: one per mention, sized, or saying why it cannot go. */
async function refreshChips() {
  const input = byId('composer-input', HTMLTextAreaElement);
  const chips = byId('mention-chips');
  if (!/(^|\s)@\S/.test(input.value)) {
    chips.replaceChildren();
    chips.hidden = true;
    return;
  }
  try {
    const reply = await request({ type: 'preview_mentions', text: input.value });
    if (reply.type !== 'mentions') return;
    showChips(reply.mentions);
  } catch {
    chips.replaceChildren();
    chips.hidden = true;
  }
}

/** @param {MentionView[]} mentions */
function showChips(mentions) {
  const chips = byId('mention-chips');
  const total = mentions.reduce((n, m) => n + m.tokens, 0);
  chips.replaceChildren(...mentions.map((m) => h('span', {
    class: 'mention-chip',
    'data-error': m.error ? 'true' : null,
    title: m.error ?? `Attached with the message: about ${m.tokens.toLocaleString()} tokens`,
  },
  h('span', { class: 'mention-name', text: `@${m.mention}` }),
  h('span', { class: 'mention-size', text: m.error ? ` — ${m.error}` : /^https?:\/\//i.test(m.mention) ? ' · fetched as text when sent' : ` · ${formatTokens(m.tokens)} tokens` }))),
  mentions.length > 1 ? h('span', { class: 'mention-total muted', text: `${formatTokens(total)} tokens in all` }) : '');
  chips.hidden = mentions.length === 0;
}

export function initMentions() {
  const input = byId('composer-input', HTMLTextAreaElement);
  input.addEventListener('input', () => {
    typing = wordAtCaret(input);
    clearTimeout(listTimer);
    if (typing) {
      const query = typing.query;
      listTimer = window.setTimeout(() => offer(query), 80);
    } else {
      close();
    }
    clearTimeout(chipTimer);
    chipTimer = window.setTimeout(refreshChips, 250);
  });
  onSuggestionKeys(input, {
    size: () => shown.length,
    step: (by) => {
      active = (active + by) % shown.length;
      render();
    },
    take: () => take(shown[active]),
    close,
  });
  byId('mention-list').addEventListener('mousedown', (ev) => {
    const li = ev.target instanceof Element ? ev.target.closest('.mention-option') : null;
    if (li instanceof HTMLElement && li.dataset.item) {
      ev.preventDefault();
      take(li.dataset.item);
    }
  });
  input.addEventListener('blur', () => setTimeout(close, 150));
}
