// The bodies of approval cards beyond file writes: a command (with the rights it may be given
// beyond its confinement), a wider scope for an intent, and a new intent. Each returns how its
// approval reads, so what the person edited or ticked is what is sent.

import { ask } from './ipc.js';
import { append, debounce, errorText, h } from './dom.js';
import { intentStatusLabel } from './store.js';

/** @typedef {import('./protocol').ApprovalDetail} ApprovalDetail */
/** @typedef {import('./protocol').ApprovalDecision} ApprovalDecision */
/** @typedef {import('./protocol').GlobPreview} GlobPreview */
/** @typedef {() => ApprovalDecision | string} Approve  a string says why it cannot be approved as it is */

/**
 * @param {HTMLElement} el
 * @param {Extract<ApprovalDetail, { kind: 'command' }>} d
 * @param {number} n unique per card
 * @returns {Approve}
 */
export function commandBody(el, d, n) {
  el.append(
    h('pre', { class: 'command', tabindex: '0', 'aria-label': 'Command' }, h('code', { text: d.command })),
    h('p', { class: 'small' }, h('span', { class: 'muted', text: 'In ' }), h('code', { text: d.cwd || '.' })),
    ...(d.background
      ? [h('p', { class: 'tag tag-background', text: 'Keeps running in the background until stopped, its task ends, or Mandate closes' })]
      : []),
    d.destructive
      ? h('div', { class: 'danger-box' },
        h('p', { class: 'tag tag-danger', text: 'Destructive' }),
        d.reasons.length ? h('ul', { class: 'reasons' }, ...d.reasons.map((r) => h('li', { text: r }))) : null)
      : h('p', null, h('span', { class: 'tag tag-safe', text: 'Safe' }), h('span', { class: 'muted small', text: ' No destructive pattern found.' })));
  if (!d.confined) {
    // Without confinement the checkboxes below would mean nothing: say what is at stake instead.
    el.append(h('p', { class: 'danger-box unconfined', role: 'note', text: 'Commands are not confined on this machine: nothing but this card stops this command. If you approve, it runs with your rights — it can change any of your files and reach the network.' }));
    return () => ({ decision: 'approve', rejected_hunks: [], edited_content: null });
  }
  const network = h('input', { type: 'checkbox', id: `grant-network-${n}`, name: 'grant-network', checked: d.needs.network });
  const git = h('input', { type: 'checkbox', id: `grant-git-${n}`, name: 'grant-write-git', checked: d.needs.write_git });
  const needs = [d.needs.network ? 'the network' : null, d.needs.write_git ? 'writing .git/' : null].filter(Boolean);
  // A div, not a fieldset: WebKit lays a fieldset out again when a button near it is pressed.
  el.append(h('div', { class: 'grants', role: 'group', 'aria-labelledby': `grants-${n}` },
    h('p', { class: 'grants-title', id: `grants-${n}`, text: 'Beyond its confinement' }),
    h('div', { class: 'check' }, network, h('label', { for: `grant-network-${n}`, text: 'Allow network' })),
    h('div', { class: 'check' }, git, h('label', { for: `grant-git-${n}`, text: 'Allow writing .git/' })),
    h('p', { class: 'muted small', text: needs.length
      ? `The command policy says it needs ${needs.join(' and ')}; untick to run it without.`
      : 'It runs confined: it writes only in the intent’s scope and reaches no network unless you tick it here.' })));
  return () => ({
    decision: 'approve',
    rejected_hunks: [],
    edited_content: null,
    grant: { network: network.checked, write_git: git.checked },
  });
}

/**
 * A list of globs with what each matches, redrawn as the person edits them.
 * @param {HTMLElement} list
 * @param {string[]} globs
 * @param {GlobPreview[] | null} known  previews the host sent with the card
 */
async function showMatches(list, globs, known) {
  let previews = known;
  if (!previews) {
    try {
      previews = globs.length ? (await ask({ type: 'preview_scope', globs }, 'scope_preview')).globs : [];
    } catch (e) {
      list.replaceChildren(h('li', { class: 'inline-error', text: `Could not check the globs: ${errorText(e)}` }));
      return;
    }
  }
  const byGlob = new Map(previews.map((p) => [p.glob, p]));
  list.replaceChildren(...globs.map((g) => {
    const p = byGlob.get(g);
    const what = !p ? '' : p.error ? `not a valid glob: ${p.error}` : p.total === 0 ? 'matches no file yet'
      : `${p.total} file${p.total === 1 ? '' : 's'}: ${p.matches.slice(0, 5).join(', ')}${p.total > 5 ? ` and ${p.total - 5} more` : ''}`;
    return h('li', { class: 'glob-match', 'data-glob': g, 'data-state': p?.error ? 'error' : p?.total === 0 ? 'none' : 'ok' },
      h('code', { text: g }), h('span', { class: 'muted small', text: what ? ` — ${what}` : '' }));
  }));
}

/** @param {string} text */
const globsOf = (text) => text.split('\n').map((l) => l.trim()).filter((l) => l !== '');

/**
 * The editable glob list shared by both intent cards: one glob per line, what each matches below.
 * @param {HTMLElement} el
 * @param {string[]} globs
 * @param {GlobPreview[] | null} known
 * @param {{ id: string, label: string }} field
 * @returns {Approve}
 */
function editableGlobs(el, globs, known, field) {
  const area = h('textarea', { id: field.id, name: 'edited-globs', class: 'code-input', rows: String(Math.min(8, Math.max(2, globs.length + 1))), spellcheck: 'false', 'aria-describedby': `${field.id}-note` });
  area.value = globs.join('\n');
  const matches = h('ul', { class: 'glob-matches', 'aria-live': 'polite' });
  const note = h('p', { class: 'muted small', id: `${field.id}-note`, text: 'One glob per line. Edit them before approving to grant less (or more).' });
  el.append(h('div', { class: 'field' }, h('label', { for: field.id, text: field.label }), area, note), matches);
  showMatches(matches, globs, known);
  const refresh = debounce(() => showMatches(matches, globsOf(area.value), null), 250);
  area.addEventListener('input', refresh);
  return () => {
    const edited = globsOf(area.value);
    if (edited.length === 0) return 'Leave at least one glob, or reject the request.';
    return {
      decision: 'approve',
      rejected_hunks: [],
      edited_content: edited.join('\n') === globs.join('\n') ? null : edited.join('\n'),
    };
  };
}

/** @param {string[]} items */
const codeList = (items) => items.length
  ? h('span', null, ...items.flatMap((g, i) => [i ? ', ' : '', h('code', { text: g })]))
  : h('span', { class: 'muted', text: 'none' });

/**
 * @param {HTMLElement} el
 * @param {Extract<ApprovalDetail, { kind: 'scope_expansion' }>} d
 * @param {number} n
 * @param {string | null} shownIntent  the intent the card already shows
 * @returns {Approve}
 */
export function scopeBody(el, d, n, shownIntent) {
  el.append(h('div', { class: 'approval-reason' }, h('span', { class: 'muted', text: 'The agent’s reason: ' }), h('span', { text: d.reason })));
  // The card's intent block shows the task's intent; another one's scope is said here.
  if (shownIntent !== d.intent_id) el.append(h('p', { class: 'scope-now small' }, h('span', { class: 'muted', text: `${d.intent_id} owns now: ` }), codeList(d.owned_scope)));
  return editableGlobs(el, d.globs, d.preview, { id: `scope-globs-${n}`, label: 'Globs to add' });
}

/**
 * @param {HTMLElement} el
 * @param {Extract<ApprovalDetail, { kind: 'new_intent' }>} d
 * @param {number} n
 * @returns {Approve}
 */
export function newIntentBody(el, d, n) {
  const i = d.intent;
  /** @param {string} label @param {string[]} items */
  const items = (label, items) => items.length
    ? h('div', { class: 'small' }, h('span', { class: 'muted', text: label }), h('ul', { class: 'reasons' }, ...items.map((t) => h('li', { text: t }))))
    : null;
  append(el, [
    h('p', null, h('span', { class: 'intent-id', text: i.id }), h('span', { text: ` · ${i.name} ` }), h('span', { class: 'chip', 'data-status': i.status, text: intentStatusLabel(i.status) })),
    h('div', { class: 'approval-reason' }, h('span', { class: 'muted', text: 'The agent’s reason: ' }), h('span', { text: d.reason })),
    items('Constraints', i.constraints),
    items('Acceptance criteria', i.acceptance_criteria)]);
  return editableGlobs(el, i.owned_scope, null, { id: `new-intent-globs-${n}`, label: 'Owned scope' });
}
