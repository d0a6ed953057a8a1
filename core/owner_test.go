package core

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sandfs/internal/testenv"
)

func ownerOfPath(t *testing.T, p string) (int, int) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}

func TestOwnerOnCreate(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "chown to another account needs root")
	}
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		octx := WithOwner(ctx, Owner{Uid: 4242, Gid: 4343})
		mk(t, root, map[string]string{"old.txt": "x"})
		if _, err := s.WriteFile(octx, "/a/b/new.txt", strings.NewReader("hi"), WriteOptions{MkdirParents: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.WriteFile(octx, "/old.txt", strings.NewReader("y"), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := s.Mkdir(octx, "/d", false, 0); err != nil {
			t.Fatal(err)
		}
		if err := s.Mkdir(octx, "/p/q", true, 0); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"a", "a/b", "a/b/new.txt", "d", "p", "p/q"} {
			if u, g := ownerOfPath(t, filepath.Join(root, p)); u != 4242 || g != 4343 {
				t.Errorf("%s: owner %d:%d, want 4242:4343", p, u, g)
			}
		}
		if u, _ := ownerOfPath(t, filepath.Join(root, "old.txt")); u != 0 {
			t.Errorf("old.txt: an existing file changed owner to %d", u)
		}
		if _, ok := OwnerOf(ctx); ok {
			t.Errorf("plain ctx carries an owner")
		}
	})
}
