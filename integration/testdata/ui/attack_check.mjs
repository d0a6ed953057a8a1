// Plays a hostile web page against a sandfs daemon in Debian's headless
// chromium, as integration/browser_test.go asks (issue 16, items 5 to 7).
// The page knows the daemon's address and even its token, and tries what a
// page can do without the daemon's consent: HTML forms (text/plain,
// urlencoded, multipart, the token in the action URL), no-cors fetches,
// a CORS fetch with the token header (preflighted), a websocket, and a
// DNS-rebound name (chromium's host resolver maps rebind.test to
// 127.0.0.1, as a rebinding DNS server would). The Go test then checks that
// the root and the watcher list are unchanged.
//
// Prints one line "RESULT {json}": per page, what each attempt saw.
//
// Env: SANDFS_URL (http://127.0.0.1:PORT), SANDFS_TOKEN, ATTACK_PAGES (comma
// separated page URLs, each serving an empty HTML page of another origin),
// ATTACK_USERDIR (a fresh chromium profile).
import { chromium } from 'playwright-core';

const base = process.env.SANDFS_URL;
const token = process.env.SANDFS_TOKEN;
const pages = process.env.ATTACK_PAGES.split(',');
const port = new URL(base).port;

const ctx = await chromium.launchPersistentContext(process.env.ATTACK_USERDIR, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--host-resolver-rules=MAP rebind.test 127.0.0.1'],
});
const result = { pages: {} };
try {
  const page = ctx.pages()[0] || await ctx.newPage();
  page.setDefaultTimeout(20_000);
  for (const url of pages) {
    await page.goto(url);
    result.pages[url] = await page.evaluate(async ({ base, token }) => {
      const out = {};
      const q = 'access_token=' + encodeURIComponent(token);
      // A form posted into a hidden frame, so the page stays.
      const form = (name, action, enctype, fields, file) => new Promise((resolve) => {
        const f = document.createElement('iframe');
        f.name = 'f_' + name;
        f.style.display = 'none';
        document.body.appendChild(f);
        const el = document.createElement('form');
        el.method = 'POST';
        el.action = action;
        el.enctype = enctype;
        el.target = f.name;
        for (const [k, v] of Object.entries(fields)) {
          const i = document.createElement('input');
          i.name = k;
          i.value = v;
          el.appendChild(i);
        }
        if (file) {
          const i = document.createElement('input');
          i.type = 'file';
          i.name = 'file';
          const dt = new DataTransfer();
          dt.items.add(new File(['owned'], 'owned.txt'));
          i.files = dt.files;
          el.appendChild(i);
        }
        document.body.appendChild(el);
        f.onload = () => resolve('submitted');
        el.submit();
        setTimeout(() => resolve('timeout'), 3000);
      });
      // text/plain form: name={"path":…,"x":"=…"} is valid JSON once joined.
      out.formTextPlain = await form('tp', `${base}/v2/fs/write?${q}`, 'text/plain',
        { '{"path":"/owned-tp.txt","content":"owned","x":"': '"}' });
      out.formUrlencoded = await form('ue', `${base}/v1/fs/mkdir?path=/owned-ue&${q}`, 'application/x-www-form-urlencoded', { a: '1' });
      out.formMultipart = await form('mp', `${base}/v2/fs/upload?path=/owned-mp.txt&${q}`, 'multipart/form-data', { path: '/owned-mp.txt' }, true);
      out.formChmod = await form('ch', `${base}/v1/sandboxes/default/fs/chmod?${q}`, 'text/plain',
        { '{"path":"/keep.txt","mode":"4777","x":"': '"}' });
      const noCors = async (name, method, path, body, type) => {
        try {
          const init = { method, mode: 'no-cors', body };
          if (type) init.headers = { 'Content-Type': type };
          await fetch(base + path, init);
          out[name] = 'sent (opaque)';
        } catch (e) { out[name] = 'error: ' + e.message; }
      };
      await noCors('noCorsWrite', 'POST', `/v1/file/write?${q}`, '{"file":"/owned-nc.txt","content":"owned"}', 'text/plain');
      await noCors('noCorsWatch', 'POST', `/v2/watch?${q}`, '{"path":"/"}', 'text/plain');
      await noCors('noCorsMkdir', 'POST', `/v1/fs/mkdir?path=/owned-nc-dir&${q}`);
      await noCors('noCorsDelete', 'POST', `/v2/fs/delete?${q}`, '{"path":"/keep.txt"}', 'text/plain');
      try {
        const r = await fetch(`${base}/v2/fs/write`, {
          method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + token },
          body: '{"path":"/owned-cors.txt","content":"owned"}',
        });
        out.corsWrite = 'status ' + r.status;
      } catch (e) { out.corsWrite = 'blocked: ' + e.message; }
      try {
        const r = await fetch(`${base}/v2/fs/read?path=/keep.txt&${q}`);
        out.corsRead = 'status ' + r.status + ' ' + (await r.text()).slice(0, 40);
      } catch (e) { out.corsRead = 'blocked: ' + e.message; }
      out.websocket = await new Promise((resolve) => {
        const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/sandboxes/default/fs/watch?${q}`);
        ws.onopen = () => { resolve('open'); ws.close(); };
        ws.onerror = () => resolve('refused');
        setTimeout(() => resolve('timeout'), 5000);
      });
      return out;
    }, { base, token });
  }
  // DNS rebinding: the attacker's name now resolves to 127.0.0.1, so its
  // page would be same-origin with the daemon at that name.
  const rebound = `http://rebind.test:${port}`;
  const r1 = await page.goto(`${rebound}/v2/fs/read?path=/keep.txt&access_token=${encodeURIComponent(token)}`);
  result.rebindRead = { status: r1.status(), body: (await r1.text()).slice(0, 200) };
  const r2 = await page.goto(`${rebound}/ui/`);
  result.rebindConsole = { status: r2.status() };
} finally {
  console.log('RESULT ' + JSON.stringify(result));
  await ctx.close();
}
