package main

import (
	"strings"
	"testing"
)

// TestFormatEventWho: the human line ends with who acted when the daemon
// says: an API request's named actor, or the mount caller's COMM[PID]; a
// line without either is unchanged.
func TestFormatEventWho(t *testing.T) {
	pid := uint32(4242)
	for _, c := range []struct {
		ev   watchEvent
		want string
	}{
		{watchEvent{Type: "write", Path: "/a", Origin: "api", Actor: "agent-7"}, "api      write  /a by agent-7"},
		{watchEvent{Type: "write", Path: "/a", Origin: "fuse", Pid: &pid, Comm: "vim"}, "fuse     write  /a by vim[4242]"},
		{watchEvent{Type: "write", Path: "/a", Origin: "api", Actor: "bad\nname"}, `api      write  /a by "bad\nname"`},
		{watchEvent{Type: "remove", Path: "/a", Origin: "external"}, "external remove /a"},
	} {
		got := formatEvent(c.ev)
		if _, rest, _ := strings.Cut(got, " "); rest != c.want {
			t.Errorf("got %q, want the time then %q", got, c.want)
		}
	}
}
