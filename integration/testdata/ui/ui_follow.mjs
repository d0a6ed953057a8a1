// Steps of ui_check.mjs for what the console follows and shows (issue 20,
// checked by integration/ui_follow_test.go): syntax highlighting made of
// text, the head of a large text file, saves by rename onto the open file
// (viewed, then edited: compare or overwrite), the "saved" status cleared
// at the next edit, folders watchers exclude by default appearing in the
// tree without a refresh, and the layout at 800 and 600 px.
import fs from 'node:fs';
import path from 'node:path';

// renameOnto writes body beside rel and renames it onto rel, as sed -i,
// os.replace and editors' atomic saves do.
function renameOnto(root, rel, body) {
  const tmp = path.join(root, path.dirname(rel), '.' + path.basename(rel) + '.tmp' + process.pid);
  fs.writeFileSync(tmp, body);
  fs.renameSync(tmp, path.join(root, rel));
}

export async function followSteps(page, root, shot, step, openDir) {
  const r = {};

  step('highlighting: /src/hostile.js, markup in it stays text');
  await openDir(page, '/src');
  await page.click('.node[data-path="/src/hostile.js"] > .row');
  await page.locator('#view .tx[data-lang="js"]').waitFor();
  r.hl = await page.$eval('#view .tx', (tx) => ({
    lang: tx.dataset.lang, text: tx.textContent,
    spans: [...tx.querySelectorAll('span')].map((s) => [s.className, s.textContent]),
    elements: [...tx.querySelectorAll('*')].filter((e) => e.tagName !== 'SPAN').length,
  }));
  await page.click('.node[data-path="/src/main.go"] > .row');
  await page.locator('#view .tx[data-lang="go"]').waitFor();
  r.hlGo = await page.$$eval('#view .tx span', (ss) => ss.map((s) => [s.className, s.textContent]));

  step('a large text file: its head by a Range read');
  await openDir(page, '/data');
  await page.click('.node[data-path="/data/big.log"] > .row');
  await page.locator('#viewpath', { hasText: '/data/big.log' }).waitFor();
  await page.locator('#view .tx').waitFor();
  r.large = await page.evaluate(() => {
    const t = document.querySelector('#view .tx').textContent;
    return { length: t.length, tail: t.slice(-60), note: document.getElementById('viewnote').textContent,
      editDisabled: document.getElementById('edit').disabled, binary: !!document.querySelector('#view .binary') };
  });

  step('a save by rename onto the open file reloads it');
  await openDir(page, '/docs');
  await page.click('.node[data-path="/docs/atomic.txt"] > .row');
  await page.locator('#view .tx', { hasText: 'first version' }).waitFor();
  renameOnto(root, 'docs/atomic.txt', 'second version, renamed onto the file\n');
  await page.locator('#view .tx', { hasText: 'second version' }).waitFor();
  r.renameReloaded = await page.textContent('#view .tx');

  step('… and while it is edited: changed on disk, then save asks compare or overwrite');
  await page.click('#edit');
  await page.fill('#editor', 'my edit in the console\n');
  renameOnto(root, 'docs/atomic.txt', 'third version, from a tool\n');
  await page.locator('#viewnote', { hasText: 'Changed on disk' }).waitFor();
  r.staleNote = await page.textContent('#viewnote');
  await page.click('#save');
  await page.locator('#viewnote', { hasText: 'Save over it?' }).waitFor();
  r.saveAsks = await page.$$eval('#viewnote button', (bs) => bs.map((b) => b.textContent));
  r.diskBeforeOverwrite = fs.readFileSync(path.join(root, 'docs', 'atomic.txt'), 'utf8');
  await page.click('#viewnote button:text-is("compare")');
  await page.locator('#comparediff').waitFor();
  r.compare = await page.$$eval('#comparediff span', (ss) => ss.map((s) => [s.className, s.textContent]));
  r.editorKept = await page.inputValue('#editor');
  await page.click('#viewnote button:text-is("overwrite")');
  await page.locator('#status', { hasText: 'saved /docs/atomic.txt' }).waitFor();
  await page.locator('#view .tx', { hasText: 'my edit in the console' }).waitFor();
  r.diskAfterOverwrite = fs.readFileSync(path.join(root, 'docs', 'atomic.txt'), 'utf8');

  step('a rename onto a file open in the editor but not yet edited: told too');
  await page.click('#edit');
  renameOnto(root, 'docs/atomic.txt', 'fourth version, before any keystroke\n');
  await page.locator('#viewnote', { hasText: 'Changed on disk' }).waitFor();
  await page.click('#viewnote button:text-is("reload, drop my edits")');
  await page.locator('#view .tx', { hasText: 'fourth version' }).waitFor();
  r.reloadedUnedited = await page.textContent('#view .tx');

  step('"saved" clears at the next edit');
  await page.click('#edit');
  await page.fill('#editor', 'my edit in the console\n');
  await page.click('#save');
  await page.locator('#status', { hasText: 'saved /docs/atomic.txt' }).waitFor();
  await page.click('#edit');
  await page.type('#editor', 'x');
  r.statusAfterEdit = await page.textContent('#status');
  await page.click('#cancel');
  await page.locator('#view .tx').waitFor();

  step('folders watchers exclude by default appear in the tree');
  fs.mkdirSync(path.join(root, 'node_modules', 'left-pad'), { recursive: true });
  fs.writeFileSync(path.join(root, 'node_modules', 'left-pad', 'index.js'), 'module.exports = 1;\n');
  fs.mkdirSync(path.join(root, '.git', 'refs'), { recursive: true });
  fs.mkdirSync(path.join(root, 'docs', '__pycache__'));
  for (const p of ['/node_modules', '/.git', '/docs/__pycache__']) await page.locator(`.node[data-path="${p}"]`).waitFor();
  await openDir(page, '/node_modules');
  await page.locator('.node[data-path="/node_modules/left-pad"]').waitFor();
  r.excludedInTree = await page.$$eval('.node', (ns) => ns.map((n) => n.dataset.path).filter((p) => /node_modules|\.git|__pycache__/.test(p)));
  r.excludedInFeed = await page.$$eval('#feed li', (ls) => ls.map((l) => l.dataset.path).filter((p) => /node_modules|\.git|__pycache__/.test(p)));
  await page.check('#showhidden');
  r.excludedShown = await page.$$eval('#feed li', (ls) => ls.map((l) => l.dataset.path).filter((p) => /node_modules|\.git|__pycache__/.test(p)));
  await page.uncheck('#showhidden');

  step('layout at 800 and 600 px');
  await page.click('.node[data-path="/src/main.go"] > .row');
  await page.locator('#view .tx[data-lang="go"]').waitFor();
  r.layout = {};
  for (const [w, h] of [[800, 700], [600, 800]]) {
    await page.setViewportSize({ width: w, height: h });
    await page.mouse.move(0, 0);
    await page.screenshot({ path: shot.replace(/\.png$/, `-layout-${w}.png`) });
    r.layout[w] = await page.evaluate(([W, H]) => {
      const inside = (el) => { const b = el.getBoundingClientRect(); return b.left >= -0.5 && b.right <= W + 0.5 && b.top >= -0.5 && b.bottom <= H + 0.5; };
      const panes = ['treepane', 'viewpane', 'feedpane'].map((id) => {
        const el = document.getElementById(id);
        const b = el.getBoundingClientRect();
        const buttons = [...el.querySelectorAll('.bar button')].filter((x) => !x.hidden && x.offsetParent);
        return { id, width: Math.round(b.width), height: Math.round(b.height), inside: inside(el),
          buttonsOut: buttons.filter((x) => !inside(x)).map((x) => x.id || x.textContent) };
      });
      const top = [...document.querySelectorAll('#top > *')].filter((x) => x.offsetParent && x.getBoundingClientRect().width > 0);
      return { scrollWidth: document.documentElement.scrollWidth, scrollHeight: document.documentElement.scrollHeight, panes,
        topOut: top.filter((x) => !inside(x)).map((x) => x.id || x.className) };
    }, [w, h]);
  }
  await page.setViewportSize({ width: 1440, height: 860 });
  return r;
}
