package fusefs

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sandfs/core/journal"
)

func TestEntryTimeouts(t *testing.T) {
	covered := func(p string) bool { return !strings.HasPrefix(p, "/unwatched") }
	for _, tc := range []struct {
		name              string
		entryTTL, attrTTL time.Duration
		path              string
		cacheable         bool
	}{
		{"cached and covered", time.Minute, 30 * time.Second, "/a/b", true},
		{"cached, not covered", time.Minute, 30 * time.Second, "/unwatched/b", false},
		{"--mount-cache 0", 0, 0, "/a/b", false},
		{"attributes only", 0, time.Second, "/a/b", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := testMirror(&fakeSandbox{covers: covered}, tc.entryTTL, tc.attrTTL)
			if got := m.cacheable(tc.path); got != tc.cacheable {
				t.Fatalf("cacheable(%s) = %v, want %v", tc.path, got, tc.cacheable)
			}

			var entry fuse.EntryOut
			m.entryTimeouts(tc.path, &entry)
			wantEntry, wantAttr := time.Duration(0), time.Duration(0)
			if tc.cacheable {
				wantEntry, wantAttr = tc.entryTTL, tc.attrTTL
			}
			if entry.EntryTimeout() != wantEntry || entry.AttrTimeout() != wantAttr {
				t.Errorf("entryTimeouts: entry %v attr %v, want %v %v", entry.EntryTimeout(), entry.AttrTimeout(), wantEntry, wantAttr)
			}

			var negative fuse.EntryOut
			m.vetoNegativeEntry(tc.path, &negative)
			wantNeg := vetoTimeout
			if tc.cacheable {
				wantNeg = 0 // left to the bridge: the mount's NegativeTimeout
			}
			if negative.EntryTimeout() != wantNeg {
				t.Errorf("vetoNegativeEntry: entry timeout %v, want %v", negative.EntryTimeout(), wantNeg)
			}

			var attr fuse.AttrOut
			if set := m.attrTimeout(tc.path, &attr); set != tc.cacheable || attr.Timeout() != wantAttr {
				t.Errorf("attrTimeout: set %v timeout %v, want %v %v", set, attr.Timeout(), tc.cacheable, wantAttr)
			}

			wantFile, wantDir := uint32(0), uint32(0)
			if tc.cacheable {
				wantFile, wantDir = fuse.FOPEN_KEEP_CACHE, fuse.FOPEN_CACHE_DIR|fuse.FOPEN_KEEP_CACHE
			}
			if got := m.openFlags(tc.path, false); got != wantFile {
				t.Errorf("openFlags(file) = %#x, want %#x", got, wantFile)
			}
			if got := m.openFlags(tc.path, true); got != wantDir {
				t.Errorf("openFlags(dir) = %#x, want %#x", got, wantDir)
			}
		})
	}
}

// The tree of the invalidation tests: / (1) holds a (10, a directory)
// holding b (11) and c (12).
func invalidationTree(t *testing.T, lstat map[string]uint64) (*Mirror, *notifies) {
	t.Helper()
	m, rec := testMirror(&fakeSandbox{lstat: lstat}, time.Minute, time.Minute)
	a := m.add(&m.root.Inode, "a", 10, true)
	m.add(a, "b", 11, false)
	m.add(a, "c", 12, false)
	return m, rec
}

func TestInvalidatePath(t *testing.T) {
	for _, tc := range []struct {
		name     string
		path     string
		gone     bool
		lstat    map[string]uint64
		want     []string
		children []string // a's children after
	}{
		{"changed in place", "/a/b", false, nil,
			[]string{"content 10", "content 11", "entry 10 b"}, []string{"b", "c"}},
		{"removed", "/a/b", true, nil,
			[]string{"content 10", "content 11", "entry 10 b"}, []string{"c"}},
		{"removed, but the name holds the inode again", "/a/b", true, map[string]uint64{"/a/b": 11},
			[]string{"content 10", "content 11", "entry 10 b"}, []string{"b", "c"}},
		{"removed, the name holds another inode", "/a/b", true, map[string]uint64{"/a/b": 99},
			[]string{"content 10", "content 11", "entry 10 b"}, []string{"c"}},
		{"a name the kernel never looked up", "/a/new", false, nil,
			[]string{"content 10", "entry 10 new"}, []string{"b", "c"}},
		{"under a directory the kernel never looked up", "/x/y", true, nil,
			nil, []string{"b", "c"}},
		{"the root", "/", false, nil,
			[]string{"content 1"}, []string{"b", "c"}},
		{"a directory removed", "/a", true, nil,
			[]string{"content 1", "content 10", "entry 1 a"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, rec := invalidationTree(t, tc.lstat)
			a := m.root.GetChild("a")
			m.invalidatePath(tc.path, tc.gone, map[*fs.Inode]bool{})
			if got := rec.take(); !slices.Equal(got, tc.want) {
				t.Errorf("notifies %q, want %q", got, tc.want)
			}
			if tc.path == "/a" && tc.gone {
				if m.root.GetChild("a") != nil {
					t.Errorf("a is still in the tree")
				}
				return
			}
			if got := sortedNames(a.Children()); !slices.Equal(got, tc.children) {
				t.Errorf("a's children %q, want %q", got, tc.children)
			}
		})
	}
}

func TestInvalidate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		event    journal.Event
		want     []string
		children []string // a's children after
	}{
		{"a rename invalidates both names (their directory once) and drops the old one",
			journal.Event{Type: journal.Rename, Path: "/a/d", OldPath: "/a/b", Origin: journal.External},
			[]string{"content 10", "content 11", "entry 10 b", "entry 10 d"}, []string{"c"}},
		{"a remove drops the name",
			journal.Event{Type: journal.Remove, Path: "/a/c", Origin: journal.API},
			[]string{"content 10", "content 12", "entry 10 c"}, []string{"b"}},
		{"a write keeps the name",
			journal.Event{Type: journal.Write, Path: "/a/c", Origin: journal.External},
			[]string{"content 10", "content 12", "entry 10 c"}, []string{"b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, rec := invalidationTree(t, nil)
			m.invalidateAll([]inval{{e: tc.event, n: 1}})
			if got := rec.take(); !slices.Equal(got, tc.want) {
				t.Errorf("notifies %q, want %q", got, tc.want)
			}
			if got := sortedNames(m.root.GetChild("a").Children()); !slices.Equal(got, tc.children) {
				t.Errorf("a's children %q, want %q", got, tc.children)
			}
		})
	}
	t.Run("lost events invalidate every inode", func(t *testing.T) {
		m, rec := invalidationTree(t, nil)
		m.invalidateAll([]inval{{lost: true, n: 1}})
		want := []string{"content 1", "content 10", "content 11", "content 12", "entry 1 a", "entry 10 b", "entry 10 c"}
		if got := rec.take(); !slices.Equal(got, want) {
			t.Errorf("notifies %q, want %q", got, want)
		}
	})
}

func sortedNames[V any](m map[string]V) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
