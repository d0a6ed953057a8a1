package rest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/api"
	"sandfs/rest/aio"
)

// hostETag is core.ETag of a host file, followed or not; "" when absent.
func hostETag(t *testing.T, p string, follow bool) string {
	t.Helper()
	var st unix.Stat_t
	stat := unix.Lstat
	if follow {
		stat = unix.Stat
	}
	if err := stat(p, &st); err != nil {
		return ""
	}
	return fmt.Sprintf(`"%x-%x-%x"`, st.Ino, st.Size, st.Mtim.Nano())
}

// condRoute is one route that takes a precondition, for the table of
// TestConditionalRoutes. Each acts on /f.txt ("ONE\n") unless told a
// target; copy copies /src.txt ("TWO\n") onto it, move moves it to /g.txt.
type condRoute struct {
	name, family string
	field        string // the body field of the family, "" when none
	// make builds the request on target with the field set to etag
	// (etag "" leaves the field out; bad sends it as a number).
	make func(t *testing.T, target, etag string, bad bool) req
	// create, when set, is the request that creates target (for
	// If-None-Match: * on a missing one).
	create func(t *testing.T, target string) req
	done   func(t *testing.T, h *harness) // the change a success made
	tagged bool                           // a success answers the new ETag
}

// field is `"name":value` to splice into a JSON body, or "".
func field(name, etag string, bad bool) string {
	switch {
	case bad:
		return `,"` + name + `":12`
	case etag != "":
		return `,"` + name + `":` + jsonStr(etag)
	}
	return ""
}

func jsonPost(method, target, body string) req {
	return req{Method: method, Target: target, Body: strings.NewReader(body)}
}

func uploadReq(t *testing.T, route string) func(t *testing.T, target, etag string, bad bool) req {
	return func(t *testing.T, target, etag string, bad bool) req {
		fields := [][2]string{{"path", target}}
		if etag != "" {
			fields = append(fields, [2]string{"expected_etag", etag})
		}
		body, ct := multipartBody(t, fields, "x.txt", strings.NewReader("TWO\n"))
		return req{Method: "POST", Target: route, Body: body, Header: map[string]string{"Content-Type": ct}}
	}
}

func condRoutes() []condRoute {
	changed := func(p, content string) func(t *testing.T, h *harness) {
		return func(t *testing.T, h *harness) { h.wantFile(t, p, content) }
	}
	moved := func(t *testing.T, h *harness) { h.wantAbsent(t, "/f.txt"); h.wantFile(t, "/g.txt", "ONE\n") }
	gone := func(t *testing.T, h *harness) { h.wantAbsent(t, "/f.txt") }
	rs := []condRoute{
		{name: "agent write", family: FamilyAgent, tagged: true, done: changed("/f.txt", "TWO\n"),
			make: func(t *testing.T, target, _ string, _ bool) req {
				return req{Method: "PUT", Target: "/v1/fs/file?path=" + url.QueryEscape(target), Body: strings.NewReader("TWO\n"),
					Header: map[string]string{"Content-Type": "application/octet-stream"}}
			}},
		{name: "agent delete", family: FamilyAgent, done: gone,
			make: func(t *testing.T, target, _ string, _ bool) req {
				return req{Method: "DELETE", Target: "/v1/fs/entry?path=" + url.QueryEscape(target)}
			}},
		{name: "agent move", family: FamilyAgent, done: moved,
			make: func(t *testing.T, target, _ string, _ bool) req {
				return jsonPost("POST", "/v1/fs/move", `{"from":`+jsonStr(target)+`,"to":"/g.txt"}`)
			}},
		{name: "aio v1 replace", family: FamilyAIOv1, field: "expected_etag", tagged: true, done: changed("/f.txt", "TWO\n"),
			make: func(t *testing.T, target, etag string, bad bool) req {
				return jsonPost("POST", "/v1/file/replace", `{"file":`+jsonStr(target)+`,"old_str":"ONE","new_str":"TWO"`+field("expected_etag", etag, bad)+`}`)
			}},
	}
	for _, v := range []struct{ fam, prefix, pathKey, edit string }{
		{FamilyAIOv2, "/v2/fs/", "path", "edit"},
		{FamilyAIOv1, "/v1/file/", "file", "str_replace_editor"},
	} {
		v := v
		ver := map[string]string{FamilyAIOv2: "aio v2 ", FamilyAIOv1: "aio v1 "}[v.fam]
		rs = append(rs,
			condRoute{name: ver + "write", family: v.fam, field: "expected_etag", tagged: true, done: changed("/f.txt", "TWO\n"),
				make: func(t *testing.T, target, etag string, bad bool) req {
					return jsonPost("POST", v.prefix+"write", `{"`+v.pathKey+`":`+jsonStr(target)+`,"content":"TWO\n"`+field("expected_etag", etag, bad)+`}`)
				},
				create: func(t *testing.T, target string) req {
					return jsonPost("POST", v.prefix+"write", `{"`+v.pathKey+`":`+jsonStr(target)+`,"content":"TWO\n"}`)
				}},
			condRoute{name: ver + "edit", family: v.fam, field: "expected_etag", tagged: true, done: changed("/f.txt", "TWO\n"),
				make: func(t *testing.T, target, etag string, bad bool) req {
					return jsonPost("POST", v.prefix+v.edit, `{"command":"str_replace","path":`+jsonStr(target)+`,"old_str":"ONE","new_str":"TWO"`+field("expected_etag", etag, bad)+`}`)
				},
				create: editCreate(v.fam)},
			condRoute{name: ver + "move", family: v.fam, field: "expected_etag", done: moved,
				make: func(t *testing.T, target, etag string, bad bool) req {
					return jsonPost("POST", v.prefix+"move", `{"source":`+jsonStr(target)+`,"destination":"/g.txt"`+field("expected_etag", etag, bad)+`}`)
				}},
			condRoute{name: ver + "delete", family: v.fam, field: "expected_etag", done: gone,
				make: func(t *testing.T, target, etag string, bad bool) req {
					return jsonPost("POST", v.prefix+"delete", `{"path":`+jsonStr(target)+field("expected_etag", etag, bad)+`}`)
				}},
			condRoute{name: ver + "copy", family: v.fam, field: "expected_etag", done: changed("/f.txt", "TWO\n"),
				make: func(t *testing.T, target, etag string, bad bool) req {
					return jsonPost("POST", v.prefix+"copy", `{"source":"/src.txt","destination":`+jsonStr(target)+`,"overwrite":true`+field("expected_etag", etag, bad)+`}`)
				},
				create: func(t *testing.T, target string) req {
					return jsonPost("POST", v.prefix+"copy", `{"source":"/src.txt","destination":`+jsonStr(target)+`}`)
				}},
			condRoute{name: ver + "upload", family: v.fam, field: "expected_etag", tagged: true, done: changed("/f.txt", "TWO\n"),
				make: func(t *testing.T, target, etag string, bad bool) req {
					if bad {
						etag = "12" // a form has no types: a field that is no ETag is a mismatch
					}
					return uploadReq(t, v.prefix+"upload")(t, target, etag, false)
				},
				create: func(t *testing.T, target string) req { return uploadReq(t, v.prefix+"upload")(t, target, "", false) }},
		)
	}
	for _, prefix := range namedPrefixes {
		base := prefix + "default/fs/"
		fam := "named " + strings.Trim(prefix, "/")
		rs = append(rs,
			condRoute{name: fam + " write", family: FamilyNamed, tagged: true, done: changed("/f.txt", "TWO\n"),
				make: func(t *testing.T, target, _ string, _ bool) req {
					return req{Method: "PUT", Target: base + "write?path=" + url.QueryEscape(target), Body: strings.NewReader("TWO\n"),
						Header: map[string]string{"Content-Type": "application/octet-stream"}}
				}},
			condRoute{name: fam + " delete", family: FamilyNamed, field: "ifMatch", done: gone,
				make: func(t *testing.T, target, etag string, bad bool) req {
					return jsonPost("DELETE", base+"delete", `{"path":`+jsonStr(target)+field("ifMatch", etag, bad)+`}`)
				}},
			condRoute{name: fam + " rename", family: FamilyNamed, field: "ifMatch", done: moved,
				make: func(t *testing.T, target, etag string, bad bool) req {
					return jsonPost("POST", base+"rename", `{"source":`+jsonStr(target)+`,"dest":"/g.txt"`+field("ifMatch", etag, bad)+`}`)
				}},
			condRoute{name: fam + " copy", family: FamilyNamed, field: "ifMatch", done: changed("/f.txt", "TWO\n"),
				make: func(t *testing.T, target, etag string, bad bool) req {
					return jsonPost("POST", base+"copy", `{"source":"/src.txt","dest":`+jsonStr(target)+field("ifMatch", etag, bad)+`}`)
				}},
		)
	}
	// The named write and copy create with the request itself.
	for i := range rs {
		if rs[i].create == nil && rs[i].family == FamilyNamed && (strings.HasSuffix(rs[i].name, " write") || strings.HasSuffix(rs[i].name, " copy")) {
			mk := rs[i].make
			rs[i].create = func(t *testing.T, target string) req { return mk(t, target, "", false) }
		}
	}
	return rs
}

// editCreate is the v1 editor's create command (v2 has none: nil).
func editCreate(fam string) func(t *testing.T, target string) req {
	if fam != FamilyAIOv1 {
		return nil
	}
	return func(t *testing.T, target string) req {
		return jsonPost("POST", "/v1/file/str_replace_editor", `{"command":"create","path":`+jsonStr(target)+`,"file_text":"TWO\n"}`)
	}
}

// wantPrecondition checks a 412 in the family's shape: the ETag header and
// the body's current ETag are current ("" absent).
func wantPrecondition(t *testing.T, family string, r resp, current string) {
	t.Helper()
	if r.Status != http.StatusPreconditionFailed {
		t.Fatalf("status %d, want 412 (body %s)", r.Status, r.Body)
	}
	if err := checkFamilyShape(family, r); err != nil {
		t.Errorf("shape: %v: %s", err, r.Body)
	}
	if got := r.Header.Get("ETag"); got != current {
		t.Errorf("ETag header %q, want %q", got, current)
	}
	var body struct {
		CurrentEtag string `json:"currentEtag"`
		Type        string `json:"type"`
		Status      int    `json:"status"`
		Code        string `json:"code"`
		Data        struct {
			ErrorType   string `json:"error_type"`
			CurrentEtag string `json:"current_etag"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	switch family {
	case FamilyAgent:
		if body.Type != "urn:sandbox-agent:error:conflict" || body.Status != 412 || body.CurrentEtag != current {
			t.Errorf("problem: type %q status %d currentEtag %q, want conflict 412 %q", body.Type, body.Status, body.CurrentEtag, current)
		}
	case FamilyNamed:
		if body.Code != "ESTALE" || body.CurrentEtag != current {
			t.Errorf("named error: code %q currentEtag %q, want ESTALE %q", body.Code, body.CurrentEtag, current)
		}
	default:
		if body.Data.ErrorType != "precondition_failed" || body.Data.CurrentEtag != current {
			t.Errorf("AIO failure: error_type %q current_etag %q, want precondition_failed %q", body.Data.ErrorType, body.Data.CurrentEtag, current)
		}
	}
}

func withHeader(r req, k, v string) req {
	h := map[string]string{k: v}
	for hk, hv := range r.Header {
		h[hk] = hv
	}
	r.Header = h
	return r
}

// TestConditionalRoutes: every write, edit, move, delete, upload and copy
// of the three families refuses a stale precondition with 412 in its
// shape, the current ETag in the header and body, the file's bytes and
// the journal untouched; "*" on a missing target and If-None-Match: * on
// an existing one are 412; If-None-Match: * on a missing one creates it;
// the matching ETag (header, or the family's body field) changes the file.
func TestConditionalRoutes(t *testing.T) {
	for _, rt := range condRoutes() {
		t.Run(rt.name, func(t *testing.T) {
			h := newFilesHarness(t, nil)
			sb := h.srv.reg.Get("default")
			h.writeFile(t, "/f.txt", "ONE\n")
			h.writeFile(t, "/src.txt", "TWO\n")
			cur := hostETag(t, h.host("/f.txt"), false)
			stale := `"1-2-3"`
			refused := func(what string, r req, current string) {
				t.Helper()
				before := snapshot(t, h.root)
				seq := sb.Journal().Seq()
				t.Run(what, func(t *testing.T) {
					wantPrecondition(t, rt.family, h.do(t, r), current)
				})
				if diff := snapshotDiff(before, snapshot(t, h.root)); diff != "" {
					t.Errorf("%s changed the tree:\n%s", what, diff)
				}
				h.wantFile(t, "/f.txt", "ONE\n")
				if got := sb.Journal().Seq(); got != seq {
					t.Errorf("%s: the journal moved from %d to %d", what, seq, got)
				}
			}
			refused("stale If-Match", withHeader(rt.make(t, "/f.txt", "", false), "If-Match", stale), cur)
			refused("stale If-Match list", withHeader(rt.make(t, "/f.txt", "", false), "If-Match", stale+`, "4-5-6"`), cur)
			refused("If-None-Match on an existing file", withHeader(rt.make(t, "/f.txt", "", false), "If-None-Match", "*"), cur)
			refused("* on a missing file", withHeader(rt.make(t, "/missing.txt", "", false), "If-Match", "*"), "")
			if rt.field != "" {
				refused("stale "+rt.field, rt.make(t, "/f.txt", stale, false), cur)
				if !strings.Contains(rt.name, "upload") {
					r := h.do(t, withHeader(rt.make(t, "/f.txt", cur, false), "If-Match", stale))
					wantStatusFamily(t, rt.family, r, http.StatusBadRequest, "header and field differ")
					r = h.do(t, rt.make(t, "/f.txt", "", true))
					want := http.StatusBadRequest
					if rt.family != FamilyNamed {
						want = http.StatusUnprocessableEntity
					}
					wantStatusFamily(t, rt.family, r, want, rt.field+" of the wrong type")
				}
				h.wantFile(t, "/f.txt", "ONE\n")
			}
			if rt.create != nil {
				r := h.do(t, withHeader(rt.create(t, "/new.txt"), "If-None-Match", "*"))
				if r.Status != http.StatusOK {
					t.Fatalf("If-None-Match: * on a missing file: %d %s", r.Status, r.Body)
				}
				h.wantFile(t, "/new.txt", "TWO\n")
			}
			// The matching ETag: through the body field where there is one.
			r := rt.make(t, "/f.txt", cur, false)
			if rt.field == "" {
				r = withHeader(rt.make(t, "/f.txt", "", false), "If-Match", cur)
			}
			res := h.do(t, r)
			if res.Status != http.StatusOK {
				t.Fatalf("matching ETag: %d %s", res.Status, res.Body)
			}
			rt.done(t, h)
			if rt.tagged {
				if got, want := res.Header.Get("ETag"), hostETag(t, h.host("/f.txt"), false); got != want || got == "" {
					t.Errorf("ETag of the write: %q, the file has %q", got, want)
				}
			}
		})
	}
}

// wantStatusFamily checks a status and the family's error shape.
func wantStatusFamily(t *testing.T, family string, r resp, status int, what string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s: status %d, want %d (body %s)", what, r.Status, status, r.Body)
		return
	}
	if err := checkFamilyShape(family, r); err != nil {
		t.Errorf("%s: shape: %v: %s", what, err, r.Body)
	}
}

// TestStatETags: the stats of the three families give the ETag download
// sends, and a write made with it succeeds.
func TestStatETags(t *testing.T) {
	h := newFilesHarness(t, nil)
	h.writeFile(t, "/f.txt", "ONE\n")
	want := hostETag(t, h.host("/f.txt"), false)
	dl := h.get(t, "/v2/fs/download?path=/f.txt")
	if got := dl.Header.Get("ETag"); got != want {
		t.Fatalf("download ETag %q, want %q", got, want)
	}
	var agent struct{ Etag string }
	json.Unmarshal(h.get(t, "/v1/fs/stat?path=/f.txt").Body, &agent)
	named := decode[api.Entry](t, h.get(t, "/v1/sandboxes/default/fs/stat?path=/f.txt"))
	aio := wantAIO[aio.StatResult](t, h.get(t, "/v2/fs/stat?path=/f.txt"))
	for fam, got := range map[string]string{"agent": agent.Etag, "named": named.Etag, "aio": aio.ETag} {
		if got != want {
			t.Errorf("%s stat etag %q, want %q", fam, got, want)
		}
	}
	r := h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/f.txt", Body: io.NopCloser(strings.NewReader("TWO\n")),
		Header: map[string]string{"Content-Type": "application/octet-stream", "If-Match": agent.Etag}})
	if r.Status != http.StatusOK {
		t.Fatalf("write with the stat's ETag: %d %s", r.Status, r.Body)
	}
	h.wantFile(t, "/f.txt", "TWO\n")
}

// TestConditionalOrder: a failed precondition is told before the route's
// own refusals: a stale edit whose old_str is gone is 412 (not "old_str not
// found"), If-None-Match: * on a copy without overwrite onto an existing
// file is 412 (not 409), and a refused edit leaves no undo step.
func TestConditionalOrder(t *testing.T) {
	h := newFilesHarness(t, nil)
	h.writeFile(t, "/f.txt", "ONE\n")
	h.writeFile(t, "/src.txt", "TWO\n")
	cur := hostETag(t, h.host("/f.txt"), false)
	r := h.post(t, "/v2/fs/edit", `{"command":"str_replace","path":"/f.txt","old_str":"GONE","new_str":"x","expected_etag":"\"1-2-3\""}`)
	wantPrecondition(t, FamilyAIOv2, r, cur)
	if n := h.srv.aio.UndoDepth("/f.txt"); n != 0 {
		t.Errorf("undo steps after a refused edit: %d", n)
	}
	r = h.do(t, withHeader(jsonPost("POST", "/v2/fs/copy", `{"source":"/src.txt","destination":"/f.txt"}`), "If-None-Match", "*"))
	wantPrecondition(t, FamilyAIOv2, r, cur)
	r = h.do(t, withHeader(jsonPost("POST", "/v2/fs/write", `{"path":"/f.txt","content":"x"}`), "If-None-Match", `"abc"`))
	wantStatusFamily(t, FamilyAIOv2, r, http.StatusBadRequest, "If-None-Match with an ETag")
	h.wantFile(t, "/f.txt", "ONE\n")
}
