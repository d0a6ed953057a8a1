package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestStartDebug(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "nonsense"} {
		if err := startDebug(context.Background(), addr, log); err == nil || !strings.Contains(err.Error(), "--debug-listen") {
			t.Errorf("startDebug(%q) = %v, want a refusal", addr, err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := startDebug(ctx, addr, log); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "goroutine profile: total ") {
		t.Errorf("goroutine profile: %s %.100s", resp.Status, b)
	}
	resp, err = http.Get("http://" + addr + "/debug/vars")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"fuse_held_dirs": 0`) {
		t.Errorf("debug vars: %s %.300s", resp.Status, b)
	}
}
