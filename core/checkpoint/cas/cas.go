// Package cas is the content-addressed store of a sandbox's checkpoints:
// every object is named by the hex SHA-256 of its bytes, at
// objects/ab/cdef… (the first two hex digits a directory), so equal
// contents are kept once however many files and checkpoints name them.
//
// The store lives in the sandbox's state directory, outside the root, and
// is reached only by descriptors: Open takes the state directory's fd and
// every later call is an *at call beneath the objects directory's fd, with
// O_NOFOLLOW.
//
// # Putting an object
//
// Put takes an open regular file. Where the filesystem can (btrfs, XFS,
// bcachefs) the file is cloned (FICLONE) into a temp name in the store,
// which shares its blocks and costs no copy, and the clone is then hashed:
// it is the store's own file, so nothing can change it under the hash.
// Elsewhere (ext4, tmpfs, a root on another filesystem than the state)
// the bytes are copied once into the temp while they are hashed, holes
// kept as holes (sparse.go). Either
// way the source's fstat identity (size, mtime, ctime) is compared before
// and after, and a source that changed is ErrChanged: the caller reads it
// again, and a torn file is never stored. The temp is then linked to its
// object name, or dropped when the object is already there (temp.go).
//
// Put does not fsync each object: Sync (syncfs(2) of the store's
// filesystem) makes every object put so far durable in one call, which
// the caller does before it writes the manifest that names them. A crash
// before that leaves objects no manifest names, which Sweep drops.
//
// # Dropping objects
//
// The store keeps no reference counts. Sweep is a mark and sweep: the
// caller names every hash still referenced and Sweep removes the rest
// (and temps left by a crash).
package cas

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrChanged is Put's error for a source that changed while it was read.
var ErrChanged = errors.New("file changed while it was read")

// Store is one objects directory.
type Store struct {
	fd   int  // O_RDONLY directory fd of objects/
	keep bool // new objects take their source's attributes (attrs.go)
	anon bool // temps are nameless (temp.go)
}

// Object is what Put stored.
type Object struct {
	Hash  string // hex SHA-256
	Size  int64
	Added bool  // not in the store before
	Clone bool  // put by FICLONE
	Disk  int64 // what it takes on disk (allocated blocks), when Added
}

const tempPrefix = "tmp-"

// Open opens (making it 0700 when missing) the directory name beneath the
// directory fd dirfd as a store.
func Open(dirfd int, name string) (*Store, error) {
	if err := unix.Mkdirat(dirfd, name, 0o700); err != nil && err != unix.EEXIST {
		return nil, &os.PathError{Op: "mkdir", Path: name, Err: err}
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return &Store{fd: fd, keep: os.Geteuid() == 0, anon: canLinkAnon(fd)}, nil
}

// Close releases the store's fd.
func (s *Store) Close() error { return unix.Close(s.fd) }

// ValidHash reports whether h is 64 lowercase hex digits.
func ValidHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Split is the directory and the name of object h in the store.
func Split(h string) (dir, name string) { return h[:2], h[2:] }

// Has reports whether the object h is in the store.
func (s *Store) Has(h string) bool {
	if !ValidHash(h) {
		return false
	}
	d, n := Split(h)
	var st unix.Stat_t
	return unix.Fstatat(s.fd, d+"/"+n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// OpenObject opens the object h for reading.
func (s *Store) OpenObject(h string) (*os.File, error) {
	fd, err := s.openObject(h)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), h), nil
}

// openObject opens the object h for reading, as a descriptor.
func (s *Store) openObject(h string) (int, error) {
	if !ValidHash(h) {
		return -1, &os.PathError{Op: "open object", Path: h, Err: unix.EINVAL}
	}
	d, n := Split(h)
	fd, err := unix.Openat(s.fd, d+"/"+n, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open object", Path: h, Err: err}
	}
	return fd, nil
}

// same is the stat identity a reader compares before and after.
func same(a, b *unix.Stat_t) bool {
	return a.Ino == b.Ino && a.Dev == b.Dev && a.Size == b.Size && a.Mtim == b.Mtim && a.Ctim == b.Ctim
}

// Put stores the bytes of the regular file src (read from its start). A
// new object takes src's owner, mode and mtime where the store keeps them
// (attrs.go).
func (s *Store) Put(src *os.File) (Object, error) { return s.put(src, true) }

func (s *Store) put(src *os.File, keep bool) (Object, error) {
	var before unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &before); err != nil {
		return Object{}, err
	}
	tmp, f, err := s.temp()
	if err != nil {
		return Object{}, err
	}
	defer s.drop(tmp, f)
	h := sha256.New()
	var o Object
	if unix.IoctlFileClone(int(f.Fd()), int(src.Fd())) == nil {
		o.Clone = true
		if o.Size, err = hashAll(h, f); err != nil {
			return Object{}, err
		}
	} else if o.Size, err = CopySparse(f, src, h); err != nil { // sparse.go
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Object{}, ErrChanged
		}
		return Object{}, err
	}
	var after unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &after); err != nil {
		return Object{}, err
	}
	if !same(&before, &after) || o.Size != after.Size {
		return Object{}, ErrChanged
	}
	o.Hash = hex.EncodeToString(h.Sum(nil))
	var from *unix.Stat_t
	if keep {
		from = &before
	}
	if s.Has(o.Hash) { // a tree's bytes are often put before: skip the attributes
		return o, nil
	}
	return s.name(tmp, f, o, from)
}

// name makes the temp tmp (f) the object o.Hash, with the attributes of
// from (nil: none, attrs.go); where the store has the object already, it
// stays as it is and o is answered not Added.
func (s *Store) name(tmp string, f *os.File, o Object, from *unix.Stat_t) (Object, error) {
	if err := s.setAttrs(int(f.Fd()), from); err != nil {
		return Object{}, err
	}
	d, n := Split(o.Hash)
	// linkat refuses to replace: a racing Put of the same bytes wins and
	// this one is dropped, never a half-written object named. The
	// object's directory is made when the link finds none, not asked
	// for each object.
	err := s.link(tmp, f, d+"/"+n)
	if err == unix.ENOENT {
		if err := unix.Mkdirat(s.fd, d, 0o700); err != nil && err != unix.EEXIST {
			return Object{}, err
		}
		err = s.link(tmp, f, d+"/"+n)
	}
	switch err {
	case nil:
		o.Added = true
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) == nil {
			o.Disk = st.Blocks * 512
		}
	case unix.EEXIST: // put meanwhile by another
	default:
		return Object{}, err
	}
	return o, nil
}

// ErrMismatch is PutNamed's error for bytes that do not hash to the name
// they came under.
var ErrMismatch = errors.New("the object's bytes do not hash to its name")

// PutNamed stores what r gives as the object hash, hashing on the way:
// bytes that hash to anything else (or that pass max bytes) are
// ErrMismatch, and nothing of them is kept. It is how objects from
// elsewhere (another host's store, through the fleet) come in: their name
// is a claim, checked here.
func (s *Store) PutNamed(hash string, r io.Reader, max int64) (Object, error) {
	if !ValidHash(hash) {
		return Object{}, &os.PathError{Op: "put object", Path: hash, Err: unix.EINVAL}
	}
	tmp, f, err := s.temp()
	if err != nil {
		return Object{}, err
	}
	defer s.drop(tmp, f)
	h := sha256.New()
	n, err := copyBig(io.MultiWriter(f, h), io.LimitReader(r, max+1))
	if err != nil {
		return Object{}, err
	}
	if n > max || hex.EncodeToString(h.Sum(nil)) != hash {
		return Object{}, fmt.Errorf("object %s: %w", hash, ErrMismatch)
	}
	return s.name(tmp, f, Object{Hash: hash, Size: n}, nil)
}

// Hash is the hex SHA-256 and size of the regular file src (read from
// its start), without storing it; ErrChanged as Put.
func Hash(src *os.File) (string, int64, error) {
	var before, after unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &before); err != nil {
		return "", 0, err
	}
	h := sha256.New()
	n, err := hashAll(h, src)
	if err != nil {
		return "", 0, err
	}
	if err := unix.Fstat(int(src.Fd()), &after); err != nil {
		return "", 0, err
	}
	if !same(&before, &after) || n != after.Size {
		return "", 0, ErrChanged
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// PutBytes hashes and stores b (tests and small contents).
func (s *Store) PutBytes(b []byte) (Object, error) {
	tmp, f, err := s.temp()
	if err != nil {
		return Object{}, err
	}
	defer s.drop(tmp, f)
	if _, err := f.Write(b); err != nil {
		return Object{}, err
	}
	return s.put(f, false)
}

func hashAll(h hash.Hash, f *os.File) (int64, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	return copyBig(h, f)
}

// bufs are copyBig's buffers: 1 MiB, 32 times fewer system calls than
// io.Copy's 32 KiB on a big file.
var bufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// copyBig copies r to w through a 1 MiB buffer.
func copyBig(w io.Writer, r io.Reader) (int64, error) {
	b := bufs.Get().(*[]byte)
	defer bufs.Put(b)
	return io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{r}, *b)
}

// Sync makes every object put so far durable (syncfs of the store's
// filesystem, one call for any number of objects).
func (s *Store) Sync() error { return unix.Syncfs(s.fd) }

// Sweep removes every object whose hash keep does not hold, and any temp
// a crashed Put left; it returns the objects removed, their bytes, and
// what they took on disk (as Bytes counts it).
func (s *Store) Sweep(keep func(hash string) bool) (n int, bytes, disk int64, err error) {
	names, err := readNames(s.fd, ".")
	if err != nil {
		return 0, 0, 0, err
	}
	for _, d := range names {
		if strings.HasPrefix(d, tempPrefix) {
			unix.Unlinkat(s.fd, d, 0)
			continue
		}
		if len(d) != 2 {
			continue
		}
		objs, err := readNames(s.fd, d)
		if err != nil {
			return n, bytes, disk, err
		}
		for _, o := range objs {
			if keep(d + o) {
				continue
			}
			var st unix.Stat_t
			if unix.Fstatat(s.fd, d+"/"+o, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && unix.Unlinkat(s.fd, d+"/"+o, 0) == nil {
				n++
				bytes += st.Size
				disk += st.Blocks * 512
			}
		}
	}
	return n, bytes, disk, nil
}

// Bytes is what every object in the store takes on disk (its allocated
// blocks, as du counts: a sparse object weighs its data).
func (s *Store) Bytes() (int64, error) {
	var total int64
	names, err := readNames(s.fd, ".")
	if err != nil {
		return 0, err
	}
	for _, d := range names {
		if len(d) != 2 {
			continue
		}
		objs, _ := readNames(s.fd, d)
		for _, o := range objs {
			var st unix.Stat_t
			if unix.Fstatat(s.fd, d+"/"+o, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				total += st.Blocks * 512
			}
		}
	}
	return total, nil
}

func readNames(dirfd int, name string) ([]string, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(fd), name)
	defer d.Close()
	return d.Readdirnames(-1)
}
