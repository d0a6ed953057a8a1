// Paths of the API: absolute, "/" the sandbox's root.

export function dirname(p) {
  const i = p.lastIndexOf('/');
  return i <= 0 ? '/' : p.slice(0, i);
}

export function basename(p) { return p === '/' ? '/' : p.slice(p.lastIndexOf('/') + 1); }

export function join(dir, name) { return (dir === '/' ? '' : dir) + '/' + name; }
