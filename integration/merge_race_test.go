package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/internal/testenv"
)

// TestMergeSymlinkRaceDaemon: a fork rewrites 50 files of /p/d/sub, a
// directory nobody owns in the parent, and merges them back (strategy
// theirs) again and again while nobody trades sub and a symlink to the
// victim, outside the root. The victim never changes and no answer is a
// 5xx but the journal's own "busy" (below).
func TestMergeSymlinkRaceDaemon(t *testing.T) {
	d, root, v := raceDaemon(t)
	dd := filepath.Join(root, "p", "d")
	must(t, os.MkdirAll(filepath.Join(dd, "sub"), 0o755))
	for i := 0; i < 50; i++ {
		must(t, os.WriteFile(filepath.Join(dd, "sub", fmt.Sprintf("f%03d", i)), []byte("base"), 0o644))
	}
	must(t, os.Chown(dd, testenv.Nobody, testenv.Nobody))
	must(t, os.Chown(filepath.Join(dd, "sub"), testenv.Nobody, testenv.Nobody))
	if st, b := postSandbox(t, d, map[string]any{"name": "try", "from": "default"}); st != http.StatusCreated {
		t.Fatalf("fork: %d %s", st, b)
	}
	unmountAtEnd(t, filepath.Join(d.State, "forks", "try", "root"))
	rounds := testenv.Count(t, "SANDFS_RACE_ROUNDS", 6)
	codes := map[int]int{}
	swaps := 0
	for i := 0; i < rounds; i++ {
		for j := 0; j < 50; j++ {
			p := fmt.Sprintf("/fs/write?path=/p/d/sub/f%03d&mkdir=true", j)
			if st, b := named(t, d, "", "PUT", "try", p, []byte(fmt.Sprintf("round %d", i))); st != http.StatusOK {
				t.Fatalf("write in the fork: %d %s", st, b)
			}
		}
		// The attacker runs while the merge does: its storm of events is
		// the parent's journal's to store, and need not last longer.
		a := testenv.StartAttacker(t, "TestNobodyAttacker", "exchange", dd, "sub", v.Path)
		st, b := named(t, d, "", "POST", "try", "/merge", []byte(`{"strategy":"theirs"}`))
		swaps += a.Stop()
		codes[st]++
		if st != http.StatusOK {
			t.Logf("round %d: %d %.300s", i, st, b)
		}
		// The attacker's storm (a million events a minute) can keep the
		// parent's journal database busy past a reader's patience: the
		// daemon then says so (503, the database unavailable) and writes
		// nothing. Any other 5xx is a failure.
		busy := st == http.StatusServiceUnavailable && strings.Contains(string(b), "database is unavailable")
		if st >= 500 && !busy {
			t.Errorf("round %d: %d %s", i, st, b)
		}
		if c := v.Changed(t); c != "" {
			t.Fatalf("round %d: the merge changed the file outside the root: %s", i, c)
		}
	}
	t.Logf("%d merges (answers %v), %d swaps; the victim held", rounds, codes, swaps)
	if swaps == 0 || codes[http.StatusOK] == 0 {
		t.Error("the attacker never swapped, or no merge ran: the test proved nothing")
	}
	if st, _ := named(t, d, "", "DELETE", "try", "", nil); st != http.StatusOK {
		t.Errorf("discard: %d", st)
	}
}
