// A unified diff as the console shows it (the history's file view, the
// merge dialog's conflicts): a span a line, classed by its first
// character, each a text node (dom.js).
import { el } from './dom.js';

// renderDiff is text as a <pre class="diff">; its textContent is the diff
// exactly.
export function renderDiff(text) {
  const pre = el('pre', 'diff');
  const lines = text.split('\n');
  const last = lines.length - 1;
  lines.forEach((ln, i) => {
    if (i === last && ln === '') return;
    let cls = 'ctx';
    if (ln.startsWith('+++') || ln.startsWith('---')) cls = 'hd';
    else if (ln.startsWith('@@')) cls = 'hunk';
    else if (ln.startsWith('+')) cls = 'add';
    else if (ln.startsWith('-')) cls = 'del';
    else if (ln.startsWith('\\')) cls = 'nonl';
    pre.appendChild(el('span', cls, i < last ? ln + '\n' : ln));
  });
  return pre;
}
