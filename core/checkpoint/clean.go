package checkpoint

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A store closed cleanly need not be swept when it is opened again. The
// sweep at open (store.go) is for what a daemon killed mid-checkpoint or
// mid-fetch left: objects no manifest names, a put's temps. It reads
// every manifest and lists every object, some half a second for a
// 100,000-file sandbox, and every open paid it: each start of a
// sandbox, each take-up of one moving back to this host.
//
// So a Close that leaves no object unnamed writes the state directory's
// cleanName, holding the store's size on disk; an open that finds it
// takes that size and sweeps nothing. The first put after such an open
// removes the file, durably, before it writes anything: a daemon that
// dies after that sweeps at its next open, as before. Skipping a sweep
// can only keep objects no manifest names (space), never drop one that
// one does.
const cleanName = "store-clean"

// readClean answers the size a clean Close recorded, ok false when the
// store was not closed cleanly (no file, or not a size).
func readClean(state int) (size int64, ok bool) {
	fd, err := unix.Openat(state, cleanName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, false
	}
	buf := make([]byte, 32)
	n, err := unix.Read(fd, buf)
	if err != nil || n <= 0 {
		return 0, false
	}
	size, err = strconv.ParseInt(strings.TrimSpace(string(buf[:n])), 10, 64)
	return size, err == nil && size >= 0
}

// dirty marks the store as one to sweep at its next open, before its
// first put since it was opened clean: an error means nothing may be
// put.
func (h *cpStore) dirty() error {
	h.cleanMu.Lock()
	defer h.cleanMu.Unlock()
	if !h.clean {
		return nil
	}
	if err := unix.Unlinkat(h.state, cleanName, 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("mark the checkpoint store in use: %w", err)
	}
	if err := unix.Fsync(h.state); err != nil {
		return fmt.Errorf("mark the checkpoint store in use: %w", err)
	}
	h.clean = false
	return nil
}

// putLoose notes the object hash put, new, that no manifest names yet (a
// fetch's, before its import).
func (h *cpStore) putLoose(hash string) {
	h.cleanMu.Lock()
	if h.loose == nil {
		h.loose = map[string]bool{}
	}
	h.loose[hash] = true
	h.cleanMu.Unlock()
}

// named notes the objects of files named by a manifest now written; all
// names every object (a sweep's end), unless swept is false (a sweep
// that failed: what it left, nothing says).
func (h *cpStore) named(files map[string]cpEntry, all, swept bool) {
	h.cleanMu.Lock()
	defer h.cleanMu.Unlock()
	switch {
	case all && swept:
		h.loose, h.unswept = nil, false
	case all:
		h.unswept = true
	default:
		for _, e := range files {
			delete(h.loose, e.Hash)
		}
	}
}

// closeClean writes cleanName when every object the store holds is named
// (nothing loose, the last sweep done), with its size (listed now when
// not known: once, after an open that swept); h.mu is held. A failure
// leaves the next open to sweep.
func (h *cpStore) closeClean() {
	h.cleanMu.Lock()
	loose, clean := len(h.loose) > 0 || h.unswept, h.clean
	h.cleanMu.Unlock()
	if loose || clean {
		return // clean already (the file is there), or not clean
	}
	if h.stored(); h.size < 0 {
		return // not known (the store cannot be listed)
	}
	tmp := cleanName + ".tmp"
	fd, err := unix.Openat(h.state, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return
	}
	_, err = unix.Write(fd, []byte(strconv.FormatInt(h.size, 10)+"\n"))
	if err == nil {
		err = unix.Fsync(fd)
	}
	unix.Close(fd)
	if err == nil {
		err = unix.Renameat(h.state, tmp, h.state, cleanName)
	}
	if err != nil {
		unix.Unlinkat(h.state, tmp, 0)
		return
	}
	unix.Fsync(h.state)
}
