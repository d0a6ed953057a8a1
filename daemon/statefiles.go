package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/internal/statedir"
)

// openSandboxState makes (0700) and opens the sandbox's state directory.
// The daemon's state directory itself was checked by the daemon (owned by
// its user, 0700, outside every root); the names below it are its own.
func openSandboxState(state, name string) (fd int, path string, err error) {
	path = statedir.Sandbox(state, name)
	if err := os.MkdirAll(path, 0o700); err != nil {
		return -1, path, fmt.Errorf("sandbox %s: state directory: %w", name, err)
	}
	fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, path, fmt.Errorf("sandbox %s: state directory %s: %w", name, path, err)
	}
	return fd, path, nil
}

// quotaJSON is quota.json's shape.
type quotaJSON struct {
	Bytes   int64 `json:"bytes"`
	Entries int64 `json:"entries"`
}

// readQuota reads quota.json of the state directory dirfd; kept is false
// when there is none.
func readQuota(dirfd int) (q core.Quota, kept bool, err error) {
	fd, err := unix.Openat(dirfd, statedir.QuotaFile, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return q, false, nil
	}
	if err != nil {
		return q, false, fmt.Errorf("%s: %w", statedir.QuotaFile, err)
	}
	f := os.NewFile(uintptr(fd), statedir.QuotaFile)
	defer f.Close()
	var j quotaJSON
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return q, false, fmt.Errorf("%s: %w", statedir.QuotaFile, err)
	}
	if j.Bytes < 0 || j.Entries < 0 {
		return q, false, fmt.Errorf("%s: a negative bound", statedir.QuotaFile)
	}
	return core.Quota{Bytes: j.Bytes, Entries: j.Entries}, true, nil
}

// writeQuota keeps q as quota.json (0600) of the state directory dirfd,
// replaced whole.
func writeQuota(dirfd int, q core.Quota) error {
	b, err := json.Marshal(quotaJSON{Bytes: q.Bytes, Entries: q.Entries})
	if err != nil {
		return err
	}
	return statedir.Replace(dirfd, statedir.QuotaFile, string(b)+"\n")
}

// keepQuota writes the sandbox's quota.json, making its state directory.
func keepQuota(state, name string, q core.Quota) error {
	if state == "" {
		return errors.New("no state directory to keep the quota in")
	}
	fd, _, err := openSandboxState(state, name)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := writeQuota(fd, q); err != nil {
		return fmt.Errorf("sandbox %s: %w", name, err)
	}
	return nil
}

// removeState removes the sandbox's state directory and all in it. It is
// the daemon's own (0700, outside every root), and os.RemoveAll never
// follows a symlink it meets.
func removeState(state, name string) error {
	if state == "" {
		return nil
	}
	p := statedir.Sandbox(state, name)
	if !strings.HasPrefix(p, filepath.Join(state, "sandboxes")+"/") {
		return fmt.Errorf("sandbox %s: state directory %s outside %s", name, p, state)
	}
	// The seq mark stays: a sandbox made again under the name numbers
	// above every seq this one handed out (incarnation.go).
	tomb := p + ".removing"
	if err := os.Rename(p, tomb); err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	if err := os.MkdirAll(p, 0o700); err != nil {
		return err
	}
	if err := carryMark(tomb, p); err != nil {
		return err
	}
	return os.RemoveAll(tomb)
}
