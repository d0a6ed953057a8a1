package core

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sandfs/internal/testenv"
)

// TestNobodyAttacker is the attacker process of the race tests below
// (testenv.StartAttacker runs this test binary again as nobody): run
// directly, it does nothing.
func TestNobodyAttacker(t *testing.T) { testenv.AttackerMain() }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// raceRoot is testenv.RaceRoot with a sandbox on the root.
func raceRoot(t *testing.T) (s *Sandbox, root string, v *testenv.Victim) {
	t.Helper()
	root, v = testenv.RaceRoot(t)
	s, err := Open("default", root, Options{})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s, root, v
}

// TestCopyDirSymlinkRace: while a directory copy builds /p/dst in its
// .sandfs-*.part directory, nobody (who owns /p) renames that directory
// away and puts a symlink to the victim in its place. The victim's mode,
// owner and times never change.
func TestCopyDirSymlinkRace(t *testing.T) {
	s, root, v := raceRoot(t)
	files := map[string]string{}
	for i := 0; i < 200; i++ {
		files[fmt.Sprintf("src/f%03d", i)] = "x"
	}
	mk(t, root, files)
	must(t, os.Chmod(filepath.Join(root, "src"), 0o755))
	a := testenv.StartAttacker(t, "TestNobodyAttacker", "parts", filepath.Join(root, "p"), v.Path)
	rounds := testenv.Count(t, "SANDFS_RACE_ROUNDS", 15)
	for i := 0; i < rounds; i++ {
		s.Copy(ctx, "/src", "/p/dst", CopyOptions{Overwrite: true}) // fails when the swap is seen: fine
		if c := v.Changed(t); c != "" {
			t.Fatalf("round %d: the copy changed the file outside the root: %s", i, c)
		}
	}
	swaps := a.Stop()
	t.Logf("%d copies, %d swaps of the .part directory; the victim held", rounds, swaps)
	if swaps == 0 {
		t.Error("the attacker never swapped: the test proved nothing")
	}
}
