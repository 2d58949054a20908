// The Settings view: provider, model, approval policy, context window, instructions, and the API
// key (write-only).

import { ask } from './ipc.js';
import { byId, errorText, h, setMessage } from './dom.js';
import { emit, listen, store } from './store.js';
import { initMcpSettings } from './mcp.js';
import { controlForRefusal, fillContext, initContextSettings, readContext } from './contextsettings.js';
import { fillModeProfiles, fillProfiles, initProfiles, keyProfile, modeProfileFields, profileFields } from './profiles.js';

/** @typedef {import('./protocol').SettingsView} SettingsView */
/** @typedef {import('./protocol').ProviderKind} ProviderKind */

/** @type {Record<string, { provider: ProviderKind, base_url: string }>} */
const PRESETS = {
  anthropic: { provider: 'anthropic', base_url: 'https://api.anthropic.com' },
  openai: { provider: 'openai', base_url: 'https://api.openai.com/v1' },
  openrouter: { provider: 'openai', base_url: 'https://openrouter.ai/api/v1' },
  ollama: { provider: 'openai', base_url: 'http://localhost:11434/v1' },
  lmstudio: { provider: 'openai', base_url: 'http://localhost:1234/v1' },
  llamacpp: { provider: 'openai', base_url: 'http://localhost:8080/v1' },
};

let dirty = false;
/** Where #settings-error lives when no control claims it. */
let errorHome = /** @type {{ parent: Node, before: Node | null } | null} */ (null);

const input = (/** @type {string} */ id) => byId(id, HTMLInputElement);
const select = (/** @type {string} */ id) => byId(id, HTMLSelectElement);

export function initSettings() {
  const error = byId('settings-error');
  if (error.parentNode) errorHome = { parent: error.parentNode, before: error.nextSibling };

  const form = byId('settings-form', HTMLFormElement);
  const markDirty = (/** @type {Event} */ ev) => {
    if (ev.target === byId('settings-api-key')) return;
    dirty = true;
    setMessage(byId('settings-saved'), null);
  };
  form.addEventListener('input', markDirty);
  form.addEventListener('change', markDirty);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    save();
  });
  select('settings-preset').addEventListener('change', () => {
    const preset = PRESETS[select('settings-preset').value];
    // "custom" keeps whatever is there.
    if (preset) {
      select('settings-provider').value = preset.provider;
      input('settings-base-url').value = preset.base_url;
    }
    dirty = true;
  });
  byId('settings-fetch-models').addEventListener('click', fetchModels);
  byId('policy-check').addEventListener('click', () => checkCommand(input('policy-command').value));
  input('policy-command').addEventListener('keydown', (ev) => {
    // Enter checks the command, never submits the settings form.
    if (ev.key === 'Enter') {
      ev.preventDefault();
      checkCommand(input('policy-command').value);
    }
  });
  checkCommand('');
  initMcpSettings();
  // The modes are read after the settings may be: their list of profiles follows.
  listen('modes', () => {
    if (store.settings && !dirty) fillModeProfiles(store.settings);
  });
  initContextSettings(() => {
    dirty = true;
    setMessage(byId('settings-saved'), null);
  });
  initProfiles(() => {
    if (store.settings) fillProfiles(store.settings, fillCard);
    dirty = true;
  }, (s) => applySettings(s, true));
  // The page's HTML names no remote address; the example is set here.
  input('settings-embeddings-url').placeholder = 'e.g. http://127.0.0.1:11434/v1 (empty: off)';
  byId('settings-save-key').addEventListener('click', saveKey);
  byId('settings-clear-key').addEventListener('click', clearKey);
  input('settings-api-key').addEventListener('keydown', (ev) => {
    // Enter in the key field saves the key, never the whole form.
    if (ev.key === 'Enter') {
      ev.preventDefault();
      saveKey();
    }
  });
}

/**
 * Shows the settings; an edit in progress is kept unless `force` (after our own save).
 * @param {SettingsView} s
 * @param {boolean} [force]
 */
export function applySettings(s, force = false) {
  store.settings = s;
  emit('settings');
  setMessage(byId('settings-keyring-error'), s.keyring_error ? `The system keyring cannot be used: ${s.keyring_error}` : null);
  showConfinement(s.confinement);
  if (dirty && !force) return;
  dirty = false;
  fillProfiles(s, fillCard);
  fillEditors(s);
  input('settings-ask-writes').checked = s.approval.ask_before_writes;
  input('settings-ask-safe-commands').checked = s.approval.ask_before_safe_commands;
  input('settings-switch-modes').checked = s.approval.switch_modes_without_asking;
  input('settings-notifications').checked = s.notifications;
  fillModeProfiles(s);
  byId('settings-custom-instructions', HTMLTextAreaElement).value = s.custom_instructions;
  input('settings-max-cost').value = s.budget.max_cost_usd === null ? '' : String(s.budget.max_cost_usd);
  input('settings-max-tokens').value = s.budget.max_tokens === null ? '' : String(s.budget.max_tokens);
  fillContext(s.context);
  input('settings-embeddings-url').value = s.code_search.embeddings_base_url;
  input('settings-embeddings-model').value = s.code_search.embeddings_model;
}

/**
 * The provider card shows a profile (null: a new one, from the default's wire format).
 * @param {import('./protocol').ProviderProfile | null} p
 */
function fillCard(p) {
  const preset = select('settings-preset');
  const value = p?.preset ?? 'custom';
  preset.value = value;
  if (preset.value !== value) preset.value = 'custom';
  select('settings-provider').value = p?.provider ?? 'openai';
  input('settings-base-url').value = p?.base_url ?? '';
  input('settings-model').value = p?.model ?? '';
  byId('settings-models').replaceChildren();
}

/**
 * Which confinement commands run under, and what it does not stop; without one, a warning.
 * @param {import('./protocol').ConfinementView} c
 */
function showConfinement(c) {
  byId('confinement-summary').textContent = c.confined
    ? `Commands run confined by the kernel: ${c.summary}. They write only in the selected intent’s scope, a private temporary directory and build outputs, and reach the network only when you allow it on their approval card.`
    : 'Commands are not confined on this machine (no Landlock in the kernel).';
  setMessage(byId('confinement-warning'), c.confined ? null
    : 'Without confinement every command asks for your approval first, and once approved nothing else stops it: it runs with your rights, can change any of your files and reach the network.');
  const gaps = byId('confinement-gaps');
  gaps.replaceChildren(...c.gaps.map((g) => h('li', { text: g })));
  byId('confinement-gaps-label').hidden = c.gaps.length === 0;
}

/**
 * A cap typed in a number field: empty is no cap; anything else must be a positive number.
 * @param {string} id
 * @param {boolean} whole
 * @returns {number | null | string}  a string says what is wrong
 */
export function readCap(id, whole) {
  const text = input(id).value.trim();
  if (text === '') return null;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0 || (whole && !Number.isInteger(value))) {
    return whole ? 'A token cap is a whole number above 0 (or empty for no cap).' : 'A cost cap is an amount above 0 (or empty for no cap).';
  }
  return value;
}

/**
 * The editor choice: automatic (the first one found) or one editor, each marked found or not.
 * @param {SettingsView} s
 */
function fillEditors(s) {
  const first = s.editors.find((e) => e.detected);
  const options = [h('option', { value: 'auto', text: first ? `Automatic (${first.label}, detected)` : 'Automatic (no editor detected)' })];
  for (const e of s.editors) {
    options.push(h('option', { value: e.id, 'data-detected': String(e.detected), text: `${e.label}${e.detected ? ' (detected)' : ' (not found)'}` }));
  }
  const editor = select('settings-editor');
  editor.replaceChildren(...options);
  editor.value = s.editor;
}

/**
 * Shows an error next to the control that failed (one #settings-error, moved where it belongs).
 * @param {HTMLElement | null} near  a control; null puts it back above the Save button
 * @param {string | null} message
 */
function showError(near, message) {
  const error = byId('settings-error');
  const field = near?.closest('.field');
  if (field) field.append(error);
  else if (errorHome) errorHome.parent.insertBefore(error, errorHome.before);
  setMessage(error, message);
}

async function save() {
  const button = byId('settings-save', HTMLButtonElement);
  showError(null, null);
  const baseUrl = input('settings-base-url').value.trim();
  if (!/^https?:\/\/\S+$/i.test(baseUrl)) {
    showError(input('settings-base-url'), 'The base URL must start with http:// or https://.');
    input('settings-base-url').focus();
    return;
  }
  const maxCost = readCap('settings-max-cost', false);
  const maxTokens = readCap('settings-max-tokens', true);
  for (const [cap, id] of /** @type {const} */ ([[maxCost, 'settings-max-cost'], [maxTokens, 'settings-max-tokens']])) {
    if (typeof cap === 'string') {
      showError(input(id), cap);
      input(id).focus();
      return;
    }
  }
  const context = readContext();
  if ('error' in context) {
    showError(context.control, context.error);
    context.control.focus();
    return;
  }
  button.disabled = true;
  try {
    const { settings } = await ask({
      type: 'save_settings',
      settings: {
        provider: /** @type {ProviderKind} */ (select('settings-provider').value),
        preset: select('settings-preset').value,
        base_url: baseUrl,
        model: input('settings-model').value.trim(),
        custom_instructions: byId('settings-custom-instructions', HTMLTextAreaElement).value,
        editor: select('settings-editor').value || 'auto',
        approval: {
          ask_before_writes: input('settings-ask-writes').checked,
          ask_before_safe_commands: input('settings-ask-safe-commands').checked,
          switch_modes_without_asking: input('settings-switch-modes').checked,
        },
        budget: {
          max_cost_usd: /** @type {number | null} */ (maxCost),
          max_tokens: /** @type {number | null} */ (maxTokens),
        },
        context: context.context,
        ...profileFields(),
        mode_profiles: modeProfileFields(),
        notifications: input('settings-notifications').checked,
        code_search: {
          embeddings_base_url: input('settings-embeddings-url').value.trim(),
          embeddings_model: input('settings-embeddings-model').value.trim(),
        },
      },
    }, 'settings');
    applySettings(settings, true);
    setMessage(byId('settings-saved'), 'Saved.');
  } catch (e) {
    const message = errorText(e);
    // A refusal about one of the context figures is said next to it (the field is marked too).
    showError(controlForRefusal(message), message);
  } finally {
    button.disabled = false;
  }
}

async function fetchModels() {
  const button = byId('settings-fetch-models', HTMLButtonElement);
  const status = byId('settings-models-status');
  showError(null, null);
  button.disabled = true;
  status.textContent = 'Asking the provider…';
  try {
    const { models } = await ask({ type: 'list_models', profile: keyProfile() }, 'models');
    byId('settings-models').replaceChildren(...models.map((m) => h('option', { value: m })));
    status.textContent = models.length
      ? `${models.length} model${models.length === 1 ? '' : 's'} available: pick one in the Model field.${dirty ? ' (Listed with the saved settings.)' : ''}`
      : 'The provider did not list any model; type the model name.';
  } catch (e) {
    status.textContent = '';
    showError(button, `Could not fetch models: ${errorText(e)}`);
  } finally {
    button.disabled = false;
  }
}

async function saveKey() {
  const field = input('settings-api-key');
  const button = byId('settings-save-key', HTMLButtonElement);
  showError(null, null);
  if (!field.value.trim()) {
    showError(field, 'Paste a key first.');
    return;
  }
  const provider = /** @type {ProviderKind} */ (select('settings-provider').value);
  const apiKey = field.value;
  // The key leaves the page right away: nothing keeps it, even if saving fails.
  field.value = '';
  button.disabled = true;
  try {
    const { settings } = await ask({ type: 'set_api_key', provider, api_key: apiKey, profile: keyProfile() }, 'settings');
    // The key status line above now says where the key comes from.
    applySettings(settings);
  } catch (e) {
    showError(field, `The key was not saved: ${errorText(e)}`);
  } finally {
    button.disabled = false;
  }
}

async function clearKey() {
  const button = byId('settings-clear-key', HTMLButtonElement);
  showError(null, null);
  button.disabled = true;
  try {
    const provider = /** @type {ProviderKind} */ (select('settings-provider').value);
    const { settings } = await ask({ type: 'clear_api_key', provider, profile: keyProfile() }, 'settings');
    applySettings(settings);
  } catch (e) {
    showError(button, `The key was not removed: ${errorText(e)}`);
  } finally {
    button.disabled = false;
  }
}

/**
 * Shows where the command policy comes from and, for a command line, its verdict.
 * @param {string} command
 */
async function checkCommand(command) {
  const result = byId('policy-result');
  try {
    const { check } = await ask({ type: 'check_command', command }, 'command_check');
    byId('policy-source').textContent = check.source === 'built-in'
      ? 'In use: the built-in rules.'
      : `In use: ${check.source}.`;
    setMessage(byId('policy-error'), check.error ? `The policy file does not load, so commands are refused: ${check.error}` : null);
    result.replaceChildren();
    if (check.destructive === null) return;
    result.dataset.class = check.destructive ? 'destructive' : 'safe';
    result.append(h('strong', { text: check.destructive ? 'Destructive: always asks for approval.' : 'Safe: read-only.' }));
    if (check.reasons.length) result.append(h('ul', {}, ...check.reasons.map((r) => h('li', { text: r }))));
  } catch (e) {
    setMessage(byId('policy-error'), errorText(e));
  }
}
