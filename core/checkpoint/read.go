package checkpoint

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint/cas"
)

// readWorkers is how many files a checkpoint reads at once: hashing is
// CPU, storing is the disk's; four keep two cores and a disk busy.
const readWorkers = 4

// readPending reads the files the walks found changed, readWorkers at a
// time, each reached again by its path (no directory fd is held across
// the walk), and records what they hold.
func (b *builder) readPending() error {
	if len(b.pending) == 0 {
		return nil
	}
	type result struct {
		e     cpEntry
		added int64
		ok    bool
		err   error
	}
	res := make([]result, len(b.pending))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(readWorkers, len(b.pending)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(res) || b.ctx.Err() != nil {
					return
				}
				ap := b.pending[i]
				dirfd, name, err := b.s.Root().StrictParent(ap)
				if err != nil {
					res[i].err = nilIfGone(ap, err)
					continue
				}
				r := &res[i]
				r.e, r.added, r.ok, r.err = b.read(dirfd, name, ap, b.set[ap])
				unix.Close(dirfd)
			}
		}()
	}
	wg.Wait()
	if err := b.ctx.Err(); err != nil {
		return err
	}
	for i, ap := range b.pending {
		r := res[i]
		switch {
		case r.err != nil:
			return r.err
		case !r.ok:
			b.gone(ap) // vanished, or swapped for another kind, since the walk
		default:
			b.set[ap] = r.e
			b.newBytes += r.added
		}
	}
	b.pending = nil
	return nil
}

// readTries bounds how often a file that changes while it is read is read again.
const readTries = 4

// read hashes (and stores) the content of the file name in dirfd; it
// returns the entry as the read's fstat saw it and the bytes new to the
// store (false: gone or no longer a regular file).
func (b *builder) read(dirfd int, name, ap string, e cpEntry) (cpEntry, int64, bool, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return e, 0, false, nilIfGone(ap, err)
	}
	f := os.NewFile(uintptr(fd), ap)
	defer f.Close()
	for try := 0; ; try++ {
		var added int64
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return e, 0, false, core.PathErr("checkpoint", ap, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return e, 0, false, nil // swapped since the walk's stat
		}
		e.Perm, e.Uid, e.Gid, e.Mtime, e.Size = st.Mode&0o7777, st.Uid, st.Gid, st.Mtim.Nano(), st.Size
		e.Dev, e.Ino, e.Ctime = st.Dev, st.Ino, st.Ctim.Nano()
		b.h.reads.Add(1)
		if b.store == nil {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return e, 0, false, core.PathErr("checkpoint", ap, err)
			}
			e.Hash, _, err = cas.Hash(f)
		} else {
			var o cas.Object
			if err = b.h.dirty(); err != nil {
				return e, 0, false, err
			}
			if o, err = b.store.Put(f); err == nil {
				e.Hash = o.Hash
				if o.Added {
					added = o.Size
					b.newDisk.Add(o.Disk)
				}
			}
		}
		if err == nil && time.Since(time.Unix(0, e.Mtime)) < readSettle {
			err = b.again(f, e.Hash)
		}
		if err == nil {
			return e, added, true, nil
		}
		if !errors.Is(err, cas.ErrChanged) {
			return e, 0, false, core.PathErr("checkpoint", ap, err)
		}
		if try+1 == readTries {
			return e, 0, false, &fs.PathError{Op: "checkpoint", Path: ap, Err: ErrKeptChanging}
		}
	}
}

// readSettle is how recently a file must have changed for its read to be
// checked by a second one. fstat before and after a read misses one
// case: a write(2) that began before the first fstat (the kernel stamps
// mtime as a write starts) and was still copying while the file was read.
// Any later write is seen (the first fstat makes the next stamp distinct,
// kernel 6.13's multigrain timestamps). A write that long is recent.
const readSettle = 2 * time.Second

// again hashes f a second time: a content that differs from hash was torn
// by a write in flight (ErrChanged: the caller reads it again).
func (b *builder) again(f *os.File, hash string) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	h, _, err := cas.Hash(f)
	if err == nil && h != hash {
		err = cas.ErrChanged
	}
	return err
}
