// Images attached to the next message: pasted into the message box, or dropped on the window
// (the host reads dropped files; the page only passes on the bytes of what was pasted). The
// host decodes and re-encodes each image and answers with a small preview; the chips above
// the box show them, sized, with a button to take each one off. Whether the model reads
// images is checked by the host when the message is sent.

import { request } from './ipc.js';
import { byId, errorText, formatTokens, h, setMessage } from './dom.js';

/** @typedef {import('./protocol').ImageView} ImageView */

/** What goes with the next message. @type {ImageView[]} */
let attached = [];
/** Attachments in flight, so Send waits for them. @type {Set<Promise<void>>} */
const reading = new Set();
/** The most one message may carry (the host refuses more). */
const MAX = 8;

/** @param {number} n */
function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

function render() {
  const box = byId('image-chips');
  box.replaceChildren(...attached.map((img) => h('span', {
    class: 'image-chip',
    'data-image-id': img.id,
    title: `${img.name}: ${img.width}×${img.height}, ${formatBytes(Number(img.bytes))} as sent, about ${Number(img.tokens).toLocaleString()} tokens`,
  },
  h('img', { src: img.preview, alt: img.name, class: 'image-chip-thumb' }),
  h('span', { class: 'image-chip-size', text: `${img.width}×${img.height} · ${formatTokens(Number(img.tokens))} tokens` }),
  h('button', { type: 'button', class: 'image-chip-remove quiet', 'data-image-id': img.id, 'aria-label': `Remove ${img.name}`, text: '×' }))));
  box.hidden = attached.length === 0;
}

/** @param {ImageView} img */
function add(img) {
  if (attached.some((a) => a.id === img.id)) return;
  if (attached.length >= MAX) {
    setMessage(byId('composer-error'), `A message may carry at most ${MAX} images.`);
    return;
  }
  attached.push(img);
  render();
}

/** Reads a pasted image and hands its bytes to the host. @param {File} file */
async function attachBlob(file) {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  const reply = await request({ type: 'attach_image', name: file.name || 'pasted image', data_base64: btoa(binary) });
  if (reply.type === 'image') add(reply.image);
}

/** @param {File} file */
function attachFile(file) {
  const error = byId('composer-error');
  const job = attachBlob(file)
    .then(() => setMessage(error, null))
    .catch((e) => setMessage(error, `The image was not attached: ${errorText(e)}`))
    .finally(() => reading.delete(job));
  reading.add(job);
}

/** The ids to send with the message, once every attachment in flight has landed. */
export async function attachedIds() {
  await Promise.all([...reading]);
  return attached.map((a) => a.id);
}

/** The message went: its images go with it. */
export function clearAttached() {
  attached = [];
  render();
}

/**
 * Files dropped on the window, as the host read them.
 * @param {ImageView[]} images
 * @param {string[]} errors
 */
export function onImagesDropped(images, errors) {
  for (const img of images) add(img);
  setMessage(byId('composer-error'), errors.length ? `Not attached: ${errors.join('; ')}` : null);
}

export function initImages() {
  const input = byId('composer-input', HTMLTextAreaElement);
  input.addEventListener('paste', (ev) => {
    const files = [...(ev.clipboardData?.files ?? [])].filter((f) => f.type.startsWith('image/'));
    if (files.length === 0) return;
    // Pasted text still goes in as text; only the images are taken.
    if (!ev.clipboardData?.getData('text/plain')) ev.preventDefault();
    for (const f of files) attachFile(f);
  });
  byId('image-chips').addEventListener('click', (ev) => {
    const button = ev.target instanceof Element ? ev.target.closest('.image-chip-remove') : null;
    if (!(button instanceof HTMLElement)) return;
    attached = attached.filter((a) => a.id !== button.dataset.imageId);
    render();
    input.focus();
  });
}
