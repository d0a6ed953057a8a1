package integration

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sandfs/internal/testenv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Marks of the outside world: a read of the canary file or a listing of
// the outside directory shows one of them.
const (
	canaryContent = "SECRET-CANARY-OUTSIDE"
	canaryName    = "canary-name-outside"
)

// outsideSnapshot is every entry under dir with its mode, size, mtime and
// content hash.
func outsideSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		h := ""
		if e.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			h = hex.EncodeToString(s[:8])
		}
		out[p] = fmt.Sprintf("mode=%o size=%d mtime=%d.%d sum=%s", st.Mode, st.Size, st.Mtim.Sec, st.Mtim.Nsec, h)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEscapeRaceDaemon: /deep/sw, a directory in the root, is swapped for a
// symlink to a directory outside the root (relative and absolute targets),
// again and again, while 8 REST workers go through it with reads, writes,
// uploads, tar extractions, mkdir, delete, list and grep in all four
// families, and an sh process on the FUSE mount reads, writes, lists and
// makes directories through /deep/swm (swapped the same way, relative
// targets only: an absolute target would be followed by the kernel on the
// host, outside sandfs). ESCAPE_ITERATIONS REST operations in all: no
// answer and no output of the mount process may show the canary file's
// content or the outside directory's names, and the outside tree must be
// unchanged, with nothing created in it. Figures: RELIABILITY.md.
func TestEscapeRaceDaemon(t *testing.T) {
	iterations := testenv.Count(t, "ESCAPE_ITERATIONS", 1000) // make soak: 10000
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for p, c := range map[string]string{
		"outside/secret": canaryContent, "outside/" + canaryName: canaryContent, "outside/sub/secret": canaryContent,
		"root/deep/sw/secret": "INSIDE", "root/deep/swm/secret": "INSIDE",
	} {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(base, p)), 0o755))
		must(t, os.WriteFile(filepath.Join(base, p), []byte(c), 0o644))
	}
	before := outsideSnapshot(t, outside)
	var args []string
	mnt := ""
	if fuseAvailable(t) {
		mnt = filepath.Join(t.TempDir(), "mnt") // its parent has no "outside"
		args = append(args, "--mount", mnt)
	}
	d := startDaemon(t, append(args, "--root", root)...)

	// The attackers: each swaps its directory with a symlink out and back.
	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	swap := func(name string, targets []string) {
		defer wg.Done()
		dir := filepath.Join(root, "deep", name)
		tmp := filepath.Join(root, "deep", name+".tmp")
		for i := 0; !stop.Load(); i++ {
			os.Remove(tmp)
			if err := os.Symlink(targets[i%len(targets)], tmp); err != nil {
				t.Errorf("symlink: %v", err)
				return
			}
			unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE)
			unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE)
			swaps.Add(1)
		}
		os.Remove(tmp)
	}
	wg.Add(2)
	go swap("sw", []string{"../../outside", outside, "../../outside/sub"})
	go swap("swm", []string{"../../outside", "../../outside/sub"})

	// The mount process.
	var mountOut testenv.Buffer
	var mountDone chan error
	stopFile := filepath.Join(t.TempDir(), "stop")
	if mnt != "" {
		// Builtins only but every tenth round (forks are slow on a loaded
		// machine): reads by redirection, listings by glob.
		cmd := exec.Command("sh", "-c", `d="$2/deep/swm"; n=0
while [ ! -e "$1" ]; do
  n=$((n+1))
  for f in "$d/secret" "$d/sub/secret" "$d/`+canaryName+`"; do
    if read -r line 2>/dev/null < "$f"; then echo "read: $line"; fi
  done
  echo mounted 2>/dev/null > "$d/m$((n % 4))"
  echo append 2>/dev/null >> "$d/secret"
  for f in "$d"/* "$d"/sub/*; do echo "ls: $f"; done
  if [ $((n % 10)) -eq 0 ]; then
    mkdir "$d/md" 2>/dev/null; rmdir "$d/md" 2>/dev/null; mv "$d/m0" "$d/m9" 2>/dev/null
  fi
  echo "round $n"
done`, "sh", stopFile, mnt)
		cmd.Stdout, cmd.Stderr = &mountOut, &mountOut
		must(t, cmd.Start())
		mountDone = make(chan error, 1)
		go func() { mountDone <- cmd.Wait() }()
	}

	// The REST workers.
	const workers = 8
	var next, escapes, served atomic.Int64
	var failMu sync.Mutex
	var fails []string
	report := func(format string, a ...any) {
		failMu.Lock()
		if len(fails) < 20 {
			fails = append(fails, fmt.Sprintf(format, a...))
		}
		failMu.Unlock()
	}
	ops := escapeOps(d.URL)
	var rw sync.WaitGroup
	for w := 0; w < workers; w++ {
		rw.Add(1)
		go func() {
			defer rw.Done()
			for {
				i := next.Add(1)
				if i > int64(iterations) {
					return
				}
				op := ops[int(i)%len(ops)]
				resp, err := http.DefaultClient.Do(op.req())
				if err != nil {
					report("%s: %v", op.name, err)
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode >= 500 {
					report("%s: %s: %.200s", op.name, resp.Status, b)
				}
				if resp.StatusCode/100 == 2 {
					served.Add(1)
				}
				if bytes.Contains(b, []byte(canaryContent)) || bytes.Contains(b, []byte(canaryName)) {
					escapes.Add(1)
					report("ESCAPE: %s answered with the outside: %.200s", op.name, b)
				}
			}
		}()
	}
	rw.Wait()
	if mnt != "" {
		// The mount process goes on under the swaps for a share of its own.
		minRounds := max(iterations/50, 20)
		if !waitFor(10*time.Minute, func() bool { return strings.Contains(mountOut.String(), fmt.Sprintf("round %d\n", minRounds)) }) {
			t.Errorf("the mount process did not reach %d rounds", minRounds)
		}
	}
	stop.Store(true)
	wg.Wait()
	if mnt != "" {
		must(t, os.WriteFile(stopFile, nil, 0o644))
		if err := <-mountDone; err != nil {
			t.Errorf("mount process: %v", err)
		}
		out := mountOut.String()
		if strings.Contains(out, canaryContent) || strings.Contains(out, canaryName) {
			escapes.Add(1)
			t.Errorf("ESCAPE: the process on the mount saw the outside:\n%.2000s", out)
		}
		t.Logf("mount process: %d rounds, %d reads, %d listed names, all inside",
			strings.Count(out, "round "), strings.Count(out, "read: "), strings.Count(out, "ls: "))
	}
	for _, f := range fails {
		t.Error(f)
	}
	after := outsideSnapshot(t, outside)
	for p, v := range after {
		if before[p] != v {
			t.Errorf("outside changed: %s: %q, was %q", p, v, before[p])
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("outside lost %s", p)
		}
	}
	t.Logf("%d REST operations (%d answered 2xx) over %d families' routes while %d swaps ran; %d escapes; outside unchanged: %v",
		iterations, served.Load(), len(ops), swaps.Load(), escapes.Load(), len(after) == len(before))
}

// escapeOp is one REST operation through /deep/sw.
type escapeOp struct {
	name string
	req  func() *http.Request
}

func escapeOps(base string) []escapeOp {
	mk := func(method, route, ctype string, body func() io.Reader) func() *http.Request {
		return func() *http.Request {
			var b io.Reader
			if body != nil {
				b = body()
			}
			r, _ := http.NewRequest(method, base+route, b)
			if ctype != "" {
				r.Header.Set("Content-Type", ctype)
			}
			return r
		}
	}
	str := func(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }
	const js = "application/json"
	upload := func() io.Reader {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		mw.SetBoundary("escapebound")
		mw.WriteField("path", "/deep/sw/up")
		fw, _ := mw.CreateFormFile("file", "up")
		fw.Write([]byte("PWNED"))
		mw.Close()
		return &b
	}
	tarBody := func() io.Reader { return bytes.NewReader(tarOfOne("t", "PWNED")) }
	return []escapeOp{
		{"agent read", mk("GET", "/v1/fs/file?path=/deep/sw/secret", "", nil)},
		{"agent write", mk("PUT", "/v1/fs/file?path=/deep/sw/w", "", str("PWNED"))},
		{"agent list", mk("GET", "/v1/fs/entries?path=/deep/sw", "", nil)},
		{"agent stat", mk("GET", "/v1/fs/stat?path=/deep/sw/secret", "", nil)},
		{"agent mkdir", mk("POST", "/v1/fs/mkdir?path=/deep/sw/d", "", nil)},
		{"agent delete", mk("DELETE", "/v1/fs/entry?path=/deep/sw/d&recursive=true", "", nil)},
		{"agent upload-batch", mk("POST", "/v1/fs/upload-batch?path=/deep/sw", "application/x-tar", tarBody)},
		{"agent move", mk("POST", "/v1/fs/move", js, str(`{"from":"/deep/sw/w","to":"/deep/sw/w2","overwrite":true}`))},
		{"v2 read", mk("GET", "/v2/fs/read?path=/deep/sw/secret", "", nil)},
		{"v2 download", mk("GET", "/v2/fs/download?path=/deep/sw/secret", "", nil)},
		{"v2 write", mk("POST", "/v2/fs/write", js, str(`{"path":"/deep/sw/w","content":"PWNED"}`))},
		{"v2 append", mk("POST", "/v2/fs/write", js, str(`{"path":"/deep/sw/secret","content":"PWNED","append":true}`))},
		{"v2 list", mk("GET", "/v2/fs/list?path=/deep/sw&recursive=true", "", nil)},
		{"v2 grep", mk("POST", "/v2/fs/grep", js, str(`{"path":"/deep/sw","pattern":"SECRET"}`))},
		{"v2 upload", mk("POST", "/v2/fs/upload", "multipart/form-data; boundary=escapebound", upload)},
		{"v2 tree put", mk("PUT", "/v2/fs/tree?path=/deep/sw", "application/x-tar", tarBody)},
		{"v2 tree get", mk("GET", "/v2/fs/tree?path=/deep/sw", "", nil)},
		{"v2 copy", mk("POST", "/v2/fs/copy", js, str(`{"source":"/deep/sw/secret","destination":"/deep/sw/c","overwrite":true}`))},
		{"v2 edit", mk("POST", "/v2/fs/edit", js, str(`{"command":"str_replace","path":"/deep/sw/secret","old_str":"SECRET","new_str":"PWNED"}`))},
		{"v1 read", mk("POST", "/v1/file/read", js, str(`{"file":"/deep/sw/secret"}`))},
		{"v1 write", mk("POST", "/v1/file/write", js, str(`{"file":"/deep/sw/w","content":"PWNED"}`))},
		{"v1 list", mk("POST", "/v1/file/list", js, str(`{"path":"/deep/sw"}`))},
		{"v1 search", mk("POST", "/v1/file/search", js, str(`{"file":"/deep/sw/secret","regex":"SECRET"}`))},
		{"v1 delete", mk("POST", "/v1/file/delete", js, str(`{"path":"/deep/sw/c"}`))},
		{"named read", mk("GET", "/v1/sandboxes/default/fs/read?path=/deep/sw/secret", "", nil)},
		{"named write", mk("PUT", "/v1/sandboxes/default/fs/write?path=/deep/sw/w&mkdir=true", "", str("PWNED"))},
		{"named list", mk("GET", "/v1/sandboxes/default/fs/list?path=/deep/sw&recursive=true", "", nil)},
		{"named chmod", mk("POST", "/v1/sandboxes/default/fs/chmod", js, str(`{"path":"/deep/sw/secret","mode":"0600"}`))},
		{"named rename", mk("POST", "/v1/sandboxes/default/fs/rename", js, str(`{"source":"/deep/sw/w","dest":"/deep/sw/w3"}`))},
		{"named delete", mk("DELETE", "/v1/sandboxes/default/fs/delete?path=/deep/sw/w3", "", nil)},
	}
}

// tarOfOne is a tar archive of one regular file.
func tarOfOne(name, body string) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
	tw.Write([]byte(body))
	tw.Close()
	return b.Bytes()
}
