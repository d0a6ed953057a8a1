package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sandfs/fusefs"
)

// mirror is one FUSE mirror of a sandbox.
type mirror struct {
	m *fusefs.Mirror
	// made: the mountpoint is MountAll/NAME, removed with the mount.
	made bool
}

// watchReadyWait bounds the wait for a sandbox's first walk before its
// mirror is mounted anyway.
const watchReadyWait = 30 * time.Second

// mountAllPoint is the sandbox's mountpoint under --mount-all MNTDIR.
func mountAllPoint(dir, name string) string { return filepath.Join(dir, name) }

// Mount mounts the sandbox name at mnt (a --mount): unmounted when the
// sandbox stops.
func (h *Host) Mount(name, mnt string) (*fusefs.Mirror, error) {
	h.mu.Lock()
	e := h.m[name]
	h.mu.Unlock()
	if e == nil {
		return nil, fmt.Errorf("sandbox %s: %w", name, errNotServed)
	}
	return h.mount(name, e, mnt, false)
}

// errNotServed is a mount of a sandbox the host does not serve.
var errNotServed = errors.New("not served")

// mount mounts e's sandbox at mnt once its kernel watch has walked the
// tree: the mirror learns of outside changes from it.
func (h *Host) mount(name string, e *entry, mnt string, made bool) (*fusefs.Mirror, error) {
	select {
	case <-e.sb.Watch().Ready():
	case <-time.After(watchReadyWait):
		h.log.Warn("kernel watch not ready after 30s; mounting anyway", "sandbox", name)
	}
	m, err := fusefs.Mount(e.sb, mnt, h.cfg.Mount)
	if err != nil {
		return nil, err
	}
	h.log.Info("mounted sandbox "+name+" at "+m.Mountpoint(), "sandbox", name, "mountpoint", m.Mountpoint())
	e.mu.Lock()
	e.mirrors = append(e.mirrors, mirror{m: m, made: made})
	e.mu.Unlock()
	return m, nil
}

// unmount unmounts e's mirrors; a mountpoint --mount-all made is removed.
func (e *entry) unmount(h *Host, name string) {
	e.mu.Lock()
	ms := e.mirrors
	e.mirrors = nil
	e.mu.Unlock()
	for _, mi := range ms {
		h.log.Info("unmounting the FUSE mirror", "sandbox", name, "mountpoint", mi.m.Mountpoint())
		if err := mi.m.Unmount(); err != nil {
			h.log.Warn("fuse: unmount", "sandbox", name, "err", err)
			continue
		}
		if mi.made {
			if err := os.Remove(mi.m.Mountpoint()); err != nil {
				h.log.Warn("mount-all: removing the mountpoint", "sandbox", name, "err", err)
			}
		}
	}
}

// UnmountAll unmounts every mirror (the daemon's shutdown: before the
// requests in flight are waited for).
func (h *Host) UnmountAll() {
	h.mu.Lock()
	es := make(map[string]*entry, len(h.m))
	for n, e := range h.m {
		es[n] = e
	}
	h.mu.Unlock()
	for n, e := range es {
		e.unmount(h, n)
	}
}

// MirrorOps sums the request counts of the sandbox's mirrors, for
// /metrics (nil: none).
func (h *Host) MirrorOps(name string) map[string]uint64 {
	h.mu.Lock()
	e := h.m[name]
	h.mu.Unlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	ms := e.mirrors
	e.mu.Unlock()
	var sum map[string]uint64
	for _, mi := range ms {
		if sum == nil {
			sum = map[string]uint64{}
		}
		for op, n := range mi.m.Ops() {
			sum[op] += n
		}
	}
	return sum
}

// MirrorURing sums the requests the sandbox's mirrors served over
// io_uring, for /metrics; on is whether the mirrors were asked to
// (--fuse-uring) and there is one.
func (h *Host) MirrorURing(name string) (n uint64, on bool) {
	if !h.cfg.Mount.Uring {
		return 0, false
	}
	h.mu.Lock()
	e := h.m[name]
	h.mu.Unlock()
	if e == nil {
		return 0, false
	}
	e.mu.Lock()
	ms := e.mirrors
	e.mu.Unlock()
	for _, mi := range ms {
		n += mi.m.URingRequests()
	}
	return n, len(ms) > 0
}

// Unmounted is the mountpoints of the sandbox's mirrors that were
// unmounted behind the daemon's back, for /health (nil: none).
func (h *Host) Unmounted(name string) []string {
	h.mu.Lock()
	e := h.m[name]
	h.mu.Unlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var gone []string
	for _, mi := range e.mirrors {
		if mi.m.Gone() {
			gone = append(gone, mi.m.Mountpoint())
		}
	}
	return gone
}
