// How full the model's context window is, in the task header: a meter of used against the
// window, with the threshold where Mandate condenses on its own marked on it.

import { formatTokens, h } from './dom.js';

/** @typedef {NonNullable<import('./protocol').TaskSummary['context']>} ContextView */

/** Where the window figure came from, in words (`default` is a guess, and says so). */
/** @type {Record<string, string>} */
const SOURCES = {
  settings: 'set in Settings',
  provider: 'reported by the provider',
  table: "from Mandate's table of known models",
  learned: "learned from the provider's error",
  default: 'assumed (the model is unknown: set its window in Settings)',
};

/** Used at or above this share of the threshold shows a warning. */
const NEAR = 0.9;

/** @param {number} n */
function short(n) {
  return formatTokens(n).replace(/\.0(?=[kM]$)/, '');
}

export class ContextGauge {
  constructor() {
    this.fill = h('span', { class: 'gauge-fill' });
    this.mark = h('span', { class: 'gauge-threshold', 'aria-hidden': 'true' });
    this.bar = h('span', {
      class: 'gauge-bar',
      role: 'meter',
      'aria-label': 'Context window',
      'aria-valuemin': '0',
    }, this.fill, this.mark);
    this.label = h('span', { class: 'gauge-text', 'aria-hidden': 'true' });
    this.el = h('span', { class: 'context-gauge', hidden: true }, this.bar, this.label);
  }

  /** @param {ContextView | null} context */
  update(context) {
    this.el.hidden = context === null;
    if (!context) return;
    const { used_tokens: used, window_tokens: win, usable_tokens: usable, threshold_tokens: threshold } = context;
    const share = win > 0 ? Math.min(1, used / win) : 0;
    const level = threshold > 0 && used > threshold ? 'over' : threshold > 0 && used >= threshold * NEAR ? 'near' : 'ok';
    this.el.dataset.level = level;
    this.fill.style.width = `${(share * 100).toFixed(1)}%`;
    this.mark.style.left = `${(win > 0 ? Math.min(1, threshold / win) * 100 : 100).toFixed(1)}%`;
    this.label.textContent = `${short(used)} / ${short(win)}`;
    this.bar.setAttribute('aria-valuemax', String(win));
    this.bar.setAttribute('aria-valuenow', String(Math.min(used, win)));
    const pct = Math.round(share * 100);
    const warning = level === 'over'
      ? ' Over the condensing threshold.'
      : level === 'near' ? ' Close to the condensing threshold.' : '';
    this.bar.setAttribute('aria-valuetext', `${short(used)} of ${short(win)} tokens (${pct}%).${warning}`);
    const source = SOURCES[context.window_source] ?? context.window_source;
    const times = context.condensations === 1 ? 'once' : `${context.condensations} times`;
    this.el.title = [
      `${used.toLocaleString()} of ${win.toLocaleString()} tokens in use (${pct}%).`,
      `Usable for input: ${usable.toLocaleString()} (the rest is kept for the answer).`,
      `Condenses on its own at ${threshold.toLocaleString()}.${warning}`,
      `Window: ${source}.`,
      context.condensations > 0 ? `Condensed ${times} so far.` : 'Not condensed yet.',
    ].join('\n');
  }
}
