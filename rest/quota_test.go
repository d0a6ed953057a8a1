package rest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/internal/testenv"
	"sandfs/rest/aio"
	"sandfs/rest/httpkit"
)

// growthCase is a request of a family that grows the tree by a 200-byte
// file, and the API path its failure names.
type growthCase struct {
	name, family string
	req          func(t *testing.T) req
	path         string
}

// growthRequests are a write, an upload and a tar of each family, each
// against a tree holding /a ("old a") and /d.
func growthRequests() []growthCase {
	big := strings.Repeat("x", 200)
	archive := func(t *testing.T) *bytes.Reader {
		return bytes.NewReader(buildTar(t, []tarEntry{{name: "t1", body: big, typ: tar.TypeReg}}))
	}
	ctTar := map[string]string{"Content-Type": "application/x-tar"}
	return []growthCase{
		{"agent write", FamilyAgent, func(t *testing.T) req {
			return req{Method: "PUT", Target: "/v1/fs/file?path=/a", Body: strings.NewReader(big), Header: map[string]string{"Content-Type": "application/octet-stream"}}
		}, "/a"},
		{"agent tar", FamilyAgent, func(t *testing.T) req {
			return req{Method: "POST", Target: "/v1/fs/upload-batch?path=/d", Body: archive(t), Header: ctTar}
		}, "/d"},
		{"v1 write", FamilyAIOv1, func(t *testing.T) req {
			return jsonReq("POST", "/v1/file/write", `{"file":"/a","content":"`+big+`"}`)
		}, "/a"},
		{"v1 upload", FamilyAIOv1, func(t *testing.T) req {
			body, ct := multipartBody(t, [][2]string{{"path", "/d/up"}}, "up", strings.NewReader(big))
			return req{Method: "POST", Target: "/v1/file/upload", Body: body, Header: map[string]string{"Content-Type": ct}}
		}, "/d/up"},
		{"v2 write", FamilyAIOv2, func(t *testing.T) req {
			return jsonReq("POST", "/v2/fs/write", `{"path":"/a","content":"`+big+`"}`)
		}, "/a"},
		{"v2 upload", FamilyAIOv2, func(t *testing.T) req {
			body, ct := multipartBody(t, [][2]string{{"path", "/d/up"}}, "up", strings.NewReader(big))
			return req{Method: "POST", Target: "/v2/fs/upload", Body: body, Header: map[string]string{"Content-Type": ct}}
		}, "/d/up"},
		{"v2 tree", FamilyAIOv2, func(t *testing.T) req {
			return req{Method: "PUT", Target: "/v2/fs/tree?path=/d&mode=merge", Body: archive(t), Header: ctTar}
		}, "/d"},
		{"named write", FamilyNamed, func(t *testing.T) req {
			return req{Method: "PUT", Target: "/v1/sandboxes/default/fs/write?path=/a", Body: strings.NewReader(big)}
		}, "/a"},
	}
}

// refusedDetail checks r is a 507 in c's family's shape, naming c.path,
// and returns the message it gives.
func refusedDetail(t *testing.T, c growthCase, r resp) string {
	t.Helper()
	if r.Status != 507 {
		t.Fatalf("status %d, want 507: %s", r.Status, r.Body)
	}
	switch c.family {
	case FamilyAgent:
		return wantProblem(t, r, 507, "stream_error").Detail
	case FamilyAIOv1, FamilyAIOv2:
		f := wantAIOError(t, r, 507, string(httpkit.KindNoSpace))
		wantErrno(t, f, unix.ENOSPC, "OSError")
		if f.Path != c.path {
			t.Errorf("data.path %q, want %q", f.Path, c.path)
		}
		var env aioEnv[aio.Failure]
		json.Unmarshal(r.Body, &env)
		return *env.Message
	case FamilyNamed:
		return wantNamedError(t, r, 507, "ENOSPC", c.path).Error
	}
	t.Fatalf("no family %q", c.family)
	return ""
}

// TestQuota507: a write, an upload and a tar past the sandbox's quota are
// 507 in each family's shape, saying which bound; nothing changes, no temp
// is left, and usage is still what a walk of the tree finds.
func TestQuota507(t *testing.T) {
	for _, c := range growthRequests() {
		t.Run(c.name, func(t *testing.T) {
			h := newNamedHarnessWith(t, core.Options{})
			h.writeFile(t, "/a", "old a")
			h.mkdir(t, "/d")
			<-h.def.SweepDone()
			if _, err := h.def.Quota().Scan(t.Context()); err != nil {
				t.Fatal(err)
			}
			h.def.Quota().Set(core.Quota{Bytes: 100})
			before := snapshot(t, h.root)
			detail := refusedDetail(t, c, h.do(t, c.req(t)))
			if !strings.Contains(detail, c.path+": quota exceeded: bytes limit 100, usage 5") {
				t.Errorf("detail %q does not say the bound, limit and usage", detail)
			}
			if d := snapshotDiff(before, snapshot(t, h.root)); d != "" {
				t.Fatalf("a refused write changed the tree:\n%s", d)
			}
			h.wantFile(t, "/a", "old a")
			wantNoTemp(t, h.root)
			wantNoTemp(t, filepath.Join(h.root, "d"))
			wantWalkUsage(t, h.def, h.root)
		})
	}
}

// wantWalkUsage fails unless sb's usage is what a walk of root finds.
func wantWalkUsage(t *testing.T, sb *core.Sandbox, root string) {
	t.Helper()
	b, e, err := testenv.TreeUsage(root)
	if err != nil {
		t.Fatal(err)
	}
	if u := sb.Quota().Usage(); u.Bytes != b || u.Entries != e {
		t.Errorf("usage %d bytes %d entries, a walk finds %d bytes %d entries", u.Bytes, u.Entries, b, e)
	}
}
