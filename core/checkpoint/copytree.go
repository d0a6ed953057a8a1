package checkpoint

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

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
	h, err := storeOf(s)
	if err != nil {
		return CopyStats{}, err
	}
	return h.copyTree(ctx, s, id, dst, nil)
}

// WriteRoot is CopyTree into dst, the sandbox s's own root (empty), of
// an imported checkpoint id (a tree from the fleet): the files it makes
// are then id's, so id's record takes each one's stat identity (device,
// inode, change time), which an import cannot know. A checkpoint that
// walks the root after (a restore's; one after a restart, or taking the
// sandbox up on this root again) then reads none of them again, nor does
// any checkpoint built on it since.
func WriteRoot(ctx context.Context, s *core.Sandbox, id string, dst int) (CopyStats, error) {
	h, err := storeOf(s)
	if err != nil {
		return CopyStats{}, err
	}
	h.mu.Lock()
	_, err = h.importedHeader(id)
	h.mu.Unlock()
	if err != nil {
		return CopyStats{}, err
	}
	ids := newMadeIDs()
	out, err := h.copyTree(ctx, s, id, dst, ids.made)
	if err != nil {
		return out, err
	}
	return out, h.identify(id, ids.m)
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

// copyTree is CopyTree; made, when set, is told each file made.
func (h *cpStore) copyTree(ctx context.Context, s *core.Sandbox, id string, dst int, made func(string, cpEntry, int)) (CopyStats, error) {
	var out CopyStats
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
	}, made: made}
	err = b.buildAt(ctx, dst, files)
	out.Cloned, out.Copied, out.Bytes = int(cloned.Load()), int(copied.Load()), bytes.Load()
	if err != nil {
		return out, fmt.Errorf("copy of %s: %w", id, err)
	}
	return out, nil
}
