package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestFUSEFloodToldOnce: processes writing temp files through the mount
// and renaming them into place, many at once, have each change told once,
// by the mirror: never a write also told as an outside one. The release
// of a temp reached the daemon after its rename had moved the file's
// ctime, and was told as an outside write (0.1 % of the writes).
func TestFUSEFloodToldOnce(t *testing.T) {
	requireFUSE(t)
	for _, mode := range []string{"passthrough", "no-passthrough"} {
		t.Run(mode, func(t *testing.T) {
			root, mnt := t.TempDir(), filepath.Join(t.TempDir(), "mnt")
			args := []string{"--root", root, "--mount", mnt}
			if mode == "no-passthrough" {
				args = append(args, "--no-passthrough")
			}
			d := startDaemon(t, args...)
			const workers, rounds = 12, 200
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					dir := filepath.Join(mnt, fmt.Sprintf("w%d", w))
					if err := os.Mkdir(dir, 0o755); err != nil {
						errs <- err
						return
					}
					for n := 0; n < rounds; n++ {
						tmp, dst := filepath.Join(dir, fmt.Sprintf("f%d.tmp", n%8)), filepath.Join(dir, fmt.Sprintf("f%d", n%8))
						if err := os.WriteFile(tmp, []byte(fmt.Sprintf("data %d\n", n)), 0o644); err != nil {
							errs <- err
							return
						}
						if err := os.Rename(tmp, dst); err != nil {
							errs <- err
							return
						}
						if _, err := os.ReadFile(dst); err != nil {
							errs <- err
							return
						}
					}
				}(w)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			// The last releases reach the daemon after the last close:
			// an end marker written over HTTP, told after them, ends the
			// read.
			time.Sleep(200 * time.Millisecond)
			restPut(t, d, "/end", "end")
			var external, writes, renames int
			for deadline := time.Now().Add(30 * time.Second); ; {
				external, writes, renames = 0, 0, 0
				end := false
				for _, e := range keptEvents(t, d) {
					switch {
					case e.Path == "/end":
						end = true
					case e.Origin == "external":
						external++
						if external <= 5 {
							t.Errorf("told as an outside change: %s %s (seq %d)", e.Type, e.Path, e.Seq)
						}
					case e.Type == "write":
						writes++
					case e.Type == "rename":
						renames++
					}
				}
				if end && writes == workers*rounds && renames == workers*rounds || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if external > 0 || writes != workers*rounds || renames != workers*rounds {
				t.Errorf("%d writes and %d renames through the mount: told %d writes, %d renames, %d outside changes; want each once and none outside",
					workers*rounds, workers*rounds, writes, renames, external)
			}
		})
	}
}
