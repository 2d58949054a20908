// An editable list of one-line strings (`.list-editor`): one input per row, add and remove.

import { closest, h } from './dom.js';

/**
 * @typedef {object} ListEditorOptions
 * @property {string} label          names each row for assistive tech ("Glob 2")
 * @property {() => void} onChange
 * @property {boolean} [preview]     give each row a `.scope-preview` line
 */

export class ListEditor {
  /**
   * @param {HTMLElement} root a `.list-editor` with a `ul.rows` and an `[data-action="add"]` button
   * @param {ListEditorOptions} options
   */
  constructor(root, options) {
    this.root = root;
    this.options = options;
    const rows = root.querySelector('ul.rows');
    if (!(rows instanceof HTMLUListElement)) throw new Error('list editor without ul.rows');
    this.rows = rows;
    this.placeholder = root.dataset.placeholder ?? '';

    root.addEventListener('click', (ev) => {
      const button = closest(ev.target, '[data-action]');
      if (!button || !root.contains(button)) return;
      if (button.dataset.action === 'add') {
        this.addRow('', null).focus();
        options.onChange();
      } else if (button.dataset.action === 'remove') {
        const li = closest(button, 'li');
        if (li) this.removeRow(li);
      }
    });
    root.addEventListener('input', () => options.onChange());
    root.addEventListener('change', () => options.onChange());
    // Enter adds a row below (instead of submitting the form); Backspace on an empty row removes it.
    root.addEventListener('keydown', (ev) => {
      const input = ev.target;
      if (!(input instanceof HTMLInputElement)) return;
      const li = closest(input, 'li');
      if (!li) return;
      if (ev.key === 'Enter' && !ev.isComposing) {
        ev.preventDefault();
        this.addRow('', li).focus();
        options.onChange();
      } else if (ev.key === 'Backspace' && input.value === '' && this.rows.children.length > 1) {
        ev.preventDefault();
        this.removeRow(li);
      }
    });
  }

  /** @returns {string[]} the non-empty rows, trimmed */
  values() {
    return this.inputs().map((i) => i.value.trim()).filter((v) => v !== '');
  }

  /** @returns {HTMLInputElement[]} */
  inputs() {
    return [...this.rows.querySelectorAll('input')].filter((i) => i instanceof HTMLInputElement);
  }

  /** @param {string[]} values */
  set(values) {
    this.rows.replaceChildren();
    for (const v of values) this.addRow(v, null);
    this.renumber();
  }

  /**
   * @param {string} value
   * @param {Element | null} after  insert after this row (null: at the end)
   * @returns {HTMLInputElement}
   */
  addRow(value, after) {
    const input = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: this.placeholder });
    input.value = value;
    const li = h('li', { class: 'list-row' },
      h('div', { class: 'list-row-main' },
        input,
        h('button', { type: 'button', class: 'icon-button', 'data-action': 'remove', text: '✕' })),
      this.options.preview ? h('p', { class: 'scope-preview muted small', 'aria-live': 'polite' }) : null);
    if (after) after.after(li);
    else this.rows.append(li);
    this.renumber();
    return input;
  }

  /** @param {Element} li */
  removeRow(li) {
    const next = li.nextElementSibling ?? li.previousElementSibling;
    li.remove();
    this.renumber();
    const target = next?.querySelector('input') ?? this.root.querySelector('[data-action="add"]');
    if (target instanceof HTMLElement) target.focus();
    this.options.onChange();
  }

  renumber() {
    [...this.rows.children].forEach((li, i) => {
      li.querySelector('input')?.setAttribute('aria-label', `${this.options.label} ${i + 1}`);
      li.querySelector('[data-action="remove"]')?.setAttribute('aria-label', `Remove ${this.options.label.toLowerCase()} ${i + 1}`);
    });
  }
}
