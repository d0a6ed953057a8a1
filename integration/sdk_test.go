package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// sdkDir holds the pinned sandbox-agent SDK (package.json, package-lock.json),
// its setup.sh (run by CI before the tests; tests never download) and
// sdk_check.mjs, which drives a daemon through the SDK's eight fs methods.
const sdkDir = "testdata/sdk"

// TestSandboxAgentSDK runs the published sandbox-agent TypeScript SDK,
// unchanged, against `sandfs serve --token`: every /v1/fs/* method, through
// the SDK's own request building and response parsing. Then it checks what
// the SDK's calls left on disk.
func TestSandboxAgentSDK(t *testing.T) {
	node, dir := requireNode(t, sdkDir, "sandbox-agent", "SANDFS_REQUIRE_SDK", "the sandbox-agent SDK compatibility test")

	const token = "sdk-check-token-7f3a"
	d := startDaemon(t, "--token", token)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "sdk_check.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"SANDFS_URL="+d.URL,
		"SANDFS_TOKEN="+token,
		"SDK_CHECK_DIR=/sdkcheck",
		"SDK_CHECK_STRICT_STATUS=1",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node sdk_check.mjs: %v\n%s\n--- daemon log ---\n%s", err, out, d.Log())
	}
	t.Logf("node sdk_check.mjs:\n%s", out)

	checkSDKResultsOnDisk(t, d.Root)
}

// checkSDKResultsOnDisk verifies the host side of what sdk_check.mjs did.
func checkSDKResultsOnDisk(t *testing.T, root string) {
	t.Helper()
	base := filepath.Join(root, "sdkcheck")

	binary := make([]byte, 4096+77)
	for i := range binary {
		binary[i] = byte(i*7 + i>>8)
	}
	const text = "hello from the sandbox-agent SDK\nünïcødé ✓ — line two\n"
	const oddName = "sp ace+plus&amp=eq%25#hash ü.txt"
	longDir := "pkg/" + strings.Repeat("long-directory-name-", 6)[:110]

	wantFile := func(rel string, want []byte) {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(base, rel))
		if err != nil {
			t.Errorf("on disk: %v", err)
			return
		}
		if !bytes.Equal(got, want) {
			t.Errorf("on disk: %s has %d bytes %q…, want %d bytes", rel, len(got), head(got), len(want))
		}
	}
	wantFile("a/moved.txt", []byte(text))
	wantFile("bin.dat", []byte("v2")) // replaced by the move with overwrite
	wantFile(oddName, []byte("odd"))
	wantFile("up/pkg/readme.txt", []byte("from a tar\n"))
	wantFile("up/pkg/sub/data.bin", binary)
	wantFile("up/pkg/sub/empty", nil)
	if got, err := os.ReadFile(filepath.Join(base, "up", longDir, "x.txt")); err != nil || string(got) != "ustar prefix field" {
		t.Errorf("on disk: up/%s/x.txt: %q, %v", longDir, got, err)
	}
	if fi, err := os.Stat(filepath.Join(base, "big.bin")); err != nil || fi.Size() != 3*1024*1024+5 {
		t.Errorf("on disk: big.bin: %v, %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(base, "up/pkg/link-to-readme")); err != nil || target != "readme.txt" {
		t.Errorf("on disk: up/pkg/link-to-readme should be a symlink to readme.txt: %q, %v", target, err)
	}
	if got, err := os.ReadFile(filepath.Join(root, "sdkcheck-rootup", "hello.txt")); err != nil || string(got) != "root upload" {
		t.Errorf("on disk: upload-batch without a path: sdkcheck-rootup/hello.txt: %q, %v", got, err)
	}
	if fi, err := os.Stat(filepath.Join(base, "a/b")); err != nil || !fi.IsDir() {
		t.Errorf("on disk: a/b should remain a directory: %v", err)
	}

	for _, gone := range []string{"text.txt", "over.txt", "empty", "new", "renamed", "a/b/c", "escaped.txt", "evil/ok-first.txt"} {
		if _, err := os.Lstat(filepath.Join(base, gone)); !os.IsNotExist(err) {
			t.Errorf("on disk: %s should not exist (err %v)", gone, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(root), "escaped.txt")); !os.IsNotExist(err) {
		t.Errorf("on disk: something escaped the root: %v", err)
	}

	// Exactly these names: no temp files left behind by atomic writes, no
	// stray entries. An empty "evil" directory (the refused upload's
	// destination) is tolerated.
	ents, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.Name() == "evil" {
			if sub, _ := os.ReadDir(filepath.Join(base, "evil")); len(sub) != 0 {
				t.Errorf("on disk: the refused upload wrote into evil/: %v", sub)
			}
			continue
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	want := []string{"a", "big.bin", "bin.dat", oddName, "up"}
	sort.Strings(want)
	if strings.Join(names, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("on disk: %s holds %q, want %q", base, names, want)
	}
}

func head(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}
