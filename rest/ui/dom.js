// The console's one way to build DOM nodes: elements from createElement,
// text as text nodes, so nothing a server answer or a file holds is ever
// parsed as markup. No module of the console sets innerHTML.

export const $ = (id) => document.getElementById(id);

// el is a new <tag> of class cls (none when empty) holding kids in order:
// nodes as they are, anything else as text; null and undefined are skipped.
export function el(tag, cls, ...kids) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}
