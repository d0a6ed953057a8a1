package linediff

import "strings"

// opsOf turns matched pairs (increasing on both sides) into an edit
// script over a of n lines and b of m.
func opsOf(pairs [][2]int, n, m int) []Op {
	var ops []Op
	i, j := 0, 0
	flush := func(i2, j2 int) {
		switch {
		case i < i2 && j < j2:
			ops = append(ops, Op{'r', i, i2, j, j2})
		case i < i2:
			ops = append(ops, Op{'d', i, i2, j, j})
		case j < j2:
			ops = append(ops, Op{'i', i, i, j, j2})
		}
	}
	for k := 0; k < len(pairs); {
		pi, pj := pairs[k][0], pairs[k][1]
		flush(pi, pj)
		e := k + 1
		for e < len(pairs) && pairs[e][0] == pairs[e-1][0]+1 && pairs[e][1] == pairs[e-1][1]+1 {
			e++
		}
		run := e - k
		ops = append(ops, Op{'e', pi, pi + run, pj, pj + run})
		i, j, k = pi+run, pj+run, e
	}
	flush(n, m)
	return ops
}

// Group cuts an edit script into the hunks of a unified diff with n lines
// of context, as Python difflib's get_grouped_opcodes does: each group is
// its changes with up to n equal lines around them, and equal runs longer
// than 2n split groups. A script with no change has no group.
func Group(ops []Op, n int) [][]Op {
	codes := append([]Op(nil), ops...)
	if len(codes) == 0 {
		codes = []Op{{'e', 0, 1, 0, 1}}
	}
	if c := &codes[0]; c.Tag == 'e' {
		c.I1, c.J1 = max(c.I1, c.I2-n), max(c.J1, c.J2-n)
	}
	if c := &codes[len(codes)-1]; c.Tag == 'e' {
		c.I2, c.J2 = min(c.I2, c.I1+n), min(c.J2, c.J1+n)
	}
	var groups [][]Op
	var group []Op
	for _, c := range codes {
		if c.Tag == 'e' && c.I2-c.I1 > 2*n {
			group = append(group, Op{'e', c.I1, min(c.I2, c.I1+n), c.J1, min(c.J2, c.J1+n)})
			groups = append(groups, group)
			group = nil
			c.I1, c.J1 = max(c.I1, c.I2-n), max(c.J1, c.J2-n)
		}
		group = append(group, c)
	}
	if len(group) > 0 && !(len(group) == 1 && group[0].Tag == 'e') {
		groups = append(groups, group)
	}
	return groups
}

// Hunks writes the edit script ops of a to b as the hunks of a unified diff
// with 3 lines of context: each hunk's "@@ -A +B @@" line, its ranges
// written by rng (the dialects differ on an empty range), then its lines,
// each written by line with its mark (' ', '-' or '+').
func Hunks(w *strings.Builder, ops []Op, a, b []string, rng func(start, stop int) string, line func(w *strings.Builder, mark byte, lines []string)) {
	for _, g := range Group(ops, 3) {
		first, last := g[0], g[len(g)-1]
		w.WriteString("@@ -" + rng(first.I1, last.I2) + " +" + rng(first.J1, last.J2) + " @@\n")
		for _, c := range g {
			if c.Tag == 'e' {
				line(w, ' ', a[c.I1:c.I2])
				continue
			}
			if c.Tag == 'r' || c.Tag == 'd' {
				line(w, '-', a[c.I1:c.I2])
			}
			if c.Tag == 'r' || c.Tag == 'i' {
				line(w, '+', b[c.J1:c.J2])
			}
		}
	}
}
