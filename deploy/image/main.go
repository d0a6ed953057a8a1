// Command image puts the static sandfs binary into a container image and
// writes it to disk as a docker-archive tarball (docker load, podman load,
// ctr images import, kind load image-archive), with no base image and no
// registry: the image is the empty image plus one layer holding the binary.
//
//	go run ./image -bin ../bin/sandfs -out ../bin/sandfs-image.tar
//
// It is built with github.com/google/go-containerregistry (the library
// crane is made of), in the nested module sandfs/deploy, so none of its
// dependencies enters the daemon's module.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
)

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/sandfs", "the static sandfs `BINARY` (CGO_ENABLED=0)")
	flag.StringVar(&o.out, "out", "bin/sandfs-image.tar", "the docker-archive `TARBALL` written")
	flag.StringVar(&o.tag, "tag", "sandfs:0.21.0", "the image's `NAME:TAG` in the tarball (not latest; deploy/daemonset.yaml names it)")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "the binary's `GOARCH`")
	flag.Parse()
	if err := build(o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", o.out, "("+o.tag+")")
}
