package checkpoint

import (
	"fmt"

	"golang.org/x/sys/unix"

	"sandfs/core"
)

// Pins: a checkpoint whose made tree a fork's overlay reads must outlive
// the fork, so the fork pins it (lower/.pins/<id>/<holder>, an empty file
// per holder) and Delete refuses a pinned checkpoint; the schedule's
// pruning passes over it. A pin is a file, so it holds across restarts.
// Every name is opened beneath the state directory's descriptor, never
// through a symlink.

// pinsDir is the made trees' directory of pins.
const pinsDir = ".pins"

// ErrPinned is Delete's refusal of a checkpoint a fork reads.
var ErrPinned = fmt.Errorf("the checkpoint is the base of a fork (discard the fork first): %w", unix.EBUSY)

// Pin marks checkpoint id as read by holder (a sandbox name).
func Pin(s *core.Sandbox, id, holder string) error {
	h, err := byID(s, id)
	if err != nil {
		return err
	}
	if core.CheckSandboxName(holder) != nil {
		return fmt.Errorf("pin %s by %q: %w", id, holder, unix.EINVAL)
	}
	h.mu.Lock() // the checkpoint stays while it is pinned: Delete checks pins under the same lock
	defer h.mu.Unlock()
	if _, err := h.header(id); err != nil {
		return err
	}
	fd, err := h.pinDir(id, true)
	if err != nil {
		return fmt.Errorf("pin %s: %w", id, err)
	}
	defer unix.Close(fd)
	f, err := unix.Openat(fd, holder, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("pin %s: %w", id, err)
	}
	return unix.Close(f)
}

// Unpin takes holder's pin of checkpoint id back (none: nothing to do).
func Unpin(s *core.Sandbox, id, holder string) error {
	h, err := storeOf(s)
	if err != nil {
		return err
	}
	if !validID(id) || core.CheckSandboxName(holder) != nil {
		return fmt.Errorf("unpin %q by %q: %w", id, holder, unix.EINVAL)
	}
	fd, err := h.pinDir(id, false)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unpin %s: %w", id, err)
	}
	defer unix.Close(fd)
	if err := unix.Unlinkat(fd, holder, 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("unpin %s: %w", id, err)
	}
	// The last pin: its directory goes (one still holding a pin stays).
	if pfd, err := h.pinDir("", false); err == nil {
		_ = unix.Unlinkat(pfd, id, unix.AT_REMOVEDIR)
		unix.Close(pfd)
	}
	return nil
}

// pinDir opens lower/.pins/<id> (id "": lower/.pins), made when mk.
func (h *cpStore) pinDir(id string, mk bool) (int, error) {
	fd, err := unix.Dup(h.state)
	if err != nil {
		return -1, err
	}
	for _, name := range []string{lowerDir, pinsDir, id} {
		if name == "" {
			break
		}
		if mk {
			if err := unix.Mkdirat(fd, name, 0o700); err != nil && err != unix.EEXIST {
				unix.Close(fd)
				return -1, err
			}
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// pinned says whether a fork reads checkpoint id.
func (h *cpStore) pinned(id string) bool {
	fd, err := h.pinDir(id, false)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}
