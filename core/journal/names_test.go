package journal

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func evs(es []Event) string {
	var b []string
	for _, e := range es {
		s := fmt.Sprintf("%s:%s", e.Type, e.Path)
		if e.OldPath != "" {
			s += "<-" + e.OldPath
		}
		b = append(b, s)
	}
	return strings.Join(b, " ")
}

// TestNamesNotUTF8NeverReachWatchers: an event on a path that is not UTF-8
// reaches neither a watcher nor a subscription (it would alias "\uFFFD"
// names); a rename across the edge is told as its visible side; the
// journal's hooks still see every event as it came.
func TestNamesNotUTF8NeverReachWatchers(t *testing.T) {
	in := []Event{
		ev(Create, "/a\xff"),
		ev(Write, "/a\xff"),
		ev(Create, "/a\uFFFD"),
		{Type: Rename, Path: "/b", OldPath: "/a\xff", Origin: External},
		{Type: Rename, Path: "/a\xfe", OldPath: "/b", Origin: External},
		{Type: Rename, Path: "/c\xfe", OldPath: "/a\xfe", Origin: External},
		ev(Remove, "/d\xff/x"),
		ev(Create, "/end"),
	}
	want := "create:/a\uFFFD create:/b remove:/b create:/end"

	j := New()
	var hooked []Event
	j.OnAppend(Hook{Queue: func(e Event, lost bool) { hooked = append(hooked, e) }})
	w, _, _, err := j.Watch(Config{Path: "/", Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	sub := j.Subscribe(nil, 64)
	defer sub.Close()
	for _, e := range in {
		j.Append(e)
	}
	b, _, _ := w.Read(0, 0)
	if got := evs(b.Events); got != want {
		t.Errorf("watcher: got %q, want %q", got, want)
	}
	var fed []Event
	for done := false; !done; {
		select {
		case e := <-sub.C:
			fed = append(fed, e)
		case <-time.After(100 * time.Millisecond):
			done = true
		}
	}
	if got := evs(fed); got != want {
		t.Errorf("subscription: got %q, want %q", got, want)
	}
	if len(hooked) != len(in) {
		t.Errorf("hooks saw %d events, want all %d", len(hooked), len(in))
	}
}
