// Settings' "Context window" section: the condensing threshold and per-model figures (window,
// output limit, thinking budget). The host checks the figures when Settings are saved.

import { byId, closest, h } from './dom.js';
import { store } from './store.js';

/** @typedef {import('./protocol').ContextSettings} ContextSettings */
/** @typedef {import('./protocol').ModelOverride} ModelOverride */

/** The figures a row holds, in order: the ModelOverride key and how the field is named. */
const FIGURES = /** @type {const} */ ([
  ['context_window', 'Context window'],
  ['max_output', 'Max output'],
  ['thinking_budget', 'Thinking budget'],
]);

/** A row's prices, in US dollars per million tokens: the ModelPrices key and its name. */
const PRICES = /** @type {const} */ ([
  ['input', 'Input price'],
  ['output', 'Output price'],
  ['cache_read', 'Cache read price'],
  ['cache_write', 'Cache write price'],
]);

/** No figure the host accepts is larger: every one is at most the largest window. */
const MAX_TOKENS = 10_000_000;

/** @type {() => void} */
let changed = () => {};

const rowsBody = () => byId('context-models-rows');
const threshold = () => byId('settings-context-threshold', HTMLInputElement);

/**
 * Wires the section; `onChange` is told of edits that fire no input event (rows added or removed).
 * @param {() => void} onChange
 */
export function initContextSettings(onChange) {
  changed = onChange;
  byId('context-add-model').addEventListener('click', () => {
    addRow({ model: '', context_window: null, max_output: null, thinking_budget: null }).focus();
    changed();
  });
  byId('context-add-current').addEventListener('click', addCurrentModel);
  rowsBody().addEventListener('click', (ev) => {
    const button = closest(ev.target, '[data-action="remove"]');
    const row = button && closest(button, 'tr');
    if (!row) return;
    const next = row.nextElementSibling ?? row.previousElementSibling;
    row.remove();
    showRows();
    // Focus stays in the list (or on the add button when it is empty).
    const target = next?.querySelector('input') ?? byId('context-add-model');
    if (target instanceof HTMLElement) target.focus();
    changed();
  });
  rowsBody().addEventListener('input', (ev) => {
    const field = ev.target;
    if (!(field instanceof HTMLInputElement)) return;
    field.removeAttribute('aria-invalid');
    const row = closest(field, 'tr');
    if (row && field.dataset.field === 'model') nameRow(row);
  });
  threshold().addEventListener('input', () => threshold().removeAttribute('aria-invalid'));
}

/**
 * Shows the saved context settings (replacing what the section held).
 * @param {ContextSettings} context
 */
export function fillContext(context) {
  threshold().value = String(context.threshold_percent);
  threshold().removeAttribute('aria-invalid');
  rowsBody().replaceChildren();
  for (const m of context.models) addRow(m);
  showRows();
}

/** The model the form names now: `provider/model` (the saved one while the form has none). */
function currentModel() {
  const provider = byId('settings-provider', HTMLSelectElement).value || store.settings?.provider || '';
  const model = byId('settings-model', HTMLInputElement).value.trim() || store.settings?.model || '';
  return provider && model ? `${provider}/${model}` : '';
}

function addCurrentModel() {
  const name = currentModel();
  if (!name) {
    byId('settings-model', HTMLInputElement).focus();
    return;
  }
  const existing = rows().find((r) => modelInput(r).value.trim() === name);
  if (existing) {
    // Already listed: go to its figures instead of listing it twice.
    figureInput(existing, 'context_window').focus();
    return;
  }
  const row = addRow({ model: name, context_window: null, max_output: null, thinking_budget: null });
  figureInput(row, 'context_window').focus();
  changed();
}

/**
 * Appends a row for `m` and returns its model field.
 * @param {ModelOverride} m
 * @returns {HTMLTableRowElement}
 */
function addRow(m) {
  const model = h('input', {
    type: 'text', class: 'context-model', 'data-field': 'model', value: m.model,
    placeholder: 'provider/model', autocomplete: 'off', spellcheck: 'false',
  });
  const cells = [h('td', null, model)];
  for (const [key] of FIGURES) {
    const value = m[key];
    cells.push(h('td', null, h('input', {
      type: 'number', class: 'context-figure', 'data-field': key, min: 0, step: 1, inputmode: 'numeric',
      autocomplete: 'off', placeholder: key === 'thinking_budget' ? 'off' : 'auto',
      value: value === null || value === undefined ? '' : String(value),
    })));
  }
  for (const [key] of PRICES) {
    const value = m.prices ? m.prices[key] : null;
    cells.push(h('td', null, h('input', {
      type: 'number', class: 'context-price', 'data-price': key, min: 0, step: 0.01, inputmode: 'decimal',
      autocomplete: 'off', placeholder: 'table',
      value: value === null || value === undefined ? '' : String(value),
    })));
  }
  cells.push(h('td', null, h('button', { type: 'button', class: 'icon-button', 'data-action': 'remove', text: '✕' })));
  const row = h('tr', { class: 'context-model-row' }, ...cells);
  rowsBody().append(row);
  nameRow(row);
  showRows();
  return row;
}

/**
 * Gives each control of a row a name that says which model it is for.
 * @param {Element} row
 */
function nameRow(row) {
  const index = rows().indexOf(/** @type {HTMLTableRowElement} */ (row)) + 1;
  const name = modelInput(row).value.trim() || `row ${index}`;
  modelInput(row).setAttribute('aria-label', `Model, row ${index} (provider/model)`);
  for (const [key, label] of FIGURES) {
    figureInput(row, key).setAttribute('aria-label', `${label} of ${name} (tokens)`);
  }
  for (const [key, label] of PRICES) {
    priceInput(row, key).setAttribute('aria-label', `${label} of ${name} (US$ per million tokens)`);
  }
  const remove = row.querySelector('[data-action="remove"]');
  if (remove) {
    remove.setAttribute('aria-label', `Remove ${name}`);
    remove.setAttribute('title', `Remove ${name}`);
  }
}

/** The table shows only with rows; row numbers in names follow the order. */
function showRows() {
  const all = rows();
  byId('context-models').hidden = all.length === 0;
  byId('context-models-empty').hidden = all.length > 0;
  for (const row of all) nameRow(row);
}

/** @returns {HTMLTableRowElement[]} */
function rows() {
  return /** @type {HTMLTableRowElement[]} */ ([...rowsBody().querySelectorAll('tr')]);
}

/** @param {Element} row */
function modelInput(row) {
  return /** @type {HTMLInputElement} */ (row.querySelector('input[data-field="model"]'));
}

/**
 * @param {Element} row
 * @param {string} key
 */
function figureInput(row, key) {
  return /** @type {HTMLInputElement} */ (row.querySelector(`input[data-field="${key}"]`));
}

/**
 * @param {Element} row
 * @param {string} key
 */
function priceInput(row, key) {
  return /** @type {HTMLInputElement} */ (row.querySelector(`input[data-price="${key}"]`));
}

/**
 * A row's prices: none, both main prices (cache ones optional), or what is wrong.
 * @param {Element} row
 * @param {string} model
 * @returns {{ prices: import('./protocol').ModelPrices | null } | { error: string, control: HTMLInputElement }}
 */
function readPrices(row, model) {
  /** @type {Record<string, number | null>} */
  const got = {};
  for (const [key, label] of PRICES) {
    const field = priceInput(row, key);
    const raw = field.value.trim();
    const value = Number(raw);
    if (field.validity.badInput || (raw !== '' && (!Number.isFinite(value) || value < 0 || value > 10_000))) {
      return invalid(field, `${label} of ${model || 'a model'}: US dollars per million tokens (0 to 10,000), or empty.`);
    }
    got[key] = raw === '' ? null : value;
  }
  if (Object.values(got).every((v) => v === null)) return { prices: null };
  if (got.input === null || got.output === null) {
    return invalid(priceInput(row, got.input === null ? 'input' : 'output'), `Prices of ${model || 'a model'}: give both the input and the output price (the cache prices may stay empty).`);
  }
  return { prices: { input: got.input, output: got.output, cache_read: got.cache_read, cache_write: got.cache_write } };
}

/**
 * What the section says, as the host takes it; or what is wrong and where.
 * Only the shape is checked here (whole numbers); the host checks the ranges and says why.
 * @returns {{ context: ContextSettings } | { error: string, control: HTMLInputElement }}
 */
export function readContext() {
  for (const input of [threshold(), ...rowsBody().querySelectorAll('input')]) input.removeAttribute('aria-invalid');
  const text = threshold().value.trim();
  const percent = Number(text);
  if (text === '' || !Number.isInteger(percent) || percent < 10 || percent > 95) {
    return invalid(threshold(), 'Condense at: the threshold is a whole number from 10 to 95 (% of the usable input).');
  }
  /** @type {ModelOverride[]} */
  const models = [];
  for (const row of rows()) {
    const model = modelInput(row).value.trim();
    /** @type {ModelOverride} */
    const m = { model, context_window: null, max_output: null, thinking_budget: null };
    let any = false;
    for (const [key, label] of FIGURES) {
      const field = figureInput(row, key);
      // A number field holding something that is not a number reads as '' but is not empty.
      if (field.validity.badInput) return invalid(field, `${label} of ${model || 'a model'}: a whole number of tokens, or empty.`);
      const raw = field.value.trim();
      if (raw === '') continue;
      const value = Number(raw);
      if (!Number.isInteger(value) || value < 0 || value > MAX_TOKENS) {
        return invalid(field, `${label} of ${model || 'a model'}: a whole number of tokens up to 10,000,000, or empty.`);
      }
      m[key] = value;
      any = true;
    }
    const priced = readPrices(row, model);
    if ('error' in priced) return priced;
    if (priced.prices) {
      m.prices = priced.prices;
      any = true;
    }
    if (!model) {
      if (any) return invalid(modelInput(row), 'Name the model of each row as provider/model (e.g. openai/llama3.2), or remove the row.');
      continue; // an empty row is left out
    }
    if (!/^[^/\s]+\/\S/.test(model)) {
      return invalid(modelInput(row), `Model “${model}”: name it as provider/model, e.g. openai/llama3.2 or anthropic/claude-sonnet-4-5.`);
    }
    models.push(m);
  }
  return { context: { threshold_percent: percent, models } };
}

/**
 * @param {HTMLInputElement} control
 * @param {string} error
 */
function invalid(control, error) {
  control.setAttribute('aria-invalid', 'true');
  return { error, control };
}

/**
 * The control a host refusal is about, when the refusal names one of the section's figures
 * (e.g. "openai/x: a thinking budget is …"); it is marked invalid.
 * @param {string} message
 * @returns {HTMLInputElement | null}
 */
export function controlForRefusal(message) {
  const lower = message.toLowerCase();
  if (lower.includes('condensing threshold')) return invalid(threshold(), '').control;
  /** @type {Record<string, string>} */
  const words = { context_window: 'context window', max_output: 'output limit', thinking_budget: 'thinking budget' };
  for (const row of rows()) {
    const model = modelInput(row).value.trim();
    if (!model) continue;
    if (lower.includes(`\`${model.toLowerCase()}\``) && lower.includes('listed twice')) return invalid(modelInput(row), '').control;
    if (!lower.startsWith(`${model.toLowerCase()}:`)) continue;
    for (const [key, word] of Object.entries(words)) {
      if (lower.includes(word)) return invalid(figureInput(row, key), '').control;
    }
    return modelInput(row);
  }
  return null;
}
