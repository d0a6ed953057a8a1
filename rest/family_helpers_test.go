package rest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/rest/agentfs"
	"sandfs/rest/aio"
	"sandfs/rest/httpkit"
	"sandfs/rest/named"
	"sandfs/rest/sandboxd"
)

// Test helpers across the families: answer shapes per family, snapshots
// of a tree, the browser guard's refusals, and running as another uid.

func checkFamilyShape(family string, r resp) error {
	for _, bad := range []string{"goroutine ", "panic", ".go:"} {
		if bytes.Contains(r.Body, []byte(bad)) {
			return fmt.Errorf("body carries %q", bad)
		}
	}
	switch family {
	case FamilyAIOv1, FamilyAIOv2:
		var env struct {
			Success *bool                `json:"success"`
			Message string               `json:"message"`
			Data    json.RawMessage      `json:"data"`
			Errors  []httpkit.FieldError `json:"errors"`
		}
		if err := json.Unmarshal(r.Body, &env); err != nil {
			return fmt.Errorf("not an AIO envelope: %v", err)
		}
		if env.Success == nil || *env.Success || env.Message == "" {
			return fmt.Errorf("envelope: want success:false and a message")
		}
		if r.Status == 422 {
			if len(env.Errors) == 0 || env.Errors[0].Location == "" || env.Errors[0].Type == "" {
				return fmt.Errorf("422 without errors[{location,type,message}]")
			}
			return nil
		}
		var f aio.Failure
		if err := json.Unmarshal(env.Data, &f); err != nil || f.ErrorType == "" || f.Message == "" {
			return fmt.Errorf("data: want {error_type, message, …}, got %s", env.Data)
		}
		if family == FamilyAIOv1 && r.Status == 200 && f.Errno == nil && f.ErrorType != string(httpkit.KindDecode) && f.ErrorType != string(httpkit.KindTooLarge) {
			return fmt.Errorf("200 success:false without an errno: only filesystem failures answer 200 on /v1/file")
		}
	case FamilyMCP:
		var e struct {
			JSONRPC string `json:"jsonrpc"`
			Error   struct {
				Code    int
				Message string
				Data    struct{ Kind string }
			}
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			return fmt.Errorf("Content-Type %q", ct)
		}
		if err := json.Unmarshal(r.Body, &e); err != nil || e.JSONRPC != "2.0" || e.Error.Code == 0 || e.Error.Message == "" || e.Error.Data.Kind == "" {
			return fmt.Errorf("want a JSON-RPC error {jsonrpc, id: null, error: {code, message, data: {kind}}}: %v", err)
		}
	case FamilyNamed:
		var e named.ErrorBody
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			return fmt.Errorf("Content-Type %q", ct)
		}
		if err := json.Unmarshal(r.Body, &e); err != nil || e.Error == "" || !strings.HasPrefix(e.Code, "E") {
			return fmt.Errorf("want {error, code: E…, path}: %v", err)
		}
	case FamilySandboxd:
		var e sandboxd.Error
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			return fmt.Errorf("Content-Type %q", ct)
		}
		if err := json.Unmarshal(r.Body, &e); err != nil || e.Message == "" || e.Code != sandboxd.Code(r.Status) {
			return fmt.Errorf("want {code: %s, message}: %v", sandboxd.Code(r.Status), err)
		}
	default:
		var p agentfs.Problem
		if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
			return fmt.Errorf("Content-Type %q", ct)
		}
		if err := json.Unmarshal(r.Body, &p); err != nil || !strings.HasPrefix(p.Type, "urn:sandbox-agent:error:") || p.Status != r.Status || p.Detail == "" || p.Title == "" {
			return fmt.Errorf("want problem+json {type, title, status, detail}: %v", err)
		}
	}
	return nil
}

// snapshot names every entry under dir with its mode, size, content hash,
// link target and extended attributes.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		if err == nil {
			var fi os.FileInfo
			if fi, err = d.Info(); err == nil {
				out[rel] = describe(p, fi)
				return nil
			}
		}
		if errors.Is(err, unix.ENAMETOOLONG) {
			// A tree deeper than the host can name: it exists, which is
			// what a case must be told of.
			out[rel] = "(host path too long)"
			return filepath.SkipDir
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func describe(p string, fi os.FileInfo) string {
	{
		desc := fmt.Sprintf("%v %d", fi.Mode(), fi.Size())
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return "unreadable: " + err.Error()
			}
			sum := sha256.Sum256(b)
			desc += " " + hex.EncodeToString(sum[:8])
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			desc += " -> " + l
		}
		buf := make([]byte, 4096)
		if n, err := unix.Llistxattr(p, buf); err == nil && n > 0 {
			desc += " xattrs " + strings.ReplaceAll(string(buf[:n]), "\x00", ",")
		}
		return desc
	}
}

func snapshotDiff(before, after map[string]string) string {
	var d []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			d = append(d, "- "+k+" "+v)
		} else if w != v {
			d = append(d, "~ "+k+" "+v+" => "+w)
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "+ "+k+" "+v)
		}
	}
	sort.Strings(d)
	if len(d) > 12 {
		d = append(d[:12], fmt.Sprintf("… and %d more", len(d)-12))
	}
	return strings.Join(d, "\n")
}

// wantGuardRefusal checks a refusal: status, the family's shape, and its
// kind (AIO error_type, sandbox-agent type, named code).
func wantGuardRefusal(t *testing.T, family string, r resp, status int, k httpkit.Kind) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	if err := checkFamilyShape(family, r); err != nil {
		t.Fatalf("shape: %v: %s", err, r.Body)
	}
	switch family {
	case FamilyAIOv1, FamilyAIOv2:
		var env struct{ Data aio.Failure }
		json.Unmarshal(r.Body, &env)
		if env.Data.ErrorType != string(k) {
			t.Errorf("error_type %q, want %q", env.Data.ErrorType, k)
		}
	case FamilyMCP:
		var e struct {
			Error struct{ Data struct{ Kind string } }
		}
		json.Unmarshal(r.Body, &e)
		if e.Error.Data.Kind != string(k) {
			t.Errorf("kind %q, want %q", e.Error.Data.Kind, k)
		}
	case FamilyNamed:
		var e named.ErrorBody
		json.Unmarshal(r.Body, &e)
		want := map[int]string{403: "EACCES", 421: "EACCES", 415: "EINVAL", 431: "E2BIG", 400: "EINVAL"}[status]
		if e.Code != want {
			t.Errorf("code %q, want %q", e.Code, want)
		}
	case FamilySandboxd:
		// checkFamilyShape checked the code against the status; the kind
		// is not on the wire.
	default:
		var p agentfs.Problem
		json.Unmarshal(r.Body, &p)
		want := map[int]string{403: "permission_denied", 421: "permission_denied", 415: "unsupported_media_type", 431: "invalid_request", 400: "invalid_request"}[status]
		if p.Type != "urn:sandbox-agent:error:"+want {
			t.Errorf("type %q, want %s", p.Type, want)
		}
	}
}

// asUID makes the daemon look as if it ran as uid for the test's duration.
func asUID(t *testing.T, uid int) {
	t.Helper()
	old := aio.ProcessEUID
	aio.ProcessEUID = func() int { return uid }
	t.Cleanup(func() { aio.ProcessEUID = old })
}

func ptr(s string) *string { return &s }

// ran reports whether a request got past the guard and did its work.
func ran(family string, r resp) bool {
	if r.Status >= 400 {
		return false
	}
	return !(family == FamilyAIOv1 && bytes.Contains(r.Body, []byte(`"success":false`)))
}
