// Entry point: builds nothing before first paint beyond wiring the static shell, then connects.

import { initInstructions } from './instructions.js';
import { ask, request, subscribe } from './ipc.js';
import { byId, closest, errorText, setMessage } from './dom.js';
import { setIntents, store } from './store.js';
import { initConfirm } from './confirm.js';
import { showNotice } from './notices.js';
import { handleTaskEvent, initChat, newTask, openTask, rewound, setTasks } from './chat.js';
import { initApprovals, onApprovalRequested, onApprovalResolved } from './approvals.js';
import { initIntents } from './intents.js';
import { initTrace } from './trace.js';
import { applySettings, initSettings } from './settings.js';
import { initEditorLinks } from './editor.js';
import { initWorkspaceMenu } from './workspace.js';
import { initGuide } from './guide.js';
import { renderMcpServers } from './mcp.js';
import { onImagesDropped } from './images.js';
import { initHealth, setLedgerProblem } from './health.js';
import { initUndo } from './undo.js';
import { initDiagnostics } from './diagnostics.js';
import { onProcessChanged, onProcessOutput } from './processes.js';

/** @typedef {import('./protocol').Event} HostEvent */
/** @typedef {import('./protocol').AppState} AppState */
/** @typedef {'chat' | 'intents' | 'trace' | 'settings'} View */

/** @type {View[]} */
const VIEWS = ['chat', 'intents', 'trace', 'settings'];

/** Events that arrive before the first state is drawn wait here, in order. @type {HostEvent[] | null} */
let early = [];
let subscribed = false;

/** @param {View} view */
function showView(view) {
  for (const v of VIEWS) byId(`view-${v}`).hidden = v !== view;
  document.dispatchEvent(new CustomEvent('mandate:view-shown', { detail: view }));
  for (const button of document.querySelectorAll('nav button[data-view]')) {
    if (button.getAttribute('data-view') === view) button.setAttribute('aria-current', 'page');
    else button.removeAttribute('aria-current');
  }
}

function wireShell() {
  initConfirm();
  initApprovals({ openTask: (id) => { showView('chat'); openTask(id); } });
  initChat();
  initIntents();
  initTrace();
  initSettings();
  initInstructions();
  initDiagnostics();
  initEditorLinks();
  initWorkspaceMenu();
  initGuide({ showView });
  initHealth({ showView });
  initUndo({ showView, rewound });
  document.addEventListener('mandate:show-view', (ev) => {
    const view = ev instanceof CustomEvent ? ev.detail : null;
    if (VIEWS.includes(view)) showView(view);
  });

  document.querySelector('nav.app-nav')?.addEventListener('click', (ev) => {
    const view = closest(ev.target, 'button[data-view]')?.dataset.view;
    if (view && VIEWS.includes(/** @type {View} */ (view))) showView(/** @type {View} */ (view));
  });

  document.addEventListener('keydown', (ev) => {
    if (!ev.altKey || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
    const digit = /^Digit([1-4])$/.exec(ev.code);
    if (digit) {
      ev.preventDefault();
      showView(VIEWS[Number(digit[1]) - 1]);
    } else if (ev.code === 'KeyN') {
      ev.preventDefault();
      showView('chat');
      newTask();
    }
  });

  // The window never navigates: links (only ever in rendered answers) open in the browser.
  document.addEventListener('click', (ev) => {
    const link = closest(ev.target, 'a[href]');
    if (!link) return;
    ev.preventDefault();
    const url = link.getAttribute('href') ?? '';
    if (!/^(https?:|mailto:)/i.test(url)) return;
    request({ type: 'open_external', url }).catch((e) => showNotice('error', `Could not open the link: ${errorText(e)}`));
  });
  document.addEventListener('auxclick', (ev) => {
    if (closest(ev.target, 'a[href]')) ev.preventDefault();
  });
  // A file dropped outside a text field would navigate the webview to it.
  for (const type of ['dragover', 'drop']) {
    document.addEventListener(type, (ev) => {
      if (!(ev.target instanceof HTMLInputElement || ev.target instanceof HTMLTextAreaElement)) ev.preventDefault();
    });
  }

  window.addEventListener('unhandledrejection', (ev) => {
    showNotice('error', errorText(ev.reason));
  });
  byId('startup-retry').addEventListener('click', connect);
}

/** @param {HostEvent} ev */
function onEvent(ev) {
  if (early) early.push(ev);
  else dispatch(ev);
}

/** @param {HostEvent} ev */
function dispatch(ev) {
  try {
    switch (ev.type) {
      case 'intents_changed': setIntents(ev.intents); break;
      case 'settings_changed': applySettings(ev.settings); break;
      case 'notice': showNotice(ev.level, ev.message); break;
      case 'ledger_checked': setLedgerProblem(ev.problem); break;
      case 'approval_requested': onApprovalRequested(ev.task_id, ev.request); break;
      case 'approval_resolved': onApprovalResolved(ev.approval_id); break;
      case 'mcp_servers_changed': renderMcpServers(ev.overview); break;
      case 'images_dropped': onImagesDropped(ev.images, ev.errors); break;
      case 'process_changed': onProcessChanged(ev.process); break;
      case 'process_output': onProcessOutput(ev.task_id, ev.process_id, ev.chunk); break;
      case 'show_task': showView('chat'); openTask(ev.task_id); break;
      default: handleTaskEvent(ev);
    }
  } catch (e) {
    // One bad event must not stop the ones after it.
    console.error('event failed', ev.type, e);
  }
}

/** @param {AppState} state */
function applyState(state) {
  store.workspace = state.workspace;
  store.version = state.version;
  const ws = byId('app-workspace');
  // The box is right-to-left so a long path loses its start, not its end; the marks keep the
  // path itself left-to-right.
  ws.textContent = `\u200e${state.workspace}\u200e`;
  ws.title = state.workspace;
  byId('app-version').textContent = state.version ? `v${state.version}` : '';
  applySettings(state.settings, true);
  setIntents(state.intents);
  setTasks(state.tasks);
  setLedgerProblem(state.ledger_problem);
}

async function connect() {
  const banner = byId('startup-error');
  banner.hidden = true;
  try {
    if (!subscribed) {
      // Let the shell paint before anything else happens: the window is never blank while the
      // host loads state (and the host's first request marks the first paint).
      await new Promise((resolve) => requestAnimationFrame(() => resolve(undefined)));
      await subscribe(onEvent);
      subscribed = true;
    }
    const { state } = await ask({ type: 'get_state' }, 'state');
    applyState(state);
    const queued = early ?? [];
    early = null;
    for (const ev of queued) dispatch(ev);
    document.body.dataset.ready = 'true';
  } catch (e) {
    setMessage(byId('startup-error-text'), `Mandate could not load its state. ${errorText(e)}`);
    banner.hidden = false;
  }
}

wireShell();
connect();
