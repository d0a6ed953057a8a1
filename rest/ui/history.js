// sandfs console, history: the timeline of a sandbox's checkpoints, "what
// changed since" a checkpoint, a seq or a time (one row a path, its diff in
// the file view on click), and restore, whose dry run is shown before
// anything changes. Loaded after app.js and held to its rules: every
// request goes through api() with the token, nothing the server sent is
// ever inserted as HTML (textContent only), nothing is loaded from
// elsewhere.
//
//   timeline  GET, POST /v1/sandboxes/{name}/checkpoints, DELETE …/{id}
//   changes   GET /v1/sandboxes/{name}/changes?since=cp_…|SEQ|TIME
//             (&path=P&diff=true for the row clicked)
//   restore   POST /v1/sandboxes/{name}/restore {checkpoint, paths?, actor?,
//             dry_run}: first with dry_run, then, once confirmed, the same
//             scope without it
//
// These routes are the named family's only: sandbox "default" is
// /v1/sandboxes/default/… here too. The change list follows the feed: a
// live event reloads it (coalesced) while the tab shows.
'use strict';

const hist = {
  shown: false, // the history tab is the one showing
  checkpoints: [], // oldest first, as the daemon lists them
  since: null, // what the change list is since (a checkpoint id, seq or time), null: no list
  answer: null, // the last GET …/changes answer
  gen: 0, // bumped on a sandbox switch: answers about the sandbox left are dropped
  timer: 0,
  restore: null, // the restore dialog's {cp, path, key (the scope its dry run was of)}
};

const sbURL = (op, q) => `/v1/sandboxes/${enc(state.sandbox)}/${op}` + (q ? '?' + new URLSearchParams(q) : '');
const CHANGE_LETTER = { added: 'A', modified: 'M', deleted: 'D', renamed: 'R' };

// fmtStamp is an RFC 3339 time in local time: the clock for today, else the
// date too.
function fmtStamp(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return iso || '';
  const clock = d.toTimeString().slice(0, 8);
  if (d.toDateString() === new Date().toDateString()) return clock;
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${clock}`;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function histNote(msg) {
  const n = $('histnote');
  n.textContent = msg || '';
  n.hidden = !msg;
}

const cpLabel = (cp) => cp.name || cp.reason || cp.id;

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
  const top = el('div', 'l1');
  top.append(el('span', 'cpname', cpLabel(cp)));
  if (cp.name && cp.reason && cp.reason !== 'manual') top.append(el('span', 'cpreason', cp.reason));
  top.append(el('span', 'cptime', fmtStamp(cp.createdAt)));
  const bottom = el('div', 'l2');
  const acts = el('span', 'acts');
  bottom.append(el('span', 'cpstats', `seq ${cp.seq} · ${cp.files} files · ${fmtSize(cp.bytes || 0)}`), el('span', 'spacer'), acts);
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
  const li = el('li', 'ch');
  li.dataset.path = row.path;
  li.dataset.change = row.change;
  li.dataset.who = who(row);
  const letter = CHANGE_LETTER[row.change] || '?';
  li.append(el('span', 'ck ' + letter, letter), el('span', 'p', row.path + (row.isDir ? '/' : '')),
    el('span', 't', fmtStamp(row.last.time)));
  const x = [who(row), row.events === 1 ? '1 event' : `${row.events} events`];
  if (row.renamedFrom) x.unshift('from ' + row.renamedFrom);
  li.append(el('span', 'x', x.join(' · ')));
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
  const content = el('div', 'diffwrap');
  if (full.diff) content.appendChild(renderDiff(full.diff));
  else if (!full.isDir) content.appendChild(el('div', 'nodiff', full.binary ? 'Binary file: no diff.' : full.diffUnavailable ? `No diff: ${full.diffUnavailable}.` : 'No difference in content.'));
  else content.appendChild(el('div', 'nodiff', 'A directory: no diff.'));
  const meta = `${full.change}${full.renamedFrom ? ' from ' + full.renamedFrom : ''} · ${who(full)} · ${fmtStamp(full.last.time)}`;
  if (!(await showAside(full.path, meta, content))) return;
  for (const r of $('changes').querySelectorAll('.ch.sel')) r.classList.remove('sel');
  if (li) li.classList.add('sel');
  const acts = [];
  const cp = since && hist.checkpoints.find((c) => c.id === since);
  if (cp) acts.push(['restore this path…', () => openRestore(cp, full.path)]);
  note(full.diffTruncated ? 'The diff is cut short (too long).' : `Changed since ${sinceText(hist.answer ? hist.answer.since : { seq: since })}.`, acts);
}

// renderDiff is a unified diff, a span a line, classed by its first
// character; its textContent is the diff exactly.
function renderDiff(text) {
  const pre = el('pre', 'diff');
  const lines = text.split('\n');
  const last = lines.length - 1;
  lines.forEach((ln, i) => {
    if (i === last && ln === '') return;
    let cls = 'ctx';
    if (ln.startsWith('+++') || ln.startsWith('---')) cls = 'hd';
    else if (ln.startsWith('@@')) cls = 'hunk';
    else if (ln.startsWith('+')) cls = 'add';
    else if (ln.startsWith('-')) cls = 'del';
    else if (ln.startsWith('\\')) cls = 'nonl';
    pre.appendChild(el('span', cls, i < last ? ln + '\n' : ln));
  });
  return pre;
}

// ---- restore -------------------------------------------------------------------

// scopePath is the path a restore may be narrowed to: the change whose diff
// the view shows, else the open file, else the folder or file selected in
// the tree.
function scopePath() {
  const aside = $('view').dataset.aside;
  if (aside) return aside;
  const t = currentTarget();
  return t ? t.path : null;
}

function restoreBody(dry) {
  const r = hist.restore;
  const body = { checkpoint: r.cp.id, dry_run: dry };
  if ($('rsonlypath').checked && r.path) body.paths = [r.path];
  const actor = $('rsactor').value.trim();
  if ($('rsonlyactor').checked && actor) body.actor = actor;
  return body;
}
const scopeKey = () => JSON.stringify(restoreBody(false));

async function openRestore(cp, path) {
  const p = path || scopePath();
  hist.restore = { cp, path: p, key: null };
  $('rstitle').textContent = `Restore to checkpoint ${cpLabel(cp)} (${fmtStamp(cp.createdAt)}, seq ${cp.seq})`;
  $('rspath').textContent = p || '(select a path first)';
  $('rsonlypath').disabled = !p;
  $('rsonlypath').checked = !!path;
  $('rsonlyactor').checked = false;
  $('rsactor').value = '';
  $('rsresult').replaceChildren();
  $('rserr').textContent = '';
  $('rsok').disabled = true;
  $('restoredlg').showModal();
  await dryRun();
}

async function dryRun() {
  const r = hist.restore;
  if (!r) return;
  const key = scopeKey();
  r.key = null;
  $('rsok').disabled = true;
  $('rserr').textContent = '';
  const box = $('rsresult');
  box.replaceChildren(el('p', 'dim', 'dry run…'));
  delete box.dataset.scope;
  let ans;
  try {
    ans = await (await api('POST', sbURL('restore'), { json: restoreBody(true) })).json();
  } catch (err) {
    if (hist.restore !== r || key !== scopeKey()) return;
    box.replaceChildren();
    $('rserr').textContent = 'dry run: ' + err.message;
    return;
  }
  if (hist.restore !== r || key !== scopeKey()) return; // the scope changed meanwhile: its own dry run follows
  box.replaceChildren(restoreLists(ans, true));
  box.dataset.scope = key; // which scope the lists are of (the console's tests wait on it)
  r.key = key;
  $('rsok').disabled = !(ans.written.length || ans.removed.length);
  $('rsok').textContent = ans.skipped.length ? `restore, skipping ${ans.skipped.length}` : 'restore';
}

// restoreLists shows what a restore (or its dry run) writes, removes and
// skips.
function restoreLists(ans, dry) {
  const frag = document.createDocumentFragment();
  const section = (cls, title, items, text) => {
    const d = el('div', 'rs ' + cls);
    d.append(el('h3', '', `${title} (${items.length})`));
    const ol = el('ol');
    for (const it of items.slice(0, 500)) {
      const li = el('li');
      text(li, it);
      ol.append(li);
    }
    if (items.length > 500) ol.append(el('li', 'dim', `… and ${items.length - 500} more`));
    d.append(ol);
    frag.append(d);
  };
  const verb = dry ? ['would be written', 'would be removed', 'would be skipped as conflicts'] : ['written', 'removed', 'skipped as conflicts'];
  section('written', verb[0], ans.written || [], (li, p) => { li.textContent = p; li.dataset.path = p; });
  section('removed', verb[1], ans.removed || [], (li, p) => { li.textContent = p; li.dataset.path = p; });
  section('skipped', verb[2], ans.skipped || [], (li, s) => {
    li.dataset.path = s.path;
    li.append(el('span', 'mono', s.path), el('span', 'dim', ` ${s.reason}` + (s.by ? ` (${s.by})` : '')));
  });
  if (!(ans.written || []).length && !(ans.removed || []).length) {
    frag.append(el('p', 'dim', dry ? 'Nothing to restore: the scope is as the checkpoint has it.' : 'Nothing was restored.'));
  }
  return frag;
}

async function confirmRestore() {
  const r = hist.restore;
  if (!r || r.key !== scopeKey()) return;
  $('rsok').disabled = true;
  let ans;
  try {
    ans = await (await api('POST', sbURL('restore'), { json: restoreBody(false) })).json();
  } catch (err) {
    $('rserr').textContent = 'restore: ' + err.message;
    return;
  }
  hist.restore = null;
  $('restoredlg').close();
  setStatus(`restored to ${cpLabel(r.cp)}: ${ans.written.length} written, ${ans.removed.length} removed, ` +
    `${ans.skipped.length} skipped; undo: checkpoint ${ans.undo}`);
  await loadCheckpoints();
  await reloadChanges();
  reloadLoadedDirs();
  const o = state.open;
  if (o && !state.editing) openFile(o.path, { keepScroll: true }).catch(() => closeFile());
  // A diff shown is of the tree before the restore: show it again, or
  // close it when the path no longer differs.
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

// openHistory loads the timeline and, the first time, lists what changed
// since the newest checkpoint.
async function openHistory() {
  await loadCheckpoints();
  if (hist.since === null && hist.checkpoints.length) await showChanges(hist.checkpoints[hist.checkpoints.length - 1].id);
  else await reloadChanges();
}

function wireHistory() {
  $('tabfeed').onclick = () => showTab(false);
  $('tabhistory').onclick = () => showTab(true);
  $('newcp').onclick = newCheckpoint;
  $('reloadcp').onclick = () => openHistory();
  $('sinceform').onsubmit = (e) => { e.preventDefault(); showChanges($('since').value.trim()); };
  $('rsdry').onclick = dryRun;
  $('rscancel').onclick = () => { hist.restore = null; $('restoredlg').close(); };
  $('restoredlg').onclose = () => { hist.restore = null; };
  $('rsok').onclick = confirmRestore;
  let t = 0;
  const rescope = () => { clearTimeout(t); t = setTimeout(dryRun, 250); };
  $('rsonlypath').onchange = rescope;
  $('rsonlyactor').onchange = rescope;
  $('rsactor').oninput = () => { $('rsonlyactor').checked = !!$('rsactor').value.trim(); rescope(); };
  onSwitch.push(() => {
    hist.gen++;
    hist.checkpoints = [];
    clearChanges();
    $('timeline').replaceChildren();
    $('cpcount').textContent = '';
    histNote('');
    if (hist.shown) openHistory();
  });
  onFeed.push(() => {
    if (!hist.shown || hist.since === null) return;
    clearTimeout(hist.timer);
    hist.timer = setTimeout(reloadChanges, 600);
  });
}

wireHistory();
