package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The pieces of cmd/sandfs that need no daemon; integration/ runs the
// binary against a real one.

func TestExitCode(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{flag.ErrHelp, 0},
		{&apiError{Status: 404}, 2},
		{fmt.Errorf("cat /x: %w", &apiError{Status: 404}), 2},
		{&apiError{Status: 400}, 3},
		{&apiError{Status: 401}, 3},
		{&apiError{Status: 403}, 3},
		{&apiError{Status: 409}, 3},
		{&apiError{Status: 413}, 3},
		{&apiError{Status: 415}, 3},
		{&apiError{Status: 429}, 3},
		{&apiError{Status: 500}, 1},
		{&apiError{Status: 507}, 1},
		{errors.New("connection refused"), 1},
		{usagef("bad"), 1},
		{errReported, 1},
	}
	for _, tc := range cases {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v): got %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"123", 123, true},
		{"64K", 64 << 10, true},
		{"64k", 64 << 10, true},
		{"64KiB", 64 << 10, true},
		{"64MB", 64 << 20, true},
		{"64MiB", 64 << 20, true},
		{"4G", 4 << 30, true},
		{"1T", 1 << 40, true},
		{"10B", 10, true},
		{"", 0, false},
		{"lots", 0, false},
		{"-1", 0, false},
		{"1.5G", 0, false},
		{"99999999999T", 0, false},
	}
	for _, tc := range cases {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q): got %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for _, n := range []int64{0, 1, 1000, 64 << 20, 4 << 30, 100_000} {
		back, err := parseSize(formatSize(n))
		if err != nil || back != n {
			t.Errorf("parseSize(formatSize(%d) = %q): got %d, %v", n, formatSize(n), back, err)
		}
	}
}

func TestParseInterspersed(t *testing.T) {
	cases := []struct {
		args    []string
		pos     []string
		r, json bool
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, false, false},
		{[]string{"-r", "a"}, []string{"a"}, true, false},
		{[]string{"a", "-r", "b", "--json"}, []string{"a", "b"}, true, true},
		{[]string{"a", "--", "-r"}, []string{"a", "-r"}, false, false},
		{[]string{"-", "x"}, []string{"-", "x"}, false, false},
		{nil, nil, false, false},
	}
	for _, tc := range cases {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		r := fs.Bool("r", false, "")
		j := fs.Bool("json", false, "")
		pos, err := parseInterspersed(fs, tc.args)
		if err != nil || !slices.Equal(pos, tc.pos) || *r != tc.r || *j != tc.json {
			t.Errorf("%q: got %q r=%v json=%v err=%v; want %q r=%v json=%v", tc.args, pos, *r, *j, err, tc.pos, tc.r, tc.json)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseInterspersed(fs, []string{"a", "--nope"}); !errors.As(err, new(*usageError)) {
		t.Errorf("unknown flag: got %v, want a usageError", err)
	}
	if _, err := parseInterspersed(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: got %v, want flag.ErrHelp", err)
	}
}

func TestDecodeError(t *testing.T) {
	const base = "http://127.0.0.1:9"
	notSandfs := "this does not look like a sandfs daemon at " + base
	cases := []struct {
		name, ctype, body string
		want              string
		kind              string // "": no apiError (not sandfs)
	}{
		{"problem", "application/problem+json",
			`{"type":"urn:sandbox-agent:error:not_found","title":"Not Found","status":404,"detail":"no such file: /x"}`,
			"no such file: /x", "not_found"},
		{"problem without detail", "application/problem+json", `{"type":"urn:x:conflict","title":"Conflict"}`, "Conflict", "conflict"},
		{"named shape", "application/json", `{"error":"nope","code":"ENOENT"}`, "nope", "-"},
		// Not a sandfs daemon: one line, whatever the page.
		{"text", "text/plain", "404 page not found\n", notSandfs, ""},
		{"HTML", "text/html", "<!DOCTYPE html><html><body><h1>Not Found</h1>\n<p>nginx</p></body></html>", notSandfs, ""},
		{"JSON of another shape", "application/json", `{"status":404,"path":"/v1/fs/file"}`, notSandfs, ""},
		{"JSON that is not", "application/json", `<html>`, notSandfs, ""},
		{"empty", "", "", notSandfs, ""},
	}
	for _, tc := range cases {
		resp := &http.Response{StatusCode: 404, Header: http.Header{"Content-Type": {tc.ctype}},
			Body: io.NopCloser(strings.NewReader(tc.body))}
		err := decodeError(resp, base)
		var ae *apiError
		isAPI := errors.As(err, &ae)
		if err.Error() != tc.want || isAPI != (tc.kind != "") || (isAPI && ae.Kind() != strings.TrimPrefix(tc.kind, "-")) {
			t.Errorf("%s: got %v (%T), want %q (kind %q)", tc.name, err, err, tc.want, tc.kind)
		}
		if !isAPI && exitCode(err) != 1 {
			t.Errorf("%s: exit %d, want 1", tc.name, exitCode(err))
		}
	}
}

func TestNewClientServers(t *testing.T) {
	cases := []struct {
		server, base string
		ok           bool
	}{
		{"http://127.0.0.1:7420", "http://127.0.0.1:7420", true},
		{"http://h:1/", "http://h:1", true},
		{"https://h/prefix/", "https://h/prefix", true},
		{"localhost:9000", "http://localhost:9000", true},
		{"unix:/run/s.sock", "http://sandfs", true},
		{"unix:///run/s.sock", "http://sandfs", true},
		{"unix:", "", false},
		{"ftp://h", "", false},
		{"http://", "", false},
	}
	for _, tc := range cases {
		c, err := newClient(tc.server, "")
		if (err == nil) != tc.ok || (err == nil && c.base != tc.base) {
			t.Errorf("newClient(%q): got %+v, %v; want base %q ok=%v", tc.server, c, err, tc.base, tc.ok)
		}
	}
}

// TestWriteTar: the archive upload-batch streams names entries relative to
// the directory, directories first, with the files' exact bytes.
func TestWriteTar(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "a/b"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "empty"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "a/b/f.bin"), []byte{0, 1, 2, 255}, 0o600))
	must(os.WriteFile(filepath.Join(dir, "top.txt"), []byte("top"), 0o644))
	must(os.Symlink("b/f.bin", filepath.Join(dir, "a/link")))

	var buf bytes.Buffer
	var warn bytes.Buffer
	must(writeTar(context.Background(), &buf, dir, &warn))
	tr := tar.NewReader(&buf)
	var names []string
	contents := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(err)
		names = append(names, h.Name)
		if h.Uid != 0 || h.Uname != "" {
			t.Errorf("%s: owner %d/%q sent", h.Name, h.Uid, h.Uname)
		}
		switch h.Typeflag {
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			must(err)
			contents[h.Name] = string(b)
		case tar.TypeSymlink:
			contents[h.Name] = "-> " + h.Linkname
		}
	}
	want := []string{"a/", "a/b/", "a/b/f.bin", "a/link", "empty/", "top.txt"}
	if !slices.Equal(names, want) {
		t.Errorf("got entries %q, want %q", names, want)
	}
	if contents["a/b/f.bin"] != "\x00\x01\x02\xff" || contents["top.txt"] != "top" || contents["a/link"] != "-> b/f.bin" {
		t.Errorf("got contents %q", contents)
	}
	if warn.Len() != 0 {
		t.Errorf("warnings: %s", warn.String())
	}
}

// TestRunUsage: help goes to stdout with status 0; a bad command line goes
// to stderr with status 1.
func TestRunUsage(t *testing.T) {
	cases := []struct {
		args       []string
		code       int
		out, errTo string
	}{
		{[]string{"help"}, 0, "usage: sandfs COMMAND", ""},
		{[]string{"help", "put"}, 0, "usage: sandfs put", ""},
		{[]string{"put", "-h"}, 0, "usage: sandfs put", ""},
		{[]string{"rm", "--help"}, 0, "-recursive", ""},
		{[]string{}, 1, "", "usage: sandfs COMMAND"},
		{[]string{"nope"}, 1, "", `unknown command "nope"`},
		{[]string{"cat"}, 1, "", "sandfs cat: cat takes at least one PATH\nusage: sandfs cat [--sandbox NAME] PATH..."},
		{[]string{"serve", "extra"}, 1, "", "serve takes no arguments"},
		{[]string{"ls", "--server", "ftp://x", "/"}, 1, "", "--server"},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
		code := report(err, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.out) || !strings.Contains(stderr.String(), tc.errTo) {
			t.Errorf("%q: got %d\nstdout %q\nstderr %q\nwant %d, stdout with %q, stderr with %q",
				tc.args, code, stdout.String(), stderr.String(), tc.code, tc.out, tc.errTo)
		}
		if tc.code == 0 && stderr.Len() != 0 {
			t.Errorf("%q: got stderr %q, want none", tc.args, stderr.String())
		}
	}
}
