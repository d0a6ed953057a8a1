package core

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// TestMirrorExactModes: the mirror's Dir.Create, Dir.Mkdir and Dir.Mknod give what
// they make exactly the mode the kernel passed (the caller's umask already
// applied), whatever the daemon's own umask cuts, setuid, setgid and sticky
// bits included, for the daemon's own files and for files given to a
// caller. The daemon's umask is set to 077 for the test, the worst case.
func TestMirrorExactModes(t *testing.T) {
	old := syscall.Umask(0o077)
	t.Cleanup(func() { syscall.Umask(old) })
	owners := []struct {
		name     string
		uid, gid int
	}{{"daemon", -1, -1}}
	if os.Geteuid() == 0 {
		owners = append(owners, struct {
			name     string
			uid, gid int
		}{"caller", 4242, 4343})
	} else {
		t.Log("not root: files given to a caller are not tried")
	}
	cases := []struct {
		op   string
		mode uint32
		want uint32 // the mode stat reports
	}{
		{"create", 0o777, unix.S_IFREG | 0o777},
		{"create", 0o666, unix.S_IFREG | 0o666},
		{"create", 0o620, unix.S_IFREG | 0o620},
		{"create", 0o4777, unix.S_IFREG | 0o4777},
		{"create", 0o6755, unix.S_IFREG | 0o6755},
		{"create", 0o1777, unix.S_IFREG | 0o1777},
		{"mkdir", 0o777, unix.S_IFDIR | 0o777},
		{"mkdir", 0o1777, unix.S_IFDIR | 0o1777},
		{"mkdir", 0o755, unix.S_IFDIR | 0o755},
		{"fifo", unix.S_IFIFO | 0o666, unix.S_IFIFO | 0o666},
		{"fifo", unix.S_IFIFO | 0o4666, unix.S_IFIFO | 0o4666},
	}
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		for _, o := range owners {
			if o.uid >= 0 && os.Geteuid() != 0 {
				testenv.Skip(t, nil, "giving files to a caller needs root")
			}
			for i, c := range cases {
				name := o.name + "-" + c.op + "-" + string(rune('a'+i))
				dir := s.RootDir()
				var err error
				switch c.op {
				case "create":
					var h *Handle
					var st unix.Stat_t
					h, st, err = dir.Create(ctx, name, unix.O_WRONLY, c.mode, o.uid, o.gid)
					if err == nil {
						if st.Mode != c.want {
							t.Errorf("%s: Create returned stat mode %o, want %o", name, st.Mode, c.want)
						}
						h.Release(ctx)
						h.File().Close()
					}
				case "mkdir":
					_, err = dir.Mkdir(ctx, name, c.mode, o.uid, o.gid)
				case "fifo":
					_, err = dir.Mknod(ctx, name, c.mode, 0, o.uid, o.gid)
				}
				if err != nil {
					t.Fatalf("%s %s %o: %v", c.op, name, c.mode, err)
				}
				var st unix.Stat_t
				if err := unix.Lstat(filepath.Join(root, name), &st); err != nil {
					t.Fatal(err)
				}
				if st.Mode != c.want {
					t.Errorf("%s %s %o: got mode %o, want %o", c.op, name, c.mode, st.Mode, c.want)
				}
				if o.uid >= 0 && (int(st.Uid) != o.uid || int(st.Gid) != o.gid) {
					t.Errorf("%s %s: owner %d:%d, want %d:%d", c.op, name, st.Uid, st.Gid, o.uid, o.gid)
				}
			}
		}
	})
}
