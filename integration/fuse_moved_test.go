package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandfs/internal/testenv"
)

// TestFUSECreateAfterMoveOut: a process (nobody) makes files in a loop in
// a directory of the mount while another process moves that directory out
// of the root. Creates that land after the move are outside the root, and
// the journal never tells one of them after it told the directory's
// removal, nor names any file of the directory after it. Each round logs
// how long the moved directory stayed reachable through the mount (the
// figure in fusefs/doc.go).
func TestFUSECreateAfterMoveOut(t *testing.T) {
	requireFUSE(t)
	base := testenv.NobodyDir(t)
	root, mnt := filepath.Join(base, "root"), filepath.Join(base, "mnt")
	rounds := testenv.Count(t, "SANDFS_MOVE_ROUNDS", 8)
	for i := 0; i < rounds; i++ {
		hd := filepath.Join(root, "p", "hd"+strconv.Itoa(i))
		must(t, os.MkdirAll(hd, 0o755))
		must(t, os.Chown(hd, testenv.Nobody, testenv.Nobody))
	}
	must(t, os.Mkdir(mnt, 0o755))
	d := startDaemon(t, "--root", root, "--mount", mnt)
	for i := 0; i < rounds; i++ {
		name := "hd" + strconv.Itoa(i)
		away := filepath.Join(base, "away"+strconv.Itoa(i))
		a := testenv.StartAttacker(t, "TestNobodyAttacker", "creates", filepath.Join(mnt, "p", name), "-")
		if a.WaitLine(t, "going", 60*time.Second) == "" {
			t.Fatalf("round %d: the creates through the mount did not start", i)
		}
		must(t, os.Rename(filepath.Join(root, "p", name), away))
		moved := time.Now()
		cut := a.WaitLine(t, "cut", 120*time.Second)
		made := a.Stop()
		if cut == "" {
			t.Fatalf("round %d: the creates were never cut off from the moved directory (%d made)", i, made)
		}
		var last int64
		fmt.Sscanf(cut, "cut %d", &last)
		t.Logf("round %d: %d files made; the last create returned %v after the move did",
			i, made, time.Unix(0, last).Sub(moved))
		checkNothingAfterRemove(t, d, "/p/"+name, away)
	}
}

// checkNothingAfterRemove waits until the journal tells the removal of dir
// and a write made after it, then checks that no event names dir's files
// after the removal, and that each file told made is in away, told once.
func checkNothingAfterRemove(t *testing.T, d *Daemon, dir, away string) {
	t.Helper()
	end := "/end-" + filepath.Base(dir)
	restPut(t, d, end, "end")
	var events []string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		events = events[:0]
		ended, removed := false, false
		for _, e := range keptEvents(t, d) {
			events = append(events, e.Type+" "+e.Path)
			ended = ended || e.Path == end
			removed = removed || e.Type == "remove" && e.Path == dir
		}
		if ended && removed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the journal did not tell %s's removal and %s in 60s", dir, end)
		}
	}
	removedAt := -1
	told := map[string]int{}
	for i, e := range events {
		typ, p, _ := strings.Cut(e, " ")
		if e == "remove "+dir {
			removedAt = i
		}
		if !strings.HasPrefix(p, dir+"/") {
			continue
		}
		if removedAt >= 0 {
			t.Errorf("told after %s left the root: %q", dir, e)
		}
		if typ == "create" {
			told[p]++
		}
	}
	for p, n := range told {
		if n != 1 {
			t.Errorf("%s told made %d times", p, n)
		}
		if _, err := os.Lstat(filepath.Join(away, strings.TrimPrefix(p, dir+"/"))); err != nil {
			t.Errorf("told made, but not in the moved directory: %s (%v)", p, err)
		}
	}
}
