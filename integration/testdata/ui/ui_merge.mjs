// The console's forks, for ui_check.mjs: the picker shows proj-try under
// proj; the fork's history shows its change set; its merge dialog opens on
// the dry run, then the script pauses while the Go test checks that proj
// did not change on disk; then the merge with strategy "theirs" and its
// result (integration/ui_merge_test.go checks all of it).
import readline from 'node:readline';

// pause prints "PAUSE name" and waits for the Go test's "go" on stdin.
async function pause(name) {
  const rl = readline.createInterface({ input: process.stdin });
  console.log('PAUSE ' + name);
  const [line] = await Promise.race([
    new Promise((resolve) => rl.once('line', (l) => resolve([l]))),
    new Promise((resolve) => rl.once('close', () => resolve([null]))),
  ]);
  rl.close();
  process.stdin.pause();
  if (line !== 'go') throw new Error(`pause ${name}: the test answered ${JSON.stringify(line)}, want "go"`);
}

// mgLists is what the merge dialog lists, by section.
const mgLists = (page) => page.$eval('#mgresult', (box) => {
  const conflicts = (sel) => [...box.querySelectorAll(sel + ' li[data-path]')].map((li) => ({
    path: li.dataset.path,
    why: ((li.querySelector('.mgwhy') || {}).textContent || '').trim(),
    took: ((li.querySelector('.mgtook') || {}).textContent || '').replace(/^\s*took\s*/, ''),
    diff: (li.querySelector('pre.diff') || {}).textContent || '',
  }));
  return {
    applied: [...box.querySelectorAll('.mg.applied li[data-path]')].map((li) => ({
      path: li.dataset.path, op: li.dataset.op, change: li.dataset.change, text: li.textContent })),
    conflicts: conflicts('.mg.conflicts'),
    taken: conflicts('.mg.taken'),
    skipped: [...box.querySelectorAll('.mg.skipped li[data-path]')].map((li) => li.dataset.path),
  };
});

export async function mergeSteps(page, shot, step) {
  const m = {};
  step('merge: the picker shows the fork under its parent');
  m.picker = await page.$$eval('#sandbox option', (os) => os.map((o) => ({
    value: o.value, text: o.textContent, from: o.dataset.from || '', depth: Number(o.dataset.depth || 0) })));
  await page.selectOption('#sandbox', 'proj-try');
  await page.locator('.node[data-path="/shared.txt"]').waitFor();

  step('merge: the fork\'s history, its change set');
  await page.click('#tabhistory');
  await page.locator('#forkbar:not([hidden])').waitFor();
  m.forkOf = await page.textContent('#forkof');
  m.mergeButton = await page.textContent('#mergebtn');
  for (const p of ['/notes/plan.md', '/shared.txt']) await page.locator(`#changes li.ch[data-path="${p}"]`).waitFor();
  m.changes = await page.$$eval('#changes li.ch', (ls) => ls.map((l) => ({ path: l.dataset.path, change: l.dataset.change })));
  m.changesMeta = await page.textContent('#changesmeta');

  step('merge: the dialog opens on its dry run');
  await page.click('#mergebtn');
  await page.locator('#mergedlg[open]').waitFor();
  await page.locator('#mgresult[data-phase="dry"]').waitFor();
  m.strategyOpen = await page.$eval('#mgstrategy', (f) => !f.disabled) && await page.$eval('#mgok', (b) => !b.disabled);
  m.dry = await mgLists(page);
  await page.screenshot({ path: shot.replace(/\.png$/, '-merge.png') });
  await pause('merge-dry-run');

  step('merge: strategy theirs, confirmed');
  await page.check('#mgstrategy input[value="theirs"]');
  await page.click('#mgok');
  await page.locator('#mgresult[data-phase="done"]').waitFor();
  m.done = await mgLists(page);
  m.undo = (await page.getAttribute('#mgundo', 'data-id')) || '';
  m.undoText = await page.textContent('#mgundo');
  await page.click('#mgcancel');
  await page.locator('#mergedlg:not([open])').waitFor({ state: 'attached' });
  await page.click('#tabfeed');
  return m;
}
