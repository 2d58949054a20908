// File paths that open in the person's editor. The page only names a workspace path and a line;
// the host picks the program (chosen in Settings) and refuses anything outside the workspace.

import { request } from './ipc.js';
import { closest, errorText, h } from './dom.js';
import { showNotice } from './notices.js';

/**
 * A button showing `path` that opens it at `line`.
 * @param {string} path workspace-relative
 * @param {number | null} [line] 1-based
 * @param {{ label?: string, className?: string }} [options] label: the visible text (default the path)
 */
export function pathLink(path, line = null, options = {}) {
  const where = line ? `${path}, line ${line}` : path;
  return h('button', {
    type: 'button',
    class: `path-link ${options.className ?? ''}`.trim(),
    'data-open-path': path,
    'data-open-line': line ? String(line) : null,
    title: `Open ${where} in your editor`,
    'aria-label': options.label && options.label !== path ? `Open ${where} in your editor` : null,
    text: options.label ?? path,
  });
}

/** One handler for every path link in the window. */
export function initEditorLinks() {
  document.addEventListener('click', (ev) => {
    const link = closest(ev.target, '[data-open-path]');
    if (!link) return;
    ev.preventDefault();
    ev.stopPropagation();
    const path = link.dataset.openPath ?? '';
    const line = Number(link.dataset.openLine ?? '');
    request({ type: 'open_in_editor', path, line: Number.isInteger(line) && line > 0 ? line : null })
      .catch((e) => showNotice('error', `Could not open ${path}: ${errorText(e)}`));
  }, true);
}
