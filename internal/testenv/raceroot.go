package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// RaceRoot is a root nobody may enter, with /p owned by nobody (the
// attacker owns the destination's parent), and the victim beside it.
func RaceRoot(t *testing.T) (root string, v *Victim) {
	t.Helper()
	base := NobodyDir(t)
	root = filepath.Join(base, "root")
	if err := os.MkdirAll(filepath.Join(root, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(root, "p"), Nobody, Nobody); err != nil {
		t.Fatal(err)
	}
	return root, NewVictim(t, base)
}
