package inotify

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandfs/internal/testenv"
)

// watchedDir is a Watch watching a new temporary directory.
func watchedDir(t *testing.T) (*Watch, string) {
	t.Helper()
	k, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	dir := t.TempDir()
	if _, err := k.Add(dir); err != nil {
		t.Fatal(err)
	}
	return k, dir
}

// TestWatch: events are named by their watch when read, so the events of
// a watch removed before the read are dropped; a wait ends on events, on
// Interrupt, or at its timeout.
func TestWatch(t *testing.T) {
	k, dir := watchedDir(t)
	if _, err := k.Add(filepath.Join(dir, "missing")); err == nil {
		t.Error("a watch of a missing directory was added")
	}
	var got []Event
	collect := func(e Event) { got = append(got, e) }
	overflow := func() { t.Error("overflow") }

	for _, tc := range []struct {
		name   string
		change func() error
		want   []Event // name, op and dir only
	}{
		{"create", func() error { return os.WriteFile(filepath.Join(dir, "a"), []byte("x"), 0o644) },
			[]Event{{Name: filepath.Join(dir, "a"), Op: Create}, {Name: filepath.Join(dir, "a"), Op: Write}}},
		{"chmod", func() error { return os.Chmod(filepath.Join(dir, "a"), 0o600) },
			[]Event{{Name: filepath.Join(dir, "a"), Op: Chmod}}},
		{"rename", func() error { return os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "b")) },
			[]Event{{Name: filepath.Join(dir, "a"), Op: Rename}, {Name: filepath.Join(dir, "b"), Op: Create}}},
		{"remove", func() error { return os.Remove(filepath.Join(dir, "b")) },
			[]Event{{Name: filepath.Join(dir, "b"), Op: Remove}}},
		{"mkdir", func() error { return os.Mkdir(filepath.Join(dir, "d"), 0o755) },
			[]Event{{Name: filepath.Join(dir, "d"), Op: Create, Dir: true}}},
		{"rename a directory", func() error { return os.Rename(filepath.Join(dir, "d"), filepath.Join(dir, "e")) },
			[]Event{{Name: filepath.Join(dir, "d"), Op: Rename, Dir: true}, {Name: filepath.Join(dir, "e"), Op: Create, Dir: true}}},
	} {
		got = nil
		if err := tc.change(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); len(got) < len(tc.want) && time.Now().Before(deadline); {
			if k.Wait(time.Second) {
				if _, err := k.Read(collect, overflow, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
			continue
		}
		for i, e := range got {
			if e.Name != tc.want[i].Name || e.Op != tc.want[i].Op || e.Dir != tc.want[i].Dir || e.Self {
				t.Errorf("%s: event %d is %+v, want %+v", tc.name, i, e, tc.want[i])
			}
		}
	}

	// Queued, then its watch removed before the read: dropped.
	got = nil
	if err := os.WriteFile(filepath.Join(dir, "late"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	k.Remove(dir)
	if _, ok := k.wd[dir]; ok {
		t.Error("still watched after remove")
	}
	for k.Wait(100 * time.Millisecond) {
		k.Read(collect, overflow, 0)
	}
	if len(got) != 0 {
		t.Errorf("events of a removed watch were handed on: %+v", got)
	}

	// A wait ends early when interrupted.
	start := time.Now()
	go func() { time.Sleep(20 * time.Millisecond); k.Interrupt() }()
	if k.Wait(10 * time.Second) {
		t.Error("an interrupted wait reported events")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("interrupt ended the wait after %v", d)
	}
}

// TestWatchOverflow: more events than the kernel queues while nobody
// reads end in a queue overflow, handed to overflow after the events kept.
func TestWatchOverflow(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Fatal(err)
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("max_queued_events %q: %v", b, err)
	}
	if limit > 1<<18 {
		testenv.Skip(t, nil, "fs.inotify.max_queued_events is %d: overflowing it takes as many files", limit)
	}
	k, dir := watchedDir(t)
	for i := 0; i < limit+100; i++ {
		f, err := os.Create(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	events, overflows, afterOverflow := 0, 0, 0
	for k.Wait(100 * time.Millisecond) {
		k.Read(func(Event) {
			events++
			if overflows > 0 {
				afterOverflow++
			}
		}, func() { overflows++ }, 0)
	}
	if overflows != 1 || events != limit || afterOverflow != 0 {
		t.Errorf("read %d events and %d overflows (%d events after it); want %d events, then one overflow", events, overflows, afterOverflow, limit)
	}
}

// TestWatchBuffer: a watch reads into minBuf until a read fills it, then
// the buffer doubles read by read up to maxBuf; every event is handed on
// once, in order, across the growth.
func TestWatchBuffer(t *testing.T) {
	k, dir := watchedDir(t)
	if len(k.buf) != minBuf {
		t.Fatalf("a new watch reads into %d bytes, want %d", len(k.buf), minBuf)
	}
	// Creates of 39-byte names: 16 + 48 bytes a record (IN_CREATE only: the
	// files are opened read-only to make them, so nothing writes them).
	const n = 12_000 // 768,000 bytes queued: 16 KiB, 32, 64, 128, then 256 KiB reads
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		if limit, _ := strconv.Atoi(strings.TrimSpace(string(b))); limit < n {
			testenv.Skip(t, nil, "fs.inotify.max_queued_events is %d: fewer than the %d events of the test", limit, n)
		}
	}
	name := func(i int) string { return "file-" + strings.Repeat("x", 28) + strconv.Itoa(100000+i) }
	for i := 0; i < n; i++ {
		f, err := os.OpenFile(filepath.Join(dir, name(i)), os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	var got []string
	var sizes []int
	for k.Wait(100 * time.Millisecond) {
		sizes = append(sizes, len(k.buf))
		if _, err := k.Read(func(e Event) {
			if e.Has(Create) {
				got = append(got, filepath.Base(e.Name))
			}
		}, func() { t.Fatal("overflow") }, 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != n {
		t.Fatalf("%d creates handed on, want %d", len(got), n)
	}
	for i, g := range got {
		if g != name(i) {
			t.Fatalf("create %d is %s, want %s", i, g, name(i))
		}
	}
	want := []int{minBuf, 2 * minBuf, 4 * minBuf, 8 * minBuf, maxBuf, maxBuf}
	for i, w := range want {
		if i >= len(sizes) || sizes[i] != w {
			t.Fatalf("read buffers %v, want them to start %v", sizes, want)
		}
	}
	if len(k.buf) != maxBuf {
		t.Errorf("the buffer is %d bytes after the burst, want %d", len(k.buf), maxBuf)
	}
}

// TestWatchDrain: Drain hands on what is queued, reading on while reads
// come back full, and stops at its limit.
func TestWatchDrain(t *testing.T) {
	k, dir := watchedDir(t)
	count := 0
	collect := func(e Event) { count++ }
	overflow := func() { t.Fatal("overflow") }
	if err := k.Drain(collect, overflow, 16<<10); err != nil || count != 0 {
		t.Fatalf("an empty queue: %d events, %v", count, err)
	}
	// Creates of 39-byte names: 64 bytes a record.
	create := func(from, n int) {
		for i := from; i < from+n; i++ {
			f, err := os.OpenFile(filepath.Join(dir, "file-"+strings.Repeat("x", 28)+strconv.Itoa(100000+i)), os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	made := 0
	for _, tc := range []struct {
		name         string
		queued, want int
		limit        int
	}{
		{"a few", 3, 3, 16 << 10},
		{"more than a buffer, less than the limit", 700, 700, 64 << 10}, // 44,800 bytes: three reads
		{"more than the limit", 700, (16 << 10) / 64, 16 << 10},
	} {
		count = 0
		create(made, tc.queued)
		made += tc.queued
		if err := k.Drain(collect, overflow, tc.limit); err != nil {
			t.Fatal(err)
		}
		if count != tc.want {
			t.Errorf("%s: %d events handed on, want %d", tc.name, count, tc.want)
		}
		k.Drain(func(Event) {}, overflow, 1<<20)
		if q := k.Queued(); q != 0 {
			t.Fatalf("%s: %d bytes still queued", tc.name, q)
		}
	}
}
