package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/natsout/placement"
)

// Dir is --sandboxes DIR: every subdirectory of DIR whose name is a DNS
// label is a sandbox of that name, served while it is there. DIR is held
// by an fd; each root is opened beneath it without following a symlink,
// and DIR is watched (fsnotify, on the held directory) for names made,
// removed and renamed. Dir is the daemon's rest.Manager.
type Dir struct {
	h    *Host
	path string
	fd   int // O_PATH|O_DIRECTORY of DIR
	def  core.Quota
	w    *fsnotify.Watcher
	done chan struct{}
	ran  atomic.Bool // Run was started: Close waits for it

	// mu makes one change at a time: a rescan, an event's name, a Create,
	// a Remove. served and skipped are under it.
	mu      sync.Mutex
	served  map[string]rootID // the names of DIR served, by their root
	skipped map[string]bool   // names logged once as not served
	waiting map[string]bool   // names whose lease waits for the broker (placement.go)
	moving  map[string]bool   // names moving away or being taken in (move.go, movein.go)
	// heldBack: names whose take-up on their old root failed; that root
	// is not served (the lease names this host) until the sandbox is
	// handed here again or the daemon restarts (movein_inplace.go).
	heldBack map[string]bool
	held     map[string]*heldRoot // roots moved away, still watched (hold.go)
}

// rootID names a root directory: the same name may be another directory
// later (removed and made again, renamed over).
type rootID struct{ dev, ino uint64 }

// OpenDir holds and watches DIR (made 0755 when missing). def is the quota
// of a sandbox of DIR that keeps none (--default-quota). Run serves it.
func OpenDir(h *Host, path string, def core.Quota) (*Dir, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("--sandboxes: %w", err)
	}
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("--sandboxes %s: %w (a symlink is refused)", path, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("--sandboxes: %w", err)
	}
	// The held directory itself, whatever DIR's path names later.
	if err := w.Add("/proc/self/fd/" + strconv.Itoa(fd)); err != nil {
		w.Close()
		unix.Close(fd)
		return nil, fmt.Errorf("--sandboxes %s: watch: %w", path, err)
	}
	d := &Dir{h: h, path: path, fd: fd, def: def, w: w, done: make(chan struct{}),
		served: map[string]rootID{}, skipped: map[string]bool{}, waiting: map[string]bool{}, moving: map[string]bool{}, heldBack: map[string]bool{},
		held: map[string]*heldRoot{}}
	h.mu.Lock()
	h.dirLost = d.leaseLost
	h.mu.Unlock()
	return d, nil
}

// Path is DIR.
func (d *Dir) Path() string { return d.path }

// Run follows DIR's changes until ctx ends or Close (Rescan first serves
// what it holds; what changes between the two is queued).
func (d *Dir) Run(ctx context.Context) {
	d.ran.Store(true)
	defer close(d.done)
	var retry <-chan time.Time // the leases waiting for the broker (placement.go)
	if l := d.h.cfg.Placement; l != nil {
		t := time.NewTicker(l.TTL() / 3)
		defer t.Stop()
		retry = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry:
			d.retryWaiting()
		case ev, ok := <-d.w.Events:
			if !ok {
				return
			}
			d.mu.Lock()
			d.reconcile(filepath.Base(ev.Name))
			d.mu.Unlock()
		case err, ok := <-d.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				d.h.log.Warn("--sandboxes: the watch overflowed; scanning DIR again", "dir", d.path)
			} else {
				d.h.log.Warn("--sandboxes: watch", "dir", d.path, "err", err)
			}
			d.Rescan()
		}
	}
}

// Close stops following DIR (its sandboxes stay served: Host.Close stops
// them).
func (d *Dir) Close() {
	d.w.Close()
	if d.ran.Load() {
		<-d.done
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unholdAll()
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
}

// Rescan reconciles every name in DIR and every name served: at start,
// and after the watch overflowed.
func (d *Dir) Rescan() {
	d.mu.Lock()
	defer d.mu.Unlock()
	names, err := d.list()
	if err != nil {
		d.h.log.Warn("--sandboxes: listing DIR", "dir", d.path, "err", err)
		return
	}
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
		d.reconcile(n)
	}
	for n := range d.served {
		if !seen[n] {
			d.reconcile(n)
		}
	}
}

// list is the names in DIR.
func (d *Dir) list() ([]string, error) {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	return f.Readdirnames(-1)
}

// reconcile makes what is served as name match what DIR holds under it:
// a directory not served is started, a served one gone (or another
// directory now) is stopped. Called with mu held.
func (d *Dir) reconcile(name string) {
	if d.fd < 0 {
		return
	}
	id, isDir := d.stat(name)
	old, served := d.served[name]
	if served && (!isDir || id != old) {
		d.stopServed(name, false)
		served = false
		// Its directory is gone, or another: the next sandbox of the name
		// is a new one (incarnation.go). Where the filesystem keeps no
		// birth time, a directory made again may get the old inode number,
		// so this is the only sure sign.
		if d.h.cfg.State != "" {
			if err := d.h.archiveState(name); err != nil {
				d.h.log.Warn("--sandboxes: archiving the state of a sandbox whose directory went", "sandbox", name, "err", err)
			}
		}
	}
	if !isDir || served {
		return
	}
	if err := core.CheckSandboxName(name); err != nil {
		d.skip(name, "--sandboxes: not a sandbox name; not served", "err", err)
		return
	}
	if _, fixed := d.h.Get(name); fixed {
		d.skip(name, "--sandboxes: the name is a fixed sandbox's (--root, --sandbox); not served")
		return
	}
	if d.held[name] != nil {
		// Its sandbox is open, watched, for a move back (hold.go): a
		// second one on the root would be refused as "another daemon".
		d.skip(name, "--sandboxes: the sandbox moved to another host; its root is held here for a move back, not served")
		return
	}
	if d.heldBack[name] {
		d.skip(name, "--sandboxes: taking the sandbox up on this old root failed; not served until it is handed here again or the daemon restarts")
		return
	}
	if _, err := d.start(name); err != nil {
		if errors.Is(err, placement.ErrBroker) {
			d.waiting[name] = true
		}
		d.h.log.Warn("--sandboxes: cannot serve the directory", "sandbox", name, "err", err)
	}
}

// retryWaiting reconciles each name whose lease waited for the broker.
func (d *Dir) retryWaiting() {
	d.mu.Lock()
	defer d.mu.Unlock()
	names := d.waiting
	d.waiting = map[string]bool{}
	for n := range names {
		d.reconcile(n)
	}
}

// leaseLost stops serving name of DIR, its lease lost; again: its start
// waits for the broker (placement.go). false: not a sandbox of DIR.
func (d *Dir) leaseLost(name string, again bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.served[name]; !ok {
		return false
	}
	d.stopServed(name, false)
	if again {
		d.waiting[name] = true
	}
	return true
}

// skip logs once that name is not served.
func (d *Dir) skip(name, msg string, attrs ...any) {
	if d.skipped[name] {
		return
	}
	d.skipped[name] = true
	d.h.log.Warn(msg, append([]any{"dir", d.path, "name", name}, attrs...)...)
}

// stat reports whether name in DIR is a directory (not a symlink), and
// which.
func (d *Dir) stat(name string) (rootID, bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return rootID{}, false
	}
	return rootID{uint64(st.Dev), st.Ino}, true
}

// start serves DIR/name. Called with mu held.
func (d *Dir) start(name string) (*core.Sandbox, error) { return d.startMade(name, nil, nil) }

// startMade serves DIR/name; made, for a root just made from a
// checkpoint's tree, lists its directories (core.Options.Made); opened,
// when set, is told the sandbox once it is open, before it is served (an
// error refuses it). Called with mu held.
func (d *Dir) startMade(name string, made map[string][]string, opened func(*core.Sandbox) error) (*core.Sandbox, error) {
	host := filepath.Join(d.path, name)
	if id, err := dirIdentity(d.fd, name); err == nil {
		if err := d.h.adoptState(name, id, rootMarkAt(d.fd, name)); err != nil { // incarnation.go
			return nil, err
		}
	}
	sb, err := d.h.Start(name, func(o core.Options) (*core.Sandbox, error) {
		o.Made = made
		sb, err := core.OpenAt(d.fd, name, host, name, o)
		if err == nil && opened != nil {
			if err = opened(sb); err != nil {
				sb.Close()
				return nil, err
			}
		}
		return sb, err
	}, false, d.def)
	if err != nil {
		return nil, err
	}
	st, err := sb.RootDir().Getattr("")
	if err != nil {
		d.h.Stop(context.Background(), name, false)
		return nil, err
	}
	d.served[name] = rootID{uint64(st.Dev), st.Ino}
	delete(d.skipped, name)
	d.h.log.Info("serving sandbox "+name+" of --sandboxes", "sandbox", name, "root", host)
	return sb, nil
}

// stopServed stops serving DIR/name (purge: and empties its tree).
// Called with mu held.
func (d *Dir) stopServed(name string, purge bool) error {
	delete(d.served, name)
	ctx, cancel := context.WithTimeout(context.Background(), removeWait)
	defer cancel()
	_, err := d.h.Stop(ctx, name, purge)
	d.h.log.Info("stopped serving sandbox "+name+" of --sandboxes", "sandbox", name)
	return err
}
