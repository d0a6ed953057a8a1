// Opens the console of a daemon started with --no-auth (ui_follow_test.go):
// no token is asked for, and "forget token" is not shown, there being none.
// Prints one line "RESULT {json}".
import { chromium } from 'playwright-core';

const ctx = await chromium.launchPersistentContext(process.env.UI_USERDIR, {
  executablePath: '/usr/bin/chromium', headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});
const r = {};
try {
  const page = ctx.pages()[0] || await ctx.newPage();
  page.setDefaultTimeout(20_000);
  await page.goto(process.env.SANDFS_URL + '/ui/');
  await page.locator('body[data-ready="1"]').waitFor();
  await page.locator('#live.on').waitFor();
  r.tokenAsked = (await page.locator('#tokendlg[open]').count()) > 0;
  r.forgetVisible = await page.isVisible('#forget');
} finally {
  await ctx.close();
}
console.log('RESULT ' + JSON.stringify(r));
