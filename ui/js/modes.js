// Modes: the picker beside the message box (the open task's mode, or the mode a new task
// starts in) and the mode's name in a task's header. The host reads the mode files.

import { request } from './ipc.js';
import { byId, errorText, h, setMessage } from './dom.js';
import { emit, store, taskEventMark, upsertTaskFromReply } from './store.js';

/** @typedef {import('./protocol').ModeInfo} ModeInfo */

/** The mode the next new task starts in. */
let nextMode = 'code';
/** The task the composer talks to (null: a new task). @type {string | null} */
let target = null;

/**
 * The composer now talks to `taskId` (null: a new task): the picker shows its mode.
 * @param {string | null} taskId
 */
export function setModeTarget(taskId) {
  target = taskId;
  renderModePicker();
}

/** Loads the workspace's modes (their files may have changed) and fills the picker. */
export async function loadModes() {
  try {
    const reply = await request({ type: 'list_modes' });
    if (reply.type !== 'modes') return;
    store.modes = reply.modes;
    store.modeProblems = reply.problems;
    emit('modes');
  } catch (e) {
    setMessage(byId('composer-error'), `The modes could not be read: ${errorText(e)}`);
  }
}

/** @param {string | null | undefined} slug */
export function modeName(slug) {
  if (!slug) return 'no mode';
  return store.modes.find((m) => m.slug === slug)?.name ?? slug;
}

/** @param {ModeInfo} m */
function modeTitle(m) {
  const allows = m.groups.length ? m.groups.join(', ') : 'planning only';
  const edits = m.edit_regex ? `; edits only files matching ${m.edit_regex}` : '';
  const model = m.model ? `; runs on ${m.model}` : '';
  return `${m.description || m.name} — allows ${allows}${edits}${model} (${m.source})`;
}

/** The mode the picker should show: the open task's, or the next new task's. */
export function composerMode() {
  const task = target ? store.tasks.get(target) : undefined;
  return task ? (task.mode ?? '') : nextMode;
}

/** The mode a new task starts in (what the picker shows while no task is open). */
export function newTaskMode() {
  return nextMode;
}

/** Rebuilds the picker's options and shows the current mode. */
export function renderModePicker() {
  const picker = byId('mode-picker', HTMLSelectElement);
  const current = composerMode();
  if (document.activeElement !== picker || picker.disabled) {
    const options = store.modes.map((m) => h('option', { value: m.slug, text: m.name, title: modeTitle(m) }));
    if (current && !store.modes.some((m) => m.slug === current)) {
      options.push(h('option', { value: current, text: `${current} (no longer defined)` }));
    }
    if (!current) options.unshift(h('option', { value: '', text: 'No mode' }));
    picker.replaceChildren(...options);
  }
  picker.value = current;
  const mode = store.modes.find((m) => m.slug === current);
  picker.title = mode ? modeTitle(mode) : 'The mode decides which kinds of action the agent may take';
}

export function initModePicker() {
  const picker = byId('mode-picker', HTMLSelectElement);
  picker.addEventListener('focus', () => { void loadModes(); });
  picker.addEventListener('change', async () => {
    const slug = picker.value;
    // As in the editors people come from: the mode picked last is also where new tasks start.
    nextMode = slug;
    const task = target ? store.tasks.get(target) : undefined;
    if (!task) {
      renderModePicker();
      return;
    }
    setMessage(byId('composer-error'), null);
    picker.disabled = true;
    try {
      const mark = taskEventMark();
      const reply = await request({ type: 'set_task_mode', task_id: task.id, mode: slug });
      if (reply.type === 'task') upsertTaskFromReply(reply.task, mark);
    } catch (e) {
      setMessage(byId('composer-error'), errorText(e));
    } finally {
      picker.disabled = false;
      renderModePicker();
    }
  });
  void loadModes();
}
