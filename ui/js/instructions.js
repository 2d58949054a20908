// Settings: what Mandate reads of the person's instructions to the agent — rule files, modes,
// skills, slash commands — and what it could not read. Read again each time Settings opens.

import { request } from './ipc.js';
import { byId, errorText, h, setMessage } from './dom.js';

/** @param {string} title @param {(string | HTMLElement)[]} items @param {string} empty */
function group(title, items, empty) {
  return h('div', { class: 'instructions-group' },
    h('h3', { class: 'instructions-title', text: title }),
    items.length
      ? h('ul', { class: 'instructions-items' }, ...items.map((i) => h('li', {}, i)))
      : h('p', { class: 'muted small', text: empty }));
}

export async function loadInstructions() {
  const box = byId('instructions-list');
  const error = byId('instructions-error');
  setMessage(error, null);
  try {
    const reply = await request({ type: 'list_instructions' });
    if (reply.type !== 'instructions') return;
    const v = reply.view;
    box.replaceChildren(
      group('Rule files every task reads', v.rules.map((r) => h('code', { text: r })), 'None: add AGENTS.md, CLAUDE.md or .roo/rules/ to the workspace.'),
      group('Modes', v.modes.map((m) => h('span', {},
        h('strong', { text: m.name }),
        ` (${m.slug}) — ${m.groups.length ? m.groups.join(', ') : 'planning only'}${m.edit_regex ? `, edits ${m.edit_regex}` : ''} · ${m.source}`)), 'None.'),
      group('Skills', v.skills, 'None: add a SKILL.md under .claude/skills/NAME/ (or .roo/skills, .agents/skills).'),
      group('Slash commands', v.commands.map((c) => h('span', {}, h('code', { text: `/${c.name}` }), ` ${c.description} · ${c.source}`)), 'None: add NAME.md under .roo/commands/ or .claude/commands/.'),
    );
    if (v.problems.length) {
      box.append(h('div', { class: 'instructions-problems', role: 'status' },
        h('h3', { class: 'instructions-title', text: 'Could not be read' }),
        h('ul', {}, ...v.problems.map((p) => h('li', { text: p })))));
    }
  } catch (e) {
    setMessage(error, errorText(e));
  }
}

export function initInstructions() {
  byId('instructions-refresh').addEventListener('click', () => { void loadInstructions(); });
  document.addEventListener('mandate:view-shown', (ev) => {
    if (ev instanceof CustomEvent && ev.detail === 'settings') void loadInstructions();
  });
}
