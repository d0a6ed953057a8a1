package core

import (
	"context"
	"io"
	"io/fs"

	"golang.org/x/sys/unix"
)

// WriteOptions shape a WriteFile.
type WriteOptions struct {
	// MkdirParents creates missing parent directories (mode 0755).
	MkdirParents bool
	// Mode of a new file (default 0644); an existing file keeps its mode
	// unless Mode is set.
	Mode fs.FileMode
}

// WriteFile streams r into the file at p and replaces it atomically (temp
// file beside it, fsync, rename). A final symlink is followed within the
// root, so the file it points at is replaced. Writing over a directory is
// EISDIR. It returns the bytes written. On any error (including r failing
// half-way) the old content stays whole and no temp file is left.
func (s *Sandbox) WriteFile(ctx context.Context, p string, r io.Reader, o WriteOptions) (int64, error) {
	return 0, unix.ENOSYS
}

// Mkdir creates the directory p. With parents it creates missing ancestors
// and an existing directory is fine (mkdir -p); without, an existing path is
// EEXIST. An existing non-directory is EEXIST either way.
func (s *Sandbox) Mkdir(ctx context.Context, p string, parents bool, mode fs.FileMode) error {
	return unix.ENOSYS
}

// MoveOptions shape a Move.
type MoveOptions struct {
	Overwrite    bool // replace an existing destination (a directory recursively)
	MkdirParents bool // create the destination's missing parents
}

// Move renames from to to. Without Overwrite an existing destination is
// EEXIST and nothing changes (renameat2 RENAME_NOREPLACE).
func (s *Sandbox) Move(ctx context.Context, from, to string, o MoveOptions) error {
	return unix.ENOSYS
}

// Remove deletes p (never following a final symlink: the link goes). A
// non-empty directory needs recursive, else ENOTEMPTY. The root is EINVAL.
func (s *Sandbox) Remove(ctx context.Context, p string, recursive bool) error {
	return unix.ENOSYS
}

// TarMode says how an archive meets an existing destination.
type TarMode int

const (
	// TarMerge writes the archive's entries into the destination, replacing
	// files of the same name and keeping the rest.
	TarMerge TarMode = iota
	// TarRename builds the tree beside the destination and renames it in;
	// the destination must not exist.
	TarRename
)

// TarResult reports an extraction.
type TarResult struct {
	Paths   []string // API paths of the extracted entries, in archive order
	Entries int      // entries extracted (len(Paths) unless capped by MaxPaths)
	Bytes   int64    // file bytes extracted
}

// TarOptions shape an ExtractTar.
type TarOptions struct {
	Mode     TarMode
	MaxPaths int // cap on len(TarResult.Paths); 0 = no cap
}

// TarEntryError says why an archive was refused; it unwraps to EINVAL (or
// EFBIG for a limit).
type TarEntryError struct {
	Entry  string
	Reason string
	Errno  unix.Errno
}

func (e *TarEntryError) Error() string { return "tar entry " + quote(e.Entry) + ": " + e.Reason }
func (e *TarEntryError) Unwrap() error { return e.Errno }

// ExtractTar extracts the uncompressed tar stream r into the directory dest
// (created with its parents if missing). A hostile archive is refused whole
// and nothing is written: see the package doc.
func (s *Sandbox) ExtractTar(ctx context.Context, dest string, r io.Reader, o TarOptions) (TarResult, error) {
	return TarResult{}, unix.ENOSYS
}
