// Diff rendering from hunks, unified or side by side, shared by approvals and the trace view.

import { h } from './dom.js';
import { highlightLine } from './highlight.js';

/** @typedef {import('./protocol').DiffHunk} DiffHunk */
/** @typedef {import('./protocol').DiffLine} DiffLine */
/** @typedef {'unified' | 'split'} DiffMode */

/**
 * @typedef {object} DiffOptions
 * @property {string} language   for highlighting
 * @property {boolean} [selectable] one "apply" checkbox per hunk
 * @property {string} [selectLabel] what the checkbox says (default "Apply")
 * @property {DiffMode} [mode]
 * @property {string} [label]    names the diff for assistive tech
 */

/**
 * @typedef {object} DiffHandle
 * @property {HTMLElement} el
 * @property {() => DiffMode} mode
 * @property {(mode: DiffMode) => void} setMode
 * @property {() => number[]} rejectedHunks  indices of unchecked hunks
 * @property {(disabled: boolean) => void} setSelectionDisabled
 */

/**
 * @param {DiffHunk[]} hunks
 * @param {DiffOptions} options
 * @returns {DiffHandle}
 */
export function renderDiff(hunks, options) {
  let mode = options.mode ?? 'unified';
  const el = h('div', { class: 'diff', 'data-mode': mode, role: 'group', 'aria-label': options.label ?? 'Changes' });
  const digits = String(Math.max(1, ...hunks.map((x) => Math.max(x.old_start + x.old_lines, x.new_start + x.new_lines)))).length;
  el.style.setProperty('--ln-width', `${digits + 1}ch`);

  /** @type {HTMLElement[]} */
  const bodies = [];
  /** @type {HTMLInputElement[]} */
  const boxes = [];

  if (hunks.length === 0) el.append(h('p', { class: 'muted diff-empty', text: 'No line changes.' }));

  for (const hunk of hunks) {
    const head = h('div', { class: 'hunk-head' });
    const range = h('code', { class: 'hunk-range', text: `@@ -${hunk.old_start},${hunk.old_lines} +${hunk.new_start},${hunk.new_lines} @@` });
    const section = h('div', { class: 'hunk', 'data-hunk-index': hunk.index });
    if (options.selectable) {
      const box = h('input', {
        type: 'checkbox',
        class: 'hunk-accept',
        'data-hunk-index': hunk.index,
        checked: true,
        'aria-label': `${options.selectLabel ?? 'Apply'} change ${hunk.index + 1} (lines ${hunk.new_start}–${hunk.new_start + Math.max(0, hunk.new_lines - 1)})`,
      });
      box.addEventListener('change', () => section.classList.toggle('rejected', !box.checked));
      boxes.push(box);
      head.append(h('label', { class: 'hunk-toggle' }, box, h('span', { text: options.selectLabel ?? 'Apply' })));
    }
    head.append(range, h('span', { class: 'hunk-left-out', text: 'left out' }));
    const body = h('div', { class: 'hunk-body' });
    fillBody(body, hunk, mode, options.language);
    bodies.push(body);
    section.append(head, body);
    el.append(section);
  }

  return {
    el,
    mode: () => mode,
    setMode(next) {
      if (next === mode) return;
      mode = next;
      el.dataset.mode = mode;
      hunks.forEach((hunk, i) => fillBody(bodies[i], hunk, mode, options.language));
    },
    rejectedHunks: () => boxes.filter((b) => !b.checked).map((b) => Number(b.dataset.hunkIndex)),
    setSelectionDisabled(disabled) {
      for (const b of boxes) b.disabled = disabled;
      el.classList.toggle('selection-off', disabled);
    },
  };
}

/**
 * @param {HTMLElement} body
 * @param {DiffHunk} hunk
 * @param {DiffMode} mode
 * @param {string} language
 */
function fillBody(body, hunk, mode, language) {
  const frag = document.createDocumentFragment();
  if (mode === 'unified') unifiedRows(frag, hunk, language);
  else splitRows(frag, hunk, language);
  body.replaceChildren(frag);
}

/** @param {string} tag */
const kindOf = (tag) => (tag === '+' ? 'add' : tag === '-' ? 'del' : 'ctx');

/**
 * The line of the new text where the first change is (where an editor should open).
 * @param {import('./protocol').DiffHunk[]} hunks
 * @returns {number | null}
 */
export function firstChangedLine(hunks) {
  const hunk = hunks[0];
  if (!hunk) return null;
  let line = hunk.new_start;
  for (const l of hunk.lines) {
    if (kindOf(l.tag) !== 'ctx') return Math.max(1, line);
    line += 1;
  }
  return Math.max(1, hunk.new_start);
}

/**
 * @param {DocumentFragment} frag
 * @param {DiffHunk} hunk
 * @param {string} language
 */
function unifiedRows(frag, hunk, language) {
  let oldNo = hunk.old_start;
  let newNo = hunk.new_start;
  for (const line of hunk.lines) {
    const kind = kindOf(line.tag);
    const oldCell = kind === 'add' ? '' : String(oldNo++);
    const newCell = kind === 'del' ? '' : String(newNo++);
    frag.append(h('div', { class: `dl ${kind}` },
      h('span', { class: 'ln', 'aria-hidden': 'true', text: oldCell }),
      h('span', { class: 'ln', 'aria-hidden': 'true', text: newCell }),
      h('span', { class: 'sign', text: kind === 'add' ? '+' : kind === 'del' ? '-' : ' ' }),
      codeCell(line.text, language)));
  }
}

/**
 * Side by side: removed lines on the left, added on the right, each run of removals paired
 * row by row with the run of additions that follows it; context on both sides.
 * @param {DocumentFragment} frag
 * @param {DiffHunk} hunk
 * @param {string} language
 */
function splitRows(frag, hunk, language) {
  let oldNo = hunk.old_start;
  let newNo = hunk.new_start;
  const lines = hunk.lines;
  let i = 0;
  while (i < lines.length) {
    if (kindOf(lines[i].tag) === 'ctx') {
      const text = lines[i].text;
      frag.append(splitRow(
        { no: oldNo++, text, kind: 'ctx' },
        { no: newNo++, text, kind: 'ctx' },
        language));
      i += 1;
      continue;
    }
    /** @type {DiffLine[]} */
    const removed = [];
    /** @type {DiffLine[]} */
    const added = [];
    while (i < lines.length && kindOf(lines[i].tag) === 'del') removed.push(lines[i++]);
    while (i < lines.length && kindOf(lines[i].tag) === 'add') added.push(lines[i++]);
    const rows = Math.max(removed.length, added.length);
    for (let r = 0; r < rows; r += 1) {
      const left = removed[r] ? { no: oldNo++, text: removed[r].text, kind: 'del' } : null;
      const right = added[r] ? { no: newNo++, text: added[r].text, kind: 'add' } : null;
      frag.append(splitRow(left, right, language));
    }
  }
}

/**
 * @typedef {{ no: number, text: string, kind: string }} Side
 * @param {Side | null} left
 * @param {Side | null} right
 * @param {string} language
 */
function splitRow(left, right, language) {
  const row = h('div', { class: 'sl' });
  for (const [side, label] of /** @type {const} */ ([[left, 'Before'], [right, 'After']])) {
    if (!side) {
      row.append(h('span', { class: 'ln empty', 'aria-hidden': 'true' }), h('span', { class: 'code empty' }, h('span', { class: 'visually-hidden', text: `${label}: nothing` })));
      continue;
    }
    const code = codeCell(side.text, language);
    code.classList.add(side.kind);
    row.append(h('span', { class: `ln ${side.kind}`, 'aria-hidden': 'true', text: String(side.no) }), code);
  }
  return row;
}

/**
 * @param {string} text
 * @param {string} language
 */
function codeCell(text, language) {
  const code = h('span', { class: 'code' });
  // An empty line still needs its height.
  if (text === '') code.append('\u200b');
  else code.append(highlightLine(text, language));
  return code;
}
