package rest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"sandfs/core"
)

// BenchmarkHotStatSandboxes is BenchmarkHotStat's stat with n sandboxes
// served, each request selecting the next one by the header: the lookup
// per request must not grow with the registry (go test -bench
// HotStatSandboxes -benchmem ./rest).
func BenchmarkHotStatSandboxes(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			reg := NewRegistry()
			names := make([]string, n)
			for i := range n {
				names[i] = fmt.Sprintf("s-%d", i)
				if i == 0 {
					names[i] = core.DefaultSandbox
				}
				root := b.TempDir()
				os.WriteFile(filepath.Join(root, "f4k"), make([]byte, 4096), 0o644)
				sb, err := core.Open(names[i], root, core.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer sb.Close()
				reg.Add(names[i], sb, "")
			}
			srv, err := New(Config{Registry: reg})
			if err != nil {
				b.Fatal(err)
			}
			h := srv.Handler()
			reqs := make([]*http.Request, n)
			for i, name := range names {
				reqs[i] = localRequest("GET", "/v1/fs/stat?path=/f4k", nil)
				reqs[i].Header.Set(selectorHeader, name)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, reqs[i%n])
				if w.Code != http.StatusOK {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
				i++
			}
		})
	}
}
