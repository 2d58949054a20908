// The Approvals panel: what the agent waits for, for the task(s) on screen, oldest first.
// It never takes focus by itself; new requests are announced and counted instead.

import { request } from './ipc.js';
import { byId, closest, errorText, find, h, setMessage } from './dom.js';
import { emit, intentById, listen, store } from './store.js';
import { firstChangedLine, renderDiff } from './diffview.js';
import { pathLink } from './editor.js';
import { describeMcpCall, mcpCallBody } from './mcp.js';
import { commandBody, newIntentBody, scopeBody } from './approvalcards.js';

/** @typedef {import('./protocol').ApprovalRequest} ApprovalRequest */
/** @typedef {import('./protocol').ApprovalDecision} ApprovalDecision */
/** @typedef {import('./protocol').IntentView} IntentView */
/** @typedef {import('./diffview.js').DiffHandle} DiffHandle */

/**
 * @typedef {object} Entry
 * @property {string} taskId
 * @property {ApprovalRequest} request
 * @property {HTMLElement} el
 * @property {DiffHandle | null} diff
 * @property {HTMLTextAreaElement | null} edited
 * @property {HTMLTextAreaElement} reason
 * @property {boolean} busy
 * @property {(() => ApprovalDecision | string) | null} approve  how a card other than a write approves
 */

/** Pending approvals by id; Map order is arrival order. @type {Map<string, Entry>} */
const entries = new Map();
let seq = 0;
/** @type {(taskId: string) => void} */
let openTask = () => {};

/** @type {Partial<Record<import('./protocol').ApprovalDetail['kind'], (d: any) => string>>} */
const TITLES = {
  command: () => 'Run a command',
  scope_expansion: (d) => `Widen the scope of ${d.intent_id}`,
  new_intent: (d) => `Create intent ${d.intent.id}`,
  mcp_call: () => 'Call an MCP tool',
  tool_call: () => 'Your hook asks about a call',
  user_hooks: () => 'Run your hooks?',
};

/** @type {Record<string, string>} */
const MUTATION_HELP = {
  AST_REFACTOR: 'Same code structure: formatting, comments or names only',
  INTENT_EVOLUTION: 'Changes what the code does',
};

/** @param {{ openTask: (taskId: string) => void }} options */
export function initApprovals(options) {
  openTask = options.openTask;
  listen('visible', render);
  listen('tasks', render);

  const wide = byId('approval-wide');
  wide.addEventListener('click', () => {
    const on = wide.getAttribute('aria-pressed') !== 'true';
    wide.setAttribute('aria-pressed', String(on));
    wide.textContent = on ? 'Narrower' : 'Wider';
    byId('view-chat').classList.toggle('approvals-wide', on);
  });

  byId('approval-elsewhere').addEventListener('click', (ev) => {
    const id = closest(ev.target, '[data-open-task]')?.dataset.openTask;
    if (id) openTask(id);
  });

  // Alt+A / Alt+R act on the first approval shown. `code` keeps it working on layouts where
  // Alt+letter types a character.
  document.addEventListener('keydown', (ev) => {
    if (!ev.altKey || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
    if (ev.code !== 'KeyA' && ev.code !== 'KeyR') return;
    if (byId('view-chat').hidden) return;
    const first = shownEntries()[0];
    if (!first || first.busy) return;
    ev.preventDefault();
    if (ev.code === 'KeyA') approve(first);
    else decide(first, { decision: 'reject', reason: first.reason.value.trim() });
  });

  document.addEventListener('mandate:review', (ev) => {
    const callId = ev instanceof CustomEvent ? String(ev.detail) : '';
    const entry = [...entries.values()].find((e) => e.request.call_id === callId);
    // The user asked for it, so moving focus here is expected.
    if (entry?.el.isConnected) find(entry.el, '[data-action="approve"]', HTMLElement)?.focus();
  });
}

/**
 * @param {string} taskId
 * @param {ApprovalRequest} req
 */
export function onApprovalRequested(taskId, req) {
  if (entries.has(req.approval_id)) return;
  const entry = buildEntry(taskId, req);
  entries.set(req.approval_id, entry);
  emit('approvals');
  render();
  const visible = store.visibleTasks.includes(taskId);
  const what = describe(req);
  const where = visible ? '' : ` in task “${store.tasks.get(taskId)?.title ?? ''}”`;
  announce(`Approval needed${where}: ${what}.${visible ? ' Alt+A approves, Alt+R rejects the first one.' : ''}`);
}

/** @param {string} approvalId */
export function onApprovalResolved(approvalId) {
  removeEntry(approvalId);
}

/** @param {string} taskId */
export function forgetTask(taskId) {
  for (const [id, e] of entries) if (e.taskId === taskId) removeEntry(id);
}

/** Approvals waiting, per task. */
export function pendingByTask() {
  /** @type {Map<string, number>} */
  const counts = new Map();
  for (const e of entries.values()) counts.set(e.taskId, (counts.get(e.taskId) ?? 0) + 1);
  return counts;
}

function shownEntries() {
  return [...entries.values()].filter((e) => store.visibleTasks.includes(e.taskId));
}

/** @param {string} text */
function announce(text) {
  const region = byId('approval-announcer');
  // Clearing first makes a repeated sentence be read again.
  region.textContent = '';
  setTimeout(() => { region.textContent = text; }, 50);
}

/** @param {ApprovalRequest} req */
function describe(req) {
  const d = req.detail;
  if (d.kind === 'write') return `${d.new_file ? 'create' : 'change'} ${d.path}`;
  if (d.kind === 'command') return `run ${d.destructive ? 'destructive ' : ''}command ${d.command}`;
  if (d.kind === 'mcp_call') return describeMcpCall(d);
  if (d.kind === 'tool_call') return `${d.tool} ${d.target}`;
  if (d.kind === 'user_hooks') return 'run your hooks';
  if (d.kind === 'scope_expansion') return `widen the scope of ${d.intent_id}`;
  if (d.kind === 'new_intent') return `create intent ${d.intent.id}`;
  return 'keep going';
}

/** @param {string} approvalId */
function removeEntry(approvalId) {
  const entry = entries.get(approvalId);
  if (!entry) return;
  const hadFocus = entry.el.contains(document.activeElement);
  const shown = shownEntries();
  const next = shown[shown.indexOf(entry) + 1] ?? shown[shown.indexOf(entry) - 1];
  entries.delete(approvalId);
  entry.el.remove();
  emit('approvals');
  render();
  // Focus was in the card the user just decided: keep them in the panel, never elsewhere.
  if (hadFocus) {
    const target = next?.el.isConnected ? find(next.el, '[data-action="approve"]', HTMLElement) : null;
    (target ?? byId('approval-heading')).focus();
  }
}

function render() {
  const list = byId('approval-list');
  const shown = shownEntries();
  for (const child of [...list.children]) {
    if (!shown.some((e) => e.el === child)) child.remove();
  }
  /** @type {Element | null} */
  let prev = null;
  shown.forEach((entry, i) => {
    /** @type {Element | null} */
    const expected = prev ? prev.nextElementSibling : list.firstElementChild;
    if (expected !== entry.el) list.insertBefore(entry.el, expected);
    prev = entry.el;
    setShortcutHints(entry, i === 0);
    const title = store.tasks.get(entry.taskId)?.title ?? '';
    const taskLine = find(entry.el, '.approval-task', HTMLElement);
    if (taskLine) {
      taskLine.textContent = `Task: ${title}`;
      taskLine.hidden = store.visibleTasks.length < 2;
    }
  });

  const count = byId('approval-count');
  count.textContent = String(shown.length);
  count.hidden = shown.length === 0;
  byId('approval-empty').hidden = shown.length > 0;

  const elsewhere = byId('approval-elsewhere');
  const others = [...pendingByTask()].filter(([id]) => !store.visibleTasks.includes(id));
  elsewhere.replaceChildren();
  if (others.length) {
    elsewhere.append(h('span', { text: 'Also waiting in other tasks: ' }));
    for (const [id, n] of others) {
      elsewhere.append(h('button', { type: 'button', class: 'link-button', 'data-open-task': id, text: `${store.tasks.get(id)?.title ?? 'a task'} (${n})` }), ' ');
    }
  }
  elsewhere.hidden = others.length === 0;

  const badge = byId('nav-approval-badge');
  badge.textContent = String(entries.size);
  badge.hidden = entries.size === 0;
  badge.setAttribute('aria-label', `${entries.size} waiting for approval`);
}

/**
 * Only the first card carries the shortcuts, so the hints never lie.
 * @param {Entry} entry
 * @param {boolean} first
 */
function setShortcutHints(entry, first) {
  for (const [action, keys] of [['approve', 'Alt+A'], ['reject', 'Alt+R']]) {
    const button = find(entry.el, `[data-action="${action}"]`, HTMLElement);
    if (!button) continue;
    if (first) button.setAttribute('aria-keyshortcuts', keys);
    else button.removeAttribute('aria-keyshortcuts');
    const kbd = find(button, 'kbd', HTMLElement);
    if (kbd) kbd.hidden = !first;
  }
}

/**
 * @param {string} taskId
 * @param {ApprovalRequest} req
 * @returns {Entry}
 */
function buildEntry(taskId, req) {
  const d = req.detail;
  const n = ++seq;
  const title = d.kind === 'write'
    ? h('h3', { class: 'approval-title', id: `approval-title-${n}` }, h('span', { text: d.new_file ? 'Create ' : 'Change ' }),
      // A file that does not exist yet has nothing to open.
      d.new_file ? h('code', { class: 'approval-path', text: d.path }) : pathLink(d.path, firstChangedLine(d.hunks), { className: 'approval-path' }))
    : h('h3', { class: 'approval-title', id: `approval-title-${n}`, text: TITLES[d.kind]?.(d) ?? 'Keep going?' });
  const el = h('article', {
    class: 'approval',
    'data-approval-id': req.approval_id,
    'data-kind': d.kind,
    'data-task-id': taskId,
    'aria-labelledby': `approval-title-${n}`,
  }, title, h('p', { class: 'approval-task muted small', hidden: true }));
  // A "keep going?" request carries no intent; the task's own one is what is at stake.
  const taskIntent = intentById(store.tasks.get(taskId)?.intent_id ?? null) ?? null;
  // The hooks card is about the workspace, and a proposed intent stands on its own; every other
  // card says which intent it acts under.
  if (d.kind !== 'user_hooks' && (d.kind !== 'new_intent' || req.intent)) el.append(intentBlock(req.intent ?? (d.kind === 'continue' ? taskIntent : null)));
  if (req.hook_reasons.length) {
    el.append(h('div', { class: 'hook-reasons' },
      h('p', { class: 'small', text: 'Your hooks ask for your decision:' }),
      h('ul', { class: 'reasons' }, ...req.hook_reasons.map((r) => h('li', { text: r })))));
  }

  const reason = h('textarea', { name: 'reject-reason', rows: '2', id: `reject-reason-${n}`, placeholder: 'Optional: tell the agent why' });
  /** @type {Entry} */
  const entry = { taskId, request: req, el, diff: null, edited: null, reason, busy: false, approve: null };

  if (d.kind === 'write') writeBody(entry, d);
  else if (d.kind === 'command') entry.approve = commandBody(el, d, n);
  else if (d.kind === 'scope_expansion') entry.approve = scopeBody(el, d, n, req.intent?.id ?? null);
  else if (d.kind === 'new_intent') entry.approve = newIntentBody(el, d, n);
  else if (d.kind === 'mcp_call') mcpCallBody(el, d);
  else if (d.kind === 'tool_call') toolCallBody(el, d);
  else if (d.kind === 'user_hooks') userHooksBody(el, d);
  else el.append(h('p', { class: 'approval-reason', text: d.reason }));

  const approveLabel = d.kind === 'continue' ? 'Continue' : d.kind === 'user_hooks' ? 'Run them' : 'Approve';
  const rejectLabel = d.kind === 'continue' ? 'Stop' : d.kind === 'user_hooks' ? 'Don’t run them' : 'Reject';
  el.append(
    // Declining hooks tells the agent nothing: no reason to write.
    h('div', { class: 'field reject-field', hidden: d.kind === 'user_hooks' },
      h('label', { for: `reject-reason-${n}`, text: d.kind === 'continue' ? 'Reason if you stop (optional)' : 'Reason if you reject (optional, sent to the agent)' }),
      reason),
    h('div', { class: 'approval-actions' },
      h('button', { type: 'button', class: 'primary', 'data-action': 'approve' }, approveLabel, h('kbd', { text: 'Alt+A' })),
      h('button', { type: 'button', class: 'danger', 'data-action': 'reject' }, rejectLabel, h('kbd', { text: 'Alt+R' })),
      d.kind === 'command' ? h('button', {
        type: 'button',
        'data-action': 'always-allow',
        class: 'quiet',
        text: 'Always allow this exact command in this task',
      }) : null),
    h('p', { class: 'inline-error approval-error', role: 'alert' }));

  el.addEventListener('click', (ev) => {
    const action = closest(ev.target, '[data-action]')?.dataset.action;
    if (!action || entry.busy) return;
    if (action === 'approve') approve(entry);
    else if (action === 'reject') decide(entry, { decision: 'reject', reason: reason.value.trim() });
    else if (action === 'always-allow') decide(entry, { decision: 'always_allow' });
  });
  // Ctrl+Enter inside the reason rejects: the user is writing a reason, so rejecting is meant.
  reason.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey) && !entry.busy) {
      ev.preventDefault();
      decide(entry, { decision: 'reject', reason: reason.value.trim() });
    }
  });
  return entry;
}

/** @param {IntentView | null} intent */
function intentBlock(intent) {
  if (!intent) {
    return h('div', { class: 'approval-intent', 'data-none': 'true' }, h('span', { text: 'No intent selected for this task' }));
  }
  return h('div', { class: 'approval-intent' },
    h('div', null, h('span', { class: 'intent-id', text: intent.id }), h('span', { text: ` · ${intent.name}` })),
    h('div', { class: 'scope' },
      h('span', { class: 'muted', text: 'Owned scope: ' }),
      intent.owned_scope.length
        ? h('span', null, ...intent.owned_scope.flatMap((g, i) => [i ? ', ' : '', h('code', { text: g })]))
        : h('span', { class: 'muted', text: 'none' })));
}

/**
 * @param {Entry} entry
 * @param {Extract<import('./protocol').ApprovalDetail, { kind: 'write' }>} d
 */
function writeBody(entry, d) {
  const el = entry.el;
  const tags = h('p', { class: 'tags' },
    d.new_file ? h('span', { class: 'tag tag-new', text: 'new file' }) : null,
    d.mutation_class ? h('span', { class: 'tag', title: MUTATION_HELP[d.mutation_class] ?? '', text: d.mutation_class }) : null,
    d.mutation_class && MUTATION_HELP[d.mutation_class] ? h('span', { class: 'muted small', text: MUTATION_HELP[d.mutation_class] }) : null);
  const diff = renderDiff(d.hunks, { language: d.language, selectable: true, label: `Changes to ${d.path}` });
  entry.diff = diff;
  const modeButton = h('button', { type: 'button', class: 'quiet', 'data-action': 'toggle-diff-mode', 'aria-pressed': 'false', text: 'Side by side' });
  const editButton = h('button', { type: 'button', class: 'quiet', 'data-action': 'edit', 'aria-expanded': 'false', text: 'Edit before approving' });
  const editedId = `edited-${seq}`;
  const edited = h('textarea', { name: 'edited-content', id: editedId, rows: '12', spellcheck: 'false', class: 'code-input' });
  edited.value = d.new_text;
  entry.edited = edited;
  const editNote = h('p', { class: 'edit-note', hidden: true, text: 'You changed the text: approving writes exactly this text, and the change checkboxes above are ignored.' });
  const editArea = h('div', { class: 'edit-area field', hidden: true },
    h('label', { for: editedId, text: 'Text to write' }), edited, editNote);

  const hunkCount = d.hunks.length;
  el.append(tags,
    h('div', { class: 'diff-toolbar' },
      h('span', { class: 'muted small', text: hunkCount === 1 ? '1 change — uncheck to leave it out' : `${hunkCount} changes — uncheck any to leave it out` }),
      h('span', { class: 'spacer' }), modeButton, editButton),
    h('div', { class: 'diff-scroll' }, diff.el),
    editArea);

  modeButton.addEventListener('click', () => {
    const split = diff.mode() === 'unified';
    diff.setMode(split ? 'split' : 'unified');
    modeButton.setAttribute('aria-pressed', String(split));
  });
  editButton.addEventListener('click', () => {
    editArea.hidden = !editArea.hidden;
    editButton.setAttribute('aria-expanded', String(!editArea.hidden));
  });
  const onEdit = () => {
    const changed = edited.value !== d.new_text;
    editNote.hidden = !changed;
    diff.setSelectionDisabled(changed);
  };
  edited.addEventListener('input', onEdit);
  edited.addEventListener('change', onEdit);
}

/**
 * @param {HTMLElement} el
 * @param {Extract<import('./protocol').ApprovalDetail, { kind: 'tool_call' }>} d
 */
function toolCallBody(el, d) {
  el.append(
    h('p', { class: 'small' }, h('span', { class: 'muted', text: 'Tool ' }), h('code', { text: d.tool }),
      d.target ? h('span', { class: 'muted', text: ' on ' }) : null, d.target ? h('code', { text: d.target }) : null),
    h('pre', { class: 'command', tabindex: '0', 'aria-label': 'Arguments' }, h('code', { text: d.arguments })));
}

/**
 * The person's hooks, new or changed: what each runs, on what, from which file.
 * @param {HTMLElement} el
 * @param {Extract<import('./protocol').ApprovalDetail, { kind: 'user_hooks' }>} d
 */
function userHooksBody(el, d) {
  el.append(h('p', { class: 'small', text: 'These hooks are new or changed since you last confirmed them. They run confined (nothing in the workspace is writable to them) on every matching event, and can refuse what the agent does. Until you confirm them, they do not run and the tools they check are refused.' }));
  el.append(h('ul', { class: 'user-hooks' }, ...d.hooks.map((hook) => h('li', { class: 'user-hook' },
    h('div', { class: 'tags' },
      h('span', { class: 'tag', text: hook.event }),
      hook.matcher !== '*' ? h('code', { text: hook.matcher }) : h('span', { class: 'muted small', text: 'every tool' }),
      h('span', { class: 'small', text: hook.name }),
      hook.advisory ? h('span', { class: 'tag', title: 'Its failures are reported, never a refusal', text: 'advisory' }) : null,
      hook.network ? h('span', { class: 'tag tag-danger', title: 'It may reach the network', text: 'network' }) : null),
    h('pre', { class: 'command' }, h('code', { text: hook.command })),
    h('p', { class: 'muted small', text: `From ${hook.source} · at most ${hook.timeout_seconds} s` })))));
  if (d.scripts.length) {
    el.append(h('p', { class: 'small user-hook-code' }, h('span', { text: 'With the code they run, which no intent may change: ' }),
      ...d.scripts.flatMap((p, i) => [i ? ', ' : '', pathLink(p)])));
  }
  if (d.ignored.length) {
    el.append(h('p', { class: 'muted small', text: `Not run by Mandate: ${d.ignored.join('; ')}.` }));
  }
}

/**
 * @param {Entry} entry
 * @returns {ApprovalDecision | string}
 */
function approveDecision(entry) {
  const d = entry.request.detail;
  if (entry.approve) return entry.approve();
  if (d.kind !== 'write' || !entry.diff) return { decision: 'approve', rejected_hunks: [], edited_content: null };
  const edited = entry.edited && entry.edited.value !== d.new_text ? entry.edited.value : null;
  return { decision: 'approve', rejected_hunks: edited === null ? entry.diff.rejectedHunks() : [], edited_content: edited };
}

/**
 * Approves as the card reads now; a card that cannot be approved as it is says why.
 * @param {Entry} entry
 */
function approve(entry) {
  const decision = approveDecision(entry);
  if (typeof decision === 'string') {
    const error = find(entry.el, '.approval-error', HTMLElement);
    if (error) setMessage(error, decision);
    return;
  }
  decide(entry, decision);
}

/**
 * @param {Entry} entry
 * @param {ApprovalDecision} decision
 */
async function decide(entry, decision) {
  const error = find(entry.el, '.approval-error', HTMLElement);
  if (error) setMessage(error, null);
  entry.busy = true;
  entry.el.setAttribute('aria-busy', 'true');
  const buttons = [...entry.el.querySelectorAll('.approval-actions button')].filter((b) => b instanceof HTMLButtonElement);
  for (const b of buttons) b.disabled = true;
  try {
    await request({ type: 'decide_approval', task_id: entry.taskId, approval_id: entry.request.approval_id, decision });
    removeEntry(entry.request.approval_id);
  } catch (e) {
    entry.busy = false;
    entry.el.removeAttribute('aria-busy');
    for (const b of buttons) b.disabled = false;
    if (error) setMessage(error, errorText(e));
  }
}
