package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"sandfs/internal/testenv"
)

// aioSDKDir is the AIO sandbox's own Python SDK, vendored unchanged
// (testdata/aio-python-sdk/README.md says from where); aioSDKCheck drives
// a daemon's /v1/file/* routes with it.
const (
	aioSDKDir   = "testdata/aio-python-sdk"
	aioSDKCheck = "testdata/aio_sdk_check.py"
	python3     = "/usr/bin/python3" // Debian's, where python3-httpx and python3-pydantic install
)

// requirePythonSDK returns the vendored SDK's absolute directory, or skips
// (fails under SANDFS_REQUIRE_SDK=1, as CI sets) when Debian's python3 or
// its httpx and pydantic are missing.
func requirePythonSDK(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(aioSDKDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "agent_sandbox", "__init__.py")); err != nil {
		t.Fatalf("the vendored AIO SDK is missing: %v", err)
	}
	why := ""
	if _, err := os.Stat(python3); err != nil {
		why = python3 + " is missing (apt-get install python3)"
	} else if out, err := exec.Command(python3, "-c", "import httpx, pydantic").CombinedOutput(); err != nil {
		lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
		why = "python3-httpx or python3-pydantic is missing (apt-get install -y python3-httpx python3-pydantic): " + string(lines[len(lines)-1])
	}
	if why != "" {
		testenv.Skip(t, []string{"SANDFS_REQUIRE_SDK"}, "the AIO Python SDK test: %s", why)
	}
	return dir
}

// TestAIOPythonSDK runs the AIO sandbox's published Python SDK, unchanged,
// against a real daemon with the token it made in its state directory
// (given to the SDK as its headers): files, the editor with undo, upload
// and download, a watcher while another process changes the root, wait,
// and the failures in the SDK's own types (aio_sdk_check.py). Then it
// checks what the calls left on disk.
func TestAIOPythonSDK(t *testing.T) {
	sdk := requirePythonSDK(t)
	script, err := filepath.Abs(aioSDKCheck)
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t)
	if d.Token == "" {
		t.Fatal("the daemon made no token")
	}
	const dir = "/aiosdk"
	if err := os.Mkdir(filepath.Join(d.Root, dir), 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python3, script)
	cmd.Env = append(os.Environ(),
		"PYTHONPATH="+sdk,
		"PYTHONDONTWRITEBYTECODE=1", // nothing written into the vendored tree
		"SANDFS_URL="+d.URL,
		"SANDFS_TOKEN="+d.Token,
		"SANDFS_ROOT="+d.Root,
		"CHECK_DIR="+dir,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 aio_sdk_check.py: %v\n%s\n--- daemon log ---\n%s", err, out, d.Log())
	}
	t.Logf("python3 aio_sdk_check.py:\n%s", out)
	if !bytes.HasSuffix(bytes.TrimSpace(out), []byte("all checks passed")) {
		t.Errorf("the script ended early:\n%s", out)
	}

	base := filepath.Join(d.Root, dir)
	blob := make([]byte, 300000)
	for i := range blob {
		blob[i] = byte(i*7 + i>>8)
	}
	for rel, want := range map[string][]byte{
		"src/a.txt":     []byte("line 0\nline 1\nneedle 2\nline 3\nline 4\n"), // edits undone
		"src/b.py":      []byte("print('needle')\n"),
		"new.md":        []byte("# renewed\n"),
		"up/blob.bin":   blob,
		"w/waited.txt":  []byte("hi\n"),
		"glob/b-2.dat":  []byte("22"),
		"glob/a-10.dat": []byte("1010101010"),
	} {
		got, err := os.ReadFile(filepath.Join(base, rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("on disk: %s: %d bytes %q…, %v; want %d bytes", rel, len(got), head(got), err, len(want))
		}
	}
	for _, gone := range []string{"x.txt", "w/f.txt", "w/g.txt"} {
		if _, err := os.Lstat(filepath.Join(base, gone)); !os.IsNotExist(err) {
			t.Errorf("on disk: %s should not exist: %v", gone, err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(base, "up")); len(ents) != 1 {
		t.Errorf("upload left %d entries in up/ (a .part file?)", len(ents))
	}
}
