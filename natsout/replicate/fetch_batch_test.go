package replicate

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/natsout/natstest"
)

// smallObjects puts n objects of about size bytes (each its own) into kv
// and answers their hashes, sizes and bytes.
func smallObjects(t *testing.T, kv jetstream.KeyValue, n, size int) ([]string, map[string]int64, map[string][]byte) {
	t.Helper()
	var hashes []string
	sizes, body := map[string]int64{}, map[string][]byte{}
	for i := range n {
		b := bytes.Repeat([]byte(fmt.Sprintf("object %d;", i)), size/12+i%7)
		h := sum(b)
		if _, err := kv.Put(ctx, h, b); err != nil {
			t.Fatal(err)
		}
		hashes, sizes[h], body[h] = append(hashes, h), int64(len(b)), b
	}
	return hashes, sizes, body
}

// smallFleet is a fleet of sandbox "alpha" with a small objects' bucket.
func smallFleet(t *testing.T) (*hostile, jetstream.KeyValue) {
	t.Helper()
	h := openHostile(t, natstest.Start(t), "alpha")
	kv, err := h.f.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: SmallBucket})
	if err != nil {
		t.Fatal(err)
	}
	return h, kv
}

// total is the bytes of hashes, by sizes.
func total(hashes []string, sizes map[string]int64) int64 {
	var n int64
	for _, h := range hashes {
		n += sizes[h]
	}
	return n
}

// wantObjects fails unless sb's store holds each of hashes as body says.
func wantObjects(t *testing.T, sb *core.Sandbox, hashes []string, body map[string][]byte) {
	t.Helper()
	for _, h := range hashes {
		f, err := checkpoint.OpenObject(sb, h)
		if err != nil {
			t.Fatalf("object %s: %v", h, err)
		}
		got, _ := io.ReadAll(f)
		f.Close()
		if !bytes.Equal(got, body[h]) {
			t.Fatalf("object %s holds %d bytes unlike the %d put", h, len(got), len(body[h]))
		}
	}
}

// Small objects come in batches of many keys, split by count and by
// bytes; what the bucket lacks or deleted is answered as left, for the
// caller to look for elsewhere, and nothing else is.
func TestFetchSmallInBatches(t *testing.T) {
	h, kv := smallFleet(t)
	// 1,100 objects of about 8 KiB: past batchKeys and batchBytes both.
	hashes, sizes, body := smallObjects(t, kv, 1100, 8<<10)
	want := total(hashes[1:], sizes)
	if err := kv.Delete(ctx, hashes[0]); err != nil {
		t.Fatal(err)
	}
	absent := []string{sum([]byte("never sent 1")), sum([]byte("never sent 2"))}
	for _, a := range absent {
		sizes[a] = 12
	}
	dst := target(t, "alpha")
	n, rest, err := h.f.fetchSmall(ctx, storePut(dst), append(slices.Clone(hashes), absent...), sizes)
	if err != nil {
		t.Fatal(err)
	}
	wantRest := append([]string{hashes[0]}, absent...)
	slices.Sort(rest)
	slices.Sort(wantRest)
	if !slices.Equal(rest, wantRest) {
		t.Fatalf("left %d hashes %v, want the deleted one and the two never sent %v", len(rest), rest, wantRest)
	}
	if n != want {
		t.Fatalf("fetched %d bytes, want %d", n, want)
	}
	wantObjects(t, dst, hashes[1:], body)
}

// An answer the broker cuts short at its bytes' bound is asked again for
// the rest, until everything the bucket holds has come.
func TestFetchBatchAsksAgain(t *testing.T) {
	h, kv := smallFleet(t)
	// 60 objects of about 100 KiB in one batch: half again past the
	// answer's bound.
	hashes, sizes, body := smallObjects(t, kv, 60, 100<<10)
	dst := target(t, "alpha")
	n, left, err := h.f.fetchBatch(ctx, storePut(dst), hashes, sizes)
	if err != nil || len(left) != 0 {
		t.Fatalf("fetchBatch: %d left, %v", len(left), err)
	}
	if want := total(hashes, sizes); n != want {
		t.Fatalf("fetched %d bytes, want %d", n, want)
	}
	wantObjects(t, dst, hashes, body)
}

// A bucket that answers no direct get is read one key at a time, and the
// fetch brings the same; a name that is not a SHA-256 is never asked, as
// a subject pattern would match keys nobody named.
func TestFetchSmallWithoutBatches(t *testing.T) {
	h := openHostile(t, natstest.Start(t), "alpha")
	if _, err := h.f.js.CreateStream(ctx, jetstream.StreamConfig{Name: "KV_" + SmallBucket,
		Subjects: []string{smallPrefix + ">"}, MaxMsgsPerSubject: 1, AllowDirect: false}); err != nil {
		t.Fatal(err)
	}
	kv, err := h.f.js.KeyValue(ctx, SmallBucket)
	if err != nil {
		t.Fatal(err)
	}
	hashes, sizes, body := smallObjects(t, kv, 40, 1<<10)
	dst := target(t, "alpha")
	if err := h.f.directGet(ctx, hashes, func(string, []byte) error { return nil }); err != errNoBatch {
		t.Fatalf("a batch from a bucket without direct gets: %v, want errNoBatch", err)
	}
	n, err := h.f.fetchAll(ctx, nil, storePut(dst), hashes, sizes)
	if err != nil {
		t.Fatal(err)
	}
	if want := total(hashes, sizes); n != want {
		t.Fatalf("fetched %d bytes, want %d", n, want)
	}
	wantObjects(t, dst, hashes, body)
	for _, bad := range []string{">", "*", hashes[0][:63] + "*"} {
		called := false
		err := h.f.directGet(ctx, []string{hashes[1], bad}, func(string, []byte) error { called = true; return nil })
		if err == nil || called {
			t.Fatalf("a batch naming %q: %v (put called: %v), want it refused before asking", bad, err, called)
		}
	}
}
