// What the console does to files: move, delete, new file and folder,
// upload (with progress), and the tree's clicks and drag and drop.
import { $, el } from './dom.js';
import { state } from './state.js';
import { fsapi, uploadFile } from './api.js';
import { ask, fail, setStatus } from './dialogs.js';
import { expand, isOpen, loadDir, nodeOf, reveal, scheduleRefresh, select, selectedDir } from './tree.js';
import { closeFile, openFile, setButtons, stopReopen } from './viewer.js';
import { startEdit } from './editor.js';
import { basename, dirname, join } from './paths.js';
import { fmtSize } from './fmt.js';

// currentTarget is what move and delete act on: the open file, else what
// the tree selects (never the root).
export function currentTarget() {
  if (state.open) return { path: state.open.path, isDir: false };
  if (state.selected && state.selected.path !== '/') return state.selected;
  return null;
}

async function moveEntry(from, to) {
  if (!to || to === from) return;
  if (!to.startsWith('/')) to = join(dirname(from), to);
  stopReopen(from);
  try {
    await fsapi.rename(from, to);
    setStatus(`moved ${from} → ${to}`);
    scheduleRefresh(dirname(from));
    scheduleRefresh(dirname(to));
    if (state.open && state.open.path === from) await openFile(to);
    await loadDir(dirname(to)).catch(() => {});
    await reveal(to);
  } catch (err) { fail('move ' + from, err); }
}

export async function doMove() {
  const t = currentTarget();
  if (!t) return;
  const to = await ask(`Rename or move ${t.path} to`, t.path);
  if (to) await moveEntry(t.path, to);
}

export async function doDelete() {
  const t = currentTarget();
  if (!t) return;
  const ok = await ask(`Delete ${t.path}${t.isDir ? ' and everything in it' : ''}?`, null);
  if (!ok) return;
  stopReopen(t.path);
  try {
    await fsapi.remove(t.path, t.isDir);
    setStatus('deleted ' + t.path);
    if (state.open && state.open.path === t.path) closeFile();
    select(dirname(t.path), true);
    scheduleRefresh(dirname(t.path));
  } catch (err) { fail('delete ' + t.path, err); }
}

export async function doNewFile() {
  const dir = selectedDir();
  const name = await ask(`New file in ${dir}`, 'untitled.txt');
  if (!name) return;
  const p = name.startsWith('/') ? name : join(dir, name);
  try {
    await fsapi.write(p, '');
    await loadDir(dirname(p)).catch(() => {});
    await reveal(p);
    await openFile(p);
    startEdit();
  } catch (err) { fail('create ' + p, err); }
}

export async function doNewDir() {
  const dir = selectedDir();
  const name = await ask(`New folder in ${dir}`, 'new-folder');
  if (!name) return;
  const p = name.startsWith('/') ? name : join(dir, name);
  try {
    await fsapi.mkdir(p);
    await loadDir(dirname(p)).catch(() => {});
    await reveal(p);
    await expand(p);
  } catch (err) { fail('mkdir ' + p, err); }
}

export async function uploadAll(dir, files) {
  const box = $('uploads');
  for (const file of files) {
    const pct = el('span', 'pct', '0%');
    const bar = el('progress');
    bar.max = 1;
    bar.value = 0;
    const item = el('div', 'up', el('div', 'n', el('span', '', join(dir, file.name)), pct), bar);
    item.dataset.name = file.name;
    box.prepend(item);
    try {
      await uploadFile(dir, file, (done, total) => {
        bar.value = total ? done / total : 1;
        pct.textContent = Math.floor(100 * bar.value) + '%';
      });
      bar.value = 1;
      pct.textContent = fmtSize(file.size);
      item.classList.add('done');
      setTimeout(() => item.remove(), 8000);
      scheduleRefresh(dir);
    } catch (err) {
      item.classList.add('fail');
      pct.textContent = 'failed';
      item.title = err.message;
      fail('upload ' + file.name, err);
    }
  }
}

// openPath shows path in the tree and, a file, in the view.
export async function openPath(path, isDir) {
  try {
    await reveal(path);
    if (!isDir) await openFile(path);
  } catch (err) { fail('open ' + path, err); }
}

export function wireTree() {
  const tree = $('tree');
  tree.addEventListener('click', async (e) => {
    const node = nodeOf(e.target);
    if (!node) return;
    const p = node.dataset.path;
    const dir = node.classList.contains('dir');
    select(p, dir);
    try {
      if (dir) {
        await expand(p, !isOpen(node));
        setButtons();
      } else {
        if (state.editing && state.dirty && !(await ask('Discard your unsaved edits?', null))) return;
        await openFile(p);
      }
    } catch (err) { fail('open ' + p, err); }
  });

  // Drag a row onto a folder to move it; drop files from the desktop to upload.
  let over = null;
  const clearOver = () => { if (over) over.classList.remove('droptarget'); over = null; tree.classList.remove('drop'); };
  const dropDir = (e) => {
    const node = nodeOf(e.target);
    if (!node) return '/';
    return node.classList.contains('dir') ? node.dataset.path : dirname(node.dataset.path);
  };
  tree.addEventListener('dragstart', (e) => {
    const node = nodeOf(e.target);
    if (!node) return;
    e.dataTransfer.setData('application/x-sandfs-path', node.dataset.path);
    e.dataTransfer.effectAllowed = 'move';
  });
  tree.addEventListener('dragover', (e) => {
    e.preventDefault();
    const d = dropDir(e);
    const target = state.nodes.get(d);
    if (target !== over) { clearOver(); over = target; if (over) over.classList.add('droptarget'); }
    tree.classList.add('drop');
  });
  tree.addEventListener('dragleave', (e) => { if (!tree.contains(e.relatedTarget)) clearOver(); });
  tree.addEventListener('drop', (e) => {
    e.preventDefault();
    const dir = dropDir(e);
    clearOver();
    const moved = e.dataTransfer.getData('application/x-sandfs-path');
    if (moved) {
      if (dir !== dirname(moved) && dir !== moved && !dir.startsWith(moved + '/')) moveEntry(moved, join(dir, basename(moved)));
      return;
    }
    if (e.dataTransfer.files.length) uploadAll(dir, [...e.dataTransfer.files]);
  });
  // Dropping on the file view uploads into the selected folder.
  const vp = $('viewpane');
  vp.addEventListener('dragover', (e) => { if (e.dataTransfer.types.includes('Files')) e.preventDefault(); });
  vp.addEventListener('drop', (e) => {
    if (!e.dataTransfer.files.length) return;
    e.preventDefault();
    uploadAll(selectedDir(), [...e.dataTransfer.files]);
  });
}
