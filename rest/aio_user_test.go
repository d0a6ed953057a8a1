package rest

import (
	"os"
	"syscall"
	"testing"

	"sandfs/internal/testenv"
	"sandfs/rest/aio"
)

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
		if _, _, err := aio.ResolveOwner("nobody"); err != nil {
			testenv.Skip(t, nil, "no account nobody here")
		}
		o, _, _ := aio.ResolveOwner("nobody")
		uid, gid = o.Uid, o.Gid
		wantAIO[aio.FileWriteResult](t, h.post(t, "/v2/fs/write?user=nobody", `{"path":"/o/p/w.txt","content":"x"}`))
		wantAIO[aio.MkdirResult](t, h.v1(t, "/v1/file/mkdir", `{"path":"/o/m/n","user":"nobody"}`))
		wantAIO[aio.FileWriteResult](t, h.v1(t, "/v1/file/write", `{"file":"/o/ap.txt","content":"x","append":true,"user":"nobody"}`))
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
		wantAIO[aio.CopyResult](t, h.post(t, "/v2/fs/copy?user=nobody", `{"source":"/o/p","destination":"/o/cp"}`))
		for _, p := range []string{"/o/cp", "/o/cp/w.txt"} {
			if st := lstatSys(t, h.host(p)); int(st.Uid) != uid || int(st.Gid) != gid {
				t.Errorf("copy %s: owner %d:%d, want %d:%d", p, st.Uid, st.Gid, uid, gid)
			}
		}
		// An existing file keeps its owner.
		h.writeFile(t, "/mine.txt", "a")
		wantAIO[aio.FileWriteResult](t, h.post(t, "/v2/fs/write?user=nobody", `{"path":"/mine.txt","content":"b"}`))
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
