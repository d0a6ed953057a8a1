package replicate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"sandfs/core/checkpoint"
	"sandfs/natsout/natstest"
)

// raw is the manifest of key id as the KV stores it: a delta unapplied.
func (f *fleet) raw(t *testing.T, sandbox, id string) Manifest {
	t.Helper()
	m, err := readOne(ctx, f.kv(t, sandbox), f.obs, id)
	if err != nil {
		t.Fatalf("manifest %s: %v", id, err)
	}
	return m
}

// entriesOf is the manifest's form of a checkpoint's tree, by path.
func entriesOf(ents []checkpoint.Entry) map[string]Entry {
	out := map[string]Entry{}
	for _, e := range ents {
		out[e.Path] = EntryOf(e)
	}
	return out
}

func paths(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Path
	}
	return out
}

// A second checkpoint after a file changed, one added and one removed is
// sent as a delta of the first: its value holds those paths only, and
// read back (ReadManifest, Fetch) it is the second checkpoint's tree.
func TestReplicateDelta(t *testing.T) {
	b := natstest.Start(t)
	r := start(t, b)
	sb, root := added(t, r, "alpha")
	cp1 := mkCheckpoint(t, sb)
	write(t, root, "f003", content(3, 1))
	write(t, root, "new", content(200, 0))
	if err := os.Remove(filepath.Join(root, "f010")); err != nil {
		t.Fatal(err)
	}
	cp2 := mkCheckpoint(t, sb)
	waitSent(t, r, "alpha", 2)

	f := open(t, b)
	if m1 := f.raw(t, "alpha", cp1.ID); m1.Base != "" || len(m1.Entries) != 101 || m1.Version != 2 {
		t.Fatalf("first manifest: base %q, %d entries, version %d; want full, 101, 2", m1.Base, len(m1.Entries), m1.Version)
	}
	// The delta expected, from the two trees the store gives.
	e1, _ := checkpoint.Entries(sb, cp1.ID)
	e2, _ := checkpoint.Entries(sb, cp2.ID)
	before, after := entriesOf(e1), entriesOf(e2)
	var want []string
	for p, e := range after {
		if old, ok := before[p]; !ok || !sameEntry(old, e) {
			want = append(want, p)
		}
	}
	sort.Strings(want)
	for _, p := range []string{"/f003", "/new"} {
		if !slices.Contains(want, p) {
			t.Fatalf("the trees differ in %v, want %s among them", want, p)
		}
	}
	m2 := f.raw(t, "alpha", cp2.ID)
	if m2.Base != cp1.ID || !slices.Equal(paths(m2.Entries), want) || !slices.Equal(m2.Removed, []string{"/f010"}) {
		t.Fatalf("second manifest: base %q, entries %v, removed %v; want base %s, entries %v, removed [/f010]",
			m2.Base, paths(m2.Entries), m2.Removed, cp1.ID, want)
	}
	for _, e := range m2.Entries {
		if !sameEntry(e, after[e.Path]) {
			t.Fatalf("delta entry %+v, the tree's %+v", e, after[e.Path])
		}
	}
	full := f.wantManifest(t, sb, cp2) // applied: every path, as the store's
	if full.Base != "" || full.Removed != nil {
		t.Fatalf("read back: base %q, removed %v; want a full manifest", full.Base, full.Removed)
	}

	dst := target(t, "alpha")
	got, err := r.Fleet().Fetch(ctx, "alpha", cp2.ID, dst)
	if err != nil {
		t.Fatal(err)
	}
	z, err := checkpoint.Entries(dst, cp2.ID)
	if err != nil {
		t.Fatal(err)
	}
	aj, _ := json.Marshal(e2)
	zj, _ := json.Marshal(z)
	if string(aj) != string(zj) || got.Objects != 100 {
		t.Fatalf("fetched %d objects, entries\n%s\nwant 100 objects, entries\n%s", got.Objects, zj, aj)
	}
}

// A manifest is full on the first send, once the chain reaches its bound,
// and when the delta would not be smaller; a delta otherwise, after a
// restart too: the restarted replicator learns the last manifest the
// fleet has (seed.go), at its depth.
func TestReplicateDeltaWhenFull(t *testing.T) {
	b := natstest.Start(t)
	r := start(t, b)
	r.maxChain = 3
	sb, root := added(t, r, "alpha")
	var cps []checkpoint.Checkpoint
	for v := 0; v < 6; v++ {
		write(t, root, "f001", content(1, v+1))
		cps = append(cps, mkCheckpoint(t, sb))
	}
	for i := 0; i < 99; i++ { // every path: a delta no smaller than the tree
		write(t, root, fmt.Sprintf("f%03d", i), content(i, 9))
	}
	if err := os.Remove(filepath.Join(root, "f099")); err != nil {
		t.Fatal(err)
	}
	cps = append(cps, mkCheckpoint(t, sb))
	write(t, root, "f002", content(2, 1))
	cps = append(cps, mkCheckpoint(t, sb))
	waitSent(t, r, "alpha", uint64(len(cps)))
	r.Close()
	r2 := start(t, b)
	r2.maxChain = 3
	if err := r2.Add("alpha", sb); err != nil {
		t.Fatal(err)
	}
	for v := 0; v < 2; v++ {
		write(t, root, "f004", content(4, v+1))
		cps = append(cps, mkCheckpoint(t, sb))
	}
	st := waitSent(t, r2, "alpha", 2)
	if st.Objects != 2 {
		t.Fatalf("the restarted replicator sent %d objects, want f004's 2 (the rest is the fleet's)", st.Objects)
	}
	write(t, root, "f005", content(5, 1))
	cps = append(cps, mkCheckpoint(t, sb))
	waitSent(t, r2, "alpha", 3)

	f := open(t, b)
	// The base of each, "" for a full manifest.
	want := []string{"", cps[0].ID, cps[1].ID, cps[2].ID, // the chain's bound, 3
		"", cps[4].ID,
		"",        // every file changed
		cps[6].ID, //
		cps[7].ID, // restarted: a delta of the last sent, chain 2
		cps[8].ID, // chain 3
		""}        // the bound
	for i, cp := range cps {
		m := f.raw(t, "alpha", cp.ID)
		if m.Base != want[i] {
			t.Fatalf("manifest %d (%s): base %q, want %q", i, cp.ID, m.Base, want[i])
		}
		f.wantManifest(t, sb, cp)
	}
}

// A delta too large for a message sends its entries and removals as an
// object, read back the same.
func TestReplicateLargeDelta(t *testing.T) {
	b := natstest.Start(t)
	r := start(t, b)
	r.maxInline = 1000
	sb, root := added(t, r, "alpha")
	mkCheckpoint(t, sb)
	for i := 0; i < 20; i++ {
		write(t, root, fmt.Sprintf("f%03d", i), content(i, 1))
		if err := os.Remove(filepath.Join(root, fmt.Sprintf("f%03d", 50+i))); err != nil {
			t.Fatal(err)
		}
	}
	cp := mkCheckpoint(t, sb)
	waitSent(t, r, "alpha", 2)
	f := open(t, b)
	raw, err := f.kv(t, "alpha").Get(ctx, cp.ID)
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(raw.Value(), &m); err != nil || m.Base == "" || m.EntriesObject == "" || m.Entries != nil || m.Removed != nil {
		t.Fatalf("stored value %s (%v): want a delta naming its entries' object", raw.Value(), err)
	}
	if d := f.raw(t, "alpha", cp.ID); len(d.Removed) != 20 || len(d.Entries) < 20 {
		t.Fatalf("the delta's object: %d entries, %d removed; want 20 and more, 20", len(d.Entries), len(d.Removed))
	}
	f.wantManifest(t, sb, cp)
}

// Hostile deltas are refused before anything is fetched: a base missing,
// a cycle, a chain past the bound, a removal of a path the base lacks, a
// path not clean, a version 1 naming a base.
func TestFetchRefusesBadDeltas(t *testing.T) {
	h, root, file := hostileGood(t)
	other := Entry{Path: "/other", Type: "file", Mode: 0o644, Size: int64(len(good)), Hash: sum(good)}
	const base = "cp_000000000b00"
	h.put(t, "evil", base, []Entry{root, file})
	delta := func(id, of string, entries []Entry, removed ...string) Manifest {
		return Manifest{Version: ManifestVersion, Sandbox: "evil", Host: "evil", Base: of, Entries: entries, Removed: removed,
			Checkpoint: Checkpoint{ID: id, Reason: "manual", Seq: 8, Created: time.Now().UTC()}}
	}
	cases := []struct {
		name string
		ms   []Manifest // the last one is fetched
		want string     // in the error
	}{
		{"base-missing", []Manifest{delta("cp_000000000c01", "cp_0000000000aa", []Entry{other})}, "cp_0000000000aa is not in the KV"},
		{"self", []Manifest{delta("cp_000000000c02", "cp_000000000c02", []Entry{other})}, "cycle"},
		{"cycle", []Manifest{delta("cp_000000000c03", "cp_000000000c04", nil, "/ok"),
			delta("cp_000000000c04", "cp_000000000c03", []Entry{other})}, "cycle"},
		{"remove-unknown", []Manifest{delta("cp_000000000c05", base, nil, "/nope")}, "does not have"},
		{"remove-unclean", []Manifest{delta("cp_000000000c06", base, nil, "/x/../ok")}, "not a clean path"},
		{"entry-unclean", []Manifest{delta("cp_000000000c07", base, []Entry{{Path: "/a/../../x", Type: "dir", Mode: 0o755}})}, "not a clean path"},
		{"entry-orphan", []Manifest{delta("cp_000000000c08", base, []Entry{{Path: "/no/such", Type: "dir", Mode: 0o755}})}, "not a directory of the tree"},
		{"remove-and-change", []Manifest{delta("cp_000000000c09", base, []Entry{file}, "/ok")}, "both removed and changed"},
		{"dir-removed-file-left", []Manifest{delta("cp_000000000c10", base, []Entry{{Path: "/dd", Type: "dir", Mode: 0o755}, {Path: "/dd/x", Type: "dir", Mode: 0o755}}),
			delta("cp_000000000c11", "cp_000000000c10", nil, "/dd")}, "not a directory of the tree"},
		{"removals-no-base", []Manifest{delta("cp_000000000c0a", "", []Entry{root, file}, "/ok")}, "removals and no base"},
		{"version-1-base", []Manifest{func() Manifest {
			m := delta("cp_000000000c0b", base, []Entry{other})
			m.Version = 1
			return m
		}()}, "version 1 names a base"},
		{"base-of-another-sandbox", []Manifest{func() Manifest {
			m := delta("cp_000000000c0c", "", []Entry{root, file})
			m.Sandbox = "other"
			return m
		}(), delta("cp_000000000c0d", "cp_000000000c0c", []Entry{other})}, "of sandbox \"other\""},
	}
	long := []Manifest{delta("cp_000000000d00", base, nil)}
	for i := 1; i <= maxReadChain; i++ {
		long = append(long, delta(fmt.Sprintf("cp_000000000d%02x", i), fmt.Sprintf("cp_000000000d%02x", i-1), nil))
	}
	cases = append(cases, struct {
		name string
		ms   []Manifest
		want string
	}{"chain-too-long", long, "more than 64 deltas"})
	for _, c := range cases {
		for _, m := range c.ms {
			data, _ := json.Marshal(m)
			if _, err := h.kv.Put(ctx, m.Checkpoint.ID, data); err != nil {
				t.Fatal(err)
			}
		}
		id := c.ms[len(c.ms)-1].Checkpoint.ID
		t.Run(c.name, func(t *testing.T) {
			dst := target(t, "evil")
			_, err := h.f.Fetch(ctx, "evil", id, dst)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("fetch of %s: %v, want it refused with %q", c.name, err, c.want)
			}
			if cps, _ := checkpoint.List(dst); len(cps) != 0 {
				t.Fatalf("a refused delta left checkpoints %+v", cps)
			}
			if has, _ := checkpoint.HasObject(dst, sum(good)); has {
				t.Fatal("a refused delta's object was fetched")
			}
		})
		// Into a store holding the base, the chain's deltas alone are
		// read and imported as a delta of it (fetch_delta.go): refused
		// alike, but for a removal of what the base lacks, which is
		// nothing to take out there.
		t.Run(c.name+"-base-held", func(t *testing.T) {
			dst := target(t, "evil")
			if _, err := h.f.Fetch(ctx, "evil", base, dst); err != nil {
				t.Fatal(err)
			}
			_, err := h.f.Fetch(ctx, "evil", id, dst)
			cps, _ := checkpoint.List(dst)
			if c.name == "remove-unknown" {
				if err != nil || len(cps) != 2 {
					t.Fatalf("fetch of %s: %v, %d checkpoints; want it imported", c.name, err, len(cps))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("fetch of %s: %v, want it refused with %q", c.name, err, c.want)
			}
			if len(cps) != 1 || cps[0].ID != base {
				t.Fatalf("a refused delta left checkpoints %+v, want the base alone", cps)
			}
		})
	}
	// A delta of the same base, right, is fetched: the refusals are the
	// deltas'. A chain at the bound is read.
	ok := delta("cp_000000000e01", base, []Entry{other}, "/ok")
	data, _ := json.Marshal(ok)
	if _, err := h.kv.Put(ctx, ok.Checkpoint.ID, data); err != nil {
		t.Fatal(err)
	}
	dst := target(t, "evil")
	if got, err := h.f.Fetch(ctx, "evil", ok.Checkpoint.ID, dst); err != nil || got.Objects != 1 {
		t.Fatalf("the good delta: %+v, %v", got, err)
	}
	if z, _ := checkpoint.Entries(dst, ok.Checkpoint.ID); len(z) != 2 || z[0].Path != "/" || z[1].Path != "/other" {
		t.Fatalf("the good delta's tree %+v, want / and /other", z)
	}
	m, err := ReadManifest(ctx, h.kv, h.obs, fmt.Sprintf("cp_000000000d%02x", maxReadChain-1))
	if err != nil || !slices.Equal(paths(m.Entries), []string{"/", "/ok"}) {
		t.Fatalf("a chain of %d deltas: %v, %v; want read, / and /ok", maxReadChain, paths(m.Entries), err)
	}
}

// A version 1 manifest (full, its entries object a list) is read as
// before; a version this host does not know is refused.
func TestReadManifestVersions(t *testing.T) {
	b := natstest.Start(t)
	h := openHostile(t, b, "old")
	good := []byte("good bytes\n")
	if _, err := h.obs.PutBytes(ctx, sum(good), good); err != nil {
		t.Fatal(err)
	}
	entries := []Entry{{Path: "/", Type: "dir", Mode: 0o755}, {Path: "/ok", Type: "file", Mode: 0o644, Size: int64(len(good)), Hash: sum(good)}}
	list, _ := json.Marshal(entries)
	if _, err := h.obs.PutBytes(ctx, sum(list), list); err != nil {
		t.Fatal(err)
	}
	m := func(id string, version int, object bool) Manifest {
		out := Manifest{Version: version, Sandbox: "old", Host: "h0", Entries: entries,
			Checkpoint: Checkpoint{ID: id, Reason: "manual", Seq: 1, Created: time.Now().UTC()}}
		if object {
			out.Entries, out.EntriesObject = nil, sum(list)
		}
		return out
	}
	for _, c := range []struct {
		m    Manifest
		want string // "": read
	}{
		{m("cp_000000000001", 1, false), ""},
		{m("cp_000000000002", 1, true), ""},
		{m("cp_000000000003", 3, false), "version 3, this host reads 1 to 2"},
		{m("cp_000000000004", 0, false), "version 0"},
	} {
		data, _ := json.Marshal(c.m)
		if _, err := h.kv.Put(ctx, c.m.Checkpoint.ID, data); err != nil {
			t.Fatal(err)
		}
		got, err := ReadManifest(ctx, h.kv, h.obs, c.m.Checkpoint.ID)
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("manifest %s: %v, want refused with %q", c.m.Checkpoint.ID, err, c.want)
			}
			continue
		}
		if gj, _ := json.Marshal(got.Entries); err != nil || string(gj) != string(list) {
			t.Fatalf("manifest %s: entries %s (%v), want %s", c.m.Checkpoint.ID, gj, err, list)
		}
		if f, err := h.f.Fetch(ctx, "old", c.m.Checkpoint.ID, target(t, "old")); err != nil || f.Objects != 1 {
			t.Fatalf("fetch of version 1 manifest %s: %+v, %v", c.m.Checkpoint.ID, f, err)
		}
	}
}

// A delta names its depth (Chain). A reader given its store's trees
// (ReadManifestLocal) takes a checkpoint the store holds from there: a
// full manifest whose entries object the fleet lost reads as the
// store's tree, a chain based on it is applied to that tree at the
// depth the chain gives, and without the store the read fails.
func TestReadManifestLocal(t *testing.T) {
	b := natstest.Start(t)
	r := start(t, b)
	sb, root := added(t, r, "alpha")
	cp1 := mkCheckpoint(t, sb)
	write(t, root, "f003", content(3, 1))
	cp2 := mkCheckpoint(t, sb)
	write(t, root, "f004", content(4, 1))
	cp3 := mkCheckpoint(t, sb)
	waitSent(t, r, "alpha", 3)

	f := open(t, b)
	for i, cp := range []checkpoint.Checkpoint{cp2, cp3} {
		if m := f.raw(t, "alpha", cp.ID); m.Base == "" || m.Chain != i+1 {
			t.Fatalf("manifest %d: base %q, chain %d; want a delta, chain %d", i+2, m.Base, m.Chain, i+1)
		}
	}
	// The fleet's full manifest now names entries it does not hold.
	lost, _ := json.Marshal(Manifest{Version: ManifestVersion, Sandbox: "alpha", Checkpoint: Checkpoint{ID: cp1.ID, Seq: cp1.Seq},
		EntriesObject: strings.Repeat("0", 64)})
	if _, err := f.kv(t, "alpha").Put(ctx, cp1.ID, lost); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifest(ctx, f.kv(t, "alpha"), f.obs, cp3.ID); err == nil {
		t.Fatal("a chain whose full manifest lost its entries read without the store")
	}
	store := StoreOf(sb)
	asked := map[string]int{}
	onlyFirst := func(id string) ([]Entry, bool) {
		asked[id]++
		if id != cp1.ID {
			return nil, false
		}
		return store(id)
	}
	want, _ := checkpoint.Entries(sb, cp3.ID)
	wj, _ := json.Marshal(entriesOf(want))
	for _, c := range []struct {
		name  string
		local Local
		depth int
	}{{"the chain's base from the store", onlyFirst, 2}, {"the checkpoint from the store", store, 2}} {
		m, err := ReadManifestLocal(ctx, f.kv(t, "alpha"), f.obs, cp3.ID, c.local)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		gj, _ := json.Marshal(entriesByPath(m.Entries))
		if string(gj) != string(wj) || m.Depth != c.depth || m.Base != "" || m.Checkpoint.ID != cp3.ID {
			t.Fatalf("%s: depth %d, base %q, id %s, entries\n%s\nwant depth %d, the store's\n%s", c.name, m.Depth, m.Base, m.Checkpoint.ID, gj, c.depth, wj)
		}
	}
	if asked[cp3.ID] != 1 || asked[cp2.ID] != 1 || asked[cp1.ID] != 1 {
		t.Fatalf("the store was asked for %v, want each of the chain once", asked)
	}
}
