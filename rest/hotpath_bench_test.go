package rest

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"sandfs/core"
)

// The hot paths of the requests/s figures of make bench (stat and a 4 KiB
// read), through the whole handler: go test -bench Hot -benchmem ./rest.
func benchHot(b *testing.B, target string) {
	root := b.TempDir()
	os.WriteFile(filepath.Join(root, "f4k"), make([]byte, 4096), 0o644)
	sb, err := core.Open("default", root, core.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	srv, err := New(Config{Sandboxes: map[string]*core.Sandbox{"default": sb}})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	req := localRequest("GET", target, nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", target, w.Code, w.Body)
		}
	}
}

func BenchmarkHotStat(b *testing.B) { benchHot(b, "/v1/fs/stat?path=/f4k") }
func BenchmarkHotFile(b *testing.B) { benchHot(b, "/v1/fs/file?path=/f4k") }
