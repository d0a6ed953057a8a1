package httpkit

import (
	"net/http"
	"strings"

	"sandfs/core/precond"
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
// (core/precondition.go, core/precond); a mismatch is 412 in the family's shape, with the
// target's current ETag in the ETag header and the body (errors.go). A
// successful write, edit or upload answers the ETag of what it wrote.

// precondition reads the request's precondition; field is the family's
// body field (nil when the body has none), named name in a refusal.
func ReadPrecondition(r *http.Request, field *string, name string) (precond.Precondition, error) {
	var pre precond.Precondition
	im := strings.TrimSpace(r.Header.Get("If-Match"))
	if field != nil && *field != "" {
		f := strings.TrimSpace(*field)
		if im != "" && im != f {
			return pre, InvalidRequest("If-Match %q and %s %q differ: give one, or the same in both", im, name, f)
		}
		im = f
	}
	if im != "" {
		pre.IfMatch = ETagList(im)
	}
	if inm := strings.TrimSpace(r.Header.Get("If-None-Match")); inm != "" {
		if inm != "*" {
			return pre, InvalidRequest("If-None-Match on a write takes only * (create only), got %q", inm)
		}
		pre.IfNoneMatch = true
	}
	return pre, nil
}

// ETagList splits an If-Match value into its ETags ("*" is one of them).
func ETagList(v string) []string {
	var out []string
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// SetETag sends the ETag of what a write made; "" sends none.
func SetETag(w http.ResponseWriter, etag string) {
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
}
