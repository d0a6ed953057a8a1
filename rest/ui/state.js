// What the console's views share: one state object, the hooks that run on
// a sandbox switch and on each live event, and the token's place. Every
// module imports what it reads from here; nothing is global.

export const TOKEN_KEY = 'sandfs.token';
export const SB_KEY = 'sandfs.sandbox';

// tokenFromFragment moves a "#token=T" of the address into storage and
// out of the address bar (history.replaceState: no reload, no new history
// entry), and returns the token to use: the fragment's, else the stored one.
export function tokenFromFragment(loc, hist, store) {
  const frag = new URLSearchParams((loc.hash || '').replace(/^#/, ''));
  const t = (frag.get('token') || '').trim();
  if (frag.has('token')) {
    frag.delete('token');
    const rest = frag.toString();
    hist.replaceState(hist.state, '', loc.pathname + loc.search + (rest ? '#' + rest : ''));
  }
  if (t) store.setItem(TOKEN_KEY, t);
  return t || store.getItem(TOKEN_KEY) || '';
}

export const state = {
  token: '', // main.js sets it first, from the fragment or the tab's storage
  sandbox: '',
  forks: new Map(), // fork name -> {from, checkpoint}, from GET /v1/sandboxes
  nodes: new Map(), // API path -> tree node element
  selected: null, // {path, isDir}
  open: null, // {path, kind, text, size, entry}
  editing: false,
  dirty: false,
  events: [],
  feedGen: 0,
  watcher: null,
  feedStop: null,
  lastOf: new Map(), // path -> its last event in the feed (foldEvent)
  lastSeq: 0, // the newest seq the feed holds: live events at or before it are not shown again
  resume: false, // lastSeq is a place in the journal the live feed goes on after
};

// What other views (history, usage) do when the sandbox changes (onSwitch)
// and on each live event of the feed (onFeed), in the order added.
export const onSwitch = [];
export const onFeed = [];

export const isDefault = () => state.sandbox === 'default';

// ownWrites: path -> until when an api event of it is the echo of this
// console's own write (not a change on disk under an edit).
export const ownWrites = new Map();
