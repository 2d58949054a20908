// Shared state of the window: what the host told us last, and who wants to know when it changes.

/** @typedef {import('./protocol').TaskSummary} TaskSummary */
/** @typedef {import('./protocol').TaskStatus} TaskStatus */
/** @typedef {import('./protocol').IntentsView} IntentsView */
/** @typedef {import('./protocol').IntentView} IntentView */
/** @typedef {import('./protocol').SettingsView} SettingsView */
/** @typedef {'tasks' | 'intents' | 'settings' | 'visible' | 'approvals' | 'modes'} Topic */

export const store = {
  workspace: '',
  version: '',
  /** @type {SettingsView | null} */
  settings: null,
  /** @type {Map<string, TaskSummary>} */
  tasks: new Map(),
  /** @type {IntentsView} */
  intents: { path: '', exists: false, intents: [], error: null },
  /** Task ids whose panels are on screen (one, or two in split view). @type {string[]} */
  visibleTasks: [],
  /** The workspace's modes, as the host read them last. @type {import('./protocol').ModeInfo[]} */
  modes: [],
  /** Mode files or entries that could not be read. @type {string[]} */
  modeProblems: [],
};

/** @type {Map<Topic, Set<() => void>>} */
const listeners = new Map();
/** @type {Set<Topic>} */
const queued = new Set();

/**
 * @param {Topic} topic
 * @param {() => void} fn
 */
export function listen(topic, fn) {
  let set = listeners.get(topic);
  if (!set) listeners.set(topic, (set = new Set()));
  set.add(fn);
}

/**
 * Tells listeners, once per task of the event loop however many changes came in (a burst of
 * events must not redraw a list a hundred times).
 * @param {Topic} topic
 */
export function emit(topic) {
  if (queued.has(topic)) return;
  queued.add(topic);
  queueMicrotask(() => {
    queued.delete(topic);
    for (const fn of listeners.get(topic) ?? []) fn();
  });
}

/**
 * Task summaries reach the window two ways: events, which the host sends in order on one channel,
 * and replies, which travel apart from them and can arrive before or after events sent later.
 * Events are the truth; a reply's summary is kept only if no event about that task came in
 * since its request was sent (such an event is as new as the reply or newer).
 */
let taskEvents = 0;
/** The count of task events when the last one about each task arrived. @type {Map<string, number>} */
const lastTaskEvent = new Map();

/** A mark to take before sending a request whose reply carries a task summary. */
export function taskEventMark() {
  return taskEvents;
}

/**
 * A summary from an event.
 * @param {TaskSummary} task
 */
export function upsertTask(task) {
  lastTaskEvent.set(task.id, ++taskEvents);
  store.tasks.set(task.id, task);
  emit('tasks');
}

/**
 * A summary from the reply to a request sent at `mark` (see taskEventMark).
 * @param {TaskSummary} task
 * @param {number} mark
 */
export function upsertTaskFromReply(task, mark) {
  if ((lastTaskEvent.get(task.id) ?? -1) > mark) return;
  store.tasks.set(task.id, task);
  emit('tasks');
}

/** @param {string} id */
export function removeTask(id) {
  store.tasks.delete(id);
  lastTaskEvent.delete(id);
  emit('tasks');
}

/** @param {IntentsView} view */
export function setIntents(view) {
  store.intents = view;
  emit('intents');
}

/** @param {string | null} id */
export function intentById(id) {
  return id === null ? undefined : store.intents.intents.find((i) => i.id === id);
}

/** @type {Record<TaskStatus, string>} */
const STATUS_LABELS = {
  idle: 'Idle',
  running: 'Running',
  waiting_for_approval: 'Waiting for approval',
  waiting_for_answer: 'Waiting for an answer',
  waiting_for_subtask: 'Waiting for a subtask',
  completed: 'Completed',
  failed: 'Failed',
  cancelled: 'Cancelled',
  paused: 'Paused at its budget',
};

/** @param {TaskStatus} status */
export function statusLabel(status) {
  return STATUS_LABELS[status] ?? status;
}

/** Whether the agent is busy with the task (it cannot take a new message). @param {TaskStatus} status */
export function isBusy(status) {
  return status === 'running' || status === 'waiting_for_approval' || status === 'waiting_for_answer' || status === 'waiting_for_subtask';
}

/** @param {TaskSummary} task */
export function canRetry(task) {
  return task.status === 'failed' || task.status === 'cancelled' || task.status === 'paused' || (task.status === 'idle' && task.error !== null);
}

/** @type {Record<string, string>} */
const INTENT_STATUS_LABELS = {
  NOT_STARTED: 'Not started',
  IN_PROGRESS: 'In progress',
  DONE: 'Done',
  BLOCKED: 'Blocked',
};

/** @param {string} status */
export function intentStatusLabel(status) {
  return INTENT_STATUS_LABELS[status] ?? status;
}
