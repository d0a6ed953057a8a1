// Where the feed's events come from. It opens with the last events the
// journal kept (across restarts too), then goes on live from the seq that
// page ended at: sandbox "default" through its watcher's SSE stream, other
// sandboxes through the §5 websocket; an event whose seq was shown already
// is dropped, so none shows twice.
import { state, isDefault } from './state.js';
import { dropWatcher, journalTail, newWatcher, watchSocket, watchStream } from './api.js';
import { askToken, fail, setStatus } from './dialogs.js';
import { onEvent, overflow, pushEvents, renderFeed, setLive } from './feed.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function startFeed() {
  stopFeed();
  const gen = ++state.feedGen;
  state.resume = false;
  if (isDefault()) sseFeed(gen);
  else socketFeed(gen, true);
}

function stopFeed() {
  state.feedGen++;
  if (state.feedStop) state.feedStop();
  state.feedStop = null;
  releaseWatcher();
}

// releaseWatcher gives the watcher back; a closing tab does it too.
export function releaseWatcher() {
  const id = state.watcher;
  state.watcher = null;
  if (id) dropWatcher(id, true).catch(() => {});
}

// namedEvent is an event of the named family (a page of GET …/events, a
// message of the §5 socket) in the AIO shape the feed keeps.
function namedEvent(d, type) {
  return { seq: d.seq, type, path: d.path, old_path: d.oldPath, origin: d.origin || 'api', actor: d.actor,
    pid: d.pid, uid: d.uid, comm: d.comm, is_dir: d.isDir, size: d.size, found_at_start: d.foundAtStart,
    timestamp: Date.parse(d.timestamp) / 1000 };
}

// loadHistory fills the feed with the last events the journal kept; the
// live feed then goes on after the seq the page ended at (state.lastSeq,
// state.resume). When the journal cannot be read the feed starts empty,
// from now.
async function loadHistory(gen) {
  let page;
  try {
    page = await journalTail(100);
  } catch (err) {
    if (gen === state.feedGen) fail('the feed\'s history', err);
    return;
  }
  if (gen !== state.feedGen) return;
  state.events = [];
  state.lastOf = new Map();
  pushEvents(page.events.map((e) => namedEvent(e, e.type)));
  state.lastSeq = page.more ? page.cursor : page.latest;
  state.resume = true;
  renderFeed();
}

// sseFeed reads the watcher's SSE stream with fetch() (headers allowed,
// unlike EventSource) and reconnects from the last seq it saw.
//
// The watcher is made before the history is read, so that no event falls
// between the two: the page's last seq is at or after the watcher's start,
// and the stream resumes after it from the watcher's buffer. A watcher made
// again (the daemon forgot it) resumes after the last seq shown; a cursor
// from before the watcher began is answered from the kept journal.
async function sseFeed(gen) {
  let cursor = 0;
  let first = true;
  while (gen === state.feedGen) {
    try {
      if (!state.watcher) {
        setLive(false, 'connecting');
        const d = await newWatcher();
        if (gen !== state.feedGen) { dropWatcher(d.watcher_id).catch(() => {}); return; }
        state.watcher = d.watcher_id;
        if (first) await loadHistory(gen);
        first = false;
        if (gen !== state.feedGen) return;
        cursor = state.resume ? state.lastSeq : d.initial_cursor;
      }
      const ctl = new AbortController();
      state.feedStop = () => ctl.abort();
      const res = await watchStream(state.watcher, cursor, ctl.signal);
      if (res.status === 404) { state.watcher = null; continue; }
      if (res.status === 401) { await askToken('The daemon refused that token.'); continue; }
      setLive(true, 'live (SSE)');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const c = sseBlock(block);
          if (c !== null) cursor = c;
        }
      }
    } catch (err) {
      if (gen !== state.feedGen) return;
      console.warn('feed', err);
    }
    if (gen !== state.feedGen) return;
    setLive(false, 'reconnecting');
    await sleep(1000);
  }
}

// sseBlock handles one SSE event and returns the cursor it moves to, or null.
function sseBlock(block) {
  let name = 'message';
  let data = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) name = line.slice(6).trim();
    else if (line.startsWith('data:')) data += line.slice(5).trimStart();
  }
  if (!data) return null;
  const d = JSON.parse(data);
  if (name === 'file_change') {
    onEvent(d);
    return d.seq;
  }
  if (name === 'overflow') {
    overflow('The change feed overflowed: events were lost.');
    return d.cursor;
  }
  return null;
}

// socketFeed follows a named sandbox through its §5 websocket: the first
// time after reading the history, then each time after the last seq shown
// (the subscribe's "since": the socket replays the kept events after it).
async function socketFeed(gen, first) {
  setLive(false, 'connecting');
  if (first) await loadHistory(gen);
  if (gen !== state.feedGen) return;
  const ws = watchSocket();
  state.feedStop = () => ws.close();
  ws.onopen = () => {
    const sub = { type: 'subscribe', paths: ['/'], recursive: true };
    if (state.resume) sub.since = state.lastSeq;
    ws.send(JSON.stringify(sub));
  };
  ws.onmessage = (m) => {
    const d = JSON.parse(m.data);
    if (d.type === 'subscribed') setLive(true, 'live (websocket)');
    else if (d.type === 'event') onEvent(namedEvent(d, d.event));
    else if (d.type === 'error') {
      if (/dropped/.test(d.message)) overflow(`The change feed ${d.message}.`);
      else setStatus('feed: ' + d.message, true);
    }
  };
  ws.onclose = async () => {
    if (gen !== state.feedGen) return;
    setLive(false, 'reconnecting');
    await sleep(1000);
    if (gen === state.feedGen) socketFeed(gen, false);
  };
}
