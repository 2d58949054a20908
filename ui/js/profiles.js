// Provider profiles: in Settings, which profile the provider card edits (a new one, its name,
// whether new tasks use it, its removal, and the key held back when it points at another
// server); beside the message box, which profile a new task runs on. Keys never reach the
// page: the host says only whether one is set, and for which origin it was given.

import { ask } from './ipc.js';
import { byId, errorText, h, setMessage } from './dom.js';
import { store } from './store.js';
import { confirmAction } from './confirm.js';
import { newTaskMode } from './modes.js';

/** @typedef {import('./protocol').SettingsView} SettingsView */
/** @typedef {import('./protocol').ProfileView} ProfileView */

/** The value of the "new profile" option. */
const NEW = '';
/** The profile the provider card edits (null: the default one, until the person picks). */
let edited = /** @type {string | null} */ (null);
/** The profile the person picked for the next new task (null: its mode's, else the default one). */
let nextProfile = /** @type {string | null} */ (null);
/** The mode `nextProfile` was picked under: another mode brings its own profile back. */
let pickedUnder = /** @type {string | null} */ (null);

const select = (/** @type {string} */ id) => byId(id, HTMLSelectElement);
const input = (/** @type {string} */ id) => byId(id, HTMLInputElement);

/** The id a name makes, as the host would (`My Ollama` → `my-ollama`), made unique. @param {string} name */
function idFor(name) {
  const base = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 36) || 'profile';
  const taken = new Set((store.settings?.profiles ?? []).map((p) => p.profile.id));
  let id = base;
  for (let n = 2; taken.has(id); n += 1) id = `${base}-${n}`;
  return id;
}

/** @returns {ProfileView | undefined} */
export function editedView() {
  const s = store.settings;
  if (!s) return undefined;
  const id = edited ?? s.default_profile;
  return s.profiles.find((p) => p.profile.id === id);
}

/** What the save request says of profiles: which one the card edits, its name, the default. */
export function profileFields() {
  const view = editedView();
  const name = input('settings-profile-name').value.trim();
  const id = view ? view.profile.id : idFor(name);
  return {
    profile: id,
    profile_name: name || undefined,
    default_profile: input('settings-profile-default').checked ? id : undefined,
  };
}

/**
 * Fills the profile controls; `fillCard` puts a profile's provider fields in the card.
 * @param {SettingsView} s
 * @param {(p: import('./protocol').ProviderProfile | null) => void} fillCard
 */
export function fillProfiles(s, fillCard) {
  if (edited !== null && edited !== NEW && !s.profiles.some((p) => p.profile.id === edited)) edited = null;
  const picker = select('settings-profile');
  picker.replaceChildren(
    ...s.profiles.map((p) => h('option', { value: p.profile.id, text: p.profile.id === s.default_profile ? `${p.profile.name} (default)` : p.profile.name })),
    h('option', { value: NEW, text: 'New profile…' }),
  );
  picker.value = edited ?? s.default_profile;
  const view = editedView();
  input('settings-profile-name').value = edited === NEW ? '' : (view?.profile.name ?? '');
  input('settings-profile-default').checked = edited !== NEW && (view?.profile.id ?? '') === s.default_profile;
  byId('settings-profile-delete', HTMLButtonElement).disabled = edited === NEW || s.profiles.length < 2;
  fillCard(edited === NEW ? null : (view?.profile ?? null));
  showKey(s);
  renderProfilePicker();
}

/** The key line for the profile the card edits, and the key held back for another origin. */
function showKey(/** @type {SettingsView} */ s) {
  const view = edited === NEW ? undefined : editedView();
  const status = byId('settings-key-status');
  const isDefault = view?.profile.id === s.default_profile;
  const set = view ? (isDefault ? s.api_key_set : view.api_key_set) : false;
  status.dataset.set = String(set);
  status.textContent = !view
    ? 'Save the new profile first, then give it its key.'
    : set
      ? `Key set for ${view.profile.name} (${isDefault ? s.api_key_source : 'keyring'}), sent only to ${origin(view.profile.base_url)}.`
      : `No key for ${view.profile.name}.`;
  const held = byId('settings-key-elsewhere');
  held.hidden = !view?.key_elsewhere;
  if (view?.key_elsewhere) {
    byId('settings-key-elsewhere-text').textContent = `The key of ${view.profile.name} was given for ${view.key_elsewhere}; the profile now points at ${origin(view.profile.base_url)}. It is not sent there until you say so.`;
  }
}

/** @param {string} url */
function origin(url) {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/**
 * Wires the controls; `onPick` refills the card when another profile is picked, `onSettings`
 * shows the settings the host answers with.
 * @param {() => void} onPick
 * @param {(s: SettingsView) => void} onSettings
 */
export function initProfiles(onPick, onSettings) {
  select('settings-profile').addEventListener('change', () => {
    edited = select('settings-profile').value;
    onPick();
  });
  byId('settings-profile-delete').addEventListener('click', async () => {
    const view = editedView();
    if (!view) return;
    const ok = await confirmAction({
      title: `Delete the ${view.profile.name} profile?`,
      message: 'Its key is removed from the keyring. Tasks that ran on it keep their history and run on the default profile.',
    });
    if (!ok) return;
    try {
      edited = null;
      onSettings((await ask({ type: 'delete_profile', profile: view.profile.id }, 'settings')).settings);
    } catch (e) {
      setMessage(byId('settings-error'), errorText(e));
    }
  });
  byId('settings-key-move').addEventListener('click', async () => {
    const view = editedView();
    if (!view?.key_elsewhere) return;
    // Mandate asks in a dialog of the desktop's own (the page cannot answer for the person).
    try {
      onSettings((await ask({ type: 'move_profile_key', profile: view.profile.id }, 'settings')).settings);
    } catch (e) {
      setMessage(byId('settings-error'), errorText(e));
    }
  });
  const picker = select('profile-picker');
  picker.addEventListener('change', () => {
    nextProfile = picker.value || null;
    pickedUnder = newTaskMode();
  });
}

/** The profile the key buttons act on (undefined: the default one). */
export function keyProfile() {
  return editedView()?.profile.id;
}

/** The profile a new task runs on: the one picked, else the one Settings name for its mode. */
export function newTaskProfile() {
  const mode = newTaskMode();
  if (nextProfile && pickedUnder !== mode) nextProfile = null;
  return nextProfile ?? store.settings?.mode_profiles[mode] ?? store.settings?.default_profile ?? undefined;
}

/**
 * Settings → Profiles by mode: for each mode, the profile its tasks and subtasks run on.
 * @param {SettingsView} s
 */
export function fillModeProfiles(s) {
  const list = byId('settings-mode-profiles');
  list.replaceChildren(...store.modes.map((m) => {
    const id = `settings-mode-profile-${m.slug}`;
    const choice = h('select', { id, 'data-mode': m.slug },
      h('option', { value: '', text: 'The task’s profile' }),
      ...s.profiles.map((p) => h('option', { value: p.profile.id, text: p.profile.name })));
    /** @type {HTMLSelectElement} */ (choice).value = s.mode_profiles[m.slug] ?? '';
    return h('div', { class: 'field mode-profile' }, h('label', { for: id, text: m.name }), choice);
  }));
}

/** What Settings → Profiles by mode says: each mode that names a profile. */
export function modeProfileFields() {
  /** @type {Record<string, string>} */
  const chosen = {};
  for (const choice of byId('settings-mode-profiles').querySelectorAll('select[data-mode]')) {
    const { value, dataset } = /** @type {HTMLSelectElement} */ (choice);
    if (value && dataset.mode) chosen[dataset.mode] = value;
  }
  return chosen;
}

/** The picker beside the message box: the profiles, the next new task's selected. */
export function renderProfilePicker() {
  const s = store.settings;
  const picker = select('profile-picker');
  if (!s) return;
  if (nextProfile && !s.profiles.some((p) => p.profile.id === nextProfile)) nextProfile = null;
  picker.replaceChildren(...s.profiles.map((p) => h('option', {
    value: p.profile.id,
    text: p.profile.name,
    title: `${p.profile.model} at ${origin(p.profile.base_url)}`,
  })));
  picker.value = newTaskProfile() ?? '';
}
