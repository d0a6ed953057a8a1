package rest

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"sandfs/rest/httpkit"
)

// The browser guard (api.md §1, Browsers). The daemon's clients are
// programs, the CLI and its own console; a web page of any other origin
// must not drive it, whether it posts a form, fetches without CORS, opens a
// websocket or rebinds a DNS name of its own to 127.0.0.1. Three checks,
// made for every route before the token check, each refused in the route's
// family shape:
//
//   - Host (DNS rebinding): 421 Misdirected Request unless Host names a
//     loopback IP literal (127.0.0.0/8, ::1), localhost or a name under
//     .localhost (browsers resolve those to loopback themselves), the
//     listen address (the IP the connection arrived on, or 0.0.0.0 and
//     [::], which reach a wildcard listener), or a name given with
//     Config.AllowHosts; any port. An IP literal is never a rebinding
//     name, but only these are taken: any other reaches the daemon only
//     through a proxy or a forwarding the operator names with
//     --allow-host. A request on a unix socket skips this
//     check (no browser reaches a socket file; the file's permissions are
//     the gate), and so does one without a Host (HTTP/1.0).
//   - Origin (cross-site requests): 403 unless the request comes from no
//     page at all (neither Origin nor Sec-Fetch-Site: a program), from the
//     daemon's own origin (Sec-Fetch-Site same-origin or none, else an
//     Origin whose host:port is the request's Host), or from an origin in
//     Config.AllowOrigins. same-site is refused like cross-site: a page on
//     localhost:3000 is same-site with the daemon on localhost:7420. GETs
//     are checked too: an <img> or a no-cors fetch still starts a watch
//     stream, a search or a download, even though CORS hides the answer.
//     Only an allowed origin gets CORS headers (allowPage, preflight).
//   - Media type (httpkit.RequireJSON, in the JSON decoders): a JSON body must say
//     Content-Type: application/json (parameters allowed); text/plain, a
//     form or multipart, which a page may send without a CORS preflight,
//     are 415.
//
// The token (auth.go) is taken from the query only on GET and HEAD, for
// EventSource and websockets; a request that changes something must carry
// it in a header, which a form or an <img> cannot set.

// browserGuard holds the origins and hosts allowed beside the daemon's own.
type browserGuard struct {
	origins map[string]bool // "scheme://host[:port]", lower case
	hosts   map[string]bool // host names, lower case, no port
}

func newBrowserGuard(origins, hosts []string) (browserGuard, error) {
	g := browserGuard{origins: map[string]bool{}, hosts: map[string]bool{}}
	for _, o := range origins {
		n, err := normalOrigin(o)
		if err != nil {
			return g, err
		}
		g.origins[n] = true
	}
	for _, h := range hosts {
		n := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		if ip, err := netip.ParseAddr(strings.Trim(n, "[]")); err == nil {
			n = ip.Unmap().String()
		} else if n == "" || strings.ContainsAny(n, "/:*?#[] ") {
			return g, fmt.Errorf("allowed host %q: want a host name or IP address without a port (no wildcards)", h)
		}
		g.hosts[n] = true
	}
	return g, nil
}

// normalOrigin checks an allowed origin and returns it lower case, as
// browsers send it: scheme://host[:port], no path, no wildcard.
func normalOrigin(o string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(o))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.Contains(u.Host, "*") {
		return "", fmt.Errorf("allowed origin %q: want scheme://host[:port] (http or https, no path, no wildcard)", o)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

var (
	errMisdirected = &httpkit.RequestError{Kind: httpkit.KindMisdirected, Status: http.StatusMisdirectedRequest, Msg: "this daemon does not answer for that Host (a DNS rebinding guard); use 127.0.0.1, localhost, or start the daemon with --allow-host NAME"}
	errCrossOrigin = &httpkit.RequestError{Kind: httpkit.KindCrossOrigin, Status: http.StatusForbidden, Msg: "cross-origin request refused: only the daemon's own pages and programs may call it; start the daemon with --allow-origin ORIGIN to allow a page"}
)

// check refuses a request for another Host, or from a page of another
// origin (see the comment at the top of this file).
func (g browserGuard) check(r *http.Request) error {
	if !g.hostOK(r) {
		return errMisdirected
	}
	if !g.originOK(r) {
		return errCrossOrigin
	}
	return nil
}

func (g browserGuard) hostOK(r *http.Request) bool {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if local != nil && local.Network() == "unix" {
		return true
	}
	if r.Host == "" {
		return true
	}
	host := strings.TrimSuffix(strings.ToLower(hostOnly(r.Host)), ".")
	if ip, err := netip.ParseAddr(host); err == nil { // netip: no allocation on this path
		ip = ip.Unmap()
		if ip.IsLoopback() || ip.IsUnspecified() {
			return true // 0.0.0.0 and [::] reach this machine: the wildcard listen address
		}
		if ta, ok := local.(*net.TCPAddr); ok {
			if la, ok := netip.AddrFromSlice(ta.IP); ok && la.Unmap() == ip.WithZone("") {
				return true // the address the client connected to
			}
		}
		return g.hosts[ip.WithZone("").String()]
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	return g.hosts[host]
}

// hostOnly is a Host header without its port and brackets ("[::1]:80" →
// "::1"), as net.SplitHostPort would cut it but without an allocation when
// there is no port.
func hostOnly(h string) string {
	if strings.HasPrefix(h, "[") {
		if end := strings.IndexByte(h, ']'); end > 0 {
			return h[1:end]
		}
		return h
	}
	if i := strings.IndexByte(h, ':'); i >= 0 && strings.IndexByte(h[i+1:], ':') < 0 {
		return h[:i]
	}
	return h
}

func (g browserGuard) originOK(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin != "" && g.origins[strings.ToLower(origin)] {
		return true
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	case "":
		// A browser too old to send Sec-Fetch-Site, or no browser.
	default: // same-site, cross-site, or anything unknown
		return false
	}
	if origin == "" {
		return true // no page: a program
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// refuseBrowser answers a request no route took (404, 405) with the guard's
// refusal when it has one, so that a rebinding page learns nothing from
// which paths exist.
func (s *Server) refuseBrowser(w http.ResponseWriter, r *http.Request) bool {
	err := s.browser.check(r)
	if err == nil {
		return false
	}
	s.fail(w, r, s.familyForPath(r.URL.Path), r.URL.Path, err)
	return true
}

// familyForPath is the family of a path no route handled: the route
// table's for a static path (/v1/file/download speaks v2, /v1/capabilities
// v1), else the one its prefix names.
func (s *Server) familyForPath(p string) httpkit.Shape {
	if f, ok := s.families[p]; ok {
		return s.shapeOf(f)
	}
	return s.shapeForPath(p)
}

// CheckAllowed reports what is wrong with allowed origins and hosts (as
// Config.AllowOrigins and AllowHosts take them), so that a command line can
// refuse them before it opens anything.
func CheckAllowed(origins, hosts []string) error {
	_, err := newBrowserGuard(origins, hosts)
	return err
}

// allowed returns the request's Origin when Config.AllowOrigins names it
// ("" otherwise): a page the operator lets in, which the browser lets read
// the answers only when they say so (CORS).
func (g browserGuard) allowed(r *http.Request) string {
	o := r.Header.Get("Origin")
	if o == "" || !g.origins[strings.ToLower(o)] {
		return ""
	}
	return o
}

// corsExposed are the answer headers an allowed page may read beside the
// CORS-safelisted ones.
const corsExposed = "ETag, Content-Range, Content-Length, Accept-Ranges, Last-Modified, X-Sandfs-Truncated, WWW-Authenticate"

// allowPage marks an answer readable by an allowed origin's page. Nothing is
// sent for the daemon's own pages (same origin needs none) nor for anyone
// else, so no other page may read an answer.
func (g browserGuard) allowPage(w http.ResponseWriter, r *http.Request) {
	if len(g.origins) == 0 {
		return // answers do not vary by Origin
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	if o := g.allowed(r); o != "" {
		h.Set("Access-Control-Allow-Origin", o)
		h.Set("Access-Control-Expose-Headers", corsExposed)
	}
}

// preflight answers OPTIONS (httprouter's GlobalOPTIONS, with Allow set):
// the guard first, as for every route; then, for an allowed origin, the
// CORS preflight that lets its page send the token header and JSON.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
	if s.refuseBrowser(w, r) {
		return
	}
	s.browser.allowPage(w, r)
	if s.browser.allowed(r) != "" && r.Header.Get("Access-Control-Request-Method") != "" {
		h := w.Header()
		h.Set("Access-Control-Allow-Methods", h.Get("Allow"))
		h.Set("Access-Control-Allow-Headers", "Authorization, X-API-Key, Content-Type, Range, If-Match, If-None-Match, Last-Event-ID, Accept, "+httpkit.ActorHeader+", "+selectorHeader)
		h.Set("Access-Control-Max-Age", "600")
	}
	w.WriteHeader(http.StatusNoContent)
}
