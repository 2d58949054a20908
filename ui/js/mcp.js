// MCP: the approval card of a call to a server's tool. Everything the server said is shown as
// its claim (text only, never markup): Mandate cannot see, check or undo what the call does.

import { h } from './dom.js';

/** @typedef {Extract<import('./protocol').ApprovalDetail, { kind: 'mcp_call' }>} McpCall */

/** @param {McpCall} d */
export function describeMcpCall(d) {
  return `call ${d.tool} of MCP server ${d.server}`;
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
      h('p', { class: 'small', text: 'This acts outside your files: Mandate records that it ran, but cannot show, check or undo what it does.' })));
}
