package mcp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/linediff"
	"sandfs/core/pathmatch"
)

// The formats the reference server answers in, rebuilt so that an agent
// reading sandfs's answers reads what it would read from the reference
// (server-filesystem's lib.ts and index.ts, and the Node and jsdiff
// behaviour they lean on).

var errNoSandbox = errors.New("the request's sandbox is not served")

// nodeErrnoText is the text Node (libuv) gives an errno in an fs error.
var nodeErrnoText = map[unix.Errno]string{
	unix.ENOENT:       "no such file or directory",
	unix.EEXIST:       "file already exists",
	unix.ENOTDIR:      "not a directory",
	unix.EISDIR:       "illegal operation on a directory",
	unix.EACCES:       "permission denied",
	unix.EPERM:        "operation not permitted",
	unix.ENOTEMPTY:    "directory not empty",
	unix.EINVAL:       "invalid argument",
	unix.ELOOP:        "too many symbolic links encountered",
	unix.ENAMETOOLONG: "name too long",
	unix.ENOSPC:       "no space left on device",
	unix.EXDEV:        "cross-device link not permitted",
	unix.EBUSY:        "resource busy or locked",
}

// toolErr is the text of a failed call as Node words an fs error
// ("ENOENT: no such file or directory, open '/a.txt'"), with the API path
// where Node prints a host path; syscall is the call Node would name.
// Errors that carry no errno keep their own text (core's texts name API
// paths only).
func toolErr(err error, syscall string) error {
	var pe *fs.PathError
	var errno unix.Errno
	if errors.As(err, &pe) && errors.As(pe.Err, &errno) {
		if txt, ok := nodeErrnoText[errno]; ok {
			return fmt.Errorf("%s: %s, %s '%s'", unix.ErrnoName(errno), txt, syscall, pe.Path)
		}
		return fmt.Errorf("%s: %s, %s '%s'", unix.ErrnoName(errno), errno.Error(), syscall, pe.Path)
	}
	return err
}

// renameErr is a failed rename as Node words it: both paths.
func renameErr(err error, src, dst string) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		txt, ok := nodeErrnoText[errno]
		if !ok {
			txt = errno.Error()
		}
		return fmt.Errorf("%s: %s, rename '%s' -> '%s'", unix.ErrnoName(errno), txt, src, dst)
	}
	return err
}

// formatSize is lib.ts formatSize: B up to 1023, then two decimals of the
// largest unit up to TB.
func formatSize(n int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB"}
	if n <= 0 {
		return "0 B"
	}
	i := int(math.Floor(math.Log(float64(n)) / math.Log(1024)))
	if i <= 0 {
		return strconv.FormatInt(n, 10) + " B"
	}
	i = min(i, len(units)-1)
	return strconv.FormatFloat(float64(n)/math.Pow(1024, float64(i)), 'f', 2, 64) + " " + units[i]
}

// jsLen is a string's length as JavaScript counts it (UTF-16 units), for
// padEnd and padStart.
func jsLen(s string) int { return len(utf16.Encode([]rune(s))) }

func padEnd(s string, n int) string {
	if l := jsLen(s); l < n {
		return s + strings.Repeat(" ", n-l)
	}
	return s
}

func padStart(s string, n int) string {
	if l := jsLen(s); l < n {
		return strings.Repeat(" ", n-l) + s
	}
	return s
}

// jsDate is a time as JavaScript's Date.prototype.toString writes it
// (the reference prints dates with `${value}`), always in UTC: the
// daemon's time zone is not the client's business.
func jsDate(t time.Time) string {
	return t.UTC().Format("Mon Jan 02 2006 15:04:05") + " GMT+0000 (Coordinated Universal Time)"
}

// gitDiff is lib.ts createUnifiedDiff: jsdiff's createTwoFilesPatch of a
// and b under the name file, headers "original" and "modified", three
// lines of context, every hunk header with both counts.
func gitDiff(ctx context.Context, file, a, b string) (string, error) {
	var w strings.Builder
	w.WriteString("Index: " + file + "\n")
	w.WriteString("===================================================================\n")
	w.WriteString("--- " + file + "\toriginal\n+++ " + file + "\tmodified\n")
	if a == b {
		return w.String(), nil
	}
	la, lb := splitKeep(a), splitKeep(b)
	ops, err := linediff.Ops(ctx, la, lb)
	if err != nil {
		return "", err
	}
	linediff.Hunks(&w, ops, la, lb, jsRange, diffLines)
	return w.String(), nil
}

// jsRange is a hunk side as jsdiff writes it: "start,count" always, the
// start one lower when the count is 0.
func jsRange(start, stop int) string {
	n := stop - start
	if n == 0 {
		return strconv.Itoa(start) + ",0"
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(n)
}

// splitKeep cuts s after each newline; the last line may lack one.
func splitKeep(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n') + 1
		if i == 0 {
			i = len(s)
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func diffLines(w *strings.Builder, tag byte, lines []string) {
	for _, l := range lines {
		w.WriteByte(tag)
		if strings.HasSuffix(l, "\n") {
			w.WriteString(l)
			continue
		}
		w.WriteString(l + "\n\\ No newline at end of file\n")
	}
}

// fencedDiff wraps a diff in a ```diff fence one backtick longer than any
// run of backticks in it, as applyFileEdits does.
func fencedDiff(diff string) string {
	n := 3
	for strings.Contains(diff, strings.Repeat("`", n)) {
		n++
	}
	fence := strings.Repeat("`", n)
	return fence + "diff\n" + diff + fence + "\n\n"
}

// applyEdits is lib.ts applyFileEdits on content (line ends already
// normalised): each edit replaces the first exact occurrence of its
// oldText, or else the first run of lines equal to it but for the
// whitespace around each, re-indented as the reference does.
func applyEdits(content string, edits []edit) (string, error) {
	out := content
	for _, e := range edits {
		oldText, newText := normalizeEOL(e.OldText), normalizeEOL(e.NewText)
		if strings.Contains(out, oldText) {
			out = strings.Replace(out, oldText, newText, 1)
			continue
		}
		oldLines := strings.Split(oldText, "\n")
		lines := strings.Split(out, "\n")
		found := false
		for i := 0; i+len(oldLines) <= len(lines); i++ {
			match := true
			for j, ol := range oldLines {
				if strings.TrimSpace(ol) != strings.TrimSpace(lines[i+j]) {
					match = false
					break
				}
			}
			if !match {
				continue
			}
			indent := leadingSpace(lines[i])
			var repl []string
			for j, nl := range strings.Split(newText, "\n") {
				if j == 0 {
					repl = append(repl, indent+strings.TrimLeftFunc(nl, unicode.IsSpace))
					continue
				}
				oldIndent := ""
				if j < len(oldLines) {
					oldIndent = leadingSpace(oldLines[j])
				}
				newIndent := leadingSpace(nl)
				if oldIndent != "" && newIndent != "" {
					rel := max(0, jsLen(newIndent)-jsLen(oldIndent))
					repl = append(repl, indent+strings.Repeat(" ", rel)+strings.TrimLeftFunc(nl, unicode.IsSpace))
					continue
				}
				repl = append(repl, nl)
			}
			lines = append(lines[:i], append(repl, lines[i+len(oldLines):]...)...)
			out = strings.Join(lines, "\n")
			found = true
			break
		}
		if !found {
			return "", fmt.Errorf("Could not find exact match for edit:\n%s", e.OldText)
		}
	}
	return out, nil
}

func leadingSpace(s string) string {
	return s[:len(s)-len(strings.TrimLeftFunc(s, unicode.IsSpace))]
}

func normalizeEOL(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// globMatch is minimatch(rel, pattern, {dot: true}) for the patterns
// sandfs's globs know: "/"-separated segments of *, ? and [...], and "**"
// for any number of directories. Brace sets ({a,b}) and extglobs are not
// known: such a pattern matches only itself. A pattern that does not
// compile matches nothing.
func globMatch(rel, pattern string) bool {
	g, err := pathmatch.Compile(pattern)
	if err != nil {
		return false
	}
	return g.Match(rel)
}

// excludedTree is directory_tree's test of an entry against its excludes:
// a pattern with "*" as a glob of the relative path, another also as a
// name anywhere ("**/p") or a directory anywhere ("**/p/**").
func excludedTree(rel string, patterns []string) bool {
	for _, p := range patterns {
		if strings.Contains(p, "*") {
			if globMatch(rel, p) {
				return true
			}
			continue
		}
		if globMatch(rel, p) || globMatch(rel, "**/"+p) || globMatch(rel, "**/"+p+"/**") {
			return true
		}
	}
	return false
}

// etagOf is the ETag of the file at p now ("" when it cannot be stat'ed).
func etagOf(ctx context.Context, sb *core.Sandbox, p string) string {
	info, err := sb.Lstat(ctx, p)
	if err != nil {
		return ""
	}
	return core.ETag(info)
}
