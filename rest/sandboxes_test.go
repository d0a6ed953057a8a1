package rest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/checkpoint"
)

// fakeManager makes real sandboxes in a temp dir and serves them in the
// harness's registry, as the daemon's Manager does with --sandboxes DIR.
// The sandboxes the harness opened are not its own (Remove: fs.ErrPermission).
type fakeManager struct {
	rh   *regHarness
	dir  string
	fail map[string]error // name → the error every call on it returns

	mu    sync.Mutex
	made  map[string]*core.Sandbox
	forks map[string]fakeFork // name → what it was made from (merge_test.go)
}

type fakeFork struct{ from, cp string }

func newFakeManager(t *testing.T) func(*regHarness) Manager {
	return func(rh *regHarness) Manager {
		return &fakeManager{rh: rh, dir: t.TempDir(), made: map[string]*core.Sandbox{}, forks: map[string]fakeFork{}, fail: map[string]error{
			"racy":       fmt.Errorf("mkdir racy: %w", fs.ErrExist),
			"gone":       fmt.Errorf("sandbox gone: %w", fs.ErrNotExist),
			"broke":      errors.New("the disk is on fire at /host/secret"),
			"unknown-cp": fmt.Errorf("materialize: %w", checkpoint.ErrUnknown),
			"parent":     fmt.Errorf("sandbox parent: it has forks: discard them first: %w (f1)", unix.EBUSY),
		}}
	}
}

// Fork: the fake daemon cannot fork (as one not root).
func (m *fakeManager) Fork(_ context.Context, name, from, cp string, q core.Quota) (ForkMade, error) {
	if err := m.fail[name]; err != nil {
		return ForkMade{}, err
	}
	return ForkMade{}, fmt.Errorf("a fork is an overlay mount, which needs the daemon to run as root: %w", errors.ErrUnsupported)
}

func (m *fakeManager) ForkOf(name string) (from, cp string, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.forks[name]
	return f.from, f.cp, ok
}

func (m *fakeManager) Create(ctx context.Context, name string, q core.Quota) (string, error) {
	if err := m.fail[name]; err != nil {
		return "", err
	}
	if m.rh.reg.Get(name) != nil {
		return "", fs.ErrExist
	}
	root := filepath.Join(m.dir, name)
	if err := os.Mkdir(root, 0o755); err != nil {
		return "", err
	}
	sb, err := core.Open(name, root, core.Options{Quota: q})
	if err != nil {
		return "", err
	}
	sb.Quota().Set(q)
	var b [16]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	if err := m.rh.reg.Add(name, sb, token); err != nil {
		sb.Close()
		return "", err
	}
	m.mu.Lock()
	m.made[name] = sb
	m.mu.Unlock()
	m.rh.roots[name] = root
	return token, nil
}

func (m *fakeManager) Remove(ctx context.Context, name string) error {
	if err := m.fail[name]; err != nil {
		return err
	}
	m.mu.Lock()
	sb := m.made[name]
	delete(m.made, name)
	m.mu.Unlock()
	if sb == nil {
		if m.rh.reg.Get(name) != nil {
			return fmt.Errorf("sandbox %s: %w", name, fs.ErrPermission)
		}
		return fs.ErrNotExist
	}
	m.rh.reg.Remove(ctx, name)
	sb.Close()
	return os.RemoveAll(filepath.Join(m.dir, name))
}

func (m *fakeManager) SetQuota(ctx context.Context, name string, q core.Quota) error {
	if err := m.fail[name]; err != nil {
		return err
	}
	sb := m.rh.reg.Get(name)
	if sb == nil {
		return fs.ErrNotExist
	}
	sb.Quota().Set(q)
	return nil
}

var sandboxesPrefixes = []string{"/v1/sandboxes", "/v1/sprites"}

// TestCreateSandbox: POST makes a served sandbox with its quota and token;
// each bad request is refused in the named shape and makes nothing.
func TestCreateSandbox(t *testing.T) {
	rh := newRegHarness(t, regOpts{Manager: newFakeManager(t)})
	for i, prefix := range sandboxesPrefixes {
		name := fmt.Sprintf("new-%d", i)
		r := rh.do(t, req{Method: "POST", Target: prefix, Body: jsonBody(`{"name":"` + name + `","quota":{"bytes":1000,"entries":10}}`)})
		wantStatus(t, r, 201)
		c := decode[api.SandboxCreated](t, r)
		if c.Name != name || len(c.Token) != 32 || c.Quota != (api.Sizes{Bytes: 1000, Entries: 10}) {
			t.Errorf("%s: got %+v", prefix, c)
		}
		sb := rh.reg.Get(name)
		if sb == nil || sb.Quota().Bound() != (core.Quota{Bytes: 1000, Entries: 10}) {
			t.Fatalf("%s: served %v", prefix, sb)
		}
		w := rh.do(t, req{Method: "PUT", Target: "/v1/sandboxes/" + name + "/fs/write?path=/hello", Body: strings.NewReader("hi"),
			Header: map[string]string{"Content-Type": "application/octet-stream"}})
		wantStatus(t, w, 200)
		rh.wantOnDisk(t, name, "hello", "hi")
	}
	r := rh.do(t, req{Method: "POST", Target: "/v1/sandboxes", Body: jsonBody(`{"name":"plain"}`)})
	wantStatus(t, r, 201)
	if c := decode[api.SandboxCreated](t, r); c.Quota != (api.Sizes{}) || rh.reg.Get("plain").Quota().Bound() != (core.Quota{}) {
		t.Errorf("no quota: got %+v", c)
	}
	before := strings.Join(rh.reg.Names(), ",")
	for _, c := range []struct {
		name, body string
		status     int
		code, path string
		detail     string
	}{
		{"dot-dot", `{"name":".."}`, 400, "EINVAL", "..", "DNS label"},
		{"slash", `{"name":"a/b"}`, 400, "EINVAL", "a/b", "DNS label"},
		{"upper", `{"name":"Upper"}`, 400, "EINVAL", "Upper", "DNS label"},
		{"leading hyphen", `{"name":"-x"}`, 400, "EINVAL", "-x", "DNS label"},
		{"too long", `{"name":"` + strings.Repeat("x", 64) + `"}`, 400, "EINVAL", strings.Repeat("x", 64), "1 to 63"},
		{"empty", `{"name":""}`, 400, "EINVAL", "", "1 to 63"},
		{"missing name", `{}`, 400, "EINVAL", "", `missing required field "name"`},
		{"taken", `{"name":"a"}`, 409, "EEXIST", "a", "sandbox a exists"},
		{"taken, the Manager says", `{"name":"racy"}`, 409, "EEXIST", "racy", "sandbox racy exists"},
		{"wrong type", `{"name":5}`, 400, "EINVAL", "", `field "name" must be a string`},
		{"quota wrong type", `{"name":"x","quota":{"bytes":"1"}}`, 400, "EINVAL", "", `field "quota.bytes" must be a number`},
		{"quota not an object", `{"name":"x","quota":7}`, 400, "EINVAL", "", `field "quota" must be an object`},
		{"unknown field", `{"name":"x","owner":"me"}`, 400, "EINVAL", "", `unknown field "owner"`},
		{"unknown quota field", `{"name":"x","quota":{"files":1}}`, 400, "EINVAL", "", `unknown field "files"`},
		{"negative bytes", `{"name":"x","quota":{"bytes":-1}}`, 400, "EINVAL", "", "quota.bytes must be 0 (no bound) or more, got -1"},
		{"negative entries", `{"name":"x","quota":{"entries":-5}}`, 400, "EINVAL", "", "quota.entries must be 0 (no bound) or more, got -5"},
		{"malformed", `{"name":`, 400, "EINVAL", "", "malformed JSON"},
		{"not an object", `["x"]`, 400, "EINVAL", "", "must be a JSON object"},
		{"trailing", `{"name":"x"} {}`, 400, "EINVAL", "", "unexpected data after"},
		{"the Manager fails", `{"name":"broke"}`, 500, "EIO", "", "internal error"},
		{"fork of one not served", `{"name":"f","from":"zz"}`, 404, "ENOENT", "zz", "zz"},
		{"fork of a bad name", `{"name":"f","from":"Bad"}`, 400, "EINVAL", "Bad", "from: "},
		{"fork, a checkpoint without from", `{"name":"f","checkpoint":"cp_000000000001"}`, 400, "EINVAL", "", `"checkpoint" is a checkpoint of "from", which is missing`},
		{"fork, an empty checkpoint", `{"name":"f","from":"a","checkpoint":""}`, 400, "EINVAL", "", `"checkpoint" is empty`},
		{"fork, an unknown checkpoint", `{"name":"unknown-cp","from":"a","checkpoint":"cp_000000000001"}`, 404, "ENOENT", "unknown-cp", "sandbox a has no checkpoint cp_000000000001"},
		{"fork, the daemon cannot", `{"name":"f","from":"a"}`, 501, "ENOTSUP", "f", "needs the daemon to run as root"},
		{"adopt with from", `{"name":"f","adopt":true,"from":"a"}`, 400, "EINVAL", "", "not both"},
		{"adopt with a quota", `{"name":"f","adopt":true,"quota":{"bytes":1}}`, 400, "EINVAL", "", `leave "quota" out`},
		{"adopt, an empty checkpoint", `{"name":"f","adopt":true,"checkpoint":""}`, 400, "EINVAL", "", `"checkpoint" is empty`},
		{"adopt, taken", `{"name":"a","adopt":true}`, 409, "EEXIST", "a", "sandbox a exists"},
		{"adopt, a bad name", `{"name":"A","adopt":true}`, 400, "EINVAL", "A", "DNS label"},
		{"adopt, the daemon cannot", `{"name":"f","adopt":true}`, 501, "ENOTSUP", "f", "takes no sandbox up from the fleet"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, prefix := range sandboxesPrefixes {
				r := rh.do(t, req{Method: "POST", Target: prefix, Body: jsonBody(c.body)})
				e := wantNamedError(t, r, c.status, c.code, c.path)
				if !strings.Contains(e.Error, c.detail) {
					t.Errorf("%s: error %q, want it to hold %q", prefix, e.Error, c.detail)
				}
				if strings.Contains(string(r.Body), "/host/secret") {
					t.Errorf("%s: the answer leaks the Manager's error: %s", prefix, r.Body)
				}
			}
			if got := strings.Join(rh.reg.Names(), ","); got != before {
				t.Errorf("served after a refusal: %s, want %s", got, before)
			}
		})
	}
	entries, _ := os.ReadDir(rh.harness.srv.manager.(*fakeManager).dir)
	if len(entries) != 3 {
		t.Errorf("the Manager's dir holds %d sandboxes, want 3 (new-0, new-1, plain)", len(entries))
	}
}

// TestListSandboxesUsage: GET lists every sandbox with its usage and quota,
// "default" first, under both prefixes; a fork with its parent and
// checkpoint, the others with neither field at all.
func TestListSandboxesUsage(t *testing.T) {
	rh := newRegHarness(t, regOpts{Manager: newFakeManager(t)})
	rh.reg.Get("b").Quota().Set(core.Quota{Bytes: 4096, Entries: 3})
	m := rh.srv.manager.(*fakeManager)
	m.mu.Lock()
	m.forks["b"] = fakeFork{from: "a", cp: "cp_000000000007"}
	m.mu.Unlock()
	for _, prefix := range sandboxesPrefixes {
		r := rh.do(t, req{Method: "GET", Target: prefix})
		l := decode[api.SandboxList](t, r)
		if l.Count != 3 || len(l.Sandboxes) != 3 {
			t.Fatalf("%s: got %+v", prefix, l)
		}
		for i, want := range []struct{ name, from, cp string }{
			{"default", "", ""},
			{"a", "", ""},
			{"b", "a", "cp_000000000007"},
		} {
			got := l.Sandboxes[i]
			u := rh.reg.Get(want.name).Quota().Usage()
			if got.Name != want.name || got.Usage != (api.Sizes{Bytes: u.Bytes, Entries: u.Entries}) {
				t.Errorf("%s: [%d] got %+v, want %s with usage %+v", prefix, i, got, want.name, u)
			}
			if got.From != want.from || got.Checkpoint != want.cp {
				t.Errorf("%s: %s is from %q at %q, want %q at %q", prefix, got.Name, got.From, got.Checkpoint, want.from, want.cp)
			}
		}
		var raw struct {
			Sandboxes []map[string]json.RawMessage `json:"sandboxes"`
		}
		if err := json.Unmarshal(r.Body, &raw); err != nil {
			t.Fatal(err)
		}
		for _, e := range raw.Sandboxes[:2] {
			if _, ok := e["from"]; ok {
				t.Errorf("%s: a sandbox that is no fork has \"from\": %s", prefix, r.Body)
			}
			if _, ok := e["checkpoint"]; ok {
				t.Errorf("%s: a sandbox that is no fork has \"checkpoint\": %s", prefix, r.Body)
			}
		}
		if q := l.Sandboxes[2].Quota; q != (api.Sizes{Bytes: 4096, Entries: 3}) {
			t.Errorf("%s: b's quota %+v", prefix, q)
		}
		if q := l.Sandboxes[0].Quota; q != (api.Sizes{}) {
			t.Errorf("%s: default's quota %+v, want none", prefix, q)
		}
	}
}

// TestPatchSandbox: PATCH sets the quota field by field and answers it
// with the usage; each failure changes nothing.
func TestPatchSandbox(t *testing.T) {
	rh := newRegHarness(t, regOpts{Manager: newFakeManager(t)})
	steps := []struct {
		body string
		want core.Quota
	}{
		{`{"quota":{"bytes":500}}`, core.Quota{Bytes: 500}},
		{`{"quota":{"entries":7}}`, core.Quota{Bytes: 500, Entries: 7}},
		{`{"quota":{"bytes":0}}`, core.Quota{Entries: 7}},
		{`{"quota":{"bytes":9,"entries":0}}`, core.Quota{Bytes: 9}},
		{`{"quota":{}}`, core.Quota{Bytes: 9}},
	}
	for _, prefix := range sandboxesPrefixes {
		rh.reg.Get("a").Quota().Set(core.Quota{})
		for _, st := range steps {
			r := rh.do(t, req{Method: "PATCH", Target: prefix + "/a", Body: jsonBody(st.body)})
			got := decode[api.SandboxQuota](t, r)
			u := rh.reg.Get("a").Quota().Usage()
			if got.Name != "a" || got.Quota != quotaSizes(st.want) || got.Usage != (api.Sizes{Bytes: u.Bytes, Entries: u.Entries}) {
				t.Errorf("%s %s: got %+v, want quota %+v", prefix, st.body, got, st.want)
			}
			if q := rh.reg.Get("a").Quota().Bound(); q != st.want {
				t.Errorf("%s %s: the sandbox's quota is %+v, want %+v", prefix, st.body, q, st.want)
			}
		}
	}
	for _, c := range []struct {
		name, target, body string
		status             int
		code, path, detail string
	}{
		{"unknown", "/zz", `{"quota":{"bytes":1}}`, 404, "ENOENT", "zz", ""},
		{"missing quota", "/a", `{}`, 400, "EINVAL", "", `missing required field "quota"`},
		{"negative", "/a", `{"quota":{"bytes":-1}}`, 400, "EINVAL", "", "quota.bytes must be 0 (no bound) or more"},
		{"unknown field", "/a", `{"quota":{"bytes":1},"name":"b"}`, 400, "EINVAL", "", `unknown field "name"`},
		{"wrong type", "/a", `{"quota":{"entries":true}}`, 400, "EINVAL", "", `field "quota.entries" must be a number`},
		{"malformed", "/a", `{"quota":`, 400, "EINVAL", "", "malformed JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, prefix := range sandboxesPrefixes {
				e := wantNamedError(t, rh.do(t, req{Method: "PATCH", Target: prefix + c.target, Body: jsonBody(c.body)}), c.status, c.code, c.path)
				if !strings.Contains(e.Error, c.detail) {
					t.Errorf("%s: error %q, want it to hold %q", prefix, e.Error, c.detail)
				}
			}
			if q := rh.reg.Get("a").Quota().Bound(); q != (core.Quota{Bytes: 9}) {
				t.Errorf("a's quota after a refusal: %+v", q)
			}
		})
	}
}

// TestDeleteSandbox: DELETE removes a sandbox the Manager made (404 on it
// afterwards, its directory gone) and refuses the others.
func TestDeleteSandbox(t *testing.T) {
	rh := newRegHarness(t, regOpts{Manager: newFakeManager(t)})
	m := rh.srv.manager.(*fakeManager)
	for i, prefix := range sandboxesPrefixes {
		name := fmt.Sprintf("tmp-%d", i)
		wantStatus(t, rh.do(t, req{Method: "POST", Target: "/v1/sandboxes", Body: jsonBody(`{"name":"` + name + `"}`)}), 201)
		r := rh.do(t, req{Method: "DELETE", Target: prefix + "/" + name})
		if got := decode[api.SandboxRemoved](t, r); got != (api.SandboxRemoved{Name: name, Removed: true}) {
			t.Errorf("%s: got %+v", prefix, got)
		}
		if rh.reg.Get(name) != nil {
			t.Errorf("%s: %s still served", prefix, name)
		}
		if _, err := os.Stat(filepath.Join(m.dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: its directory: %v, want gone", prefix, err)
		}
		wantNamedError(t, rh.do(t, req{Method: "GET", Target: "/v1/sandboxes/" + name + "/fs/read?path=/who"}), 404, "ENOENT", name)
		wantNamedError(t, rh.do(t, req{Method: "DELETE", Target: prefix + "/" + name}), 404, "ENOENT", name)
	}
	rh.reg.Add("gone", rh.reg.Get("a"), "")   // served, but the Manager no longer knows it
	rh.reg.Add("parent", rh.reg.Get("a"), "") // served, with forks
	for _, c := range []struct {
		name, target string
		status       int
		code, path   string
		detail       string
	}{
		{"unknown", "/zz", 404, "ENOENT", "zz", ""},
		{"default", "/default", 403, "EACCES", "default", "not one the daemon made at run time"},
		{"a --sandbox", "/b", 403, "EACCES", "b", "not one the daemon made at run time"},
		{"unknown to the Manager", "/gone", 404, "ENOENT", "gone", ""},
		{"a parent of forks", "/parent", 409, "EBUSY", "parent", "it has forks: discard them first"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, prefix := range sandboxesPrefixes {
				e := wantNamedError(t, rh.do(t, req{Method: "DELETE", Target: prefix + c.target}), c.status, c.code, c.path)
				if !strings.Contains(e.Error, c.detail) {
					t.Errorf("%s: error %q, want it to hold %q", prefix, e.Error, c.detail)
				}
			}
		})
	}
	for _, name := range []string{"default", "a", "b"} {
		if rh.reg.Get(name) == nil {
			t.Errorf("%s no longer served after a refused DELETE", name)
		}
		rh.wantOnDisk(t, name, "who", name)
	}
}

// TestSandboxesNoManager: without a Manager, POST, PATCH and DELETE are
// 405 saying how to start the daemon, after the request's own faults (400,
// 404, 409); GET still lists.
func TestSandboxesNoManager(t *testing.T) {
	rh := newRegHarness(t, regOpts{})
	for _, prefix := range sandboxesPrefixes {
		for _, c := range []struct {
			method, target, body string
			status               int
			allow, path, detail  string
		}{
			{"POST", prefix, `{"name":"x"}`, 405, "GET", "x", ""},
			{"PATCH", prefix + "/a", `{"quota":{"bytes":1}}`, 405, "", "a", ""},
			{"DELETE", prefix + "/a", "", 405, "", "a", ""},
			{"POST", prefix, `{"name":"X"}`, 400, "", "X", "DNS label"},
			{"POST", prefix, `{"name":"a"}`, 409, "", "a", "sandbox a exists"},
			{"POST", prefix, `{"name":`, 400, "", "", "malformed JSON"},
			{"PATCH", prefix + "/zz", `{"quota":{"bytes":1}}`, 404, "", "zz", ""},
			{"PATCH", prefix + "/a", `{"quota":{"bytes":-1}}`, 400, "", "", "quota.bytes must be 0"},
			{"DELETE", prefix + "/zz", "", 404, "", "zz", ""},
		} {
			rq := req{Method: c.method, Target: c.target}
			if c.body != "" {
				rq.Body = jsonBody(c.body)
			}
			r := rh.do(t, rq)
			code := map[int]string{400: "EINVAL", 404: "ENOENT", 405: "EINVAL", 409: "EEXIST"}[c.status]
			e := wantNamedError(t, r, c.status, code, c.path)
			if c.status == 405 {
				if e.Error != "the daemon makes no sandboxes: start it with --sandboxes DIR" {
					t.Errorf("%s %s: error %q", c.method, c.target, e.Error)
				}
				if got, ok := r.Header["Allow"]; !ok || len(got) != 1 || got[0] != c.allow {
					t.Errorf("%s %s: Allow %q, want %q", c.method, c.target, got, c.allow)
				}
			}
			if !strings.Contains(e.Error, c.detail) {
				t.Errorf("%s %s: error %q, want it to hold %q", c.method, c.target, e.Error, c.detail)
			}
		}
		if l := decode[api.SandboxList](t, rh.do(t, req{Method: "GET", Target: prefix})); l.Count != 3 {
			t.Errorf("GET %s: %+v", prefix, l)
		}
	}
	if rh.reg.Get("x") != nil || rh.reg.Get("a") == nil || rh.reg.Get("a").Quota().Bound() != (core.Quota{}) {
		t.Errorf("a refused call changed the registry")
	}
}
