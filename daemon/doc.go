// Package daemon owns the lifecycle of every sandbox of one daemon: the
// fixed ones (--root "default", --sandbox NAME=DIR) and those of the live
// registry (--sandboxes DIR), which appear and disappear while the daemon
// runs. cmd/sandfs's serve only wires flags to it.
//
// # One sandbox's life
//
// With --placement, Host.Start first takes the sandbox's lease in the
// fleet's bucket, and is refused when another host holds it; Host.Stop
// releases it last (placement.go says what a broker away does). Then
// Host.Start opens the root (core.Open by path for a fixed sandbox,
// core.OpenAt beneath DIR's fd, never following a symlink, for one of
// DIR), with the daemon's options and the sandbox's state directory
// STATE/sandboxes/NAME (statedir.Sandbox); starts its kernel watch and
// checkpoint schedule under a context of its own; adds it to the NATS
// publisher (--events) and the event log (--log-events); adds it to the
// rest.Registry with its token; and, with --mount-all MNTDIR, mounts it at
// MNTDIR/NAME once its watch walked the tree (a mount that fails is
// logged: the sandbox is served without it). Host.Stop is the reverse:
// Registry.Remove (its streams end, its requests in flight finish), its
// mirrors unmounted (a --mount-all mountpoint removed), its publisher and
// event log stopped, its watch ended, the sandbox closed.
//
// # State kept per sandbox
//
// STATE/sandboxes/NAME (0700) holds, beside the durable journal:
//   - token: the sandbox's own token, 256 random bits in hex, mode 0600,
//     made at the first start and kept (none under --no-auth). internal/statedir/token.go is
//     also the daemon's STATE/token's code: one writer (temp file, fsync,
//     link, so a reader never sees half a token), one reader (O_NOFOLLOW,
//     a regular file of this user, not open to others).
//   - identity: the sandbox's identity, 256 random bits in hex, written
//     like the token by core at the first start; the root is marked with
//     it (core.MarkRoot). A root carrying the identity its state keeps is
//     that state's own, wherever its device and inode are (rootkey.go).
//   - quota.json: {"bytes":N,"entries":N}, mode 0600, written when a quota
//     is set (POST with a quota, PATCH); at start a sandbox takes it, else
//     --default-quota for a sandbox of DIR, else none.
//
// The state directory is needed even under --no-history when a sandbox
// has a token or DIR is served; it is checked as the daemon's token's is
// (owned, 0700, outside every root and outside DIR).
//
// # The live registry (dir.go, manager.go)
//
// Dir holds DIR by an O_PATH|O_DIRECTORY|O_NOFOLLOW fd and watches that
// directory (fsnotify on /proc/self/fd/N, so the watch is of the held
// directory whatever DIR's path names later). Every event names one entry;
// reconcile makes what is served under the name match what DIR holds: a
// directory not served is started, a served one gone, renamed away or
// replaced by another directory (its dev and inode differ) is stopped
// (its state archived). A directory that appears, at start or later, and
// carries the mark of the state kept under its name keeps that state (a
// sandbox moved here while no daemon served it); one without the mark is
// a new sandbox (incarnation.go). A
// symlink or a file is not a sandbox; a name that is not a DNS label
// (core.CheckSandboxName) or that a fixed sandbox has is skipped with one
// log line. Rescan reconciles every name at start and after an overflow.
// One mutex makes one change at a time, so the event that follows a
// Create finds the sandbox served and does not double it.
//
// Dir is the rest.Manager: Create makes DIR/NAME (mkdirat on DIR's fd,
// 0755) and serves it before it answers; Remove (sandboxes of DIR only: a
// fixed one is fs.ErrPermission) stops serving it, empties its tree
// through the sandbox (no symlink followed), closes it, removes DIR/NAME
// (unlinkat on DIR's fd) and its state directory. A directory removed from
// DIR by hand stops being served, and its state directory is kept (made
// again, it has its token back). SetQuota sets the bound and keeps it.
//
// # Taking a sandbox up from the fleet (adopt.go)
//
// Dir is also a rest.Adopter: Adopt makes DIR/NAME from the fleet's
// replicated checkpoint of it (--replicate), under DIR's lock: the
// placement's claim first when Config.Claim is set, then a new state
// directory (a state left under the name archived) with the fleet's token
// and quota and a journal begun above the checkpoint's seq and every lost
// change's (history.Begin); the checkpoint fetched into a sandbox opened
// on the empty root but not served, its tree written there by
// checkpoint.CopyTree (unjournaled), then the root served as any of DIR.
// The answer lists the changes the fleet's stream heard after the
// checkpoint (natsout.After). A failure removes the root and the state.
//
// # Moving a sandbox to another host (move.go, movein.go)
//
// Dir is also a rest.Mover: Move, on the host serving a sandbox of DIR,
// asks the new host whether it takes it in, refuses the sandbox's writes
// (rest.Registry.GateWrites), unmounts its mirrors, takes a last
// checkpoint and waits until the fleet holds it and every event, hands
// the lease over with the checkpoint (placement.Handoff) and stops
// serving it (its root and state stay), then waits until the new host
// serves it. The new host's Dir hears the handoff (placement.WatchMoves)
// and takes the sandbox up with Adopt, whose start takes the lease over.
//
// A host that kept the sandbox's old root (moved away from it before:
// DIR/NAME not served, its state keeping the handed checkpoint's
// identity, the root marked with it) takes it up there instead
// (movein_inplace.go): the fleet's token and quota kept, the journal
// numbered on above the handed seq (history.NumberAbove), only the
// objects its store lacks fetched, the root restored to the checkpoint
// (checkpoint.Restore: only what differs written, journaled as the
// restore's), a checkpoint of the result taken, then served. Anything
// else of the name in DIR refuses the move (409) at the old host's Ping,
// which names the sandbox's identity, and is left as it is.
package daemon
