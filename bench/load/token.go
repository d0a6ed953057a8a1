package load

// The bearer token on every request and on the websocket handshake.

import (
	"net/http"
)

// WithToken makes rt send "Authorization: Bearer token" (token "" = rt).
func WithToken(token string, rt http.RoundTripper) http.RoundTripper {
	if token == "" {
		return rt
	}
	return tokenRT{token: token, rt: rt}
}

type tokenRT struct {
	token string
	rt    http.RoundTripper
}

func (t tokenRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.rt.RoundTrip(r)
}

func (t tokenRT) CloseIdleConnections() {
	if c, ok := t.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// authHeader is the websocket handshake's header for token.
func authHeader(token string) http.Header {
	if token == "" {
		return nil
	}
	return http.Header{"Authorization": {"Bearer " + token}}
}
