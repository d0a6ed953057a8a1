package core

import (
	"errors"
	"testing"

	"sandfs/core/journal"
	"sandfs/internal/testenv"

	"golang.org/x/sys/unix"
)

func TestXattr(t *testing.T) {
	root := t.TempDir()
	s, err := Open("default", root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mk(t, root, map[string]string{"f": "x", "l": "->f"})
	if _, err := s.SetXattr(ctx, "/l", "user.k", []byte("v\x00bin")); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			testenv.Skip(t, nil, "no user xattrs on this filesystem")
		}
		t.Fatal(err)
	}
	_, xs, err := s.Xattrs(ctx, "/f", "")
	if err != nil || string(xs["user.k"]) != "v\x00bin" {
		t.Errorf("Xattrs: %q %v", xs, err)
	}
	if _, _, err := s.Xattrs(ctx, "/f", "user.missing"); !errors.Is(err, unix.ENODATA) {
		t.Errorf("missing: got %v, want ENODATA", err)
	}
	if _, err := s.RemoveXattr(ctx, "/f", "user.k"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RemoveXattr(ctx, "/f", "user.k"); !errors.Is(err, unix.ENODATA) {
		t.Errorf("remove missing: got %v, want ENODATA", err)
	}
	var chmods int
	for _, e := range journalAll(s) {
		if e.Type == journal.Chmod && e.Path == "/f" || e.Path == "/l" {
			chmods++
		}
	}
	if chmods != 2 {
		t.Errorf("chmod events: got %d, want 2", chmods)
	}
}
