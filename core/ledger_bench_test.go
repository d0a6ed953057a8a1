package core

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

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
			root := benchRoot(b)
			s := benchWatched(b, root)
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

// BenchmarkMirrorSetattr is the mirror's setattr of one attribute of a
// file, as tar and git send them (a mode, an owner, both times), with the
// kernel watch running. Besides the time of the call it reports the CPU
// of the whole process per call (cpu-ns/op), the reader's included: a
// claim's end costs the reader too (a sentinel's event to read), after
// the call has returned, so the loop waits for every claim to close.
func BenchmarkMirrorSetattr(b *testing.B) {
	mode, uid := uint32(0o640), 0
	now := unix.Timespec{Nsec: unix.UTIME_NOW}
	for _, tc := range []struct {
		name string
		a    SetAttr
	}{
		{"chmod", SetAttr{Mode: &mode}},
		{"chown", SetAttr{Uid: &uid, Gid: &uid}},
		{"utimes", SetAttr{Atime: &now, Mtime: &now}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			root := benchRoot(b)
			const files = 256
			for i := range files {
				if err := os.WriteFile(root+"/f"+strconv.Itoa(i), nil, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			s := benchWatched(b, root)
			ctx := WithActor(context.Background(), Actor{Origin: journal.Mirror, Pid: 1})
			rd := s.RootDir()
			cpu0 := processCPU()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := rd.Setattr(ctx, "f"+strconv.Itoa(i%files), tc.a); err != nil {
					b.Fatal(err)
				}
			}
			for deadline := time.Now().Add(10 * time.Second); s.watch.OpenClaims() > 0; time.Sleep(100 * time.Microsecond) {
				if time.Now().After(deadline) {
					b.Fatal("claims still open")
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the user and system CPU time of the process so far.
// benchRoot is a fresh root on the filesystem of the watch's control
// directories (tmpfs where there is one), removed after b.
func benchRoot(b *testing.B) string {
	b.Helper()
	root, err := os.MkdirTemp(watch.ControlParent(), "sandfs-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	return root
}

// benchWatched is a sandbox on root with its kernel watch running and
// ready, closed after b.
func benchWatched(b *testing.B, root string) *Sandbox {
	b.Helper()
	s, err := Open("default", root, Options{})
	if err != nil {
		b.Fatal(err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(func() { cancel(); s.Close() })
	if err := s.StartWatching(wctx, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		b.Fatal(err)
	}
	<-s.Watch().Ready()
	return s
}

func processCPU() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
