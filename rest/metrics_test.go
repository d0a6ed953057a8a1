package rest

import (
	"fmt"
	"strings"
	"testing"
)

// TestMetrics makes requests of several routes and statuses, opens a
// watcher and gives the mirror's request counts (as the daemon wires them),
// then reads /metrics and checks the figures each of them must have left
// there.
func TestMetrics(t *testing.T) {
	mirror := func(sandbox string) map[string]uint64 {
		if sandbox != "default" {
			return nil
		}
		return map[string]uint64{"getattr": 2, "unlink": 0}
	}
	uring := func(sandbox string) (uint64, bool) { return 7, sandbox == "default" }
	h := newHarness(t, harnessOpts{Token: "tok", MirrorOps: mirror, MirrorURing: uring})
	body := "hello metrics"
	steps := []struct {
		r    req
		want int
	}{
		{req{Method: "PUT", Target: "/v1/fs/file?path=/a.txt", Body: strings.NewReader(body)}, 200},
		{req{Method: "GET", Target: "/v1/fs/file?path=/a.txt"}, 200},
		{req{Method: "GET", Target: "/v1/fs/stat?path=/a.txt"}, 200},
		{req{Method: "GET", Target: "/v1/fs/stat?path=/a.txt"}, 200},
		{req{Method: "GET", Target: "/v1/fs/stat?path=/missing"}, 404},
		{req{Method: "POST", Target: "/v2/watch", Body: strings.NewReader(`{"path":"/","recursive":true}`)}, 200},
		{req{Method: "GET", Target: "/metrics", NoAuth: true}, 401},
	}
	for _, s := range steps {
		if r := h.do(t, s.r); r.Status != s.want {
			t.Fatalf("%s %s: status %d, want %d: %s", s.r.Method, s.r.Target, r.Status, s.want, r.Body)
		}
	}
	sb := h.srv.reg.Get("default")
	r := h.do(t, req{Method: "GET", Target: "/metrics"})
	wantStatus(t, r, 200)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want text/plain", ct)
	}
	text := string(r.Body)
	want := []string{
		`sandfs_http_requests_total{method="PUT",route="/v1/fs/file",status="200"} 1`,
		`sandfs_http_requests_total{method="GET",route="/v1/fs/file",status="200"} 1`,
		`sandfs_http_requests_total{method="GET",route="/v1/fs/stat",status="200"} 2`,
		`sandfs_http_requests_total{method="GET",route="/v1/fs/stat",status="404"} 1`,
		`sandfs_http_requests_total{method="GET",route="/metrics",status="401"} 1`,
		`sandfs_http_requests_total{method="POST",route="/v2/watch",status="200"} 1`,
		fmt.Sprintf(`sandfs_http_request_bytes_total{method="PUT",route="/v1/fs/file"} %d`, len(body)),
		fmt.Sprintf(`sandfs_http_response_bytes_total{method="GET",route="/v1/fs/file"} %d`, len(body)),
		`sandfs_http_request_duration_seconds_count{method="GET",route="/v1/fs/stat"} 3`,
		`sandfs_http_request_duration_seconds_bucket{method="GET",route="/v1/fs/stat",le="+Inf"} 3`,
		`sandfs_watchers{sandbox="default"} 1`,
		`sandfs_journal_dropped_events_total{sandbox="default"} 0`,
		`sandfs_kernel_watch_overflows_total{sandbox="default"} 0`,
		`sandfs_fuse_operations_total{op="getattr",sandbox="default"} 2`,
		`sandfs_fuse_operations_total{op="unlink",sandbox="default"} 0`,
		`sandfs_fuse_uring_requests_total{sandbox="default"} 7`,
		`go_goroutines `,
	}
	// The journal's own counts, each as a line.
	for origin, byType := range sb.Journal().Counts() {
		for typ, n := range byType {
			want = append(want, fmt.Sprintf(`sandfs_journal_events_total{origin="%s",sandbox="default",type="%s"} %d`, origin, typ, n))
		}
	}
	if len(sb.Journal().Counts()) == 0 {
		t.Errorf("the PUT left no journal event")
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("/metrics lacks %q", w)
		}
	}
	// Routes never asked have no request lines (no zero series per status).
	if strings.Contains(text, `route="/v1/fs/entries",status=`) {
		t.Errorf("/metrics has a request line for a route never asked")
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", text)
	}
}
