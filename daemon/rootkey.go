package daemon

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/internal/statedir"
)

// A fixed sandbox's state (its journal, checkpoints, token and quota) is
// the state of its root, not of its name: two daemons of one user, each
// serving its own --root as "default" with the default state directory,
// would otherwise share one journal, and the second would not start. The
// first root served under a name keeps STATE/sandboxes/NAME, which records
// the root's identity (dirIdentity, in the file "root"); another root
// under that name keeps its own beside it, STATE/sandboxes/NAME.root-ID.
// A root moved (renamed in place) is the same root; a copy is another.

// dirIdentity is what tells the directory name of dirfd from every other,
// over time too: its device and inode, and its birth time where the
// filesystem keeps one (statx), since a directory removed and made again
// often gets the inode number the old one had.
func dirIdentity(dirfd int, name string) (string, error) {
	var stx unix.Statx_t
	if err := unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_BTIME, &stx); err != nil {
		return "", err
	}
	id := fmt.Sprintf("%x-%x", unix.Mkdev(stx.Dev_major, stx.Dev_minor), stx.Ino)
	if stx.Mask&unix.STATX_BTIME != 0 {
		id += fmt.Sprintf("-%x.%x", stx.Btime.Sec, stx.Btime.Nsec)
	}
	return id, nil
}

const rootIDFile = "root"

// StartFixed starts the fixed sandbox name on the directory dir (--root,
// --sandbox NAME=DIR), with the state of that root.
func (h *Host) StartFixed(name, dir string, def core.Quota) (*core.Sandbox, error) {
	key, err := h.fixedStateKey(name, dir)
	if err != nil {
		return nil, err
	}
	return h.start(name, key, OpenPath(name, dir), true, def, true)
}

// fixedStateKey is the name of the state directory of root dir served as
// name: name itself when that directory is dir's or nobody's yet, else
// name.root-ID.
func (h *Host) fixedStateKey(name, dir string) (string, error) {
	if h.cfg.State == "" {
		return name, nil
	}
	id, err := dirIdentity(unix.AT_FDCWD, dir)
	if err != nil {
		return "", fmt.Errorf("sandbox %s: root %s: %w", name, dir, err)
	}
	for _, key := range []string{name, name + ".root-" + id} {
		owner, err := h.claimState(key, id)
		if err != nil {
			return "", fmt.Errorf("sandbox %s: %w", name, err)
		}
		if owner == id {
			if key != name {
				h.log.Info("the state of sandbox "+name+" belongs to another root; this root keeps its own",
					"sandbox", name, "state", statedir.Sandbox(h.cfg.State, key))
			}
			return key, nil
		}
	}
	return "", fmt.Errorf("sandbox %s: the state directory for root %s belongs to another root", name, dir)
}

// claimState records id as the owner of the state directory key when it
// has none, and returns its owner.
func (h *Host) claimState(key, id string) (string, error) {
	fd, _, err := openSandboxState(h.cfg.State, key)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	buf := make([]byte, 64)
	if f, err := unix.Openat(fd, rootIDFile, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		n, _ := unix.Read(f, buf)
		unix.Close(f)
		if n > 0 {
			return strings.TrimSpace(string(buf[:n])), nil
		}
	}
	f, err := unix.Openat(fd, rootIDFile, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return "", fmt.Errorf("recording the root of its state: %w", err)
	}
	defer unix.Close(f)
	if _, err := unix.Write(f, []byte(id+"\n")); err != nil && !errors.Is(err, unix.EINTR) {
		return "", fmt.Errorf("recording the root of its state: %w", err)
	}
	return id, nil
}

// stateKey is the key of the state directory of the sandbox served as
// name (its name when not served).
func (h *Host) stateKey(name string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.m[name]; e != nil && e.state != "" {
		return e.state
	}
	return name
}
