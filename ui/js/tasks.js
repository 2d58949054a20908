// The task list in the sidebar and the tab strip above the panels.

import { byId, closest, h, timeEl } from './dom.js';
import { intentById, statusLabel, store } from './store.js';
import { exportButton, exportTask, initHistory } from './history.js';

/** @typedef {import('./protocol').TaskSummary} TaskSummary */

/**
 * @typedef {object} TaskCallbacks
 * @property {(id: string) => void} open      open (or show) a task in a tab
 * @property {(id: string) => void} remove    delete a task (after confirmation)
 * @property {(id: string) => void} close     close a tab (the task goes on)
 */

/**
 * @typedef {object} TabsState
 * @property {string[]} open
 * @property {string | null} active
 * @property {string[]} visible
 * @property {Map<string, number>} pending  approvals waiting, by task
 */

/** @type {Map<string, HTMLLIElement>} */
const items = new Map();
/** Stable DOM ids per task (task ids are opaque strings). @type {Map<string, number>} */
const domIds = new Map();
let nextDomId = 0;

/** @param {string} taskId */
export function domId(taskId) {
  let n = domIds.get(taskId);
  if (n === undefined) domIds.set(taskId, (n = ++nextDomId));
  return n;
}

/** @param {TaskCallbacks} cb */
export function initTaskList(cb) {
  const list = byId('task-list');
  list.addEventListener('click', (ev) => {
    const del = closest(ev.target, '[data-action="delete-task"]');
    const item = closest(ev.target, '.task-item');
    const id = item?.dataset.taskId;
    if (!id) return;
    if (del) cb.remove(id);
    else if (closest(ev.target, '[data-action="export-task"]')) exportTask(id);
    else cb.open(id);
  });
  initHistory(cb.open);

  const tabs = byId('task-tabs');
  tabs.addEventListener('click', (ev) => {
    const close = closest(ev.target, '[data-action="close-tab"]');
    const tab = closest(ev.target, '[data-task-id]');
    const id = tab?.dataset.taskId;
    if (!id) return;
    if (close) cb.close(id);
    else cb.open(id);
  });
  // Arrow keys move between tabs (one tab stop for the strip), Delete closes.
  tabs.addEventListener('keydown', (ev) => {
    const tab = closest(ev.target, '.task-tab');
    if (!tab) return;
    const all = [...tabs.querySelectorAll('.task-tab')].filter((t) => t instanceof HTMLElement);
    const i = all.indexOf(tab);
    let next = -1;
    if (ev.key === 'ArrowRight') next = (i + 1) % all.length;
    else if (ev.key === 'ArrowLeft') next = (i - 1 + all.length) % all.length;
    else if (ev.key === 'Home') next = 0;
    else if (ev.key === 'End') next = all.length - 1;
    else if (ev.key === 'Delete' && tab.dataset.taskId) {
      ev.preventDefault();
      const neighbour = all[i + 1] ?? all[i - 1];
      cb.close(tab.dataset.taskId);
      if (neighbour instanceof HTMLElement) neighbour.focus();
      return;
    }
    if (next < 0) return;
    ev.preventDefault();
    const target = all[next];
    if (target instanceof HTMLElement && target.dataset.taskId) {
      cb.open(target.dataset.taskId);
      target.focus();
    }
  });
}

/**
 * The sidebar: newest first by creation, so items never move while the user aims at them.
 * Items are kept and updated in place, so focus and hover survive updates.
 * @param {TabsState} state
 */
export function renderTaskList(state) {
  const list = byId('task-list');
  const tasks = nested([...store.tasks.values()]);
  for (const [id, li] of items) {
    if (!store.tasks.has(id)) {
      li.remove();
      items.delete(id);
    }
  }
  /** @type {Element | null} */
  let prev = null;
  for (const task of tasks) {
    let li = items.get(task.id);
    if (!li) {
      li = h('li', { class: 'task-item', 'data-task-id': task.id });
      items.set(task.id, li);
    }
    fillItem(li, task, state);
    const depth = String(depthOf(task));
    if (li.dataset.depth !== depth) li.dataset.depth = depth;
    /** @type {Element | null} */
    const expected = prev ? prev.nextElementSibling : list.firstElementChild;
    if (expected !== li) list.insertBefore(li, expected);
    prev = li;
  }
  byId('task-list-empty').hidden = tasks.length > 0;
}

/**
 * The tasks in the order of the list: the ones the person started newest first, each followed
 * by its subtasks in the order they were started (and theirs under them).
 * @param {TaskSummary[]} all
 * @returns {TaskSummary[]}
 */
function nested(all) {
  const newestFirst = (/** @type {TaskSummary} */ a, /** @type {TaskSummary} */ b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0);
  /** @type {Map<string, TaskSummary[]>} */
  const children = new Map();
  const roots = [];
  for (const t of all) {
    if (t.parent_id && store.tasks.has(t.parent_id)) {
      const list = children.get(t.parent_id) ?? [];
      list.push(t);
      children.set(t.parent_id, list);
    } else roots.push(t);
  }
  /** @type {TaskSummary[]} */
  const out = [];
  /** @param {TaskSummary} t */
  const visit = (t) => {
    out.push(t);
    for (const c of (children.get(t.id) ?? []).sort(newestFirst).reverse()) visit(c);
  };
  for (const r of roots.sort(newestFirst)) visit(r);
  return out;
}

/** How many tasks stand above `task` in the list. @param {TaskSummary} task */
function depthOf(task) {
  let depth = 0;
  for (let id = task.parent_id; id && store.tasks.has(id) && depth < 8; id = store.tasks.get(id)?.parent_id ?? null) depth += 1;
  return depth;
}

/**
 * @param {HTMLLIElement} li
 * @param {TaskSummary} task
 * @param {TabsState} state
 */
function fillItem(li, task, state) {
  const intent = task.intent_id ? intentById(task.intent_id) : undefined;
  const pending = state.pending.get(task.id) ?? 0;
  const key = JSON.stringify([task.title, task.status, task.intent_id, intent?.name, task.updated_at, pending, state.active === task.id, state.open.includes(task.id)]);
  if (li.dataset.key === key) return;
  li.dataset.key = key;
  li.dataset.status = task.status;
  li.classList.toggle('is-open', state.open.includes(task.id));
  if (state.active === task.id) li.setAttribute('aria-current', 'true');
  else li.removeAttribute('aria-current');

  const hadFocus = li.contains(document.activeElement);
  const focusedDelete = hadFocus && closest(document.activeElement, '[data-action="delete-task"]') !== null;
  const focusedExport = hadFocus && closest(document.activeElement, '[data-action="export-task"]') !== null;
  const open = h('button', { type: 'button', class: 'task-open', title: task.title },
    h('span', { class: 'task-item-top' },
      task.parent_id ? h('span', { class: 'subtask-mark', title: 'A subtask of the task above', text: '↳' }) : null,
      h('span', { class: 'task-item-title', text: task.title || 'Untitled task' }),
      pending > 0 ? h('span', { class: 'tab-badge', 'aria-label': `${pending} waiting for approval`, text: String(pending) }) : null,
      timeEl(task.updated_at)),
    h('span', { class: 'task-item-meta' },
      h('span', { class: 'status-dot', 'data-status': task.status, 'aria-hidden': 'true' }),
      h('span', { class: 'task-item-status', text: statusLabel(task.status) }),
      h('span', { class: 'intent-badge', 'data-none': task.intent_id ? null : 'true', title: intent?.name ?? '', text: task.intent_id ?? 'no intent' })));
  const del = h('button', {
    type: 'button',
    class: 'task-delete icon-button',
    'data-action': 'delete-task',
    'aria-label': `Delete task “${task.title}”`,
    title: 'Delete task',
    text: '✕',
  });
  const exp = exportButton(task.title);
  li.replaceChildren(open, exp, del);
  if (hadFocus) (focusedDelete ? del : focusedExport ? exp : open).focus({ preventScroll: true });
}

/**
 * The tab strip: one tab per open task, a single tab stop (roving tabindex).
 * @param {TabsState} state
 */
export function renderTabs(state) {
  const strip = byId('task-tabs');
  const focusedId = closest(document.activeElement, '.task-tab')?.dataset.taskId ?? null;
  const frag = document.createDocumentFragment();
  for (const id of state.open) {
    const task = store.tasks.get(id);
    const title = task?.title || 'Task';
    const pending = state.pending.get(id) ?? 0;
    const n = domId(id);
    const selected = state.active === id;
    const tab = h('button', {
      type: 'button',
      role: 'tab',
      class: 'task-tab',
      id: `tab-${n}`,
      'data-task-id': id,
      'aria-selected': String(selected),
      'aria-controls': `panel-${n}`,
      tabindex: selected || (state.active === null && id === state.open[0]) ? '0' : '-1',
      title,
      'aria-keyshortcuts': 'Delete',
      'aria-description': 'Delete closes the tab',
    },
    h('span', { class: 'status-dot', 'data-status': task?.status ?? 'idle', 'aria-hidden': 'true' }),
    h('span', { class: 'tab-title', text: title }),
    pending > 0 ? h('span', { class: 'tab-badge', text: String(pending) }) : null,
    pending > 0 ? h('span', { class: 'visually-hidden', text: `, ${pending} waiting for approval` }) : null,
    // Part of the tab (a tab list holds only tabs); Delete does the same from the keyboard.
    h('span', { class: 'tab-close', 'data-action': 'close-tab', 'aria-hidden': 'true', title: 'Close tab (the task keeps its history)', text: '×' }));
    if (state.visible.includes(id)) tab.dataset.visible = 'true';
    frag.append(tab);
  }
  strip.replaceChildren(frag);
  strip.hidden = state.open.length === 0;
  if (focusedId) {
    const again = strip.querySelector(`.task-tab[id="tab-${domId(focusedId)}"]`);
    if (again instanceof HTMLElement) again.focus({ preventScroll: true });
  }
}
