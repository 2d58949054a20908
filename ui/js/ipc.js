// The bridge to the host: one `request` command and one event channel.

/** @typedef {import('./protocol').Request} Request */
/** @typedef {import('./protocol').Reply} Reply */
/** @typedef {import('./protocol').Event} HostEvent */
/** @typedef {import('./protocol').IpcError} IpcError */

/** @returns {import('./tauri').TauriCore} */
function core() {
  const tauri = window.__TAURI__;
  if (!tauri) {
    throw /** @type {IpcError} */ ({ code: 'internal', message: 'The connection to Mandate is not available. Restart the app.' });
  }
  return tauri.core;
}

/**
 * Normalises whatever the bridge rejected with into an IpcError.
 * @param {unknown} error
 * @returns {IpcError}
 */
function toIpcError(error) {
  if (error && typeof error === 'object' && 'message' in error && typeof error.message === 'string') {
    const code = 'code' in error && typeof error.code === 'string' ? error.code : 'internal';
    return /** @type {IpcError} */ ({ code, message: error.message });
  }
  if (typeof error === 'string' && error) return { code: 'internal', message: error };
  return { code: 'internal', message: 'Mandate did not answer as expected.' };
}

/**
 * Sends one request; the invoke body is the request itself.
 * @param {Request} req
 * @returns {Promise<Reply>}
 */
export async function request(req) {
  try {
    return await core().invoke('request', req);
  } catch (error) {
    throw toIpcError(error);
  }
}

/**
 * Sends a request whose reply must be of one kind, and returns it narrowed.
 * @template {Reply['type']} K
 * @param {Request} req
 * @param {K} type
 * @returns {Promise<Extract<Reply, { type: K }>>}
 */
export async function ask(req, type) {
  const reply = await request(req);
  if (reply.type !== type) {
    throw /** @type {IpcError} */ ({ code: 'internal', message: `Mandate answered with “${reply.type}” instead of “${type}”.` });
  }
  return /** @type {Extract<Reply, { type: K }>} */ (reply);
}

/**
 * Opens the event channel. Events arrive in order on `handler`.
 * @param {(event: HostEvent) => void} handler
 * @returns {Promise<void>}
 */
export async function subscribe(handler) {
  const { Channel, invoke } = core();
  /** @type {import('./tauri').TauriChannel<HostEvent>} */
  const channel = new Channel();
  channel.onmessage = handler;
  try {
    await invoke('subscribe', { channel });
  } catch (error) {
    throw toIpcError(error);
  }
}
