package main

import (
	"fmt"
	"math/rand/v2"
	"path"
	"time"

	"golang.org/x/sys/unix"
)

// fioFloorRow: the kernel's share of a replacing PUT, which no work of
// the daemon's can take back. The calls core's WriteFile makes for one
// (its directory opened beneath the root, the target's fstatat, a temp
// created beside it, 4 KiB written, fchown, fchmod, fsync, fstat and
// close of the temp, the rename over the target, the directory closed)
// are made here, 32 files at a time as the PUT row's connections, on the
// fork's root (its overlay) and on the plain sandbox's root, taking
// turns; the daemon's kernel watch is on both, as under the PUT row. roots: the plain sandbox's, then the
// fork's.
func fioFloorRow(c *cfg, t *table, roots [2]string) error {
	n, rounds := 2000, 2*c.runs
	if c.quick {
		n = 500
	}
	body := make([]byte, 4096)
	var us [2][]float64
	for r := 0; r < rounds; r++ {
		for _, k := range order(2, r) {
			v, err := fioFloor(roots[k], r, n, body)
			if err != nil {
				return fmt.Errorf("%s: %w", roots[k], err)
			}
			us[k] = append(us[k], v)
		}
	}
	t.pair(fmt.Sprintf("the calls of one replacing PUT (openat2 of the directory, fstatat, create, write 4 KiB, fchown, fchmod, fsync, fstat, close, renameat, close) made on the fork's root vs the plain sandbox's, %d at once, µs per file", fioConns), "µs",
		us[1], us[0], atMost, 0, fmt.Sprintf("the daemon and fork of the first forkio row, both kernel watches on; %d rounds of %d files in this process (wall time over the files), over the PUT row's files; the kernel's part of the PUT row, the same for any daemon on an overlay", rounds, n))
	return nil
}

// fioFloor replaces n files of the tree under root (round r's), each by
// the calls of a replacing PUT, fioConns at once as the PUT row's
// connections, and answers the µs per replacement (wall time over n).
func fioFloor(root string, r, n int, body []byte) (float64, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(rfd)
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
	errs := make(chan error, fioConns)
	t0 := time.Now()
	for w := range fioConns {
		go func() {
			for i := w; i < n; i += fioConns {
				dir, name := path.Split(fioPath(fioUpper + (r*n+i)%(fioFiles-fioUpper)))
				if err := floorReplace(rfd, how, dir[1:len(dir)-1], name, body); err != nil {
					errs <- fmt.Errorf("%s%s: %w", dir, name, err)
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range fioConns {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return float64(time.Since(t0).Microseconds()) / float64(n), first
}

// floorReplace replaces name in dir (beneath rfd) as core's WriteFile
// does, by the same calls.
func floorReplace(rfd int, how *unix.OpenHow, dir, name string, body []byte) error {
	dfd, err := unix.Openat2(rfd, dir, how)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	tmp := fmt.Sprintf(".floor-%016x.part", rand.Uint64())
	fd, err := unix.Openat(dfd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	_, err = unix.Write(fd, body)
	for _, step := range []func() error{
		func() error { return unix.Fchown(fd, int(st.Uid), int(st.Gid)) },
		func() error { return unix.Fchmod(fd, 0o644) },
		func() error { return unix.Fsync(fd) },
		func() error { return unix.Fstat(fd, &st) },
	} {
		if err == nil {
			err = step()
		}
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, name)
	}
	if err != nil {
		unix.Unlinkat(dfd, tmp, 0)
	}
	return err
}
