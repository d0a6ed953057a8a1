package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandfs/core"
	"sandfs/rest"
)

// cliDaemon is a real rest server in-process over two sandboxes, default
// and "other", each on its own t.TempDir().
type cliDaemon struct {
	url, root, other string
	wrap             func(http.Handler) http.Handler // set before the first request
}

func newCLIDaemon(t *testing.T) *cliDaemon {
	t.Helper()
	d := &cliDaemon{root: t.TempDir(), other: t.TempDir()}
	sbs := map[string]*core.Sandbox{}
	for name, dir := range map[string]string{"default": d.root, "other": d.other} {
		sb, err := core.Open(name, dir, core.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		sbs[name] = sb
	}
	srv, err := rest.New(rest.Config{Sandboxes: sbs, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.wrap != nil {
			d.wrap(h).ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	d.url = ts.URL
	return d
}

// cli runs one command line against d; it returns stdout, stderr and the
// exit status.
func (d *cliDaemon) cli(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := append([]string{args[0], "--server", d.url, "--token", "x"}, args[1:]...)
	err := run(ctx, full, strings.NewReader(stdin), &stdout, &stderr)
	code := report(err, &stderr)
	return stdout.String(), stderr.String(), code
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestProbe(t *testing.T) {
	d := newCLIDaemon(t)
	writeFiles(t, d.root, map[string]string{"a.txt": "hello\n", "src/inner/x": "x"})
	for _, a := range [][]string{{"grep", "("}, {"grep", "-U", "("}, {"find", "/", "["}, {"mv", "/src", "/src/inner/y"}, {"rm", "/"}, {"put", "-", "/"}} {
		o, e, c := d.cli(t, "", a...)
		t.Logf("%q: %d %q %q", a, c, o, e)
	}
}
