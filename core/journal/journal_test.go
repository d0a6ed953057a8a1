package journal

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func ev(t Type, p string) Event { return Event{Type: t, Path: p, Origin: API} }

func seqs(es []Event) string {
	var b []string
	for _, e := range es {
		b = append(b, fmt.Sprintf("%d:%s:%s", e.Seq, e.Type, e.Path))
	}
	return strings.Join(b, " ")
}

func TestWatcherFilters(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		in   []Event
		want string
	}{
		{"recursive under path", Config{Path: "/p", Recursive: true},
			[]Event{ev(Create, "/p/a"), ev(Create, "/q/a"), ev(Create, "/p/d/b"), ev(Create, "/pp")},
			"1:create:/p/a 3:create:/p/d/b"},
		{"not recursive", Config{Path: "/p"},
			[]Event{ev(Create, "/p/a"), ev(Create, "/p/d/b")},
			"1:create:/p/a"},
		{"default excludes", Config{Path: "/", Recursive: true},
			[]Event{ev(Create, "/.git/HEAD"), ev(Create, "/x/node_modules/m/i.js"), ev(Write, "/a.pyc"), ev(Create, "/ok.py"), ev(Create, "/.sandfs-1.part")},
			"4:create:/ok.py 5:create:/.sandfs-1.part"},
		{"given exclude replaces the defaults", Config{Path: "/", Recursive: true, Exclude: []string{"*.log", "build/out"}},
			[]Event{ev(Create, "/.git/HEAD"), ev(Create, "/a.log"), ev(Create, "/build/out/x"), ev(Create, "/build/in")},
			"1:create:/.git/HEAD 4:create:/build/in"},
		{"include patterns", Config{Path: "/", Recursive: true, Include: []string{"*.go", "docs/*.md"}},
			[]Event{ev(Create, "/a.go"), ev(Create, "/d/b.go"), ev(Create, "/docs/r.md"), ev(Create, "/r.md")},
			"1:create:/a.go 2:create:/d/b.go 3:create:/docs/r.md"},
		{"rename out of the view is seen by its old path", Config{Path: "/p", Recursive: true},
			[]Event{{Type: Rename, Path: "/q/x", OldPath: "/p/x"}},
			"1:rename:/q/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := New()
			w, _, _, err := j.Watch(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range tc.in {
				j.Append(e)
			}
			b, _, _ := w.Read(0, 0)
			if got := seqs(b.Events); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDebounce(t *testing.T) {
	j := New()
	w, _, _, _ := j.Watch(Config{Path: "/", Recursive: true, Debounce: 50 * time.Millisecond})
	j.Append(ev(Create, "/a")) // 1
	j.Append(ev(Write, "/a"))  // 2: the first write, told at once
	j.Append(ev(Write, "/a"))  // 3: inside 2's window: held, coalesced into 4
	j.Append(ev(Write, "/a"))  // 4
	j.Append(ev(Create, "/b")) // 5: waits behind the held write
	j.Append(ev(Write, "/c"))  // 6
	j.Append(ev(Remove, "/c")) // 7: never dropped, and 6 stays before it
	j.Append(ev(Write, "/c"))  // 8: a new window after the remove
	if b, _, _ := w.Read(0, 0); seqs(b.Events) != "1:create:/a 2:write:/a" {
		t.Fatalf("before the window: %q", seqs(b.Events))
	}
	b, err := w.Poll(context.Background(), 2, 0, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for len(b.Events) > 0 && b.Events[len(b.Events)-1].Seq < 8 {
		more, _ := w.Poll(context.Background(), b.Cursor, 0, 2*time.Second)
		b.Events = append(b.Events, more.Events...)
		b.Cursor = more.Cursor
	}
	if got, want := seqs(b.Events), "4:write:/a 5:create:/b 6:write:/c 7:remove:/c 8:write:/c"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// 4 was told at the end of 2's window and opened the next one; a write
	// after that window is told at once again.
	time.Sleep(60 * time.Millisecond)
	j.Append(ev(Write, "/a")) // 9
	if b, _, _ := w.Read(8, 0); seqs(b.Events) != "9:write:/a" {
		t.Errorf("a write after the window: %q", seqs(b.Events))
	}
}

func TestCursorOverflowAndReuse(t *testing.T) {
	j := New()
	j.Append(ev(Create, "/before"))
	w, info, reused, _ := j.Watch(Config{Path: "/", Recursive: true})
	if reused || info.InitialCursor != 1 {
		t.Fatalf("first create: reused %v, initial %d", reused, info.InitialCursor)
	}
	for i := 0; i < BufferSize+5; i++ {
		j.Append(ev(Create, fmt.Sprintf("/f%d", i)))
	}
	b, _, _ := w.Read(0, 3)
	if !b.Overflow || b.Events[0].Seq != 7 || b.Cursor != 9 {
		t.Errorf("cursor 0 after a buffer overrun: overflow %v first %d cursor %d", b.Overflow, b.Events[0].Seq, b.Cursor)
	}
	if b, _, _ := w.Read(BufferSize+5, 0); b.Overflow || len(b.Events) != 1 {
		t.Errorf("a cursor past the loss: %+v", b)
	}
	j.Lost("/")
	if b, _, _ := w.Read(j.Seq(), 0); b.Overflow {
		t.Error("a loss is reported to cursors before it only")
	}
	if b, _, _ := w.Read(j.Seq()-1, 0); !b.Overflow {
		t.Error("kernel overflow not reported")
	}
	w2, info2, reused, _ := j.Watch(Config{Path: "/", Recursive: true})
	if w2 != w || !reused || info2.InitialCursor != j.Seq() {
		t.Errorf("identical create: reused %v, initial %d", reused, info2.InitialCursor)
	}
	if n, _ := j.Release(info.Ref); n != 1 {
		t.Errorf("after one release %d refs left, want 1", n)
	}
	if n, err := j.Release(info2.Ref); n != 0 || err != nil {
		t.Errorf("last release: %d, %v", n, err)
	}
	if _, err := j.Watcher(w.ID); err != ErrUnknownWatcher {
		t.Errorf("released watcher still found: %v", err)
	}
	if _, err := w.Poll(context.Background(), 0, 0, time.Second); err != ErrWatcherClosed {
		t.Errorf("poll of a stopped watcher: %v", err)
	}
}

func TestWatcherLimit(t *testing.T) {
	j := New()
	for i := 0; i < MaxWatchers; i++ {
		if _, _, _, err := j.Watch(Config{Path: fmt.Sprintf("/%d", i)}); err != nil {
			t.Fatal(i, err)
		}
	}
	if _, _, _, err := j.Watch(Config{Path: "/one-more"}); err != ErrTooManyWatchers {
		t.Errorf("watcher %d: %v, want ErrTooManyWatchers", MaxWatchers+1, err)
	}
	if _, _, reused, err := j.Watch(Config{Path: "/0"}); err != nil || !reused {
		t.Errorf("reuse at the limit: %v", err)
	}
}

func TestPollWakesAndTimesOut(t *testing.T) {
	j := New()
	w, _, _, _ := j.Watch(Config{Path: "/", Recursive: true})
	start := time.Now()
	b, _ := w.Poll(context.Background(), 0, 0, 50*time.Millisecond)
	if len(b.Events) != 0 || time.Since(start) < 50*time.Millisecond {
		t.Errorf("empty poll returned %v after %v", b, time.Since(start))
	}
	go func() { time.Sleep(20 * time.Millisecond); j.Append(ev(Create, "/x")) }()
	b, _ = w.Poll(context.Background(), 0, 0, 10*time.Second)
	if seqs(b.Events) != "1:create:/x" {
		t.Errorf("woken poll got %q", seqs(b.Events))
	}
}

func TestSubscription(t *testing.T) {
	j := New()
	s := j.Subscribe(func(e Event) bool { return strings.HasPrefix(e.Path, "/a") }, 2)
	for _, p := range []string{"/a1", "/b", "/a2", "/a3", "/a4"} {
		j.Append(ev(Create, p))
	}
	if e := <-s.C; e.Path != "/a1" {
		t.Errorf("first %v", e)
	}
	if e := <-s.C; e.Path != "/a2" {
		t.Errorf("second %v", e)
	}
	if n := s.TakeDropped(); n != 2 {
		t.Errorf("dropped %d, want 2", n)
	}
	s.Close()
	if _, ok := <-s.C; ok {
		t.Error("C open after Close")
	}
	j.Append(ev(Create, "/a5")) // no panic on a closed subscription
}

func TestSince(t *testing.T) {
	j := New()
	for i := 0; i < RingSize+10; i++ {
		j.Append(ev(Write, "/x"))
	}
	es, lost := j.Since(0, 5)
	if !lost || es[0].Seq != 11 || len(es) != 5 {
		t.Errorf("Since(0) lost %v first %d n %d", lost, es[0].Seq, len(es))
	}
	es, lost = j.Since(RingSize+8, 0)
	if lost || len(es) != 2 || es[1].Seq != RingSize+10 {
		t.Errorf("Since(recent) = %d events, lost %v", len(es), lost)
	}
}

func TestLostReachesCaughtUpReaders(t *testing.T) {
	j := New()
	w, _, _, _ := j.Watch(Config{Path: "/", Recursive: true})
	j.Append(ev(Create, "/a"))
	b, _, _ := w.Read(0, 0)
	j.Lost("/")
	after, _, _ := w.Read(b.Cursor, 0)
	if !after.Overflow || after.Cursor != j.Seq() {
		t.Errorf("a reader that had read everything: overflow %v cursor %d (journal at %d)", after.Overflow, after.Cursor, j.Seq())
	}
	if again, _, _ := w.Read(after.Cursor, 0); again.Overflow {
		t.Error("overflow reported twice to the same reader")
	}
	if es, _ := j.Since(0, 0); len(es) != 1 {
		t.Errorf("Since returns the loss marker: %v", es)
	}
}
