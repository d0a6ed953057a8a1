package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sandfs/core"
	"sandfs/core/journal"
)

// Resource subscriptions, fed by the journal: a client that subscribed to
// file:///p hears notifications/resources/updated for every change the
// journal tells at p or beneath it (from the API, the mount or outside),
// with the event's seq, type, paths, origin and actor in _meta.
//
// The SDK sends a notification to every session subscribed to a URI of its
// server, so each sandbox's listen streams go to a server of that sandbox
// alone (Family.serverFor): a URI names a file only within its sandbox. A feed reads the sandbox's
// journal only while one subscription or more is open, and stops with the
// last (a listen stream ends with its request).

// maxSubscriptions bounds the subscriptions a sandbox's server holds at
// once (each is an open listen stream's URI).
const maxSubscriptions = 1024

// feedBuffer is the events a feed holds for its notifier; past it the
// journal drops them and the feed tells every subscribed URI instead.
const feedBuffer = 1024

// feed is one sandbox server's subscriptions and the journal reading that
// serves them.
type feed struct {
	srv *sdk.Server

	mu     sync.Mutex
	count  int                       // open subscriptions
	uris   map[string]map[string]int // API path → URI as subscribed → count
	pathOf map[string]string         // URI as subscribed → its API path
	paths  atomic.Pointer[pathSet]   // the paths of uris, read by the journal's filter
	stop   context.CancelFunc        // the running notifier's, nil when none
	sub    *journal.Subscription     // the running notifier's
	gen    uint64                    // counts notifiers started, so an old one's exit leaves a new one be
}

type pathSet map[string]struct{}

// subscribedPath is the API path a subscription's URI names.
func subscribedPath(sb *core.Sandbox, uri string) (string, error) {
	u, ok := parseFileURI(uri)
	if !ok || u.RawQuery != "" || u.Fragment != "" { // a subscription names a path alone
		return "", subscribeError("%q is not a file:///path URI of this sandbox", uri)
	}
	p, err := sb.Clean(u.Path)
	if err != nil {
		return "", subscribeError("%q: %v", uri, err)
	}
	return p, nil
}

// subscribe counts one subscription to uri and starts the notifier if it
// is the first.
func (fd *feed) subscribe(ctx context.Context, sb *core.Sandbox, uri string) error {
	p, err := subscribedPath(sb, uri)
	if err != nil {
		return err
	}
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if fd.count >= maxSubscriptions {
		return subscribeError("this sandbox already has %d subscriptions open", maxSubscriptions)
	}
	if fd.uris == nil {
		fd.uris, fd.pathOf = map[string]map[string]int{}, map[string]string{}
	}
	if fd.uris[p] == nil {
		fd.uris[p] = map[string]int{}
		fd.publishLocked()
	}
	fd.uris[p][uri]++
	fd.pathOf[uri] = p
	fd.count++
	if fd.stop == nil {
		fd.startLocked(sb)
	}
	return nil
}

// unsubscribe takes one subscription to uri back and stops the notifier
// with the last. It needs no sandbox: it also runs as a listen stream ends
// because its sandbox went.
func (fd *feed) unsubscribe(uri string) {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	p, ok := fd.pathOf[uri]
	if !ok {
		return
	}
	fd.count--
	if fd.uris[p][uri]--; fd.uris[p][uri] == 0 {
		delete(fd.uris[p], uri)
		delete(fd.pathOf, uri)
		if len(fd.uris[p]) == 0 {
			delete(fd.uris, p)
			fd.publishLocked()
		}
	}
	if fd.count == 0 && fd.stop != nil {
		fd.stop()
		fd.sub.Close()
		fd.stop, fd.sub = nil, nil
	}
}

func (fd *feed) publishLocked() {
	s := make(pathSet, len(fd.uris))
	for p := range fd.uris {
		s[p] = struct{}{}
	}
	fd.paths.Store(&s)
}

// watched says whether p or a directory above it is subscribed to; it runs
// under the journal's lock, so it only reads the published set.
func (fd *feed) watched(p string) bool {
	s := fd.paths.Load()
	if s == nil || len(*s) == 0 || p == "" {
		return false
	}
	for {
		if _, ok := (*s)[p]; ok {
			return true
		}
		if p == "/" {
			return false
		}
		p = parentOf(p)
	}
}

func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func (fd *feed) startLocked(sb *core.Sandbox) {
	ctx, cancel := context.WithCancel(context.Background())
	sub := sb.Journal().Subscribe(func(e journal.Event) bool {
		return fd.watched(e.Path) || fd.watched(e.OldPath)
	}, feedBuffer)
	fd.gen++
	fd.stop, fd.sub = cancel, sub
	go fd.notify(ctx, sub, fd.gen)
}

// notify tells the subscribers of each event's paths until it is stopped
// or the journal closes the feed (the sandbox goes).
func (fd *feed) notify(ctx context.Context, sub *journal.Subscription, gen uint64) {
	defer func() {
		fd.mu.Lock()
		if fd.gen == gen && fd.stop != nil {
			fd.stop()
			fd.stop, fd.sub = nil, nil
		}
		fd.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-sub.C:
			if !ok {
				return
			}
			if sub.TakeDropped() > 0 {
				// Events were lost: which paths they named is unknown, so
				// every subscriber is told to read again.
				fd.tell(ctx, fd.allURIs(), sdk.Meta{"lost": true})
			}
			fd.tell(ctx, fd.urisOf(e.Path, e.OldPath), eventMeta(e))
		}
	}
}

// urisOf is the subscribed URIs that hear a change at the paths: theirs
// and their directories'.
func (fd *feed) urisOf(paths ...string) []string {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		for p != "" {
			for uri := range fd.uris[p] {
				if !seen[uri] {
					seen[uri] = true
					out = append(out, uri)
				}
			}
			if p == "/" {
				break
			}
			p = parentOf(p)
		}
	}
	return out
}

func (fd *feed) allURIs() []string {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	var out []string
	for _, m := range fd.uris {
		for uri := range m {
			out = append(out, uri)
		}
	}
	return out
}

func (fd *feed) tell(ctx context.Context, uris []string, meta sdk.Meta) {
	for _, uri := range uris {
		_ = fd.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri, Meta: meta})
	}
}

// eventMeta is what a notification says of the change that caused it: the
// event as the log tool answers it.
func eventMeta(e journal.Event) sdk.Meta { return sdk.Meta{"event": journal.FieldsOf(e)} }

// subscribeError is a refused subscription, as the protocol's invalid
// params.
func subscribeError(format string, a ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, a...)}
}

// methodListen opens a subscription stream in the 2026-07-28 revision.
const methodListen = "subscriptions/listen"

// guardLegacySubscribe refuses resources/subscribe, the older revisions'
// way, and stops advertising it to their clients: it needs a session that
// outlives the request, which a stateless server does not keep, so a
// subscription taken would never be told. Their clients read
// changes_since instead.
func guardLegacySubscribe(s *sdk.Server) {
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			switch method {
			case "resources/subscribe", "resources/unsubscribe":
				// Not "method not found": the SDK would put its own words over ours.
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: method +
					" needs a session, which this stateless server does not keep: subscribe with " + methodListen +
					" (protocol 2026-07-28), or read the changes_since tool"}
			}
			res, err := next(ctx, method, req)
			if ir, ok := res.(*sdk.InitializeResult); ok && err == nil && ir.ProtocolVersion < "2026-07-28" &&
				ir.Capabilities != nil && ir.Capabilities.Resources != nil {
				ir.Capabilities.Resources.Subscribe = false
			}
			return res, err
		}
	})
}
