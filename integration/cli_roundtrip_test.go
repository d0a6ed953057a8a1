package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The CLI's round trip of bytes, its token, and an unreachable daemon.

// TestCLIPutCatRoundTrip: what put sends, cat returns byte for byte, and the
// file on disk holds exactly it.
func TestCLIPutCatRoundTrip(t *testing.T) {
	d := startDaemon(t)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	payloads := map[string][]byte{
		"empty":            {},
		"text":             []byte("hello, sandfs\n"),
		"no final newline": []byte("no newline"),
		"every byte value": all,
		"crlf and nuls":    []byte("a\r\nb\x00\x00c\r"),
		"3 MiB random":     binaryPayload(3<<20+1, 11),
	}
	local := t.TempDir()
	for name, data := range payloads {
		for _, via := range []string{"stdin", "file"} {
			t.Run(name+" via "+via, func(t *testing.T) {
				apiPath := "/rt/" + strings.ReplaceAll(name, " ", "_") + "." + via
				var res cliResult
				if via == "stdin" {
					res = d.CLI(t, data, "put", apiPath)
				} else {
					f := filepath.Join(local, strings.ReplaceAll(name, " ", "_"))
					if err := os.WriteFile(f, data, 0o644); err != nil {
						t.Fatal(err)
					}
					res = d.CLI(t, nil, "put", f, apiPath)
				}
				if res.Code != 0 {
					t.Fatalf("put: %s", res)
				}
				onDisk, err := os.ReadFile(filepath.Join(d.Root, filepath.FromSlash(apiPath)))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(onDisk, data) {
					t.Errorf("on disk: got %d bytes, want the %d sent", len(onDisk), len(data))
				}
				res = d.CLI(t, nil, "cat", apiPath)
				if res.Code != 0 {
					t.Fatalf("cat: %s", res)
				}
				if !bytes.Equal([]byte(res.Stdout), data) {
					t.Errorf("cat: got %d bytes, want the %d sent", len(res.Stdout), len(data))
				}
			})
		}
	}
}

// TestCLIToken: a daemon with a token refuses a client without it (exit 3)
// and accepts SANDFS_TOKEN or --token.
func TestCLIToken(t *testing.T) {
	d := startDaemon(t, "--token", "s3cret-token")
	writeFiles(t, d.Root, map[string]string{"f.txt": "secret file"})
	url := "SANDFS_URL=" + d.URL
	cases := []struct {
		name string
		env  []string
		args []string
		code int
	}{
		{"no token", []string{url}, []string{"cat", "/f.txt"}, 3},
		{"wrong token", []string{url, "SANDFS_TOKEN=nope"}, []string{"cat", "/f.txt"}, 3},
		{"wrong --token", []string{url}, []string{"cat", "--token", "nope", "/f.txt"}, 3},
		{"SANDFS_TOKEN", []string{url, "SANDFS_TOKEN=s3cret-token"}, []string{"cat", "/f.txt"}, 0},
		{"--token", []string{url}, []string{"cat", "/f.txt", "--token", "s3cret-token"}, 0},
		{"--token wins over SANDFS_TOKEN", []string{url, "SANDFS_TOKEN=nope"}, []string{"cat", "--token", "s3cret-token", "/f.txt"}, 0},
		{"no token on put", []string{url}, []string{"put", "/g.txt", "-"}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runSandfs(t, tc.env, []byte("data"), tc.args...)
			if res.Code != tc.code {
				t.Fatalf("got exit %d, want %d\n%s", res.Code, tc.code, res)
			}
			if tc.code == 0 && res.Stdout != "secret file" {
				t.Errorf("got stdout %q, want the file", res.Stdout)
			}
			if tc.code != 0 && (res.Stdout != "" || res.Stderr == "") {
				t.Errorf("refused: got stdout %q stderr %q, want only a message on stderr", res.Stdout, res.Stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(d.Root, "g.txt")); !os.IsNotExist(err) {
		t.Errorf("a put without the token wrote the file (stat: %v)", err)
	}
}

// TestCLIUnreachable: no daemon is a failure (exit 1) with a message.
func TestCLIUnreachable(t *testing.T) {
	addr := freeAddr(t) // closed again: nothing listens there
	res := runSandfs(t, []string{"SANDFS_URL=http://" + addr}, nil, "ls", "/")
	if res.Code != 1 || !strings.Contains(res.Stderr, "cannot reach the daemon") {
		t.Errorf("got %s\nwant exit 1 and a message", res)
	}
}
