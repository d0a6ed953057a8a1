package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// staticBinary builds a tiny Go program with CGO_ENABLED=0 (the standard
// library only: nothing is fetched).
func staticBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestImage builds an image of a static binary and reads the tarball back:
// one layer (no base), holding the binary byte for byte, run as root.
func TestImage(t *testing.T) {
	bin := staticBinary(t)
	out := filepath.Join(t.TempDir(), "image.tar")
	if err := build(options{bin: bin, out: out, tag: "sandfs:0.21.0", arch: "amd64"}); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("sandfs:0.21.0")
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/usr/local/bin/sandfs"}; !reflect.DeepEqual(cf.Config.Entrypoint, want) {
		t.Errorf("entrypoint %q, want %q", cf.Config.Entrypoint, want)
	}
	if cf.Config.User != "0:0" || cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("user %q os %q arch %q, want 0:0 linux amd64", cf.Config.User, cf.OS, cf.Architecture)
	}
	if !reflect.DeepEqual(cf.Config.Cmd, []string{"serve"}) {
		t.Errorf("cmd %q, want serve", cf.Config.Cmd)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 || len(cf.RootFS.DiffIDs) != 1 || len(cf.History) != 1 {
		t.Fatalf("%d layers, %d diff ids, %d history entries: want the binary's layer only", len(layers), len(cf.RootFS.DiffIDs), len(cf.History))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	want, _ := os.ReadFile(bin)
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.ModTime.Unix() != 0 {
			t.Errorf("%s: uid %d gid %d mtime %v, want root's at the epoch", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		if h.Name == binPath {
			got, _ := io.ReadAll(tr)
			if !bytes.Equal(got, want) || h.Mode != 0o755 {
				t.Errorf("%s: %d bytes mode %o, want the binary's %d bytes, 0755", h.Name, len(got), h.Mode, len(want))
			}
		}
	}
	if got := strings.Join(names, " "); got != "tmp/ usr/ usr/local/ usr/local/bin/ usr/local/bin/sandfs" {
		t.Errorf("layer holds %s", got)
	}

	// The same binary gives the same image.
	out2 := filepath.Join(t.TempDir(), "again.tar")
	if err := build(options{bin: bin, out: out2, tag: "sandfs:0.21.0", arch: "amd64"}); err != nil {
		t.Fatal(err)
	}
	img2, err := tarball.ImageFromPath(out2, &tag)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := img2.Digest()
	if d1 != d2 {
		t.Errorf("two builds of one binary: digests %s and %s", d1, d2)
	}
}

// TestImageRefuses: what would not run in the image, and a latest tag,
// write nothing.
func TestImageRefuses(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, bin, tag, want string }{
		{"not ELF", text, "sandfs:1", "not an ELF binary"},
		{"latest", text, "sandfs:latest", "not latest"},
		{"no tag", text, "sandfs", "not latest"},
		{"bad tag", text, "Sandfs:1", "-tag"},
		{"missing", filepath.Join(dir, "none"), "sandfs:1", "no such file"},
	}
	if dyn, err := exec.LookPath("sh"); err == nil {
		if real, err := filepath.EvalSymlinks(dyn); err == nil {
			cases = append(cases, struct{ name, bin, tag, want string }{"dynamic", real, "sandfs:1", "dynamically linked"})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.name+".tar")
			err := build(options{bin: c.bin, out: out, tag: c.tag, arch: "amd64"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("build: %v, want an error with %q", err, c.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was written", out)
			}
		})
	}
}
