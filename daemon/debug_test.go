package daemon

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
)

// startTestDebug starts the debug listener on a free loopback port for
// the test's life, with the daemon's token token, and returns its address.
func startTestDebug(t *testing.T, token string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := startDebug(ctx, addr, token, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestStartDebug(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "nonsense"} {
		if err := startDebug(context.Background(), addr, "", log); err == nil || !strings.Contains(err.Error(), "--debug-listen") {
			t.Errorf("startDebug(%q) = %v, want a refusal", addr, err)
		}
	}
	addr := startTestDebug(t, "")
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

func TestRedactArgs(t *testing.T) {
	const tok = "s3cr3t-token-value"
	for _, c := range []struct {
		args  []string
		token string
		want  []string
	}{
		{[]string{"sandfs", "serve", "--token", tok, "--root", "r"}, tok,
			[]string{"sandfs", "serve", "--token", "REDACTED", "--root", "r"}},
		{[]string{"sandfs", "serve", "-token", "other"}, tok,
			[]string{"sandfs", "serve", "-token", "REDACTED"}},
		{[]string{"sandfs", "serve", "--token=" + tok}, tok,
			[]string{"sandfs", "serve", "--token=REDACTED"}},
		{[]string{"sandfs", "serve", "-token=x=y"}, "",
			[]string{"sandfs", "serve", "-token=REDACTED"}},
		// A copy of the env or file token elsewhere on the line.
		{[]string{"sandfs", "serve", "--allow-host", "h", "--workdir=/" + tok + "/x"}, tok,
			[]string{"sandfs", "serve", "--allow-host", "h", "--workdir=/REDACTED/x"}},
		// Not the token flag: kept.
		{[]string{"sandfs", "serve", "--token-file", "/etc/tok", "--no-auth"}, "",
			[]string{"sandfs", "serve", "--token-file", "/etc/tok", "--no-auth"}},
		{[]string{"sandfs", "serve", "--token"}, "",
			[]string{"sandfs", "serve", "--token"}},
	} {
		if got := redactArgs(c.args, c.token); !reflect.DeepEqual(got, c.want) {
			t.Errorf("redactArgs(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// TestDebugHidesToken: the two places the debug listener shows argv,
// /debug/pprof/cmdline and /debug/vars' "cmdline", never carry the token
// (given as --token, --token=, or only known to the daemon), and the rest
// of /debug/vars is still expvar's.
func TestDebugHidesToken(t *testing.T) {
	const flagTok, envTok = "flag-token-1234567890", "env-token-0987654321"
	saved := os.Args
	os.Args = []string{"sandfs", "serve", "--token", flagTok, "--token=" + flagTok, "--workdir", "/" + envTok}
	defer func() { os.Args = saved }()
	addr := startTestDebug(t, envTok)
	get := func(p string) string {
		resp, err := http.Get("http://" + addr + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s", p, resp.Status)
		}
		return string(b)
	}
	cmdline := get("/debug/pprof/cmdline")
	if want := "sandfs\x00serve\x00--token\x00REDACTED\x00--token=REDACTED\x00--workdir\x00/REDACTED"; cmdline != want {
		t.Errorf("pprof cmdline = %q, want %q", cmdline, want)
	}
	raw := get("/debug/vars")
	var vars map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &vars); err != nil {
		t.Fatalf("/debug/vars is not JSON: %v\n%.300s", err, raw)
	}
	var args []string
	if err := json.Unmarshal(vars["cmdline"], &args); err != nil {
		t.Fatal(err)
	}
	if want := []string{"sandfs", "serve", "--token", "REDACTED", "--token=REDACTED", "--workdir", "/REDACTED"}; !reflect.DeepEqual(args, want) {
		t.Errorf("/debug/vars cmdline = %q, want %q", args, want)
	}
	for _, k := range []string{"memstats", "fuse_held_dirs"} {
		if _, ok := vars[k]; !ok {
			t.Errorf("/debug/vars lacks %q", k)
		}
	}
	for _, body := range []string{cmdline, raw} {
		if strings.Contains(body, flagTok) || strings.Contains(body, envTok) {
			t.Errorf("the token leaks: %.300s", body)
		}
	}
}
