package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// TestQuotaMount: with serve --quota, every way of writing through the
// mount stops at the bound with ENOSPC (write, append, truncate,
// fallocate, copy_file_range; create, mkdir, symlink, link, mknod), the
// file keeps its old bytes, and /metrics shows usage equal to a fresh walk
// of the root, in both mirror modes (passthrough is off for writes under a
// byte quota, so a write cannot go past it unseen).
func TestQuotaMount(t *testing.T) {
	for _, m := range fuseModes {
		t.Run(m.name, func(t *testing.T) {
			d, mnt := startMirror(t, append([]string{"--quota", "1K,6"}, m.args...)...)
			old := bytes.Repeat([]byte("k"), 100)
			if err := os.WriteFile(filepath.Join(mnt, "keep"), old, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(mnt, "src"), bytes.Repeat([]byte("s"), 600), 0o644); err != nil {
				t.Fatal(err)
			}
			wantMetricsUsage(t, d, 700, 2)
			keep := filepath.Join(mnt, "keep")
			withFile := func(flags int, f func(fd int) error) error {
				fd, err := unix.Open(keep, flags|unix.O_CLOEXEC, 0)
				if err != nil {
					return err
				}
				defer unix.Close(fd)
				return f(fd)
			}
			over := bytes.Repeat([]byte("x"), 1000)
			writes := []struct {
				name string
				op   func() error
			}{
				{"pwrite", func() error {
					return withFile(unix.O_WRONLY, func(fd int) error { _, err := unix.Pwrite(fd, over, 0); return err })
				}},
				{"append", func() error {
					return withFile(unix.O_WRONLY|unix.O_APPEND, func(fd int) error { _, err := unix.Write(fd, over); return err })
				}},
				{"truncate up", func() error { return unix.Truncate(keep, 5000) }},
				{"ftruncate up", func() error {
					return withFile(unix.O_WRONLY, func(fd int) error { return unix.Ftruncate(fd, 5000) })
				}},
				{"fallocate", func() error {
					return withFile(unix.O_WRONLY, func(fd int) error { return unix.Fallocate(fd, 0, 0, 5000) })
				}},
				{"copy_file_range", func() error {
					src, err := os.Open(filepath.Join(mnt, "src"))
					if err != nil {
						return err
					}
					defer src.Close()
					return withFile(unix.O_WRONLY, func(fd int) error {
						off := int64(100)
						_, err := unix.CopyFileRange(int(src.Fd()), nil, fd, &off, 600, 0)
						return err
					})
				}},
			}
			for _, w := range writes {
				if err := w.op(); !errors.Is(err, syscall.ENOSPC) {
					t.Errorf("%s past the quota: err = %v, want ENOSPC", w.name, err)
				}
				if got, _ := os.ReadFile(keep); !bytes.Equal(got, old) {
					t.Fatalf("after %s: keep is %d bytes %q…, want its old 100", w.name, len(got), got[:min(len(got), 10)])
				}
			}
			wantMetricsUsage(t, d, 700, 2)

			// Entries: 2 used of 6; four more names, then every create fails.
			for i := range 4 {
				if err := os.WriteFile(filepath.Join(mnt, fmt.Sprintf("e%d", i)), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			creates := []struct {
				name string
				op   func() error
			}{
				{"create", func() error { f, err := os.Create(filepath.Join(mnt, "c")); f.Close(); return err }},
				{"mkdir", func() error { return os.Mkdir(filepath.Join(mnt, "dir"), 0o755) }},
				{"symlink", func() error { return os.Symlink("keep", filepath.Join(mnt, "sym")) }},
				{"link", func() error { return os.Link(keep, filepath.Join(mnt, "hard")) }},
				{"mknod", func() error { return unix.Mkfifo(filepath.Join(mnt, "fifo"), 0o644) }},
			}
			for _, c := range creates {
				if err := c.op(); !errors.Is(err, syscall.ENOSPC) {
					t.Errorf("%s past the entry quota: err = %v, want ENOSPC", c.name, err)
				}
				if _, err := os.Lstat(filepath.Join(d.Root, strings.Fields(c.name + " x")[0])); err == nil {
					t.Errorf("%s made something", c.name)
				}
			}
			// A write that replaces its own bytes is within the quota.
			if err := withFile(unix.O_WRONLY, func(fd int) error { _, err := unix.Pwrite(fd, bytes.Repeat([]byte("n"), 100), 0); return err }); err != nil {
				t.Errorf("a write within the quota: %v", err)
			}
			wantMetricsUsage(t, d, 700, 6)
			if m := metricsText(t, d); !strings.Contains(m, `sandfs_sandbox_quota_bytes{sandbox="default"} 1024`) ||
				!strings.Contains(m, `sandfs_sandbox_quota_entries{sandbox="default"} 6`) {
				t.Errorf("/metrics lacks the quota:\n%s", grepLines(m, "sandfs_sandbox_"))
			}
		})
	}
}

// wantMetricsUsage checks the usage /metrics shows against the numbers
// wanted and against a fresh walk of the daemon's root.
func wantMetricsUsage(t *testing.T, d *Daemon, bytes, entries int64) {
	t.Helper()
	b, e, err := testenv.TreeUsage(d.Root)
	if err != nil {
		t.Fatal(err)
	}
	if b != bytes || e != entries {
		t.Fatalf("a walk finds %d bytes %d entries, want %d and %d", b, e, bytes, entries)
	}
	m := metricsText(t, d)
	for _, w := range []string{
		fmt.Sprintf(`sandfs_sandbox_usage_bytes{sandbox="default"} %d`, b),
		fmt.Sprintf(`sandfs_sandbox_usage_entries{sandbox="default"} %d`, e),
	} {
		if !strings.Contains(m, w+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", w, grepLines(m, "sandfs_sandbox_"))
		}
	}
}

func metricsText(t *testing.T, d *Daemon) string {
	t.Helper()
	req, _ := http.NewRequest("GET", d.URL+"/metrics", nil)
	if d.Token != "" && d.Socket == "" {
		req.Header.Set("Authorization", "Bearer "+d.Token) // a daemon of the fleet's token
	}
	res, err := d.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("/metrics: %d %v", res.StatusCode, err)
	}
	return string(b)
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestQuotaOutsideScan: a file written straight into the root (origin
// external, a size nobody told) is counted by the scan the kernel watch
// brings soon after; then a write through the API past the quota is 507.
func TestQuotaOutsideScan(t *testing.T) {
	d := startDaemon(t, "--quota", "10K")
	if err := os.WriteFile(filepath.Join(d.Root, "outside"), bytes.Repeat([]byte("o"), 9<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`sandfs_sandbox_usage_bytes{sandbox="default"} %d`, 9<<10)
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(metricsText(t, d), want+"\n") {
		if time.Now().After(deadline) {
			t.Fatalf("no scan counted the outside write:\n%s", grepLines(metricsText(t, d), "sandfs_sandbox_"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	wantMetricsUsage(t, d, 9<<10, 1)
	req, _ := http.NewRequest("PUT", d.URL+"/v1/sandboxes/default/fs/write?path=/more", bytes.NewReader(make([]byte, 2<<10)))
	res, err := d.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 507 || !strings.Contains(string(body), `"code":"ENOSPC"`) || !strings.Contains(string(body), "quota exceeded: bytes limit 10240, usage 9216") {
		t.Fatalf("write past the quota: %d %s", res.StatusCode, body)
	}
	wantMetricsUsage(t, d, 9<<10, 1)
}

// TestQuotaRegistry: a sandbox made live with a quota (POST /v1/sandboxes
// {name, quota}) and mounted by --mount-all is held to it through the API
// and the mount alike; GET /v1/sandboxes shows its usage against it, and
// PATCH raises it.
func TestQuotaRegistry(t *testing.T) {
	requireFUSE(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	d, dir := startRegistry(t, "--mount-all", mnt)
	if st, b := postSandbox(t, d, map[string]any{"name": "q1", "quota": map[string]int64{"bytes": 1024, "entries": 3}}); st != http.StatusCreated {
		t.Fatalf("POST /v1/sandboxes: %d %s", st, b)
	}
	at := filepath.Join(mnt, "q1")
	waitMounted(t, d, at, true)
	if err := os.WriteFile(filepath.Join(at, "a"), bytes.Repeat([]byte("a"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	st, b := named(t, d, "", "PUT", "q1", "/fs/write?path=/big", make([]byte, 2000))
	if st != 507 || !strings.Contains(string(b), `"code":"ENOSPC"`) || !strings.Contains(string(b), `"path":"/big"`) {
		t.Fatalf("API write past the quota: %d %s", st, b)
	}
	f, err := os.OpenFile(filepath.Join(at, "a"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 2000), 0); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("mount write past the quota: %v, want ENOSPC", err)
	}
	f.Close()
	wantContent(t, filepath.Join(at, "a"), strings.Repeat("a", 100))
	for _, n := range []string{"b", "c"} {
		must(t, os.WriteFile(filepath.Join(at, n), nil, 0o644))
	}
	if err := os.WriteFile(filepath.Join(at, "d"), nil, 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("mount create past the entry quota: %v, want ENOSPC", err)
	}
	usageOf := func() string {
		res, err := d.Client().Get(d.URL + "/v1/sandboxes")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("GET /v1/sandboxes: %d %s", res.StatusCode, b)
		}
		var list struct {
			Sandboxes []struct {
				Name         string
				Usage, Quota struct{ Bytes, Entries int64 }
			}
		}
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatal(err)
		}
		for _, s := range list.Sandboxes {
			if s.Name == "q1" {
				return fmt.Sprintf("%d/%d %d/%d", s.Usage.Bytes, s.Quota.Bytes, s.Usage.Entries, s.Quota.Entries)
			}
		}
		return "absent"
	}
	if got := usageOf(); got != "100/1024 3/3" {
		t.Errorf("GET /v1/sandboxes: q1 %s, want 100/1024 3/3", got)
	}
	if b, e, _ := testenv.TreeUsage(filepath.Join(dir, "q1")); b != 100 || e != 3 {
		t.Errorf("a walk of q1 finds %d bytes %d entries", b, e)
	}
	if st, b := named(t, d, "", "PATCH", "q1", "", []byte(`{"quota":{"bytes":4096,"entries":10}}`)); st != 200 {
		t.Fatalf("PATCH quota: %d %s", st, b)
	}
	if err := os.WriteFile(filepath.Join(at, "d"), make([]byte, 2000), 0o644); err != nil {
		t.Errorf("mount write under the raised quota: %v", err)
	}
	if got := usageOf(); got != "2100/4096 4/10" {
		t.Errorf("after PATCH and a write: q1 %s, want 2100/4096 4/10", got)
	}
}
