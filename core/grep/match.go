package grep

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"sandfs/core/pathmatch"
)

const (
	// grepMaxLine caps the bytes of one reported line (a minified file can
	// have a megabyte on one line); longer lines are cut.
	grepMaxLine = 64 << 10
	// grepChunk is how much of a file one line search scans between two
	// looks at the request's context (the window ends at a line end).
	grepChunk = 64 << 10
)

// matcher finds the matching lines of one file's bytes.
type matcher struct {
	re        *regexp.Regexp
	need      []byte // a literal every match contains (regex only), or nil
	lit       []byte // non-nil: a plain substring search (bytes.Index)
	multiline bool
	insts     int // size of re's program (pattern.go); 0 for lit
}

func newMatcher(o Options) (*matcher, error) {
	if o.Pattern == "" {
		return nil, &pathmatch.PatternError{Pattern: o.Pattern, Err: errors.New("pattern is empty")}
	}
	m := &matcher{multiline: o.Multiline}
	lit := o.FixedStrings || regexp.QuoteMeta(o.Pattern) == o.Pattern
	if lit && !o.CaseInsensitive && !strings.Contains(o.Pattern, "\n") {
		m.lit = []byte(o.Pattern)
		return m, nil
	}
	expr := o.Pattern
	if o.FixedStrings {
		expr = regexp.QuoteMeta(expr)
	}
	flags := "m" // ^ and $ at line boundaries, as rg
	if o.CaseInsensitive {
		flags += "i"
	}
	if o.Multiline {
		flags += "s"
	}
	re, insts, err := compileRegexp(o.Pattern, "(?"+flags+")"+expr, !o.Multiline)
	if err != nil {
		return nil, err
	}
	m.re, m.insts = re, insts
	m.need = requiredLiteral(re.String())
	return m, nil
}

// requiredLiteral is the longest case-sensitive literal every match of expr
// must contain (a piece of a top-level concatenation), or nil. A file
// without it cannot match, so it is skipped with one bytes.Index.
func requiredLiteral(expr string) []byte {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	for re.Op == syntax.OpCapture && len(re.Sub) == 1 {
		re = re.Sub[0]
	}
	var subs []*syntax.Regexp
	switch re.Op {
	case syntax.OpConcat:
		subs = re.Sub
	case syntax.OpLiteral:
		subs = []*syntax.Regexp{re}
	}
	var best []byte
	for _, sub := range subs {
		if sub.Op == syntax.OpLiteral && sub.Flags&syntax.FoldCase == 0 {
			if lit := []byte(string(sub.Rune)); len(lit) > len(best) {
				best = lit
			}
		}
	}
	return best
}

// find returns the next match in b at or after from: its start and end, or
// -1.
func (m *matcher) find(b []byte, from int) (int, int) {
	if m.lit != nil {
		i := bytes.Index(b[from:], m.lit)
		if i < 0 {
			return -1, -1
		}
		return from + i, from + i + len(m.lit)
	}
	loc := m.re.FindIndex(b[from:])
	if loc == nil {
		return -1, -1
	}
	return from + loc[0], from + loc[1]
}

// maxInput is the most bytes of one file this matcher may search
// (MaxInputFor its program size), or -1 for no bound (a substring search).
func (m *matcher) maxInput() int64 {
	if m.re == nil {
		return -1
	}
	return MaxInputFor(m.insts)
}

// search appends the matches of file data b (named file) to out, at most
// limit of them, and reports whether it stopped at the limit. It returns
// ctx's error, with the matches so far, when ctx ends: a line search looks
// at ctx every grepChunk bytes, a multiline one before every match.
func (m *matcher) search(ctx context.Context, file string, b []byte, before, after, limit int, out []Match) ([]Match, bool, error) {
	if len(m.need) > 0 && !bytes.Contains(b, m.need) {
		return out, false, nil
	}
	pos := 0    // search resumes here
	line := 1   // line number at lineAt
	lineAt := 0 // offset of the start of line `line`
	for pos <= len(b) {
		if len(out) >= limit {
			return out, true, nil
		}
		if err := ctx.Err(); err != nil {
			return out, false, err
		}
		// A line search scans a window that ends at a line end: no match
		// crosses a line (compileRegexp), so no match is cut.
		end := len(b)
		if !m.multiline {
			end = lineEnd(b, min(pos+grepChunk, len(b)))
		}
		s, e := m.find(b[:end], pos)
		if s < 0 {
			if end == len(b) {
				break
			}
			pos = end + 1
			continue
		}
		if e == s && s == len(b) && s > 0 && b[s-1] == '\n' {
			break // an empty match after the final newline is no line
		}
		ls := bytes.LastIndexByte(b[:s], '\n') + 1
		le := lineEnd(b, s)
		if m.multiline && e > le {
			le = lineEnd(b, max(e-1, s))
		}
		line += bytes.Count(b[lineAt:ls], []byte{'\n'})
		lineAt = ls
		gm := Match{File: file, Line: line, Text: lineText(b[ls:le])}
		if before > 0 {
			gm.Before = linesBefore(b, ls, before)
		}
		if after > 0 {
			gm.After = linesAfter(b, le, after)
		}
		out = append(out, gm)
		pos = le + 1
	}
	return out, false, nil
}

func lineEnd(b []byte, i int) int {
	if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(b)
}

func lineText(l []byte) string {
	l = bytes.TrimSuffix(l, []byte{'\r'})
	if len(l) > grepMaxLine {
		l = l[:grepMaxLine]
	}
	return string(l)
}

// linesBefore is up to n lines ending just before offset ls (a line start).
func linesBefore(b []byte, ls, n int) []string {
	var out []string
	end := ls - 1 // the newline ending the line before
	for len(out) < n && end >= 0 {
		start := bytes.LastIndexByte(b[:end], '\n') + 1
		out = append(out, lineText(b[start:end]))
		end = start - 1
	}
	slices.Reverse(out)
	return out
}

// linesAfter is up to n lines starting after offset le (a line end).
func linesAfter(b []byte, le, n int) []string {
	var out []string
	start := le + 1
	for len(out) < n && start < len(b) {
		end := lineEnd(b, start)
		out = append(out, lineText(b[start:end]))
		start = end + 1
	}
	return out
}
