// sandfs console: browse, view, edit and move the files of a sandbox, and
// watch its changes live. Plain script, no build step, no outside assets; it
// talks only to the daemon that served it, through the public API:
//
//   files   the named-sandbox family /v1/sandboxes/{name}/fs/* (any sandbox,
//           "default" included); new folders and uploads of sandbox
//           "default" use /v2/fs/mkdir and /v2/fs/upload (streamed, no size
//           cap), other sandboxes PUT fs/write (16 MiB).
//   feed    sandbox "default": SSE GET /v2/watch/{id}/events, read with
//           fetch() so the token travels in the Authorization header, never
//           in a URL (no server or proxy log, history entry or Referer ever
//           holds it). Other sandboxes: the §5 websocket, which a browser
//           cannot give headers, so the token goes as ?access_token there.
//           Either way the feed opens with the last events the journal kept
//           (GET /v1/sandboxes/{name}/events?last=100, across restarts too),
//           then goes on live from the seq that page ended at: the watcher's
//           cursor, or the socket's subscribe "since"; an event whose seq was
//           shown already is dropped, so none shows twice.
//   history checkpoints, "what changed since" and restore: history.js.
//   token   taken from the fragment of the URL the daemon logs
//           (/ui/#token=T: a fragment never reaches a server, a proxy log or
//           a Referer), and at once removed from the address bar and the
//           history entry; else asked when the daemon answers 401. Kept in
//           sessionStorage (this tab only), sent as "Authorization: Bearer".
'use strict';

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = 'sandfs.token';
const SB_KEY = 'sandfs.sandbox';
const MAX_VIEW = 4 << 20; // bytes shown as text or image whole
const HEAD_VIEW = 1 << 20; // of a larger text file, the first bytes shown (a Range read), read-only
const MAX_FEED = 2000; // events kept; the list shows the newest that pass the filters
const IMAGE = /\.(png|jpe?g|gif|webp|svg|ico|bmp|avif)$/i;

// tokenFromFragment moves a "#token=T" of the address into storage and
// out of the address bar (history.replaceState: no reload, no new history
// entry), and returns the token to use: the fragment's, else the stored one.
function tokenFromFragment(loc, hist, store) {
  const frag = new URLSearchParams((loc.hash || '').replace(/^#/, ''));
  const t = (frag.get('token') || '').trim();
  if (frag.has('token')) {
    frag.delete('token');
    const rest = frag.toString();
    hist.replaceState(hist.state, '', loc.pathname + loc.search + (rest ? '#' + rest : ''));
  }
  if (t) store.setItem(TOKEN_KEY, t);
  return t || store.getItem(TOKEN_KEY) || '';
}

const state = {
  token: tokenFromFragment(location, history, sessionStorage),
  sandbox: '',
  nodes: new Map(), // API path -> tree node element
  selected: null, // {path, isDir}
  open: null, // {path, kind, text, size, entry}
  editing: false,
  dirty: false,
  events: [],
  feedGen: 0,
  watcher: null,
  feedStop: null,
  lastOf: new Map(), // path -> its last event in the feed (foldEvent)
  lastSeq: 0, // the newest seq the feed holds: live events at or before it are not shown again
  resume: false, // lastSeq is a place in the journal the live feed goes on after
};

// What other parts of the console (history.js) do when the sandbox
// changes (onSwitch) and on each live event of the feed (onFeed).
const onSwitch = [];
const onFeed = [];

// ---- API --------------------------------------------------------------

class APIError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

function authHeaders(extra) {
  const h = Object.assign({}, extra || {});
  if (state.token) h.Authorization = 'Bearer ' + state.token;
  return h;
}

async function api(method, url, opts = {}) {
  for (let attempt = 0; ; attempt++) {
    // no-store: a read must see the file as it is now, never a copy the
    // browser kept by Last-Modified heuristics.
    const init = { method, headers: authHeaders(opts.headers), cache: 'no-store' };
    if (opts.json !== undefined) {
      init.body = JSON.stringify(opts.json);
      init.headers['Content-Type'] = 'application/json';
    } else if (opts.body !== undefined) {
      init.body = opts.body;
    }
    const res = await fetch(url, init);
    if (res.status === 401 && attempt < 3) {
      await askToken(state.token ? 'The daemon refused that token.' : '');
      continue;
    }
    if (!res.ok) throw new APIError(res.status, await errorText(res));
    return res;
  }
}

async function errorText(res) {
  const text = await res.text();
  try {
    const j = JSON.parse(text);
    return j.error || j.message || j.detail || j.title || text;
  } catch (_) {
    return text || res.statusText;
  }
}

const enc = encodeURIComponent;
const fsURL = (op, q) => `/v1/sandboxes/${enc(state.sandbox)}/fs/${op}` + (q ? '?' + new URLSearchParams(q) : '');
const isDefault = () => state.sandbox === 'default';

// ownWrites: path -> until when an api event of it is the echo of this
// console's own write (not a change on disk under an edit).
const ownWrites = new Map();

const fsapi = {
  async list(dir) {
    const j = await (await api('GET', fsURL('list', { path: dir }))).json();
    return j.entries || [];
  },
  async stat(p) { return (await api('GET', fsURL('stat', { path: p }))).json(); },
  async read(p) { return (await api('GET', fsURL('read', { path: p }))).blob(); },
  async head(p, n) { return (await api('GET', fsURL('read', { path: p }), { headers: { Range: `bytes=0-${n - 1}` } })).arrayBuffer(); },
  async write(p, body) {
    const now = Date.now();
    if (ownWrites.size > 64) for (const [k, until] of ownWrites) if (until < now) ownWrites.delete(k);
    ownWrites.set(p, now + 3000);
    return api('PUT', fsURL('write', { path: p, mkdir: 'true' }), { body });
  },
  async rename(source, dest) { return api('POST', fsURL('rename'), { json: { source, dest } }); },
  async remove(p, recursive) { return api('DELETE', fsURL('delete', { path: p, recursive: String(!!recursive) })); },
  async mkdir(p) { return api('POST', '/v2/fs/mkdir', { json: { path: p, parents: true } }); },
};

// upload sends one file with XMLHttpRequest, whose upload events give
// progress (fetch() has none for request bodies).
function uploadFile(dir, file, onProgress) {
  const target = join(dir, file.name);
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    let body;
    if (isDefault()) {
      xhr.open('POST', '/v2/fs/upload?' + new URLSearchParams({ path: target }));
      body = new FormData();
      body.append('path', target);
      body.append('file', file, file.name);
    } else {
      xhr.open('PUT', fsURL('write', { path: target, mkdir: 'true' }));
      body = file;
    }
    if (state.token) xhr.setRequestHeader('Authorization', 'Bearer ' + state.token);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded, e.total); };
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve(target);
      else {
        let msg = xhr.responseText;
        try { const j = JSON.parse(msg); msg = j.error || j.message || j.detail || msg; } catch (_) { /* text */ }
        reject(new APIError(xhr.status, msg || 'HTTP ' + xhr.status));
      }
    };
    xhr.onerror = () => reject(new Error('network error'));
    xhr.send(body);
  });
}

// ---- paths ------------------------------------------------------------

function dirname(p) {
  const i = p.lastIndexOf('/');
  return i <= 0 ? '/' : p.slice(0, i);
}
function basename(p) { return p === '/' ? '/' : p.slice(p.lastIndexOf('/') + 1); }
function join(dir, name) { return (dir === '/' ? '' : dir) + '/' + name; }
function fmtSize(n) {
  if (n < 1024) return n + ' B';
  const u = ['KiB', 'MiB', 'GiB', 'TiB'];
  let i = -1;
  do { n /= 1024; i++; } while (n >= 1024 && i < u.length - 1);
  return (n < 10 ? n.toFixed(1) : Math.round(n)) + ' ' + u[i];
}

// ---- status, dialogs -----------------------------------------------------

let statusTimer = 0;
function setStatus(msg, isErr) {
  const el = $('status');
  el.textContent = msg;
  el.title = msg;
  el.classList.toggle('err', !!isErr);
  clearTimeout(statusTimer);
  if (!isErr) statusTimer = setTimeout(() => { el.textContent = ''; el.title = ''; }, 6000);
}
function fail(what, err) {
  console.error(what, err);
  setStatus(`${what}: ${err.message || err}`, true);
}

let tokenAsk = null;
function askToken(msg) {
  if (tokenAsk) return tokenAsk;
  const dlg = $('tokendlg');
  $('tokenerr').textContent = msg || '';
  $('tokeninput').value = '';
  tokenAsk = new Promise((resolve) => {
    dlg.onclose = () => {
      const v = $('tokeninput').value.trim();
      if (!v) { dlg.showModal(); return; }
      state.token = v;
      sessionStorage.setItem(TOKEN_KEY, v);
      tokenAsk = null;
      resolve();
    };
  });
  dlg.showModal();
  return tokenAsk;
}

// ask shows a one-line prompt (value null: a yes/no question).
function ask(title, value) {
  const dlg = $('askdlg');
  $('asktitle').textContent = title;
  const input = $('askinput');
  input.hidden = value === null;
  input.value = value || '';
  $('askcancel').onclick = () => dlg.close('cancel');
  return new Promise((resolve) => {
    dlg.onclose = () => {
      if (dlg.returnValue !== 'ok') resolve(null);
      else resolve(value === null ? true : input.value.trim());
    };
    dlg.returnValue = '';
    dlg.showModal();
    if (value !== null) {
      input.focus();
      const dot = input.value.lastIndexOf('.');
      const slash = input.value.lastIndexOf('/');
      input.setSelectionRange(slash + 1, dot > slash + 1 ? dot : input.value.length);
    }
  });
}

// ---- tree ---------------------------------------------------------------

function makeNode(path, isDir, entry) {
  const node = document.createElement('div');
  node.className = 'node ' + (isDir ? 'dir' : 'file');
  node.dataset.path = path;
  node.setAttribute('role', 'treeitem');
  const row = document.createElement('div');
  row.className = 'row';
  row.draggable = path !== '/';
  row.innerHTML = '<span class="twisty"></span><span class="icon"></span><span class="name"></span><span class="size"></span>';
  row.querySelector('.twisty').textContent = isDir ? '▸' : '';
  row.querySelector('.icon').textContent = isDir ? '■' : (entry && entry.type === 'symlink' ? '↪' : '·');
  row.querySelector('.name').textContent = path === '/' ? '/' : basename(path);
  node.appendChild(row);
  if (isDir) {
    const kids = document.createElement('div');
    kids.className = 'children';
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

function isOpen(node) { return node.classList.contains('open'); }

async function loadDir(path) {
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
    const none = document.createElement('div');
    none.className = 'row';
    none.innerHTML = '<span class="twisty"></span><span class="name faint">empty</span>';
    kids.appendChild(none);
  }
}

// forget drops path and everything under it from the node map.
function forget(path) {
  for (const p of [...state.nodes.keys()]) {
    if (p === path || p.startsWith(path === '/' ? '/' : path + '/')) state.nodes.delete(p);
  }
}

async function expand(path, open = true) {
  const node = state.nodes.get(path);
  if (!node || !node.classList.contains('dir')) return;
  if (open && !node.dataset.loaded) await loadDir(path);
  node.classList.toggle('open', open);
  node.querySelector(':scope > .children').hidden = !open;
  node.querySelector(':scope > .row .twisty').textContent = open ? '▾' : '▸';
}

function select(path, isDir) {
  for (const n of document.querySelectorAll('.node.sel')) n.classList.remove('sel');
  const node = state.nodes.get(path);
  if (node) node.classList.add('sel');
  state.selected = { path, isDir };
}

function selectedDir() {
  if (!state.selected) return '/';
  return state.selected.isDir ? state.selected.path : dirname(state.selected.path);
}

// reveal expands the ancestors of path and selects it.
async function reveal(path) {
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

async function resetTree() {
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
function scheduleRefresh(dir) {
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

async function reloadLoadedDirs() {
  for (const [p, node] of [...state.nodes]) {
    if (node.dataset.loaded && state.nodes.get(p) === node) {
      try { await loadDir(p); } catch (_) { /* gone */ }
    }
  }
}

// ---- file view ------------------------------------------------------------

function setButtons() {
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

function note(msg, actions) {
  const el = $('viewnote');
  el.replaceChildren();
  if (!msg) { el.hidden = true; return; }
  el.append(msg + ' ');
  for (const [label, fn] of actions || []) {
    const b = document.createElement('button');
    b.textContent = label;
    b.onclick = fn;
    el.append(b, ' ');
  }
  el.hidden = false;
}

// openGen counts openFile calls: a call that a later one overtook while
// it waited for the server leaves the view to the later one. wanted is the
// file last asked for: a reload (keepScroll) of another file, the one
// still shown while the new one loads, is dropped, so it cannot cover the
// file just clicked.
let openGen = 0;
let wanted = null;

async function openFile(path, { keepScroll } = {}) {
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
      content = document.createElement('div');
      content.className = 'img';
      const img = document.createElement('img');
      img.src = o.url;
      img.alt = basename(path);
      content.appendChild(img);
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
function decodeText(buf) {
  if (buf.subarray(0, 8192).includes(0)) return null;
  try { return new TextDecoder('utf-8', { fatal: true }).decode(buf); } catch (_) { return null; }
}

function renderText(text, path) {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  const wrap = document.createElement('div');
  wrap.className = 'code';
  const ln = document.createElement('div');
  ln.className = 'ln';
  ln.textContent = lines.map((_, i) => i + 1).join('\n');
  const tx = document.createElement('pre');
  tx.className = 'tx';
  const shown = lines.join('\n');
  const hl = highlight(path, shown); // highlight.js: spans made with textContent
  if (hl) { tx.dataset.lang = hlLanguage(path); tx.append(hl); } else tx.textContent = shown;
  wrap.append(ln, tx);
  return wrap;
}

function renderBinary(o) {
  const d = document.createElement('div');
  d.className = 'binary';
  d.innerHTML = '<p>Binary file, <b></b>.</p><p><button>download</button></p>';
  d.querySelector('b').textContent = `${fmtSize(o.size)} (${o.size} bytes)` + (o.size > MAX_VIEW ? ', too large to show' : '');
  d.querySelector('button').onclick = download;
  return d;
}

function closeFile() {
  wanted = null;
  openGen++;
  if (state.open && state.open.url) URL.revokeObjectURL(state.open.url);
  state.open = null;
  state.editing = false;
  state.dirty = false;
  $('viewpath').textContent = 'no file open';
  $('viewmeta').textContent = '';
  $('view').innerHTML = '<div class="empty">Pick a file in the tree. Drop files on a folder to upload.</div>';
  delete $('view').dataset.aside;
  note('');
  setButtons();
}

// showAside shows in the file view what is not a file's content (the diff
// of a change, history.js) about path, in place of the open file. It asks
// first when that would drop unsaved edits, and says whether it showed.
async function showAside(path, meta, content) {
  if (state.editing && state.dirty && !(await ask('Discard your unsaved edits?', null))) return false;
  closeFile();
  $('viewpath').textContent = path;
  $('viewpath').title = path;
  $('viewmeta').textContent = meta;
  $('view').replaceChildren(content);
  $('view').dataset.aside = path;
  return true;
}

function startEdit() {
  const o = state.open;
  if (!o || o.kind !== 'text') return;
  const ta = document.createElement('textarea');
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
  // The editor has the view now: a reload begun before the click (an
  // event's reopen) must not replace it when it lands. What that reload
  // would have shown, checkStale tells instead.
  ++openGen;
  clearTimeout(reopenTimer);
  $('view').replaceChildren(ta);
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
async function save(overwrite) {
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

async function download() {
  const o = state.open;
  if (!o) return;
  try {
    const blob = await fsapi.read(o.path);
    const url = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = url;
    a.download = basename(o.path);
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 30000);
  } catch (err) { fail('download ' + o.path, err); }
}

// clearSaved clears a "saved" status at the next edit.
function clearSaved() {
  if ($('status').textContent.startsWith('saved ')) setStatus('');
}

// compare shows, above the editor, how the file on disk differs from the
// editor's text (a line diff: "-" on disk only, "+" in the editor only).
async function compare() {
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
    pre = document.createElement('pre');
    pre.id = 'comparediff';
    pre.className = 'diff';
    $('view').prepend(pre);
  }
  pre.replaceChildren();
  for (const [kind, line] of lineDiff(disk, ta.value)) {
    const span = document.createElement('span');
    span.className = { '-': 'del', '+': 'add', ' ': 'ctx', '…': 'hunk' }[kind];
    span.textContent = (kind === '…' ? line : kind + line) + '\n';
    pre.append(span);
  }
}

// ---- file operations ----------------------------------------------------

function currentTarget() {
  if (state.open) return { path: state.open.path, isDir: false };
  if (state.selected && state.selected.path !== '/') return state.selected;
  return null;
}

// stopReopen drops a reload of the open file that the feed asked for, before
// the console itself moves or deletes it (the reload would ask for a path
// that is gone).
function stopReopen(path) {
  if (!state.open || state.open.path !== path) return;
  clearTimeout(reopenTimer);
  wanted = null;
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

async function doMove() {
  const t = currentTarget();
  if (!t) return;
  const to = await ask(`Rename or move ${t.path} to`, t.path);
  if (to) await moveEntry(t.path, to);
}

async function doDelete() {
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

async function doNewFile() {
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

async function doNewDir() {
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

async function uploadAll(dir, files) {
  const box = $('uploads');
  for (const file of files) {
    const item = document.createElement('div');
    item.className = 'up';
    item.innerHTML = '<div class="n"><span></span><span class="pct">0%</span></div><progress max="1" value="0"></progress>';
    item.querySelector('span').textContent = join(dir, file.name);
    item.dataset.name = file.name;
    box.prepend(item);
    const bar = item.querySelector('progress');
    const pct = item.querySelector('.pct');
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

// ---- change feed ----------------------------------------------------------

function feedFilter() {
  const origins = new Set([...document.querySelectorAll('.filters input[data-origin]')]
    .filter((i) => i.checked).map((i) => i.dataset.origin));
  const q = $('pathfilter').value.trim();
  const all = $('showhidden').checked;
  return (ev) => origins.has(ev.origin) && (all || !feedHidden(ev.path)) &&
    (!q || ev.path.includes(q) || (ev.old_path || '').includes(q));
}

function fmtTime(ts) {
  const d = ts ? new Date(ts * 1000) : new Date();
  return d.toTimeString().slice(0, 8);
}

function feedItem(ev, fresh) {
  const li = document.createElement('li');
  // The daemon's own upload spool files (.sandfs-upload-*.part) are shown dimmed.
  li.className = 'ev' + (fresh ? ' new' : '') + (/\/\.sandfs-[^/]*\.part$/.test(ev.path) ? ' aux' : '');
  li.dataset.origin = ev.origin;
  li.dataset.type = ev.type;
  li.dataset.path = ev.path;
  if (ev.seq) li.dataset.seq = ev.seq;
  if (ev.pid != null) li.dataset.pid = ev.pid;
  if (ev.actor) li.dataset.actor = ev.actor;
  if (ev.found_at_start) li.dataset.found = '1';
  if (ev.writes) li.dataset.writes = ev.writes;
  li.innerHTML = '<span class="t"></span><span class="ty"></span><span class="badge"></span><span class="p"></span>';
  li.querySelector('.t').textContent = fmtTime(ev.timestamp);
  const ty = li.querySelector('.ty');
  ty.textContent = ev.type;
  ty.classList.add(ev.type);
  const b = li.querySelector('.badge');
  b.textContent = ev.origin;
  b.classList.add(ev.origin);
  const p = li.querySelector('.p');
  p.textContent = ev.path + (ev.is_dir ? '/' : '');
  p.title = ev.path;
  p.onclick = () => { if (ev.type !== 'remove') openPath(ev.path, ev.is_dir); };
  const extra = [];
  if (ev.found_at_start) extra.push('found at start');
  if (ev.old_path) extra.push('from ' + ev.old_path);
  if (ev.actor) extra.push('by ' + ev.actor);
  if (ev.pid != null) extra.push((ev.comm ? ev.comm + ' · ' : '') + 'pid ' + ev.pid + (ev.uid != null ? ' · uid ' + ev.uid : ''));
  if (ev.writes) extra.push('written');
  if (!ev.is_dir && (ev.type === 'write' || ev.type === 'create') && ev.size) extra.push(fmtSize(ev.size));
  if (extra.length) {
    const x = document.createElement('span');
    x.className = 'x';
    x.textContent = extra.join(' · ');
    li.appendChild(x);
  }
  return li;
}

function renderFeed() {
  const keep = feedFilter();
  const frag = document.createDocumentFragment();
  let n = 0;
  for (let i = state.events.length - 1; i >= 0 && n < 500; i--) {
    if (keep(state.events[i])) { frag.appendChild(feedItem(state.events[i], false)); n++; }
  }
  $('feed').replaceChildren(frag);
  countFeed();
}

function countFeed() {
  $('feedcount').textContent = state.events.length ? `${state.events.length} events` : '';
}

// feedHidden reports whether the feed leaves a path out unless asked: the
// names watchers exclude by default, as the daemon lists them
// (setExcludes); the console's own watcher excludes nothing, so the tree
// follows them.
let feedHidden = () => false;

// setExcludes takes the daemon's default excludes (GET /v1/sandboxes,
// defaultExcludes) and matches them as the daemon does: a pattern without
// "/" against each component of the path, one with "/" against the path
// and its ancestors; "*" and "?" stay within a component.
function setExcludes(patterns) {
  const glob = (p) => new RegExp('^' + p.replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]') + '$');
  const pats = (patterns || []).filter(Boolean).map((p) => [p.includes('/'), glob(p.replace(/^\/+|\/+$/g, ''))]);
  feedHidden = (path) => {
    const cs = path.split('/').filter(Boolean);
    return pats.some(([deep, re]) => (deep ? cs.some((_, i) => re.test(cs.slice(0, i + 1).join('/'))) : cs.some((c) => re.test(c))));
  };
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
function pushEvents(evs) {
  for (const ev of evs) if (!foldEvent(ev)) state.events.push(ev);
  if (state.events.length > MAX_FEED) state.events.splice(0, state.events.length - MAX_FEED);
}

function onEvent(ev) {
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
      while (list.childElementCount > 500) list.lastElementChild.remove();
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

let reopenTimer = 0;
function scheduleReopen(path) {
  clearTimeout(reopenTimer);
  reopenTimer = setTimeout(() => {
    if (state.open && state.open.path === path && !state.editing) {
      openFile(path, { keepScroll: true }).catch((err) => { if (err.status !== 404) fail('reload ' + path, err); });
    }
  }, 150);
}

function overflow(msg) {
  const b = $('overflow');
  b.replaceChildren();
  b.append('⚠ ' + msg + ' The tree was reloaded.');
  const x = document.createElement('button');
  x.textContent = 'dismiss';
  x.onclick = () => { b.hidden = true; };
  b.append(x);
  b.hidden = false;
  reloadLoadedDirs();
}

function setLive(on, text) {
  const el = $('live');
  el.classList.toggle('on', on);
  el.classList.toggle('off', !on);
  el.textContent = 'feed: ' + text;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function startFeed() {
  stopFeed();
  const gen = ++state.feedGen;
  state.resume = false;
  if (isDefault()) sseFeed(gen);
  else socketFeed(gen, true);
}

// namedEvent is an event of the named family (a page of GET …/events, a
// message of the §5 socket) in the AIO shape the feed keeps.
function namedEvent(d, type) {
  return { seq: d.seq, type, path: d.path, old_path: d.oldPath, origin: d.origin || 'api', actor: d.actor,
    pid: d.pid, uid: d.uid, comm: d.comm, is_dir: d.isDir, size: d.size, found_at_start: d.foundAtStart,
    timestamp: Date.parse(d.timestamp) / 1000 };
}

// loadHistory fills the feed with the last events the journal kept; the
// live feed then goes on after the seq the page ended at (state.lastSeq,
// state.resume). When the journal cannot be read the feed starts empty, from
// now, as it did before it had one.
async function loadHistory(gen) {
  let page;
  try {
    page = await (await api('GET', `/v1/sandboxes/${enc(state.sandbox)}/events?last=100`)).json();
  } catch (err) {
    if (gen === state.feedGen) fail('the feed\'s history', err);
    return;
  }
  if (gen !== state.feedGen) return;
  state.events = [];
  state.lastOf = new Map();
  pushEvents(page.events.map((e) => namedEvent(e, e.type)));
  state.lastSeq = page.more ? page.cursor : page.latest;
  state.resume = true;
  renderFeed();
}

function stopFeed() {
  state.feedGen++;
  if (state.feedStop) state.feedStop();
  state.feedStop = null;
  releaseWatcher();
}

function releaseWatcher() {
  const id = state.watcher;
  state.watcher = null;
  if (id) fetch('/v2/watch/' + enc(id), { method: 'DELETE', headers: authHeaders(), keepalive: true }).catch(() => {});
}

// sseFeed reads the watcher's SSE stream with fetch() (headers allowed,
// unlike EventSource) and reconnects from the last seq it saw.
//
// The watcher is made before the history is read, so that no event falls
// between the two: the page's last seq is at or after the watcher's start,
// and the stream resumes after it from the watcher's buffer. A watcher made
// again (the daemon forgot it) resumes after the last seq shown; a cursor
// from before the watcher began is answered from the kept journal.
async function sseFeed(gen) {
  let cursor = 0;
  let first = true;
  while (gen === state.feedGen) {
    try {
      if (!state.watcher) {
        setLive(false, 'connecting');
        const r = await api('POST', '/v2/watch', { json: { path: '/', recursive: true, debounce: 100, exclude: [] } });
        const d = (await r.json()).data;
        if (gen !== state.feedGen) { fetch('/v2/watch/' + enc(d.watcher_id), { method: 'DELETE', headers: authHeaders() }); return; }
        state.watcher = d.watcher_id;
        if (first) await loadHistory(gen);
        first = false;
        if (gen !== state.feedGen) return;
        cursor = state.resume ? state.lastSeq : d.initial_cursor;
      }
      const ctl = new AbortController();
      state.feedStop = () => ctl.abort();
      const res = await fetch(`/v2/watch/${enc(state.watcher)}/events?cursor=${cursor}`,
        { headers: authHeaders({ Accept: 'text/event-stream' }), signal: ctl.signal, cache: 'no-store' });
      if (res.status === 404) { state.watcher = null; continue; }
      if (res.status === 401) { await askToken('The daemon refused that token.'); continue; }
      if (!res.ok) throw new APIError(res.status, await errorText(res));
      setLive(true, 'live (SSE)');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const c = sseBlock(block);
          if (c !== null) cursor = c;
        }
      }
    } catch (err) {
      if (gen !== state.feedGen) return;
      console.warn('feed', err);
    }
    if (gen !== state.feedGen) return;
    setLive(false, 'reconnecting');
    await sleep(1000);
  }
}

// sseBlock handles one SSE event and returns the cursor it moves to, or null.
function sseBlock(block) {
  let name = 'message';
  let data = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) name = line.slice(6).trim();
    else if (line.startsWith('data:')) data += line.slice(5).trimStart();
  }
  if (!data) return null;
  const d = JSON.parse(data);
  if (name === 'file_change') {
    onEvent(d);
    return d.seq;
  }
  if (name === 'overflow') {
    overflow('The change feed overflowed: events were lost.');
    return d.cursor;
  }
  return null;
}

// socketFeed follows a named sandbox through its §5 websocket: the first
// time after reading the history, then each time after the last seq shown
// (the subscribe's "since": the socket replays the kept events after it).
async function socketFeed(gen, first) {
  setLive(false, 'connecting');
  if (first) await loadHistory(gen);
  if (gen !== state.feedGen) return;
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const q = state.token ? '?access_token=' + enc(state.token) : '';
  const ws = new WebSocket(`${proto}//${location.host}/v1/sandboxes/${enc(state.sandbox)}/fs/watch${q}`);
  state.feedStop = () => ws.close();
  ws.onopen = () => {
    const sub = { type: 'subscribe', paths: ['/'], recursive: true };
    if (state.resume) sub.since = state.lastSeq;
    ws.send(JSON.stringify(sub));
  };
  ws.onmessage = (m) => {
    const d = JSON.parse(m.data);
    if (d.type === 'subscribed') setLive(true, 'live (websocket)');
    else if (d.type === 'event') onEvent(namedEvent(d, d.event)); else if (d.type === 'error') {
      if (/dropped/.test(d.message)) overflow(`The change feed ${d.message}.`);
      else setStatus('feed: ' + d.message, true);
    }
  };
  ws.onclose = async () => {
    if (gen !== state.feedGen) return;
    setLive(false, 'reconnecting');
    await sleep(1000);
    if (gen === state.feedGen) socketFeed(gen, false);
  };
}

// ---- wiring ---------------------------------------------------------------

async function openPath(path, isDir) {
  try {
    await reveal(path);
    if (!isDir) await openFile(path);
  } catch (err) { fail('open ' + path, err); }
}

// nodeOf is the tree node whose own row holds el (not its children).
function nodeOf(el) {
  const row = el && el.closest ? el.closest('.row') : null;
  return row && row.parentElement.classList.contains('node') ? row.parentElement : null;
}

function wireTree() {
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

function wireButtons() {
  $('edit').onclick = startEdit;
  $('save').onclick = save;
  $('cancel').onclick = () => { if (state.open) openFile(state.open.path).catch((e) => fail('open', e)); };
  $('move').onclick = doMove;
  $('delete').onclick = doDelete;
  $('download').onclick = download;
  $('newfile').onclick = doNewFile;
  $('newdir').onclick = doNewDir;
  $('upload').onclick = () => $('uploadinput').click();
  $('uploadinput').onchange = (e) => {
    const files = [...e.target.files];
    e.target.value = '';
    uploadAll(selectedDir(), files);
  };
  $('refresh').onclick = () => reloadLoadedDirs().then(() => setStatus('tree reloaded'));
  $('clearfeed').onclick = () => { state.events = []; state.lastOf = new Map(); renderFeed(); };
  $('forget').onclick = () => { sessionStorage.removeItem(TOKEN_KEY); state.token = ''; location.reload(); };
  for (const i of document.querySelectorAll('.filters input')) i.addEventListener('input', renderFeed);
  $('sandbox').onchange = (e) => switchSandbox(e.target.value);
  document.addEventListener('keydown', (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key === 's' && state.editing) { e.preventDefault(); save(); }
    if (e.key === 'Escape' && state.editing && !state.dirty && state.open) openFile(state.open.path);
  });
  window.addEventListener('beforeunload', (e) => { if (state.editing && state.dirty) e.preventDefault(); });
  // A closed tab releases its reference to the watcher (fetch keepalive:
  // sendBeacon cannot DELETE); pagehide also covers the back-forward cache.
  window.addEventListener('pagehide', releaseWatcher);
  window.addEventListener('beforeunload', () => { if (!(state.editing && state.dirty)) releaseWatcher(); });
}

async function switchSandbox(name) {
  state.sandbox = name;
  sessionStorage.setItem(SB_KEY, name);
  closeFile();
  state.events = [];
  state.lastOf = new Map();
  state.lastSeq = 0;
  renderFeed();
  $('overflow').hidden = true;
  startFeed();
  for (const fn of onSwitch) fn();
  try { await resetTree(); } catch (err) { fail('list /', err); }
  setButtons();
}

async function main() {
  wireTree();
  wireButtons();
  setButtons();
  let list;
  try {
    list = await (await api('GET', '/v1/sandboxes')).json();
  } catch (err) {
    fail('sandboxes', err);
    return;
  }
  setExcludes(list.defaultExcludes);
  const sel = $('sandbox');
  for (const s of list.sandboxes) {
    const o = document.createElement('option');
    o.value = o.textContent = s.name;
    sel.appendChild(o);
  }
  const want = sessionStorage.getItem(SB_KEY);
  const names = list.sandboxes.map((s) => s.name);
  sel.value = names.includes(want) ? want : names[0];
  await switchSandbox(sel.value);
  document.body.dataset.ready = '1';
}

// After every deferred script (history.js) has run.
document.addEventListener('DOMContentLoaded', main);
