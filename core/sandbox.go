package core

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/history"
	"sandfs/core/journal"
	"sandfs/core/quota"
	"sandfs/core/watch"
)

// Limits bound what one operation may do. Zero fields take the defaults.
type Limits struct {
	TarEntries int   // entries in one archive (default 100,000)
	TarBytes   int64 // bytes extracted from one archive (default 4 GiB)
}

// DefaultLimits are the limits of api.md §1.
var DefaultLimits = Limits{TarEntries: 100_000, TarBytes: 4 << 30}

// Options configure a Sandbox.
type Options struct {
	Workdir string // API path relative paths are taken against (default "/")
	Limits  Limits
	// NoOpenat2 forces the user-space resolution walk even where openat2
	// works (tests use it to hold both paths to the same rules).
	NoOpenat2 bool
	// AllowSetid lets API operations make setuid and setgid files
	// (serve --allow-setid); see setid.go.
	AllowSetid bool
	// StateDir is this sandbox's own directory in the daemon's state
	// directory (made 0700, outside every root), where its journal,
	// manifest and checkpoints are kept; "" keeps everything in memory.
	StateDir string
	// Retention bounds the durable journal kept in StateDir.
	Retention history.Retention
	// Log takes the durable journal's messages (nil: none).
	Log *slog.Logger
	// Quota bounds the sandbox (core/quota; zero: no bound).
	Quota Quota
	// Upper, set for a sandbox whose root is an overlay (a fork), opens
	// the overlay's upper directory: usage counts what it holds, the
	// sandbox's own writes, not the lower it shares (usage_upper.go). It
	// answers a new descriptor open for reading, never reached through a
	// symlink, which the caller closes.
	Upper func() (int, error)
	// Made, set when the root was made just now from a checkpoint's tree
	// (a new fork), lists that tree's directories: each one's API path to
	// the names of the directories it holds (checkpoint.Dirs). A
	// checkpoint holds no temp file, so no daemon can have left one and
	// the start-up sweep does not walk the tree; and the kernel watch
	// places itself from the list instead of reading every directory,
	// which costs a read of every entry, files included.
	Made map[string][]string
	// CheckpointMaxSize bounds the sandbox's checkpoint store, in bytes
	// on disk (core/checkpoint/bound.go): 0 is half the state filesystem's
	// size, below 0 no bound.
	CheckpointMaxSize int64
}

// Sandbox is one directory tree served under a name. It owns an open fd on
// its root; every operation resolves its API paths beneath that fd.
type Sandbox struct {
	name       string
	hostRoot   string // for logs and the operator only; never in an API answer
	root       Root   // root.go
	rootLock   int    // rootlock.go; -1 without a StateDir
	workdir    string
	limits     Limits
	allowSetid bool // setid.go
	journal    *journal.Journal
	stateDir   string        // Options.StateDir
	id         identity      // the sandbox's identity and the root's mark (identity.go)
	hist       *history.Log  // the durable journal; nil without a StateDir
	reconciled chan struct{} // manifest.go
	closed     atomic.Bool
	att        attachments         // subpackages' state, closed with the sandbox (attach.go)
	cpMax      int64               // Options.CheckpointMaxSize
	watch      *watch.Watch        // the ledger, the outbox and the kernel watch (watch_host.go)
	sweep      sweep               // the start-up sweep of leftover temps (sweep.go)
	quota      *quota.State        // core/quota, usage.go
	upper      func() (int, error) // Options.Upper (usage_upper.go)
	upperDir   upperHeld           // the upper, opened once for upperCount
	upperMade  upperMade           // files the upper made (usage_upper_made.go)
}

// Open opens the directory dir as the sandbox called name.
func Open(name, dir string, o Options) (*Sandbox, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open sandbox root", Path: dir, Err: err}
	}
	return openFD(name, dir, fd, o)
}

// OpenAt opens the directory entry of dirfd as the sandbox called name,
// never following a symlink (O_NOFOLLOW: a symlink is ENOTDIR or ELOOP).
// hostRoot is its host path, for logs and RootState.
func OpenAt(dirfd int, entry, hostRoot, name string, o Options) (*Sandbox, error) {
	fd, err := unix.Openat(dirfd, entry, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open sandbox root", Path: hostRoot, Err: err}
	}
	return openFD(name, hostRoot, fd, o)
}

// openFD makes the sandbox of the root fd it now owns.
func openFD(name, dir string, fd int, o Options) (*Sandbox, error) {
	s := &Sandbox{name: name, hostRoot: dir, root: Root{fd: fd}, limits: o.Limits, allowSetid: o.AllowSetid, journal: journal.New(), stateDir: o.StateDir, cpMax: o.CheckpointMaxSize,
		sweep: sweep{before: time.Now(), done: make(chan struct{})}, reconciled: make(chan struct{})}
	s.rootLock = -1
	if o.StateDir != "" {
		lock, err := lockRoot(fd, dir)
		if err != nil {
			unix.Close(fd)
			return nil, err
		}
		h, err := history.Open(o.StateDir, o.Retention, o.Log)
		if err != nil {
			unix.Close(lock)
			unix.Close(fd)
			return nil, err
		}
		if s.journal, err = journal.NewWith(h); err != nil {
			h.Close()
			unix.Close(lock)
			unix.Close(fd)
			return nil, fmt.Errorf("history: %w", err)
		}
		if s.id, err = openIdentity(fd, o.StateDir); err != nil {
			h.Close()
			unix.Close(lock)
			unix.Close(fd)
			return nil, err
		}
		s.rootLock = lock
		s.hist = h
	} else {
		close(s.reconciled)
	}
	s.upper, s.upperDir.fd = o.Upper, -1
	s.sweep.skip = o.Made != nil
	s.quota = s.newQuota(o.Quota, s.stateRefusal)
	s.watch = watch.New(s.watchHost(o.Made)) // on the journal the events go to
	s.sweep.watch = s.watch
	if s.limits.TarEntries <= 0 {
		s.limits.TarEntries = DefaultLimits.TarEntries
	}
	if s.limits.TarBytes <= 0 {
		s.limits.TarBytes = DefaultLimits.TarBytes
	}
	s.workdir = "/"
	if o.Workdir != "" {
		wd, err := cleanAPI("/", o.Workdir)
		if err != nil {
			s.Close() // the journal and the locks too
			return nil, fmt.Errorf("workdir: %w", err)
		}
		s.workdir = wd
	}
	s.root.openat2 = !o.NoOpenat2 && probeOpenat2(fd)
	s.startSweep()
	return s, nil
}

// Close stores what the journal has pending and releases the root fd.
// Closing twice is fine.
func (s *Sandbox) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	s.quota.Stop() // before the root fd goes: a scan dups it under the same lock
	if s.hist != nil {
		s.hist.Close()
	}
	s.closeAttachments()
	s.upperDir.close()
	if s.rootLock >= 0 {
		unix.Close(s.rootLock)
	}
	return unix.Close(s.root.fd)
}

// Closed reports whether Close was called.
func (s *Sandbox) Closed() bool { return s.closed.Load() }

// History is the durable journal, nil for a sandbox that keeps no state.
func (s *Sandbox) History() *history.Log { return s.hist }

// RootState tells whether the host directory the sandbox was opened on is
// still in place: "ok"; "removed" (deleted: the sandbox serves an empty
// directory nothing can be created in, ENOENT); "moved" (renamed away, or
// its path now names another directory: the sandbox keeps serving the
// directory it opened, by its fd, wherever it now is). A restart serves
// what is at the root path then.
func (s *Sandbox) RootState() string {
	var fd, p unix.Stat_t
	if err := unix.Fstat(s.root.fd, &fd); err != nil {
		return "ok" // closed: nothing to tell
	}
	if fd.Nlink == 0 {
		return "removed"
	}
	if unix.Stat(s.hostRoot, &p) != nil || p.Dev != fd.Dev || p.Ino != fd.Ino {
		return "moved"
	}
	return "ok"
}

// DefaultSandbox is the name of the sandbox --root serves, the one the
// families without a sandbox in their routes act on.
const DefaultSandbox = "default"

// Name is the sandbox's name ("default" for --root).
func (s *Sandbox) Name() string { return s.name }

// HostRoot is the host directory the sandbox serves, for the operator's logs.
func (s *Sandbox) HostRoot() string { return s.hostRoot }

// Workdir is the API path relative client paths are taken against.
func (s *Sandbox) Workdir() string { return s.workdir }

// StateDir is the sandbox's directory in the daemon's state directory,
// "" when it keeps nothing between runs.
func (s *Sandbox) StateDir() string { return s.stateDir }
