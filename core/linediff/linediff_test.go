package linediff

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// apply runs the script ops on a, checking each equal run against b.
func apply(t testing.TB, a, b []string, ops []Op) []string {
	t.Helper()
	var out []string
	i, j := 0, 0
	for _, op := range ops {
		if op.I1 != i || op.J1 != j || op.I2 < op.I1 || op.J2 < op.J1 {
			t.Fatalf("op %+v does not follow (%d, %d)", op, i, j)
		}
		switch op.Tag {
		case 'e':
			for k := 0; k < op.I2-op.I1; k++ {
				if a[op.I1+k] != b[op.J1+k] {
					t.Fatalf("op %+v: %q is not %q", op, a[op.I1+k], b[op.J1+k])
				}
			}
			out = append(out, a[op.I1:op.I2]...)
		case 'd':
		case 'i', 'r':
			out = append(out, b[op.J1:op.J2]...)
		default:
			t.Fatalf("op %+v: unknown tag", op)
		}
		i, j = op.I2, op.J2
	}
	if i != len(a) || j != len(b) {
		t.Fatalf("the script ends at (%d, %d), not (%d, %d)", i, j, len(a), len(b))
	}
	return out
}

func changed(ops []Op) int {
	n := 0
	for _, op := range ops {
		if op.Tag != 'e' {
			n += op.I2 - op.I1 + op.J2 - op.J1
		}
	}
	return n
}

func check(t testing.TB, a, b []string) []Op {
	t.Helper()
	ops, err := Ops(context.Background(), a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := apply(t, a, b, ops); strings.Join(got, "\n") != strings.Join(b, "\n") || len(got) != len(b) {
		t.Fatalf("the script of %q → %q makes %q", a, b, got)
	}
	return ops
}

func TestOps(t *testing.T) {
	for _, c := range []struct {
		name    string
		a, b    string
		changed int // lines deleted plus inserted
	}{
		{"equal", "a b c", "a b c", 0},
		{"both empty", "", "", 0},
		{"added", "", "a b", 2},
		{"removed", "a b", "", 2},
		{"one replaced", "a b c d e", "a b X d e", 2},
		{"moved block", "1 2 3 4 5 6", "4 5 6 1 2 3", 6},
		{"repeated lines", "x x x y x x", "x x y x x x", 2},
		{"no line unique", "a a b b a a", "b b a a b b", 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			ops := check(t, strings.Fields(c.a), strings.Fields(c.b))
			if n := changed(ops); n != c.changed {
				t.Errorf("%d lines changed, want %d: %+v", n, c.changed, ops)
			}
		})
	}
}

// TestOpsRandom: random edits of random texts over few distinct lines
// (where no line is unique, Myers' path) and many (the anchors' path):
// every script turns a into b.
func TestOpsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 500; round++ {
		alphabet := []int{3, 50, 10000}[round%3]
		a := make([]string, rng.IntN(60))
		for i := range a {
			a[i] = fmt.Sprint(rng.IntN(alphabet))
		}
		b := append([]string(nil), a...)
		for e := rng.IntN(10); e > 0; e-- {
			switch p := rng.IntN(len(b) + 1); rng.IntN(3) {
			case 0:
				b = append(b[:p], append([]string{fmt.Sprint(rng.IntN(alphabet))}, b[p:]...)...)
			case 1:
				if p < len(b) {
					b = append(b[:p], b[p+1:]...)
				}
			default:
				if p < len(b) {
					b[p] = fmt.Sprint(rng.IntN(alphabet))
				}
			}
		}
		check(t, a, b)
	}
}

// TestOpsAdversarial: the cases that made the old matcher quadratic finish
// within the budget; one past any linear budget says ErrTooLarge; an
// ended context ends the diff.
func TestOpsAdversarial(t *testing.T) {
	const n = 12000
	var a, b []string
	for i := 0; i < n; i++ {
		a = append(a, fmt.Sprintf("line %d", i))
		b = append(b, fmt.Sprintf("line %d", i), fmt.Sprintf("new %d", i))
	}
	if ops := check(t, a, b); changed(ops) != n {
		t.Errorf("each line followed by a new one: %d changed, want %d", changed(ops), n)
	}
	// No line unique on either side: Myers' bound, then one replacement.
	same, other := make([]string, n), make([]string, n)
	for i := range same {
		same[i], other[i] = "x", "y"
		if i%2 == 0 {
			other[i] = "x"
		}
	}
	ops, err := Ops(context.Background(), same, other)
	if err != nil && !errors.Is(err, ErrTooLarge) {
		t.Fatal(err)
	}
	if err == nil {
		apply(t, same, other, ops)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Ops(ctx, same, other); !errors.Is(err, context.Canceled) && !errors.Is(err, ErrTooLarge) {
		t.Errorf("an ended context: %v, want context.Canceled", err)
	}
}

func FuzzOps(f *testing.F) {
	f.Add("a b c", "a c d")
	f.Add("x x x", "x y x")
	f.Fuzz(func(t *testing.T, sa, sb string) {
		a, b := strings.Split(sa, " "), strings.Split(sb, " ")
		if len(a) > 400 || len(b) > 400 {
			return
		}
		check(t, a, b)
	})
}

func TestGroup(t *testing.T) {
	ops := []Op{{'e', 0, 10, 0, 10}, {'r', 10, 11, 10, 11}, {'e', 11, 30, 11, 30}, {'i', 30, 30, 30, 32}, {'e', 30, 33, 32, 35}}
	got := fmt.Sprint(Group(ops, 3))
	want := "[[{101 7 10 7 10} {114 10 11 10 11} {101 11 14 11 14}] [{101 27 30 27 30} {105 30 30 30 32} {101 30 33 32 35}]]"
	if got != want {
		t.Errorf("groups %s, want %s", got, want)
	}
	if g := Group([]Op{{'e', 0, 5, 0, 5}}, 3); len(g) != 0 {
		t.Errorf("an equal script has groups: %v", g)
	}
}

// scattered is two texts of about 1 MiB (30,000 lines) with 10,000 lines
// changed at random places.
func scattered() (a, b []string) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 30000; i++ {
		a = append(a, fmt.Sprintf("line %d of the file, with some words %d\n", i, rng.IntN(1000)))
	}
	b = append([]string(nil), a...)
	for e := 0; e < 10000; e++ {
		b[rng.IntN(len(b))] = fmt.Sprintf("changed %d\n", e)
	}
	return a, b
}

func BenchmarkOpsScattered(b *testing.B) {
	x, y := scattered()
	for b.Loop() {
		if _, err := Ops(context.Background(), x, y); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpsWorst: each line followed by a new one, 12,000 lines (the
// old matcher's 18.7 s of CPU at 8,000).
func BenchmarkOpsWorst(b *testing.B) {
	var x, y []string
	for i := 0; i < 12000; i++ {
		x = append(x, fmt.Sprintf("line %d", i))
		y = append(y, fmt.Sprintf("line %d", i), fmt.Sprintf("new %d", i))
	}
	for b.Loop() {
		if _, err := Ops(context.Background(), x, y); err != nil {
			b.Fatal(err)
		}
	}
}
