package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"sandfs/internal/statedir"
)

// The daemon opens its state directory (where it is: statedir.Default)
// owned by its user and mode 0700 (made so), never a symlink, and never
// inside a served root (a root is written by clients and by whoever else
// may write the host directory); the token file in it is statedir's.

const tokenFileName = statedir.TokenFile

// stateDir is the daemon's open state directory.
type stateDir struct {
	path string
	fd   int // O_DIRECTORY descriptor; the names inside are taken against it
}

// openStateDir creates (0700, parents too) and opens dir, refusing one that
// is a symlink, is not owned by this user, or lies inside one of roots (the
// host directories served). A directory of ours with a looser mode is made
// 0700; tightened reports that.
func openStateDir(dir string, roots []string) (sd *stateDir, tightened bool, err error) {
	// Checked before anything is made (a refused directory is not left in
	// a root) and again once it is open.
	if err := notInsideRoots(dir, roots); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("state directory: %w", err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil, false, fmt.Errorf("state directory %s is a symlink or not a directory; refusing it", dir)
		}
		return nil, false, fmt.Errorf("state directory %s: %w", dir, err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, false, fmt.Errorf("state directory %s: %w", dir, err)
	}
	if int(st.Uid) != os.Geteuid() {
		return nil, false, fmt.Errorf("state directory %s is owned by uid %d, not by this user (uid %d); refusing it", dir, st.Uid, os.Geteuid())
	}
	if st.Mode&0o077 != 0 {
		if err := unix.Fchmod(fd, 0o700); err != nil {
			return nil, false, fmt.Errorf("state directory %s: making it 0700: %w", dir, err)
		}
		tightened = true
	}
	if err := notInsideRoots(dir, roots); err != nil {
		return nil, false, err
	}
	ok = true
	return &stateDir{path: dir, fd: fd}, tightened, nil
}

// notInsideRoots refuses a state directory equal to or below a served root,
// comparing the paths with every symlink resolved (of the part of dir that
// exists).
func notInsideRoots(dir string, roots []string) error {
	real, err := resolveExisting(dir)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	for _, root := range roots {
		r, err := resolveExisting(root) // a root may be created later
		if err != nil {
			return fmt.Errorf("sandbox root: %w", err)
		}
		if hostWithin(real, r) {
			return fmt.Errorf("state directory %s is inside the served root %s, where clients could read its token; "+
				"give --state a directory outside every root", dir, root)
		}
	}
	return nil
}

// resolveExisting is dir with the symlinks of its longest existing prefix
// resolved and the missing rest appended.
func resolveExisting(dir string) (string, error) {
	abs, err := filepath.Abs(dir) // EvalSymlinks keeps a relative path relative
	if err != nil {
		return "", err
	}
	rest := ""
	for p := abs; ; p = filepath.Dir(p) {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, os.ErrNotExist) || p == filepath.Dir(p) {
			return "", err
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

func (sd *stateDir) Close() error { return unix.Close(sd.fd) }

// tokenPath is where the token file lives, for the logs.
func (sd *stateDir) tokenPath() string { return filepath.Join(sd.path, tokenFileName) }

// token returns the token of DIR/token, making one first when there is
// none (statedir.EnsureToken). An existing token is kept across restarts: the
// state directory is the user's, not one daemon's, so two daemons of one
// user share it and a client (or a console tab) keeps working when the
// daemon restarts. Delete the file to rotate it.
func (sd *stateDir) token() (tok string, created bool, err error) {
	return statedir.EnsureToken(sd.fd, tokenFileName, sd.tokenPath())
}

// The token files' readers (internal/statedir/token.go).
var (
	readTokenAt = statedir.ReadTokenAt
	readToken   = statedir.ReadToken
)

// readTokenFile reads the token of a --token-file PATH. Symlinks are
// followed (a mounted secret is often one); the file must be regular.
// loose reports a file that group or others may read.
func readTokenFile(path string) (tok string, loose bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("%s is not a regular file", path)
	}
	tok, err = readToken(f)
	if err != nil {
		return "", false, fmt.Errorf("%s %w", path, err)
	}
	return tok, fi.Mode().Perm()&0o077 != 0, nil
}
