// One task's conversation: messages, streaming answers, tool cards and questions.

import { request } from './ipc.js';
import { errorText, find, formatCost, formatTokens, h, quote, setSafeHtml } from './dom.js';
import { highlightCodeIn } from './highlight.js';
import { pathLink } from './editor.js';
import { requestUndo } from './undo.js';
import { statusLabel } from './store.js';

/** @typedef {import('./protocol').UiMessage} UiMessage */
/** @typedef {import('./protocol').ToolCallView} ToolCallView */
/** @typedef {import('./protocol').ToolCallStatus} ToolCallStatus */
/** @typedef {{ taskId: string, callId: string, question: string, options: string[] }} Question */

/** Output kept in the DOM per tool card; older output is dropped from the start. */
const OUTPUT_CAP = 200_000;
/** Pixels from the bottom that still count as "at the bottom". */
const PIN_SLACK = 40;

/** Questions still waiting for an answer, by call id; they survive closing and reopening a tab. */
export const pendingQuestions = /** @type {Map<string, Question>} */ (new Map());

/** @type {Record<ToolCallStatus, string>} */
const TOOL_STATUS = {
  running: 'Running',
  waiting_for_approval: 'Waiting for approval',
  succeeded: 'Done',
  denied: 'Denied',
  failed: 'Failed',
};

let seq = 0;

export class Transcript {
  /** @param {string} taskId */
  constructor(taskId) {
    this.taskId = taskId;
    this.log = h('div', {
      class: 'transcript',
      role: 'log',
      'aria-live': 'polite',
      'aria-relevant': 'additions',
      'aria-label': 'Conversation',
      tabindex: '0',
    });
    this.jump = h('button', { type: 'button', class: 'jump-latest', hidden: true, text: 'Jump to latest ↓' });
    this.el = h('div', { class: 'transcript-wrap' }, this.log, this.jump);
    /** Whether new content should keep the view at the bottom (the user has not scrolled up). */
    this.stick = true;
    this.autoTop = -1;
    /** Where the user left the view; a hidden element forgets it. */
    this.savedTop = 0;
    /**
     * Changes per streaming message, drawn once per frame: finished blocks to append (cleared
     * first on reset) and the latest unfinished tail.
     * @type {Map<string, {stable: string[], tail: string, reset: boolean}>}
     */
    this.pendingHtml = new Map();
    this.frame = 0;

    this.log.addEventListener('scroll', () => {
      // Our own scrolling must not count as the user leaving the bottom.
      if (this.log.clientHeight === 0) return; // hidden: not the user
      this.savedTop = this.log.scrollTop;
      if (Math.abs(this.log.scrollTop - this.autoTop) < 2) return;
      this.stick = this.atBottom();
      if (this.stick) this.jump.hidden = true;
    }, { passive: true });
    // Undo asks for a preview; the side panel shows it (undo.js).
    this.log.addEventListener('click', (ev) => {
      const button = ev.target instanceof Element ? ev.target.closest('[data-action="undo-call"], [data-action="undo-turn"]') : null;
      if (!(button instanceof HTMLElement)) return;
      const holder = button.closest('[data-message-id]');
      const id = holder?.getAttribute('data-message-id') ?? '';
      if (button.dataset.action === 'undo-call') {
        const what = [holder?.querySelector('.tool-name')?.textContent, holder?.querySelector('.tool-target')?.textContent].filter(Boolean).join(' ');
        requestUndo(button, { kind: 'call', task_id: this.taskId, call_id: id }, `Undo ${what || 'this tool call'}`);
      } else {
        const text = holder?.querySelector('.content')?.textContent ?? '';
        const short = text.length > 60 ? `${text.slice(0, 60)}…` : text;
        requestUndo(button, { kind: 'turn', task_id: this.taskId, message_id: id }, `Undo from “${short}” on`);
      }
    });
    this.jump.addEventListener('click', () => {
      this.stick = true;
      this.toBottom();
      this.jump.hidden = true;
      this.log.focus({ preventScroll: true });
    });
  }

  atBottom() {
    const { scrollHeight, scrollTop, clientHeight } = this.log;
    return scrollHeight - scrollTop - clientHeight < PIN_SLACK;
  }

  toBottom() {
    this.log.scrollTop = this.log.scrollHeight;
    this.autoTop = this.log.scrollTop;
  }

  /**
   * Runs a change, then keeps the bottom in view only if the user was already there.
   * @param {() => void} change
   */
  mutate(change) {
    change();
    if (this.stick) this.toBottom();
    else this.jump.hidden = false;
  }

  /** Called when the panel becomes visible again (a hidden element forgets its scroll). */
  shown() {
    if (this.stick) this.toBottom();
    else this.log.scrollTop = this.savedTop;
  }

  clear() {
    this.log.replaceChildren();
    this.pendingHtml.clear();
    this.stick = true;
  }

  /** @param {string} text */
  showLoading(text) {
    this.log.replaceChildren(h('p', { class: 'transcript-note muted', text }));
  }

  /** @param {UiMessage[]} messages */
  load(messages) {
    this.clear();
    const frag = document.createDocumentFragment();
    for (const m of messages) placeThinking(frag, this.messageEl(m), m);
    this.log.append(frag);
    this.finalizeLoaded();
    for (const q of pendingQuestions.values()) if (q.taskId === this.taskId) this.log.append(questionEl(q));
    this.toBottom();
  }

  /** @param {string} id */
  byMessageId(id) {
    return find(this.log, `[data-message-id=${quote(id)}]`, HTMLElement);
  }

  /** @param {string} callId */
  card(callId) {
    return find(this.log, `.tool-card[data-call-id=${quote(callId)}]`, HTMLElement);
  }

  /** @param {UiMessage} message */
  add(message) {
    // Whatever the host says next ends a condensing: its card, its failure, or the turn going on.
    this.condensingEnded(false);
    if (message.kind === 'tool') {
      this.tool(message.call);
      return;
    }
    const existing = this.byMessageId(message.id);
    this.mutate(() => {
      const el = this.messageEl(message);
      if (existing) existing.replaceWith(el);
      else placeThinking(this.log, el, message);
    });
  }

  /**
   * @param {string} id
   * @param {string} stableHtml sanitized HTML of newly finished blocks
   * @param {string} tailHtml sanitized HTML of the unfinished tail
   * @param {boolean} reset the finished part must be cleared first
   */
  delta(id, stableHtml, tailHtml, reset) {
    const pending = this.pendingHtml.get(id) ?? { stable: [], tail: '', reset: false };
    if (reset) {
      pending.stable = [];
      pending.reset = true;
    }
    if (stableHtml) pending.stable.push(stableHtml);
    pending.tail = tailHtml;
    this.pendingHtml.set(id, pending);
    if (!this.frame) this.frame = requestAnimationFrame(() => this.flush());
  }

  flush() {
    this.frame = 0;
    const updates = [...this.pendingHtml];
    this.pendingHtml.clear();
    this.mutate(() => {
      for (const [id, change] of updates) {
        const el = this.byMessageId(id);
        const content = el && find(el, '.content', HTMLElement);
        if (content) applyStreamChange(content, change);
      }
    });
  }

  /**
   * @param {string} id
   * @param {string} html
   * @param {boolean} complete
   */
  finish(id, html, complete) {
    this.pendingHtml.delete(id);
    const el = this.byMessageId(id);
    if (!el) return;
    this.mutate(() => {
      // A turn that only called tools leaves an empty bubble: it is not part of the record.
      if (html.trim() === '') {
        el.remove();
        return;
      }
      const content = find(el, '.content', HTMLElement);
      if (content) renderHtml(content, html);
      finalize(el, complete);
    });
  }

  /** @param {ToolCallView} call */
  tool(call) {
    const existing = this.card(call.call_id);
    this.mutate(() => {
      if (existing) updateCard(existing, call);
      else this.log.append(toolCard(call));
    });
  }

  /**
   * @param {string} callId
   * @param {string} chunk
   */
  output(callId, chunk) {
    const card = this.card(callId);
    if (!card) return;
    this.mutate(() => appendOutput(card, chunk));
  }

  /**
   * A condensing call started: a row that stays until its card (or what came instead) arrives.
   * @param {boolean} automatic
   */
  condensing(automatic) {
    this.mutate(() => {
      this.log.querySelector(':scope > .condensing')?.remove();
      this.log.append(h('div', { class: 'message condensing', 'data-role': 'condensing', 'data-automatic': String(automatic) },
        h('span', { class: 'spinner', 'aria-hidden': 'true' }),
        h('span', { class: 'content', text: automatic ? 'Condensing the conversation (the window is filling up)…' : 'Condensing the conversation…' })));
    });
    this.log.dispatchEvent(new CustomEvent('mandate:condensing', { bubbles: true }));
  }

  /** Whether a condensing row is shown. */
  condensingNow() {
    return this.log.querySelector(':scope > .condensing') !== null;
  }

  /**
   * Takes the condensing row away.
   * @param {boolean} onlyAutomatic only one the agent started (its run ended without a card)
   */
  condensingEnded(onlyAutomatic) {
    const row = find(this.log, ':scope > .condensing', HTMLElement);
    if (!row || (onlyAutomatic && row.dataset.automatic !== 'true')) return;
    row.remove();
    this.log.dispatchEvent(new CustomEvent('mandate:condensing', { bubbles: true }));
  }

  /**
   * A short note that is not part of the stored conversation (what the host did about the window).
   * @param {string} text
   */
  note(text) {
    this.mutate(() => this.log.append(h('div', { class: 'message', 'data-role': 'notice', 'data-transient': 'true' },
      h('div', { class: 'content plain', text }))));
  }

  /** @param {Question} q */
  question(q) {
    if (find(this.log, `.question[data-call-id=${quote(q.callId)}]`, HTMLElement)) return;
    this.mutate(() => this.log.append(questionEl(q)));
  }

  /**
   * The question was settled elsewhere (answered in another window, or the call ended).
   * @param {string} callId
   */
  questionClosed(callId) {
    const el = find(this.log, `.question[data-call-id=${quote(callId)}]`, HTMLElement);
    if (el && !el.classList.contains('answered')) markAnswered(el, null);
  }

  /** @param {UiMessage} m */
  messageEl(m) {
    switch (m.kind) {
      case 'user':
        return h('div', { class: 'message', 'data-role': 'user', 'data-message-id': m.id },
          h('span', { class: 'visually-hidden', text: 'You: ' }),
          h('div', { class: 'content plain', text: m.text }),
          m.images?.length ? h('div', { class: 'message-images' }, ...m.images.map((img) => h('figure', { class: 'message-image', 'data-image-id': img.id },
            h('img', { src: img.preview, alt: img.name }),
            h('figcaption', { class: 'muted', text: `${img.name} · ${img.width}×${img.height}` })))) : null,
          h('button', {
            type: 'button',
            class: 'undo-button quiet',
            'data-action': 'undo-turn',
            title: 'Take back what the agent changed from this message on, and edit the message to send it again',
            text: 'Undo from here',
          }));
      case 'assistant': {
        const content = h('div', { class: 'content markdown' });
        const el = h('div', { class: 'message', 'data-role': 'assistant', 'data-message-id': m.id },
          h('span', { class: 'visually-hidden', text: 'Agent: ' }), content);
        if (m.safe_html) renderHtml(content, m.safe_html);
        if (m.complete) return el;
        // Live stream or a stored cut-off answer: loaded history is never still streaming.
        el.setAttribute('aria-busy', 'true');
        el.append(h('span', { class: 'typing', role: 'img', 'aria-label': 'The agent is writing' },
          h('span'), h('span'), h('span')));
        return el;
      }
      case 'error':
        return h('div', { class: 'message', 'data-role': 'error', 'data-message-id': m.id },
          h('span', { class: 'visually-hidden', text: 'Error: ' }),
          h('div', { class: 'content plain', text: m.message }));
      case 'notice':
        return h('div', { class: 'message', 'data-role': 'notice', 'data-message-id': m.id },
          h('div', { class: 'content plain', text: m.text }));
      case 'tool':
        return toolCard(m.call);
      case 'thinking':
        return h('details', { class: 'thinking', 'data-message-id': m.id },
          h('summary', { text: 'Thinking' }),
          h('div', { class: 'content plain', text: m.text }));
      case 'condensed':
        return condensedCard(m);
      case 'subtask':
        return subtaskCard(m);
    }
    return h('div');
  }

  /** Marks stored cut-off answers after a load (they arrive as complete:false messages). */
  finalizeLoaded() {
    for (const el of this.log.querySelectorAll('.message[data-role="assistant"][aria-busy="true"]')) {
      if (el instanceof HTMLElement) finalize(el, false);
    }
  }
}

/**
 * Appends a message; the host posts the model's reasoning after the answer it led to, and it
 * reads better before it.
 * @param {Element | DocumentFragment} parent
 * @param {Element} el
 * @param {UiMessage} m
 */
function placeThinking(parent, el, m) {
  const last = parent.lastElementChild;
  if (m.kind === 'thinking' && last instanceof HTMLElement && last.dataset.role === 'assistant') last.before(el);
  else parent.append(el);
}

/** @param {number} n */
function shortTokens(n) {
  return formatTokens(n).replace(/\.0(?=[kM]$)/, '');
}

/**
 * The conversation was condensed: before → after, what it cost, who asked; the summary folded.
 * @param {Extract<UiMessage, { kind: 'condensed' }>} m
 */
function condensedCard(m) {
  const cost = m.cost_usd === null ? '' : `, ${formatCost(m.cost_usd)}`;
  const summary = h('div', { class: 'content markdown' });
  renderHtml(summary, m.summary_safe_html);
  return h('div', { class: 'condensed-card', 'data-message-id': m.id, 'data-automatic': String(m.automatic) },
    h('p', {
      class: 'condensed-head',
      title: `${m.tokens_before.toLocaleString()} tokens before, ${m.tokens_after.toLocaleString()} after. The whole conversation is kept here; the model gets the summary in place of the older part.`,
    },
    h('span', { class: 'condensed-title', text: 'Context condensed: ' }),
    h('span', { class: 'condensed-tokens', text: `${shortTokens(m.tokens_before)} → ${shortTokens(m.tokens_after)} tokens${cost}` }),
    h('span', { class: 'condensed-who', text: m.automatic ? ' · automatic' : ' · by hand' })),
    h('details', { class: 'condensed-summary' },
      h('summary', { text: 'Summary sent to the model' }),
      summary));
}

/**
 * A subtask this task started: its mode and title, how it is doing, and once it ended its result;
 * the button opens it in its own tab.
 * @param {Extract<UiMessage, { kind: 'subtask' }>} m
 */
function subtaskCard(m) {
  const result = h('div', { class: 'content markdown' });
  if (m.result_safe_html) renderHtml(result, m.result_safe_html);
  return h('div', { class: 'subtask-card', 'data-message-id': m.id, 'data-status': m.status, 'data-subtask-id': m.task_id },
    h('p', { class: 'subtask-head' },
      h('span', { class: 'status-dot', 'data-status': m.status, 'aria-hidden': 'true' }),
      h('span', { class: 'subtask-label', text: `Subtask · ${m.mode}` }),
      h('span', { class: 'subtask-title', text: m.title }),
      h('span', { class: 'subtask-status', text: statusLabel(m.status) }),
      h('button', { type: 'button', class: 'quiet', 'data-open-subtask': m.task_id, title: 'Open the subtask in its own tab (its conversation, its changes)', text: 'Open' })),
    m.result_safe_html ? result : null);
}

/**
 * Streams into two parts: finished blocks are appended once and never redrawn; only the
 * unfinished tail is replaced. (`display: contents` keeps the wrappers out of the layout.)
 * @param {HTMLElement} content
 * @param {{stable: string[], tail: string, reset: boolean}} change
 */
function applyStreamChange(content, change) {
  const foundStable = content.querySelector(':scope > .stream-stable');
  const foundTail = content.querySelector(':scope > .stream-tail');
  /** @type {HTMLElement} */
  let stable;
  /** @type {HTMLElement} */
  let tail;
  if (foundStable instanceof HTMLElement && foundTail instanceof HTMLElement) {
    stable = foundStable;
    tail = foundTail;
  } else {
    stable = h('div', { class: 'stream-stable' });
    tail = h('div', { class: 'stream-tail' });
    content.replaceChildren(stable, tail);
  }
  if (change.reset) stable.replaceChildren();
  for (const html of change.stable) {
    const chunk = h('div', { class: 'stream-chunk' });
    renderHtml(chunk, html);
    stable.append(chunk);
  }
  renderHtml(tail, change.tail);
}

/**
 * @param {HTMLElement} content
 * @param {string} html
 */
function renderHtml(content, html) {
  setSafeHtml(content, html);
  highlightCodeIn(content);
}

/**
 * @param {HTMLElement} el
 * @param {boolean} complete
 */
function finalize(el, complete) {
  el.removeAttribute('aria-busy');
  el.querySelector('.typing')?.remove();
  if (!complete && !el.classList.contains('cut-off')) {
    el.classList.add('cut-off');
    el.append(h('p', { class: 'cut-off-note', text: 'answer cut off — not kept' }));
  }
}

/** What the "unconfined" badge of a call card means, said on the card itself. */
const UNCONFINED_NOTE = 'Unconfined: this MCP server runs outside any confinement (you allowed it, or this machine offers none). It can read and write anything you can. What a call changes in the workspace is found afterwards: recorded under the intent when the intent owns it, undone otherwise. What it does elsewhere, Mandate cannot see or undo.';

/** @param {ToolCallView} call */
function toolCard(call) {
  const bodyId = `tool-body-${++seq}`;
  const head = h('button', { type: 'button', class: 'tool-head', 'aria-expanded': 'false', 'aria-controls': bodyId },
    h('span', { class: 'chevron', 'aria-hidden': 'true' }),
    h('span', { class: 'tool-name' }),
    h('span', { class: 'tag tag-danger tool-unconfined', hidden: true, title: UNCONFINED_NOTE, text: 'unconfined' }),
    h('span', { class: 'tool-target' }),
    h('span', { class: 'tool-state' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), h('span', { class: 'tool-state-text' })));
  const card = h('div', { class: 'tool-card', 'data-call-id': call.call_id, 'data-message-id': call.call_id },
    // The open button sits beside the head: a button cannot hold another one.
    h('div', { class: 'tool-head-row' }, head, h('span', { class: 'tool-open' })),
    h('p', { class: 'tool-unconfined-note', role: 'note', hidden: true, text: UNCONFINED_NOTE }),
    h('p', { class: 'tool-summary-line' }),
    h('button', { type: 'button', class: 'tool-review quiet', 'data-action': 'review', hidden: true, text: 'Review in Approvals' }),
    h('button', { type: 'button', class: 'undo-button quiet', 'data-action': 'undo-call', hidden: true, text: 'Undo' }),
    h('div', { class: 'tool-body', id: bodyId, hidden: true },
      h('p', { class: 'tool-summary' }),
      h('p', { class: 'tool-trimmed muted small', hidden: true, text: 'Earlier output was trimmed.' }),
      h('pre', { class: 'tool-output', tabindex: '0', 'aria-label': 'Output' })));
  head.addEventListener('click', () => {
    const body = find(card, '.tool-body', HTMLElement);
    if (!body) return;
    body.hidden = !body.hidden;
    head.setAttribute('aria-expanded', String(!body.hidden));
  });
  card.querySelector('[data-action="review"]')?.addEventListener('click', () => {
    card.dispatchEvent(new CustomEvent('mandate:review', { bubbles: true, detail: call.call_id }));
  });
  updateCard(card, call);
  return card;
}

/**
 * @param {HTMLElement} card
 * @param {ToolCallView} call
 */
function updateCard(card, call) {
  card.dataset.status = call.status;
  card.dataset.kind = call.kind;
  // Said on every card of a call that runs outside any confinement, whatever its state.
  card.dataset.unconfined = String(call.unconfined);
  for (const el of card.querySelectorAll('.tool-unconfined, .tool-unconfined-note')) {
    if (el instanceof HTMLElement) el.hidden = !call.unconfined;
  }
  const set = (/** @type {string} */ sel, /** @type {string} */ text) => {
    const el = find(card, sel, HTMLElement);
    if (el) el.textContent = text;
  };
  set('.tool-name', call.tool);
  set('.tool-target', call.target);
  find(card, '.tool-target', HTMLElement)?.setAttribute('title', call.target);
  const open = find(card, '.tool-open', HTMLElement);
  const where = call.path ? `${call.path}:${call.line ?? ''}` : '';
  if (open && open.dataset.where !== where) {
    open.dataset.where = where;
    open.replaceChildren(call.path ? pathLink(call.path, call.line, { label: 'Open', className: 'quiet-link' }) : '');
  }
  const undo = find(card, '[data-action="undo-call"]', HTMLElement);
  if (undo) {
    const n = call.changed_paths.length;
    undo.hidden = n === 0;
    undo.setAttribute('aria-label', n === 1 ? `Undo this call's change to ${call.changed_paths[0]}` : `Undo this call's changes to ${n} files`);
    undo.title = n ? `Take back what this call changed: ${call.changed_paths.join(', ')}` : '';
  }
  set('.tool-state-text', TOOL_STATUS[call.status] ?? call.status);
  // An open card always says something, even before there is a result.
  set('.tool-summary', call.summary || (call.status === 'waiting_for_approval'
    ? 'Waiting for your decision in the Approvals panel.'
    : call.status === 'running' ? 'Running…' : 'No details.'));
  // Problems are shown without opening the card; successes stay one line.
  const line = find(card, '.tool-summary-line', HTMLElement);
  if (line) {
    const show = (call.status === 'denied' || call.status === 'failed') && call.summary !== '';
    line.textContent = show ? call.summary : '';
    line.hidden = !show;
  }
  const review = find(card, '[data-action="review"]', HTMLElement);
  if (review) review.hidden = call.status !== 'waiting_for_approval';
  const pre = find(card, 'pre.tool-output', HTMLElement);
  if (pre && call.output) {
    // The finished call carries the authoritative output; streamed chunks were a preview.
    pre.textContent = call.output.length > OUTPUT_CAP ? call.output.slice(-OUTPUT_CAP) : call.output;
    pre.dataset.len = String(pre.textContent.length);
  }
  if (pre) pre.hidden = (pre.textContent ?? '') === '';
}

/**
 * @param {HTMLElement} card
 * @param {string} chunk
 */
function appendOutput(card, chunk) {
  const pre = find(card, 'pre.tool-output', HTMLElement);
  if (!pre) return;
  pre.hidden = false;
  pre.append(chunk);
  let len = Number(pre.dataset.len ?? 0) + chunk.length;
  if (len > OUTPUT_CAP) {
    // Trim to 90% so this rarely runs twice in a row.
    const text = (pre.textContent ?? '').slice(-Math.floor(OUTPUT_CAP * 0.9));
    pre.textContent = text;
    len = text.length;
    const note = find(card, '.tool-trimmed', HTMLElement);
    if (note) note.hidden = false;
  } else if (pre.childNodes.length > 256) {
    pre.normalize();
  }
  pre.dataset.len = String(len);
}

/** @param {Question} q */
function questionEl(q) {
  const textId = `question-${++seq}`;
  const input = h('input', { type: 'text', class: 'question-answer', 'aria-label': 'Your answer', placeholder: 'Type an answer…', autocomplete: 'off' });
  const answer = h('button', { type: 'button', 'data-action': 'answer', class: 'primary', text: 'Answer' });
  const error = h('p', { class: 'inline-error', role: 'alert' });
  const el = h('div', { class: 'question', 'data-call-id': q.callId, role: 'group', 'aria-labelledby': textId },
    h('p', { class: 'question-label', text: 'The agent asks' }),
    h('p', { class: 'question-text', id: textId, text: q.question }),
    q.options.length ? h('div', { class: 'question-options' },
      ...q.options.map((o) => h('button', { type: 'button', class: 'question-option', 'data-answer': o, text: o }))) : null,
    h('div', { class: 'question-free' }, input, answer),
    error);

  /** @param {string} text */
  const send = async (text) => {
    if (!text.trim()) {
      error.textContent = 'Write an answer or pick one of the options.';
      return;
    }
    error.textContent = '';
    setDisabled(el, true);
    try {
      await request({ type: 'answer_question', task_id: q.taskId, call_id: q.callId, answer: text });
      pendingQuestions.delete(q.callId);
      markAnswered(el, text);
    } catch (e) {
      error.textContent = errorText(e);
      setDisabled(el, false);
    }
  };
  el.addEventListener('click', (ev) => {
    const target = ev.target instanceof Element ? ev.target.closest('button') : null;
    if (!target || target.disabled) return;
    if (target.classList.contains('question-option')) send(target.getAttribute('data-answer') ?? '');
    else if (target === answer) send(input.value);
  });
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.isComposing) {
      ev.preventDefault();
      send(input.value);
    }
  });
  return el;
}

/**
 * @param {HTMLElement} el
 * @param {boolean} disabled
 */
function setDisabled(el, disabled) {
  for (const c of el.querySelectorAll('button, input')) {
    if (c instanceof HTMLButtonElement || c instanceof HTMLInputElement) c.disabled = disabled;
  }
}

/**
 * @param {HTMLElement} el
 * @param {string | null} answer  null when it was settled without an answer from here
 */
function markAnswered(el, answer) {
  const shown = find(el, '.question-result', HTMLElement);
  if (shown) {
    // Settled twice (the call ended as our answer came back): keep the more telling text.
    if (answer !== null) shown.textContent = `You answered: ${answer}`;
    return;
  }
  const hadFocus = el.contains(document.activeElement);
  el.classList.add('answered');
  setDisabled(el, true);
  for (const part of el.querySelectorAll('.question-options, .question-free, .inline-error')) part.remove();
  el.append(h('p', { class: 'question-result', text: answer === null ? 'No longer waiting for an answer.' : `You answered: ${answer}` }));
  if (hadFocus) {
    el.setAttribute('tabindex', '-1');
    el.focus({ preventScroll: true });
  }
}
