package checkpoint

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint/cas"
)

// A checkpoint made elsewhere (another host's, read from the fleet:
// natsout/replicate's Fetch) comes into the store in two steps: its
// objects, each checked against its name as it is written (PutObject),
// then its record (Import), which refuses a tree whose objects are not
// all in the store. The record is written as Create writes one (temp,
// fsync, rename, after one syncfs of the objects), as a base: it has no
// parent here. Its entries carry no stat identity, so a walk of the root
// reads each file once again, unless the tree was written here from it
// (Fill: the record then takes the files' identities); and it is
// the next checkpoint's base only when the store holds none made here
// (store.go's newest).
//
// Everything in an imported tree is a claim of the sender, checked
// before anything is written (CheckEntries): every path clean and
// absolute beneath the root ("/" itself a directory), held by a
// directory of the tree, named once; every kind known; permission bits
// within 07777; a file's hash of SHA-256's hex shape and a size not
// negative; a symlink's target not empty. Between the two steps the
// objects are named by no record: only a failed Create or a Delete of
// this sandbox sweeps the store meanwhile, so the caller imports into a
// sandbox nothing else uses yet.

// HasObject reports whether the sandbox's store holds the object hash.
func HasObject(s *core.Sandbox, hash string) (bool, error) {
	h, err := storeOf(s)
	if err != nil {
		return false, err
	}
	return h.store.Has(hash), nil
}

// MissingObjects answers the hashes of hashes the sandbox's store lacks,
// in their order.
func MissingObjects(s *core.Sandbox, hashes []string) ([]string, error) {
	h, err := storeOf(s)
	if err != nil {
		return nil, err
	}
	return h.store.Missing(hashes)
}

// PutObject stores what r gives as the object hash, at most max bytes;
// bytes that do not hash to hash are refused (cas.ErrMismatch) and
// nothing of them kept.
func PutObject(s *core.Sandbox, hash string, r io.Reader, max int64) (cas.Object, error) {
	h, err := storeOf(s)
	if err != nil {
		return cas.Object{}, err
	}
	if err := h.dirty(); err != nil {
		return cas.Object{}, err
	}
	o, err := h.store.PutNamed(hash, r, max)
	if err == nil && o.Added {
		h.putLoose(hash) // named once imported
		h.mu.Lock()
		if h.size >= 0 {
			h.size += o.Disk
		}
		h.mu.Unlock()
	}
	return o, err
}

// CheckRoom refuses (StoreFullError) need more bytes in the store when
// they would take it past its bound: what a checkpoint from elsewhere
// brings is bounded as a checkpoint made here is.
func CheckRoom(s *core.Sandbox, need int64) error {
	h, err := storeOf(s)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if stored := h.stored(); h.maxBytes > 0 && stored+need > h.maxBytes {
		return &StoreFullError{Limit: h.maxBytes, Stored: stored, Need: need}
	}
	return nil
}

// CleanPath reports whether p is an entry's path of a tree from elsewhere:
// absolute, clean, no "." or ".." component, no NUL.
func CleanPath(p string) bool {
	if p == "" || p[0] != '/' || path.Clean(p) != p || strings.ContainsRune(p, 0) {
		return false
	}
	for _, c := range strings.Split(p[1:], "/") {
		if c == ".." || c == "." {
			return false
		}
	}
	return true
}

// CheckEntries says what is wrong with a tree from elsewhere (nil: nothing).
func CheckEntries(entries []Entry) error {
	kinds := make(map[string]string, len(entries))
	for _, e := range entries {
		if err := checkEntry(e); err != nil {
			return err
		}
		if _, dup := kinds[e.Path]; dup {
			return fmt.Errorf("entry %q: named twice", e.Path)
		}
		kinds[e.Path] = e.Type
	}
	if kinds["/"] != "dir" {
		return fmt.Errorf("the tree has no root directory")
	}
	for p := range kinds {
		if p != "/" && kinds[path.Dir(p)] != "dir" {
			return fmt.Errorf("entry %q: its directory is not a directory of the tree", p)
		}
	}
	return nil
}

// checkEntry says what is wrong with one entry from elsewhere, alone.
func checkEntry(e Entry) error {
	p := e.Path
	if !CleanPath(p) {
		return fmt.Errorf("entry %q: not a clean path beneath the root", p)
	}
	if e.Mode&^(fs.ModeType|fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
		return fmt.Errorf("entry %q: mode %v", p, e.Mode)
	}
	switch e.Type {
	case "file":
		if !cas.ValidHash(e.Hash) || e.Size < 0 {
			return fmt.Errorf("entry %q: a file needs a hash of 64 lowercase hex digits and a size", p)
		}
	case "dir":
	case "symlink":
		if e.Target == "" || strings.ContainsRune(e.Target, 0) {
			return fmt.Errorf("entry %q: a symlink's target is empty or holds a NUL", p)
		}
	default:
		return fmt.Errorf("entry %q: unknown type %q", p, e.Type)
	}
	return nil
}

// Import records cp (its id, name, reason, seq and time kept) with the
// tree entries, whose objects must all be in the store (PutObject). An
// id the store has is fs.ErrExist; a tree CheckEntries refuses, or whose
// id is not of a checkpoint id's shape, fs.ErrInvalid.
func Import(s *core.Sandbox, cp Checkpoint, entries []Entry) (Checkpoint, error) {
	return importKnown(s, cp, entries, nil)
}

// importKnown is Import with the stat identity of the files whose
// identity ids gives (only Dev, Ino and Ctime of its entries are read):
// a tree written here (Fill's), so a walk of the root reads them again
// only when they change.
func importKnown(s *core.Sandbox, cp Checkpoint, entries []Entry, ids map[string]cpEntry) (Checkpoint, error) {
	if !validID(cp.ID) {
		return Checkpoint{}, fmt.Errorf("checkpoint id %q: %w", cp.ID, fs.ErrInvalid)
	}
	if err := CheckEntries(entries); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint %s: %v: %w", cp.ID, err, fs.ErrInvalid)
	}
	files := make(map[string]cpEntry, len(entries))
	for _, e := range entries {
		c := entryFrom(e)
		if i, ok := ids[e.Path]; ok && c.Kind == kindFile {
			c.Dev, c.Ino, c.Ctime = i.Dev, i.Ino, i.Ctime
		}
		files[e.Path] = c
	}
	h, err := importing(s, cp.ID)
	if err != nil {
		return Checkpoint{}, err
	}
	defer h.mu.Unlock()
	if err := h.lacking(files); err != nil {
		return Checkpoint{}, err
	}
	return h.imported(cp, files, nil, cpBody{})
}

// importing is the store of s, locked (unlocked on an error), when it has
// no checkpoint id (fs.ErrExist).
func importing(s *core.Sandbox, id string) (*cpStore, error) {
	h, err := storeOf(s)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	hdrs, err := h.headers()
	if err == nil {
		if _, taken := hdrs[id]; taken {
			err = fmt.Errorf("checkpoint %s: %w", id, fs.ErrExist)
		}
	}
	if err != nil {
		h.mu.Unlock()
		return nil, err
	}
	return h, nil
}

// lacking is ENOENT naming a file of files whose object the store lacks
// (nil: none). h.mu is held: no sweep meanwhile.
func (h *cpStore) lacking(files map[string]cpEntry) error {
	var hashes []string
	for _, e := range files {
		if e.Kind == kindFile {
			hashes = append(hashes, e.Hash)
		}
	}
	missing, err := h.store.Missing(hashes)
	if err != nil || len(missing) == 0 {
		return err
	}
	for p, e := range files {
		if e.Kind == kindFile && e.Hash == missing[0] {
			return core.PathErr("import", p, unix.ENOENT)
		}
	}
	return nil
}

// imported records cp, made elsewhere, whose tree is files: as a delta
// of parent (body) when there is one and the chain may grow, else whole;
// the tree is cached, for a restore to it reads it next. h.mu is held.
func (h *cpStore) imported(cp Checkpoint, files map[string]cpEntry, parent *cpHeader, body cpBody) (Checkpoint, error) {
	out := cp
	out.Files, out.Dirs, out.Symlinks, out.Bytes = 0, 0, 0, 0
	countTree(files, &out)
	out.Created = cp.Created.UTC()
	hd := cpHeader{Checkpoint: out, Imported: true}
	if parent != nil && parent.Depth+1 < compactEvery {
		hd.Parent, hd.Depth, hd.Exact = parent.ID, parent.Depth+1, true
	} else {
		body = cpBody{Set: files} // nothing compacts an imported chain: it ends here, whole
	}
	if err := h.store.Sync(); err != nil {
		return Checkpoint{}, err
	}
	if err := h.write(hd, body); err != nil {
		return Checkpoint{}, err
	}
	h.named(body.Set, false, false)
	h.cache(&cpTree{hdr: hd, files: files})
	return out, nil
}

// entryFrom is the manifest's record of e, a checked entry from
// elsewhere: no stat identity.
func entryFrom(e Entry) cpEntry {
	c := cpEntry{Perm: uint32(e.Mode.Perm()), Uid: e.Uid, Gid: e.Gid, Mtime: e.Mtime.UnixNano(), Size: e.Size}
	for _, b := range []struct {
		m   fs.FileMode
		bit uint32
	}{{fs.ModeSetuid, unix.S_ISUID}, {fs.ModeSetgid, unix.S_ISGID}, {fs.ModeSticky, unix.S_ISVTX}} {
		if e.Mode&b.m != 0 {
			c.Perm |= b.bit
		}
	}
	switch e.Type {
	case "file":
		c.Kind, c.Hash = kindFile, e.Hash
	case "dir":
		c.Kind, c.Size = kindDir, 0
	case "symlink":
		c.Kind, c.Target = kindLink, e.Target
	}
	return c
}
