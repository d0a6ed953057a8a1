// The status line and the page's dialogs: the token prompt, and a one-line
// question.
import { $ } from './dom.js';
import { state, TOKEN_KEY } from './state.js';

let statusTimer = 0;
export function setStatus(msg, isErr) {
  const el = $('status');
  el.textContent = msg;
  el.title = msg;
  el.classList.toggle('err', !!isErr);
  clearTimeout(statusTimer);
  if (!isErr) statusTimer = setTimeout(() => { el.textContent = ''; el.title = ''; }, 6000);
}

export function fail(what, err) {
  console.error(what, err);
  setStatus(`${what}: ${err.message || err}`, true);
}

// askToken asks for the token once, however many requests were refused
// meanwhile: they all wait on the one answer.
let tokenAsk = null;
export function askToken(msg) {
  if (tokenAsk) return tokenAsk;
  const dlg = $('tokendlg');
  $('tokenerr').textContent = msg || '';
  $('tokeninput').value = '';
  tokenAsk = new Promise((resolve) => {
    dlg.onclose = () => {
      const v = $('tokeninput').value.trim();
      if (!v) { dlg.showModal(); return; }
      state.token = v;
      sessionStorage.setItem(TOKEN_KEY, v);
      tokenAsk = null;
      resolve();
    };
  });
  dlg.showModal();
  return tokenAsk;
}

// ask shows a one-line prompt (value null: a yes/no question).
export function ask(title, value) {
  const dlg = $('askdlg');
  $('asktitle').textContent = title;
  const input = $('askinput');
  input.hidden = value === null;
  input.value = value || '';
  $('askcancel').onclick = () => dlg.close('cancel');
  return new Promise((resolve) => {
    dlg.onclose = () => {
      if (dlg.returnValue !== 'ok') resolve(null);
      else resolve(value === null ? true : input.value.trim());
    };
    dlg.returnValue = '';
    dlg.showModal();
    if (value !== null) {
      input.focus();
      const dot = input.value.lastIndexOf('.');
      const slash = input.value.lastIndexOf('/');
      input.setSelectionRange(slash + 1, dot > slash + 1 ? dot : input.value.length);
    }
  });
}
