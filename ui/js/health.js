// Broken governance files said out loud, above every view: an intents file that does not load
// (the host names the file, the line and what is wrong) and a trace ledger whose chain is broken.

import { byId, sentence, setMessage } from './dom.js';
import { listen, store } from './store.js';

/** @type {string | null} */
let ledgerProblem = null;

/** @param {{ showView: (view: 'chat' | 'intents' | 'trace' | 'settings') => void }} options */
export function initHealth(options) {
  listen('intents', render);
  byId('health-intents-open').addEventListener('click', () => options.showView('intents'));
  byId('health-ledger-open').addEventListener('click', () => {
    options.showView('trace');
    // The check itself explains every finding, line by line.
    byId('verify-run').click();
    byId('verify-run').focus();
  });
  render();
}

/** @param {string | null} problem */
export function setLedgerProblem(problem) {
  ledgerProblem = problem;
  render();
}

function render() {
  const view = store.intents;
  // The host's sentence names the file, the line and what is wrong.
  const intents = view.error ? `The intents file does not load: ${sentence(view.error)} Fix the file to change intents.` : null;
  setMessage(byId('health-intents-text'), intents);
  byId('health-intents').hidden = intents === null;
  setMessage(byId('health-ledger-text'), ledgerProblem);
  byId('health-ledger').hidden = ledgerProblem === null;
}
