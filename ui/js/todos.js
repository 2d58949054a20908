// A task's todo list: a bar in the task header (the item in progress, done of total) that opens
// to the whole list. Clicking an item moves it on (to do → in progress → done → to do); the
// host keeps the list and tells the model the person changed it.

import { request } from './ipc.js';
import { errorText, h, setMessage } from './dom.js';
import { store, taskEventMark, upsertTaskFromReply } from './store.js';

/** @typedef {import('./protocol').TodoItem} TodoItem */
/** @typedef {import('./protocol').TodoStatus} TodoStatus */

/** @type {Record<TodoStatus, string>} */
const MARK = { pending: '☐', in_progress: '◐', completed: '☑' };
/** @type {Record<TodoStatus, string>} */
const WORD = { pending: 'to do', in_progress: 'in progress', completed: 'done' };
/** @type {Record<TodoStatus, TodoStatus>} */
const NEXT = { pending: 'in_progress', in_progress: 'completed', completed: 'pending' };

export class TodoBar {
  /**
   * @param {string} taskId
   * @param {HTMLElement} errorEl where a refused edit is said
   */
  constructor(taskId, errorEl) {
    this.taskId = taskId;
    this.errorEl = errorEl;
    this.summary = h('summary', { class: 'todo-summary' });
    this.list = h('ol', { class: 'todo-list' });
    this.el = h('details', { class: 'task-todos', hidden: true }, this.summary, this.list);
    this.list.addEventListener('click', (ev) => {
      const button = ev.target instanceof Element ? ev.target.closest('.todo-item') : null;
      if (button instanceof HTMLElement) void this.advance(Number(button.dataset.index));
    });
  }

  /** @param {TodoItem[]} todos @param {boolean} edited */
  update(todos, edited) {
    this.el.hidden = todos.length === 0;
    if (todos.length === 0) return;
    const done = todos.filter((t) => t.status === 'completed').length;
    const current = todos.find((t) => t.status === 'in_progress') ?? todos.find((t) => t.status === 'pending');
    this.summary.replaceChildren(
      h('span', { class: 'todo-count', text: `${done}/${todos.length}` }),
      h('span', { class: 'todo-current', text: current ? current.text : 'All done' }),
    );
    if (edited) this.summary.append(h('span', { class: 'todo-edited muted', text: '(edited by you)' }));
    this.summary.title = `Todo list: ${done} of ${todos.length} done. Open it to see every item; click an item to move it on.`;
    this.list.replaceChildren(...todos.map((t, i) => h('li', { 'data-status': t.status },
      h('button', {
        type: 'button',
        class: 'todo-item quiet',
        'data-index': String(i),
        'aria-label': `${t.text}: ${WORD[t.status]}. Click to mark it ${WORD[NEXT[t.status]]}.`,
        text: `${MARK[t.status]} ${t.text}`,
      }))));
  }

  /** The person moves item `i` on; only one item is in progress at a time. @param {number} i */
  async advance(i) {
    const task = store.tasks.get(this.taskId);
    if (!task) return;
    const todos = task.todos.map((t) => ({ ...t }));
    const next = NEXT[todos[i].status];
    if (next === 'in_progress') for (const t of todos) if (t.status === 'in_progress') t.status = 'pending';
    todos[i].status = next;
    setMessage(this.errorEl, null);
    try {
      const mark = taskEventMark();
      const reply = await request({ type: 'set_todos', task_id: this.taskId, todos });
      if (reply.type === 'task') upsertTaskFromReply(reply.task, mark);
    } catch (e) {
      setMessage(this.errorEl, errorText(e));
    }
  }
}
