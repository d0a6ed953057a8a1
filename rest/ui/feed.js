// The change feed's list: events kept (folded), filtered by origin, path
// and the daemon's default excludes, shown newest first; and what a live
// event does to the tree and the open file.
import { $, el } from './dom.js';
import { state, onFeed, ownWrites } from './state.js';
import { fail } from './dialogs.js';
import { reloadLoadedDirs, scheduleRefresh } from './tree.js';
import { note, openFile, scheduleReopen } from './viewer.js';
import { compare } from './editor.js';
import { openPath } from './ops.js';
import { fmtSize, fmtTime } from './fmt.js';
import { dirname } from './paths.js';

const MAX_FEED = 2000; // events kept; the list shows the newest that pass the filters
const MAX_SHOWN = 500;

// hidden reports whether the feed leaves a path out unless asked: the
// names watchers exclude by default, as the daemon lists them
// (setExcludes); the console's own watcher excludes nothing, so the tree
// follows them.
let hidden = () => false;

// setExcludes takes the daemon's default excludes (GET /v1/sandboxes,
// defaultExcludes) and matches them as the daemon does: a pattern without
// "/" against each component of the path, one with "/" against the path
// and its ancestors; "*" and "?" stay within a component.
export function setExcludes(patterns) {
  const glob = (p) => new RegExp('^' + p.replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]') + '$');
  const pats = (patterns || []).filter(Boolean).map((p) => [p.includes('/'), glob(p.replace(/^\/+|\/+$/g, ''))]);
  hidden = (path) => {
    const cs = path.split('/').filter(Boolean);
    return pats.some(([deep, re]) => (deep ? cs.some((_, i) => re.test(cs.slice(0, i + 1).join('/'))) : cs.some((c) => re.test(c))));
  };
}

function feedFilter() {
  const origins = new Set([...document.querySelectorAll('.filters input[data-origin]')]
    .filter((i) => i.checked).map((i) => i.dataset.origin));
  const q = $('pathfilter').value.trim();
  const all = $('showhidden').checked;
  return (ev) => origins.has(ev.origin) && (all || !hidden(ev.path)) &&
    (!q || ev.path.includes(q) || (ev.old_path || '').includes(q));
}

function feedItem(ev, fresh) {
  // The daemon's own upload spool files (.sandfs-upload-*.part) are shown dimmed.
  const aux = /\/\.sandfs-[^/]*\.part$/.test(ev.path);
  const p = el('span', 'p', ev.path + (ev.is_dir ? '/' : ''));
  p.title = ev.path;
  p.onclick = () => { if (ev.type !== 'remove') openPath(ev.path, ev.is_dir); };
  const li = el('li', 'ev' + (fresh ? ' new' : '') + (aux ? ' aux' : ''),
    el('span', 't', fmtTime(ev.timestamp)), el('span', 'ty ' + ev.type, ev.type), el('span', 'badge ' + ev.origin, ev.origin), p);
  li.dataset.origin = ev.origin;
  li.dataset.type = ev.type;
  li.dataset.path = ev.path;
  if (ev.seq) li.dataset.seq = ev.seq;
  if (ev.pid != null) li.dataset.pid = ev.pid;
  if (ev.actor) li.dataset.actor = ev.actor;
  if (ev.found_at_start) li.dataset.found = '1';
  if (ev.writes) li.dataset.writes = ev.writes;
  const extra = [];
  if (ev.found_at_start) extra.push('found at start');
  if (ev.old_path) extra.push('from ' + ev.old_path);
  if (ev.actor) extra.push('by ' + ev.actor);
  if (ev.pid != null) extra.push((ev.comm ? ev.comm + ' · ' : '') + 'pid ' + ev.pid + (ev.uid != null ? ' · uid ' + ev.uid : ''));
  if (ev.writes) extra.push('written');
  if (!ev.is_dir && (ev.type === 'write' || ev.type === 'create') && ev.size) extra.push(fmtSize(ev.size));
  if (extra.length) li.appendChild(el('span', 'x', extra.join(' · ')));
  return li;
}

export function renderFeed() {
  const keep = feedFilter();
  const frag = document.createDocumentFragment();
  let n = 0;
  for (let i = state.events.length - 1; i >= 0 && n < MAX_SHOWN; i--) {
    if (keep(state.events[i])) { frag.appendChild(feedItem(state.events[i], false)); n++; }
  }
  $('feed').replaceChildren(frag);
  countFeed();
}

function countFeed() {
  $('feedcount').textContent = state.events.length ? `${state.events.length} events` : '';
}

// clearFeed empties the list (the sandbox's place in the journal stays).
export function clearFeed() {
  state.events = [];
  state.lastOf = new Map();
  renderFeed();
}

// foldEvent folds a write of a path just created (its last event in the
// feed, by the same origin and actor) into that create, so a new file is
// one row: the create, with the written size. It returns the row folded
// into, or null.
function foldEvent(ev) {
  if (state.lastOf.size > 4 * MAX_FEED) state.lastOf.clear(); // bounded: a fold is of recent events
  if (ev.type !== 'write') { if (!ev.is_dir) state.lastOf.set(ev.path, ev); if (ev.old_path) state.lastOf.delete(ev.old_path); return null; }
  const c = state.lastOf.get(ev.path);
  if (!c || c.type !== 'create' || c.origin !== ev.origin || c.actor !== ev.actor) { state.lastOf.set(ev.path, ev); return null; }
  c.size = ev.size;
  c.timestamp = ev.timestamp;
  c.writes = (c.writes || 0) + 1;
  return c;
}

// pushEvents keeps events in the feed's list, folded, without showing them.
export function pushEvents(evs) {
  for (const ev of evs) if (!foldEvent(ev)) state.events.push(ev);
  if (state.events.length > MAX_FEED) state.events.splice(0, state.events.length - MAX_FEED);
}

// onEvent takes one live event: the list, the hooks (onFeed), the tree's
// folders it touches, and the open file.
export function onEvent(ev) {
  if (ev.seq) {
    if (ev.seq <= state.lastSeq) return; // shown already (the history page, or a replay)
    state.lastSeq = ev.seq;
    state.resume = true;
  }
  const into = foldEvent(ev);
  if (into) {
    const row = into.seq && $('feed').querySelector(`li[data-seq="${into.seq}"]`);
    if (row) row.replaceWith(feedItem(into, true));
  } else {
    state.events.push(ev);
    if (state.events.length > MAX_FEED) state.events.splice(0, state.events.length - MAX_FEED);
    if (feedFilter()(ev)) {
      const list = $('feed');
      list.prepend(feedItem(ev, true));
      while (list.childElementCount > MAX_SHOWN) list.lastElementChild.remove();
    }
  }
  countFeed();

  for (const fn of onFeed) fn(ev);
  scheduleRefresh(dirname(ev.path));
  if (ev.old_path) scheduleRefresh(dirname(ev.old_path));
  if (ev.is_dir) scheduleRefresh(ev.path);

  const o = state.open;
  if (!o) return;
  // A rename onto the open file is a save by rename (sed -i, os.replace,
  // an editor's atomic save, temp-then-mv): its content changed.
  const onto = ev.type === 'rename' && ev.path === o.path;
  if (ev.type === 'rename' && ev.old_path === o.path && !onto) {
    note(`Moved to ${ev.path} (${ev.origin}).`, [['follow', () => openFile(ev.path).catch((e) => fail('open', e))]]);
  } else if (ev.path === o.path && ev.type === 'remove') {
    note(`Deleted on disk (${ev.origin}).`);
  } else if (onto || (ev.path === o.path && (ev.type === 'write' || ev.type === 'create' || ev.type === 'chmod'))) {
    if (state.editing) { // edited or not yet: the editor's text is the old one
      if (isEcho(ev, o)) return;
      o.stale = true; // save asks: compare or overwrite
      note(`Changed on disk (${ev.origin}) while you edit.`, [['reload, drop my edits', () => openFile(o.path)], ['compare', compare]]);
    } else {
      scheduleReopen(o.path);
    }
  }
}

// isEcho reports whether ev leaves the open file o as the console read it:
// the echo of its own write, or an event whose size and mtime are those
// of the stat the view was made from.
function isEcho(ev, o) {
  if (ev.origin === 'api' && (ownWrites.get(ev.path) || 0) > Date.now()) return true;
  return ev.type !== 'rename' && ev.mtime != null && ev.size === o.entry.size &&
    Math.abs(ev.mtime - Date.parse(o.entry.modTime) / 1000) < 0.002;
}

// overflow says the feed lost events and reloads the tree, which may have
// missed them too.
export function overflow(msg) {
  const b = $('overflow');
  const x = el('button', '', 'dismiss');
  x.onclick = () => { b.hidden = true; };
  b.replaceChildren('⚠ ' + msg + ' The tree was reloaded.', x);
  b.hidden = false;
  reloadLoadedDirs();
}

export function setLive(on, text) {
  const l = $('live');
  l.classList.toggle('on', on);
  l.classList.toggle('off', !on);
  l.textContent = 'feed: ' + text;
}
