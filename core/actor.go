package core

import (
	"context"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// Actor is who makes a change: the origin a journal event carries; for a
// REST request the name its client gave (X-Sandfs-Actor); for the FUSE
// mirror the calling process and user, and that process's command name and
// cgroup.
type Actor struct {
	Origin journal.Origin
	Name   string // a REST client's own name for who acts (free text, checked by the boundary)
	Pid    uint32
	Uid    uint32
	Comm   string // fuse: the caller's command name (/proc/PID/comm)
	Cgroup string // fuse: the caller's cgroup v2 path (/proc/PID/cgroup, the 0:: line)
	// Process, when set, tells Comm and Cgroup of a pid (empty when it is
	// gone). It is called only when an event is appended, so a request that
	// changes nothing never pays for it; Comm set already skips it.
	Process func(pid uint32) (comm, cgroup string)
}

type actorKey struct{}

// WithActor stamps ctx with who is acting; core operations read it when they
// append to the journal. Handlers stamp journal.API, the mirror journal.Mirror.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// actorOf is the actor in ctx, origin api when none was stamped.
func actorOf(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok {
		return a
	}
	return Actor{Origin: journal.API}
}

// Journal is the sandbox's one record of change.
func (s *Sandbox) Journal() *journal.Journal { return s.journal }

// Tell tells the change an operation made, core's or a subpackage's: one
// event by the actor in ctx, describing ap as it is now (or as it was, for
// a remove). Unlike Emit, the change is counted by the operation's
// quota.Op, not left to a rescan.
func (s *Sandbox) Tell(ctx context.Context, typ journal.Type, ap, old string, isDir bool) {
	var st *unix.Stat_t
	if typ != journal.Remove {
		if fst, err := s.root.statPath(ap, false); err == nil {
			st = &fst
		}
	}
	s.tellStat(ctx, typ, ap, old, isDir, st)
}

// tellFd is tell describing the file fd holds.
func (s *Sandbox) tellFd(ctx context.Context, typ journal.Type, ap string, fd int) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		s.tellStat(ctx, typ, ap, "", false, nil)
		return
	}
	s.tellStat(ctx, typ, ap, "", false, &st)
}

// tellStat is tell describing the file of stat st (nil: unknown, or
// removed).
func (s *Sandbox) tellStat(ctx context.Context, typ journal.Type, ap, old string, isDir bool, st *unix.Stat_t) {
	if ap == "" {
		return // a file open through the mirror whose name left the tree (Handle.Follow)
	}
	a := actorOf(ctx)
	if a.Comm == "" && a.Process != nil && a.Pid != 0 {
		a.Comm, a.Cgroup = a.Process(a.Pid)
	}
	e := journal.Event{Type: typ, Path: ap, OldPath: old, IsDir: isDir, Origin: a.Origin,
		Actor: a.Name, Pid: a.Pid, Uid: a.Uid, Comm: a.Comm, Cgroup: a.Cgroup}
	if st != nil {
		fillEvent(&e, InfoFrom(ap, st))
	}
	s.append(ctx, e)
}

// Emit tells a change that none of core's operations made (so none counted
// it: a rescan will): one event of type typ on p (old: the old path of a
// rename) by the actor in ctx, describing p as it is now, appended as a
// FUSE handler's is.
func (s *Sandbox) Emit(ctx context.Context, typ journal.Type, p, old string) {
	ap, err := s.Clean(p)
	if err != nil {
		return
	}
	s.quota.OutsideChange() // a change core did not make: uncounted (core/quota)
	s.Tell(inHandler(ctx), typ, ap, old, false)
}

func fillEvent(e *journal.Event, info Info) {
	e.IsDir = info.IsDir()
	e.Size = info.Size
	e.Mtime = info.ModTime
	e.Inode = info.Inode
	e.Mode = info.Mode
}
