// Restore to a checkpoint, from its dialog: a dry run first, listing what
// would be written, removed and skipped as a conflict; the same scope
// (the whole tree, one path, one actor's changes) for real once confirmed.
//
//   POST /v1/sandboxes/{name}/restore {checkpoint, paths?, actor?, dry_run}
import { $, el } from './dom.js';
import { api, sbURL } from './api.js';
import { setStatus } from './dialogs.js';
import { currentTarget } from './ops.js';
import { cpLabel, fmtStamp } from './fmt.js';

// rs is the dialog's {cp, path, key (the scope its dry run was of)}, null
// while closed.
let rs = null;
let afterRestore = async () => {};

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
  const body = { checkpoint: rs.cp.id, dry_run: dry };
  if ($('rsonlypath').checked && rs.path) body.paths = [rs.path];
  const actor = $('rsactor').value.trim();
  if ($('rsonlyactor').checked && actor) body.actor = actor;
  return body;
}
const scopeKey = () => JSON.stringify(restoreBody(false));

// openRestore opens the dialog for cp, narrowed to path when given.
export async function openRestore(cp, path) {
  const p = path || scopePath();
  rs = { cp, path: p, key: null };
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
  const r = rs;
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
    if (rs !== r || key !== scopeKey()) return;
    box.replaceChildren();
    $('rserr').textContent = 'dry run: ' + err.message;
    return;
  }
  if (rs !== r || key !== scopeKey()) return; // the scope changed meanwhile: its own dry run follows
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
    const ol = el('ol');
    for (const it of items.slice(0, 500)) {
      const li = el('li');
      text(li, it);
      ol.append(li);
    }
    if (items.length > 500) ol.append(el('li', 'dim', `… and ${items.length - 500} more`));
    frag.append(el('div', 'rs ' + cls, el('h3', '', `${title} (${items.length})`), ol));
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
  const r = rs;
  if (!r || r.key !== scopeKey()) return;
  $('rsok').disabled = true;
  let ans;
  try {
    ans = await (await api('POST', sbURL('restore'), { json: restoreBody(false) })).json();
  } catch (err) {
    $('rserr').textContent = 'restore: ' + err.message;
    return;
  }
  rs = null;
  $('restoredlg').close();
  setStatus(`restored to ${cpLabel(r.cp)}: ${ans.written.length} written, ${ans.removed.length} removed, ` +
    `${ans.skipped.length} skipped; undo: checkpoint ${ans.undo}`);
  await afterRestore();
}

// wireRestore wires the dialog; after is what a done restore shows again
// (the timeline, the changes, the tree, the file).
export function wireRestore(after) {
  afterRestore = after;
  $('rsdry').onclick = dryRun;
  $('rscancel').onclick = () => { rs = null; $('restoredlg').close(); };
  $('restoredlg').onclose = () => { rs = null; };
  $('rsok').onclick = confirmRestore;
  let t = 0;
  const rescope = () => { clearTimeout(t); t = setTimeout(dryRun, 250); };
  $('rsonlypath').onchange = rescope;
  $('rsonlyactor').onchange = rescope;
  $('rsactor').oninput = () => { $('rsonlyactor').checked = !!$('rsactor').value.trim(); rescope(); };
}
