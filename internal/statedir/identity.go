package statedir

import (
	"errors"
	"fmt"
	"os"
)

// A sandbox's identity is what its root carries wherever its files go
// (core marks the root with it, core/identity.go): 256 random bits in hex,
// made once, in STATE/sandboxes/NAME/identity, written and read as a token
// file is (one writer: temp, fsync, link; one reader: O_NOFOLLOW, a 0600
// regular file of this user). Unlike a token it is no secret; the file
// discipline is kept so that nothing but the daemon can name it.

// IdentityFile is a sandbox's identity in its state directory.
const IdentityFile = "identity"

// EnsureIdentity returns the identity kept in the state directory dirfd,
// making one first when there is none. where names the file in errors.
func EnsureIdentity(dirfd int, where string) (string, error) {
	id, _, err := EnsureToken(dirfd, IdentityFile, where)
	if err == nil && !IsIdentity(id) {
		return "", fmt.Errorf("identity file %s: not 64 hex digits (remove it to make a new one)", where)
	}
	return id, err
}

// ReadIdentity is the identity kept in the state directory dirfd; ""
// when there is none (never made, or not one).
func ReadIdentity(dirfd int) (string, error) {
	id, err := ReadTokenAt(dirfd, IdentityFile)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil || !IsIdentity(id) {
		return "", err
	}
	return id, nil
}

// IsIdentity reports whether s has the form of an identity: 64 lowercase
// hex digits.
func IsIdentity(s string) bool {
	if len(s) != 2*tokenBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
