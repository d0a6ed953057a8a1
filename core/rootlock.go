package core

import (
	"fmt"
	"os"
	"strings"

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
			by := ""
			if pid := flockHolder(root); pid != "" {
				by = " (pid " + pid + ")"
			}
			return -1, fmt.Errorf("the root %s is served by another daemon%s: one daemon per root", hostRoot, by)
		}
		return -1, &os.PathError{Op: "lock sandbox root", Path: hostRoot, Err: err}
	}
	return fd, nil
}

// flockHolder is the pid /proc/locks names as holding an flock on the
// directory fd ("" when it cannot tell): its lines read
// "N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF", the device in hex.
func flockHolder(fd int) string {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return ""
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return ""
	}
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "FLOCK" && f[5] == want {
			return f[4]
		}
	}
	return ""
}
