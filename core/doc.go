// Package core is the filesystem of sandfs: a sandbox root held open as a
// directory file descriptor, every client path resolved beneath it, and the
// operations every route family and the FUSE mirror share.
//
// # Path model
//
// A client names files by API paths. "/" is the sandbox root; a relative path
// is taken against the sandbox's working directory. [Sandbox.Clean] turns any
// client string into a canonical absolute API path lexically ("/a/../b" is
// "/b", ".." at the root stays at the root). A NUL byte or an empty path is
// EINVAL. API paths are the only paths that ever leave core: errors and
// results never carry the host path of the root.
//
// # Confinement
//
// Nothing in core joins the root's host path with a client path and hands the
// result to a path-based syscall: that is a race (a directory swapped for a
// symlink between the check and the use escapes the root). Every lookup starts
// at the root fd and goes through openat2(2) with
// RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS, so the kernel itself treats the root
// as "/" for "..", absolute symlinks and races. Where openat2 is missing
// (kernels before 5.6, seccomp filters) a user-space walk does the same thing
// one component at a time with O_NOFOLLOW, reading symlinks itself and keeping
// a stack of directory fds for "..", with the same 40-link ELOOP bound.
//
// Operations on a name (unlink, rename, mkdir, create) resolve the parent
// directory that way and then act on the last component with the *at
// syscalls, so the last component is never followed unless the operation
// says so.
//
// Names follow the syscalls: a function whose name ends in At takes a
// directory descriptor and one name in it, as the *at syscalls do
// (copyFileAt, RemoveAllAt, chownNewAt, safeat.ChmodAt); an API path is
// resolved beneath the root fd by Root.OpenBeneath. Package apipath takes
// an API path apart and puts one together; unlike path.Split and path.Join
// it never cleans.
//
// # Changing what an operation made
//
// Resolution confines a path, but the last syscall of an operation can
// still follow a symlink: whoever owns a directory in the root (a
// destination's parent, say) may swap a name the
// daemon just made, its .sandfs-*.part temp directory say, for a symlink to
// a host file between two calls. So a mode, owner, time or xattr change
// never goes through a name that can follow: it goes through the descriptor
// the operation holds (a directory it made is opened at once, O_NOFOLLOW,
// and refused unless the daemon owns it: MkdirOpen), or through a name with
// AT_SYMLINK_NOFOLLOW. The primitives live in sandfs/internal/safeat (its
// doc.go says why each cannot follow); .ci/syscheck, run by make layering,
// fails a direct call of fchmodat, fchownat, utimensat, the xattr calls, or
// os.Chmod and friends anywhere else, and an openat or fstatat of a name
// without O_NOFOLLOW or AT_SYMLINK_NOFOLLOW.
//
// # Setuid and setgid
//
// The daemon is root acting for callers who are not. Unless the Sandbox is
// opened with Options.AllowSetid (serve --allow-setid), no API operation
// makes a setuid or setgid non-directory: asked for (Chmod, a write's
// Mode) it is refused with [ErrSetid] (EPERM), inherited (a file replaced or
// written in place, PreserveAttrs) the bits are dropped, and tar entries
// never carry them. Copy drops them always, as GNU cp does. setid.go says
// why and what stays allowed.
//
// # Error handling
//
// Every error is an *fs.PathError whose Path is the API path and whose Err is
// a unix.Errno, so callers use errors.Is(err, fs.ErrNotExist) or errors.As
// with a unix.Errno and never match strings. Limits that are hit return
// EFBIG (too large) wrapped the same way.
//
// # Writes
//
// A write that replaces a file is atomic: the bytes stream into a temp file
// named ".sandfs-<random>.part" in the target's directory, which is fsynced
// and renamed over the target. A failed or abandoned write removes the temp
// file and leaves the old content whole. Nothing holds a whole file in memory.
//
// Bytes live only in regular files. A read, write, upload or copy of a
// FIFO, unix socket or device is EINVAL and leaves the node as it was: a
// replacing write does not swap it for a file, and no open blocks (opens
// are O_NONBLOCK, so a FIFO with no peer answers at once, and the ENXIO or
// ENODEV open(2) gives for a socket, a reader-less FIFO or a driverless
// device is reported as that EINVAL).
//
// Two writes differ on purpose. [Sandbox.WriteInPlace] (the AIO plain write)
// writes through the file itself: the destination keeps its inode, mode and
// owner and no temp file is made. [Sandbox.Copy] builds the copy under a
// temp name beside the destination and renames it in (RENAME_NOREPLACE
// unless overwriting), so a copy appears whole or not at all.
//
// # Conditional changes
//
// WriteFile, WriteInPlace, Upload, Copy (its destination), Move (its
// source) and RemoveWith take a [precond.Precondition]: the [ETag]s the target may
// have, or that it must be absent. It is checked on the target as it is
// right before the change (after the temp file is written and synced, just
// before the rename or unlink; by stat beneath the held directory fd, no
// symlink followed), under a per-path stripe lock every one of these calls
// takes for its final step, so two API writers holding one ETag never both
// win. A mismatch is a *[precond.Error] (errors.Is [precond.ErrFailed])
// with the current ETag; the temp file is removed and nothing changes. The
// one window left is a writer outside these calls (a process in the
// sandbox, a FUSE handle) between the stat and the rename, two syscalls
// with no I/O between: the kernel has no rename conditional on a file's
// state, and no lock binds writers that do not take it, so it is as small
// as it can be without one (precondition.go, package precond).
//
// # Ownership
//
// [WithOwner] stamps an [Owner] on the context; every operation that creates
// a file or directory under it (WriteFile, WriteInPlace, Mkdir with its
// parents, Copy) chowns what it creates to that account before the call
// returns, and fails, removing what it made, when it cannot. Existing files
// keep their owner.
//
// # Walks
//
// [Sandbox.Walk] is the one bounded tree walk of the listing and name-search
// routes: depth first, names in byte order, each directory opened by fd from
// its parent with O_NOFOLLOW, symlinks reported (with whether they point at
// a directory) and never descended; the caller stops it with fs.SkipAll at
// its limit. Path patterns live in package pathmatch, with the names
// skipped by default: pathmatch.Glob matches slash-separated relative
// paths with "**", grep's globs match the base name or the path.
// Walk, List and grep leave out a name that is not valid UTF-8 (and do not
// descend such a directory), counting it in the [SkippedNames] of the
// context: no boundary could report it without aliasing another file
// (names.go). The path functions themselves stay byte-exact for the
// mirror.
//
// # The journal's sources, and every change told once
//
// Every change is one event in the sandbox's journal (package journal):
// core's operations tell their own (origin api, or fuse for the mirror's
// calls; Tell, actor.go), and the kernel watch reports what else changed
// the root (origin external). Package watch (core/watch) keeps them one
// event a change and in order: its ledger drops the inotify echoes of
// what core claimed, its notifier reads inotify on every directory of
// the root, its outbox orders the two, and its coverage says what the
// mirror may let the kernel cache. Its doc.go has the design, and the
// vocabulary (tell, emit, observe, report, append); core opens one Watch
// per sandbox and gives it what it needs (watch_host.go).
//
// # The sandbox's identity
//
// A sandbox that keeps state has an identity (its state directory's
// identity file) and marks its root directory with it, the trusted.*
// xattr MarkXattr, which only CAP_SYS_ADMIN reads or writes: a process in
// the sandbox cannot forge it, and the API and the mirror hide it and
// refuse to change it. The comparison at start (manifest.go) runs on a
// root that carries the manifest's identity even where its device and
// inode are another directory's; MarkRoot and RootMark are what a take-up
// elsewhere uses (identity.go).
//
// # Client patterns
//
// Every glob a client sends is checked by pathmatch.CheckGlob
// (core/pathmatch/check.go), at most pathmatch.MaxGlobLen bytes; regular
// expressions are package grep's, under its bounds. A refusal is a
// *pathmatch.PatternError saying which bound and by how much.
//
// # Abandoned work
//
// Walk looks at its context at every entry (package grep at every entry,
// read and 64 KiB window), Copy at every entry and every
// 16 MiB of a file; each returns the context's error once it ends, so work
// whose client hung up stops within a window rather than at the end.
//
// # Changes since a point
//
// Package changes folds the journal into the net change set of the tree
// since a seq, a time or a checkpoint; its doc.go has the rules.
//
// # Quotas
//
// A sandbox may be bounded in bytes and entries; every write path reserves
// its growth against the bound before it changes the tree, and usage is
// kept by the operations and corrected by scans: package quota, whose
// doc.go has the design; core walks the tree for it (usage.go).
//
// # Checkpoints
//
// A sandbox with a state directory records checkpoints of its tree there
// (manifests as deltas on a parent chain, contents in a content store) and
// restores them, atomically per file and never through a symlink: package
// checkpoint, whose doc.go has the design. core keeps only what they
// share with every operation (strict resolution, resolve_strict.go; the
// store's place among the sandbox's attachments, attach.go).
package core
