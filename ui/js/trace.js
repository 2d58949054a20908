// The Trace view: recorded changes per intent, line origins per file, and ledger verification.

import { ask } from './ipc.js';
import { byId, closest, errorText, formatFullTime, h, setMessage, timeEl } from './dom.js';
import { listen, store } from './store.js';
import { firstChangedLine, renderDiff } from './diffview.js';
import { highlightLine } from './highlight.js';
import { pathLink } from './editor.js';
import { requestUndo } from './undo.js';

/** @typedef {import('./protocol').TraceChange} TraceChange */
/** @typedef {import('./protocol').LineRange} LineRange */
/** @typedef {import('./protocol').VerifyReport} VerifyReport */
/** @typedef {import('./protocol').FindingKind} FindingKind */

/** Rows drawn for one file; beyond that the table says how many were left out. */
const MAX_BLAME_ROWS = 20_000;

/** @type {Map<string, TraceChange>} */
const changes = new Map();
let traceSeq = 0;
let diffSeq = 0;
let blameSeq = 0;

/** @type {Record<FindingKind, { label: string, explain: string }>} */
const FINDINGS = {
  intact: { label: 'Intact', explain: 'The recorded lines are still there, unchanged.' },
  moved: { label: 'Moved', explain: 'The same text is still in the file, at other lines.' },
  changed: { label: 'Changed', explain: 'The recorded lines were edited afterwards, by a person or a tool outside Mandate. This is normal editing, not tampering.' },
  missing: { label: 'Missing', explain: 'The file no longer exists.' },
  tampered: { label: 'Tampered', explain: 'The ledger’s hash chain breaks here: a record was edited, removed or reordered.' },
  malformed: { label: 'Malformed', explain: 'This line of the ledger is not a valid record.' },
};

export function initTrace() {
  listen('intents', fillIntentSelect);
  fillIntentSelect();
  byId('trace-intent').addEventListener('change', () => {
    byId('trace-undo', HTMLButtonElement).disabled = byId('trace-intent', HTMLSelectElement).value === '';
    loadChanges();
  });
  byId('trace-undo').addEventListener('click', undoIntent);

  const table = byId('trace-changes');
  table.addEventListener('click', (ev) => {
    const id = closest(ev.target, '.trace-change')?.dataset.recordId;
    if (id) showDiff(id);
  });
  table.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Enter' && ev.key !== ' ') return;
    const id = closest(ev.target, '.trace-change')?.dataset.recordId;
    if (!id) return;
    ev.preventDefault();
    showDiff(id);
  });

  byId('blame-form', HTMLFormElement).addEventListener('submit', (ev) => {
    ev.preventDefault();
    runBlame();
  });
  byId('trace-diff').addEventListener('click', (ev) => {
    const path = closest(ev.target, '[data-action="blame-file"]')?.dataset.path;
    if (!path) return;
    byId('blame-path', HTMLInputElement).value = path;
    runBlame();
    byId('blame-path').scrollIntoView({ block: 'nearest', behavior: 'smooth' });
  });
  byId('verify-run').addEventListener('click', verify);
}

/** Asks for a preview of undoing the chosen intent's changes (since the time given, if any). */
function undoIntent() {
  const intentId = byId('trace-intent', HTMLSelectElement).value;
  const error = byId('trace-error');
  setMessage(error, null);
  if (!intentId) return;
  const local = byId('trace-undo-since', HTMLInputElement).value;
  /** @type {string | null} */
  let since = null;
  if (local) {
    // The field holds local time without a zone; the host wants RFC 3339.
    const date = new Date(local);
    if (Number.isNaN(date.getTime())) {
      setMessage(error, 'The time is not a date and time.');
      byId('trace-undo-since').focus();
      return;
    }
    since = date.toISOString();
  }
  const label = `Undo ${intentId}’s changes${since ? ` since ${formatFullTime(since)}` : ''}`;
  requestUndo(byId('trace-undo'), { kind: 'intent', intent_id: intentId, since }, label);
}

function fillIntentSelect() {
  const select = byId('trace-intent', HTMLSelectElement);
  const current = select.value;
  const options = [h('option', { value: '', text: 'Choose an intent…' })];
  for (const i of store.intents.intents) options.push(h('option', { value: i.id, text: `${i.id} — ${i.name}` }));
  if (current && !store.intents.intents.some((i) => i.id === current)) options.push(h('option', { value: current, text: `${current} (no longer in the file)` }));
  select.replaceChildren(...options);
  select.value = current;
  byId('trace-undo', HTMLButtonElement).disabled = select.value === '';
}

/** @param {LineRange[]} ranges */
function formatRanges(ranges) {
  return ranges.map((r) => (r.start_line === r.end_line ? String(r.start_line) : `${r.start_line}–${r.end_line}`)).join(', ');
}

async function loadChanges() {
  const id = byId('trace-intent', HTMLSelectElement).value;
  const body = byId('trace-changes', HTMLTableElement).tBodies[0];
  const status = byId('trace-status');
  const error = byId('trace-error');
  const seq = ++traceSeq;
  setMessage(error, null);
  byId('trace-diff').replaceChildren();
  if (!id) {
    body.replaceChildren();
    status.textContent = '';
    return;
  }
  status.textContent = 'Loading…';
  try {
    const reply = await ask({ type: 'intent_trace', intent_id: id }, 'intent_trace');
    if (seq !== traceSeq) return;
    changes.clear();
    for (const c of reply.changes) changes.set(c.record_id, c);
    body.replaceChildren(...reply.changes.map((c) => h('tr', { class: 'trace-change', 'data-record-id': c.record_id, tabindex: '0', title: 'Show this change' },
      h('td', null, pathLink(c.path, c.ranges[0]?.start_line ?? null)),
      h('td', { text: formatRanges(c.ranges) }),
      h('td', null, timeEl(c.timestamp)),
      h('td', { text: c.model }),
      h('td', { text: c.contributor }),
      h('td', { text: c.approval }),
      h('td', null, h('span', { class: 'tag', text: c.mutation_class })))));
    if (reply.changes.length === 0) {
      body.append(h('tr', null, h('td', { colspan: '7', class: 'muted', text: 'No recorded changes for this intent yet.' })));
    }
    status.textContent = reply.changes.length === 1 ? '1 change' : `${reply.changes.length} changes`;
    const paths = [...new Set(reply.changes.map((c) => c.path))];
    byId('blame-paths').replaceChildren(...paths.map((p) => h('option', { value: p })));
  } catch (e) {
    if (seq !== traceSeq) return;
    status.textContent = '';
    body.replaceChildren();
    setMessage(error, errorText(e));
  }
}

/** @param {string} recordId */
async function showDiff(recordId) {
  const change = changes.get(recordId);
  if (!change) return;
  for (const row of byId('trace-changes').querySelectorAll('.trace-change')) {
    if (row instanceof HTMLElement) row.toggleAttribute('aria-current', row.dataset.recordId === recordId);
  }
  const out = byId('trace-diff');
  const seq = ++diffSeq;
  out.replaceChildren(h('p', { class: 'muted', text: 'Loading the change…' }));
  try {
    const { diff } = await ask({ type: 'change_diff', record_id: recordId, path: change.path }, 'diff');
    if (seq !== diffSeq) return;
    const head = h('div', { class: 'diff-toolbar' },
      h('h3', { class: 'diff-title' }, pathLink(diff.path, firstChangedLine(diff.hunks) ?? change.ranges[0]?.start_line ?? null)),
      h('span', { class: 'muted small', text: `${formatFullTime(change.timestamp)} · ${change.model} · ${change.approval}` }),
      h('span', { class: 'spacer' }));
    const blame = h('button', { type: 'button', class: 'quiet', 'data-action': 'blame-file', 'data-path': diff.path, text: 'Who wrote each line' });
    if (!diff.available) {
      out.replaceChildren(head, h('p', { class: 'muted', text: 'The text before this change was not kept, so its diff cannot be shown.' }));
      head.append(blame);
      return;
    }
    const view = renderDiff(diff.hunks, { language: extension(diff.path), label: `Change to ${diff.path}` });
    const mode = h('button', { type: 'button', class: 'quiet', 'data-action': 'toggle-diff-mode', 'aria-pressed': 'false', text: 'Side by side' });
    mode.addEventListener('click', () => {
      const split = view.mode() === 'unified';
      view.setMode(split ? 'split' : 'unified');
      mode.setAttribute('aria-pressed', String(split));
    });
    head.append(mode, blame);
    out.replaceChildren(head, h('div', { class: 'diff-scroll tall' }, view.el));
  } catch (e) {
    if (seq !== diffSeq) return;
    out.replaceChildren(h('p', { class: 'inline-error', role: 'alert', text: errorText(e) }));
  }
}

/** @param {string} path */
function extension(path) {
  const name = path.split('/').pop() ?? '';
  const dot = name.lastIndexOf('.');
  if (dot <= 0) return name.toLowerCase() === 'makefile' ? 'make' : '';
  return name.slice(dot + 1);
}

async function runBlame() {
  const path = byId('blame-path', HTMLInputElement).value.trim();
  const error = byId('blame-error');
  const body = byId('blame-table', HTMLTableElement).tBodies[0];
  setMessage(error, null);
  if (!path) {
    setMessage(error, 'Enter the path of a file in the workspace.');
    byId('blame-path').focus();
    return;
  }
  const seq = ++blameSeq;
  const button = byId('blame-run', HTMLButtonElement);
  button.disabled = true;
  try {
    const { blame } = await ask({ type: 'blame', path }, 'blame');
    if (seq !== blameSeq) return;
    const language = extension(blame.path);
    const frag = document.createDocumentFragment();
    /** @type {string | null | undefined} */
    let group;
    let band = 0;
    for (const line of blame.lines.slice(0, MAX_BLAME_ROWS)) {
      const key = line.origin?.record_id ?? null;
      const start = key !== group;
      if (start) band = 1 - band;
      group = key;
      const o = line.origin;
      frag.append(h('tr', {
        class: `blame-line band-${band}${start ? ' group-start' : ' group-cont'}${o ? '' : ' unrecorded'}`,
        'data-line': line.line,
        'data-record-id': o?.record_id ?? null,
        title: o ? `${o.intent_id} · ${o.model} · ${o.contributor} · approved by ${o.approval} · ${formatFullTime(o.timestamp)}` : 'No recorded change covers this line',
      },
      h('td', { class: 'ln' }, pathLink(blame.path, line.line, { label: String(line.line) })),
      h('td', { class: 'meta', text: o ? o.intent_id : 'not recorded' }),
      h('td', { class: 'meta', text: o ? o.model : '' }),
      h('td', { class: 'meta', text: o ? o.approval : '' }),
      h('td', { class: 'code' }, line.text === '' ? '\u200b' : highlightLine(line.text, language))));
    }
    if (blame.lines.length > MAX_BLAME_ROWS) {
      frag.append(h('tr', null, h('td', { colspan: '5', class: 'muted', text: `${blame.lines.length - MAX_BLAME_ROWS} more lines not shown.` })));
    }
    if (blame.lines.length === 0) frag.append(h('tr', null, h('td', { colspan: '5', class: 'muted', text: 'The file is empty.' })));
    body.replaceChildren(frag);
  } catch (e) {
    if (seq !== blameSeq) return;
    body.replaceChildren();
    setMessage(error, errorText(e));
  } finally {
    button.disabled = false;
  }
}

/**
 * @param {number} n
 * @param {string} one
 * @param {string} many
 */
const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;

/** @param {VerifyReport} r */
export function summarize(r) {
  const parts = [`${r.intact} intact`];
  if (r.moved) parts.push(`${r.moved} moved`);
  if (r.superseded) parts.push(`${r.superseded} replaced by later changes`);
  if (r.changed) parts.push(`${r.changed} changed by someone else`);
  if (r.missing) parts.push(`${r.missing} in files that no longer exist`);
  if (r.tampered) parts.push(`${r.tampered} tampered`);
  if (r.malformed) parts.push(`${r.malformed} malformed`);
  return `${r.chain_ok ? 'Ledger intact' : 'Ledger damaged'}: ${count(r.records, 'record', 'records')}, ${count(r.ranges, 'range', 'ranges')} — ${parts.join(', ')}`;
}

async function verify() {
  const out = byId('verify-report');
  const status = byId('verify-status');
  const error = byId('verify-error');
  const button = byId('verify-run', HTMLButtonElement);
  setMessage(error, null);
  button.disabled = true;
  status.textContent = 'Checking…';
  try {
    const { report } = await ask({ type: 'verify_trace' }, 'verify');
    out.dataset.chainOk = String(report.chain_ok);
    const items = report.findings.map((f) => {
      const place = f.path ? `${f.path}${f.range ? `:${formatRanges([f.range])}` : ''}` : null;
      return h('li', { class: 'finding', 'data-kind': f.kind },
        h('div', { class: 'finding-head' },
          h('span', { class: 'chip', 'data-kind': f.kind, text: FINDINGS[f.kind]?.label ?? f.kind }),
          h('span', { class: 'muted small', text: `ledger line ${f.ledger_line}` }),
          // A missing file cannot be opened; the others open where the range starts.
          f.path && place ? (f.kind === 'missing' ? h('span', { class: 'muted small', text: place }) : pathLink(f.path, f.range?.start_line ?? null, { label: place, className: 'small' })) : null),
        h('p', { class: 'finding-explain', text: FINDINGS[f.kind]?.explain ?? '' }),
        f.detail ? h('p', { class: 'finding-detail small', text: f.detail }) : null);
    });
    out.replaceChildren(h('p', { class: 'verify-summary', text: `${summarize(report)}.` }));
    if (!report.chain_ok) {
      out.append(h('p', { class: 'inline-error', text: 'The hash chain does not hold or a record is malformed: ledger lines were edited, removed or reordered outside Mandate.' }));
    }
    out.append(items.length ? h('ul', { class: 'findings' }, ...items) : h('p', { class: 'muted', text: 'Every recorded range is where it was recorded.' }));
    status.textContent = `Checked ${formatFullTime(new Date().toISOString())}`;
  } catch (e) {
    status.textContent = '';
    setMessage(error, errorText(e));
  } finally {
    button.disabled = false;
  }
}
