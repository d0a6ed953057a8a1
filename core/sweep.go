package core

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/apipath"
	"sandfs/core/watch"
	"sandfs/internal/dirent"
	"sandfs/internal/xdev"
)

// The start-up sweep: a daemon killed mid-write (kill -9, power loss) leaves
// its temp files behind: ".sandfs-<16 hex>.part" (WriteFile, copy, and the
// tar staging directory) and ".sandfs-upload-<16 hex>.part" (Upload). Open
// starts one walk of the tree in the background that removes them, so a big
// tree does not slow the start. Only names of exactly that pattern are
// touched, never a user's own files; an entry is spared when an operation of
// this process claims it (it is a live temp) or when it changed after Open
// (a temp of another live process serving the same root). The walk goes by
// fd with O_NOFOLLOW beneath a dup of the root fd, so it never leaves the
// root, and it does not descend into a staging directory it removes.

// IsTempName reports whether name is one of core's temp names.
func IsTempName(name string) bool {
	rest, ok := strings.CutPrefix(name, TempPrefix)
	if !ok {
		return false
	}
	rest, ok = strings.CutSuffix(rest, ".part")
	if !ok {
		return false
	}
	rest = strings.TrimPrefix(rest, "upload-")
	if len(rest) != 16 {
		return false
	}
	for _, c := range rest {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// sweep is the start-up sweep of one sandbox.
type sweep struct {
	before time.Time     // when Open ran: the sweep spares newer temps
	watch  *watch.Watch  // claims: a live temp is spared, a removal not told
	done   chan struct{} // closed when it ends
	swept  atomic.Int64  // temp files and staging directories removed
	skip   bool          // a root made now (Options.Made): nothing to sweep
}

// startSweep runs the sweep in the background on a dup of the root fd (so
// Close does not pull the fd away under it), then the first usage scan;
// SweepDone is closed after them.
func (s *Sandbox) startSweep() {
	w := &s.sweep
	fd, err := unix.FcntlInt(uintptr(s.root.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		s.quota.Ready() // no scan: the bound holds on what is counted from now
		close(w.done)
		return
	}
	go func() {
		defer close(w.done)
		defer unix.Close(fd)
		if !w.skip {
			w.swept.Add(int64(w.dir(fd, "/")))
		}
		// The first usage scan, on the tree without leftovers (core/quota).
		s.quota.Scan(context.Background())
		s.quota.Ready()
		s.quota.ScheduleNext()
	}()
}

// SweepDone is closed when the start-up sweep of leftover temp files ends.
func (s *Sandbox) SweepDone() <-chan struct{} { return s.sweep.done }

// Swept is how many leftover temp files or staging directories the start-up
// sweep removed.
func (s *Sandbox) Swept() int64 { return s.sweep.swept.Load() }

// dir removes the leftover temps in the directory fd (API path ap) and
// recurses into its subdirectories. It returns how many it removed.
func (w *sweep) dir(fd int, ap string) int {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(dup)
	r := dirent.NewReader(dup)
	removed := 0
	for {
		ents, rerr := r.Next(512)
		for _, e := range ents {
			child := apipath.Child(ap, e.Name)
			if IsTempName(e.Name) {
				if w.one(fd, e.Name, child) {
					removed++
				}
				continue
			}
			// Only a directory is opened (its kind from the directory's
			// own entry): an open per file would cost a lookup each,
			// through an overlay's layers on a fork.
			if !e.IsDir() && e.Type != 0 {
				continue
			}
			sub, err := xdev.OpenSubdir(fd, e.Name)
			if err != nil {
				continue // not a directory, a symlink, another mount (internal/xdev), or gone
			}
			removed += w.dir(sub, child)
			unix.Close(sub)
		}
		if rerr != nil || len(ents) == 0 {
			return removed
		}
	}
}

// one removes one temp entry unless a live operation owns it.
func (w *sweep) one(dirfd int, name, ap string) bool {
	if w.watch.Claimed(ap) {
		return false
	}
	var st unix.Stat_t
	if mount, err := xdev.LstatAt(dirfd, name, &st); err != nil || mount {
		return false
	}
	if !time.Unix(st.Mtim.Unix()).Before(w.before) {
		return false
	}
	// The removal is the daemon's own: its echoes are claimed, so the
	// kernel watch never tells a temp name.
	c := w.watch.Claim(ap)
	defer c.Done()
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return RemoveAllAt(context.Background(), dirfd, name) == nil
	}
	return unix.Unlinkat(dirfd, name, 0) == nil
}
