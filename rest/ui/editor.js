// Editing the open text file: the editor, saving (asking first over a file
// that changed on disk meanwhile), and compare, a line diff of the disk
// against the editor's text.
import { $, el } from './dom.js';
import { state } from './state.js';
import { fsapi } from './api.js';
import { fail, setStatus } from './dialogs.js';
import { decodeText, note, openFile, setButtons, takeView } from './viewer.js';
import { lineDiff } from './linediff.js';

export function startEdit() {
  const o = state.open;
  if (!o || o.kind !== 'text') return;
  const ta = el('textarea');
  ta.id = 'editor';
  ta.spellcheck = false;
  ta.value = o.text;
  ta.addEventListener('input', () => { state.dirty = true; clearSaved(); });
  ta.addEventListener('keydown', (e) => {
    if (e.key === 'Tab' && !e.shiftKey) {
      e.preventDefault();
      ta.setRangeText('\t', ta.selectionStart, ta.selectionEnd, 'end');
      state.dirty = true;
    }
  });
  // What a reload begun before the click would have shown, checkStale
  // tells instead.
  takeView(ta);
  state.editing = true;
  setButtons();
  ta.focus();
  checkStale(o);
}

// checkStale marks the file open in the editor stale when the file on
// disk is no longer the one the view was made from.
async function checkStale(o) {
  let e;
  try { e = await fsapi.stat(o.path); } catch { return; }
  if (state.open !== o || !state.editing || o.stale) return;
  if (e.size !== o.entry.size || e.modTime !== o.entry.modTime) {
    o.stale = true;
    note('Changed on disk while you edit.', [['reload, drop my edits', () => openFile(o.path)], ['compare', compare]]);
  }
}

// save writes the editor's text; over a file that changed on disk since
// the edit began it asks first: compare (the diff, disk to editor) or
// overwrite.
export async function save(overwrite) {
  const o = state.open;
  const ta = $('editor');
  if (!o || !ta) return;
  if (o.stale && overwrite !== true) {
    note('The file changed on disk since you began editing. Save over it?',
      [['compare', compare], ['overwrite', () => save(true)], ['reload, drop my edits', () => openFile(o.path)]]);
    return;
  }
  try {
    await fsapi.write(o.path, ta.value);
    state.editing = false;
    state.dirty = false;
    setStatus(`saved ${o.path} (${new Blob([ta.value]).size} bytes)`);
    await openFile(o.path);
  } catch (err) { fail('save ' + o.path, err); }
}

// clearSaved clears a "saved" status at the next edit.
function clearSaved() {
  if ($('status').textContent.startsWith('saved ')) setStatus('');
}

// compare shows, above the editor, how the file on disk differs from the
// editor's text (a line diff: "-" on disk only, "+" in the editor only).
export async function compare() {
  const o = state.open;
  const ta = $('editor');
  if (!o || !ta) return;
  let disk;
  try {
    const buf = new Uint8Array(await (await fsapi.read(o.path)).arrayBuffer());
    disk = decodeText(buf);
  } catch (err) { fail('compare ' + o.path, err); return; }
  if (disk === null) { setStatus('the file on disk is not text now', true); return; }
  let pre = $('comparediff');
  if (!pre) {
    pre = el('pre', 'diff');
    pre.id = 'comparediff';
    $('view').prepend(pre);
  }
  pre.replaceChildren();
  for (const [kind, line] of lineDiff(disk, ta.value)) {
    const cls = { '-': 'del', '+': 'add', ' ': 'ctx', '…': 'hunk' }[kind];
    pre.append(el('span', cls, (kind === '…' ? line : kind + line) + '\n'));
  }
}
