package core

import (
	"context"
	"testing"

	"sandfs/core/journal"
)

// TestEventKeepsActor: an event keeps every field of its actor: the name a
// REST client gave, and for the mirror pid, uid, comm and cgroup, the last
// two asked of Process only when the event is appended, once, and not at
// all when the actor tells them already.
func TestEventKeepsActor(t *testing.T) {
	s, _, _ := watched(t)
	calls := 0
	process := func(pid uint32) (string, string) {
		calls++
		if pid != 42 {
			t.Errorf("Process asked of pid %d, want 42", pid)
		}
		return "vim", "/user.slice/x.scope"
	}
	api := WithActor(context.Background(), Actor{Origin: journal.API, Name: "agent-7/tool:write"})
	fuse := WithActor(context.Background(), Actor{Origin: journal.Mirror, Pid: 42, Uid: 1000, Process: process})
	given := WithActor(context.Background(), Actor{Origin: journal.Mirror, Pid: 42, Uid: 1000, Comm: "sh", Cgroup: "/c", Process: process})
	cursor := s.Journal().Seq()
	if err := s.Mkdir(api, "/a", false, 0o755); err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Fatalf("Process called %d times before any mirror event", calls)
	}
	d := s.RootDir()
	if _, err := d.Mkdir(fuse, "b", 0o755, -1, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mkdir(given, "c", 0o755, -1, -1); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("Process called %d times for two mirror events (one with Comm), want 1", calls)
	}
	es, _ := s.Journal().Since(cursor, 100)
	want := map[string]journal.Event{
		"/a": {Origin: journal.API, Actor: "agent-7/tool:write"},
		"/b": {Origin: journal.Mirror, Pid: 42, Uid: 1000, Comm: "vim", Cgroup: "/user.slice/x.scope"},
		"/c": {Origin: journal.Mirror, Pid: 42, Uid: 1000, Comm: "sh", Cgroup: "/c"},
	}
	seen := 0
	for _, e := range es {
		w, ok := want[e.Path]
		if !ok || e.Type != journal.Create {
			continue
		}
		seen++
		if e.Origin != w.Origin || e.Actor != w.Actor || e.Pid != w.Pid || e.Uid != w.Uid || e.Comm != w.Comm || e.Cgroup != w.Cgroup {
			t.Errorf("%s: origin %s actor %q pid %d uid %d comm %q cgroup %q; want %s %q %d %d %q %q", e.Path,
				e.Origin, e.Actor, e.Pid, e.Uid, e.Comm, e.Cgroup, w.Origin, w.Actor, w.Pid, w.Uid, w.Comm, w.Cgroup)
		}
	}
	if seen != len(want) {
		t.Errorf("saw %d of the %d creates: %+v", seen, len(want), es)
	}
}
