package history

import (
	"golang.org/x/sys/unix"
)

// The ballast is a file of reserved blocks ("ballast", 1 MiB) the journal
// keeps in its directory for one purpose: a start on a full state disk.
// SQLite cannot open a database in WAL mode without growing its shared
// memory file (-shm), so a restart on a disk with not a block free could
// not open the journal at all, and the daemon would refuse to start. Then
// the ballast is removed and the open tried again: the journal starts
// degraded (changes that grow the tree refused, statefull.go in core)
// instead of not at all, and makes the ballast again once a batch is
// stored.

const ballastSize = 1 << 20

// makeBallast reserves the ballast if it is missing, and reports whether
// it is in place. On a full disk it is not, and is tried again later.
func (l *Log) makeBallast() bool {
	var st unix.Stat_t
	if unix.Fstatat(l.dfd, "ballast", &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Size == ballastSize && st.Blocks*512 >= ballastSize {
		return true
	}
	fd, err := unix.Openat(l.dfd, "ballast", unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if err := unix.Fallocate(fd, 0, 0, ballastSize); err != nil {
		if err == unix.EOPNOTSUPP { // no reserving here: a file of zeros holds blocks too
			_, err = unix.Pwrite(fd, make([]byte, ballastSize), 0)
		}
		if err != nil {
			unix.Ftruncate(fd, 0)
			return false
		}
	}
	return true
}

// dropBallast removes the ballast, reporting whether there was one.
func (l *Log) dropBallast() bool {
	return unix.Unlinkat(l.dfd, "ballast", 0) == nil
}

// diskFull reports whether the state directory's filesystem has less
// than a ballast's room left for the daemon: SQLite reports a full disk
// as "database or disk is full" when a write fails, but as an I/O error
// when its shared memory file cannot grow.
func (l *Log) diskFull() bool {
	var fs unix.Statfs_t
	if unix.Fstatfs(l.dfd, &fs) != nil {
		return false
	}
	return fs.Bavail*uint64(fs.Bsize) < ballastSize || fs.Ffree == 0 && fs.Files > 0
}
