package integration

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// TestNobodyAttacker is the attacker process of the race tests below
// (testenv.StartAttacker runs this test binary again as nobody): run
// directly, it does nothing.
func TestNobodyAttacker(t *testing.T) { testenv.AttackerMain() }

// raceDaemon serves a root that nobody may enter, with /p owned by nobody
// (the attacker owns the destination's parent); the victim is outside it.
func raceDaemon(t *testing.T, args ...string) (*Daemon, string, *testenv.Victim) {
	t.Helper()
	base := testenv.NobodyDir(t)
	root := filepath.Join(base, "root")
	must(t, os.MkdirAll(filepath.Join(root, "p"), 0o755))
	must(t, os.Chmod(root, 0o755))
	must(t, os.Chown(filepath.Join(root, "p"), testenv.Nobody, testenv.Nobody))
	v := testenv.NewVictim(t, base)
	d := startDaemon(t, append(args, "--root", root)...)
	return d, root, v
}

// call sends one request and returns its status and body.
func call(t *testing.T, d *Daemon, method, path, ctype string, body io.Reader) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, d.URL+path, body)
	must(t, err)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req) // authTransport adds the daemon's token
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func jsonBody(v any) io.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

// TestCopySymlinkRaceDaemon: a directory copy through each copy route
// while nobody, who owns /p, swaps the copy's .sandfs-*.part directory
// for a symlink to the victim as soon as it appears. The victim's mode,
// owner and times never change, and no answer is a 5xx.
func TestCopySymlinkRaceDaemon(t *testing.T) {
	d, root, v := raceDaemon(t)
	for i := 0; i < 200; i++ {
		must(t, os.MkdirAll(filepath.Join(root, "src"), 0o755))
		must(t, os.WriteFile(filepath.Join(root, "src", fmt.Sprintf("f%03d", i)), []byte("x"), 0o644))
	}
	// Each round of each route copies to a new destination: a copy onto an
	// earlier one's (a non-empty directory) is refused before it begins.
	routes := []struct {
		name, path string
		body       func(dst string) any
	}{
		{"v2 copy", "/v2/fs/copy", func(dst string) any {
			return map[string]any{"source": "/src", "destination": dst, "overwrite": true}
		}},
		{"v1 copy", "/v1/file/copy", func(dst string) any {
			return map[string]any{"source": "/src", "destination": dst, "overwrite": true}
		}},
		{"named copy", "/v1/sandboxes/default/fs/copy", func(dst string) any {
			return map[string]any{"source": "/src", "dest": dst, "recursive": true}
		}},
	}
	rounds := testenv.Count(t, "SANDFS_RACE_ROUNDS", 8)
	for k, r := range routes {
		t.Run(r.name, func(t *testing.T) {
			a := testenv.StartAttacker(t, "TestNobodyAttacker", "parts", filepath.Join(root, "p"), v.Path)
			for i := 0; i < rounds; i++ {
				code, b := call(t, d, "POST", r.path, "application/json", jsonBody(r.body(fmt.Sprintf("/p/dst%d-%d", k, i))))
				if code >= 500 {
					t.Errorf("round %d: %d %s", i, code, b)
				}
				if c := v.Changed(t); c != "" {
					t.Fatalf("round %d: %s changed the file outside the root: %s", i, r.path, c)
				}
			}
			swaps := a.Stop()
			t.Logf("%d copies, %d swaps; the victim held", rounds, swaps)
			if swaps == 0 {
				t.Error("the attacker never swapped: the test proved nothing")
			}
		})
	}
}

// tarBytes is a tar of the directory name (mode 0777) with n files in it.
func tarBytes(name string, n int) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o777, ModTime: time.Unix(1e9, 0)})
	for i := 0; i < n; i++ {
		tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("%s/f%03d", name, i), Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
		tw.Write([]byte("x"))
	}
	tw.Close()
	return b.Bytes()
}

// TestTarStageSymlinkRaceDaemon: the client paces its own body. It sends
// the first entries, waits until nobody has swapped the stage directory in
// /p for a symlink to the victim, then sends the rest; the destination is
// missing, so the daemon makes the stage 0755 and renames it in. Every
// round's swap lands before that chmod: the race is won every time, and
// the victim holds.
func TestTarStageSymlinkRaceDaemon(t *testing.T) {
	d, root, v := raceDaemon(t)
	routes := []struct{ name, method, path string }{
		{"v2 tree", "PUT", "/v2/fs/tree?mode=rename&path=/p/new"},
		{"upload-batch", "POST", "/v1/fs/upload-batch?path=/p/new"},
	}
	for _, r := range routes {
		t.Run(r.name, func(t *testing.T) {
			for i := 0; i < testenv.Count(t, "SANDFS_RACE_ROUNDS", 2); i++ {
				a := testenv.StartAttacker(t, "TestNobodyAttacker", "parts-once", filepath.Join(root, "p"), v.Path)
				body := tarBytes("d", 3)
				pr, pw := io.Pipe()
				type answer struct {
					code int
					body []byte
				}
				done := make(chan answer, 1)
				go func() {
					req, _ := http.NewRequest(r.method, d.URL+r.path+strconv.Itoa(i)+r.name[:2], pr)
					req.Header.Set("Content-Type", "application/x-tar")
					if d.Token != "" {
						req.Header.Set("Authorization", "Bearer "+d.Token)
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						pr.CloseWithError(err)
						done <- answer{0, []byte(err.Error())}
						return
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					pr.CloseWithError(io.ErrClosedPipe)
					done <- answer{resp.StatusCode, b}
				}()
				pw.Write(body[:1024])
				if a.WaitLine(t, "swapped", 10*time.Second) == "" {
					t.Fatal("the attacker did not swap the stage")
				}
				pw.Write(body[1024:])
				pw.Close()
				ans := <-done
				a.Stop()
				if ans.code >= 500 || ans.code == 0 {
					t.Errorf("round %d: %d %s", i, ans.code, ans.body)
				}
				if c := v.Changed(t); c != "" {
					t.Fatalf("round %d: the extraction changed the file outside the root: %s (answer %d %s)", i, c, ans.code, ans.body)
				}
			}
		})
	}
}

// TestTarMergeSymlinkRaceDaemon: /p/d/sub exists (nobody's) and each
// archive has sub/ too, so the merge sets sub's mode after moving its
// entries in, while nobody trades sub and a symlink to the victim.
func TestTarMergeSymlinkRaceDaemon(t *testing.T) {
	d, root, v := raceDaemon(t)
	dd := filepath.Join(root, "p", "d")
	must(t, os.MkdirAll(filepath.Join(dd, "sub"), 0o755))
	must(t, os.Chown(dd, testenv.Nobody, testenv.Nobody))
	must(t, os.Chown(filepath.Join(dd, "sub"), testenv.Nobody, testenv.Nobody))
	a := testenv.StartAttacker(t, "TestNobodyAttacker", "exchange", dd, "sub", v.Path)
	body := tarBytes("sub", 200)
	rounds := testenv.Count(t, "SANDFS_RACE_ROUNDS", 12)
	codes := map[int]int{}
	for i := 0; i < rounds; i++ {
		path := "/v1/fs/upload-batch?path=/p/d"
		method := "POST"
		if i%2 == 1 {
			method, path = "PUT", "/v2/fs/tree?mode=merge&path=/p/d"
		}
		code, b := call(t, d, method, path, "application/x-tar", bytes.NewReader(body))
		codes[code]++
		if code >= 500 {
			t.Errorf("round %d: %s %s: %d %s", i, method, path, code, b)
		}
		if c := v.Changed(t); c != "" {
			t.Fatalf("round %d: the merge changed the file outside the root: %s", i, c)
		}
	}
	swaps := a.Stop()
	t.Logf("%d merges (answers %v), %d swaps; the victim held", rounds, codes, swaps)
	if swaps == 0 {
		t.Error("the attacker never swapped: the test proved nothing")
	}
}

// TestSetidDaemon: the local root: PUT a program, then chmod 4755
// through the named chmod. Without --allow-setid the chmod (and a named
// write asking for 4755) is refused with 403 in the named family's shape,
// and the file is never setuid; with it, both are allowed.
func TestSetidDaemon(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow=%v", allow), func(t *testing.T) {
			var args []string
			if allow {
				args = append(args, "--allow-setid")
			}
			d := startDaemon(t, args...)
			code, b := call(t, d, "PUT", "/v1/fs/file?path=/lpe/id", "application/octet-stream", strings.NewReader("#!/bin/sh\nid\n"))
			if code != 200 {
				t.Fatalf("write: %d %s", code, b)
			}
			code, b = call(t, d, "POST", "/v1/sandboxes/default/fs/chmod", "application/json", jsonBody(map[string]any{"path": "/lpe/id", "mode": "4755"}))
			code2, b2 := call(t, d, "PUT", "/v1/sandboxes/default/fs/write?path=/lpe/w&mode=6755&mkdir=true", "application/octet-stream", strings.NewReader("x"))
			var st, st2 unix.Stat_t
			must(t, unix.Stat(filepath.Join(d.Root, "lpe/id"), &st))
			serr := unix.Stat(filepath.Join(d.Root, "lpe/w"), &st2)
			if !allow {
				for _, c := range []struct {
					what string
					code int
					body []byte
				}{{"chmod 4755", code, b}, {"write mode=6755", code2, b2}} {
					var e struct{ Error, Code, Path string }
					if c.code != 403 || json.Unmarshal(c.body, &e) != nil || !strings.Contains(e.Error, "--allow-setid") || e.Path == "" {
						t.Errorf("%s: got %d %s, want 403 {error naming --allow-setid, code, path}", c.what, c.code, c.body)
					}
				}
				if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
					t.Errorf("the file became setuid: mode %o owner %d", st.Mode, st.Uid)
				}
				if serr == nil {
					t.Errorf("a refused write made the file (mode %o)", st2.Mode)
				}
				return
			}
			if code != 200 || st.Mode&0o7777 != 0o4755 {
				t.Errorf("with --allow-setid chmod: %d %s, mode %o, want 200 and 4755", code, b, st.Mode&0o7777)
			}
			if code2 != 200 || serr != nil || st2.Mode&0o7777 != 0o6755 {
				t.Errorf("with --allow-setid write: %d %s, mode %o (%v), want 200 and 6755", code2, b2, st2.Mode&0o7777, serr)
			}
		})
	}
}
