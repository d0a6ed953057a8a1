package replicate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sandfs/core/checkpoint"
	"sandfs/natsout/natstest"
)

// Two checkpoints, the second after 3 of 100 files changed: the bucket
// holds every object once, the second sent the 3 new ones only, and both
// manifests are in the KV with the checkpoints' own entries.
func TestReplicateSendsWhatIsNew(t *testing.T) {
	b := natstest.Start(t)
	r := start(t, b)
	sb, root := added(t, r, "alpha")
	cp1 := mkCheckpoint(t, sb)
	st1 := waitSent(t, r, "alpha", 1)
	var all uint64
	for i := 0; i < 100; i++ {
		all += uint64(len(content(i, 0)))
	}
	if st1.Objects != 100 || st1.ObjectBytes != all {
		t.Fatalf("first checkpoint sent %d objects, %d bytes; want 100, %d", st1.Objects, st1.ObjectBytes, all)
	}
	var changed uint64
	for _, i := range []int{3, 50, 97} {
		write(t, root, fmt.Sprintf("f%03d", i), content(i, 1))
		changed += uint64(len(content(i, 1)))
	}
	cp2 := mkCheckpoint(t, sb)
	st2 := waitSent(t, r, "alpha", 2)
	if n, by := st2.Objects-st1.Objects, st2.ObjectBytes-st1.ObjectBytes; n != 3 || by != changed {
		t.Fatalf("second checkpoint sent %d objects, %d bytes; want 3, %d", n, by, changed)
	}
	if st2.Manifests != 2 || st2.BytesBehind != 0 || st2.Failed != 0 {
		t.Fatalf("stats %+v", st2)
	}

	f := open(t, b)
	m1, m2 := f.wantManifest(t, sb, cp1), f.wantManifest(t, sb, cp2)
	want := hashes(m1)
	for h := range hashes(m2) {
		want[h] = true
	}
	got := f.objects(t)
	if len(got) != len(want) || len(got) != 103 {
		t.Fatalf("the bucket holds %d objects, the manifests name %d, want 103", len(got), len(want))
	}
	for h := range want {
		if _, ok := got[h]; !ok {
			t.Fatalf("object %s named by a manifest is not in the bucket", h)
		}
	}
	// An object read back is the file.
	file, err := os.ReadFile(filepath.Join(root, "f050"))
	if err != nil {
		t.Fatal(err)
	}
	var hash string
	var size int64
	for _, e := range m2.Entries {
		if e.Path == "/f050" {
			hash, size = e.Hash, e.Size
		}
	}
	back, err := NewFleet(f.js).ObjectBytes(ctx, hash, size)
	if err != nil || !bytes.Equal(back, file) {
		t.Fatalf("object %s of /f050: %d bytes (%v), want the file's %d", hash, len(back), err, len(file))
	}
}

// A second sandbox with the same content sends no object again, and its
// manifest goes to its own bucket.
func TestReplicateSharedContentOnce(t *testing.T) {
	b := natstest.Start(t)
	r := start(t, b)
	sa, _ := box(t, "alpha")
	sbeta, _ := box(t, "beta")
	if err := r.Add("alpha", sa); err != nil {
		t.Fatal(err)
	}
	mkCheckpoint(t, sa)
	if st := waitSent(t, r, "alpha", 1); st.Objects != 100 {
		t.Fatalf("alpha sent %d objects, want 100", st.Objects)
	}
	if err := r.Add("beta", sbeta); err != nil {
		t.Fatal(err)
	}
	cp := mkCheckpoint(t, sbeta)
	if st := waitSent(t, r, "beta", 1); st.Objects != 0 || st.ObjectBytes != 0 {
		t.Fatalf("beta sent %d objects, %d bytes; want none", st.Objects, st.ObjectBytes)
	}
	f := open(t, b)
	f.wantManifest(t, sbeta, cp)
	if n := len(f.objects(t)); n != 100 {
		t.Fatalf("the bucket holds %d objects, want 100", n)
	}
}

// Checkpoints made before Add (and so before any hook) are sent too, in
// order: the store is listed at start.
func TestReplicateCatchesUpFromStore(t *testing.T) {
	b := natstest.Start(t)
	sb, root := box(t, "alpha")
	cp1 := mkCheckpoint(t, sb)
	write(t, root, "f001", content(1, 1))
	cp2 := mkCheckpoint(t, sb)
	r := start(t, b)
	if err := r.Add("alpha", sb); err != nil {
		t.Fatal(err)
	}
	if st := waitSent(t, r, "alpha", 2); st.Objects != 101 {
		t.Fatalf("sent %d objects, want 101", st.Objects)
	}
	f := open(t, b)
	f.wantManifest(t, sb, cp1)
	f.wantManifest(t, sb, cp2)
	wantOrder(t, f, sb.Name(), []checkpoint.Checkpoint{cp1, cp2})
}

// wantOrder fails unless the manifests of cps were stored in that order.
func wantOrder(t *testing.T, f *fleet, sandbox string, cps []checkpoint.Checkpoint) {
	t.Helper()
	kv := f.kv(t, sandbox)
	var last uint64
	for _, cp := range cps {
		e, err := kv.Get(ctx, cp.ID)
		if err != nil {
			t.Fatalf("manifest %s: %v", cp.ID, err)
		}
		if e.Revision() <= last {
			t.Fatalf("manifest %s stored at revision %d, after the one before it at %d: out of order", cp.ID, e.Revision(), last)
		}
		last = e.Revision()
	}
}

// A manifest too big for a KV value sends its entries as an object first,
// and ReadManifest reads them back from it.
func TestReplicateLargeManifest(t *testing.T) {
	b := natstest.Start(t)
	r := start(t, b)
	r.maxInline = 1000 // 100 entries take more
	sb, _ := added(t, r, "alpha")
	cp := mkCheckpoint(t, sb)
	st := waitSent(t, r, "alpha", 1)
	if st.Objects != 101 {
		t.Fatalf("sent %d objects, want 100 files and the entries", st.Objects)
	}
	f := open(t, b)
	m := f.wantManifest(t, sb, cp)
	if m.EntriesObject == "" {
		t.Fatal("the manifest holds its entries inline, want them an object")
	}
	info, err := f.obs.GetInfo(ctx, m.EntriesObject)
	if err != nil {
		t.Fatalf("the entries' object %s: %v", m.EntriesObject, err)
	}
	if st.EntriesObjects != 1 || st.EntriesBytes != info.Size {
		t.Fatalf("counted %d entries objects, %d bytes; want the one, %d bytes", st.EntriesObjects, st.EntriesBytes, info.Size)
	}
}

// A replicator started again (a daemon's restart) sends again nothing the
// fleet has: the manifests are found in the KV, and then only the new
// checkpoint's one new object goes.
func TestReplicateRestartSendsNothingAgain(t *testing.T) {
	b := natstest.Start(t)
	r := start(t, b)
	sb, root := added(t, r, "alpha")
	cps := []checkpoint.Checkpoint{mkCheckpoint(t, sb)}
	write(t, root, "f007", content(7, 1))
	cps = append(cps, mkCheckpoint(t, sb))
	waitSent(t, r, "alpha", 2)
	r.Close()

	r2 := start(t, b)
	if err := r2.Add("alpha", sb); err != nil {
		t.Fatal(err)
	}
	write(t, root, "f008", content(8, 1))
	cps = append(cps, mkCheckpoint(t, sb))
	// Sent in order: the third manifest sent means the first two were
	// looked at before it.
	st := waitSent(t, r2, "alpha", 1)
	if st.Manifests != 1 || st.Objects != 1 || st.ObjectBytes != uint64(len(content(8, 1))) {
		t.Fatalf("after a restart: stats %+v, want 1 manifest and 1 object (/f008's) sent", st)
	}
	f := open(t, b)
	for _, cp := range cps {
		f.wantManifest(t, sb, cp)
	}
	wantOrder(t, f, "alpha", cps)
}
