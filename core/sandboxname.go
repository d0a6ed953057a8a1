package core

import "fmt"

// CheckSandboxName reports whether name may name a sandbox made at run
// time (POST /v1/sandboxes, a directory in --sandboxes DIR): a DNS label
// (RFC 1123) of lower-case letters, digits and inner hyphens, 1 to 63
// long. Such a name is a plain file name: it cannot be "." or "..", hold a
// slash, or leave the directory it names.
func CheckSandboxName(name string) error {
	if len(name) == 0 || len(name) > 63 {
		return fmt.Errorf("sandbox name %q: want 1 to 63 characters", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(name)-1:
		default:
			return fmt.Errorf("sandbox name %q: want a DNS label (a-z, 0-9 and inner '-')", name)
		}
	}
	return nil
}
