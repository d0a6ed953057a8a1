// A line diff of two texts, for compare (editor.js): the file on disk
// against the editor's text, when the file changed on disk while it was
// edited.

// lineDiff is the lines of a and b as [kind, line]: ' ' both, '-' a only,
// '+' b only, and '…' for a run of unchanged lines left out (three kept
// around each change). A longest common subsequence of lines, after the
// common head and tail; a middle of over 4M line pairs is shown whole.
export function lineDiff(a, b) {
  const x = a.split('\n');
  const y = b.split('\n');
  let h = 0;
  while (h < x.length && h < y.length && x[h] === y[h]) h++;
  let t = 0;
  while (t < x.length - h && t < y.length - h && x[x.length - 1 - t] === y[y.length - 1 - t]) t++;
  const xs = x.slice(h, x.length - t);
  const ys = y.slice(h, y.length - t);
  const mid = [];
  if (xs.length * ys.length > 4e6) {
    for (const l of xs) mid.push(['-', l]);
    for (const l of ys) mid.push(['+', l]);
  } else {
    const n = xs.length, m = ys.length;
    const L = new Uint32Array((n + 1) * (m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        L[i * (m + 1) + j] = xs[i] === ys[j] ? L[(i + 1) * (m + 1) + j + 1] + 1
          : Math.max(L[(i + 1) * (m + 1) + j], L[i * (m + 1) + j + 1]);
      }
    }
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && xs[i] === ys[j]) { mid.push([' ', xs[i]]); i++; j++; }
      else if (i < n && (j === m || L[(i + 1) * (m + 1) + j] >= L[i * (m + 1) + j + 1])) mid.push(['-', xs[i++]]);
      else mid.push(['+', ys[j++]]);
    }
  }
  const all = [...x.slice(0, h).map((l) => [' ', l]), ...mid, ...x.slice(x.length - t).map((l) => [' ', l])];
  const near = all.map(() => false);
  all.forEach(([k], i) => { if (k !== ' ') for (let d = -3; d <= 3; d++) if (all[i + d]) near[i + d] = true; });
  const out = [];
  for (let i = 0; i < all.length; i++) {
    if (near[i]) { out.push(all[i]); continue; }
    let k = i;
    while (k < all.length && !near[k]) k++;
    if (k - i < 2) { out.push(all[i]); continue; }
    out.push(['…', `… ${k - i} unchanged line${k - i === 1 ? '' : 's'}`]);
    i = k - 1;
  }
  return out;
}
