package replicate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/natsout/natstest"
)

var ctx = context.Background()

// box is a sandbox keeping state, its root a t.TempDir() holding files
// f000…f099, each its own content.
func box(t *testing.T, name string) (*core.Sandbox, string) {
	t.Helper()
	root := t.TempDir()
	for i := 0; i < 100; i++ {
		write(t, root, fmt.Sprintf("f%03d", i), content(i, 0))
	}
	sb, err := core.Open(name, root, core.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb, root
}

// added is box(t, name) replicated by r.
func added(t *testing.T, r *Replicator, name string) (*core.Sandbox, string) {
	t.Helper()
	sb, root := box(t, name)
	if err := r.Add(name, sb); err != nil {
		t.Fatal(err)
	}
	return sb, root
}

// content is file i's bytes at version v: distinct for every (i, v).
func content(i, v int) []byte {
	b := make([]byte, 1000+37*i)
	for k := range b {
		b[k] = byte('a' + (i+k+v*7)%26)
	}
	return append(b, fmt.Sprintf("\nfile %d version %d\n", i, v)...)
}

func write(t *testing.T, root, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func start(t *testing.T, b *natstest.Broker) *Replicator {
	t.Helper()
	r, err := Start(ctx, Config{URL: b.URL(), Host: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func mkCheckpoint(t *testing.T, sb *core.Sandbox) checkpoint.Checkpoint {
	t.Helper()
	cp, err := checkpoint.Create(ctx, sb, checkpoint.Options{})
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	return cp
}

// waitSent waits until the sandbox's replication sent n manifests and is
// behind by nothing, and answers its stats.
func waitSent(t *testing.T, r *Replicator, name string, n uint64) Stats {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, ok := r.Stats(name)
		if ok && st.Manifests >= n && st.Behind == 0 {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s: after 60 s, stats %+v: want %d manifests sent and nothing behind", name, st, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fleet is a reader's view of the buckets.
type fleet struct {
	obs jetstream.ObjectStore
	js  jetstream.JetStream
}

func open(t *testing.T, b *natstest.Broker) *fleet {
	t.Helper()
	js := b.JetStream(t)
	obs, err := js.ObjectStore(ctx, ObjectsBucket)
	if err != nil {
		t.Fatalf("objects bucket: %v", err)
	}
	return &fleet{obs: obs, js: js}
}

// objects is every object name in the fleet's two buckets (small.go) with
// its size, failing on a name twice, or a small object in the Object
// Store and a large one in the KV.
func (f *fleet) objects(t *testing.T) map[string]uint64 {
	t.Helper()
	list, err := f.obs.List(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, o := range list {
		if _, dup := out[o.Name]; dup {
			t.Fatalf("object %s listed twice", o.Name)
		}
		if len(o.Name) == 64 && o.Size <= SmallMax { // not a manifest's entries
			t.Fatalf("object %s of %d bytes is in the Object Store, not the small objects' bucket", o.Name, o.Size)
		}
		out[o.Name] = o.Size
	}
	kv, err := f.js.KeyValue(ctx, SmallBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return out
	} else if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := out[k]; dup {
			t.Fatalf("object %s in both buckets", k)
		}
		out[k] = uint64(len(e.Value()))
	}
	return out
}

func (f *fleet) kv(t *testing.T, sandbox string) jetstream.KeyValue {
	t.Helper()
	kv, err := f.js.KeyValue(ctx, BucketOf(sandbox))
	if err != nil {
		t.Fatalf("manifests of %s: %v", sandbox, err)
	}
	return kv
}

// wantManifest fails unless the KV holds cp's manifest once, its entries
// those the store gives for cp, and answers it.
func (f *fleet) wantManifest(t *testing.T, sb *core.Sandbox, cp checkpoint.Checkpoint) Manifest {
	t.Helper()
	kv := f.kv(t, sb.Name())
	m, err := ReadManifest(ctx, kv, f.obs, cp.ID)
	if err != nil {
		t.Fatalf("manifest %s: %v", cp.ID, err)
	}
	hist, err := kv.History(ctx, cp.ID)
	if err != nil || len(hist) != 1 {
		t.Fatalf("manifest %s: %d values in the KV (%v), want 1", cp.ID, len(hist), err)
	}
	ents, err := checkpoint.Entries(sb, cp.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]Entry, len(ents))
	for i, e := range ents {
		want[i] = EntryOf(e)
	}
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(m.Entries)
	if string(wj) != string(gj) {
		t.Fatalf("manifest %s: entries\n%s\nwant\n%s", cp.ID, gj, wj)
	}
	if m.Checkpoint.ID != cp.ID || m.Sandbox != sb.Name() || m.Checkpoint.Files != cp.Files || m.Host != "h1" {
		t.Fatalf("manifest %s: header %+v (sandbox %s, host %s), want of %+v", cp.ID, m.Checkpoint, m.Sandbox, m.Host, cp)
	}
	return m
}

// hashes are the objects a manifest names.
func hashes(m Manifest) map[string]bool {
	out := map[string]bool{}
	for _, e := range m.Entries {
		if e.Type == "file" {
			out[e.Hash] = true
		}
	}
	return out
}
