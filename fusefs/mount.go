package fusefs

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/journal"
	"sandfs/fusefs/uring"
)

// Options configure a mount. Zero values are the safe defaults.
type Options struct {
	// EntryTimeout, AttrTimeout and NegativeTimeout are how long the kernel
	// may trust a name, attributes, or a missing name without asking, where
	// the journal will tell the mirror of a change (see "Kernel caching" in
	// the package doc). Zero makes the kernel ask at every system call.
	EntryTimeout, AttrTimeout, NegativeTimeout time.Duration
	// DirectMount mounts with mount(2) instead of fusermount3: root only,
	// and no fallback (asked for explicitly, it happens or the mount fails).
	DirectMount bool
	// NoPassthrough turns FUSE passthrough off: every read and write then
	// goes through the daemon. Passthrough is used where the kernel grants
	// it (root, kernel 6.9+) and silently falls back otherwise.
	NoPassthrough bool
	// Uring serves the mount's requests over io_uring where the kernel
	// offers it (6.14+, enable_uring=Y; ring.go), over /dev/fuse where it
	// does not. Root only (the mirror mounts with mount(2)); otherwise
	// ignored, with a log line.
	Uring bool
	// Debug logs every FUSE request.
	Debug bool
	Log   *slog.Logger
}

// Mirror is a live mirror of a sandbox at a mountpoint.
type Mirror struct {
	sb            sandbox
	fs            *core.Root // the filesystem under the sandbox's root (statfs)
	mountpoint    string
	log           *slog.Logger
	rootDev       uint64
	noPassthrough bool
	flushBacking  bool // a FLUSH closes a duplicate of the backing descriptor (file.go)
	root          *node
	server        *fuse.Server
	entryTTL      time.Duration    // how long the kernel may keep a name …
	attrTTL       time.Duration    // … and attributes, where cacheable
	unhook        func()           // stops queueing invalidations
	inval         *invalidator     // sends them
	forgetConn    func()           // tells the reaper the connection is gone
	ops           opCounts         // stats.go
	stopOnce      sync.Once        // stop: no more notifications
	unmounting    atomic.Bool      // Unmount was called: the server's end is asked for
	gone          atomic.Bool      // the server ended unasked: unmounted behind the daemon's back
	ownMount      bool             // mounted by the mirror (ring.go), so unmounted by it too
	ring          *uring.Transport // serving over io_uring (ring.go); nil: /dev/fuse only
}

// Mount mounts sb at mountpoint (created if missing) and serves it until
// Unmount. A stale mount left there by a killed daemon ("transport endpoint
// is not connected") is cleared first.
func Mount(sb *core.Sandbox, mountpoint string, o Options) (*Mirror, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if abs, err := filepath.Abs(mountpoint); err == nil {
		mountpoint = abs
	}
	if err := clearStale(mountpoint, o.Log); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(mountpoint, 0o755); err != nil {
		return nil, fmt.Errorf("mountpoint: %w", err)
	}
	rootDir := sb.RootDir()
	st, err := rootDir.Getattr("")
	if err != nil {
		return nil, fmt.Errorf("sandbox root: %w", err)
	}
	m := &Mirror{sb: sb, fs: sb.Root(), mountpoint: mountpoint, log: o.Log, rootDev: uint64(st.Dev), noPassthrough: o.NoPassthrough,
		entryTTL: o.EntryTimeout, attrTTL: o.AttrTimeout}
	m.flushBacking = flushesAtClose(m.fs)
	m.root = &node{m: m, dir: rootDir}
	rootAttr := m.stableAttr(&st)
	// The bridge fills in a timeout the node left zero; the mirror sets
	// names' and attributes' itself (see entryTimeouts), so they are nil
	// here and a zero the mirror leaves is a true zero. A negative entry
	// has no reply to set it in: the bridge makes it, and the mirror vetoes
	// it where the kernel may not cache.
	var neg *time.Duration
	if o.NegativeTimeout > 0 {
		neg = &o.NegativeTimeout
	}
	fo := &fs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther:         true,
			Options:            []string{"default_permissions"},
			FsName:             "sandfs:" + sb.Name(),
			Name:               "sandfs",
			DisableReadDirPlus: true,
			MaxWrite:           1 << 20,
			DirectMountStrict:  o.DirectMount,
			ExtraCapabilities:  killpriv,
			Debug:              o.Debug,
		},
		NegativeTimeout: neg,
		RootStableAttr:  &rootAttr,
		NullPermissions: true,
	}
	if t, err := m.fs.FSType(); err == nil && t == unix.OVERLAYFS_SUPER_MAGIC && !o.NoPassthrough {
		// A fork's root is an overlay, one stacking level already: the
		// kernel grants passthrough onto its files only to a mount that
		// allows two, its bound, which leaves no level for a stack on the
		// mirror itself (an overlay over the mount is refused).
		fo.MountOptions.MaxStackDepth = 2
	}
	if os.Geteuid() != 0 && !userAllowOther() {
		fo.MountOptions.AllowOther = false
		o.Log.Warn("fuse: not root and user_allow_other is not in /etc/fuse.conf: the mount is for this user only")
	}
	var server *fuse.Server
	switch {
	case o.Uring && os.Geteuid() != 0:
		o.Log.Warn("fuse: io_uring needs root (the mirror mounts with mount(2)): serving over /dev/fuse", "mountpoint", mountpoint)
		fallthrough
	case !o.Uring:
		server, err = m.mountDev(mountpoint, fo)
	default:
		server, err = m.mountWithRing(fo)
	}
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", mountpoint, err)
	}
	m.server = server
	m.forgetConn = watchConn(mountpoint, o.Log)
	m.inval = newInvalidator(m)
	m.unhook = sb.Journal().OnAppend(journal.Hook{Queue: m.inval.queue, Settle: m.inval.settle})
	// A change between the mount and the hook would go unheard: invalidate
	// the little the kernel may have learnt in between.
	m.inval.queue(journal.Event{Path: "/"}, true)
	go m.watchServer()
	return m, nil
}

// mountDev mounts the mirror at mountpoint as go-fuse does (fusermount3,
// or mount(2) with DirectMount) and serves it over /dev/fuse, through
// rawFS (noopendir.go, killpriv.go).
func (m *Mirror) mountDev(mountpoint string, fo *fs.Options) (*fuse.Server, error) {
	raw := m.newRaw(fo)
	server, err := fuse.NewServer(raw, mountpoint, &fo.MountOptions)
	if err != nil {
		return nil, err
	}
	raw.server.Store(server)
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		return nil, err
	}
	return server, nil
}

// newRaw is the mirror's protocol-level filesystem: go-fuse's bridge over
// the root node, wrapped by rawFS. The server must be stored in it before
// it serves.
func (m *Mirror) newRaw(fo *fs.Options) *rawFS {
	return &rawFS{RawFileSystem: fs.NewNodeFS(m.root, fo)}
}

// watchServer notices the mount ended without Unmount (umount -l, or
// fusermount3 -u, behind the daemon's back: the kernel ends the
// connection once the last file open on it is closed). The mirror then
// says so once, stops sending notifications to a connection that is gone,
// and Gone reports it; the files are still served over HTTP.
func (m *Mirror) watchServer() {
	m.server.Wait()
	if m.unmounting.Load() {
		return
	}
	m.log.Warn("fuse: the mount was unmounted behind the daemon's back (umount -l?); the sandbox is still served over HTTP, and a restart mounts it again",
		"sandbox", m.sb.Name(), "mountpoint", m.mountpoint)
	m.stop()
	m.gone.Store(true) // said first: whoever sees it gone finds the log line written

}

// Gone reports whether the mount ended without Unmount.
func (m *Mirror) Gone() bool { return m.gone.Load() }

// stop ends the mirror's notifications (once).
func (m *Mirror) stop() {
	m.stopOnce.Do(func() {
		m.unhook()
		m.inval.close() // no notification is sent once the server goes
	})
}

// Mountpoint is where the mirror is mounted.
func (m *Mirror) Mountpoint() string { return m.mountpoint }

// Unmount stops the mirror and unmounts it. A busy mount is retried for a
// while, then detached lazily (fusermount3 -u -z), and the error says so.
func (m *Mirror) Unmount() error {
	m.unmounting.Store(true)
	m.stop()
	var err error
	for try := 0; try < 10 && !m.gone.Load(); try++ {
		if err = m.unmountOnce(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil && m.ownMount {
		if lerr := unix.Unmount(m.mountpoint, unix.MNT_DETACH); lerr != nil {
			return fmt.Errorf("unmount %s: %v; lazy unmount: %v", m.mountpoint, err, lerr)
		}
		return fmt.Errorf("unmount %s was busy (%v): detached lazily", m.mountpoint, err)
	}
	if err != nil {
		out, lerr := exec.Command("fusermount3", "-u", "-z", m.mountpoint).CombinedOutput()
		if lerr != nil {
			return fmt.Errorf("unmount %s: %v; lazy unmount: %v: %s", m.mountpoint, err, lerr, strings.TrimSpace(string(out)))
		}
		return fmt.Errorf("unmount %s was busy (%v): detached lazily", m.mountpoint, err)
	}
	m.server.Wait()
	m.stopRing()
	m.forgetConn()
	releaseTree(&m.root.Inode)
	return nil
}

// unmountOnce asks for the unmount: by go-fuse, or by mount(2)'s
// counterpart where the mirror mounted by itself (go-fuse knows only
// "/dev/fd/N" there).
func (m *Mirror) unmountOnce() error {
	if m.ownMount {
		return unix.Unmount(m.mountpoint, 0)
	}
	return m.server.Unmount()
}

// clearStale unmounts a dead FUSE mount at mountpoint: its statfs fails
// with ENOTCONN once the daemon that served it is gone (a stat may still be
// answered from the kernel's attribute cache; a statfs is always asked).
func clearStale(mountpoint string, log *slog.Logger) error {
	var st unix.Statfs_t
	err := unix.Statfs(mountpoint, &st)
	if !errors.Is(err, unix.ENOTCONN) && !errors.Is(err, unix.ECONNABORTED) {
		return nil
	}
	log.Warn("fuse: clearing a stale mount left by a daemon that died", "mountpoint", mountpoint)
	out, err := exec.Command("fusermount3", "-u", "-z", mountpoint).CombinedOutput()
	if err != nil {
		// Root may unmount directly when fusermount3 refuses.
		if uerr := unix.Unmount(mountpoint, unix.MNT_DETACH); uerr != nil {
			return fmt.Errorf("stale mount at %s: fusermount3 -u -z: %v: %s; umount: %v", mountpoint, err, strings.TrimSpace(string(out)), uerr)
		}
	}
	return nil
}

func userAllowOther() bool {
	b, err := os.ReadFile("/etc/fuse.conf")
	if err != nil {
		return false
	}
	return slices.ContainsFunc(strings.Split(string(b), "\n"), func(l string) bool {
		return strings.TrimSpace(l) == "user_allow_other"
	})
}
