package core

import (
	"context"
	"sync/atomic"
	"unicode/utf8"
)

// # Names that are not UTF-8
//
// A Linux name is any bytes but "/" and NUL; an API path travels in JSON
// strings and URLs, which carry text. A name that is not valid UTF-8 cannot
// be reported as it is: encoding/json (and every other encoder) turns each
// bad byte into U+FFFD, so "a\xff" and "a\xfe" would both list as "a�",
// the name of a third, real file, and acting on the returned path would
// hit that other file. Core never reports such a name to an API client:
//
//   - a listing, walk or grep leaves the entry out (a directory so named
//     is not descended: every path below it has the same bytes) and counts
//     it in the [SkippedNames] the caller put in the context;
//   - an API path a client sends that is not valid UTF-8 (possible through
//     a percent-encoded query or a multipart field) is refused by the
//     boundary (rest/httpkit/names.go), so nothing acts on such a file through the
//     API either; core's own path functions stay byte-exact, because the
//     FUSE mirror names every file the kernel hands it;
//   - the journal keeps every event as the kernel told it (the FUSE mirror
//     needs the bytes), and journal.Reportable decides what a watcher
//     hears (see there).
//
// Files with such names stay whole and reachable through the mount and the
// root itself; a recursive delete, copy, chmod or chown of a directory
// acts on them like on any other entry, and GET /v2/fs/tree carries them
// byte for byte in the tar.

// SkippedNames counts the entries a listing, walk or grep left out because
// their names are not UTF-8. A boundary puts one in the context of a
// request (WithSkippedNames) and tells its client the count.
type SkippedNames struct{ n atomic.Int64 }

// Add counts n more entries left out (for a boundary filtering a list
// core made, such as an archive's paths).
func (s *SkippedNames) Add(n int64) { s.n.Add(n) }

// Count is how many entries were left out so far.
func (s *SkippedNames) Count() int64 {
	if s == nil {
		return 0
	}
	return s.n.Load()
}

type skippedKey struct{}

// WithSkippedNames returns ctx carrying a new counter, and the counter.
func WithSkippedNames(ctx context.Context) (context.Context, *SkippedNames) {
	c := &SkippedNames{}
	return context.WithValue(ctx, skippedKey{}, c), c
}

// SkippedNamesFrom is the counter in ctx, or nil.
func SkippedNamesFrom(ctx context.Context) *SkippedNames {
	c, _ := ctx.Value(skippedKey{}).(*SkippedNames)
	return c
}

// Unreportable says whether a directory entry's name cannot be reported to
// an API client, and counts it in ctx's counter when so.
func Unreportable(ctx context.Context, name string) bool {
	if utf8.ValidString(name) {
		return false
	}
	if c := SkippedNamesFrom(ctx); c != nil {
		c.n.Add(1)
	}
	return true
}
