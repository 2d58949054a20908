// A task's background processes (dev servers, watchers the agent started): a section in the task
// header listing each with its state, its command and its live output, and a Stop button. The
// host streams the output; the page keeps only the end of it.

import { request } from './ipc.js';
import { errorText, h, setMessage } from './dom.js';

/** @typedef {import('./protocol').ProcessView} ProcessView */
/** @typedef {import('./protocol').ProcessStatus} ProcessStatus */
/** @typedef {import('./protocol').ProcessStopper} ProcessStopper */

/** What the page keeps of one process's output. */
const KEPT = 64 * 1024;

/** @type {Record<ProcessStopper, string>} */
const BY = {
  person: 'by you',
  model: 'by the agent',
  task: 'with its task',
  mandate: 'when Mandate closed',
  timeout: 'at its time limit',
  governance: 'to keep its changes watched',
};

/** The list of each task whose panel is open. @type {Map<string, ProcessList>} */
const lists = new Map();

/** @param {ProcessStatus} s */
function stateText(s) {
  switch (s.state) {
    case 'running': return 'running';
    case 'stopping': return 'stopping…';
    case 'exited': return s.code === null ? 'ended by a signal' : `exited (${s.code})`;
    case 'stopped': return `stopped ${BY[s.by]}`;
    default: return '';
  }
}

/** @param {ProcessStatus} s */
const isLive = (s) => s.state === 'running' || s.state === 'stopping';

/** @param {string} text */
const trimmed = (text) => (text.length > KEPT ? text.slice(text.length - KEPT) : text);

class ProcessRow {
  /** @param {ProcessList} list @param {ProcessView} view */
  constructor(list, view) {
    this.id = view.process_id;
    this.state = h('span', { class: 'process-state' });
    this.stop = h('button', { type: 'button', class: 'process-stop', text: 'Stop', title: 'Stop it and everything it started' });
    this.output = h('pre', { class: 'process-output', tabindex: '0', 'aria-label': `Output of ${view.process_id}` });
    this.el = h('li', { class: 'process', 'data-process-id': view.process_id },
      h('div', { class: 'process-head' },
        this.state,
        h('code', { class: 'process-command', title: view.command, text: view.command }),
        h('span', { class: 'process-meta muted', text: view.cwd ? `${view.process_id} · ${view.cwd}` : view.process_id }),
        this.stop),
      this.output);
    this.stop.addEventListener('click', () => void list.stopProcess(this));
    this.output.textContent = trimmed(view.output_tail);
    this.update(view);
  }

  /** @param {ProcessView} view */
  update(view) {
    this.view = view;
    this.state.textContent = stateText(view.status);
    this.el.dataset.state = view.status.state;
    this.stop.hidden = !isLive(view.status);
    this.stop.disabled = view.status.state === 'stopping';
  }

  /** @param {string} chunk */
  append(chunk) {
    const pre = this.output;
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.textContent = trimmed((pre.textContent ?? '') + chunk);
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  }
}

export class ProcessList {
  /**
   * @param {string} taskId
   * @param {HTMLElement} errorEl where a refused stop is said
   */
  constructor(taskId, errorEl) {
    this.taskId = taskId;
    this.errorEl = errorEl;
    /** @type {Map<string, ProcessRow>} */
    this.rows = new Map();
    this.count = h('span', { class: 'process-count' });
    this.list = h('ul', { class: 'process-list', 'aria-label': 'Background processes' });
    this.el = h('details', { class: 'task-processes', open: true, hidden: true },
      h('summary', null, h('span', { class: 'process-title', text: 'Processes' }), this.count),
      this.list);
    lists.set(taskId, this);
    void this.load();
  }

  async load() {
    try {
      const reply = await request({ type: 'list_processes', task_id: this.taskId });
      if (reply.type === 'processes') for (const p of reply.processes) this.changed(p);
    } catch (e) {
      setMessage(this.errorEl, errorText(e));
    }
  }

  /** @param {ProcessView} view */
  changed(view) {
    let row = this.rows.get(view.process_id);
    if (row) row.update(view);
    else {
      row = new ProcessRow(this, view);
      this.rows.set(view.process_id, row);
      this.list.append(row.el);
    }
    this.summarize();
  }

  summarize() {
    const all = [...this.rows.values()];
    const running = all.filter((r) => r.view && isLive(r.view.status)).length;
    this.el.hidden = all.length === 0;
    this.count.textContent = running > 0 ? `${running} running` : `${all.length} ended`;
    this.el.dataset.running = String(running);
  }

  /** @param {ProcessRow} row */
  async stopProcess(row) {
    row.stop.disabled = true;
    setMessage(this.errorEl, null);
    try {
      const reply = await request({ type: 'stop_process', process_id: row.id });
      if (reply.type === 'processes') for (const p of reply.processes) this.changed(p);
    } catch (e) {
      setMessage(this.errorEl, errorText(e));
      row.stop.disabled = false;
    }
  }
}

/** @param {ProcessView} view */
export function onProcessChanged(view) {
  lists.get(view.task_id)?.changed(view);

}

/** @param {string} taskId @param {string} processId @param {string} chunk */
export function onProcessOutput(taskId, processId, chunk) {
  lists.get(taskId)?.rows.get(processId)?.append(chunk);
}
