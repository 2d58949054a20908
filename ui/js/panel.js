// One open task: its header (status, intent, context, usage, stop/retry) above its transcript.

import { TodoBar } from './todos.js';
import { ProcessList } from './processes.js';
import { modeName } from './modes.js';
import { request } from './ipc.js';
import { errorText, formatCost, formatTokens, h, setMessage } from './dom.js';
import { canRetry, intentById, isBusy, statusLabel, store, taskEventMark, upsertTaskFromReply } from './store.js';
import { domId } from './tasks.js';
import { ContextGauge } from './gauge.js';
import { Transcript } from './transcript.js';
import { requestUndo } from './undo.js';

/** @typedef {import('./protocol').TaskSummary} TaskSummary */

export class TaskPanel {
  /** @param {string} taskId */
  constructor(taskId) {
    this.id = taskId;
    /** True until the transcript is loaded; events meanwhile are buffered by the caller. */
    this.loading = false;
    this.transcript = new Transcript(taskId);
    const n = domId(taskId);
    this.title = h('h2', { class: 'task-title' });
    /** The tasks above a subtask, back to the one the person started. */
    this.crumbs = h('nav', { class: 'task-breadcrumb', 'aria-label': 'Subtask of', hidden: true });
    this.status = h('span', { class: 'task-status' });
    this.intent = h('span', { class: 'task-intent' });
    this.mode = h('span', { class: 'task-mode', title: 'The mode: which kinds of action the agent may take (change it beside the message box)' });
    this.profile = h('span', { class: 'task-profile', title: 'The provider profile the task runs on' });
    this.select = h('select', { class: 'task-intent-select', 'aria-label': 'Intent for this task' });
    this.usage = h('span', { class: 'task-usage' });
    this.gauge = new ContextGauge();
    this.condense = h('button', {
      type: 'button',
      class: 'quiet',
      'data-action': 'condense',
      'aria-label': 'Condense the conversation',
      title: 'Summarize the older conversation so it takes less of the model\'s window (also: /compact)',
      text: 'Condense',
    });
    this.stop = h('button', { type: 'button', 'data-action': 'stop', text: 'Stop', title: 'Stop the agent (the task can be retried)' });
    this.retry = h('button', { type: 'button', 'data-action': 'retry', text: 'Retry', title: 'Run the last turn again' });
    this.undo = h('button', { type: 'button', class: 'quiet', 'data-action': 'undo-task', text: 'Undo task…', title: 'Take back every change this task made (shows what would change first)' });
    this.budget = h('button', { type: 'button', class: 'quiet', 'data-action': 'budget', hidden: true, text: 'Budget settings', title: 'Raise the budget, then Retry to go on' });
    this.lastError = h('p', { class: 'task-last-error', hidden: true });
    this.error = h('p', { class: 'inline-error task-error', role: 'alert' });
    this.todos = new TodoBar(taskId, this.error);
    this.processes = new ProcessList(taskId, this.error);

    const header = h('header', { class: 'task-header' },
      this.crumbs,
      h('div', { class: 'task-header-row first' },
        this.title,
        this.status,
        this.mode,
        this.profile,
        h('span', { class: 'spacer' }),
        this.undo,
        this.stop,
        this.retry),
      h('div', { class: 'task-header-row' },
        h('span', { class: 'label-muted', 'aria-hidden': 'true', text: 'Intent' }),
        this.intent,
        this.select,
        h('span', { class: 'spacer' }),
        // Kept together when the row wraps: how full the window is, what it cost, the way out.
        h('span', { class: 'task-context' }, this.gauge.el, this.usage, this.condense)),
      h('div', { class: 'task-header-row' }, this.lastError, this.budget),
      this.todos.el,
      this.processes.el,
      this.error);
    this.el = h('section', {
      class: 'task-panel',
      'data-task-id': taskId,
      role: 'tabpanel',
      id: `panel-${n}`,
      'aria-labelledby': `tab-${n}`,
    }, header, this.transcript.el);

    this.stop.addEventListener('click', () => this.act({ type: 'cancel_task', task_id: this.id }, this.stop));
    this.retry.addEventListener('click', () => this.act({ type: 'retry_task', task_id: this.id }, this.retry));
    this.condense.addEventListener('click', () => this.act({ type: 'condense_task', task_id: this.id }, this.condense));
    this.select.addEventListener('change', () => this.selectIntent());
    this.el.addEventListener('mandate:condensing', () => this.condensingChanged());
    this.undo.addEventListener('click', () => {
      const title = store.tasks.get(this.id)?.title ?? '';
      requestUndo(this.undo, { kind: 'task', task_id: this.id }, `Undo the task “${title}”`);
    });
    this.budget.addEventListener('click', () => {
      // A task paused by its own intent's budget is raised in the intent; any other in Settings.
      const task = store.tasks.get(this.id);
      const intentCap = task?.intent_id && (task.error ?? '').startsWith(`Intent ${task.intent_id} `);
      document.dispatchEvent(new CustomEvent('mandate:show-view', { detail: intentCap ? 'intents' : 'settings' }));
      if (intentCap) document.dispatchEvent(new CustomEvent('mandate:edit-intent', { detail: task.intent_id }));
      else document.getElementById('settings-max-cost')?.focus();
    });

    const task = store.tasks.get(taskId);
    if (task) this.update(task);
  }

  /**
   * Runs a header action; its error shows in the header, where it happened.
   * @param {import('./protocol').Request} req
   * @param {HTMLButtonElement} button
   */
  async act(req, button) {
    setMessage(this.error, null);
    button.disabled = true;
    try {
      const mark = taskEventMark();
      const reply = await request(req);
      if (reply.type === 'task') upsertTaskFromReply(reply.task, mark);
    } catch (e) {
      setMessage(this.error, errorText(e));
    } finally {
      const task = store.tasks.get(this.id);
      if (task) this.update(task);
    }
  }

  async selectIntent() {
    const value = this.select.value;
    setMessage(this.error, null);
    this.select.disabled = true;
    try {
      const mark = taskEventMark();
      const reply = await request({ type: 'select_intent', task_id: this.id, intent_id: value === '' ? null : value });
      if (reply.type === 'task') upsertTaskFromReply(reply.task, mark);
    } catch (e) {
      setMessage(this.error, errorText(e));
      // Show what is really in force again.
      this.refreshIntents();
    } finally {
      this.select.disabled = false;
    }
  }

  /** @param {TaskSummary} task */
  update(task) {
    this.showCrumbs(task);
    this.title.textContent = task.title || 'Untitled task';
    this.title.title = task.title;
    this.status.textContent = statusLabel(task.status);
    this.status.dataset.status = task.status;
    this.mode.textContent = modeName(task.mode);
    const profiles = store.settings?.profiles ?? [];
    const profile = profiles.find((p) => p.profile.id === (task.profile ?? store.settings?.default_profile));
    this.profile.textContent = profile ? profile.profile.name : (task.profile ?? '');
    this.profile.title = profile ? `Runs on the ${profile.profile.name} profile: ${task.model}` : `Runs on ${task.model}`;
    this.profile.hidden = profiles.length < 2 && !task.profile;
    this.mode.dataset.mode = task.mode ?? '';
    this.todos.update(task.todos ?? [], task.todos_edited ?? false);
    showUsage(this.usage, task);
    this.gauge.update(task.context);
    this.stop.disabled = !isBusy(task.status);
    // A run that ended leaves no automatic condensing going (a failure says so in a notice).
    if (!isBusy(task.status)) this.transcript.condensingEnded(true);
    this.condense.disabled = isBusy(task.status) || this.transcript.condensingNow();
    this.retry.disabled = !canRetry(task);
    this.undo.disabled = isBusy(task.status);
    const showError = task.error !== null && canRetry(task);
    const paused = task.status === 'paused';
    this.lastError.textContent = showError ? `${paused ? 'Paused' : 'Last run'}: ${task.error}` : '';
    this.lastError.hidden = !showError;
    this.lastError.dataset.paused = String(paused);
    this.budget.hidden = !paused;
    this.el.dataset.status = task.status;
    this.refreshIntents();
  }

  /**
   * A subtask shows the tasks above it, each a way back: the parent first at the right.
   * @param {TaskSummary} task
   */
  showCrumbs(task) {
    /** @type {TaskSummary[]} */
    const above = [];
    for (let id = task.parent_id; id && above.length < 8;) {
      const parent = store.tasks.get(id);
      if (!parent) break;
      above.unshift(parent);
      id = parent.parent_id;
    }
    const key = JSON.stringify(above.map((t) => [t.id, t.title, t.status]).concat([task.title]));
    if (this.crumbs.dataset.key === key) return;
    this.crumbs.dataset.key = key;
    this.crumbs.hidden = above.length === 0;
    const items = [];
    for (const t of above) {
      items.push(h('button', {
        type: 'button',
        class: 'crumb link-button',
        'data-open-subtask': t.id,
        title: `Back to “${t.title}” (${statusLabel(t.status).toLowerCase()})`,
        text: t.title || 'Untitled task',
      }), h('span', { class: 'crumb-sep', 'aria-hidden': 'true', text: '›' }));
    }
    items.push(h('span', { class: 'crumb-here', 'aria-current': 'page', text: task.title || 'Untitled task' }));
    this.crumbs.replaceChildren(...items);
  }

  /** The transcript started or stopped showing a condensing row. */
  condensingChanged() {
    const task = store.tasks.get(this.id);
    this.condense.disabled = (task ? isBusy(task.status) : false) || this.transcript.condensingNow();
  }

  /** Re-reads the task's intent and the list of intents into the badge and the select. */
  refreshIntents() {
    const task = store.tasks.get(this.id);
    if (!task) return;
    const current = task.intent_id;
    const intent = intentById(current);
    this.intent.replaceChildren();
    if (current) {
      this.intent.append(h('span', { class: 'intent-id', text: current }), h('span', { class: 'intent-name', text: intent ? ` · ${intent.name}` : ' · (not in the intents file)' }));
      this.intent.title = intent?.owned_scope.length ? `Owned scope: ${intent.owned_scope.join(', ')}` : '';
      delete this.intent.dataset.none;
    } else {
      this.intent.textContent = 'no intent';
      this.intent.title = 'The agent cannot change files until an intent is selected';
      this.intent.dataset.none = 'true';
    }
    if (document.activeElement === this.select && !this.select.disabled) return; // don't rebuild under the user's hand
    const options = [h('option', { value: '', text: 'No intent' })];
    for (const i of store.intents.intents) {
      const done = i.status === 'DONE';
      options.push(h('option', { value: i.id, disabled: done && i.id !== current, text: `${i.id} — ${i.name}${done ? ' (done)' : ''}` }));
    }
    if (current && !intent) options.push(h('option', { value: current, text: `${current} (missing)` }));
    this.select.replaceChildren(...options);
    this.select.value = current ?? '';
  }
}

/**
 * Tokens and cost so far; cache reads (part of the input) and what they saved, when there were any.
 * @param {HTMLElement} el
 * @param {TaskSummary} task
 */
function showUsage(el, task) {
  const { input_tokens: tin, output_tokens: tout, cost_usd: cost, cache_read_tokens: read, cache_write_tokens: written, cache_saved_usd: saved } = task.usage;
  const parts = [`${formatTokens(tin)} in`];
  if (read > 0) parts.push(`${formatTokens(read)} cached`);
  parts.push(`${formatTokens(tout)} out`, formatCost(cost));
  if (saved !== null && saved > 0) parts.push(`saved ${formatCost(saved).replace('≈', '')}`);
  el.textContent = parts.join(' · ');
  const cache = read > 0 || written > 0
    ? ` (${read.toLocaleString()} read from the prompt cache, ${written.toLocaleString()} written to it)`
    : '';
  el.title = `${tin.toLocaleString()} input tokens${cache}, ${tout.toLocaleString()} output tokens${cost === null ? '' : `, about $${cost.toFixed(4)} (estimate from list prices)`}${saved === null || saved <= 0 ? '' : `; the cache saved about $${saved.toFixed(4)}`}${task.model ? ` — ${task.model}` : ''}`;
}
