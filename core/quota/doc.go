// Package quota keeps a sandbox's usage against its bound: the counts,
// the reservations of the operations under way, the sizes of the inodes
// the mirror has open for writing, and the scans that correct the counts.
//
// Its rule: it counts and decides; it never opens a name. Core walks and
// opens the tree and hands the quota what it needs (a Tree: a dup of the
// root, a walk that counts under a descriptor); the quota imports nothing
// of sandfs.
//
// # Quotas
//
// A sandbox may be bounded in bytes and in entries. Bytes are the sum of
// the apparent sizes (st_size) of its regular files, each inode once
// however many names it has in the tree (as du counts hard links: a link
// is an entry and no bytes); directories, symlinks and special files
// weigh no bytes. Entries are every name in the tree but the root, a hard
// link's second name included. The bound holds alike for every way of
// writing through the daemon: REST writes, uploads, tar extraction, copies,
// mkdir, and the FUSE mirror's writes, truncates, fallocates and creates.
// A change past it fails with a *Error (errors.Is ErrQuota and
// unix.ENOSPC, which the mirror tells the kernel and REST answers 507), and
// the old content is kept: a replacing write's temp file is dropped.
//
// Usage is kept by the operations, not by walking the tree per write:
// each one opens an Op (State.Begin) before its first change, reserves
// the growth it is about to make (atomically against the bound, so two
// writers never both pass a check that only one fits: a write reserves as
// its body arrives, beyond the bytes of the file it replaces), and ends it
// with the change it made, which releases what it reserved and did not
// use. Core's own temp files (a write's, an upload's spool, a copy's or
// tar's staging) are not entries; their bytes are reserved as growth.
// What the journal hears from outside (inotify, origin external) changes
// usage by an amount nobody knows, so it only marks the counts for a
// sooner rescan (OutsideChange). No per-file state is kept, but for the
// inodes the mirror has open for writing (inode.go).
//
// # The scan
//
// The counts the operations keep are exact for what goes through the
// daemon; a scan (a walk of the whole tree by fd, never following a
// symlink: the Tree's) corrects them for the rest. It runs after the
// start-up sweep, every Intervals.Every after that, and Intervals.Soon
// after an outside change whose size nobody knows (what inotify tells,
// origin external; a restore). A walk is trusted only if no Op began or
// ended while it ran (gen and inflight, read before and after it); on a
// busy sandbox it tries again, a few times, and then, if an outside change
// waits to be counted, takes the walk as it is and keeps the sooner
// rescan. The counts are set by adding the walk's difference from what
// they were when it ended, so an Op that begins after that check is kept.
// The first scan counts as after an outside change (nothing is counted
// yet), and until it ends (Ready) a change to a bounded sandbox waits
// (Begin). A sooner scan waits at least scanBackoff times the last walk.
//
// Without a byte quota the mirror may write in passthrough, counted at the
// handle's flush; a walk while such a handle is open is not trusted either
// (passthroughWriters), since the flush would count again what it saw. A
// scan taken anyway (an outside change waiting, a busy tree) may then be
// off by those writes until the next one.
//
// # Forks
//
// A fork's root is an overlay (daemon, fork.go) whose lower, its parent's
// checkpoint, is shared by every fork of it and counts once, against the
// state's bound: the fork's usage is what it wrote, its upper. So its scan
// walks the upper (the Tree core gives it, with the overlay's bookkeeping
// weighed as core's usage_upper.go says: a whiteout nothing, a metacopy
// file an entry of no bytes), and a fork just made uses nothing, however
// large the tree it reads.
//
// The Ops see the merged tree, not the upper. What they add is exact for
// what a fork adds (a new file, a file of its own grown), and what a fork
// can grow by through the daemon is checked against the bound before it
// is made. What they free core asks the upper (its usage_upper.go): a
// removal or a replace frees what the upper holds at that name, so a
// lower file removed frees nothing (a whiteout is left) and a file of the
// fork's own its size. What they cannot see is what the kernel does
// beneath: a lower file changed is copied up whole (a 5 MiB file with one
// byte more grows the upper by 5 MiB and a byte, where the Op counts the
// byte), and the directories above a changed name are copied up too.
// Knowing those per Op would mean asking the upper around every change of
// every route and of the mirror, before and after; instead the State is
// Approx: each Op's end, and each change that opens no Op but may copy up
// (an attribute change, an open for writing: MayCopyUp), marks the counts
// as after an outside change, so a scan of the upper settles them
// Intervals.Soon later (coalesced: one scan for a burst of writes). The
// one exception is an Op its caller knows copied nothing up (EndExact): a
// file written by replace in a directory the upper already holds adds the
// new file and frees what the upper held at the name, no more, so a
// stream of such writes, an agent's usual, never rescans the upper.
//
// Between the change and that scan usage is the Ops' estimate, low by
// the copy-ups: a file copied up since the last scan frees as after an
// outside change (FreedBy: nothing while it is newer than the scan), so
// removing it does not take off bytes the counts never had. A copy-up
// itself is never refused (the kernel makes it before any Op could ask):
// a fork may pass its bound by the lower files it changes, once, and the
// scan that follows counts them, so its next growth is refused.
package quota
