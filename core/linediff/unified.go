package linediff

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Unified is the unified diff of a against b, as `diff -u` writes it
// with the headers "--- from" and "+++ to" (no times), three lines of
// context, and "\ No newline at end of file" after a last line without one;
// "" when they are equal. The lines are matched by package linediff, at a
// cost bounded by their length: past its budget the error is
// ErrTooLarge, and the end of ctx ends it too.
func Unified(ctx context.Context, from, to string, a, b []byte) (string, error) {
	if bytes.Equal(a, b) {
		return "", nil
	}
	la, lb := splitLines(a), splitLines(b)
	ops, err := Ops(ctx, la, lb)
	if err != nil {
		return "", err
	}
	var w strings.Builder
	w.WriteString("--- " + from + "\n+++ " + to + "\n")
	Hunks(&w, ops, la, lb, hunkRange, writeLines)
	return w.String(), nil
}

// splitLines cuts b after each newline; the last line may lack one.
func splitLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n') + 1
		if i == 0 {
			i = len(b)
		}
		out = append(out, string(b[:i]))
		b = b[i:]
	}
	return out
}

func writeLines(w *strings.Builder, tag byte, lines []string) {
	for _, l := range lines {
		w.WriteByte(tag)
		w.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			w.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange is a hunk's "start,length" as diff -u writes it: the length
// left out when 1, the start one before the range when it is empty.
func hunkRange(start, stop int) string {
	n := stop - start
	switch n {
	case 1:
		return strconv.Itoa(start + 1)
	case 0:
		return strconv.Itoa(start) + ",0"
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(n)
}

// binarySniff is how much of a side IsBinary looks at for a NUL.
const binarySniff = 8 << 10

// IsBinary says whether b is no text to diff: a NUL in its first 8 KiB,
// or not UTF-8.
func IsBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), binarySniff)], 0) >= 0 || !utf8.Valid(b)
}
