package linediff

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/internal/testenv"
)

// gnuHunks is the hunk headers of GNU diff's normal format for a and b
// ("3,5c3,4", "7d5", "9a8,10"): where its changes are, line for line.
func gnuHunks(t testing.TB, dir string, a, b []string) []string {
	t.Helper()
	pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for p, lines := range map[string][]string{pa: a, pb: b} {
		text := strings.Join(lines, "\n")
		if len(lines) > 0 {
			text += "\n"
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("diff", pa, pb).Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("diff: %v", err)
	}
	var hunks []string
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" && l[0] != '<' && l[0] != '>' && l != "---" {
			hunks = append(hunks, l)
		}
	}
	return hunks
}

// ourHunks is the same headers made from ops.
func ourHunks(ops []Op) []string {
	span := func(lo, hi int) string {
		if hi-lo == 1 {
			return fmt.Sprint(hi)
		}
		return fmt.Sprintf("%d,%d", lo+1, hi)
	}
	var hunks []string
	for _, op := range ops {
		switch op.Tag {
		case 'd':
			hunks = append(hunks, span(op.I1, op.I2)+"d"+fmt.Sprint(op.J1))
		case 'i':
			hunks = append(hunks, fmt.Sprint(op.I1)+"a"+span(op.J1, op.J2))
		case 'r':
			hunks = append(hunks, span(op.I1, op.I2)+"c"+span(op.J1, op.J2))
		}
	}
	return hunks
}

// linesChanged is how many lines a script deletes and inserts.
func linesChanged(hunks []string, a, b []string) int {
	n := 0
	for _, h := range hunks {
		i := strings.IndexAny(h, "acd")
		for k, r := range []string{h[:i], h[i+1:]} {
			if k == 0 && h[i] == 'a' || k == 1 && h[i] == 'd' {
				continue
			}
			lo, hi := r, r
			if c := strings.IndexByte(r, ','); c >= 0 {
				lo, hi = r[:c], r[c+1:]
			}
			var l, m int
			fmt.Sscan(lo, &l)
			fmt.Sscan(hi, &m)
			n += m - l + 1
		}
	}
	return n
}

func requireDiff(t testing.TB) {
	if _, err := exec.LookPath("diff"); err != nil {
		testenv.Skip(t, nil, "diff(1) is not installed: apt-get install diffutils")
	}
}

// TestOpsAgainstGNU: on 600 random pairs of short texts over 2 to 26
// distinct lines, no script is longer than GNU diff's (both are shortest
// scripts where diff's heuristics do not cut in, and then several shortest
// scripts may exist), and the share whose hunks are exactly diff's is
// logged.
func TestOpsAgainstGNU(t *testing.T) {
	requireDiff(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(7, 11))
	same := 0
	const rounds = 600
	for i := 0; i < rounds; i++ {
		alpha := []int{2, 3, 5, 26}[i%4]
		gen := func() []string {
			lines := make([]string, r.IntN(20))
			for k := range lines {
				lines[k] = string(rune('a' + r.IntN(alpha)))
			}
			return lines
		}
		a, b := gen(), gen()
		ops, err := Ops(context.Background(), a, b)
		if err != nil {
			t.Fatal(err)
		}
		ours, gnu := ourHunks(ops), gnuHunks(t, dir, a, b)
		if linesChanged(ours, a, b) > linesChanged(gnu, a, b) {
			t.Errorf("a %q b %q: we change %d lines (%q), diff %d (%q)", a, b, linesChanged(ours, a, b), ours, linesChanged(gnu, a, b), gnu)
		}
		if strings.Join(ours, " ") == strings.Join(gnu, " ") {
			same++
		}
	}
	t.Logf("%d of %d scripts have exactly diff's hunks; none is longer", same, rounds)
}

// FuzzOpsGNU: whatever the texts (lines are the bytes of the inputs, as
// one-letter lines over five letters), the script is correct and no longer
// than GNU diff's.
func FuzzOpsGNU(f *testing.F) {
	f.Add([]byte("abcab"), []byte("bacba"))
	f.Add([]byte("aaaa"), []byte("aabaa"))
	f.Add([]byte("abcde"), []byte(""))
	f.Fuzz(func(t *testing.T, sa, sb []byte) {
		if len(sa) > 200 || len(sb) > 200 {
			return
		}
		requireDiff(t)
		lines := func(s []byte) []string {
			out := make([]string, len(s))
			for i, c := range s {
				out[i] = string(rune('a' + c%5))
			}
			return out
		}
		a, b := lines(sa), lines(sb)
		ops := check(t, a, b)
		ours, gnu := ourHunks(ops), gnuHunks(t, t.TempDir(), a, b)
		if linesChanged(ours, a, b) > linesChanged(gnu, a, b) {
			t.Errorf("we change %d lines (%q), diff %d (%q)", linesChanged(ours, a, b), ours, linesChanged(gnu, a, b), gnu)
		}
	})
}
