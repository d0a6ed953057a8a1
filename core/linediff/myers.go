package linediff

// myers matches the lines of a[alo:ahi] and b[blo:bhi] by Myers' greedy
// O(ND) algorithm, remembering each step's frontier to walk back the
// path, and reports whether it found the path. An edit distance past maxD
// leaves the region unmatched: one replacement, still a correct script.
func (d *differ) myers(alo, ahi, blo, bhi int) bool {
	n, m := ahi-alo, bhi-blo
	limit := min(maxD, n+m)
	off := limit + 1
	v := make([]int32, 2*limit+3)
	var trace [][]int32 // trace[s]: the frontier before step s, over k in [-s, s]
	for s := 0; s <= limit; s++ {
		snap := make([]int32, 2*s+1)
		copy(snap, v[off-s:off+s+1])
		trace = append(trace, snap)
		if !d.spend(2*s + 1) {
			return false
		}
		for k := -s; k <= s; k += 2 {
			var x int
			if k == -s || k != s && v[off+k-1] < v[off+k+1] {
				x = int(v[off+k+1])
			} else {
				x = int(v[off+k-1]) + 1
			}
			y, x0 := x-k, x
			for x < n && y < m && d.a[alo+x] == d.b[blo+y] {
				x, y = x+1, y+1
			}
			if !d.spend(x - x0) {
				return false
			}
			v[off+k] = int32(x)
			if x >= n && y >= m {
				d.walkBack(trace, alo, blo, n, m)
				return true
			}
		}
	}
	return false // too far apart: no line of the region is matched
}

// walkBack appends the matches of the path that reached (n, m), read back
// through the frontiers of trace.
func (d *differ) walkBack(trace [][]int32, alo, blo, n, m int) {
	var rev [][2]int
	x, y := n, m
	for s := len(trace) - 1; s >= 0; s-- {
		at := func(k int) int { return int(trace[s][k+s]) }
		k := x - y
		var pk int
		if k == -s || k != s && at(k-1) < at(k+1) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := 0
		if s > 0 {
			px = at(pk)
		}
		py := px - pk
		if s == 0 {
			px, py = 0, 0
		}
		for x > px && y > py {
			x, y = x-1, y-1
			rev = append(rev, [2]int{alo + x, blo + y})
		}
		x, y = px, py
	}
	for i := len(rev) - 1; i >= 0; i-- {
		d.pairs = append(d.pairs, rev[i])
	}
}
