package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// binPath is where the binary lies in the image, and its entrypoint.
const binPath = "usr/local/bin/sandfs"

// options are the tool's flags.
type options struct {
	bin  string // the static binary
	out  string // the docker-archive tarball written
	tag  string // the image's name in the tarball (never :latest)
	arch string // GOARCH of the binary
}

// build writes the image of o.bin to o.out.
func build(o options) error {
	ref, err := name.NewTag(o.tag)
	if err != nil {
		return fmt.Errorf("-tag %q: %w", o.tag, err)
	}
	if ref.TagStr() == "latest" { // also a name without a tag
		return fmt.Errorf("-tag %q: give a version, not latest (a node would not know which image it runs)", o.tag)
	}
	bin, err := os.ReadFile(o.bin)
	if err != nil {
		return err
	}
	if err := checkStatic(bin); err != nil {
		return fmt.Errorf("%s: %w", o.bin, err)
	}
	img, err := assemble(bin, o.arch)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(o.out, ref, img)
}

// checkStatic refuses what is not an ELF executable without an interpreter:
// the image has no libc, so a dynamic binary would not start.
func checkStatic(bin []byte) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF binary: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("is dynamically linked (build it with CGO_ENABLED=0): the image has no libc")
		}
	}
	return nil
}

// assemble is the empty image plus one layer holding the binary and an
// empty /tmp, with a config that runs it as root. Every time in it is the
// epoch, so the same binary gives the same image digest.
func assemble(bin []byte, arch string) (v1.Image, error) {
	layerTar, err := layerOf(bin)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Entrypoint = []string{"/" + binPath}
	cf.Config.Cmd = []string{"serve"}
	cf.Config.User = "0:0" // the daemon mounts FUSE and acts for callers
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{"PATH=/usr/local/bin"}
	cf.Config.Labels = map[string]string{"org.opencontainers.image.title": "sandfs"}
	return mutate.ConfigFile(img, cf)
}

// layerOf is the layer's tar: the directories, the binary (0755) and /tmp
// (1777), owned by root, at the epoch.
func layerOf(bin []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	entries := []tar.Header{
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
		{Name: "usr/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "usr/local/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "usr/local/bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: binPath, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))},
	}
	for _, h := range entries {
		h.ModTime, h.Format = epoch, tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			return nil, err
		}
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
