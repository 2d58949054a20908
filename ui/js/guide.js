// A first run that guides: with no model provider, the empty chat says so and offers one inline
// (servers found on this machine, or a preset with a key); with no intent, it offers to create
// the first one in the intents editor (live glob preview included).

import { ask } from './ipc.js';
import { byId, closest, errorText, h, setMessage } from './dom.js';
import { listen, store } from './store.js';
import { startFirstIntent } from './intents.js';

/** @typedef {import('./protocol').LocalServer} LocalServer */
/** @typedef {import('./protocol').ProviderKind} ProviderKind */

/** @type {Record<string, { provider: ProviderKind, base_url: string, model: string }>} */
const KEY_PRESETS = {
  openai: { provider: 'openai', base_url: 'https://api.openai.com/v1', model: 'gpt-4.1-mini' },
  anthropic: { provider: 'anthropic', base_url: 'https://api.anthropic.com', model: 'claude-sonnet-4-5' },
  openrouter: { provider: 'openai', base_url: 'https://openrouter.ai/api/v1', model: 'openai/gpt-4.1-mini' },
};

/** Servers found, by index in the list on screen. @type {LocalServer[]} */
let servers = [];
let looked = false;
let lookSeq = 0;

/** @param {{ showView: (view: 'chat' | 'intents') => void }} options */
export function initGuide(options) {
  listen('settings', render);
  listen('intents', render);
  byId('guide-local-retry').addEventListener('click', lookForServers);
  byId('guide-local').addEventListener('click', (ev) => {
    const index = closest(ev.target, '[data-action="use-server"]')?.dataset.index;
    if (index !== undefined) useServer(Number(index));
  });
  const preset = byId('guide-preset', HTMLSelectElement);
  preset.addEventListener('change', () => {
    byId('guide-model', HTMLInputElement).value = KEY_PRESETS[preset.value]?.model ?? '';
  });
  byId('guide-model', HTMLInputElement).value = KEY_PRESETS.openai.model;
  byId('guide-key-save').addEventListener('click', useKey);
  byId('guide-key').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') {
      ev.preventDefault();
      useKey();
    }
  });
  byId('guide-intent-create').addEventListener('click', () => {
    options.showView('intents');
    startFirstIntent();
  });
  render();
}

function render() {
  const needsProvider = store.settings?.needs_key === true;
  const needsIntent = store.intents.intents.length === 0 && store.intents.error === null && store.settings !== null;
  byId('guide-provider').hidden = !needsProvider;
  byId('guide-intent').hidden = !needsIntent;
  byId('guide').hidden = !(needsProvider || needsIntent);
  if (needsProvider && !looked) lookForServers();
}

async function lookForServers() {
  looked = true;
  const seq = ++lookSeq;
  const status = byId('guide-local-status');
  const retry = byId('guide-local-retry', HTMLButtonElement);
  status.textContent = 'Looking for Ollama, LM Studio and llama.cpp on their usual ports…';
  retry.disabled = true;
  try {
    const reply = await ask({ type: 'discover_local_servers' }, 'local_servers');
    if (seq !== lookSeq) return;
    servers = reply.servers;
    byId('guide-local').replaceChildren(...servers.map(serverItem));
    status.textContent = servers.length
      ? `Found ${servers.length === 1 ? 'a model server' : `${servers.length} model servers`}: no key needed.`
      : 'None found (Ollama on port 11434, LM Studio on 1234 and llama.cpp on 8080 were asked). Start one and look again, or use a key below.';
  } catch (e) {
    if (seq !== lookSeq) return;
    status.textContent = `Could not look for servers: ${errorText(e)}`;
  } finally {
    if (seq === lookSeq) retry.disabled = false;
  }
}

/**
 * @param {LocalServer} server
 * @param {number} index
 */
function serverItem(server, index) {
  const selectId = `guide-server-model-${index}`;
  const models = server.models.length ? server.models : [''];
  return h('li', { class: 'guide-server', 'data-preset': server.preset },
    h('span', { class: 'guide-server-name', text: server.label }),
    h('code', { class: 'muted small', text: server.base_url }),
    h('label', { for: selectId, class: 'visually-hidden', text: `Model on ${server.label}` }),
    h('select', { id: selectId, class: 'guide-server-model' },
      ...models.map((m) => h('option', { value: m, text: m || 'no model loaded' }))),
    h('button', { type: 'button', class: 'primary', 'data-action': 'use-server', 'data-index': String(index), disabled: server.models.length === 0, text: `Use ${server.label}` }));
}

/**
 * Saves provider settings, keeping everything else as it is.
 * @param {{ provider: ProviderKind, preset: string, base_url: string, model: string }} p
 */
async function saveProvider(p) {
  const s = store.settings;
  if (!s) throw { code: 'internal', message: 'The settings are not loaded yet.' };
  await ask({
    type: 'save_settings',
    settings: { ...p, custom_instructions: s.custom_instructions, approval: s.approval, editor: s.editor },
  }, 'settings');
}

/** @param {number} index */
async function useServer(index) {
  const server = servers[index];
  const item = byId('guide-local').children[index];
  const select = item?.querySelector('select');
  if (!server || !(select instanceof HTMLSelectElement)) return;
  const error = byId('guide-provider-error');
  setMessage(error, null);
  try {
    // The settings_changed event that follows hides this step.
    await saveProvider({ provider: 'openai', preset: server.preset, base_url: server.base_url, model: select.value });
  } catch (e) {
    setMessage(error, errorText(e));
  }
}

async function useKey() {
  const field = byId('guide-key', HTMLInputElement);
  const error = byId('guide-provider-error');
  setMessage(error, null);
  const presetId = byId('guide-preset', HTMLSelectElement).value;
  const preset = KEY_PRESETS[presetId];
  const model = byId('guide-model', HTMLInputElement).value.trim();
  if (!preset) return;
  if (!field.value.trim()) {
    setMessage(error, 'Paste the API key first.');
    field.focus();
    return;
  }
  if (!model) {
    setMessage(error, 'Name a model.');
    byId('guide-model').focus();
    return;
  }
  const key = field.value;
  // The key leaves the page at once, even if saving fails.
  field.value = '';
  const button = byId('guide-key-save', HTMLButtonElement);
  button.disabled = true;
  try {
    await saveProvider({ provider: preset.provider, preset: presetId, base_url: preset.base_url, model });
    await ask({ type: 'set_api_key', provider: preset.provider, api_key: key }, 'settings');
  } catch (e) {
    setMessage(error, `Not saved: ${errorText(e)}`);
  } finally {
    button.disabled = false;
  }
}
