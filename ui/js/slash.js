// Slash commands in the message box: typing `/` at the start offers the person's commands
// (and /compact); arrows move, Tab or Enter takes one, Escape closes. The host expands the
// command when the message is sent.

import { request } from './ipc.js';
import { byId, h, onSuggestionKeys } from './dom.js';

/** @typedef {import('./protocol').CommandInfo} CommandInfo */

/** @type {CommandInfo[]} */
let commands = [];
/** @type {CommandInfo[]} */
let shown = [];
let active = 0;

const COMPACT = { name: 'compact', description: 'Condense this task\'s conversation', argument_hint: '', source: 'Mandate' };

async function loadCommands() {
  try {
    const reply = await request({ type: 'list_commands' });
    if (reply.type === 'commands') commands = reply.commands;
  } catch {
    commands = [];
  }
}

/** The name being typed, when the message is only `/name` so far. @param {string} text */
function typedName(text) {
  const m = /^\/([A-Za-z0-9_.-]*)$/.exec(text);
  return m ? m[1] : null;
}

function close() {
  const list = byId('slash-list');
  list.hidden = true;
  list.replaceChildren();
  shown = [];
  byId('composer-input').removeAttribute('aria-activedescendant');
  byId('composer-input').setAttribute('aria-expanded', 'false');
}

function render() {
  const list = byId('slash-list');
  const input = byId('composer-input');
  if (shown.length === 0) {
    close();
    return;
  }
  list.replaceChildren(...shown.map((c, i) => h('li', {
    id: `slash-${i}`,
    role: 'option',
    class: 'slash-option',
    'data-name': c.name,
    'aria-selected': String(i === active),
    title: c.source,
  },
  h('span', { class: 'slash-name', text: `/${c.name}` }),
  c.argument_hint ? h('span', { class: 'slash-hint muted', text: ` ${c.argument_hint}` }) : '',
  h('span', { class: 'slash-description muted', text: c.description ? ` — ${c.description}` : '' }))));
  list.hidden = false;
  input.setAttribute('aria-expanded', 'true');
  input.setAttribute('aria-activedescendant', `slash-${active}`);
}

/** Puts `/name ` in the message box. @param {CommandInfo} c */
function take(c) {
  const input = byId('composer-input', HTMLTextAreaElement);
  input.value = `/${c.name} `;
  input.dispatchEvent(new Event('input'));
  close();
  input.focus();
}

export function initSlash() {
  const input = byId('composer-input', HTMLTextAreaElement);
  input.setAttribute('aria-controls', 'slash-list');
  input.setAttribute('aria-autocomplete', 'list');
  /** The list is read again each time a `/` starts a message; keystrokes typed while it is
   * on its way wait for it, and every handler filters by the text as it is when it resumes
   * (not as it was when its key was pressed), so the last one to run shows the right list. */
  let loading = Promise.resolve();
  input.addEventListener('input', async () => {
    if (typedName(input.value) === '') loading = loadCommands();
    await loading;
    const name = typedName(input.value);
    if (name === null) {
      close();
      return;
    }
    const all = [...commands, COMPACT];
    shown = all.filter((c) => c.name.startsWith(name)).slice(0, 20);
    active = 0;
    render();
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
  byId('slash-list').addEventListener('mousedown', (ev) => {
    const li = ev.target instanceof Element ? ev.target.closest('.slash-option') : null;
    const c = shown.find((x) => li instanceof HTMLElement && x.name === li.dataset.name);
    if (c) {
      ev.preventDefault();
      take(c);
    }
  });
  input.addEventListener('blur', () => setTimeout(close, 150));
}
