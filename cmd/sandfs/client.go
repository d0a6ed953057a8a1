package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// defaultServer is where the client verbs look for a daemon when neither
// --server nor SANDFS_URL says otherwise: the daemon's default --listen.
const defaultServer = "http://127.0.0.1:7420"

// maxAnswer bounds the JSON answer a client verb reads into memory (a
// 10,000-entry listing is a few MiB) and maxErrorBody an error body.
const (
	maxAnswer    = 64 << 20
	maxErrorBody = 64 << 10
)

// client talks to one daemon over HTTP (TCP or a unix socket).
type client struct {
	base  string // scheme://host[/prefix], no trailing slash
	token string
	local bool // the daemon is on this machine: a unix socket or a loopback host
	unix  bool // over a unix socket: every dial goes to it, so no redirect is followed
	hc    *http.Client
}

// maxRedirects bounds the hops a request follows: a daemon sends a
// request for a sandbox another host of the fleet holds there (307), and
// that host, were the sandbox moved meanwhile, once more.
const maxRedirects = 4

// holderHeader names the fleet's host a daemon's 307 sends the client to
// (rest.HolderHeader): the sign the redirect is a sandfs daemon's.
const holderHeader = "X-Sandfs-Holder"

// checkRedirect follows at most maxRedirects hops. Go's client drops the
// Authorization header on a redirect to another host; a 307 of a sandfs
// daemon to the sandbox's holder gets the token back (the fleet's hosts
// share it), no other redirect does.
func (c *client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	resp := req.Response
	fromSandfs := resp != nil && resp.StatusCode == http.StatusTemporaryRedirect && resp.Header.Get(holderHeader) != ""
	if c.unix {
		if fromSandfs {
			return fmt.Errorf("the sandbox is served by host %s: run the verb with --server %s", resp.Header.Get(holderHeader), redactURL(req.URL.String()))
		}
		return errors.New("a redirect over a unix socket is not followed")
	}
	if fromSandfs && c.token != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return nil
}

// newClient understands "http://host:port[/prefix]", "https://…",
// "host:port" (http assumed), and "unix:/path.sock" (or "unix:///path.sock").
func newClient(server, token string) (*client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = 0 // uploads and extraction may take a while
	c := &client{token: token, hc: &http.Client{Transport: tr}}
	c.hc.CheckRedirect = c.checkRedirect
	switch {
	case strings.HasPrefix(server, "unix:"):
		sock := strings.TrimPrefix(strings.TrimPrefix(server, "unix:"), "//")
		if sock == "" {
			return nil, usagef("--server %q: no socket path after unix:", server)
		}
		var d net.Dialer
		tr.Proxy = nil
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", sock)
		}
		c.base = "http://sandfs"
		c.local, c.unix = true, true
	default:
		s := server
		if !strings.Contains(s, "://") {
			s = "http://" + s
		}
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, usagef("--server %q: want http://HOST:PORT, https://… or unix:/path.sock", server)
		}
		u.RawQuery, u.Fragment = "", ""
		c.base = strings.TrimSuffix(u.String(), "/")
		c.local = loopbackHost(u.Hostname())
	}
	tr.DialContext = withDialTimeout(tr.DialContext, 10*time.Second)
	return c, nil
}

// loopbackHost reports whether host names this machine's loopback: a
// loopback IP literal or "localhost" (which resolves nowhere else, RFC 6761).
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func withDialTimeout(dial func(context.Context, string, string) (net.Conn, error), d time.Duration) func(context.Context, string, string) (net.Conn, error) {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return dial(ctx, network, addr)
	}
}

// request is one call to the daemon.
type request struct {
	method      string
	route       string // "/v1/fs/file"
	query       url.Values
	body        io.Reader // nil for none
	length      int64     // body length, -1 unknown
	contentType string
	// bodyOn is a failure status whose body is the route's answer, as
	// JSON, rather than an error (a merge's 409 names its conflicts).
	bodyOn int
}

// do sends r and returns the response of a 2xx or 3xx status; any other
// status is read, closed and returned as an *apiError.
func (c *client) do(ctx context.Context, r request) (*http.Response, error) {
	u := c.base + r.route
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	body := r.body
	if body != nil {
		// Hide any Close method: the transport closes a request body it
		// is given, and stdin is not ours to close.
		body = struct{ io.Reader }{body}
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.ContentLength = r.length
		if r.length == 0 {
			req.Body = http.NoBody
		}
		req.GetBody = bodyAgain(r.body)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	req.Header.Set("User-Agent", "sandfs-cli")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		// Not even HTTP: an answer that is no HTTP response, or bytes sent
		// before the request was (an HTTP server never speaks first; Go's
		// transport then reports its idle connection's read).
		if msg := err.Error(); strings.Contains(msg, "malformed HTTP") || strings.Contains(msg, "readLoopPeekFailLocked") {
			return nil, &notSandfsError{base: c.base, why: err.Error()}
		}
		return nil, unwrapURLError(err)
	}
	if resp.StatusCode == http.StatusTemporaryRedirect && resp.Header.Get(holderHeader) != "" {
		// Not followed: a body read from a pipe cannot be sent again.
		resp.Body.Close()
		return nil, fmt.Errorf("the sandbox is served by host %s, and this request's body cannot be sent there again: run the verb with --server %s",
			resp.Header.Get(holderHeader), redactURL(resp.Header.Get("Location")))
	}
	if resp.StatusCode >= 400 && resp.StatusCode != r.bodyOn {
		defer resp.Body.Close()
		err := decodeError(resp, c.base)
		if ae, ok := err.(*apiError); ok {
			ae.TokenSent = c.token != ""
		}
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/html" {
		// No route the verbs call answers a web page (only /ui/ does).
		resp.Body.Close()
		return nil, &notSandfsError{base: c.base, why: "a web page for " + r.route}
	}
	return resp, nil
}

// bodyAgain is a request's GetBody when its body can be read again from
// where it starts (a file, a buffer: it seeks back there), so a redirect
// sends it whole; nil for a pipe.
func bodyAgain(body io.Reader) func() (io.ReadCloser, error) {
	sk, ok := body.(io.Seeker)
	if !ok {
		return nil
	}
	start, err := sk.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil // a pipe, a terminal
	}
	return func() (io.ReadCloser, error) {
		if _, err := sk.Seek(start, io.SeekStart); err != nil {
			return nil, err
		}
		return io.NopCloser(struct{ io.Reader }{body}), nil
	}
}

// call sends r and returns the answer's body, which is JSON on success.
func (c *client) call(ctx context.Context, r request) ([]byte, error) {
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if !jsonType(resp.Header.Get("Content-Type")) {
		return nil, &notSandfsError{base: c.base, why: "a non-JSON answer to " + r.route}
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer to %s %s: %w", r.method, r.route, err)
	}
	if len(raw) > maxAnswer {
		return nil, fmt.Errorf("the answer to %s %s is over %d bytes", r.method, r.route, maxAnswer)
	}
	return raw, nil
}

// callJSON sends r and decodes its JSON answer into out; the raw answer is
// returned too, for --json.
func (c *client) callJSON(ctx context.Context, r request, out any) ([]byte, error) {
	raw, err := c.call(ctx, r)
	if err != nil {
		return nil, err
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return raw, &notSandfsError{base: c.base, why: fmt.Sprintf("the answer to %s %s is not the JSON expected: %v", r.method, r.route, err)}
		}
	}
	return raw, nil
}

// unwrapURLError drops the "Get "http://…":" prefix the http client adds when
// the transport fails, keeping the reason (connection refused, …) and adding
// where we tried.
func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return fmt.Errorf("cannot reach the daemon (%s %s): %w", ue.Op, redactURL(ue.URL), ue.Err)
	}
	return err
}

func redactURL(s string) string {
	if i := strings.IndexByte(s, '?'); i >= 0 {
		return s[:i]
	}
	return s
}

// apiError is a failure status from the daemon. For the /v1/fs routes the
// body is application/problem+json {type, title, status, detail}.
type apiError struct {
	Status int
	Type   string // "urn:sandbox-agent:error:not_found"
	Title  string
	Detail string
	// TokenSent: the request carried a token (a 401 then means it was
	// refused, not missing).
	TokenSent bool
}

// notSandfsError is an answer no sandfs daemon gives: an error page that is
// not JSON (a web server's HTML 404), JSON in no family's shape, or a
// success that is not the JSON the route answers. It is one line, exit 1:
// the daemon's details would be another server's page.
type notSandfsError struct {
	base string
	why  string // for --debug readers of the error chain; not printed
}

func (e *notSandfsError) Error() string {
	return "this does not look like a sandfs daemon at " + e.base
}

func (e *apiError) Error() string {
	switch {
	case e.Detail != "":
		return e.Detail
	case e.Title != "":
		return e.Title
	default:
		return fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
	}
}

// Kind is the last part of the problem type ("not_found"), or "".
func (e *apiError) Kind() string {
	if i := strings.LastIndexByte(e.Type, ':'); i >= 0 {
		return e.Type[i+1:]
	}
	return e.Type
}

// jsonType reports whether a Content-Type is JSON (application/json,
// application/problem+json, any +json).
func jsonType(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// decodeError reads a failure answer from the daemon at base. It
// understands problem+json and the JSON shapes of the other families (a
// "detail", "message" or "error" string); anything else (HTML, text, JSON
// of another shape) is no sandfs daemon's answer: a *notSandfsError.
func decodeError(resp *http.Response, base string) error {
	e := &apiError{Status: resp.StatusCode}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	mt := resp.Header.Get("Content-Type")
	if jsonType(mt) {
		var p struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Detail  string `json:"detail"`
			Message string `json:"message"`
			Error   string `json:"error"`
		}
		if json.Unmarshal(raw, &p) == nil {
			e.Type, e.Title, e.Detail = p.Type, p.Title, p.Detail
			if e.Detail == "" {
				e.Detail = p.Message
			}
			if e.Detail == "" {
				e.Detail = p.Error
			}
			if e.Detail != "" || e.Title != "" {
				return e
			}
		}
	}
	return &notSandfsError{base: base, why: fmt.Sprintf("%d %s, %q", resp.StatusCode, mt, truncate(raw, 80))}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return strings.ToValidUTF8(string(b), "?")
}
