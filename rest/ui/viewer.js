// The file view: a file shown as text (highlighted), an image, or a binary
// summary; the buttons of the view bar; notes above the view; and the view
// lent to what is not a file's content (a change's diff, history.js).
import { $, el } from './dom.js';
import { state, isDefault } from './state.js';
import { fsapi } from './api.js';
import { ask, fail } from './dialogs.js';
import { reveal } from './tree.js';
import { highlight, hlLanguage } from './highlight.js';
import { basename } from './paths.js';
import { fmtSize } from './fmt.js';

const MAX_VIEW = 4 << 20; // bytes shown as text or image whole
const HEAD_VIEW = 1 << 20; // of a larger text file, the first bytes shown (a Range read), read-only
const IMAGE = /\.(png|jpe?g|gif|webp|svg|ico|bmp|avif)$/i;
const EMPTY = 'Pick a file in the tree. Drop files on a folder to upload.';

export function setButtons() {
  const o = state.open;
  const sel = state.selected;
  const target = o ? o.path : (sel && sel.path !== '/' ? sel.path : null);
  $('edit').disabled = !o || o.kind !== 'text' || !!o.partial || state.editing;
  $('forget').hidden = !state.token; // no token kept: a daemon without auth, nothing to forget
  $('edit').hidden = state.editing;
  $('save').hidden = $('cancel').hidden = !state.editing;
  $('save').disabled = !state.editing;
  $('move').disabled = !target;
  $('delete').disabled = !target;
  $('download').disabled = !o;
  $('newdir').disabled = !isDefault();
  $('newdir').title = isDefault() ? 'new folder in the selected folder'
    : 'the named-sandbox API has no mkdir; upload or create a file with a path instead';
}

// note shows msg above the view, with a button per [label, fn] of actions
// ('' hides it).
export function note(msg, actions) {
  const n = $('viewnote');
  n.replaceChildren();
  if (!msg) { n.hidden = true; return; }
  n.append(msg + ' ');
  for (const [label, fn] of actions || []) {
    const b = el('button', '', label);
    b.onclick = fn;
    n.append(b, ' ');
  }
  n.hidden = false;
}

// openGen counts openFile calls: a call that a later one overtook while
// it waited for the server leaves the view to the later one. wanted is the
// file last asked for: a reload (keepScroll) of another file, the one
// still shown while the new one loads, is dropped, so it cannot cover the
// file just clicked.
let openGen = 0;
let wanted = null;
let reopenTimer = 0;

export async function openFile(path, { keepScroll } = {}) {
  if (keepScroll && wanted !== path) return;
  wanted = path;
  const gen = ++openGen;
  const view = $('view');
  const scroll = keepScroll ? view.scrollTop : 0;
  const entry = await fsapi.stat(path);
  if (gen !== openGen) return;
  if (entry.isDir) {
    await reveal(path);
    return;
  }
  const o = { path, entry, size: entry.size, kind: 'binary' };
  let content;
  if (entry.size <= MAX_VIEW) {
    const blob = await fsapi.read(path);
    if (gen !== openGen) return;
    if (IMAGE.test(path)) {
      o.kind = 'image';
      o.url = URL.createObjectURL(path.toLowerCase().endsWith('.svg') ? new Blob([blob], { type: 'image/svg+xml' }) : blob);
      const img = el('img');
      img.src = o.url;
      img.alt = basename(path);
      content = el('div', 'img', img);
    } else {
      const buf = new Uint8Array(await blob.arrayBuffer());
      if (gen !== openGen) return;
      const text = decodeText(buf);
      if (text !== null) {
        o.kind = 'text';
        o.text = text;
        content = renderText(text, path);
      }
    }
  } else if (!IMAGE.test(path)) {
    // A large file: its first HEAD_VIEW bytes, shown when they are text.
    const buf = new Uint8Array(await fsapi.head(path, HEAD_VIEW));
    if (gen !== openGen) return;
    const text = decodeText(trimUTF8(buf));
    if (text !== null) {
      o.kind = 'text';
      o.partial = buf.length;
      o.text = text;
      content = renderText(text, path);
    }
  }
  if (o.kind === 'binary') content = renderBinary(o);
  if (state.open && state.open.url) URL.revokeObjectURL(state.open.url);
  state.open = o;
  state.editing = false;
  state.dirty = false;
  $('viewpath').textContent = path;
  $('viewpath').title = path;
  $('viewmeta').textContent = `${fmtSize(entry.size)} · ${entry.mode} · ${entry.modTime.replace('T', ' ').replace('Z', ' UTC')}`;
  delete view.dataset.aside;
  view.replaceChildren(content);
  view.scrollTop = scroll;
  note(o.partial ? `Showing the first ${fmtSize(o.partial)} of ${fmtSize(entry.size)}: the file is cut here, and read-only. Download it for the whole.` : '');
  setButtons();
}

// trimUTF8 drops the bytes of a UTF-8 sequence that a cut split at the end.
function trimUTF8(buf) {
  let i = buf.length;
  for (let k = 1; k <= 3 && i - k >= 0; k++) {
    const b = buf[i - k];
    if ((b & 0xc0) !== 0x80) { // the lead byte of the last sequence
      const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
      return need > k ? buf.subarray(0, i - k) : buf;
    }
  }
  return buf;
}

// decodeText is buf as UTF-8 text, or null for binary (a NUL byte in the
// first 8 KiB, or bytes that are not UTF-8).
export function decodeText(buf) {
  if (buf.subarray(0, 8192).includes(0)) return null;
  try { return new TextDecoder('utf-8', { fatal: true }).decode(buf); } catch (_) { return null; }
}

function renderText(text, path) {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  const ln = el('div', 'ln', lines.map((_, i) => i + 1).join('\n'));
  const tx = el('pre', 'tx');
  const shown = lines.join('\n');
  const hl = highlight(path, shown); // spans made with textContent
  if (hl) { tx.dataset.lang = hlLanguage(path); tx.append(hl); } else tx.textContent = shown;
  return el('div', 'code', ln, tx);
}

function renderBinary(o) {
  const b = el('button', '', 'download');
  b.onclick = download;
  const size = `${fmtSize(o.size)} (${o.size} bytes)` + (o.size > MAX_VIEW ? ', too large to show' : '');
  return el('div', 'binary', el('p', '', 'Binary file, ', el('b', '', size), '.'), el('p', '', b));
}

export function closeFile() {
  wanted = null;
  openGen++;
  if (state.open && state.open.url) URL.revokeObjectURL(state.open.url);
  state.open = null;
  state.editing = false;
  state.dirty = false;
  $('viewpath').textContent = 'no file open';
  $('viewmeta').textContent = '';
  $('view').replaceChildren(el('div', 'empty', EMPTY));
  delete $('view').dataset.aside;
  note('');
  setButtons();
}

// showAside shows in the file view what is not a file's content (the diff
// of a change, history.js) about path, in place of the open file. It asks
// first when that would drop unsaved edits, and says whether it showed.
export async function showAside(path, meta, content) {
  if (state.editing && state.dirty && !(await ask('Discard your unsaved edits?', null))) return false;
  closeFile();
  $('viewpath').textContent = path;
  $('viewpath').title = path;
  $('viewmeta').textContent = meta;
  $('view').replaceChildren(content);
  $('view').dataset.aside = path;
  return true;
}

// takeView gives the view to content (the editor): a reload begun before
// (an event's reopen) must not replace it when it lands.
export function takeView(content) {
  ++openGen;
  clearTimeout(reopenTimer);
  $('view').replaceChildren(content);
}

export async function download() {
  const o = state.open;
  if (!o) return;
  try {
    const blob = await fsapi.read(o.path);
    const url = URL.createObjectURL(blob);
    const a = el('a');
    a.href = url;
    a.download = basename(o.path);
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 30000);
  } catch (err) { fail('download ' + o.path, err); }
}

// scheduleReopen reloads the open file a little after a change on disk
// (coalescing a burst of events), keeping its scroll.
export function scheduleReopen(path) {
  clearTimeout(reopenTimer);
  reopenTimer = setTimeout(() => {
    if (state.open && state.open.path === path && !state.editing) {
      openFile(path, { keepScroll: true }).catch((err) => { if (err.status !== 404) fail('reload ' + path, err); });
    }
  }, 150);
}

// stopReopen drops a reload of the open file that the feed asked for, before
// the console itself moves or deletes it (the reload would ask for a path
// that is gone).
export function stopReopen(path) {
  if (!state.open || state.open.path !== path) return;
  clearTimeout(reopenTimer);
  wanted = null;
}
