package rest

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// tokenCheck holds the configured token, hashed so that comparisons take
// the same time whatever the length of the candidate.
type tokenCheck struct {
	enabled bool
	sum     [sha256.Size]byte
}

func newTokenCheck(token string) tokenCheck {
	if token == "" {
		return tokenCheck{}
	}
	return tokenCheck{enabled: true, sum: sha256.Sum256([]byte(token))}
}

// ok reports whether r carries the token in one of the four forms of api.md
// §1: "Authorization: Bearer T", "X-API-Key: T", or, on GET and HEAD only,
// the query parameter access_token or api_key (for EventSource and browser
// websockets, which cannot set headers). A request that may change
// something (POST, PUT, DELETE) must carry it in a header: a form or an
// <img> of another page can put a token in a URL, never in a header. Every
// form given is compared in constant time; one match is enough.
func (c tokenCheck) ok(r *http.Request) bool {
	if !c.enabled {
		return true
	}
	match := 0
	try := func(candidate string) {
		if candidate == "" {
			return
		}
		sum := sha256.Sum256([]byte(candidate))
		match |= subtle.ConstantTimeCompare(sum[:], c.sum[:])
	}
	if scheme, rest, found := strings.Cut(r.Header.Get("Authorization"), " "); found && strings.EqualFold(scheme, "Bearer") {
		try(strings.TrimSpace(rest))
	}
	try(r.Header.Get("X-API-Key"))
	if r.URL.RawQuery != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		q := r.URL.Query()
		try(q.Get("access_token"))
		try(q.Get("api_key"))
	}
	return match == 1
}
