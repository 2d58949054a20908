// The Intents view: the ordered list, and an editor that survives changes made on disk.

import { ask, request } from './ipc.js';
import { byId, closest, debounce, errorText, h, quote, setMessage } from './dom.js';
import { intentStatusLabel, listen, setIntents, store } from './store.js';
import { ListEditor } from './listeditor.js';
import { confirmAction } from './confirm.js';
import { readCap } from './settings.js';

/** @typedef {import('./protocol').IntentView} IntentView */
/** @typedef {import('./protocol').IntentDraft} IntentDraft */
/** @typedef {import('./protocol').IntentStatus} IntentStatus */

const editor = {
  /** Id of the intent being edited as it is on disk; null for a new one. @type {string | null} */
  original: null,
  /** The intent as it was when loaded into the form, to notice changes made elsewhere. @type {IntentView | null} */
  loaded: null,
  dirty: false,
  saving: false,
};

/** @type {ListEditor} */ let scope;
/** @type {ListEditor} */ let constraints;
/** @type {ListEditor} */ let criteria;
let previewSeq = 0;
/** The form was opened by the first-run guide: after saving, offer the way back to the chat. */
let fromGuide = false;

export function initIntents() {
  const markDirty = () => {
    editor.dirty = true;
    setMessage(byId('intent-saved'), null);
  };
  scope = new ListEditor(byId('intent-scope'), { label: 'Glob', preview: true, onChange: () => { markDirty(); schedulePreview(); } });
  constraints = new ListEditor(byId('intent-constraints'), { label: 'Constraint', onChange: markDirty });
  criteria = new ListEditor(byId('intent-criteria'), { label: 'Criterion', onChange: markDirty });

  const form = byId('intent-form', HTMLFormElement);
  for (const id of ['intent-id', 'intent-name', 'intent-status', 'intent-max-cost', 'intent-max-tokens']) {
    byId(id).addEventListener('input', markDirty);
    byId(id).addEventListener('change', markDirty);
  }
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    save();
  });
  byId('intent-delete').addEventListener('click', remove);
  byId('intent-new').addEventListener('click', async () => {
    if (await mayDiscard()) {
      load(null);
      byId('intent-id').focus();
    }
  });
  byId('intent-reload').addEventListener('click', () => {
    const disk = editor.original ? find(editor.original) : undefined;
    load(disk ?? null);
  });

  const list = byId('intent-list');
  list.addEventListener('click', async (ev) => {
    const item = closest(ev.target, '.intent-item');
    const id = item?.dataset.intentId;
    if (!id) return;
    const action = closest(ev.target, '[data-action]')?.dataset.action;
    if (action === 'move-up' || action === 'move-down') {
      move(id, action === 'move-up' ? -1 : 1);
      return;
    }
    if (id === editor.original) return;
    if (await mayDiscard()) load(find(id) ?? null);
  });

  byId('intent-back-to-chat').addEventListener('click', () => {
    fromGuide = false;
    byId('intent-back-to-chat').hidden = true;
    document.dispatchEvent(new CustomEvent('mandate:show-view', { detail: 'chat' }));
  });

  // A task paused at its intent's budget: the person is sent here to raise it.
  document.addEventListener('mandate:edit-intent', async (ev) => {
    const id = ev instanceof CustomEvent ? String(ev.detail) : '';
    if (id !== editor.original && !(await mayDiscard())) return;
    if (id !== editor.original) load(find(id) ?? null);
    byId('intent-max-cost').focus();
  });

  listen('intents', onIntentsChanged);
  load(null);
}

/** Opens the editor on a new intent with a first id filled in (from the chat's first-run guide). */
export async function startFirstIntent() {
  if (!(await mayDiscard())) return;
  load(null);
  fromGuide = true;
  const taken = new Set(store.intents.intents.map((i) => i.id));
  let n = 1;
  while (taken.has(`INT-${String(n).padStart(3, '0')}`)) n += 1;
  byId('intent-id', HTMLInputElement).value = `INT-${String(n).padStart(3, '0')}`;
  byId('intent-name').focus();
}

/** @param {string} id */
function find(id) {
  return store.intents.intents.find((i) => i.id === id);
}

/** Asks before throwing away unsaved edits. */
async function mayDiscard() {
  if (!editor.dirty) return true;
  return confirmAction({ title: 'Discard your changes?', message: 'The intent you are editing has unsaved changes.', confirmLabel: 'Discard changes' });
}

/** @param {IntentView | null} intent */
function load(intent) {
  editor.original = intent?.id ?? null;
  editor.loaded = intent;
  editor.dirty = false;
  byId('intent-form-heading').textContent = intent ? `Edit ${intent.id}` : 'New intent';
  byId('intent-id', HTMLInputElement).value = intent?.id ?? '';
  byId('intent-name', HTMLInputElement).value = intent?.name ?? '';
  byId('intent-status', HTMLSelectElement).value = intent?.status ?? 'NOT_STARTED';
  scope.set(intent?.owned_scope.length ? intent.owned_scope : ['']);
  constraints.set(intent?.constraints ?? []);
  criteria.set(intent?.acceptance_criteria ?? []);
  const cap = (/** @type {number | null | undefined} */ v) => (v === null || v === undefined ? '' : String(v));
  byId('intent-max-cost', HTMLInputElement).value = cap(intent?.budget?.max_cost_usd);
  byId('intent-max-tokens', HTMLInputElement).value = cap(intent?.budget?.max_tokens);
  byId('intent-delete').hidden = intent === null;
  byId('intent-disk-note').hidden = true;
  setMessage(byId('intent-error'), null);
  renderList();
  schedulePreview();
}

/**
 * The budget as typed: null when both caps are empty, a sentence when one is not a number.
 * @returns {import('./protocol').Budget | null | string}
 */
function budget() {
  const cost = readCap('intent-max-cost', false);
  const tokens = readCap('intent-max-tokens', true);
  if (typeof cost === 'string') return cost;
  if (typeof tokens === 'string') return tokens;
  return cost === null && tokens === null ? null : { max_cost_usd: cost, max_tokens: tokens };
}

/** @returns {IntentDraft} */
function draft() {
  const b = budget();
  return {
    id: byId('intent-id', HTMLInputElement).value.trim(),
    name: byId('intent-name', HTMLInputElement).value.trim(),
    status: /** @type {IntentStatus} */ (byId('intent-status', HTMLSelectElement).value),
    owned_scope: scope.values(),
    constraints: constraints.values(),
    acceptance_criteria: criteria.values(),
    budget: typeof b === 'string' || b === null ? undefined : b,
  };
}

/**
 * @param {IntentView | IntentDraft | null | undefined} a
 * @param {IntentView | IntentDraft | null | undefined} b
 */
function same(a, b) {
  if (!a || !b) return a === b;
  return JSON.stringify([a.id, a.name, a.status, a.owned_scope, a.constraints, a.acceptance_criteria, a.budget ?? null])
    === JSON.stringify([b.id, b.name, b.status, b.owned_scope, b.constraints, b.acceptance_criteria, b.budget ?? null]);
}

async function save() {
  const error = byId('intent-error');
  const d = draft();
  const missing = [!d.id && 'an id', !d.name && 'a name'].filter(Boolean);
  if (missing.length) {
    setMessage(error, `The intent needs ${missing.join(' and ')}.`);
    byId(!d.id ? 'intent-id' : 'intent-name').focus();
    return;
  }
  const b = budget();
  if (typeof b === 'string') {
    setMessage(error, b);
    byId('intent-max-cost').focus();
    return;
  }
  setMessage(error, null);
  editor.saving = true;
  const button = byId('intent-save', HTMLButtonElement);
  button.disabled = true;
  try {
    const reply = await ask({ type: 'save_intent', original_id: editor.original, intent: d }, 'intents');
    editor.dirty = false;
    setIntents(reply.intents);
    load(find(d.id) ?? null);
    setMessage(byId('intent-saved'), `Saved ${d.id}.`);
    byId('intent-back-to-chat').hidden = !fromGuide;
  } catch (e) {
    setMessage(error, errorText(e));
  } finally {
    editor.saving = false;
    button.disabled = false;
  }
}

async function remove() {
  const id = editor.original;
  if (!id) return;
  const ok = await confirmAction({
    title: `Delete intent ${id}?`,
    message: 'It is removed from the intents file. Tasks that use it lose it, and the trace keeps its records.',
    confirmLabel: 'Delete intent',
  });
  if (!ok) return;
  const error = byId('intent-error');
  setMessage(error, null);
  try {
    const reply = await request({ type: 'delete_intent', id });
    if (reply.type === 'intents') setIntents(reply.intents);
    load(null);
    setMessage(byId('intent-saved'), `Deleted ${id}.`);
  } catch (e) {
    setMessage(error, errorText(e));
  }
}

/**
 * @param {string} id
 * @param {number} delta
 */
async function move(id, delta) {
  const ids = store.intents.intents.map((i) => i.id);
  const from = ids.indexOf(id);
  const to = from + delta;
  if (from < 0 || to < 0 || to >= ids.length) return;
  ids.splice(to, 0, ...ids.splice(from, 1));
  const error = byId('intent-error');
  setMessage(error, null);
  try {
    const reply = await request({ type: 'reorder_intents', ids });
    if (reply.type === 'intents') setIntents(reply.intents);
  } catch (e) {
    setMessage(error, `Could not reorder: ${errorText(e)}`);
  }
}

/** The list changed (saved here, or the file changed on disk). */
function onIntentsChanged() {
  renderList();
  const view = store.intents;
  byId('intents-path').textContent = view.exists
    ? `Stored in ${view.path}`
    : `No intents file yet: saving creates ${view.path || 'it'}.`;

  if (editor.saving || editor.original === null) return;
  const disk = find(editor.original);
  if (!editor.dirty) {
    if (!same(disk, editor.loaded)) {
      load(disk ?? null);
      if (!disk) setMessage(byId('intent-saved'), 'That intent was removed from the file.');
    }
    return;
  }
  // Unsaved edits stay; only say that the file moved under them.
  const conflict = !same(disk, editor.loaded) && !same(disk, draft());
  byId('intent-disk-note').hidden = !conflict;
}

function renderList() {
  const list = byId('intent-list');
  const focused = closest(document.activeElement, '.intent-item [data-action], .intent-item .intent-open');
  const focusId = focused ? closest(focused, '.intent-item')?.dataset.intentId : undefined;
  const focusAction = focused?.dataset.action ?? 'open';
  const intents = store.intents.intents;
  list.replaceChildren(...intents.map((intent, i) => h('li', {
    class: 'intent-item',
    'data-intent-id': intent.id,
    'data-status': intent.status,
    'aria-current': intent.id === editor.original ? 'true' : null,
  },
  h('button', { type: 'button', class: 'intent-open', 'data-action': 'open', title: `${intent.id} — ${intent.name}` },
    h('span', { class: 'intent-id', text: intent.id }),
    h('span', { class: 'intent-name', text: intent.name }),
    h('span', { class: 'chip', 'data-status': intent.status, text: intentStatusLabel(intent.status) })),
  h('span', { class: 'move-buttons' },
    h('button', { type: 'button', class: 'icon-button', 'data-action': 'move-up', disabled: i === 0, 'aria-label': `Move ${intent.id} up`, title: 'Move up', text: '↑' }),
    h('button', { type: 'button', class: 'icon-button', 'data-action': 'move-down', disabled: i === intents.length - 1, 'aria-label': `Move ${intent.id} down`, title: 'Move down', text: '↓' })))));
  byId('intent-list-empty').hidden = intents.length > 0;
  if (focusId) {
    const item = list.querySelector(`.intent-item[data-intent-id=${quote(focusId)}]`);
    // At the top or bottom the pressed button is disabled: keep focus on its twin.
    const other = focusAction === 'move-up' ? 'move-down' : 'move-up';
    const target = [focusAction, other, 'open']
      .map((a) => item?.querySelector(`[data-action="${a}"]`))
      .find((b) => b instanceof HTMLButtonElement && !b.disabled);
    if (target instanceof HTMLElement) target.focus();
  }
}

const schedulePreview = debounce(preview, 250);

/** Shows under each glob which files it matches. */
async function preview() {
  const inputs = scope.inputs();
  const globs = inputs.map((i) => i.value.trim());
  const wanted = globs.filter((g) => g !== '');
  const seq = ++previewSeq;
  /** @type {Map<string, import('./protocol').GlobPreview>} */
  const results = new Map();
  /** @type {string | null} */
  let failure = null;
  if (wanted.length) {
    try {
      const reply = await ask({ type: 'preview_scope', globs: wanted }, 'scope_preview');
      for (const g of reply.globs) results.set(g.glob, g);
    } catch (e) {
      failure = errorText(e);
    }
  }
  if (seq !== previewSeq) return; // a newer preview is on its way
  inputs.forEach((input, i) => {
    const line = input.closest('li')?.querySelector('.scope-preview');
    if (!(line instanceof HTMLElement)) return;
    const glob = globs[i];
    const result = results.get(glob);
    line.replaceChildren();
    line.dataset.state = '';
    input.removeAttribute('aria-invalid');
    if (!glob) return;
    if (failure) {
      line.textContent = `Could not check this glob: ${failure}`;
      line.dataset.state = 'error';
    } else if (!result) {
      line.textContent = '';
    } else if (result.error) {
      line.textContent = `Not a valid glob: ${result.error}`;
      line.dataset.state = 'error';
      input.setAttribute('aria-invalid', 'true');
    } else if (result.total === 0) {
      line.textContent = 'Matches no file yet.';
      line.dataset.state = 'none';
    } else {
      const shown = result.matches.slice(0, 5);
      line.append(`${result.total} file${result.total === 1 ? '' : 's'}: `);
      shown.forEach((f, j) => line.append(j ? ', ' : '', h('code', { text: f })));
      if (result.total > shown.length) line.append(` and ${result.total - shown.length} more`);
    }
  });
}
