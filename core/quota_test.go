package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/quota"
	"sandfs/internal/testenv"
)

// checkUsage fails unless the sandbox's usage is what a fresh walk finds.
func checkUsage(t testing.TB, s *Sandbox, root string) {
	t.Helper()
	b, e, err := testenv.TreeUsage(root)
	if err != nil {
		t.Fatal(err)
	}
	if u := s.Quota().Usage(); u.Bytes != b || u.Entries != e {
		t.Fatalf("usage %d bytes %d entries, a walk finds %d bytes %d entries", u.Bytes, u.Entries, b, e)
	}
}

// noTemps fails if a core temp file or staging directory is left in root.
func noTemps(t testing.TB, root string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), TempPrefix) {
			t.Errorf("temp left: %s", p)
		}
		return nil
	})
}

// openScanned opens root as a sandbox once its first scan is done.
func openScanned(t testing.TB, root string) *Sandbox {
	t.Helper()
	s, err := Open("default", root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	<-s.SweepDone()
	if s.Quota().Usage().ScannedAt.IsZero() {
		t.Fatal("no scan after the sweep")
	}
	return s
}

func wantQuotaErr(t testing.TB, err error, bound string) {
	t.Helper()
	if !errors.Is(err, ErrQuota) || !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("err = %v, want ErrQuota and ENOSPC", err)
	}
	var qe *QuotaError
	if !errors.As(err, &qe) || qe.Bound != bound || !strings.Contains(err.Error(), "quota exceeded: "+bound+" limit") {
		t.Fatalf("err = %v, want the %s bound named", err, bound)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || !strings.HasPrefix(pe.Path, "/") {
		t.Fatalf("err = %#v, want an *fs.PathError with the API path", err)
	}
}

// TestQuotaEveryWrite: each way of writing stops at the quota with
// ErrQuota and changes nothing; within it, it succeeds; usage is a fresh
// walk's either way.
func TestQuotaEveryWrite(t *testing.T) {
	a := strings.Repeat("A", 100)
	big := strings.Repeat("B", 300)
	base := map[string]string{"a": a, "big": big, "d/": ""} // 400 bytes, 3 entries
	body := func(n int) *bytes.Reader { return bytes.NewReader(bytes.Repeat([]byte("n"), n)) }
	handleWrite := func(s *Sandbox, name string, data []byte, off int64) error {
		h, err := s.RootDir().Open(ctx, name, unix.O_WRONLY)
		if err != nil {
			return err
		}
		defer func() { h.Release(ctx); h.File().Close() }()
		_, err = h.WriteAt(data, off)
		h.Flush(ctx)
		return err
	}
	cases := []struct {
		name  string
		quota Quota
		op    func(s *Sandbox) error
		bound string // "" : it succeeds
	}{
		{"write new past bytes", Quota{Bytes: 450}, func(s *Sandbox) error {
			_, err := s.WriteFile(ctx, "/new", body(51), WriteOptions{})
			return err
		}, "bytes"},
		{"write new within bytes", Quota{Bytes: 450}, func(s *Sandbox) error {
			_, err := s.WriteFile(ctx, "/new", body(50), WriteOptions{})
			return err
		}, ""},
		{"write replacing past bytes", Quota{Bytes: 440}, func(s *Sandbox) error {
			_, err := s.WriteFile(ctx, "/a", body(141), WriteOptions{})
			return err
		}, "bytes"},
		{"write replacing within bytes", Quota{Bytes: 440}, func(s *Sandbox) error {
			_, err := s.WriteFile(ctx, "/a", body(140), WriteOptions{})
			return err
		}, ""},
		{"write new past entries", Quota{Entries: 3}, func(s *Sandbox) error {
			_, err := s.WriteFile(ctx, "/new", body(1), WriteOptions{})
			return err
		}, "entries"},
		{"write with parents past entries", Quota{Entries: 4}, func(s *Sandbox) error {
			_, err := s.WriteFile(ctx, "/p/q", body(1), WriteOptions{MkdirParents: true})
			return err
		}, "entries"},
		{"write replacing at the entry bound", Quota{Entries: 3}, func(s *Sandbox) error {
			_, err := s.WriteFile(ctx, "/a", body(5), WriteOptions{})
			return err
		}, ""},
		{"write in place past bytes", Quota{Bytes: 450}, func(s *Sandbox) error {
			_, err := s.WriteInPlace(ctx, "/a", body(151), InPlaceOptions{})
			return err
		}, "bytes"},
		{"append past bytes", Quota{Bytes: 450}, func(s *Sandbox) error {
			_, err := s.WriteInPlace(ctx, "/a", body(51), InPlaceOptions{Append: true})
			return err
		}, "bytes"},
		{"append within bytes", Quota{Bytes: 450}, func(s *Sandbox) error {
			_, err := s.WriteInPlace(ctx, "/a", body(50), InPlaceOptions{Append: true})
			return err
		}, ""},
		{"write in place new past entries", Quota{Entries: 3}, func(s *Sandbox) error {
			_, err := s.WriteInPlace(ctx, "/new", body(1), InPlaceOptions{})
			return err
		}, "entries"},
		{"upload past bytes", Quota{Bytes: 450}, func(s *Sandbox) error {
			_, _, err := s.Upload(ctx, "/d/up", body(51), UploadOptions{})
			return err
		}, "bytes"},
		{"upload replacing within bytes", Quota{Bytes: 400}, func(s *Sandbox) error {
			_, _, err := s.Upload(ctx, "/big", body(300), UploadOptions{})
			return err
		}, ""},
		{"tar merge past bytes", Quota{Bytes: 500}, func(s *Sandbox) error {
			err := extractTar(ctx, s, "/d", testenv.TarOf(t, []testenv.TarEntry{{Name: "x", Body: strings.Repeat("x", 60)}, {Name: "y", Body: strings.Repeat("y", 60)}}))
			return err
		}, "bytes"},
		{"tar over a file within bytes", Quota{Bytes: 400}, func(s *Sandbox) error {
			err := extractTar(ctx, s, "/", testenv.TarOf(t, []testenv.TarEntry{{Name: "big", Body: strings.Repeat("t", 250)}}))
			return err
		}, ""},
		{"tar new dest past entries", Quota{Entries: 5}, func(s *Sandbox) error {
			err := extractTar(ctx, s, "/t", testenv.TarOf(t, []testenv.TarEntry{{Name: "x", Body: "1"}, {Name: "y", Body: "2"}}))
			return err
		}, "entries"},
		{"tar new dest within entries", Quota{Entries: 6}, func(s *Sandbox) error {
			err := extractTar(ctx, s, "/t", testenv.TarOf(t, []testenv.TarEntry{{Name: "x", Body: "1"}, {Name: "y", Body: "2"}}))
			return err
		}, ""},
		{"copy past bytes", Quota{Bytes: 699}, func(s *Sandbox) error {
			_, err := s.Copy(ctx, "/big", "/big2", CopyOptions{})
			return err
		}, "bytes"},
		{"copy over a larger file", Quota{Bytes: 400}, func(s *Sandbox) error {
			_, err := s.Copy(ctx, "/a", "/big", CopyOptions{Overwrite: true})
			return err
		}, ""},
		{"copy a tree past entries", Quota{Entries: 4}, func(s *Sandbox) error {
			_, err := s.Copy(ctx, "/d", "/d2", CopyOptions{})
			return err
		}, ""}, // d is empty: one entry
		{"mkdir past entries", Quota{Entries: 3}, func(s *Sandbox) error {
			return s.Mkdir(ctx, "/x", false, 0)
		}, "entries"},
		{"mkdir -p past entries", Quota{Entries: 5}, func(s *Sandbox) error {
			return s.Mkdir(ctx, "/x/y/z", true, 0)
		}, "entries"},
		{"move onto a larger file", Quota{Bytes: 400, Entries: 3}, func(s *Sandbox) error {
			return s.Move(ctx, "/a", "/big", MoveOptions{Overwrite: true})
		}, ""},
		{"move with parents past entries", Quota{Entries: 3}, func(s *Sandbox) error {
			return s.Move(ctx, "/a", "/m/a", MoveOptions{MkdirParents: true})
		}, "entries"},
		{"remove a tree", Quota{Entries: 3}, func(s *Sandbox) error {
			return s.Remove(ctx, "/d", true)
		}, ""},
		{"mirror symlink past entries", Quota{Entries: 3}, func(s *Sandbox) error {
			_, err := s.RootDir().Symlink(ctx, "a", "l", -1, -1)
			return err
		}, "entries"},
		{"mirror mkdir past entries", Quota{Entries: 3}, func(s *Sandbox) error {
			_, err := s.RootDir().Mkdir(ctx, "m", 0o755, -1, -1)
			return err
		}, "entries"},
		{"mirror mknod past entries", Quota{Entries: 3}, func(s *Sandbox) error {
			_, err := s.RootDir().Mknod(ctx, "fifo", unix.S_IFIFO|0o644, 0, -1, -1)
			return err
		}, "entries"},
		{"mirror link past entries", Quota{Entries: 3}, func(s *Sandbox) error {
			d := s.RootDir()
			_, err := d.Link(ctx, d, "a", "hard")
			return err
		}, "entries"},
		{"mirror link within entries", Quota{Bytes: 400, Entries: 4}, func(s *Sandbox) error {
			d := s.RootDir()
			_, err := d.Link(ctx, d, "a", "hard")
			return err
		}, ""}, // a link is an entry and no bytes
		{"mirror create past entries", Quota{Entries: 3}, func(s *Sandbox) error {
			h, _, err := s.RootDir().Create(ctx, "c", unix.O_WRONLY, 0o644, -1, -1)
			if err == nil {
				h.Release(ctx)
				h.File().Close()
			}
			return err
		}, "entries"},
		{"mirror write past bytes", Quota{Bytes: 450}, func(s *Sandbox) error {
			return handleWrite(s, "a", bytes.Repeat([]byte("w"), 51), 100)
		}, "bytes"},
		{"mirror write over its own bytes", Quota{Bytes: 400}, func(s *Sandbox) error {
			return handleWrite(s, "a", bytes.Repeat([]byte("w"), 100), 0)
		}, ""},
		{"mirror truncate up past bytes", Quota{Bytes: 450}, func(s *Sandbox) error {
			size := int64(151)
			_, err := s.RootDir().Setattr(ctx, "a", SetAttr{Size: &size})
			return err
		}, "bytes"},
		{"mirror open O_TRUNC frees", Quota{Bytes: 400}, func(s *Sandbox) error {
			h, err := s.RootDir().Open(ctx, "big", unix.O_WRONLY|unix.O_TRUNC)
			if err != nil {
				return err
			}
			defer func() { h.Release(ctx); h.File().Close() }()
			_, err = h.WriteAt([]byte("small"), 0)
			return err
		}, ""},
		{"mirror fallocate past bytes", Quota{Bytes: 450}, func(s *Sandbox) error {
			h, err := s.RootDir().Open(ctx, "a", unix.O_WRONLY)
			if err != nil {
				return err
			}
			defer func() { h.Release(ctx); h.File().Close() }()
			return h.Allocate(0, 151, 0)
		}, "bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			mk(t, root, base)
			s := openScanned(t, root)
			checkUsage(t, s, root)
			s.Quota().Set(c.quota)
			before := snapshot(t, root)
			err := c.op(s)
			if c.bound == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
			} else {
				wantQuotaErr(t, err, c.bound)
				if after := snapshot(t, root); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Fatalf("tree changed by a refused write:\n%v\nwas\n%v", after, before)
				}
				if got, _ := os.ReadFile(filepath.Join(root, "a")); string(got) != a {
					t.Fatalf("/a = %q, want its old bytes", got)
				}
			}
			noTemps(t, root)
			checkUsage(t, s, root)
			if u := s.Quota().Usage(); c.quota.Bytes > 0 && u.Bytes > c.quota.Bytes || c.quota.Entries > 0 && u.Entries > c.quota.Entries {
				t.Fatalf("usage %+v past the quota", u)
			}
		})
	}
}

// TestQuotaConcurrentWriters: writers racing for the last room never pass
// the bound together, API and mirror alike, while scans run beside them;
// the counts are a walk's after.
func TestQuotaConcurrentWriters(t *testing.T) {
	root := t.TempDir()
	mk(t, root, map[string]string{"f": ""})
	s := openScanned(t, root)
	s.Quota().Set(Quota{Bytes: 1000, Entries: 11})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	stop := make(chan struct{})
	scans := make(chan struct{})
	go func() {
		defer close(scans)
		for {
			select {
			case <-stop:
				return
			default:
				s.Quota().Scan(ctx)
			}
		}
	}()
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := s.WriteFile(ctx, fmt.Sprintf("/w%d", i), bytes.NewReader(make([]byte, 50)), WriteOptions{})
			if err != nil && !errors.Is(err, ErrQuota) {
				t.Error(err)
			}
			if err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
		go func() {
			defer wg.Done()
			h, err := s.RootDir().Open(ctx, "f", unix.O_WRONLY)
			if err != nil {
				t.Error(err)
				return
			}
			defer func() { h.Release(ctx); h.File().Close() }()
			if _, err := h.WriteAt(make([]byte, 50), int64(i)*50); err != nil && !errors.Is(err, ErrQuota) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-scans
	u := s.Quota().Usage()
	if u.Bytes > 1000 || u.Entries > 11 {
		t.Fatalf("usage %+v past the quota", u)
	}
	if ok > 10 {
		t.Fatalf("%d new files of 11 entries", ok)
	}
	checkUsage(t, s, root)
}

// TestQuotaScanCorrects: an outside change is counted by the next scan;
// with the kernel watch on, it brings one soon on its own.
func TestQuotaScanCorrects(t *testing.T) {
	root := t.TempDir()
	mk(t, root, map[string]string{"a": "aaaa"})
	s := openScanned(t, root)
	s.quota.SetIntervals(quota.Intervals{Every: quota.DefaultIntervals.Every, Soon: 50 * time.Millisecond})
	mk(t, root, map[string]string{"out/side": strings.Repeat("o", 1000)})
	if u := s.Quota().Usage(); u.Bytes != 4 || u.Entries != 1 {
		t.Fatalf("usage before a scan %+v, want the old counts", u)
	}
	if _, err := s.Quota().Scan(ctx); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, root)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.StartWatching(wctx, nil); err != nil {
		t.Fatal(err)
	}
	<-s.Watch().Ready()
	mk(t, root, map[string]string{"later": strings.Repeat("l", 500)})
	deadline := time.Now().Add(5 * time.Second)
	for s.Quota().Usage().Bytes != 1504 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	checkUsage(t, s, root)
}

// TestQuotaAtTheBoundExisting: at the entry bound, a create of a name that
// is there answers as it would with room (the file opened, EEXIST), never
// the quota.
func TestQuotaAtTheBoundExisting(t *testing.T) {
	root := t.TempDir()
	mk(t, root, map[string]string{"f": "old", "d/": ""})
	s := openScanned(t, root)
	s.Quota().Set(Quota{Entries: 2})
	h, _, err := s.RootDir().Create(ctx, "f", unix.O_WRONLY, 0o644, -1, -1)
	if err != nil {
		t.Fatalf("create of an existing file at the bound: %v", err)
	}
	h.Release(ctx)
	h.File().Close()
	for _, c := range []struct {
		name string
		op   func() error
	}{
		{"mirror create O_EXCL", func() error {
			_, _, err := s.RootDir().Create(ctx, "f", unix.O_WRONLY|unix.O_EXCL, 0o644, -1, -1)
			return err
		}},
		{"mirror mkdir", func() error { _, err := s.RootDir().Mkdir(ctx, "d", 0o755, -1, -1); return err }},
		{"mkdir", func() error { return s.Mkdir(ctx, "/d", false, 0) }},
		{"mirror link", func() error { d := s.RootDir(); _, err := d.Link(ctx, d, "f", "d"); return err }},
	} {
		if err := c.op(); !errors.Is(err, fs.ErrExist) || errors.Is(err, ErrQuota) {
			t.Errorf("%s of an existing name at the bound: %v, want EEXIST", c.name, err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(root, "f")); string(got) != "old" {
		t.Errorf("f = %q", got)
	}
	checkUsage(t, s, root)
}

// TestQuotaBeforeFirstScan: a write right after Open, to a tree already
// past its quota, waits for the first scan and is refused.
func TestQuotaBeforeFirstScan(t *testing.T) {
	root := t.TempDir()
	mk(t, root, map[string]string{"big": strings.Repeat("b", 1000)})
	s, err := Open("default", root, Options{Quota: Quota{Bytes: 500}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.WriteFile(ctx, "/new", strings.NewReader("x"), WriteOptions{})
	wantQuotaErr(t, err, "bytes")
	if u := s.Quota().Usage(); u.Bytes != 1000 || u.Entries != 1 || u.ScannedAt.IsZero() {
		t.Fatalf("usage %+v, want the tree's, scanned", u)
	}
	// Freeing passes, over the bound too.
	if _, err := s.WriteFile(ctx, "/big", strings.NewReader("small"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, root)
}

// TestQuotaOutsideGrowthThenDelete: a file an outside writer grew past
// the counts (truncate -s 1T), removed through the daemon before a rescan
// counted it, frees nothing it was not counted for: usage never goes
// negative, and a write past the bound is still refused.
func TestQuotaOutsideGrowthThenDelete(t *testing.T) {
	root := t.TempDir()
	mk(t, root, map[string]string{"kept": strings.Repeat("k", 1000), "x": ""})
	s := openScanned(t, root)
	// No rescan during the test: the delete alone.
	s.quota.SetIntervals(quota.Intervals{Every: time.Hour, Soon: time.Hour})
	s.Quota().Set(Quota{Bytes: 1 << 20})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.StartWatching(wctx, nil); err != nil {
		t.Fatal(err)
	}
	<-s.Watch().Ready()
	if err := os.Truncate(filepath.Join(root, "x"), 1<<40); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !s.quota.Dirty() {
		if time.Now().After(deadline) {
			t.Fatal("the outside truncate was not heard")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Remove(ctx, "/x", false); err != nil {
		t.Fatal(err)
	}
	if u := s.Quota().Usage(); u.Bytes < 1000 || u.Entries < 1 {
		t.Fatalf("usage %+v after the delete; want at least what kept holds (1000 bytes, 1 entry)", u)
	}
	_, err := s.WriteFile(ctx, "/big", strings.NewReader(strings.Repeat("b", 2<<20)), WriteOptions{})
	if !errors.Is(err, ErrQuota) {
		t.Errorf("a 2 MiB write under a 1 MiB bound after the delete: %v, want refused", err)
	}
	if _, err := s.Quota().Scan(ctx); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, root)
}
