// Small DOM helpers. Every string reaches the page as text; the one exception is setSafeHtml.

/** @typedef {Node | string | null | undefined | false} Child */
/** @typedef {Record<string, string | number | boolean | null | undefined>} Attrs */

/**
 * Builds an element. Attributes go through setAttribute; `class` and `text` are shortcuts.
 * Inline styles and `on*` handler attributes are refused: the CSP forbids them and they
 * would be an injection path.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs | null} [attrs]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'style' || /^on/i.test(key)) throw new Error(`refused attribute ${key}`);
      if (key === 'class') el.className = String(value);
      else if (key === 'text') el.textContent = String(value);
      else el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

/**
 * Appends nodes and strings (strings become text nodes).
 * @param {Element | DocumentFragment} parent
 * @param {Child[]} children
 */
export function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child);
  }
}

/**
 * The only way HTML strings enter the DOM. `html` must be a `safe_html` field from the host:
 * it was rendered from Markdown and sanitized against an allow-list in Rust (no scripts, no
 * handlers, no styles, only http/https/mailto links). Nothing else may ever be passed here.
 * @param {Element} node
 * @param {string} html
 */
export function setSafeHtml(node, html) {
  node.innerHTML = html;
}

/**
 * @template {HTMLElement} T
 * @param {string} id
 * @param {{ new (): T, prototype: T }} [type]
 * @returns {T}
 */
export function byId(id, type) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  if (type && !(el instanceof type)) throw new Error(`#${id} has the wrong element type`);
  return /** @type {T} */ (el);
}

/**
 * The nearest ancestor (or self) of an event target matching `selector`.
 * @param {EventTarget | null} target
 * @param {string} selector
 * @returns {HTMLElement | null}
 */
export function closest(target, selector) {
  if (!(target instanceof Element)) return null;
  const found = target.closest(selector);
  return found instanceof HTMLElement ? found : null;
}

/**
 * Typed querySelector on a root; null when absent or not of `type`.
 * @template {Element} T
 * @param {ParentNode} root
 * @param {string} selector
 * @param {{ new (): T, prototype: T }} type
 * @returns {T | null}
 */
export function find(root, selector, type) {
  const el = root.querySelector(selector);
  return el instanceof type ? el : null;
}

/**
 * A CSS attribute selector value, quoted (ids come from the host and may hold anything).
 * @param {string} value
 */
export function quote(value) {
  return `"${CSS.escape(value)}"`;
}

/**
 * Shows or hides an inline message (errors and notes next to the control that caused them).
 * @param {HTMLElement} el
 * @param {string | null} message
 */
export function setMessage(el, message) {
  el.textContent = message ?? '';
  el.hidden = !message;
}

/**
 * Ends a clause with a full stop so more text can follow it. The words themselves are kept
 * as the host wrote them.
 * @param {string} text
 */
export function sentence(text) {
  const t = text.trim();
  return !t || /[.!?…)]$/.test(t) ? t : `${t}.`;
}

/**
 * The message of a failure, as the host wrote it (it is meant for the user).
 * @param {unknown} error
 * @returns {string}
 */
export function errorText(error) {
  let text = 'Something went wrong.';
  if (typeof error === 'string' && error) text = error;
  else if (error && typeof error === 'object' && 'message' in error && typeof error.message === 'string' && error.message) {
    text = error.message;
  }
  return text.trim();
}

/**
 * Runs `fn` once, `ms` after the last call.
 * @template {unknown[]} A
 * @param {(...args: A) => void} fn
 * @param {number} ms
 * @returns {(...args: A) => void}
 */
export function debounce(fn, ms) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/** @param {number} n */
export function formatTokens(n) {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 100_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** @param {number | null} usd */
export function formatCost(usd) {
  if (usd === null) return 'cost unknown';
  // An estimate from list prices, hence ≈.
  return `≈$${usd > 0 && usd < 0.01 ? usd.toFixed(3) : usd.toFixed(2)}`;
}

/**
 * Date formats, made on first use: the first one loads the locale's date data (megabytes the
 * window does not need until it shows a time).
 * @type {Map<string, Intl.DateTimeFormat>}
 */
const formats = new Map();

/** @param {'time' | 'day' | 'year' | 'full'} kind */
function fmt(kind) {
  let f = formats.get(kind);
  if (!f) {
    /** @type {Record<string, Intl.DateTimeFormatOptions>} */
    const options = {
      time: { hour: '2-digit', minute: '2-digit' },
      day: { day: 'numeric', month: 'short' },
      year: { day: 'numeric', month: 'short', year: 'numeric' },
      full: { dateStyle: 'medium', timeStyle: 'short' },
    };
    f = new Intl.DateTimeFormat(undefined, options[kind]);
    formats.set(kind, f);
  }
  return f;
}

/**
 * A short time for lists: the hour today, the day this year, the date otherwise.
 * @param {string} iso
 */
export function formatTime(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const now = new Date();
  if (date.toDateString() === now.toDateString()) return fmt('time').format(date);
  if (date.getFullYear() === now.getFullYear()) return fmt('day').format(date);
  return fmt('year').format(date);
}

/** @param {string} iso */
export function formatFullTime(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : fmt('full').format(date);
}

/**
 * A `<time>` element with the short form shown and the full one as its title.
 * @param {string} iso
 */
export function timeEl(iso) {
  return h('time', { datetime: iso, title: formatFullTime(iso), text: formatTime(iso) });
}

/**
 * Whether a keydown came from a place where typing happens (shortcuts must not eat keys there).
 * @param {EventTarget | null} target
 */
export function isTyping(target) {
  return target instanceof HTMLTextAreaElement
    || (target instanceof HTMLInputElement && !['checkbox', 'radio', 'button', 'submit'].includes(target.type))
    || target instanceof HTMLSelectElement
    || (target instanceof HTMLElement && target.isContentEditable);
}

/**
 * The keys of a suggestion list under the message box (slash commands, `@` mentions): the
 * arrows move, Tab or Enter takes the one chosen, Escape closes. Registered before the
 * composer's own Enter, so a chosen item is taken, not sent.
 * @param {HTMLElement} input
 * @param {{ size: () => number, step: (by: number) => void, take: () => void, close: () => void }} list
 */
export function onSuggestionKeys(input, list) {
  input.addEventListener('keydown', (ev) => {
    const n = list.size();
    if (n === 0) return;
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      list.step(ev.key === 'ArrowDown' ? 1 : n - 1);
    } else if (ev.key === 'Tab' || (ev.key === 'Enter' && !ev.shiftKey)) {
      list.take();
    } else if (ev.key === 'Escape') {
      list.close();
    } else {
      return;
    }
    ev.preventDefault();
    ev.stopImmediatePropagation();
  });
}
