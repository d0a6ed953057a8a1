package core

import (
	"sandfs/core/apipath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Dir is a directory of a sandbox held by its descriptor: the mirror's way
// into the tree. The kernel speaks to a FUSE daemon in single syscalls on
// an inode it already knows and one name (never a "/", never ".."), so a
// Dir's methods are those syscalls (dir_ops.go): each is one *at call on
// the Dir's descriptor with that name, never following a final symlink, and
// each change claims its API path in the ledger and appends one event, as
// every core operation does.
//
// A Dir gets its descriptor from its parent: open, given by the mirror,
// opens the directory's one name in its parent Dir (OpenDir) and checks
// that it is still the inode the Dir stands for. So a Dir is always found
// from the root down, one name at a time, through directories already
// known to be inside the root, and a path of any depth works: nothing is
// joined into a host path or resolved from the root (bind-mount semantics:
// the Dir is its inode, wherever it is in the tree).
//
// Where the kernel watch covers the Dir's path (WatchCovers), and the
// mirror allows it (not in its strict mode), the Dir keeps
// the descriptor it opened (held), within a budget, and every later call
// costs no resolution at all. Holding is sound because the only way a held
// directory can leave the root is a rename by a process outside the mirror,
// which the watch hears (a MOVED_FROM with no MOVED_TO in the root); the
// mirror then releases the subtree's descriptors (Release) and drops it
// from its tree before the event can be read, so the next call opens the
// name in the parent again, and finds it gone. Where the watch does not
// cover the path, nobody would tell such a move, so nothing is held there:
// each call resolves the Dir's path beneath the root fd (as REST does), or,
// past PATH_MAX, opens it from its parent again.
//
// Its API path is what its events and claims name; the mirror's tree, which
// follows renames, reports it at each call.
type Dir struct {
	s    *Sandbox
	path func() string
	open func() (int, error) // opens the directory anew from its parent; nil for the root
	hold bool                // may keep what open opened, where the watch covers the path

	mu      sync.Mutex
	fd      int    // the held descriptor, -1 when none
	root    bool   // fd is the sandbox's root fd: never closed here
	users   int    // calls under way on fd
	closing bool   // close fd when the last call ends
	gen     uint64 // counts Releases: a descriptor opened before one is not kept
	heldG   uint64 // the watch's Gone count when fd was last known in place (dir_guard.go)
}

// heldDirs counts the descriptors held by every Dir of the process, within
// dirBudget: a quarter of the daemon's limit (Go raises the soft limit to
// the hard one at start). Past it a Dir holds nothing.
var (
	heldDirs  atomic.Int64
	dirBudget = func() int64 {
		var rl unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil {
			return 0
		}
		return int64(rl.Cur / 4)
	}()
)

// HeldDirs is how many directory descriptors the Dirs of this process hold:
// open descriptors by design, which a leak check must not count.
func HeldDirs() int64 { return heldDirs.Load() }

// RootDir is the Dir of the sandbox's root, held by the root fd itself.
func (s *Sandbox) RootDir() *Dir {
	return &Dir{s: s, path: func() string { return "/" }, fd: s.root.fd, root: true}
}

// NewDir is a Dir whose API path path reports and which open opens from its
// parent (an O_PATH descriptor of exactly that directory, or an error).
// With hold false it never keeps a descriptor: every call resolves the
// Dir anew, so a directory moved out of the root is cut off at once, not
// once the journal tells the move (the mirror's strict mode).
func (s *Sandbox) NewDir(path func() string, open func() (int, error), hold bool) *Dir {
	return &Dir{s: s, path: path, open: open, hold: hold, fd: -1}
}

// Path is the Dir's API path now.
func (d *Dir) Path() string { return d.path() }

// Held reports whether d holds a descriptor.
func (d *Dir) Held() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fd >= 0 && !d.closing
}

// Release lets go of d's descriptor: the directory may have left the tree
// (told removed or moved away, or events were lost), so the next call opens
// it from its parent again. Calls under way finish on the descriptor they
// took, which is closed when the last one ends; Release never waits.
func (d *Dir) Release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	if d.root || d.fd < 0 || d.closing {
		return
	}
	if d.users > 0 {
		d.closing = true
		return
	}
	d.closeLocked()
}

func (d *Dir) closeLocked() {
	unix.Close(d.fd)
	heldDirs.Add(-1)
	d.fd, d.closing = -1, false
}

// at returns the descriptor a call works on and the function that lets it
// go: the held one; else, where the watch covers d, one opened from the
// parent and kept; elsewhere d's path resolved beneath the root now (from
// the parent again past PATH_MAX), used once.
func (d *Dir) at() (int, func(int), error) {
	fd, done, _, err := d.atG()
	return fd, done, err
}

// atG is at, with the count of directories moved (watch.Watch.Gone) when the
// descriptor was last known to be where d's path says: its events' guard.
func (d *Dir) atG() (int, func(int), uint64, error) {
	d.mu.Lock()
	if d.fd >= 0 && !d.closing {
		d.users++
		fd, g := d.fd, d.heldG
		d.mu.Unlock()
		return fd, d.done, g, nil
	}
	gen := d.gen
	d.mu.Unlock()
	g := d.s.watch.Gone()
	fd, done, err := d.open1(gen, g)
	return fd, done, g, err
}

// open1 is at without a held descriptor: gen is d's Release count before,
// g the count of directories moved.
func (d *Dir) open1(gen, g uint64) (int, func(int), error) {
	p := d.path()
	covered := d.open != nil && d.hold && d.s.watch.Covers(p)
	if !covered {
		ap, err := d.s.Clean(p)
		if err == nil {
			fd, err := d.s.root.OpenDir(ap)
			return fd, closeFd, err
		}
		if d.open == nil {
			return -1, nil, unix.ENAMETOOLONG
		}
		// Past PATH_MAX: opened from the parent, name by name, below.
	}
	fd, err := d.open()
	if err != nil || !covered {
		return fd, closeFd, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gen != gen {
		// Released while it was being opened: the directory may have left
		// the tree after the open, so it is used once and not kept.
		return fd, closeFd, nil
	}
	if d.fd < 0 && heldDirs.Add(1) <= dirBudget {
		d.fd, d.heldG = fd, g
	} else if d.fd < 0 {
		heldDirs.Add(-1)
	}
	if d.fd != fd || d.closing {
		if d.fd >= 0 && !d.closing { // another call held one first
			unix.Close(fd)
			d.users++
			return d.fd, d.done, nil
		}
		return fd, closeFd, nil // past the budget, or the held one going
	}
	d.users++
	return fd, d.done, nil
}

func closeFd(fd int) { unix.Close(fd) }

// done ends a call on the held descriptor fd.
func (d *Dir) done(fd int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.users--
	if d.users == 0 && d.closing && d.fd == fd {
		d.closeLocked()
	}
}

// OpenDir opens the directory name in d, O_PATH and never following a
// symlink, and returns it with its stat: how a child's Dir is opened
// (NewDir's open), the caller checking the inode is the one it stands for.
func (d *Dir) OpenDir(name string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	if err := oneName(name); err != nil {
		return -1, st, err
	}
	dirfd, done, err := d.at()
	if err != nil {
		return -1, st, err
	}
	defer done(dirfd)
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, st, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, err
	}
	return fd, st, nil
}

// child is the API path of name in d ("" is d itself).
func (d *Dir) child(name string) string {
	if name == "" {
		return d.path()
	}
	return apipath.Child(d.path(), name)
}

// oneName refuses what the kernel never hands a FUSE daemon: an empty name,
// ".", "..", or one with a "/" or a NUL.
func oneName(name string) error {
	if name == "" || name == "." || name == ".." {
		return unix.EINVAL
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' || name[i] == 0 {
			return unix.EINVAL
		}
	}
	return nil
}
