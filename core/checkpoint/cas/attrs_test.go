package cas

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// TestObjectAttrs: as root, a new object put from a file takes its owner,
// permission bits and mtime (set-id files excepted); an object put from
// elsewhere, or already there, is 0400 and keeps what it had; Stat and
// LinkInto reach it by hash, never replacing a name.
func TestObjectAttrs(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "objects' attributes NOT TESTED: only a root daemon's store keeps them")
	}
	s, dir := open(t)
	src := t.TempDir()
	mtime := time.Date(2011, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, c := range []struct {
		name, content string
		mode          os.FileMode
		uid, gid      int
		wantPerm      uint32
		wantUID       uint32
		wantMtime     bool
	}{
		{"plain", "plain", 0o644, 0, 0, 0o644, 0, true},
		{"private", "private", 0o600, 65534, 65533, 0o600, 65534, true},
		{"setuid", "setuid", 0o755 | os.ModeSetuid, 0, 0, 0o400, 0, false},
		{"again", "plain", 0o700, 65534, 65534, 0o644, 0, true}, // the object was there: it keeps its attributes
	} {
		p := filepath.Join(src, c.name)
		if err := os.WriteFile(p, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, c.uid, c.gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		o, err := s.Put(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		st := objectStat(t, dir, o.Hash)
		if st.Mode&0o7777 != c.wantPerm || st.Uid != c.wantUID || (st.Mtim.Nano() == mtime.UnixNano()) != c.wantMtime {
			t.Errorf("%s: object mode %o uid %d mtime %v; want mode %o uid %d, the file's mtime: %v",
				c.name, st.Mode&0o7777, st.Uid, time.Unix(0, st.Mtim.Nano()), c.wantPerm, c.wantUID, c.wantMtime)
		}
	}

	o, err := s.PutBytes([]byte("from elsewhere"))
	if err != nil {
		t.Fatal(err)
	}
	st := objectStat(t, dir, o.Hash)
	if st.Mode&0o7777 != 0o400 {
		t.Errorf("an object put from bytes: mode %o; want 0400", st.Mode&0o7777)
	}

	tree := t.TempDir()
	tfd, err := unix.Open(tree, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(tfd)
	if linked, err := s.LinkIf(o.Hash, tfd, "f", func(*unix.Stat_t) bool { return false }); linked || err != nil {
		t.Fatalf("a link the caller refused: %v, %v", linked, err)
	}
	if linked, err := s.LinkIf(o.Hash, tfd, "f", func(got *unix.Stat_t) bool { return got.Ino == st.Ino }); !linked || err != nil {
		t.Fatalf("a link the caller took: %v, %v", linked, err)
	}
	var lt unix.Stat_t
	if err := unix.Lstat(filepath.Join(tree, "f"), &lt); err != nil || lt.Ino != st.Ino {
		t.Errorf("the linked name: ino %d, %v; want the object's %d", lt.Ino, err, st.Ino)
	}
	yes := func(*unix.Stat_t) bool { return true }
	if linked, err := s.LinkIf(o.Hash, tfd, "f", yes); linked || err != unix.EEXIST {
		t.Errorf("a second link onto the same name: %v, %v; want EEXIST", linked, err)
	}
	if linked, err := s.LinkIf("../../x", tfd, "g", yes); linked || err != unix.EINVAL {
		t.Errorf("a link of a name that is no hash: %v, %v; want EINVAL", linked, err)
	}
}

// objectStat is the lstat of object h in the store at dir.
func objectStat(t *testing.T, dir, h string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, h[:2], h[2:]), &st); err != nil {
		t.Fatal(err)
	}
	return st
}
