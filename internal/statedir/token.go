package statedir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// The token files: the daemon's (STATE/token, cmd/sandfs) and each
// sandbox's (STATE/sandboxes/NAME/token). Each is mode 0600, owned by the
// daemon's user, opened with O_NOFOLLOW, and written whole under a
// temporary name then linked into place, so a reader never sees half a
// token and two daemons starting at once agree on one.

const (
	// TokenFile is the token file's name in its directory.
	TokenFile      = "token"
	tokenBytes     = 32 // 256 bits of crypto/rand, 64 hex digits
	maxTokenLength = 4096
)

// EnsureToken returns the token of the file name in dirfd, making one
// first when there is none (created). An existing token is kept: delete
// the file to rotate it. where names the file in errors.
func EnsureToken(dirfd int, name, where string) (tok string, created bool, err error) {
	for attempt := 0; attempt < 3; attempt++ {
		tok, err := ReadTokenAt(dirfd, name)
		if err == nil {
			return tok, false, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", false, fmt.Errorf("token file %s: %w", where, err)
		}
		tok, err = NewToken()
		if err != nil {
			return "", false, err
		}
		switch err := Publish(dirfd, name, tok+"\n"); {
		case err == nil:
			return tok, true, nil
		case errors.Is(err, unix.EEXIST): // another daemon won the race: read its token
		default:
			return "", false, fmt.Errorf("token file %s: %w", where, err)
		}
	}
	return "", false, fmt.Errorf("token file %s: keeps appearing and vanishing", where)
}

// Publish writes data to a new 0600 temporary file of the directory dirfd,
// syncs it, and links it as name; EEXIST if name exists (never replaced).
func Publish(dirfd int, name, data string) error {
	tmp, err := writeTemp(dirfd, name, data)
	if err != nil {
		return err
	}
	defer unix.Unlinkat(dirfd, tmp, 0)
	if err := unix.Linkat(dirfd, tmp, dirfd, name, 0); err != nil {
		return err
	}
	return unix.Fsync(dirfd)
}

// Replace writes data to a new 0600 file of dirfd and renames it over name.
func Replace(dirfd int, name, data string) error {
	tmp, err := writeTemp(dirfd, name, data)
	if err != nil {
		return err
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return err
	}
	return unix.Fsync(dirfd)
}

// writeTemp writes data, synced, to a new 0600 temporary file of dirfd
// and returns its name.
func writeTemp(dirfd int, name, data string) (string, error) {
	var suffix [8]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", err
	}
	tmp := "." + name + ".tmp-" + hex.EncodeToString(suffix[:])
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.WriteString(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return "", werr
	}
	return tmp, nil
}

// NewToken is 256 bits of crypto/rand in hex.
func NewToken() (string, error) {
	var b [tokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// ReadTokenAt reads the token file name of the directory dirfd, never
// following a symlink in its last component. The file must be a regular
// file owned by this user and unreadable by group and others. A missing
// file is os.ErrNotExist.
func ReadTokenAt(dirfd int, name string) (string, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return "", os.ErrNotExist
	case errors.Is(err, unix.ELOOP):
		return "", errors.New("is a symlink; refusing it (remove it to make a new token)")
	case err != nil:
		return "", err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return "", errors.New("is not a regular file; refusing it")
	case int(st.Uid) != os.Geteuid():
		return "", fmt.Errorf("is owned by uid %d, not by this user (uid %d); refusing it (remove it to make a new token)", st.Uid, os.Geteuid())
	case st.Mode&0o077 != 0:
		return "", fmt.Errorf("has mode %04o: others may read it; refusing it (remove it to make a new token)", st.Mode&0o7777)
	}
	return ReadToken(f)
}

// ReadToken reads a token file's content: the token without surrounding
// white space, non-empty, with no white space or control character inside.
func ReadToken(f *os.File) (string, error) {
	b, err := io.ReadAll(io.LimitReader(f, maxTokenLength+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxTokenLength {
		return "", fmt.Errorf("is over %d bytes: not a token", maxTokenLength)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", errors.New("is empty")
	}
	if strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", errors.New("holds white space or control characters inside the token")
	}
	return tok, nil
}
