package replicate

import (
	"bytes"
	"io"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"sandfs/core/checkpoint"
	"sandfs/natsout/natstest"
)

// An object of at most SmallMax bytes goes to the small objects' KV, a
// larger one to the Object Store; Fetch brings both back byte for byte.
func TestObjectsBySize(t *testing.T) {
	b := natstest.Start(t)
	r := start(t, b)
	sb, root := added(t, r, "sizes")
	small := bytes.Repeat([]byte("s"), SmallMax)
	large := bytes.Repeat([]byte("l"), SmallMax+1)
	write(t, root, "small", small)
	write(t, root, "large", large)
	mkCheckpoint(t, sb)
	waitSent(t, r, "sizes", 1)

	f := open(t, b)
	kv, err := f.js.KeyValue(ctx, SmallBucket)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctx, sum(small)); err != nil || !bytes.Equal(e.Value(), small) {
		t.Fatalf("the small object in the KV: %v", err)
	}
	if _, err := kv.Get(ctx, sum(large)); err != jetstream.ErrKeyNotFound {
		t.Fatalf("the large object in the small objects' KV: %v, want not found", err)
	}
	if back, err := f.obs.GetBytes(ctx, sum(large)); err != nil || !bytes.Equal(back, large) {
		t.Fatalf("the large object in the Object Store: %d bytes, %v", len(back), err)
	}
	got := f.objects(t) // fails on a small object in the Object Store
	if got[sum(small)] != SmallMax || got[sum(large)] != SmallMax+1 {
		t.Fatalf("the fleet's objects: %v", got)
	}

	dst := target(t, "sizes")
	fetched, err := r.Fleet().Fetch(ctx, "sizes", "", dst)
	if err != nil {
		t.Fatal(err)
	}
	if fetched.Objects != fetched.Checkpoint.Files || fetched.Bytes != fetched.Checkpoint.Bytes || fetched.Checkpoint.Files != 102 {
		t.Fatalf("fetched %+v, want every object of box's 100 files and the 2 written", fetched)
	}
	for _, want := range [][]byte{small, large} {
		o, err := checkpoint.OpenObject(dst, sum(want))
		if err != nil {
			t.Fatal(err)
		}
		back, err := io.ReadAll(o)
		o.Close()
		if err != nil || !bytes.Equal(back, want) {
			t.Fatalf("object of %d bytes fetched: %d bytes, %v", len(want), len(back), err)
		}
	}
}
