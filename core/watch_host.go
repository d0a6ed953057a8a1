package core

import (
	"context"
	"log/slog"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/core/watch"
)

// The kernel watch, the ledger and the outbox are package watch's
// (core/watch/doc.go): core opens one Watch per sandbox, gives it what it
// needs of the sandbox (watchHost), and answers for it to the daemon and
// the mirror by the few names below.

// Claim is one operation's hold on the echoes of its changes (package
// watch, core/watch/ledger.go).
type Claim = watch.Claim

// ErrWatchStarted: StartWatching was called on a Sandbox whose kernel watch
// was started already (running or ended).
var ErrWatchStarted = watch.ErrStarted

// watchHost is what the watch needs of s: its journal and names, and the
// confined stat, list and open it resolves paths by, each beneath the
// root fd as every operation does.
func (s *Sandbox) watchHost(made map[string][]string) watch.Host {
	return watch.Host{
		Made: made,
		Name: s.name, HostRoot: s.hostRoot, Journal: s.journal,
		Describe: func(e *journal.Event) {
			if info, err := s.root.lstat(e.Path); err == nil {
				fillEvent(e, info)
			}
		},
		Ctime: func(ap string) (time.Time, error) {
			info, err := s.root.lstat(ap)
			return info.Ctime, err
		},
		List: func(ap string) ([]watch.Entry, error) {
			infos, _, err := s.List(context.Background(), ap, 0)
			entries := make([]watch.Entry, len(infos))
			for i, e := range infos {
				entries[i] = watch.Entry{Path: e.Path, IsDir: e.IsDir(), Ctime: e.Ctime}
			}
			return entries, err
		},
		OpenDir: s.root.OpenDir,
		OpenTree: func(ap string) (int, error) {
			// Another mount inside the root is not entered (internal/xdev).
			return s.root.openResolve(ap, unix.O_RDONLY|unix.O_DIRECTORY, 0, unix.RESOLVE_NO_XDEV)
		},
		Uncounted: s.quota.OutsideChange, // by how much, a scan will say (core/quota)
		RootState: s.RootState,
		Closed:    s.closed.Load,
	}
}

// StartWatching starts the kernel watch of the root; it runs until ctx
// ends. The first walk of the tree runs in the background; Watch().Ready() is
// closed when it is done. A Sandbox has one kernel watch: a second
// StartWatching is ErrWatchStarted, and so is one after the first watch
// ended. A sandbox with a durable journal then compares the tree with its
// manifest (manifest.go).
func (s *Sandbox) StartWatching(ctx context.Context, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	if err := s.watch.Start(ctx, log); err != nil {
		return err
	}
	if s.hist != nil {
		go s.reconcile(ctx, log)
	}
	return nil
}

// WatchView is what the rest of the daemon may ask of a sandbox's kernel
// watch (watch.Watch): whether it runs, covers a path or ran out of
// watches, waiting for it, and claims; never an append, which only core's
// operations make, in order and guarded (append below).
type WatchView interface {
	Running() bool                               // a StartWatching whose context has not ended
	Ready() <-chan struct{}                      // closed once it covers the whole tree
	Degraded() bool                              // it ran into the inotify watch limit: some outside changes go untold
	Covers(ap string) bool                       // an outside change to ap is sure to be told, so the mirror may cache it
	UnheardNear(ap string) bool                  // outside changes at, above or under ap may have gone untold
	CatchUp()                                    // append what the kernel has queued so far
	Claim(paths ...string) *Claim                // claim the changes about to be made under paths
	ClaimEcho(p string, typ journal.Type) *Claim // claim a change whose last echo is typ of p
}

// Watch is the sandbox's kernel watch, as the rest of the daemon sees it.
func (s *Sandbox) Watch() WatchView { return s.watch }

// handlerKey marks the context of a FUSE handler that tells an event of
// another origin (Emit, and a handle's release telling an outside write).
type handlerKey struct{}

// inHandler marks ctx as a FUSE handler's.
func inHandler(ctx context.Context) context.Context {
	return context.WithValue(ctx, handlerKey{}, true)
}

// append appends e, an event the daemon tells, to the journal in the
// order the changes were made (watch.Watch.Append): a FUSE handler's
// joins what waits, and a Dir call's is checked against its guard first
// (dir_guard.go).
func (s *Sandbox) append(ctx context.Context, e journal.Event) {
	handler := ctx.Value(handlerKey{}) != nil
	if e.Origin == journal.Mirror || handler {
		if gd, ok := ctx.Value(guardKey{}).(dirGuard); ok {
			s.appendGuarded(e, gd)
			return
		}
	}
	s.watch.Append(e, handler)
}
