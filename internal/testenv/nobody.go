package testenv

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Nobody is the unprivileged account the race tests' attackers run as.
const Nobody = 65534

// NobodyDir is a new directory that the account nobody may enter (0755; its
// parent is the system temp directory), removed when t ends: roots and
// outside files of the race tests go in it, since t.TempDir's parents are
// 0700. Skips (Skip) unless the test runs as root.
func NobodyDir(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, nil, "the attacker runs as nobody: the test must run as root")
	}
	d, err := os.MkdirTemp("", "sandfs-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// nobodyBin is a copy of the running test binary that nobody may execute.
func nobodyBin() (string, error) {
	binOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			binErr = err
			return
		}
		dir, err := os.MkdirTemp("", "sandfs-attacker-")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "attacker")
		in, err := os.Open(self)
		if err != nil {
			binErr = err
			return
		}
		defer in.Close()
		out, err := os.OpenFile(binPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			binErr = err
			return
		}
		if _, err := io.Copy(out, in); err != nil {
			binErr = err
		}
		if err := out.Close(); err != nil && binErr == nil {
			binErr = err
		}
	})
	return binPath, binErr
}

// Attacker is a process running as nobody that swaps names for symlinks
// (see AttackerMain for what it can do).
type Attacker struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	mu    sync.Mutex
	last  string
	done  chan struct{}
}

// StartAttacker runs the test binary again, as nobody, with only the test
// helper (a test function that calls AttackerMain first) and the attack
// args; it ends when t does, or at Stop.
func StartAttacker(t testing.TB, helper string, args ...string) *Attacker {
	t.Helper()
	bin, err := nobodyBin()
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := json.Marshal(args)
	cmd := exec.Command(bin, "-test.run=^"+helper+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SANDFS_ATTACK="+string(enc))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	cmd.Stderr = os.Stderr
	a := &Attacker{cmd: cmd, lines: make(chan string, 1024), done: make(chan struct{})}
	if a.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(a.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l := sc.Text()
			a.mu.Lock()
			a.last = l
			a.mu.Unlock()
			select {
			case a.lines <- l:
			default:
			}
		}
	}()
	if l := a.WaitLine(t, "ready", 30*time.Second); l == "" {
		t.Fatal("the attacker did not start")
	}
	t.Cleanup(func() { a.Stop() })
	return a
}

// WaitLine waits for a line of the attacker's output starting with prefix
// and returns it ("" on timeout or exit).
func (a *Attacker) WaitLine(t testing.TB, prefix string, d time.Duration) string {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case l := <-a.lines:
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-a.done:
			return ""
		case <-timer.C:
			return ""
		}
	}
}

// Stop ends the attacker and returns how many swaps it made.
func (a *Attacker) Stop() int {
	a.stdin.Close()
	<-a.done
	a.cmd.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	var n int
	fmt.Sscanf(a.last, "swaps %d", &n)
	return n
}

// AttackerMain runs the attack named in SANDFS_ATTACK and exits, when this
// process is an attacker StartAttacker started; otherwise it returns at
// once. The attacks (args):
//
//	parts DIR TARGET       each ".sandfs-*.part" directory that appears in
//	                       DIR is renamed away and replaced by a symlink to
//	                       TARGET, as soon as it is seen ("swapped NAME")
//	parts-once DIR TARGET  the same, once, then waits for the end
//	exchange DIR NAME TARGET
//	                       DIR/NAME and a symlink to TARGET trade places
//	                       (renameat2 RENAME_EXCHANGE) again and again
//	creates DIR -          files f0, f1, ... are made in DIR (createLoop)
//	mark DIR VALUE         sets the xattrs user.sandfs.id and then
//	                       trusted.sandfs.id of DIR to VALUE, printing
//	                       "set NAME: RESULT" for each (ok or the error)
//
// It ends when its stdin closes, printing "swaps N".
func AttackerMain() {
	spec := os.Getenv("SANDFS_ATTACK")
	if spec == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(spec), &args); err != nil || len(args) < 3 {
		fmt.Fprintln(os.Stderr, "attacker: bad SANDFS_ATTACK", spec)
		os.Exit(2)
	}
	var stop sync.WaitGroup
	stop.Add(1)
	stopped := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stopped)
		stop.Done()
	}()
	isStopped := func() bool {
		select {
		case <-stopped:
			return true
		default:
			return false
		}
	}
	swaps := 0
	fmt.Println("ready")
	switch args[0] {
	case "parts", "parts-once":
		dir, target := args[1], args[2]
		for !isStopped() {
			if args[0] == "parts-once" && swaps > 0 {
				<-stopped
				break
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range ents {
				n := e.Name()
				if !e.IsDir() || !strings.HasPrefix(n, ".sandfs-") || !strings.HasSuffix(n, ".part") {
					continue
				}
				held := filepath.Join(dir, fmt.Sprintf(".held-%d-%d", os.Getpid(), swaps))
				if os.Rename(filepath.Join(dir, n), held) != nil {
					continue
				}
				if os.Symlink(target, filepath.Join(dir, n)) != nil {
					continue
				}
				swaps++
				fmt.Println("swapped", n)
			}
		}
	case "exchange":
		if len(args) < 4 {
			os.Exit(2)
		}
		dir, name, target := args[1], args[2], args[3]
		a, b := filepath.Join(dir, name), filepath.Join(dir, name+".lnk")
		os.Remove(b)
		if err := os.Symlink(target, b); err != nil {
			fmt.Fprintln(os.Stderr, "attacker:", err)
			os.Exit(2)
		}
		for !isStopped() {
			switch unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE) {
			case nil:
				swaps++
				unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
			case unix.ENOENT: // the link was removed (or the directory): again
				os.Symlink(target, b)
			}
			// The daemon may have replaced the symlink (a merge unlinks a
			// symlink where it brings a directory): make a new one.
			if fi, err := os.Lstat(b); err == nil && fi.Mode()&os.ModeSymlink == 0 {
				if os.Rename(b, filepath.Join(dir, fmt.Sprintf(".held-%d-%d", os.Getpid(), swaps))) == nil {
					os.Symlink(target, b)
				}
			}
		}
	case "creates":
		swaps = createLoop(args[1], isStopped)
	case "mark":
		for _, name := range []string{"user.sandfs.id", "trusted.sandfs.id"} {
			res := "ok"
			if err := unix.Lsetxattr(args[1], name, []byte(args[2]), 0); err != nil {
				res = err.Error()
			}
			fmt.Printf("set %s: %s\n", name, res)
		}
		<-stopped
	default:
		fmt.Fprintln(os.Stderr, "attacker: unknown attack", args[0])
		os.Exit(2)
	}
	stop.Wait()
	fmt.Println("swaps", swaps)
	os.Exit(0)
}
