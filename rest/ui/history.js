// The history tab: the timeline of a sandbox's checkpoints, "what changed
// since" a checkpoint, a seq or a time (one row a path, its diff in the
// file view on click), and restore (restore.js). Every request goes through
// api() with the token; nothing the server sent is inserted as markup.
//
//   timeline  GET, POST /v1/sandboxes/{name}/checkpoints, DELETE …/{id}
//   changes   GET /v1/sandboxes/{name}/changes?since=cp_…|SEQ|TIME|fork
//             (&path=P&diff=true for the row clicked)
//   fork      a fork (GET /v1/sandboxes names its parent) opens on what it
//             changed since it was made (since=fork), with a button that
//             merges it into its parent (merge.js)
//
// These routes are the named family's only: sandbox "default" is
// /v1/sandboxes/default/… here too. The change list follows the feed: a
// live event reloads it (coalesced) while the tab shows.
import { $, el } from './dom.js';
import { state, onFeed, onSwitch } from './state.js';
import { api, enc, sbURL } from './api.js';
import { ask, fail, setStatus } from './dialogs.js';
import { reloadLoadedDirs } from './tree.js';
import { closeFile, note, openFile, showAside } from './viewer.js';
import { openRestore, wireRestore } from './restore.js';
import { openMerge, wireMerge } from './merge.js';
import { renderDiff } from './diff.js';
import { cpLabel, fmtSize, fmtStamp } from './fmt.js';

const hist = {
  shown: false, // the history tab is the one showing
  checkpoints: [], // oldest first, as the daemon lists them
  since: null, // what the change list is since (a checkpoint id, seq or time), null: no list
  answer: null, // the last GET …/changes answer
  gen: 0, // bumped on a sandbox switch: answers about the sandbox left are dropped
  timer: 0,
};

const CHANGE_LETTER = { added: 'A', modified: 'M', deleted: 'D', renamed: 'R' };

function histNote(msg) {
  const n = $('histnote');
  n.textContent = msg || '';
  n.hidden = !msg;
}

// ---- timeline -------------------------------------------------------------

async function loadCheckpoints() {
  const gen = hist.gen;
  let j;
  try {
    j = await (await api('GET', sbURL('checkpoints'))).json();
  } catch (err) {
    if (gen !== hist.gen) return;
    hist.checkpoints = [];
    renderTimeline();
    histNote(err.status === 409 ? `No checkpoints here: ${err.message}` : `checkpoints: ${err.message}`);
    return;
  }
  if (gen !== hist.gen) return;
  histNote('');
  hist.checkpoints = j.checkpoints || [];
  renderTimeline();
}

function renderTimeline() {
  const list = $('timeline');
  const cps = hist.checkpoints;
  $('cpcount').textContent = cps.length ? String(cps.length) : '';
  if (!cps.length) {
    list.replaceChildren(el('li', 'none', 'No checkpoint yet. “+ checkpoint” records the tree as it is.'));
    return;
  }
  const frag = document.createDocumentFragment();
  for (let i = cps.length - 1; i >= 0; i--) frag.appendChild(checkpointItem(cps[i])); // newest on top
  list.replaceChildren(frag);
}

function checkpointItem(cp) {
  const li = el('li', 'cp' + (hist.since === cp.id ? ' sel' : ''));
  li.dataset.id = cp.id;
  li.dataset.name = cp.name || '';
  li.dataset.reason = cp.reason || '';
  li.dataset.seq = cp.seq;
  li.dataset.files = cp.files;
  li.dataset.bytes = cp.bytes;
  const top = el('div', 'l1', el('span', 'cpname', cpLabel(cp)));
  if (cp.name && cp.reason && cp.reason !== 'manual') top.append(el('span', 'cpreason', cp.reason));
  top.append(el('span', 'cptime', fmtStamp(cp.createdAt)));
  const acts = el('span', 'acts');
  const bottom = el('div', 'l2', el('span', 'cpstats', `seq ${cp.seq} · ${cp.files} files · ${fmtSize(cp.bytes || 0)}`), el('span', 'spacer'), acts);
  const buttons = [
    ['changes', 'since', 'what changed since this checkpoint', () => showChanges(cp.id)],
    ['restore…', 'restore', 'bring the tree back to this checkpoint (a dry run first)', () => openRestore(cp)],
    ['×', 'del ghost', 'delete this checkpoint', () => deleteCheckpoint(cp)],
  ];
  for (const [label, cls, title, fn] of buttons) {
    const b = el('button', cls, label);
    b.title = title;
    b.onclick = fn;
    acts.append(b);
  }
  li.title = `${cp.id}\n${cp.reason || ''} · ${cp.createdAt}\n${cp.files} files, ${cp.dirs || 0} dirs, ` +
    `${cp.symlinks || 0} symlinks, ${cp.bytes} bytes (${cp.newBytes || 0} new in the store)`;
  li.append(top, bottom);
  return li;
}

async function newCheckpoint() {
  const name = await ask('New checkpoint: name (optional)', '');
  if (name === null) return;
  try {
    const cp = await (await api('POST', sbURL('checkpoints'), { json: name ? { name } : {} })).json();
    setStatus(`checkpoint ${cpLabel(cp)}: ${cp.files} files, ${fmtSize(cp.bytes || 0)} (${fmtSize(cp.newBytes || 0)} new)`);
    await loadCheckpoints();
  } catch (err) { fail('checkpoint', err); }
}

async function deleteCheckpoint(cp) {
  if (!(await ask(`Delete checkpoint ${cpLabel(cp)} (${cp.id})?`, null))) return;
  try {
    await api('DELETE', sbURL('checkpoints/' + enc(cp.id)));
    setStatus('deleted checkpoint ' + cpLabel(cp));
    if (hist.since === cp.id) clearChanges();
    await loadCheckpoints();
  } catch (err) { fail('delete checkpoint', err); }
}

// ---- changes since --------------------------------------------------------

function clearChanges() {
  hist.since = null;
  hist.answer = null;
  $('changes').replaceChildren();
  $('changesmeta').textContent = '';
  $('changesmeta').classList.remove('err');
}

// showChanges lists what changed since a checkpoint id, a seq or a time
// ('' : since the oldest event kept).
async function showChanges(since) {
  hist.since = since;
  $('since').value = since;
  for (const li of $('timeline').querySelectorAll('.cp')) li.classList.toggle('sel', li.dataset.id === since);
  await reloadChanges();
}

async function reloadChanges() {
  if (hist.since === null) return;
  const gen = hist.gen;
  const since = hist.since;
  let ans;
  try {
    ans = await (await api('GET', sbURL('changes', since ? { since } : {}))).json();
  } catch (err) {
    if (gen !== hist.gen || since !== hist.since) return;
    hist.answer = null;
    $('changes').replaceChildren();
    $('changesmeta').textContent = `changes since ${since || 'the oldest event kept'}: ${err.message}`;
    $('changesmeta').classList.add('err');
    return;
  }
  if (gen !== hist.gen || since !== hist.since) return;
  hist.answer = ans;
  renderChanges(ans);
}

function sinceText(s) {
  if (s.fork) return `the fork from ${s.fork}`;
  if (s.checkpoint) {
    const cp = hist.checkpoints.find((c) => c.id === s.checkpoint);
    return `checkpoint ${cp ? cpLabel(cp) : s.checkpoint}`;
  }
  return s.time ? `${fmtStamp(s.time)} (seq ${s.seq})` : `seq ${s.seq}`;
}

function renderChanges(ans) {
  const meta = $('changesmeta');
  meta.classList.remove('err');
  const n = ans.count || 0;
  meta.textContent = `${n} ${n === 1 ? 'path' : 'paths'} changed since ${sinceText(ans.since)}, through seq ${ans.untilSeq}` +
    (ans.truncated ? ' (more left out)' : '') + (ans.lost ? ' · some events are no longer kept: rows may be missing' : '');
  const frag = document.createDocumentFragment();
  for (const row of ans.changes || []) frag.appendChild(changeItem(row));
  if (!n) frag.appendChild(el('li', 'none', 'Nothing changed.'));
  $('changes').replaceChildren(frag);
}

// who is the row's who-labels (agent-7, fuse:vim, external, …).
const who = (row) => (row.actors && row.actors.length ? row.actors : [row.last.actor || row.last.origin]).join(', ');

function changeItem(row) {
  const letter = CHANGE_LETTER[row.change] || '?';
  const x = [who(row), row.events === 1 ? '1 event' : `${row.events} events`];
  if (row.renamedFrom) x.unshift('from ' + row.renamedFrom);
  const li = el('li', 'ch', el('span', 'ck ' + letter, letter), el('span', 'p', row.path + (row.isDir ? '/' : '')),
    el('span', 't', fmtStamp(row.last.time)), el('span', 'x', x.join(' · ')));
  li.dataset.path = row.path;
  li.dataset.change = row.change;
  li.dataset.who = who(row);
  li.title = `${row.change} ${row.path}\nfirst ${row.first.type} ${row.first.time} (seq ${row.first.seq})\n` +
    `last ${row.last.type} ${row.last.time} (seq ${row.last.seq})`;
  li.tabIndex = 0;
  li.onclick = () => showDiff(row, li);
  li.onkeydown = (e) => { if (e.key === 'Enter') showDiff(row, li); };
  return li;
}

// showDiff shows the row's unified diff in the file view, asked for the
// row's path alone.
async function showDiff(row, li) {
  const gen = hist.gen;
  const since = hist.since;
  let full;
  try {
    const q = { path: row.path, diff: 'true' };
    if (since) q.since = since;
    const ans = await (await api('GET', sbURL('changes', q))).json();
    full = (ans.changes || []).find((c) => c.path === row.path);
  } catch (err) { fail('diff ' + row.path, err); return; }
  if (gen !== hist.gen || since !== hist.since) return;
  if (!full) {
    setStatus(`${row.path}: no longer changed since ${since || 'the oldest event kept'}`);
    return reloadChanges();
  }
  let body;
  if (full.diff) body = renderDiff(full.diff);
  else if (!full.isDir) body = el('div', 'nodiff', full.binary ? 'Binary file: no diff.' : full.diffUnavailable ? `No diff: ${full.diffUnavailable}.` : 'No difference in content.');
  else body = el('div', 'nodiff', 'A directory: no diff.');
  const meta = `${full.change}${full.renamedFrom ? ' from ' + full.renamedFrom : ''} · ${who(full)} · ${fmtStamp(full.last.time)}`;
  if (!(await showAside(full.path, meta, el('div', 'diffwrap', body)))) return;
  for (const r of $('changes').querySelectorAll('.ch.sel')) r.classList.remove('sel');
  if (li) li.classList.add('sel');
  const acts = [];
  const cp = since && hist.checkpoints.find((c) => c.id === since);
  if (cp) acts.push(['restore this path…', () => openRestore(cp, full.path)]);
  note(full.diffTruncated ? 'The diff is cut short (too long).' : `Changed since ${sinceText(hist.answer ? hist.answer.since : { seq: since })}.`, acts);
}

// afterRestore shows again what a restore or a merge changed: the timeline
// (its undo checkpoint), the changes, the tree, the open file, and a diff shown,
// which is of the tree before the restore (closed when the path no longer
// differs).
async function afterRestore() {
  await loadCheckpoints();
  await reloadChanges();
  reloadLoadedDirs();
  const o = state.open;
  if (o && !state.editing) openFile(o.path, { keepScroll: true }).catch(() => closeFile());
  const aside = $('view').dataset.aside;
  if (!aside || !hist.answer) return;
  const row = (hist.answer.changes || []).find((c) => c.path === aside);
  if (row) showDiff(row, $('changes').querySelector(`li.ch[data-path="${CSS.escape(aside)}"]`));
  else closeFile();
}

// ---- tabs, wiring -------------------------------------------------------

function showTab(history) {
  hist.shown = history;
  $('feedtab').hidden = history;
  $('historytab').hidden = !history;
  $('feedcount').hidden = $('clearfeed').hidden = history;
  for (const [id, on] of [['tabfeed', !history], ['tabhistory', history]]) {
    $(id).classList.toggle('on', on);
    $(id).setAttribute('aria-selected', String(on));
  }
  if (history) openHistory();
}

// openHistory loads the timeline and, the first time, lists what changed:
// in a fork, since it was made (its change set, what a merge brings
// over); else since the newest checkpoint.
async function openHistory() {
  showForkBar();
  await loadCheckpoints();
  if (hist.since === null && state.forks.has(state.sandbox)) await showChanges('fork');
  else if (hist.since === null && hist.checkpoints.length) await showChanges(hist.checkpoints[hist.checkpoints.length - 1].id);
  else await reloadChanges();
}

// showForkBar shows, in a fork, what it was made from and its merge button.
function showForkBar() {
  const f = state.forks.get(state.sandbox);
  $('forkbar').hidden = !f;
  if (!f) return;
  $('forkof').textContent = `of ${f.from} at ${f.checkpoint}`;
  $('mergebtn').textContent = `Merge into ${f.from}…`;
  $('mergebtn').dataset.into = f.from;
}

export function wireHistory() {
  $('tabfeed').onclick = () => showTab(false);
  $('tabhistory').onclick = () => showTab(true);
  $('newcp').onclick = newCheckpoint;
  $('reloadcp').onclick = () => openHistory();
  $('sinceform').onsubmit = (e) => { e.preventDefault(); showChanges($('since').value.trim()); };
  wireRestore(afterRestore);
  wireMerge(afterRestore);
  $('forkchanges').onclick = () => showChanges('fork');
  $('mergebtn').onclick = () => {
    const f = state.forks.get(state.sandbox);
    if (f) openMerge(state.sandbox, f.from);
  };
  onSwitch.push(() => {
    hist.gen++;
    hist.checkpoints = [];
    clearChanges();
    $('timeline').replaceChildren();
    $('cpcount').textContent = '';
    histNote('');
    showForkBar();
    if (hist.shown) openHistory();
  });
  onFeed.push(() => {
    if (!hist.shown || hist.since === null) return;
    clearTimeout(hist.timer);
    hist.timer = setTimeout(reloadChanges, 600);
  });
}
