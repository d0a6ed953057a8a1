// Merge a fork into its parent, from the fork's history: the dialog runs
// a dry run first and lists what would be applied and every conflict (its
// diff as text); only then can a strategy be picked and the merge
// confirmed, whose result (applied, skipped, conflicts left, the undo
// checkpoint) the dialog shows in place of the dry run.
//
//   POST /v1/sandboxes/{fork}/merge {into, dry_run, strategy}
//   GET  /v1/sandboxes/{fork}/changes?since=fork (each path's kind of change)
//
// The dry run asks with strategy "ours": under "fail" a conflict stops it
// before it plans anything, and "ours" plans exactly the paths only the
// fork changed, which every strategy applies.
import { $, el } from './dom.js';
import { forkChanges, mergeFork } from './api.js';
import { setStatus } from './dialogs.js';
import { renderDiff } from './diff.js';

// mg is the dialog's {fork, into, kinds (path -> the fork's change)}, null
// while closed; a new open makes answers about an older one drop.
let mg = null;
let afterMerge = async () => {};

// openMerge opens the dialog for the fork and runs its dry run.
export async function openMerge(fork, into) {
  const m = { fork, into, kinds: new Map() };
  mg = m;
  $('mgtitle').textContent = `Merge ${fork} into ${into}`;
  $('mginto').textContent = into;
  $('mgerr').textContent = '';
  const box = $('mgresult');
  box.replaceChildren(el('p', 'dim', 'dry run…'));
  delete box.dataset.phase;
  $('mgstrategy').disabled = true;
  for (const r of document.querySelectorAll('#mgstrategy input')) r.checked = r.value === 'fail';
  $('mgok').disabled = true;
  $('mgok').hidden = false;
  $('mgcancel').textContent = 'cancel';
  $('mergedlg').showModal();
  let ans;
  try {
    const [dry, ch] = await Promise.all([
      mergeFork(fork, { into, dry_run: true, strategy: 'ours' }),
      forkChanges(fork).catch(() => ({ changes: [] })),
    ]);
    ans = answerOrThrow(dry);
    for (const c of ch.changes || []) m.kinds.set(c.path, c.change);
  } catch (err) {
    if (mg !== m) return;
    box.replaceChildren();
    $('mgerr').textContent = 'dry run: ' + err.message;
    return;
  }
  if (mg !== m) return;
  box.replaceChildren(mergeLists(m, ans, true));
  box.dataset.phase = 'dry';
  $('mgstrategy').disabled = false;
  $('mgok').disabled = !(ans.written.length || ans.removed.length || ans.conflicts.length);
}

// answerOrThrow is a merge's answer, or the error a refusal with no
// merge in it (no conflicts listed) stands for.
function answerOrThrow(ans) {
  if (ans.error && !(ans.conflicts || []).length) throw new Error(ans.error);
  for (const k of ['written', 'removed', 'conflicts', 'skipped']) ans[k] = ans[k] || [];
  return ans;
}

const strategy = () => (document.querySelector('#mgstrategy input:checked') || { value: 'fail' }).value;

// mergeLists shows a merge's answer: what is (or would be) applied, each
// path with its kind of change; the conflicts with their diffs; what
// racing writers made it skip; the undo checkpoint.
function mergeLists(m, ans, dry) {
  const frag = document.createDocumentFragment();
  const section = (cls, title, items, fill) => {
    const ol = el('ol');
    for (const it of items.slice(0, 500)) {
      const li = el('li');
      fill(li, it);
      ol.append(li);
    }
    if (items.length > 500) ol.append(el('li', 'dim', `… and ${items.length - 500} more`));
    frag.append(el('div', 'rs mg ' + cls, el('h3', '', `${title} (${items.length})`), ol));
  };
  const applied = ans.written.map((p) => ({ path: p, op: 'write' })).concat(ans.removed.map((p) => ({ path: p, op: 'remove' })));
  section('applied', dry ? (ans.conflicts.length ? 'would be applied by ours or theirs (fail merges nothing while a conflict is left)' : 'would be applied') : 'applied', applied, (li, a) => {
    const kind = m.kinds.get(a.path) || (a.op === 'write' ? 'written' : 'removed');
    li.dataset.path = a.path;
    li.dataset.op = a.op;
    li.dataset.change = kind;
    li.append(el('span', 'mgkind', kind), ' ', el('span', 'mono', a.path));
  });
  const left = dry ? ans.conflicts : ans.conflicts.filter((c) => !c.took);
  const taken = dry ? [] : ans.conflicts.filter((c) => c.took);
  section('conflicts', dry ? 'conflicts: changed on both sides' : 'conflicts left as they were', left, (li, c) => conflictItem(li, c, dry));
  if (taken.length) section('taken', 'conflicts resolved by the strategy', taken, (li, c) => conflictItem(li, c, false));
  if (!dry || ans.skipped.length) {
    section('skipped', dry ? 'would be skipped' : 'skipped: changed by another writer meanwhile', ans.skipped, (li, s) => {
      li.dataset.path = s.path;
      li.append(el('span', 'mono', s.path), el('span', 'dim', ` ${s.reason}` + (s.by ? ` (${s.by})` : '')));
    });
  }
  if (dry && !applied.length && !ans.conflicts.length) frag.append(el('p', 'dim', `Nothing to merge: ${m.into} has all the fork changed.`));
  if (!dry) {
    const undo = el('p', 'mgundo');
    undo.id = 'mgundo';
    if (ans.undo) {
      undo.dataset.id = ans.undo;
      undo.append('undo: checkpoint ', el('code', '', ans.undo), ` of ${m.into} (taken first; restore it from ${m.into}'s history)`);
    } else undo.append(ans.error ? `Nothing was merged: ${ans.error}` : 'Nothing was merged.');
    frag.append(undo);
  }
  return frag;
}

// conflictItem is a conflict: its path, why, what the strategy took, and
// the diff from the parent's side (ours) to the fork's (theirs).
function conflictItem(li, c, dry) {
  li.dataset.path = c.path;
  li.className = 'mgconflict';
  const head = el('div', '', el('span', 'mono', c.path), el('span', 'dim mgwhy', ' ' + c.why));
  // The dry run's side is no choice of the user's: the strategy, picked
  // after it, decides.
  if (c.took && !dry) head.append(el('span', 'mgtook', ` took ${c.took}`));
  li.append(head);
  if (c.diff) li.append(el('div', 'diffwrap', renderDiff(c.diff)));
  else if (c.diffUnavailable) li.append(el('div', 'dim', `No diff: ${c.diffUnavailable}.`));
  if (c.diffTruncated) li.append(el('div', 'dim', 'The diff is cut short (too long).'));
}

async function confirmMerge() {
  const m = mg;
  if (!m || $('mgresult').dataset.phase !== 'dry') return;
  const how = strategy();
  $('mgok').disabled = true;
  $('mgstrategy').disabled = true;
  $('mgerr').textContent = '';
  let ans;
  try {
    ans = answerOrThrow(await mergeFork(m.fork, { into: m.into, dry_run: false, strategy: how }));
  } catch (err) {
    if (mg !== m) return;
    $('mgerr').textContent = 'merge: ' + err.message;
    $('mgok').disabled = false;
    $('mgstrategy').disabled = false;
    return;
  }
  if (mg !== m) return;
  const box = $('mgresult');
  box.replaceChildren(mergeLists(m, ans, false));
  box.dataset.phase = 'done';
  box.dataset.strategy = how;
  $('mgok').hidden = true;
  $('mgcancel').textContent = 'close';
  if (ans.undo) {
    setStatus(`merged ${m.fork} into ${m.into} (${how}): ${ans.written.length} written, ${ans.removed.length} removed, ` +
      `${ans.skipped.length} skipped; undo: checkpoint ${ans.undo}`);
  }
  await afterMerge();
}

// wireMerge wires the dialog; after is what a done merge shows again.
export function wireMerge(after) {
  afterMerge = after;
  $('mgcancel').onclick = () => { mg = null; $('mergedlg').close(); };
  $('mergedlg').onclose = () => { mg = null; };
  $('mgok').onclick = confirmMerge;
}
