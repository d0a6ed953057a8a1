package core

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockRoot takes the one-daemon lock of a root that keeps state: an flock
// on the root directory itself, not only on the state path, so that a
// second daemon given the same root with another state directory (or the
// state directory removed and made anew under a running daemon) is
// refused instead of telling the same changes from a second journal. It
// returns the descriptor that holds the lock (released when closed).
func lockRoot(root int, hostRoot string) (int, error) {
	fd, err := unix.Openat(root, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "lock sandbox root", Path: hostRoot, Err: err}
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if err == unix.EWOULDBLOCK {
			return -1, fmt.Errorf("the root %s is served by another daemon (one daemon per root)", hostRoot)
		}
		return -1, &os.PathError{Op: "lock sandbox root", Path: hostRoot, Err: err}
	}
	return fd, nil
}
