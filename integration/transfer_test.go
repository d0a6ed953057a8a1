package integration

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var (
	plainOnce sync.Once
	plainPath string
	plainErr  error
)

// sandfsPlainBin builds cmd/sandfs without -race, for memory figures that
// mean what they say (the race detector's shadow memory would dwarf them).
func sandfsPlainBin(t testing.TB) string {
	t.Helper()
	plainOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sandfs-plain-")
		if err != nil {
			plainErr = err
			return
		}
		plainPath = filepath.Join(dir, "sandfs")
		if out, err := exec.Command("go", "build", "-o", plainPath, "sandfs/cmd/sandfs").CombinedOutput(); err != nil {
			plainErr = err
			t.Logf("%s", out)
		}
	})
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	return plainPath
}

// pattern is n bytes of a 1 MiB pseudo-random block repeated, each copy
// stamped with its index (so a reordered or repeated chunk changes the hash).
type pattern struct {
	n, off int64
	block  []byte
}

func (p *pattern) Read(b []byte) (int, error) {
	if p.block == nil {
		p.block = make([]byte, 1<<20)
		x := uint64(88172645463325252)
		for i := range p.block {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			p.block[i] = byte(x)
		}
	}
	if p.off >= p.n {
		return 0, io.EOF
	}
	at := p.off % int64(len(p.block))
	if at == 0 {
		binary.LittleEndian.PutUint64(p.block, uint64(p.off))
	}
	n := copy(b, p.block[at:min(int64(len(p.block)), at+p.n-p.off)])
	p.off += int64(n)
	return n, nil
}

// TestTransfer1GiBBoundedMemory uploads a 1 GiB file through the multipart
// route and downloads it again from a daemon built without -race; the bytes
// come back identical and the daemon's peak RSS stays under 64 MiB.
func TestTransfer1GiBBoundedMemory(t *testing.T) {
	const size = 1 << 30
	root := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		// This VM's disk writes at ~100 MB/s; tmpfs keeps the test short. The
		// page cache is not the daemon's RSS either way.
		if dir, err := os.MkdirTemp("/dev/shm", "sandfs-transfer-"); err == nil {
			root = dir
			t.Cleanup(func() { os.RemoveAll(dir) })
		}
	}
	d := startDaemonWith(t, daemonOptions{Bin: sandfsPlainBin(t)}, "--root", root)

	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	want := sha256.New()
	go func() {
		mw.WriteField("path", "/big.bin")
		fw, err := mw.CreateFormFile("file", "big.bin")
		if err == nil {
			_, err = io.Copy(io.MultiWriter(fw, want), &pattern{n: size})
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	resp, err := http.Post(d.URL+"/v2/fs/upload", mw.FormDataContentType(), pr)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	if st, err := os.Stat(filepath.Join(root, "big.bin")); err != nil || st.Size() != size {
		t.Fatalf("uploaded file: %v, %v", st, err)
	}

	resp, err = http.Get(d.URL + "/v2/fs/download?path=" + url.QueryEscape("/big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.New()
	n, err := io.Copy(got, resp.Body)
	resp.Body.Close()
	if err != nil || n != size || string(got.Sum(nil)) != string(want.Sum(nil)) {
		t.Fatalf("download: %d bytes, %v; content identical: %v", n, err, string(got.Sum(nil)) == string(want.Sum(nil)))
	}

	hwm := peakRSS(t, d.cmd.Process.Pid)
	t.Logf("daemon peak RSS across a 1 GiB upload and download: %d MiB", hwm>>20)
	if hwm > 64<<20 {
		t.Errorf("daemon peak RSS %d MiB, want under 64 MiB", hwm>>20)
	}
}

// peakRSS is the VmHWM of a process, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}
