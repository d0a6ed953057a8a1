package rest

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"sandfs/rest/httpkit"
)

// # Who may do what
//
// Two kinds of token open the API (api.md §1, "Auth"):
//
//   - the daemon's own (Config.Token) may do everything;
//   - a sandbox's own (Registry.Add's token) opens that sandbox's routes on
//     every family, and no other's: the named routes of its name, the
//     agent and AIO routes (the watch routes included) with its name in
//     the sandbox selector or none (selector.go: then it selects its own
//     sandbox), GET /v1/sandboxes (which then lists it alone) and
//     /openapi.json. Anything else is 403 in the family's shape: another
//     sandbox (even one that is not served: nothing tells a sandbox token
//     which names exist), /metrics, POST, PATCH and DELETE /v1/sandboxes,
//     and a fork's merge (it writes the fork's parent, another sandbox).
//
// No valid token at all is 401. Without a daemon token (--no-auth)
// nothing is checked, and every request acts as the daemon.
//
// Every comparison is over SHA-256 sums, so it takes the same time
// whatever the candidate's length. When the request names its sandbox,
// the candidate is compared with the daemon's token and with that
// sandbox's, each with crypto/subtle. When it names none (an agent or AIO
// route without a selector, GET /v1/sandboxes), or its token is not the
// named sandbox's (to tell 403 from 401), the candidate's sum is looked up
// in the registry's map of sums: the lookup's time depends on the sum
// only, and the sum of a candidate tells nothing about a token (finding a
// candidate whose sum shares bytes with a token's sum is inverting
// SHA-256), so nothing about any token leaks through the time it takes.

// tokenCheck holds the daemon's token, hashed.
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

// maxCandidates is the number of forms a token may come in.
const maxCandidates = 4

// candidates are the SHA-256 sums of the tokens r carries, in the four
// forms of api.md §1: "Authorization: Bearer T", "X-API-Key: T", or, on
// GET and HEAD only, the query parameter access_token or api_key (for
// EventSource and browser websockets, which cannot set headers). A request
// that may change something (POST, PUT, PATCH, DELETE) must carry it in a
// header: a form or an <img> of another page can put a token in a URL,
// never in a header. One match of any form is enough.
func candidates(r *http.Request) ([maxCandidates][sha256.Size]byte, int) {
	var out [maxCandidates][sha256.Size]byte
	n := 0
	add := func(c string) {
		if c != "" {
			out[n] = sha256.Sum256([]byte(c))
			n++
		}
	}
	if scheme, rest, found := strings.Cut(r.Header.Get("Authorization"), " "); found && strings.EqualFold(scheme, "Bearer") {
		add(strings.TrimSpace(rest))
	}
	add(r.Header.Get("X-API-Key"))
	if r.URL.RawQuery != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		q := r.URL.Query()
		add(q.Get("access_token"))
		add(q.Get("api_key"))
	}
	return out, n
}

// matches reports, in constant time, whether one of the sums is want.
func matches(sums [][sha256.Size]byte, want *[sha256.Size]byte) bool {
	match := 0
	for i := range sums {
		match |= subtle.ConstantTimeCompare(sums[i][:], want[:])
	}
	return match == 1
}

// errForbidden is a valid sandbox token on what is not its sandbox's.
var errForbidden = &httpkit.RequestError{Kind: httpkit.KindPermissionDenied, Status: http.StatusForbidden, Msg: "this token opens one sandbox only; the request acts on another, or on the whole daemon"}

// authorize checks r's token for a route: it answers the sandbox whose
// token r carries ("" for the daemon's token, or no auth), 401 when r
// carries no valid token and 403 when its sandbox token does not open the
// route. named is the sandbox the request names ("" when it names none).
func (s *Server) authorize(r *http.Request, rt Route, sel selectorKind, named string) (string, error) {
	if !rt.Auth || !s.auth.enabled {
		return "", nil
	}
	all, n := candidates(r)
	sums := all[:n]
	if matches(sums, &s.auth.sum) {
		return "", nil
	}
	if named != "" {
		if sum, ok := s.reg.tokenSum(named); ok && matches(sums, &sum) {
			if daemonTokenRoute(rt) {
				return "", errForbidden
			}
			return named, nil
		}
	}
	own := s.reg.sandboxOfToken(sums)
	switch {
	case own == "":
		return "", httpkit.ErrUnauthorized
	case named != "" && named != own:
		return "", errForbidden
	case sel == selectNone && !sandboxTokenRoute(rt), daemonTokenRoute(rt):
		return "", errForbidden
	}
	return own, nil
}

// sandboxTokenRoute is a route on no sandbox that a sandbox token may
// take: the list (which shows it its own sandbox only) and the API's
// description.
func sandboxTokenRoute(rt Route) bool {
	return rt.Method == http.MethodGet &&
		(rt.Path == "/v1/sandboxes" || rt.Path == "/v1/sprites" || rt.Path == "/openapi.json")
}

// daemonTokenRoute is a route on a named sandbox that acts on another,
// or on the fleet, so that sandbox's own token does not open it: a fork's
// merge, a move to another host.
func daemonTokenRoute(rt Route) bool {
	return rt.Method == http.MethodPost && (strings.HasSuffix(rt.Path, "/:name/merge") || strings.HasSuffix(rt.Path, "/:name/move"))
}

type tokenSandboxKey struct{}

// tokenSandbox is the sandbox whose token the request carries, "" for the
// daemon's token.
func tokenSandbox(ctx context.Context) string {
	name, _ := ctx.Value(tokenSandboxKey{}).(string)
	return name
}
