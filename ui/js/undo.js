// Undo from the window: what taking back a tool call, a turn, a task or an intent's changes would
// do, file by file and hunk by hunk, in the side panel. Nothing changes until the person applies
// it; files the host cannot undo safely (someone edited the same lines since, the earlier version
// is not known) are shown with the reason and cannot be chosen.

import { ask } from './ipc.js';
import { append, byId, errorText, find, h, setMessage } from './dom.js';
import { renderDiff } from './diffview.js';
import { pathLink } from './editor.js';

/** @typedef {import('./protocol').UndoScope} UndoScope */
/** @typedef {import('./protocol').UndoPreview} UndoPreview */
/** @typedef {import('./protocol').UndoFileView} UndoFileView */
/** @typedef {import('./protocol').UndoAction} UndoAction */
/** @typedef {import('./protocol').UndoResult} UndoResult */
/** @typedef {import('./diffview.js').DiffHandle} DiffHandle */
/** @typedef {'chat' | 'intents' | 'trace' | 'settings'} View */

/**
 * @typedef {object} UndoOptions
 * @property {(view: View) => void} showView
 * @property {(taskId: string, text: string) => Promise<void>} rewound  a turn was undone
 */

/** @type {Record<UndoAction, { label: string, explain: string }>} */
const ACTIONS = {
  restore: { label: 'Restore', explain: 'Goes back to what it was before.' },
  merge: { label: 'Merge', explain: 'Changed since: the change is taken out, the later edits are kept.' },
  remove: { label: 'Remove', explain: 'The change created this file: it is removed.' },
  recreate: { label: 'Recreate', explain: 'The change removed this file: it comes back.' },
  nothing: { label: 'Nothing to do', explain: 'Already as it was before.' },
  conflict: { label: 'Conflict', explain: 'Undoing it would overwrite an edit made since, so it is left alone.' },
  unavailable: { label: 'Unavailable', explain: 'The version before the change was not kept, so it is left alone.' },
};

/** @type {Set<UndoAction>} */
const APPLIES = new Set(['restore', 'merge', 'remove', 'recreate']);

/** @type {UndoOptions} */
let opts = { showView: () => {}, rewound: async () => {} };
let seq = 0;
/** The request whose answer the panel waits for (a newer one replaces it). */
let current = 0;

/** @param {UndoOptions} options */
export function initUndo(options) {
  opts = options;
  document.addEventListener('mandate:undo', (ev) => {
    const detail = ev instanceof CustomEvent ? ev.detail : null;
    if (detail && typeof detail === 'object' && detail.scope) previewUndo(detail.scope, String(detail.label ?? 'Undo'));
  });
}

/**
 * Asks for a preview of undoing `scope`, from anywhere in the window.
 * @param {EventTarget} from  where the person asked (the event bubbles from there)
 * @param {UndoScope} scope
 * @param {string} label  what is undone, in the person's words: the preview's title
 */
export function requestUndo(from, scope, label) {
  from.dispatchEvent(new CustomEvent('mandate:undo', { bubbles: true, detail: { scope, label } }));
}

/**
 * Asks the host what undoing `scope` would do and shows it in the side panel.
 * @param {UndoScope} scope
 * @param {string} label
 */
export async function previewUndo(scope, label) {
  opts.showView('chat');
  const n = ++seq;
  const mine = ++current;
  const title = h('h3', { class: 'approval-title', id: `undo-title-${n}`, tabindex: '-1', text: label });
  const card = h('article', { class: 'approval undo-preview', 'aria-labelledby': `undo-title-${n}`, 'aria-busy': 'true' },
    title, h('p', { class: 'muted', text: 'Working out what undoing would change…' }));
  const area = byId('undo-area');
  area.replaceChildren(card);
  title.focus();
  try {
    const { preview } = await ask({ type: 'preview_undo', scope }, 'undo_preview');
    if (mine !== current) return;
    fill(card, title, preview, scope);
  } catch (e) {
    if (mine !== current) return;
    card.removeAttribute('aria-busy');
    card.replaceChildren(title,
      h('p', { class: 'inline-error', role: 'alert', text: errorText(e) }),
      h('div', { class: 'approval-actions' }, closeButton(card)));
  }
  if (card.isConnected && !card.contains(document.activeElement)) title.focus();
}

/** @param {HTMLElement} card */
function closeButton(card, label = 'Close') {
  const button = h('button', { type: 'button', 'data-action': 'close-undo', text: label });
  button.addEventListener('click', () => {
    card.remove();
    current += 1;
    byId('approval-heading').focus();
  });
  return button;
}

/**
 * @param {HTMLElement} card
 * @param {HTMLElement} title
 * @param {UndoPreview} preview
 * @param {UndoScope} scope
 */
function fill(card, title, preview, scope) {
  card.removeAttribute('aria-busy');
  card.dataset.previewId = preview.preview_id;
  card.dataset.scope = preview.scope;
  const files = preview.files.length;
  const summary = h('p', { class: 'muted small', text: `${preview.records} recorded change${preview.records === 1 ? '' : 's'} · ${files} file${files === 1 ? '' : 's'}` });
  const rewind = preview.rewinds
    ? h('p', { class: 'undo-rewind', text: 'The conversation goes back to before your message, and its text comes back to the composer to edit and send again.' })
    : null;
  /** @type {{ file: UndoFileView, box: HTMLInputElement | null, diff: DiffHandle | null }[]} */
  const rows = [];
  const list = h('ul', { class: 'undo-files' });
  for (const file of preview.files) {
    const { el, box, diff } = fileRow(file, rows.length);
    rows.push({ file, box, diff });
    list.append(el);
  }
  const applicable = rows.filter((r) => r.box !== null).length;
  const error = h('p', { class: 'inline-error undo-error', role: 'alert' });
  const apply = h('button', { type: 'button', class: 'primary', 'data-action': 'apply-undo', text: preview.rewinds && applicable === 0 ? 'Go back to this message' : 'Apply undo' });
  const nothing = applicable === 0 && !preview.rewinds;
  apply.disabled = nothing;
  const note = nothing ? h('p', { class: 'muted small', text: 'Nothing here can be undone safely; the reasons are next to each file.' }) : null;
  const actions = h('div', { class: 'approval-actions' }, apply, closeButton(card, 'Cancel'));
  card.replaceChildren();
  append(card, [title, summary, rewind, files ? list : null, note, error, actions]);

  apply.addEventListener('click', async () => {
    const chosen = rows.flatMap(({ file, box, diff }) => {
      if (!box?.checked) return [];
      const rejected = diff ? diff.rejectedHunks() : [];
      if (file.hunks.length > 0 && rejected.length === file.hunks.length) return [];
      return [{ path: file.path, rejected_hunks: rejected }];
    });
    if (chosen.length === 0 && !preview.rewinds) {
      setMessage(error, 'Choose at least one file (and one of its changes) to undo.');
      return;
    }
    setMessage(error, null);
    card.setAttribute('aria-busy', 'true');
    for (const b of actions.querySelectorAll('button')) if (b instanceof HTMLButtonElement) b.disabled = true;
    try {
      const { result } = await ask({ type: 'apply_undo', preview_id: preview.preview_id, files: chosen }, 'undo_applied');
      showOutcome(card, title, result);
      if (result.rewound_text !== null && scope.kind === 'turn') await opts.rewound(scope.task_id, result.rewound_text);
    } catch (e) {
      card.removeAttribute('aria-busy');
      for (const b of actions.querySelectorAll('button')) if (b instanceof HTMLButtonElement) b.disabled = false;
      apply.disabled = nothing;
      setMessage(error, errorText(e));
    }
  });
}

/**
 * One file of the preview: what will happen to it, why when it is left alone, and its hunks.
 * @param {UndoFileView} file
 * @param {number} n
 */
function fileRow(file, n) {
  const action = ACTIONS[file.action] ?? { label: file.action, explain: '' };
  const applies = APPLIES.has(file.action);
  const el = h('li', { class: 'undo-file', 'data-path': file.path, 'data-action': file.action });
  /** @type {HTMLInputElement | null} */
  let box = null;
  /** @type {DiffHandle | null} */
  let diff = null;
  const head = h('div', { class: 'undo-file-head' });
  if (applies) {
    box = h('input', { type: 'checkbox', class: 'undo-file-accept', id: `undo-file-${seq}-${n}`, checked: true, 'aria-label': `Undo ${file.path}` });
    head.append(box);
  }
  head.append(pathLink(file.path, null, { className: 'approval-path' }), h('span', { class: 'tag undo-action', 'data-action': file.action, text: action.label }));
  el.append(head, h('p', { class: 'muted small', text: action.explain }));
  if (file.reason) el.append(h('p', { class: applies ? 'small undo-reason' : 'danger-box undo-reason', text: file.reason }));
  if (applies) {
    diff = renderDiff(file.hunks, { language: file.language, selectable: file.hunks.length > 1, selectLabel: 'Undo', label: `What undoing does to ${file.path}` });
    el.append(h('div', { class: 'diff-scroll' }, diff.el));
    const handle = diff;
    box?.addEventListener('change', () => {
      const on = box?.checked ?? false;
      handle.setSelectionDisabled(!on);
      el.classList.toggle('left-out', !on);
    });
  }
  return { el, box, diff };
}

/** @type {Record<string, string>} */
const OUTCOMES = { undone: 'Undone', skipped: 'Left alone', failed: 'Failed' };

/**
 * @param {HTMLElement} card
 * @param {HTMLElement} title
 * @param {UndoResult} result
 */
function showOutcome(card, title, result) {
  card.removeAttribute('aria-busy');
  const problems = result.files.filter((f) => f.outcome === 'failed').length;
  title.textContent = `${title.textContent} — ${problems ? `${problems} file${problems === 1 ? '' : 's'} failed` : 'done'}`;
  const list = h('ul', { class: 'undo-outcomes' }, ...result.files.map((f) => h('li', { class: 'undo-outcome', 'data-outcome': f.outcome, 'data-path': f.path },
    h('span', { class: 'tag', 'data-outcome': f.outcome, text: OUTCOMES[f.outcome] ?? f.outcome }), ' ',
    pathLink(f.path), f.reason ? h('span', { class: 'muted small', text: ` — ${f.reason}` }) : null)));
  const rewound = result.rewound_text !== null
    ? h('p', { class: 'undo-rewind', text: 'The conversation went back to before your message; its text is in the composer.' })
    : null;
  const none = result.files.length === 0 && result.rewound_text === null ? h('p', { class: 'muted', text: 'No file was changed.' }) : null;
  card.replaceChildren();
  append(card, [title, result.files.length ? list : null, rewound, none, h('div', { class: 'approval-actions' }, closeButton(card))]);
  const status = find(card, '.undo-outcomes', HTMLElement);
  status?.setAttribute('role', 'status');
  title.focus();
}
