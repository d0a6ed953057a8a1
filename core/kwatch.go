package core

import (
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kwatch is the kernel watch itself: one inotify descriptor, read by the
// notifier's own goroutine, with the watch descriptors it added.
//
// It reads inotify directly rather than through fsnotify, for two reasons
// the mirror's numbers show. fsnotify reads on a goroutine of its own
// through Go's netpoller and hands every event over a channel, so each
// change made through the mount woke two goroutines and an epoll wait on
// the other core while the caller waited for its reply. And fsnotify turns
// each event's watch into a path when it reads it, ahead of the notifier,
// so an event of a watch the notifier has just dropped (the MOVE_SELF of a
// directory it saw renamed) still arrived, named by its old path.
//
// Here the notifier polls the descriptor itself (poll(2), blocking, with
// the wake-up eventfd beside it), reads what is queued in one read, and
// names each event by its watch only when it handles it. While the daemon
// is making changes itself (it opened a ledger claim in the last busyFor:
// a burst through the mount or the API), it lets events gather for
// gatherWait after a read before it waits again: while nobody waits on the descriptor the kernel
// queues an event without waking anyone, so the burst's echoes cost one
// wake-up per gatherWait instead of one per change. Otherwise (an outside
// writer alone) it waits again at once, and a change is read as soon as
// the kernel queues it.
//
// The reader is not the only one to read: a ledger claim opens by reading
// what is queued (ledger.go), so the descriptor is non-blocking, and every
// read and the handling of what it read is done under the notifier's lock.
// In a burst, each claim reads the echoes of the operation before it, and
// the reader finds less to read.
type kwatch struct {
	fd   int
	wake int              // eventfd: written to end a wait early
	path map[int32]string // host path of each watch descriptor
	wd   map[string]int32 // watch descriptor of each host path
	buf  []byte

	mu     sync.Mutex // guards closed against interrupt
	closed bool
}

// gatherWait is how long the notifier lets events gather after a read
// while the daemon makes changes: the most an outside change made in the
// middle of such a burst waits to be read. A loop of creates and unlinks
// through the mount woke the daemon 7.1 times per operation without
// gathering, 6.5 at 0.5 ms, 6.35 at 1 ms (the loopback: 6.2).
const gatherWait = time.Millisecond

// gather lets events gather. nanosleep(2), not a Go timer: the runtime
// waits for timers in whole milliseconds when idle.
func (k *kwatch) gather() {
	unix.Nanosleep(&unix.Timespec{Nsec: int64(gatherWait)}, nil)
}

// watchMask is what a directory's watch asks for: changes of its entries
// (created, removed, moved in or out, written, attributes) and of itself.
// IN_ONLYDIR: what is not a directory is refused, not watched.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR

// kop is what happened, in the notifier's terms.
type kop uint8

const (
	kCreate kop = 1 << iota // created, or moved in (IN_CREATE, IN_MOVED_TO)
	kRemove                 // removed (IN_DELETE, a watched directory's IN_DELETE_SELF)
	kRename                 // moved away (IN_MOVED_FROM, a watched directory's IN_MOVE_SELF)
	kWrite                  // written (IN_MODIFY)
	kChmod                  // attributes changed (IN_ATTRIB)
)

// kevent is one inotify event, named when it is handled.
type kevent struct {
	wd     int32  // the watch it came from
	name   string // host path: the watch's path, and the entry's name when it has one
	op     kop
	self   bool   // the event is about the watched directory itself
	cookie uint32 // pairs a MOVED_FROM with its MOVED_TO (0: neither)
}

func (e kevent) has(op kop) bool { return e.op&op != 0 }

func newKwatch() (*kwatch, error) {
	// Non-blocking: a claim reads what is queued without waiting (ledger.go).
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	// The largest read the kernel's default queue (16,384 events of 16
	// bytes and a name) can need in one go is far more; 256 KiB reads a
	// few thousand events of short names at once.
	return &kwatch{fd: fd, wake: wake, path: map[int32]string{}, wd: map[string]int32{}, buf: make([]byte, 256<<10)}, nil
}

// add watches the directory at host path h, a path the daemon owns (the
// ledger's control directory): IN_DONT_FOLLOW, a symlink there is refused.
func (k *kwatch) add(h string) (int32, error) {
	wd, err := unix.InotifyAddWatch(k.fd, h, watchMask|unix.IN_DONT_FOLLOW)
	if err != nil {
		return -1, err
	}
	return k.named(int32(wd), h), nil
}

// addFd watches the directory open at fd (O_PATH will do), naming its
// events by host path h. The watch is placed through the descriptor's
// /proc/self/fd link, which the kernel follows to exactly the inode the
// descriptor holds: what is watched is what the walk resolved beneath
// the root, whatever its name became meanwhile, and no host path is
// handed to the kernel, so a tree deeper than PATH_MAX below the host
// root is watched too (h is only a string here).
func (k *kwatch) addFd(fd int, h string) (int32, error) {
	wd, err := unix.InotifyAddWatch(k.fd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
	if err != nil {
		return -1, err
	}
	return k.named(int32(wd), h), nil
}

// named records h as the name of watch w.
func (k *kwatch) named(w int32, h string) int32 {
	k.drop(w) // the same directory may be watched under an older name
	k.path[w] = h
	k.wd[h] = w
	return w
}

// remove stops watching host path h.
func (k *kwatch) remove(h string) {
	w, ok := k.wd[h]
	if !ok {
		return
	}
	k.drop(w)
	unix.InotifyRmWatch(k.fd, uint32(w))
}

// drop forgets the watch descriptor w (the kernel dropped it, or remove
// will), and its path unless that path is watched by a newer descriptor.
func (k *kwatch) drop(w int32) {
	if h, ok := k.path[w]; ok {
		delete(k.path, w)
		if k.wd[h] == w {
			delete(k.wd, h)
		}
	}
}

// wait blocks until events are queued (true), the wait is woken (false), or
// timeout passes (false).
func (k *kwatch) wait(timeout time.Duration) bool {
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

// interrupt ends a wait under way (or the next one) early.
func (k *kwatch) interrupt() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.closed {
		one := [8]byte{1}
		unix.Write(k.wake, one[:])
	}
}

// read reads what is queued, if anything, and hands each event to fn in
// order, naming it only then, so what fn does to the watches (remove) holds
// for the events after it: an event of a watch removed by then is dropped.
// A queue overflow is handed to overflow. It reads at most limit bytes (0:
// a whole buffer; never less than one event of the longest name) and
// returns the bytes read (0: nothing was queued). The caller holds the
// notifier's lock.
func (k *kwatch) read(fn func(kevent), overflow func(), limit int) (n int, err error) {
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
		mask := raw.Mask
		if mask&unix.IN_Q_OVERFLOW != 0 {
			overflow()
			continue
		}
		w := raw.Wd
		dir, ok := k.path[w]
		if !ok {
			continue // a watch removed since: its events are stale
		}
		if mask&(unix.IN_IGNORED|unix.IN_UNMOUNT) != 0 {
			k.drop(w)
			continue
		}
		e := kevent{wd: w, name: dir, self: raw.Len == 0, cookie: raw.Cookie}
		if raw.Len > 0 {
			e.name = dir + "/" + cstring(k.buf[nameAt:off])
		}
		if mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
			e.op |= kCreate
		}
		if mask&(unix.IN_DELETE|unix.IN_DELETE_SELF) != 0 {
			e.op |= kRemove
		}
		if mask&(unix.IN_MOVED_FROM|unix.IN_MOVE_SELF) != 0 {
			e.op |= kRename
		}
		if mask&unix.IN_MODIFY != 0 {
			e.op |= kWrite
		}
		if mask&unix.IN_ATTRIB != 0 {
			e.op |= kChmod
		}
		if mask&unix.IN_DELETE_SELF != 0 {
			k.drop(w) // the kernel drops the watch (IN_IGNORED follows)
		}
		fn(e)
	}
	return n, nil
}

// queued is how many bytes of events the kernel holds for the next reads
// (FIONREAD): what a drain reads at most, so that an outside writer who
// keeps the queue full cannot keep a claim draining for ever. If the
// kernel will not say, one buffer.
func (k *kwatch) queued() int {
	n, err := unix.IoctlGetInt(k.fd, unix.TIOCINQ) // FIONREAD
	if err != nil {
		return len(k.buf)
	}
	return n
}

// cstring is the NUL-padded name of an inotify event.
func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func (k *kwatch) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	k.closed = true
	unix.Close(k.fd)
	unix.Close(k.wake)
}
