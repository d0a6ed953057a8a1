package fusefs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The reaper: a daemon killed (kill -9, the OOM killer) while one of its
// threads waits in the kernel for a directory's lock, to send a
// notification, can never finish dying. The process holding that lock is
// waiting for the daemon's answer to its request on that directory; the
// daemon's other threads are gone, so no answer comes, and the thread
// cannot be woken: it stays, the process stays a zombie holding /dev/fuse
// open, the connection stays up, and every process that touches the mount
// hangs with it, until someone aborts the connection by hand. No
// notification can be made safe from this: the kernel takes the lock
// whatever the daemon holds.
//
// So a mirror's connection is watched from outside the daemon: the first
// mount starts a small process (the same binary, ReaperVerb) that the daemon
// tells each connection it serves, on a pipe. The reaper polls the daemon:
// once the daemon is dying (a SIGKILL pending, a zombie, gone) it aborts
// every connection it was told of through the fusectl filesystem (mounted
// first if it is not; the kernel then fails every request still waiting,
// the stuck thread gets its lock and dies), and ends. It ends too when the
// pipe closes, which is how a daemon that exits normally lets it go.

// ReaperVerb is the argument that makes the binary the reaper (RunReaper).
const ReaperVerb = "fuse-reaper"

// reaperPoll is how often the reaper looks at the daemon.
const reaperPoll = 200 * time.Millisecond

// fusectl is where the fusectl filesystem is mounted.
const fusectl = "/sys/fs/fuse/connections"

// reaperClient is the daemon's end: the pipe to the reaper, started at the
// first mount.
type reaperClient struct {
	mu    sync.Mutex
	w     io.WriteCloser // nil until started, or when it could not start
	tried bool
}

var reaper reaperClient

// tell sends line to the reaper, starting it first if need be. A reaper
// that cannot start is logged: the mount works, without the way out.
func (r *reaperClient) tell(line string, log *slog.Logger) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.tried {
		r.tried = true
		w, err := startReaper()
		if err != nil {
			log.Warn("fuse: no reaper: a daemon killed while it notifies the kernel may leave its mount hanging until its connection is aborted by hand", "err", err)
		}
		r.w = w
	}
	if r.w == nil {
		return
	}
	if _, err := io.WriteString(r.w, line+"\n"); err != nil {
		log.Warn("fuse: the reaper is gone", "err", err)
		r.w.Close()
		r.w = nil
	}
}

// startReaper runs this binary as the reaper, in a process group of its
// own (a terminal's Ctrl-C is the daemon's to handle, not the reaper's).
func startReaper() (io.WriteCloser, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, ReaperVerb, strconv.Itoa(os.Getpid()))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go cmd.Wait() // it ends when the pipe closes: reap it then
	return w, nil
}

// watchConn tells the reaper of the connection mounted at mountpoint, and
// returns the function that tells it the connection is gone.
func watchConn(mountpoint string, log *slog.Logger) (forget func()) {
	id, err := connID(mountpoint)
	if err != nil {
		log.Warn("fuse: the mount's connection is not known: the reaper cannot abort it", "mountpoint", mountpoint, "err", err)
		return func() {}
	}
	reaper.tell("+"+id, log)
	return func() { reaper.tell("-"+id, log) }
}

// connID is the fusectl name of the connection mounted at mountpoint: the
// minor number of the mount's device, read from mountinfo (a stat of the
// mountpoint would ask this very daemon). The last mount there wins.
func connID(mountpoint string) (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	id := ""
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && unescapeMountinfo(f[4]) == mountpoint {
			_, minor, _ := strings.Cut(f[2], ":")
			id = minor
		}
	}
	if id == "" {
		return "", fmt.Errorf("%s is not in mountinfo", mountpoint)
	}
	return id, nil
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// RunReaper is the reaper's process: args is the daemon's pid; in is the
// pipe the daemon tells its connections on ("+ID", "-ID"). It returns the
// exit code.
func RunReaper(args []string, in io.Reader) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if len(args) != 1 {
		log.Error("fuse reaper: want the daemon's pid")
		return 2
	}
	pid, err := strconv.Atoi(args[0])
	if err != nil || pid <= 0 {
		log.Error("fuse reaper: bad pid", "pid", args[0])
		return 2
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	conns := map[string]bool{}
	tick := time.NewTicker(reaperPoll)
	defer tick.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return 0 // the daemon closed the pipe: it exited
			}
			if id, found := strings.CutPrefix(l, "+"); found {
				conns[id] = true
			} else if id, found := strings.CutPrefix(l, "-"); found {
				delete(conns, id)
			}
		case <-tick.C:
			if len(conns) == 0 || !dying(pid) {
				continue
			}
			for id := range conns {
				if err := abortConn(id); err != nil {
					log.Error("fuse reaper: the daemon is dying and its connection could not be aborted: its mount may hang", "pid", pid, "connection", id, "err", err)
				} else {
					log.Warn("fuse reaper: the daemon is dying: aborted its FUSE connection", "pid", pid, "connection", id)
				}
			}
			return 0
		}
	}
}

// dying reports whether the process pid is gone, a zombie, or has a SIGKILL
// pending (it will never run again; a thread of it may be stuck).
func dying(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	const sigkill = 1 << (unix.SIGKILL - 1)
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X") {
				return true
			}
		case "SigPnd", "ShdPnd":
			if m, err := strconv.ParseUint(v, 16, 64); err == nil && m&sigkill != 0 {
				return true
			}
		}
	}
	return false
}

// AbortMount aborts the FUSE connection mounted at mountpoint: every
// request waiting on it fails, and the mount answers ENOTCONN from then on.
// It is the way out of a daemon stuck with the kernel (root, or the
// mount's owner).
func AbortMount(mountpoint string) error {
	id, err := connID(mountpoint)
	if err != nil {
		return err
	}
	return abortConn(id)
}

// abortConn aborts the FUSE connection id, mounting fusectl first where
// it is not (root only).
func abortConn(id string) error {
	abort := filepath.Join(fusectl, id, "abort")
	if _, err := os.Stat(abort); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(fusectl, id)); errors.Is(err, os.ErrNotExist) {
			if err := unix.Mount("fusectl", fusectl, "fusectl", 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
				return fmt.Errorf("mount fusectl: %w", err)
			}
		}
	}
	return os.WriteFile(abort, []byte("1"), 0)
}
