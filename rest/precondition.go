package rest

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"strings"

	"sandfs/core"
)

// Conditional writes (api.md §1 "Preconditions"). Every write, edit, move
// and delete of the three families takes a precondition on its target:
//
//   - If-Match: one ETag, a comma-separated list, or "*" (the file exists);
//   - If-None-Match: * (the file does not exist: create only);
//   - the family's body field, the same as an If-Match of one ETag: AIO's
//     expected_etag (JSON bodies, and a form field of upload), the named
//     family's ifMatch (rename and delete bodies).
//
// Header and field both given and different is 400. core checks the
// precondition against the target right before the change
// (core/precondition.go); a mismatch is 412 in the family's shape, with the
// target's current ETag in the ETag header and the body (errors.go). A
// successful write, edit or upload answers the ETag of what it wrote.

// precondition reads the request's precondition; field is the family's
// body field (nil when the body has none), named name in a refusal.
func precondition(r *http.Request, field *string, name string) (core.Precondition, error) {
	var pre core.Precondition
	im := strings.TrimSpace(r.Header.Get("If-Match"))
	if field != nil && *field != "" {
		f := strings.TrimSpace(*field)
		if im != "" && im != f {
			return pre, invalidRequest("If-Match %q and %s %q differ: give one, or the same in both", im, name, f)
		}
		im = f
	}
	if im != "" {
		pre.IfMatch = etagList(im)
	}
	if inm := strings.TrimSpace(r.Header.Get("If-None-Match")); inm != "" {
		if inm != "*" {
			return pre, invalidRequest("If-None-Match on a write takes only * (create only), got %q", inm)
		}
		pre.IfNoneMatch = true
	}
	return pre, nil
}

// etagList splits an If-Match value into its ETags ("*" is one of them).
func etagList(v string) []string {
	var out []string
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// setETag sends the ETag of what a write made; "" sends none.
func setETag(w http.ResponseWriter, etag string) {
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
}

// editPrecondition reads an edit's precondition and checks it at once
// against the file as it is (followed, as the edit reads it), so a stale
// ETag is 412 before old_str is looked for; the write checks it again right
// before its rename.
func (s *Server) editPrecondition(ctx context.Context, r *http.Request, ap string, field *string) (core.Precondition, error) {
	pre, err := precondition(r, field, "expected_etag")
	if err != nil || !pre.Set() {
		return pre, err
	}
	cur := ""
	info, err := s.fileFS(ctx).Stat(ctx, ap)
	switch {
	case err == nil:
		cur = core.ETag(info)
	case !errors.Is(err, fs.ErrNotExist):
		return pre, err
	}
	if !pre.Holds(cur) {
		return pre, &core.PreconditionError{Op: "edit", Path: ap, Current: cur}
	}
	return pre, nil
}
