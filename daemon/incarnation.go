package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"sandfs/internal/statedir"

	"golang.org/x/sys/unix"
)

// A sandbox of --sandboxes DIR is its directory: one removed by hand and
// made again under the same name (by hand, or by POST /v1/sandboxes) is a
// new sandbox, never the old one's heir. Its state directory records the
// directory's identity (rootkey.go's dirIdentity, in the file "root"): a
// sandbox that finds another identity there, and whose directory is not
// marked with the state's sandbox identity (rootkey.go), archives the old state
// (STATE/archive/NAME-TIME:
// its token, journal and checkpoints, for a person, never served again)
// and starts with a new token, no checkpoints and an empty journal. The
// new journal numbers on above the old one (the old seqmark is carried
// over): no seq is given twice under one name, so no cursor of the old
// tenant reads the new one's events and the fleet's message ids
// (HOST/SANDBOX/SEQ) never repeat.

// adoptState makes the state of sandbox name the directory's whose
// identity is want (dirIdentity) and mark is mark (rootMarkAt: a root
// marked with the state's sandbox identity is its own, moved or copied),
// archiving what another directory left there.
func (h *Host) adoptState(name, want, mark string) error {
	if h.cfg.State == "" {
		return nil
	}
	owner, err := h.claimState(name, want, mark)
	if err != nil || owner == want {
		return err
	}
	if err := h.archiveState(name); err != nil {
		return err
	}
	_, err = h.claimState(name, want, "")
	return err
}

// archiveState moves the state of sandbox name (not served: its journal
// closed) to STATE/archive/NAME-TIME, and leaves in its place the seq
// mark alone, for the sandbox made next under the name to number above.
func (h *Host) archiveState(name string) error {
	old := statedir.Sandbox(h.cfg.State, name)
	archive := filepath.Join(h.cfg.State, "archive", filepath.Base(old)+"-"+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := os.MkdirAll(filepath.Dir(archive), 0o700); err != nil {
		return fmt.Errorf("sandbox %s: archiving the state of the sandbox it replaces: %w", name, err)
	}
	if err := os.Rename(old, archive); err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("sandbox %s: archiving the state of the sandbox it replaces: %w", name, err)
	}
	h.log.Info("sandbox "+name+"'s directory is gone or another: its state is archived", "sandbox", name, "archive", archive)
	if err := os.MkdirAll(old, 0o700); err != nil {
		return err
	}
	return carryMark(archive, old)
}

// carryMark copies the seq mark of the journal in dir from to dir to, so
// the new journal numbers above every seq the old one handed out.
func carryMark(from, to string) error {
	b, err := os.ReadFile(filepath.Join(from, "seqmark"))
	if err != nil {
		return nil // no mark: an old journal, or none
	}
	fd, err := unix.Open(filepath.Join(to, "seqmark"), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("carrying the seq mark over: %w", err)
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, b)
	return err
}
