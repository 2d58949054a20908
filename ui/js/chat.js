// The Chat view: which tasks are open and shown, the composer, and task events.

import { initSlash } from './slash.js';
import { initMentions } from './mentions.js';
import { attachedIds, clearAttached, initImages } from './images.js';
import { newTaskProfile, renderProfilePicker } from './profiles.js';
import { initModePicker, newTaskMode, renderModePicker, setModeTarget } from './modes.js';
import { ask, request } from './ipc.js';
import { byId, closest, errorText, setMessage } from './dom.js';
import { emit, listen, removeTask, store, taskEventMark, upsertTask, upsertTaskFromReply } from './store.js';
import { initTaskList, renderTabs, renderTaskList } from './tasks.js';
import { TaskPanel } from './panel.js';
import { pendingQuestions } from './transcript.js';
import { confirmAction } from './confirm.js';
import { forgetTask as forgetApprovals, pendingByTask } from './approvals.js';

/** @typedef {import('./protocol').Event} HostEvent */
/** @typedef {import('./protocol').TaskSummary} TaskSummary */
/** @typedef {Extract<HostEvent, { task_id: string }>} TaskEvent */

/** Events kept per task that has no loaded panel (a task just started, or running unseen). */
const BUFFER_CAP = 5000;
const DEFAULT_HINT = 'Enter to send · Shift+Enter for a new line · @ attaches a file, a folder or the changes · /compact condenses';
/** How many times the host sends a request again, smaller, after a context-length refusal. */
const CONTEXT_TRIES = 3;
/** Typed alone in the composer: condense the task's conversation instead of sending a message. */
const COMPACT = '/compact';

const state = {
  /** Open tabs, in tab order. @type {string[]} */
  open: [],
  /** The task the composer talks to; null for "new task". @type {string | null} */
  active: null,
  split: false,
  /** Left and right slots in split view. @type {[string | null, string | null]} */
  pair: [null, null],
  /** Most recently active first. @type {string[]} */
  recent: [],
};

/** @type {Map<string, TaskPanel>} */
const panels = new Map();
/** null marks a buffer that overflowed: the task must be fetched with open_task. @type {Map<string, TaskEvent[] | null>} */
const buffers = new Map();
/** Unsent text per task ('' for a new task), like drafts per channel. @type {Map<string, string>} */
const drafts = new Map();
let sending = false;
/** start_task requests in flight. */
let starting = 0;

export function initChat() {
  initTaskList({ open: (id) => { openTask(id); }, remove: deleteTask, close: closeTab });
  byId('new-task').addEventListener('click', newTask);
  byId('split-toggle').addEventListener('click', toggleSplit);

  const input = byId('composer-input', HTMLTextAreaElement);
  initSlash();
  initMentions();
  initImages();
  input.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Enter' || ev.isComposing || ev.shiftKey || ev.altKey) return;
    ev.preventDefault();
    send();
  });
  input.addEventListener('input', () => {
    setMessage(byId('composer-error'), null);
    autosize();
  });
  byId('composer-send').addEventListener('click', send);

  // In split view the panel the user works in becomes the one the composer talks to.
  byId('task-panels').addEventListener('pointerdown', (ev) => {
    const id = closest(ev.target, '.task-panel')?.dataset.taskId;
    if (id && id !== state.active) activate(id);
  });
  byId('task-panels').addEventListener('focusin', (ev) => {
    const id = closest(ev.target, '.task-panel')?.dataset.taskId;
    if (id && id !== state.active) activate(id);
  });

  // A subtask card or a breadcrumb opens the task it names.
  byId('task-panels').addEventListener('click', (ev) => {
    const id = closest(ev.target, '[data-open-subtask]')?.dataset.openSubtask;
    if (id) openTask(id);
  });

  initModePicker();
  // A new task's profile follows its mode where Settings name one for it.
  byId('mode-picker').addEventListener('change', () => renderProfilePicker());
  listen('modes', renderModePicker);
  listen('tasks', renderChrome);
  listen('settings', updateComposer);
  listen('approvals', renderChrome);
  listen('intents', () => {
    for (const p of panels.values()) p.refreshIntents();
    renderChrome();
  });
  setMessage(byId('composer-error'), null);
  renderChrome();
}

/** @param {TaskSummary[]} tasks */
export function setTasks(tasks) {
  store.tasks.clear();
  for (const t of tasks) store.tasks.set(t.id, t);
  emit('tasks');
}

export function newTask() {
  activate(null);
  byId('composer-input').focus();
}

/** @param {HostEvent} ev */
export function handleTaskEvent(ev) {
  switch (ev.type) {
    case 'task_updated': {
      const before = store.tasks.get(ev.task.id);
      upsertTask(ev.task);
      panels.get(ev.task.id)?.update(ev.task);
      // A subtask's tab shows its parent in the breadcrumb: kept current.
      for (const p of panels.values()) if (p.id !== ev.task.id && store.tasks.get(p.id)?.parent_id === ev.task.id) p.showCrumbs(/** @type {TaskSummary} */ (store.tasks.get(p.id)));
      followSubtask(before, ev.task);
      return;
    }
    case 'task_deleted':
      forget(ev.task_id);
      return;
    case 'question_asked':
      pendingQuestions.set(ev.call_id, { taskId: ev.task_id, callId: ev.call_id, question: ev.question, options: ev.options });
      break;
    case 'tool_call_finished':
      if (pendingQuestions.delete(ev.call.call_id)) {
        const panel = panels.get(ev.task_id);
        if (panel && !panel.loading) panel.transcript.questionClosed(ev.call.call_id);
      }
      break;
    default:
      break;
  }
  if (!('task_id' in ev)) return;
  const panel = panels.get(ev.task_id);
  if (panel && !panel.loading) apply(panel, ev);
  else keep(ev);
}

/**
 * The person watching a task follows its work: a subtask it starts opens in front, and when the
 * subtask ends the parent comes back to the front (its card there has the result).
 * @param {TaskSummary | undefined} before
 * @param {TaskSummary} task
 */
function followSubtask(before, task) {
  const parent = task.parent_id;
  if (!parent) return;
  if (!before && state.active === parent) {
    openTask(task.id);
    return;
  }
  const ended = ['completed', 'failed', 'cancelled'];
  if (before && !ended.includes(before.status) && ended.includes(task.status) && state.active === task.id && panels.has(parent)) activate(parent);
}

/**
 * Keeps an event for a transcript that is not drawn yet: a task being loaded, or (while a
 * start_task is in flight) a task that may be the one just started. Events of other tasks
 * not on a tab are dropped: opening them fetches their history.
 * @param {TaskEvent} ev
 */
function keep(ev) {
  if (!['message_added', 'message_delta', 'message_finished', 'tool_call_started', 'tool_call_output', 'tool_call_finished', 'question_asked', 'condensing', 'context_retry'].includes(ev.type)) return;
  const loading = panels.get(ev.task_id)?.loading === true;
  if (!loading && starting === 0) return;
  const buffer = buffers.has(ev.task_id) ? buffers.get(ev.task_id) : [];
  if (buffer === null || buffer === undefined) return;
  if (buffer.length >= BUFFER_CAP) {
    buffers.set(ev.task_id, null);
    return;
  }
  buffer.push(ev);
  buffers.set(ev.task_id, buffer);
}

/**
 * @param {TaskPanel} panel
 * @param {TaskEvent} ev
 */
function apply(panel, ev) {
  const t = panel.transcript;
  switch (ev.type) {
    case 'message_added': t.add(ev.message); break;
    case 'message_delta': t.delta(ev.message_id, ev.stable_safe_html, ev.safe_html, ev.reset); break;
    case 'message_finished': t.finish(ev.message_id, ev.safe_html, ev.complete); break;
    case 'tool_call_started':
    case 'tool_call_finished': t.tool(ev.call); break;
    case 'tool_call_output': t.output(ev.call_id, ev.chunk); break;
    case 'question_asked': t.question({ taskId: ev.task_id, callId: ev.call_id, question: ev.question, options: ev.options }); break;
    case 'condensing': t.condensing(ev.automatic); break;
    case 'context_retry': t.note(contextRetryText(ev)); break;
    // The host posts its own notice for a cut answer (with what it did about the cut call).
    case 'output_cut': break;
    default: break;
  }
}

/**
 * @param {Extract<HostEvent, { type: 'context_retry' }>} ev
 */
function contextRetryText(ev) {
  const limit = ev.limit_tokens === null ? '' : ` (limit ${ev.limit_tokens.toLocaleString()} tokens)`;
  return `The request did not fit the model's window${limit}; sending less (try ${ev.attempt} of ${CONTEXT_TRIES}).`;
}

/**
 * Opens a task in a tab (or shows its tab) and makes it the active one.
 * @param {string} id
 * @param {{ fresh?: boolean }} [options] fresh: just started here, every event is buffered
 */
export async function openTask(id, options = {}) {
  if (panels.has(id)) {
    activate(id);
    return;
  }
  const panel = new TaskPanel(id);
  panels.set(id, panel);
  byId('task-panels').append(panel.el);
  state.open.push(id);
  const buffered = buffers.get(id);
  if (options.fresh && buffered) {
    buffers.delete(id);
    for (const ev of buffered) apply(panel, ev);
    activate(id);
    return;
  }
  activate(id);
  await loadPanel(id, panel);
}

/**
 * Fills a panel with the task's conversation from the host; what arrives meanwhile is kept and
 * applied after.
 * @param {string} id
 * @param {TaskPanel} panel
 */
async function loadPanel(id, panel) {
  panel.loading = true;
  panel.transcript.showLoading('Loading the conversation…');
  buffers.set(id, []); // what arrives from now on; the detail covers the rest
  try {
    const mark = taskEventMark();
    const reply = await ask({ type: 'open_task', task_id: id }, 'task_detail');
    if (panels.get(id) !== panel) return; // closed meanwhile
    upsertTaskFromReply(reply.task, mark);
    const latest = store.tasks.get(id);
    if (latest) panel.update(latest);
    panel.transcript.load(reply.messages);
    panel.loading = false;
    for (const ev of buffers.get(id) ?? []) apply(panel, ev);
    buffers.delete(id);
  } catch (e) {
    panel.loading = false;
    buffers.delete(id);
    panel.transcript.showLoading(`Could not open this task. ${errorText(e)}`);
  }
}

/**
 * A turn was undone: the task's conversation went back to before one of the person's messages.
 * Shows the task as it is now and puts that message in the composer, to edit and send again.
 * @param {string} id
 * @param {string} text
 */
export async function rewound(id, text) {
  const panel = panels.get(id);
  if (panel) {
    activate(id);
    await loadPanel(id, panel);
  } else {
    await openTask(id);
  }
  if (state.active !== id) return;
  const input = byId('composer-input', HTMLTextAreaElement);
  input.value = text;
  setMessage(byId('composer-error'), null);
  autosize();
  input.focus();
}

/** @param {string | null} id */
function activate(id) {
  const input = byId('composer-input', HTMLTextAreaElement);
  if (id !== state.active) {
    drafts.set(state.active ?? '', input.value);
    state.active = id;
    input.value = drafts.get(id ?? '') ?? '';
    setMessage(byId('composer-error'), null);
    autosize();
  }
  if (id) {
    state.recent = [id, ...state.recent.filter((x) => x !== id)];
    if (state.split) placeInPair(id);
  }
  renderChrome();
}

/** @param {string} id */
function placeInPair(id) {
  const [left, right] = state.pair;
  if (left === id || right === id) return;
  if (left === null) state.pair = [id, right];
  else if (right === null) state.pair = [left, id];
  // Replace the side the user is not working in.
  else state.pair = left === state.recent[1] ? [left, id] : [id, right];
}

function toggleSplit() {
  state.split = !state.split;
  if (state.split) {
    const other = state.recent.find((x) => x !== state.active && state.open.includes(x)) ?? null;
    state.pair = [state.active, other];
  }
  renderChrome();
}

/** @param {string} id */
function closeTab(id) {
  const panel = panels.get(id);
  if (!panel) return;
  panel.el.remove();
  panels.delete(id);
  buffers.delete(id);
  state.open = state.open.filter((x) => x !== id);
  state.recent = state.recent.filter((x) => x !== id);
  state.pair = [state.pair[0] === id ? null : state.pair[0], state.pair[1] === id ? null : state.pair[1]];
  if (state.active === id) activate(state.recent.find((x) => state.open.includes(x)) ?? null);
  else renderChrome();
}

/** @param {string} id */
async function deleteTask(id) {
  const title = store.tasks.get(id)?.title ?? 'this task';
  const ok = await confirmAction({
    title: 'Delete this task?',
    message: `“${title}” and its conversation will be deleted. Files it changed stay as they are, and the trace ledger keeps its records.`,
    confirmLabel: 'Delete task',
  });
  if (!ok) return;
  const error = byId('task-list-error');
  setMessage(error, null);
  try {
    await request({ type: 'delete_task', task_id: id });
    forget(id);
  } catch (e) {
    setMessage(error, `Could not delete “${title}”: ${errorText(e)}`);
  }
}

/** @param {string} id */
function forget(id) {
  closeTab(id);
  buffers.delete(id);
  drafts.delete(id);
  for (const [callId, q] of pendingQuestions) if (q.taskId === id) pendingQuestions.delete(callId);
  forgetApprovals(id);
  removeTask(id);
}

function visibleIds() {
  if (state.active === null) return [];
  if (!state.split) return [state.active];
  return state.pair.filter(/** @returns {x is string} */ (x) => x !== null && panels.has(x));
}

function renderChrome() {
  const visible = visibleIds();
  const tabsState = { open: state.open, active: state.active, visible, pending: pendingByTask() };
  renderTaskList(tabsState);
  renderTabs(tabsState);

  for (const [id, panel] of panels) {
    const show = visible.includes(id);
    if (panel.el.hidden === show) {
      panel.el.hidden = !show;
      if (show) panel.transcript.shown();
    }
    panel.el.style.order = String(Math.max(0, state.pair.indexOf(id)));
    panel.el.classList.toggle('is-active', state.split && visible.length > 1 && id === state.active);
  }
  byId('task-empty').hidden = state.active !== null;
  byId('split-placeholder').hidden = !(state.split && visible.length === 1);
  byId('task-panels').dataset.split = String(state.split && visible.length > 0);
  const split = byId('split-toggle');
  split.setAttribute('aria-pressed', String(state.split));

  if (visible.join('\n') !== store.visibleTasks.join('\n')) {
    store.visibleTasks = visible;
    emit('visible');
  }
  updateComposer();
}

/** @param {TaskSummary | undefined} task */
function blockedReason(task) {
  if (sending) return 'Sending…';
  // A first message would only fail against a provider that was never set up.
  if (!task && store.settings?.needs_key) return 'Connect a model first (above): a server on this machine, or a provider with an API key.';
  if (!task) return null;
  if (task.status === 'running') return 'The agent is working on this task. You can write your next message; send it when the agent stops, or press Stop.';
  if (task.status === 'waiting_for_approval') return 'The agent is waiting for your decision in the Approvals panel.';
  if (task.status === 'waiting_for_answer') return 'The agent asked a question in the conversation; answer it there.';
  return null;
}

function updateComposer() {
  const task = state.active ? store.tasks.get(state.active) : undefined;
  setModeTarget(state.active);
  // A task keeps the profile it started on (its header says which); the picker is for new ones.
  byId('profile-picker').hidden = Boolean(task) || (store.settings?.profiles.length ?? 0) < 2;
  renderProfilePicker();
  byId('composer-target').textContent = task ? `To: ${task.title}` : 'Starts a new task';
  const why = blockedReason(task);
  const input = byId('composer-input');
  const button = byId('composer-send');
  // Still focusable and editable: only sending waits.
  for (const el of [input, button]) {
    if (why) el.setAttribute('aria-disabled', 'true');
    else el.removeAttribute('aria-disabled');
  }
  const hint = byId('composer-hint');
  hint.textContent = why ?? DEFAULT_HINT;
  hint.classList.toggle('why', why !== null);
  input.setAttribute('placeholder', task ? 'Reply to the agent…' : 'Describe a new task…');
}

async function send() {
  const input = byId('composer-input', HTMLTextAreaElement);
  const error = byId('composer-error');
  const text = input.value;
  const task = state.active ? store.tasks.get(state.active) : undefined;
  if (blockedReason(task) !== null) {
    // Say why once more, where the user looks.
    const hint = byId('composer-hint');
    hint.classList.remove('pulse');
    void hint.offsetWidth;
    hint.classList.add('pulse');
    return;
  }
  if (!text.trim()) {
    setMessage(error, 'Write a message first.');
    return;
  }
  setMessage(error, null);
  if (text.trim() === COMPACT) {
    await compact(task);
    return;
  }
  sending = true;
  updateComposer();
  try {
    const images = await attachedIds();
    if (task) {
      await request({ type: 'send_message', task_id: task.id, text, images });
      clearAttached();
      if (input.value === text) {
        input.value = '';
        input.dispatchEvent(new Event('input'));
      }
      drafts.delete(task.id);
    } else {
      starting += 1;
      /** @type {TaskSummary} */
      let task;
      // The task starts running at once: its events may come in before this reply.
      const mark = taskEventMark();
      try {
        task = (await ask({ type: 'start_task', text, mode: newTaskMode(), images, profile: newTaskProfile() }, 'task')).task;
        clearAttached();
      } finally {
        starting -= 1;
      }
      upsertTaskFromReply(task, mark);
      if (input.value === text) {
        input.value = '';
        input.dispatchEvent(new Event('input'));
      }
      drafts.delete('');
      sending = false;
      await openTask(task.id, { fresh: true });
      // Whatever else was kept while starting belongs to no tab.
      for (const id of [...buffers.keys()]) if (!panels.get(id)?.loading) buffers.delete(id);
    }
  } catch (e) {
    setMessage(error, errorText(e));
  } finally {
    sending = false;
    autosize();
    updateComposer();
  }
}

/**
 * `/compact`: condenses the active task's conversation (never sent to the model as a message).
 * @param {TaskSummary | undefined} task
 */
async function compact(task) {
  const input = byId('composer-input', HTMLTextAreaElement);
  const error = byId('composer-error');
  if (!task) {
    setMessage(error, 'There is no conversation to condense yet: /compact works in an open task.');
    return;
  }
  const text = input.value;
  sending = true;
  updateComposer();
  try {
    await request({ type: 'condense_task', task_id: task.id });
    if (input.value === text) {
        input.value = '';
        input.dispatchEvent(new Event('input'));
      }
    drafts.delete(task.id);
  } catch (e) {
    setMessage(error, errorText(e));
  } finally {
    sending = false;
    autosize();
    updateComposer();
  }
}

/** Grows the composer with its text, up to a limit (then it scrolls). */
function autosize() {
  const input = byId('composer-input', HTMLTextAreaElement);
  input.style.height = 'auto';
  input.style.height = `${Math.min(input.scrollHeight + 2, 240)}px`;
}
