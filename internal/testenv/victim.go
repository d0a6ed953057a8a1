package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Victim is a root-owned 0600 file outside a sandbox root, the target of
// the race tests' symlinks, and what it was when made.
type Victim struct {
	Path string
	st   unix.Stat_t
}

// NewVictim makes base/outside/secret.
func NewVictim(t testing.TB, base string) *Victim {
	t.Helper()
	dir := filepath.Join(base, "outside")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	v := &Victim{Path: filepath.Join(dir, "secret")}
	if err := os.WriteFile(v.Path, []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(v.Path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(v.Path, &v.st); err != nil {
		t.Fatal(err)
	}
	return v
}

// Changed says how the victim changed ("" if it did not): mode, owner or
// times (a chmod to the same mode still moves ctime).
func (v *Victim) Changed(t testing.TB) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(v.Path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode != v.st.Mode || st.Uid != v.st.Uid || st.Gid != v.st.Gid || st.Mtim != v.st.Mtim || st.Ctim != v.st.Ctim {
		return fmt.Sprintf("mode %o→%o, owner %d:%d→%d:%d, ctime %d.%09d→%d.%09d", v.st.Mode, st.Mode,
			v.st.Uid, v.st.Gid, st.Uid, st.Gid, v.st.Ctim.Sec, v.st.Ctim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
	}
	return ""
}
