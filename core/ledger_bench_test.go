package core

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/core/watch"
)

// BenchmarkMirrorCreateUnlink is the daemon's side of the bench's FUSE
// create and unlink rows (bench/run/fuse.go): empty files made and removed
// at the top of a root on tmpfs, as the mirror makes them (Create, the
// handle's release ending the claim at its echo; Unlink), with the kernel
// watch running, so each goes through the ledger and the reader.
func BenchmarkMirrorCreateUnlink(b *testing.B) {
	for _, op := range []string{"create", "unlink"} {
		b.Run(op, func(b *testing.B) {
			root, err := os.MkdirTemp(watch.ControlParent(), "sandfs-bench-")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(root)
			s, err := Open("default", root, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			wctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := s.StartWatching(wctx, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
				b.Fatal(err)
			}
			<-s.Watch().Ready()
			ctx := WithActor(context.Background(), Actor{Origin: journal.Mirror, Pid: 1})
			rd := s.RootDir()
			create := func(i int) {
				h, _, err := rd.Create(ctx, "f"+strconv.Itoa(i), unix.O_WRONLY, 0o644, -1, -1)
				if err != nil {
					b.Fatal(err)
				}
				h.Release(ctx)
				h.File().Close()
			}
			if op == "unlink" {
				for i := 0; i < b.N; i++ {
					create(i)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if op == "create" {
					create(i)
				} else if err := rd.Unlink(ctx, "f"+strconv.Itoa(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
