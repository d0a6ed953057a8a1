package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// A daemon's 307 to the sandbox's holder is followed with the token and
// the whole body; another host's redirect never gets the token.
func TestClientFollowsHolderRedirect(t *testing.T) {
	type seen struct{ auth, body, path string }
	got := make(chan seen, 4)
	holder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Header.Get("Authorization"), string(b), r.URL.RequestURI()}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	defer holder.Close()
	// The same holder under another host name, so Go's client drops the
	// token on the way.
	holderURL := strings.Replace(holder.URL, "127.0.0.1", "localhost", 1)
	wrong := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("plain") != "" { // a redirect no sandfs daemon gives
			http.Redirect(w, r, holderURL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("Location", holderURL+r.URL.RequestURI())
		w.Header().Set(holderHeader, "beta")
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer wrong.Close()
	c, err := newClient(wrong.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	body := []byte("the whole body")
	if _, err := c.call(ctx, request{method: "PUT", route: "/v1/sandboxes/web/fs/write", query: map[string][]string{"path": {"/a"}},
		body: bytes.NewReader(body), length: int64(len(body)), contentType: "application/octet-stream"}); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s.auth != "Bearer tok" || s.body != string(body) || s.path != "/v1/sandboxes/web/fs/write?path=%2Fa" {
		t.Fatalf("the holder saw %+v", s)
	}

	if _, err := c.call(ctx, request{method: "GET", route: "/v1/fs/stat", query: map[string][]string{"plain": {"1"}}}); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s.auth != "" {
		t.Fatalf("a redirect of no sandfs daemon carried the token: %+v", s)
	}

	// A body from a pipe cannot be sent again: the error names the holder.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { pw.Write(body); pw.Close() }()
	defer pr.Close()
	_, err = c.call(ctx, request{method: "PUT", route: "/v1/sandboxes/web/fs/write", body: pr, length: -1})
	if err == nil || !strings.Contains(err.Error(), "served by host beta") || !strings.Contains(err.Error(), "--server "+holderURL) {
		t.Fatalf("a pipe's body redirected: %v", err)
	}
}
