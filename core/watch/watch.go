package watch

import (
	"sync/atomic"
	"time"

	"sandfs/core/journal"
)

// Host is what the watch needs of the sandbox it serves, given by core
// when it opens the sandbox: every function resolves beneath the root
// descriptor, as core's operations do, so the watch never names a host
// path to a syscall and never keeps a copy of core's confinement.
type Host struct {
	Name     string           // the sandbox's name, for logs
	HostRoot string           // the root's host path: inotify names events by it
	Journal  *journal.Journal // where every change is appended

	// Describe fills e's IsDir, Size, Mtime, Inode and Mode from an lstat
	// of e.Path, and leaves e as it is when that fails.
	Describe func(e *journal.Event)
	// Ctime is the status change time of ap, not followed.
	Ctime func(ap string) (time.Time, error)
	// List lists the directory ap, as a listing does (its names that a
	// walk leaves out are left out).
	List func(ap string) ([]Entry, error)
	// OpenDir opens the directory ap (O_PATH).
	OpenDir func(ap string) (int, error)
	// OpenTree opens the directory ap for reading, never into another
	// mount (a mount inside the root is a hole of the watch).
	OpenTree func(ap string) (int, error)
	// Uncounted says the tree changed by an amount nobody counted (the
	// quota's usage: a rescan will).
	Uncounted func()
	// RootState says whether the root directory is still in place: "ok",
	// or why not.
	RootState func() string
	// Closed reports whether the sandbox was closed.
	Closed func() bool
	// Made, when set, lists the directories of a root made just now from
	// a checkpoint's tree (core.Options.Made): the first walk places
	// itself from it rather than reading each directory. Until the fork
	// is answered only the daemon's token reaches it, and what the daemon
	// changes it journals itself; a directory made through it before the
	// first walk passed its parent is the one a process writing the root
	// directly (no mirror, no API) would not be heard in.
	Made map[string][]string
}

// Entry is one entry of a listing (Host.List).
type Entry struct {
	Path  string // API path
	IsDir bool
	Ctime time.Time
}

// Watch is one sandbox's share of "every change told once": its ledger of
// claims, its outbox, and its kernel watch once started.
type Watch struct {
	h        Host
	ledger   ledger
	out      outbox // the notifier's events, in order with the daemon's
	ready    chan struct{}
	started  atomic.Bool // one kernel watch per Watch (Start)
	degraded atomic.Bool // a directory could not be watched: outside changes may go untold
}

// New is the Watch of the sandbox h describes. Its ledger works at once
// (claims close at once until Start); nothing is watched until Start.
func New(h Host) *Watch {
	return &Watch{h: h, ready: make(chan struct{})}
}
