package replicate

import (
	"fmt"
	"testing"

	"sandfs/core/checkpoint"
	"sandfs/natsout/natstest"
)

// The broker stops while a checkpoint is being sent and stays away while
// more are made, more than the queue holds: every checkpoint still
// answers, and once the broker is back every one is in the fleet, in
// order, each manifest and object once.
func TestReplicateBrokerAway(t *testing.T) {
	b := natstest.Start(t)
	r := start(t, b)
	r.queueMax = 2 // before Add: the overflow is caught up from the store
	sb, root := added(t, r, "alpha")
	cps := []checkpoint.Checkpoint{mkCheckpoint(t, sb)}
	b.Stop() // likely while cps[0]'s 100 objects are on their way
	for v := 1; v <= 5; v++ {
		for _, i := range []int{v, 10 + v, 20 + v} {
			write(t, root, fmt.Sprintf("f%03d", i), content(i, v))
		}
		cps = append(cps, mkCheckpoint(t, sb)) // answers with the broker away
	}
	st, _ := r.Stats("alpha")
	if st.Behind < 5 || st.BytesBehind == 0 || st.Unqueued < 3 {
		t.Fatalf("with the broker away: stats %+v, want at least 5 checkpoints and some bytes behind, 3 unqueued", st)
	}
	b.Restart()
	st = waitSent(t, r, "alpha", uint64(len(cps)))

	f := open(t, b)
	want := map[string]bool{}
	for _, cp := range cps {
		for h := range hashes(f.wantManifest(t, sb, cp)) {
			want[h] = true
		}
	}
	wantOrder(t, f, "alpha", cps)
	got := f.objects(t)
	if len(got) != len(want) || len(want) != 100+5*3 {
		t.Fatalf("the bucket holds %d objects, the manifests name %d, want %d", len(got), len(want), 100+5*3)
	}
	for h := range want {
		if _, ok := got[h]; !ok {
			t.Fatalf("object %s named by a manifest is not in the bucket", h)
		}
	}
	if st.Objects != uint64(len(want)) || st.Manifests != uint64(len(cps)) {
		t.Fatalf("sent %d objects and %d manifests, want %d and %d: something was sent twice", st.Objects, st.Manifests, len(want), len(cps))
	}
	keys, err := f.kv(t, "alpha").Keys(ctx)
	if err != nil || len(keys) != len(cps) {
		t.Fatalf("the KV holds %d manifests (%v), want %d", len(keys), err, len(cps))
	}
}

// A checkpoint deleted before its turn is skipped: the ones after it go.
func TestReplicateSkipsDeleted(t *testing.T) {
	b := natstest.Start(t)
	b.Stop()
	r := start(t, b)
	sb, root := added(t, r, "alpha")
	gone := mkCheckpoint(t, sb)
	write(t, root, "f001", content(1, 1))
	kept := mkCheckpoint(t, sb)
	if err := checkpoint.Delete(sb, gone.ID); err != nil {
		t.Fatal(err)
	}
	b.Restart()
	st := waitSent(t, r, "alpha", 1)
	if st.Manifests != 1 || st.Objects != 100 {
		t.Fatalf("stats %+v, want 1 manifest and its 100 objects", st)
	}
	f := open(t, b)
	f.wantManifest(t, sb, kept)
	if _, err := f.kv(t, "alpha").Get(ctx, gone.ID); err == nil {
		t.Fatalf("the deleted checkpoint %s is in the fleet", gone.ID)
	}
}

// Every sandbox name gets a bucket KV accepts, and two names never share one.
func TestBucketOf(t *testing.T) {
	for name, want := range map[string]string{
		"default":   "sandfs-cp-default",
		"web-1":     "sandfs-cp-web-1",
		"a.b":       "sandfs-cp-a_2Eb",
		"a_2Eb":     "sandfs-cp-a_5F2Eb",
		"Ünï/cödé ": "sandfs-cp-_C3_9Cn_C3_AF_2Fc_C3_B6d_C3_A9_20",
	} {
		if got := BucketOf(name); got != want {
			t.Errorf("BucketOf(%q) = %q, want %q", name, got, want)
		}
	}
}
