package daemon

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"sandfs/core"
	"sandfs/internal/statedir"
	"sandfs/rest"
)

// testHost is a host with a fixed "default" and a --sandboxes DIR, run
// until the test ends.
type testHost struct {
	h     *Host
	d     *Dir
	reg   *rest.Registry
	dir   string // DIR
	state string
	log   *strings.Builder
}

func newTestHost(t *testing.T, def core.Quota) *testHost {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	th := &testHost{reg: rest.NewRegistry(), dir: filepath.Join(t.TempDir(), "sandboxes"), state: t.TempDir(), log: &strings.Builder{}}
	log := slog.New(slog.NewTextHandler(&lockedWriter{b: th.log}, nil))
	th.h = New(ctx, Config{Registry: th.reg, State: th.state, History: true, Tokens: true, Log: log})
	if _, err := th.h.Start(core.DefaultSandbox, OpenPath(core.DefaultSandbox, t.TempDir()), true, core.Quota{}); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(th.h, th.dir, def)
	if err != nil {
		t.Fatal(err)
	}
	th.d = d
	d.Rescan()
	go d.Run(ctx)
	t.Cleanup(func() {
		d.Close()
		th.h.Close()
		cancel()
	})
	return th
}

// waitServed waits up to a second for name to be served (or not).
func (th *testHost) waitServed(t *testing.T, name string, want bool) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for (th.reg.Get(name) != nil) != want {
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s served=%v after 1s, want %v; registry %v\nlog:\n%s", name, !want, want, th.reg.Names(), th.logText())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (th *testHost) logText() string {
	lw.Lock()
	defer lw.Unlock()
	return th.log.String()
}

func TestDirFollowsMkdirAndRmdir(t *testing.T) {
	th := newTestHost(t, core.Quota{Bytes: 1 << 20, Entries: 10})
	if err := os.Mkdir(filepath.Join(th.dir, "early"), 0o755); err != nil {
		t.Fatal(err)
	}
	th.waitServed(t, "early", true)
	sb := th.reg.Get("early")
	if got := sb.Quota().Bound(); got != (core.Quota{Bytes: 1 << 20, Entries: 10}) {
		t.Errorf("quota of a sandbox of DIR keeping none = %+v, want --default-quota", got)
	}
	if err := os.WriteFile(filepath.Join(th.dir, "early", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Renamed away, then made again under another name.
	if err := os.Rename(filepath.Join(th.dir, "early"), filepath.Join(th.dir, "later")); err != nil {
		t.Fatal(err)
	}
	th.waitServed(t, "early", false)
	th.waitServed(t, "later", true)
	if _, err := th.reg.Get("later").Stat(context.Background(), "/f"); err != nil {
		t.Errorf("the renamed sandbox lost its file: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(th.dir, "later")); err != nil {
		t.Fatal(err)
	}
	th.waitServed(t, "later", false)
	// Its state is archived, for a person, never served to a sandbox made
	// again under the name (incarnation.go); its token is no longer where
	// a new one would find it.
	// (The registry forgets the name first; the state is archived once the
	// sandbox is closed.)
	var archived []string
	for deadline := time.Now().Add(30 * time.Second); len(archived) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		th.d.mu.Lock() // the manager holds it while it stops and archives
		archived, _ = filepath.Glob(filepath.Join(th.state, "archive", "later-*", statedir.TokenFile))
		th.d.mu.Unlock()
	}
	if len(archived) != 1 {
		t.Errorf("the state of a sandbox removed by hand is not archived: %v", archived)
	}
	if _, err := os.Stat(filepath.Join(th.state, "sandboxes", "later", statedir.TokenFile)); !os.IsNotExist(err) {
		t.Errorf("the token of a sandbox removed by hand is still in its place: %v", err)
	}
}

func TestDirSkipsWhatIsNoSandbox(t *testing.T) {
	th := newTestHost(t, core.Quota{})
	target := t.TempDir()
	for _, mk := range []func() error{
		func() error { return os.Symlink(target, filepath.Join(th.dir, "link")) },
		func() error { return os.WriteFile(filepath.Join(th.dir, "file"), nil, 0o644) },
		func() error { return os.Mkdir(filepath.Join(th.dir, "Upper"), 0o755) },
		func() error { return os.Mkdir(filepath.Join(th.dir, "a_b"), 0o755) },
		func() error { return os.Mkdir(filepath.Join(th.dir, "default"), 0o755) },
		func() error { return os.Mkdir(filepath.Join(th.dir, "ok"), 0o755) },
	} {
		if err := mk(); err != nil {
			t.Fatal(err)
		}
	}
	th.waitServed(t, "ok", true) // events are handled in order: the others were seen
	for _, n := range []string{"link", "file", "Upper", "a_b"} {
		if th.reg.Get(n) != nil {
			t.Errorf("%s is served", n)
		}
	}
	if sb := th.reg.Get(core.DefaultSandbox); sb == nil || strings.HasPrefix(sb.HostRoot(), th.dir) {
		t.Errorf("DIR/default took the fixed default's place")
	}
	log := th.logText()
	for _, n := range []string{"Upper", "a_b", "default"} {
		if c := strings.Count(log, "name="+n); c != 1 {
			t.Errorf("%d log lines name %s, want one:\n%s", c, n, log)
		}
	}
	th.d.Rescan() // no second line
	if c := strings.Count(th.logText(), "name=Upper"); c != 1 {
		t.Errorf("a rescan logged Upper again (%d lines)", c)
	}
}

func TestDirManager(t *testing.T) {
	th := newTestHost(t, core.Quota{Bytes: 100})
	ctx := context.Background()
	tok, err := th.d.Create(ctx, "made", core.Quota{Bytes: 4096, Entries: 3})
	if err != nil {
		t.Fatal(err)
	}
	if th.reg.Get("made") == nil {
		t.Fatal("Create answered before serving the sandbox")
	}
	sd := filepath.Join(th.state, "sandboxes", "made")
	b, err := os.ReadFile(filepath.Join(sd, statedir.TokenFile))
	if err != nil || strings.TrimSpace(string(b)) != tok || len(tok) != 64 {
		t.Errorf("token file %q (%v), Create answered %q", b, err, tok)
	}
	for _, f := range []string{statedir.TokenFile, statedir.QuotaFile} {
		if fi, err := os.Stat(filepath.Join(sd, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want mode 0600", f, fi, err)
		}
	}
	if q, _ := os.ReadFile(filepath.Join(sd, statedir.QuotaFile)); string(q) != `{"bytes":4096,"entries":3}`+"\n" {
		t.Errorf("quota.json = %q", q)
	}
	if fi, err := os.Lstat(filepath.Join(th.dir, "made")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Errorf("DIR/made: %v %v", fi, err)
	}
	time.Sleep(100 * time.Millisecond) // the watch's event for it: not doubled
	if n := strings.Count(th.logText(), "serving sandbox made"); n != 1 {
		t.Errorf("served %d times", n)
	}

	for _, c := range []struct {
		name string
		want error
	}{{"made", fs.ErrExist}, {"default", fs.ErrExist}, {"..", fs.ErrInvalid}, {"a/b", fs.ErrInvalid}, {"Up", fs.ErrInvalid}, {"", fs.ErrInvalid}} {
		if _, err := th.d.Create(ctx, c.name, core.Quota{}); !errors.Is(err, c.want) {
			t.Errorf("Create(%q) = %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(th.dir), "b")); err == nil {
		t.Error("Create(a/b) made something")
	}

	if err := th.d.SetQuota(ctx, "made", core.Quota{Bytes: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	if q := th.reg.Get("made").Quota().Bound(); q != (core.Quota{Bytes: 1 << 30}) {
		t.Errorf("quota after SetQuota = %+v", q)
	}
	if err := th.d.SetQuota(ctx, "nope", core.Quota{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SetQuota(nope) = %v", err)
	}

	// Remove: the tree (a symlink out of it included) goes, nothing outside.
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "keep"), []byte("k"), 0o644)
	sb := th.reg.Get("made")
	if err := sb.Mkdir(ctx, "/d/e", true, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(th.dir, "made", "d", "out")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want error
	}{{"default", fs.ErrPermission}, {"nope", fs.ErrNotExist}} {
		if err := th.d.Remove(ctx, c.name); !errors.Is(err, c.want) {
			t.Errorf("Remove(%q) = %v, want %v", c.name, err, c.want)
		}
	}
	if err := th.d.Remove(ctx, "made"); err != nil {
		t.Fatal(err)
	}
	if th.reg.Get("made") != nil {
		t.Error("still served after Remove")
	}
	if _, err := os.Lstat(filepath.Join(th.dir, "made")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the sandbox's directory after Remove: %v", err)
	}
	// Its state is gone but the seq mark, which a sandbox made again
	// under the name numbers above.
	if ents, err := os.ReadDir(sd); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Error(err)
	} else if len(ents) > 1 || len(ents) == 1 && ents[0].Name() != "seqmark" {
		t.Errorf("the state after Remove holds %v, want the seq mark alone", ents)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("Remove followed a symlink: %v", err)
	}
	// A quota kept at start wins over --default-quota.
	if _, err := th.d.Create(ctx, "again", core.Quota{}); err != nil {
		t.Fatal(err)
	}
	if q := th.reg.Get("again").Quota().Bound(); q != (core.Quota{Bytes: 100}) {
		t.Errorf("quota of a sandbox made with none = %+v, want --default-quota", q)
	}
}

// TestKeptAcrossRestart: a sandbox's token and quota.json are kept: a host
// started again on the same DIR and state serves it with both, and a
// sandbox of DIR that keeps no quota takes --default-quota, a fixed one
// none.
func TestKeptAcrossRestart(t *testing.T) {
	ctx := context.Background()
	dir, state, root := filepath.Join(t.TempDir(), "sb"), t.TempDir(), t.TempDir()
	run := func(def core.Quota) (*Host, *Dir, *rest.Registry, func()) {
		reg := rest.NewRegistry()
		h := New(ctx, Config{Registry: reg, State: state, History: true, Tokens: true, Log: slog.New(slog.DiscardHandler)})
		if _, err := h.Start(core.DefaultSandbox, OpenPath(core.DefaultSandbox, root), true, def); err != nil {
			t.Fatal(err)
		}
		d, err := OpenDir(h, dir, def)
		if err != nil {
			t.Fatal(err)
		}
		d.Rescan()
		return h, d, reg, func() { d.Close(); h.Close() }
	}
	h, d, _, stop := run(core.Quota{})
	tok, err := d.Create(ctx, "kept", core.Quota{Bytes: 77, Entries: 7})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(ctx, "plain", core.Quota{}); err != nil {
		t.Fatal(err)
	}
	if err := d.SetQuota(ctx, core.DefaultSandbox, core.Quota{Entries: 5}); err != nil {
		t.Fatal(err)
	}
	defTok := h.Token(core.DefaultSandbox)
	stop()

	h, _, reg, stop := run(core.Quota{Bytes: 1000})
	defer stop()
	for _, c := range []struct {
		name  string
		quota core.Quota
		token string
	}{
		{"kept", core.Quota{Bytes: 77, Entries: 7}, tok},
		{"plain", core.Quota{Bytes: 1000}, ""},
		{core.DefaultSandbox, core.Quota{Entries: 5}, defTok},
	} {
		sb := reg.Get(c.name)
		if sb == nil {
			t.Fatalf("%s not served after the restart", c.name)
		}
		if sb.Quota().Bound() != c.quota {
			t.Errorf("%s: quota %+v after the restart, want %+v", c.name, sb.Quota().Bound(), c.quota)
		}
		if got := h.Token(c.name); len(got) != 64 || (c.token != "" && got != c.token) {
			t.Errorf("%s: token %q after the restart, want %q", c.name, got, c.token)
		}
	}
}

// TestDirRescan: Rescan serves what DIR holds and stops what it no longer
// holds, as after an overflow of the watch (whose error starts one).
func TestDirRescan(t *testing.T) {
	th := newTestHost(t, core.Quota{})
	// A change the watch's reader has not seen yet is what a rescan is
	// for; an overflow reported on the watch's error channel starts one.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(th.dir, "one"), 0o755))
	th.d.Rescan()
	if th.reg.Get("one") == nil {
		t.Fatal("Rescan did not serve DIR/one")
	}
	th.d.w.Errors <- fsnotify.ErrEventOverflow
	deadline := time.Now().Add(time.Second)
	for !strings.Contains(th.logText(), "overflowed") {
		if time.Now().After(deadline) {
			t.Fatalf("no rescan after an overflow:\n%s", th.logText())
		}
		time.Sleep(5 * time.Millisecond)
	}
	must(os.Remove(filepath.Join(th.dir, "one")))
	th.d.Rescan()
	if th.reg.Get("one") != nil {
		t.Error("Rescan kept serving a removed DIR/one")
	}
}

// TestDirRemoveSwappedForSymlink: DIR/NAME swapped for a symlink to
// another directory while served: neither the watch's stop nor a Remove
// touches what the symlink points to.
func TestDirRemoveSwappedForSymlink(t *testing.T) {
	th := newTestHost(t, core.Quota{})
	ctx := context.Background()
	if _, err := th.d.Create(ctx, "victim", core.Quota{}); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "precious"), []byte("p"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(th.dir, "victim"), filepath.Join(th.dir, ".gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(th.dir, "victim")); err != nil {
		t.Fatal(err)
	}
	err := th.d.Remove(ctx, "victim") // the watch may have stopped it first
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Remove: %v", err)
	}
	th.waitServed(t, "victim", false)
	if b, err := os.ReadFile(filepath.Join(outside, "precious")); err != nil || string(b) != "p" {
		t.Errorf("the symlink's target was touched: %q %v", b, err)
	}
	if fi, err := os.Lstat(filepath.Join(th.dir, "victim")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("DIR/victim: %v %v", fi, err)
	}
}
