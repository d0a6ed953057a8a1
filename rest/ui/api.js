// The one module that talks to the daemon: every fetch, XMLHttpRequest,
// and WebSocket of the console is made here, with the token.
//
//   files   the named-sandbox family /v1/sandboxes/{name}/fs/* (any sandbox,
//           "default" included); new folders and uploads of sandbox
//           "default" use /v2/fs/mkdir and /v2/fs/upload (streamed, no size
//           cap), other sandboxes PUT fs/write (16 MiB).
//   feed    sandbox "default": a watcher (POST /v2/watch) and its SSE stream
//           GET /v2/watch/{id}/events, read with fetch() so the token travels
//           in the Authorization header, never in a URL (no server or proxy
//           log, history entry or Referer ever holds it). Other sandboxes:
//           the §5 websocket, which a browser cannot give headers, so the
//           token goes as ?access_token there. Either way the feed opens with
//           the journal's last events, GET /v1/sandboxes/{name}/events.
//   token   sent as "Authorization: Bearer"; a 401 asks for it
//           (dialogs.js) and tries again.
import { state, isDefault, ownWrites } from './state.js';
import { askToken } from './dialogs.js';
import { join } from './paths.js';

class APIError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

function authHeaders(extra) {
  const h = Object.assign({}, extra || {});
  if (state.token) h.Authorization = 'Bearer ' + state.token;
  return h;
}

export async function api(method, url, opts = {}) {
  for (let attempt = 0; ; attempt++) {
    // no-store: a read must see the file as it is now, never a copy the
    // browser kept by Last-Modified heuristics.
    const init = { method, headers: authHeaders(opts.headers), cache: 'no-store' };
    if (opts.json !== undefined) {
      init.body = JSON.stringify(opts.json);
      init.headers['Content-Type'] = 'application/json';
    } else if (opts.body !== undefined) {
      init.body = opts.body;
    }
    const res = await fetch(url, init);
    if (res.status === 401 && attempt < 3) {
      await askToken(state.token ? 'The daemon refused that token.' : '');
      continue;
    }
    if (!res.ok && !(opts.answer || []).includes(res.status)) throw new APIError(res.status, await errorText(res));
    return res;
  }
}

async function errorText(res) {
  const text = await res.text();
  try {
    const j = JSON.parse(text);
    return j.error || j.message || j.detail || j.title || text;
  } catch (_) {
    return text || res.statusText;
  }
}

export const enc = encodeURIComponent;

// sbURL is a route of the selected sandbox (…/checkpoints, …/changes, …).
export const sbURL = (op, q) => `/v1/sandboxes/${enc(state.sandbox)}/${op}` + (q ? '?' + new URLSearchParams(q) : '');
const fsURL = (op, q) => sbURL('fs/' + op, q);

// listSandboxes is GET /v1/sandboxes: {sandboxes, count, defaultExcludes}.
export async function listSandboxes() { return (await api('GET', '/v1/sandboxes')).json(); }

// mergeFork is POST /v1/sandboxes/{fork}/merge: its answer, also that of a
// 409 (conflicts under strategy "fail"), which has the same body.
export async function mergeFork(fork, body) {
  return (await api('POST', `/v1/sandboxes/${enc(fork)}/merge`, { json: body, answer: [409] })).json();
}

// forkChanges is what the fork changed since it was made (no diffs).
export async function forkChanges(fork) {
  return (await api('GET', `/v1/sandboxes/${enc(fork)}/changes?since=fork`)).json();
}

export const fsapi = {
  async list(dir) {
    const j = await (await api('GET', fsURL('list', { path: dir }))).json();
    return j.entries || [];
  },
  async stat(p) { return (await api('GET', fsURL('stat', { path: p }))).json(); },
  async read(p) { return (await api('GET', fsURL('read', { path: p }))).blob(); },
  async head(p, n) { return (await api('GET', fsURL('read', { path: p }), { headers: { Range: `bytes=0-${n - 1}` } })).arrayBuffer(); },
  async write(p, body) {
    const now = Date.now();
    if (ownWrites.size > 64) for (const [k, until] of ownWrites) if (until < now) ownWrites.delete(k);
    ownWrites.set(p, now + 3000);
    return api('PUT', fsURL('write', { path: p, mkdir: 'true' }), { body });
  },
  async rename(source, dest) { return api('POST', fsURL('rename'), { json: { source, dest } }); },
  async remove(p, recursive) { return api('DELETE', fsURL('delete', { path: p, recursive: String(!!recursive) })); },
  async mkdir(p) { return api('POST', '/v2/fs/mkdir', { json: { path: p, parents: true } }); },
};

// uploadFile sends one file with XMLHttpRequest, whose upload events give
// progress (fetch() has none for request bodies).
export function uploadFile(dir, file, onProgress) {
  const target = join(dir, file.name);
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    let body;
    if (isDefault()) {
      xhr.open('POST', '/v2/fs/upload?' + new URLSearchParams({ path: target }));
      body = new FormData();
      body.append('path', target);
      body.append('file', file, file.name);
    } else {
      xhr.open('PUT', fsURL('write', { path: target, mkdir: 'true' }));
      body = file;
    }
    if (state.token) xhr.setRequestHeader('Authorization', 'Bearer ' + state.token);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded, e.total); };
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve(target);
      else {
        let msg = xhr.responseText;
        try { const j = JSON.parse(msg); msg = j.error || j.message || j.detail || msg; } catch (_) { /* text */ }
        reject(new APIError(xhr.status, msg || 'HTTP ' + xhr.status));
      }
    };
    xhr.onerror = () => reject(new Error('network error'));
    xhr.send(body);
  });
}

// journalTail is the journal's last n events of the selected sandbox.
export async function journalTail(n) {
  return (await api('GET', sbURL('events', { last: n }))).json();
}

// newWatcher makes the feed's watcher of sandbox "default": the whole tree,
// nothing excluded (the feed hides the default excludes itself, the tree
// follows them); its answer's data.
export async function newWatcher() {
  const r = await api('POST', '/v2/watch', { json: { path: '/', recursive: true, debounce: 100, exclude: [] } });
  return (await r.json()).data;
}

// dropWatcher releases this console's reference to a watcher; keepalive
// lets the request outlive a closing tab (sendBeacon cannot DELETE).
export function dropWatcher(id, keepalive) {
  return fetch('/v2/watch/' + enc(id), { method: 'DELETE', headers: authHeaders(), keepalive: !!keepalive });
}

// watchStream opens the watcher's SSE stream after cursor. A 404 (the
// daemon forgot the watcher) and a 401 are answered to the caller, which
// makes the watcher again or asks for the token; any other failure throws.
export async function watchStream(id, cursor, signal) {
  const res = await fetch(`/v2/watch/${enc(id)}/events?cursor=${cursor}`,
    { headers: authHeaders({ Accept: 'text/event-stream' }), signal, cache: 'no-store' });
  if (res.ok || res.status === 404 || res.status === 401) return res;
  throw new APIError(res.status, await errorText(res));
}

// watchSocket opens the §5 websocket of the selected sandbox.
export function watchSocket() {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const q = state.token ? '?access_token=' + enc(state.token) : '';
  return new WebSocket(`${proto}//${location.host}/v1/sandboxes/${enc(state.sandbox)}/fs/watch${q}`);
}
