package main

import (
	"context"
	"expvar"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"sandfs/fusefs"
)

// fuse_held_dirs, at /debug/vars: the directory descriptors the mirror
// holds by design (fusefs.HeldDirs), which the leak checks subtract from
// the daemon's open descriptors.
func init() {
	expvar.Publish("fuse_held_dirs", expvar.Func(func() any { return fusefs.HeldDirs() }))
}

// startDebug serves Go's runtime profiles (net/http/pprof: goroutines,
// heap, …) and expvar's /debug/vars on addr, a loopback address, until
// ctx ends. It runs only when --debug-listen is given: the reliability
// tests read the goroutine count and the mirror's held descriptors from it
// to show a load leaves nothing behind. It carries no token, so it
// refuses anything but loopback.
func startDebug(ctx context.Context, addr string, log *slog.Logger) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--debug-listen: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--debug-listen: %s is not a loopback address", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--debug-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/debug/vars", expvar.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	log.Info("debug: Go profiles served", "addr", "http://"+l.Addr().String()+"/debug/pprof/")
	return nil
}
