package grep

import (
	"bytes"
	"context"
	"io"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/apipath"
	"sandfs/core/pathmatch"
	"sandfs/internal/dirent"
	"sandfs/internal/xdev"
)

const (
	// grepBinaryPeek is how much of a file is looked at for a NUL byte.
	grepBinaryPeek = 8 << 10
	// grepBigFile: files larger than this are searched one at a time, so
	// the workers together never hold more than workers×grepBigFile plus
	// one max_file_size of file data.
	grepBigFile = 8 << 20
)

// grepJob is one file to search, in walk order.
type grepJob struct {
	idx    int
	path   string  // API path
	follow bool    // the path named in the request: a final symlink is followed
	dir    *dirRef // non-nil: open name relative to this directory
	name   string
}

// dirRef is a directory fd shared by the walk and the workers searching its
// files; the last one done closes it.
type dirRef struct {
	fd   int
	refs atomic.Int32
}

func (d *dirRef) release() {
	if d.refs.Add(-1) == 0 {
		unix.Close(d.fd)
	}
}

type grepOutcome struct {
	idx      int
	matches  []Match
	searched bool
	err      error
}

// grepFilesRead counts the files grepFile has opened to search, for the
// tests that check an abandoned grep stops part way.
var grepFilesRead atomic.Int64

var grepBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// searchFile searches one file. It reports whether the file was searched (not
// skipped as binary, too large or unreadable).
func searchFile(ctx context.Context, s *core.Sandbox, j grepJob, m *matcher, o *Options, limit int, big *sync.Mutex) ([]Match, bool, error) {
	ap := j.path
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY
	if !j.follow {
		flags |= unix.O_NOFOLLOW
	}
	var fd int
	var err error
	if j.dir != nil {
		fd, err = unix.Openat(j.dir.fd, j.name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		j.dir.release()
	} else {
		fd, err = s.Root().OpenBeneath(ap, flags, 0)
	}
	if err != nil {
		return nil, false, nil // gone or unreadable: skipped, as rg does
	}
	grepFilesRead.Add(1)
	f := os.NewFile(uintptr(fd), ap)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, false, nil
	}
	if o.MaxFileSize > 0 && st.Size > o.MaxFileSize {
		return nil, false, nil
	}
	if st.Size > grepBigFile {
		big.Lock()
		defer big.Unlock()
	}
	bp := grepBufPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= grepBigFile {
			grepBufPool.Put(bp)
		}
	}()
	want := int(st.Size) + 1
	if cap(*bp) < want {
		*bp = make([]byte, 0, want)
	}
	buf := (*bp)[:0]
	// Read to EOF; a file that grew past the limit while we read is skipped.
	for {
		if len(buf) == cap(buf) {
			if o.MaxFileSize > 0 && int64(len(buf)) > o.MaxFileSize {
				return nil, false, nil
			}
			buf = slices.Grow(buf, 64<<10)
			*bp = buf
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF || (n == 0 && err == nil) {
			break
		}
		if err != nil {
			return nil, false, nil
		}
	}
	if o.MaxFileSize > 0 && int64(len(buf)) > o.MaxFileSize {
		return nil, false, nil
	}
	if !o.OneFile && bytes.IndexByte(buf[:min(len(buf), grepBinaryPeek)], 0) >= 0 {
		return nil, false, nil
	}
	ms, _, err := m.search(ctx, ap, buf, o.ContextBefore, o.ContextAfter, limit, nil)
	if err != nil {
		return nil, false, err
	}
	return ms, true, nil
}

// grepWalk walks a directory tree in sorted order, handing out files.
type grepWalk struct {
	s        *core.Sandbox
	ctx      context.Context
	jobs     chan<- grepJob
	root     string
	o        *Options
	include  []string
	types    []string
	excludes []string
	n        int
}

// dir walks the directory open at fd (owned: dir closes it), API path ap,
// relPath from the grep root. Entries are read from the fd and every
// subdirectory and file is opened relative to it with O_NOFOLLOW, so the
// walk never leaves the root and a name swapped for a symlink mid-walk is
// refused, never followed.
func (w *grepWalk) dir(fd int, ap, relPath string) error {
	d := &dirRef{fd: fd}
	d.refs.Store(1)
	defer d.release()
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return core.PathErr(Op, ap, err)
	}
	ents, err := dirent.All(dup)
	unix.Close(dup)
	if err != nil && relPath == "" {
		return core.PathErr(Op, ap, err)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
	for _, e := range ents {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		name := e.Name
		if core.Unreportable(w.ctx, name) {
			continue // names.go: not reported, not descended
		}
		rp := name
		if relPath != "" {
			rp = relPath + "/" + name
		}
		if pathmatch.BaseOrPath(rp, w.excludes) {
			continue
		}
		child := apipath.Child(ap, name)
		switch {
		case e.IsDir():
			if w.o.NoRecurse {
				continue
			}
			sub, err := xdev.OpenSubdir(fd, name)
			if err != nil {
				continue // vanished, swapped, another mount (internal/xdev) or unreadable: skipped
			}
			if err := w.dir(sub, child, rp); err != nil {
				return err
			}
		case e.Type == unix.S_IFREG:
			if len(w.include) > 0 && !pathmatch.BaseOrPath(rp, w.include) {
				continue
			}
			if len(w.types) > 0 && !pathmatch.BaseOrPath(rp, w.types) {
				continue
			}
			d.refs.Add(1)
			select {
			case w.jobs <- grepJob{idx: w.n, path: child, dir: d, name: name}:
				w.n++
			case <-w.ctx.Done():
				d.release()
				return w.ctx.Err()
			}
		}
	}
	return nil
}
