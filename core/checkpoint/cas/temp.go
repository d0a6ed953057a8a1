package cas

import (
	"fmt"
	"math/rand/v2"
	"os"

	"golang.org/x/sys/unix"
)

// An object is written in a temp file of the store and then linked to its
// name, so no reader ever sees half an object. Where the filesystem makes
// nameless files (O_TMPFILE) and the daemon may link one by its
// descriptor (linkat AT_EMPTY_PATH, which needs CAP_DAC_READ_SEARCH: a
// daemon running as root has it), the temp has no name: making it adds
// no entry to the store's directory and dropping it removes none, which a
// host taking up a 100,000-file sandbox pays 100,000 times, and a crash
// leaves nothing for Sweep. Elsewhere the temp is named tmp-… beside the
// objects and unlinked after.

// canLinkAnon reports whether temps in the directory fd may be nameless:
// one is made and linked, and the link removed.
func canLinkAnon(fd int) bool {
	tfd, err := openAnon(fd)
	if err != nil {
		return false
	}
	defer unix.Close(tfd)
	name := fmt.Sprintf("%sprobe-%016x", tempPrefix, rand.Uint64())
	if unix.Linkat(tfd, "", fd, name, unix.AT_EMPTY_PATH) != nil {
		return false
	}
	unix.Unlinkat(fd, name, 0)
	return true
}

// openAnon opens a nameless file in the directory fd.
func openAnon(fd int) (int, error) {
	return unix.Openat(fd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
}

// temp makes a temp file in the store: its name ("" when nameless) and
// the file, open for reading and writing.
func (s *Store) temp() (string, *os.File, error) {
	if s.anon {
		fd, err := openAnon(s.fd)
		if err != nil {
			return "", nil, err
		}
		return "", os.NewFile(uintptr(fd), "object"), nil
	}
	for tries := 0; ; tries++ {
		name := fmt.Sprintf("%s%016x", tempPrefix, rand.Uint64())
		fd, err := unix.Openat(s.fd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == unix.EEXIST && tries < 16 {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		return name, os.NewFile(uintptr(fd), name), nil
	}
}

// link gives the temp tmp (f) the name p beneath the store; like
// linkat(2), it refuses to replace (EEXIST).
func (s *Store) link(tmp string, f *os.File, p string) error {
	if tmp == "" {
		return unix.Linkat(int(f.Fd()), "", s.fd, p, unix.AT_EMPTY_PATH)
	}
	return unix.Linkat(s.fd, tmp, s.fd, p, 0)
}

// drop closes a temp and removes its name (an object made of it is a
// link of its own).
func (s *Store) drop(tmp string, f *os.File) {
	f.Close()
	if tmp != "" {
		unix.Unlinkat(s.fd, tmp, 0)
	}
}
