// Package checkpoint records checkpoints of a sandbox's tree in its state
// directory and restores them (api.md §5a): [Create], [List], [ByID],
// [Delete], [Lookup], [OpenFile], [Restore], and the schedule
// ([StartSchedule]). A checkpoint made elsewhere comes in through
// [PutObject] (each object checked against its name as it is written),
// [CheckEntries] and [Import] (import.go), or, as the changes to a
// checkpoint the store holds, [CheckChanges] and [ImportDelta]
// (import_delta.go). A replicator (natsout/replicate) reads it through
// [OnCreate] (told of each checkpoint written, under the store's lock, so
// it only queues), [Entries], [Delta] and [OpenObject] (replica.go).
//
// # What it may import
//
// sandfs/core (the Sandbox and the surface core exports for its
// subpackages, core/subpackages.go: strict resolution beneath the root,
// the descriptor primitives, the journal's Tell and CatchUp, the quota's
// state, and Attachment, which keeps the store open with the
// sandbox and closes it with Sandbox.Close), core/journal, its own
// content store core/checkpoint/cas, internal/safeat, internal/overlay
// (the xattrs of a made tree) and the standard library. core does not
// import checkpoint; the checkpoint routes (rest), the daemon's schedule
// and package changes (a checkpoint as a start point) call it.
//
// # Where they live
//
// A sandbox with a state directory (Options.StateDir) keeps there
// checkpoints/, one manifest per checkpoint named by its id, and objects/,
// the content-addressed store (package cas: objects/ab/cdef… by SHA-256,
// deduplicated, FICLONE where the filesystem can, a copy hashed on the way
// otherwise). Both are reached by descriptors opened beneath the state
// directory's fd (cpStore, store.go); an id is checked for its
// shape before it names a file.
//
// # Manifests: deltas on a parent chain
//
// A manifest is two gob values: a header (the Checkpoint, its parent, its
// depth) and a body. A base's body holds every entry; a delta's holds what
// changed since its parent (entries set, paths deleted). Each checkpoint
// is a delta of the newest one of the same SkipExcluded (the newest made
// here, when the store has one: an imported tree is another journal's,
// and not what the root holds until a restore wrote it), and the one at
// depth compactEvery (32) is rewritten whole in the background once it has
// answered (compact), so a checkpoint of 100 changes in a 100,000-entry
// tree writes 100 entries, not 100,000, and reading any tree back costs
// one base and about 32 deltas. The newest tree is kept
// in memory (cpStore.last) for the next checkpoint to start from; after a
// restart it is read back once. Deleting a checkpoint folds its delta into
// each child (or, for a base, writes each child whole) before its file
// goes, then sweeps the store: every hash some manifest names is marked,
// every other object removed (mark and sweep, no reference counts to keep
// right across crashes). Contents are made durable by one syncfs of the
// store before the manifest naming them is written and fsynced.
//
// # What a checkpoint looks at
//
// A checkpoint records the sandbox's identity (Checkpoint.Identity, core's
// Sandbox.Identity): a root rebuilt from it on another host is marked with
// it (core.MarkRoot) to be the sandbox's root again. A checkpoint holds no
// xattrs and a restore sets no xattr, so a restore leaves the root's mark.
//
// An entry records type, permission bits, owner, mtime, symlink target,
// content hash, and the stat identity (device, inode, size, mtime, ctime)
// a later checkpoint compares: a file whose identity is unchanged keeps
// its hash unread. The first checkpoint walks the tree. Later ones start
// from the newest tree and look again only at what the journal's events
// after its Seq name (each path and its parent directory; a directory made
// or moved, or the subtree of a loss mark, is walked), when the journal
// is complete: the kernel watch runs, its first walk and the comparison at
// start are done, it is not degraded, and Scan lost nothing. Otherwise the
// tree is walked, still reading only what changed. Before it takes Seq a
// checkpoint drains the kernel's queue into the journal (catchUp), so an
// outside change made just before is named. A file is read through one
// descriptor with fstat before and after; a change in between reads it
// again, and after 4 tries the checkpoint fails (EAGAIN): a torn file is
// never recorded.
//
// # Restore
//
// Restore checks every path first (RestorePathError: nothing is done),
// takes a checkpoint of the tree as it is (before-restore, the undo; a dry
// run only looks, hashing without storing), and plans by comparing it with
// the target's tree beneath the scopes: removals (deepest first), missing
// directories (made 0700), files and symlinks, then directory attributes
// (deepest first, since what was made in them moved their mtime). Every
// name is reached by core's StrictParent (openat2 RESOLVE_NO_SYMLINKS, or a walk
// with O_NOFOLLOW): no symlink is followed, even inside the root. A file
// or symlink is staged as a temp beside its target with the checkpoint's
// mode (set-id bits only where allowed), owner (where the daemon may) and
// mtime; each batch of 256 is made durable by one syncfs, then each temp
// is renamed over its target only if the target's stat identity is still
// what the plan saw; otherwise it is dropped and the path skipped as
// "changed during the restore". The restore's changes carry the actor
// restore:<checkpoint> (origin api) and one claim covers them all. It is
// not bounded by the quota; the usage counts what it changed, from the
// two trees, and a scan is asked for (restore_usage.go).
//
// By actor, the journal after the checkpoint's Seq says which paths the
// actor changed (its last event on each) and who else changed each after
// that (restore_actor.go); a path beneath a directory the actor changed
// is the actor's too. Paths changed by another after the actor are skipped
// and reported, and a removal of a directory that holds one is skipped.
//
// # Merges
//
// [Merge] brings a fork's work back into the sandbox it was made from,
// path by path, three ways: base is the checkpoint the fork was made
// from; ours the sandbox now, found by the checkpoint the merge takes
// first (before-merge, the undo), which looks only at what its journal
// names since its newest checkpoint; theirs the fork now, found the same
// way from the fork's journal since it was made (a journal that is not
// complete makes it walk the fork, reading every file), what it wrote
// read into this store. Only paths the fork changed are decided: the fork
// left it alike (kind, owner, permission bits, content or target; times
// are not compared), or both made it alike, changes nothing; ours alike
// the base takes theirs, unless its directory is gone here or it removes
// a directory in which ours changed something; anything else is a
// conflict, which the strategy leaves, gives ours, or gives theirs (with
// the fork's directories above it). fail, the default, changes nothing
// when there is a conflict and deletes the undo. The outcome is a target
// tree that a restore's plan and restorer make, so every write is staged
// beside its target, made durable, and renamed only if the target's stat
// identity is still what the checkpoint saw: a writer racing the merge is
// skipped and reported, never overwritten. Its changes carry the actor
// merge:<fork>. Conflicts tell each side (with the ETags of ours and
// theirs) and, for two text files, the diff from ours to theirs.
//
// # Made trees
//
// [Materialize] makes a checkpoint's tree whole on disk, once, as the
// state directory's lower/<id>: what a fork's overlay reads beneath its
// own writes. Its directories and symlinks are themselves; a file is the
// store's object itself (a hard link) where the object has the file's
// mode, owner and mtime (a new object takes those of the file it was
// stored from, lowerobject.go), else it holds only its size (sparse),
// mode, owner and mtime, and the xattrs of an overlay metacopy file whose
// redirect names the store's object, so an overlay with objects/ as its
// data-only layer (internal/overlay) reads the checkpoint's bytes from
// the store: nothing is copied, nothing kept twice, and the build costs
// links and metadata alone. A file or symlink whose
// record equals that of the same path in the tree of the newest
// checkpoint already made is a hard link to that tree's inode (one call
// instead of several; a made tree is never written, so the inode is what
// the record says), except a setuid or setgid file, whose bits depend on
// the options of the day it was made: a checkpoint taken after a few
// changes (a fork of a live sandbox) costs about a `cp -al` of the tree
// (lowerlink.go). Directories get their
// attributes deepest first, after what they hold. It is built as
// lower/.tmp-<id>-<random> and renamed into place after one syncfs, so a
// crash leaves nothing or the whole tree; the next build removes the
// leftovers. Builds of a sandbox run one at a time (cpStore.mat), outside
// the store's lock (the tree's entries are copied first). Nothing writes
// a made tree afterwards; deleting the checkpoint removes it. It needs
// CAP_SYS_ADMIN (trusted.* xattrs), as the overlay does.
//
// # Copies
//
// [CopyTree] writes a checkpoint's tree into an empty directory the
// caller gives (a fork where no overlay can be mounted): the same build
// as a made tree's, but each file gets the store's bytes, by a reflink
// (FICLONE) where the filesystem can, else a copy (holes kept), as a
// restore stages its files (cas.Store.CopyTo, the one home of both). It needs no privilege: owners are the checkpoint's where the
// daemon may set them (as root), its own otherwise. It builds in place,
// not under a temporary name: on an error the caller removes what the
// directory holds. It answers how many files were cloned and how many
// copied.
package checkpoint
