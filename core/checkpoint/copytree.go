package checkpoint

import (
	"context"
	"fmt"
	"sync/atomic"

	"sandfs/core"
)

// A checkpoint's tree copied whole into a directory: what a fork is made
// of where no overlay can be mounted. It is the made tree's build
// (lowerBuild) with the store's bytes put in each file instead of a
// metacopy redirect, so it needs no privilege: a reflink (FICLONE) of the
// object where the filesystem shares extents, a sparse copy otherwise.

// CopyStats says what CopyTree made.
type CopyStats struct {
	Entries int   // entries in the tree, the root included
	Cloned  int   // files of content given by a reflink of the store's object
	Copied  int   // files of content copied byte by byte (holes kept)
	Bytes   int64 // the files' size
}

// CopyTree writes the tree of checkpoint id into dst, a descriptor of an
// empty directory: its directories, symlinks and files (their content
// from the store's objects), with the modes (set-id bits only as
// s.KeptMode allows), owners (where the daemon may: as root; otherwise
// they stay its own) and modification times the checkpoint recorded, the
// symlinks' and the root's (dst's) too; directories get theirs last,
// deepest first. Every name is made by an *at call beneath dst, and
// every directory is reached without following a symlink. It ends with
// one syncfs. It builds in place: on an error (ctx ended, a missing
// object) the caller removes what dst holds.
func CopyTree(ctx context.Context, s *core.Sandbox, id string, dst int) (CopyStats, error) {
	var out CopyStats
	h, err := storeOf(s)
	if err != nil {
		return out, err
	}
	files, err := h.treeFiles(id)
	if err != nil {
		return out, err
	}
	out.Entries = len(files)
	var cloned, copied, bytes atomic.Int64 // the build's workers count them at once
	b := &lowerBuild{s: s, content: func(fd int, e cpEntry) error {
		if err := ctx.Err(); err != nil { // a file may be large: stop between them
			return err
		}
		c, err := h.store.CopyTo(fd, e.Hash)
		if err != nil {
			return err
		}
		if c {
			cloned.Add(1)
		} else {
			copied.Add(1)
		}
		bytes.Add(e.Size)
		return nil
	}}
	err = b.buildAt(ctx, dst, files)
	out.Cloned, out.Copied, out.Bytes = int(cloned.Load()), int(copied.Load()), bytes.Load()
	if err != nil {
		return out, fmt.Errorf("copy of %s: %w", id, err)
	}
	return out, nil
}
