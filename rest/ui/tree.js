// The file tree: a node per path, folders loaded when opened, refreshed
// (coalesced per folder) when the feed says something in them changed.
import { $, el } from './dom.js';
import { state } from './state.js';
import { fsapi } from './api.js';
import { fail } from './dialogs.js';
import { basename, dirname, join } from './paths.js';
import { fmtSize } from './fmt.js';

function makeNode(path, isDir, entry) {
  const node = el('div', 'node ' + (isDir ? 'dir' : 'file'));
  node.dataset.path = path;
  node.setAttribute('role', 'treeitem');
  const icon = isDir ? '■' : (entry && entry.type === 'symlink' ? '↪' : '·');
  const row = el('div', 'row', el('span', 'twisty', isDir ? '▸' : ''), el('span', 'icon', icon),
    el('span', 'name', path === '/' ? '/' : basename(path)), el('span', 'size'));
  row.draggable = path !== '/';
  node.appendChild(row);
  if (isDir) {
    const kids = el('div', 'children');
    kids.hidden = true;
    node.appendChild(kids);
  }
  setNodeEntry(node, entry);
  state.nodes.set(path, node);
  return node;
}

function setNodeEntry(node, entry) {
  if (!entry) return;
  const sz = node.querySelector(':scope > .row .size');
  sz.textContent = entry.isDir ? '' : fmtSize(entry.size);
  node.querySelector(':scope > .row').title = `${entry.path}\n${entry.type}  ${entry.mode}  ${entry.modTime}` +
    (entry.isDir ? '' : `  ${entry.size} bytes`);
}

export function isOpen(node) { return node.classList.contains('open'); }

export async function loadDir(path) {
  const node = state.nodes.get(path);
  if (!node) return;
  const kids = node.querySelector(':scope > .children');
  const entries = await fsapi.list(path);
  entries.sort((a, b) => (b.isDir - a.isDir) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const seen = new Set();
  const frag = document.createDocumentFragment();
  for (const e of entries) {
    if (e.path === path) continue;
    seen.add(e.path);
    let child = state.nodes.get(e.path);
    if (child && child.classList.contains('dir') !== e.isDir) {
      forget(e.path);
      child = null;
    }
    const fresh = !child;
    if (fresh) child = makeNode(e.path, e.isDir, e);
    else setNodeEntry(child, e);
    if (fresh && node.dataset.loaded) child.classList.add('flash');
    frag.appendChild(child);
  }
  for (const old of kids.querySelectorAll(':scope > .node')) {
    if (!seen.has(old.dataset.path)) forget(old.dataset.path);
  }
  kids.replaceChildren(frag);
  node.dataset.loaded = '1';
  if (!entries.length || (entries.length === 1 && entries[0].path === path)) {
    kids.appendChild(el('div', 'row', el('span', 'twisty'), el('span', 'name faint', 'empty')));
  }
}

// forget drops path and everything under it from the node map.
function forget(path) {
  for (const p of [...state.nodes.keys()]) {
    if (p === path || p.startsWith(path === '/' ? '/' : path + '/')) state.nodes.delete(p);
  }
}

export async function expand(path, open = true) {
  const node = state.nodes.get(path);
  if (!node || !node.classList.contains('dir')) return;
  if (open && !node.dataset.loaded) await loadDir(path);
  node.classList.toggle('open', open);
  node.querySelector(':scope > .children').hidden = !open;
  node.querySelector(':scope > .row .twisty').textContent = open ? '▾' : '▸';
}

export function select(path, isDir) {
  for (const n of document.querySelectorAll('.node.sel')) n.classList.remove('sel');
  const node = state.nodes.get(path);
  if (node) node.classList.add('sel');
  state.selected = { path, isDir };
}

export function selectedDir() {
  if (!state.selected) return '/';
  return state.selected.isDir ? state.selected.path : dirname(state.selected.path);
}

// reveal expands the ancestors of path and selects it.
export async function reveal(path) {
  const parts = path.split('/').filter(Boolean);
  let cur = '/';
  await expand('/');
  for (let i = 0; i < parts.length - 1; i++) {
    cur = join(cur, parts[i]);
    await expand(cur);
  }
  const node = state.nodes.get(path);
  if (node) {
    select(path, node.classList.contains('dir'));
    node.scrollIntoView({ block: 'nearest' });
  }
}

export async function resetTree() {
  state.nodes.clear();
  const root = makeNode('/', true, null);
  root.classList.add('root');
  $('tree').replaceChildren(root);
  await expand('/');
  select('/', true);
}

// Refreshes asked for by the feed, coalesced per directory.
const pendingDirs = new Set();
let refreshTimer = 0;
export function scheduleRefresh(dir) {
  pendingDirs.add(dir);
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(async () => {
    const dirs = [...pendingDirs];
    pendingDirs.clear();
    for (const d of dirs) {
      const node = state.nodes.get(d);
      if (node && node.dataset.loaded) {
        try { await loadDir(d); } catch (err) { if (err.status !== 404) fail('refresh ' + d, err); }
      }
    }
  }, 120);
}

export async function reloadLoadedDirs() {
  for (const [p, node] of [...state.nodes]) {
    if (node.dataset.loaded && state.nodes.get(p) === node) {
      try { await loadDir(p); } catch (_) { /* gone */ }
    }
  }
}

// nodeOf is the tree node whose own row holds el (not its children).
export function nodeOf(target) {
  const row = target && target.closest ? target.closest('.row') : null;
  return row && row.parentElement.classList.contains('node') ? row.parentElement : null;
}
