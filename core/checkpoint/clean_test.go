package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sandfs/core"
)

// A store closed with every object named records its size and is not
// swept when opened again (an object dropped in while it was closed
// stays); its first put removes the record, so a store left in use (a
// daemon killed) is swept. Objects fetched and not imported keep the
// store from closing clean; once imported, they do not.
func TestCleanClose(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	mk(t, root, map[string]string{"a": "alpha", "b": "beta"})
	open := func() *core.Sandbox {
		s, err := core.Open("default", root, core.Options{StateDir: state})
		must(t, err)
		return s
	}
	mark := filepath.Join(state, cleanName)
	s := open()
	first, err := Create(ctx, s, Options{})
	must(t, err)
	h, _ := storeOf(s)
	disk, err := h.store.Bytes()
	must(t, err)
	s.Close()
	b, err := os.ReadFile(mark)
	if err != nil || strings.TrimSpace(string(b)) != strconv.FormatInt(disk, 10) {
		t.Fatalf("after a clean close: %s holds %q (%v), want the store's size %d", cleanName, b, err, disk)
	}

	orphan := filepath.Join(state, "objects", "ab", strings.Repeat("c", 62))
	must(t, os.MkdirAll(filepath.Dir(orphan), 0o700))
	must(t, os.WriteFile(orphan, []byte("orphan"), 0o600))
	s = open()
	if _, err := List(s); err != nil {
		t.Fatal(err)
	}
	if h, _ = storeOf(s); h.size != disk {
		t.Fatalf("opened clean: size %d, want the recorded %d", h.size, disk)
	}
	if _, err := os.Stat(orphan); err != nil {
		t.Fatalf("opened clean, yet swept: %v", err)
	}
	must(t, os.WriteFile(filepath.Join(root, "a"), []byte("changed"), 0o644))
	if _, err := Create(ctx, s, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Fatalf("after a put, %s: %v, want it gone", cleanName, err)
	}
	s.Close() // the dropped object was never counted: closed clean all the same
	must(t, os.Remove(mark))
	s = open() // as after a daemon killed: swept
	if _, err := List(s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatalf("opened after no clean close, the unnamed object: %v, want it swept", err)
	}

	// A fetch's object, not imported: no clean close.
	loose := []byte("fetched, never imported")
	lh := hashOf(t, loose)
	if _, err := PutObject(s, lh, bytes.NewReader(loose), int64(len(loose))); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Fatalf("closed with an object no manifest names, %s: %v, want none", cleanName, err)
	}
	s = open()
	if ok, _ := HasObject(s, lh); ok {
		t.Fatal("the loose object outlived the next open")
	}
	// An import names what was fetched: clean again.
	ents, err := Entries(s, first.ID)
	must(t, err)
	cp := first
	cp.ID = "cp_0000000000aa"
	ents2 := make([]Entry, len(ents))
	for i, e := range ents {
		if e.Path == "/a" {
			e.Hash, e.Size = lh, int64(len(loose))
		}
		ents2[i] = e
	}
	if _, err := PutObject(s, lh, bytes.NewReader(loose), int64(len(loose))); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(s, cp, ents2); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("closed after the import named every object, %s: %v", cleanName, err)
	}
}

func hashOf(t *testing.T, b []byte) string {
	t.Helper()
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
