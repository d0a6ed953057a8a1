package apipath

import (
	"strings"

	"golang.org/x/sys/unix"
)

// nameMax is the longest name a Linux filesystem takes (NAME_MAX).
const nameMax = 255

// Problem is why a client path is refused, in words an answer may carry.
// Every check of a client path's shape is here (Check), and core's Clean
// is built on it: no route or subpackage keeps its own copy.
type Problem string

const (
	OK          Problem = ""
	Empty       Problem = "empty"
	NUL         Problem = "contains a NUL byte"
	TooLong     Problem = "longer than 4096 bytes"
	NameTooLong Problem = "has a name longer than 255 bytes"
	DotDot      Problem = `has a ".." component`
)

// Check says what is wrong with the client path p as given (OK: nothing),
// before it is cleaned. strict refuses a ".." component too, for the
// callers whose paths must not climb (restore's scopes, an archive's
// member names); core's Clean resolves one lexically instead.
func Check(p string, strict bool) Problem {
	switch {
	case p == "":
		return Empty
	case strings.IndexByte(p, 0) >= 0:
		return NUL
	case len(p) >= unix.PathMax:
		return TooLong
	}
	for rest := p; rest != ""; {
		name, next, _ := strings.Cut(rest, "/")
		if len(name) > nameMax {
			// No such name can exist: refused here like the kernel would,
			// also where no system call follows (a watch wait).
			return NameTooLong
		}
		if strict && name == ".." {
			return DotDot
		}
		rest = next
	}
	return OK
}
