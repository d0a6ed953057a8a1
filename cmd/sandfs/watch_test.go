package main

import (
	"strings"
	"testing"

	"sandfs/core/journal"
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

// TestWatchBody: the watch flags become the POST /v2/watch body; the
// default excludes are the journal's, kept under --exclude, dropped by
// --all; no flag sends no exclude (the daemon's defaults).
func TestWatchBody(t *testing.T) {
	def := strings.Join(journal.DefaultExcludes, ",")
	for _, c := range []struct {
		name string
		o    watchOptions
		want string // exclude|include_patterns, "-" for absent
	}{
		{"none", watchOptions{}, "-|-"},
		{"exclude adds", watchOptions{exclude: multiFlag{"dist", "*.log"}}, def + ",dist,*.log|-"},
		{"all", watchOptions{all: true}, "|-"},
		{"all and exclude", watchOptions{all: true, exclude: multiFlag{"dist"}}, "dist|-"},
		{"include", watchOptions{include: multiFlag{"*.go", "*.md"}}, "-|*.go,*.md"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.o.path = "/src"
			b := c.o.body()
			field := func(k string) string {
				v, ok := b[k]
				if !ok {
					return "-"
				}
				return strings.Join(v.([]string), ",")
			}
			if got := field("exclude") + "|" + field("include_patterns"); got != c.want || b["path"] != "/src" {
				t.Errorf("got %v, want exclude|include %q", b, c.want)
			}
		})
	}
}

// TestWatchHelpExcludes: the help names every default exclude, from the
// journal's list.
func TestWatchHelpExcludes(t *testing.T) {
	var out strings.Builder
	watchCommand.flagSet(&env{stdout: &out, stderr: &out, getenv: func(string) string { return "" }}).Usage()
	for _, ex := range journal.DefaultExcludes {
		if !strings.Contains(out.String(), " "+ex) {
			t.Errorf("help of watch does not name the default exclude %q:\n%s", ex, out.String())
		}
	}
	for _, f := range []string{"-follow", "-exclude PAT", "-include PAT", "-all"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("help of watch lacks %s", f)
		}
	}
}
