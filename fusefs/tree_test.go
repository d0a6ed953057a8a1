package fusefs

import (
	"strings"
	"testing"
	"time"
)

// TestNodePath: the mirror's own walk names a node as go-fuse's Inode.Path
// did ("/" in front), its children too, and an orphan "" for what an open
// file tells, under go-fuse's placeholder for the rest.
func TestNodePath(t *testing.T) {
	m, _ := testMirror(&fakeSandbox{}, time.Minute, time.Minute)
	root := &m.root.Inode
	a := m.add(root, "a", 10, true)
	b := m.add(a, "b", 11, true)
	f := m.add(b, "f", 12, false)
	for _, tc := range []struct {
		n          *node
		path, kids string
	}{
		{m.root, "/", "/x"},
		{a.Operations().(*node), "/a", "/a/x"},
		{f.Operations().(*node), "/a/b/f", "/a/b/f/x"},
	} {
		old := "/" + tc.n.Path(tc.n.Root())
		if got := tc.n.path(); got != tc.path || got != old {
			t.Errorf("path: %q, want %q (Inode.Path: %q)", got, tc.path, old)
		}
		if got := tc.n.namedPath(); got != tc.path {
			t.Errorf("namedPath: %q, want %q", got, tc.path)
		}
		if got := tc.n.childPath("x"); got != tc.kids {
			t.Errorf("childPath: %q, want %q", got, tc.kids)
		}
	}
	a.RmChild("b")
	fn := f.Operations().(*node)
	if got := fn.namedPath(); got != "" {
		t.Errorf("orphan's namedPath: %q, want \"\"", got)
	}
	if got := fn.path(); !strings.HasPrefix(got, "/.go-fuse.") || !strings.HasSuffix(got, "/deleted/f") {
		t.Errorf("orphan's path: %q, want go-fuse's placeholder", got)
	}
	if got := fn.childPath("x"); !strings.HasSuffix(got, "/deleted/f/x") {
		t.Errorf("orphan's childPath: %q", got)
	}
}

// BenchmarkNodePath names a file five directories down, as most requests
// of the workload bench do (go's src) at least once.
func BenchmarkNodePath(b *testing.B) {
	m, _ := testMirror(&fakeSandbox{}, time.Minute, time.Minute)
	in := &m.root.Inode
	for i, name := range []string{"w1", "src", "crypto", "internal", "fips140", "f.go"} {
		in = m.add(in, name, uint64(10+i), i < 5)
	}
	n := in.Operations().(*node)
	b.Run("walk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n.path()
		}
	})
	b.Run("Inode.Path", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = "/" + n.Path(n.Root())
		}
	})
}
