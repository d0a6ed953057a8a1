package rest

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"

	"sandfs/core"
	"sandfs/internal/testenv"
	"sandfs/rest/httpkit"
)

func TestResolveOwner(t *testing.T) {
	asUID(t, 0)
	cases := []struct {
		name, user string
		wantOK     bool
		want       core.Owner
		wantErr    string
	}{
		{"empty is the daemon", "", false, core.Owner{}, ""},
		{"root by name", "root", true, core.Owner{Uid: 0, Gid: 0}, ""},
		{"root by uid", "0", true, core.Owner{Uid: 0, Gid: 0}, ""},
		{"missing account", "no-such-user-sandfs", false, core.Owner{}, "no such user: no-such-user-sandfs"},
		{"missing uid", "4000000000", false, core.Owner{}, "no such user: 4000000000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, ok, err := resolveOwner(c.user)
			if c.wantErr != "" {
				var re *httpkit.RequestError
				if !errors.As(err, &re) || re.Msg != c.wantErr || re.Status != 400 {
					t.Fatalf("got %v, want 400 %q", err, c.wantErr)
				}
				return
			}
			if err != nil || ok != c.wantOK || o != c.want {
				t.Fatalf("got %+v %v %v, want %+v %v", o, ok, err, c.want, c.wantOK)
			}
		})
	}
}

func TestResolveOwnerNonRoot(t *testing.T) {
	asUID(t, 501)
	_, _, err := resolveOwner("root")
	var re *httpkit.RequestError
	want := "cannot run as root: sandfs is running as uid 501 and only root can change identity"
	if !errors.As(err, &re) || re.Msg != want || re.Status != 400 {
		t.Fatalf("got %v, want 400 %q", err, want)
	}
	// A missing account is told as such even when not root.
	_, _, err = resolveOwner("no-such-user-sandfs")
	if !errors.As(err, &re) || re.Msg != "no such user: no-such-user-sandfs" {
		t.Fatalf("got %v, want no such user", err)
	}
	ctx, err := withOwner(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := core.OwnerOf(ctx); ok {
		t.Errorf("empty user stamped an owner")
	}
}

func TestAIOUserOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "the ownership tests run as root (non-root is simulated)")
	}
	h := newFilesHarness(t, nil)
	before := h.tree(t)
	for _, c := range []struct{ route, body string }{
		{"/v2/fs/write?user=no-such-sandfs-user", `{"path":"/o/w.txt","content":"x"}`},
		{"/v1/file/write", `{"file":"/o/w.txt","content":"x","user":"no-such-sandfs-user"}`},
		{"/v2/fs/mkdir?user=no-such-sandfs-user", `{"path":"/o/d"}`},
		{"/v1/file/mkdir", `{"path":"/o/d","user":"no-such-sandfs-user"}`},
		{"/v2/fs/copy?user=no-such-sandfs-user", `{"source":"/","destination":"/o/c"}`},
		{"/v1/file/str_replace_editor", `{"command":"create","path":"/o/e","file_text":"x","user":"no-such-sandfs-user"}`},
	} {
		f := wantAIOError(t, h.post(t, c.route, c.body), 400, "invalid_request")
		if f.Message != "no such user: no-such-sandfs-user" {
			t.Errorf("%s: message %q", c.route, f.Message)
		}
	}
	h.wantTree(t, before)
	t.Run("non-root daemon", func(t *testing.T) {
		asUID(t, 501)
		f := wantAIOError(t, h.post(t, "/v2/fs/write?user=nobody", `{"path":"/o/w.txt","content":"x"}`), 400, "invalid_request")
		if want := "cannot run as nobody: sandfs is running as uid 501 and only root can change identity"; f.Message != want {
			t.Errorf("message: got %q, want %q", f.Message, want)
		}
		wantAIOError(t, h.post(t, "/v1/file/mkdir", `{"path":"/o/d","user":"nobody"}`), 400, "invalid_request")
		h.wantTree(t, before)
	})
	t.Run("owned", func(t *testing.T) {
		uid, gid := 65534, 65534
		if _, _, err := resolveOwner("nobody"); err != nil {
			testenv.Skip(t, nil, "no account nobody here")
		}
		o, _, _ := resolveOwner("nobody")
		uid, gid = o.Uid, o.Gid
		wantAIO[fileWriteResult](t, h.post(t, "/v2/fs/write?user=nobody", `{"path":"/o/p/w.txt","content":"x"}`))
		wantAIO[mkdirResult](t, h.v1(t, "/v1/file/mkdir", `{"path":"/o/m/n","user":"nobody"}`))
		wantAIO[fileWriteResult](t, h.v1(t, "/v1/file/write", `{"file":"/o/ap.txt","content":"x","append":true,"user":"nobody"}`))
		for _, p := range []string{"/o", "/o/p", "/o/p/w.txt", "/o/m", "/o/m/n", "/o/ap.txt"} {
			fi, err := os.Lstat(h.host(p))
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if int(st.Uid) != uid || int(st.Gid) != gid {
				t.Errorf("%s: owner %d:%d, want %d:%d", p, st.Uid, st.Gid, uid, gid)
			}
		}
		wantAIO[copyResult](t, h.post(t, "/v2/fs/copy?user=nobody", `{"source":"/o/p","destination":"/o/cp"}`))
		for _, p := range []string{"/o/cp", "/o/cp/w.txt"} {
			if st := lstatSys(t, h.host(p)); int(st.Uid) != uid || int(st.Gid) != gid {
				t.Errorf("copy %s: owner %d:%d, want %d:%d", p, st.Uid, st.Gid, uid, gid)
			}
		}
		// An existing file keeps its owner.
		h.writeFile(t, "/mine.txt", "a")
		wantAIO[fileWriteResult](t, h.post(t, "/v2/fs/write?user=nobody", `{"path":"/mine.txt","content":"b"}`))
		if fi, _ := os.Lstat(h.host("/mine.txt")); fi.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Errorf("an existing file changed owner")
		}
		h.wantFile(t, "/mine.txt", "b")
	})
}

func lstatSys(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t)
}
