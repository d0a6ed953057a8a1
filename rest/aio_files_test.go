package rest

import (
	"fmt"
	"strings"
	"testing"

	"sandfs/rest/aio"
)

func TestAIOCapabilities(t *testing.T) {
	h := newFilesHarness(t, nil)
	d := wantAIO[aio.Capabilities](t, h.get(t, "/v1/capabilities"))
	for _, op := range []string{"read", "write", "edit", "list", "stat", "search", "glob", "find", "mkdir", "copy", "move", "delete", "watch"} {
		if !d.Files[op] {
			t.Errorf("files.%s: got false, want true", op)
		}
	}
	if len(d.Files) != 19 || d.Files["fuse_mount"] {
		t.Errorf("files: got %v, want 19 flags and fuse_mount false", d.Files)
	}
	if d.Exec || d.Browser || d.Computer || d.CodeInterpreter {
		t.Errorf("other planes: got %+v, want false", d)
	}
	h2 := newHarness(t, harnessOpts{Token: "tok"})
	wantAIOError(t, h2.do(t, req{Method: "GET", Target: "/v1/capabilities", NoAuth: true}), 401, "unauthorized")
}

// TestAIOJournal: a change made through the file routes is told once, by
// core, with origin api.
func TestAIOJournal(t *testing.T) {
	h := newFilesHarness(t, nil)
	j := h.srv.reg.Get("default").Journal()
	seq := j.Seq()
	wantAIO[aio.FileWriteResult](t, h.post(t, "/v2/fs/write", `{"path":"/j.txt","content":"x"}`))
	wantAIO[aio.EditResult](t, h.post(t, "/v2/fs/edit", `{"command":"str_replace","path":"/j.txt","old_str":"x","new_str":"y"}`))
	wantAIO[aio.CopyResult](t, h.post(t, "/v2/fs/copy", `{"source":"/j.txt","destination":"/k.txt"}`))
	wantAIO[aio.MoveResult](t, h.post(t, "/v2/fs/move", `{"source":"/k.txt","destination":"/l.txt"}`))
	wantAIO[aio.DeleteResult](t, h.post(t, "/v2/fs/delete", `{"path":"/l.txt"}`))
	wantAIO[aio.MkdirResult](t, h.post(t, "/v2/fs/mkdir", `{"path":"/jd"}`))
	es, _ := j.Since(seq, 100)
	var got []string
	for _, e := range es {
		got = append(got, fmt.Sprintf("%s %s %s", e.Type, e.Path, e.Origin))
	}
	want := "create /j.txt api,write /j.txt api,write /j.txt api,create /k.txt api,write /k.txt api,rename /l.txt api,remove /l.txt api,create /jd api"
	if strings.Join(got, ",") != want {
		t.Errorf("events:\ngot  %s\nwant %s", strings.Join(got, ","), want)
	}
}
