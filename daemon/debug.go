package daemon

import (
	"context"
	"encoding/json"
	"expvar"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
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
// refuses anything but loopback, and never shows the token: argv, in
// /debug/pprof/cmdline and the "cmdline" of /debug/vars, is served with the
// token's value redacted (redactArgs), token being the daemon's, whatever
// its source ("" for none).
func startDebug(ctx context.Context, addr, token string, log *slog.Logger) error {
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
	args := redactArgs(os.Args, token)
	mux.HandleFunc("/debug/pprof/cmdline", func(w http.ResponseWriter, r *http.Request) {
		// pprof.Cmdline's answer, of the redacted argv.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, strings.Join(args, "\x00"))
	})
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/vars", func(w http.ResponseWriter, r *http.Request) { debugVars(w, args) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	log.Info("debug: Go profiles served", "addr", "http://"+l.Addr().String()+"/debug/pprof/")
	return nil
}

// redacted stands for a secret in what the debug listener shows.
const redacted = "REDACTED"

// redactArgs is args with the token hidden: the value of a --token
// argument (-token, --token, the next argument or after "="), and any
// other copy of token itself inside an argument (given through
// SANDFS_TOKEN or a file and repeated on the command line by a script).
func redactArgs(args []string, token string) []string {
	out := make([]string, len(args))
	afterFlag := false
	for i, a := range args {
		switch name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "="); {
		case afterFlag:
			a = redacted
			afterFlag = false
		case i > 0 && strings.HasPrefix(a, "-") && name == "token":
			if hasValue {
				a = a[:strings.Index(a, "=")+1] + redacted
			} else {
				afterFlag = true
			}
		}
		if token != "" {
			a = strings.ReplaceAll(a, token, redacted)
		}
		out[i] = a
	}
	return out
}

// debugVars is expvar.Handler's answer with "cmdline" replaced by args
// (expvar's own reads os.Args, and a published name cannot be replaced).
func debugVars(w http.ResponseWriter, args []string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	io.WriteString(w, "{\n")
	first := true
	expvar.Do(func(kv expvar.KeyValue) {
		if !first {
			io.WriteString(w, ",\n")
		}
		first = false
		val := kv.Value.String()
		if kv.Key == "cmdline" {
			b, _ := json.Marshal(args)
			val = string(b)
		}
		fmt.Fprintf(w, "%q: %s", kv.Key, val)
	})
	io.WriteString(w, "\n}\n")
}
