// The usage line in the header: what the selected sandbox holds against its
// quota, "12.3 MiB of 1 GiB · 340 of 10,000 entries", from the usage and
// quota objects ({bytes, entries}) of its entry in GET /v1/sandboxes. A
// daemon whose list carries no usage shows nothing. Read again on a sandbox
// switch and, coalesced, after live events.
import { $ } from './dom.js';
import { state, onFeed, onSwitch } from './state.js';
import { listSandboxes } from './api.js';

const usageState = { gen: 0, timer: 0 };

// fmtBytes is a byte count in binary units, one decimal under 100.
function fmtBytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  if (i === 0) return `${n} B`;
  const s = v < 100 ? v.toFixed(1) : Math.round(v).toString();
  return `${s.replace(/\.0$/, '')} ${units[i]}`;
}

// fmtUsage is the usage line ("" when the answer has no usage); a bound
// of 0 is none, and then only the usage is shown.
function fmtUsage(usage, quota) {
  if (!usage || typeof usage.bytes !== 'number' || typeof usage.entries !== 'number') return '';
  const q = quota || {};
  const count = (n) => n.toLocaleString('en-US');
  const bytes = fmtBytes(usage.bytes) + (q.bytes > 0 ? ` of ${fmtBytes(q.bytes)}` : '');
  const entries = count(usage.entries) + (q.entries > 0 ? ` of ${count(q.entries)}` : '') + ' entries';
  return `${bytes} · ${entries}`;
}

// atBound reports whether usage has reached one of its bounds.
function atBound(usage, quota) {
  const q = quota || {};
  return !!usage && ((q.bytes > 0 && usage.bytes >= q.bytes) || (q.entries > 0 && usage.entries >= q.entries));
}

async function refreshUsage() {
  const gen = ++usageState.gen;
  let me = null;
  try {
    const list = await listSandboxes();
    me = (list.sandboxes || []).find((s) => s.name === state.sandbox) || null;
  } catch (_) {
    me = null; // the list failed: say nothing rather than something stale
  }
  if (gen !== usageState.gen) return; // a newer read (a switch) owns the line
  const line = me ? fmtUsage(me.usage, me.quota) : '';
  const u = $('usage');
  u.textContent = line;
  u.hidden = line === '';
  u.classList.toggle('full', line !== '' && atBound(me.usage, me.quota));
}

// wireUsage reads the line on each sandbox switch and, at most once a
// second, after live events.
export function wireUsage() {
  onSwitch.push(refreshUsage);
  onFeed.push(() => {
    clearTimeout(usageState.timer);
    usageState.timer = setTimeout(refreshUsage, 1000);
  });
}
