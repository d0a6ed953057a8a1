package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sort"
	"sync"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint/cas"
)

// A tree from elsewhere (a checkpoint another host made, read from the
// fleet) written into an empty root as its objects arrive, before the
// store holds them: a host taking a sandbox up serves it once the tree is
// written, and stores the objects after, from the tree (Fill). Each
// object is checked against its name while its first file is written (a
// bad one fails the write, and the caller removes the tree); the other
// files of the same content are copied from that first one. It is the
// copy's build (lowerBuild) in three steps: the directories when the
// writer is made, the files as their objects come (Put), the rest and
// the directories' attributes at the end (Finish).

// TreeWriter writes one tree from elsewhere.
type TreeWriter struct {
	h      *cpStore
	b      *lowerBuild // the build; its workers come from it
	files  map[string]cpEntry
	dirs   []string           // the directories, parents first
	rest   []*entryGroup      // the other entries, as makeDirs answered them
	byHash map[string][]Entry // the files of each content (byContent)
	ids    *madeIDs

	mu   sync.Mutex
	put  map[string]bool // contents written, or being written
	idle []*lowerBuild   // workers between Puts, each holding a directory
}

// NewTreeWriter checks entries (CheckEntries) and makes their
// directories in dst, a descriptor of s's empty root, which s does not
// serve yet; the caller closes dst after Finish.
func NewTreeWriter(ctx context.Context, s *core.Sandbox, entries []Entry, dst int) (*TreeWriter, error) {
	h, err := storeOf(s)
	if err != nil {
		return nil, err
	}
	if err := CheckEntries(entries); err != nil {
		return nil, fmt.Errorf("%v: %w", err, unix.EINVAL)
	}
	w := &TreeWriter{h: h, files: make(map[string]cpEntry, len(entries)), ids: newMadeIDs(), put: map[string]bool{}}
	for _, e := range entries {
		w.files[e.Path] = entryFrom(e)
	}
	_, w.byHash = byContent(entries)
	w.b = &lowerBuild{s: s, made: w.ids.made}
	w.b.start(dst)
	w.dirs, w.rest, err = w.b.makeDirs(ctx, w.files)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Put writes every file of the tree whose content is the object hash of
// size bytes, from r: the first as r gives it, checked against hash (a
// mismatch is cas.ErrMismatch), the others copied from it (as a fork's copy copies: cas.CopyFile). Workers call
// it at once, each object once. It answers the bytes read.
func (w *TreeWriter) Put(hash string, r io.Reader, size int64) (int64, error) {
	files := w.byHash[hash]
	w.mu.Lock()
	taken := w.put[hash]
	w.put[hash] = true
	w.mu.Unlock()
	if len(files) == 0 || taken || files[0].Size != size {
		return 0, fmt.Errorf("object %s of %d bytes: not one the tree names, or named twice: refused", hash, size)
	}
	first := files[0].Path
	b := w.worker()
	defer w.release(b)
	var n int64
	b.content = func(fd int, _ cpEntry) (err error) {
		n, err = writeChecked(fd, hash, r, size)
		return err
	}
	if size == 0 {
		if _, err := writeChecked(-1, hash, r, 0); err != nil {
			return 0, core.PathErr("write", first, err)
		}
	}
	if err := b.make(first, w.files[first], false); err != nil {
		return n, core.PathErr("write", first, err)
	}
	if len(files) == 1 || size == 0 {
		return n, w.makeEach(b, files[1:])
	}
	src, err := w.openFile(b, first)
	if err != nil {
		return n, core.PathErr("write", first, err)
	}
	defer unix.Close(src)
	b.content = func(fd int, _ cpEntry) error {
		_, err := cas.CopyFile(fd, src) // nothing serves the tree yet: the first file stays as written
		return err
	}
	return n, w.makeEach(b, files[1:])
}

// madeIDs gathers the stat identity of each file a build makes: a file
// whose size and modification time are the entry's is then known as
// that entry's (one whose time could not be set is read by the next
// walk).
type madeIDs struct {
	mu sync.Mutex
	m  map[string]cpEntry
}

func newMadeIDs() *madeIDs { return &madeIDs{m: map[string]cpEntry{}} }

// made is lowerBuild's made: workers call it at once.
func (ids *madeIDs) made(p string, e cpEntry, fd int) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Size != e.Size || st.Mtim.Nano() != e.Mtime {
		return
	}
	ids.mu.Lock()
	ids.m[p] = cpEntry{Dev: st.Dev, Ino: st.Ino, Ctime: st.Ctim.Nano()}
	ids.mu.Unlock()
}

// byContent is the files of entries by their content's hash, each
// content's in path order, and those hashes in the entries' order.
func byContent(entries []Entry) ([]string, map[string][]Entry) {
	var hashes []string
	files := map[string][]Entry{}
	for _, e := range entries {
		if e.Type != "file" {
			continue
		}
		if _, ok := files[e.Hash]; !ok {
			hashes = append(hashes, e.Hash)
		}
		files[e.Hash] = append(files[e.Hash], e)
	}
	for _, fs := range files {
		sort.Slice(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
	}
	return hashes, files
}

// makeEach makes the tree's files of files with b.
func (w *TreeWriter) makeEach(b *lowerBuild, files []Entry) error {
	for _, e := range files {
		if err := b.make(e.Path, w.files[e.Path], false); err != nil {
			return core.PathErr("write", e.Path, err)
		}
	}
	return nil
}

// openFile opens the tree's file p, made by b, to read.
func (w *TreeWriter) openFile(b *lowerBuild, p string) (int, error) {
	dfd, name, err := b.parent(p)
	if err != nil {
		return -1, err
	}
	return unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// Finish makes what Put did not (symlinks, and files whose objects the
// store holds: copied from it), gives the directories their attributes,
// and syncs the tree's filesystem. It answers the files' stat identities,
// for Fill. A file whose object neither came nor is stored fails it.
func (w *TreeWriter) Finish(ctx context.Context) (Identities, error) {
	defer w.Close()
	var groups []*entryGroup
	for _, g := range w.rest {
		for _, it := range g.items {
			if it.e.Kind != kindFile || !w.put[it.e.Hash] {
				groups = appendGroup(groups, it)
			}
		}
	}
	w.b.content = func(fd int, e cpEntry) error {
		_, err := w.h.store.CopyTo(fd, e.Hash)
		return err
	}
	if err := w.b.makeAll(ctx, groups); err != nil {
		return Identities{}, err
	}
	if err := w.b.end(w.dirs, w.files); err != nil {
		return Identities{}, err
	}
	return Identities{m: w.ids.m}, nil
}

// Identities are the stat identities of the files a TreeWriter made.
type Identities struct{ m map[string]cpEntry }

// Dirs is the tree's directories, as Dirs answers a checkpoint's.
func (w *TreeWriter) Dirs() map[string][]string { return dirsOf(w.files) }

// worker is a builder of the tree for one Put.
func (w *TreeWriter) worker() *lowerBuild {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.idle); n > 0 {
		b := w.idle[n-1]
		w.idle = w.idle[:n-1]
		return b
	}
	return w.b.worker()
}

func (w *TreeWriter) release(b *lowerBuild) {
	w.mu.Lock()
	w.idle = append(w.idle, b)
	w.mu.Unlock()
}

// Close closes what the writer holds (Finish does too); the caller of a
// write that failed calls it.
func (w *TreeWriter) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.idle {
		b.closeDir()
	}
	w.idle = nil
	w.b.closeDir()
}

// writeChecked writes what r gives into fd (-1: nowhere) from its start,
// size bytes exactly, hashing it: bytes more or fewer, or not hashing to
// hash, are cas.ErrMismatch. It answers the bytes read. A reader that
// holds its bytes (a batch's, bytes.Reader) gives them in one write,
// with no copy.
func writeChecked(fd int, hash string, r io.Reader, size int64) (int64, error) {
	w := &checkedWriter{fd: fd, size: size, sum: sha256.New()}
	_, err := io.Copy(w, r)
	if errors.Is(err, errTooLong) {
		return w.n, fmt.Errorf("object %s: more than %d bytes: %w", hash, size, cas.ErrMismatch)
	} else if err != nil {
		return w.n, err
	}
	if w.n != size || hex.EncodeToString(w.sum.Sum(nil)) != hash {
		return w.n, fmt.Errorf("object %s: %w", hash, cas.ErrMismatch)
	}
	return w.n, nil
}

var errTooLong = errors.New("more bytes than the object's size")

// checkedWriter hashes what it is given and writes it into fd (-1:
// nowhere), at most size bytes.
type checkedWriter struct {
	fd   int
	n    int64
	size int64
	sum  hash.Hash
}

func (w *checkedWriter) Write(b []byte) (int, error) {
	if w.n+int64(len(b)) > w.size {
		return 0, errTooLong
	}
	w.sum.Write(b)
	if w.fd >= 0 {
		if err := pwriteAll(w.fd, b, w.n); err != nil {
			return 0, err
		}
	}
	w.n += int64(len(b))
	return len(b), nil
}

func pwriteAll(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		k, err := unix.Pwrite(fd, b, off)
		if err != nil {
			return err
		}
		if k == 0 {
			return io.ErrShortWrite
		}
		b, off = b[k:], off+int64(k)
	}
	return nil
}
