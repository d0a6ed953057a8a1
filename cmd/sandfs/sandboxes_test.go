package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core"
)

// TestDefaultQuotaFlag: --default-quota takes one SIZE[,ENTRIES]
// (parseQuota of quota_flags.go), no NAME=.
func TestDefaultQuotaFlag(t *testing.T) {
	for _, c := range []struct {
		in, out string
		want    core.Quota
		ok      bool
	}{
		{"1M,9", "1MiB,9", core.Quota{Bytes: 1 << 20, Entries: 9}, true},
		{"10G", "10GiB", core.Quota{Bytes: 10 << 30}, true},
		{"0,5", "0,5", core.Quota{Entries: 5}, true},
		{"lots", "", core.Quota{}, false},
		{"1G,x", "", core.Quota{}, false},
	} {
		var f quotaFlag
		err := f.Set(c.in)
		if (err == nil) != c.ok || (c.ok && (core.Quota(f) != c.want || f.String() != c.out)) {
			t.Errorf("--default-quota %s: %+v %q %v; want %+v %q ok %v", c.in, f, f.String(), err, c.want, c.out, c.ok)
		}
	}
}

func TestCheckMountAll(t *testing.T) {
	base := t.TempDir()
	for _, c := range []struct {
		dir, mnt string
		ok       bool
	}{
		{"", base + "/mnt", true},
		{base + "/sb", "", true},
		{base + "/sb", base + "/mnt", true},
		{base + "/sb", base + "/sbx", true},
		{base + "/sb", base + "/sb/mnt", false},
		{base + "/sb", base + "/sb", false},
		{base + "/all/sb", base + "/all", false},
	} {
		if err := checkRootsApart(nil, c.dir, c.mnt); (err == nil) != c.ok {
			t.Errorf("checkRootsApart(nil, %q, %q) = %v, want ok %v", c.dir, c.mnt, err, c.ok)
		}
	}
}

func TestCheckRootsApart(t *testing.T) {
	base := t.TempDir()
	nd := func(pairs ...string) []namedDir {
		var out []namedDir
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, namedDir{pairs[i], base + pairs[i+1]})
		}
		return out
	}
	for _, c := range []struct {
		name  string
		dirs  []namedDir
		dir   string
		mnt   string
		ok    bool
		inErr string
	}{
		{"apart", nd("default", "/root", "two", "/two"), base + "/sbs", base + "/mnt", true, ""},
		{"mount-all inside the root", nd("default", "/root"), base + "/sbs", base + "/root/mnt", false, "--mount-all " + base + "/root/mnt is inside the root of sandbox default"},
		{"a prefix is not inside", nd("default", "/root", "two", "/rootx"), base + "/root2", "", true, ""},
		{"sandbox inside the root", nd("default", "/root", "two", "/root/two"), "", "", false, "the root of sandbox two"},
		{"root inside a sandbox", nd("default", "/two/root", "two", "/two"), "", "", false, "the root of sandbox default"},
		{"same directory", nd("default", "/root", "two", "/root"), "", "", false, "is inside"},
		{"root inside DIR", nd("default", "/sbs/default"), base + "/sbs", "", false, "inside --sandboxes"},
		{"DIR inside the root", nd("default", "/root"), base + "/root/sbs", "", false, "--sandboxes " + base + "/root/sbs is inside the root of sandbox default"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkRootsApart(c.dirs, c.dir, c.mnt)
			if (err == nil) != c.ok || (err != nil && !strings.Contains(err.Error(), c.inErr)) {
				t.Fatalf("checkRootsApart = %v, want ok %v (error with %q)", err, c.ok, c.inErr)
			}
		})
	}
}

func TestQuotaFlagsCheck(t *testing.T) {
	dirs := []namedDir{{"default", "/r"}, {"two", "/t"}}
	for _, c := range []struct {
		flags []string
		ok    bool
	}{
		{nil, true},
		{[]string{"1G"}, true},
		{[]string{"two=1M,10", "default=0,5"}, true},
		{[]string{"three=1M"}, false},
	} {
		var q quotaFlags
		for _, f := range c.flags {
			if err := q.Set(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.check(dirs); (err == nil) != c.ok {
			t.Errorf("--quota %q: check = %v, want ok %v", c.flags, err, c.ok)
		}
	}
}

// TestCheckRootsCanonical: the start-up checks compare canonical paths: a
// relative path, a symlink and a bind mount to a served tree are inside
// it as its own path is; a --mount inside a served root is refused; and
// the state directory given by another path than a root's is still
// refused inside it.
func TestCheckRootsCanonical(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "sb"), 0o755))
	must(os.Symlink(root, filepath.Join(base, "link")))
	t.Chdir(base)
	dirs := []namedDir{{"default", root}}
	for _, c := range []struct {
		name     string
		dir, mnt string
		mounts   []string
		ok       bool
		inErr    string
	}{
		{"relative DIR inside the root", "root/sb", "", nil, false, "--sandboxes root/sb is inside the root of sandbox default"},
		{"DIR through a symlink into the root", "link/sb", "", nil, false, "inside the root of sandbox default"},
		{"a mount inside the root", "", "", []string{"root/mnt"}, false, "--mount root/mnt is inside the root of sandbox default"},
		{"a named mount inside the root", "", "", []string{"default=" + root + "/m"}, false, "is inside the root of sandbox default"},
		{"a mount apart", "", "", []string{"mnt"}, true, ""},
		{"the root inside a mount", "", "", []string{base}, false, "is inside --mount " + base},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkRootsApart(dirs, c.dir, c.mnt, c.mounts...)
			if (err == nil) != c.ok || (err != nil && !strings.Contains(err.Error(), c.inErr)) {
				t.Fatalf("checkRootsApart = %v, want ok %v (error with %q)", err, c.ok, c.inErr)
			}
		})
	}
	if os.Geteuid() == 0 {
		bind := filepath.Join(base, "bind")
		must(os.Mkdir(bind, 0o755))
		if err := unix.Mount(root, bind, "", unix.MS_BIND, ""); err == nil {
			defer unix.Unmount(bind, unix.MNT_DETACH)
			if err := checkRootsApart(dirs, filepath.Join(bind, "sb"), ""); err == nil {
				t.Error("--sandboxes through a bind mount of the root: accepted")
			}
			if err := notInsideRoots(filepath.Join(bind, "state"), []string{root}); err == nil {
				t.Error("--state through a bind mount of the root: accepted")
			}
		}
	}
	if err := notInsideRoots("root/state", []string{root}); err == nil {
		t.Error("a relative --state inside the root: accepted")
	}
	if err := notInsideRoots("link/state", []string{root}); err == nil {
		t.Error("--state through a symlink into the root: accepted")
	}
}
