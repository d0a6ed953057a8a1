// Forks in the sandbox picker: GET /v1/sandboxes names a fork's parent
// (from); the picker shows each fork under its parent, forks of forks
// further in. No imports, so that it runs under node alone (ui_forks_test.go).

// pickerOrder is the list's sandboxes as the picker shows them: each
// sandbox that is no fork (or whose parent this list does not hold: a
// sandbox token sees its own only) in the list's order, each followed by
// its forks by name, theirs under them; {name, from, depth} each, every
// sandbox once.
export function pickerOrder(sandboxes) {
  const names = new Set(sandboxes.map((s) => s.name));
  const kids = new Map();
  const roots = [];
  for (const s of sandboxes) {
    if (s.from && s.from !== s.name && names.has(s.from)) {
      if (!kids.has(s.from)) kids.set(s.from, []);
      kids.get(s.from).push(s);
    } else roots.push(s);
  }
  for (const k of kids.values()) k.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const out = [];
  const seen = new Set();
  const walk = (s, depth) => {
    if (seen.has(s.name)) return;
    seen.add(s.name);
    out.push({ name: s.name, from: s.from || '', depth });
    for (const k of kids.get(s.name) || []) walk(k, depth + 1);
  };
  for (const s of roots) walk(s, 0);
  // A loop of parents (never made by the daemon) still lists every name.
  for (const s of sandboxes) walk(s, 0);
  return out;
}

// pickerLabel is an entry's text in the picker: a fork indented by its
// depth, marked "↳".
export function pickerLabel(e) {
  return e.depth ? '\u00a0\u00a0'.repeat(e.depth - 1) + '↳ ' + e.name : e.name;
}
