package main

import (
	"bytes"
	"flag"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestStateTokenRace: daemons starting at once on one state directory all
// end up with the one token that was published, a full 64-hex-digit one,
// and the directory holds nothing else afterwards.
func TestStateTokenRace(t *testing.T) {
	for round := 0; round < 20; round++ {
		dir := filepath.Join(t.TempDir(), "state")
		const n = 8
		toks := make([]string, n)
		made := make([]bool, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				sd, _, err := openStateDir(dir, nil)
				if err != nil {
					t.Error(err)
					return
				}
				defer sd.Close()
				toks[i], made[i], err = sd.token()
				if err != nil {
					t.Error(err)
				}
			}(i)
		}
		wg.Wait()
		nMade := 0
		for i := range toks {
			if toks[i] != toks[0] || len(toks[i]) != 64 {
				t.Fatalf("round %d: tokens differ or are short: %q", round, toks)
			}
			if made[i] {
				nMade++
			}
		}
		if nMade != 1 {
			t.Fatalf("round %d: %d daemons say they made the token, want 1", round, nMade)
		}
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 || ents[0].Name() != "token" {
			t.Fatalf("round %d: the state directory holds %v, want only token", round, ents)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "token"))
		if string(b) != toks[0]+"\n" {
			t.Fatalf("round %d: the file holds %q, want %q", round, b, toks[0]+"\n")
		}
	}
}

// TestClientTokenOnlyToLocal: the token file of the state directory is
// sent to a daemon on this machine (loopback IP, localhost, unix socket),
// never to another host; a given token goes anywhere it is told.
func TestClientTokenOnlyToLocal(t *testing.T) {
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, "token"), []byte("state-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf := filepath.Join(t.TempDir(), "tf")
	if err := os.WriteFile(tf, []byte(" file-token \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		server, tokenFlag, tokenFile, envToken, want string
	}{
		{"http://127.0.0.1:7420", "", "", "", "state-token"},
		{"http://127.3.4.5:7420", "", "", "", "state-token"},
		{"http://[::1]:7420", "", "", "", "state-token"},
		{"http://localhost:7420", "", "", "", "state-token"},
		{"localhost:7420", "", "", "", "state-token"},
		{"unix:/run/sandfs.sock", "", "", "", "state-token"},
		{"http://10.1.2.3:7420", "", "", "", ""},
		{"https://sandfs.example.com", "", "", "", ""},
		{"http://127.0.0.1.example.com:7420", "", "", "", ""},
		{"http://10.1.2.3:7420", "flag-token", "", "", "flag-token"},
		{"http://127.0.0.1:7420", "", tf, "env-token", "file-token"},
		{"http://127.0.0.1:7420", "", "", "env-token", "env-token"},
		{"http://127.0.0.1:7420", "flag-token", "", "env-token", "flag-token"},
	}
	for _, tc := range cases {
		env := map[string]string{"SANDFS_STATE": state, "SANDFS_TOKEN": tc.envToken}
		cf := clientFlags{server: tc.server, token: tc.tokenFlag, tokenFile: tc.tokenFile}
		c, err := cf.client(func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if c.token != tc.want {
			t.Errorf("server %s flag %q file %q env %q: token %q, want %q", tc.server, tc.tokenFlag, tc.tokenFile, tc.envToken, c.token, tc.want)
		}
	}
}

// TestNoAuthListenChecks: --no-auth is refused on a non-loopback address
// unless --insecure-no-token is given too; --insecure-no-token alone means
// no token only when no token is given.
func TestNoAuthListenChecks(t *testing.T) {
	cases := []struct {
		args     []string
		env      string
		noToken  bool
		refused  bool // on 0.0.0.0
		usageErr bool
	}{
		{nil, "", false, false, false},
		{[]string{"--no-auth"}, "", true, true, false},
		{[]string{"--no-auth", "--insecure-no-token"}, "", true, false, false},
		{[]string{"--insecure-no-token"}, "", true, false, false},
		{[]string{"--insecure-no-token", "--token", "t"}, "", false, false, false},
		{[]string{"--insecure-no-token"}, "e", false, false, false},
		{[]string{"--no-auth"}, "e", true, true, false},
		{[]string{"--no-auth", "--token", "t"}, "", false, false, true},
		{[]string{"--token", "t", "--token-file", "f"}, "", false, false, true},
	}
	for _, tc := range cases {
		var a authFlags
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		a.add(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		noTok, err := a.noToken(func(k string) string {
			if k == "SANDFS_TOKEN" {
				return tc.env
			}
			return ""
		})
		if (err != nil) != tc.usageErr {
			t.Errorf("%v: err %v, want usage error %v", tc.args, err, tc.usageErr)
			continue
		}
		if err != nil {
			continue
		}
		if noTok != tc.noToken {
			t.Errorf("%v env %q: noToken %v, want %v", tc.args, tc.env, noTok, tc.noToken)
		}
		if refused := a.checkListen(noTok, "0.0.0.0:7420", false) != nil; refused != tc.refused {
			t.Errorf("%v: refused on 0.0.0.0 %v, want %v", tc.args, refused, tc.refused)
		}
		if err := a.checkListen(noTok, "127.0.0.1:7420", true); err != nil {
			t.Errorf("%v: refused on loopback: %v", tc.args, err)
		}
	}
}

// TestConsoleURL: the logged URL carries a token the daemon made in its
// fragment, never a given one; 0.0.0.0 and [::] listeners are told as
// 127.0.0.1; a unix socket has none.
func TestConsoleURL(t *testing.T) {
	made := daemonAuth{token: "abc", source: tokenState, tokenFile: "/s/token"}
	given := daemonAuth{token: "secret", source: tokenGiven}
	cases := []struct {
		addr net.Addr
		auth daemonAuth
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7420}, made, "http://127.0.0.1:7420/ui/#token=abc"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 7420}, made, "http://127.0.0.1:7420/ui/#token=abc"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 7420}, made, "http://127.0.0.1:7420/ui/#token=abc"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 7420}, made, "http://[::1]:7420/ui/#token=abc"},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7420}, given, "http://127.0.0.1:7420/ui/"},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7420}, daemonAuth{}, "http://127.0.0.1:7420/ui/"},
		{&net.UnixAddr{Name: "/run/s.sock", Net: "unix"}, made, ""},
	}
	for _, tc := range cases {
		if got := consoleURL(tc.addr, tc.auth); got != tc.want {
			t.Errorf("consoleURL(%v, %v) = %q, want %q", tc.addr, tc.auth.source, got, tc.want)
		}
	}
	var buf bytes.Buffer
	logConsole(slog.New(slog.NewTextHandler(&buf, nil)), cases[4].addr, given)
	if strings.Contains(buf.String(), "secret") || !strings.Contains(buf.String(), "asks for the token") {
		t.Errorf("the log of a given token: %q", buf.String())
	}
	buf.Reset()
	logConsole(slog.New(slog.NewTextHandler(io.Writer(&buf), nil)), cases[0].addr, made)
	if !strings.Contains(buf.String(), "web console: http://127.0.0.1:7420/ui/#token=abc") || !strings.Contains(buf.String(), "token_file=/s/token") {
		t.Errorf("the log of a made token: %q", buf.String())
	}
}
