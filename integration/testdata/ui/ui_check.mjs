// Drives the sandfs web console (/ui/) in Debian's headless chromium
// through playwright-core, as integration/ui_test.go asks:
//
//   open the console (auth on: the token dialog; at the end a new tab opened
//   with the token in the URL fragment, which the console takes and removes), browse to a file, edit and
//   save it; upload one file with the file picker and one by drag and drop;
//   write files from outside the daemon (node's fs, straight into the root)
//   and see them in the feed with origin "external", in the tree, and in the
//   open file's view, without a reload; take a screenshot; switch to the
//   second sandbox and see an outside write there too (websocket feed).
//   The daemon was restarted on its state: the feed must open with the
//   journal's events from before (an agent's, by its X-Sandfs-Actor, and
//   one found at start). The history tab: checkpoints made and deleted,
//   "changed since" with a diff, restore's dry runs, a restore
//   (historySteps). A fork, proj-try of proj: under its parent in the
//   picker, its change set, its merge dialog (ui_merge.mjs).
//
// It prints one line "RESULT {json}" with what the page showed; the Go test
// checks that and the files on disk.
//
// Env: SANDFS_URL, SANDFS_TOKEN, UI_ROOT (the sandbox root on the host),
// UI_USERDIR (a fresh chromium profile), UI_SHOT (the screenshot's path),
// UI_SCRATCH (the root of the second sandbox, "scratch").
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';
import { followSteps } from './ui_follow.mjs';
import { mergeSteps } from './ui_merge.mjs';

const base = process.env.SANDFS_URL;
const token = process.env.SANDFS_TOKEN;
const root = process.env.UI_ROOT;
const shot = process.env.UI_SHOT;
const T = 20_000; // per step; generous for a loaded 2-core machine

// openDir unfolds a folder of the tree (a click on an open one folds it).
const openDir = async (page, p) => {
  const node = page.locator(`.node[data-path="${p}"]`);
  if (!(await node.evaluate((n) => n.classList.contains('open')))) await node.locator(':scope > .row').click();
  await page.locator(`.node.open[data-path="${p}"]`).waitFor();
};

// feedRows is the change feed as the page shows it.
const feedRows = (page) => page.$$eval('#feed li', (ls) => ls.map((l) => ({
  seq: l.dataset.seq || '', origin: l.dataset.origin, type: l.dataset.type, path: l.dataset.path,
  actor: l.dataset.actor || '', found: l.dataset.found === '1', writes: Number(l.dataset.writes || 0),
  text: (l.querySelector('.x') || {}).textContent || '',
})));

// rsLists is what the restore dialog lists, by section.
const rsLists = (page) => page.$eval('#rsresult', (box) => {
  const out = { scope: box.dataset.scope || '' };
  for (const k of ['written', 'removed', 'skipped']) out[k] = [...box.querySelectorAll(`.rs.${k} li[data-path]`)].map((li) => li.dataset.path);
  return out;
});

// waitScope waits for the restore dialog's dry run of a scope whose key has
// (and, when given, lacks) a text.
const waitScope = (page, has, lacks) => page.waitForFunction(([h, l]) => {
  const s = document.querySelector('#rsresult').dataset.scope || '';
  return s.includes(h) && (!l || !s.includes(l)) && !document.querySelector('#rsok').disabled;
}, [has, lacks]);

// newCheckpoint makes a checkpoint named name with the "+ checkpoint"
// button and returns its row of the timeline.
async function newCheckpoint(page, name) {
  await page.click('#newcp');
  await page.locator('#askdlg[open]').waitFor();
  await page.fill('#askinput', name);
  await page.press('#askinput', 'Enter');
  const row = page.locator(`#timeline li.cp[data-name="${name}"]`);
  await row.waitFor();
  return row;
}

// historySteps: the history tab of sandbox default: a checkpoint made in
// the console, changes after it (outside, and by an agent through the
// API), "changed since" with the diff of a file, restore's dry runs of
// three scopes, and the restore of one path.
async function historySteps(page) {
  const h = result.history;
  step('history: a checkpoint from the console');
  await page.click('#tabhistory');
  await page.locator('#historytab:not([hidden])').waitFor();
  const cp = await newCheckpoint(page, 'before the test');
  h.checkpoint = await cp.evaluate((li) => ({ id: li.dataset.id, name: li.dataset.name, seq: li.dataset.seq,
    files: li.dataset.files, bytes: li.dataset.bytes, text: li.querySelector('.cpstats').textContent }));

  step('history: another checkpoint, deleted');
  const gone = await newCheckpoint(page, 'to delete');
  h.deleted = await gone.getAttribute('data-id');
  await gone.locator('button.del').click();
  await page.locator('#askdlg[open]').waitFor();
  await page.click('#askdlg button[value="ok"]');
  await gone.waitFor({ state: 'detached' });
  h.timelineAfterDelete = await page.$$eval('#timeline li.cp', (ls) => ls.map((l) => l.dataset.id));

  step('history: change files after it, then "changed since"');
  fs.writeFileSync(path.join(root, 'src', 'util.go'), 'package main\n\nfunc greet(name string) string { return "hi, " + name }\n');
  fs.writeFileSync(path.join(root, 'docs', 'added-later.txt'), 'made after the checkpoint\n');
  const put = await fetch(base + '/v1/sandboxes/default/fs/write?path=/README.md', { method: 'PUT',
    headers: { Authorization: 'Bearer ' + token, 'X-Sandfs-Actor': 'agent-7' }, body: '# demo\n\nRewritten by the agent.\n' });
  if (!put.ok) throw new Error('PUT README.md: ' + put.status);
  await page.locator('#feed li[data-origin="external"][data-path="/src/util.go"]').first().waitFor({ state: 'attached' });
  await page.locator('#feed li[data-origin="external"][data-path="/docs/added-later.txt"]').first().waitFor({ state: 'attached' });
  await cp.locator('button.since').click();
  for (const sel of ['li.ch[data-path="/src/util.go"][data-change="modified"]', 'li.ch[data-path="/README.md"][data-who="agent-7"]',
    'li.ch[data-path="/docs/added-later.txt"][data-change="added"]']) await page.locator('#changes ' + sel).waitFor();
  h.changes = await page.$$eval('#changes li.ch', (ls) => ls.map((l) => ({ path: l.dataset.path, change: l.dataset.change,
    who: l.dataset.who, letter: l.querySelector('.ck').textContent, text: l.textContent })));
  h.changesMeta = await page.textContent('#changesmeta');

  step('history: the diff of /src/util.go on click');
  await page.click('#changes li.ch[data-path="/src/util.go"]');
  await page.locator('#view pre.diff').waitFor();
  h.diffShown = await page.textContent('#view pre.diff');
  h.diffPath = await page.textContent('#viewpath');
  const api = await (await fetch(base + `/v1/sandboxes/default/changes?since=${encodeURIComponent(h.checkpoint.id)}&path=/src/util.go&diff=true`,
    { headers: { Authorization: 'Bearer ' + token } })).json();
  h.diffAPI = (api.changes || []).map((c) => c.diff || '').join('');
  await page.mouse.move(0, 0);
  await page.screenshot({ path: shot.replace(/\.png$/, '-history.png') });

  step('history: at 800 px wide');
  await page.setViewportSize({ width: 800, height: 700 });
  await page.screenshot({ path: shot.replace(/\.png$/, '-800.png') });
  h.narrow = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth,
    panes: ['treepane', 'viewpane', 'feedpane'].map((id) => Math.round(document.getElementById(id).getBoundingClientRect().width)),
    newcpVisible: document.getElementById('newcp').getBoundingClientRect().right <= 800 }));
  await page.setViewportSize({ width: 1440, height: 860 });

  step('history: restore, the dry run first');
  await cp.locator('button.restore').click();
  await page.locator('#restoredlg[open]').waitFor();
  await waitScope(page, h.checkpoint.id, '"paths"');
  h.dryAll = await rsLists(page);
  await page.fill('#rsactor', 'agent-7');
  await waitScope(page, '"actor":"agent-7"');
  h.dryActor = await rsLists(page);
  await page.fill('#rsactor', '');
  await page.check('#rsonlypath');
  await waitScope(page, '"paths":["/src/util.go"]', '"actor"');
  h.dryPath = await rsLists(page);
  await page.screenshot({ path: shot.replace(/\.png$/, '-restore.png') });
  await page.click('#rsok');
  await page.locator('#restoredlg:not([open])').waitFor({ state: 'attached' });
  await page.locator('#status', { hasText: 'restored to' }).waitFor();
  h.restoreStatus = await page.textContent('#status');
  await page.locator('#timeline li.cp[data-reason="before-restore"]').waitFor();
  h.timeline = await page.$$eval('#timeline li.cp', (ls) => ls.map((l) => ({ id: l.dataset.id, name: l.dataset.name, reason: l.dataset.reason })));
  await page.click('#tabfeed');
  h.injected = await page.evaluate(() => !!document.querySelector('#pwn, img[src="x"]') || window.__pwned === 1);
}

const step = (msg) => console.log(new Date().toISOString().slice(11, 23), msg);

const ctx = await chromium.launchPersistentContext(process.env.UI_USERDIR, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1440, height: 860 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const result = { outside: [], consoleErrors: [], navigations: 0, history: {} };
try {
  const page = ctx.pages()[0] || await ctx.newPage();
  page.setDefaultTimeout(T);
  page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('blob:') && !r.url().startsWith('data:')) result.outside.push(r.url()); });
  page.on('console', (m) => { if (m.type() === 'error') result.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => result.consoleErrors.push('pageerror: ' + e.message));
  page.on('response', (r) => { if (r.status() >= 400 && r.status() !== 401) console.log('HTTP', r.status(), r.request().method(), r.url()); });
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) result.navigations++; });

  step('open the console');
  await page.goto(base + '/ui/');
  await page.locator('#tokendlg[open]').waitFor();
  result.tokenAsked = true;
  await page.fill('#tokeninput', token);
  await page.press('#tokeninput', 'Enter');
  await page.locator('body[data-ready="1"]').waitFor();
  step('console ready');
  result.consoleErrors = result.consoleErrors.filter((e) => !/status of 401/.test(e)); // the tokenless first try
  await page.locator('#live.on').waitFor();
  step('feed live');
  // The daemon restarted on its state: the feed opens with what the agent
  // did before, and with what was written while the daemon was down.
  await page.locator('#feed li[data-actor="agent-7"][data-path="/docs/agent-notes.md"]').first().waitFor();
  await page.locator('#feed li[data-found="1"][data-path="/docs/while-down.txt"]').first().waitFor();
  result.history.openFeed = await feedRows(page);
  step('the feed opened with its history');
  result.sandboxes = await page.$$eval('#sandbox option', (os) => os.map((o) => o.value));
  result.tokenStored = await page.evaluate(() => sessionStorage.getItem('sandfs.token'));
  await page.evaluate(() => { window.__sameDocument = true; });

  step('browse to /docs/notes.txt');
  await openDir(page, '/docs');
  await page.click('.node[data-path="/docs/notes.txt"] > .row');
  await page.locator('#viewpath', { hasText: '/docs/notes.txt' }).waitFor();
  result.viewed = await page.textContent('#view .tx');
  result.lineNumbers = await page.textContent('#view .ln');

  step('edit and save');
  await page.click('#edit');
  await page.fill('#editor', 'hello\nedited in the console\n\tindented line\n');
  await page.click('#save');
  await page.locator('#status', { hasText: 'saved /docs/notes.txt' }).waitFor();
  await page.locator('#view .tx', { hasText: 'edited in the console' }).waitFor();
  result.afterSave = await page.textContent('#view .tx');

  step('an image and a binary file');
  await openDir(page, '/assets');
  await page.click('.node[data-path="/assets/logo.png"] > .row');
  await page.waitForFunction(() => { const i = document.querySelector('#view img'); return i && i.complete && i.naturalWidth > 0; });
  result.imageWidth = await page.$eval('#view img', (i) => i.naturalWidth);
  await openDir(page, '/data');
  await page.click('.node[data-path="/data/blob.bin"] > .row');
  await page.locator('#view .binary').waitFor();
  result.binaryText = await page.textContent('#view .binary b');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
  result.downloadName = dl.suggestedFilename();
  result.downloadMatches = fs.readFileSync(await dl.path()).equals(fs.readFileSync(path.join(root, 'data', 'blob.bin')));

  step('new file, rename it into another folder, delete a file');
  await page.click('.node[data-path="/docs"] > .row .name'); // select the folder
  await openDir(page, '/docs');
  await page.click('#newfile');
  await page.locator('#askdlg[open]').waitFor();
  await page.fill('#askinput', 'todo.txt');
  await page.press('#askinput', 'Enter');
  await page.locator('#editor').waitFor();
  await page.fill('#editor', '- ship the console\n');
  await page.keyboard.press('Control+s');
  await page.locator('#status', { hasText: 'saved /docs/todo.txt' }).waitFor();
  await page.click('#move');
  await page.locator('#askdlg[open]').waitFor();
  await page.fill('#askinput', '/src/todo.md');
  await page.press('#askinput', 'Enter');
  await page.locator('#viewpath', { hasText: '/src/todo.md' }).waitFor();
  await page.locator('.node[data-path="/src/todo.md"]').waitFor();
  await openDir(page, '/docs');
  await page.click('.node[data-path="/docs/design.md"] > .row');
  await page.locator('#viewpath', { hasText: '/docs/design.md' }).waitFor();
  await page.click('#delete');
  await page.locator('#askdlg[open]').waitFor();
  await page.click('#askdlg button[value="ok"]');
  await page.locator('#status', { hasText: 'deleted /docs/design.md' }).waitFor();
  await page.locator('.node[data-path="/docs/design.md"]').waitFor({ state: 'detached' });
  await page.locator('.node[data-path="/docs/todo.txt"]').waitFor({ state: 'detached' });
  await page.click('.node[data-path="/docs/notes.txt"] > .row');
  await page.locator('#viewpath', { hasText: '/docs/notes.txt' }).waitFor();

  step('upload with the file picker into /docs');
  await page.setInputFiles('#uploadinput', {
    name: 'picked.txt', mimeType: 'text/plain', buffer: Buffer.from('uploaded with the picker\n'),
  });
  await page.locator('.up.done[data-name="picked.txt"]').waitFor();
  await page.locator('.node[data-path="/docs/picked.txt"]').waitFor();

  step('upload by drag and drop onto /src');
  await page.evaluate(() => {
    const bytes = new Uint8Array(3 * 1024 * 1024 + 7);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + (i >> 9)) & 0xff;
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], 'dropped.bin', { type: 'application/octet-stream' }));
    const row = document.querySelector('.node[data-path="/src"] > .row');
    for (const type of ['dragenter', 'dragover', 'drop']) {
      row.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    }
  });
  await page.locator('.up.done[data-name="dropped.bin"]').waitFor();
  result.uploadLabel = await page.textContent('.up.done[data-name="dropped.bin"] .pct');

  step('open /src/main.go, then change it and add a file from outside');
  await openDir(page, '/src');
  await page.locator('.node[data-path="/src/dropped.bin"]').waitFor();
  await page.click('.node[data-path="/src/main.go"] > .row');
  await page.locator('#viewpath', { hasText: '/src/main.go' }).waitFor();
  fs.writeFileSync(path.join(root, 'docs', 'from-outside.txt'), 'written straight into the root\n');
  fs.appendFileSync(path.join(root, 'src', 'main.go'), '// appended from outside the daemon\n');
  await page.locator('#feed li[data-origin="external"][data-path="/docs/from-outside.txt"]').first().waitFor();
  await page.locator('.node[data-path="/docs/from-outside.txt"]').waitFor();
  await page.locator('#view .tx', { hasText: 'appended from outside the daemon' }).waitFor();
  result.openFileRefreshed = true;

  step('filters');
  await page.uncheck('.filters input[data-origin="api"]');
  result.feedWithoutAPI = await page.$$eval('#feed li', (ls) => ls.map((l) => l.dataset.origin));
  await page.check('.filters input[data-origin="api"]');
  await page.fill('#pathfilter', 'notes');
  result.feedNotes = await page.$$eval('#feed li', (ls) => ls.map((l) => l.dataset.path));
  await page.fill('#pathfilter', '');

  result.forgetVisible = await page.isVisible('#forget'); // a token is kept: it can be forgotten
  result.follow = await followSteps(page, root, shot, step, openDir);

  result.feed = await page.$$eval('#feed li', (ls) => ls.map((l) => ({ origin: l.dataset.origin, type: l.dataset.type, path: l.dataset.path })));
  result.history.endFeed = await feedRows(page);
  result.tree = await page.$$eval('.node', (ns) => ns.map((n) => n.dataset.path));
  result.sameDocument = await page.evaluate(() => window.__sameDocument === true);

  step('screenshot');
  await page.click('.node[data-path="/docs/notes.txt"] > .row');
  await page.locator('#viewpath', { hasText: '/docs/notes.txt' }).waitFor();
  await page.mouse.move(0, 0);
  await page.screenshot({ path: shot });
  result.screenshot = shot;

  await historySteps(page);
  result.merge = await mergeSteps(page, shot, step);

  step('switch to sandbox scratch: its feed comes over the websocket');
  await page.selectOption('#sandbox', 'scratch');
  await page.locator('#live.on', { hasText: 'websocket' }).waitFor();
  await page.locator('.node[data-path="/seed.txt"]').waitFor();
  await page.locator('#feed li[data-actor="agent-7"][data-path="/from-agent.txt"]').first().waitFor();
  fs.writeFileSync(path.join(process.env.UI_SCRATCH, 'hello.txt'), 'hello, scratch\n');
  await page.locator('#feed li[data-origin="external"][data-path="/hello.txt"]').first().waitFor();
  await page.locator('.node[data-path="/hello.txt"]').waitFor();
  result.history.scratchFeed = await feedRows(page);
  result.scratchTree = await page.$$eval('.node', (ns) => ns.map((n) => n.dataset.path));
  result.sameDocumentAtEnd = await page.evaluate(() => window.__sameDocument === true);

  step('a new tab opened from the URL the daemon logs: the token comes from the fragment');
  const tab = await ctx.newPage(); // a tab of its own: empty sessionStorage
  tab.setDefaultTimeout(T);
  await tab.goto(base + '/ui/#token=' + encodeURIComponent(token));
  await tab.locator('body[data-ready="1"]').waitFor();
  await tab.locator('#feed li[data-path="/docs/from-outside.txt"]').first().waitFor();
  result.history.tabFeed = await feedRows(tab);
  result.fragmentAsked = (await tab.locator('#tokendlg[open]').count()) > 0;
  result.fragmentStored = await tab.evaluate(() => sessionStorage.getItem('sandfs.token'));
  result.fragmentURL = await tab.evaluate(() => location.href);
  result.fragmentSandboxes = await tab.$$eval('#sandbox option', (os) => os.map((o) => o.value));
  // Closing the tab releases its reference to the watcher of its feed (the
  // first tab is on sandbox scratch now, whose feed is the websocket, and
  // stays live).
  const refs = async () => {
    const l = await (await fetch(base + '/v2/watch', { headers: { Authorization: 'Bearer ' + token } })).json();
    const w = l.data.watchers.find((x) => x.path === '/' && x.exclude.length === 0 && x.debounce === 100);
    return w ? w.subscribers : 0;
  };
  result.watchRefsOpen = await refs();
  await tab.close({ runBeforeUnload: true });
  for (let i = 0; i < 50 && (await refs()) >= result.watchRefsOpen; i++) await new Promise((r) => setTimeout(r, 100));
  result.watchRefsClosed = await refs();
  fs.writeFileSync(path.join(process.env.UI_SCRATCH, 'after-the-tab.txt'), 'the first tab still follows\n');
  await page.locator('#feed li[data-path="/after-the-tab.txt"]').first().waitFor({ state: 'attached' });
  result.feedAfterTabClosed = true;
} catch (err) {
  const page = ctx.pages()[0];
  if (page) {
    await page.screenshot({ path: shot.replace(/\.png$/, '.failed.png') }).catch(() => {});
    console.log('status:', await page.textContent('#status').catch(() => '?'));
    console.log('view:', (await page.innerHTML('#view').catch(() => '?')).slice(0, 2000));
  }
  console.log('RESULT-SO-FAR ' + JSON.stringify(result));
  throw err;
} finally {
  await ctx.close();
}
console.log('RESULT ' + JSON.stringify(result));
