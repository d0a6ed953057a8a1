package integration

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Faults: a full disk, met by a write in each family.

// aioErr is the part of an AIO envelope the fault tests read.
type aioErr struct {
	Success bool `json:"success"`
	Data    struct {
		ErrorType string `json:"error_type"`
		ErrnoName string `json:"errno_name"`
	} `json:"data"`
}

// TestFaultDiskFull: on a 1 MiB tmpfs root, a 2 MiB write in each family is
// 507 / no_space_left in the family's shape (AIO v1: 200, success:false),
// the old file is whole, no temp stays, and the space comes back.
func TestFaultDiskFull(t *testing.T) {
	requireRoot(t, "full-disk test (mounts a tmpfs)")
	root := t.TempDir()
	must(t, unix.Mount("tmpfs", root, "tmpfs", 0, "size=1m,mode=0755"))
	t.Cleanup(func() { unix.Unmount(root, unix.MNT_DETACH) })
	seedOld(t, root)
	d := startDaemon(t, "--root", root)
	free := func() uint64 {
		var st unix.Statfs_t
		must(t, unix.Statfs(root, &st))
		return st.Bfree
	}
	before := free()
	body := bytes.Repeat([]byte("x"), 2<<20)
	upload := func(route string) *http.Request {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		mw.WriteField("path", "/f.txt") // before "file", as the route wants
		fw, _ := mw.CreateFormFile("file", "f.txt")
		fw.Write(body)
		mw.Close()
		r, _ := http.NewRequest("POST", d.URL+route, &b)
		r.Header.Set("Content-Type", mw.FormDataContentType())
		return r
	}
	put := func(route string) *http.Request {
		r, _ := http.NewRequest("PUT", d.URL+route, bytes.NewReader(body))
		return r
	}
	jsonWrite := func(route, p string) *http.Request {
		b, _ := json.Marshal(map[string]string{"path": p, "file": p, "content": string(body[:1200<<10])})
		r, _ := http.NewRequest("POST", d.URL+route, bytes.NewReader(b))
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	for _, c := range []struct {
		name   string
		req    *http.Request
		status int
		check  func(b []byte) error
		intact bool // the old file stays whole (false: the AIO in-place write)
	}{
		{"sandbox-agent PUT", put("/v1/fs/file?path=/f.txt"), 507, func(b []byte) error {
			var p struct{ Type string }
			if json.Unmarshal(b, &p) != nil || p.Type != "urn:sandbox-agent:error:stream_error" {
				return fmt.Errorf("want problem type stream_error")
			}
			return nil
		}, true},
		{"AIO v2 upload", upload("/v2/fs/upload"), 507, aioNoSpace(false), true},
		{"AIO v1 upload", upload("/v1/file/upload"), 200, aioNoSpace(false), true},
		{"named write", put("/v1/sandboxes/default/fs/write?path=/f.txt"), 507, func(b []byte) error {
			var e struct{ Code, Path string }
			if json.Unmarshal(b, &e) != nil || e.Code != "ENOSPC" || e.Path != "/f.txt" {
				return fmt.Errorf("want code ENOSPC, path /f.txt")
			}
			return nil
		}, true},
		{"AIO v2 tree (tar)", tarReq(d.URL+"/v2/fs/tree?path=/t", body), 507, aioNoSpace(false), true},
		{"sandbox-agent upload-batch (tar)", tarReq(d.URL+"/v1/fs/upload-batch?path=/t", body), 507, func(b []byte) error {
			var p struct{ Type string }
			if json.Unmarshal(b, &p) != nil || p.Type != "urn:sandbox-agent:error:stream_error" {
				return fmt.Errorf("want problem type stream_error")
			}
			return nil
		}, true},
		// The AIO plain write goes through the file itself by contract (no
		// temp, same inode): a full disk leaves what fitted, on its own file.
		{"AIO v2 write (in place)", jsonWrite("/v2/fs/write", "/inplace.txt"), 507, aioNoSpace(false), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.DefaultClient.Do(c.req)
			must(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("got %s, want %d: %s", resp.Status, c.status, b)
			}
			if err := c.check(b); err != nil {
				t.Errorf("%v: %s", err, b)
			}
			if c.intact {
				checkOld(t, root)
			} else {
				os.Remove(filepath.Join(root, "inplace.txt"))
			}
			if tmp := findTemps(root); len(tmp) > 0 {
				t.Errorf("temps left: %q", tmp)
			}
			if !waitFor(5*time.Second, func() bool { return free() >= before }) {
				t.Errorf("free blocks %d, %d before: space held by a leaked temp", free(), before)
			}
		})
	}
	resp, err := http.Get(d.URL + "/health")
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("health after the full disk: %s", resp.Status)
	}
}

func aioNoSpace(success bool) func([]byte) error {
	return func(b []byte) error {
		var e aioErr
		if json.Unmarshal(b, &e) != nil || e.Success != success || e.Data.ErrorType != "no_space_left" || e.Data.ErrnoName != "ENOSPC" {
			return fmt.Errorf("want success:%v, error_type no_space_left, errno_name ENOSPC", success)
		}
		return nil
	}
}

func tarReq(u string, content []byte) *http.Request {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "a", Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg})
	tw.Write(content)
	tw.Close()
	r, _ := http.NewRequest(map[bool]string{true: "PUT", false: "POST"}[strings.Contains(u, "/v2/")], u, &b)
	r.Header.Set("Content-Type", "application/x-tar")
	return r
}
