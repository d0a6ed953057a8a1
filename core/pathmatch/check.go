package pathmatch

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Globs from clients. Every glob a client sends (grep's includes and
// excludes, find, glob, the named listing, the watch filters) is checked
// here, under one bound; a regular expression is compiled by package
// core/grep, under its own. A refusal of either is a *PatternError.

// MaxGlobLen is the longest glob a client may send: no path is longer than
// PATH_MAX, and path.Match costs the product of the glob's and the name's
// lengths, run for every name a walk or a watcher meets.
const MaxGlobLen = 1024

// ErrPatternTooComplex is what a refused regular expression unwraps to.
var ErrPatternTooComplex = errors.New("pattern too complex")

// CheckGlob reports whether a client's glob (path.Match syntax, "/"
// separated, "**" allowed as a segment) is acceptable: well formed and at
// most MaxGlobLen bytes. A refusal is a *PatternError saying why.
func CheckGlob(glob string) error {
	if len(glob) > MaxGlobLen {
		return &PatternError{Pattern: glob[:64] + "…", Err: fmt.Errorf("%w: glob is %d bytes, longer than the limit of %d", ErrPatternTooComplex, len(glob), MaxGlobLen)}
	}
	if _, err := path.Match(glob, ""); err != nil {
		return &PatternError{Pattern: glob, Err: malformedGlob{}}
	}
	return nil
}

// malformedGlob is a glob path.Match refuses; it is EINVAL, as
// CompileGlob says of one.
type malformedGlob struct{}

func (malformedGlob) Error() string { return "malformed glob (an unclosed [ or a trailing \\)" }

func (malformedGlob) Is(target error) bool { return target == unix.EINVAL }

// PatternError is a pattern that does not compile, or an unknown type alias:
// the request's fault, not the filesystem's.
type PatternError struct {
	Pattern string
	Err     error
}

func (e *PatternError) Error() string {
	return "invalid pattern " + strconv.Quote(e.Pattern) + ": " + e.Err.Error()
}

func (e *PatternError) Unwrap() error { return e.Err }

// CompileGlob checks a client's glob (CheckGlob's bounds) and compiles it;
// a malformed one is EINVAL (an *fs.PathError of op "glob", as core's
// PathErr makes one).
func CompileGlob(pattern string) (*Glob, error) {
	if err := CheckGlob(pattern); err != nil {
		return nil, err
	}
	g, err := Compile(pattern)
	if err != nil {
		return nil, &fs.PathError{Op: "glob", Path: strings.ReplaceAll(pattern, "\x00", `\x00`), Err: unix.EINVAL}
	}
	return g, nil
}

// MatchGlob compiles pattern and matches rel; a malformed pattern matches
// nothing.
func MatchGlob(pattern, rel string) bool {
	g, err := CompileGlob(pattern)
	return err == nil && g.Match(rel)
}
