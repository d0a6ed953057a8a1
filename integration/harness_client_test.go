package integration

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// HTTP clients for the harness's daemon, with and without its token.

// Client is an HTTP client that reaches the daemon: over its unix socket
// for a "--listen unix:PATH" daemon, plain TCP otherwise. It sends the
// token the daemon made (MadeToken) unless a request carries one.
func (d *Daemon) Client() *http.Client {
	if d.Socket == "" {
		return http.DefaultClient
	}
	c := bareClient(d)
	if d.MadeToken && d.Token != "" {
		c.Transport = &authTransport{base: c.Transport, token: func(string) string { return d.Token }}
	}
	return c
}

// bareClient reaches d as Client does but never adds a token.
func bareClient(d *Daemon) *http.Client {
	if d.Socket == "" {
		return &http.Client{Transport: plainTransport}
	}
	sock := d.Socket
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dialer net.Dialer
			return dialer.DialContext(ctx, "unix", sock)
		},
	}}
}

// plainTransport is net/http's DefaultTransport, before TestMain wraps it.
var plainTransport = http.DefaultTransport

// authHosts maps the host:port of each running daemon that made its own
// token to that token.
var authHosts sync.Map

// authTransport adds "Authorization: Bearer T" to a request for a daemon
// whose token is T, unless the request already carries a token (header or
// query): the tests that check refusals send their own. TestMain installs
// it as http.DefaultTransport, so every plain client of the tests (the
// http.Get of a test, a websocket dial) reaches a daemon started the
// default way as its user does.
type authTransport struct {
	base  http.RoundTripper
	token func(host string) string
}

func (a *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	q := r.URL.Query()
	if r.Header.Get("Authorization") != "" || r.Header.Get("X-API-Key") != "" || q.Has("access_token") || q.Has("api_key") {
		return a.base.RoundTrip(r)
	}
	tok := a.token(r.URL.Host)
	if tok == "" {
		return a.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return a.base.RoundTrip(r)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// base transport.
func (a *authTransport) CloseIdleConnections() {
	if c, ok := a.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func hostToken(host string) string {
	if v, ok := authHosts.Load(host); ok {
		return v.(string)
	}
	return ""
}
