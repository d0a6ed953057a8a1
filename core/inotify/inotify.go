// Package inotify is the reader of core's kernel watch: one inotify
// descriptor, read without blocking by whoever holds the caller's lock, its
// events named by their watch only when they are handled. It imports
// nothing from core or core/watch; core/watch's package doc ("The kernel
// watch") says why the daemon reads inotify itself rather than through
// fsnotify.
package inotify

import (
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"sandfs/internal/safeat"
)

// Watch is one inotify descriptor, with the watch descriptors it added and
// an eventfd that ends a Wait early. Everything but Interrupt and Close is
// called under the caller's lock, one call at a time.
type Watch struct {
	fd   int
	wake int              // eventfd: written to end a wait early
	path map[int32]string // host path of each watch descriptor
	wd   map[string]int32 // watch descriptor of each host path
	buf  []byte

	mu     sync.Mutex // guards closed against Interrupt
	closed bool
}

// mask is what a directory's watch asks for: changes of its entries
// (created, removed, moved in or out, written, attributes) and of itself.
// IN_ONLYDIR: what is not a directory is refused, not watched.
const mask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR

// Op is what happened.
type Op uint8

const (
	Create Op = 1 << iota // created, or moved in (IN_CREATE, IN_MOVED_TO)
	Remove                // removed (IN_DELETE, a watched directory's IN_DELETE_SELF)
	Rename                // moved away (IN_MOVED_FROM, a watched directory's IN_MOVE_SELF)
	Write                 // written (IN_MODIFY)
	Chmod                 // attributes changed (IN_ATTRIB)
)

// Event is one inotify event, named when it is handled.
type Event struct {
	Wd     int32  // the watch it came from
	Name   string // host path: the watch's path, and the entry's name when it has one
	Op     Op
	Self   bool   // the event is about the watched directory itself
	Dir    bool   // the entry is a directory (IN_ISDIR)
	Cookie uint32 // pairs a MOVED_FROM with its MOVED_TO (0: neither)
}

// Has reports whether e is (also) op.
func (e Event) Has(op Op) bool { return e.Op&op != 0 }

// New opens an inotify descriptor, non-blocking: a read finds what is
// queued without waiting.
func New() (*Watch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &Watch{fd: fd, wake: wake, path: map[int32]string{}, wd: map[string]int32{}, buf: make([]byte, minBuf)}, nil
}

// The read buffer starts at minBuf and doubles, up to maxBuf, after each
// read that filled it (more was queued). The largest read the kernel's
// default queue (16,384 events of 16 bytes and a name) can need in one go
// is far more; maxBuf reads a few thousand events of short names at once,
// and a burst reaches it within four reads. An idle watch holds minBuf: a
// host of many sandboxes held maxBuf for each (25 MiB of heap for 100).
const (
	minBuf = 16 << 10
	maxBuf = 256 << 10
)

// Add watches the directory at host path h, a path the caller owns:
// IN_DONT_FOLLOW, a symlink there is refused.
func (k *Watch) Add(h string) (int32, error) {
	wd, err := unix.InotifyAddWatch(k.fd, h, mask|unix.IN_DONT_FOLLOW)
	if err != nil {
		return -1, err
	}
	return k.named(int32(wd), h), nil
}

// AddFd watches the directory open at fd (O_PATH will do), naming its
// events by host path h. The watch is placed through the descriptor's
// /proc/self/fd link, which the kernel follows to exactly the inode the
// descriptor holds; no host path is handed to the kernel (h is only a
// string here).
func (k *Watch) AddFd(fd int, h string) (int32, error) {
	wd, err := unix.InotifyAddWatch(k.fd, safeat.ProcPath(fd), mask)
	if err != nil {
		return -1, err
	}
	return k.named(int32(wd), h), nil
}

// named records h as the name of watch w.
func (k *Watch) named(w int32, h string) int32 {
	k.drop(w) // the same directory may be watched under an older name
	k.path[w] = h
	k.wd[h] = w
	return w
}

// Remove stops watching host path h.
func (k *Watch) Remove(h string) {
	w, ok := k.wd[h]
	if !ok {
		return
	}
	k.drop(w)
	unix.InotifyRmWatch(k.fd, uint32(w))
}

// drop forgets the watch descriptor w (the kernel dropped it, or Remove
// will), and its path unless that path is watched by a newer descriptor.
func (k *Watch) drop(w int32) {
	if h, ok := k.path[w]; ok {
		delete(k.path, w)
		if k.wd[h] == w {
			delete(k.wd, h)
		}
	}
}

// Wait blocks until events are queued (true), the wait is woken (false), or
// timeout passes (false).
func (k *Watch) Wait(timeout time.Duration) bool {
	ms := int(timeout / time.Millisecond)
	switch {
	case timeout <= 0:
		ms = 0 // poll(2) takes a negative timeout for "forever"
	case ms == 0:
		ms = 1
	}
	fds := []unix.PollFd{{Fd: int32(k.fd), Events: unix.POLLIN}, {Fd: int32(k.wake), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, ms)
	if err != nil || n == 0 {
		return false
	}
	if fds[1].Revents != 0 {
		var b [8]byte
		unix.Read(k.wake, b[:])
	}
	return fds[0].Revents&unix.POLLIN != 0
}

// Fds are the inotify descriptor and the wake-up eventfd, for a reader
// that waits on many watches at once (epoll) instead of Wait. They are
// the Watch's: valid until Close, which the caller orders against its use
// of them by its own lock.
func (k *Watch) Fds() (events, wake int) { return k.fd, k.wake }

// Woken clears a wake-up (Interrupt) for a reader that waits through Fds.
// Called under the caller's lock, before Close.
func (k *Watch) Woken() {
	var b [8]byte
	unix.Read(k.wake, b[:])
}

// Interrupt ends a wait under way (or the next one) early.
func (k *Watch) Interrupt() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.closed {
		one := [8]byte{1}
		unix.Write(k.wake, one[:])
	}
}

// Read reads what is queued, if anything, and hands each event to fn in
// order, naming it only then, so what fn does to the watches (Remove) holds
// for the events after it: an event of a watch removed by then is dropped.
// A queue overflow is handed to overflow. It reads at most limit bytes (0:
// a whole buffer; never less than one event of the longest name) and
// returns the bytes read (0: nothing was queued).
func (k *Watch) Read(fn func(Event), overflow func(), limit int) (n int, err error) {
	buf := k.buf
	if limit > 0 && limit < len(buf) {
		buf = buf[:max(limit, unix.SizeofInotifyEvent+unix.NAME_MAX+1)]
	}
	n, err = unix.Read(k.fd, buf)
	if err != nil {
		if err == unix.EINTR || err == unix.EAGAIN {
			return 0, nil
		}
		return 0, err
	}
	for off := 0; off+unix.SizeofInotifyEvent <= n; {
		raw := (*unix.InotifyEvent)(unsafe.Pointer(&k.buf[off]))
		nameAt := off + unix.SizeofInotifyEvent
		off = nameAt + int(raw.Len)
		if off > n {
			break
		}
		m := raw.Mask
		if m&unix.IN_Q_OVERFLOW != 0 {
			overflow()
			continue
		}
		w := raw.Wd
		dir, ok := k.path[w]
		if !ok {
			continue // a watch removed since: its events are stale
		}
		if m&(unix.IN_IGNORED|unix.IN_UNMOUNT) != 0 {
			k.drop(w)
			continue
		}
		e := Event{Wd: w, Name: dir, Self: raw.Len == 0, Dir: m&unix.IN_ISDIR != 0, Cookie: raw.Cookie}
		if raw.Len > 0 {
			e.Name = dir + "/" + unix.ByteSliceToString(k.buf[nameAt:off])
		}
		if m&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
			e.Op |= Create
		}
		if m&(unix.IN_DELETE|unix.IN_DELETE_SELF) != 0 {
			e.Op |= Remove
		}
		if m&(unix.IN_MOVED_FROM|unix.IN_MOVE_SELF) != 0 {
			e.Op |= Rename
		}
		if m&unix.IN_MODIFY != 0 {
			e.Op |= Write
		}
		if m&unix.IN_ATTRIB != 0 {
			e.Op |= Chmod
		}
		if m&unix.IN_DELETE_SELF != 0 {
			k.drop(w) // the kernel drops the watch (IN_IGNORED follows)
		}
		fn(e)
	}
	if n > len(k.buf)-(unix.SizeofInotifyEvent+unix.NAME_MAX+1) && len(k.buf) < maxBuf {
		k.buf = make([]byte, 2*len(k.buf))
	}
	return n, nil
}

// Drain reads what is queued, as Read does, until a read comes back with
// room left for an event of the longest name (the queue was empty as it
// was read), comes back empty, or limit bytes were read. It asks no
// FIONREAD first: a read that finds the queue empty is one syscall, as the
// ioctl was, and one that finds events is one syscall instead of two.
func (k *Watch) Drain(fn func(Event), overflow func(), limit int) error {
	for limit > 0 {
		size := min(len(k.buf), max(limit, maxEvent)) // what Read reads into (it may grow k.buf)
		n, err := k.Read(fn, overflow, limit)
		if err != nil || n == 0 || n+maxEvent <= size {
			return err
		}
		limit -= n
	}
	return nil
}

// maxEvent is the size of an event of the longest name: the kernel stops a
// read at the first event that does not fit.
const maxEvent = unix.SizeofInotifyEvent + unix.NAME_MAX + 1

// Queued is how many bytes of events the kernel holds for the next reads
// (FIONREAD); if the kernel will not say, one buffer.
func (k *Watch) Queued() int {
	n, err := unix.IoctlGetInt(k.fd, unix.TIOCINQ) // FIONREAD
	if err != nil {
		return len(k.buf)
	}
	return n
}

// Close closes the descriptors; a later Interrupt does nothing.
func (k *Watch) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	k.closed = true
	unix.Close(k.fd)
	unix.Close(k.wake)
}
