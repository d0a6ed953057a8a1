package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/core/watch"
	"sandfs/internal/testenv"
)

// watched opens a sandbox on a fresh root with the kernel watch running and
// a watcher on everything (no debounce, no excludes).
func watched(t *testing.T) (*Sandbox, string, *journal.Watcher) {
	t.Helper()
	s, root, w, _ := watchedNamed(t, "default")
	return s, root, w
}

// watchedNamed is watched for a sandbox of that name, with the function that
// stops its kernel watch.
func watchedNamed(t *testing.T, name string) (*Sandbox, string, *journal.Watcher, context.CancelFunc) {
	t.Helper()
	root := t.TempDir()
	s, err := Open(name, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); s.Close() })
	if err := s.StartWatching(ctx, nil); err != nil {
		t.Fatal(err)
	}
	<-s.Watch().Ready()
	w, _, _, err := s.Journal().Watch(journal.Config{Path: "/", Recursive: true, Exclude: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return s, root, w, cancel
}

func fmtEvents(es []journal.Event) string { return watch.FormatEvents(es) }

// settle is watch.Watch.Settle on the sandbox's watch, failing the test on
// a read error.
func settle(t *testing.T, s *Sandbox, w *journal.Watcher, cursor uint64) []journal.Event {
	t.Helper()
	es, err := s.watch.Settle(w, cursor)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestJournalScenarios(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, s *Sandbox, root string)
		act   func(t *testing.T, s *Sandbox, root string)
		want  string
	}{
		{"api write of a new file",
			nil,
			func(t *testing.T, s *Sandbox, root string) {
				s.WriteFile(ctx, "/a.txt", strings.NewReader("hi"), WriteOptions{})
			},
			"api create /a.txt\napi write /a.txt"},
		{"api write with new parents",
			nil,
			func(t *testing.T, s *Sandbox, root string) {
				s.WriteFile(ctx, "/d/e/a.txt", strings.NewReader("hi"), WriteOptions{MkdirParents: true})
			},
			"api create /d\napi create /d/e\napi create /d/e/a.txt\napi write /d/e/a.txt"},
		{"api move",
			func(t *testing.T, s *Sandbox, root string) { mk(t, root, map[string]string{"m": "x"}) },
			func(t *testing.T, s *Sandbox, root string) { s.Move(ctx, "/m", "/n", MoveOptions{}) },
			"api rename /n <- /m"},
		{"api delete of a tree",
			func(t *testing.T, s *Sandbox, root string) { mk(t, root, map[string]string{"t/u/v": "x"}) },
			func(t *testing.T, s *Sandbox, root string) { s.Remove(ctx, "/t", true) },
			"api remove /t"},
		{"outside create, write, rename, remove",
			nil,
			func(t *testing.T, s *Sandbox, root string) {
				p := filepath.Join(root, "o.txt")
				os.WriteFile(p, nil, 0o644)
				sleepALittle()
				f, _ := os.OpenFile(p, os.O_WRONLY, 0)
				f.WriteString("data")
				f.Close()
				sleepALittle()
				os.Rename(p, filepath.Join(root, "o2.txt"))
				sleepALittle()
				os.Remove(filepath.Join(root, "o2.txt"))
			},
			"external create /o.txt\nexternal write /o.txt\nexternal rename /o2.txt <- /o.txt\nexternal remove /o2.txt"},
		{"outside append right after an api write",
			nil,
			func(t *testing.T, s *Sandbox, root string) {
				s.WriteFile(ctx, "/f", strings.NewReader("api"), WriteOptions{})
				f, _ := os.OpenFile(filepath.Join(root, "f"), os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString("outside")
				f.Close()
			},
			"api create /f\napi write /f\nexternal write /f"},
		{"a directory arriving with files in it",
			nil,
			func(t *testing.T, s *Sandbox, root string) {
				tmp := filepath.Join(filepath.Dir(root), "staging-"+filepath.Base(root))
				mk(t, tmp, map[string]string{"a": "1", "sub/b": "2"})
				os.Rename(tmp, filepath.Join(root, "arrived"))
			},
			"external create /arrived\nexternal create /arrived/a\nexternal create /arrived/sub\nexternal create /arrived/sub/b"},
		{"a name a scan told, removed and made again, is told again",
			func(t *testing.T, s *Sandbox, root string) {
				// Made before any watch: the scan tells them, no Create comes.
				tmp := filepath.Join(filepath.Dir(root), "staging-"+filepath.Base(root))
				mk(t, tmp, map[string]string{"sub/b": "2"})
				os.Rename(tmp, filepath.Join(root, "arrived"))
			},
			func(t *testing.T, s *Sandbox, root string) {
				os.RemoveAll(filepath.Join(root, "arrived", "sub"))
				sleepALittle()
				os.Mkdir(filepath.Join(root, "arrived", "sub"), 0o755)
				sleepALittle()
				os.WriteFile(filepath.Join(root, "arrived", "sub", "b"), nil, 0o644)
			},
			"external remove /arrived/sub/b\nexternal remove /arrived/sub\nexternal create /arrived/sub\nexternal create /arrived/sub/b"},
		{"outside directory rename keeps watching under the new name",
			func(t *testing.T, s *Sandbox, root string) { mk(t, root, map[string]string{"d1/x": "1"}) },
			func(t *testing.T, s *Sandbox, root string) {
				os.Rename(filepath.Join(root, "d1"), filepath.Join(root, "d2"))
				sleepALittle()
				os.WriteFile(filepath.Join(root, "d2/y"), nil, 0o644)
			},
			"external rename /d2 <- /d1\nexternal create /d2/y"},
		{"a file made in a directory just renamed, before its new watch",
			func(t *testing.T, s *Sandbox, root string) { mk(t, root, map[string]string{"r1/old": "1"}) },
			func(t *testing.T, s *Sandbox, root string) {
				os.Rename(filepath.Join(root, "r1"), filepath.Join(root, "r2"))
				os.WriteFile(filepath.Join(root, "r2/new"), nil, 0o644)
			},
			"external rename /r2 <- /r1\nexternal create /r2/new"},
		{"moved out of the tree is a remove",
			func(t *testing.T, s *Sandbox, root string) { mk(t, root, map[string]string{"gone": "1"}) },
			func(t *testing.T, s *Sandbox, root string) {
				os.Rename(filepath.Join(root, "gone"), filepath.Join(filepath.Dir(root), "gone-"+filepath.Base(root)))
			},
			"external remove /gone"},
		{"moved out of the tree, then a file made, is a remove and a create",
			func(t *testing.T, s *Sandbox, root string) { mk(t, root, map[string]string{"out": "1"}) },
			func(t *testing.T, s *Sandbox, root string) {
				os.Rename(filepath.Join(root, "out"), filepath.Join(filepath.Dir(root), "out-"+filepath.Base(root)))
				os.WriteFile(filepath.Join(root, "made"), nil, 0o644)
			},
			"external remove /out\nexternal create /made"},
		{"outside remove of a file the mount still holds open",
			nil,
			func(t *testing.T, s *Sandbox, root string) {
				h := heldOpen(t, s, "h")
				must(t, os.Remove(filepath.Join(root, "h")))
				release(h)
			},
			"fuse create /h\nfuse write /h\nexternal remove /h"},
		{"outside rename of a file the mount still holds open",
			nil,
			func(t *testing.T, s *Sandbox, root string) {
				h := heldOpen(t, s, "h")
				must(t, os.Rename(filepath.Join(root, "h"), filepath.Join(root, "h2")))
				release(h)
			},
			"fuse create /h\nfuse write /h\nexternal rename /h2 <- /h"},
		{"outside rename over a file the mount holds open, and one made under its old name",
			func(t *testing.T, s *Sandbox, root string) { mk(t, root, map[string]string{"other": "1"}) },
			func(t *testing.T, s *Sandbox, root string) {
				h := heldOpen(t, s, "h")
				must(t, os.Rename(filepath.Join(root, "other"), filepath.Join(root, "h")))
				sleepALittle()
				must(t, os.Remove(filepath.Join(root, "h")))
				sleepALittle()
				must(t, os.WriteFile(filepath.Join(root, "h"), []byte("new"), 0o644))
				release(h)
			},
			"fuse create /h\nfuse write /h\nexternal rename /h <- /other\nexternal remove /h\nexternal create /h\nexternal write /h"},
		{"outside chmod of a file the mount still holds open",
			nil,
			func(t *testing.T, s *Sandbox, root string) {
				h := heldOpen(t, s, "h")
				must(t, os.Chmod(filepath.Join(root, "h"), 0o600))
				release(h)
			},
			"fuse create /h\nfuse write /h\nexternal chmod /h"},
		{"a mount create whose owner and mode the daemon fixes is told once",
			nil,
			func(t *testing.T, s *Sandbox, root string) {
				fuse := WithActor(ctx, Actor{Origin: journal.Mirror, Pid: 7, Uid: 0})
				// 04755 with the daemon's umask and a chown to 1000: the
				// mode is set again after the chown cleared setuid.
				h, _, err := s.RootDir().Create(fuse, "c", unix.O_WRONLY, 0o4755, 1000, 1000)
				must(t, err)
				release(h)
				var st unix.Stat_t
				must(t, unix.Lstat(filepath.Join(root, "c"), &st))
				if st.Mode&0o7777 != 0o4755 || st.Uid != 1000 {
					t.Errorf("made with mode %o owner %d, want 4755 1000", st.Mode&0o7777, st.Uid)
				}
			},
			"fuse create /c"},
		{"api tar extraction",
			nil,
			func(t *testing.T, s *Sandbox, root string) {
				extractTar(ctx, s, "/x", testenv.TarOf(t, []testenv.TarEntry{{Name: "a/b", Body: "1"}}))
			},
			"api create /x\napi create /x/a\napi create /x/a/b\napi write /x/a/b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, root, w := watched(t)
			if tc.setup != nil {
				tc.setup(t, s, root)
			}
			cursor := s.Journal().Seq()
			settle(t, s, w, 0)
			cursor = s.Journal().Seq()
			tc.act(t, s, root)
			got := fmtEvents(settle(t, s, w, cursor))
			if got != tc.want {
				t.Errorf("events:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// heldOpen creates name in the root through the mirror's calls, writes to
// it and closes it (a flush), but is not yet released: the kernel sends the
// release after close(2) has returned.
func heldOpen(t *testing.T, s *Sandbox, name string) *Handle {
	t.Helper()
	fuse := WithActor(ctx, Actor{Origin: journal.Mirror, Pid: 7, Uid: 0})
	h, _, err := s.RootDir().Create(fuse, name, unix.O_WRONLY, 0o644, -1, -1)
	must(t, err)
	_, err = h.File().Write([]byte("held"))
	must(t, err)
	h.Wrote()
	h.Flush(fuse)
	return h
}

// release is the mirror's release of h, and its close.
func release(h *Handle) {
	h.Release(WithActor(ctx, Actor{Origin: journal.Mirror}))
	h.File().Close()
}

// sleepALittle keeps distinct outside steps from being merged by inotify,
// which folds identical unread events together.
func sleepALittle() { time.Sleep(5 * time.Millisecond) }

func TestJournalBurst(t *testing.T) {
	s, root, w := watched(t)
	const n = 10_000
	mk(t, root, map[string]string{"burst/": ""})
	settle(t, s, w, 0)
	cursor := s.Journal().Seq()
	for i := 0; i < n; i++ {
		f, err := os.Create(filepath.Join(root, "burst", fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	events := settle(t, s, w, cursor)
	b, _, _ := w.Read(cursor, 1)
	seen := map[string]int{}
	for _, e := range events {
		if e.Type == journal.Create {
			seen[e.Path]++
		}
	}
	for p, c := range seen {
		if c != 1 {
			t.Errorf("%s created %d times", p, c)
		}
	}
	if len(seen) != n && !b.Overflow {
		t.Fatalf("%d of %d creates told and no overflow flagged", len(seen), n)
	}
	t.Logf("%d of %d creates told, overflow %v", len(seen), n, b.Overflow)
}

// TestStartWatchingTwice: a second StartWatching is refused, while the
// first watch runs and after it ended, and the first watch tells an
// outside change once (one notifier).
func TestStartWatchingTwice(t *testing.T) {
	s, root, w := watched(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.StartWatching(ctx, nil); !errors.Is(err, ErrWatchStarted) {
		t.Fatalf("second StartWatching: %v, want ErrWatchStarted", err)
	}
	if err := os.WriteFile(filepath.Join(root, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	creates := 0
	for _, e := range settle(t, s, w, 0) {
		if e.Type == journal.Create && e.Path == "/f" {
			creates++
		}
	}
	if creates != 1 {
		t.Errorf("the outside create was told %d times, want once", creates)
	}

	s2, err := Open("default", t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	ctx2, cancel2 := context.WithCancel(context.Background())
	if err := s2.StartWatching(ctx2, nil); err != nil {
		t.Fatal(err)
	}
	<-s2.Watch().Ready()
	cancel2()
	for deadline := time.Now().Add(5 * time.Second); s2.Watch().Running() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if err := s2.StartWatching(context.Background(), nil); !errors.Is(err, ErrWatchStarted) {
		t.Fatalf("StartWatching after the watch ended: %v, want ErrWatchStarted", err)
	}
}
