// How the console writes sizes, times and checkpoints.

export function fmtSize(n) {
  if (n < 1024) return n + ' B';
  const u = ['KiB', 'MiB', 'GiB', 'TiB'];
  let i = -1;
  do { n /= 1024; i++; } while (n >= 1024 && i < u.length - 1);
  return (n < 10 ? n.toFixed(1) : Math.round(n)) + ' ' + u[i];
}

// fmtTime is the clock of a Unix time in seconds (none: now).
export function fmtTime(ts) {
  const d = ts ? new Date(ts * 1000) : new Date();
  return d.toTimeString().slice(0, 8);
}

// fmtStamp is an RFC 3339 time in local time: the clock for today, else the
// date too.
export function fmtStamp(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return iso || '';
  const clock = d.toTimeString().slice(0, 8);
  if (d.toDateString() === new Date().toDateString()) return clock;
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${clock}`;
}

export const cpLabel = (cp) => cp.name || cp.reason || cp.id;
