// MCP: the approval card of a call to a server's tool, and the servers in Settings. Everything the server said is shown as
// its claim (text only, never markup): Mandate cannot see, check or undo what the call does beyond the workspace.

import { ask } from './ipc.js';
import { confirmAction } from './confirm.js';
import { byId, errorText, h, setMessage } from './dom.js';

/** @typedef {Extract<import('./protocol').ApprovalDetail, { kind: 'mcp_call' }>} McpCall */

/** @param {McpCall} d */
export function describeMcpCall(d) {
  return `call ${d.tool} of MCP server ${d.server}${d.unconfined ? ' (unconfined)' : ''}`;
}

/**
 * @param {HTMLElement} el
 * @param {McpCall} d
 */
export function mcpCallBody(el, d) {
  const a = d.annotations;
  /** @type {[string, boolean | null][]} */
  const hints = [['read-only', a.read_only], ['destructive', a.destructive], ['idempotent', a.idempotent], ['open world', a.open_world]];
  const claimed = hints.filter(([, v]) => v !== null).map(([name, v]) => `${v ? '' : 'not '}${name}`);
  el.append(
    h('p', { class: 'small' },
      h('span', { class: 'muted', text: 'Server ' }), h('code', { text: d.server }),
      h('span', { class: 'muted', text: d.source === 'project' ? ' (from the workspace’s .mcp.json)' : ' (from Settings)' }),
      h('span', { class: 'muted', text: ' · tool ' }), h('code', { text: d.tool })),
    h('blockquote', { class: 'mcp-description small', hidden: !d.description, text: d.description }),
    h('p', { class: 'muted small', text: claimed.length ? `The server claims: ${claimed.join(', ')}.` : 'The server makes no claim about this tool.' }),
    h('pre', { class: 'command', tabindex: '0', 'aria-label': 'Arguments' }, h('code', { text: d.arguments })),
    h('div', { class: 'danger-box' },
      d.unconfined ? h('p', { class: 'small mcp-unconfined' },
        h('span', { class: 'tag tag-danger', text: 'unconfined' }), ' ',
        'This server runs outside any confinement (you allowed it, or this machine offers none): the call can read and write anything you can. What it changes in the workspace is found after the call, recorded under the intent when the intent owns it and undone otherwise; what it does elsewhere (your other files, the network) Mandate cannot see or undo. That is why it asks, even for a tool the server calls read-only.') : null,
      h('p', { class: 'small', text: d.unconfined ? 'Approve only what you would run yourself.' : d.writes_workspace
        ? 'You allowed this server to write in the workspace: what the call changes there is found, recorded under the intent when it owns it, and undone otherwise. What it does elsewhere (the network) Mandate cannot show, check or undo.'
        : 'It cannot write in the workspace. Mandate records that it ran, but cannot show, check or undo what it does elsewhere (over the network).' })));
}

// ---- Settings: the servers, their status and tools, consent, trust, secrets ------------------

/** @typedef {import('./protocol').McpOverview} McpOverview */
/** @typedef {import('./protocol').McpServerView} McpServerView */
/** @typedef {import('./protocol').Request} Request */


const STATUS = {
  stopped: 'Stopped', needs_consent: 'Needs your consent', disabled: 'Disabled', invalid: 'Invalid',
  starting: 'Starting…', ready: 'Ready', restarting: 'Restarting…', failed: 'Failed',
};

/** Wires the MCP section; the servers are listed (and started) when Settings open. */
export function initMcpSettings() {
  document.querySelector('nav button[data-view="settings"]')?.addEventListener('click', () => {
    send({ type: 'list_mcp_servers' });
  });
  byId('mcp-add-form', HTMLFormElement).addEventListener('submit', (ev) => {
    ev.preventDefault();
    addServer();
  });
}

/**
 * Sends a request whose reply is the servers, and shows them (or the error, after `undo`).
 * @param {Request} req
 * @param {() => void} [undo]
 */
async function send(req, undo) {
  try {
    const { overview } = await ask(req, 'mcp_servers');
    setMessage(byId('mcp-error'), null);
    renderMcpServers(overview);
  } catch (e) {
    undo?.();
    setMessage(byId('mcp-error'), errorText(e));
  }
}

function addServer() {
  const value = (/** @type {string} */ id) => byId(id, HTMLInputElement).value.trim();
  const name = value('mcp-add-name');
  const target = value('mcp-add-target');
  const args = byId('mcp-add-args', HTMLTextAreaElement).value.split('\n').map((a) => a.trim()).filter(Boolean);
  /** @type {import('./protocol').McpServerInput} */
  const server = byId('mcp-add-type', HTMLSelectElement).value === 'http'
    ? { type: 'http', url: target, headers: [], startup_timeout_sec: null, tool_timeout_sec: null }
    : { type: 'stdio', command: target, args, env: [], startup_timeout_sec: null, tool_timeout_sec: null };
  send({ type: 'save_mcp_server', name, server });
}

/** @param {McpOverview} overview */
export function renderMcpServers(overview) {
  byId('mcp-problems').replaceChildren(...overview.problems.map((p) => h('p', { class: 'inline-error', text: p })));
  const list = byId('mcp-servers');
  list.replaceChildren(...overview.servers.map(serverItem));
  byId('mcp-empty').hidden = overview.servers.length > 0;
}

/**
 * The person's consent to run a stdio server outside any confinement: asked with a warning,
 * taken back at once.
 * @param {McpServerView} s
 * @returns {HTMLElement[]}
 */
function unconfinedControl(s) {
  const box = h('input', { type: 'checkbox', id: `mcp-unconfined-${s.name}`, checked: s.runs_unconfined });
  box.addEventListener('change', async () => {
    const request = () => send({
      type: 'set_mcp_unconfined', name: s.name, definition_hash: s.definition_hash, allowed: box.checked,
    }, () => { box.checked = !box.checked; });
    if (!box.checked) return request();
    const ok = await confirmAction({
      title: `Run ${s.name} unconfined?`,
      message: 'It will run outside any sandbox: it can read, change and delete anything you can — your keys and credentials, other projects, Mandate’s own data — and Mandate cannot see or undo what it does outside this workspace. In the workspace it runs only during its calls: what each call changes there is recorded under the selected intent when the intent owns it, and undone otherwise. Each of its calls will wait for your approval. Allow this only for a program you trust; a change to its definition or to the code it runs takes it back.',
      confirmLabel: 'Run unconfined',
    });
    if (ok) return request();
    box.checked = false;
  });
  /** @type {HTMLElement[]} */
  const out = [h('div', { class: 'check mcp-unconfined-toggle' }, box,
    h('label', { for: `mcp-unconfined-${s.name}`, text: 'Run it unconfined (no sandbox; every call asks you)' }))];
  const consent = s.unconfined;
  if (consent.state === 'stale') {
    out.push(h('p', { class: 'inline-error mcp-grant', text: `Your consent to run it unconfined is stale and not used: ${consent.reason}. Tick the box to allow the code it runs now.` }));
  } else if (consent.state === 'refused') {
    out.push(h('p', { class: 'inline-error mcp-grant', text: `It cannot be allowed to run unconfined: ${consent.reason}.` }));
  }
  return out;
}

/** @param {McpServerView} s */
function serverItem(s) {
  const button = (/** @type {string} */ text, cls = '') =>
    h('button', { type: 'button', class: cls, 'data-mcp-action': text }, text);
  const item = h('li', { class: 'mcp-server', 'data-server': s.name, 'data-status': s.status },
    h('p', null,
      h('strong', { text: s.name }), ' ',
      h('span', { class: 'tag', text: s.source === 'project' ? '.mcp.json' : 'Settings' }), ' ',
      h('span', { class: 'tag mcp-status', text: STATUS[s.status] })),
    s.target ? h('pre', { class: 'command' }, h('code', { text: s.target })) : null,
    ...s.variables.map((v) => h('p', { class: 'small' }, h('code', { text: `${v.name}=${v.value}` }))),
    s.confinement ? h('p', { class: 'small mcp-confinement', text: `Runs ${s.confinement}.` }) : null,
    s.error ? h('p', { class: 'inline-error', text: s.error }) : null);
  /** @type {[HTMLElement, Request][]} */
  const actions = [];
  if (s.status === 'needs_consent') {
    actions.push([button('Allow it to run', 'primary'), { type: 'grant_mcp_consent', name: s.name, definition_hash: s.definition_hash }]);
  } else if (s.source === 'project' && s.status !== 'invalid') {
    actions.push([button('Stop allowing it'), { type: 'revoke_mcp_consent', name: s.name }]);
  }
  if (s.status !== 'invalid' && s.status !== 'needs_consent') {
    actions.push([button('Restart'), { type: 'restart_mcp_server', name: s.name }]);
  }
  if (s.source === 'settings' && s.status !== 'invalid') {
    actions.push([button('Remove', 'danger'), { type: 'remove_mcp_server', name: s.name }]);
  }
  for (const [el, req] of actions) el.addEventListener('click', () => send(req));
  if (s.status !== 'invalid') {
    const trust = h('input', { type: 'checkbox', id: `mcp-trust-${s.name}`, checked: s.trusts_read_only_hints });
    trust.addEventListener('change', () => send({ type: 'set_mcp_trust', name: s.name, trusted: trust.checked }));
    item.append(h('div', { class: 'check' }, trust,
      h('label', { for: `mcp-trust-${s.name}`, text: 'Believe its read-only claims (otherwise every tool asks)' })));
  }
  if (s.transport === 'stdio' && s.status !== 'invalid') {
    const write = h('input', { type: 'checkbox', id: `mcp-write-${s.name}`, checked: s.may_write_workspace });
    write.addEventListener('change', () => send({
      type: 'set_mcp_workspace_write', name: s.name, definition_hash: s.definition_hash, allowed: write.checked,
    }, () => { write.checked = !write.checked; }));
    item.append(h('div', { class: 'check' }, write,
      h('label', { for: `mcp-write-${s.name}`, text: 'May write in this workspace (only during a call; changes outside the intent are undone)' })));
    const grant = s.write_grant;
    if (grant.state === 'stale') {
      item.append(h('p', { class: 'inline-error mcp-grant', text: `Your grant to write in the workspace is stale and not used: ${grant.reason}. Tick the box to allow the code it runs now.` }));
    } else if (grant.state === 'refused') {
      item.append(h('p', { class: 'inline-error mcp-grant', text: `It cannot be allowed to write in this workspace: ${grant.reason}.` }));
    }
    item.append(...unconfinedControl(s));
  }
  for (const secret of s.secrets) {
    const field = h('input', { type: 'password', autocomplete: 'off', 'aria-label': `Value of ${secret.name}` });
    const store = h('button', { type: 'button', text: 'Store' });
    store.addEventListener('click', () => {
      const value = field.value;
      field.value = '';
      send({ type: 'set_mcp_secret', server: s.name, name: secret.name, value });
    });
    item.append(h('div', { class: 'inline-controls small' },
      h('span', { text: `Secret ${secret.name}: ${secret.set ? 'stored' : 'not set'}` }), field, store));
  }
  if (s.tools.length) {
    item.append(h('ul', { class: 'mcp-tools small' }, ...s.tools.map((t) => h('li', null,
      h('code', { text: t.model_name || t.tool }), ' ',
      h('span', { class: 'muted', text: t.hidden ? `hidden: ${t.hidden}` : t.runs_as_read ? 'read (the server declares it read-only)' : 'asks you, under an intent' })))));
  }
  item.append(h('div', { class: 'form-actions' }, ...actions.map(([el]) => el)));
  return item;
}
