// sandfs console: browse, view, edit and move the files of a sandbox, watch
// its changes live, and go back in its history. Native modules, no build
// step, no outside assets; it talks only to the daemon that served it,
// through the public API (api.js).
//
// The token is taken from the fragment of the URL the daemon logs
// (/ui/#token=T: a fragment never reaches a server, a proxy log or a
// Referer), and at once removed from the address bar and the history
// entry; else asked when the daemon answers 401. It is kept in
// sessionStorage (this tab only).
//
//   main.js        this: the token, the buttons, the sandbox picker
//   forks.js       the picker's order: forks under their parent
//   api.js         every request to the daemon
//   state.js       what the views share; dom.js builds every node
//   tree.js        the file tree; viewer.js the file view; editor.js edits
//   ops.js         move, delete, new, upload, the tree's clicks and drops
//   feed.js        the change feed's list; feedsource.js its SSE or socket
//   history.js     checkpoints and changes; restore.js the restore dialog
//   merge.js       a fork's merge dialog; diff.js a diff as text
//   usage.js       the usage line
import { $, el } from './dom.js';
import { state, onSwitch, SB_KEY, TOKEN_KEY, tokenFromFragment } from './state.js';
import { listSandboxes } from './api.js';
import { pickerLabel, pickerOrder } from './forks.js';
import { fail, setStatus } from './dialogs.js';
import { reloadLoadedDirs, resetTree, selectedDir } from './tree.js';
import { closeFile, download, openFile, setButtons } from './viewer.js';
import { save, startEdit } from './editor.js';
import { doDelete, doMove, doNewDir, doNewFile, uploadAll, wireTree } from './ops.js';
import { clearFeed, renderFeed, setExcludes } from './feed.js';
import { releaseWatcher, startFeed } from './feedsource.js';
import { wireHistory } from './history.js';
import { wireUsage } from './usage.js';

state.token = tokenFromFragment(location, history, sessionStorage);

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
  $('clearfeed').onclick = clearFeed;
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
  state.lastSeq = 0;
  clearFeed();
  $('overflow').hidden = true;
  startFeed();
  for (const fn of onSwitch) fn();
  try { await resetTree(); } catch (err) { fail('list /', err); }
  setButtons();
}

// showExcludes takes the daemon's default excludes, which the feed hides
// unless its "excluded" filter is on, and names them on that filter.
function showExcludes(patterns) {
  setExcludes(patterns);
  const chip = $('showhidden').closest('label');
  if (patterns && patterns.length) {
    chip.title = `also list what watchers exclude by default (${patterns.join(' ')}); the tree follows them either way`;
  }
}

async function main() {
  wireTree();
  wireButtons();
  wireHistory();
  wireUsage();
  setButtons();
  let list;
  try {
    list = await listSandboxes();
  } catch (err) {
    fail('sandboxes', err);
    return;
  }
  showExcludes(list.defaultExcludes);
  const sel = $('sandbox');
  for (const s of list.sandboxes) if (s.from) state.forks.set(s.name, { from: s.from, checkpoint: s.checkpoint || '' });
  for (const e of pickerOrder(list.sandboxes)) {
    const o = el('option', '', pickerLabel(e));
    o.value = e.name;
    o.dataset.depth = e.depth;
    if (e.from) {
      o.dataset.from = e.from;
      o.title = `a fork of ${e.from}`;
    }
    sel.appendChild(o);
  }
  const want = sessionStorage.getItem(SB_KEY);
  const names = list.sandboxes.map((s) => s.name);
  sel.value = names.includes(want) ? want : names[0];
  await switchSandbox(sel.value);
  document.body.dataset.ready = '1';
}

main();
