package rest

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGateWrites: a sandbox whose writes are gated (a move) answers every
// request that may write 503 with Retry-After, on every family, and
// changes nothing; its reads are served, even with its lease "moving"
// while it is served here; another sandbox is not gated; GateWrites
// waits for the writes let in before; UngateWrites lets them in again.
func TestGateWrites(t *testing.T) {
	const tok = "daemon-token"
	rh := newRegHarness(t, regOpts{Token: tok, Manager: newFakeManager(t), Placement: fakePlacement{
		"a": {Host: "alpha", URL: "http://alpha.example:7420", Here: true, Moving: true},
	}})

	// A write let in before the gate is waited for.
	e := rh.reg.m["a"]
	e.gate.writes.Add(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := rh.reg.GateWrites(ctx, "a"); err == nil || !strings.Contains(err.Error(), "1 writes still running") {
		t.Fatalf("GateWrites with a write running and its bound passed: %v", err)
	}
	e.gate.writes.Add(-1)
	if err := rh.reg.GateWrites(context.Background(), "a"); err != nil {
		t.Fatalf("GateWrites: %v", err)
	}
	if err := rh.reg.GateWrites(context.Background(), "nope"); err == nil {
		t.Fatal("GateWrites of a sandbox not served: nil")
	}

	for _, c := range []struct {
		method, target string
		hdr            map[string]string
		body           string
		status         int
	}{
		{"PUT", "/v1/sandboxes/a/fs/write?path=/who", nil, "changed", 503},
		{"POST", "/v2/fs/write", map[string]string{"X-Sandfs-Sandbox": "a"}, `{"path":"/who","content":"changed"}`, 503},
		{"PUT", "/v1/fs/file?path=/who", map[string]string{"X-Sandfs-Sandbox": "a"}, "changed", 503},
		{"PATCH", "/v1/sandboxes/a", nil, `{"quota":{"bytes":1}}`, 503},
		{"DELETE", "/v1/sandboxes/a", nil, "", 503},
		{"POST", "/v1/sandboxes/a/move", nil, `{"to":"beta"}`, 503},
		{"GET", "/v1/sandboxes/a/fs/read?path=/who", nil, "", 200},
		{"GET", "/v2/fs/read?path=/who", map[string]string{"X-Sandfs-Sandbox": "a"}, "", 200},
		{"PUT", "/v1/sandboxes/b/fs/write?path=/other", nil, "b's", 200},
	} {
		res := rawDo(t, rh, c.method, c.target, tok, c.hdr, c.body)
		if res.StatusCode != c.status {
			t.Fatalf("%s %s: %d, want %d", c.method, c.target, res.StatusCode, c.status)
		}
		if c.status == 503 && res.Header.Get("Retry-After") == "" {
			t.Fatalf("%s %s: 503 without Retry-After", c.method, c.target)
		}
	}
	if got, err := os.ReadFile(filepath.Join(rh.roots["a"], "who")); err != nil || string(got) != "a" {
		t.Fatalf("a's who: %q %v, want it unchanged", got, err)
	}
	if rh.reg.Get("a") == nil {
		t.Fatal("a was removed while gated")
	}

	rh.reg.UngateWrites("a")
	if res := rawDo(t, rh, "PUT", "/v1/sandboxes/a/fs/write?path=/who", tok, nil, "changed"); res.StatusCode != http.StatusOK {
		t.Fatalf("a write after UngateWrites: %d", res.StatusCode)
	}
	if got, _ := os.ReadFile(filepath.Join(rh.roots["a"], "who")); string(got) != "changed" {
		t.Fatalf("a's who after the write: %q", got)
	}
}
