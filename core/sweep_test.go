package core

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

func TestIsTempName(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{".sandfs-0123456789abcdef.part", true},
		{".sandfs-upload-0123456789abcdef.part", true},
		{TempName(), true},
		{uploadName(), true},
		{".sandfs-0123456789ABCDEF.part", false}, // core writes lower-case hex
		{".sandfs-0123456789abcde.part", false},  // 15 digits
		{".sandfs-0123456789abcdefa.part", false},
		{".sandfs-0123456789abcdeg.part", false},
		{".sandfs-notes.part", false},
		{".sandfs-0123456789abcdef.partial", false},
		{"sandfs-0123456789abcdef.part", false},
		{"x.part", false},
		{".sandfs-upload-.part", false},
	} {
		if got := IsTempName(c.name); got != c.want {
			t.Errorf("IsTempName(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSweepRemovesLeftoverTemps: what a killed daemon leaves (temp files,
// upload parts, a tar staging directory with contents) is removed at the
// next Open; a user's look-alike names, a temp newer than the Open, and
// anything behind a symlink (inside or outside the root) are left alone.
func TestSweepRemovesLeftoverTemps(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	hex := ".sandfs-0123456789abcdef.part"
	up := ".sandfs-upload-fedcba9876543210.part"
	mk(t, root, map[string]string{
		"a.txt":                             "keep",
		hex:                                 "leftover",
		"d/" + up:                           "leftover part",
		"d/e/" + hex + "/x/y.txt":           "staged",
		"d/e/" + hex + "/z.txt":             "staged",
		"d/.sandfs-notes.part":              "user file",
		"d/report.part":                     "user file",
		"d/.sandfs-0123456789ABCDEF.part":   "user file",
		"new/.sandfs-1111111111111111.part": "newer than Open",
		"link":                              "->../outside",
		"lnk-" + "x":                        "->" + "d",
		"d/.sandfs-2222222222222222.part":   "->../../outside/secret",
	})
	mk(t, outside, map[string]string{"secret": "canary", hex: "outside's own"})
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{hex, "d/" + up, "d/e/" + hex, "d/e/" + hex + "/x/y.txt", "d/e/" + hex + "/z.txt",
		"d/.sandfs-notes.part", "d/report.part", "d/.sandfs-0123456789ABCDEF.part"} {
		if err := os.Chtimes(filepath.Join(root, p), old, old); err != nil {
			t.Fatal(err)
		}
	}
	future := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(root, "new/.sandfs-1111111111111111.part"), future, future)

	s, err := Open("default", root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	select {
	case <-s.SweepDone():
	case <-time.After(30 * time.Second):
		t.Fatal("sweep did not end")
	}
	var got []string
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && p != root {
			rel, _ := filepath.Rel(root, p)
			got = append(got, rel)
		}
		return nil
	})
	sort.Strings(got)
	want := []string{"a.txt", "d", "d/.sandfs-0123456789ABCDEF.part", "d/.sandfs-notes.part",
		"d/e", "d/report.part", "link", "lnk-x", "new", "new/.sandfs-1111111111111111.part"}
	sort.Strings(want)
	if len(got) != len(want) {
		t.Fatalf("after the sweep: %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("after the sweep: %q, want %q", got, want)
		}
	}
	if s.Swept() != 4 {
		t.Errorf("Swept() = %d, want 4 (temp, upload part, staging dir, the symlink named like a temp)", s.Swept())
	}
	for name, content := range map[string]string{"secret": "canary", hex: "outside's own"} {
		b, err := os.ReadFile(filepath.Join(outside, name))
		if err != nil || string(b) != content {
			t.Errorf("outside/%s = %q, %v; want %q untouched", name, b, err, content)
		}
	}
}
