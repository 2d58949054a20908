// The task history: a search above the task list (words of the conversation, intent, dates,
// cost), and a task exported as Markdown. The host does both: it searches every stored task
// (the page holds only summaries) and writes the export into Mandate's data directory, out of
// the agent's reach; the page shows the results and the Markdown, to copy.

import { ask } from './ipc.js';
import { byId, closest, debounce, errorText, formatCost, h, timeEl } from './dom.js';
import { listen, store } from './store.js';

/** @typedef {import('./protocol').HistoryQuery} HistoryQuery */
/** @typedef {import('./protocol').HistoryHit} HistoryHit */
/** @typedef {import('./protocol').HistoryResults} HistoryResults */
/** @typedef {import('./protocol').HistoryField} HistoryField */

/** @type {Record<HistoryField, string>} */
const FIELD_LABELS = { title: 'title', person: 'you', agent: 'agent', tool: 'tool', intent: 'intent' };

/** Searches sent; only the newest one's answer is shown. */
let sent = 0;

/** @param {(id: string) => void} open  opens a task in a tab */
export function initHistory(open) {
  const form = byId('history-search', HTMLFormElement);
  const soon = debounce(search, 250);
  form.addEventListener('submit', (ev) => { ev.preventDefault(); search(); });
  form.addEventListener('input', soon);
  form.addEventListener('change', soon);
  byId('history-text').addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && byId('history-text', HTMLInputElement).value) {
      ev.preventDefault();
      clear();
    }
  });
  byId('history-filters-toggle').addEventListener('click', toggleFilters);
  byId('history-clear').addEventListener('click', clear);
  byId('history-results').addEventListener('click', (ev) => {
    const id = closest(ev.target, '.task-item')?.dataset.taskId;
    if (!id) return;
    if (closest(ev.target, '[data-action="export-task"]')) exportTask(id);
    else open(id);
  });
  byId('export-copy').addEventListener('click', copyExport);
  byId('export-close').addEventListener('click', () => byId('export-dialog', HTMLDialogElement).close());
  listen('intents', fillIntents);
  fillIntents();
  // Results follow the tasks (a task deleted, a new answer), at most once a second.
  const follow = debounce(() => { if (searching()) search(); }, 1000);
  listen('tasks', follow);
}

/** The intents the filter offers: those of the intents file, and any a task holds. */
function fillIntents() {
  const select = byId('history-intent', HTMLSelectElement);
  const chosen = select.value;
  const ids = new Map(store.intents.intents.map((i) => [i.id, i.name]));
  for (const task of store.tasks.values()) {
    if (task.intent_id && !ids.has(task.intent_id)) ids.set(task.intent_id, '');
  }
  select.replaceChildren(h('option', { value: '', text: 'Any intent' }),
    ...[...ids].map(([id, name]) => h('option', { value: id, text: name ? `${id} — ${name}` : id })));
  select.value = ids.has(chosen) ? chosen : '';
}

function toggleFilters() {
  const toggle = byId('history-filters-toggle');
  const open = toggle.getAttribute('aria-expanded') !== 'true';
  toggle.setAttribute('aria-expanded', String(open));
  byId('history-filters').hidden = !open;
  if (open) fillIntents();
}

function clear() {
  byId('history-search', HTMLFormElement).reset();
  search();
  byId('history-text').focus();
}

/**
 * A day of the date inputs as a moment of the person's own time zone: its first or last instant.
 * @param {string} id
 * @param {boolean} endOfDay
 */
function dayBound(id, endOfDay) {
  const value = byId(id, HTMLInputElement).value;
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return null;
  const day = endOfDay
    ? new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]), 23, 59, 59, 999)
    : new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return Number.isNaN(day.getTime()) ? null : day.toISOString();
}

/** @param {string} id */
function dollars(id) {
  const n = byId(id, HTMLInputElement).valueAsNumber;
  return Number.isFinite(n) ? n : null;
}

/** @returns {HistoryQuery} */
function query() {
  return {
    text: byId('history-text', HTMLInputElement).value.trim(),
    intent: byId('history-intent', HTMLSelectElement).value || null,
    since: dayBound('history-since', false),
    until: dayBound('history-until', true),
    min_cost_usd: dollars('history-min-cost'),
    max_cost_usd: dollars('history-max-cost'),
  };
}

/** @param {HistoryQuery} q */
function asksSomething(q) {
  return q.text !== '' || q.intent !== null || q.since !== null || q.until !== null
    || q.min_cost_usd !== null || q.max_cost_usd !== null;
}

function searching() {
  return byId('history-search').closest('.sidebar')?.hasAttribute('data-searching') ?? false;
}

/** @param {boolean} on */
function showResults(on) {
  const sidebar = byId('history-search').closest('.sidebar');
  if (on) sidebar?.setAttribute('data-searching', '');
  else sidebar?.removeAttribute('data-searching');
  byId('history-results').hidden = !on;
}

async function search() {
  const q = query();
  const mine = ++sent;
  const status = byId('history-status');
  if (!asksSomething(q)) {
    showResults(false);
    status.textContent = '';
    byId('history-results').replaceChildren();
    return;
  }
  status.textContent = 'Searching…';
  try {
    const { results } = await ask({ type: 'search_history', query: q }, 'history');
    if (mine !== sent) return;
    render(results);
  } catch (e) {
    if (mine !== sent) return;
    byId('history-results').replaceChildren();
    status.textContent = `The search failed: ${errorText(e)}`;
  }
  showResults(true);
}

/** @param {HistoryResults} results */
function render(results) {
  const status = byId('history-status');
  if (results.total === 0) status.textContent = `No task matches (${results.searched} searched).`;
  else if (results.total > results.hits.length) status.textContent = `The newest ${results.hits.length} of ${results.total} matching tasks.`;
  else status.textContent = `${results.total} of ${results.searched} tasks match.`;
  const words = wordsPattern(byId('history-text', HTMLInputElement).value);
  byId('history-results').replaceChildren(...results.hits.map((hit) => hitItem(hit, words)));
}

/**
 * `text` with the other words of the search marked too, as text nodes and `<mark>`s.
 * @param {string} text
 * @param {RegExp | null} words
 * @returns {(string | HTMLElement)[]}
 */
function marked(text, words) {
  if (!words) return [text];
  /** @type {(string | HTMLElement)[]} */
  const out = [];
  let at = 0;
  for (const m of text.matchAll(words)) {
    const start = m.index ?? 0;
    if (m[0] === '') break;
    out.push(text.slice(at, start), h('mark', { text: m[0] }));
    at = start + m[0].length;
  }
  out.push(text.slice(at));
  return out;
}

/** The search's words as one literal, case-blind pattern (null: none). @param {string} text */
function wordsPattern(text) {
  const words = text.split(/\s+/).filter(Boolean).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return words.length ? new RegExp(words.join('|'), 'giu') : null;
}

/**
 * @param {HistoryHit} hit
 * @param {RegExp | null} words
 */
function hitItem(hit, words) {
  const task = hit.task;
  const title = task.title || 'Untitled task';
  const s = hit.snippet;
  const snippet = s
    ? h('span', { class: 'history-snippet' },
      h('span', { class: 'history-field', text: `${FIELD_LABELS[s.field] ?? s.field}:` }), ' ',
      ...marked(s.before, words), h('mark', { text: s.matched }), ...marked(s.after, words))
    : null;
  return h('li', { class: 'task-item history-hit', 'data-task-id': task.id },
    h('button', { type: 'button', class: 'task-open', title },
      h('span', { class: 'task-item-top' },
        h('span', { class: 'task-item-title', text: title }),
        timeEl(task.updated_at)),
      h('span', { class: 'task-item-meta' },
        h('span', { class: 'intent-badge', 'data-none': task.intent_id ? null : 'true', title: hit.intent_name ?? '', text: task.intent_id ?? 'no intent' }),
        h('span', { class: 'history-cost', text: formatCost(task.usage.cost_usd) })),
      snippet),
    exportButton(title));
}

/** @param {string} title */
export function exportButton(title) {
  return h('button', {
    type: 'button',
    class: 'task-export icon-button',
    'data-action': 'export-task',
    'aria-label': `Export task “${title}” as Markdown`,
    title: 'Export as Markdown',
    text: '⤓',
  });
}

/**
 * Has the host write the task as Markdown, then shows where and what, to copy.
 * @param {string} id
 */
export async function exportTask(id) {
  const dialog = byId('export-dialog', HTMLDialogElement);
  const status = byId('export-status');
  const text = byId('export-text', HTMLTextAreaElement);
  byId('export-path').textContent = '';
  text.value = '';
  status.textContent = 'Exporting…';
  delete status.dataset.copied;
  if (!dialog.open) dialog.showModal();
  try {
    const reply = await ask({ type: 'export_task', task_id: id }, 'task_export');
    byId('export-path').textContent = reply.export.path;
    text.value = reply.export.markdown;
    status.textContent = 'Saved. Copy the Markdown, or open the file.';
    byId('export-copy').focus();
  } catch (e) {
    status.textContent = `The task could not be exported: ${errorText(e)}`;
  }
}

async function copyExport() {
  const text = byId('export-text', HTMLTextAreaElement);
  const status = byId('export-status');
  let ok = false;
  try {
    await navigator.clipboard.writeText(text.value);
    ok = true;
  } catch {
    ok = false;
  }
  status.textContent = ok ? 'Copied to the clipboard.' : 'The clipboard could not be reached: the Markdown is selected below; copy it with Ctrl+C.';
  status.dataset.copied = String(ok);
  if (!ok) {
    text.focus();
    text.select();
  }
}
