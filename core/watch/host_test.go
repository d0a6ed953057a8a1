package watch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// started is a Watch started on a fresh root, with a Host of plain
// syscalls on the root's host path: enough for the watch's own tests,
// which make no change an attacker could race. The tests that drive the
// watch through a Sandbox live in core.
func started(t *testing.T) (w *Watch, root string, stop context.CancelFunc) {
	t.Helper()
	return startedNamed(t, "test")
}

// startedNamed is started for a sandbox of that name.
func startedNamed(t *testing.T, name string) (w *Watch, root string, stop context.CancelFunc) {
	t.Helper()
	root = t.TempDir()
	host := func(ap string) string { return filepath.Join(root, filepath.FromSlash(ap)) }
	open := func(ap string, flags int) (int, error) {
		return unix.Open(host(ap), flags|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	w = New(Host{
		Name: name, HostRoot: root, Journal: journal.New(),
		Describe: func(e *journal.Event) {
			if fi, err := os.Lstat(host(e.Path)); err == nil {
				e.IsDir, e.Size, e.Mtime, e.Mode = fi.IsDir(), fi.Size(), fi.ModTime(), fi.Mode()
			}
		},
		Ctime: func(ap string) (time.Time, error) {
			var st unix.Stat_t
			if err := unix.Lstat(host(ap), &st); err != nil {
				return time.Time{}, err
			}
			return time.Unix(st.Ctim.Unix()), nil
		},
		List: func(ap string) ([]Entry, error) {
			des, err := os.ReadDir(host(ap))
			var es []Entry
			for _, d := range des {
				p := ap + "/" + d.Name()
				if ap == "/" {
					p = "/" + d.Name()
				}
				es = append(es, Entry{Path: p, IsDir: d.IsDir()})
			}
			return es, err
		},
		OpenDir:   func(ap string) (int, error) { return open(ap, unix.O_PATH) },
		OpenTree:  func(ap string) (int, error) { return open(ap, unix.O_RDONLY) },
		Uncounted: func() {},
		RootState: func() string { return "ok" },
		Closed:    func() bool { return false },
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := w.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	<-w.Ready()
	return w, root, cancel
}

// watched is started with a journal watcher on everything (no debounce,
// no excludes).
func watched(t *testing.T) (*Watch, string, *journal.Watcher) {
	t.Helper()
	w, root, jw, _ := watchedNamed(t, "test")
	return w, root, jw
}

// watchedNamed is watched for a sandbox of that name, with the function
// that stops its kernel watch.
func watchedNamed(t *testing.T, name string) (*Watch, string, *journal.Watcher, context.CancelFunc) {
	t.Helper()
	w, root, stop := startedNamed(t, name)
	jw, _, _, err := w.h.Journal.Watch(journal.Config{Path: "/", Recursive: true, Exclude: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return w, root, jw, stop
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func fmtEvents(es []journal.Event) string { return FormatEvents(es) }

// settle is Watch.Settle, failing the test on a read error.
func settle(t *testing.T, w *Watch, jw *journal.Watcher, cursor uint64) []journal.Event {
	t.Helper()
	es, err := w.Settle(jw, cursor)
	if err != nil {
		t.Fatal(err)
	}
	return es
}
