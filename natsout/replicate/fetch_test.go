package replicate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/core/checkpoint/cas"
	"sandfs/natsout/natstest"
)

// target is a sandbox of an empty root keeping state: where a host
// taking a sandbox up fetches into.
func target(t *testing.T, name string) *core.Sandbox {
	t.Helper()
	sb, err := core.Open(name, t.TempDir(), core.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Fetch brings the newest checkpoint and only the objects the local store
// lacks; the imported tree is the sender's, entry for entry, and a copy of
// it holds the sender's bytes. The sandbox's token and quota come too.
func TestFetchOnlyMissing(t *testing.T) {
	b := natstest.Start(t)
	r := start(t, b)
	sb, root := added(t, r, "alpha")
	r.Describe("alpha", Info{Token: "tok-alpha-1", Quota: InfoQuota{Bytes: 1 << 30, Entries: 500}})
	mkCheckpoint(t, sb)
	for _, i := range []int{3, 50, 97} {
		write(t, root, fmt.Sprintf("f%03d", i), content(i, 1))
	}
	cp2 := mkCheckpoint(t, sb)
	waitSent(t, r, "alpha", 2)

	dst := target(t, "alpha")
	// The store has 40 of the 100 objects already.
	var want int64
	for i := 0; i < 100; i++ {
		c := content(i, 0)
		if i == 3 || i == 50 || i == 97 {
			c = content(i, 1)
		}
		if i < 40 {
			if _, err := checkpoint.PutObject(dst, sum(c), bytes.NewReader(c), int64(len(c))); err != nil {
				t.Fatal(err)
			}
		} else {
			want += int64(len(c))
		}
	}
	got, err := r.Fleet().Fetch(ctx, "alpha", "", dst)
	if err != nil {
		t.Fatal(err)
	}
	if got.Checkpoint.ID != cp2.ID || got.Checkpoint.Seq != cp2.Seq || got.Host != "h1" {
		t.Fatalf("fetched %+v from %s, want the newest, %s at seq %d, from h1", got.Checkpoint, got.Host, cp2.ID, cp2.Seq)
	}
	if got.Objects != 60 || got.Bytes != want {
		t.Fatalf("fetched %d objects, %d bytes; want 60, %d", got.Objects, got.Bytes, want)
	}
	a, _ := checkpoint.Entries(sb, cp2.ID)
	z, err := checkpoint.Entries(dst, cp2.ID)
	if err != nil {
		t.Fatal(err)
	}
	aj, _ := json.Marshal(a)
	zj, _ := json.Marshal(z)
	if string(aj) != string(zj) {
		t.Fatalf("imported entries\n%s\nwant\n%s", zj, aj)
	}
	copyDir := t.TempDir()
	fd, err := unix.Open(copyDir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := checkpoint.CopyTree(ctx, dst, cp2.ID, fd); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 50, 99} {
		back, _ := os.ReadFile(filepath.Join(copyDir, fmt.Sprintf("f%03d", i)))
		orig, _ := os.ReadFile(filepath.Join(root, fmt.Sprintf("f%03d", i)))
		if !bytes.Equal(back, orig) {
			t.Fatalf("f%03d: the copy holds %d bytes unlike the sender's %d", i, len(back), len(orig))
		}
	}
	// Fetched again into another store: everything is fetched; into the
	// same one, the checkpoint is there already.
	if _, err := r.Fleet().Fetch(ctx, "alpha", cp2.ID, dst); err == nil || !strings.Contains(err.Error(), "exist") {
		t.Fatalf("a second fetch into the same store: %v, want the checkpoint refused as existing", err)
	}
	info, ok, err := r.Fleet().Info(ctx, "alpha")
	if err != nil || !ok || info.Token != "tok-alpha-1" || info.Quota.Entries != 500 || info.Quota.Bytes != 1<<30 {
		t.Fatalf("info %+v, %v, %v; want the token and quota described", info, ok, err)
	}
	if _, err := r.Fleet().Fetch(ctx, "nobody", "", target(t, "nobody")); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("fetch of a sandbox the fleet has no checkpoint of: %v, want ErrNoCheckpoint", err)
	}
}

// hostile is a fleet a test writes as a hostile sender would.
type hostile struct {
	kv  jetstream.KeyValue
	obs jetstream.ObjectStore
	f   *Fleet
}

func openHostile(t *testing.T, b *natstest.Broker, name string) *hostile {
	t.Helper()
	f := open2(t, b)
	kv, err := f.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: BucketOf(name)})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := f.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: ObjectsBucket})
	if err != nil {
		t.Fatal(err)
	}
	return &hostile{kv: kv, obs: obs, f: NewFleet(f.js)}
}

// open2 is a connection to the broker with no bucket asked for yet.
func open2(t *testing.T, b *natstest.Broker) *fleet {
	t.Helper()
	r := start(t, b)
	return &fleet{js: r.js}
}

func (h *hostile) put(t *testing.T, name, id string, entries []Entry) {
	t.Helper()
	m := Manifest{Version: ManifestVersion, Sandbox: name, Host: "evil",
		Checkpoint: Checkpoint{ID: id, Reason: "manual", Seq: 7, Created: time.Now().UTC()}, Entries: entries}
	data, _ := json.Marshal(m)
	if _, err := h.kv.Put(ctx, id, data); err != nil {
		t.Fatal(err)
	}
}

// A manifest whose entries break the tree's shape is refused before any
// object is fetched, and nothing of it is imported.
func TestFetchRefusesBadManifests(t *testing.T) {
	h, root, file := hostileGood(t)
	cases := map[string][]Entry{
		"dotdot":       {root, file, {Path: "../x", Type: "file", Mode: 0o644, Hash: sum(good), Size: int64(len(good))}},
		"dotdot-in":    {root, file, {Path: "/a/../../x", Type: "dir", Mode: 0o755}},
		"relative":     {root, file, {Path: "x", Type: "dir", Mode: 0o755}},
		"bad-hash":     {root, {Path: "/ok", Type: "file", Mode: 0o644, Size: 3, Hash: "../../etc/passwd"}},
		"upper-hash":   {root, {Path: "/ok", Type: "file", Mode: 0o644, Size: 3, Hash: strings.ToUpper(sum(good))}},
		"kind":         {root, file, {Path: "/dev", Type: "fifo", Mode: 0o644}},
		"no-root":      {file},
		"orphan":       {root, file, {Path: "/no/such", Type: "dir", Mode: 0o755}},
		"under-a-file": {root, file, {Path: "/ok/x", Type: "dir", Mode: 0o755}},
		"twice":        {root, file, file},
		"mode":         {root, {Path: "/ok", Type: "file", Mode: 0o100644, Size: int64(len(good)), Hash: sum(good)}},
		"empty-link":   {root, file, {Path: "/l", Type: "symlink", Mode: 0o777}},
	}
	n := 0
	for name, entries := range cases {
		t.Run(name, func(t *testing.T) {
			n++
			id := fmt.Sprintf("cp_%012x", n)
			h.put(t, "evil", id, entries)
			dst := target(t, "evil")
			if _, err := h.f.Fetch(ctx, "evil", id, dst); err == nil {
				t.Fatalf("manifest %s fetched; want it refused", name)
			}
			if cps, _ := checkpoint.List(dst); len(cps) != 0 {
				t.Fatalf("a refused manifest left checkpoints %+v", cps)
			}
			if has, _ := checkpoint.HasObject(dst, sum(good)); has {
				t.Fatal("a refused manifest's object was fetched")
			}
		})
	}
	// The same tree, right, is fetched: the refusals are the entries'.
	h.put(t, "evil", "cp_0000000000ff", []Entry{root, file, {Path: "/d", Type: "dir", Mode: 0o750},
		{Path: "/d/l", Type: "symlink", Mode: 0o777, Target: "../ok"}})
	if got, err := h.f.Fetch(ctx, "evil", "cp_0000000000ff", target(t, "evil")); err != nil || got.Objects != 1 {
		t.Fatalf("the good manifest: %+v, %v", got, err)
	}
	// A manifest of another sandbox under this one's bucket is refused.
	h.put(t, "other", "cp_0000000000fe", []Entry{root, file})
	m, _ := h.kv.Get(ctx, "cp_0000000000fe")
	if _, err := h.kv.Put(ctx, "cp_0000000000fd", m.Value()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.f.Fetch(ctx, "evil", "cp_0000000000fd", target(t, "evil")); err == nil {
		t.Fatal("a manifest naming another sandbox and checkpoint was fetched")
	}
}

// An object whose bytes do not hash to its name is refused, and nothing
// of it is kept, from either bucket it may come from (small.go).
func TestFetchRefusesMismatchedObject(t *testing.T) {
	claimed := []byte("what the manifest names\n")
	served := []byte("other bytes, same length!")[:len(claimed)]
	for _, c := range []struct {
		bucket string
		put    func(h *hostile) error
	}{
		{"the Object Store", func(h *hostile) error {
			_, err := h.obs.PutBytes(ctx, sum(claimed), served)
			return err
		}},
		{"the small objects' KV", func(h *hostile) error {
			kv, err := h.f.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: SmallBucket})
			if err == nil {
				_, err = kv.Put(ctx, sum(claimed), served)
			}
			return err
		}},
	} {
		t.Run(c.bucket, func(t *testing.T) {
			b := natstest.Start(t)
			h := openHostile(t, b, "evil")
			if err := c.put(h); err != nil {
				t.Fatal(err)
			}
			h.put(t, "evil", "cp_000000000001", []Entry{{Path: "/", Type: "dir", Mode: 0o755},
				{Path: "/f", Type: "file", Mode: 0o644, Size: int64(len(claimed)), Hash: sum(claimed)}})
			dst := target(t, "evil")
			_, err := h.f.Fetch(ctx, "evil", "cp_000000000001", dst)
			if !errors.Is(err, cas.ErrMismatch) {
				t.Fatalf("fetch of an object of the wrong bytes: %v, want cas.ErrMismatch", err)
			}
			if has, _ := checkpoint.HasObject(dst, sum(claimed)); has {
				t.Fatal("the mismatched object was kept")
			}
			if has, _ := checkpoint.HasObject(dst, sum(served)); has {
				t.Fatal("the mismatched bytes were kept under their own name")
			}
			if cps, _ := checkpoint.List(dst); len(cps) != 0 {
				t.Fatalf("a refused fetch left checkpoints %+v", cps)
			}
			ents, _ := os.ReadDir(filepath.Join(dst.StateDir(), "objects"))
			for _, e := range ents {
				t.Fatalf("the store holds %s after a refused object", e.Name())
			}
		})
	}
}

// What a checkpoint would bring past the store's bound is refused before
// anything is fetched, as a checkpoint made here would be.
func TestFetchBoundedByTheStore(t *testing.T) {
	b := natstest.Start(t)
	h := openHostile(t, b, "big")
	body := bytes.Repeat([]byte("x"), 64<<10)
	if _, err := h.obs.PutBytes(ctx, sum(body), body); err != nil {
		t.Fatal(err)
	}
	h.put(t, "big", "cp_000000000001", []Entry{{Path: "/", Type: "dir", Mode: 0o755},
		{Path: "/f", Type: "file", Mode: 0o644, Size: int64(len(body)), Hash: sum(body)}})
	dst, err := core.Open("big", t.TempDir(), core.Options{StateDir: t.TempDir(), CheckpointMaxSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := h.f.Fetch(ctx, "big", "cp_000000000001", dst); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("a fetch past the store's bound: %v, want ENOSPC", err)
	}
	if has, _ := checkpoint.HasObject(dst, sum(body)); has {
		t.Fatal("the object was fetched past the bound")
	}
}

// good is the one good object of hostileGood's fleet.
var good = []byte("good bytes\n")

// hostileGood is a hostile fleet of sandbox "evil" holding one good
// object, with a root entry and a file entry naming it.
func hostileGood(t *testing.T) (*hostile, Entry, Entry) {
	t.Helper()
	h := openHostile(t, natstest.Start(t), "evil")
	if _, err := h.obs.PutBytes(ctx, sum(good), good); err != nil {
		t.Fatal(err)
	}
	return h, Entry{Path: "/", Type: "dir", Mode: 0o755},
		Entry{Path: "/ok", Type: "file", Mode: 0o644, Size: int64(len(good)), Hash: sum(good)}
}
