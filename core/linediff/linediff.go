// Package linediff finds what changed between two lists of lines, at a
// cost bounded by their length: a diff of files a client chose can never
// burn a core. Its rule: every diff either finishes within a budget of
// work linear in the input (ErrTooLarge past it) or stops when its context
// ends, and what it returns is always a correct edit script, minimal in
// practice, not always in theory.
//
// Most diffs of an edited file are short: for them Myers' algorithm alone
// finds a shortest script (as diff -u does) within a small share of the
// budget, and is tried first. Past that share the method is that of
// patience and histogram diffs: the common prefix
// and suffix are matched first; then the lines found exactly once on each
// side are matched in the longest order both keep (a longest increasing
// subsequence), which splits the rest into smaller regions, each diffed
// the same way. A region with no such line is left to Myers' O(ND)
// algorithm with its edit distance bounded; past the bound the region is
// one replacement, still a correct script.
package linediff

import (
	"context"
	"errors"
	"sort"
)

// Op is one run of an edit script, as Python difflib's opcodes: Tag 'e'
// (a[I1:I2] equals b[J1:J2]), 'd' (a[I1:I2] deleted), 'i' (b[J1:J2]
// inserted) or 'r' (a[I1:I2] replaced by b[J1:J2]).
type Op struct {
	Tag            byte
	I1, I2, J1, J2 int
}

// ErrTooLarge is the diff of two sides that differ in too many places to
// be found within the budget.
var ErrTooLarge = errors.New("the two sides differ in too many places to diff within the bound")

// maxD bounds the edit distance Myers' algorithm looks for in one region
// without a unique line; its memory is about maxD² int32s (4 MiB).
const maxD = 1000

// Ops is the edit script that turns a into b, runs of equal lines
// included.
func Ops(ctx context.Context, a, b []string) ([]Op, error) {
	d := newDiffer(ctx, a, b)
	if !d.exact() {
		d.run(0, len(a), 0, len(b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return opsOf(d.pairs, len(a), len(b)), nil
}

type differ struct {
	ctx        context.Context
	a, b       []int32 // the lines, as ids
	ids        int
	pairs      [][2]int // matched lines (i, j), both increasing
	work       int
	budget     int
	checked    int
	err        error
	countA     []int32 // per id, in the region being looked at (stamped)
	countB     []int32
	posB       []int32
	stamp      []int32
	generation int32
}

func newDiffer(ctx context.Context, a, b []string) *differ {
	d := &differ{ctx: ctx, a: make([]int32, len(a)), b: make([]int32, len(b))}
	ids := make(map[string]int32, len(a))
	intern := func(s string) int32 {
		id, ok := ids[s]
		if !ok {
			id = int32(len(ids))
			ids[s] = id
		}
		return id
	}
	for i, s := range a {
		d.a[i] = intern(s)
	}
	for j, s := range b {
		d.b[j] = intern(s)
	}
	d.ids = len(ids)
	d.countA, d.countB = make([]int32, d.ids), make([]int32, d.ids)
	d.posB, d.stamp = make([]int32, d.ids), make([]int32, d.ids)
	// Linear in the input: each region's own pass is paid for once per
	// level of splitting, and Myers' regions by their steps.
	d.budget = 64*(len(a)+len(b)) + 1<<22
	return d
}

// spend counts n units of work, and reports whether the diff may go on
// (the budget not spent, the context not ended).
func (d *differ) spend(n int) bool {
	if d.err != nil {
		return false
	}
	d.work += n
	if d.work > d.budget {
		d.err = ErrTooLarge
		return false
	}
	if d.work-d.checked > 1<<16 {
		d.checked = d.work
		if err := d.ctx.Err(); err != nil {
			d.err = err
			return false
		}
	}
	return true
}

func (d *differ) match(i, j int) { d.pairs = append(d.pairs, [2]int{i, j}) }

// exact matches the whole of a and b by Myers' algorithm alone, a shortest
// script, if it finds one within exactShare of the budget; else it matches
// nothing and leaves the rest of the budget to run. A context that ended
// is kept in d.err.
func (d *differ) exact() bool {
	ahi, bhi := len(d.a), len(d.b)
	lo := 0
	for lo < ahi && lo < bhi && d.a[lo] == d.b[lo] {
		lo++
	}
	n := 0
	for ahi > lo && bhi > lo && d.a[ahi-1] == d.b[bhi-1] {
		ahi, bhi, n = ahi-1, bhi-1, n+1
	}
	budget := d.budget
	d.budget = min(budget, d.work+exactShare*(len(d.a)+len(d.b))+1<<20)
	for i := 0; i < lo; i++ {
		d.match(i, i)
	}
	found := lo == ahi || lo == bhi || d.myers(lo, ahi, lo, bhi)
	d.budget = budget
	if errors.Is(d.err, ErrTooLarge) {
		d.err = nil // the share is spent, not the budget
	}
	if !found || d.err != nil {
		d.pairs = d.pairs[:0]
		return d.err != nil
	}
	for k := 0; k < n; k++ {
		d.match(ahi+k, bhi+k)
	}
	return true
}

// exactShare is the work per input line exact may spend: Myers' cost is
// about (n+m)·D, so this is the edit distance it can afford on a large
// input before patience takes over (small inputs get 1<<20 more).
const exactShare = 16

// run matches the lines of a[alo:ahi] and b[blo:bhi], in order.
func (d *differ) run(alo, ahi, blo, bhi int) {
	for alo < ahi && blo < bhi && d.a[alo] == d.b[blo] {
		d.match(alo, blo)
		alo, blo = alo+1, blo+1
	}
	n := 0
	for ahi > alo && bhi > blo && d.a[ahi-1] == d.b[bhi-1] {
		ahi, bhi, n = ahi-1, bhi-1, n+1
	}
	if alo < ahi && blo < bhi && d.spend(ahi-alo+bhi-blo) {
		if anchors := d.unique(alo, ahi, blo, bhi); len(anchors) > 0 {
			pa, pb := alo, blo
			for _, an := range anchors {
				d.run(pa, an[0], pb, an[1])
				d.match(an[0], an[1])
				pa, pb = an[0]+1, an[1]+1
			}
			d.run(pa, ahi, pb, bhi)
		} else {
			d.myers(alo, ahi, blo, bhi)
		}
	}
	for k := 0; k < n; k++ {
		d.match(ahi+k, bhi+k)
	}
}

// unique is the lines found exactly once in a[alo:ahi] and once in
// b[blo:bhi], as pairs (i, j) in the longest run increasing on both sides.
func (d *differ) unique(alo, ahi, blo, bhi int) [][2]int {
	d.generation++
	g := d.generation
	for i := alo; i < ahi; i++ {
		id := d.a[i]
		if d.stamp[id] != g {
			d.stamp[id], d.countA[id], d.countB[id] = g, 0, 0
		}
		d.countA[id]++
	}
	for j := blo; j < bhi; j++ {
		id := d.b[j]
		if d.stamp[id] != g {
			continue // not in a's region
		}
		d.countB[id]++
		d.posB[id] = int32(j)
	}
	var cands [][2]int
	for i := alo; i < ahi; i++ {
		id := d.a[i]
		if d.countA[id] == 1 && d.countB[id] == 1 {
			cands = append(cands, [2]int{i, int(d.posB[id])})
		}
	}
	return longestIncreasing(cands)
}

// longestIncreasing is the longest subsequence of cands (increasing in
// their first field) increasing in the second too (patience sorting).
func longestIncreasing(cands [][2]int) [][2]int {
	if len(cands) == 0 {
		return nil
	}
	tails := []int{} // index in cands of the smallest tail of each length
	prev := make([]int, len(cands))
	for c := range cands {
		k := sort.Search(len(tails), func(t int) bool { return cands[tails[t]][1] >= cands[c][1] })
		if k > 0 {
			prev[c] = tails[k-1]
		} else {
			prev[c] = -1
		}
		if k == len(tails) {
			tails = append(tails, c)
		} else {
			tails[k] = c
		}
	}
	out := make([][2]int, len(tails))
	for c, k := tails[len(tails)-1], len(tails)-1; k >= 0; c, k = prev[c], k-1 {
		out[k] = cands[c]
	}
	return out
}
