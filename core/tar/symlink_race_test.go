package tar

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/internal/testenv"
)

// TestNobodyAttacker is the attacker process of the race tests below
// (testenv.StartAttacker runs this test binary again as nobody): run
// directly, it does nothing.
func TestNobodyAttacker(t *testing.T) { testenv.AttackerMain() }

// raceRoot is testenv.RaceRoot with a sandbox on the root.
func raceRoot(t *testing.T) (s *core.Sandbox, root string, v *testenv.Victim) {
	t.Helper()
	root, v = testenv.RaceRoot(t)
	s, err := core.Open("default", root, core.Options{})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s, root, v
}

// tarDir is a tar of the directory name (mode 0777) with n files in it.
func tarDir(name string, n int) []byte { return tarDirFiles(name, name+"/", n) }

// tarDirFiles is a tar of the directory name (mode 0777) then n files
// named prefix+"fNNN".
func tarDirFiles(name, prefix string, n int) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o777, ModTime: time.Unix(1e9, 0)})
	for i := 0; i < n; i++ {
		tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("%sf%03d", prefix, i), Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
		tw.Write([]byte("x"))
	}
	tw.Close()
	return b.Bytes()
}

// TestTarStageSymlinkRace: the client paces its own body. After the first
// entry it waits until nobody has swapped the stage directory in /p for a
// symlink to the victim, then sends the rest; the destination /p/new is
// missing, so the stage is made 0755 and renamed in. Deterministic: the
// swap always lands before that chmod.
func TestTarStageSymlinkRace(t *testing.T) {
	s, root, v := raceRoot(t)
	for i := 0; i < testenv.Count(t, "SANDFS_RACE_ROUNDS", 2); i++ {
		a := testenv.StartAttacker(t, "TestNobodyAttacker", "parts-once", filepath.Join(root, "p"), v.Path)
		body := tarDir("d", 3)
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			_, err := Extract(ctx, s, fmt.Sprintf("/p/new%d", i), pr, Options{Mode: Rename})
			pr.CloseWithError(io.ErrClosedPipe)
			done <- err
		}()
		pw.Write(body[:1024]) // the directory entry and the first file
		if a.WaitLine(t, "swapped", 10*time.Second) == "" {
			t.Fatal("the attacker did not swap the stage")
		}
		pw.Write(body[1024:])
		pw.Close()
		err := <-done
		a.Stop()
		if c := v.Changed(t); c != "" {
			t.Fatalf("round %d: the extraction changed the file outside the root: %s (extract: %v)", i, c, err)
		}
	}
}

// TestTarMergeSymlinkRace: /p/d/sub exists (nobody's) and the archive has
// sub/ too, so the merge sets sub's mode after moving its entries in;
// meanwhile nobody trades sub and a symlink to the victim, again and again.
func TestTarMergeSymlinkRace(t *testing.T) {
	s, root, v := raceRoot(t)
	d := filepath.Join(root, "p", "d")
	must(t, os.MkdirAll(filepath.Join(d, "sub"), 0o755))
	must(t, os.Chown(d, testenv.Nobody, testenv.Nobody))
	must(t, os.Chown(filepath.Join(d, "sub"), testenv.Nobody, testenv.Nobody))
	a := testenv.StartAttacker(t, "TestNobodyAttacker", "exchange", d, "sub", v.Path)
	body := tarDir("sub", 200)
	rounds := testenv.Count(t, "SANDFS_RACE_ROUNDS", 15)
	for i := 0; i < rounds; i++ {
		Extract(ctx, s, "/p/d", bytes.NewReader(body), Options{Mode: Merge})
		if c := v.Changed(t); c != "" {
			t.Fatalf("round %d: the merge changed the file outside the root: %s", i, c)
		}
	}
	swaps := a.Stop()
	t.Logf("%d merges, %d swaps of sub; the victim held", rounds, swaps)
	if swaps == 0 {
		t.Error("the attacker never swapped: the test proved nothing")
	}
}

// TestTarStagedDirSymlinkRace: the staged directories' modes are set last,
// by name below the stage. Here the stage is one nobody owns (as when the
// attacker wins the race between mkdir and open of the stage, which
// ExtractTar now refuses), and nobody trades a staged directory and a
// symlink to the victim while the client holds the body back.
func TestTarStagedDirSymlinkRace(t *testing.T) {
	s, root, v := raceRoot(t)
	stage := filepath.Join(root, "p", "stage")
	for i := 0; i < testenv.Count(t, "SANDFS_RACE_ROUNDS", 4); i++ {
		os.RemoveAll(stage)
		must(t, os.Mkdir(stage, 0o755))
		must(t, os.Chown(stage, testenv.Nobody, testenv.Nobody))
		fd, err := unix.Open(stage, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		must(t, err)
		x := extractor{dest: "/p/x", stagefd: fd, limits: s.Limits(), files: map[string]bool{}, isDir: map[string]bool{}, isLink: map[string]bool{}}
		body := tarDirFiles("a", "", 4) // the files are beside a: nothing goes through it
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			_, err := x.run(ctx, pr)
			pr.CloseWithError(io.ErrClosedPipe)
			done <- err
		}()
		pw.Write(body[:1024])
		a := testenv.StartAttacker(t, "TestNobodyAttacker", "exchange", stage, "a", v.Path)
		time.Sleep(20 * time.Millisecond)
		pw.Write(body[1024:])
		pw.Close()
		<-done
		a.Stop()
		unix.Close(fd)
		if c := v.Changed(t); c != "" {
			t.Fatalf("round %d: the staged directory's chmod changed the file outside the root: %s", i, c)
		}
	}
}
