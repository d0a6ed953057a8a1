package httpkit

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"sandfs/core"
)

// # Names that are not UTF-8
//
// JSON strings and URLs carry text, and a Linux name is bytes: a name that
// is not valid UTF-8 would reach a client as U+FFFD, so two files ("a\xff",
// "a\xfe") would list under one name, that of a third ("a\uFFFD"), and
// acting on it would hit the third. No family reports such a name, and
// none acts on one:
//
//   - listings, name searches, globs and grep leave the entry out (core
//     counts it, core/names.go) and the answer carries the header
//     X-Sandfs-Skipped-Names: N, so a client knows the listing is not the
//     whole directory; the same for upload-batch's paths list;
//   - a request path (query parameter or multipart field) that is not
//     UTF-8 is 400 invalid_path (JSON bodies cannot carry one: they are
//     decoded with U+FFFD, which names only a real "\uFFFD" file);
//   - watchers never hear an event for such a path (journal.Reportable):
//     a rename from or to one is told as the create or remove of its other
//     side, as a rename across the watched tree's edge is.
//
// Such files are untouched, and remain reachable through the FUSE mount
// and the root; GET /v2/fs/tree carries their names byte for byte.

// HeaderSkippedNames counts the entries an answer left out because their
// names are not UTF-8.
const HeaderSkippedNames = "X-Sandfs-Skipped-Names"

// ErrNotUTF8 refuses a request path that is not UTF-8.
var ErrNotUTF8 = &RequestError{KindInvalidPath, http.StatusBadRequest,
	"path is not valid UTF-8: files whose names are not UTF-8 are not served over HTTP (use the mount)"}

// NoteSkipped sets X-Sandfs-Skipped-Names when core left names out of
// what it counted into c (core.WithSkippedNames on the request's context);
// call it before the answer's first byte.
func NoteSkipped(w http.ResponseWriter, c *core.SkippedNames) {
	if n := c.Count(); n > 0 {
		w.Header().Set(HeaderSkippedNames, strconv.FormatInt(n, 10))
	}
}

// CheckQueryUTF8 refuses a query whose keys or values are not UTF-8.
func CheckQueryUTF8(q url.Values) error {
	for k, vs := range q {
		if !utf8.ValidString(k) {
			return ErrNotUTF8
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return ErrNotUTF8
			}
		}
	}
	return nil
}

// ReportablePaths is paths without those that are not UTF-8 (never nil),
// with a counter of those left out.
func ReportablePaths(paths []string) ([]string, *core.SkippedNames) {
	_, c := core.WithSkippedNames(context.Background())
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if utf8.ValidString(p) {
			out = append(out, p)
		} else {
			c.Add(1)
		}
	}
	return out, c
}

// QuoteIfBad is p, or p Go-quoted ("/b\xff/x", the bad bytes spelled out)
// when it is not UTF-8, for the message of an error met below such a name.
func QuoteIfBad(p string) string {
	if utf8.ValidString(p) {
		return p
	}
	return strconv.Quote(p)
}
